# ctest: epoll-asan (run on epoll under ASan too: tests/CMakeLists.txt)
"""surge profile against surge mock: the numbers it reports match what the mock was told to do."""
import harness
from profiling import profile, tol, median


def check_consistency(h, r, n, streaming, what):
    """Summary, JSONL and the table agree with each other and with the request count."""
    s = r.summary
    h.check(s is not None, what + ": summary written")
    if s is None:
        return
    h.check(s["request_count"]["avg"] == n, what + ": request_count == %d" % n, s["request_count"])
    h.check(s["error_request_count"]["avg"] == 0, what + ": no errors", s.get("error_summary"))
    h.check(len(r.records) == n, what + ": one JSONL line per measured request", len(r.records))
    h.check(all(x["status"] == "ok" for x in r.records), what + ": every JSONL record ok")
    intended = [x["intended_ns"] for x in r.records]
    h.check(intended == sorted(intended), what + ": JSONL ordered by intended time")
    h.check(len({x["id"] for x in r.records}) == n, what + ": request ids unique")
    h.check("surge | LLM Metrics" in r.stdout and "Request latency (ms)" in r.stdout, what + ": table printed",
            r.stdout[:500])
    h.check(("Time to first token (ms)" in r.stdout) == streaming, what + ": TTFT row only when streaming")
    for tag in ("request_latency", "request_latency_from_send", "schedule_lag", "output_sequence_length",
                "input_sequence_length", "request_throughput", "output_token_throughput", "benchmark_duration"):
        h.check(tag in s, what + ": summary has " + tag)
    for tag in ("time_to_first_token", "inter_token_latency", "time_to_first_token_from_send"):
        h.check((tag in s) == streaming, what + ": summary has %s only when streaming" % tag)
    dist = s["request_latency"]
    for key in ("unit", "avg", "min", "max", "std", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99",
                "p99_9", "count"):
        h.check(key in dist, what + ": request_latency has " + key)
    h.check(s["input_config"]["endpoint_type"] if "endpoint_type" in s.get("input_config", {}) else True,
            what + ": input_config present")
    # throughput = count / duration
    dur = s["benchmark_duration"]["avg"]
    h.near(s["request_throughput"]["avg"], n / dur, 0.01 * n / dur, what + ": request_throughput = count/duration")


def main(h):
    ttft, itl, osl = 40, 8, 24
    with h.mock("--ttft-ms", ttft, "--itl-ms", itl, record=True) as m:
        # 1. streamed chat, open loop
        n = 60
        r = profile(h, m.url, "--streaming", "--request-rate", 40, "--request-count", n,
                    "--output-tokens-mean", osl, "--synthetic-input-tokens-mean", 100, "--workers", 2)
        check_consistency(h, r, n, True, "chat stream")
        if r.summary:
            s = r.summary
            h.near(s["time_to_first_token"]["p50"], ttft, tol(2.0), "TTFT p50 (ms) vs the mock's delay")
            h.near(s["inter_token_latency"]["p50"], itl, tol(0.5), "ITL p50 (ms) vs the mock's delay")
            h.near(s["request_latency"]["p50"], ttft + itl * (osl - 1), tol(3.0), "request latency p50")
            h.check(s["output_sequence_length"]["min"] == osl and s["output_sequence_length"]["max"] == osl,
                    "OSL exactly %d" % osl, s["output_sequence_length"])
            h.check(s["input_sequence_length"]["min"] == 100 and s["input_sequence_length"]["max"] == 100,
                    "ISL exactly 100", s["input_sequence_length"])
            h.check(s["osl_source"]["usage"] == n, "OSL taken from usage", s["osl_source"])
            h.near(s["time_to_second_token"]["p50"], itl, tol(1.0), "time to second token p50")
            h.check(s["schedule_lag"]["p50"] < tol(1.0), "schedule lag p50 under 1 ms", s["schedule_lag"])
            for x in r.records:
                if len(x["token_times_ms"]) != osl or x["output_sequence_length_server"] != osl \
                        or x["input_sequence_length_server"] != 100:
                    h.check(False, "JSONL token times and server usage per request", x)
                    break
        # 2. non-streamed completions, closed loop
        n = 30
        r = profile(h, m.url, "--endpoint-type", "completions", "--concurrency", 3, "--request-count", n,
                    "--output-tokens-mean", 5)
        check_consistency(h, r, n, False, "completions")
        if r.summary:
            h.near(r.summary["request_latency"]["p50"], ttft + itl * 4, tol(3.0), "non-streamed latency p50")
            h.check(r.summary["output_sequence_length"]["avg"] == 5, "non-streamed OSL from usage")
        # 3. warmup requests are sent first and left out
        r = profile(h, m.url, "--streaming", "--concurrency", 2, "--request-count", 10,
                    "--warmup-request-count", 4, "--output-tokens-mean", 3)
        check_consistency(h, r, 10, True, "warmup")
        if r.summary:
            h.check(r.summary["warmup_request_count"]["avg"] == 4, "warmup count reported",
                    r.summary.get("warmup_request_count"))
        # 4. --benchmark-duration stops issuing; in-flight requests finish
        r = profile(h, m.url, "--request-rate", 50, "--benchmark-duration", 1.0, "--output-tokens-mean", 2)
        if r.summary:
            n = r.summary["request_count"]["avg"]
            h.check(30 <= n <= 80, "about 50 requests in 1 s at 50/s", n)
            h.check(r.summary["error_request_count"]["avg"] == 0, "duration run without errors")
        m.stop()
        recs = m.records()
        # The server saw the bodies surge built: max_tokens, stream flag, prompt length, model.
        first = recs[:60]
        h.check(len(recs) >= 60 + 30 + 14, "mock recorded every request", len(recs))
        h.check(all(x["max_tokens"] == osl and x["stream"] and x["prompt_words"] == 100 for x in first),
                "server received max_tokens, stream and 100-word prompts", first[:2])
        h.check(all(x["model"] == "mock-model" for x in recs), "model name sent")
        h.check(len({x["prompt"] for x in first}) == 60, "60 distinct prompts (--num-prompts default 100)")


harness.main(main)
