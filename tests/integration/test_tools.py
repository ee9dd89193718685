# ctest: one-backend (the requests' tools and the decoding of tool-call deltas are above the I/O backend)
"""Tool calls end to end against `surge mock --record`: --tools sends the file's tools to chat, responses and
messages in each API's shape (the mock counts the requests that carried them, and answers with a tool call whose
arguments stream as one delta per output token); surge counts the calls, the argument tokens (one per fragment,
or the tokenizer's count of the arguments' text) and the time to the first argument fragment, in the summary and
per request, and a tool-call-only response is a success with its output counted. --tool-choice none, a mock that
answers only some calls (--tool-call-rate), an input file whose lines carry their own tools, and bad tools
refused before anything is sent. AIPerf's files carry the same figures (per request and in the summary, JSON and
CSV), and the report has a Tool calls section, with the summary's numbers, only for a run that made calls."""
# ctest: run-serial (headless Chromium takes both cores for seconds: the timing tests beside it would suffer)

import csv
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser  # noqa: E402
import harness  # noqa: E402
from profiling import profile  # noqa: E402

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city",
                                      "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                     "required": ["city"]}}},
    {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}},
]
# The mock's output words, one per token (mock/mock_render.c); a tool call's arguments are {"text":"<words>"}.
WORDS = [" the", " of", " and", " to", " in", " is", " that", " for", " it", " as", " with", " was", " on", " be",
         " at", " by"]
OSL = 7
N = 6


def write(h, name, text):
    path = h.path(name)
    with open(path, "w") as f:
        f.write(text)
    return path


def mock_calls(m):
    """(requests that carried tools, answered with a tool call) from the mock's exit line."""
    found = re.search(r"(\d+) requests carried tools, (\d+) answered with a tool call", m.stderr())
    return (int(found.group(1)), int(found.group(2))) if found else (0, 0)


def check_calls(h, r, what, n, tokens, streamed=True):
    s = r.summary or {}
    h.check(s.get("request_count", {}).get("avg") == n and s.get("error_request_count", {}).get("avg") == 0,
            "%s: %d requests, none failed (a tool call without text is a success)" % (what, n),
            (s.get("request_count"), s.get("error_summary"), r.stderr[-1500:]))
    calls = s.get("tool_call_count", {})
    h.check(calls.get("count") == n and calls.get("avg") == 1 and calls.get("max") == 1,
            "%s: tool_call_count: one call in each of the %d responses" % (what, n), calls)
    h.check(s.get("tool_call_total", {}).get("avg") == n, "%s: tool_call_total %d" % (what, n),
            s.get("tool_call_total"))
    toks = s.get("tool_call_token_count", {})
    h.check(toks.get("count") == n and toks.get("min") == tokens and toks.get("max") == tokens,
            "%s: tool_call_token_count %d in every response" % (what, tokens), toks)
    osl = s.get("output_sequence_length", {})
    h.check(osl.get("min") == OSL and osl.get("max") == OSL, "%s: the arguments are the output: OSL %d" % (what, OSL),
            osl)
    share = s.get("tool_call_token_share", {}).get("avg")
    want = min(tokens, OSL) / OSL
    h.check(share is not None and abs(share - want) < 1e-9, "%s: tool_call_token_share %.3f" % (what, want), share)
    recs = r.records
    h.check(len(recs) == n and all(x.get("tool_calls") == 1 and x.get("tool_call_tokens") == tokens for x in recs),
            "%s: every JSONL record has tool_calls 1 and tool_call_tokens %d" % (what, tokens),
            [(x.get("tool_calls"), x.get("tool_call_tokens")) for x in recs])
    if streamed:
        ttftc = s.get("time_to_first_tool_call_token", {})
        ttft = s.get("time_to_first_token", {})
        h.check(ttftc.get("count") == n and ttftc.get("avg") == ttft.get("avg"),
                "%s: time_to_first_tool_call_token is the TTFT when the first token is an argument" % what,
                (ttftc, ttft))
        h.check(ttftc.get("min", 0) >= 20, "%s: time to first tool-call token %.2f ms >= the mock's 20 ms TTFT"
                % (what, ttftc.get("min", 0)))
        h.check(all(x.get("content_events") == OSL and x.get("time_to_first_tool_call_token_ms") is not None
                    for x in recs), "%s: %d argument fragments, each a content event" % (what, OSL),
                [x.get("content_events") for x in recs])
    else:
        h.check("time_to_first_tool_call_token" not in s, "%s: no tool-call timing without a stream" % what)


