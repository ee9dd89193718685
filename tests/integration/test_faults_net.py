# ctest: one-backend (the faults are the proxy's, between the processes; both backends are covered by test_faults_server)
"""Network faults between surge and the mock, through tests/tools/faultproxy.py (this kernel has no netem):
a delay, jitter, a bandwidth cap, the link down for 3 s in the middle of a streamed open-loop run (once waited
out, once cut by --request-timeout) and loss-like delay spikes; and real packet loss and reordering below TCP
through tests/tools/tunloss.py (a TUN device in a namespace made with unshare -rn). Each case checks that every request is counted
exactly once and matches what the server recorded (the same prompts, none twice, none it never got), the
failure classes, that the run ends in its bound (no hang), its exit code, that its artifacts parse, and the
latency effect of the fault, from the intended start."""

import collections
import json
import os
import re
import shutil
import statistics
import sys

import harness
from profiling import SLOW, profile, tol

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from faultproxy import FaultProxy  # noqa: E402

TTFT, ITL = 20, 2  # the mock's timing (ms)


def prompts_sent(r):
    """The prompt of each measured request, by id, from inputs.json (request i used prompt payload)."""
    with open(os.path.join(r.dir, "inputs.json")) as f:
        data = json.load(f)["data"]
    return {x["id"]: data[x["payload"]]["payload"][0]["messages"][0]["content"] for x in r.records}


def artifacts_valid(h, r, n, what):
    """The run's files exist and parse, with one line per request where there is one."""
    names = ["profile_export_surge.json", "profile_export_surge.jsonl", "profile_export_surge.csv",
             "profile_export.jsonl", "profile_export_aiperf.json", "profile_export_aiperf.csv", "inputs.json"]
    missing = [x for x in names if not os.path.exists(os.path.join(r.dir, x))]
    h.check(not missing, what + ": every artifact written", missing)
    for name in ("profile_export_surge.jsonl", "profile_export.jsonl"):
        path = os.path.join(r.dir, name)
        if os.path.exists(path):
            with open(path) as f:
                lines = [json.loads(x) for x in f if x.strip()]
            h.check(len(lines) == n, "%s: %s has one line per request (%d, want %d)" % (what, name, len(lines), n))
    if os.path.exists(os.path.join(r.dir, "profile_export_aiperf.json")):
        with open(os.path.join(r.dir, "profile_export_aiperf.json")) as f:
            json.load(f)


def accounting(h, r, server, n, what, classes=None):
    """Every request counted once, in the summary and the JSONL, and matched with the server's records.
    classes: the failures wanted by class ({} or None: none). Returns the ok records."""
    classes = classes or {}
    s = r.summary
    if not h.check(s is not None, what + ": a summary was written", r.stderr[-2000:]):
        return []
    ids = [x["id"] for x in r.records]
    h.check(sorted(ids) == list(range(n)), what + ": the JSONL holds each of the %d requests once" % n,
            (len(ids), len(set(ids))))
    ok = [x for x in r.records if x["status"] == "ok"]
    failed = [x for x in r.records if x["status"] == "error"]
    cancelled = [x for x in r.records if x["status"] == "cancelled"]
    h.check(s["request_count"]["avg"] == len(ok) and s["error_request_count"]["avg"] == len(failed)
            and s["cancelled_request_count"]["avg"] == len(cancelled) and len(ok) + len(failed) + len(cancelled)
            == n, what + ": summary counts ok %d + failed %d + cancelled %d = %d requests"
            % (len(ok), len(failed), len(cancelled), n),
            (s["request_count"], s["error_request_count"], s["cancelled_request_count"]))
    by_class = dict(collections.Counter(x["error_class"] for x in failed))
    h.check(by_class == classes, what + ": failures by class %s, want %s" % (by_class, classes))
    h.check(r.errors_by_class() == classes, what + ": error_summary by class %s, want %s"
            % (r.errors_by_class(), classes))
    # what the server saw: each prompt at most once, each a prompt surge sent, every ok one among them
    sent = prompts_sent(r)
    saw = collections.Counter(x["prompt"] for x in server)
    twice = [p[:40] for p, c in saw.items() if c > 1]
    h.check(not twice, what + ": the server got no request twice", twice[:3])
    unknown = set(saw) - set(sent.values())
    h.check(not unknown, what + ": the server got no request surge did not count (%d)" % len(unknown))
    lost = [x["id"] for x in ok if sent[x["id"]] not in saw]
    h.check(not lost, what + ": every ok request reached the server", lost[:10])
    if not classes:
        h.check(len(server) == n, what + ": the server saw %d requests, surge counted %d" % (len(server), n))
    artifacts_valid(h, r, n, what)
    print("%s: sent %d, ok %d, failed %s, server saw %d, exit %d" % (what, n, len(ok), by_class or 0, len(server),
                                                                   r.rc))
    return ok


