"""Multi-turn sessions (docs/sessions.md): the history carries the server's real replies, the session headers, the
delays between turns, open-loop session arrivals, per-turn metrics, a failed turn's remaining turns counted, and a
multi_turn input file, also replayed at its timestamps (--fixed-schedule)."""
import json
import os
import threading
import time

import harness
from profiling import SLOW, HttpServer, profile

# How late a turn may go out. A clean-clone CI run under TSan, two tests at a time on 2 cores, saw one turn 27 ms
# late: the client without the CPU, which the sanitizer builds widen.
LATE_NS = 60e6 if SLOW else 20e6


class ChatStub:
    """A chat server whose every reply is distinct ("reply-N"), failing turn fail_turn of session fail_session."""

    def __init__(self, fail_session=None, fail_turn=None, delay_s=0):
        self.n = 0
        self.delay_s = delay_s
        self.lock = threading.Lock()
        self.fail = (fail_session, fail_turn)
        self.server = HttpServer(self.respond)

    def respond(self, line, headers, body):
        if self.delay_s:
            time.sleep(self.delay_s)
        req = json.loads(body)
        turn = len(req["messages"]) // 2
        if (headers.get("x-session-id"), turn) == self.fail:
            msg = b'{"error":{"message":"boom"}}'
            return b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: %d\r\n\r\n%s" % (len(msg), msg)
        with self.lock:
            self.n += 1
            text = "reply-%d" % self.n
        out = json.dumps({"choices": [{"message": {"role": "assistant", "content": text}}],
                          "usage": {"prompt_tokens": 1, "completion_tokens": 1}}).encode()
        return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(out)) + out


def history_checks(h, stub):
    reqs = [(hd, json.loads(b)) for _, hd, b in stub.server.requests]
    h.check(len(reqs) == 12, "12 turns sent", len(reqs))
    by_sess = {}
    for hd, body in reqs:
        h.check(hd.get("x-session-id") and hd.get("x-session-id") == hd.get("x-correlation-id"),
                "X-Session-ID and X-Correlation-ID present and equal", hd)
        by_sess.setdefault(hd["x-session-id"], []).append(body["messages"])
    h.check(len(by_sess) == 4, "4 distinct session ids", list(by_sess))
    replies = {}  # every reply the stub sent, by the request that got it: recovered from the next turn's history
    for sid, turns in by_sess.items():
        turns.sort(key=len)
        h.check([len(t) for t in turns] == [1, 3, 5], "session %s: history grows by a turn each time" % sid,
                [len(t) for t in turns])
        for k in range(1, len(turns)):
            h.check(turns[k][:len(turns[k - 1])] == turns[k - 1][:len(turns[k - 1])],
                    "session %s turn %d carries the earlier messages in order" % (sid, k))
            a = turns[k][2 * k - 1]
            h.check(a["role"] == "assistant" and a["content"].startswith("reply-"),
                    "session %s turn %d: the server's real reply as the assistant message" % (sid, k), a)
            replies[a["content"]] = sid
        h.check(all(m["role"] == ("user" if i % 2 == 0 else "assistant") for i, m in enumerate(turns[-1])),
                "roles alternate user/assistant", turns[-1])
    h.check(len(replies) == 8, "every carried reply is a distinct real one", replies)


