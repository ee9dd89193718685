# ctest: run-serial (outage windows are timed against the test's own stop and restart of the mock; the test runs
# its scenarios in two lanes itself)
# ctest: one-backend (it runs the closed loop on io_uring and on epoll itself; the rest is the server's outage, not the event loop)
"""A server that goes away in the middle of a run and comes back on the same port (issue 23).

- Closed loop: a slot whose connect is refused backs off (10 ms doubling to 1 s), so an outage of about 2 s costs
  hundreds of failed requests, not tens of thousands; the outage is said on stderr while it happens (one line when
  connects start failing, one when they work again) and listed in the summary's server_unreachable; every request is
  counted once and the ok ones match what the mock recorded.
- The crash closes every connection at once; that is not read as the server's keep-alive habit: after the restart
  connections are reused again. A server that does have the habit (llama-server's: a silent close after every
  streamed response) is still learnt after a restart.
- Open loop: arrivals keep their schedule through the outage, each failing as its connect does; the window is
  reported the same way.
- A server that never comes back: the run ends at its duration, says so, and blames no keep-alive habit; a closed
  loop of multi-turn sessions backs off the same way.
Both I/O backends for the closed loop."""
import json
import os
import subprocess
import threading
import time

import harness

OUTAGE_S = 2.0
STOP_AT_S = 2.0
LEARNT = "the server closed kept-alive connections right after streamed responses without saying so"
UNREACHABLE = "surge: server unreachable since"
BACK = "surge: server reachable again at"


class SamePortMock(harness.Mock):
    """A mock on a given port (the first one's, to restart the server where the client keeps connecting)."""

    def __init__(self, surge, port, *args, **kw):
        super().__init__(surge, *args, **kw)
        self.fixed_port = port

    def command(self):
        cmd = super().command()
        cmd[cmd.index("--port") + 1] = str(self.fixed_port)
        return cmd


def run_across_restart(h, load, second=(), env=None, tag="", ttft_ms=30, streaming=True):
    """surge profile with `load` against a mock stopped at STOP_AT_S and restarted OUTAGE_S later on the same port
    (with `second` as its options). Returns a dict of what happened, with stderr lines timed as they came. The TTFT
    is most of a response's time, so the stop finds most requests waiting for their first byte: their loss looks
    like a silent close after the previous response (what the keep-alive learning counts)."""
    base = ("--ttft-ms", ttft_ms, "--itl-ms", 1)
    m1 = h.mock(*base, record=True)
    m1.start()
    art = h.path("art-restart-%s" % tag)
    cmd = [h.surge, "profile", "-m", "mock-model", "-u", m1.url, "--artifact-dir", art, "--no-progress",
           "--output-tokens-mean", 4, "--synthetic-input-tokens-mean", 16] + (["--streaming"] if streaming else []) + \
        list(load)
    lines = []
    t0 = time.monotonic()
    out_path = h.path("stdout-%s" % tag)
    out_f = open(out_path, "w")
    proc = subprocess.Popen([str(a) for a in cmd], stdout=out_f, stderr=subprocess.PIPE, text=True, env=env)

    def read_err():
        for line in proc.stderr:
            lines.append((time.monotonic(), line.rstrip("\n")))

    reader = threading.Thread(target=read_err, daemon=True)
    reader.start()
    out = {}
    try:
        time.sleep(STOP_AT_S)
        stop_t = time.monotonic()
        m1.stop()  # every connection closed at once, then connects refused
        time.sleep(OUTAGE_S)
        m2 = SamePortMock(h.surge, m1.port, args=base + tuple(second), tmpdir=h.tmpdir, record=True)
        h.mocks.append(m2)
        launch_t = time.monotonic()
        m2.start()
        back_t = time.monotonic()
        proc.wait(timeout=90)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        h.check(False, "%s: the run ends within 90 s" % tag)
        return None
    finally:
        out_f.close()
    reader.join(10)
    stdout = open(out_path).read()
    m2.stop()
    out.update(art=art, rc=proc.returncode, stdout=stdout, lines=lines, stderr="\n".join(x for _, x in lines), t0=t0,
               stop_t=stop_t, launch_t=launch_t, back_t=back_t, m1=m1.records(), m2=m2.records())
    path = os.path.join(art, "profile_export_surge.json")
    out["summary"] = json.load(open(path)) if os.path.exists(path) else None
    path = os.path.join(art, "profile_export_surge.jsonl")
    out["records"] = [json.loads(x) for x in open(path)] if os.path.exists(path) else []
    return out


