"""A server that accepts and then answers nothing is named as such within seconds, and the run still ends within its
bounds: a line on stderr after 5 s of silence with requests in flight (HTTP/1.1, and HTTP/2 after the server's
SETTINGS), then the requests time out at --request-timeout; SIGINT ends such a run at once, keeping what was
measured; a --benchmark-duration run whose drain goes on says what it waits for."""
import json
import os
import signal
import subprocess
import threading
import time

import harness
from servers import TcpServer, read_until_closed

SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


class Run:
    """surge profile in the background, its stderr lines timed (seconds since launch) as they come."""

    def __init__(self, h, url, args):
        self.h = h
        self.art = h.path("art-%d" % time.monotonic_ns())
        cmd = [h.surge, "profile", "-m", "m", "-u", url, "--no-progress", "--artifact-dir", self.art]
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen([str(c) for c in cmd + list(args)], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.lines = []  # (seconds, line)
        self.out = []
        self.readers = [threading.Thread(target=self._read_err, daemon=True),
                        threading.Thread(target=lambda: self.out.append(self.proc.stdout.read()), daemon=True)]
        for t in self.readers:
            t.start()

    def _read_err(self):
        for line in self.proc.stderr:
            self.lines.append((time.monotonic() - self.t0, line.rstrip("\n")))

    def wait_line(self, needle, seconds):
        """The time of the first stderr line holding needle, waiting up to `seconds`; None if none came."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for t, line in list(self.lines):
                if needle in line:
                    return t
            if self.proc.poll() is not None and not self.readers[0].is_alive():
                break
            time.sleep(0.05)
        return None

    def finish(self, seconds):
        """Exit status and run time (None, None when it did not end within `seconds`: it is killed)."""
        try:
            rc = self.proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None, None
        took = time.monotonic() - self.t0
        for t in self.readers:
            t.join(5)
        self.h.check(not any(m in line for _, line in self.lines for m in harness.SANITIZER_MARKS),
                     "no sanitizer report", self.stderr()[-3000:])
        return rc, took

    def stderr(self):
        return "\n".join("%6.2f %s" % tl for tl in self.lines)

    def summary(self):
        path = os.path.join(self.art, "profile_export_surge.json")
        if not os.path.exists(path):
            return None
        with open(path) as f:
            return json.load(f)


def errors_by_class(summary):
    out = {}
    for g in (summary or {}).get("error_summary", []):
        out[g["class"]] = out.get(g["class"], 0) + g["count"]
    return out


def silent(c, i, stop):
    read_until_closed(c, stop)


def h2_then_silent(c, i, stop):
    c.sendall(SETTINGS)  # an HTTP/2 server's first frame: the start-up check and the workers' set-up pass
    read_until_closed(c, stop)


def main(h):
    # 1. accepts, reads, never answers: the line comes within seconds, the requests time out at 9 s
    for name, handler, extra in (("HTTP/1.1", silent, []), ("HTTP/2", h2_then_silent, ["--http2"])):
        with TcpServer(handler) as s:
            r = Run(h, s.url, ["--streaming", "--concurrency", 2, "--request-count", 2, "--request-timeout", 9,
                               "--workers", 1] + extra)
            start = r.wait_line("surge: profiling", 10)
            said = r.wait_line("surge: no response from 127.0.0.1:%d for 5 s (2 requests in flight)" % s.port, 15)
            rc, took = r.finish(40)
            h.check(start is not None and said is not None and 4.5 <= said - start <= 8,
                    "%s: 'no response for 5 s' about 5 s after the start (%s, %s)" % (name, start, said),
                    r.stderr())
            h.check(any("--request-timeout 9 s" in line for _, line in r.lines), "%s: the line names the bound" % name,
                    r.stderr())
            h.check(rc == 1, "%s: the run ends, exit 1" % name, (rc, r.stderr()))
            h.check(took is not None and took < 20, "%s: within its --request-timeout (%s s)" % (name, took))
            h.check(errors_by_class(r.summary()) == {"timeout": 2}, "%s: 2 timeouts" % name,
                    (r.summary() or {}).get("error_summary"))

    # 2. SIGINT while everything waits on the silent server: the run ends at once, exit 130, results written
    with TcpServer(silent) as s:
        r = Run(h, s.url, ["--request-rate", 20, "--request-count", 1000, "--request-timeout", 600])
        said = r.wait_line("surge: no response from", 15)
        h.check(said is not None, "open loop: the silence is named", r.stderr())
        t_int = time.monotonic()
        r.proc.send_signal(signal.SIGINT)
        rc, _ = r.finish(20)
        h.check(rc == 130, "SIGINT: exit 130", (rc, r.stderr()))
        h.check(time.monotonic() - t_int < 5, "SIGINT: over in %.1f s" % (time.monotonic() - t_int))
        summary = r.summary()
        h.check(summary is not None and summary.get("was_interrupted") is True, "SIGINT: summary marked interrupted")
        # cancelled, not failed: their own count, none among the errors
        cancelled = ((summary or {}).get("cancelled_request_count") or {}).get("avg", 0)
        h.check(cancelled >= 50 and errors_by_class(summary).get("cancelled", 0) == 0,
                "SIGINT: in-flight requests counted cancelled, not failed",
                (cancelled, (summary or {}).get("error_summary")))

    # 3. --benchmark-duration: sending stops at 1 s, streams go on (a token a second): the drain says so, and ends
    with h.mock("--ttft-ms", 10, "--itl-ms", 1000) as m:
        r = Run(h, m.url, ["--streaming", "--concurrency", 2, "--benchmark-duration", 1, "--output-tokens-mean", 8,
                           "--request-timeout", 30, "--workers", 1])
        start = r.wait_line("surge: profiling", 10)
        said = r.wait_line("surge: sending is over (--benchmark-duration 1 s)", 15)
        rc, took = r.finish(40)
        h.check(start is not None and said is not None and 5 <= said - start <= 9,
                "drain: a line about 6 s after the start (%s, %s)" % (start, said), r.stderr())
        h.check(not any("no response" in line for _, line in r.lines), "drain: a streaming server is not silent",
                r.stderr())
        h.check(rc == 0, "drain: exit 0", (rc, r.stderr()))
        summary = r.summary()
        h.check(summary is not None and summary["request_count"]["avg"] == 2, "drain: both requests measured",
                summary and summary.get("error_summary"))


harness.main(main)
