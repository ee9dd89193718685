# ctest: epoll-asan (run on epoll under ASan too: tests/CMakeLists.txt)
"""Cancelled is not failed, and every rate means one thing.

The mock answers quickly (about 40 ms), then stalls from 2 s after it started: requests sent into the stall never
get an answer. Two runs end with requests in flight:

- --benchmark-duration 3.5 --benchmark-grace-period 0.5: the sending ends at 3.5 s, what is outstanding half a second
  later is cancelled;
- an open-ended run stopped with SIGINT during the stall.

In both, the summary counts them as cancelled (not errors: error_request_count 0, no error group, error_rate 0 and
exit 0 with --slo error_rate<=0, decided exactly), reports how long they waited (JSON, CSV, console, JSONL, AIPerf's files), says
the latency percentiles are censored (the waits are far above the completed requests' latency, so the percentiles
counted with them lift), and the console table, the progress line, the JSON and the CSV give the same rates.
"""
import csv
import json
import os
import re
import shutil
import signal
import subprocess
import time

import harness
from profiling import Result, profile

STALL_START_MS = 2000  # room for surge's start-up before the stall, even under a sanitizer
RATE = 20


def csv_values(path):
    """profile_export_surge.csv: (distribution rows by name, value rows by name)."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    blank = rows.index([])
    dists = {r[0]: r for r in rows[1:blank] if r}
    head = rows.index(["Metric", "Value"])
    values = {}
    for r in rows[head + 1:]:
        if not r:
            break
        values[r[0]] = r[1]
    return dists, values


def table_value(out, label):
    """The avg cell of a single-valued row of the console table."""
    m = re.search(r"\u2502\s*" + re.escape(label) + r"\s*\u2502\s*([0-9,.]+)\s*\u2502", out)
    return float(m.group(1).replace(",", "")) if m else None


def check_cancelled(h, r, what, why):
    s = r.summary
    if not h.check(s is not None, what + ": a summary", r.stderr[-2000:]):
        return
    ok = s["request_count"]["avg"]
    n = s["cancelled_request_count"]["avg"]
    h.check(ok >= 5, what + ": the requests before the stall completed", ok)
    h.check(n >= 5, what + ": the requests in flight at the end are counted as cancelled", n)
    # not errors: the server returned none
    h.check(s["error_request_count"]["avg"] == 0 and s["error_summary"] == [],
            what + ": cancelled requests are no error", (s["error_request_count"], s["error_summary"]))
    h.check(s.get("cancelled_why") == why, what + ": says why they were cancelled", s.get("cancelled_why"))

    # JSONL: every request, the cancelled ones as such, with their wait and no latency
    recs = r.records
    canc = [x for x in recs if x["status"] == "cancelled"]
    h.check(len(recs) == ok + n and len(canc) == n, what + ": JSONL has every request, the cancelled as such",
            (len(recs), ok, n))
    h.check(all(x["error_class"] == "cancelled" and x["request_latency_ms"] is None and
                abs(x["cancelled_wait_ms"] - (x["end_ns"] - x["intended_ns"]) / 1e6) < 1e-3 for x in canc),
            what + ": a cancelled record has its wait and no latency", canc[:2])

    # the waits: a distribution in the summary, the same as the records', far above the completed latencies
    w = s.get("cancelled_request_wait")
    waits = sorted(x["cancelled_wait_ms"] for x in canc)
    if h.check(w is not None and w["count"] == n, what + ": the waits' distribution", w) and waits:
        h.near(w["max"], waits[-1], waits[-1] * 2e-3, what + ": max wait as the records say")
        h.check(w["max"] >= 400, what + ": the last cancelled had waited at least the grace (ms)", w["max"])
    lat99 = s["request_latency"]["p99"]
    cens = s["censoring"]
    h.check(cens["cancelled"] == n and cens["in_distributions"] is False, what + ": censoring stated", cens)
    h.check(s["request_latency"]["count"] == ok, what + ": the distributions hold the completed requests only",
            s["request_latency"]["count"])
    # with the waits (>= 400 ms) above every completed latency (about 40 ms), p99 counted with them is a wait
    h.check(cens["request_latency_at_least"]["p99"] > lat99 and "p99" in cens["understated"],
            what + ": p99 is said to be understated", (lat99, cens))
    h.check("Cancelled: %d request" % n in r.stdout and "censored" in r.stdout and
            re.search(r"with them at their waits, request latency .*p99 at least", r.stdout) is not None,
            what + ": the console says how many were cancelled and that p99 is at least more", r.stdout[-1500:])

    # one meaning per number: request_throughput = ok / duration, the same in the table, the JSON and the CSV
    d = s["benchmark_duration"]["avg"]
    thr = s["request_throughput"]["avg"]
    h.near(thr, ok / d, 1e-9 * thr + 1e-12, what + ": request_throughput is ok requests / duration")
    offered = s["offered_request_rate"]["avg"]
    issued = sorted(x["intended_ns"] for x in recs)
    h.near(offered, (len(issued) - 1) / ((issued[-1] - issued[0]) / 1e9), 1e-6 * offered,
           what + ": offered rate is the requests issued per second of the sending")
    h.near(offered, RATE, 1.0, what + ": the offered rate is the schedule's")
    dists, values = csv_values(os.path.join(r.dir, "profile_export_surge.csv"))
    h.check(values.get("Request Throughput (per sec)") == "%.2f" % thr and
            values.get("Offered Request Rate (per sec)") == "%.2f" % offered and
            values.get("Cancelled Request Count (count)") == str(n) and values.get("Error Request Count (count)") == "0"
            and values.get("Request Count (count)") == str(ok), what + ": the CSV's values are the JSON's", values)
    row = dists.get("Cancelled Request Wait (ms)")
    h.check(row is not None and row[3] == "%.2f" % w["max"] and row[-1] == str(n), what + ": the CSV's waits", row)
    h.check(table_value(r.stdout, "Request throughput (per sec)") == round(thr, 2) and
            table_value(r.stdout, "Offered request rate (per sec)") == round(offered, 2) and
            table_value(r.stdout, "Cancelled request count") == n and
            table_value(r.stdout, "Error request count") == 0, what + ": the table's values are the JSON's",
            r.stdout[:3000])

    # AIPerf's files agree: was_cancelled per record, the count in the summary, no error for them
    with open(os.path.join(r.dir, "profile_export.jsonl")) as f:
        ai = [json.loads(line) for line in f if line.strip()]
    h.check(sum(x["metadata"]["was_cancelled"] for x in ai) == n, what + ": AIPerf's records say was_cancelled")
    with open(os.path.join(r.dir, "profile_export_aiperf.json")) as f:
        agg = json.load(f)
    h.check(agg["cancelled_request_count"]["avg"] == n and agg["error_request_count"]["avg"] == 0,
            what + ": AIPerf's summary counts them apart", (agg.get("cancelled_request_count"),
                                                            agg.get("error_request_count")))


def check_report(h, r, what):
    """surge report on the run: the cancelled requests are in no error class and not in the throughput bins."""
    out = os.path.join(r.dir, "report.html")
    rc = h.run([h.surge, "report", r.dir, "-o", out], timeout=60)
    if not h.check(rc.returncode == 0 and os.path.exists(out), what + ": surge report", rc.stderr[-1500:]):
        return
    with open(out) as f:
        page = f.read()
    m = re.search(r'<script id="surge-data" type="application/json">(.*?)</script>', page, re.S)
    d = json.loads(m.group(1))["runs"][0]
    b = d["bins"]
    h.check("cancelled" not in b["error_classes"], what + ": no error class for the cancelled requests",
            b["error_classes"])
    done = sum(v * b["width_s"] for v in b["request_rate"])
    h.near(done, r.summary["request_count"]["avg"], 0.01, what + ": the report's throughput bins count ok requests")
    h.check('"cancelled_request_count"' in page and '"cancelled_request_wait"' in page,
            what + ": the page carries the summary's cancelled count and waits")
    # drawn in a browser where there is one (test_report.py requires it under CI): the banner, and no script error
    if shutil.which("chromium") or shutil.which("chromium-browser"):
        import browser
        rr = browser.render(h, out)
        if browser.page_ok(h, rr, what + " page"):
            n = r.summary["cancelled_request_count"]["avg"]
            h.check(re.search(r'data-key="cancelled"[^>]*>%d requests were cancelled by surge' % n, rr.dom) is not None,
                    what + ": the page says how many requests surge cancelled", rr.dom[-2000:])


def main(h):
    mock_args = ("--ttft-ms", 20, "--itl-ms", 5, "--stall-start-ms", STALL_START_MS, "--stall-ms", 60000)
    load = ["--streaming", "--output-tokens-mean", 5, "--output-tokens-mean-deterministic",
            "--request-rate", RATE, "--request-distribution", "constant"]

    # -- the end of --benchmark-duration, after its grace period
    with h.mock(*mock_args) as m:
        r = profile(h, m.url, *load, "--benchmark-duration", 3.5, "--benchmark-grace-period", 0.5,
                    "--slo", "error_rate<=0", check_rc=0)
        check_cancelled(h, r, "grace period", "--benchmark-grace-period ended")
        if r.summary:
            check_report(h, r, "grace period")
            # surge merge reads the cancelled records back as cancelled (the JSONL's own status)
            merged = h.path("merged")
            mr = h.run([h.surge, "merge", r.dir, "-o", merged, "-q"], timeout=60)
            ms = Result(mr, merged).summary
            h.check(mr.returncode == 0 and ms is not None and
                    ms["cancelled_request_count"] == r.summary["cancelled_request_count"] and
                    ms["error_request_count"]["avg"] == 0 and
                    ms["censoring"]["understated"] == r.summary["censoring"]["understated"],
                    "surge merge keeps the cancelled requests apart", (mr.returncode, mr.stderr[-1000:],
                                                                         ms and ms.get("cancelled_request_count")))
        if r.summary:
            v = r.summary["slo"][0]
            h.check(v["measured"] == 0 and v["pass"], "error_rate does not count what surge cancelled", v)
            h.check(r.summary["input_config"].get("benchmark_grace_period") == 0.5, "the grace period in input_config",
                    r.summary["input_config"].get("benchmark_grace_period"))

    # -- SIGINT during the stall, with the progress line on
    with h.mock(*mock_args) as m:
        art = h.path("interrupted")
        p = subprocess.Popen([h.surge, "profile", "-m", "mock-model", "-u", m.url, *map(str, load),
                              "--request-count", "100000", "--progress", "--artifact-dir", art],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(STALL_START_MS / 1000 + 1.5)
        p.send_signal(signal.SIGINT)
        try:
            out, err = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        h.check(p.returncode == 130, "interrupted run exits 130", (p.returncode, err[-2000:]))
        r = Result(subprocess.CompletedProcess([], p.returncode, out, err), art)
        check_cancelled(h, r, "SIGINT", "the run was interrupted")
        h.check("results cover what completed before SIGINT" in out, "the table names SIGINT", out[-800:])
        # the progress line's last word agrees with the summary: the split, and ok/s as request throughput so far
        last = [x for x in re.split(r"[\r\n]", err) if " done: " in x]
        mt = re.search(r"done: (\d+) ok, (\d+) failed, (\d+) cancelled\s+([0-9.]+) ok/s", last[-1] if last else "")
        if h.check(mt is not None and r.summary is not None, "a final progress line", err[-1500:]):
            s = r.summary
            h.check((int(mt.group(1)), int(mt.group(2)), int(mt.group(3))) ==
                    (s["request_count"]["avg"], 0, s["cancelled_request_count"]["avg"]),
                    "the progress line's split is the summary's", (mt.group(0), s["request_count"]))
            thr = s["request_throughput"]["avg"]
            h.near(float(mt.group(4)), thr, 0.15 * thr + 0.1, "the progress line's ok/s is the request throughput")

    # -- SIGTERM (what a job scheduler or a container runtime sends): named as such
    with h.mock(*mock_args) as m:
        art = h.path("terminated")
        p = subprocess.Popen([h.surge, "profile", "-m", "mock-model", "-u", m.url, *map(str, load),
                              "--request-count", "100000", "--artifact-dir", art],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(STALL_START_MS / 1000 + 1.0)
        p.send_signal(signal.SIGTERM)
        try:
            out, err = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        h.check(p.returncode == 130 and "results cover what completed before SIGTERM" in out,
                "SIGTERM: exit 130, the table names SIGTERM", (p.returncode, out[-800:], err[-800:]))


if __name__ == "__main__":
    harness.main(main)
