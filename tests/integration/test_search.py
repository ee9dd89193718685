# ctest: run-serial (the search judges TTFT against a 40 ms margin over the mock's 20 ms)
# ctest: one-backend (the search's decisions are the controller's; both backends are covered by every profile test)
"""The capacity search against a server whose capacity is known: `surge mock --max-batch 4` with 50 ms per request
(20 ms TTFT, then 15 tokens 2 ms apart) serves 80 requests/s, and a concurrency of 4 without queueing.

- open loop, constant arrivals, SLO p90 TTFT < 60 ms (a p90 can be shown to pass over 36 requests, a p99 needs 368:
  the probes stay short): the answer is 80 req/s within the asked 5%, its interval at 95% confidence holds the
  capacity, and a run at 10% above it fails the same SLO;
- closed loop, SLO p90 TTFT < 40 ms: concurrency 4 passes, 5 fails (a fifth request waits a whole service);
- a value whose first probe is inconclusive gets more probes, pooled, until its verdict is conclusive;
- an open-loop probe at twice the capacity with an SLO too loose to fail in a short probe fails as overloaded;
- a probe stops early once its SLO can no longer hold;
- beside the interval, a point estimate (an isotonic fit over every probe): near the capacity, on the answer line and
  in search.json, and below a value that overloads even where its SLO alone passes;
- bad search flags exit 2 before anything is sent; an interrupted search keeps its record and exits 130;
- a server that dies mid-search stops the search at once, saying so (exit 1), not a walk down every lower value."""
import csv
import json
import os
import re
import signal
import subprocess
import time

import browser
import harness
from profiling import SANITIZER, SLOW, profile

CAPACITY = 80.0  # 4 slots / 50 ms


def estimate_text(v):
    """The answer line's point estimate: three significant figures, never in exponent form (engine/search.c)."""
    return "%.*f" % (0 if abs(v) >= 100 else 1 if abs(v) >= 10 else 2, v)


def load(path):
    with open(path) as f:
        return json.load(f)


def first_search(h, m):
    """Open loop: the highest rate with p90 TTFT < 60 ms is the capacity (constant arrivals queue only past it)."""
    t0 = time.monotonic()
    r = profile(h, m.url, "--streaming", "--search", "max-request-rate", "--request-distribution", "constant",
                "--slo", "ttft:p90<60", "--search-range", "12:", "--benchmark-duration", 3,
                "--parameter-sweep-cooldown-seconds", 0.3, timeout=240)
    took = time.monotonic() - t0
    s = load(os.path.join(r.dir, "search.json"))
    sr = s["search"]
    lo, hi = sr["highest_passing"], sr["lowest_failing"]
    print("search: highest passing %s, lowest failing %s, %d probes, %.1f s" % (lo, hi, sr["probes"], took))
    h.check(sr["complete"] and lo is not None and hi is not None, "the search completed with both bounds", sr)
    if lo is not None and hi is not None:
        h.check(CAPACITY * 0.95 <= lo <= CAPACITY * 1.02, "highest passing within 5% of the capacity", lo)
        h.check(hi - lo <= 0.05 * lo + 1e-9, "interval within --search-precision", (lo, hi))
        h.check(hi <= CAPACITY * 1.10, "lowest failing within 10% above the capacity", hi)
    h.check(sr["capacity_low"] == lo and sr["capacity_high"] == hi and sr["highest_passing_conclusive"]
            and sr["capacity_high_conclusive"] and sr["confidence_level"] == 0.95,
            "the answer is an interval, each end conclusive at 95%", sr)
    h.check(r.stdout.count("\n") >= 4 and "Capacity: request rate %g-%g req/s at 95%% confidence" % (lo, hi)
            in r.stdout, "the answer line gives the interval and its confidence", r.stdout)
    probes = s["probes"]
    # the point estimate beside the interval: an isotonic fit over every probe, crossing the SLO near the capacity
    est = sr.get("capacity_estimate") or {}
    print("point estimate:", est)
    print(next((x for x in r.stdout.splitlines() if x.startswith("Capacity")), "no answer line"))
    h.check(est.get("kind") == "crossing" and est.get("method") == "isotonic" and est.get("probes") == sr["probes"]
            and est.get("set_by") == "time_to_first_token:p90<60"
            and CAPACITY * 0.95 <= est.get("value", 0) <= CAPACITY * 1.05,
            "the point estimate is a crossing within 5% of the capacity, fitted over every probe", est)
    if est.get("kind") == "crossing":
        h.check("; point estimate %s req/s (isotonic fit over %d probes; an estimate, not a confidence statement)"
                % (estimate_text(est["value"]), est["probes"]) in r.stdout,
                "the answer line gives the point estimate after the interval", r.stdout[-800:])
    h.check([p["request_rate"] for p in probes[:4]] == [12, 24, 48, 96], "brackets by doubling from LO", probes)
    h.check(all(os.path.exists(os.path.join(r.dir, p["artifact_subdir"], "profile_export_surge.json"))
                for p in probes), "each probe's files in its sub-directory")
    failing = [p for p in probes if p["request_rate"] > CAPACITY * 1.02]
    h.check(failing and all(p["verdict"] != "pass" for p in failing), "no probe above capacity passes", failing)
    h.check(all(v["n"] == p["request_count"] for p in probes if p["pooled_probes"] == 1 for v in p["slo"]),
            "each verdict states the requests it rests on", [(p["request_count"], p["slo"]) for p in probes])
    early = [p for p in failing if p["request_count"] + p["error_count"] < 0.5 * p["request_rate"] * 3
             and p["stopped_early"] and "95% confidence" in p["why"]]
    h.check(early, "a probe far above capacity stops early", failing)
    # what the early stop cut off is cancelled, not failed: the mock returned no error
    h.check(all(p["cancelled_count"] > 0 and p["error_count"] == 0 for p in early),
            "a probe stopped early counts its outstanding requests as cancelled, not failed", early)
    with open(os.path.join(r.dir, "search.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    h.check(len(rows) == len(probes) and all(int(x["Cancelled Count"]) == p["cancelled_count"] and
                                             int(x["Error Count"]) == p["error_count"]
                                             for x, p in zip(rows, probes)),
            "search.csv has the cancelled column, as search.json", rows[:2])
    h.check(re.search(r"offered/s +ok/s .* ok +failed +cancelled", r.stdout) is not None,
            "the console table names its rates and the split", r.stdout[:600])


