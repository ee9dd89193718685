"""Exact prompt lengths under --tokenizer, checked at the server: every prompt surge sent is counted again with
`surge tokenize --count` and must hold exactly the tokens asked for (synthetic, shared prefixes, trace entries),
prompts are distinct, prefixes are shared exactly, and the run's ISL is that count. Uses cl100k_base and Llama 3's
and Llama 2's tokenizer.json from tests/data/fetch-tokenizers."""

import collections
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from profiling import profile  # noqa: E402

TOKENIZERS = ["cl100k_base", "llama3", "llama2"]


def counts(h, tok, texts):
    text = "".join(json.dumps(t) + "\n" for t in texts)
    r = h.run([h.surge, "tokenize", "--tokenizer", tok, "--count", "--jsonl"], input=text, timeout=120)
    h.check(r.returncode == 0, "surge tokenize --count runs", r.stderr[-2000:])
    return [int(x) for x in r.stdout.split()]


def run_case(h, tok, name, args, n):
    with h.mock("--ttft-ms", "0", "--output-tokens", "1", record=True) as m:
        r = profile(h, m.url, "--tokenizer", tok, "--request-count", n, "--concurrency", 4, *args)
        m.stop()
        recs = m.records()
    h.check(len(recs) == n, "%s: %d requests reached the server" % (name, n), len(recs))
    return r, recs


def check_tokenizer(h, tok):
    short = os.path.basename(os.path.dirname(os.path.dirname(tok))) if tok.endswith(".json") else \
        os.path.basename(tok)
    # synthetic: stddev 40 around 300, 60 distinct prompts
    r, recs = run_case(h, tok, short + " synthetic", ["--synthetic-input-tokens-mean", 300,
                                                     "--synthetic-input-tokens-stddev", 40, "--num-prompts", 60], 60)
    prompts = [x["prompt"] for x in recs]
    got = counts(h, tok, prompts)
    # each request's recorded ISL against the server-side count of what it received
    asked = sorted(rec["input_sequence_length"] for rec in r.records)
    h.check(sorted(got) == asked, "%s synthetic: every prompt holds exactly its ISL in tokens" % short,
            (sorted(got)[:10], asked[:10]))
    h.check(len(set(prompts)) == 60, "%s synthetic: 60 distinct prompts" % short, len(set(prompts)))
    h.check(len(set(asked)) > 20, "%s synthetic: lengths vary with the stddev" % short, len(set(asked)))
    print("%s: 60 synthetic prompts, token counts %d..%d, all exact" % (short, min(got or [0]), max(got or [0])))

    # shared prefixes: 3 prefixes of 64 tokens, prompts of 64 + 100 tokens
    r, recs = run_case(h, tok, short + " prefixes", ["--synthetic-input-tokens-mean", 100, "--num-prompts", 30,
                                                    "--num-prefix-prompts", 3, "--prefix-prompt-length", 64], 30)
    prompts = [x["prompt"] for x in recs]
    got = counts(h, tok, prompts)
    h.check(got == [164] * 30, "%s prefixes: every prompt holds exactly 64 + 100 tokens" % short, got[:10])
    h.check(all(rec["input_sequence_length"] == 164 for rec in r.records), "%s prefixes: ISL 164" % short, None)
    # the prompts fall in 3 groups sharing a long common opening, each opening exactly 64 tokens of text
    groups = collections.defaultdict(list)
    for p in prompts:
        groups[p[:120]].append(p)
    h.check(len(groups) == 3, "%s prefixes: 3 distinct shared openings" % short, len(groups))
    prefixes = []
    for ps in groups.values():
        common = os.path.commonprefix(ps) if len(ps) > 1 else ps[0]
        prefixes.append(common)
    # the common part of a group is the prefix (plus, at most, a few characters the bodies happen to share)
    pc = counts(h, tok, prefixes)
    h.check(all(62 <= c <= 66 for c in pc), "%s prefixes: the shared openings are the 64-token prefixes" % short, pc)
    h.check(len(set(prompts)) == 30, "%s prefixes: the prompts differ after the prefix" % short, None)

    # a trace: exact input_length, blocks of 32 tokens shared by hash id
    rows = []
    for i in range(24):
        il = 40 + 17 * i
        nblocks = (il + 31) // 32
        rows.append({"timestamp": i * 5, "input_length": il, "output_length": 2,
                     "hash_ids": [0, 1] + [100 + i * 10 + b for b in range(nblocks - 2)]})
    path = h.path("exact-trace.jsonl")
    with open(path, "w") as f:
        f.write("".join(json.dumps(x) + "\n" for x in rows))
    with h.mock("--ttft-ms", "0", record=True) as m:
        r = profile(h, m.url, "--tokenizer", tok, "--input-file", path, "--fixed-schedule", "--isl-block-size", 32)
        m.stop()
        recs = m.records()
    per = counts(h, tok, [x["prompt"] for x in recs])
    got = sorted(per)
    h.check(got == sorted(x["input_length"] for x in rows), "%s trace: every prompt holds exactly input_length "
            "tokens" % short, got[:10])
    # entries longer than two blocks all start with blocks 0 and 1 whole (the shortest holds block 1 in part)
    opening = os.path.commonprefix([x["prompt"] for x, n in zip(recs, per) if n > 64])
    oc = counts(h, tok, [opening])
    h.check(oc and 62 <= oc[0] <= 70, "%s trace: hash ids 0 and 1 make the same opening (%s tokens shared)" %
            (short, oc[0] if oc else "?"), oc)


def main(h):
    for name in TOKENIZERS:
        tok = harness.tokenizer_file(h, name)
        if tok is None:
            continue
        r = h.run([h.surge, "tokenize", "--tokenizer", tok, "--count"], input="probe", timeout=60)
        if h.check(r.returncode == 0, "%s loads" % name, r.stderr.strip()[-2000:]):
            check_tokenizer(h, tok)


harness.main(main)
