"""--slo verdicts against the mock's known timing: a set that passes (exit 0), one that fails (exit 4, the failing
check marked), one that too few requests cannot decide (exit 5, said before the run and in the verdict with its
interval), error_rate with the mock's injected errors (and exit 1 winning over 4), SIGINT winning over both, and
SLOs refused before anything is sent (exit 2, the mock never sees a request)."""
import csv
import os
import signal
import subprocess
import time

import harness
from profiling import Result, profile, tol

TTFT_MS = 30
ITL_MS = 5
OSL = 6
FIELDS = ["slo", "metric", "stat", "op", "target", "unit", "measured", "measurable", "pass", "verdict", "n",
          "confidence_level", "interval"]
CSV_HEAD = ["SLO", "Target", "Measured", "Pass", "Verdict", "N", "Confidence Level", "Interval Low", "Interval High"]


def csv_verdicts(path):
    """The CSV's third part: the rows after the header SLO,Target,Measured,Pass,Verdict,..."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[rows.index(CSV_HEAD) + 1:] if CSV_HEAD in rows else None


def by_text(summary):
    return {e["slo"]: e for e in (summary or {}).get("slo", [])}


def check_passing(h, url):
    # 40 requests: enough to show a p90 under its target at 95% (36 are), an error rate under 0.1 with none failed
    # (Clopper-Pearson: 0..0.088); a p99 would need 368
    slos = ["ttft:p90<%d" % (TTFT_MS + tol(200)), "time_to_first_token:p50 >= %d" % (TTFT_MS - 5),
            "itl:avg<=%d" % (ITL_MS + tol(20)), "e2el:max<%d" % tol(3000), "error_rate<0.1", "request_throughput>1",
            "output_token_throughput_per_user:p10>10"]
    args = ["--streaming", "--concurrency", 4, "--request-count", 40, "--output-tokens-mean", OSL]
    for s in slos:
        args += ["--slo", s]
    r = profile(h, url, *args, check_rc=0)
    s = r.summary
    if not h.check(s is not None and "slo" in s, "a passing run writes the verdicts", r.stderr[-2000:]):
        return
    canon = ["time_to_first_token:p90<%d" % (TTFT_MS + tol(200)), "time_to_first_token:p50>=%d" % (TTFT_MS - 5),
             "inter_token_latency:avg<=%d" % (ITL_MS + tol(20)), "request_latency:max<%d" % tol(3000),
             "error_rate<0.1", "request_throughput>1", "output_token_throughput_per_user:p10>10"]
    h.check([e["slo"] for e in s["slo"]] == canon, "the verdicts in the order given, in canonical text",
            [e["slo"] for e in s["slo"]])
    h.check(all(list(e) == FIELDS for e in s["slo"]), "each verdict's fields", s["slo"][:1])
    h.check(all(e["pass"] and e["measurable"] and e["verdict"] == "pass" for e in s["slo"]) and s["slo_pass"] is True
            and s["slo_verdict"] == "pass", "every verdict passes", s["slo"])
    # the evidence: how many values each rests on, and the interval at the level asked
    ttft90 = by_text(s).get(canon[0], {})
    lo, hi = ttft90.get("interval") or [None, None]
    h.check(ttft90.get("n") == 40 and ttft90.get("confidence_level") == 0.95 and lo is not None and hi is not None
            and lo <= ttft90["measured"] <= hi < TTFT_MS + tol(200), "p90's n and interval", ttft90)
    err = by_text(s).get("error_rate<0.1", {})
    h.check(err.get("n") == 40 and err.get("interval") and err["interval"][0] == 0
            and abs(err["interval"][1] - (1 - 0.025 ** (1 / 40))) < 1e-6, "error rate: Clopper-Pearson over 40", err)
    h.check(by_text(s).get("request_throughput>1", {}).get("interval", 0) is None, "a throughput has no interval")
    h.check(s["input_config"].get("slo") == canon, "input_config lists the SLOs", s["input_config"].get("slo"))
    v = by_text(s)
    ttft99 = v.get(canon[0], {})  # p90 now
    h.check(ttft99.get("metric") == "time_to_first_token" and ttft99.get("stat") == "p90" and
            ttft99.get("op") == "<" and ttft99.get("unit") == "ms", "a distribution's check: metric, stat, op, unit",
            ttft99)
    # the verdict reads the table's numbers: the same percentile, the same throughput
    h.check(abs(ttft99.get("measured", -1) - s["time_to_first_token"]["p90"]) < 1e-9,
            "TTFT p90 measured is the summary's p90", (ttft99, s["time_to_first_token"]))
    h.near(v.get(canon[1], {}).get("measured", -1), TTFT_MS, tol(15), "TTFT p50 near the mock's --ttft-ms")
    h.near(v.get(canon[2], {}).get("measured", -1), ITL_MS, tol(3), "ITL avg near the mock's --itl-ms")
    h.check(abs(v.get(canon[2], {}).get("measured", -1) - s["inter_token_latency"]["avg"]) < 1e-9,
            "ITL avg measured is the summary's avg")
    h.check(abs(v.get(canon[3], {}).get("measured", -1) - s["request_latency"]["max"]) < 1e-9,
            "request latency max measured is the summary's max")
    thr = v.get("request_throughput>1", {})
    h.check(thr.get("stat") is None and thr.get("unit") == "requests/sec" and
            abs(thr.get("measured", -1) - s["request_throughput"]["avg"]) < 1e-9,
            "request_throughput: no stat, the summary's throughput", (thr, s["request_throughput"]))
    err = v.get("error_rate<0.1", {})
    h.check(err.get("measured") == 0 and err.get("unit") == "" and err.get("target") == 0.1, "error_rate 0", err)
    rows = csv_verdicts(os.path.join(r.dir, "profile_export_surge.csv"))
    h.check(rows is not None and [x[0] for x in rows] == canon and all(x[3] == "true" and x[4] == "pass" for x in rows)
            and rows[0][5] == "40" and rows[0][6] == "0.95" and rows[5][7:] == ["", ""],
            "CSV third part: one row per SLO, all true, with n, level and interval", rows)
    if rows:
        h.check(abs(float(rows[0][2]) - ttft99.get("measured", -1)) < 1e-3 and float(rows[0][1]) == TTFT_MS + tol(200),
                "CSV row: target and measured", rows[0])
    h.check("SLO verdicts at 95% confidence: 7 of 7 passed, 0 failed, 0 inconclusive" in r.stdout,
            "the table says 7 of 7 passed", r.stdout[-2000:])
    h.check("cannot show" not in r.stderr, "no note on thin evidence", r.stderr[-1000:])
    h.check("exit status 4" not in r.stderr, "no failure line", r.stderr[-1000:])


def check_failing(h, url):
    r = profile(h, url, "--streaming", "--concurrency", 2, "--request-count", 12, "--output-tokens-mean", OSL,
                "--slo", "ttft:p50<5", "--slo", "e2el:p50 < %d" % tol(3000), "--slo", "itl:p50>1000", check_rc=4)
    s = r.summary
    if not h.check(s is not None and "slo" in s, "a failing run writes the verdicts", r.stderr[-2000:]):
        return
    v = [(e["slo"], e["pass"], e["verdict"]) for e in s["slo"]]
    h.check(v == [("time_to_first_token:p50<5", False, "fail"), ("request_latency:p50<%d" % tol(3000), True, "pass"),
                  ("inter_token_latency:p50>1000", False, "fail")], "the failing checks are marked, the passing one not",
            v)
    h.check(s["slo_pass"] is False, "slo_pass false")
    h.near(s["slo"][0]["measured"], TTFT_MS, tol(15), "the failed TTFT check still says what was measured")
    h.check("exit status 4" in r.stderr and "--slo" in r.stderr, "stderr says an --slo failed", r.stderr[-1000:])
    out = r.stdout
    h.check("SLO verdicts at 95% confidence: 1 of 3 passed, 2 failed, 0 inconclusive" in out, "the table counts 1 of 3",
            out[-2000:])
    row = next((line for line in out.splitlines() if line.strip().startswith("time_to_first_token:p50<5")), "")
    h.check(row.split()[-1:] == ["FAIL"] and row.split()[1:2] == ["5"], "its row: target 5, FAIL", row)
    rows = csv_verdicts(os.path.join(r.dir, "profile_export_surge.csv"))
    h.check(rows is not None and [x[3] for x in rows] == ["false", "true", "false"], "CSV marks the failures", rows)


def check_inconclusive(h, url):
    # 40 requests cannot show a p99 under any target (368 can): said before the run, INCONCLUSIVE with its open
    # interval after it, exit 5; a failing check still wins (exit 4)
    r = profile(h, url, "--streaming", "--concurrency", 4, "--request-count", 40, "--output-tokens-mean", OSL,
                "--slo", "ttft:p99<%d" % tol(5000), check_rc=5)
    h.check("--slo time_to_first_token:p99<%d: 40 requests cannot show this percentile below its target at 95%% "
            "confidence (that takes 368)" % tol(5000) in r.stderr, "the thin evidence is said before the run",
            r.stderr[-1500:])
    s = r.summary or {}
    e = (s.get("slo") or [{}])[0]
    h.check(e.get("verdict") == "inconclusive" and e.get("pass") is False and e.get("n") == 40 and
            e.get("interval", [0, 0])[1] is None and s.get("slo_verdict") == "inconclusive",
            "an undecided p99: inconclusive, its interval open above", e)
    h.check("INCONCLUSIVE" in r.stdout and "0 of 1 passed, 0 failed, 1 inconclusive" in r.stdout,
            "the table says inconclusive", r.stdout[-1500:])
    h.check("exit status 5" in r.stderr, "stderr says why the exit status", r.stderr[-800:])
    profile(h, url, "--streaming", "--concurrency", 4, "--request-count", 40, "--output-tokens-mean", OSL,
            "--slo", "ttft:p99<%d" % tol(5000), "--slo", "ttft:p50<1", check_rc=4)
    # a higher --confidence-level asks for more: p90 from 40 requests passes at 95% but not at 99.9%
    r = profile(h, url, "--streaming", "--concurrency", 4, "--request-count", 40, "--output-tokens-mean", OSL,
                "--slo", "ttft:p90<%d" % tol(5000), "--confidence-level", 0.999, check_rc=5)
    e = ((r.summary or {}).get("slo") or [{}])[0]
    h.check(e.get("confidence_level") == 0.999 and e.get("verdict") == "inconclusive", "--confidence-level 0.999", e)
    p = profile(h, url, "--confidence-level", 1.5, check_rc=2)
    h.check(p.stderr.startswith("surge: --confidence-level:"), "a level above 1 is refused", p.stderr)


def check_error_rate(h):
    with h.mock("--ttft-ms", 1, "--itl-ms", 1, "--error-rate", 0.3) as m:
        base = ["--concurrency", 4, "--request-count", 60, "--output-tokens-mean", 2]
        r = profile(h, m.url, *base, "--max-error-rate", 1, "--slo", "error_rate<=0.9", check_rc=0)
        if r.summary and r.summary.get("slo"):
            e, ok = r.summary["error_request_count"]["avg"], r.summary["request_count"]["avg"]
            got = r.summary["slo"][0]
            h.check(e > 0 and got["pass"] and got["unit"] == "", "the mock's errors are counted, the SLO passes",
                    (e, got))
            h.check(abs(got["measured"] - e / (ok + e)) < 1e-12, "error_rate = failed / (ok + failed)", (got, ok, e))
        r = profile(h, m.url, *base, "--max-error-rate", 1, "--slo", "error_rate<0.01", check_rc=4)
        if r.summary and r.summary.get("slo"):
            h.check(r.summary["slo"][0]["pass"] is False, "error_rate<0.01 fails with the mock's errors")
        # failures beyond --max-error-rate exit 1, whatever the verdicts
        r = profile(h, m.url, *base, "--slo", "error_rate<0.01", check_rc=1)
        h.check(r.summary is not None and r.summary.get("slo_pass") is False, "the verdicts are written anyway")
        h.check("exit status 4" not in r.stderr, "no exit-4 line when 1 wins", r.stderr[-1000:])


def check_interrupted(h):
    with h.mock("--ttft-ms", 50, "--itl-ms", 50) as m:
        art = h.path("interrupted")
        p = subprocess.Popen([h.surge, "profile", "-m", "x", "-u", m.url, "--streaming", "--request-rate", "20",
                              "--request-count", "100000", "--output-tokens-mean", "10", "--no-progress",
                              "--artifact-dir", art, "--slo", "ttft:p99<1"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        p.send_signal(signal.SIGINT)
        try:
            out, err = p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        h.check(p.returncode == 130, "an interrupted run with a failing --slo exits 130", (p.returncode, err[-2000:]))
        r = Result(subprocess.CompletedProcess([], p.returncode, out, err), art)
        h.check(r.summary is not None and r.summary.get("was_interrupted") is True and
                r.summary.get("slo_pass") is False, "its summary has the verdicts, marked interrupted")


def check_refused(h):
    with h.mock("--ttft-ms", 1, "--itl-ms", 1, record=True) as m:
        cases = [
            (["--slo", "ttft:p99<abc"], "expected a number"),
            (["--slo", "ttft:p99<500ms"], "no unit"),
            (["--slo", "latency:p99<500"], "request_latency"),
            (["--slo", "ttft<500"], "statistic"),
            (["--slo", "ttft:p100<500"], "percentile"),
            (["--slo", "error_rate<2"], "fraction"),
            (["--slo", "error_rate:p99<0.1"], "no statistic"),
            (["--slo", "ttft:p99<500 error_rate<0.01"], "its own --slo"),
            (["--slo", "input_sequence_length:avg<600"], "workload"),
            (["--slo", "ttft:p99<500", "--slo", "time_to_first_token:p99.0<500"], "given twice"),
            (sum((["--slo", "e2el:p%d<500" % (10 + i)] for i in range(9)), []), "at most 8"),
            # SLOs the run cannot measure, refused before anything is sent
            (["--slo", "ttft:p99<500"], "without streamed responses"),
            (["--slo", "itl:p99<500", "--streaming", "--output-tokens-mean", "1"], "two tokens"),
        ]
        for args, needle in cases:
            art = h.path("refused")
            p = h.run([h.surge, "profile", "-m", "x", "-u", m.url, "--no-progress", "--request-count", "3",
                       "--artifact-dir", art] + args, timeout=30)
            lines = p.stderr.strip().splitlines()
            h.check(p.returncode == 2, "%s exits 2" % args, (p.returncode, p.stderr[-1000:]))
            h.check(len(lines) == 1 and lines[0].startswith("surge: --slo: ") and needle in lines[0],
                    "%s: one line naming --slo and saying %r" % (args, needle), p.stderr)
            h.check(not os.path.exists(art), "%s: no artifacts" % args)
    h.check(m.records() == [], "the mock received no request", m.records()[:2])


def main(h):
    with h.mock("--ttft-ms", TTFT_MS, "--itl-ms", ITL_MS) as m:
        check_passing(h, m.url)
        check_failing(h, m.url)
        check_inconclusive(h, m.url)
        r = profile(h, m.url, "--request-count", 4, check_rc=0)
        h.check(r.summary is not None and "slo" not in r.summary and "slo_pass" not in r.summary and
                "SLO verdicts" not in r.stdout, "without --slo: no verdicts anywhere")
    check_error_rate(h)
    check_refused(h)
    check_interrupted(h)


if __name__ == "__main__":
    harness.main(main)
