#!/usr/bin/env python3
"""Writes the synthetic peer fixtures in this directory (see README.md): a 20-request streamed chat run at
concurrency 4 as AIPerf writes it (aiperf-run/) and as GenAI-Perf with perf_analyzer writes it (genai-perf-run/).
Deterministic: rerunning rewrites the same bytes. Standard library only."""
import datetime
import json
import os
import random
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = "Qwen/Qwen3-0.6B"
T0 = 1759813207532900363  # wall-clock ns, as both tools stamp requests
N, CONC, ISL = 20, 4, 550


def requests():
    """20 requests on 4 slots: start, first-byte, per-chunk times (ns) and tokens; request 13 fails with a 500."""
    rnd = random.Random(20251008)
    slot_free = [T0 + i * 1_000_000 for i in range(CONC)]
    out = []
    for i in range(N):
        s = min(range(CONC), key=lambda k: slot_free[k])
        start = slot_free[s] + rnd.randint(50_000, 400_000)
        if i == 13:
            end = start + rnd.randint(2_000_000, 4_000_000)
            out.append({"i": i, "start": start, "end": end, "error": True})
            slot_free[s] = end
            continue
        ack = start + rnd.randint(800_000, 1_500_000)
        t = ack + rnd.randint(20_000_000, 60_000_000)  # first token
        osl = rnd.randint(24, 40)
        chunks = [t]
        for _ in range(osl - 1):
            t += rnd.randint(4_000_000, 7_000_000)
            chunks.append(t)
        end = t + rnd.randint(100_000, 300_000)
        out.append({"i": i, "start": start, "ack": ack, "chunks": chunks, "end": end, "osl": osl, "error": False})
        slot_free[s] = end
    return out


def pct(xs, p):
    """numpy.percentile's default (linear between closest ranks), as both tools use."""
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100
    f = int(k)
    return xs[f] + (xs[min(f + 1, len(xs) - 1)] - xs[f]) * (k - f)


def dist(xs, unit, order, count=True):
    """A distribution block with the keys in the tool's order (order names them)."""
    mean = sum(xs) / len(xs)
    std = (sum((x - mean) ** 2 for x in xs) / len(xs)) ** 0.5
    vals = {"unit": unit, "avg": mean, "min": min(xs), "max": max(xs), "std": std}
    for p in (1, 5, 10, 25, 50, 75, 90, 95, 99):
        vals["p%d" % p] = pct(xs, p)
    if count:
        vals["count"] = len(xs)
        vals["sum"] = sum(xs)
    return {k: vals[k] for k in order if k in vals}


AIPERF_ORDER = ["unit", "avg", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "min", "max", "std",
                "count", "sum"]
GENAI_ORDER = ["unit", "avg", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "min", "max", "std"]


def iso(ns):
    return datetime.datetime.fromtimestamp(ns / 1e9, datetime.timezone.utc).replace(tzinfo=None).isoformat()


def ids(rnd, n):
    return [str(uuid.UUID(int=rnd.getrandbits(128), version=4)) for _ in range(n)]


