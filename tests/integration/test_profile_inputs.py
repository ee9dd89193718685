"""--input-file end to end against `surge mock --record`: for every format, the server received exactly the
prompts, output lengths and models the file gives (no tokenizer: lengths in words); -m a -m b round robin and
random per request; bad files refused before any connection with the file, line and field named; and trace
replay with --fixed-schedule, where every request reaches the server within 1 ms of its timestamp."""
# ctest: run-serial

import collections
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from profiling import profile, tol  # noqa: E402


def write(h, name, text):
    path = h.path(name)
    with open(path, "w") as f:
        f.write(text)
    return path


def jsonl(rows):
    return "".join(json.dumps(r) + "\n" for r in rows)


def words(s):
    return len(s.split())


def received(m):
    m.stop()
    return m.records()


def check_file(h, name, text, fmt, expect, n_requests, extra=(), models=("mock-model",)):
    """expect: [(prompt, max_tokens or None)] in file order; requests go round robin through it."""
    path = write(h, name, text)
    margs = []
    for mo in models[1:]:  # profile() gives the first
        margs += ["-m", mo]
    with h.mock("--ttft-ms", "0", record=True) as m:
        args = margs + ["--input-file", path, "--request-count", n_requests, "--concurrency", "2", "--workers", "2"]
        if fmt:
            args += ["--input-format", fmt]
        r = profile(h, m.url, *(list(args) + list(extra)), model=models[0])
        recs = received(m)
    h.check(len(recs) == n_requests, "%s: the server got %d requests" % (name, n_requests), len(recs))
    got = collections.Counter((x["prompt"], x["max_tokens"], x["model"]) for x in recs)
    want = collections.Counter()
    for i in range(n_requests):
        p, mt = expect[i % len(expect)]
        want[(p, mt, models[i % len(models)])] += 1
    h.check(got == want, "%s: the server received exactly the file's prompts, output lengths and models" % name,
            (sorted(got.items())[:4], sorted(want.items())[:4]))
    isl = sorted(x["input_sequence_length"] for x in r.records)
    want_isl = sorted(words(expect[i % len(expect)][0]) for i in range(n_requests))
    h.check(isl == want_isl, "%s: ISL is each prompt's word count" % name, (isl[:8], want_isl[:8]))
    return r, recs