def check_aiperf(h, r, what, streamed=True):
    """AIPerf's files: each request's tool-call metrics in profile_export.jsonl as surge's JSONL has them, the
    distributions and totals in profile_export_aiperf.json as surge's summary has them, and rows in its CSV."""
    with open(os.path.join(r.dir, "profile_export.jsonl")) as f:
        lines = [json.loads(x) for x in f if x.strip()]
    got = sorted((x["metadata"]["session_num"], x["metrics"].get("tool_call_count", {}).get("value"),
                  x["metrics"].get("tool_call_token_count", {}).get("value"),
                  x["metrics"].get("time_to_first_tool_call_token", {}).get("value")) for x in lines)
    want = sorted((x["id"], x["tool_calls"], x["tool_call_tokens"], x.get("time_to_first_tool_call_token_ms"))
                  for x in r.records)
    h.check(len(got) == len(want) and all(g[:3] == w[:3] and (w[3] is None) == (g[3] is None) and
                                          (w[3] is None or abs(g[3] - w[3]) < 1e-3) for g, w in zip(got, want)),
            "%s: AIPerf's records carry each request's tool calls, tokens and first tool-call time" % what,
            (got[:3], want[:3]))
    units = {x["metrics"].get("tool_call_count", {}).get("unit") for x in lines}
    h.check(units == {"calls"}, "%s: AIPerf's tool_call_count in calls" % what, units)
    with open(os.path.join(r.dir, "profile_export_aiperf.json")) as f:
        a = json.load(f)
    tags = ["tool_call_count", "tool_call_token_count", "tool_call_total", "tool_call_token_share"]
    if streamed:
        tags.append("time_to_first_tool_call_token")
    for tag in tags:
        ours, theirs = r.summary.get(tag, {}), a.get(tag, {})
        h.check(theirs and all(theirs.get(k) == ours.get(k) for k in ("unit", "avg", "p50", "p99", "min", "max")),
                "%s: AIPerf's %s is surge's" % (what, tag), (theirs, ours))
    with open(os.path.join(r.dir, "profile_export_aiperf.csv")) as f:
        rows = {row[0]: row[1:] for row in csv.reader(f) if row}
    total = rows.get("Tool Call Total (calls)")
    h.check(total == [str(r.summary["tool_call_total"]["avg"])], "%s: AIPerf's CSV has the tool-call total" % what,
            total)
    h.check("Tool Calls per Response (calls)" in rows and "Tool-Call Token Count (tokens)" in rows,
            "%s: and the distributions' rows" % what, sorted(rows)[:40])


