"""surge profile --http2 against nghttpd (nghttp2's own server, a second HTTP/2 implementation besides nginx and
the mock): nghttpd answers a POST with the static file at its path, here a chat completion. Every request is
counted once by both sides, surge keeps within nghttpd's SETTINGS_MAX_CONCURRENT_STREAMS (as nghttpd's own
frame log shows), and nghttpd's 404s are counted as HTTP errors by code."""
import os
import re
import shutil
import subprocess

import harness
from profiling import profile
from servers import free_port, wait_listening

MAX_STREAMS = 8
COMPLETION = ('{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":'
              '{"role":"assistant","content":"hello there friend"},"finish_reason":"stop"}],'
              '"usage":{"prompt_tokens":3,"completion_tokens":3,"total_tokens":6}}')





def server_view(log_path):
    """From nghttpd -v: requests received (HEADERS), and the most streams open at once on the server."""
    requests = open_now = peak = 0
    with open(log_path, errors="replace") as f:
        for line in f:
            if "recv HEADERS frame" in line:
                requests += 1
                open_now += 1
                peak = max(peak, open_now)
            elif "send DATA frame" in line and "flags=0x01" in line:
                open_now -= 1
    return requests, peak


def main(h):
    nghttpd = shutil.which("nghttpd") or ("/usr/sbin/nghttpd" if os.access("/usr/sbin/nghttpd", os.X_OK) else None)
    if not nghttpd:
        if os.environ.get("CI"):
            h.check(False, "nghttpd installed (nghttp2-server, SURGE_TEST_PKGS)")
            return
        h.skip("nghttpd is not installed (Debian: nghttp2-server)")
    docroot = h.path("htdocs")
    os.makedirs(os.path.join(docroot, "v1", "chat"))
    with open(os.path.join(docroot, "v1", "chat", "completions"), "w") as f:
        f.write(COMPLETION)
    port = free_port()
    log = h.path("nghttpd.log")
    with open(log, "w") as out:
        proc = subprocess.Popen(["timeout", "60", nghttpd, "-v", "--no-tls", "-m", str(MAX_STREAMS), "-a", "127.0.0.1",
                                 "-d", docroot, str(port)], stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
    try:
        wait_listening(proc, [port])
        h.check(proc.poll() is None, "nghttpd runs", open(log).read()[-2000:])
        url = "http://127.0.0.1:%d" % port

        # 1. 32 in flight on one connection, 8 streams at a time on nghttpd's side: all 200 complete
        n = 200
        r = profile(h, url, "--http2", "--endpoint-type", "chat", "--concurrency", 32, "--max-connections", 1,
                    "--workers", 1, "--request-count", n, "--verbose", model="m")
        s = r.summary
        h.check(s is not None, "summary written", r.stderr[-2000:])
        if s:
            h.check(s["request_count"]["avg"] == n and s["error_request_count"]["avg"] == 0,
                    "nghttpd: %d of %d ok" % (s["request_count"]["avg"], n), s.get("error_summary"))
            osl = s["output_sequence_length"]
            h.check(osl["min"] == 3 and osl["max"] == 3, "OSL 3 from the file's usage", osl)
        h.check("1 connections opened" in r.stderr, "one connection", r.stderr[-2000:])
        # streams nghttp2 holds back behind the server's limit are not open on the wire: surge counts what went out
        m = re.search(r"peak (\d+) streams on one connection", r.stderr)
        h.check(m is not None and int(m.group(1)) == MAX_STREAMS,
                "surge's peak streams on the wire is nghttpd's limit %d" % MAX_STREAMS, m and m.group(0))
        seen, peak = server_view(log)
        h.check(seen == n, "nghttpd received %d requests" % n, seen)
        h.check(peak == MAX_STREAMS, "nghttpd saw at most (and at times) %d streams open at once" % MAX_STREAMS,
                peak)

        # 2. a path nghttpd has no file for: 404 on every request, counted by code
        r = profile(h, url, "--http2", "--endpoint-type", "chat", "--endpoint", "v1/missing", "--concurrency", 4,
                    "--request-count", 20, model="m", check_rc=1)
        s = r.summary
        if h.check(s is not None, "404: summary written", r.stderr[-2000:]):
            h.check(s["error_request_count"]["avg"] == 20 and s["request_count"]["avg"] == 0,
                    "404: every request an error", s.get("error_summary"))
            by_code = {(g["class"], g.get("code")): g["count"] for g in s.get("error_summary", [])}
            h.check(by_code == {("http", 404): 20}, "404: 20 errors classed http 404", s.get("error_summary"))
        h.check(server_view(log)[0] == n + 20, "nghttpd received the 20 more", server_view(log)[0])
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


harness.main(main)
