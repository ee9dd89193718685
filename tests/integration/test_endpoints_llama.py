# ctest: one-backend (the engine is the same as test_llama_server's; one pass over every API is the point)
"""Every API llama-server serves, driven by surge against the real server (llama.cpp 3.22.1, the tiny model):

- embeddings (--embeddings --pooling mean) with --batch-size 3: every input answered, ISL counts all three
  prompts, the server's prompt_tokens kept, no output rows or OSL in the files;
- rankings (--reranking) in TEI's shape (/rerank, "texts") and Cohere's (/v1/rerank, "documents"), with
  --batch-size passages per query;
- the Responses API and Anthropic's Messages API, streamed and whole: OSL from each API's usage, TTFT from the
  first text event, no error;
- and what surge says when the path answers another API: a clear protocol error per request, counted, not lost.
Needs tests/data/fetch-llama-server (a skip without it, a failure under CI)."""
import os

import harness
from profiling import profile
from servers import LlamaServer

N = 24
ISL = 16
OSL = 8


def ok_run(h, r, what, n=N):
    if not h.check(r.summary is not None, "%s: a summary" % what, r.stderr[-2000:]):
        return False
    h.check(r.summary["error_request_count"]["avg"] == 0, "%s: no errors" % what, r.summary.get("error_summary"))
    h.check(r.summary["request_count"]["avg"] == n and len(r.records) == n, "%s: %d requests measured" % (what, n),
            (r.summary["request_count"], len(r.records)))
    return True


def check_embeddings(h, s):
    r = profile(h, s.url, "--endpoint-type", "embeddings", "--batch-size", 3, "--synthetic-input-tokens-mean", ISL,
                "--request-count", N, "--concurrency", 4, "--model", "tiny-llama", timeout=120)
    what = "llama-server embeddings, batch 3"
    if not ok_run(h, r, what):
        return
    h.check(all(x["input_sequence_length"] == 3 * ISL for x in r.records), "%s: ISL counts the three inputs" % what,
            r.records[:1])
    # usage.prompt_tokens: the three prompts as the server tokenized them (each with its BOS)
    h.check(all(x.get("input_sequence_length_server", 0) >= 3 * ISL for x in r.records),
            "%s: the server's prompt_tokens kept" % what, r.records[:1])
    h.check(all(x.get("no_output") is True and x["output_sequence_length"] is None and "osl_source" not in x
                and x.get("reasoning_tokens") is None for x in r.records),
            "%s: records say no output" % what, r.records[:1])
    for key in ("output_sequence_length", "time_to_first_token", "inter_token_latency"):
        h.check(key not in r.summary, "%s: no %s in the summary" % (what, key))
    h.check(r.summary["input_token_throughput"]["avg"] > 0 and r.summary["request_latency"]["count"] == N,
            "%s: latency and input token throughput" % what)
    h.check("Output token throughput" not in r.stdout and "Request latency" in r.stdout,
            "%s: the table has no output rows" % what, r.stdout[-3000:])
    with open(os.path.join(r.dir, "inputs.json")) as f:
        text = f.read()
    h.check('"input": [' in text or '"input":[' in text, "%s: inputs.json holds the batched bodies" % what)


def check_rankings(h, s):
    for etype, path in (("hf_tei_rankings", "/rerank"), ("cohere_rankings", "/v1/rerank")):
        what = "llama-server %s" % etype
        r = profile(h, s.url, "--endpoint-type", etype, "--batch-size", 4, "--synthetic-input-tokens-mean", ISL,
                    "--request-count", N, "--concurrency", 4, "--model", "tiny-llama", timeout=120)
        if not ok_run(h, r, what):
            continue
        h.check(path in r.stderr, "%s: sent to %s" % (what, path), r.stderr[:400])
        h.check(all(x["input_sequence_length"] == 5 * ISL for x in r.records), "%s: ISL is the query and 4 passages"
                % what, r.records[:1])
    # GenAI-Perf's spelling of TEI's shape
    r = profile(h, s.url, "--endpoint-type", "rankings", "--extra-inputs", "rankings:tei", "--batch-size", 2,
                "--synthetic-input-tokens-mean", ISL, "--request-count", 8, "--model", "tiny-llama", timeout=120)
    if ok_run(h, r, "llama-server rankings, rankings:tei", 8):
        h.check("/rerank" in r.stderr, "rankings:tei goes to /rerank", r.stderr[:400])
    # AIPerf's synthetic rankings flags: passages per query drawn, the query and each passage their own length
    r = profile(h, s.url, "--endpoint-type", "cohere_rankings", "--rankings-passages-mean", 4,
                "--rankings-passages-stddev", 1, "--rankings-query-prompt-token-mean", 3,
                "--rankings-query-prompt-token-stddev", 0, "--rankings-passages-prompt-token-mean", 5,
                "--rankings-passages-prompt-token-stddev", 0, "--request-count", N, "--concurrency", 4,
                "--model", "tiny-llama", timeout=120)
    if ok_run(h, r, "llama-server cohere_rankings, --rankings-* flags"):
        isl = sorted(x["input_sequence_length"] for x in r.records)
        h.check(all((x - 3) % 5 == 0 and x >= 8 for x in isl) and len(set(isl)) > 1,
                "--rankings-* flags: ISL is a 3-word query and 5 words a passage, passages varying", isl)


