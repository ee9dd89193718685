# ctest: epoll-asan (run on epoll under ASan too: tests/CMakeLists.txt)
# ctest: run-serial (a quiet run must show no stall: another test's processes on the same cores could make one)
"""A client that falls behind says so (--stall-threshold-ms).

1. A quiet open-loop run against the mock: no stall line on stderr, and the summary's client_stalls has none.
2. The same run with the client process stopped (SIGSTOP) for 300 ms and continued (SIGCONT) while it runs: stderr
   says at once that worker 0 fell behind (or that its loop has not run) and that it caught up; the summary has one
   window whose lateness and length are the stop's, whose bounds hold every request sent late by more than the
   threshold and no request sent on time, and the console lists it.
3. --stall-threshold-ms 0 turns the watch off: no line, no client_stalls; bad values exit 2 before anything is sent.
4. Only the worker thread stopped (ptrace; skipped with a note where ptrace is not allowed), in a closed loop: the
   controller says at once that the worker's loop has not run, and the window is in the summary.
The report of run 2 (surge report) shades and lists the window.
"""
import ctypes
import json
import os
import re
import shutil
import signal
import subprocess
import time

import harness
from profiling import Result, profile, tol

RATE, N = 200, 500  # constant arrivals 5 ms apart, 2.5 s
LOAD = ["--streaming", "--request-rate", RATE, "--request-distribution", "constant", "--request-count", N,
        "--output-tokens-mean", 4, "--workers", 1]
STALL_LINE = re.compile(r"^surge: worker 0 (is (\d+) ms behind its schedule since \+([0-9.]+) s|has not run its loop "
                        r"for (\d+) ms, since \+([0-9.]+) s|fell (\d+) ms behind its schedule at \+([0-9.]+) s)", re.M)
CAUGHT_LINE = re.compile(r"^surge: worker 0 (caught up at \+([0-9.]+) s|fell \d+ ms behind its schedule at \+[0-9.]+ s "
                         r"and caught up at \+([0-9.]+) s)", re.M)


def stopped_run(h, url, extra=(), stop_s=0.3, at_s=1.0):
    """surge profile stopped for stop_s at about at_s into the run; (Result, the stop's measured length in s)."""
    art = h.path("stopped%d" % len(extra))
    cmd = [h.surge, "profile", "-m", "mock-model", "-u", url, "--artifact-dir", art, "--no-progress"] + \
        [str(a) for a in LOAD] + [str(a) for a in extra]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(at_s)
        t0 = time.monotonic()
        os.kill(p.pid, signal.SIGSTOP)
        time.sleep(stop_s)
        os.kill(p.pid, signal.SIGCONT)
        stopped = time.monotonic() - t0
        out, err = p.communicate(timeout=60)
    except BaseException:
        p.kill()
        p.wait()
        raise
    proc = subprocess.CompletedProcess(cmd, p.returncode, out, err)
    r = Result(proc, art)
    h.check(r.rc == 0, "stopped run exits 0", (r.rc, r.stderr[-3000:]))
    h.check("Sanitizer" not in r.stderr and "runtime error:" not in r.stderr, "no sanitizer report", r.stderr[-3000:])
    return r, stopped