def check_window(h, r, what, max_late_s):
    """One window, close to the outage; said on stderr while it happened."""
    s = r["summary"]
    wins = s.get("server_unreachable")
    h.check(isinstance(wins, list) and len(wins) == 1, "%s: one server_unreachable window" % what, wins)
    if not wins or len(wins) != 1:
        return
    w = wins[0]
    # the run's start instant on the test's clock (both CLOCK_MONOTONIC): the first request the mock received
    start = min(x["t_ns"] for x in r["m1"]) / 1e9
    stop = r["stop_t"] - start
    launch = r["launch_t"] - start
    back = r["back_t"] - start
    print("%s: window %.3f..%.3f s (stop %.3f, restart launched %.3f, ready %.3f), %d refused, %d waiting"
          % (what, w["start_s"], w["end_s"], stop, launch, back, w["refused"], w["slots_waiting"]))
    h.check(stop - 0.3 <= w["start_s"] <= stop + 0.5,
            "%s: the window starts at the stop (%.3f s; stop at %.3f s, bound -0.3/+0.5 s)" % (what, w["start_s"], stop))
    # the new mock listens between its launch and back_t (its port file seen); a backed-off slot tries again at
    # most 1 s later (closed loop), an arrival within 20 ms (open loop)
    h.check(launch <= w["end_s"] <= back + max_late_s,
            "%s: the window ends at the restart (%.3f s; restart launched at %.3f s, ready by %.3f s, bound +%.1f s)"
            % (what, w["end_s"], launch, back, max_late_s))
    h.check(w["recovered"] is True and w["refused"] >= 1, "%s: recovered, refusals counted" % what, w)
    said = [(t, x) for t, x in r["lines"] if x.startswith(UNREACHABLE)]
    again = [(t, x) for t, x in r["lines"] if x.startswith(BACK)]
    h.check(len(said) == 1 and r["stop_t"] <= said[0][0] < r["launch_t"],
            "%s: the unreachable line came during the outage" % what, (said, r["stop_t"], r["back_t"]))
    h.check(len(again) == 1 and again[0][0] >= r["launch_t"] and (not said or again[0][0] > said[0][0]),
            "%s: the reachable-again line came after the restart" % what, again)
    h.check("Server unreachable from +" in r["stdout"], "%s: the console lists the window" % what,
            r["stdout"][-1500:])


def check_accounting(h, r, what):
    """Every request once: ok + failed == the records; the ok ones were received by one of the mocks."""
    s = r["summary"]
    recs = r["records"]
    ok = s["request_count"]["avg"]
    failed = s["error_request_count"]["avg"]
    ids = [x["id"] for x in recs]
    h.check(len(ids) == len(set(ids)), "%s: every record once" % what)
    n_ok = sum(1 for x in recs if x["status"] == "ok")
    h.check(n_ok == ok and len(recs) == ok + failed,
            "%s: ok %d + failed %d == %d records (%d ok)" % (what, ok, failed, len(recs), n_ok))
    seen = len(r["m1"]) + len(r["m2"])
    lost = sum(1 for x in recs if x["status"] != "ok" and x.get("error_class") == "disconnect")
    h.check(ok <= seen <= ok + lost + 32,
            "%s: the mocks recorded the ok requests (%d ok, %d recorded, %d cut off by the stop)"
            % (what, ok, seen, lost))