def check_generation(h, s):
    common = ("--output-tokens-mean", OSL, "--extra-inputs", "ignore_eos:true", "--synthetic-input-tokens-mean", ISL,
              "--request-count", N, "--concurrency", 4, "--model", "tiny-llama")
    for etype in ("responses", "messages"):
        for streaming in (True, False):
            what = "llama-server %s, %s" % (etype, "streamed" if streaming else "whole")
            r = profile(h, s.url, "--endpoint-type", etype, *(("--streaming",) if streaming else ()), *common,
                        timeout=120)
            if not ok_run(h, r, what):
                continue
            bad = [x for x in r.records if x["osl_source"] != "usage" or x["output_sequence_length"] != OSL]
            h.check(not bad, "%s: OSL %d from the API's usage" % (what, OSL), bad[:2])
            # llama-server counts the prompt with its chat template (and Anthropic's cache reads, added back)
            short = [x for x in r.records if x.get("input_sequence_length_server", 0) <= ISL]
            h.check(not short, "%s: the server's input tokens kept" % what, short[:2])
            if streaming:
                h.check(all(x["content_events"] >= 1 and x["time_to_first_token_ms"] is not None for x in r.records),
                        "%s: TTFT from the first text event" % what)
                h.check(r.summary["inter_token_latency"]["count"] == N, "%s: ITL for every request" % what)
                h.check("time_to_first_output_token" not in r.summary, "%s: no TTFO without reasoning" % what)


def check_wrong_shape(h, s):
    # a Responses body at the chat path: llama-server refuses it (no messages), each request an HTTP error
    r = profile(h, s.url, "--endpoint-type", "responses", "--endpoint", "v1/chat/completions", "--request-count", 4,
                "--model", "tiny-llama", "--output-tokens-mean", 4, check_rc=None, timeout=60)
    h.check(r.summary is not None and r.summary["error_request_count"]["avg"] == 4,
            "responses body at the chat path: every request failed and was counted",
            r.summary and r.summary.get("error_summary"))
    # a chat body's answer read as Anthropic's: chat at /v1/chat/completions answers in chat's shape
    r = profile(h, s.url, "--endpoint-type", "messages", "--endpoint", "v1/chat/completions", "--request-count", 4,
                "--model", "tiny-llama", "--output-tokens-mean", 4, check_rc=None, timeout=60)
    errs = r.summary.get("error_summary", []) if r.summary else []
    h.check(r.summary is not None and r.summary["error_request_count"]["avg"] == 4 and
            any("not a messages response" in e.get("message", "") for e in errs),
            "chat's answer to a messages request: a protocol error that names the API", errs)


def main(h):
    try:
        plain = LlamaServer(h, parallel=4)
        emb = LlamaServer(h, parallel=4, extra=("--embeddings", "--pooling", "mean"))
        rank = LlamaServer(h, parallel=4, extra=("--reranking",))
    except RuntimeError:  # under CI, without the test data: testdata_file has failed a check
        return
    with emb as s:
        check_embeddings(h, s)
    with rank as s:
        check_rankings(h, s)
    with plain as s:
        check_generation(h, s)
        check_wrong_shape(h, s)
        h.check(s.proc.poll() is None, "llama-server still running", s.log()[-2000:])


if __name__ == "__main__":
    harness.main(main)
