"""Multi-runs (AIPerf's --num-profile-runs): the same load point N times, each run's files in
profile_runs/run_NNNN/, and aggregate/profile_export_aiperf_aggregate.json and .csv holding every metric's mean
across the runs with its Student's t interval. The aggregate is checked against the runs' own summaries, the
interval against t computed here from its closed forms (1 and 2 degrees of freedom); the warmup runs before the
first run only unless asked otherwise; a sweep runs each value as a multi-run; an interrupted multi-run keeps its
complete runs; bad combinations are refused before anything is sent; `surge report` shows the aggregate's
figures."""
import csv
import json
import math
import os
import shutil
import signal
import subprocess
import time

import browser
import harness
from profiling import profile


def load(path):
    with open(path) as f:
        return json.load(f)


def t_closed(p, df):
    """Student's t quantile where it has a closed form: Cauchy (df 1) and df 2."""
    if df == 1:
        return math.tan(math.pi * (p - 0.5))
    if df == 2:
        return (2 * p - 1) / math.sqrt(2 * p * (1 - p))
    raise ValueError(df)


def lines(path):
    with open(path) as f:
        return sum(1 for _ in f)


def settled_lines(path):
    """Lines in path once the count has not changed for 200 ms (at most 5 s)."""
    last, since = -1, time.monotonic()
    deadline = since + 5
    while True:
        n = lines(path)
        now = time.monotonic()
        if n != last:
            last, since = n, now
        elif now - since >= 0.2 or now > deadline:
            return n
        time.sleep(0.05)


STATS = ("avg", "min", "max", "std", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "p99_9")


def check_aggregate(h, d, n, level, what):
    """The aggregate in d against its n runs' own summaries; returns it."""
    agg = load(os.path.join(d, "aggregate", "profile_export_aiperf_aggregate.json"))
    md = agg["metadata"]
    labels = ["run_%04d" % (i + 1) for i in range(n)]
    h.check(md["aggregation_type"] == "confidence" and md["num_profile_runs"] == n and md["num_successful_runs"] == n
            and md["run_labels"] == labels and md["failed_runs"] == [] and md["confidence_level"] == level
            and md["complete"] and not md["was_interrupted"], "%s: AIPerf's metadata" % what, md)
    runs = [load(os.path.join(d, "profile_runs", label, "profile_export_surge.json")) for label in labels]
    t = t_closed((1 + level) / 2, n - 1)
    checked = 0
    for metric, m in runs[0].items():
        if not isinstance(m, dict) or "unit" not in m:
            continue
        for st in STATS:
            if not isinstance(m.get(st), (int, float)):
                continue
            key = "%s_%s" % (metric, st)
            a = agg["metrics"].get(key)
            h.check(a is not None, "%s: %s aggregated" % (what, key), sorted(agg["metrics"])[:20])
            if a is None:
                continue
            vals = [r[metric][st] for r in runs]
            mean = sum(vals) / n
            sd = math.sqrt(sum((v - mean) ** 2 for v in vals) / (n - 1))
            half = t * sd / math.sqrt(n)
            scale = max(abs(mean), max(abs(v) for v in vals), 1e-300)
            ok = (abs(a["mean"] - mean) <= 1e-12 * scale and abs(a["std"] - sd) <= 1e-9 * scale
                  and abs(a["ci_low"] - (mean - half)) <= 1e-9 * scale
                  and abs(a["ci_high"] - (mean + half)) <= 1e-9 * scale
                  and a["min"] == min(vals) and a["max"] == max(vals) and abs(a["t_critical"] - t) <= 1e-9 * t
                  and a["unit"] == m["unit"] and a["n"] == n)
            h.check(ok, "%s: %s is the mean of the runs' %s with mean -/+ t s/sqrt(N)" % (what, key, st),
                    (key, a, vals, mean, sd, t))
            if a["mean"] != 0 and a["cv"] is not None:
                h.check(abs(a["cv"] - sd / abs(mean)) <= 1e-9 * max(1, sd / abs(mean)), "%s: %s cv" % (what, key),
                        a)
            checked += 1
    h.check(checked >= 40, "%s: every metric and statistic of the summaries aggregated" % what, checked)
    for key in ("time_to_first_token_p99", "inter_token_latency_avg", "request_latency_p90", "request_throughput_avg",
                "output_token_throughput_avg"):
        h.check(key in agg["metrics"], "%s: %s in the aggregate" % (what, key), sorted(agg["metrics"]))
    # the CSV: AIPerf's columns, the same figures
    with open(os.path.join(d, "aggregate", "profile_export_aiperf_aggregate.csv"), newline="") as f:
        rows = list(csv.reader(f))
    h.check(rows[0][:11] == ["metric", "mean", "std", "min", "max", "cv", "se", "ci_low", "ci_high", "t_critical",
                             "unit"], "%s: CSV header" % what, rows[0])
    by_key = {r[0]: r for r in rows[1:] if r}
    a = agg["metrics"]["request_latency_p50"]
    r = by_key.get("request_latency_p50")
    h.check(r is not None and abs(float(r[1]) - a["mean"]) <= 1e-8 * a["mean"]
            and abs(float(r[8]) - a["ci_high"]) <= 1e-8 * a["ci_high"], "%s: CSV row = JSON" % what, (r, a))
    h.check(["Num Profile Runs", str(n)] in rows and ["Confidence Level", "%g" % level] in rows,
            "%s: CSV metadata rows" % what, rows[-12:])
    return agg, runs


