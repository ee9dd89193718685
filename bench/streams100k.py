#!/usr/bin/env python3
"""100,000 concurrent slow streams from one host: issue 22's scale target.

    python3 bench/streams100k.py [--surge build/surge] [--streams 100000] [--sources 127.0.0.2-127.0.0.9]
                                 [--ranks R] [--mocks M] [--itl-ms 1000] [--tokens 10] [--workers 1]

Every stream is open at once (closed loop, --concurrency = --request-count = streams), reads --tokens tokens one
every --itl-ms, and comes from one of the --sources loopback addresses in turn (--local-address), so that more
than one address's ~28k ports reach the one server address:port. Where a process may hold all the streams
(RLIMIT_NOFILE's hard limit above streams + 1,000) it is one surge process against one mock; where it may not (the
development machines stop at 20,000), the run is spread over R ranks of one surge run (--world-size, on this host)
and M mock processes sharing one port (mock --reuse-port), each below the limit. It prints: streams completed and
failed, the wall time, per-stream client memory (the ranks' peak RSS summed, over the
streams, and the same less what a 1,000-stream rank costs, per stream above it), and client CPU per token (the
ranks' user + system time over the tokens received). Nothing here needs root: 127.0.0.0/8 is local on Linux.
"""
import argparse
import glob
import json
import math
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start_mocks(surge, n, args, tmp):
    """n mock processes on one port (the first picks it, the others join with --reuse-port); returns (port, procs)."""
    procs = []
    pf = os.path.join(tmp, "mock.port")
    common = ["--workers", "1", "--quiet", "--exit-after", "3600", "--backlog", "4096"] + args
    procs.append(subprocess.Popen([surge, "mock", "--port", "0", "--port-file", pf] + common,
                                  stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "mock0.err"), "w")))
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and not (os.path.exists(pf) and open(pf).read().strip()):
        time.sleep(0.02)
    port = int(open(pf).read().strip())
    for i in range(1, n):
        pfi = os.path.join(tmp, "mock%d.port" % i)
        procs.append(subprocess.Popen([surge, "mock", "--port", str(port), "--reuse-port", "--port-file", pfi] + common,
                                      stdout=subprocess.DEVNULL,
                                      stderr=open(os.path.join(tmp, "mock%d.err" % i), "w")))
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not os.path.exists(pfi):
            time.sleep(0.02)
    return port, procs


def run_ranks(surge, port, streams, ranks, a, tmp, tag):
    """One surge run of `streams` streams over `ranks` ranks; returns (rank 0's summary or None, [(rc, rss_kib,
    cpu_s, stderr)], wall_s)."""
    art = os.path.join(tmp, "art-" + tag)
    load = ["-m", "mock-model", "-u", "127.0.0.1:%d" % port, "--artifact-dir", art, "--no-progress",
            "--streaming", "--concurrency", str(streams), "--request-count", str(streams),
            "--output-tokens-mean", str(a.tokens), "--output-tokens-mean-deterministic",
            "--synthetic-input-tokens-mean", "16", "--workers", str(a.workers),
            "--request-timeout", str(max(120, a.tokens * a.itl_ms / 1000 * 4)), "--local-address", a.sources]
    coord = free_port()
    procs = []
    t0 = time.monotonic()
    for r in range(ranks):
        dist = ["--world-size", str(ranks), "--rank", str(r), "--coordinator", "127.0.0.1:%d" % coord] if ranks > 1 \
            else []
        tf = os.path.join(tmp, "time-%s-%d" % (tag, r))
        cmd = ["/usr/bin/time", "-f", "%M %U %S", "-o", tf, surge, "profile"] + load + dist
        procs.append((subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True), tf))
    out = []
    for p, tf in procs:
        _, err = p.communicate(timeout=3600)
        rss, u, s = open(tf).read().split()[-3:]
        out.append((p.returncode, int(rss), float(u) + float(s), err))
    wall = time.monotonic() - t0
    path = os.path.join(art, "profile_export_surge.json")
    summary = json.load(open(path)) if os.path.exists(path) else None
    return summary, out, wall