def main(h):
    with h.mock("--ttft-ms", 20, "--itl-ms", 2, "--output-tokens", 16, "--max-batch", 4, record=True) as m:
        # the mock's own account of its capacity
        with open(m.stdout_path) as f:
            start = f.read()
        h.check("capacity 80 requests/s" in start, "the mock states its capacity", start)

        # The search to the capacity at 5% precision: in the release and ASan passes. Under TSan it takes 80 s of
        # CI alone; the controller's cross-thread paths (live SLO bounds, a probe stopped early, the server lost)
        # are TSan-checked by the searches below.
        if SANITIZER == "thread":
            print("the search to the capacity is left to the release and ASan passes")
        else:
            first_search(h, m)

        # 10% above the capacity, a plain run fails the same SLO (exit 4)
        r = profile(h, m.url, "--streaming", "--request-rate", CAPACITY * 1.1, "--request-distribution", "constant",
                    "--slo", "ttft:p90<60", "--benchmark-duration", 3, check_rc=4)
        v = r.summary["slo"][0] if r.summary else {}
        h.check(v.get("verdict") == "fail" and v.get("measured", 0) >= 60 and v["interval"][0] >= 60,
                "10% above capacity fails p90 TTFT < 60 ms, its whole interval above", v)

        # closed loop: 4 slots serve 4 users without a wait; a fifth waits a whole service (70 ms TTFT)
        r = profile(h, m.url, "--streaming", "--search", "max-concurrency", "--slo", "ttft:p90<40",
                    "--request-count", 60, "--parameter-sweep-cooldown-seconds", 0.2, timeout=120)
        sr = load(os.path.join(r.dir, "search.json"))["search"]
        h.check(sr["highest_passing"] == 4 and sr["lowest_failing"] == 5 and sr["highest_passing_conclusive"],
                "max concurrency is the batch size", sr)
        h.check("No whole number between" in r.stdout, "the answer says the interval is closed", r.stdout)
        est = sr.get("capacity_estimate") or {}
        h.check(est.get("kind") == "crossing" and 4 <= est.get("value", 0) <= 5,
                "closed loop: the point estimate lies between 4 and 5", est)

        # inconclusive, then resolved: 20 requests cannot show p90 < 40 ms (36 are the fewest), so concurrency 4's
        # first probe is undecided and passes on its point estimate; once a value above is found to fail, the search
        # pools more probes at 4 until the pooled 40, 60, ... requests decide it. (At 5, about one request in eight
        # waits for a slot: too close to p90's one in ten for 80 requests to decide, so 6, where more wait, is the
        # failing end the search needs.)
        r = profile(h, m.url, "--streaming", "--search", "max-concurrency", "--slo", "ttft:p90<40",
                    "--search-range", "4:6", "--request-count", 20, "--search-max-trials", 4,
                    "--parameter-sweep-cooldown-seconds", 0.2, timeout=120)
        s = load(os.path.join(r.dir, "search.json"))
        verdicts = [(p["trial"], p["pooled_probes"], p["verdict"], p["slo"][0]["n"])
                    for p in s["probes"] if p["concurrency"] == 4]
        print("inconclusive then resolved:", verdicts)
        h.check(len(verdicts) >= 2 and verdicts[0][2] == "inconclusive" and verdicts[-1][2] == "pass"
                and verdicts[-1][1] == len(verdicts) and verdicts[-1][3] == 20 * len(verdicts)
                and s["search"]["highest_passing_conclusive"],
                "an undecided value is probed again, pooled, until it passes", verdicts)
        h.check("pooled with its 1 earlier probe" in r.stderr, "the console says a probe is pooled", r.stderr[-3000:])

        # a value's pooled probes are independent samples: the second draws its own Poisson arrivals (the same
        # schedule twice would only repeat the evidence)
        r = profile(h, m.url, "--streaming", "--search", "max-request-rate", "--slo", "ttft:p90<1000",
                    "--search-range", "20:40", "--request-count", 20, "--search-max-trials", 3,
                    "--parameter-sweep-cooldown-seconds", 0.2, timeout=120)
        s = load(os.path.join(r.dir, "search.json"))
        pooled = [p for p in s["probes"] if p["request_rate"] == 40]

        def gaps(p):
            with open(os.path.join(r.dir, p["artifact_subdir"], "profile_export_surge.jsonl")) as f:
                t = sorted(json.loads(line)["intended_ns"] for line in f)
            return [b - a for a, b in zip(t, t[1:])]
        h.check(len(pooled) >= 2 and pooled[-1]["verdict"] == "pass" and gaps(pooled[0]) != gaps(pooled[1]),
                "a pooled probe draws its own arrivals", [(p["trial"], p["verdict"]) for p in pooled])

        # a budget that cannot decide: one probe of 20 requests, no more: nothing is shown to pass, and the answer
        # says which values stayed undecided rather than naming a capacity; exit 5
        r = profile(h, m.url, "--streaming", "--search", "max-concurrency", "--slo", "ttft:p90<40",
                    "--search-range", "4:5", "--request-count", 20, "--search-max-trials", 1,
                    "--parameter-sweep-cooldown-seconds", 0.2, check_rc=5, timeout=120)
        s = load(os.path.join(r.dir, "search.json"))["search"]
        h.check(s["highest_passing"] is None and s["capacity_low"] is None and 4 in s["undecided_values"]
                and "Capacity: not shown at 95% confidence: concurrency 4" in r.stdout and "undecided" in r.stdout,
                "an undecided answer says so", (s, r.stdout))

        # twice the capacity with a loose SLO: the backlog grows through the probe, so it fails as overloaded
        r = profile(h, m.url, "--streaming", "--search", "max-request-rate", "--slo", "ttft:p99<30000",
                    "--search-range", "160:320", "--benchmark-duration", 3, check_rc=4, timeout=120)
        s = load(os.path.join(r.dir, "search.json"))
        p = s["probes"][0]
        h.check(p["slo_verdict"] != "fail" and p["verdict"] == "fail" and "overload" in s["search"]["lowest_failing_why"],
                "an overload the SLO would miss fails the probe", s["search"])
        h.check(s["search"]["highest_passing"] is None and "Capacity: none found" in r.stdout,
                "no passing value: says so, exit 4", r.stdout)
        # the SLO alone is met at 160: the probe's own test (overload) puts the point estimate below it
        est = s["search"]["capacity_estimate"] or {}
        h.check(est.get("kind") == "below" and est.get("value") == 160 and est.get("set_by") == "probe"
                and "; point estimate below 160 req/s, the lowest value tried (isotonic fit over 1 probe;" in r.stdout,
                "an overload bounds the point estimate as it bounds the answer", (est, r.stdout[-600:]))

        # bad flags: exit 2, nothing sent
        with open(m.record) as f:
            before = sum(1 for _ in f)
        for args, flag in [
            (["--search", "max-request-rate"], "--search"),
            (["--search", "most", "--slo", "ttft:p99<5"], "--search"),
            (["--search", "max-request-rate", "--slo", "ttft:p99<5", "--request-rate", "5"], "--request-rate"),
            (["--search", "max-request-rate", "--slo", "ttft:p99<5", "--search-range", "9:3"], "--search-range"),
            (["--search", "max-concurrency", "--slo", "ttft:p99<5", "--search-range", "1.5:3"], "--search-range"),
            (["--search-precision", "0.1"], "--search-precision"),
            (["--slo", "ttft:p99<5"], "--slo"),  # unmeasurable without --streaming
            (["--slo", "ttft:q99<5", "--streaming"], "--slo"),
        ]:
            r = profile(h, m.url, *args, check_rc=2)
            h.check(r.stderr.startswith("surge: " + flag + ":"), "%s: one line naming %s" % (" ".join(args), flag),
                    r.stderr)
        with open(m.record) as f:
            after = sum(1 for _ in f)
        h.check(after == before, "nothing sent for bad search flags", (before, after))

        # SIGINT in a search: the record so far, marked, and exit 130. The SLO is loose: this part is about the
        # interrupt, and a search whose first probe fails on one slow response (a CI machine's stall) ends before it
        art = h.path("art-int")
        cmd = [h.surge, "profile", "-m", "mock-model", "-u", m.url, "--artifact-dir", art, "--no-progress",
               "--streaming", "--search", "max-request-rate", "--slo", "ttft:p99<1000", "--search-range", "10:",
               "--benchmark-duration", 2, "--parameter-sweep-cooldown-seconds", 0]
        proc = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(5.0 if not SLOW else 7.0)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        h.check(proc.returncode == 130, "an interrupted search exits 130", (proc.returncode, err[-2000:]))
        s = load(os.path.join(art, "search.json"))
        h.check(not s["search"]["complete"] and s["search"]["was_interrupted"] and len(s["probes"]) >= 2,
                "the record holds the probes that ran", s["search"])
        h.check("search INTERRUPTED" in err, "says it was interrupted", err[-1500:])

    # The server dies in the middle of a search: the probe that sees it stops at its first failure (the probe's own
    # --max-error-rate, 0 by default), and the next, every connect refused, stops the search. Before, the search
    # walked down through every lower value, each probe its full length on refused connects: 20 minutes in one bench.
    with h.mock("--ttft-ms", 20, "--itl-ms", 2, "--output-tokens", 16, "--max-batch", 4, "--exit-after", 4) as dm:
        t0 = time.monotonic()
        r = profile(h, dm.url, "--streaming", "--search", "max-request-rate", "--slo", "ttft:p99<1000",
                    "--search-range", "10:", "--benchmark-duration", 2, "--parameter-sweep-cooldown-seconds", 0,
                    check_rc=1, timeout=180)
        took = time.monotonic() - t0
        s = load(os.path.join(r.dir, "search.json"))
        sr, probes = s["search"], s["probes"]
        h.check(not sr["complete"] and not sr["was_interrupted"] and "the server is down" in (sr["stopped_why"] or ""),
                "a dead server stops the search, saying why", sr)
        h.check(probes and probes[-1]["request_count"] == 0 and probes[-1]["error_count"] >= 1
                and probes[-1]["verdict"] == "fail", "the last probe: every request refused", probes[-1:])
        hit = [p for p in probes if p["error_count"] and p["request_count"]]
        h.check(all("stopped early" in p["why"] and "--max-error-rate" in p["why"] for p in hit),
                "the probe the death hit stopped at its failures", [p["why"] for p in hit])
        h.check("search stopped after" in r.stderr and "the server is down" in r.stderr and "point estimate" not in
                r.stderr.split("search stopped after")[-1], "the answer line says why, with no estimate",
                r.stderr[-1500:])
        # the mock lives 4 s; then at most the probe it hit and one more, each cut at its first failure
        bound = 30.0 if not SLOW else 60.0
        h.check(took < bound, "a dead server ends the search in %.1f s (bound %.0f s)" % (took, bound), took)
        # the report's search page says why too, with no estimate (last: without Chromium, outside CI, it skips)
        rc = h.run([h.surge, "report", r.dir], timeout=60)
        page = os.path.join(r.dir, "report.html")
        if h.check(rc.returncode == 0 and os.path.exists(page), "surge report on the stopped search", rc.stderr[-800:]):
            rr = browser.render(h, page)
            if rr is not None:
                stopped = [t for a, t in rr.cells(points=0, key="stopped")]
                h.check(len(stopped) == 1 and "the server is down" in stopped[0] and not rr.cells(points=0,
                                                                                                 key="estimate"),
                        "the search page: the reason, no estimate", (stopped, rr.cells(points=0, key="estimate")))


if __name__ == "__main__":
    harness.main(main)
