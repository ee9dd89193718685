# ctest: epoll-asan (run on epoll under ASan too: tests/CMakeLists.txt)
"""The server-side faults of issue 23, each injected by `surge mock --fault` (docs/mock.md#faults).

Every case checks what a fault must never break: each request counted exactly once (ok + failed + cancelled ==
sent, one JSONL line each), the count matching what the mock saw (its --record lines, which name the fault that
hit each request), the failure class, the exit status, and that the run ends within a bound. The stall and
throttle cases check the latency they add too.

Client faults these cases expose are asserted on accounting and no-hang only (their fixes belong to other parts
of issue 23): after a crash an HTTP/1.1 run stops reusing connections, and a closed loop retries a refused
connect with no back-off.
"""
import http.client
import json
import re
import socket
import time

import harness
from profiling import SLOW, profile

TTFT = 20  # ms, the mock's --ttft-ms in every case
ITL = 5


def bound(s):
    """A wall-clock bound for a run, widened under sanitizers."""
    return s * 3 if SLOW else s


class Case:
    """One run of surge profile against a mock with faults; the checks every case shares."""

    def __init__(self, h, name, mock_args, prof_args, rc, wall_s, tls=False):
        self.h = h
        self.name = name
        mock_args = ["--ttft-ms", TTFT, "--itl-ms", ITL] + list(mock_args)
        prof_args = [str(a) for a in prof_args]
        if tls:
            mock_args = ["--tls"] + mock_args
            prof_args = ["-k"] + prof_args
        with h.mock(*mock_args, record=True) as m:
            url = m.url.replace("http://", "https://") if tls else m.url
            t0 = time.monotonic()
            self.r = profile(h, url, *prof_args, check_rc=rc, timeout=bound(wall_s) + 30)
            self.wall = time.monotonic() - t0
        self.mock = m
        self.seen = m.records()
        self.mock_err = m.stderr()
        r = self.r
        h.check(self.wall < bound(wall_s), "%s: the run ends within %.1f s (took %.2f s)" % (name, bound(wall_s),
                                                                                            self.wall))
        h.check(r.summary is not None, "%s: the summary JSON loads" % name, r.stderr[-2000:])
        s = r.summary or {}
        self.ok = s.get("request_count", {}).get("avg", 0)
        self.failed = s.get("error_request_count", {}).get("avg", 0)
        self.cancelled = s.get("cancelled_request_count", {}).get("avg", 0)
        self.resent = s.get("resent_request_count", {}).get("avg", 0)
        self.sent = len(r.records)
        h.check(self.ok + self.failed + self.cancelled == self.sent,
                "%s: every request counted once: ok %d + failed %d + cancelled %d == %d JSONL lines"
                % (name, self.ok, self.failed, self.cancelled, self.sent))
        statuses = {"ok": self.ok, "error": self.failed, "cancelled": self.cancelled}
        for st, n in statuses.items():
            got = sum(1 for x in r.records if x["status"] == st)
            h.check(got == n, "%s: %d JSONL lines say %s, as the summary (%d)" % (name, got, st, n))
        self.classes = r.errors_by_class()

    def hit(self, fault):
        """The mock's --record lines of requests the fault hit."""
        return sum(1 for x in self.seen if x.get("fault") == fault)

    def check_classes(self, allowed):
        self.h.check(set(self.classes) <= set(allowed), "%s: failures are of class %s only" % (self.name, allowed),
                     self.r.summary and self.r.summary.get("error_summary"))

    def check_crash_seen(self, lost):
        """After a crash: the mock saw every answered request and those it left unanswered; at most also the
        failed ones (a response rendered but cut off by the crash) and the re-sends (whose first try may never have
        reached it)."""
        lo, hi = self.ok + lost, self.ok + self.failed + self.resent
        self.h.check(lo <= len(self.seen) <= hi, "%s: the mock saw %d requests: at least the ok %d + the %d it left "
                     "unanswered, at most ok + failed %d + re-sent %d" % (self.name, len(self.seen), self.ok, lost,
                                                                          self.failed, self.resent))

    def check_seen(self, want, what):
        self.h.check(len(self.seen) == want, "%s: the mock saw %d requests, %s (%d)" % (self.name, len(self.seen),
                                                                                        what, want))


def ttfts(c):
    return [x["time_to_first_token_ms"] for x in c.r.records if x.get("time_to_first_token_ms") is not None]


