"""The peers' flags as their users type them, against surge mock: AIPerf's --isl/--osl/--num-requests, vLLM's
--request-rate inf and --ignore-eos, and no prefix of a flag taken for another one (getopt_long's abbreviations
made `--isl 128` mean --isl-block-size and `--stream` --streaming, silently)."""
import json
import os

import harness
from profiling import profile


def inputs_bodies(r):
    with open(os.path.join(r.dir, "inputs.json")) as f:
        return [e["payload"][0] for e in json.load(f)["data"]]


def main(h):
    with h.mock("--ttft-ms", 5, "--itl-ms", 1, record=True) as m:
        # AIPerf's names: prompt and answer lengths, and the count
        r = profile(h, m.url, "--isl", 32, "--osl", 5, "--num-requests", 6, "--streaming")
        h.check(r.summary["request_count"]["avg"] == 6, "--num-requests 6: six measured", r.summary["request_count"])
        h.check(r.summary["input_sequence_length"]["avg"] == 32, "--isl 32", r.summary.get("input_sequence_length"))
        h.check(r.summary["output_sequence_length"]["avg"] == 5, "--osl 5", r.summary.get("output_sequence_length"))
        cfg = r.summary["input_config"]
        h.check(cfg.get("synthetic_input_tokens_mean") == 32 and cfg.get("output_tokens_mean") == 5,
                "input_config under GenAI-Perf's names", json.dumps(cfg)[:800])

        # vLLM's --ignore-eos: in every body sent
        r = profile(h, m.url, "--ignore-eos", "--request-count", 3, "--osl", 4)
        bodies = inputs_bodies(r)
        h.check(bodies and all(b.get("ignore_eos") is True for b in bodies), "--ignore-eos: every body says so",
                bodies[:1])

        # vLLM's --request-rate inf: every request intended at the start instant; the wait for a slot under
        # --max-concurrency is in the latency from intended, not hidden
        r = profile(h, m.url, "--request-rate", "inf", "--request-count", 12, "--max-concurrency", 4, "--osl", 3,
                    "--streaming", "--workers", 1)
        h.check("request rate inf" in r.stderr, "the start line says inf", r.stderr[:500])
        h.check(r.summary["input_config"].get("request_rate") == "inf", "input_config request_rate \"inf\"",
                r.summary["input_config"].get("request_rate"))
        intended = sorted(x["intended_ns"] for x in r.records)
        h.check(len(intended) == 12 and intended[0] == intended[-1], "every request intended at the same instant",
                intended)
        lag = sorted(x["schedule_lag_ms"] for x in r.records)
        # 12 requests, 4 at a time, each at least 5 + 2 ms: the last four wait for two rounds. Each slot's third
        # request goes at least two services after its first, so at most 8 lags are under the least one plus 14 ms
        # (the least one is the client's start-up: 5.6 ms with four tests on two cores)
        h.check(lag[-1] >= 2 * 7.0 and lag[8] - lag[0] >= 2 * 7.0,
                "the wait for a slot shows as schedule lag (last %.2f ms, at least 14; the 9th %.2f ms past the first,"
                " at least 14)" % (lag[-1], lag[8] - lag[0]), lag)
        h.check(r.summary["request_latency"]["max"] >= r.summary["request_latency_from_send"]["max"] + 10,
                "latency from intended includes the wait", (r.summary["request_latency"]["max"],
                                                             r.summary["request_latency_from_send"]["max"]))
    arrivals = sorted(x["t_ns"] for x in m.records())
    # the last run's first four went out at once
    last12 = arrivals[-12:]
    h.check(len(arrivals) >= 12 and last12[3] - last12[0] < 5e6, "the first four arrive within 5 ms of each other",
            [(t - last12[0]) / 1e6 for t in last12])

    # a prefix of a flag is refused, naming what was meant, before anything is sent and with nothing written
    for typed, meant in (("--stream", "--streaming"), ("--isl-block", "--isl-block-size"),
                         ("--request-c=4", "--request-count"), ("--concurrency-ra=4", "--concurrency-range")):
        art = h.path("never" + typed.strip("-").split("=")[0])
        rc = h.run([h.surge, "profile", "-m", "x", "-u", "127.0.0.1:9", typed, "--artifact-dir", art], timeout=30)
        h.check(rc.returncode == 2 and ("unknown option %s (did you mean %s" % (typed.split("=")[0], meant))
                in rc.stderr and not os.path.exists(art), "%s refused, naming %s" % (typed, meant), rc.stderr)
    rc = h.run([h.surge, "tokenize", "--tok", "x"], timeout=30)
    h.check(rc.returncode == 2 and "unknown option --tok (did you mean --tokenizer?)" in rc.stderr,
            "surge tokenize refuses a prefix too", rc.stderr)
    rc = h.run([h.surge, "mock", "--port-fil", "x"], timeout=30)
    h.check(rc.returncode == 2 and "--port-fil" in rc.stderr, "surge mock refuses a prefix too", rc.stderr)


harness.main(main)
