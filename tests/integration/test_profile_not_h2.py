"""--http2 and --service-kind triton against servers that do not speak HTTP/2: the start-up check sends the
connection preface and waits, with a bound, for the server's SETTINGS. An HTTP/1.1 server (Python's http.server,
nginx without http2), one that closes, one that answers nothing, and a TLS server that chooses h2 in ALPN and then
answers in HTTP/1.1 are each one line naming what came instead, exit 2 within seconds, nothing measured and no
artifact directory. A connection that turns out not to speak HTTP/2 during the run (the check passed on another
one) fails its streams at once instead of leaving them to --request-timeout."""
import http.server
import os
import shutil
import threading
import time

import harness
import tlsutil
from profiling import profile
from servers import Nginx, TcpServer, read_until_closed

SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"  # an empty SETTINGS frame: what an HTTP/2 server sends first
BAD_REQUEST = b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"


def not_h2(h, url, args, want, seconds, what):
    """surge profile with args against url: exit 2 within `seconds`, one line naming `want`, no artifacts."""
    art = h.path("art-%d" % time.monotonic_ns())
    t0 = time.monotonic()
    p = h.run([h.surge, "profile", "-m", "m", "-u", url, "--request-count", 4, "--request-timeout", 60,
               "--no-progress", "--artifact-dir", art] + list(args), timeout=60)
    took = time.monotonic() - t0
    h.check(p.returncode == 2, "%s: exit 2" % what, (p.returncode, p.stderr[-2000:]))
    h.check(took < seconds, "%s: over in %.1f s (< %d s)" % (what, took, seconds))
    h.check("does not speak HTTP/2" in p.stderr, "%s: says the server does not speak HTTP/2" % what, p.stderr)
    for w in want:
        h.check(w in p.stderr, "%s: the line says %r" % (what, w), p.stderr)
    h.check(p.stderr.count("\n") <= 2, "%s: one line (two at most)" % what, p.stderr)
    h.check(not os.path.exists(art), "%s: no artifact directory" % what)
    h.check("Sanitizer" not in p.stderr and "runtime error:" not in p.stderr, "%s: no sanitizer report" % what,
            p.stderr[-3000:])
    return p.stderr


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a):
        pass


def main(h):
    # 1. Python's http.server (HTTP/1.x only): under --http2, and under triton, whose gRPC needs HTTP/2
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    try:
        url = "http://127.0.0.1:%d" % srv.server_address[1]
        err = not_h2(h, url, ["--http2"], ["h2c", "drop --http2"], 5, "http.server --http2")
        h.check("it answered the HTTP/2 connection preface with" in err, "http.server: what it answered", err)
        not_h2(h, url, ["--service-kind", "triton"], ["gRPC port"], 5, "http.server triton")
        # and HTTP/1.1 still works against it: only HTTP/2 is refused (its 501 to a POST is a counted error)
        r = profile(h, url, "--request-count", 2, check_rc=1)
        h.check(r.errors_by_class().get("http") == 2, "http.server over HTTP/1.1: two HTTP errors, not a refusal",
                r.stderr[-1000:])
    finally:
        srv.shutdown()
        srv.server_close()

    # 2. nginx without http2 on the listener
    if shutil.which("nginx"):
        body = "server {{ listen 127.0.0.1:{port}; location / {{ return 200 'ok'; }} }}\n}}\n"
        with Nginx(h, body, ["port"]) as ng:
            if h.check(ng.proc.poll() is None, "nginx runs", ng.failed()):
                err = not_h2(h, "http://127.0.0.1:%d" % ng.port, ["--http2"], ['"HTTP/1.1 400'], 5, "nginx --http2")
    elif os.environ.get("CI"):
        h.check(False, "nginx installed (SURGE_TEST_PKGS)")

    # 3. closes at once; answers nothing (the bound, 5 s); sends bytes that are no protocol
    with TcpServer(lambda c, i, stop: c.close()) as s:
        not_h2(h, s.url, ["--http2"], ["closed the connection"], 5, "closes")
    with TcpServer(lambda c, i, stop: read_until_closed(c, stop)) as s:
        not_h2(h, s.url, ["--http2"], ["sent nothing within 5 s"], 12, "silent")
    with TcpServer(lambda c, i, stop: (c.sendall(b"\x00\x01garbage\n"), read_until_closed(c, stop))) as s:
        not_h2(h, s.url, ["--service-kind", "triton"], ["\\x00\\x01garbage\\n", "gRPC port"], 5, "garbage")

    # 4. HTTP/2 on the first connection (the check's), HTTP/1.1 on every later one, held open as llama.cpp's
    #    server does: the run's streams end at once as disconnects with nghttp2's reason, not at --request-timeout
    def first_h2(c, i, stop):
        c.recv(65536)
        c.sendall(SETTINGS if i == 0 else BAD_REQUEST)
        read_until_closed(c, stop)

    with TcpServer(first_h2) as s:
        t0 = time.monotonic()
        r = profile(h, s.url, "--http2", "--concurrency", 2, "--request-count", 4, "--request-timeout", 60,
                    timeout=40, check_rc=1)
        h.check(time.monotonic() - t0 < 15, "a connection that is not HTTP/2 fails its streams at once")
        h.check(r.errors_by_class().get("disconnect") == 4, "4 disconnects", r.summary and r.summary["error_summary"])
        msgs = " ".join(g["message"] for g in (r.summary or {}).get("error_summary", []))
        h.check("SETTINGS" in msgs, "the error says what nghttp2 found (no SETTINGS)", msgs)

    # 5. https://: the server chooses h2 in the TLS handshake, then answers the preface in HTTP/1.1
    made = tlsutil.localhost_server_context(h, "pki", alpn=["h2"])
    if not made:
        return
    ca, ctx = made

    def h2_in_name_only(c, i, stop):
        c.recv(65536)
        c.sendall(BAD_REQUEST)
        read_until_closed(c, stop)

    with TcpServer(h2_in_name_only, ssl_context=ctx, scheme="https") as s:
        for args in (["--http2"], []):
            not_h2(h, s.url, ["--cacert", ca] + args, ["chose h2 in the TLS handshake", '"HTTP/1.1 400 Bad Request"'],
                   8, "TLS h2 in ALPN only %s" % args)


harness.main(main)