def closed_loop(h, backend):
    what = "closed loop, %s" % backend
    env = dict(os.environ, SURGE_IO_BACKEND=backend)
    # whole answers: the stop finds the requests in flight without a byte of response, as lost reuses
    r = run_across_restart(h, ("--concurrency", 16, "--benchmark-duration", 7), env=env, tag=backend,
                           streaming=False)
    if not r or not r["summary"]:
        h.check(False, "%s: a summary" % what, r and r["stderr"][-2000:])
        return
    h.check(r["rc"] == 1, "%s: exits 1 (requests failed: %d)" % (what, r["rc"]), r["stderr"][-1500:])
    by = {}
    for g in r["summary"].get("error_summary", []):
        by[g["class"]] = by.get(g["class"], 0) + g["count"]
    # each of 16 slots: 10 ms doubling to 1 s is 7 attempts in the first 1.27 s, then one a second (about 112 in
    # all for a 2.3 s outage); the bound allows two more a slot, and a slower restart its extra seconds
    outage = r["back_t"] - r["stop_t"]
    bound = 16 * (7 + int(outage + 1) + 2)
    h.check(1 <= by.get("connect", 0) <= bound,
            "%s: refused attempts bounded (%d, at most %d)" % (what, by.get("connect", 0), bound), by)
    h.check(sum(by.values()) <= bound + 64, "%s: failures bounded (%d)" % (what, sum(by.values())), by)
    check_window(h, r, what, 1.5)
    check_accounting(h, r, what)
    check_reuse(h, r, what)
    check_report(h, r, what)


def check_report(h, r, what):
    """surge report on the run: the page's data lists the window on the timeline's clock, with its counts."""
    import re
    p = h.run([h.surge, "report", r["art"]], timeout=60)
    page = os.path.join(r["art"], "report.html")
    if not h.check(p.returncode == 0 and os.path.exists(page), "%s: report written" % what, p.stderr[-2000:]):
        return
    with open(page) as f:
        m = re.search(r'<script id="surge-data" type="application/json">(.*?)</script>', f.read(), re.S)
    runs = (json.loads(m.group(1)) if m else {}).get("runs") or [{}]
    un = runs[0].get("unreachable")
    wins = r["summary"].get("server_unreachable") or []
    if not h.check(isinstance(un, list) and len(un) == len(wins) == 1, "%s: the report lists the window" % what,
                   (un, wins)):
        return
    origin = r["summary"]["clock"]["records_origin_ns"] / 1e9
    h.near_page(un[0]["start"], wins[0]["start_s"] - origin, "%s: report window start on the records' clock (s)"
                % what)
    h.near_page(un[0]["end"], wins[0]["end_s"] - origin, "%s: report window end on the records' clock (s)" % what)
    h.check(un[0]["refused"] == wins[0]["refused"] and un[0]["recovered"] is True,
            "%s: report window refused %s (summary %s), came back" % (what, un[0]["refused"], wins[0]["refused"]))
    # a request intended at the window's very edge (a closed loop's slot retries at the instant the window opens)
    # may fall either side of it once both are rounded to seconds as doubles: a microsecond either way
    eps = 1e-6
    lo = sum(1 for x in r["records"] if un[0]["start"] + eps < x["intended_ns"] / 1e9 < un[0]["end"] - eps)
    hi = sum(1 for x in r["records"] if un[0]["start"] - eps <= x["intended_ns"] / 1e9 <= un[0]["end"] + eps)
    h.check(lo <= un[0]["requests"] <= hi and hi > 0, "%s: report: %d requests due in the window (%d to %d in the "
            "records, by where the edges' requests fall)" % (what, un[0]["requests"], lo, hi))


def check_reuse(h, r, what):
    """The crash was not taken for a keep-alive habit: the restarted server's connections carry many requests each,
    and nothing is blamed on the server."""
    conns = {(x["worker"], x["conn"]) for x in r["m2"]}
    per = len(r["m2"]) / max(1, len(conns))
    h.check(len(r["m2"]) >= 100 and per >= 5,
            "%s: connections reused after the restart (%d requests on %d connections, at least 5 each)"
            % (what, len(r["m2"]), len(conns)))
    ka = r["summary"].get("keep_alive", {})
    h.check(ka.get("reused_after_streamed") is True and ka.get("reused_after_whole") is True and
            "closed kept-alive connections" not in r["stderr"],
            "%s: no keep-alive habit blamed on the server" % what, (ka, r["stderr"][-1500:]))


