"""surge profile against surge mock over every endpoint type (docs/endpoints.md): each API's bodies go out in
its shape (checked in the mock's --record), its answers are read (OSL from each API's usage, ISL over every
input, TTFT from the first text event), reasoning models' output is counted (reasoning_token_count, the time to
first output token after the reasoning), over HTTP/1.1 and h2c; and a server that answers another API at the path
fails every request with a message that says so."""
import json
import os
import time

import harness
from profiling import profile

N = 40
OSL = 10
ISL = 24
TTFT_MS = 20
ITL_MS = 2


def records_ok(h, r, what, n=N):
    if not h.check(r.summary is not None, "%s: a summary" % what, r.stderr[-2000:]):
        return False
    h.check(r.summary["error_request_count"]["avg"] == 0, "%s: no errors" % what, r.summary.get("error_summary"))
    h.check(r.summary["request_count"]["avg"] == n and len(r.records) == n, "%s: %d requests" % (what, n),
            r.summary["request_count"])
    return True


def recorded(m):
    """The mock's --record lines so far."""
    with open(m.record) as f:
        return [json.loads(line) for line in f if line.strip()]


def recorded_since(m, before, n):
    """The n record lines after the first `before`: the mock writes them out in batches, so wait for them."""
    deadline = time.monotonic() + 10
    while True:
        rec = recorded(m)
        if len(rec) >= before + n or time.monotonic() > deadline:
            return rec[before:before + n]
        time.sleep(0.05)


def check_generating(h, m, http2):
    proto = ("--http2",) if http2 else ()
    for etype in ("chat", "completions", "responses", "messages", "generate"):
        for streaming in (True, False):
            what = "%s, %s%s" % (etype, "streamed" if streaming else "whole", ", h2c" if http2 else "")
            r = profile(h, m.url, "--endpoint-type", etype, *(("--streaming",) if streaming else ()), *proto,
                        "--output-tokens-mean", OSL, "--synthetic-input-tokens-mean", ISL, "--request-count", N,
                        "--concurrency", 8)
            if not records_ok(h, r, what):
                continue
            bad = [x for x in r.records if x["osl_source"] != "usage" or x["output_sequence_length"] != OSL]
            h.check(not bad, "%s: OSL %d from the API's usage" % (what, OSL), bad[:2])
            if etype != "generate":  # TGI reports no prompt count
                h.check(all(x.get("input_sequence_length_server") == ISL for x in r.records),
                        "%s: the mock's prompt count (its words) kept" % what, r.records[:1])
            if streaming:
                ttft = r.summary["time_to_first_token"]
                h.check(ttft["count"] == N and ttft["min"] >= TTFT_MS * 0.9, "%s: TTFT after the mock's %d ms"
                        % (what, TTFT_MS), ttft)
                h.check(all(x["content_events"] == OSL for x in r.records), "%s: one content event per token" % what)
                h.check("reasoning_token_count" not in r.summary and "time_to_first_output_token" not in r.summary,
                        "%s: no reasoning rows without reasoning" % what)


def check_reasoning(h, m_reason, field):
    for etype in ("chat", "responses", "messages"):
        what = "%s with 4 reasoning tokens (%s)" % (etype, field)
        r = profile(h, m_reason.url, "--endpoint-type", etype, "--streaming", "--output-tokens-mean", OSL,
                    "--request-count", N, "--concurrency", 8)
        if not records_ok(h, r, what):
            continue
        h.check(all(x["output_sequence_length"] == OSL for x in r.records), "%s: OSL counts the reasoning" % what,
                r.records[:1])
        h.check(all(x.get("reasoning_tokens") == 4 for x in r.records), "%s: 4 reasoning tokens per request" % what,
                r.records[:1])
        # the fifth content event is the first output (token_times_ms: from the intended start, to the us)
        late = [x for x in r.records
                if x["first_output_token_ns"] is None or len(x["token_times_ms"]) != OSL
                or abs((x["first_output_token_ns"] - x["intended_ns"]) / 1e6 - x["token_times_ms"][4]) > 0.002]
        h.check(not late, "%s: the first output token is the fifth content event" % what, late[:2])
        s = r.summary
        h.check(s.get("reasoning_token_count", {}).get("avg") == 4 and s["reasoning_token_count"]["count"] == N,
                "%s: reasoning_token_count in the summary" % what, s.get("reasoning_token_count"))
        ttfo = s.get("time_to_first_output_token", {})
        # (the exact per-request check is above; under load the mock may send a few due events at once, so the
        # summary is only asked to put TTFO after TTFT)
        h.check(ttfo.get("count") == N and ttfo["avg"] > s["time_to_first_token"]["avg"],
                "%s: TTFO beyond TTFT by the reasoning" % what, (ttfo, s["time_to_first_token"]))
        h.check("Time to first output token" in r.stdout and "Reasoning token count" in r.stdout,
                "%s: both rows in the table" % what, r.stdout[-3000:])
    # whole chat answers: the count comes from usage's completion_tokens_details
    r = profile(h, m_reason.url, "--endpoint-type", "chat", "--output-tokens-mean", OSL, "--request-count", 8)
    if records_ok(h, r, "chat whole with reasoning", 8):
        h.check(all(x.get("reasoning_tokens") == 4 for x in r.records), "chat whole: reasoning_tokens from usage",
                r.records[:1])


