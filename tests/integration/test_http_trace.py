# ctest: one-backend (the delays are the proxy's, between the processes; the trace's fields are set above the loop)
"""The HTTP trace (docs/metrics.md, "HTTP trace"): per-request connect, TLS handshake, sending, waiting (TTFB),
receiving and duration, recorded in profile_export_surge.jsonl and summarised as http_req_* (AIPerf's names).
Through tests/tools/faultproxy.py with a one-way delay D, a TLS 1.3 handshake takes one round trip (2 D) and every
response waits at least 2 D plus the mock's TTFT, while the TCP connect (to the proxy, on loopback) stays short: the
records must show the slow part where it is. Over https:// (HTTP/1.1 and h2 through ALPN) and http://, a new
connection's first request carries its set-up and every later request on it is marked reused with zeros, each
record's times are in order, and surge merge recomputes the same http_req_* summary from the files."""

import json
import os
import sys

import harness
from profiling import SLOW, profile, late

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from faultproxy import FaultProxy  # noqa: E402

D = 25  # one-way delay of the proxy (ms)
TTFT = 20  # the mock's (ms)
N = 24
TRACE = ("http_req_connecting", "http_req_sending", "http_req_waiting", "http_req_receiving", "http_req_duration")


def trace_ms(x):
    """The http_req_* phases (ms) of one record, from its exact ns times (docs/files.md: surge's JSONL keeps the ns
    times only; AIPerf's records carry the derived ms)."""
    if x["send_start_ns"] is None:
        return {}
    done = max(x["sent_ns"], x["send_start_ns"])
    return {"http_req_connecting": (x["connect_ns"] + (x["tls_handshake_ns"] or 0)) / 1e6,
            "http_req_sending": (done - x["send_start_ns"]) / 1e6,
            "http_req_waiting": max(0, x["first_byte_ns"] - done) / 1e6,
            "http_req_receiving": max(0, x["end_ns"] - x["first_byte_ns"]) / 1e6,
            "http_req_duration": max(0, x["end_ns"] - x["send_start_ns"]) / 1e6}


def check_records(h, r, what, tls, conns, streamed=False):
    recs = r.records
    h.check(len(recs) == N and all(x["status"] == "ok" for x in recs), what + ": every request ok", len(recs))
    new = [x for x in recs if x["connection_reused"] is False]
    reused = [x for x in recs if x["connection_reused"] is True]
    h.check(len(new) == conns and len(new) + len(reused) == N,
            what + ": %d requests on a new connection (one per connection opened), the rest reused" % conns,
            (len(new), len(reused)))
    for x in reused:
        h.check(x["connect_ns"] == 0 and trace_ms(x)["http_req_connecting"] == 0 and
                (x["tls_handshake_ns"] == 0 if tls else x["tls_handshake_ns"] is None),
                what + ": a reused connection reports zero set-up", x)
    for x in new:
        # the connect is to the proxy on loopback: quick; the handshake's round trip crosses the delay both ways.
        # Under sanitizers the bound only says the connect was recorded and sane: a TSan build saw one take 52 ms
        # (4 runs, median 12.7, room spread 39 ms: tests/flaky), past what D * 0.8 could hold with 2x room; the
        # release build keeps a bound that tells a connect from the handshake's 2 D (8.7 ms seen with four tests at
        # once, so 1.6 D, not 0.8 D)
        h.within(x["connect_ns"] / 1e6, 0.0005, 250 if SLOW else late(D * 1.6),
                 what + ": TCP connect (ms) of a new connection")
        if tls:
            # a request's own phase: at least the delay both ways; above, room for the VM's pauses (one over 40 ms
            # in 10 quiet release runs, tests/flaky), while the summary's p50 holds the tight bound
            h.within(x["tls_handshake_ns"] / 1e6, 2 * D - 1, 2 * D + late(150), what + ": TLS handshake (ms), 2 D")
        else:
            h.check(x["tls_handshake_ns"] is None, what + ": no TLS field over http://", x)
    for x in recs:
        order = [x["intended_ns"], x["send_start_ns"], x["sent_ns"], x["first_byte_ns"], x["end_ns"]]
        h.check(all(a <= b for a, b in zip(order, order[1:])) and x["response_head_ns"] >= x["first_byte_ns"],
                what + ": intended <= send start <= sent <= first byte <= end, head after the first byte", x)
        # the request goes up D, the mock waits its TTFT (a stream's head goes at once), the answer comes down D
        wait = 2 * D if streamed else 2 * D + TTFT
        t = trace_ms(x)
        h.within(t["http_req_waiting"], wait - 1, wait + late(150), what + ": waiting (ms)")
        if streamed:  # so the head came a TTFT before the first token: the server's share, told apart
            h.check(x["first_token_ns"] - x["sent_ns"] >= (2 * D + TTFT - 1) * 1e6,
                    what + ": first token a TTFT after the head", x)
        total = t["http_req_sending"] + t["http_req_waiting"] + t["http_req_receiving"]
        h.check(abs(total - t["http_req_duration"]) < 1e-5, what + ": sending + waiting + receiving = duration",
                (total, t["http_req_duration"]))
        h.check(t["http_req_sending"] < late(5), what + ": sending (ms) is short", t["http_req_sending"])
    # AIPerf's records carry the same phases in ms, request by request (both files are written from one log, in
    # its order)
    path = os.path.join(r.dir, "profile_export.jsonl")
    if os.path.exists(path):
        with open(path) as f:
            lines = [json.loads(s) for s in f if s.strip()]
        h.check(len(lines) == len(recs), what + ": AIPerf's records, one per request", (len(lines), len(recs)))
        for x, a in zip(recs, lines):
            for tag, v in trace_ms(x).items():
                got = a["metrics"].get(tag, {}).get("value")
                h.check(got is not None and abs(got - v) < 1e-5,
                        what + ": AIPerf's %s is the one the ns times give" % tag, (got, v))


