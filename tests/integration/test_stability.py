"""Stability windows (--measurement-interval / -p, --stability-percentage / -s, --max-trials; perf_analyzer's):
a steady mock is judged stable after 3 or 4 windows, in a closed loop and in an open loop, and the point's figures
are exactly the pooled requests of the last three windows; a mock past its capacity, whose latency grows window by
window, is NOT STABLE after --max-trials windows (exit 6), reporting its last three; every point of a sweep runs
until it is stable; and the flags are refused where they cannot apply."""
# ctest: run-serial (a steady server must look steady: other tests taking the CPUs move the latencies from window
# to window, which is what the windows are there to notice)
# ctest: one-backend (the windows are counted above the I/O)
import json
import os

import harness
from profiling import SLOW, profile

# windows a steady mock takes to be judged stable: 3 or 4; under sanitizers the client's own CPU moves the
# latencies by tens of ms from window to window, so there any number up to --max-trials
STEADY_MAX = 10 if SLOW else 4


def stability(h, r):
    st = r.summary.get("stability") if r.summary else None
    h.check(isinstance(st, dict), "the summary has a stability object", r.summary and list(r.summary))
    return st or {}


def check_pooled(h, r, st, interval_ms, what):
    """The point's figures are the three reported windows' requests, pooled: their counts add up, the mean latency
    is their requests' mean, and every request of the JSONL outside them was intended after them."""
    wins = st["windows"]
    first, last = st["windows_reported"]
    h.check(last == st["windows_measured"] - 1 and last - first == 2, what + ": the last three windows reported",
            (st["windows_reported"], st["windows_measured"]))
    rep = wins[first:last + 1]
    n = sum(w["request_count"] for w in rep)
    h.check(r.summary["request_count"]["avg"] == n, what + ": request_count is the three windows' requests",
            (r.summary["request_count"]["avg"], [w["request_count"] for w in rep]))
    ok = sum(w["ok_count"] for w in rep)
    mean = sum(w["avg_request_latency"] * w["ok_count"] for w in rep) / ok
    got = r.summary["request_latency"]["avg"]
    h.check(abs(got - mean) <= 1e-6 * mean, what + ": request_latency avg is the windows' requests' mean",
            (got, mean))
    # the JSONL keeps every request; those outside the windows reported were intended after them (cancelled, or
    # finished after the windows were judged). Without a warmup the windows start at the start instant, which is
    # records_origin_ns before the JSONL's origin.
    off = r.summary["clock"]["records_origin_ns"]
    lo, hi = first * interval_ms * 1e6, (last + 1) * interval_ms * 1e6
    inside = [x for x in r.records if lo <= x["intended_ns"] + off < hi]
    later = [x for x in r.records if x["intended_ns"] + off >= hi]
    cut = [x for x in inside if x["status"] == "cancelled"]
    before = sum(w["request_count"] + w["cancelled_count"] for w in wins[:first])
    h.check(len(inside) - len(cut) == n and len(cut) == sum(w["cancelled_count"] for w in rep) and
            len(inside) + len(later) + before == len(r.records),
            what + ": the JSONL's requests in the windows, the rest after them",
            (len(inside), len(cut), n, len(later), len(r.records)))


