# ctest: epoll-asan (run on epoll under ASan too: tests/CMakeLists.txt)
# ctest: run-serial (it judges TTFT through nginx against the mock's 40 ms within 2 ms)
"""surge profile --http2 (h2c, prior knowledge) through a real third-party HTTP/2 server: nginx as an h2c
reverse proxy (proxy_buffering off, so SSE streams through) in front of surge mock. Timing, OSL, many streams on
few connections, and GOAWAY (nginx's keepalive_requests) with the refused streams re-sent, never lost."""
import os
import shutil

import harness
from profiling import HttpServer, profile, tol, late
from servers import nginx_h2c

def stat(stderr, word):
    """Sum of '<n> <word>' over the --verbose http2 worker lines."""
    total = 0
    for line in stderr.splitlines():
        if ": http2: " not in line:
            continue
        for part in line.split(": http2: ", 1)[1].split(", "):
            if word in part:
                total += int(part.split()[0] if part.split()[0].isdigit() else part.split()[1])
    return total


def main(h):
    if not shutil.which("nginx"):
        if os.environ.get("CI"):
            h.check(False, "nginx installed (SURGE_TEST_PKGS)")
            return
        h.skip("nginx is not installed")
    ttft, itl, osl, n = 40, 8, 24, 200
    with h.mock("--ttft-ms", ttft, "--itl-ms", itl, record=True) as m, nginx_h2c(h, m.port) as ng:
        h.check(ng.proc.poll() is None, "nginx runs", ng.failed())
        # 1. streamed, closed loop: 32 streams over 2 connections of one worker
        r = profile(h, ng.url, "--http2", "--streaming", "--concurrency", 32, "--max-connections", 2, "--workers", 1,
                    "--request-count", n, "--output-tokens-mean", osl, "--synthetic-input-tokens-mean", 100,
                    "--verbose")
        s = r.summary
        h.check(s is not None, "streamed: summary written")
        if s:
            h.check(s["request_count"]["avg"] == n and s["error_request_count"]["avg"] == 0, "streamed: all ok",
                    s.get("error_summary"))
            h.within(s["time_to_first_token"]["p50"], ttft - 1, ttft + late(10.0), "TTFT p50 (ms) through nginx over h2c")
            h.near(s["inter_token_latency"]["p50"], itl, tol(0.5), "ITL p50 (ms) through nginx over h2c")
            h.check(s["output_sequence_length"]["min"] == osl and s["output_sequence_length"]["max"] == osl,
                    "OSL exactly %d" % osl, s["output_sequence_length"])
            h.check(all(len(x["token_times_ms"]) == osl for x in r.records), "every record has %d token times" % osl)
        h.check("2 connections opened (peak 2 open" in r.stderr, "32 streams on exactly 2 connections", r.stderr)
        peak = stat(r.stderr, "streams on one connection")
        h.check(peak >= 16, "at least 16 streams open at once on one connection", peak)

        # 2. non-streamed, open loop, connections as demand needs (one, with nginx's 128 streams)
        r = profile(h, ng.url, "--http2", "--request-rate", 400, "--request-count", n, "--workers", 1,
                    "--output-tokens-mean", 4, "--verbose")
        if r.summary:
            h.check(r.summary["request_count"]["avg"] == n and r.summary["error_request_count"]["avg"] == 0,
                    "non-streamed: all ok", r.summary.get("error_summary"))
            h.check(r.summary["output_sequence_length"]["p50"] == 4, "non-streamed: OSL 4")
        h.check("1 connections opened" in r.stderr, "non-streamed: one connection suffices", r.stderr)

    # 3. GOAWAY every 25 requests: streams above last-stream-id come back refused and are re-sent, none lost
    with h.mock("--ttft-ms", 10, "--itl-ms", 2) as m, nginx_h2c(h, m.port, keepalive_requests=25) as ng:
        r = profile(h, ng.url, "--http2", "--streaming", "--concurrency", 40, "--workers", 1, "--request-count", 300,
                    "--output-tokens-mean", 8, "--verbose")
        if r.summary:
            h.check(r.summary["request_count"]["avg"] == 300 and r.summary["error_request_count"]["avg"] == 0,
                    "GOAWAY: every request ok", r.summary.get("error_summary"))
        h.check(stat(r.stderr, "GOAWAY received") >= 5, "GOAWAY: received several", r.stderr)
        h.check(stat(r.stderr, "refused and re-sent") >= 1, "GOAWAY: refused streams re-sent", r.stderr)

    # 4. h2c against an HTTP/1.1-only server (surge mock speaks h2c now): refused at the start, one line, exit 2,
    #    no hang (test_profile_not_h2.py has the other servers that do not speak HTTP/2)
    h1_only = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    with HttpServer(lambda line, headers, body: h1_only, close=True) as m:
        r = profile(h, m.url, "--http2", "--request-count", 5, "--request-timeout", 10, check_rc=2)
        h.check(r.summary is None and "does not speak HTTP/2 (h2c" in r.stderr and "HTTP/1.1 400" in r.stderr,
                "h2c to an HTTP/1.1 server: one line naming its answer, nothing measured", r.stderr)

harness.main(main)