def stat(summary, key, s="avg"):
    v = (summary or {}).get(key)
    return v.get(s) if isinstance(v, dict) else v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--surge", default=os.path.join(HERE, "..", "build", "surge"))
    ap.add_argument("--streams", type=int, default=100000)
    ap.add_argument("--sources", default="127.0.0.2-127.0.0.9", help="--local-address (default 8 loopback addresses)")
    ap.add_argument("--ranks", type=int, default=0, help="surge processes (default: as RLIMIT_NOFILE requires)")
    ap.add_argument("--mocks", type=int, default=0, help="mock processes (default: as RLIMIT_NOFILE requires)")
    ap.add_argument("--itl-ms", type=float, default=1000, help="time between a stream's tokens (default 1000)")
    ap.add_argument("--ttft-ms", type=float, default=1000)
    ap.add_argument("--tokens", type=int, default=10, help="tokens per stream (default 10)")
    ap.add_argument("--workers", type=int, default=1, help="worker threads per rank (default 1)")
    a = ap.parse_args()
    surge = os.path.abspath(a.surge)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # the children inherit it (surge raises its own too)
    per_proc = hard - 1000
    ranks = a.ranks or max(1, math.ceil(a.streams / per_proc))
    # the kernel spreads connections over the mocks by a hash of the 4-tuple: leave each a 10% margin
    mocks = a.mocks or max(1, math.ceil(a.streams * 1.1 / per_proc))
    print("streams100k: %d streams, %d rank(s) x %d worker(s), %d mock process(es), sources %s, RLIMIT_NOFILE %d, "
          "%d tokens each one every %g ms" % (a.streams, ranks, a.workers, mocks, a.sources, hard, a.tokens,
                                              a.itl_ms), flush=True)
    tmp = tempfile.mkdtemp(prefix="surge-streams100k-")
    port, mprocs = start_mocks(surge, mocks, ["--ttft-ms", str(a.ttft_ms), "--itl-ms", str(a.itl_ms),
                                              "--output-tokens", str(a.tokens)], tmp)
    try:
        # a small run first: what one rank costs with 1,000 streams (its fixed part, for the per-stream figure)
        base, bout, _ = run_ranks(surge, port, 1000, 1, a, tmp, "base")
        base_rss = bout[0][1]
        summary, out, wall = run_ranks(surge, port, a.streams, ranks, a, tmp, "big")
    finally:
        for p in mprocs:
            p.terminate()
        for p in mprocs:
            p.wait(timeout=30)
    ok = stat(summary, "request_count")
    errors = stat(summary, "error_request_count")
    tokens = (stat(summary, "output_sequence_length") or 0) * (ok or 0)
    rss = sum(o[1] for o in out)
    cpu = sum(o[2] for o in out)
    for r, (rc, kib, c, err) in enumerate(out):
        print("  rank %d: exit %d, peak RSS %.1f MiB, CPU %.2f s" % (r, rc, kib / 1024, c))
        if rc != 0:
            print("    " + err.strip().replace("\n", "\n    ")[-1500:])
    print("streams completed: %s of %d, errors %s, wall %.1f s" % (ok, a.streams, errors, wall))
    per_stream = rss * 1024 / a.streams
    above = (rss - ranks * base_rss) * 1024 / max(1, a.streams - ranks * 1000)
    print("client memory: %.1f MiB peak RSS over %d rank(s): %.0f bytes per stream, %.0f per stream above a "
          "1,000-stream rank (%.1f MiB)" % (rss / 1024, ranks, per_stream, above, base_rss / 1024))
    if tokens:
        print("client CPU: %.2f s for %.0f tokens: %.2f us per token (%.0f tokens per client CPU-second), "
              "connection set-up and close included" % (cpu, tokens, cpu / tokens * 1e6, tokens / cpu))
        load_cpu = stat(summary, "client_cpu_time")
        if load_cpu:
            print("  load phase alone (the summary's client_cpu_time, summed over ranks): %.2f s, %.2f us per token"
                  % (load_cpu, load_cpu / tokens * 1e6))
    shutil.rmtree(tmp, ignore_errors=True)
    good = ok == a.streams and errors == 0 and all(o[0] == 0 for o in out)
    print("result: %s" % ("PASS" if good else "FAIL"))
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
