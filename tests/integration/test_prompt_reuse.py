"""Prompts that do not flatter a server's cache, checked at the server (surge mock --record --prefix-cache):

1. by default no request repeats an earlier request's prompt (HTTP/1.1, HTTP/2, TLS, a sweep's points), each
   prompt holds exactly its ISL (words; with --tokenizer, tokens counted again by `surge tokenize`), the mock's
   prefix cache finds nothing to reuse, and the summary and console say every prompt was unique;
2. --num-prompts K given repeats the K prompts as asked, the summary says how often (prompt_reuse), and the
   cached prompt tokens the server reports are read per request and summed (cached_input_tokens,
   cached_input_share);
3. --cache-bust first_turn_prefix with --num-prompts makes them unique again, --cache-bust none keeps the reuse,
   and first_turn_prefix where the run shares prompts on purpose (an input file) is refused before any request.
"""

import collections
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from profiling import profile  # noqa: E402

N = 60
ISL = 30


def run(h, name, mock_args=(), args=(), url_of=None, n=N):
    with h.mock("--ttft-ms", 0, "--output-tokens", 2, "--prefix-cache", *mock_args, record=True) as m:
        url = url_of(m) if url_of else m.url
        r = profile(h, url, "--request-count", n, "--concurrency", 4, "--isl", ISL, *args)
        m.stop()
        recs = m.records()
    h.check(len(recs) >= n, "%s: %d requests reached the server" % (name, n), len(recs))
    return r, recs


def check_unique(h, name, r, recs, n=N):
    prompts = [x["prompt"] for x in recs]
    h.check(len(set(prompts)) == len(prompts), "%s: no prompt repeats at the server" % name,
            "%d distinct of %d" % (len(set(prompts)), len(prompts)))
    h.check(all(x["prompt_words"] == ISL for x in recs), "%s: every prompt holds exactly its ISL" % name,
            sorted(set(x["prompt_words"] for x in recs)))
    if r.records:
        cached = [x.get("cached_input_tokens") for x in r.records]
        h.check(cached == [0] * len(r.records), "%s: the server's prefix cache reused no prompt token" % name,
                collections.Counter(cached).most_common(4))
    if r.summary:
        reuse = r.summary.get("prompt_reuse", {})
        h.check(reuse.get("cache_bust") == "first_turn_prefix" and reuse.get("distinct_prompts") == n and
                reuse.get("sends_per_prompt") == 1.0, "%s: the summary says every prompt was unique" % name, reuse)
        h.check("Prompts: every prompt unique" in r.stdout, "%s: and the console" % name, r.stdout[-600:])