def crash_lost(h, c):
    """The requests the mock's crash left unanswered, from its exit summary."""
    m = re.search(r"the crash closed (\d+) connections; (\d+) requests were never answered", c.mock_err)
    h.check(m is not None, "%s: the mock says what its crash left unanswered" % c.name, c.mock_err[-1000:])
    return int(m.group(2)) if m else 0


def per_request(h, tls):
    tag = "tls " if tls else ""
    stream = ["--streaming", "--output-tokens-mean", 10]
    # rst over HTTP/1.1 (over TLS: ALPN http/1.1 only): a TCP reset half way through the stream
    alpn = ["--tls-alpn", "http/1.1"] if tls else []
    c = Case(h, tag + "rst http/1.1", alpn + ["--fault", "rst@0.5"], stream + ["--concurrency", 2,
             "--request-count", 20], 1, 10, tls)
    c.check_seen(20, "one per request sent")
    h.check(c.failed == c.hit("rst") and c.failed > 0, "%s: failed %d == requests the mock reset %d"
            % (c.name, c.failed, c.hit("rst")))
    c.check_classes(["disconnect"])
    groups = (c.r.summary or {}).get("error_summary", [])
    h.check(all("reset" in g["message"] for g in groups), "%s: a reset, not a close" % c.name, groups)

    # rst over HTTP/2: RST_STREAM CANCEL on the hit streams only; the connection and its other streams go on
    c = Case(h, tag + "rst h2", ["--fault", "rst:cancel@0.5"], stream + ["--http2", "--concurrency", 2,
             "--request-count", 20], 1, 10, tls)
    c.check_seen(20, "one per request sent")
    h.check(c.failed == c.hit("rst") and c.failed > 0, "%s: failed %d == streams the mock reset %d"
            % (c.name, c.failed, c.hit("rst")))
    c.check_classes(["stream_reset"])
    groups = (c.r.summary or {}).get("error_summary", [])
    h.check(all("CANCEL" in g["message"] for g in groups), "%s: the message names the error code" % c.name, groups)

    # cut after the response head (HTTP/1.1), after 200 bytes of a whole answer, and in an HTTP/2 stream's body
    for name, margs, pargs in (("cut head", ["--fault", "cut:head@0.5"], stream),
                               ("cut 200 bytes", ["--fault", "cut:200"], ["--output-tokens-mean", 10]),
                               ("cut h2", ["--fault", "cut:60@0.3"], stream + ["--http2"]),
                               ("half-close head", ["--fault", "half-close:head@0.5"], stream),
                               ("half-close h2", ["--fault", "half-close:30@0.5"], stream + ["--http2"])):
        fault = margs[1].split(":")[0].split("@")[0]
        if "h2" not in name:
            margs = alpn + margs
        c = Case(h, tag + name, margs, pargs + ["--concurrency", 2, "--request-count", 20,
                                                "--request-timeout", 10], 1, 5, tls)
        c.check_classes(["disconnect"])
        if "h2" in name:
            # the connection goes with every stream on it: the cut one fails, and so do its neighbours in flight
            c.check_seen(20 + c.resent, "one per request sent, plus the re-sends")
            h.check(c.failed >= c.hit(fault) > 0, "%s: failed %d >= requests the fault hit %d"
                    % (c.name, c.failed, c.hit(fault)))
        else:
            c.check_seen(20, "one per request sent")
            h.check(c.failed == c.hit(fault) > 0, "%s: failed %d == requests the fault hit %d"
                    % (c.name, c.failed, c.hit(fault)))


