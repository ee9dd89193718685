# ctest: epoll-asan (run on epoll under ASan too: tests/CMakeLists.txt)
"""--local-address: connections leave from each of the given source addresses in turn (a list, a range, a CIDR
block), as the server sees them; an address that is not this host's, or a malformed list, is a clear message and a
non-zero exit before any request is sent. And connection opening is paced: a closed loop of 1,500 connections
against a server whose accept queue holds 64 opens them all, and every request succeeds (opened all at once, the
dropped SYNs and handshakes cost 180 of the 1,500 requests, reset, and 21 s, where paced took 8 s). Also IPv6
(::1), and the mock's --reuse-port that bench/streams100k.py uses to run several mocks on one port."""
import os
import signal
import socket
import subprocess
import threading
import time

import harness
from profiling import Result, profile


def client_sources(port):
    """(local ip, local port) of every connected TCP socket (ESTABLISHED, not TIME_WAIT after an earlier run) in
    /proc/net/tcp whose remote end is 127.0.0.1:port."""
    out = set()
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            fields = line.split()
            local, remote, state = fields[1], fields[2], fields[3]
            rip, rport = remote.split(":")
            if int(rport, 16) != port or rip != "0100007F" or state != "01":
                continue
            lip, lport = local.split(":")
            ip = socket.inet_ntoa(int(lip, 16).to_bytes(4, "little"))
            out.add((ip, int(lport, 16)))
    return out


def sources_run(h, m, spec, conc):
    """Run a closed loop of conc slow streams from spec; sample the client's sockets while it runs. Returns the
    Result and {source ip: connections seen}."""
    art = h.path("src-%s" % spec.replace("/", "_"))
    cmd = [h.surge, "profile", "-m", "mock-model", "-u", m.url, "--artifact-dir", art, "--no-progress",
           "--local-address", spec, "--workers", "2", "--concurrency", str(conc),
           "--request-count", str(conc), "--streaming", "--output-tokens-mean", "6",
           "--output-tokens-mean-deterministic", "--synthetic-input-tokens-mean", "8"]
    seen = set()
    with open(h.path("src.out"), "w") as out, open(h.path("src.err"), "w") as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while p.poll() is None and time.monotonic() < deadline:
            seen |= client_sources(m.port)
            time.sleep(0.02)
        if p.poll() is None:
            p.kill()
        p.wait()
    with open(h.path("src.out")) as f1, open(h.path("src.err")) as f2:
        proc = subprocess.CompletedProcess(cmd, p.returncode, f1.read(), f2.read())
    per = {}
    for ip, _ in seen:
        per[ip] = per.get(ip, 0) + 1
    return Result(proc, art), per


def check_sources(h):
    # each stream lasts about 0.3 s + 5 x 0.1 s, so that the sampling above sees every connection
    with h.mock("--ttft-ms", 300, "--itl-ms", 100) as m:
        cases = [("127.0.0.2,127.0.0.3", 8, {"127.0.0.2": 4, "127.0.0.3": 4}),
                 ("127.0.0.4-127.0.0.6", 6, {"127.0.0.4": 2, "127.0.0.5": 2, "127.0.0.6": 2}),
                 # a /30: its two host addresses (not the network's .8 nor the broadcast .11)
                 ("127.0.0.8/30", 4, {"127.0.0.9": 2, "127.0.0.10": 2})]
        for spec, conc, want in cases:
            what = "--local-address %s" % spec
            r, per = sources_run(h, m, spec, conc)
            h.check(r.rc == 0, "%s: exits 0" % what, (r.rc, r.stderr[-2000:]))
            h.check(r.summary is not None and r.summary["error_request_count"]["avg"] == 0 and
                    r.summary["request_count"]["avg"] == conc, "%s: %d requests, no error" % (what, conc),
                    r.summary and r.summary.get("error_summary"))
            # the start-up check connects once, from the first address
            first = spec.split(",")[0].split("-")[0]
            first = first if "/" not in first else min(want, key=lambda ip: socket.inet_aton(ip))
            seen = dict(per)
            if seen.get(first, 0) == want[first] + 1:
                seen[first] -= 1
            h.check(seen == want, "%s: the server saw connections from each source in turn" % what,
                    "seen %s, want %s (and one more from %s, the start-up check's)" % (per, want, first))
            cfg = (r.summary or {}).get("input_config", {})
            h.check(cfg.get("local_address") == spec, "%s: input_config says local_address" % what,
                    cfg.get("local_address"))


def check_ipv6(h):
    """IPv6: ::1 as the source towards a mock on [::1] (loopback has no other IPv6 address to spread over)."""
    try:
        socket.socket(socket.AF_INET6).bind(("::1", 0))
    except OSError:
        print("note: no IPv6 loopback here, the IPv6 case is not run")
        return
    with h.mock("--host", "::1", "--ttft-ms", 1, "--itl-ms", 1) as m:
        url = "http://[::1]:%d" % m.port
        r = profile(h, url, "--local-address", "::1", "--concurrency", 4, "--request-count", 8, "--streaming")
        h.check(r.summary is not None and r.summary["error_request_count"]["avg"] == 0 and
                r.summary["request_count"]["avg"] == 8, "--local-address ::1 to [::1]: 8 requests, no error",
                r.stderr[-1500:])
        r = profile(h, url, "--local-address", "127.0.0.2", "--request-count", 4, check_rc=2)
        h.check("is IPv4 but the target" in r.stderr, "an IPv4 source for an IPv6 target: said so", r.stderr[-500:])