def main(h):
    prompts = ["Tell me about the sea.", "What is 2 + 2?", "Write a \"quoted\" line\nwith a newline.",
               "Explain bridges in one paragraph.", "Name three rivers.", "Why is the sky blue?"]

    # genai_perf: text_input, optional output_length
    rows = [{"text_input": p, "output_length": 5 + i} if i % 2 else {"text_input": p} for i, p in enumerate(prompts)]
    check_file(h, "gp.jsonl", jsonl(rows), None,
               [(p, 5 + i if i % 2 else None) for i, p in enumerate(prompts)], 12)
    # without an output length in the file, --output-tokens-mean applies
    check_file(h, "gp2.jsonl", jsonl([{"text_input": p} for p in prompts]), "genai_perf",
               [(p, 9) for p in prompts], 6, extra=["--output-tokens-mean", "9"])

    # GenAI-Perf's and AIPerf's current prompt files: {"text": ...} (AIPerf's single_turn; "texts" with one prompt)
    rows = [{"text": p, "output_length": 3 + i} if i % 2 else {"text": p} for i, p in enumerate(prompts)]
    check_file(h, "text.jsonl", jsonl(rows), None, [(p, 3 + i if i % 2 else None) for i, p in enumerate(prompts)], 6)
    check_file(h, "texts.jsonl", jsonl([{"texts": [p]} for p in prompts[:3]]), "genai_perf",
               [(p, None) for p in prompts[:3]], 3)

    # llm_perf: input, output (a reference reply: its length in words becomes max_tokens)
    rows = [{"input": p, "output": " ".join(["w"] * (i + 1))} for i, p in enumerate(prompts)]
    check_file(h, "lp.jsonl", jsonl(rows), None, [(p, i + 1) for i, p in enumerate(prompts)], 6)

    # ShareGPT: first human turn, the reply's word count; a conversation without a reply is skipped
    convs = [{"id": str(i), "conversations": [{"from": "human", "value": p},
                                              {"from": "gpt", "value": " ".join(["r"] * (3 + i))}]}
             for i, p in enumerate(prompts)]
    convs.insert(2, {"id": "x", "conversations": [{"from": "human", "value": "no reply"}]})
    r, _ = check_file(h, "sg.json", json.dumps(convs, indent=1), None,
                      [(p, 3 + i) for i, p in enumerate(prompts)], 7)
    h.check("skipped 1 of 7 conversations" in r.stderr, "ShareGPT: the skipped conversation is reported", r.stderr)

    # perf_analyzer: each payload sent as written (its own model, its own max_tokens)
    bodies = [{"model": "mock-model", "messages": [{"role": "user", "content": p}], "max_tokens": 4 + i,
               "stream": False} for i, p in enumerate(prompts)]
    check_file(h, "pa.json", json.dumps({"data": [{"payload": [b]} for b in bodies]}, indent=2), None,
               [(p, 4 + i) for i, p in enumerate(prompts)], 6)

    # raw_payload: lines sent byte for byte; a body's model is kept even with -m given
    lines = [{"model": "body-model-%d" % (i % 2), "messages": [{"role": "user", "content": p}], "max_tokens": 3}
             for i, p in enumerate(prompts)]
    path = write(h, "raw.jsonl", jsonl(lines))
    with h.mock("--ttft-ms", "0", record=True) as m:
        profile(h, m.url, "--input-file", path, "--request-count", 6, model="cli-model")
        recs = received(m)
    h.check(sorted((x["prompt"], x["model"]) for x in recs) ==
            sorted((p, "body-model-%d" % (i % 2)) for i, p in enumerate(prompts)),
            "raw_payload: each body's own prompt and model reach the server", recs[:2])

    # several models, per request: round robin is checked in check_file; random uses both, about evenly
    check_file(h, "rr.jsonl", jsonl([{"text_input": p} for p in prompts]), None, [(p, None) for p in prompts], 18,
               models=("a", "b", "c"))
    path = write(h, "rnd.jsonl", jsonl([{"text_input": p} for p in prompts[:2]]))
    with h.mock("--ttft-ms", "0", record=True) as m:
        profile(h, m.url, "-m", "b", "--input-file", path, "--request-count", 400, "--concurrency", 8,
                "--model-selection-strategy", "random", model="a")
        recs = received(m)
    by_model = collections.Counter(x["model"] for x in recs)
    by_pair = collections.Counter((x["prompt"], x["model"]) for x in recs)
    h.check(len(recs) == 400 and 150 < by_model["a"] < 250 and 150 < by_model["b"] < 250 and len(by_pair) == 4,
            "random model selection: per request, both models with both prompts", (by_model, by_pair))

    # bad files: refused before any connection, exit 2, file, line and field named
    trace_ok = jsonl([{"timestamp": 0, "input_length": 5, "output_length": 2}] * 16)
    bad_trace = trace_ok + '{"timestamp": 20, "input_length": "abc", "output_length": 2}\n'
    cases = [
        ("bad.jsonl", bad_trace, [], 'bad.jsonl line 17: "input_length" must be a positive integer, got "abc"'),
        ("what.jsonl", '{"question": "q"}\n', [], 'cannot tell the format of'),
        ("broken.jsonl", '{"text_input": "a"}\n{"text_input": \n', [], "broken.jsonl line 2: not valid JSON"),
        ("gp.jsonl", jsonl([{"text_input": "a"}]), ["--fixed-schedule"], "not a trace"),
        ("img.jsonl", jsonl([{"text": "a", "image": "cat.png"}]), [], 'img.jsonl line 1: cannot open cat.png'),
        ("vid.jsonl", jsonl([{"text": "a", "video": "v.mp4"}]), [], 'vid.jsonl line 1: "video" not supported'),
    ]
    with h.mock(record=True) as m:
        for name, text, extra, want in cases:
            path = write(h, name, text)
            r = profile(h, m.url, "--input-file", path, *extra, check_rc=2)
            h.check(want in r.stderr, "bad input %s: the message says %r" % (name, want), r.stderr)
        r = profile(h, m.url, "--input-file", h.path("no-such-file.jsonl"), check_rc=2)
        h.check("no-such-file.jsonl" in r.stderr, "a missing file is named", r.stderr)
        r = profile(h, m.url, "--fixed-schedule", check_rc=2)
        h.check("--fixed-schedule" in r.stderr and "--input-file" in r.stderr, "--fixed-schedule alone is refused",
                r.stderr)
        recs = received(m)
    h.check(recs == [], "nothing reached the server for a refused input file", recs[:1])

    # trace replay: 200 entries over 2 s, each request at the server within 1 ms of its timestamp
    rnd = random.Random(7)
    ts = sorted(rnd.randint(0, 2000) for _ in range(199)) + [0]
    rows = []
    for i, t in enumerate(ts):
        row = {"timestamp": t, "input_length": 20 + i % 30, "output_length": 1 + i % 4}
        if i % 3 == 0:
            row["hash_ids"] = [i % 5]
        rows.append(row)
    rnd.shuffle(rows)  # out of order in the file: sorted by timestamp, as the replay sends them
    path = write(h, "trace.jsonl", jsonl(rows))
    with h.mock("--ttft-ms", "0", "--workers", "2", record=True) as m:
        r = profile(h, m.url, "--input-file", path, "--fixed-schedule", "--isl-block-size", "16", "--workers", "2")
        recs = received(m)
    h.check(len(recs) == 200 and len(r.records) == 200, "trace: every entry sent once", (len(recs), len(r.records)))
    arrivals = sorted(x["t_ns"] for x in recs)
    want = sorted(row["timestamp"] for row in rows)
    # The server cannot see our start instant: take it as the median of (arrival - timestamp), so that one late
    # first request (a descheduled thread on a loaded machine) does not shift every other one.
    offs = sorted(a / 1e6 - w for a, w in zip(arrivals, want))
    start = offs[len(offs) // 2] if offs else 0
    errs = sorted(abs(a / 1e6 - w - start) for a, w in zip(arrivals, want))
    within = sum(1 for e in errs if e <= tol(5.0))
    first = (arrivals[0] / 1e6 - want[0] - start) if errs else float("nan")
    print("trace replay: %d requests over %.0f ms; error vs start + timestamp: median %.3f ms, p99 %.3f ms, "
          "max %.3f ms, %d within 5 ms; first request %+.3f ms" %
          (len(errs), want[-1] - want[0], errs[len(errs) // 2], errs[int(len(errs) * 0.99)], errs[-1], within,
           first))
    # arrival at the server includes the mock's own wait for a CPU: with other jobs on the 2 cores up to 16 of 200
    # arrived 1-10 ms late whether or not the client coalesced, so the bound is 5 ms for 9 in 10, the median 0.5 ms
    h.check(errs and errs[len(errs) // 2] <= tol(0.5) and within >= 0.9 * len(errs),
            "trace: arrivals within 5 ms of start + timestamp (%d of %d; at least 90%%), median %.3f ms (under 0.5)" %
            (within, len(errs), errs[len(errs) // 2] if errs else -1), errs[-10:])
    h.check(sorted(x["prompt_words"] for x in recs) == sorted(row["input_length"] for row in rows),
            "trace: each prompt holds exactly input_length words", None)
    h.check(sorted(x["max_tokens"] for x in recs) == sorted(row["output_length"] for row in rows),
            "trace: max_tokens is output_length", None)
    # the same hash id: the same opening block of 16 words, and other ids other blocks
    by_block = collections.defaultdict(set)
    want_blocks = {}
    for row in rows:
        if "hash_ids" in row and row["input_length"] > 16:
            want_blocks[(row["input_length"], row["timestamp"])] = row["hash_ids"][0]
    for x in recs:
        if x["prompt_words"] > 16:
            by_block[" ".join(x["prompt"].split()[:16])].add(x["prompt_words"])
    shared = [b for b, lens in by_block.items() if len(lens) > 1]
    h.check(len(shared) >= 3, "trace: entries with the same hash id share their first block",
            [(b[:40], sorted(v)) for b, v in list(by_block.items())[:4]])

harness.main(main)