def goaway(h, tls):
    tag = "tls " if tls else ""
    stream = ["--streaming", "--output-tokens-mean", 10, "--concurrency", 2, "--request-count", 20]
    # graceful: the streams up to the last one processed are answered, the client opens a new connection
    c = Case(h, tag + "goaway h2", ["--fault", "goaway:5"], stream + ["--http2"], 0, 5, tls)
    c.check_seen(20, "one per request sent")
    h.check(c.ok == 20 and c.hit("goaway") >= 3, "%s: every request answered (%d), GOAWAY sent on %d connections"
            % (c.name, c.ok, c.hit("goaway")))
    # with an error code the connection ends at once. The stream the GOAWAY names as processed (and any under it)
    # may have been worked on, so it is not re-sent (the server would do it twice): it fails, naming the GOAWAY.
    # Streams above the last-stream-id were not processed: those are re-sent (resent).
    c = Case(h, tag + "goaway h2 error", ["--fault", "goaway:5,protocol"], stream + ["--http2"], 1, 5, tls)
    c.check_seen(20 + c.resent, "one per request sent, plus the re-sends of unprocessed streams")
    h.check(c.ok + c.failed == 20 and c.failed == c.hit("goaway") > 0,
            "%s: the %d streams GOAWAY named as processed failed (%d), not re-sent; the rest answered (%d)"
            % (c.name, c.hit("goaway"), c.failed, c.ok))
    c.check_classes(["disconnect"])
    groups = (c.r.summary or {}).get("error_summary", [])
    h.check(all("GOAWAY (PROTOCOL_ERROR)" in g["message"] for g in groups), "%s: the failure names the GOAWAY"
            % c.name, groups)
    # HTTP/1.1's kind: Connection: close on the N-th answer, or (error) the N-th request unanswered and a close
    alpn = ["--tls-alpn", "http/1.1"] if tls else []
    c = Case(h, tag + "goaway http/1.1", alpn + ["--fault", "goaway:3"], stream, 0, 5, tls)
    c.check_seen(20, "one per request sent")
    h.check(c.ok == 20 and c.hit("goaway") > 0, "%s: every request answered" % c.name)
    c = Case(h, tag + "goaway http/1.1 error", alpn + ["--fault", "goaway:3,internal"], stream, 0, 5, tls)
    c.check_seen(20 + c.resent, "one per request sent, plus the re-sends")
    h.check(c.ok == 20 and c.resent == c.hit("goaway") > 0, "%s: all answered, the %d dropped re-sent (%d)"
            % (c.name, c.hit("goaway"), c.resent))


def stalls(h):
    # a 500 ms write stall before the first token: in TTFT from the intended start
    c = Case(h, "stall-write first token", ["--fault", "stall-write:500"],
             ["--streaming", "--output-tokens-mean", 4, "--concurrency", 2, "--request-count", 4], 0, 5)
    c.check_seen(4, "one per request sent")
    h.check(c.hit("stall-write") == 4, "%s: every request stalled" % c.name)
    t = ttfts(c)
    slack = 100 if SLOW else 50
    h.check(len(t) == 4 and all(500 + TTFT - 2 <= x <= 500 + TTFT + slack for x in t),
            "%s: TTFT in [%d, %d] ms: %s" % (c.name, 500 + TTFT - 2, 500 + TTFT + slack, t))
    # mid-stream: before token 5 of 10 the stall shows as one long gap, not in TTFT
    c = Case(h, "stall-write mid-stream", ["--fault", "stall-write:300,5"],
             ["--streaming", "--output-tokens-mean", 10, "--concurrency", 2, "--request-count", 4], 0, 5)
    # The mock's schedule is absolute (token k at TTFT + k ITL from the request, the stall added from token 5 on), so
    # token 5 comes at least TTFT + 5 ITL + 300 ms after the intended start however late token 4 was; a late token 4
    # (a busy mock: 3.5 ms with four tests on two cores) shortens the gap by as much, so its lower bound keeps only
    # enough room to show the stall is there, in that gap
    gaps = [x["token_times_ms"][5] - x["token_times_ms"][4] for x in c.r.records]
    fifth = [x["token_times_ms"][5] for x in c.r.records]
    due = TTFT + 5 * ITL + 300
    h.check(all(due - 2 <= t for t in fifth), "%s: token 5 at least %d ms after the intended start: %s"
            % (c.name, due - 2, fifth))
    h.check(all(300 + ITL - slack / 2 <= g <= 300 + ITL + slack for g in gaps),
            "%s: the gap before token 5 in [%d, %d] ms: %s" % (c.name, 300 + ITL - slack / 2, 300 + ITL + slack,
                                                                gaps))
    h.check(all(x <= TTFT + slack for x in ttfts(c)), "%s: TTFT untouched: %s" % (c.name, ttfts(c)))

    # stop reading from 300 ms for 500 ms: what arrives in the window is taken at its end. The window is timed from
    # the first request: from the mock's start, surge's start-up (52 ms late under TSan in CI) cut it short
    c = Case(h, "stall-read", ["--fault-origin", "request", "--fault", "stall-read:300,500"],
             ["--streaming", "--output-tokens-mean", 4, "--request-rate", 20, "--request-count", 30], 0, 5)
    c.check_seen(30, "one per request sent")
    held = c.hit("stall-read")
    t = ttfts(c)
    late = sum(1 for x in t if x > TTFT + slack)
    # each held request waits out the rest of the window; those in its last `slack` ms look on time
    h.check(held >= 6 and held - 3 <= late <= held, "%s: requests with TTFT over %d ms (%d) are the %d held, "
            "less those at the window's end" % (c.name, TTFT + slack, late, held))
    h.check(450 <= max(t) <= 500 + TTFT + slack, "%s: the longest TTFT (%.0f ms) is about the window (500 ms)"
            % (c.name, max(t)))