def check_batched(h, m):
    before = len(recorded(m))
    cases = (("embeddings", "input", 4), ("nim_rankings", "passages", 3), ("hf_tei_rankings", "texts", 3),
             ("cohere_rankings", "documents", 3))
    for etype, member, b in cases:
        what = "%s, batch %d" % (etype, b)
        r = profile(h, m.url, "--endpoint-type", etype, "--batch-size", b, "--synthetic-input-tokens-mean", ISL,
                    "--request-count", N, "--concurrency", 8)
        if not records_ok(h, r, what):
            continue
        texts = b if etype == "embeddings" else b + 1
        h.check(all(x["input_sequence_length"] == texts * ISL for x in r.records), "%s: ISL counts %d texts"
                % (what, texts), r.records[:1])
        h.check(all(x.get("no_output") is True and x["output_sequence_length"] is None for x in r.records),
                "%s: no output" % what, r.records[:1])
        h.check(r.summary["request_latency"]["min"] >= TTFT_MS * 0.9, "%s: latency holds the mock's %d ms"
                % (what, TTFT_MS), r.summary["request_latency"])
        rec = recorded_since(m, before, N)
        before += len(rec)
        h.check(len(rec) == N and all(x.get("inputs") == b for x in rec),
                "%s: the mock saw %d %s per request" % (what, b, member), rec[:1])


def check_rankings_synthetic(h, m):
    """AIPerf's --rankings-* flags: the passages per query vary as asked, and the query and passages have the
    lengths asked (ISL is their sum, and the mock saw as many passages as the client counted)."""
    before = len(recorded(m))
    n = 40
    r = profile(h, m.url, "--endpoint-type", "cohere_rankings", "--rankings-passages-mean", 5,
                "--rankings-passages-stddev", 2, "--rankings-query-prompt-token-mean", 4,
                "--rankings-query-prompt-token-stddev", 0, "--rankings-passages-prompt-token-mean", 6,
                "--rankings-passages-prompt-token-stddev", 0, "--request-count", n, "--concurrency", 8)
    if not records_ok(h, r, "synthetic rankings", n):
        return
    rec = recorded_since(m, before, n)
    seen = sorted(x.get("inputs", 0) for x in rec)
    h.check(len(rec) == n and len(set(seen)) > 2 and 4 <= sum(seen) / n <= 6 and min(seen) >= 1,
            "synthetic rankings: passages per query drawn around 5", seen)
    h.check(sorted(x["input_sequence_length"] for x in r.records) == [4 + 6 * k for k in seen],
            "synthetic rankings: ISL is the 4-word query and 6 words a passage",
            sorted(x["input_sequence_length"] for x in r.records))
    bad = profile(h, m.url, "--endpoint-type", "chat", "--rankings-passages-mean", 5, "--request-count", 1,
                  check_rc=None)
    h.check(bad.rc != 0 and "applies to the rankings endpoint types" in bad.stderr and bad.summary is None,
            "--rankings-* with chat: refused before anything is sent", bad.stderr)