def check_summary(h, s, what, tls, streamed=False):
    for tag in TRACE:
        h.check(tag in s and s[tag]["count"] == N and s[tag]["unit"] == "ms", what + ": summary has " + tag,
                s.get(tag))
    h.check(("http_req_tls_handshaking" in s) == tls, what + ": http_req_tls_handshaking only over https://")
    if tls:
        h.check(s["http_req_tls_handshaking"]["min"] == 0 and s["http_req_tls_handshaking"]["max"] >= 2 * D - 1,
                what + ": handshakes summarised, reused connections at 0", s["http_req_tls_handshaking"])
    wait = 2 * D if streamed else 2 * D + TTFT
    h.within(s["http_req_waiting"]["p50"], wait - 1, wait + late(40), what + ": waiting p50 (ms)")


def main(h):
    with h.mock("--ttft-ms", TTFT, "--itl-ms", 2) as m, FaultProxy(("127.0.0.1", m.port), delay_ms=D) as p:
        url = "http://127.0.0.1:%d" % p.port
        r = profile(h, url, "--concurrency", 3, "--workers", 1, "--request-count", N, "--output-tokens-mean", 4,
                    "--show-trace-timing")
        check_records(h, r, "http", False, 3)
        if r.summary:
            check_summary(h, r.summary, "http", False)
        h.check("HTTP waiting (TTFB) (ms)" in r.stdout and "HTTP connecting (ms)" in r.stdout,
                "--show-trace-timing: the trace's rows in the table", r.stdout[-3000:])
        plain = profile(h, url, "--concurrency", 1, "--workers", 1, "--request-count", 4, "--output-tokens-mean", 2)
        h.check("HTTP waiting" not in plain.stdout, "without --show-trace-timing the table has no trace rows")
        # surge merge reads the records back: the same trace summary
        out = h.path("merged")
        mp = h.run([h.surge, "merge", r.dir, "-o", out])
        h.check(mp.returncode == 0, "surge merge of the http run", mp.stderr[-2000:])
        path = os.path.join(out, "profile_export_surge.json")
        if mp.returncode == 0 and os.path.exists(path) and r.summary:
            with open(path) as f:
                ms = json.load(f)
            for tag in TRACE:
                h.check(ms.get(tag, {}).get("p50") == r.summary[tag]["p50"] and
                        ms.get(tag, {}).get("count") == N, "merge: %s as in the run" % tag,
                        (ms.get(tag), r.summary[tag]))
        with open(os.path.join(r.dir, "profile_export.jsonl")) as f:
            line = json.loads(f.readline())
        h.check("http_req_waiting" in line["metrics"] and line["metrics"]["http_req_waiting"]["unit"] == "ms",
                "AIPerf's records carry http_req_waiting", line["metrics"].keys())

    cert = h.path("mock-ca.pem")
    with h.mock("--tls", "--tls-cert-out", cert, "--tls-alpn", "http/1.1", "--ttft-ms", TTFT, "--itl-ms", 2) as m, \
            FaultProxy(("127.0.0.1", m.port), delay_ms=D) as p:
        url = "https://127.0.0.1:%d" % p.port
        r = profile(h, url, "--cacert", cert, "--concurrency", 2, "--workers", 1, "--request-count", N,
                    "--output-tokens-mean", 4, "--streaming")
        check_records(h, r, "https HTTP/1.1", True, 2, streamed=True)
        if r.summary:
            check_summary(h, r.summary, "https HTTP/1.1", True, streamed=True)
    with h.mock("--tls", "--tls-cert-out", cert, "--ttft-ms", TTFT, "--itl-ms", 2) as m, \
            FaultProxy(("127.0.0.1", m.port), delay_ms=D) as p:
        url = "https://127.0.0.1:%d" % p.port
        r = profile(h, url, "--cacert", cert, "--concurrency", 4, "--workers", 1, "--request-count", N,
                    "--output-tokens-mean", 4)
        # h2 through ALPN: every stream on one session; its first stream carries the set-up
        check_records(h, r, "https h2", True, 1)
        if r.summary:
            check_summary(h, r.summary, "https h2", True)


if __name__ == "__main__":
    harness.main(main)