def aiperf(reqs):
    d = os.path.join(HERE, "aiperf-run")
    os.makedirs(d, exist_ok=True)
    rnd = random.Random(7)
    lines, ok = [], [r for r in reqs if not r["error"]]
    for r in reqs:
        x_req, x_corr, conv = ids(rnd, 3)
        meta = {"session_num": r["i"], "x_request_id": x_req, "x_correlation_id": x_corr, "conversation_id": conv,
                "turn_index": 0, "request_start_ns": r["start"], "request_ack_ns": r.get("ack"),
                "request_end_ns": r["end"], "worker_id": "worker_%08x" % (0x359d423a + r["i"] % 2),
                "record_processor_id": "record_processor_1fa47cd7", "benchmark_phase": "profiling",
                "was_cancelled": False, "cancellation_time_ns": None}
        if r["error"]:
            lines.append({"metadata": meta, "metrics": {"error_isl": {"value": ISL, "unit": "tokens"}},
                          "error": {"code": 500, "type": "InferenceServerError",
                                    "message": "Internal Server Error"}})
            continue
        c, ms = r["chunks"], 1e6
        ttft, lat = (c[0] - r["start"]) / ms, (r["end"] - r["start"]) / ms
        itl = (lat - ttft) / (r["osl"] - 1)
        m = {"input_sequence_length": {"value": ISL, "unit": "tokens"},
             "time_to_first_token": {"value": ttft, "unit": "ms"},
             "request_latency": {"value": lat, "unit": "ms"},
             "output_token_count": {"value": r["osl"], "unit": "tokens"},
             "time_to_second_token": {"value": (c[1] - c[0]) / ms, "unit": "ms"},
             "inter_chunk_latency": {"value": [(b - a) / ms for a, b in zip(c, c[1:])], "unit": "ms"},
             "output_sequence_length": {"value": r["osl"], "unit": "tokens"},
             "inter_token_latency": {"value": itl, "unit": "ms"},
             "output_token_throughput_per_user": {"value": 1000 / itl, "unit": "tokens/sec/user"}}
        r["aiperf"] = m
        lines.append({"metadata": meta, "metrics": m, "error": None})
    with open(os.path.join(d, "profile_export.jsonl"), "w") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")
    col = lambda tag: [r["aiperf"][tag]["value"] for r in ok]
    start, end = min(r["start"] for r in reqs), max(r["end"] for r in reqs)
    dur = (end - start) / 1e9
    osl_total = sum(col("output_sequence_length"))
    agg = {"schema_version": "1.1", "aiperf_version": "0.3.0", "benchmark_id": "4f0c6a1e9b2d",
           "request_throughput": {"unit": "requests/sec", "avg": len(ok) / dur},
           "request_latency": dist(col("request_latency"), "ms", AIPERF_ORDER),
           "request_count": {"unit": "requests", "avg": float(len(ok))},
           "time_to_first_token": dist(col("time_to_first_token"), "ms", AIPERF_ORDER),
           "time_to_second_token": dist(col("time_to_second_token"), "ms", AIPERF_ORDER),
           "inter_token_latency": dist(col("inter_token_latency"), "ms", AIPERF_ORDER),
           "output_token_throughput": {"unit": "tokens/sec", "avg": osl_total / dur},
           "output_token_throughput_per_user": dist(col("output_token_throughput_per_user"), "tokens/sec/user",
                                                    AIPERF_ORDER),
           "output_sequence_length": dist(col("output_sequence_length"), "tokens", AIPERF_ORDER),
           "input_sequence_length": dist(col("input_sequence_length"), "tokens", AIPERF_ORDER),
           "output_token_count": dist(col("output_token_count"), "tokens", AIPERF_ORDER),
           "min_request_timestamp": {"unit": "ns", "avg": float(start)},
           "max_response_timestamp": {"unit": "ns", "avg": float(end)},
           "inter_chunk_latency": dist([g for r in ok for g in r["aiperf"]["inter_chunk_latency"]["value"]], "ms",
                                       AIPERF_ORDER),
           "total_output_tokens": {"unit": "tokens", "avg": float(osl_total)},
           "benchmark_duration": {"unit": "sec", "avg": dur},
           "total_isl": {"unit": "tokens", "avg": float(ISL * len(ok))},
           "total_osl": {"unit": "tokens", "avg": float(osl_total)},
           "error_request_count": {"unit": "requests", "avg": 1.0},
           "error_isl": dist([ISL], "tokens", AIPERF_ORDER),
           "total_error_isl": {"unit": "tokens", "avg": float(ISL)},
           "total_token_throughput": {"unit": "tokens/sec", "avg": (osl_total + ISL * len(ok)) / dur},
           "input_config": {"endpoint": {"model_names": [MODEL], "type": "chat", "streaming": True,
                                         "url": "localhost:8000"},
                            "loadgen": {"concurrency": CONC, "request_count": N},
                            "input": {"prompt": {"input_tokens": {"mean": ISL}}},
                            "output": {"artifact_directory": "artifacts/Qwen_Qwen3-0.6B-openai-chat-concurrency4"},
                            "cli_command": "aiperf profile --model Qwen/Qwen3-0.6B --url localhost:8000 "
                                           "--endpoint-type chat --streaming --concurrency 4 --request-count 20 "
                                           "--synthetic-input-tokens-mean 550"},
           "was_cancelled": False,
           "error_summary": [{"error_details": {"code": 500, "type": "InferenceServerError",
                                                "message": "Internal Server Error"}, "count": 1}],
           # AIPerf 0.x: datetime.fromtimestamp, naive; here UTC so the bytes do not depend on the machine
           "start_time": iso(start), "end_time": iso(end)}
    with open(os.path.join(d, "profile_export_aiperf.json"), "w") as f:
        json.dump(agg, f, indent=2)
        f.write("\n")