def main(h):
    with h.mock("--ttft-ms", 10, "--itl-ms", 2, record=True) as m:
        # three runs of 20 requests, 4 warmup requests before the first only (AIPerf's default)
        before = settled_lines(m.record)
        r = profile(h, m.url, "--streaming", "--concurrency", 2, "--request-count", 20, "--output-tokens-mean", 8,
                    "--warmup-request-count", 4, "--num-profile-runs", 3)
        for i in range(1, 4):
            sub = os.path.join(r.dir, "profile_runs", "run_%04d" % i)
            for name in ("profile_export_surge.json", "profile_export_surge.jsonl", "profile_export.jsonl",
                         "profile_export_aiperf.json", "profile_export_aiperf.csv", "profile_export_surge.csv"):
                h.check(os.path.exists(os.path.join(sub, name)), "run %d keeps its own %s" % (i, name))
        h.check(not os.path.exists(os.path.join(r.dir, "profile_runs", "run_0004")), "no fourth run")
        h.check(r.summary is None, "no top-level summary: each run has its own")
        agg, runs = check_aggregate(h, r.dir, 3, 0.95, "3 runs")
        h.check([x["request_count"]["avg"] for x in runs] == [20, 20, 20], "each run measures its own 20 requests",
                [x["request_count"] for x in runs])
        h.check([x["warmup_request_count"]["avg"] for x in runs] == [4, 0, 0], "warmup before the first run only",
                [x["warmup_request_count"] for x in runs])
        h.check(settled_lines(m.record) - before == 3 * 20 + 4, "the mock saw 3 x 20 requests and 4 warmup",
                settled_lines(m.record) - before)
        h.check("Across 3 runs: mean and 95% confidence interval" in r.stdout and "t = 4.3027" in r.stdout,
                "console: N, level and t", r.stdout)
        row = [x for x in r.stdout.splitlines() if x.startswith("TTFT p99 (ms)")]
        a = agg["metrics"]["time_to_first_token_p99"]
        half = (a["ci_high"] - a["ci_low"]) / 2
        h.check(len(row) == 1 and abs(float(row[0].split()[3]) - a["mean"]) <= 5e-4 * a["mean"] + 1
                and abs(float(row[0].split()[4]) - half) <= 5e-4 * half + 1e-3,
                "console row: mean and half-width", (row, a["mean"], half))
        h.check("profile run 2 of 3 (no warmup after the first)" in r.stderr, "says the warmup is skipped",
                r.stderr[-2000:])

        # the report of the multi-run directory: the aggregate's own numbers, each run's p50 and p99 charted
        rep = h.run([h.surge, "report", r.dir], timeout=60)
        page = os.path.join(r.dir, "report.html")
        h.check(rep.returncode == 0 and os.path.exists(page), "surge report DIR on a multi-run", rep.stderr)
        if shutil.which("chromium") or shutil.which("chromium-browser") or os.environ.get("CI"):
            rr = browser.render(h, page)
            if browser.page_ok(h, rr, "multi-run page", ("runs-time_to_first_token", "runs-request_latency")):
                for key in ("time_to_first_token_p99", "request_latency_avg", "request_throughput_avg"):
                    for col in ("mean", "ci_low", "ci_high"):
                        cells = rr.cells(multi=0, key=key, col=col)
                        v = agg["metrics"][key][col]
                        h.check(len(cells) == 1 and float(cells[0][0]["data-value"]) == v
                                and browser.same_number(cells[0][1], v),
                                "multi-run page: %s %s is the aggregate's" % (key, col), (cells, v))
                cells = rr.cells(multi=0, key="time_to_first_token_p99", col="half_width")
                a = agg["metrics"]["time_to_first_token_p99"]
                h.check(len(cells) == 1 and abs(float(cells[0][0]["data-value"]) - (a["ci_high"] - a["ci_low"]) / 2)
                        <= 1e-9 * a["ci_high"], "multi-run page: the half-width", cells)
                h.check(rr.charts()["runs-request_latency"]["points"] == 6, "a p50 and a p99 dot per run",
                        rr.charts()["runs-request_latency"])

        # two runs at 90%: t is Cauchy's; the warmup before each run when asked; the cooldown is waited
        t0 = time.monotonic()
        r = profile(h, m.url, "--streaming", "--concurrency", 2, "--request-count", 10, "--output-tokens-mean", 4,
                    "--warmup-request-count", 2, "--num-profile-runs", 2, "--confidence-level", 0.9,
                    "--profile-run-cooldown-seconds", 1.5, "--profile-run-disable-warmup-after-first", "false")
        took = time.monotonic() - t0
        agg, runs = check_aggregate(h, r.dir, 2, 0.9, "2 runs at 90%")
        h.check(abs(agg["metrics"]["request_latency_avg"]["t_critical"] - 6.313751514675) < 1e-8,
                "t(0.95, 1) = 6.3138", agg["metrics"]["request_latency_avg"])
        h.check([x["warmup_request_count"]["avg"] for x in runs] == [2, 2], "a warmup before each run",
                [x["warmup_request_count"] for x in runs])
        h.check(took >= 1.5, "the cooldown between the runs is waited", took)

        # a sweep of multi-runs: each value N times (AIPerf's independent layout), every run a row of the summary
        r = profile(h, m.url, "--streaming", "--concurrency", "1,2", "--request-count", 10, "--output-tokens-mean", 4,
                    "--num-profile-runs", 2, "--parameter-sweep-cooldown-seconds", 0)
        s = load(os.path.join(r.dir, "sweep_summary.json"))
        h.check(s["sweep"]["num_profile_runs"] == 2 and s["sweep"]["complete"], "sweep header", s["sweep"])
        h.check([(p["concurrency"], p["trial"], p["artifact_subdir"]) for p in s["points"]] ==
                [(c, t, "concurrency_%d/profile_runs/run_%04d" % (c, t)) for c in (1, 2) for t in (1, 2)],
                "one row per run, in order", s["points"])
        for c in (1, 2):
            d = os.path.join(r.dir, "concurrency_%d" % c)
            agg, runs = check_aggregate(h, d, 2, 0.95, "sweep point %d" % c)
            h.check(all(x["input_config"]["concurrency"] == c for x in runs), "each run at its point's load",
                    [x["input_config"]["concurrency"] for x in runs])
            row = [p for p in s["points"] if p["concurrency"] == c and p["trial"] == 1][0]
            h.check(row["request_latency_p99"] == runs[0]["request_latency"]["p99"], "a row is its run's", row)
        h.check("Sweep of multi-runs" in r.stdout and "95% confidence interval" in r.stdout,
                "console: the per-point intervals", r.stdout)
        rep = h.run([h.surge, "report", r.dir], timeout=60)
        page = os.path.join(r.dir, "report.html")
        h.check(rep.returncode == 0 and os.path.exists(page), "surge report DIR on a sweep of multi-runs", rep.stderr)
        if shutil.which("chromium") or shutil.which("chromium-browser") or os.environ.get("CI"):
            rr = browser.render(h, page)
            if browser.page_ok(h, rr, "sweep of multi-runs page", ("capacity-request_latency",)):
                # one point per load, at the mean of its runs: 2 loads x (p50, p99)
                cap = rr.charts()["capacity-request_latency"]
                h.check(cap["points"] == 4, "each load drawn once, at its runs' mean", cap)
                cells = rr.cells(points=0, row=1, key="request_latency_p99")
                h.check(len(cells) == 1 and float(cells[0][0]["data-value"]) == s["points"][1]["request_latency_p99"],
                        "the table lists every run", cells)

        # SIGINT during the second run: the first is the aggregate, the second's files are kept outside it
        art = h.path("art-int")
        cmd = [h.surge, "profile", "-m", "mock-model", "-u", m.url, "--artifact-dir", art, "--no-progress",
               "--request-rate", 20, "--benchmark-duration", 2, "--num-profile-runs", 3]
        proc = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(3.0)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        h.check(proc.returncode == 130, "an interrupted multi-run exits 130", (proc.returncode, err[-2000:]))
        agg = load(os.path.join(art, "aggregate", "profile_export_aiperf_aggregate.json"))
        md = agg["metadata"]
        h.check(md["was_interrupted"] and not md["complete"] and md["num_successful_runs"] == 1
                and md["run_labels"] == ["run_0001"] and md["runs_done"] == 2
                and [f["label"] for f in md["failed_runs"]] == ["run_0002"] and md.get("single_run") is True,
                "the aggregate holds the complete run", md)
        first = load(os.path.join(art, "profile_runs", "run_0001", "profile_export_surge.json"))
        a = agg["metrics"]["request_latency_p50"]
        h.check(a["mean"] == first["request_latency"]["p50"] and a["ci_low"] == a["mean"] and a["t_critical"] is None,
                "one run: its figures, no interval", a)
        h.check(os.path.exists(os.path.join(art, "profile_runs", "run_0002", "profile_export_surge.json"))
                and not os.path.exists(os.path.join(art, "profile_runs", "run_0003")),
                "the interrupted run's files are kept, no third run")
        h.check("multi-run INTERRUPTED during run 2 of 3" in err, "says where it stopped", err[-2000:])

        # refused before anything is sent
        before = settled_lines(m.record)
        for args, flag, words in [
            (["--num-profile-runs", "2", "--search", "max-concurrency", "--slo", "request_latency:p99<100"],
             "--num-profile-runs", "--search"),
            (["--num-profile-runs", "0"], "--num-profile-runs", "whole number"),
            (["--profile-run-cooldown-seconds", "1"], "--profile-run-cooldown-seconds", "only applies"),
            (["--num-profile-runs", "2", "--confidence-level", "1"], "--confidence-level", "between 0 and 1"),
            (["--num-profile-runs", "2", "--confidence-level", "0"], "--confidence-level", "between 0 and 1"),
            (["--num-profile-runs", "2", "--profile-run-cooldown-seconds", "-1"], "--profile-run-cooldown-seconds",
             "0 or more"),
            (["--num-profile-runs", "2", "--profile-run-disable-warmup-after-first=maybe"],
             "--profile-run-disable-warmup-after-first", "true/false"),
            (["--num-profile-runs", "2", "--set-consistent-seed=false"], "--set-consistent-seed", "always seeds"),
            (["--num-profile-runs", "2", "--no-set-consistent-seed"], "--no-set-consistent-seed", "always seeds"),
        ]:
            r = profile(h, m.url, *args, check_rc=2)
            h.check(r.stderr.startswith("surge: " + flag + ":") and words in r.stderr,
                    "%s: one line naming %s" % (" ".join(args), flag), r.stderr)
        r = profile(h, m.url, "--num-profile-runs", "2", "--world-size", "2", "--rank", "0", "--coordinator",
                    "127.0.0.1:1", check_rc=2)
        h.check("multi-run" in r.stderr, "refused over several processes", r.stderr)
        h.check(settled_lines(m.record) == before, "nothing sent for refused multi-runs",
                (before, settled_lines(m.record)))


if __name__ == "__main__":
    harness.main(main)