def main(h):
    # 80 ms a request: a client's hiccup of a few ms is a few % of it
    with h.mock("--ttft-ms", 40, "--itl-ms", 10, "--output-tokens", 5) as m:
        # closed loop: 4 slots x 10 requests in each 800 ms window
        r = profile(h, m.url, "--concurrency", 4, "--measurement-interval", 800, "--stability-percentage", 25)
        st = stability(h, r)
        h.check(st.get("stable") is True, "closed loop: stable", st)
        h.check(3 <= st.get("windows_measured", 0) <= STEADY_MAX,
                "closed loop: stable after %s windows (at most %d)" % (st.get("windows_measured"), STEADY_MAX), st)
        h.check("stable after" in r.stderr and "NOT STABLE" not in r.stderr, "closed loop: said on stderr",
                r.stderr[-1500:])
        check_pooled(h, r, st, 800, "closed loop")
        h.check(r.summary["input_config"]["stability"] == {"measurement_interval_ms": 800, "stability_percentage": 25,
                                                           "max_trials": 10},
                "the configuration echoes the windows", r.summary["input_config"].get("stability"))

        # open loop at a constant 50 req/s: 40 requests a window; GenAI-Perf's short flags
        r = profile(h, m.url, "--request-rate", 50, "--request-distribution", "constant", "-p", 800, "-s", 25)
        st = stability(h, r)
        h.check(st.get("stable") is True and 3 <= st.get("windows_measured", 0) <= STEADY_MAX,
                "open loop: stable after %s windows (at most %d)" % (st.get("windows_measured"), STEADY_MAX), st)
        check_pooled(h, r, st, 800, "open loop")
        h.check(all(abs(w["request_count"] - 40) <= 1 for w in st["windows"]), "open loop: 40 requests a window",
                [w["request_count"] for w in st["windows"]])

        # a sweep: each point measured until stable, in its own sub-directory
        art = h.path("sweep")
        p = h.run([h.surge, "profile", "-m", "mock-model", "-u", m.url, "--artifact-dir", art, "--no-progress",
                   "--concurrency", "2,4", "--measurement-interval", "800", "--stability-percentage", "25",
                   "--parameter-sweep-cooldown-seconds", "0"],
                  timeout=120)
        h.check(p.returncode == 0, "sweep with stability windows exits 0", p.stderr[-2000:])
        h.check(p.stderr.count("stable after") == 2, "sweep: each point said stable", p.stderr[-2000:])
        for c in (2, 4):
            with open(os.path.join(art, "concurrency_%d" % c, "profile_export_surge.json")) as f:
                s = json.load(f)
            st = s.get("stability", {})
            first, last = st.get("windows_reported") or (0, -1)
            n = sum(w["request_count"] for w in st.get("windows", [])[first:last + 1])
            h.check(st.get("stable") is True and s["request_count"]["avg"] == n > 0,
                    "sweep point %d: stable, its figures the three windows'" % c, (st.get("windows_measured"), n))
        with open(os.path.join(art, "sweep_summary.json")) as f:
            rows = json.load(f)["points"]
        h.check(len(rows) == 2, "sweep: two rows", rows)

        # bad input, refused before anything is sent
        for args, flag in ((("--measurement-interval", 300, "--request-count", 10), "--measurement-interval"),
                           (("--measurement-interval", 300, "--benchmark-duration", 3), "--measurement-interval"),
                           (("--max-trials", 5), "--max-trials"),
                           (("--stability-percentage", 5), "--stability-percentage"),
                           (("--measurement-interval", 5), "--measurement-interval"),
                           (("--measurement-interval", 300, "--max-trials", 2), "--max-trials"),
                           (("--measurement-interval", 300, "--stability-percentage", 0), "--stability-percentage")):
            r = profile(h, m.url, *args, check_rc=2)
            h.check(r.stderr.startswith("surge: %s:" % flag), "refused: %s" % " ".join(map(str, args)), r.stderr)

    # 2 slots x 40 ms = 50 req/s of capacity at 100 req/s: the queue grows by 15 requests a window, each window's
    # latency by about 300 ms
    with h.mock("--ttft-ms", 20, "--itl-ms", 5, "--output-tokens", 5, "--max-batch", 2) as m:
        r = profile(h, m.url, "--request-rate", 100, "--request-distribution", "constant", "--measurement-interval",
                    300, "--max-trials", 4, check_rc=6)
        st = stability(h, r)
        lat = [w["avg_request_latency"] for w in st.get("windows", [])]
        h.check(st.get("stable") is False and st.get("windows_measured") == 4, "drift: not stable after 4 windows",
                st)
        h.check(len(lat) == 4 and all(a < b for a, b in zip(lat, lat[1:])), "drift: the latency grows window by window",
                lat)
        h.check(st.get("latency_spread_percent", 0) > 10, "drift: the last three's latencies differ by more than 10%",
                st.get("latency_spread_percent"))
        h.check("NOT STABLE after 4 windows" in r.stderr, "drift: said on stderr", r.stderr[-1500:])
        check_pooled(h, r, st, 300, "drift")


if __name__ == "__main__":
    harness.main(main)