def throttles(h, tls):
    tag = "tls " if tls else ""
    c = Case(h, tag + "trickle", ["--fault", "trickle:20,10"], ["--output-tokens-mean", 10, "--concurrency", 1,
             "--request-count", 2], 0, 10, tls)
    c.check_seen(2, "one per request sent")
    h.check(c.hit("trickle") == 2, "%s: both requests on trickled connections" % c.name)
    # 20 bytes every 10 ms: a response of B bytes takes at least (B / 20 - 1) x 10 ms
    for x in c.r.records:
        floor = (x["response_bytes"] / 20 - 1) * 10
        h.check(x["request_latency_ms"] >= floor, "%s: latency %.0f ms >= %.0f ms for %d bytes 20 at a time"
                % (c.name, x["request_latency_ms"], floor, x["response_bytes"]))
    if tls:
        return
    # bwcap: time a whole response straight from the mock: bytes / rate at least
    with h.mock("--ttft-ms", 0, "--itl-ms", 0, "--output-tokens", 200, "--fault", "bwcap:4000") as m:
        conn = http.client.HTTPConnection("127.0.0.1", m.port, timeout=20)
        t0 = time.monotonic()
        conn.request("POST", "/v1/completions", body='{"model":"m","prompt":"a b"}',
                     headers={"Content-Type": "application/json"})
        body = conn.getresponse().read()
        took = time.monotonic() - t0
        conn.close()
    # 80 bytes every 20 ms: the body alone takes at least (bytes / 80 - 1) x 20 ms (the first send is at once)
    lo = (len(body) / 80 - 1) * 0.02
    hi = (len(body) + 300) / 4000 + (2 if SLOW else 0.5)
    h.check(lo <= took <= hi, "bwcap 4000 B/s: a %d-byte body in %.3f s, in [%.3f, %.3f] s" % (len(body), took, lo,
                                                                                              hi))
    c = Case(h, "bwcap", ["--fault", "bwcap:4000"], ["--output-tokens-mean", 20, "--concurrency", 2,
             "--request-count", 4], 0, 10)
    c.check_seen(4, "one per request sent")
    h.check(c.hit("bwcap") == 4, "%s: every request on a capped connection" % c.name)


def crashes(h, tls):
    tag = "tls " if tls else ""
    # Each crash is timed from the run's first request (--fault-origin request). Timed from the mock's start, it raced
    # surge's start-up: under sanitizers, with another test beside it (CI, ASan, epoll), surge once took over 300 ms
    # to its pre-flight connect, found the port closed and failed the run (exit 2).
    origin = ["--fault-origin", "request"]
    # open loop: the crash at 500 ms fails what was in flight (disconnect) and the arrivals while the port is
    # closed (connect refused); after the restart at 1 s requests succeed again
    c = Case(h, tag + "crash open loop", origin + ["--fault", "crash:500,500"],
             ["--streaming", "--output-tokens-mean", 10, "--request-rate", 40, "--request-count", 80], 1, 10, tls)
    lost = crash_lost(h, c)
    c.check_classes(["connect", "disconnect", "tls"])
    c.check_crash_seen(lost)
    refused = c.classes.get("connect", 0)
    h.check(refused >= 5, "%s: arrivals while the port was closed were refused (%d)" % (c.name, refused))
    after = [x for x in c.r.records if x["intended_ns"] > 1.3e9]
    h.check(after and all(x["status"] == "ok" for x in after), "%s: every request after the restart succeeds (%d)"
            % (c.name, len(after)))
    h.check("listening again" in c.mock_err, "%s: the mock listened again" % c.name, c.mock_err[-500:])
    # closed loop: the same crash; surge has no back-off for refused connects yet (issue 23), so only the
    # accounting and the end of the run are checked here
    c = Case(h, tag + "crash closed loop", origin + ["--fault", "crash:300,300"],
             ["--streaming", "--output-tokens-mean", 10, "--concurrency", 2, "--benchmark-duration", 1.0,
              "--benchmark-grace-period", 2], 1, 15, tls)
    lost = crash_lost(h, c)
    c.check_classes(["connect", "disconnect", "tls"])
    c.check_crash_seen(lost)
    # the port stays closed (no DOWN): every request after the crash fails, and the run still ends
    c = Case(h, tag + "crash for good", origin + ["--fault", "crash:300"],
             ["--output-tokens-mean", 4, "--request-rate", 20, "--request-count", 20], 1, 10, tls)
    h.check("it stays down" in c.mock_err, "%s: the mock says it stays down" % c.name, c.mock_err[-500:])
    c.check_classes(["connect", "disconnect", "tls"])
    c.check_crash_seen(crash_lost(h, c))


