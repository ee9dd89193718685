"""Sweeps: --concurrency and --request-rate lists (AIPerf) and --concurrency-range / --request-rate-range
(perf_analyzer) run every point in turn, each with its own files and fresh metrics, one summary row per point, and
an interrupted sweep keeps what it measured; bad sweep flags are refused before anything is sent."""
import csv
import json
import os
import signal
import subprocess
import time

import harness
from profiling import profile, tol


def load(path):
    with open(path) as f:
        return json.load(f)


def settled_lines(path):
    """Lines in path once the count has not changed for 200 ms (at most 5 s)."""
    last, since = -1, time.monotonic()
    deadline = since + 5
    while True:
        with open(path) as f:
            n = sum(1 for _ in f)
        now = time.monotonic()
        if n != last:
            last, since = n, now
        elif now - since >= 0.2 or now > deadline:
            return n
        time.sleep(0.05)


def main(h):
    with h.mock("--ttft-ms", 10, "--itl-ms", 2, record=True) as m:
        # a closed-loop sweep: three points, each its own sub-directory with the whole set of files
        r = profile(h, m.url, "--streaming", "--concurrency", "1,4,8", "--request-count", 40,
                    "--output-tokens-mean", 8, "--parameter-sweep-cooldown-seconds", 0)
        s = load(os.path.join(r.dir, "sweep_summary.json"))
        h.check(s["sweep"]["kind"] == "concurrency" and s["sweep"]["values"] == [1, 4, 8] and s["sweep"]["complete"],
                "sweep header", s["sweep"])
        pts = s["points"]
        h.check([p["concurrency"] for p in pts] == [1, 4, 8], "one row per point, in order", pts)
        for p in pts:
            sub = os.path.join(r.dir, p["artifact_subdir"])
            h.check(p["artifact_subdir"] == "concurrency_%d" % p["concurrency"], "AIPerf's sub-directory name", p)
            point = load(os.path.join(sub, "profile_export_surge.json"))
            # fresh histograms per point: each point counts its own 40 requests, not the sweep's so far
            h.check(point["request_count"]["avg"] == 40 and p["request_count"] == 40,
                    "each point measures its own requests", (p, point["request_count"]))
            h.check(point["input_config"]["concurrency"] == p["concurrency"], "the point's input_config has its load",
                    point["input_config"])
            h.near(p["time_to_first_token_p50"], point["time_to_first_token"]["p50"], 1e-9,
                   "the row's TTFT p50 is the point's own")
            h.near(p["time_to_first_token_p50"], 10, tol(3), "TTFT p50 near the mock's 10 ms")
            for name in ("profile_export_surge.jsonl", "profile_export.jsonl", "profile_export_aiperf.json",
                         "profile_export_aiperf.csv"):
                h.check(os.path.exists(os.path.join(sub, name)), "the point's per-request records and AIPerf's files",
                        name)
        h.check(os.path.exists(os.path.join(r.dir, "inputs.json")), "inputs.json once, for every point")
        # more slots, more throughput: the mock's latency is fixed, so rate follows concurrency
        rates = [p["request_throughput"] for p in pts]
        h.check(rates[0] < rates[1] < rates[2], "throughput grows with concurrency", rates)
        with open(os.path.join(r.dir, "sweep_summary.csv"), newline="") as f:
            rows = list(csv.reader(f))
        h.check(rows[0][0] == "Concurrency" and [x[0] for x in rows[1:]] == ["1", "4", "8"], "CSV: one row per point",
                rows)
        h.check("Sweep over concurrency (3 of 3 points)" in r.stdout, "console title", r.stdout)
        lines = [line.split() for line in r.stdout.splitlines()]
        h.check([x[0] for x in lines if x and x[0] in ("1", "4", "8")] == ["1", "4", "8"], "console: a row per point",
                r.stdout)
        h.check(r.records == [], "no top-level JSONL: each point has its own")

        # perf_analyzer's range: START:END:STEP, additive
        r = profile(h, m.url, "--request-rate-range", "20:60:20", "--request-count", 20,
                    "--parameter-sweep-cooldown-seconds", 0)
        s = load(os.path.join(r.dir, "sweep_summary.json"))
        h.check([p["request_rate"] for p in s["points"]] == [20, 40, 60], "a rate range's points", s["points"])
        h.check(all(p["artifact_subdir"] == "request_rate_%g" % p["request_rate"] for p in s["points"]),
                "rate sub-directories", s["points"])

        # SIGINT in the middle: the points that ran are in the summary, the last marked, exit 130
        art = h.path("art-int")
        cmd = [h.surge, "profile", "-m", "mock-model", "-u", m.url, "--artifact-dir", art, "--no-progress",
               "--request-rate", "20,30,40", "--benchmark-duration", 2, "--parameter-sweep-cooldown-seconds", 0]
        proc = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(3.0)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        h.check(proc.returncode == 130, "an interrupted sweep exits 130", (proc.returncode, err[-2000:]))
        s = load(os.path.join(art, "sweep_summary.json"))
        h.check(not s["sweep"]["complete"] and s["sweep"]["was_interrupted"] and len(s["points"]) == 2,
                "the summary holds the points that ran", s)
        h.check(s["points"][-1]["was_interrupted"] and not s["points"][0]["was_interrupted"],
                "the interrupted point is marked", s["points"])
        h.check("sweep INTERRUPTED during point 2 of 3" in err, "says where it stopped", err[-2000:])

        # bad sweeps: one line naming the flag, exit 2, nothing sent. The mock writes its record within 50 ms of a
        # request: the count is taken once it has held still for 200 ms (the interrupted run's last requests)
        before = settled_lines(m.record)
        for args, flag, words in [
            (["--concurrency", "1,x,4"], "--concurrency", "whole number"),
            (["--concurrency", "4,"], "--concurrency", "empty value"),
            (["--concurrency-range", "8:2"], "--concurrency-range", "below START"),
            (["--request-rate-range", "1:100000:0.001"], "--request-rate-range", "more than 1000"),
            (["--request-rate", "10,inf"], "--request-rate", "inf"),
            (["--concurrency", "1,2", "--request-rate", "5"], "--concurrency", "one load kind"),
            (["--concurrency", "1,2", "--concurrency-range", "1:4"], "--concurrency-range", "already given"),
            (["--parameter-sweep-cooldown-seconds", "1"], "--parameter-sweep-cooldown-seconds", "only applies"),
            (["--concurrency", "1,2", "--parameter-sweep-cooldown-seconds", "-1"],
             "--parameter-sweep-cooldown-seconds", "0 or more"),
        ]:
            r = profile(h, m.url, *args, check_rc=2)
            h.check(r.stderr.startswith("surge: " + flag + ":") and words in r.stderr,
                    "%s: one line naming %s" % (" ".join(args), flag), r.stderr)
        with open(m.record) as f:
            after = sum(1 for _ in f)
        h.check(after == before, "nothing sent for bad sweep flags", (before, after))


if __name__ == "__main__":
    harness.main(main)