def run_through(h, what, proxy_kw, args, n, timeout, check_rc=0, down=None):
    """One surge profile run through a fault proxy in front of a recording mock. down: (after_s, for_s) to take
    the link down during the run. Returns (Result, server records, proxy stats, accounting()'s arguments)."""
    with h.mock("--ttft-ms", TTFT, "--itl-ms", ITL, record=True) as m:
        with FaultProxy(("127.0.0.1", m.port), **proxy_kw) as p:
            if down:
                p.link_down(down[1], after=down[0])
            r = profile(h, p.url, "--streaming", "--synthetic-input-tokens-mean", 20, "--num-prompts", n,
                        "--request-count", n, *args, timeout=timeout, check_rc=check_rc)
            stats = p.stats()
        m.stop()
        server = m.records()
    accounting_args = (h, r, server, n, what)
    return r, server, stats, accounting_args


def case_delay(h):
    # 250 ms each way: 500 ms more before the first token, in TTFT from the intended start (and from send:
    # the connection was open, so the request went out on time)
    r, server, st, acc = run_through(h, "delay", {"delay_ms": 250}, ["--request-rate", 10, "--request-distribution",
                                                                     "constant", "--output-tokens-mean", 4], 12, 60)
    ok = accounting(*acc)
    if not ok:
        return
    ttft = sorted(x["time_to_first_token_ms"] for x in ok)
    lo = 500 + TTFT
    h.check(ttft[0] >= lo - 1, "delay: TTFT min %.1f ms >= %d ms (mock %d + 500 injected)" % (ttft[0], lo, TTFT))
    fs = r.summary["time_to_first_token_from_send"]["min"]
    h.check(fs >= lo - 1, "delay: TTFT from send min %.1f ms >= %d ms too" % (fs, lo))
    # upper bounds: the median close to it; the max only loosely (a busy 2-core machine deschedules the proxy or
    # the client for a few hundred ms at times)
    mid = ttft[len(ttft) // 2]
    h.check(mid <= lo + tol(40), "delay: TTFT median %.1f ms <= %d ms" % (mid, lo + tol(40)))
    h.check(ttft[-1] <= lo + tol(500), "delay: TTFT max %.1f ms <= %d ms" % (ttft[-1], lo + tol(500)))
    # the delay was the network's: the requests went out on time (a client waiting out the round trip before
    # sending would lag by about 500 ms on most of them)
    lag = r.summary["schedule_lag"]["p50"]
    h.check(lag < tol(50), "delay: the client was not held up: schedule lag p50 %.2f ms < %d ms" % (lag, tol(50)))


def case_jitter(h):
    # 50 +- 40 ms each way: TTFT spreads over [20 + 20, 20 + 180] ms, token order kept
    r, server, st, acc = run_through(h, "jitter", {"delay_ms": 50, "jitter_ms": 40, "seed": 7},
                                     ["--concurrency", 4, "--output-tokens-mean", 8], 40, 60)
    ok = accounting(*acc)
    if not ok:
        return
    ttft = sorted(x["time_to_first_token_ms"] for x in ok)
    lo, hi = TTFT + 2 * 10, TTFT + 2 * 90
    h.check(ttft[0] >= lo - 1, "jitter: TTFT min %.1f ms >= %d ms (mock %d + 2 x (50 - 40))" % (ttft[0], lo, TTFT))
    p90 = ttft[int(len(ttft) * 0.9)]
    h.check(p90 <= hi + tol(40), "jitter: TTFT p90 %.1f ms <= %d ms (mock + 2 x (50 + 40) + %d)"
            % (p90, hi + tol(40), tol(40)))
    h.check(ttft[-1] <= hi + tol(500), "jitter: TTFT max %.1f ms <= %d ms" % (ttft[-1], hi + tol(500)))
    sd = statistics.pstdev(ttft)
    h.check(sd > 15, "jitter: TTFT stddev %.1f ms > 15 ms (uniform +-40 each way: about 33)" % sd)
    h.check(all(x["content_events"] == 8 and x["output_sequence_length"] == 8 for x in ok),
            "jitter: every stream arrived whole, in order (8 events, OSL 8)")
    h.check(all(a <= b for x in ok for a, b in zip(x["token_times_ms"], x["token_times_ms"][1:])),
            "jitter: token times increase")


def case_bandwidth(h):
    # 40 KB/s down (and up): 24 streams of 64 tokens are about 300 KB, about 8 s at the cap; the mock alone
    # would send them in about 1 s
    rate = 40000
    r, server, st, acc = run_through(h, "bandwidth", {"rate_bps": rate},
                                     ["--concurrency", 4, "--output-tokens-mean", 64], 24, 90)
    ok = accounting(*acc)
    if not ok:
        return
    down = st["down"]
    span = down["last_write"] - down["first_write"]
    got = down["bytes"] / span if span > 0 else float("inf")
    h.check(got <= rate * 1.1, "bandwidth: %.0f B/s forwarded down, cap %d (+10%%)" % (got, rate))
    h.check(got >= rate * 0.6, "bandwidth: the cap was the bottleneck: %.0f B/s >= 60%% of %d" % (got, rate))
    dur = r.summary["benchmark_duration"]["avg"]
    want = sum(x["response_bytes"] for x in ok) / rate
    h.check(dur >= want * 0.9, "bandwidth: the run took %.2f s >= 90%% of its response bytes at the cap (%.2f s)"
            % (dur, want))
    rl = [x["request_latency_ms"] for x in ok]
    h.check(min(rl) > 64 * ITL + TTFT, "bandwidth: each request slower than the mock alone (%.0f ms)" % min(rl))


def intended_wall(r, x):
    c = r.summary["clock"]
    return (c["start_realtime_ns"] + c["records_origin_ns"] + x["intended_ns"]) / 1e9


def case_link_down(h):
    # 20 req/s for 6 s, streamed, open loop; the link goes down for 3 s about 2 s in. Nothing passes in the
    # outage; every request completes after it; those due in it wait for its end (from the intended start)
    n, rate, gap = 120, 20, 3.0
    r, server, st, acc = run_through(h, "link down", {}, ["--request-rate", rate, "--request-distribution",
                                                          "constant", "--output-tokens-mean", 8], n, 60,
                                     down=(2.0, gap))
    ok = accounting(*acc)
    downs = [d for d in st["downs"] if d[1]]
    if not ok or not h.check(len(downs) == 1, "link down: one outage", st["downs"]):
        return
    a, b = downs[0]
    # the proxy's own timers (a descheduled proxy ends the outage late; the checks below use the window measured)
    h.check(gap - 0.01 <= b - a <= gap + 0.5, "link down: the outage lasted %.3f s (%.1f s asked, + 0.5 s at most)"
            % (b - a, gap))
    # the client's receive times: no token arrived inside the outage (a margin for a token written just before
    # it and read late by a descheduled client)
    inside, margin = [], tol(100) / 1000
    for x in ok:
        t0 = intended_wall(r, x)
        for t in x["token_times_ms"]:
            if a + margin < t0 + t / 1000 < b - 0.02:
                inside.append((x["id"], t))
    h.check(not inside, "link down: no token arrived while the link was down", inside[:5])
    due = [x for x in ok if a + 0.05 < intended_wall(r, x) < b - 0.05]
    h.check(len(due) >= (gap - 0.2) * rate * 0.8, "link down: %d requests were due in the outage" % len(due))
    waited = [(x["id"], x["time_to_first_token_ms"], (b - intended_wall(r, x)) * 1000) for x in due]
    short = [w for w in waited if w[1] < w[2] - 5]
    h.check(not short, "link down: each request due in the outage has a TTFT from its intended start at least "
            "its wait for the link", short[:5])
    lat = r.summary["time_to_first_token"]["max"]
    h.check(lat >= gap * 1000 * 0.8, "link down: TTFT max %.0f ms shows the %.0f s outage" % (lat, gap))
    # the client kept its schedule through the outage (the sends were queued in the kernel, not held up: a
    # generator waiting for the link would lag by up to 3 s on the half of the requests due in it)
    lag = r.summary["schedule_lag"]["p90"]
    h.check(lag < tol(100), "link down: schedule lag p90 %.2f ms < %d ms (the generator did not stall)"
            % (lag, tol(100)))


def case_link_down_timeout(h):
    # the same outage with --request-timeout 1: requests caught in it fail as timeouts, each counted once, the
    # server never credited with one surge did not send (it does get the timed-out ones once the link is back),
    # and the run exits 1 (failures above --max-error-rate 0)
    n, rate, gap = 80, 20, 3.0
    r, server, st, acc = run_through(h, "link down, timeout 1 s", {}, [
        "--request-rate", rate, "--request-distribution", "constant", "--output-tokens-mean", 8,
        "--request-timeout", 1], n, 60, check_rc=None, down=(1.0, gap))
    h.check(r.rc == 1, "link down, timeout 1 s: exit status %d is 1 (more failed than --max-error-rate 0)" % r.rc,
            r.stderr[-2000:])
    timeouts = sum(1 for x in r.records if x.get("error_class") == "timeout")
    h.check(timeouts >= (gap - 1.2) * rate * 0.8, "link down, timeout 1 s: %d requests timed out" % timeouts)
    accounting(*acc, classes={"timeout": timeouts} if timeouts else {})


def case_loss(h):
    # 5% of chunks held 200 ms (a lost segment and its retransmission, as the application sees it): some
    # streams show one or more 200 ms gaps, every stream arrives whole, none fails
    r, server, st, acc = run_through(h, "loss spikes", {"loss": 0.05, "loss_delay_ms": 200, "seed": 3},
                                     ["--concurrency", 4, "--output-tokens-mean", 16], 40, 90)
    ok = accounting(*acc)
    if not ok:
        return
    spikes = st["up"]["spikes"] + st["down"]["spikes"]
    h.check(spikes >= 5, "loss spikes: %d chunks held" % spikes)
    gaps = [b - a for x in ok for a, b in zip(x["token_times_ms"], x["token_times_ms"][1:])]
    big = sum(1 for g in gaps if g >= 190)
    h.check(big >= 1, "loss spikes: %d gaps between tokens of >= 190 ms (a 200 ms spike)" % big)
    h.check(all(x["content_events"] == 16 for x in ok), "loss spikes: every stream whole")
    itl = r.summary["inter_chunk_latency"]["max"]
    h.check(itl >= 190, "loss spikes: inter chunk latency max %.0f ms shows the spike" % itl)


TUN_LOSS = 0.05


def case_tun_loss_inside(h):
    """Run inside tunloss.py's namespace (see case_tun_loss): surge and the mock over the lossy TUN loop."""
    n = 40
    with h.mock("--host", "10.9.0.1", "--ttft-ms", TTFT, "--itl-ms", ITL, record=True) as m:
        r = profile(h, "http://10.9.0.2:%d" % m.port, "--streaming", "--synthetic-input-tokens-mean", 20,
                    "--num-prompts", n, "--request-count", n, "--concurrency", 4, "--output-tokens-mean", 16,
                    timeout=120)
        m.stop()
        server = m.records()
    ok = accounting(h, r, server, n, "packet loss")
    if not ok:
        return
    h.check(all(x["content_events"] == 16 for x in ok), "packet loss: every stream whole")
    # normally TTFT is about 20 ms and tokens 2 ms apart: a lost segment recovered by a retransmission timeout
    # (200 ms at least) or a tail loss probe shows as a gap far above that somewhere
    worst = max([x["time_to_first_token_ms"] for x in ok] +
                [b - a for x in ok for a, b in zip(x["token_times_ms"], x["token_times_ms"][1:])])
    h.check(worst >= 100, "packet loss: the worst TTFT or gap between tokens %.1f ms >= 100 ms (a retransmission)"
            % worst)


def case_tun_loss(h):
    """5% of the IP packets dropped and 5% held 5 ms behind later ones, below TCP (tests/tools/tunloss.py: a TUN
    device in a user and network namespace of its own); the checks run inside it, in this same file run again."""
    tools = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools")
    probe = h.run(["unshare", "-rn", "true"], timeout=30) if shutil.which("unshare") else None
    if probe is None or probe.returncode != 0 or not os.path.exists("/dev/net/tun") or not shutil.which("ip"):
        print("packet loss below TCP: not run here (needs unshare -rn, /dev/net/tun and ip): %s"
              % (probe.stderr.strip() if probe else "no unshare"), flush=True)
        return
    env = dict(os.environ, SURGE_FAULTS_INSIDE_TUN="1")
    r = h.run(["unshare", "-rn", sys.executable, os.path.join(tools, "tunloss.py"), "--loss", TUN_LOSS, "--reorder", 0.05,
               "--reorder-ms", 5, "--seed", 5,
               "--exit-after", 200, "--", sys.executable, os.path.abspath(__file__), h.surge], timeout=240, env=env)
    sys.stdout.write(r.stdout)
    if r.returncode == 75:  # the device could not be made (a container without CAP_NET_ADMIN in namespaces)
        print("packet loss below TCP: not run here: %s" % r.stderr.strip()[-500:], flush=True)
        return
    h.check(r.returncode == 0, "packet loss: the checks inside the namespace pass", r.stderr[-3000:])
    m = re.search(r"tunloss: (\d+) packets, (\d+) dropped, (\d+) reordered", r.stderr)
    if h.check(m is not None, "packet loss: the loop's counters", r.stderr[-1000:]):
        packets, dropped, reordered = int(m.group(1)), int(m.group(2)), int(m.group(3))
        h.check(dropped >= packets * TUN_LOSS * 0.5 and reordered >= packets * 0.05 * 0.5,
                "packet loss: %d of %d packets dropped, %d reordered (5%% each asked, half at least)"
                % (dropped, packets, reordered))


def case_tls_reset(h):
    """A TLS front whose backend goes away: from 1 s on every new connection is reset during its handshake (the
    proxy reads the ClientHello and resets). A closed loop backs off as it does for a refused connect (10 ms doubling
    to 1 s per slot) instead of spinning on handshakes, and the outage is a server_unreachable window."""
    users, dur = 4, 4
    with h.mock("--tls", "--tls-alpn", "http/1.1", "--ttft-ms", TTFT, "--itl-ms", ITL, "--close-after", 1) as m:
        with FaultProxy(("127.0.0.1", m.port)) as p:
            p.reset_new(after=1.0)
            # --close-after 1: the mock closes each connection after its answer, so every request needs a new one
            r = profile(h, p.url.replace("http://", "https://"), "-k", "--streaming", "--output-tokens-mean", 4,
                        "--concurrency", users, "--benchmark-duration", dur, timeout=60, check_rc=1)
            st = p.stats()
            reset_since = p.reset_since
    s = r.summary or {}
    by = r.errors_by_class()
    # per slot: 7 attempts in the first 1.27 s of back-off, then one a second; room for two more per slot
    bound = users * (7 + dur + 2)
    h.check(0 < by.get("tls", 0) <= bound, "tls reset: handshakes reset %d times, at most %d (a closed loop backs off)"
            % (by.get("tls", 0), bound), by)
    h.check(st["reset"] >= by.get("tls", 0), "tls reset: the proxy reset %d, surge counted %d" % (st["reset"],
                                                                                                 by.get("tls", 0)))
    # The window starts with the first reset handshake: the proxy's resets begin 1 s after it was told, which is 1 s
    # into the run only when surge started at once (under TSan in CI it took 0.65 s: the window opened 0.35 s in).
    # So the start is checked against when the resets began, on the run's clock (every request opens a connection).
    wins = s.get("server_unreachable") or []
    clock = s.get("clock") or {}
    began = (reset_since - clock["start_realtime_ns"] / 1e9) if reset_since and clock else None
    late = 1.0 if SLOW else 0.5
    h.check(len(wins) == 1 and not wins[0]["recovered"] and began is not None
            and began - 0.05 <= wins[0]["start_s"] <= began + late,
            "tls reset: one server_unreachable window, not recovered, from when the resets began (%s s into the run, "
            "+ %.1f s at most)" % ("%.3f" % began if began is not None else "?", late), wins)
    h.check("server unreachable since" in r.stderr, "tls reset: the outage said at once on stderr", r.stderr[-1500:])


def main(h):
    if os.environ.get("SURGE_FAULTS_INSIDE_TUN"):
        case_tun_loss_inside(h)
        return
    case_delay(h)
    case_jitter(h)
    case_bandwidth(h)
    case_link_down(h)
    case_link_down_timeout(h)
    case_loss(h)
    case_tun_loss(h)
    case_tls_reset(h)


harness.main(main)
