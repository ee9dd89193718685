# ctest: epoll-asan (run on epoll under ASan too: tests/CMakeLists.txt)
"""Connection set-up has a bound. A listening socket that is never accepted, with its backlog full, makes Linux drop
every SYN, so a connect would wait for the kernel's SYN retries (about two minutes): the start-up check gives up
after 5 s (exit 2), and during the run each connection is given up after 10 s, or --request-timeout when shorter,
failing its request as class connect. A server that accepts but never finishes the TLS handshake fails requests as
class tls on the same bound. Only 127.0.0.1 is used."""
import os
import socket
import time

import harness
import tlsutil
from profiling import profile
from servers import TcpServer, read_until_closed


def never_accepting(fill):
    """A socket listening with a backlog of 0 that nobody accepts: Linux queues one connection, then drops SYNs.
    With fill, the one is taken here, so the next connect (surge's first) already hangs."""
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(0)
    held = []
    if fill:
        c = socket.socket()
        c.connect(ls.getsockname())
        held.append(c)
    return ls, held


def main(h):
    # 1. the start-up check: no answer to the SYN within 5 s is one line, exit 2
    ls, held = never_accepting(fill=True)
    try:
        art = h.path("art-check")
        t0 = time.monotonic()
        p = h.run([h.surge, "profile", "-m", "m", "-u", "http://127.0.0.1:%d" % ls.getsockname()[1], "--no-progress",
                   "--artifact-dir", art], timeout=60)
        took = time.monotonic() - t0
        h.check(p.returncode == 2 and "cannot connect" in p.stderr and "timed out" in p.stderr,
                "start-up connect: exit 2 naming the timeout", (p.returncode, p.stderr))
        h.check(4.5 < took < 10, "start-up connect: given up after its 5 s (%.1f s)" % took)
        h.check(not os.path.exists(art), "start-up connect: no artifact directory")
    finally:
        for c in held:
            c.close()
        ls.close()

    # 2. during the run: the check takes the one queued slot, every later connect hangs; --request-timeout 2
    #    bounds each, the requests fail as connect errors, the run ends in seconds (not after the SYN retries)
    ls, held = never_accepting(fill=False)
    try:
        t0 = time.monotonic()
        r = profile(h, "http://127.0.0.1:%d" % ls.getsockname()[1], "--concurrency", 1, "--request-count", 2,
                    "--request-timeout", 2, timeout=60, check_rc=1)
        took = time.monotonic() - t0
        h.check(took < 15, "hanging connects: the run ends in %.1f s" % took, r.stderr[-2000:])
        h.check(r.errors_by_class() == {"connect": 2}, "hanging connects: 2 connect errors",
                r.summary and r.summary.get("error_summary"))
        msgs = [g["message"] for g in (r.summary or {}).get("error_summary", [])]
        h.check(any("not connected within 2 s" in m for m in msgs), "the error names the bound", msgs)
        h.check("connections opened before the start were not ready" in r.stderr, "set-up that failed is said",
                r.stderr[-2000:])
    finally:
        ls.close()

    # 3. https://: the check's handshake completes, the run's connections are accepted and never answered
    made = tlsutil.localhost_server_context(h, "pki")
    if not made:
        return
    ca, ctx = made

    def first_handshake_only(c, i, stop):
        if i == 0:
            c.settimeout(5)
            c = ctx.wrap_socket(c, server_side=True)
        read_until_closed(c, stop)

    with TcpServer(first_handshake_only, scheme="https") as s:
        t0 = time.monotonic()
        r = profile(h, s.url, "--cacert", ca, "--concurrency", 2, "--request-count", 2, "--request-timeout", 2,
                    "--workers", 1, timeout=60, check_rc=1)
        took = time.monotonic() - t0
        h.check(took < 15, "hanging TLS handshakes: the run ends in %.1f s" % took, r.stderr[-2000:])
        h.check(r.errors_by_class() == {"tls": 2}, "hanging TLS handshakes: 2 tls errors",
                r.summary and r.summary.get("error_summary"))
        msgs = [g["message"] for g in (r.summary or {}).get("error_summary", [])]
        h.check(any("handshake" in m and "not done within 2 s" in m for m in msgs), "the error names the bound", msgs)


harness.main(main)
