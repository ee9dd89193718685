"""Cached prompt tokens from a real server: llama.cpp's llama-server with one slot (its prompt cache keeps the
last prompt's KV and reuses the longest common prefix, reporting it as timings.cache_n). surge reads them per
request (cached_input_tokens) and sums them (cached_input_share):

1. --num-prompts 1: every request after the first sends the same prompt, and the server says it took almost all
   of it from its cache;
2. the default (every request's prompt starts with words of its own): the server reuses no more than its chat
   template's opening, a small part of each prompt;

streamed and whole answers both. Needs tests/data/fetch-llama-server (a skip without it, a failure under CI)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from profiling import profile  # noqa: E402
from servers import LlamaServer  # noqa: E402

N = 12
ISL = 64


def main(h):
    try:
        server = LlamaServer(h, parallel=1, ctx=2048)
    except RuntimeError:  # under CI, without the test data: testdata_file has failed a check
        return
    with server as s:
        common = ("--output-tokens-mean", 4, "--extra-inputs", "ignore_eos:true", "--synthetic-input-tokens-mean",
                  ISL, "--request-count", N, "--concurrency", 1, "--model", "tiny-llama")
        for streamed in (True, False):
            how = "streamed" if streamed else "whole"
            extra = ("--streaming",) if streamed else ()
            r = profile(h, s.url, "--num-prompts", 1, *common, *extra, timeout=180)
            recs = sorted(r.records, key=lambda x: x["id"])
            cached = [x.get("cached_input_tokens") for x in recs]
            prompt = [x.get("input_sequence_length_server") for x in recs]
            h.check(len(recs) == N and all(c is not None for c in cached),
                    "%s, one prompt: every request's cached tokens read from llama-server" % how, cached)
            if len(recs) == N and all(c is not None for c in cached):
                # the same prompt again: all but its last token or so come from the cache
                h.check(all(c >= p - 2 for c, p in zip(cached[1:], prompt[1:])),
                        "%s, one prompt: repeats are served from the cache" % how, list(zip(cached, prompt)))
            share = r.summary.get("cached_input_share", {}) if r.summary else {}
            h.check(share.get("requests") == N and share.get("share", 0) > 0.8,
                    "%s, one prompt: cached_input_share above 0.8" % how, share)
            h.check(r.summary and r.summary["prompt_reuse"]["distinct_prompts"] == 1,
                    "%s, one prompt: prompt_reuse says 1 distinct prompt" % how, r.summary.get("prompt_reuse"))

            r = profile(h, s.url, *common, *extra, timeout=180)
            cached = [x.get("cached_input_tokens") for x in r.records]
            prompt = [x.get("input_sequence_length_server") for x in r.records]
            h.check(len(cached) == N and all(c is not None for c in cached),
                    "%s, unique prompts: cached tokens read" % how, cached)
            if len(cached) == N and all(c is not None for c in cached):
                # what llama-server may reuse is the chat template's opening (BOS, role markers), never the
                # prompt's words: well under half of each
                h.check(all(c < p / 2 for c, p in zip(cached, prompt)),
                        "%s, unique prompts: the cache serves only the template's opening" % how,
                        list(zip(cached, prompt)))
            h.check(r.summary and r.summary["prompt_reuse"]["cache_bust"] == "first_turn_prefix",
                    "%s, unique prompts: prompt_reuse says every prompt unique" % how, r.summary.get("prompt_reuse"))
        h.check(s.proc.poll() is None, "llama-server still running", s.log()[-2000:])


if __name__ == "__main__":
    harness.main(main)
