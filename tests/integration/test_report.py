# ctest: run-serial (headless Chromium takes both cores for seconds: the timing tests beside it would suffer)
# ctest: one-backend (the page, not the I/O, is under test)
# ctest: no-tsan (the pages are written after the run, on the main thread; the runs behind them are TSan-checked elsewhere)
"""surge report / surge compare / surge profile --generate-plots, each kind of page loaded in headless Chromium.

For a run (with failures and an SLO), a sweep, a capacity search and a comparison of two runs: the page loads
with no console message, every chart is drawn with data (the page's self-check counts each chart's points and
the data-coloured pixels it painted), and every number the page shows equals the summary file's. Bad input
(a directory that is not a run, a record file cut off, runs of different kinds) gets one line and exit 2, and
leaves no page behind.
"""

import datetime
import json
import os
import re
import shlex
import shutil
import socket
import time

import browser
import harness
import profiling

RUN_CHARTS = ("cdf-ttft", "cdf-latency", "cdf-itl", "cdf-lag", "timeline-requests", "timeline-inflight",
              "timeline-rates", "timeline-lag", "hist-input_sequence_length", "hist-output_sequence_length")


def records_file(d):
    for name in ("profile_export_surge.jsonl", "profile_export.jsonl"):
        p = os.path.join(d, name)
        if os.path.exists(p):
            with open(p) as f:
                if "intended_ns" in f.readline():
                    return p
    return None


def check_summary_numbers(h, r, summary, run_index, what, least=40):
    """Every stat of every metric of the summary appears on the page, made from exactly the file's value."""
    seen = 0
    for tag, m in summary.items():
        if not isinstance(m, dict) or "unit" not in m:
            continue
        for stat in ("avg", "min", "max", "p50", "p90", "p95", "p99", "std", "count"):
            if stat not in m:
                continue
            cells = r.cells(run=run_index, tag=tag, stat=stat)
            cells = [c for c in cells if "summary" not in c[0].get("class", "")]
            if not h.check(len(cells) >= 1, "%s: %s %s shown" % (what, tag, stat)):
                continue
            a, text = cells[0]
            v = m[stat]
            h.check(a.get("data-value") is not None and float(a["data-value"]) == float(v),
                    "%s: %s %s is the file's value" % (what, tag, stat), (a.get("data-value"), v))
            h.check(browser.same_number(text, v), "%s: %s %s shown as %r agrees with %r" % (what, tag, stat, text, v))
            seen += 1
    h.check(seen >= least, "%s: the summary table shows the metrics (%d numbers)" % (what, seen))


T0 = time.time()


def surge_version(h):
    out = h.run([h.surge, "--version"], timeout=30).stdout.split()
    return out[1] if len(out) == 2 else None