def fault_origin(h):
    """--fault-origin request: a crash timed from the first request the mock takes, not from its start. Two workers:
    the one that takes no request learns when the clock started from the other, and crashes with it."""
    wait = 0.6 if SLOW else 0.3  # past the crash's time, for the workers to close their ports
    with h.mock("--workers", 2, "--fault-origin", "request", "--fault", "crash:300") as m:
        time.sleep(0.6)  # past 300 ms from the mock's start: no crash yet, for no request came
        conn = http.client.HTTPConnection("127.0.0.1", m.port, timeout=10)
        try:
            t_req = time.monotonic()
            conn.request("POST", "/v1/completions", json.dumps({"model": "m", "prompt": "hi", "max_tokens": 2}),
                         {"Content-Type": "application/json"})
            resp = conn.getresponse()
            status = resp.status
            resp.read()
        except OSError as e:
            status = repr(e)
        conn.close()
        h.check(status == 200, "fault origin: a request 600 ms after the mock's start is answered (no crash yet)",
                status)
        time.sleep(max(0.0, t_req + 0.3 + wait - time.monotonic()))
        refused = 0
        for _ in range(16):  # SO_REUSEPORT spreads these over both workers' ports
            s = socket.socket()
            s.settimeout(5)
            try:
                s.connect(("127.0.0.1", m.port))
            except ConnectionRefusedError:
                refused += 1
            finally:
                s.close()
        h.check(refused == 16, "fault origin: 300 + %d ms after the first request both workers' ports are closed "
                "(%d of 16 connects refused)" % (wait * 1000, refused))
    crashed = [float(t) for t in re.findall(r"worker \d+ crashed at ([\d.]+) s", m.stderr())]
    h.check(len(crashed) == 2 and all(t >= 0.85 for t in crashed), "fault origin: each worker crashed 300 ms after "
            "the request (0.9 s or more after the mock's start)", crashed)
    p = h.run([h.surge, "mock", "--port", "0", "--fault-origin", "first"], timeout=10)
    h.check(p.returncode == 2 and "--fault-origin" in p.stderr and "start or request" in p.stderr,
            "surge mock --fault-origin first: exit 2 naming the choices", (p.returncode, p.stderr))


def bad_flags(h):
    for val, needle in (("bogus", "unknown fault"), ("rst@2", "FRACTION"), ("crash:100@0.5", "no @FRACTION"),
                        ("trickle:10", "trickle:BYTES,MS"), ("stall-write:0", "stall-write:MS"),
                        ("goaway:0", "request count"), ("cut:x", "BYTES")):
        p = h.run([h.surge, "mock", "--port", "0", "--fault", val], timeout=10)
        h.check(p.returncode == 2 and needle in p.stderr and "--fault" in p.stderr,
                "surge mock --fault %s: exit 2 naming %r" % (val, needle), (p.returncode, p.stderr))
    p = h.run([h.surge, "mock", "--port", "0", "--fault", "rst@0.6", "--fault", "cut@0.6"], timeout=10)
    h.check(p.returncode == 2 and "add up to more than 1" in p.stderr, "fractions over 1 refused", p.stderr)


def main(h):
    bad_flags(h)
    fault_origin(h)
    per_request(h, False)
    goaway(h, False)
    stalls(h)
    throttles(h, False)
    crashes(h, False)
    # TLS: the same faults under the filter (a few of each kind)
    per_request(h, True)
    goaway(h, True)
    throttles(h, True)
    crashes(h, True)
    h.check_mocks()


if __name__ == "__main__":
    harness.main(main)