def habit_after_restart(h):
    """The restarted server closes every connection silently after each streamed response: learnt after the
    outage, as on a fresh run."""
    what = "habit after the restart"
    r = run_across_restart(h, ("--concurrency", 4, "--benchmark-duration", 6, "--workers", 1),
                           second=("--close-after", 1, "--close-notice", "none", "--close-delay-ms", 6), tag="habit")
    if not r or not r["summary"]:
        h.check(False, "%s: a summary" % what)
        return
    ka = r["summary"].get("keep_alive", {})
    h.check(LEARNT in r["stderr"] and ka.get("reused_after_streamed") is False,
            "%s: the habit is learnt" % what, (ka, r["stderr"][-1500:]))
    check_accounting(h, r, what)


def instant_respawn(h):
    """A crash whose server is back at once (the mock's crash:AT,0: every connection closed together, the listening
    socket kept, so no connect is refused). Its closes teach the keep-alive habit (they look the same), but they came
    all at once, so one connection is tried again a second later; the server keeps it, so the habit is forgotten:
    connections are reused again, and the run blames no habit. Without the probe, every request after the crash
    opened a connection of its own (1,147 requests on 1,147 connections)."""
    what = "instant respawn"
    # the crash 1.5 s after the first request, not after the mock's start: under load surge can take longer than
    # that to start, and the crash then fell before the run
    with h.mock("--ttft-ms", 30, "--itl-ms", 1, "--fault", "crash:1500,0", "--fault-origin", "request",
                record=True) as m:
        p = h.run([h.surge, "profile", "-m", "mock-model", "-u", m.url, "--artifact-dir", h.path("art-respawn"),
                   "--no-progress", "--output-tokens-mean", 4, "--synthetic-input-tokens-mean", 16, "--concurrency",
                   16, "--benchmark-duration", 5], timeout=60)
        m.stop()
        seen = m.records()
    h.check(p.returncode in (0, 1) and LEARNT not in p.stderr, "%s: no keep-alive habit blamed at the end (exit %d)"
            % (what, p.returncode), p.stderr[-1500:])
    t0 = min((x["t_ns"] for x in seen), default=0)
    # the crash 1.5 s after t0, the probe a second after the habit was learnt: from 3.5 s on, connections carry many
    late = [x for x in seen if x["t_ns"] - t0 > 3.5e9]
    conns = {(x["worker"], x["conn"]) for x in late}
    h.check(len(late) > 16 and len(late) >= 5 * max(1, len(conns)),
            "%s: connections reused again after the probe (%d requests on %d connections, at least 5 each)"
            % (what, len(late), len(conns)))


def open_loop(h):
    what = "open loop"
    rate = 100.0
    r = run_across_restart(h, ("--request-rate", rate, "--request-distribution", "constant", "--benchmark-duration",
                               6), tag="open")
    if not r or not r["summary"]:
        h.check(False, "%s: a summary" % what)
        return
    check_window(h, r, what, 0.5)
    check_accounting(h, r, what)
    # idle pooled connections all closed at once by the stop: not a habit either
    check_reuse(h, r, what)
    intended = sorted(x["intended_ns"] for x in r["records"])
    gaps = [(b - a) / 1e6 for a, b in zip(intended, intended[1:])]
    h.check(gaps and all(abs(g - 1e3 / rate) < 0.01 for g in gaps), "%s: intended times keep the schedule" % what,
            [g for g in gaps if abs(g - 1e3 / rate) >= 0.01][:10])
    n = len(r["records"])
    h.check(abs(n - rate * 6) <= 1, "%s: every arrival issued (%d)" % (what, n))
    failed = r["summary"]["error_request_count"]["avg"]
    outage = r["back_t"] - r["stop_t"]
    h.check(failed <= rate * (outage + 1.0), "%s: failures about the arrivals in the outage (%d, at most %d)"
            % (what, failed, rate * (outage + 1.0)))