def check_report(h, with_calls, without):
    """The run page: a Tool calls section with the summary's figures and the CDF of the first tool-call token;
    none for a run whose responses made no call."""
    page = os.path.join(with_calls.dir, "report.html")
    p = h.run([h.surge, "report", with_calls.dir, "-o", page], timeout=120)
    h.check(p.returncode == 0, "surge report of a run with tool calls", p.stderr[-800:])
    rp = browser.render(h, page) if p.returncode == 0 else None
    if rp is None or not browser.page_ok(h, rp, "report with tool calls", ("cdf-tool",)):
        return
    s = with_calls.summary
    for tag, stat, v in (("tool_call_count", "count", s["tool_call_count"]["count"]),
                         ("tool_call_total", "avg", s["tool_call_total"]["avg"]),
                         ("tool_call_token_count", "avg", s["tool_call_token_count"]["avg"]),
                         ("tool_call_token_share", "avg_percent", 100 * s["tool_call_token_share"]["avg"]),
                         ("time_to_first_tool_call_token", "p50", s["time_to_first_tool_call_token"]["p50"]),
                         ("time_to_first_tool_call_token", "p99", s["time_to_first_tool_call_token"]["p99"])):
        cells = rp.cells(run=0, tool=tag, stat=stat)
        h.check(len(cells) == 1 and browser.same_number(cells[0][1], v) and
                abs(float(cells[0][0]["data-value"]) - v) <= 1e-9 * max(1, abs(v)),
                "report: tool calls' %s %s is the summary's %r" % (tag, stat, v), cells)
    n = s["time_to_first_tool_call_token"]["count"]
    h.check(rp.charts()["cdf-tool"]["points"] == n, "report: the CDF holds every streamed call (%d)" % n,
            rp.charts()["cdf-tool"])
    page = os.path.join(without.dir, "report.html")
    p = h.run([h.surge, "report", without.dir, "-o", page], timeout=120)
    rp = browser.render(h, page) if p.returncode == 0 else None
    if rp is not None and browser.page_ok(h, rp, "report without tool calls", ("cdf-ttft",)):
        h.check("cdf-tool" not in rp.charts() and not rp.cells(run=0, tool="tool_call_count", stat="count") and
                ">Tool calls<" not in rp.dom, "report: no Tool calls section for a run without calls")