def main(h):
    common = ["--conversation-turn-mean", 3, "--synthetic-input-tokens-mean", 4, "--workers", 1]
    # -- history, headers, delays: a closed loop of 2 sessions at a time, 3 turns each, 40 ms after each turn
    stub = ChatStub()
    with stub.server:
        r = profile(h, stub.server.url, *common, "--conversation-turn-delay-mean", 40, "--concurrency", 2,
                    "--request-count", 12, "--conversation-num", 4)
    history_checks(h, stub)
    recs = r.records
    h.check(len(recs) == 12 and all(x["status"] == "ok" for x in recs), "12 ok records", len(recs))
    by = {}
    for x in recs:
        by.setdefault(x["session"], {})[x["turn"]] = x
    h.check(sorted(len(t) for t in by.values()) == [3, 3, 3, 3], "turns 0..2 of 4 sessions in the JSONL", by.keys())
    for sid, turns in by.items():
        for k in (1, 2):
            prev, cur = turns[k - 1], turns[k]
            gap_ms = (cur["intended_ns"] - prev["end_ns"]) / 1e6
            h.check(abs(gap_ms - 40) < 0.01, "session %s turn %d intended 40 ms after turn %d ended" % (sid, k, k - 1),
                    gap_ms)
            h.check(cur["sent_ns"] >= prev["end_ns"] + 40e6 and cur["sent_ns"] - cur["intended_ns"] < LATE_NS,
                    "turn %d sent after the delay, on time" % k,
                    (cur["sent_ns"], prev["end_ns"], "late by", cur["sent_ns"] - cur["intended_ns"], "bound", LATE_NS))
            h.check(cur["input_sequence_length"] > prev["input_sequence_length"], "ISL grows with the history")
    turns = r.summary.get("turns", [])
    h.check([t["turn"] for t in turns] == [0, 1, 2] and all(t["request_count"] == 4 for t in turns),
            "summary: per-turn counts", turns)
    h.check(all("request_latency" in t and "input_sequence_length" in t for t in turns), "per-turn distributions")
    h.check("Per turn" in r.stdout, "the table has the per-turn lines", r.stdout[-800:])
    # AIPerf's records: the session's X-Correlation-ID and the turn's index, line for line with surge's JSONL
    with open(os.path.join(r.dir, "profile_export.jsonl")) as f:
        meta = [json.loads(line)["metadata"] for line in f]
    h.check(len(meta) == len(recs) and all(m["x_correlation_id"] == str(x["session"]) and m["turn_index"] == x["turn"]
                                           for m, x in zip(meta, recs)),
            "profile_export.jsonl: x_correlation_id is the session, turn_index the turn", meta[:2])

    # -- a failing turn: session 1's turn 1 fails, its turns 2 and 3 are counted as class session, not sent
    stub = ChatStub(fail_session="1", fail_turn=1)
    with stub.server:
        r = profile(h, stub.server.url, "--conversation-turn-mean", 4, "--synthetic-input-tokens-mean", 4,
                    "--workers", 1, "--concurrency", 2, "--request-count", 16, check_rc=1)
    h.check(len(stub.server.requests) == 14, "the failed session's last two turns were not sent",
            len(stub.server.requests))
    errs = r.errors_by_class()
    h.check(errs.get("http") == 1 and errs.get("session") == 2, "one http error, two session errors", errs)
    sess = [x for x in r.records if x.get("error_class") == "session"]
    h.check(sorted(x["turn"] for x in sess) == [2, 3] and all(x["session"] == 1 for x in sess),
            "the session errors are session 1's turns 2 and 3", sess)
    h.check(all("turn 1 failed" in x["error"] for x in sess), "their message names the failed turn", sess[:1])
    h.check(r.summary["request_count"]["avg"] + r.summary["error_request_count"]["avg"] == 16, "every turn counted")

    # -- open loop: sessions arrive at the rate; the mock answers
    with h.mock("--ttft-ms", 2, "--itl-ms", 1, "--output-tokens", 3) as m:
        r = profile(h, m.url, *common, "--request-rate", 20, "--request-distribution", "constant",
                    "--request-count", 60, "--streaming")
    firsts = sorted(x["intended_ns"] for x in r.records if x["turn"] == 0)
    gaps = [(b - a) / 1e6 for a, b in zip(firsts, firsts[1:])]
    h.check(len(firsts) == 20 and all(abs(g - 50) < 0.5 for g in gaps), "sessions arrive every 50 ms at 20/s", gaps)
    h.check([t["request_count"] for t in r.summary["turns"]] == [20, 20, 20], "per-turn counts, open loop")
    h.check("time_to_first_token" in r.summary["turns"][2], "per-turn TTFT when streaming")

    # -- HTTP/2 (h2c): each turn, rendered when due, goes out as a stream of its own
    with h.mock("--ttft-ms", 2, "--itl-ms", 1, "--output-tokens", 3, "--record", h.path("h2.rec")) as m:
        r = profile(h, m.url, *common, "--http2", "--concurrency", 4, "--request-count", 24, "--streaming")
    recs = r.records
    h.check(len(recs) == 24 and all(x["status"] == "ok" for x in recs), "HTTP/2: 24 ok turns",
            [x.get("error") for x in recs if x["status"] != "ok"][:3])
    h.check([t["request_count"] for t in r.summary.get("turns", [])] == [8, 8, 8], "HTTP/2: per-turn counts",
            r.summary.get("turns"))
    by = {}
    for x in recs:
        by.setdefault(x["session"], {})[x["turn"]] = x
    h.check(all(t[2]["input_sequence_length"] > t[1]["input_sequence_length"] > t[0]["input_sequence_length"]
                for t in by.values() if len(t) == 3), "HTTP/2: ISL grows with the history")
    h.check("HTTP/2" in r.stderr, "HTTP/2: the run says it", r.stderr[:600])
    with open(h.path("h2.rec")) as f:
        seen = [json.loads(line) for line in f]
    h.check(len(seen) == 24 and len({x["conn"] for x in seen}) == 1,
            "HTTP/2: the mock saw every turn, the 4 sessions' streams on one connection", seen[:2])

    # -- a sweep: each load point runs sessions of its own, its --request-count in turns
    with h.mock("--ttft-ms", 2, "--itl-ms", 1, "--output-tokens", 3) as m:
        r = profile(h, m.url, *common, "--concurrency", "1,3", "--request-count", 12, "--streaming")
    for point in ("concurrency_1", "concurrency_3"):
        path = os.path.join(r.dir, point, "profile_export_surge.json")
        s = json.load(open(path)) if os.path.exists(path) else {}
        h.check(s.get("request_count", {}).get("avg") == 12 and
                [t["request_count"] for t in s.get("turns", [])] == [4, 4, 4],
                "sweep point %s: 12 turns, 4 of each index" % point, s.get("turns"))

    # -- a multi_turn input file (detected), grouped by session_id, delays from the file
    path = h.path("conv.jsonl")
    with open(path, "w") as f:
        f.write(json.dumps({"session_id": "a", "turns": [{"text": "hello there"}, {"text": "and more", "delay": 30}]})
                + "\n")
        f.write(json.dumps({"session_id": "b", "text": "single b one"}) + "\n")
        f.write(json.dumps({"session_id": "a", "turns": [{"texts": ["third", "turn"], "delay": 10}]}) + "\n")
        f.write(json.dumps({"session_id": "b", "text": "b two", "delay": 5}) + "\n")
    stub = ChatStub()
    with stub.server:
        r = profile(h, stub.server.url, "--input-file", path, "--concurrency", 1, "--request-count", 5,
                    "--workers", 1)
    msgs = [json.loads(b)["messages"] for _, _, b in stub.server.requests]
    h.check([m[-1]["content"] for m in msgs] == ["hello there", "and more", "third\nturn", "single b one", "b two"],
            "file turns in session order, texts joined", [m[-1]["content"] for m in msgs])
    h.check(len(msgs[2]) == 5 and msgs[2][0]["content"] == "hello there", "the file's session a carries its history")
    ra = sorted((x for x in r.records if x["session"] == 0), key=lambda x: x["turn"])
    h.check((ra[1]["intended_ns"] - ra[0]["end_ns"]) / 1e6 == 30, "the file's delay", ra[:2])

    # -- --fixed-schedule with a multi_turn file: a session starts at its first turn's timestamp; a later turn goes
    # at its own timestamp, or when the turn before it ended if that is later, or its delay after that turn ended.
    # Timestamps in ms, halved by the speedup; every reply takes 30 ms.
    path = h.path("timed.jsonl")
    with open(path, "w") as f:
        for line in [{"session_id": "a", "turns": [{"text": "a0", "timestamp": 2000}, {"text": "a1", "timestamp": 2200},
                                                   {"text": "a2", "delay": 20}]},
                     {"session_id": "b", "turns": [{"text": "b0", "timestamp": 2100}, {"text": "b1", "timestamp": 2120}]},
                     {"session_id": "c", "turns": [{"text": "c0", "timestamp": 2000}]}]:
            f.write(json.dumps(line) + "\n")
    stub = ChatStub(delay_s=0.03)
    with stub.server:
        r = profile(h, stub.server.url, "--input-file", path, "--fixed-schedule", "--fixed-schedule-speedup", 2,
                    "--workers", 1)
    recs = {(x["session"], x["turn"]): x for x in r.records}
    h.check(len(r.records) == 6 and all(x["status"] == "ok" for x in r.records), "fixed schedule: the 6 turns, ok",
            [x.get("error") for x in r.records])
    if len(recs) == 6 and all(k in recs for k in [(0, 0), (0, 1), (0, 2), (1, 0), (2, 0), (2, 1)]):
        t0 = recs[(0, 0)]["intended_ns"]
        rel = {k: (x["intended_ns"] - t0) / 1e6 for k, x in recs.items()}
        # sessions in the order of their first timestamps (a and c tie: file order), ids 0, 1, 2
        h.check(rel[(1, 0)] == 0 and rel[(2, 0)] == 50, "sessions start at their first timestamps / 2 (c at 0, b at "
                "50 ms)", rel)
        h.check(rel[(0, 1)] == 100, "a later turn at its own timestamp (a1 at 100 ms)", rel)
        h.check(recs[(2, 1)]["intended_ns"] == recs[(2, 0)]["end_ns"] and rel[(2, 1)] > 60,
                "a turn stamped before the turn it follows ended goes when that turn ends (b1)", rel)
        h.check(recs[(0, 2)]["intended_ns"] - recs[(0, 1)]["end_ns"] == 20e6, "a turn with a delay: 20 ms after the "
                "turn before ended (a2; delays are not sped up)", rel)
        h.check(all(0 <= x["sent_ns"] - x["intended_ns"] < LATE_NS for x in r.records), "each sent on time",
                [x["sent_ns"] - x["intended_ns"] for x in r.records])
        sent = [json.loads(b)["messages"][-1]["content"] for _, _, b in stub.server.requests]
        h.check(sorted(sent) == ["a0", "a1", "a2", "b0", "b1", "c0"] and len(json.loads(
            [b for _, _, b in stub.server.requests if json.loads(b)["messages"][-1]["content"] == "a2"][0])
            ["messages"]) == 5, "the server saw each turn once, a2 with its history", sent)
    # refused: a session whose first turn has no timestamp (naming its line); synthetic sessions
    with open(path, "a") as f:
        f.write(json.dumps({"session_id": "d", "turns": [{"text": "d0"}, {"text": "d1", "timestamp": 5}]}) + "\n")
    p = h.run([h.surge, "profile", "-m", "x", "-u", "127.0.0.1:1", "--input-file", path, "--fixed-schedule",
               "--no-progress"], timeout=30)
    h.check(p.returncode == 2 and "line 4" in p.stderr and "timestamp" in p.stderr,
            "fixed schedule: a session without a first timestamp refused, its line named", p.stderr)

    # -- refused before anything is sent
    for args, needle in [(["--endpoint-type", "embeddings"], "--endpoint-type"),
                         (["--conversation-turn-delay-mean", "5", "--conversation-turn-mean", "1"], "conversation"),
                         (["--fixed-schedule"], "--fixed-schedule")]:
        p = h.run([h.surge, "profile", "-m", "x", "-u", "127.0.0.1:1", "--conversation-turn-mean", "3",
                   "--no-progress"] + args, timeout=30)
        h.check(p.returncode == 2 and needle in p.stderr, "sessions with %s refused" % args, p.stderr)


if __name__ == "__main__":
    harness.main(main)
