# ctest: one-backend (flag names: the runs behind them are tested on both backends elsewhere)
"""vLLM's `vllm bench serve` flags (docs/cli.md, vLLM's names): a command written with vLLM's names sends what the
same command in surge's names sends (lengths, path and count at the server, the same seeded arrival schedule),
--max-concurrency with --request-rate inf caps the requests in flight at the server, and where a vLLM name means
something else here (--backend vllm, --num-prompts, --max-concurrency without a rate) one line says what to use."""
import json
import os

import harness
from profiling import late, profile


def run(h, *args, check_rc=0):
    rc = h.run([h.surge, "profile", "--no-progress"] + [str(a) for a in args], timeout=60)
    if check_rc is not None:
        h.check(rc.returncode == check_rc, "surge profile %s exits %d" % (" ".join(map(str, args)), check_rc),
                (rc.returncode, rc.stderr[-2000:]))
    return rc


def load(path):
    with open(path) as f:
        return json.load(f) if path.endswith(".json") else [json.loads(x) for x in f if x.strip()]


def offsets(records):
    t = sorted(r["intended_ns"] for r in records)
    return [x - t[0] for x in t]


def main(h):
    with h.mock("--ttft-ms", 2, "--itl-ms", 1, record=True) as m:
        # the same open-loop run twice: surge's names, then vLLM's
        ours = profile(h, m.url, "--endpoint-type", "chat", "--isl", 24, "--osl", 6, "--request-rate", 200,
                       "--burstiness", 2, "--random-seed", 7, "--request-count", 10, "--ignore-eos", "--streaming")
        res = h.path("vllm_results")
        rc = run(h, "--backend", "openai-chat", "--base-url", m.url, "--endpoint", "/v1/chat/completions",
                 "--model", "mock-model", "--dataset-name", "random", "--random-input-len", 24,
                 "--random-output-len", 6, "--random-range-ratio", 0, "--request-rate", 200, "--burstiness", 2,
                 "--seed", 7, "--request-count", 10, "--ignore-eos", "--streaming", "--save-result",
                 "--result-dir", res, "--result-filename", "bench.json", "--percentile-metrics", "ttft,tpot,itl,e2el",
                 "--metric-percentiles", "50,90,99", "--disable-tqdm", "--header", "X-Bench=vllm")
        h.check("vLLM's name for --endpoint-type chat" in rc.stderr, "--backend openai-chat says what it is taken as",
                rc.stderr[-2000:])
        summary_path = os.path.join(res, "bench_surge.json")
        h.check(os.path.exists(summary_path), "--result-dir and --result-filename name the files", os.listdir(res)
                if os.path.isdir(res) else res)
        theirs = load(summary_path) if os.path.exists(summary_path) else {}
        a, b = ours.summary["input_config"], theirs.get("input_config", {})
        for key in ("url", "endpoint_type", "endpoint", "streaming", "synthetic_input_tokens_mean",
                    "synthetic_input_tokens_stddev", "output_tokens_mean", "output_tokens_stddev", "request_rate",
                    "request_distribution", "burstiness", "random_seed", "request_count", "extra_inputs"):
            h.check(a.get(key) == b.get(key), "vLLM's names give the same %s" % key, (a.get(key), b.get(key)))
        h.check(b.get("headers") == ["X-Bench: vllm"], "vLLM's --header Name=value is 'Name: value'",
                b.get("headers"))
        recs_b = load(os.path.join(res, "bench_surge.jsonl")) if os.path.exists(summary_path) else []
        h.check(len(recs_b) == 10 and offsets(recs_b) == offsets(ours.records),
                "the same seeded schedule: every request's intended offset is the same",
                (offsets(recs_b)[:4], offsets(ours.records)[:4]))

        # vLLM's --max-concurrency under --request-rate inf: every request due at once, at most 2 in flight
        with h.mock("--ttft-ms", 40, "--itl-ms", 1, record=True) as slow:
            run(h, "-m", "mock-model", "--base-url", slow.url, "--request-rate", "inf", "--max-concurrency", 2,
                "--request-count", 6, "--random-output-len", 2, "--workers", 1, "--artifact-dir", h.path("mc"))
        arrivals = sorted(r["t_ns"] for r in slow.records())
        gaps = [(y - x) / 1e6 for x, y in zip(arrivals, arrivals[1:])]
        waves = sum(1 for g in gaps if g > 20)
        h.check(len(arrivals) == 6 and waves == 2 and all(g < 20 or g >= 40 - late(5) for g in gaps),
                "at the server: three waves of two, 40 ms apart (gaps in ms)", gaps)

        # --backend openai is vLLM's completions API
        openai = h.path("openai")
        rc = run(h, "-m", "mock-model", "--base-url", m.url, "--backend", "openai", "--request-count", 2,
                 "--random-output-len", 3, "--artifact-dir", openai)
        h.check("vLLM's name for --endpoint-type completions" in rc.stderr, "--backend openai: the note",
                rc.stderr[-1000:])

        # vLLM's sharegpt dataset: --dataset-path is the file
        share = h.path("share.json")
        with open(share, "w") as f:
            json.dump([{"conversations": [{"from": "human", "value": "tell me about rivers and mountains"},
                                          {"from": "gpt", "value": "they are big"}]}], f)
        run(h, "-m", "mock-model", "--base-url", m.url, "--dataset-name", "sharegpt", "--dataset-path", share,
            "--request-count", 2, "--random-output-len", 3, "--artifact-dir", h.path("share"))

        # --num-prompts keeps AIPerf's meaning (distinct prompts) and says what vLLM's is
        rc = run(h, "-m", "mock-model", "--base-url", m.url, "--num-prompts", 3, "--random-output-len", 1,
                 "--concurrency", 8, "--artifact-dir", h.path("np"))
        h.check("vLLM's --num-prompts, the number of requests, is --request-count" in rc.stderr,
                "--num-prompts without --request-count: the note", rc.stderr[-1500:])
    recs = m.records()
    mine = recs[10:20]  # after surge's own ten
    h.check(len(mine) == 10 and all(r["prompt_words"] == 24 and r["max_tokens"] == 6 and
                                    r["path"] == "/v1/chat/completions" and r["stream"] for r in mine),
            "vLLM's lengths, path and streaming at the server", mine[:1])
    h.check([r["path"] for r in recs[20:22]] == ["/v1/completions"] * 2, "--backend openai: /v1/completions",
            [r.get("path") for r in recs[20:22]])
    h.check(len(recs) >= 24 and all("rivers and mountains" in r.get("prompt", "") for r in recs[22:24]),
            "--dataset-name sharegpt --dataset-path: the file's prompt at the server", recs[22:24])
    h.check(len(recs) == 24 + 100, "--num-prompts 3 sent the default 100 requests, 3 prompts in turn", len(recs))
    h.check(len({r["prompt"] for r in recs[24:]}) == 3, "... of 3 distinct prompts", len({r["prompt"]
                                                                                          for r in recs[24:]}))

    # refused, each with the flag to use, before anything is sent
    for args, want in ((["--backend", "vllm"], "is --endpoint-type completions"),
                       (["--max-concurrency", 4], "vLLM's --max-concurrency N without a rate is --concurrency N"),
                       (["--random-range-ratio", 0.5], "--synthetic-input-tokens-stddev"),
                       (["--dataset-name", "sonnet"], "vLLM's sonnet dataset has no counterpart"),
                       (["--percentile-metrics", "ttft,foo"], "ttft, tpot, itl and e2el"),
                       (["--metric-percentiles", "50,99.5"], "surge reports the percentiles 1, 5, 10")):
        rc = run(h, "-m", "x", "--base-url", "127.0.0.1:9", *args, check_rc=2)
        h.check(want in rc.stderr, "%s: says %r" % (" ".join(map(str, args)), want), rc.stderr)


harness.main(main)