def check_report(h, r, w):
    """surge report on the stopped run: the page's data has the window on the timeline's clock with the requests
    due in it, and (with Chromium) the page shades it on the four timeline charts and lists it."""
    p = h.run([h.surge, "report", r.dir], timeout=60)
    page = os.path.join(r.dir, "report.html")
    if not h.check(p.returncode == 0 and os.path.exists(page), "report: written", p.stderr[-2000:]):
        return
    with open(page) as f:
        text = f.read()
    m = re.search(r'<script id="surge-data" type="application/json">(.*?)</script>', text, re.S)
    data = json.loads(m.group(1)) if m else {}
    runs = data.get("runs") or [{}]
    st = runs[0].get("stalls")
    if not h.check(st and st.get("count") == len(r.summary["client_stalls"]["windows"]) and st.get("windows"),
                   "report: the page's data has the client stalls", st):
        return
    pw = max(st["windows"], key=lambda x: x["max_lag_ms"])
    origin = r.summary["clock"]["records_origin_ns"]
    h.near_page(pw["start"], w["start_s"] - origin / 1e9, "report: window start on the records' clock (s)")
    h.near_page(pw["end"], w["end_s"] - origin / 1e9, "report: window end on the records' clock (s)")
    due = sum(1 for x in r.records if pw["start"] <= x["intended_ns"] / 1e9 <= pw["end"])
    h.check(pw["requests"] == due and due > 0, "report: %d requests due in the window (%d in the records)"
            % (pw["requests"], due))
    if not shutil.which("chromium") and not shutil.which("chromium-browser"):
        return
    import browser
    rendered = browser.render(h, page)
    if rendered is None:
        return
    browser.page_ok(h, rendered, "report")
    charts = rendered.charts()
    for cid in ("timeline-requests", "timeline-inflight", "timeline-rates", "timeline-lag"):
        h.check(charts.get(cid, {}).get("bands") == len(st["windows"]), "report: %s shades the stall window" % cid,
                charts.get(cid))
    h.check(charts.get("cdf-ttft", {}).get("bands") == 0, "report: a distribution chart has no band")
    cells = {a["data-field"]: float(a["data-value"]) for a, _ in rendered.cells(stall=st["windows"].index(pw))}
    h.check(cells.get("requests") == due and abs(cells.get("max_lag_ms", 0) - w["max_lag_ms"]) < 1e-3,
            "report: the page lists the window", cells)


