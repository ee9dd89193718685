# ctest: epoll-asan (run on epoll under ASan too: tests/CMakeLists.txt)
"""surge mock over h2c (prior knowledge): surge profile --http2 straight against it (timing, exact OSL, many
streams multiplexed on few connections as the mock's record shows, injected errors counted, resets from
--drop-rate counted), and h2load, a third-party HTTP/2 client, against it (every request 2xx)."""
# ctest: run-serial (its TTFT p99 over 32 lockstep streams moves with a test running beside it on 2 cores)
import os
import re
import shutil

import harness
from profiling import late, profile, tol


def main(h):
    ttft, itl, osl, n = 40, 8, 24, 200
    # 1. streamed, closed loop: 32 streams over 2 connections, timing as over HTTP/1.1
    with h.mock("--ttft-ms", ttft, "--itl-ms", itl, record=True) as m:
        r = profile(h, m.url, "--http2", "--streaming", "--concurrency", 32, "--max-connections", 2, "--workers", 1,
                    "--request-count", n, "--output-tokens-mean", osl, "--synthetic-input-tokens-mean", 100,
                    "--verbose")
        m.stop()
        s = r.summary
        h.check(s is not None, "streamed: summary written")
        if s:
            h.check(s["request_count"]["avg"] == n and s["error_request_count"]["avg"] == 0, "streamed: all ok",
                    s.get("error_summary"))
            # the mock answers late when it waits for a CPU, never early: a tight lower bound, room above. The
            # flakiness pass had p99 at 50.4-56.0 ms under TSan (8 runs) against the old 40 +- 24 (tol(6.0)), a room
            # of 1.8x its spread; p50 at 40.4-40.9 ms in release against 40 +- 2
            h.within(s["time_to_first_token"]["p50"], ttft - 1, ttft + late(4.0), "TTFT p50 (ms) over h2c")
            h.within(s["time_to_first_token"]["p99"], ttft - 1, ttft + late(10.0), "TTFT p99 (ms) over h2c")
            h.near(s["inter_token_latency"]["p50"], itl, tol(0.5), "ITL p50 (ms) over h2c")
            h.check(s["output_sequence_length"]["min"] == osl and s["output_sequence_length"]["max"] == osl,
                    "OSL exactly %d" % osl, s["output_sequence_length"])
        recs = m.records()
        h.check(len(recs) == n, "mock recorded every request", len(recs))
        conns = {x["conn"] for x in recs}
        h.check(len(conns) == 2, "%d streams on 2 connections (mock record)" % n, conns)
        h.check(all(x["stream"] and x["prompt_words"] > 0 for x in recs), "record fields as over HTTP/1.1", recs[:1])

    # 2. non-streamed with injected errors: the 500s are counted as errors, the rest complete
    with h.mock("--ttft-ms", 5, "--itl-ms", 1, "--error-rate", 0.2) as m:
        r = profile(h, m.url, "--http2", "--concurrency", 64, "--workers", 1, "--request-count", 400,
                    "--output-tokens-mean", 4, "--verbose", check_rc=None)
        s = r.summary
        h.check(s is not None, "errors: summary written")
        if s:
            errs = s["error_request_count"]["avg"]
            h.check(40 <= errs <= 130, "about 20%% of 400 requests answered 500 and counted", errs)
            h.check(s["request_count"]["avg"] == 400 - errs, "the rest complete", s["request_count"])
            h.check(s["output_sequence_length"]["p50"] == 4, "non-streamed: OSL 4")
        m.stop()
        h.check("1 connections opened" in r.stderr, "64 streams on one connection (limit 128)", r.stderr)

    # 3. --drop-rate resets streams (RST_STREAM), counted as stream resets; the connection carries on
    with h.mock("--ttft-ms", 5, "--itl-ms", 1, "--drop-rate", 0.2, "--max-concurrent-streams", 16) as m:
        r = profile(h, m.url, "--http2", "--streaming", "--concurrency", 16, "--workers", 1, "--request-count",
                    200, "--output-tokens-mean", 8, "--verbose", check_rc=None)
        s = r.summary
        if s:
            errs = s["error_request_count"]["avg"]
            h.check(15 <= errs <= 70, "about 20%% of 200 streams reset", errs)
            h.check("stream_reset" in str(s.get("error_summary")), "resets classed stream_reset",
                    s.get("error_summary"))
        h.check("1 connections opened" in r.stderr, "resets do not cost the connection", r.stderr)

    # 4. h2load (nghttp2's client) against the mock over h2c: every request 2xx
    h2load = shutil.which("h2load")
    if not h2load:
        if os.environ.get("CI"):
            h.check(False, "h2load installed (nghttp2-client, SURGE_TEST_PKGS)")
        return
    body = h.path("body.json")
    with open(body, "w") as f:
        f.write('{"model":"m","messages":[{"role":"user","content":"hello there"}],"max_tokens":4}')
    with h.mock("--ttft-ms", 1, "--itl-ms", 0) as m:
        out = harness.run(["timeout", "60", h2load, "-n", "3000", "-c", "4", "-m", "32", "-t", "1", "-d", body,
                           "-H", "content-type: application/json", m.url + "/v1/chat/completions"], timeout=70)
        text = out.stdout
        mm = re.search(r"status codes: (\d+) 2xx", text)
        h.check(mm is not None and int(mm.group(1)) == 3000, "h2load: 3000 of 3000 requests 2xx", text)
        h.check("Application protocol: h2c" in text, "h2load spoke h2c", text)


harness.main(main)