def check_reuse_port(h):
    """mock --reuse-port: a second mock process joins the first's port and takes part of the connections (what
    bench/streams100k.py does past one process's RLIMIT_NOFILE); without it, a taken port is an error."""
    with h.mock("--ttft-ms", 1, "--itl-ms", 1, record=True) as m1:
        try:
            with h.mock("--port", m1.port):
                h.check(False, "a second mock on a taken port without --reuse-port fails")
        except harness.MockError as e:
            h.check("cannot listen" in str(e), "a second mock on a taken port without --reuse-port fails", str(e))
        with h.mock("--port", m1.port, "--reuse-port", "--ttft-ms", 1, "--itl-ms", 1, record=True) as m2:
            h.check(m2.port == m1.port, "--reuse-port: the second mock listens on the first's port", m2.port)
            # 32 connections from 8 sources: the kernel's hash gives each listener some (all to one: p = 2^-31)
            r = profile(h, m1.url, "--local-address", "127.0.0.2-127.0.0.9", "--concurrency", 32, "--request-count",
                        32)
            time.sleep(0.2)  # the record reaches its file within 50 ms
            n1, n2 = len(m1.records()), len(m2.records())
            h.check(n1 + n2 == 32 and n1 > 0 and n2 > 0, "--reuse-port: both mocks served part of the requests",
                    (n1, n2, r.stderr[-500:]))


def check_rejected(h):
    with h.mock("--ttft-ms", 1, "--itl-ms", 1, record=True) as m:
        cases = [("127.0.0.9-127.0.0.2", "ends before it starts"),
                 ("127.0.0.300", "is not an IPv4 or IPv6 address"),
                 ("127.0.0.0/33", "is not a CIDR block"),
                 ("127.0.0.2,,127.0.0.3", "empty item"),
                 ("127.0.0.2,127.0.0.0/30", "127.0.0.2 is given twice"),
                 ("127.0.0.2,::1", "one family"),
                 ("10.0.0.0/8", "more than 65536 addresses"),
                 ("::1", "is IPv6 but the target"),
                 # TEST-NET-1 (RFC 5737): never an address of this host
                 ("127.0.0.2,192.0.2.77", "cannot send from 192.0.2.77")]
        for spec, want in cases:
            r = profile(h, m.url, "--local-address", spec, "--request-count", 4, check_rc=None)
            h.check(r.rc == 2, "--local-address %s: exit status 2" % spec, (r.rc, r.stderr[-1000:]))
            h.check("--local-address" in r.stderr and want in r.stderr,
                    "--local-address %s: the message says '%s'" % (spec, want), r.stderr[-1000:])
        time.sleep(0.1)  # the mock's record reaches its file within 50 ms
        h.check(not m.records(), "nothing was sent to the server by the rejected runs", len(m.records()))


def syn_sent(port, pid):
    """Sockets of process pid still waiting for the answer to their SYN (SYN_SENT) towards 127.0.0.1:port. Only
    pid's: a port freed by another test's server and given to ours can still draw that test's client's reconnects
    (with ctest -j4 one such client had 256 SYNs pending towards it). Counted by inode: each read of /proc/net/tcp
    resumes the kernel's walk of its socket table by position, so while other tests open and close sockets a line
    can come twice in one pass (with four of these checks at once, 15 of 160 runs saw 65 to 127 lines, always for
    64 distinct sockets)."""
    inodes = set()
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
    except OSError:
        return 0
    pending = set()
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            fields = line.split()
            if fields[2] == "0100007F:%04X" % port and fields[3] == "02" and fields[9] in inodes:
                pending.add(fields[9])
    return len(pending)


def check_window(h):
    """The window itself, deterministically: a server that accepts the start-up check's connection and then
    nothing, its accept queue full, drops every further SYN, so connects stay pending; one worker wanting 400
    connections has at most 64 of them pending at once (CONNECT_WINDOW), and does fill its window."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    held = []
    t = threading.Thread(target=lambda: held.append(srv.accept()), daemon=True)  # the start-up check's
    t.start()
    cmd = [h.surge, "profile", "-m", "m", "-u", "127.0.0.1:%d" % port, "--artifact-dir", h.path("window"),
           "--no-progress", "--workers", "1", "--concurrency", "400", "--request-count", "400",
           "--request-timeout", "5"]
    most = 0
    with open(h.path("window.err"), "w") as err:
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 2.5
        while p.poll() is None and time.monotonic() < deadline:
            most = max(most, syn_sent(port, p.pid))
            time.sleep(0.01)
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    srv.close()
    for c, _ in held:
        c.close()
    h.check(32 <= most <= 64, "connection window: at most 64 connects pending at once, and the window used "
            "(most seen %d)" % most, open(h.path("window.err")).read()[-1000:])


def check_paced(h):
    # 1,500 connections at once against an accept queue of 64 (mock --backlog): opened in a window of 64, every
    # connect succeeds and every request too
    n = 1500
    with h.mock("--ttft-ms", 200, "--itl-ms", 1, "--backlog", 64) as m:
        t0 = time.monotonic()
        r = profile(h, m.url, "--workers", 1, "--concurrency", n, "--request-count", n, "--streaming",
                    "--output-tokens-mean", 2, "--synthetic-input-tokens-mean", 8, "--request-timeout", 30,
                    timeout=120, check_rc=None)
        took = time.monotonic() - t0
        h.check(r.rc == 0 and r.summary is not None and r.summary["error_request_count"]["avg"] == 0,
                "paced opening: %d connections against a backlog of 64, no error (%.1f s)" % (n, took),
                (r.rc, r.summary and r.summary.get("error_summary"), r.stderr[-1500:]))


def main(h):
    if not os.path.exists("/proc/net/tcp"):
        h.skip("no /proc/net/tcp")
    check_rejected(h)
    check_sources(h)
    check_ipv6(h)
    check_reuse_port(h)
    check_window(h)
    check_paced(h)


harness.main(main)
