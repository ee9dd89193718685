# ctest: epoll-asan (run on epoll under ASan too: tests/CMakeLists.txt)
# ctest: run-serial (a re-sent request's schedule lag is judged against a 6 ms close delay)
"""Keep-alive as real servers do it: a server that closes kept-alive connections after a response (announced or
not, at once or just after the client reused the connection) costs no request; a lost request is re-sent once on
a fresh connection, counted in the summary, and its latency still runs from its intended start. A server that does
it after every response of a kind (llama-server after streamed ones) is learnt: after a few such closes the worker
stops reusing connections after those responses, so the wasted attempts (each a round trip in some request's
latency) stop, and the run says so."""
import json
import os
import statistics
import subprocess
import time

import harness
from profiling import profile
from servers import TcpServer

# --close-delay-ms: the client reuses the connection before the FIN comes, every time. The checks on a re-sent
# request's schedule lag leave 40% of it for the client's own delay in seeing the response end (its intended start),
# which a sanitizer build on a busy machine stretches to a millisecond or more.
DELAY_MS = 6
LIMIT = 3  # SG_SILENT_CLOSE_LIMIT (engine/sg_worker.h): silent closes in a row before a worker stops reusing
LEARNT = "the server closed kept-alive connections right after %s responses without saying so"


def resent(r):
    """The summary's count of re-sent requests; 0 when it has none (check_clean fails that run)."""
    return (r.summary or {}).get("resent_request_count", {}).get("avg", 0)


def check_clean(h, r, n, what):
    """Every request succeeded; the summary and the records agree."""
    if not r.summary:
        h.check(False, "%s: a summary was written" % what, r.stderr[-2000:])
        return False
    h.check(r.summary["error_request_count"]["avg"] == 0, "%s: no errors" % what, r.summary.get("error_summary"))
    h.check(r.summary["request_count"]["avg"] == n, "%s: %d requests measured" % (what, n),
            r.summary["request_count"]["avg"])
    h.check(len(r.records) == n and all(x["status"] == "ok" for x in r.records), "%s: %d ok records" % (what, n))
    h.check("resent_request_count" in r.summary and 0 <= resent(r) <= n,
            "%s: resent_request_count in the summary" % what, r.summary.get("resent_request_count"))
    return True


def lossy_server_runs(h):
    """llama-server's habit, with the race made certain: every response advertises Keep-Alive: timeout=5,
    max=100, and the connection closes DELAY_MS after it, dropping the request the client sent meanwhile."""
    args = ("--ttft-ms", 2, "--itl-ms", 1, "--close-after", 1, "--close-notice", "none", "--close-delay-ms",
            DELAY_MS)
    with h.mock(*args, record=True) as m:
        n = 60
        total_resent = 0
        for streaming in (True, False):
            for conc in (1, 4, 16):
                mode = ["--streaming"] if streaming else []
                what = "close after each response, %s, concurrency %d" % (
                    "streamed" if streaming else "not streamed", conc)
                r = profile(h, m.url, "--concurrency", conc, "--request-count", n, "--output-tokens-mean", 4,
                            "--synthetic-input-tokens-mean", 16, *mode)
                if not check_clean(h, r, n, what):
                    continue
                total_resent += resent(r)
                # Every reuse is lost until a worker has seen LIMIT in a row; each round of its slots loses one per
                # slot, so a worker re-sends at most LIMIT - 1 more than its slots. A few, not nearly all.
                workers = len({x["worker"] for x in r.records})
                bound = conc + workers * (LIMIT - 1)
                marked = [x for x in r.records if x["resent"]]
                h.check(1 <= resent(r) <= bound and len(marked) == resent(r),
                        "%s: a few lost requests re-sent, counted and marked, then no more (%d, at most %d)"
                        % (what, resent(r), bound), (resent(r), len(marked)))
                h.check("Re-sent: %d requests" % resent(r) in r.stdout, "%s: the console says how many were re-sent"
                        % what, r.stdout[-1500:])
                kind = "streamed" if streaming else "whole"
                ka = r.summary.get("keep_alive", {})
                h.check(LEARNT % kind in r.stderr and ka.get("reused_after_" + kind) is False and
                        ka.get("silent_closes", 0) >= LIMIT, "%s: the run says the server closes silently" % what,
                        (ka, r.stderr[-1500:]))
                if conc == 1:
                    # A re-sent request's slot freed at the previous response's end, which is its intended start; the
                    # connection it first went out on closed DELAY_MS later, so its send (and its latency from
                    # intended) carries that wait: it was measured from intended, not from the re-send.
                    key = "time_to_first_token_ms" if streaming else "request_latency_ms"
                    h.check(marked and all(x["schedule_lag_ms"] >= 0.6 * DELAY_MS for x in marked),
                            "%s: schedule lag of each re-sent request includes the lost attempt" % what,
                            [x["schedule_lag_ms"] for x in marked])
                    h.check(marked and all(x[key] >= 2 + 0.6 * DELAY_MS for x in marked),
                            "%s: %s from intended of each re-sent request includes it" % (what, key),
                            [x[key] for x in marked])
                    # once learnt, no request waits for a lost attempt: the rest go out at once
                    rest = [x["schedule_lag_ms"] for x in r.records if not x["resent"]][LIMIT + 1:]
                    h.check(rest and statistics.median(rest) < 0.4 * DELAY_MS,
                            "%s: after that, no lost attempt in the schedule lag (median %.2f ms)"
                            % (what, statistics.median(rest) if rest else -1))
        # open loop: arrivals keep their schedule (constant rate: intended times exactly 1/R apart)
        rate = 200.0
        r = profile(h, m.url, "--request-rate", rate, "--request-distribution", "constant", "--request-count", n,
                    "--output-tokens-mean", 4, "--synthetic-input-tokens-mean", 16, "--streaming")
        if check_clean(h, r, n, "close after each response, open loop"):
            intended = sorted(x["intended_ns"] for x in r.records)
            gaps = [(b - a) / 1e6 for a, b in zip(intended, intended[1:])]
            h.check(all(abs(g - 1e3 / rate) < 0.01 for g in gaps), "open loop: intended times keep the schedule",
                    gaps[:10])
        m.stop()
        answered = len(m.records())
        # the server answered each measured request exactly once: re-sends replaced lost ones, never doubled one
        h.check(answered == 7 * n, "the mock answered every request once (%d)" % answered)
        h.check(total_resent > 0, "requests were re-sent", total_resent)