def check_provenance(h, f, argv, what):
    """A file the run wrote says where its figures came from: surge's version, the command line (a shell reads it
    back as the words that ran), the host and when it ran (ISO 8601 UTC, within this test's time)."""
    h.check(f.get("surge_version") == surge_version(h) is not None, "%s: surge_version is surge --version's" % what,
            (f.get("surge_version"), surge_version(h)))
    words = [str(a) for a in argv]
    words = ["surge"] + words[words.index("profile"):]
    h.check(shlex.split(f.get("command") or "") == words, "%s: command is the command line that ran" % what,
            (f.get("command"), words))
    h.check(f.get("host") == socket.gethostname(), "%s: host is this host's name" % what, f.get("host"))
    times = []
    for key in ("start_time", "end_time"):
        v = f.get(key) or ""
        ok = re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", v) is not None
        h.check(ok, "%s: %s in ISO 8601 UTC" % (what, key), v)
        if ok:
            t = datetime.datetime.strptime(v, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
            times.append(t.timestamp())
    if len(times) == 2:
        h.check(T0 - 5 <= times[0] <= times[1] <= time.time() + 5, "%s: start_time <= end_time, both during this "
                "test (%r, %r; test from %r)" % (what, times[0], times[1], T0))


def shown_date(iso):
    """How the page writes a file's time: "2026-11-28 03:20:41 UTC"."""
    return iso[:10] + " " + iso[11:19] + (" UTC" if iso.endswith("Z") else "")


def check_meta(h, r, f, what, **entry):
    """The page's provenance block for one run (run=i) or sweep/search (points=i) shows the file's command line,
    version, host and start time, and a workload line of each kind; returns the block's cells."""
    m = r.meta(**entry)
    for key in ("command", "arrivals", "length", "prompts", "endpoint", "version", "host", "date"):
        h.check(m.get(key, "not recorded") != "not recorded", "%s: the page shows the %s" % (what, key), m)
    h.check(m.get("command") == f.get("command"), "%s: the page's command line is the file's" % what,
            (m.get("command"), f.get("command")))
    h.check(m.get("version") == "surge " + str(f.get("surge_version")), "%s: the page's version is the file's" % what,
            (m.get("version"), f.get("surge_version")))
    h.check(m.get("host") == f.get("host"), "%s: the page's host is the file's" % what, (m.get("host"), f.get("host")))
    h.check(m.get("date", "").startswith(shown_date(f.get("start_time") or "?")),
            "%s: the page's date is the run's start_time" % what, (m.get("date"), f.get("start_time")))
    return m


def single_run(h, m):
    res = profiling.profile(h, m.url, "--endpoint-type", "chat", "--streaming", "--request-rate", "100",
                            "--request-count", "300", "--synthetic-input-tokens-mean", "50",
                            "--synthetic-input-tokens-stddev", "10", "--output-tokens-mean", "12",
                            "--output-tokens-stddev", "3", "--max-error-rate", "1",
                            "--slo", "time_to_first_token:p90<500", "--slo", "error_rate<0.5", "--generate-plots",
                            check_rc=0)
    page = os.path.join(res.dir, "report.html")
    h.check(os.path.exists(page), "--generate-plots wrote report.html", res.stderr[-1500:])
    if not os.path.exists(page):
        return res
    with open(page) as f:
        text = f.read()
    h.check("<script src" not in text and "<link" not in text, "the page loads nothing beside it")
    r = browser.render(h, page)
    if not browser.page_ok(h, r, "run page", RUN_CHARTS + ("errors",)):
        return res
    check_summary_numbers(h, r, res.summary, 0, "run page")
    for s in res.summary["slo"]:
        cells = r.cells(run=0, slo=s["slo"], stat="measured")
        h.check(len(cells) == 1 and float(cells[0][0]["data-value"]) == float(s["measured"]),
                "run page: SLO %s measured value shown" % s["slo"], cells)
        # its evidence: n, the interval and the three-way verdict, as the summary has them
        n = r.cells(run=0, slo=s["slo"], stat="n")
        verdict = [t for a, t in r.cells(run=0, slo=s["slo"], stat="verdict")]
        interval = [t for a, t in r.cells(run=0, slo=s["slo"], stat="interval")]
        h.check(len(n) == 1 and float(n[0][0]["data-value"]) == s["n"] and verdict == [s["verdict"].upper()],
                "run page: SLO %s shows n and its verdict" % s["slo"], (n, verdict, s))
        if s["interval"]:
            lo, hi = s["interval"]
            h.check(len(interval) == 1 and " .. " in interval[0] and (hi is not None or interval[0].endswith("inf")),
                    "run page: SLO %s shows its interval" % s["slo"], (interval, s["interval"]))
    c = r.charts()
    # the CDFs hold every ok request; the timeline every request (300 is under the downsampling threshold)
    ok = res.summary["request_count"]["avg"]
    errors = res.summary["error_request_count"]["avg"]
    h.check(errors > 0, "the mock's injected failures happened", errors)
    h.check(c["cdf-ttft"]["points"] == 2 * ok, "TTFT CDF: every ok request, from intended start and from send",
            (c["cdf-ttft"]["points"], ok))
    h.check(c["errors"]["datasets"] >= 1, "errors chart: a dataset per error class", c["errors"])
    h.check(r.seconds < 30, "the page loads in reasonable time", r.seconds)
    check_provenance(h, res.summary, res.proc.args, "profile_export_surge.json")
    meta = check_meta(h, r, res.summary, "run page", run=0)
    h.check(meta.get("arrivals") == "poisson arrivals at 100 requests/s", "run page: the arrival process",
            meta.get("arrivals"))
    h.check("ISL mean 50, stddev 10" in meta.get("prompts", "") and "OSL mean 12, stddev 3" in meta.get("prompts", ""),
            "run page: ISL and OSL, mean and stddev", meta.get("prompts"))
    h.check(meta.get("endpoint", "").startswith("chat at " + m.url) and "streaming" in meta.get("endpoint", ""),
            "run page: the endpoint type, URL and streaming", meta.get("endpoint"))
    h.check(meta.get("length") == "300 requests", "run page: how long it ran", meta.get("length"))
    return res


def sweep(h, m):
    res = profiling.profile(h, m.url, "--endpoint-type", "chat", "--streaming", "--concurrency", "1,4",
                            "--request-count", "40", "--output-tokens-mean", "8",
                            "--parameter-sweep-cooldown-seconds", "0", "--slo", "request_latency:p90<1000",
                            check_rc=0)
    rc = h.run([h.surge, "report", res.dir], timeout=60)
    page = os.path.join(res.dir, "report.html")
    h.check(rc.returncode == 0 and os.path.exists(page), "surge report DIR writes DIR/report.html for a sweep",
            rc.stderr)
    r = browser.render(h, page)
    if not browser.page_ok(h, r, "sweep page", ("capacity-time_to_first_token", "capacity-inter_token_latency",
                                                "capacity-request_latency")):
        return res
    with open(os.path.join(res.dir, "sweep_summary.json")) as f:
        rows = json.load(f)["points"]
    for k, row in enumerate(rows):
        for key in ("request_throughput", "time_to_first_token_p99", "request_latency_p50", "error_count"):
            cells = r.cells(points=0, row=k, key=key)
            h.check(len(cells) == 1 and float(cells[0][0]["data-value"]) == float(row[key])
                    and browser.same_number(cells[0][1], row[key]),
                    "sweep page: point %d %s equals sweep_summary.json's" % (k, key), (cells, row[key]))
    # each curve holds both points; the SLO line is drawn as a guide, not counted as data
    cap = r.charts()["capacity-request_latency"]
    h.check(cap["points"] == 4, "sweep page: p50 and p99 latency for both points", cap)
    with open(os.path.join(res.dir, "sweep_summary.json")) as f:
        summary = json.load(f)
    check_provenance(h, summary, res.proc.args, "sweep_summary.json")
    meta = check_meta(h, r, summary, "sweep page", points=0)
    h.check(meta.get("arrivals") == "closed loop: concurrency 1, 4", "sweep page: the load of each point",
            meta.get("arrivals"))
    h.check(meta.get("length") == "40 requests per point", "sweep page: each point's length", meta.get("length"))
    return res


def search(h):
    with h.mock("--ttft-ms", "20", "--itl-ms", "2", "--max-batch", "4", "--output-tokens", "10") as m:
        res = profiling.profile(h, m.url, "--endpoint-type", "chat", "--streaming", "--search", "max-request-rate",
                                "--search-range", "20:400", "--search-precision", "0.2", "--benchmark-duration",
                                "1.5", "--slo", "time_to_first_token:p90<200", "--generate-plots", timeout=200,
                                check_rc=0)
    page = os.path.join(res.dir, "report.html")
    r = browser.render(h, page) if os.path.exists(page) else None
    h.check(r is not None, "--generate-plots wrote a search's report.html", res.stderr[-1500:])
    if not browser.page_ok(h, r, "search page", ("capacity-time_to_first_token",)):
        return
    with open(os.path.join(res.dir, "search.json")) as f:
        s = json.load(f)
    answer = [t for a, t in r.cells(points=0, key="answer") if t.startswith("Capacity")]
    h.check(len(answer) == 1 and browser.same_number(answer[0].split("Capacity: ")[1], s["search"]["highest_passing"]),
            "search page: the answer line gives search.json's highest passing rate", (answer, s["search"]))
    est = s["search"].get("capacity_estimate") or {}
    shown = [t for a, t in r.cells(points=0, key="estimate")]
    lead = {"crossing": "", "at_least": "at least ", "below": "below "}.get(est.get("kind"), "?")
    h.check(len(shown) == 1 and shown[0].startswith("Point estimate: " + lead)
            and browser.same_number(shown[0][len("Point estimate: " + lead):], est.get("value"))
            and "isotonic fit over %d probes" % est.get("probes", -1) in shown[0]
            and "not a confidence statement" in shown[0],
            "search page: the point estimate is search.json's, said not to be a confidence statement", (shown, est))
    h.check(len(r.cells(points=0, key="request_throughput")) == len(s["probes"]), "search page: a row per probe")
    # each probe's verdict, its request count, and for a failed one the reason search.json gives
    failed = 0
    for k, row in enumerate(s["probes"]):
        verdict = [t for a, t in r.cells(points=0, row=k, key="verdict")]
        why = [t for a, t in r.cells(points=0, row=k, key="why")]
        n = r.cells(points=0, row=k, key="n")
        h.check(len(n) == 1 and float(n[0][0]["data-value"]) == row["request_count"] + row["error_count"],
                "search page: probe %d shows its request count n" % k, (n, row))
        want = {"pass": "pass", "fail": "FAIL", "inconclusive": "INCONCLUSIVE"}[row["verdict"]]
        h.check(verdict == [want], "search page: probe %d's verdict" % k, (verdict, row))
        if not row["pass"]:
            failed += 1
            h.check(row.get("why") and why == ["why: " + row["why"]], "search page: failed probe %d shows why" % k,
                    (why, row.get("why")))
        else:
            h.check(why == [], "search page: passed probe %d has no reason line" % k, why)
    h.check(failed >= 1, "search: a probe failed (the range's top is past the mock's capacity)", s["probes"])
    check_provenance(h, s, res.proc.args, "search.json")
    meta = check_meta(h, r, s, "search page", points=0)
    h.check(meta.get("arrivals") == "poisson arrivals: request rate searched from 20 to 400 requests/s",
            "search page: the arrival process and the range", meta.get("arrivals"))
    h.check(meta.get("length") == "1.50 s per probe", "search page: the probe length", meta.get("length"))
    curve_fixture(h, res.dir)


def curve_fixture(h, search_dir):
    """A search whose probes are as an overloaded server leaves them: the most throughput achieved at a middle
    load, less at the highest; a failed probe and an inconclusive one with their reasons; a start time long past.
    Every point lies within the charts' axes (Chart.js reads the x range of data it takes as sorted from its first
    and last points only, which cut off the middle one), each state shows with its reason, and the date shown is
    the file's, not the day the page was made."""
    d = h.path("curve")
    shutil.copytree(search_dir, d)
    path = os.path.join(d, "search.json")
    with open(path) as f:
        s = json.load(f)
    base = s["probes"][0]
    rows = []
    for k, (rate, tput, state, why) in enumerate(((10, 10.0, "pass", None), (20, 30.0, "fail", "p99 over target"),
                                                 (40, 15.0, "inconclusive", "too few requests for p99 (n=12)"))):
        row = dict(base)
        row.update(request_rate=rate, request_throughput=tput)
        row["pass"] = state == "pass"
        row["why"] = why
        row["verdict"] = state
        for key in ("time_to_first_token", "inter_token_latency", "request_latency"):
            row[key + "_p50"] = (base[key + "_p50"] or 1.0) * (1 + k)
            row[key + "_p99"] = (base[key + "_p99"] or 1.0) * (3 if k == 1 else 1 + k / 2)
        rows.append(row)
    s["probes"] = rows
    s["search"].update(highest_passing=10, lowest_failing=20, lowest_failing_why="p99 over target", probes=3)
    s["start_time"], s["end_time"] = "2020-01-02T03:04:05.000000Z", "2020-01-02T03:09:00.000000Z"
    with open(path, "w") as f:
        json.dump(s, f)
    out = h.path("curve.html")
    rc = h.run([h.surge, "report", d, "-o", out], timeout=60)
    h.check(rc.returncode == 0, "surge report of the curve fixture", rc.stderr)
    r = browser.render(h, out)
    if not browser.page_ok(h, r, "curve page", ("capacity-time_to_first_token", "capacity-inter_token_latency",
                                               "capacity-request_latency")):
        return
    for cid in ("capacity-time_to_first_token", "capacity-inter_token_latency", "capacity-request_latency"):
        c = r.charts()[cid]
        h.check(c["data"]["x"]["max"] == 30.0 and c["scales"]["x"]["max"] >= 30.0,
                "curve page: %s's x axis reaches the middle point's 30 req/s (axis max %r)" % (cid, c["scales"]["x"]["max"]))
        h.check(c["shown"] == 6, "curve page: %s places all 6 points (p50 and p99 of 3) inside the plot" % cid, c)
    for k, (text, cls, why) in enumerate((("pass", "pass", ""), ("FAIL", "fail", "p99 over target"),
                                          ("INCONCLUSIVE", "inconclusive", "too few requests for p99 (n=12)"))):
        v = r.cells(points=0, row=k, key="verdict")
        w = [t for a, t in r.cells(points=0, row=k, key="why")]
        h.check(len(v) == 1 and v[0][1] == text and cls in v[0][0].get("class", "").split(),
                "curve page: probe %d shows %s in its own colour" % (k, text), v)
        h.check(w == (["why: " + why] if why else []), "curve page: probe %d's reason" % k, (w, why))
    m = r.meta(points=0)
    h.check(m.get("date") == "2020-01-02 03:04:05 UTC to 03:09:00 UTC",
            "curve page: the date is the file's start and end, not today's", m.get("date"))


def compare(h, a, b):
    out = h.path("cmp.html")
    rc = h.run([h.surge, "compare", a.dir, b.dir, "-o", out], timeout=60)
    h.check(rc.returncode == 0 and os.path.exists(out), "surge compare A B -o FILE", rc.stderr)
    r = browser.render(h, out)
    if not browser.page_ok(h, r, "compare page", ("cdf-ttft", "cdf-latency", "timeline-rates")):
        return
    for i, res in enumerate((a, b)):
        for tag, stat in (("time_to_first_token", "p99"), ("request_latency", "p50"), ("request_throughput", "avg")):
            cells = [c for c in r.cells(run=i, tag=tag, stat=stat) if "diff" not in c[0].get("class", "")]
            h.check(len(cells) >= 1 and float(cells[0][0]["data-value"]) == float(res.summary[tag][stat]),
                    "compare page: run %d %s %s is its file's" % (i, tag, stat), cells[:2])
        check_summary_numbers(h, r, res.summary, i, "compare page run %d" % i)
    h.check(r.charts()["cdf-ttft"]["datasets"] == 4, "compare page: both runs' TTFT CDFs, from intended and send",
            r.charts()["cdf-ttft"])
    for i, res in enumerate((a, b)):
        check_meta(h, r, res.summary, "compare page run %d" % i, run=i)


def interrupted(h):
    """An interrupted run still gets its page with --generate-plots, and the page says it was interrupted."""
    import signal
    import subprocess
    import time
    with h.mock("--ttft-ms", "10", "--itl-ms", "2") as m:
        art = h.path("interrupted")
        p = subprocess.Popen([h.surge, "profile", "-m", "mock-model", "-u", m.url, "--streaming", "--request-rate",
                              "50", "--benchmark-duration", "30", "--artifact-dir", art, "--no-progress",
                              "--generate-plots"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(2)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    h.check(p.returncode == 130, "interrupted profile exits 130", (p.returncode, err[-1500:]))
    page = os.path.join(art, "report.html")
    h.check(os.path.exists(page) and "report in" in err, "an interrupted run gets its page", err[-1500:])
    r = browser.render(h, page) if os.path.exists(page) else None
    if browser.page_ok(h, r, "interrupted run page", ("cdf-ttft",)):
        h.check("This run was interrupted" in r.dom, "the page says the run was interrupted")


PEERS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "peers")


def page_data(path):
    """The charts' data surge wrote into a page (its "surge-data" element)."""
    import re
    with open(path) as f:
        m = re.search(r'<script id="surge-data" type="application/json">(.*?)</script>', f.read(), re.S)
    return json.loads(m.group(1))


def peers(h, surge_run):
    """AIPerf's and GenAI-Perf's files (tests/data/peers, made to their schemas) read by surge report, alone and
    compared with a surge run on one page."""
    # 20 requests, one failed: an HTTP 500 in AIPerf's records; perf_analyzer's export leaves a failed one out
    for name, summary_file, total in (("aiperf-run", "profile_export_aiperf.json", 20),
                                      ("genai-perf-run", "profile_export_genai_perf.json", 19)):
        src = os.path.join(PEERS, name)
        out = h.path(name + ".html")
        rc = h.run([h.surge, "report", src, "-o", out], timeout=60)
        h.check(rc.returncode == 0, "surge report reads %s" % name, rc.stderr)
        r = browser.render(h, out)
        if not browser.page_ok(h, r, name + " page", ("cdf-ttft", "cdf-latency", "cdf-itl", "timeline-requests")):
            continue
        with open(os.path.join(src, summary_file)) as f:
            summary = json.load(f)
        check_summary_numbers(h, r, summary, 0, name + " page", least=20)
        d = page_data(out)["runs"][0]
        h.check(d["requests"] == total and d["cdf"]["time_to_first_token"]["n"] == 19,
                "%s: every request read, the failed one apart" % name, (d["requests"], d["cdf"]["time_to_first_token"]))
        # the peers record only the send: no from-send curve and no schedule-lag chart for them
        h.check("cdf-lag" not in r.charts() and r.charts()["cdf-ttft"]["datasets"] == 1,
                "%s: no curves the peer cannot measure" % name, r.charts().get("cdf-ttft"))
        meta = r.meta(run=0)
        if name == "aiperf-run":
            h.check(meta.get("version") == "aiperf " + summary["aiperf_version"] and
                    meta.get("command") == summary["input_config"]["cli_command"] and
                    meta.get("date", "").startswith(shown_date(summary["start_time"])),
                    "aiperf-run: the page shows AIPerf's version, command line and start time", meta)
        h.check(meta.get("arrivals") == "closed loop: concurrency 4", "%s: the load from its configuration" % name, meta)
        lat = d["cdf"]["request_latency"]
        h.check(abs(lat["p50"] - summary["request_latency"]["p50"]) <= 0.05 * summary["request_latency"]["p50"],
                "%s: latency p50 from its records near its summary's" % name, (lat["p50"], summary["request_latency"]))
    out = h.path("peers-compare.html")
    rc = h.run([h.surge, "compare", surge_run, os.path.join(PEERS, "aiperf-run"), os.path.join(PEERS, "genai-perf-run"),
                "-o", out], timeout=60)
    h.check(rc.returncode == 0, "surge compare surge-run aiperf-run genai-perf-run", rc.stderr)
    r = browser.render(h, out)
    if browser.page_ok(h, r, "surge, AIPerf and GenAI-Perf compared", ("cdf-ttft", "cdf-latency")):
        h.check(len(r.cells(run=2, tag="time_to_first_token", stat="p99")) >= 1, "the third run's numbers shown")


def bad_input(h, run_dir, sweep_dir):
    def refused(args, what, out):
        sentinel = "an earlier page\n"
        with open(out, "w") as f:
            f.write(sentinel)
        rc = h.run([h.surge, "report"] + args + ["-o", out], timeout=60)
        lines = [l for l in rc.stderr.splitlines() if l.strip()]
        h.check(rc.returncode == 2, "%s: exit 2" % what, (rc.returncode, rc.stderr))
        h.check(len(lines) == 1 and lines[0].startswith("surge report: "), "%s: one line" % what, rc.stderr)
        with open(out) as f:
            h.check(f.read() == sentinel, "%s: the page at -o is left as it was" % what)
        left = [n for n in os.listdir(os.path.dirname(out)) if ".tmp." in n]
        h.check(left == [], "%s: no temporary file left" % what, left)
        return lines[0] if lines else ""

    out = h.path("bad.html")
    empty = h.path("empty")
    os.makedirs(empty)
    line = refused([empty], "not a run", out)
    h.check("not a run directory" in line and empty in line, "not a run: the line says so", line)

    cut = h.path("cut")
    shutil.copytree(run_dir, cut)
    rec = records_file(cut)
    with open(rec, "rb") as f:
        data = f.read()
    with open(rec, "wb") as f:
        f.write(data[: len(data) - 40])
    line = refused([cut], "a record file cut off", out)
    h.check("cut off" in line and os.path.basename(rec) in line, "cut off: the line names the file", line)

    mid = h.path("mid")
    shutil.copytree(run_dir, mid)
    rec = records_file(mid)
    with open(rec) as f:
        lines = f.readlines()
    lines[3] = lines[3][: len(lines[3]) // 2] + "\n"
    with open(rec, "w") as f:
        f.writelines(lines)
    line = refused([mid], "a record cut in the middle of the file", out)
    h.check("line 4" in line, "cut mid-file: the line names the record", line)

    line = refused([run_dir, sweep_dir], "runs of different kinds", out)
    h.check("one kind" in line, "different kinds: the line says so", line)

    rc = h.run([h.surge, "report"], timeout=30)
    h.check(rc.returncode == 2, "no directory: exit 2", rc.stderr)
    rc = h.run([h.surge, "compare", run_dir], timeout=30)
    h.check(rc.returncode == 2, "compare with one directory: exit 2", rc.stderr)


def main(h):
    if browser.chromium(h) is None:
        return
    # Two lanes: the search and the interrupted run beside the rest. Most of the test is runs waiting on their
    # mocks; no check here is a timing (the search's range ends far past the mock's capacity, whatever the CPU).
    def runs_and_pages():
        with h.mock("--ttft-ms", "15", "--itl-ms", "2", "--error-rate", "0.05", "--drop-rate", "0.03") as m:
            a = single_run(h, m)
        with h.mock("--ttft-ms", "25", "--itl-ms", "3") as m:
            sw = sweep(h, m)
            b = profiling.profile(h, m.url, "--endpoint-type", "chat", "--streaming", "--request-rate", "80",
                                  "--request-count", "150", "--output-tokens-mean", "12", check_rc=0)
        compare(h, a, b)
        peers(h, a.dir)
        bad_input(h, a.dir, sw.dir)

    harness.lanes([runs_and_pages], [lambda: search(h), lambda: interrupted(h)])


harness.main(main)
