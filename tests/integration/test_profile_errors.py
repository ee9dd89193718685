"""Failures are clear messages or counted by class, never lost; exit statuses; SIGINT still writes results."""
import os
import signal
import subprocess
import time

import harness
from profiling import HttpServer, Result, profile


def RawServer(response, close=True):
    """Answers every request with the same bytes (and closes the connection after each, by default)."""
    return HttpServer(lambda line, headers, body: response, close=close)


def sse_response(events):
    body = b"".join(b"data: " + e + b"\n\n" for e in events)
    return (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n" % len(body)) + body


def main(h):
    surge = h.surge
    # -- bad input: one clear line, exit 2, nothing measured
    cases = [
        (["-u", "127.0.0.1:1"], "cannot connect"),
        (["-u", "ftp://127.0.0.1:8000"], "--url"),
        (["-u", "127.0.0.1:99999"], "--url"),
        (["--request-rate", "abc"], "--request-rate"),
        (["--request-rate", "-5"], "--request-rate"),
        (["--concurrency", "0"], "--concurrency"),
        (["--concurrency", "2", "--request-rate", "5"], "--concurrency"),
        (["--max-concurrency", "2"], "--max-concurrency"),
        (["--request-distribution", "weibull", "--request-rate", "5"], "--request-distribution"),
        (["--endpoint-type", "embeddingz"], "--endpoint-type"),
        (["--extra-inputs", "novalue"], "--extra-inputs"),
        (["-H", "Bad Header"], "--header"),
        (["--goodput", "nonsense:5"], "--goodput"),
        (["--no-such-flag"], "no-such-flag"),
    ]
    for args, needle in cases:
        base = [surge, "profile", "-m", "x", "--no-progress", "--artifact-dir", h.path("bad")]
        if "-u" not in args:
            base += ["-u", "127.0.0.1:1"]
        p = h.run(base + args, timeout=30)
        h.check(p.returncode == 2, "bad input %s exits 2" % args, (p.returncode, p.stderr))
        h.check(needle in p.stderr and p.stderr.count("\n") <= 3, "message for %s names %s" % (args, needle),
                p.stderr)
    p = h.run([surge, "profile", "-u", "127.0.0.1:1"], timeout=30)
    h.check(p.returncode == 2 and "--model" in p.stderr, "missing -m is an error naming --model", p.stderr)
    h.check(not os.path.exists(h.path("bad")), "no artifacts left behind by bad input")

    # -- HTTP errors from the server: counted as class http with the server's message; exit 1 unless allowed
    with h.mock("--ttft-ms", 1, "--itl-ms", 1, "--error-rate", 0.5) as m:
        r = profile(h, m.url, "--concurrency", 4, "--request-count", 200, "--output-tokens-mean", 2, check_rc=1)
        if r.summary:
            e = r.summary["error_request_count"]["avg"]
            ok = r.summary["request_count"]["avg"]
            h.check(ok + e == 200, "every request counted: ok + errors == 200", (ok, e))
            h.check(60 < e < 140, "about half the requests failed", e)
            groups = r.summary["error_summary"]
            h.check(any(g["class"] == "http" and g["code"] == 500 for g in groups), "http 500 group", groups)
            h.check(len([x for x in r.records if x["status"] == "error"]) == e, "errors in the JSONL too")
        r = profile(h, m.url, "--concurrency", 4, "--request-count", 100, "--output-tokens-mean", 2,
                    "--max-error-rate", 0.9, check_rc=0)

    # -- dropped mid-stream: class disconnect
    with h.mock("--ttft-ms", 1, "--itl-ms", 2, "--drop-rate", 1.0) as m:
        r = profile(h, m.url, "--streaming", "--concurrency", 2, "--request-count", 10, "--output-tokens-mean", 10,
                    check_rc=1)
        h.check(r.errors_by_class().get("disconnect") == 10, "10 dropped streams counted as disconnect",
                r.summary and r.summary.get("error_summary"))

    # -- per-request timeout
    with h.mock("--ttft-ms", 3000, "--itl-ms", 1) as m:
        t0 = time.monotonic()
        r = profile(h, m.url, "--concurrency", 3, "--request-count", 3, "--request-timeout", 0.3, check_rc=1)
        h.check(time.monotonic() - t0 < 2.5, "timeouts end the run promptly")
        h.check(r.errors_by_class().get("timeout") == 3, "3 timeouts", r.summary and r.summary.get("error_summary"))

    # -- malformed responses from a raw server
    bad_json = sse_response([b'{"choices":[{"delta":{"content":"a"}}]}', b"{not json", b"[DONE]"])
    with RawServer(bad_json) as s:
        r = profile(h, s.url, "--streaming", "--concurrency", 1, "--request-count", 3, check_rc=1)
        h.check(r.errors_by_class().get("protocol") == 3, "malformed SSE JSON counted as protocol",
                r.summary and r.summary.get("error_summary"))
    with RawServer(b"HTTP/1.1 200 OK\r\nContent-Length: zz\r\n\r\n") as s:
        r = profile(h, s.url, "--concurrency", 1, "--request-count", 3, check_rc=1)
        h.check(r.errors_by_class().get("protocol") == 3, "malformed HTTP counted as protocol",
                r.summary and r.summary.get("error_summary"))
    err_in_stream = sse_response([b'{"error":{"message":"model overloaded","code":503}}'])
    with RawServer(err_in_stream) as s:
        r = profile(h, s.url, "--streaming", "--concurrency", 1, "--request-count", 2, check_rc=1)
        groups = (r.summary or {}).get("error_summary", [])
        h.check(any(g["class"] == "server" and "overloaded" in g["message"] for g in groups),
                "an error object inside a 200 stream is a server error with its message", groups)
    with RawServer(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 100\r\n\r\ndata: {") as s:
        r = profile(h, s.url, "--streaming", "--concurrency", 1, "--request-count", 2, check_rc=1)
        h.check(r.errors_by_class().get("disconnect") == 2, "a body cut short is a disconnect",
                r.summary and r.summary.get("error_summary"))
    # Connection: close on every response: requests still all succeed, one connection each.
    body = b'{"choices":[{"message":{"content":"hi there"}}],"usage":{"completion_tokens":2,"prompt_tokens":3}}'
    ok_close = (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                % len(body)) + body
    with RawServer(ok_close) as s:
        r = profile(h, s.url, "--concurrency", 2, "--request-count", 20, check_rc=0)
        if r.summary:
            h.check(r.summary["output_sequence_length"]["avg"] == 2, "OSL from a Connection: close response")

    # -- SIGINT: stop, cancel what is in flight, still write the results marked interrupted
    with h.mock("--ttft-ms", 50, "--itl-ms", 50) as m:
        art = h.path("interrupted")
        p = subprocess.Popen([surge, "profile", "-m", "x", "-u", m.url, "--streaming", "--request-rate", "40",
                              "--request-count", "100000", "--output-tokens-mean", "20", "--no-progress",
                              "--artifact-dir", art], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)
        p.send_signal(signal.SIGINT)
        try:
            out, err = p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        h.check(p.returncode == 130, "interrupted run exits 130", (p.returncode, err[-2000:]))
        h.check("INTERRUPTED" in err or "INTERRUPTED" in out, "says it was interrupted", err[-500:])
        r = Result(subprocess.CompletedProcess([], p.returncode, out, err), art)
        h.check(r.summary is not None and r.summary.get("was_interrupted") is True, "summary marked interrupted")
        if r.summary:
            ok = r.summary["request_count"]["avg"]
            cancelled = r.summary["cancelled_request_count"]["avg"]
            h.check(ok > 10, "requests completed before the interrupt were measured", ok)
            h.check(cancelled > 0, "in-flight requests counted as cancelled", r.summary.get("cancelled_request_count"))
            # surge cancelled them, the server failed none: not errors (test_profile_cancelled.py has the rest)
            h.check("cancelled" not in r.errors_by_class() and r.summary["error_request_count"]["avg"] == 0,
                    "cancelled requests are not errors", r.summary.get("error_summary"))
            h.check(len(r.records) == ok + cancelled and sum(x["status"] == "cancelled" for x in r.records) == cancelled,
                    "JSONL has every request, the cancelled ones as such")


if __name__ == "__main__":
    harness.main(main)