def genai_perf(reqs):
    """GenAI-Perf 0.0.x: perf_analyzer's profile_export.json (experiments[].requests[]) and genai-perf's summary,
    profile_export_genai_perf.json. perf_analyzer records failed requests with no response; GenAI-Perf drops
    requests without a response, so request 13 is left out of both, as a run of theirs would."""
    d = os.path.join(HERE, "genai-perf-run")
    os.makedirs(d, exist_ok=True)
    ok = [r for r in reqs if not r["error"]]
    pa_reqs = []
    for r in ok:
        payload = {"messages": [{"role": "user", "content": "synthetic prompt %d" % r["i"]}], "model": MODEL,
                   "stream": True, "max_tokens": r["osl"]}
        outs = []
        for k in range(len(r["chunks"])):
            chunk = {"id": "chatcmpl-%d" % r["i"], "object": "chat.completion.chunk", "created": 1759813207,
                     "model": MODEL, "choices": [{"index": 0, "delta": {"content": " tok"},
                                                  "finish_reason": None}]}
            outs.append({"response": "data: " + json.dumps(chunk) + "\n\n"})
        outs.append({"response": "data: [DONE]\n\n"})
        pa_reqs.append({"timestamp": r["start"], "request_inputs": {"payload": json.dumps(payload)},
                        "response_timestamps": r["chunks"] + [r["end"]], "response_outputs": outs})
    start, end = min(r["start"] for r in ok), max(r["end"] for r in ok)
    pa = {"experiments": [{"experiment": {"mode": "concurrency", "value": CONC}, "requests": pa_reqs,
                           "window_boundaries": [start, start + (end - start) // 2, end]}],
          "version": "2.41.0", "service_kind": "openai", "endpoint": "v1/chat/completions"}
    with open(os.path.join(d, "profile_export.json"), "w") as f:
        json.dump(pa, f, indent=2)
        f.write("\n")
    # GenAI-Perf's view: [DONE] is an empty response and removed, so the last content chunk ends the request
    lat = [(r["chunks"][-1] - r["start"]) for r in ok]
    ttft = [(r["chunks"][0] - r["start"]) for r in ok]
    ttst = [(r["chunks"][1] - r["chunks"][0]) for r in ok]
    itl = [round((l - t) / (r["osl"] - 1)) for l, t, r in zip(lat, ttft, ok)]
    osl = [r["osl"] for r in ok]
    dur = (max(r["chunks"][-1] for r in ok) - start) / 1e9
    ms = lambda xs: [x / 1e6 for x in xs]
    stats = {"request_throughput": {"unit": "requests/sec", "avg": len(ok) / dur},
             "request_latency": dist(ms(lat), "ms", GENAI_ORDER, count=False),
             "time_to_first_token": dist(ms(ttft), "ms", GENAI_ORDER, count=False),
             "time_to_second_token": dist(ms(ttst), "ms", GENAI_ORDER, count=False),
             "inter_token_latency": dist(ms(itl), "ms", GENAI_ORDER, count=False),
             "output_token_throughput": {"unit": "tokens/sec", "avg": sum(osl) / dur},
             "output_token_throughput_per_user": dist([o / (l / 1e9) for o, l in zip(osl, lat)], "tokens/sec",
                                                      GENAI_ORDER, count=False),
             "output_sequence_length": dist(osl, "tokens", GENAI_ORDER, count=False),
             "input_sequence_length": dist([ISL] * len(ok), "tokens", GENAI_ORDER, count=False)}
    stats["input_config"] = {
        "model": [MODEL], "formatted_model_name": "Qwen_Qwen3-0.6B", "model_selection_strategy": "round_robin",
        "backend": "tensorrtllm", "endpoint": "v1/chat/completions", "endpoint_type": "chat",
        "service_kind": "openai", "streaming": True, "u": "localhost:8000", "concurrency": CONC,
        "request_rate": None, "measurement_interval": 10000, "request_count": N, "warmup_request_count": 0,
        "num_prompts": 100, "synthetic_input_tokens_mean": ISL, "synthetic_input_tokens_stddev": 0,
        "output_tokens_mean": -1, "output_tokens_stddev": 0, "output_tokens_mean_deterministic": False,
        "random_seed": 0, "tokenizer": "Qwen/Qwen3-0.6B", "subcommand": "profile", "verbose": False,
        "artifact_dir": "artifacts/Qwen_Qwen3-0.6B-openai-chat-concurrency4",
        "profile_export_file": "artifacts/Qwen_Qwen3-0.6B-openai-chat-concurrency4/profile_export.json",
        "generate_plots": False, "extra_inputs": {}}
    with open(os.path.join(d, "profile_export_genai_perf.json"), "w") as f:
        json.dump(stats, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    rs = requests()
    aiperf(rs)
    genai_perf(rs)