def tls_runs(h):
    """The same over TLS (HTTP/1.1 by ALPN): a lost request is seen through the filter, re-sent on a connection
    with a handshake of its own, and counted."""
    with h.mock("--tls", "--tls-alpn", "http/1.1", "--ttft-ms", 2, "--itl-ms", 1, "--close-after", 1,
                "--close-notice", "none", "--close-delay-ms", DELAY_MS) as m:
        n, conc = 40, 4
        r = profile(h, m.url.replace("http://", "https://"), "-k", "--streaming", "--concurrency", conc,
                    "--request-count", n, "--output-tokens-mean", 4, "--synthetic-input-tokens-mean", 16)
        if check_clean(h, r, n, "TLS, close after each response"):
            workers = len({x["worker"] for x in r.records})
            h.check(1 <= resent(r) <= conc + workers * (LIMIT - 1),
                    "TLS: a few lost requests re-sent and counted, then no more", resent(r))
            h.check(LEARNT % "streamed" in r.stderr, "TLS: the run says the server closes silently", r.stderr[-800:])


def honest_server_runs(h):
    """A server that says when it will close: Connection: close on the last response, or a Keep-Alive max that
    counts down to it. The client believes it and never loses a request, though the FIN comes late."""
    n = 60
    for notice in ("connection", "max"):
        with h.mock("--ttft-ms", 2, "--itl-ms", 1, "--close-after", 3, "--close-notice", notice, "--close-delay-ms",
                    DELAY_MS) as m:
            for conc in (1, 4):
                what = "close after 3 responses, announced by %s, concurrency %d" % (notice, conc)
                r = profile(h, m.url, "--concurrency", conc, "--request-count", n, "--output-tokens-mean", 4,
                            "--synthetic-input-tokens-mean", 16, "--streaming")
                if check_clean(h, r, n, what):
                    h.check(resent(r) == 0, "%s: nothing re-sent (the client closed first)" % what, resent(r))
                    h.check("Re-sent" not in r.stdout, "%s: no re-send line" % what)


