"""OSL with --tokenizer: the source per request, the count of the text the mock sent, usage/tokenizer
disagreement counted exactly, and ITL from the final OSL. surge mock --tokenizer makes usage real token counts.

Expected counts come from `surge tokenize --count` on the mock's known output text (its word cycle) and on the
prompts it recorded, not from the code under test's own pass."""
import json

import harness
from profiling import HttpServer, profile

# The mock's output: these words in a cycle, one per token it sends (mock/mock_render.c).
WORDS = [" the", " of", " and", " to", " in", " is", " that", " for", " it", " as", " with", " was", " on", " be",
         " at", " by"]
OSL = 21  # not a multiple of the cycle: the text ends mid-cycle


def mock_text(n):
    return "".join(WORDS[i % len(WORDS)] for i in range(n))


def count(h, tok, text):
    proc = h.run([h.surge, "tokenize", "--tokenizer", tok, "--count"], input=text, timeout=60)
    h.check(proc.returncode == 0, "surge tokenize --count runs", proc.stderr[-1000:])
    return int(proc.stdout.split()[0])


def itl_from_records(records):
    """(latency - ttft) / (osl - 1) per streamed record, in ms: what the summary's ITL must be made of."""
    out = []
    for x in records:
        if x["output_sequence_length"] >= 2 and x["time_to_first_token_ms"] is not None:
            out.append((x["request_latency_ms"] - x["time_to_first_token_ms"]) / (x["output_sequence_length"] - 1))
    return out


def check_run(h, r, what, n, source, osl, tok_count, disagree, diff):
    s = r.summary
    h.check(s is not None and len(r.records) == n, what + ": summary and %d JSONL lines" % n,
            (r.rc, r.stderr[-2000:]))
    if s is None:
        return
    want_sources = {"usage": 0, "tokenizer": 0, "events": 0}
    want_sources[source] = n
    h.check(s["osl_source"] == want_sources, what + ": osl_source all %s" % source, s["osl_source"])
    bad = [x for x in r.records if x["osl_source"] != source or x["output_sequence_length"] != osl
           or x["output_sequence_length_tokenizer"] != tok_count]
    h.check(not bad, what + ": every record: source %s, OSL %d, tokenizer count %s" % (source, osl, tok_count),
            bad[:2])
    h.check(s["output_sequence_length"]["min"] == osl and s["output_sequence_length"]["max"] == osl,
            what + ": OSL distribution is exactly %d" % osl, s["output_sequence_length"])
    d = s["osl_disagreement"]
    compared = n if source == "usage" and tok_count is not None else 0
    h.check(d["compared"] == compared and d["count"] == disagree and d["max_abs_diff"] == abs(diff),
            what + ": osl_disagreement compared %d, count %d, max |diff| %d" % (compared, disagree, abs(diff)), d)
    if compared:
        h.check(("%d of %d requests differ" % (disagree, n)) in r.stdout, what + ": the table says how many differ",
                r.stdout[-800:])
    h.near(s["output_token_throughput"]["avg"], n * osl / s["benchmark_duration"]["avg"],
           0.001 * n * osl / s["benchmark_duration"]["avg"], what + ": output token throughput from the final OSL")
    if "inter_token_latency" in s:
        itls = itl_from_records(r.records)
        mean = sum(itls) / len(itls)
        # the histogram's mean is within its bucket precision (1/2048) of the exact one
        h.near(s["inter_token_latency"]["avg"], mean, 0.002 * mean + 1e-6, what + ": ITL from the final OSL")


THOUGHT = [" the of and to", " in is that for"]  # two reasoning events of several tokens each
ANSWER = [" it", " as", " with"]


def reasoning_server(stream, mixed=False):
    """A chat server that thinks in two multi-token reasoning_content pieces, then answers; no usage. mixed: the
    answer's first piece comes before the second thought (a server that interleaves them)."""
    def respond(line, headers, body):
        if not stream:
            out = json.dumps({"choices": [{"message": {"role": "assistant", "reasoning_content": "".join(THOUGHT),
                                                       "content": "".join(ANSWER)}, "finish_reason": "stop"}]})
            return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(out)
                    + out.encode())
        order = [("reasoning_content", THOUGHT[0]), ("reasoning_content", THOUGHT[1])] + [("content", a) for a in ANSWER]
        if mixed:
            order = [order[0], order[2], order[1]] + order[3:]
        chunks = "".join("data: %s\n\n" % json.dumps({"choices": [{"delta": {k: v}, "index": 0}]}) for k, v in order)
        chunks += "data: [DONE]\n\n"
        return (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n"
                % len(chunks) + chunks.encode())
    return HttpServer(respond)