def never_back(h):
    """The server does not come back: the run still ends at its duration (backed-off slots do not hold it up), the
    window is listed as not recovered, and the crash's closes are not blamed on the server's keep-alive habit."""
    what = "never back"
    m = h.mock("--ttft-ms", 30, "--itl-ms", 1)
    m.start()
    duration = 4
    art = h.path("art-never-back")
    cmd = [h.surge, "profile", "-m", "mock-model", "-u", m.url, "--artifact-dir", art, "--no-progress",
           "--output-tokens-mean", 4, "--synthetic-input-tokens-mean", 16, "--concurrency", 16,
           "--benchmark-duration", duration]
    t0 = time.monotonic()
    proc = subprocess.Popen([str(a) for a in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(STOP_AT_S)
    m.stop()
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        h.check(False, "%s: the run ends within 60 s" % what)
        return
    took = time.monotonic() - t0
    # set-up (the preflight, connections opened before the start) and the export come on top of the duration
    h.check(took < duration + 2.5, "%s: the run ends at its duration (%.2f s, at most %.1f s)" % (what, took,
                                                                                                 duration + 2.5))
    h.check("still unreachable" in err and "closed kept-alive connections" not in err,
            "%s: the end says the server is still unreachable, and blames no keep-alive habit" % what, err[-1500:])
    path = os.path.join(art, "profile_export_surge.json")
    s = json.load(open(path)) if os.path.exists(path) else {}
    wins = s.get("server_unreachable", [])
    h.check(len(wins) == 1 and wins[0]["recovered"] is False and wins[0]["end_s"] <= duration + 0.5,
            "%s: one window, not recovered, ending with the run" % what, wins)
    ka = s.get("keep_alive", {})
    h.check(ka.get("reused_after_whole") is True, "%s: the keep-alive findings do not blame the server" % what, ka)
    # surge merge keeps the windows (a run merged alone gives back its own)
    out = h.path("merged-never-back")
    p = h.run([h.surge, "merge", art, "-o", out, "-q"])
    path = os.path.join(out, "profile_export_surge.json")
    merged = json.load(open(path)).get("server_unreachable") if os.path.exists(path) else None
    same = merged is not None and len(merged) == len(wins) and all(
        all(abs(a[k] - b[k]) < 1e-6 if isinstance(a[k], float) else a[k] == b[k] for k in a)
        for a, b in zip(wins, merged))
    # exit 1: the merged run's failures are above --max-error-rate 0, as the run's were
    h.check(p.returncode == 1 and same, "%s: surge merge keeps the window (exit %d)" % (what, p.returncode),
            (merged, wins, p.stderr))


def sessions_down(h):
    """Multi-turn sessions in a closed loop: a session whose turn is refused ends (its other turns counted, class
    session) and its slot backs off before the next session, as a request's does."""
    what = "sessions, server down"
    m = h.mock("--ttft-ms", 5, "--itl-ms", 1)
    m.start()
    art = h.path("art-sessions-down")
    cmd = [h.surge, "profile", "-m", "mock-model", "-u", m.url, "--artifact-dir", art, "--no-progress",
           "--output-tokens-mean", 4, "--synthetic-input-tokens-mean", 8, "--conversation-turn-mean", 3,
           "--concurrency", 4, "--benchmark-duration", 4, "--workers", 1]
    proc = subprocess.Popen([str(a) for a in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(STOP_AT_S)
    stop_t = time.monotonic()
    m.stop()
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        h.check(False, "%s: the run ends within 60 s" % what)
        return
    down = time.monotonic() - stop_t
    path = os.path.join(art, "profile_export_surge.json")
    s = json.load(open(path)) if os.path.exists(path) else {}
    by = {}
    for g in s.get("error_summary", []):
        by[g["class"]] = by.get(g["class"], 0) + g["count"]
    # 4 slots, each 7 attempts in the first 1.27 s then one a second
    bound = 4 * (7 + int(down + 1) + 2)
    h.check(1 <= by.get("connect", 0) <= bound,
            "%s: refused turns bounded (%d, at most %d)" % (what, by.get("connect", 0), bound), (by, err[-800:]))
    h.check(len(s.get("server_unreachable", [])) == 1, "%s: the window is listed" % what,
            s.get("server_unreachable"))


def main(h):
    # two lanes: the scenarios mostly wait on their servers' outages (the test keeps a core about 7% busy)
    harness.lanes([lambda: closed_loop(h, "io_uring"), lambda: instant_respawn(h), lambda: open_loop(h),
           lambda: sessions_down(h)],
          [lambda: closed_loop(h, "epoll"), lambda: habit_after_restart(h), lambda: never_back(h)])


if __name__ == "__main__":
    harness.main(main)
