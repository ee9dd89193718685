"""Clustered slow requests (docs/metrics.md, "Clustered requests"): a percentile verdict counts its requests by second
of intended start and judges them as n / dispersion independent ones when the slow ones came together.

One stall of the mock (`--fault stall-read`: nothing read for 400 ms, 4.3 s after the run's first request) makes the
requests sent in it slow together: about 12 of 400 past 100 ms, all in one second of the run. Taken as independent,
12 of 400 is a significant failure of a p99 under 100 ms; as the one episode it is, it is not: the verdict is
inconclusive, with its dispersion. The same share of slow requests spread at random (`--fault stall-write` on 4% of
requests, each on its own) stays a failure, with no dispersion: chance alone does not read as clustering."""
import harness
from profiling import profile

RATE = 40
SECONDS = 10
SLO = "time_to_first_token:p99<100"


def verdict(h, r, what):
    s = r.summary or {}
    v = next((e for e in s.get("slo", []) if e.get("slo") == SLO), None)
    h.check(v is not None, what + ": the p99 verdict is in the summary", s.get("slo"))
    return v or {}


def past(r):
    return sum(1 for x in r.records if x["status"] == "ok" and x["time_to_first_token_ms"] > 100)


def main(h):
    args = ["--streaming", "--request-rate", RATE, "--request-distribution", "constant", "--benchmark-duration",
            SECONDS, "--output-tokens-mean", 2, "--slo", SLO, "--workers", 1]
    # One stall, 4.3 s into the run: the requests it makes slow are those sent from 4.3 to 4.6 s, one second of the
    # run. Timed from the mock's start, as it once was, the stall landed where surge's start-up put it: across two
    # seconds, where one more slow request (TSan, CI) made the episode read as three and the verdict a failure.
    with h.mock("--ttft-ms", 5, "--itl-ms", 1, "--fault-origin", "request", "--fault", "stall-read:4300,400") as m:
        r = profile(h, "127.0.0.1:%d" % m.port, *args, check_rc=None)
    v = verdict(h, r, "one stall")
    k = past(r)
    h.check(8 <= k <= 40, "one stall: its requests are the slow ones (8..40 past 100 ms)", k)
    h.check(v.get("dispersion", 1) >= 3, "one stall: the slow requests came together (dispersion >= 3)", v)
    h.check(v.get("verdict") == "inconclusive" and r.rc == 5,
            "one stall: one episode is not a significant failure (inconclusive, exit 5)", (v, r.rc, r.stderr[-1500:]))
    h.check("clustered x" in r.stdout, "one stall: the table says the verdict's requests are clustered",
            r.stdout[-2500:])
    # the same share, each slow request on its own
    with h.mock("--ttft-ms", 5, "--itl-ms", 1, "--fault", "stall-write:200@0.04") as m:
        r = profile(h, "127.0.0.1:%d" % m.port, *args, check_rc=None)
    v = verdict(h, r, "scattered")
    k = past(r)
    h.check(8 <= k <= 30, "scattered: about 4% past 100 ms (8..30)", k)
    h.check("dispersion" not in v, "scattered: no clustering read into chance", v)
    h.check(v.get("verdict") == "fail" and r.rc == 4, "scattered: the same share is a significant failure (exit 4)",
            (v, r.rc))


if __name__ == "__main__":
    harness.main(main)
