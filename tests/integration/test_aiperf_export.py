# ctest: one-backend (file formats; the runs behind them are tested on both backends elsewhere)
"""AIPerf's files beside surge's: `aiperf plot` and llm-d-benchmark's AIPerf importer read a surge run unchanged.

Their parse paths are in aiperf_loader.py (standard library; each check cites the AIPerf or llm-d-benchmark source
it comes from). Here surge runs against the mock and its profile_export.jsonl / profile_export_aiperf.json must load
through them, carry the values of surge's own files (profile_export_surge.jsonl / .json), and a sweep's points must
be found as runs while the sweep directory itself is not. The peer fixtures in tests/data/peers/ load the same way.
"""
import json
import os
import time

import aiperf_loader as al
import harness
from profiling import profile

PEERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "peers")


def load(path):
    with open(path) as f:
        return json.load(f)


def surge_records(d):
    with open(os.path.join(d, "profile_export_surge.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def check_loads(h, d, what, streaming=True):
    """Both readers take the run; returns the plot loader's view. llm-d-benchmark's importer needs TTFT and ITL,
    which only a streamed run has (AIPerf's own non-streaming export has neither, so it fails there too)."""
    try:
        run = al.load_run(d)
    except al.LoaderError as e:
        h.check(False, what + ": aiperf plot's loader takes the run", str(e))
        return None
    try:
        al.llmd_import(os.path.join(d, al.AGGREGATE))
        h.check(streaming, what + ": llm-d-benchmark's importer takes a streamed run only")
    except al.LoaderError as e:
        h.check(not streaming and "time_to_first_token" in str(e), what + ": llm-d-benchmark's importer", str(e))
    h.check(al.find_runs(d) == [d], what + ": the directory is one run to aiperf plot")
    return run


def check_record(h, a, s, what):
    """One AIPerf line against surge's line for the same request."""
    m = a["metrics"]
    md = a["metadata"]
    h.check(md["session_num"] == s["id"] and md["worker_id"] == "worker_%d" % s["worker"], what + ": ids", (md, s))
    # request_start_ns is the intended start: AIPerf's latency identity holds, in ns, exactly
    h.check(md["request_end_ns"] - md["request_start_ns"] == s["end_ns"] - s["intended_ns"],
            what + ": request_end_ns - request_start_ns = surge's end - intended", (md, s))
    if s["status"] != "ok":
        h.check(a["error"] == {"code": s["http_status"], "type": s["error_class"], "message": s["error"]},
                what + ": error as AIPerf's ErrorDetails", (a["error"], s))
        h.check(m == {"error_isl": {"value": s["input_sequence_length"], "unit": "tokens"}},
                what + ": a failed request has only error_isl", m)
        return
    h.check(a["error"] is None, what + ": error null when ok")
    for tag, unit in al.UNITS.items():
        if tag in m:
            h.check(m[tag]["unit"] == unit, what + ": %s in %s" % (tag, unit), m[tag])
    h.check(m["request_latency"]["value"] == s["request_latency_ms"], what + ": request_latency", (m, s))
    h.check(m["input_sequence_length"]["value"] == s["input_sequence_length"], what + ": ISL")
    h.check(m["output_sequence_length"]["value"] == s["output_sequence_length"], what + ": OSL")
    h.check(m["schedule_lag"]["value"] == s["schedule_lag_ms"], what + ": schedule_lag")
    if s["first_token_ns"] is None:
        h.check("time_to_first_token" not in m and "inter_token_latency" not in m, what + ": no TTFT/ITL whole", m)
        return
    h.check(m["time_to_first_token"]["value"] == s["time_to_first_token_ms"], what + ": TTFT", (m, s))
    osl = s["output_sequence_length"]
    if osl >= 2:
        itl = (s["request_latency_ms"] - s["time_to_first_token_ms"]) / (osl - 1)
        h.near(m["inter_token_latency"]["value"], itl, 1e-5, what + ": ITL = (latency - TTFT) / (OSL - 1)")
        if itl > 1e-9:
            h.near(m.get("output_token_throughput_per_user", {}).get("value", -1), 1000 / itl, 1e-3 * 1000 / itl,
                   what + ": 1/ITL")
        else:  # every token in one read (a slowed client under TSan): no finite rate, so none is written
            h.check("output_token_throughput_per_user" not in m, what + ": no 1/ITL when all tokens came at once", m)
    times = s["token_times_ms"]
    gaps = [b - a for a, b in zip(times, times[1:])]
    got = m.get("inter_chunk_latency", {}).get("value", [])
    h.check(len(got) == len(gaps) and all(abs(x - y) <= 0.0021 for x, y in zip(got, gaps)),
            what + ": inter_chunk_latency = the gaps between surge's token times", (got[:5], gaps[:5]))


def check_records(h, d, what, t0_ns, t1_ns, streaming=True):
    run = check_loads(h, d, what, streaming)
    if run is None:
        return
    with open(os.path.join(d, al.JSONL)) as f:
        ours = [json.loads(line) for line in f if line.strip()]
    theirs = surge_records(d)
    h.check(len(ours) == len(theirs) > 0, what + ": one AIPerf line per surge line", (len(ours), len(theirs)))
    for a, s in zip(ours, theirs):
        check_record(h, a, s, what)
    base = ours[0]["metadata"]["request_start_ns"] - theirs[0]["intended_ns"]
    h.check(all(a["metadata"]["request_start_ns"] - s["intended_ns"] == base for a, s in zip(ours, theirs)),
            what + ": request_start_ns is surge's intended time on one wall clock")
    h.check(all(t0_ns <= a["metadata"]["request_start_ns"] <= a["metadata"]["request_end_ns"] <= t1_ns
                for a in ours), what + ": wall-clock times inside the run")
    h.check(all(a["metadata"]["benchmark_phase"] == "profiling" for a in ours), what + ": profiling phase")


def check_summary(h, d, what, model, concurrency):
    agg = load(os.path.join(d, al.AGGREGATE))
    ours = load(os.path.join(d, "profile_export_surge.json"))
    # every block AIPerf names, where surge measured it, with AIPerf's unit and surge's numbers
    for tag in ("request_latency", "request_throughput", "request_count", "input_sequence_length",
                "output_sequence_length", "output_token_throughput", "total_token_throughput", "benchmark_duration",
                "error_request_count", "time_to_first_token", "inter_token_latency", "time_to_second_token",
                "output_token_throughput_per_user", "inter_chunk_latency"):
        if tag not in ours:
            h.check(tag not in agg, what + ": no %s where surge has none" % tag)
            continue
        b = agg.get(tag, {})
        h.check(b.get("unit") == al.UNITS[tag], what + ": %s unit %s" % (tag, al.UNITS[tag]), b)
        h.check(set(b) <= al.BLOCK_FIELDS, what + ": %s has AIPerf's fields only" % tag, sorted(b))
        for k, v in b.items():
            if k in ours[tag]:
                h.check(v == ours[tag][k], what + ": %s.%s equals profile_export_surge.json's" % (tag, k),
                        (v, ours[tag][k]))
        if "count" in b:
            h.near(b["sum"], b["avg"] * b["count"], 1e-6 * abs(b["sum"]) + 1e-9, what + ": %s.sum" % tag)
    h.check(agg["total_isl"]["avg"] == sum(x["input_sequence_length"] for x in surge_records(d) if x["status"] == "ok"),
            what + ": total_isl")
    cfg = agg["input_config"]
    h.check(cfg["endpoint"]["model_names"] == [model] and cfg["loadgen"].get("concurrency") == concurrency,
            what + ": input_config in AIPerf's shape", cfg)
    h.check(cfg["surge"] == ours["input_config"], what + ": surge's own config kept under input_config.surge")
    err = sum(g["count"] for g in ours["error_summary"])
    h.check(sum(e["count"] for e in agg["error_summary"]) == err == ours["error_request_count"]["avg"],
            what + ": error_summary counts", agg["error_summary"])
    h.check(agg["start_time"].endswith("Z") and agg["start_time"] < agg["end_time"], what + ": UTC start/end",
            (agg["start_time"], agg["end_time"]))
    # the CSV has the JSON's numbers, to AIPerf's two decimals
    rows = al.read_csv(os.path.join(d, al.CSV))
    lat = rows.get("Request Latency (ms)", {})
    h.check(lat and abs(float(lat["p99"]) - agg["request_latency"]["p99"]) <= 0.005, what + ": CSV p99", lat)
    h.check(rows.get("Request Count", {}).get("Value") == str(agg["request_count"]["avg"]), what + ": CSV count")
    return agg


def main(h):
    with h.mock("--ttft-ms", 8, "--itl-ms", 2, "--error-rate", 0.2) as m:
        t0 = time.time_ns()
        r = profile(h, m.url, "--streaming", "--concurrency", 3, "--request-count", 30, "--output-tokens-mean", 6,
                    "--max-error-rate", 1)
        t1 = time.time_ns()
        check_records(h, r.dir, "streaming", t0, t1)
        agg = check_summary(h, r.dir, "streaming", "mock-model", 3)
        h.check(agg["error_request_count"]["avg"] > 0, "the mock's errors are there to check", agg["error_summary"])

        t0 = time.time_ns()
        r = profile(h, m.url, "--request-rate", 200, "--request-count", 12, "--max-error-rate", 1)
        check_records(h, r.dir, "whole responses, request rate", t0, time.time_ns(), streaming=False)
        agg = check_summary(h, r.dir, "whole responses", "mock-model", None)
        h.check(agg["input_config"]["loadgen"]["request_rate"] == 200, "request rate in loadgen", agg["input_config"])

        # a sweep: each point is a run to aiperf plot, the sweep directory holds none of its own
        r = profile(h, m.url, "--streaming", "--concurrency", "1,2", "--request-count", 8,
                    "--parameter-sweep-cooldown-seconds", 0, "--max-error-rate", 1)
        runs = al.find_runs(r.dir)
        h.check([os.path.basename(x) for x in runs] == ["concurrency_1", "concurrency_2"],
                "aiperf plot finds the sweep's two points", runs)
        for x in runs:
            run = al.load_run(x)
            h.check(run["metadata"]["concurrency"] == int(os.path.basename(x).split("_")[1]),
                    "the point's concurrency is what aiperf plot labels it by", run["metadata"])

    # the peer fixtures the report reader uses are AIPerf-loadable too
    d = os.path.join(PEERS, "aiperf-run")
    if os.path.isdir(d):
        run = check_loads(h, d, "tests/data/peers/aiperf-run")
        h.check(run is not None and len(run["requests"]) >= 20, "the AIPerf fixture's records load")


harness.main(main)
