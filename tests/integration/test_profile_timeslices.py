"""--slice-duration (AIPerf's time slices): per-window metrics in <stem>_surge_timeslices.json and .csv, each
request in the window of its intended start. At a constant 50 req/s for 3 s, 1 s windows hold 50 requests each;
against a mock past its capacity (--max-batch) the backlog grows, and each window's TTFT is above the last one's,
which one run-wide table cannot show; a server stall shows in the windows whose requests it caught, and only
there. A bad value is refused before anything is sent."""
import csv
import json
import os

import harness
from profiling import profile


def main(h):
    with h.mock("--ttft-ms", 10, "--itl-ms", 1, "--output-tokens", 8) as m:
        r = profile(h, m.url, "--streaming", "--request-rate", 50, "--request-distribution", "constant",
                    "--benchmark-duration", 3, "--slice-duration", 1)
        with open(os.path.join(r.dir, "profile_export_surge_timeslices.json")) as f:
            doc = json.load(f)
        sl = doc["timeslices"]
        h.check(doc["slice_duration"] == 1 and [s["timeslice_index"] for s in sl] == [0, 1, 2], "three 1 s windows",
                [(s["timeslice_index"], s["request_count"]) for s in sl])
        h.check(all(s["request_count"]["avg"] == 50 for s in sl), "50 requests in each window",
                [s["request_count"]["avg"] for s in sl])
        h.check(all(s["slice_request_throughput"]["avg"] == 50 for s in sl), "50 requests per second of each window",
                [s["slice_request_throughput"] for s in sl])
        h.check(sum(s["request_count"]["avg"] for s in sl) == r.summary["request_count"]["avg"],
                "the windows add up to the run")
        h.check(doc["input_config"]["slice_duration"] == 1, "the run's input_config at the top, as AIPerf's")
        with open(os.path.join(r.dir, "profile_export_surge_timeslices.csv"), newline="") as f:
            rows = list(csv.DictReader(f))
        h.check(list(rows[0])[:5] == ["Timeslice", "Metric", "Unit", "Stat", "Value"], "CSV: AIPerf's tidy columns",
                list(rows[0]))
        ttft = {(row["Timeslice"], row["Stat"]): float(row["Value"]) for row in rows
                if row["Metric"] == "Time To First Token"}
        h.check(sorted({k[0] for k in ttft}) == ["0", "1", "2"] and all(abs(ttft[(w, "p50")] - 10) < 5
                                                                      for w in "012"),
                "CSV: each window's TTFT is the mock's", ttft)
        h.check(all(ttft[(str(i), "avg")] == s["time_to_first_token"]["avg"] for i, s in enumerate(sl)),
                "CSV and JSON agree")

    # a 300 ms server stall, 1.2 s after the first request (so surge's start-up cannot move it across a window's
    # boundary): the windows holding the requests it caught (one, or two when the preflight came well before the
    # run) have a high TTFT, the others the mock's; each window holds exactly the JSONL's requests intended in it
    with h.mock("--ttft-ms", 10, "--itl-ms", 1, "--output-tokens", 4, "--fault-origin", "request", "--stall-start-ms",
                1200, "--stall-ms", 300) as m:
        r = profile(h, m.url, "--streaming", "--request-rate", 20, "--request-distribution", "constant",
                    "--benchmark-duration", 3, "--slice-duration", 1)
        with open(os.path.join(r.dir, "profile_export_surge_timeslices.json")) as f:
            sl = json.load(f)["timeslices"]
        by_window = {}
        for x in r.records:  # intended_ns is from the first intended start, as the windows are
            by_window.setdefault(int(x["intended_ns"] // 1e9), []).append(x)
        h.check([s["request_count"]["avg"] for s in sl] == [len(by_window.get(i, [])) for i in range(len(sl))],
                "each window holds the requests intended in it", [s["request_count"]["avg"] for s in sl])
        stalled = sorted({w for w, xs in by_window.items() if any(x["time_to_first_token_ms"] > 100 for x in xs)})
        h.check(1 <= len(stalled) <= 2 and len(stalled) < len(sl), "the stall caught one or two windows", stalled)
        h.check(all((s["time_to_first_token"]["max"] > 150) == (i in stalled) for i, s in enumerate(sl)),
                "only the stalled windows show it in TTFT", [s["time_to_first_token"]["max"] for s in sl])

    # 2 slots x 20 ms: 100 req/s; at 150 req/s the queue grows, and so does each window's TTFT
    with h.mock("--ttft-ms", 10, "--itl-ms", 1, "--output-tokens", 11, "--max-batch", 2) as m:
        r = profile(h, m.url, "--streaming", "--request-rate", 150, "--request-distribution", "constant",
                    "--benchmark-duration", 3, "--slice-duration", 1, timeout=120)
        with open(os.path.join(r.dir, "profile_export_surge_timeslices.json")) as f:
            sl = json.load(f)["timeslices"]
        p50 = [s["time_to_first_token"]["p50"] for s in sl]
        h.check(len(p50) == 3 and p50[0] + 100 < p50[1] and p50[1] + 100 < p50[2],
                "a growing backlog shows window by window", p50)

        for bad in ("0", "-1", "abc", "1s", "nan"):
            r = profile(h, m.url, "--slice-duration", bad, check_rc=2)
            h.check(r.stderr.startswith("surge: --slice-duration:"), "--slice-duration %s refused" % bad, r.stderr)


if __name__ == "__main__":
    harness.main(main)