def main(h):
    tools = write(h, "tools.json", json.dumps(TOOLS))
    chat_streamed = None

    # each API, streamed; and chat whole
    with h.mock("--ttft-ms", "20", "--itl-ms", "1", record=True) as m:
        for ep in ("chat", "responses", "messages"):
            r = profile(h, m.url, "--endpoint-type", ep, "--streaming", "--tools", tools, "--request-count", N,
                        "--concurrency", "2", "--osl", OSL, "--isl", "8")
            check_calls(h, r, ep + " streamed", N, OSL)
            check_aiperf(h, r, ep + " streamed")
            if ep == "chat":
                chat_streamed = r
        r = profile(h, m.url, "--endpoint-type", "chat", "--tools", tools, "--tool-choice", "lookup",
                    "--request-count", N, "--concurrency", "2", "--osl", OSL, "--isl", "8")
        # not streamed, no tokenizer: the whole output is the call, so its tokens are the OSL (usage's)
        check_calls(h, r, "chat whole", N, OSL, streamed=False)
        check_aiperf(h, r, "chat whole", streamed=False)
        # --tool-choice none: the tools go, the server answers text
        r = profile(h, m.url, "--endpoint-type", "messages", "--streaming", "--tools", tools, "--tool-choice", "none",
                    "--request-count", 2, "--osl", OSL, "--isl", "8")
        h.check(r.summary is not None and "tool_call_count" not in r.summary
                and r.summary["request_count"]["avg"] == 2,
                "tool_choice none: text answers, no tool-call metrics", (r.summary or {}).keys())
        with open(os.path.join(r.dir, "profile_export_aiperf.json")) as f:
            a = json.load(f)
        h.check(not [k for k in a if k.startswith("tool_call") or "tool_call" in k] and
                all("tool_call" not in x for x in r.records),
                "tool_choice none: no tool-call block in AIPerf's summary, no tool field per request", sorted(a))
        no_calls = r
        m.stop()
        recs = m.records()
    seen = {}
    for x in recs:
        seen.setdefault(x["path"], []).append(x.get("tools"))
    for path in ("/v1/chat/completions", "/v1/responses", "/v1/messages"):
        h.check(seen.get(path) and all(t == len(TOOLS) for t in seen[path]),
                "the server saw the %d tools in every request to %s" % (len(TOOLS), path), seen.get(path))
    h.check(sum(1 for x in recs if x.get("tool_choice") == "none") == 2, "the server saw tool_choice none twice",
            [x.get("tool_choice") for x in recs])
    if chat_streamed is not None:
        check_report(h, chat_streamed, no_calls)
    total = 4 * N + 2
    h.check(mock_calls(m) == (total, 4 * N), "the mock: %d requests carried tools, %d answered with a call"
            % (total, 4 * N), mock_calls(m))

    # a server that answers a share with a call: surge counts what the server says it sent
    with h.mock("--ttft-ms", "1", "--itl-ms", "0", "--tool-call-rate", "0.5") as m:
        r = profile(h, m.url, "--endpoint-type", "responses", "--streaming", "--tools", tools, "--request-count", 40,
                    "--concurrency", "4", "--osl", OSL, "--isl", "8")
        m.stop()
    carried, answered = mock_calls(m)
    got = (r.summary or {}).get("tool_call_count", {}).get("count")
    h.check(carried == 40 and 0 < answered < 40 and got == answered,
            "--tool-call-rate 0.5: surge counts the %s calls the mock made of 40" % answered, (carried, got))
    h.check(r.summary is not None and r.summary["request_count"]["avg"] == 40, "every request succeeded, call or not")

    # the tokenizer counts the arguments' text (the mock's usage counts its words: the share stays at most 1)
    tok = harness.tokenizer_file(h, "cl100k_base")
    if tok:
        args = '{"text":"%s"}' % "".join(WORDS[i % len(WORDS)] for i in range(OSL))
        proc = h.run([h.surge, "tokenize", "--tokenizer", tok, "--count"], input=args, timeout=60)
        want = int(proc.stdout.split()[0]) if proc.returncode == 0 else -1
        with h.mock("--ttft-ms", "20", "--itl-ms", "1") as m:
            for st in (["--streaming"], []):
                r = profile(h, m.url, "--endpoint-type", "messages", "--tools", tools, "--tokenizer", tok,
                            "--request-count", 3, "--osl", OSL, "--isl", "8", *st)
                check_calls(h, r, "messages%s with a tokenizer" % (" streamed" if st else ""), 3, want,
                            streamed=bool(st))

    # an input file whose lines carry their own tools (no --tools)
    lines = [{"text": "one two", "tools": [TOOLS[0]]},
             {"text": "three four", "tools": TOOLS + [{"type": "function", "function": {"name": "third"}}]},
             {"text": "five six"}]
    inp = write(h, "in.jsonl", "".join(json.dumps(x) + "\n" for x in lines))
    with h.mock("--ttft-ms", "1", record=True) as m:
        r = profile(h, m.url, "--endpoint-type", "chat", "--streaming", "--input-file", inp, "--request-count", 3,
                    "--osl", 3)
        m.stop()
        recs = m.records()
    got = sorted((x["prompt"], x.get("tools")) for x in recs)
    h.check(got == [("five six", None), ("one two", 1), ("three four", 3)],
            "input lines' own tools reach the server (a line without any sends none)", got)
    h.check((r.summary or {}).get("tool_call_count", {}).get("count") == 2, "two of the three answers were calls",
            (r.summary or {}).get("tool_call_count"))

    # bad tools: one line naming the problem, exit 2, nothing sent
    bad_json = write(h, "bad.json", '[{"type": "function", "function": {"name": "f"}},]')
    no_name = write(h, "noname.json", '[{"type": "function", "function": {"description": "x"}}]')
    bad_line = write(h, "badline.jsonl", '{"text": "a", "tools": [{"name": "has space"}]}\n')
    cases = [
        (["--tools", bad_json], ["--tools", "bad.json", "line 1"]),
        (["--tools", no_name], ["tool 0", "no \"name\""]),
        (["--tools", h.path("missing.json")], ["missing.json"]),
        (["--tools", tools, "--tool-choice", "nope"], ["--tool-choice nope"]),
        (["--tools", tools, "--endpoint-type", "completions"], ["chat, responses and messages", "completions"]),
        (["--tool-choice", "auto"], ["--tool-choice", "give --tools FILE"]),
        (["--input-file", bad_line], ["badline.jsonl", "line 1", "tools", "has space"]),
    ]
    with h.mock(record=True) as m:
        for args, words in cases:
            r = profile(h, m.url, "--request-count", 1, *args, check_rc=2)
            h.check(all(w in r.stderr for w in words) and len(r.stderr.strip().splitlines()) == 1,
                    "%s: one line naming %s" % (" ".join(map(str, args)), words), r.stderr[-800:])
        m.stop()
        h.check(m.records() == [], "bad tools: nothing reached the server", m.records()[:2])


if __name__ == "__main__":
    harness.main(main)