def check_input_files(h, m):
    """Rankings and embeddings inputs from files: GenAI-Perf's queries/passages directory, AIPerf's rankings lines
    and batched "texts" lines; a batch line refused for chat."""
    d = h.path("rankings_dir")
    os.makedirs(d)
    with open(os.path.join(d, "queries.jsonl"), "w") as f:
        f.write('{"text": "first query here"}\n{"text": "second query"}\n')
    with open(os.path.join(d, "passages.jsonl"), "w") as f:
        f.write('{"text": "passage one"}\n{"text": "passage two two"}\n{"text": "passage three"}\n')
    before = len(recorded(m))
    r = profile(h, m.url, "--endpoint-type", "rankings", "--batch-size", 2, "--input-file", d, "--request-count", 4)
    if records_ok(h, r, "GenAI-Perf rankings directory", 4):
        rec = recorded_since(m, before, 4)
        h.check([x.get("inputs") for x in rec] == [2, 2, 2, 2], "rankings directory: 2 passages a query", rec[:1])
        # words: query 3 + passages 2 and 3, then query 2 + passages 2 and 2, in turn
        h.check(sorted({x["input_sequence_length"] for x in r.records}) == [6, 8],
                "rankings directory: ISL counts the query and its passages", [x["input_sequence_length"] for x in r.records])
    path = h.path("aiperf_rankings.jsonl")
    with open(path, "w") as f:
        f.write('{"texts": [{"name": "query", "contents": ["what is it"]}, {"name": "passages", "contents": '
                '["a", "b c", "d"]}]}\n')
    before = len(recorded(m))
    r = profile(h, m.url, "--endpoint-type", "cohere_rankings", "--input-file", path, "--request-count", 3)
    if records_ok(h, r, "AIPerf rankings lines", 3):
        rec = recorded_since(m, before, 3)
        h.check(len(rec) == 3 and all(x.get("inputs") == 3 for x in rec) and all(x["input_sequence_length"] == 7 for x in r.records),
                "AIPerf rankings lines: the line's 3 passages", rec[:1])
    path = h.path("batches.jsonl")
    with open(path, "w") as f:
        f.write('{"texts": ["one two", "three", "four five six"]}\n')
    before = len(recorded(m))
    r = profile(h, m.url, "--endpoint-type", "embeddings", "--input-file", path, "--request-count", 2)
    if records_ok(h, r, "embeddings batch lines", 2):
        rec = recorded_since(m, before, 2)
        h.check(len(rec) == 2 and all(x.get("inputs") == 3 for x in rec) and all(x["input_sequence_length"] == 6 for x in r.records),
                "embeddings batch lines: one request of 3 inputs a line", rec[:1])
    r = profile(h, m.url, "--endpoint-type", "chat", "--input-file", path, "--request-count", 2, check_rc=None)
    h.check(r.rc != 0 and "only embeddings and rankings take" in r.stderr and r.summary is None,
            "a batch line for chat: refused before anything is sent", r.stderr[-500:])


def check_errors(h, m, m_err):
    # a messages body at the chat path: the mock answers in chat's shape, which is not Anthropic's
    r = profile(h, m.url, "--endpoint-type", "messages", "--endpoint", "v1/chat/completions", "--streaming",
                "--request-count", 6, "--output-tokens-mean", 4, check_rc=None)
    errs = r.summary.get("error_summary", []) if r.summary else []
    h.check(r.summary is not None and r.summary["error_request_count"]["avg"] == 6 and
            any("no event of a messages stream" in e.get("message", "") for e in errs),
            "chat's stream read as a messages stream: every request a protocol error that names the API", errs)
    r = profile(h, m.url, "--endpoint-type", "embeddings", "--endpoint", "v1/completions", "--request-count", 6,
                check_rc=None)
    errs = r.summary.get("error_summary", []) if r.summary else []
    h.check(r.summary is not None and r.summary["error_request_count"]["avg"] == 6,
            "an embeddings body at the completions path: counted failures", errs)
    # the server's own errors in each API's shape: the server's message, counted by class
    for etype in ("embeddings", "messages", "generate", "responses"):
        r = profile(h, m_err.url, "--endpoint-type", etype, "--request-count", 6, check_rc=None)
        errs = r.summary.get("error_summary", []) if r.summary else []
        h.check(r.summary is not None and r.summary["error_request_count"]["avg"] == 6 and
                all(e.get("message", "").startswith("HTTP 5") and len(e["message"]) > 10 for e in errs),
                "%s: injected errors carry the server's message" % etype, errs)


def main(h):
    with h.mock("--ttft-ms", TTFT_MS, "--itl-ms", ITL_MS, record=True) as m:
        check_generating(h, m, False)
        check_generating(h, m, True)
        check_batched(h, m)
        check_rankings_synthetic(h, m)
        check_input_files(h, m)
        with h.mock("--ttft-ms", 1, "--itl-ms", 1, "--error-rate", 1) as m_err:
            check_errors(h, m, m_err)
    for field in ("reasoning_content", "reasoning"):
        with h.mock("--ttft-ms", TTFT_MS, "--itl-ms", ITL_MS, "--reasoning-tokens", 4, "--reasoning-field",
                    field) as mr:
            check_reasoning(h, mr, field)


if __name__ == "__main__":
    harness.main(main)
