"""A sweep with a cancellation test (--request-cancellation-rate): each point's requests cut on purpose are counted
apart, as cancelled_by_test, in every place the sweep's rows go: the console table, sweep_summary.json and .csv,
and the report's sweep page; each row's count is the point's own summary's, and a point's ok, failed and cut
requests add up to its count."""
import csv
import json
import os
import shutil

import browser
import harness
from profiling import profile

N = 16


def main(h):
    # each answer takes 20 + 59 x 5 ms, far past the 50 ms delay: every chosen request is still streaming when cut
    with h.mock("--ttft-ms", 20, "--itl-ms", 5, "--output-tokens", 60) as m:
        r = profile(h, m.url, "--streaming", "--concurrency", "2,4", "--request-count", N,
                    "--request-cancellation-rate", 50, "--request-cancellation-delay", 0.05, "--random-seed", 5,
                    "--synthetic-input-tokens-mean", 10, "--parameter-sweep-cooldown-seconds", 0, timeout=90)
    with open(os.path.join(r.dir, "sweep_summary.json")) as f:
        s = json.load(f)
    pts = s["points"]
    h.check([p["concurrency"] for p in pts] == [2, 4], "one row per point", pts)
    for p in pts:
        with open(os.path.join(r.dir, p["artifact_subdir"], "profile_export_surge.json")) as f:
            own = json.load(f)
        cut = own.get("cancelled_by_test_request_count", {}).get("avg", 0)
        h.check(2 <= cut <= N - 2, "point %d: about half its requests cut by the test (%d)" % (p["concurrency"], cut))
        h.check(p.get("cancelled_by_test_count") == cut,
                "point %d: the row's cancelled_by_test_count is the point's summary's" % p["concurrency"],
                (p.get("cancelled_by_test_count"), cut))
        h.check(p["request_count"] + p["error_count"] + p["cancelled_count"] + p["cancelled_by_test_count"] == N
                and p["error_count"] == 0,
                "point %d: ok + failed + cancelled + cancelled_by_test is the request count" % p["concurrency"], p)
    with open(os.path.join(r.dir, "sweep_summary.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    h.check([int(x["Cancelled By Test Count"]) for x in rows] == [p["cancelled_by_test_count"] for p in pts],
            "CSV: Cancelled By Test Count per point, as the JSON", rows)
    # the console table: a cancelled_by_test column, each row's count in it
    lines = r.stdout.splitlines()
    head = [i for i, line in enumerate(lines) if "cancelled_by_test" in line.split()]
    h.check(len(head) == 1, "console: a cancelled_by_test column", r.stdout)
    if head:
        # no --slo, not interrupted: each row ends with its ok, failed, cancelled and cancelled_by_test cells
        got = [line.split()[-4:] for line in lines[head[0] + 1:head[0] + 1 + len(pts)]]
        want = [[str(p[k]) for k in ("request_count", "error_count", "cancelled_count", "cancelled_by_test_count")]
                for p in pts]
        h.check(got == want, "console: each row's ok, failed, cancelled and cancelled_by_test", (got, want))

    # the report's sweep page: a cancelled_by_test column with each row's count
    if shutil.which("chromium") or shutil.which("chromium-browser") or os.environ.get("CI"):
        rc = h.run([h.surge, "report", r.dir], timeout=60)
        page = os.path.join(r.dir, "report.html")
        h.check(rc.returncode == 0 and os.path.exists(page), "surge report writes the sweep's page", rc.stderr)
        rd = browser.render(h, page)
        if rd is not None:
            h.check(rd.console == [], "sweep page: no console messages", rd.console[:5])
            for k, p in enumerate(pts):
                cells = rd.cells(points=0, row=k, key="cancelled_by_test_count")
                h.check(len(cells) == 1 and float(cells[0][0]["data-value"]) == p["cancelled_by_test_count"],
                        "sweep page: point %d's cancelled_by_test is the JSON's" % k, (cells, p))
    else:
        print("chromium not installed: the sweep page is not checked")


if __name__ == "__main__":
    harness.main(main)