def main(h):
    # 1. by default, over HTTP/1.1 (io_uring's sendmsg, and epoll's), HTTP/2 and TLS
    # more requests than the 100 default prompts
    r, recs = run(h, "default", n=150)
    check_unique(h, "default", r, recs, n=150)
    starts = [x["prompt"].split()[0] for x in recs]
    h.check(len(set(starts)) == 150, "default: the prompts differ from their first word", len(set(starts)))
    h.check(r.summary["input_config"]["cache_bust"] == "first_turn_prefix", "input_config says cache_bust",
            r.summary["input_config"].get("cache_bust"))
    r, recs = run(h, "epoll", args=("--io-backend", "epoll"))
    check_unique(h, "epoll", r, recs)
    r, recs = run(h, "http2", args=("--http2", "--streaming"))
    check_unique(h, "http2", r, recs)
    cert = h.path("mock-cert.pem")
    r, recs = run(h, "tls", mock_args=("--tls", "--tls-cert-out", cert, "--tls-alpn", "http/1.1"), args=("--cacert", cert),
                  url_of=lambda m: m.url.replace("http://", "https://"))
    check_unique(h, "tls", r, recs)
    # a sweep: its second point does not send the first point's prompts again
    r, recs = run(h, "sweep", args=("--concurrency", "2,4"), n=N)
    prompts = [x["prompt"] for x in recs]
    h.check(len(recs) == 2 * N and len(set(prompts)) == 2 * N, "sweep: no prompt repeats over its points",
            "%d distinct of %d" % (len(set(prompts)), len(recs)))

    # two runs against one server, same seed (the same prompt table): the second sends none of the first's prompts
    with h.mock("--ttft-ms", 0, "--output-tokens", 2, "--prefix-cache", record=True) as m:
        runs = [profile(h, m.url, "--request-count", N, "--concurrency", 4, "--isl", ISL) for _ in range(2)]
        m.stop()
        recs = m.records()
    prompts = [x["prompt"] for x in recs]
    h.check(len(recs) == 2 * N and len(set(prompts)) == 2 * N, "two runs: no prompt of the first is sent again",
            "%d distinct of %d" % (len(set(prompts)), len(recs)))
    # (a slot word or two the first run also started with is all a cache can share: a random start may reuse a
    # first word, never the slot)
    cached = [x.get("cached_input_tokens") for x in runs[1].records]
    words = runs[1].summary["prompt_reuse"].get("slot_words", 0)
    h.check(len(cached) == N and all(c is not None and c < words for c in cached),
            "two runs: the server's cache serves none of the second run's prompts past their first words",
            (words, collections.Counter(cached).most_common(3)))
    bases = [r.summary["prompt_reuse"].get("slot_base") for r in runs]
    h.check(None not in bases and bases[0] != bases[1], "two runs: each counts from its own random start", bases)

    # 2. --num-prompts given: 6 prompts, each sent 10 times, reported, and the cached tokens read
    r, recs = run(h, "num-prompts", args=("--num-prompts", 6))
    counts = collections.Counter(x["prompt"] for x in recs)
    h.check(sorted(counts.values()) == [10] * 6, "--num-prompts 6: 6 prompts at the server, each 10 times",
            sorted(counts.values()))
    reuse = r.summary.get("prompt_reuse", {})
    h.check(reuse.get("cache_bust") == "none" and reuse.get("distinct_prompts") == 6 and
            reuse.get("requests") == N and reuse.get("sends_per_prompt") == 10.0 and
            reuse.get("reason") == "--num-prompts", "--num-prompts 6: the summary says how often", reuse)
    h.check("Prompts: 6 distinct prompts for 60 requests, each sent 10.0 times" in r.stdout,
            "--num-prompts 6: and the console", r.stdout[-600:])
    cached = sorted(x.get("cached_input_tokens") for x in r.records)
    h.check(cached == [0] * 6 + [ISL] * 54, "--num-prompts 6: 54 requests found their whole prompt cached",
            collections.Counter(cached))
    share = r.summary.get("cached_input_share", {})
    h.check(share.get("requests") == N and share.get("cached_tokens") == 54 * ISL and
            share.get("prompt_tokens") == N * ISL and abs(share.get("share", 0) - 0.9) < 1e-9,
            "--num-prompts 6: cached_input_share", share)
    dist = r.summary.get("cached_input_tokens", {})
    h.check(dist.get("count") == N and dist.get("max") == ISL and dist.get("min") == 0,
            "--num-prompts 6: the cached_input_tokens distribution", dist)
    h.check("Cached input tokens" in r.stdout and "1,620 of 1,800 prompt tokens (90.0%)" in r.stdout,
            "--num-prompts 6: the console shows them beside ISL", r.stdout[-900:])
    with open(os.path.join(r.dir, "profile_export_surge.csv")) as f:
        csv = f.read()
    h.check("Cached Input Tokens" in csv, "--num-prompts 6: the CSV has the row", csv[:400])

    # 3. the flag both ways, and a refusal where the run shares prompts on purpose
    r, recs = run(h, "first_turn_prefix", args=("--num-prompts", 6, "--cache-bust", "first_turn_prefix"))
    check_unique(h, "--num-prompts 6 --cache-bust first_turn_prefix", r, recs)
    r, recs = run(h, "none", args=("--cache-bust", "none"))
    counts = collections.Counter(x["prompt"] for x in recs)
    h.check(len(counts) == 60 and r.summary["prompt_reuse"]["reason"] == "--cache-bust none",
            "--cache-bust none: the 100 prompts in turn (60 requests: each once)", (len(counts), r.summary.get(
                "prompt_reuse")))
    path = h.path("prompts.jsonl")
    with open(path, "w") as f:
        f.write(json.dumps({"text": "hello there"}) + "\n")
    r = h.run([h.surge, "profile", "-m", "m", "-u", "http://127.0.0.1:9", "--input-file", path, "--cache-bust",
               "first_turn_prefix", "--artifact-dir", h.path("refused")])
    h.check(r.returncode == 2 and "--cache-bust" in r.stderr and "--input-file" in r.stderr,
            "--cache-bust first_turn_prefix with --input-file is refused, naming both", (r.returncode, r.stderr))
    r = h.run([h.surge, "profile", "-m", "m", "-u", "http://127.0.0.1:9", "--cache-bust", "system_prefix",
               "--artifact-dir", h.path("refused2")])
    h.check(r.returncode == 2 and "system_prefix" in r.stderr, "--cache-bust system_prefix is refused clearly",
            (r.returncode, r.stderr))

    # with a tokenizer: the prompts stay exact in tokens at the server (counted again), and unique
    for name in ("cl100k_base", "llama3", "llama2"):
        try:
            tok = harness.tokenizer_file(h, name)
        except harness.Skip as e:  # the checks above stand; these need tests/data/fetch-tokenizers
            print("skipped %s: %s" % (name, e))
            continue
        if not tok:
            continue
        with h.mock("--ttft-ms", 0, "--output-tokens", 1, "--tokenizer", tok, record=True) as m:
            r = profile(h, m.url, "--tokenizer", tok, "--request-count", N, "--concurrency", 4, "--isl", 50,
                        "--isl-stddev", 20, "--num-prompts", 7, "--cache-bust", "first_turn_prefix")
            m.stop()
            recs = m.records()
        prompts = [x["prompt"] for x in recs]
        text = "".join(json.dumps(p) + "\n" for p in prompts)
        c = h.run([h.surge, "tokenize", "--tokenizer", tok, "--count", "--jsonl"], input=text, timeout=120)
        got = sorted(int(x) for x in c.stdout.split())
        asked = sorted(x["input_sequence_length"] for x in r.records)
        h.check(got == asked and len(got) == N, "%s: every unique prompt holds exactly its ISL in tokens" % name,
                (got[:8], asked[:8]))
        h.check(len(set(prompts)) == N, "%s: no prompt repeats" % name, len(set(prompts)))
        h.check(all(x.get("input_sequence_length_server") == x["input_sequence_length"] for x in r.records),
                "%s: the server's usage count agrees with every ISL" % name, None)


if __name__ == "__main__":
    harness.main(main)