def stop_thread(pid, stop_s):
    """Stop one worker thread of pid (not the controller) for stop_s with ptrace; its measured length in s, or None
    (with the reason) when ptrace is not allowed here."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    libc.ptrace.restype = ctypes.c_long
    libc.waitpid.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.c_int]
    tasks = []
    for t in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/comm" % (pid, t)) as f:
            if f.read().strip() == "surge-w0":  # the worker thread's name (not the controller's, io_uring's, tsan's)
                tasks.append(int(t))
    if len(tasks) != 1:
        return None, "expected one worker thread, found %r" % tasks
    tid = tasks[0]
    if libc.ptrace(0x4206, tid, None, None) != 0:  # PTRACE_SEIZE
        return None, "PTRACE_SEIZE: %s" % os.strerror(ctypes.get_errno())
    t0 = time.monotonic()
    try:
        libc.ptrace(0x4207, tid, None, None)  # PTRACE_INTERRUPT
        st = ctypes.c_int()
        libc.waitpid(tid, ctypes.byref(st), 0x40000000)  # __WALL
        time.sleep(stop_s)
    finally:
        libc.ptrace(17, tid, None, None)  # PTRACE_DETACH
    return time.monotonic() - t0, None


def frozen_worker(h, url):
    art = h.path("frozen")
    cmd = [h.surge, "profile", "-m", "mock-model", "-u", url, "--artifact-dir", art, "--no-progress", "--streaming",
           "--concurrency", 4, "--request-count", 400, "--output-tokens-mean", 20, "--workers", 1]
    p = subprocess.Popen([str(a) for a in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1.0)
        stopped, why = stop_thread(p.pid, 0.3)
        out, err = p.communicate(timeout=60)
    except BaseException:
        p.kill()
        p.wait()
        raise
    if stopped is None:
        print("note: the frozen-worker part did not run (%s)" % why, flush=True)
        return
    r = Result(subprocess.CompletedProcess(cmd, p.returncode, out, err), art)
    h.check(r.rc == 0 and r.summary is not None, "frozen: exits 0 with a summary", (r.rc, r.stderr[-2000:]))
    h.check("Sanitizer" not in r.stderr and "runtime error:" not in r.stderr, "frozen: no sanitizer report",
            r.stderr[-3000:])
    if not r.summary:
        return
    stop_ms = stopped * 1e3
    frozen = re.search(r"^surge: worker 0 has not run its loop for (\d+) ms, since \+([0-9.]+) s", r.stderr, re.M)
    h.check(frozen is not None, "frozen: stderr says worker 0 has not run its loop (the controller saw it)",
            r.stderr[-2000:])
    h.check(CAUGHT_LINE.search(r.stderr) is not None, "frozen: stderr says worker 0 caught up", r.stderr[-2000:])
    cs = r.summary["client_stalls"]
    if not h.check(cs["count"] >= 1, "frozen: the summary lists the window", cs):
        return
    w = max(cs["windows"], key=lambda x: x["max_lag_ms"])
    # the loop was due at most half the threshold after the stop began (its wake-ups while nothing else is due)
    lo, hi = stop_ms - 50 - 10, stop_ms + tol(60)
    h.check(lo <= w["max_lag_ms"] <= hi, "frozen: window max lag %.1f ms within [%.1f, %.1f] (the stop: %.1f ms)"
            % (w["max_lag_ms"], lo, hi, stop_ms))
    if frozen:
        h.check(int(frozen.group(1)) >= 100, "frozen: said once it passed the threshold (%s ms)" % frozen.group(1))
        h.near(float(frozen.group(2)), w["start_s"], 0.0011, "frozen: the line's start (s) is the window's")


def main(h):
    with h.mock("--ttft-ms", 2, "--itl-ms", 1) as m:
        # 1. quiet
        r = profile(h, m.url, *LOAD, timeout=60)
        s = r.summary
        if h.check(s is not None and "client_stalls" in s, "quiet: the summary has client_stalls", r.stderr[-2000:]):
            cs = s["client_stalls"]
            h.check(cs["threshold_ms"] == 100 and cs["count"] == 0 and cs["windows"] == [],
                    "quiet: no client stall at the default 100 ms threshold", cs)
        h.check(not STALL_LINE.search(r.stderr) and "behind its schedule" not in r.stderr,
                "quiet: no stall line on stderr", r.stderr[-2000:])
        h.check("Client stalls" not in r.stdout, "quiet: no Client stalls in the console", r.stdout[-1500:])

        # 2. stopped for 300 ms
        r, stopped = stopped_run(h, m.url)
        s = r.summary
        if not h.check(s is not None and "client_stalls" in s, "stopped: the summary has client_stalls",
                       r.stderr[-2000:]):
            return
        stop_ms = stopped * 1e3
        said = STALL_LINE.search(r.stderr)
        caught = CAUGHT_LINE.search(r.stderr)
        h.check(said is not None, "stopped: stderr says worker 0 fell behind", r.stderr[-2000:])
        h.check(caught is not None, "stopped: stderr says worker 0 caught up", r.stderr[-2000:])
        cs = s["client_stalls"]
        if not h.check(cs["count"] >= 1 and len(cs["windows"]) == cs["count"],
                       "stopped: the summary lists the stall window", cs):
            return
        h.check(cs["count"] <= 2, "stopped: one stall (two at most on a busy host), not a stream of them", cs)
        w = max(cs["windows"], key=lambda x: x["max_lag_ms"])
        lo, hi = 0.8 * stop_ms - 10, stop_ms + tol(60)
        h.check(lo <= w["max_lag_ms"] <= hi, "stopped: window max lag %.1f ms within [%.1f, %.1f] (the stop: %.1f ms)"
                % (w["max_lag_ms"], lo, hi, stop_ms))
        h.check(lo <= w["duration_ms"] <= hi + tol(60), "stopped: window length %.1f ms within [%.1f, %.1f]"
                % (w["duration_ms"], lo, hi + tol(60)))
        h.check(w["worker"] == 0 and 0.3 < w["start_s"] < 2.5, "stopped: worker 0, window inside the run", w)
        h.check(abs(w["end_s"] - w["start_s"] - w["duration_ms"] / 1e3) < 1e-6, "stopped: duration = end - start", w)
        h.near(cs["max_lag_ms"], w["max_lag_ms"], 1e-6, "stopped: client_stalls.max_lag_ms is the window's")
        # the same stall read from two clocks (late sends, the loop's lateness): 4-11 ms apart over 8 release runs
        h.near(s["schedule_lag"]["max"], w["max_lag_ms"], tol(30), "stopped: schedule lag max (ms) vs the window's")
        if said:
            since = float(said.group(3) or said.group(5) or said.group(7))
            h.near(since, w["start_s"], 0.0011, "stopped: the stderr line's start (s) is the summary's")
        # the window holds the late requests: every request sent more than the threshold late was due inside it,
        # and every request due well inside it went out after it
        origin = s["clock"]["records_origin_ns"]
        recs = [(x["intended_ns"] + origin) / 1e9 for x in r.records if x["schedule_lag_ms"] > 100]
        h.check(recs and all(w["start_s"] - 1e-4 <= t <= w["end_s"] for t in recs),
                "stopped: the %d requests sent > 100 ms late were due inside [%.4f, %.4f] s"
                % (len(recs), w["start_s"], w["end_s"]), (min(recs), max(recs)) if recs else None)
        inside = [x for x in r.records if w["start_s"] + 0.01 < (x["intended_ns"] + origin) / 1e9 < w["end_s"] - 0.01]
        h.check(len(inside) >= 0.8 * stop_ms / 5 - 5 and
                all((x["sent_ns"] + origin) / 1e9 >= w["end_s"] - 0.005 for x in inside),
                "stopped: the %d requests due inside the window went out at its end" % len(inside))
        m_cons = re.search(r"^Client stalls: (\d+) windows? in which a worker ran more than 100 ms behind", r.stdout,
                           re.M)
        h.check(m_cons is not None and int(m_cons.group(1)) == cs["count"], "stopped: the console says Client stalls",
                r.stdout[-1500:])
        h.check(("worker 0: from +%.3f s to +%.3f s" % (w["start_s"], w["end_s"])) in r.stdout,
                "stopped: the console lists the window", r.stdout[-1500:])
        due = sum(1 for x in r.records if w["start_s"] <= (x["intended_ns"] + origin) / 1e9 <= w["end_s"])
        h.check(abs(w["requests_due"] - due) <= 2 and due > 0, "stopped: requests_due %d vs %d requests due in the "
                "window by the records (2 may straddle its end)" % (w["requests_due"], due))

        check_report(h, r, w)

        # 4. only the worker thread stopped (ptrace), in a closed loop with nothing due but the watch's own wake-ups:
        # the controller, still running, says the loop has not run
        frozen_worker(h, m.url)

        # 3. the watch off, and bad values
        r, _ = stopped_run(h, m.url, ["--stall-threshold-ms", 0])
        if h.check(r.summary is not None, "off: summary written", r.stderr[-2000:]):
            h.check("client_stalls" not in r.summary, "off: no client_stalls in the summary")
            h.check(r.summary["schedule_lag"]["max"] > 100, "off: the stop still shows in schedule lag",
                    r.summary["schedule_lag"])
        h.check(not STALL_LINE.search(r.stderr) and "behind its schedule" not in r.stderr, "off: no stall line",
                r.stderr[-2000:])
        for bad in ("0.5", "-1", "x", "4000000"):
            p = h.run([h.surge, "profile", "-m", "x", "-u", m.url, "--stall-threshold-ms", bad,
                       "--artifact-dir", h.path("bad")], timeout=30)
            h.check(p.returncode == 2 and "--stall-threshold-ms" in p.stderr and not os.path.exists(h.path("bad")),
                    "--stall-threshold-ms %s: exit 2 naming the flag, nothing written" % bad, (p.returncode, p.stderr))


harness.main(main)
