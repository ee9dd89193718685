# ctest: run-serial (throughput and TTFT against the mock's 50 ms service time)
"""surge mock --max-batch: a server with a known capacity (docs/mock.md). With 4 slots and 50 ms per request
(TTFT 20 ms, 15 more tokens 2 ms apart), 4 users never wait, 8 users wait one service each (TTFT 70 ms) and the
rate stays 80/s, over HTTP/1.1, h2c and several mock workers (one FIFO for all); --prefill-ms-per-token adds to
the TTFT per prompt token; dropped responses do not leak slots; bad values are refused."""
import harness
from profiling import SLOW, profile

SLACK = 8 if not SLOW else 30  # ms


def main(h):
    for workers, proto in ((1, ()), (2, ("--http2",))):
        with h.mock("--ttft-ms", 20, "--itl-ms", 2, "--output-tokens", 16, "--max-batch", 4, "--workers", workers) as m:
            what = "%d mock workers%s" % (workers, " over h2c" if proto else "")
            r = profile(h, m.url, "--streaming", "--concurrency", 4, "--request-count", 120, *proto)
            ttft = r.metric("time_to_first_token", "p50")
            h.check(abs(ttft - 20) <= SLACK, "%s, 4 users: no wait (TTFT p50 %.1f ms)" % (what, ttft))
            rate = r.metric("request_throughput")
            h.check(abs(rate - 80) <= 8, "%s, 4 users: 80 req/s (%.1f)" % (what, rate))
            r = profile(h, m.url, "--streaming", "--concurrency", 8, "--request-count", 160, *proto)
            ttft = r.metric("time_to_first_token", "p50")
            h.check(abs(ttft - 70) <= SLACK, "%s, 8 users: each waits one service (TTFT p50 %.1f ms)" % (what, ttft))
            rate = r.metric("request_throughput")
            h.check(abs(rate - 80) <= 8, "%s, 8 users: still 80 req/s (%.1f)" % (what, rate))
        err = m.stderr()
        h.check("--max-batch 4:" in err and "waited for a slot" in err, "%s: the exit summary's waits" % what, err)

    # prefill: 1 ms per prompt token; the mock counts the prompt's words, 30 here
    with h.mock("--ttft-ms", 10, "--itl-ms", 1, "--max-batch", 8, "--prefill-ms-per-token", 1) as m:
        r = profile(h, m.url, "--streaming", "--request-count", 20, "--synthetic-input-tokens-mean", 30,
                    "--output-tokens-mean", 4)
        ttft = r.metric("time_to_first_token", "p50")
        h.check(abs(ttft - 40) <= SLACK, "prefill: TTFT 10 + 30 x 1 ms (%.1f)" % ttft)

    # dropped responses keep their slot only to its planned end: a long run does not stall
    with h.mock("--ttft-ms", 5, "--itl-ms", 1, "--output-tokens", 8, "--max-batch", 2, "--drop-rate", 0.3) as m:
        r = profile(h, m.url, "--streaming", "--concurrency", 4, "--request-count", 120, "--request-timeout", 10,
                    check_rc=1)
        s = r.summary or {}
        ok, failed = s.get("request_count", {}).get("avg", 0), s.get("error_request_count", {}).get("avg", 0)
        h.check(ok + failed == 120 and failed > 0, "drops: every request ends (%d ok, %d dropped)" % (ok, failed))
        h.check(s.get("request_latency", {}).get("max", 1e9) < 1000, "drops: no request waited for a leaked slot",
                s.get("request_latency"))

    for args, words in [(["--max-batch", "-1"], "--max-batch"), (["--max-batch", "x"], "--max-batch"),
                        (["--prefill-ms-per-token", "-2"], "--prefill-ms-per-token")]:
        p = h.run([h.surge, "mock", "--port", "0"] + args, timeout=20)
        h.check(p.returncode == 2 and words in p.stderr, "mock %s: refused, exit 2" % " ".join(args), p.stderr)


if __name__ == "__main__":
    harness.main(main)
