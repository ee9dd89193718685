"""Multi-turn sessions against llama.cpp's llama-server: chat, Responses and Messages, 3 turns a session, streamed;
no errors, and the
server's own prompt count grows turn by turn within each session (the history, with its replies, reached it).
Then a multi_turn file replayed at its timestamps (--fixed-schedule), and the same over HTTP/2: nginx as an h2c
proxy in front of the llama-server, each turn a stream of its own.
Needs tests/data/fetch-llama-server (a skip without it, a failure under CI)."""
import json
import os
import shutil

import harness
from profiling import profile
from servers import LlamaServer, nginx_h2c


def main(h):
    try:
        server = LlamaServer(h, parallel=4)
    except RuntimeError:  # under CI, without the test data: testdata_file has failed a check
        return
    args = ("--streaming", "--concurrency", 2, "--request-count", 12, "--conversation-turn-mean", 3,
            "--conversation-turn-delay-mean", 20, "--output-tokens-mean", 8, "--extra-inputs", "ignore_eos:true",
            "--synthetic-input-tokens-mean", 16, "--model", "tiny-llama")
    with server as s:
        # the history in each API's own form: chat's messages, the Responses API's input, Anthropic's messages
        for etype in ("chat", "responses", "messages"):
            r = profile(h, s.url, "--endpoint-type", etype, *args, timeout=180)
            check_sessions(h, r, etype)
        # a multi_turn file replayed at its timestamps (--fixed-schedule): sessions 100 ms apart, a second turn
        # stamped 150 ms after its session began (or when the first ended), a third 20 ms after the second ended
        path = h.path("timed.jsonl")
        words = "the quick brown fox jumps over the lazy dog and then some more words to say here"
        with open(path, "w") as f:
            for i in range(4):
                f.write(json.dumps({"session_id": "s%d" % i, "turns": [
                    {"text": "%d %s" % (i, words), "timestamp": 100 * i, "max_tokens": 8},
                    {"text": "then %s" % words, "timestamp": 100 * i + 150, "max_tokens": 8},
                    {"text": "last %s" % words, "delay": 20, "max_tokens": 8}]}) + "\n")
        r = profile(h, s.url, "--endpoint-type", "chat", "--streaming", "--input-file", path, "--fixed-schedule",
                    "--extra-inputs", "ignore_eos:true", "--model", "tiny-llama", timeout=180)
        check_sessions(h, r, "chat, a multi_turn file at its timestamps")
        firsts = sorted(x["intended_ns"] for x in r.records if x["turn"] == 0)
        h.check([(t - firsts[0]) / 1e6 for t in firsts] == [0, 100, 200, 300],
                "fixed schedule: sessions start at their timestamps", firsts)
        seconds = {x["session"]: x for x in r.records if x["turn"] == 1}
        ok = all(x["intended_ns"] >= (firsts[0] + 150e6 + 100e6 * x["session"]) for x in seconds.values())
        h.check(len(seconds) == 4 and ok, "fixed schedule: second turns not before their timestamps", seconds)
        # HTTP/2: nginx (h2c) in front of llama-server, each turn a stream of its own
        if shutil.which("nginx"):
            with nginx_h2c(h, s.port, upstream_keepalive=False) as ng:
                r = profile(h, ng.url, "--http2", "--endpoint-type", "chat", *args, timeout=180)
            check_sessions(h, r, "chat, HTTP/2 through nginx")
        else:
            h.check(not os.environ.get("CI"), "nginx installed (SURGE_TEST_PKGS)")


def check_sessions(h, r, what):
    if not r.summary:
        h.check(False, "%s: a summary was written" % what, r.stderr[-2000:])
        return
    h.check(r.summary["error_request_count"]["avg"] == 0, "%s: no errors" % what, r.summary.get("error_summary"))
    h.check(len(r.records) == 12, "%s: 12 turns measured" % what, len(r.records))
    by = {}
    for x in r.records:
        by.setdefault(x["session"], []).append(x)
    for sid, turns in by.items():
        turns.sort(key=lambda x: x["turn"])
        h.check([x["turn"] for x in turns] == [0, 1, 2], "%s, session %s: turns 0..2" % (what, sid),
                [x["turn"] for x in turns])
        srv = [x.get("input_sequence_length_server") or 0 for x in turns]
        # each turn adds the previous reply (8 tokens) and a new user turn: the server's count grows past both
        h.check(all(b > a + 8 for a, b in zip(srv, srv[1:])),
                "%s, session %s: the server's prompt grows with the history" % (what, sid), srv)
        cli = [x["input_sequence_length"] for x in turns]
        h.check(all(b > a for a, b in zip(cli, cli[1:])), "%s, session %s: ISL grows with the history" % (what, sid),
                cli)
    h.check([t["request_count"] for t in r.summary["turns"]] == [4, 4, 4], "%s: per-turn counts" % what,
            r.summary["turns"])


if __name__ == "__main__":
    harness.main(main)
