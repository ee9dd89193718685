"""Helpers for integration tests that run `surge profile` against a mock (on top of harness.py)."""

import itertools
import json
import math
import os
import statistics

SLOW = bool(os.environ.get("SURGE_SLOW"))  # sanitizer builds: timing tolerances widen
SANITIZER = os.environ.get("SURGE_SANITIZER", "")  # "address", "thread" or "": the build ctest runs (CMake sets it)


def tol(ms):
    """A timing tolerance in ms, widened under sanitizers."""
    return ms * 4 if SLOW else ms


def late(ms):
    """Room above a configured server delay for a busy 2-core host: the mock (and a proxy in front of it) answer late
    when they wait for a CPU, never early. 2 ms was seen exceeded by 4.6 ms with the tests and builds sharing the
    machine; widened under sanitizers."""
    return ms * 4 if SLOW else ms


class Result:
    def __init__(self, proc, artifact_dir):
        self.proc = proc
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.dir = artifact_dir
        self.summary = None
        self.records = []
        path = os.path.join(artifact_dir, "profile_export_surge.json")
        if os.path.exists(path):
            with open(path) as f:
                self.summary = json.load(f)
        path = os.path.join(artifact_dir, "profile_export_surge.jsonl")
        if os.path.exists(path):
            with open(path) as f:
                self.records = [json.loads(line) for line in f if line.strip()]

    def metric(self, tag, stat="avg"):
        return self.summary[tag][stat]

    def has(self, tag):
        return self.summary is not None and tag in self.summary

    def errors_by_class(self):
        out = {}
        for g in (self.summary or {}).get("error_summary", []):
            out[g["class"]] = out.get(g["class"], 0) + g["count"]
        return out


_counter = itertools.count(1)  # next() is atomic: tests may profile from two threads


def profile(h, url, *args, timeout=120, model="mock-model", check_rc=0, wrap=(), env=None):
    """Run surge profile against url with a private artifact dir; returns a Result. wrap: a command to run it
    under (tests/tools/no_uring); env: its environment (None: this one)."""
    art = h.path("art%d" % next(_counter))
    cmd = [str(a) for a in wrap] + [h.surge, "profile", "-m", model, "-u", url, "--artifact-dir", art,
                                    "--no-progress"] + [str(a) for a in args]
    proc = h.run(cmd, timeout=timeout, env=env)
    r = Result(proc, art)
    if check_rc is not None:
        h.check(r.rc == check_rc, "surge profile %s exits %d" % (" ".join(map(str, args)), check_rc),
                (r.rc, r.stderr[-3000:]))
    h.check("runtime error:" not in r.stderr and "Sanitizer" not in r.stderr, "no sanitizer report from profile",
            r.stderr[-3000:])
    if check_rc == 0:
        # a run that succeeds had its pre-opened connections ready: the set-up warning would be a false alarm
        h.check("opened before the start were not ready" not in r.stderr, "no set-up warning on a healthy run",
                r.stderr[-3000:])
    return r


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def ks_exponential(gaps, rate):
    """Kolmogorov-Smirnov statistic of gaps (s) against the exponential distribution with the given rate."""
    xs = sorted(gaps)
    n = len(xs)
    d = 0.0
    for i, x in enumerate(xs):
        cdf = 1.0 - math.exp(-rate * x)
        d = max(d, (i + 1) / n - cdf, cdf - i / n)
    return d


def nearest_rank(values, p):
    """The p-th percentile by nearest rank, as surge's summaries define it."""
    v = sorted(values)
    return v[max(0, math.ceil(p / 100.0 * len(v)) - 1)]


class HttpServer:
    """A tiny threaded HTTP/1.1 server on 127.0.0.1 for answers surge mock never gives (malformed bytes, exact
    captures). respond(request_line, headers, body) returns the raw response bytes; with close=True the
    connection closes after each response. Every request is kept in .requests. Bounded: it stops after 60 s
    (servers.TcpServer accepts; this reads requests and answers)."""

    def __init__(self, respond, close=False):
        import threading
        from servers import TcpServer
        self.respond = respond
        self.close = close
        self.requests = []
        self.lock = threading.Lock()
        self.server = TcpServer(self._handle, lifetime=60)
        self.port = self.server.port
        self.url = self.server.url

    def _handle(self, c, index, stop):
        c.settimeout(5)
        buf = b""
        try:
            while not stop.is_set():
                while b"\r\n\r\n" not in buf:
                    d = c.recv(65536)
                    if not d:
                        return
                    buf += d
                head, rest = buf.split(b"\r\n\r\n", 1)
                lines = head.decode("latin-1").split("\r\n")
                headers = {}
                for line in lines[1:]:
                    k, v = line.split(":", 1)
                    headers[k.strip().lower()] = v.strip()
                n = int(headers.get("content-length", "0"))
                while len(rest) < n:
                    d = c.recv(65536)
                    if not d:
                        return
                    rest += d
                body, buf = rest[:n], rest[n:]
                with self.lock:
                    self.requests.append((lines[0], headers, body))
                c.sendall(self.respond(lines[0], headers, body))
                if self.close:
                    return
        finally:
            c.close()

    def __enter__(self):
        self.server.__enter__()
        return self

    def __exit__(self, *a):
        self.server.__exit__(*a)