def occasional_close_runs(h):
    """A server that closes only now and then, unannounced (every fourth response here): each loss is re-sent, but
    the reuses in between succeed, so the worker keeps reusing connections and says nothing about the server."""
    with h.mock("--ttft-ms", 2, "--itl-ms", 1, "--close-after", 4, "--close-notice", "none", "--close-delay-ms",
                DELAY_MS, record=True) as m:
        n = 60
        r = profile(h, m.url, "--concurrency", 2, "--request-count", n, "--output-tokens-mean", 4,
                    "--synthetic-input-tokens-mean", 16, "--streaming", "--workers", 1)
        if check_clean(h, r, n, "close after every 4th response"):
            ka = r.summary.get("keep_alive", {})
            h.check(ka.get("reused_after_streamed") is True and "closed kept-alive connections" not in r.stderr,
                    "an occasional close does not stop reuse", (ka, r.stderr[-800:]))
            h.check(resent(r) >= n // 8, "its losses are re-sent (%d)" % resent(r))
        m.stop()
        conns = {x["conn"] for x in m.records()}
        h.check(len(conns) <= n // 3, "connections were reused (%d connections for %d requests)" % (len(conns), n))


def idle_fin_runs(h):
    """A connection the server closes (FIN) while it sits idle leaves the pool: with gaps between requests the
    next one opens a fresh connection instead of losing itself on the closed one."""
    with h.mock("--ttft-ms", 1, "--itl-ms", 1, "--close-after", 1, "--close-notice", "none") as m:
        n = 20
        r = profile(h, m.url, "--request-rate", 40, "--request-distribution", "constant", "--request-count", n,
                    "--output-tokens-mean", 2, "--synthetic-input-tokens-mean", 16, "--workers", 1)
        if check_clean(h, r, n, "idle connections closed by the server"):
            h.check(resent(r) == 0, "idle connections the server closed were not reused", resent(r))


def connection_cap_runs(h):
    """--max-connections with a server that closes: a freed descriptor lets the waiting requests go on (the run
    used to wait for ever once its only connection was closed)."""
    with h.mock("--ttft-ms", 1, "--itl-ms", 1, "--close-after", 1, "--close-notice", "none", "--close-delay-ms",
                DELAY_MS) as m:
        n = 30
        try:
            r = profile(h, m.url, "--concurrency", 3, "--request-count", n, "--max-connections", 1, "--workers", 1,
                        "--output-tokens-mean", 2, "--synthetic-input-tokens-mean", 16, "--streaming", timeout=20)
        except subprocess.TimeoutExpired:
            h.check(False, "one connection at most: the run ends within 20 s")
            return
        check_clean(h, r, n, "one connection at most")


class IdleTimeoutServer:
    """HTTP/1.1 on 127.0.0.1 that advertises Keep-Alive: timeout=1 and holds idle connections open past it, but
    closes without an answer any connection whose next request comes after more than a second of idleness: a
    client that ignores the timeout loses those requests. Bounded: it stops after 60 s (servers.TcpServer)."""

    BODY = b'{"choices":[{"message":{"content":"a b"}}],"usage":{"prompt_tokens":3,"completion_tokens":2}}'

    def __init__(self):
        self.server = TcpServer(self._handle, lifetime=60)
        self.url = self.server.url
        self.answered = 0
        self.dropped = 0

    def _handle(self, c, index, stop):
        c.settimeout(10)
        buf = b""
        idle_since = time.monotonic()
        try:
            while not stop.is_set():
                while b"\r\n\r\n" not in buf:
                    d = c.recv(65536)
                    if not d:
                        return
                    buf += d
                head, rest = buf.split(b"\r\n\r\n", 1)
                n = 0
                for line in head.split(b"\r\n")[1:]:
                    k, v = line.split(b":", 1)
                    if k.strip().lower() == b"content-length":
                        n = int(v)
                while len(rest) < n:
                    rest += c.recv(65536)
                buf = rest[n:]
                if time.monotonic() - idle_since > 1.0:
                    self.dropped += 1
                    return
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nKeep-Alive: timeout=1, max=100\r\n"
                          b"Content-Length: %d\r\n\r\n" % len(self.BODY) + self.BODY)
                self.answered += 1
                idle_since = time.monotonic()
        finally:
            c.close()

    def __enter__(self):
        self.server.__enter__()
        return self

    def __exit__(self, *a):
        self.server.__exit__(*a)


def idle_timeout_runs(h):
    """Keep-Alive: timeout=T: a connection idle longer than that is not reused."""
    with IdleTimeoutServer() as s:
        n = 4
        r = profile(h, s.url, "--request-rate", 0.7, "--request-distribution", "constant", "--request-count", n,
                    "--workers", 1, "--synthetic-input-tokens-mean", 8, timeout=30)
        if check_clean(h, r, n, "idle past the server's Keep-Alive timeout"):
            h.check(resent(r) == 0, "a connection idle past its timeout was not reused", resent(r))
        h.check(s.dropped == 0 and s.answered == n, "the server answered every request and dropped none",
                (s.answered, s.dropped))


def search_notice_once(h):
    """A capacity search runs many points, and each point's workers learn the server's habit afresh: the run says
    it once, not after every probe; each probe's summary still records it."""
    args = ("--ttft-ms", 2, "--itl-ms", 1, "--close-after", 1, "--close-notice", "none", "--close-delay-ms",
            DELAY_MS)
    with h.mock(*args) as m:
        r = profile(h, m.url, "--streaming", "--search", "max-concurrency", "--search-range", "1:4", "--slo",
                    "error_rate<0.5", "--request-count", 16, "--output-tokens-mean", 4,
                    "--synthetic-input-tokens-mean", 16, "--parameter-sweep-cooldown-seconds", 0, timeout=120)
        with open(os.path.join(r.dir, "search.json")) as f:
            probes = json.load(f)["probes"]
        learnt = 0
        for p in probes:
            with open(os.path.join(r.dir, p["artifact_subdir"], "profile_export_surge.json")) as f:
                ka = json.load(f).get("keep_alive", {})
            learnt += ka.get("reused_after_streamed") is False
        h.check(learnt >= 2, "the workers of several probes learnt the habit (%d of %d probes)" % (learnt,
                                                                                                   len(probes)))
        told = r.stderr.count(LEARNT % "streamed")
        h.check(told == 1, "the notice is printed once in the search's stderr (%d times)" % told, r.stderr[-3000:])


def main(h):
    lossy_server_runs(h)
    search_notice_once(h)
    tls_runs(h)
    honest_server_runs(h)
    occasional_close_runs(h)
    idle_fin_runs(h)
    connection_cap_runs(h)
    idle_timeout_runs(h)


if __name__ == "__main__":
    harness.main(main)