def check_reasoning(h, tok):
    """Reasoning the server does not count: with --tokenizer, the tokens of its text (as OSL counts the whole);
    without, one per reasoning event; interleaved with the answer, the events."""
    thought = count(h, tok, "".join(THOUGHT))
    whole = count(h, tok, "".join(THOUGHT) + "".join(ANSWER))
    h.check(thought > len(THOUGHT), "the thought has more tokens than events", thought)
    cases = ((True, False, True, thought, "stream, --tokenizer"), (True, False, False, 2, "stream, no tokenizer"),
             (False, False, True, thought, "whole, --tokenizer"), (True, True, True, 2, "interleaved, --tokenizer"))
    for stream, mixed, with_tok, want, what in cases:
        srv = reasoning_server(stream, mixed)
        with srv.server:
            args = ["--request-count", 4, "--concurrency", 2, "--workers", 1] + (["--streaming"] if stream else [])
            r = profile(h, srv.url, *(["--tokenizer", tok] if with_tok else []), *args)
        recs = r.records or []
        h.check(len(recs) == 4 and all(x.get("reasoning_tokens") == want for x in recs),
                "reasoning %s: %d reasoning tokens a request" % (what, want), [x.get("reasoning_tokens") for x in recs])
        if with_tok and not mixed:
            h.check(all(x["output_sequence_length"] == whole for x in recs), "reasoning %s: OSL counts it all" % what,
                    [x["output_sequence_length"] for x in recs])
            s = r.summary or {}
            h.check(s.get("reasoning_token_count", {}).get("avg") == thought, "reasoning %s: the summary's count"
                    % what, s.get("reasoning_token_count"))


def main(h):
    tok = harness.tokenizer_file(h, "cl100k_base")
    if tok is None:
        return
    text_tokens = count(h, tok, mock_text(OSL))
    h.check(text_tokens > 0, "the mock's text has tokens", text_tokens)
    n = 24
    common = ["--request-count", n, "--concurrency", 4, "--output-tokens-mean", OSL, "--num-prompts", 3,
              "--synthetic-input-tokens-mean", 40, "--workers", 2]

    # 1. No usage from the server: the tokenizer decides, streaming and not, chat and completions.
    with h.mock("--ttft-ms", 5, "--itl-ms", 2, "--no-usage", record=True) as m:
        for args, what, events_osl in (
                (["--streaming"], "chat stream, no usage", OSL),
                ([], "chat, not streamed, no usage", 1),
                (["--streaming", "--endpoint-type", "completions"], "completions stream, no usage", OSL),
                (["--endpoint-type", "completions"], "completions, not streamed, no usage", 1)):
            r = profile(h, m.url, "--tokenizer", tok, *(common + args))
            check_run(h, r, what, n, "tokenizer", text_tokens, text_tokens, 0, 0)
            h.check("usage vs tokenizer: no request had both counts" in r.stdout, what + ": table says no usage",
                    r.stdout[-600:])
            # The same run without a tokenizer falls back to events.
            r = profile(h, m.url, *(common + args))
            check_run(h, r, what + " (no --tokenizer)", n, "events", events_osl, None, 0, 0)

    # 2. Usage that agrees (the mock counts with the same tokenizer): usage wins, nothing differs. The mock's
    # prompt_tokens is the tokenizer count of what it received.
    with h.mock("--ttft-ms", 5, "--itl-ms", 2, "--tokenizer", tok, record=True) as m:
        for args, what in ((["--streaming"], "chat stream, usage agrees"), ([], "chat, not streamed, usage agrees"),
                           (["--endpoint-type", "completions"], "completions, usage agrees")):
            r = profile(h, m.url, "--tokenizer", tok, *(common + args))
            check_run(h, r, what, n, "usage", text_tokens, text_tokens, 0, 0)
            if r.summary:
                isl = r.summary["isl_server_minus_client"]
                h.check(isl["compared"] == n, what + ": ISL compared on every request", isl)
                h.check(r.summary["isl_source"] == "tokenizer", what + ": ISL source named", r.summary["isl_source"])
        m.stop()
        sent = [json.loads(line) for line in open(m.record)]
        # the record line holds the body's raw string inside quotes, so parsing the line already unescapes it
        prompts = {x["prompt"] for x in sent}
        want_isl = {count(h, tok, p) for p in prompts}
        got_isl = {x["input_sequence_length_server"] for x in r.records}
        h.check(got_isl <= want_isl and got_isl, "usage.prompt_tokens is the tokenizer count of the prompt",
                (sorted(got_isl), sorted(want_isl)))

    # 3. Usage skewed by +5: every request disagrees by exactly 5; OSL and ITL follow usage.
    with h.mock("--ttft-ms", 5, "--itl-ms", 2, "--tokenizer", tok, "--usage-completion-offset", 5) as m:
        for args, what in ((["--streaming"], "chat stream, usage +5"), ([], "chat, not streamed, usage +5")):
            r = profile(h, m.url, "--tokenizer", tok, *(common + args))
            check_run(h, r, what, n, "usage", text_tokens + 5, text_tokens, n, 5)
            if r.summary:
                h.near(r.summary["osl_disagreement"]["mean_diff"], 5, 1e-9, what + ": mean diff +5")

    # 4. The mock's default usage (words sent) moved by -3: usage wins; the difference is to the real count.
    with h.mock("--ttft-ms", 5, "--itl-ms", 2, "--usage-completion-offset", -3) as m:
        r = profile(h, m.url, "--tokenizer", tok, "--streaming", *common)
        diff = OSL - 3 - text_tokens
        check_run(h, r, "chat stream, usage words - 3", n, "usage", OSL - 3, text_tokens, n if diff else 0, diff)
        if r.summary:
            h.near(r.summary["osl_disagreement"]["mean_diff"], diff, 1e-9, "usage words - 3: mean diff")

    # 5. Reasoning without usage
    check_reasoning(h, tok)


harness.main(main)
