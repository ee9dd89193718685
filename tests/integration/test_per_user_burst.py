"""output_token_throughput_per_user when a stream's tokens arrive together, in one read.

AIPerf's definition, per request: 1 / inter_token_latency in tokens/s, with ITL = (latency - TTFT) / (OSL - 1);
a request whose ITL is 0 (every token came at once: latency == TTFT) has no value and is left out. surge did
record such a request as 1,000,000 tokens/s (its histogram's top), with an unnamed "values were clamped" line.

  1. Every token in one read (`surge mock --itl-ms 0`): ITL is 0, no request has a per-user rate, the summary
     has no output_token_throughput_per_user block, counts the requests in
     output_token_throughput_per_user_undefined_count, says so under the table, and nothing is clamped.
  2. Tokens in bursts (`--stall-ms`: the tokens due in the stall go out together at its end, the rest paced):
     every request's per-user rate in AIPerf's JSONL is 1000 / ITL (ms) of the same record, finite; the
     summary's max is the largest of them; requests of the first kind are left out and counted.
"""
import json
import math
import os

import harness
from profiling import profile


def aiperf_records(d):
    with open(os.path.join(d, "profile_export.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def check_definition(h, r, what):
    """Each record against AIPerf's definition; returns (rates, how many had ITL 0)."""
    rates, zero = [], 0
    for rec in aiperf_records(r.dir):
        m = rec["metrics"]
        if "inter_token_latency" not in m:
            continue
        itl = m["inter_token_latency"]["value"]
        ttft, lat, osl = (m["time_to_first_token"]["value"], m["request_latency"]["value"],
                          m["output_sequence_length"]["value"])
        h.check(abs(itl - (lat - ttft) / (osl - 1)) <= 2e-6, "%s: ITL = (latency - TTFT) / (OSL - 1)" % what,
                (itl, lat, ttft, osl))
        tps = m.get("output_token_throughput_per_user", {}).get("value")
        if itl == 0:
            zero += 1
            h.check(tps is None, "%s: a request whose tokens all came at once has no per-user rate" % what, m)
            continue
        # the file's ITL is rounded to 1e-6 ms (1 ns): 1000 / ITL is as exact as that allows
        ok = tps is not None and math.isfinite(tps) and abs(tps - 1000.0 / itl) <= 1000.0 * 1e-6 / itl ** 2 + 1e-5
        h.check(ok, "%s: per-user rate = 1000 / ITL ms (%s vs %s)" % (what, tps, 1000.0 / itl if itl else None))
        if tps is not None:
            rates.append(tps)
    return rates, zero


def main(h):
    n = 24
    load = ["--streaming", "--concurrency", 2, "--request-count", n, "--output-tokens-mean", 8,
            "--synthetic-input-tokens-mean", 8]
    # 1. every token of a stream in one read
    with h.mock("--ttft-ms", 3, "--itl-ms", 0, "--output-tokens", 8) as m:
        r = profile(h, m.url, *load)
        rates, zero = check_definition(h, r, "one read")
        s = r.summary or {}
        h.check(zero >= n // 2, "most streams arrived in one read (ITL 0): %d of %d" % (zero, n))
        undefined = s.get("output_token_throughput_per_user_undefined_count", {}).get("avg")
        h.check(undefined == zero, "the summary counts the requests left out (%s, want %d)" % (undefined, zero))
        tps = s.get("output_token_throughput_per_user")
        if zero == n:
            h.check(tps is None, "no per-user block when no request has a rate", tps)
        else:
            h.check(tps is not None and tps["count"] == n - zero and tps["max"] < 1e6,
                    "the per-user block holds only the requests that have a rate, none at the old 1e6 cap", tps)
        h.check("output_token_throughput_per_user: %d requests left out: all their tokens arrived at once" % zero
                in r.stdout, "a line under the table says so, naming the metric", r.stdout[-2000:])
        h.check("clamped" not in r.stdout and "clamped_values" not in s, "nothing clamped", r.stdout[-2000:])
        h.check("1,000,000" not in r.stdout, "no 1,000,000 tokens/s in the table", r.stdout[-3000:])
        p = h.run([h.surge, "report", r.dir, "-q"])
        h.check(p.returncode == 0, "the report reads the run", (p.returncode, p.stderr))

    # 2. bursts: a stall from the mock's start holds back the tokens due in it, which then go out together; a
    # request arriving every 10 ms, those that arrive in the stall's last 22 ms get their first tokens in one
    # burst at its end and the rest paced 2 ms apart: a finite ITL below the paced 2 ms
    # (2 s: a sanitizer build on a busy machine starts sending well inside it)
    with h.mock("--ttft-ms", 3, "--itl-ms", 2, "--output-tokens", 12, "--stall-start-ms", 0, "--stall-ms",
                2000) as m:
        r = profile(h, m.url, "--streaming", "--request-rate", 100, "--request-distribution", "constant",
                    "--benchmark-duration", 2.5, "--output-tokens-mean", 12, "--synthetic-input-tokens-mean", 8)
        rates, zero = check_definition(h, r, "bursts")
        s = r.summary or {}
        tps = s.get("output_token_throughput_per_user", {})
        h.check(rates and abs(tps.get("max", 0) - max(rates)) <= max(rates) / 2048 + 1e-3,
                "the summary's max per-user rate is the records' (%s vs %s)" % (tps.get("max"),
                                                                              max(rates) if rates else None))
        h.check(tps.get("count") == len(rates), "the per-user block counts the requests that have a rate",
                (tps.get("count"), len(rates)))
        h.check(s.get("output_token_throughput_per_user_undefined_count", {}).get("avg") == zero,
                "and the summary counts those left out", (zero, s.get("output_token_throughput_per_user_undefined_count")))
        h.check(max(rates or [0]) > 525, "some request's tokens came partly in a burst (a rate above the paced "
                "tokens' 500 tokens/s)", sorted(rates)[-5:])
        h.check("clamped" not in r.stdout, "nothing clamped", r.stdout[-2000:])


if __name__ == "__main__":
    harness.main(main)
