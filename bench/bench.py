#!/usr/bin/env python3
"""Benchmarks: surge next to a peer (h2load) in the same run, against the bundled mock on 127.0.0.1.

Run by hand, not in CI (timings on shared 2-core machines are noisy: every figure is a median of --repeat
runs, and the comparisons are ratios taken in the same run).

  bench/bench.py cpu      client CPU per non-streamed HTTP/1.1 request: surge (1 worker) vs h2load --h1 (1 thread),
                          64 connections, same mock, same body
  bench/bench.py h2       client CPU per non-streamed request over h2c, 32 streams per connection: surge
                          (--workers 1 --http2, concurrency 32 x connections) vs h2load -m32 -c<N> -t1, and
                          h2load --log-file (its own line per request) as the peer that also writes records
  bench/bench.py tls      client CPU per non-streamed request over TLS vs plaintext, HTTP/1.1 keep-alive (64
                          connections) and h2 (4 x 32 streams), surge and h2load (https URLs) in the same run
  bench/bench.py stream   streamed tokens (SSE events) per client CPU-second, one worker
  bench/bench.py trickle  slow streams (a segment per token): surge on both backends, the kernel's floor
                          (build/micro/segfloor) and a Python aiohttp peer (bench/trickle_peer.py), tokens per
                          client CPU-second; 300 streams x 50 tokens/s and 10,000 x 5
  bench/bench.py grpc     streamed gRPC tokens per client CPU-second: surge --service-kind triton --streaming
                          (ModelStreamInfer over h2c, one response per token) next to surge's own SSE streaming
                          over HTTP/1.1 and h2c, same mock, same run, one worker. No peer: Triton's perf_analyzer
                          (what GenAI-Perf drives) is not packaged in Debian
  bench/bench.py memory   peak client memory at 200 and 2,000 concurrent streams, per in-flight stream,
                          surge vs h2load
  bench/bench.py points   client CPU per request of one load point run alone, as a point of a sweep, and as a
                          probe of a capacity search (whose workers also count requests past an SLO bound):
                          non-streamed HTTP/1.1, 64 connections, one worker; ratios to the plain run
  bench/bench.py scrape   client CPU per request with and without --server-metrics-url (the mock's /metrics
                          every 1 s, on the scraper's thread: its CPU is counted), non-streamed HTTP/1.1, 64
                          connections, one worker, interleaved runs; the ratio (target: no measurable change)
  bench/bench.py report   surge report of a --requests run (default here: 1,000,000 streamed requests, made once
                          against the mock): the seconds to write the page (target < 5) and to load it in headless
                          Chromium (target < 3: the page's own time to its last chart, and Chromium's whole run).
                          No peer: no other tool writes this page (aiperf plot is not packaged in Debian)
  bench/bench.py backends the epoll backend next to io_uring and h2load (epoll-based), same mock, same run, one
                          worker / one thread: client CPU per non-streamed request over HTTP/1.1 (64 connections)
                          and h2c (4 x 32 streams), targets epoll <= h2load and <= 1.3x io_uring; and schedule lag
                          p99 of an open loop at --rate (default 5,000/s, constant arrivals), target <= 2x io_uring
  bench/bench.py ranks    one run over 3 ranks (processes, one worker each, --world-size 3) next to one process with
                          3 workers at the same total load (streamed, Poisson at 300/s, same seed): the merged
                          summary's percentiles and throughput as ratios to the one-process run's (target: 1.0
                          within noise), and the start skew bound the ranks reported (target < 1 ms on one host)
  bench/bench.py search   the capacity search's repeatability: --repeat identical searches (--arrivals constant
                          or poisson, SLO p99 TTFT < 60 ms) against a mock of known capacity (4 slots x 50 ms:
                          80 req/s evenly spaced, 43.3 req/s Poisson, from a simulated M/D/4 queue),
                          with a CPU hog on the client's core (--no-hog: without); each answer, its interval and
                          time, whether every interval holds 80 and the answers agree within the precision. With
                          --baseline SURGE (another build, e.g. the previous release) the same searches are run
                          interleaved with it, for the time ratio. --target llama: the same against llama-server
                          (tests/data/fetch-llama-server): Poisson, 10 s probes, p99 TTFT < 100 ms and
                          error_rate < 0.01, answers and times, target: within 10% of each other
  bench/bench.py all

The client is pinned to CPU 0 and the mock to CPU 1 when the machine has two or more.
"""
import argparse
import collections
import json
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Each bench run has artifacts of its own: two runs sharing one directory overwrite each other's record logs.
ARTIFACTS = None


def cpus():
    return sorted(os.sched_getaffinity(0))


def pin_prefix(cpu):
    if cpu is None or not shutil.which("taskset"):
        return []
    return ["taskset", "-c", str(cpu)]


class Mock:
    def __init__(self, surge, args, cpu, lifetime_s=900):
        """lifetime_s bounds the mock's life (--exit-after): a bench that outlives it measures a dead server."""
        self.tmp = tempfile.mkdtemp(prefix="surge-bench-")
        port_file = os.path.join(self.tmp, "port")
        cmd = pin_prefix(cpu) + [surge, "mock", "--port", "0", "--port-file", port_file, "--exit-after",
                                 str(int(lifetime_s)), "--quiet"] + args
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            if os.path.exists(port_file) and open(port_file).read().strip():
                self.port = int(open(port_file).read().strip())
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("mock did not start")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.stop()


def measured(cmd, timeout=600):
    """Run cmd; return (stdout, cpu seconds, peak RSS KiB (sampled every 10 ms), wall seconds)."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = t0 + timeout
    out_chunks = []
    # wait4 gives this child's own CPU. Its ru_maxrss is no good here: it keeps the high-water mark of the
    # forked Python image from before exec, so the peak RSS is read from /proc (VmHWM of the exec'd image).
    hwm = 0
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        try:
            with open("/proc/%d/status" % p.pid) as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        hwm = max(hwm, int(line.split()[1]))
        except OSError:
            pass
        if time.monotonic() > deadline:
            p.kill()
            raise RuntimeError("timed out: " + " ".join(cmd))
        time.sleep(0.01)
    wall = time.monotonic() - t0
    out = p.stdout.read()
    err = p.stderr.read()
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode not in (0,):
        sys.stderr.write(err[-2000:])
        raise RuntimeError("exit %d: %s" % (p.returncode, " ".join(cmd)))
    out_chunks.append(out)
    return out, ru.ru_utime + ru.ru_stime, hwm, wall


def prompt_words(n):
    words = "the quick brown fox jumps over a lazy dog while people watch from their house".split()
    return " ".join(words[i % len(words)] for i in range(n))


def chat_body_file(words, max_tokens, stream=False):
    """A chat request body for h2load -d, in a temporary directory: (the directory, the file's path)."""
    body = {"model": "bench", "messages": [{"role": "user", "content": prompt_words(words)}], "max_tokens": max_tokens}
    if stream:
        body["stream"] = True
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "body.json")
    with open(path, "w") as f:
        f.write(json.dumps(body))
    return tmp, path


def fresh(path):
    """An empty directory at path: a run never writes into one that holds an earlier run (it would take path-2)."""
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def surge_cmd(surge, port, cpu, args):
    """surge profile's command line, into an emptied ARTIFACTS (summary() reads what the run writes there)."""
    fresh(ARTIFACTS)
    return pin_prefix(cpu) + [surge, "profile", "-m", "bench", "-u", "127.0.0.1:%d" % port, "--workers", "1",
                              "--no-progress", "--artifact-dir", ARTIFACTS] + args


def summary():
    with open(os.path.join(ARTIFACTS, "profile_export_surge.json")) as f:
        return json.load(f)


def bench_cpu(surge, n, repeat, client_cpu, mock_cpu):
    tmp, body_file = chat_body_file(100, 1)
    rows = []
    with Mock(surge, ["--workers", "1", "--ttft-ms", "0", "--itl-ms", "0", "--output-tokens", "1"], mock_cpu) as m:
        url = "http://127.0.0.1:%d/v1/chat/completions" % m.port
        for _ in range(repeat):
            _, h_cpu, _, h_wall = measured(pin_prefix(client_cpu) + [
                "h2load", "--h1", "-n", str(n), "-c", "64", "-t", "1", "-d", body_file,
                "-H", "Content-Type: application/json", url])
            _, s_cpu, _, s_wall = measured(surge_cmd(surge, m.port, client_cpu, [
                "--concurrency", "64", "--request-count", str(n), "--synthetic-input-tokens-mean", "100",
                "--output-tokens-mean", "1"]))
            s = summary()
            ok = s["request_count"]["avg"]
            if ok != n:
                raise RuntimeError("surge completed %s of %d requests" % (ok, n))
            run_cpu = s["client_cpu_time"]["avg"]
            rows.append((h_cpu / n * 1e6, s_cpu / n * 1e6, n / h_wall, n / s_wall, run_cpu / n * 1e6))
    shutil.rmtree(tmp, ignore_errors=True)
    h = statistics.median(r[0] for r in rows)
    s = statistics.median(r[1] for r in rows)
    s_run = statistics.median(r[4] for r in rows)
    print("cpu: non-streamed HTTP/1.1, 64 connections, %d requests, median of %d" % (n, repeat))
    print("  h2load --h1 -t1    %7.2f us CPU/request, whole process  (%8.0f req/s)"
          % (h, statistics.median(r[2] for r in rows)))
    print("  surge --workers 1  %7.2f us CPU/request, whole process incl. writing the per-request JSONL"
          % s)
    print("                     %7.2f us CPU/request, load phase (start instant to last response)" % s_run)
    print("  ratio surge/h2load: %.2fx whole process, %.2fx load phase  (target <= 1.0, aim 0.7)"
          % (s / h, s_run / h))
    return {"h2load_us": h, "surge_us": s, "surge_run_us": s_run, "ratio": s / h}


def bench_h2(surge, n, repeat, client_cpu, mock_cpu, conns=4, streams=32):
    tmp, body_file = chat_body_file(100, 1)
    rows = []
    conc = conns * streams
    with Mock(surge, ["--workers", "1", "--ttft-ms", "0", "--itl-ms", "0", "--output-tokens", "1",
                      "--max-concurrent-streams", str(streams)], mock_cpu) as m:
        url = "http://127.0.0.1:%d/v1/chat/completions" % m.port
        for _ in range(repeat):
            out, h_cpu, _, h_wall = measured(pin_prefix(client_cpu) + [
                "h2load", "-n", str(n), "-c", str(conns), "-m", str(streams), "-t", "1", "-d", body_file,
                "-H", "Content-Type: application/json", url])
            if "%d succeeded" % n not in out:
                raise RuntimeError("h2load did not complete every request:\n" + out[-2000:])
            # h2load's own per-request record (--log-file: start time, status, duration), the closest thing it has
            # to surge's JSONL: the whole-process comparison with both writing one line per request
            out, hl_cpu, _, _ = measured(pin_prefix(client_cpu) + [
                "h2load", "-n", str(n), "-c", str(conns), "-m", str(streams), "-t", "1", "-d", body_file,
                "--log-file", os.path.join(tmp, "h2load.log"), "-H", "Content-Type: application/json", url])
            if "%d succeeded" % n not in out:
                raise RuntimeError("h2load --log-file did not complete every request:\n" + out[-2000:])
            _, s_cpu, _, s_wall = measured(surge_cmd(surge, m.port, client_cpu, [
                "--http2", "--max-connections", str(conns), "--concurrency", str(conc), "--request-count", str(n),
                "--synthetic-input-tokens-mean", "100", "--output-tokens-mean", "1"]))
            s = summary()
            ok = s["request_count"]["avg"]
            if ok != n:
                raise RuntimeError("surge completed %s of %d requests" % (ok, n))
            run_cpu = s["client_cpu_time"]["avg"]
            rows.append((h_cpu / n * 1e6, s_cpu / n * 1e6, n / h_wall, n / s_wall, run_cpu / n * 1e6,
                         hl_cpu / n * 1e6))
    shutil.rmtree(tmp, ignore_errors=True)
    h = statistics.median(r[0] for r in rows)
    s = statistics.median(r[1] for r in rows)
    s_run = statistics.median(r[4] for r in rows)
    h_log = statistics.median(r[5] for r in rows)
    print("h2: non-streamed h2c, %d connections x %d streams, %d requests, median of %d" % (conns, streams, n, repeat))
    print("  h2load -m%d -c%d -t1 %7.2f us CPU/request, whole process  (%8.0f req/s)"
          % (streams, conns, h, statistics.median(r[2] for r in rows)))
    print("    with --log-file   %7.2f us CPU/request, whole process incl. its per-request log" % h_log)
    print("  surge --http2 -w1   %7.2f us CPU/request, whole process incl. writing the per-request JSONL  (%8.0f req/s)"
          % (s, statistics.median(r[3] for r in rows)))
    print("                      %7.2f us CPU/request, load phase (start instant to last response)" % s_run)
    print("  ratio surge/h2load: %.2fx whole process, %.2fx load phase  (target <= 1.0)" % (s / h, s_run / h))
    print("  ratio surge/h2load, both writing a line per request: %.2fx whole process" % (s / h_log))
    return {"h2load_us": h, "surge_us": s, "surge_run_us": s_run, "ratio": s / h, "h2load_log_us": h_log}


def bench_tls(surge, n, repeat, client_cpu, mock_cpu, conns=64, h2_conns=4, streams=32):
    """Client CPU per non-streamed request over TLS against plaintext, HTTP/1.1 keep-alive and h2, surge and h2load
    in the same runs against the same mocks (one plaintext, one --tls; the TLS ones offer only http/1.1 or only
    h2 through ALPN so each client speaks the protocol measured)."""
    tmp, body_file = chat_body_file(100, 1)
    base = ["--workers", "1", "--ttft-ms", "0", "--itl-ms", "0", "--output-tokens", "1",
            "--max-concurrent-streams", str(streams)]
    common = ["--synthetic-input-tokens-mean", "100", "--output-tokens-mean", "1", "--request-count", str(n)]
    h1_args = ["--concurrency", str(conns)]
    h2_args = ["--http2", "--max-connections", str(h2_conns), "--concurrency", str(h2_conns * streams)]
    cols = ["surge h1", "surge h1 tls", "h2load h1", "h2load h1 tls",
            "surge h2", "surge h2 tls", "h2load h2", "h2load h2 tls"]
    rows = {c: [] for c in cols}
    with Mock(surge, base, mock_cpu) as plain, \
            Mock(surge, base + ["--tls", "--tls-alpn", "http/1.1"], mock_cpu) as t1, \
            Mock(surge, base + ["--tls", "--tls-alpn", "h2"], mock_cpu) as t2:
        def surge_run(port, scheme, args):
            cmd = surge_cmd(surge, port, client_cpu, args + common + ["-k"] * (scheme == "https"))
            cmd[cmd.index("127.0.0.1:%d" % port)] = "%s://127.0.0.1:%d" % (scheme, port)
            _, cpu, _, _ = measured(cmd)
            ok = summary()["request_count"]["avg"]
            if ok != n:
                raise RuntimeError("surge completed %s of %d requests" % (ok, n))
            return cpu / n * 1e6

        def h2load_run(port, scheme, args):
            out, cpu, _, _ = measured(pin_prefix(client_cpu) + ["h2load", "-n", str(n), "-t", "1", "-d", body_file,
                                      "-H", "Content-Type: application/json"] + args +
                                      ["%s://127.0.0.1:%d/v1/chat/completions" % (scheme, port)])
            if "%d succeeded" % n not in out:
                raise RuntimeError("h2load did not complete every request:\n" + out[-2000:])
            return cpu / n * 1e6

        for _ in range(repeat):
            rows["surge h1"].append(surge_run(plain.port, "http", h1_args))
            rows["surge h1 tls"].append(surge_run(t1.port, "https", h1_args))
            rows["h2load h1"].append(h2load_run(plain.port, "http", ["--h1", "-c", str(conns)]))
            rows["h2load h1 tls"].append(h2load_run(t1.port, "https", ["-c", str(conns)]))
            rows["surge h2"].append(surge_run(plain.port, "http", h2_args))
            rows["surge h2 tls"].append(surge_run(t2.port, "https", h2_args))
            rows["h2load h2"].append(h2load_run(plain.port, "http", ["-c", str(h2_conns), "-m", str(streams)]))
            rows["h2load h2 tls"].append(h2load_run(t2.port, "https", ["-c", str(h2_conns), "-m", str(streams)]))
    shutil.rmtree(tmp, ignore_errors=True)
    med = {c: statistics.median(v) for c, v in rows.items()}
    print("tls: client CPU per non-streamed request (whole process), %d requests, median of %d; TLS 1.3 "
          "ChaCha20-Poly1305 (surge/wolfSSL), h2load/OpenSSL its default" % (n, repeat))
    for proto, desc in (("h1", "HTTP/1.1 keep-alive, %d connections" % conns),
                        ("h2", "h2, %d connections x %d streams" % (h2_conns, streams))):
        print("  %s" % desc)
        for who in ("surge", "h2load"):
            p, t = med["%s %s" % (who, proto)], med["%s %s tls" % (who, proto)]
            print("    %-7s plaintext %7.2f us   TLS %7.2f us   TLS/plaintext %.2fx" % (who, p, t, t / p))
        print("    surge/h2load over TLS: %.2fx" % (med["surge %s tls" % proto] / med["h2load %s tls" % proto]))
    return med


def bench_stream(surge, n, tokens, repeat, client_cpu, mock_cpu):
    rows = []
    with Mock(surge, ["--workers", "1", "--ttft-ms", "0", "--itl-ms", "0", "--output-tokens", str(tokens)],
              mock_cpu) as m:
        for _ in range(repeat):
            _, s_cpu, _, s_wall = measured(surge_cmd(surge, m.port, client_cpu, [
                "--streaming", "--concurrency", "64", "--request-count", str(n),
                "--synthetic-input-tokens-mean", "20", "--output-tokens-mean", str(tokens)]))
            s = summary()
            events = s["output_sequence_length"]["avg"] * s["request_count"]["avg"]
            rows.append((events / s_cpu, events / s_wall, events / s["client_cpu_time"]["avg"]))
    tps = statistics.median(r[0] for r in rows)
    tps_run = statistics.median(r[2] for r in rows)
    print("stream: %d streamed requests x %d tokens, 64 in flight, one worker, median of %d" % (n, tokens, repeat))
    print("  surge %.2f M tokens per client CPU-second, whole process; %.2f M in the load phase "
          "(%.2f M tokens/s wall)  (target >= 2.0)" % (tps / 1e6, tps_run / 1e6,
                                                       statistics.median(r[1] for r in rows) / 1e6))
    return {"tokens_per_cpu_s": tps, "tokens_per_cpu_s_run": tps_run}


PEER_PYTHON = "/usr/bin/python3"  # Debian's, where python3-aiohttp installs


def bench_trickle(surge, repeat, client_cpu, mock_cpu, configs=((300, 50, 100), (10000, 5, 20))):
    """Slow streams, every token its own TCP segment: surge on both backends, the kernel's floor (segfloor: epoll and
    one recv per ready connection, nothing else) and the Python peer (bench/trickle_peer.py), interleaved."""
    floor = os.path.join(os.path.dirname(surge), "micro", "segfloor")
    has_peer = subprocess.run([PEER_PYTHON, "-c", "import aiohttp"], capture_output=True).returncode == 0
    if not has_peer:
        print("  (no Python peer: apt-get install python3-aiohttp)")
    out = {}
    for streams, rate, tokens in configs:
        itl = 1000 // rate
        rows = collections.defaultdict(list)
        with Mock(surge, ["--workers", "1", "--ttft-ms", "5", "--itl-ms", str(itl), "--output-tokens", str(tokens),
                          "--backlog", "16384"], mock_cpu) as m:
            for _ in range(repeat):
                for be in ("io_uring", "epoll"):
                    _, cpu, _, _ = measured(surge_cmd(surge, m.port, client_cpu, [
                        "--streaming", "--concurrency", str(streams), "--request-count", str(streams),
                        "--io-backend", be, "--output-tokens-mean", str(tokens)]))
                    sm = summary()
                    tok = sm["output_sequence_length"]["avg"] * sm["request_count"]["avg"]
                    rows["surge " + be].append((tok / cpu, tok / sm["client_cpu_time"]["avg"]))
                if os.path.exists(floor):
                    o, cpu, _, _ = measured(pin_prefix(client_cpu) + [floor, "127.0.0.1", str(m.port), str(streams),
                                                                      str(tokens), "1000"])
                    per = float(re.search(r"([\d.]+) tokens per CPU-second", o).group(1))
                    rows["kernel floor"].append((streams * tokens / cpu, per))
                if has_peer:
                    o, cpu, _, _ = measured(pin_prefix(client_cpu) + [
                        PEER_PYTHON, os.path.join(ROOT, "bench", "trickle_peer.py"),
                        "http://127.0.0.1:%d/v1/chat/completions" % m.port, str(streams), str(tokens)])
                    r = json.loads(o)
                    rows["python peer"].append((r["tokens"] / cpu, r["tokens"] / r["cpu_s"]))
        med = {k: (statistics.median(v[0] for v in rows[k]), statistics.median(v[1] for v in rows[k])) for k in rows}
        print("trickle: %d streams x %d tokens/s x %d tokens (TTFT 5 ms, ITL %d ms), one worker or thread, median of "
              "%d" % (streams, rate, tokens, itl, repeat))
        for k, (whole, load) in med.items():
            print("  %-14s %9.0f tokens per client CPU-second, whole process; %9.0f in the load phase" % (k, whole,
                                                                                                     load))
        for ref in ("kernel floor", "python peer"):
            if ref in med:
                print("  surge io_uring / %s: %.2fx whole process, %.2fx load phase" % (
                    ref, med["surge io_uring"][0] / med[ref][0], med["surge io_uring"][1] / med[ref][1]))
        out[streams] = med
    return out


def bench_grpc(surge, n, tokens, repeat, client_cpu, mock_cpu, concurrency=64):
    modes = [("gRPC ModelStreamInfer (h2c)", ["--service-kind", "triton"]),
             ("SSE over HTTP/1.1", []),
             ("SSE over h2c", ["--http2"])]
    rows = {name: [] for name, _ in modes}
    with Mock(surge, ["--workers", "1", "--ttft-ms", "0", "--itl-ms", "0", "--output-tokens", str(tokens)],
              mock_cpu) as m:
        for _ in range(repeat):
            for name, extra in modes:  # interleaved, so drift on a shared machine hits every mode alike
                _, cpu, _, wall = measured(surge_cmd(surge, m.port, client_cpu, extra + [
                    "--streaming", "--concurrency", str(concurrency), "--request-count", str(n),
                    "--synthetic-input-tokens-mean", "20", "--output-tokens-mean", str(tokens)]))
                s = summary()
                if s["error_request_count"]["avg"]:
                    raise RuntimeError("%s: %s" % (name, s.get("error_summary")))
                events = s["output_sequence_length"]["avg"] * s["request_count"]["avg"]
                rows[name].append((events / cpu, events / s["client_cpu_time"]["avg"], events / wall))
    print("grpc: %d streamed calls x %d tokens, %d in flight, one worker, median of %d"
          % (n, tokens, concurrency, repeat))
    res = {}
    for name, _ in modes:
        r = rows[name]
        res[name] = statistics.median(x[0] for x in r)
        print("  %-28s %6.2f M tokens per client CPU-second, whole process; %6.2f M in the load phase "
              "(%5.2f M tokens/s wall)" % (name, res[name] / 1e6, statistics.median(x[1] for x in r) / 1e6,
                                          statistics.median(x[2] for x in r) / 1e6))
    g = res[modes[0][0]]
    print("  gRPC / SSE-HTTP/1.1: %.2fx, gRPC / SSE-h2c: %.2fx (no gRPC peer: perf_analyzer is not in Debian)"
          % (g / res[modes[1][0]], g / res[modes[2][0]]))
    return res


def bench_memory(surge, repeat, client_cpu, mock_cpu):
    # Streams that stay open: first token after 200 ms, then one every 100 ms, 20 tokens (about 2 s each).
    mock_args = ["--workers", "1", "--ttft-ms", "200", "--itl-ms", "100", "--output-tokens", "20"]
    tmp, body_file = chat_body_file(50, 20, stream=True)
    res = {}
    with Mock(surge, mock_args, mock_cpu) as m:
        url = "http://127.0.0.1:%d/v1/chat/completions" % m.port
        for c in (200, 2000):
            s_rss, h_rss = [], []
            for _ in range(repeat):
                # the same request count at both points, so that what a request costs after it ends (its
                # record, the exports) cancels out of the per-stream figure
                _, _, rss, _ = measured(surge_cmd(surge, m.port, client_cpu, [
                    "--streaming", "--concurrency", str(c), "--request-count", "4000",
                    "--synthetic-input-tokens-mean", "50", "--output-tokens-mean", "20"]))
                s_rss.append(rss)
                _, _, rss, _ = measured(pin_prefix(client_cpu) + [
                    "h2load", "--h1", "-n", "4000", "-c", str(c), "-t", "1", "-d", body_file,
                    "-H", "Content-Type: application/json", url])
                h_rss.append(rss)
            res[c] = (statistics.median(s_rss), statistics.median(h_rss))
    shutil.rmtree(tmp, ignore_errors=True)
    s_per = (res[2000][0] - res[200][0]) * 1024 / 1800
    h_per = (res[2000][1] - res[200][1]) * 1024 / 1800
    print("memory: peak RSS with 200 and 2,000 concurrent streams, median of %d" % repeat)
    print("  surge  %8.1f MiB / %8.1f MiB  -> %6.0f bytes per in-flight stream  (target <= 8192)" %
          (res[200][0] / 1024, res[2000][0] / 1024, s_per))
    print("  h2load %8.1f MiB / %8.1f MiB  -> %6.0f bytes per in-flight stream" %
          (res[200][1] / 1024, res[2000][1] / 1024, h_per))
    print("  ratio surge/h2load per stream: %.2fx" % (s_per / h_per if h_per > 0 else float("nan")))
    return {"surge_bytes_per_stream": s_per, "h2load_bytes_per_stream": h_per}


def bench_points(surge, n, repeat, client_cpu, mock_cpu):
    """A sweep's or a search's point costs what a plain run costs per request: the load-phase client CPU of a
    point at concurrency 64 run alone, as the second point of --concurrency 63,64, and as the first probe of a
    --search max-concurrency (its workers count every request against the SLO's bound)."""
    common = ["--request-count", str(n), "--synthetic-input-tokens-mean", "100", "--output-tokens-mean", "1"]
    modes = [("plain run", ["--concurrency", "64"], None),
             ("sweep point", ["--concurrency", "63,64", "--parameter-sweep-cooldown-seconds", "0"], "concurrency_64"),
             ("search probe", ["--search", "max-concurrency", "--search-range", "64:65", "--slo",
                               "request_latency:p99<60000", "--parameter-sweep-cooldown-seconds", "0"],
              "probe_01_concurrency_64")]
    per = {name: [] for name, _, _ in modes}
    with Mock(surge, ["--workers", "1", "--ttft-ms", "0", "--itl-ms", "0", "--output-tokens", "1"], mock_cpu) as m:
        for _ in range(repeat):
            for name, args, sub in modes:  # interleaved: the machine's drift hits every mode alike
                measured(surge_cmd(surge, m.port, client_cpu, args + common))
                path = os.path.join(ARTIFACTS, sub, "profile_export_surge.json") if sub else \
                    os.path.join(ARTIFACTS, "profile_export_surge.json")
                with open(path) as f:
                    s = json.load(f)
                if s["request_count"]["avg"] != n:
                    raise RuntimeError("%s completed %s of %d requests" % (name, s["request_count"]["avg"], n))
                per[name].append(s["client_cpu_time"]["avg"] / n * 1e6)
    base = statistics.median(per["plain run"])
    print("points: non-streamed HTTP/1.1, concurrency 64, %d requests per point, one worker, median of %d"
          % (n, repeat))
    out = {}
    for name, _, _ in modes:
        med = statistics.median(per[name])
        print("  %-13s %7.2f us CPU/request, load phase  ratio to the plain run %.2fx  (target 1.0)"
              % (name, med, med / base))
        out[name] = med
    return out


def bench_scrape(surge, n, repeat, client_cpu, mock_cpu):
    common = ["--concurrency", "64", "--request-count", str(n), "--synthetic-input-tokens-mean", "100",
              "--output-tokens-mean", "1"]
    per = {"plain": [], "scraping": []}
    scrapes = []
    with Mock(surge, ["--workers", "1", "--ttft-ms", "0", "--itl-ms", "0", "--output-tokens", "1"], mock_cpu) as m:
        url = "http://127.0.0.1:%d/metrics" % m.port
        for _ in range(repeat):
            for name in ("plain", "scraping"):  # interleaved: drift hits both alike
                extra = ["--server-metrics-url", url, "--server-metrics-interval", "1"] if name == "scraping" else []
                measured(surge_cmd(surge, m.port, client_cpu, common + extra))
                s = summary()
                if s["request_count"]["avg"] != n:
                    raise RuntimeError("%s completed %s of %d requests" % (name, s["request_count"]["avg"], n))
                per[name].append(s["client_cpu_time"]["avg"] / n * 1e6)
                if name == "scraping":
                    scrapes.append(s["server_metrics"]["endpoints"][0]["scrapes"])
    a, b = statistics.median(per["plain"]), statistics.median(per["scraping"])
    print("scrape: non-streamed HTTP/1.1, concurrency 64, %d requests, one worker, median of %d (%s scrapes a run)"
          % (n, repeat, "/".join(map(str, scrapes))))
    print("  without scraping   %7.3f us CPU/request" % a)
    print("  scraping at 1 s    %7.3f us CPU/request   ratio %.3fx  (target 1.0)" % (b, b / a))
    return {"plain": a, "scraping": b}


def bench_embeddings(surge, n, repeat, client_cpu, mock_cpu, dims=(16, 256, 1024)):
    """Client CPU per request: embeddings (one 100-word input, a vector of dim floats back) against non-streamed
    completions of the same prompt, twice: one token back (the same request), and as many tokens as make the same
    response body size (the same bytes to receive and parse). Interleaved runs against the same mock; h2load sends
    each body beside them as the reference."""
    words = 100
    tmp = tempfile.mkdtemp()
    common = ["--concurrency", "64", "--synthetic-input-tokens-mean", str(words)]

    def completion_args(tokens):
        return ["--endpoint-type", "completions", "--output-tokens-mean", str(tokens), "--extra-inputs",
                "ignore_eos:true"]

    def body_file(name, body):
        path = os.path.join(tmp, name + ".json")
        with open(path, "w") as f:
            f.write(json.dumps(body))
        return path

    def response_bytes(port, args):
        measured(surge_cmd(surge, port, client_cpu, common + ["--request-count", "64"] + args))
        with open(os.path.join(ARTIFACTS, "profile_export_surge.jsonl")) as f:
            return json.loads(f.readline())["response_bytes"]

    print("embeddings: non-streamed HTTP/1.1, concurrency 64, %d requests, one worker, %d-word input, median of %d"
          % (n, words, repeat))
    print("  %6s %10s %12s %12s %12s %9s %9s %16s" % ("floats", "body bytes", "embeddings", "compl. same",
                                                      "compl. 1 tok", "vs same", "vs 1 tok", "h2load same/1"))
    result = {}
    for dim in dims:
        # the mock answers max_tokens tokens (no --output-tokens): the completions' size is the client's to pick
        mock_args = ["--workers", "1", "--ttft-ms", "0", "--itl-ms", "0", "--embedding-dim", str(dim)]
        with Mock(surge, mock_args, mock_cpu) as m:
            size = response_bytes(m.port, ["--endpoint-type", "embeddings"])
            b1, b2 = response_bytes(m.port, completion_args(1)), response_bytes(m.port, completion_args(1001))
            tokens = max(1, 1 + round((size - b1) * 1000 / (b2 - b1)))
            same = response_bytes(m.port, completion_args(tokens))
            runs = {"embeddings": ["--endpoint-type", "embeddings"], "same": completion_args(tokens),
                    "one": completion_args(1)}
            bodies = {"embeddings": {"model": "bench", "input": [prompt_words(words)]},
                      "same": {"model": "bench", "prompt": prompt_words(words), "max_tokens": tokens,
                               "ignore_eos": True},
                      "one": {"model": "bench", "prompt": prompt_words(words), "max_tokens": 1, "ignore_eos": True}}
            paths = {k: body_file(k, v) for k, v in bodies.items()}
            per = {k: [] for k in ("embeddings", "same", "one", "h2load embeddings", "h2load same", "h2load one")}
            for _ in range(repeat):
                for name in ("embeddings", "same", "one"):  # interleaved: drift hits all alike
                    measured(surge_cmd(surge, m.port, client_cpu, common + ["--request-count", str(n)] + runs[name]))
                    s = summary()
                    if s["request_count"]["avg"] != n:
                        raise RuntimeError("%s completed %s of %d requests" % (name, s["request_count"]["avg"], n))
                    per[name].append(s["client_cpu_time"]["avg"] / n * 1e6)
                    path = "embeddings" if name == "embeddings" else "completions"
                    _, h_cpu, _, _ = measured(pin_prefix(client_cpu) + [
                        "h2load", "--h1", "-n", str(n), "-c", "64", "-t", "1", "-d", paths[name],
                        "-H", "Content-Type: application/json", "http://127.0.0.1:%d/v1/%s" % (m.port, path)])
                    per["h2load " + name].append(h_cpu / n * 1e6)
        med = {k: statistics.median(v) for k, v in per.items()}
        print("  %6d %10d %9.3f us %9.3f us %9.3f us %8.2fx %8.2fx %7.2fx/%.2fx   (same: %d tokens, %d bytes)"
              % (dim, size, med["embeddings"], med["same"], med["one"], med["embeddings"] / med["same"],
                 med["embeddings"] / med["one"], med["h2load embeddings"] / med["h2load same"],
                 med["h2load embeddings"] / med["h2load one"], tokens, same))
        result[dim] = med
    print("  surge: load-phase CPU (target: embeddings <= completions of the same size); h2load: whole process, "
          "reads the body unparsed")
    shutil.rmtree(tmp, ignore_errors=True)
    return result


def page_check(dom):
    """The self-check the report page writes when it has drawn (report/assets/report.js)."""
    import html
    import re
    m = re.search(r'<pre id="selfcheck"[^>]*>(.*?)</pre>', dom, re.S)
    return json.loads(html.unescape(m.group(1))) if m else None


def bench_report(surge, n, repeat, client_cpu, mock_cpu):
    chromium = shutil.which("chromium")
    if not chromium:
        sys.exit("bench: chromium not found (apt-get install chromium)")
    with Mock(surge, ["--workers", "1", "--ttft-ms", "1", "--itl-ms", "0.5"], mock_cpu) as m:
        t0 = time.monotonic()
        measured(surge_cmd(surge, m.port, client_cpu, ["--endpoint-type", "chat", "--streaming", "--concurrency",
                                                       "128", "--request-count", str(n), "--output-tokens-mean",
                                                       "8", "--synthetic-input-tokens-mean", "20"]), timeout=1800)
        made = time.monotonic() - t0
    page = os.path.join(ARTIFACTS, "report.html")
    records = [f for f in os.listdir(ARTIFACTS) if f.endswith(".jsonl")]
    size = sum(os.path.getsize(os.path.join(ARTIFACTS, f)) for f in records)
    write, load, draw = [], [], []
    for _ in range(repeat):
        _, cpu, rss, wall = measured([surge, "report", ARTIFACTS, "-o", page, "-q"])
        write.append(wall)
        profile = tempfile.mkdtemp(prefix="surge-bench-chromium-")
        try:
            t0 = time.monotonic()  # not measured(): the DOM it prints would fill the pipe it reads at the end
            out = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                                  "--user-data-dir=" + profile, "--window-size=1300,3000",
                                  "--virtual-time-budget=20000", "--dump-dom", "file://" + page],
                                 capture_output=True, text=True, timeout=120, check=True).stdout
            wall = time.monotonic() - t0
        finally:
            shutil.rmtree(profile, ignore_errors=True)
        check = page_check(out)
        if not check or not check.get("ok"):
            raise RuntimeError("the page did not draw: %s" % (check,))
        load.append(wall)
        draw.append(check["render_ms"] / 1000)
    print("report: %d requests (records %.0f MB, run made in %.0f s), page %.2f MB, median of %d"
          % (n, size / 1e6, made, os.path.getsize(page) / 1e6, repeat))
    print("  written by surge report   %6.2f s   (target < 5 s)" % statistics.median(write))
    print("  drawn in Chromium         %6.2f s   (page's own time to its last chart; target < 3 s)"
          % statistics.median(draw))
    print("  Chromium run, whole       %6.2f s   (start, load, draw, dump, exit)" % statistics.median(load))
    return {"write_s": statistics.median(write), "draw_s": statistics.median(draw), "chromium_s": statistics.median(load)}


ap_default_requests = 200000


def bench_backends(surge, n, repeat, client_cpu, mock_cpu, rate=5000, conns=4, streams=32):
    tmp, body_file = chat_body_file(100, 1)
    common = ["--request-count", str(n), "--synthetic-input-tokens-mean", "100", "--output-tokens-mean", "1"]
    cases = {
        "h1": (["--h1", "-c", "64"], ["--concurrency", "64"]),
        "h2c": (["-c", str(conns), "-m", str(streams)],
                ["--http2", "--max-connections", str(conns), "--concurrency", str(conns * streams)]),
    }
    cpu = {(c, who): [] for c in cases for who in ("h2load", "io_uring", "epoll", "io_uring_whole", "epoll_whole")}
    lag = {"io_uring": [], "epoll": []}
    with Mock(surge, ["--workers", "1", "--ttft-ms", "0", "--itl-ms", "0", "--output-tokens", "1",
                      "--max-concurrent-streams", str(streams)], mock_cpu) as m:
        url = "http://127.0.0.1:%d/v1/chat/completions" % m.port
        for _ in range(repeat):
            for case, (h_args, s_args) in cases.items():
                out, h_cpu, _, _ = measured(pin_prefix(client_cpu) + ["h2load", "-n", str(n), "-t", "1"] + h_args + [
                    "-d", body_file, "-H", "Content-Type: application/json", url])
                if "%d succeeded" % n not in out:
                    raise RuntimeError("h2load did not complete every request:\n" + out[-2000:])
                cpu[(case, "h2load")].append(h_cpu / n * 1e6)
                for be in ("io_uring", "epoll"):
                    _, whole, _, _ = measured(surge_cmd(surge, m.port, client_cpu, s_args + common + ["--io-backend", be]))
                    s = summary()
                    if s["request_count"]["avg"] != n or s.get("io_backend") != be:
                        raise RuntimeError("surge --io-backend %s: %s of %d requests" % (be, s["request_count"], n))
                    cpu[(case, be)].append(s["client_cpu_time"]["avg"] / n * 1e6)
                    cpu[(case, be + "_whole")].append(whole / n * 1e6)
            for be in ("io_uring", "epoll"):
                k = min(n, rate * 10)
                measured(surge_cmd(surge, m.port, client_cpu, [
                    "--request-rate", str(rate), "--request-distribution", "constant", "--request-count", str(k),
                    "--max-concurrency", "256", "--synthetic-input-tokens-mean", "100", "--output-tokens-mean", "1",
                    "--io-backend", be]))
                lag[be].append(summary()["schedule_lag"]["p99"])
    shutil.rmtree(tmp, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in cpu.items()}
    print("backends: client CPU per non-streamed request (load phase for surge, whole process for h2load), "
          "%d requests, median of %d" % (n, repeat))
    out = {}
    for case in cases:
        h, u, e = med[(case, "h2load")], med[(case, "io_uring")], med[(case, "epoll")]
        uw, ew = med[(case, "io_uring_whole")], med[(case, "epoll_whole")]
        print("  %-4s h2load %5.2f us | surge load phase: io_uring %5.2f, epoll %5.2f us | whole process (incl. "
              "writing the JSONL): io_uring %5.2f, epoll %5.2f us" % (case, h, u, e, uw, ew))
        print("       epoll/h2load %.2fx load phase, %.2fx whole process (target <= 1.0); epoll/io_uring %.2fx, "
              "%.2fx (target <= 1.3)" % (e / h, ew / h, e / u, ew / uw))
        out[case] = {"h2load_us": h, "io_uring_us": u, "epoll_us": e, "io_uring_whole_us": uw, "epoll_whole_us": ew}
    lu, le = statistics.median(lag["io_uring"]), statistics.median(lag["epoll"])
    print("  schedule lag p99 at %d req/s (constant): io_uring %.3f ms, epoll %.3f ms, ratio %.2fx (target <= 2)"
          % (rate, lu, le, le / lu if lu > 0 else float("nan")))
    out["lag_p99_ms"] = {"io_uring": lu, "epoll": le}
    return out


def bench_ranks(surge, n, repeat, client_cpu, mock_cpu, rate=300):
    import socket
    load = ["--streaming", "--request-rate", str(rate), "--request-count", str(n), "--random-seed", "3",
            "--output-tokens-mean", "16", "--synthetic-input-tokens-mean", "100", "--no-progress"]
    tags = [("time_to_first_token", "p50"), ("time_to_first_token", "p99"), ("request_latency", "p50"),
            ("request_latency", "p99"), ("inter_token_latency", "p50"), ("schedule_lag", "p99"),
            ("request_throughput", "avg"), ("output_token_throughput", "avg")]
    rows, skews, absolute = [], [], []
    with Mock(surge, ["--workers", "1", "--ttft-ms", "20", "--itl-ms", "4"], mock_cpu) as m:
        url = "127.0.0.1:%d" % m.port
        for _ in range(repeat):
            one = fresh(os.path.join(ARTIFACTS, "one"))
            measured(pin_prefix(client_cpu) + [surge, "profile", "-m", "bench", "-u", url, "--workers", "3",
                                               "--artifact-dir", one] + load)
            with open(os.path.join(one, "profile_export_surge.json")) as f:
                a = json.load(f)
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
            s.close()
            three = fresh(os.path.join(ARTIFACTS, "three"))
            procs = [subprocess.Popen(pin_prefix(client_cpu) + [
                surge, "profile", "-m", "bench", "-u", url, "--workers", "1", "--artifact-dir", three,
                "--world-size", "3", "--rank", str(r), "--coordinator", "127.0.0.1:%d" % port] + load,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for r in range(3)]
            for p in procs:
                if p.wait(600) != 0:
                    raise RuntimeError("a rank exited %d" % p.returncode)
            with open(os.path.join(three, "profile_export_surge.json")) as f:
                b = json.load(f)
            if b["request_count"]["avg"] != n or a["request_count"]["avg"] != n:
                raise RuntimeError("not every request completed")
            rows.append([b[t][st] / a[t][st] if a[t][st] else float("nan") for t, st in tags])
            absolute.append([(a[t][st], b[t][st]) for t, st in tags])
            skews.append(b["ranks"]["start_skew_bound_ms"])
    print("ranks: 3 ranks x 1 worker vs 1 process x 3 workers, streamed, Poisson %d/s, %d requests, median of %d"
          % (rate, n, repeat))
    out = {}
    for i, (t, st) in enumerate(tags):
        med = statistics.median(r[i] for r in rows)
        one_v = statistics.median(x[i][0] for x in absolute)
        three_v = statistics.median(x[i][1] for x in absolute)
        print("  %-26s %-4s  1 process %10.4f   3 ranks %10.4f   ratio %.3f" % (t, st, one_v, three_v, med))
        out["%s_%s" % (t, st)] = med
    print("  start skew bound (half the largest round trip to rank 0): median %.4f ms, max %.4f ms (target < 1 ms)"
          % (statistics.median(skews), max(skews)))
    out["start_skew_bound_ms"] = max(skews)
    return out


def mdc_capacity(slots=4, service_s=0.05, wait_s=0.040, n=200000, seed=1):
    """The Poisson rate at which a FIFO queue of `slots` servers, each request holding one for service_s, makes the
    p99 wait (before a slot takes the request) wait_s: M/D/c, simulated, bisected. For the mock of --max-batch 4 and
    50 ms per request and an SLO of p99 TTFT < 60 ms (20 ms of it the mock's own TTFT): about 43.3 req/s."""
    import heapq
    import math
    import random

    def p99_wait(lam):
        rnd = random.Random(seed)
        t, free, waits = 0.0, [0.0] * slots, []
        for _ in range(n):
            t += rnd.expovariate(lam)
            start = max(t, heapq.heappop(free))
            waits.append(start - t)
            heapq.heappush(free, start + service_s)
        waits.sort()
        return waits[int(math.ceil(0.99 * n)) - 1]

    lo, hi = 1.0, slots / service_s
    for _ in range(20):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if p99_wait(mid) < wait_s else (lo, mid)
    return (lo + hi) / 2


def one_search(name, i, cmd):
    """Run one search into a fresh ARTIFACTS and print its answer: (low, high, probes, seconds, exit status, point
    estimate). An older build's search.json has no capacity_low/high: its highest passing and lowest failing values
    stand in; nor a capacity_estimate: None (so is one that is not a crossing: "at least" or "below" the range)."""
    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=3600)
    took = time.monotonic() - t0
    with open(os.path.join(ARTIFACTS, "search.json")) as f:
        sr = json.load(f)["search"]
    lo = sr.get("capacity_low", sr.get("highest_passing"))
    hi = sr.get("capacity_high", sr.get("lowest_failing"))
    line = next((x for x in p.stdout.splitlines() if x.startswith("Capacity")), "")
    est = sr.get("capacity_estimate") or {}
    point = est.get("value") if est.get("kind") == "crossing" else None
    print("  %-8s search %d: %s-%s req/s, point estimate %s, %d probes, %.0f s, exit %d" % (
        name, i + 1, lo, hi, "%.1f" % point if point is not None else est.get("kind", "none"), sr["probes"], took,
        p.returncode))
    print("           " + line[:400], flush=True)
    return lo, hi, sr["probes"], took, p.returncode, point


def bench_search(surge, repeat, client_cpu, mock_cpu, baseline=None, hog=True, probe_s=5, arrivals="constant"):
    """Identical capacity searches, interleaved with a baseline build's when given, a busy loop sharing the client's
    core: the answers, their spread, whether each interval holds the known capacity, and the time each took. With
    constant arrivals the capacity is the mock's service rate, 80 req/s; with Poisson arrivals queues form below it,
    and the capacity is the M/D/4 queue's (mdc_capacity)."""
    capacity = 80.0 if arrivals == "constant" else mdc_capacity()
    args = ["--streaming", "--search", "max-request-rate", "--request-distribution", arrivals, "--slo",
            "ttft:p99<60", "--search-range", "10:", "--benchmark-duration", str(probe_s),
            "--parameter-sweep-cooldown-seconds", "0.3", "--search-precision", "0.05"]
    builds = [("surge", surge)] + ([("baseline", baseline)] if baseline else [])
    res = {name: [] for name, _ in builds}
    hog_proc = None
    if hog:
        hog_proc = subprocess.Popen(pin_prefix(client_cpu) + [sys.executable, "-c", "while True: pass"])
    try:
        # a Poisson search takes about 450 s here: the mock lives for an hour per search (it once outlived 900 s,
        # and the searches after that measured a dead server)
        with Mock(surge, ["--ttft-ms", "20", "--itl-ms", "2", "--output-tokens", "16", "--max-batch", "4"],
                  mock_cpu, lifetime_s=3600 * repeat * len(builds)) as m:
            for i in range(repeat):
                for name, binary in builds:
                    res[name].append(one_search(name, i, surge_cmd(binary, m.port, client_cpu, args)))
                    if m.proc.poll() is not None:
                        raise RuntimeError("the mock exited (%s) during search %d" % (m.proc.returncode, i + 1))
    finally:
        if hog_proc:
            hog_proc.kill()
            hog_proc.wait()
    print("search: %s arrivals at a mock whose capacity for the SLO is %.1f req/s, SLO p99 TTFT < 60 ms, %g s probes, "
          "%s" % (arrivals, capacity, probe_s, "a CPU hog on the client's core" if hog else "no hog"))
    out = {}
    for name, _ in builds:
        rows = res[name]
        lows = [r[0] for r in rows if r[0] is not None]
        holds = sum(1 for r in rows if r[0] is not None and r[1] is not None and r[0] <= capacity <= r[1])
        near = sum(1 for r in lows if abs(r - capacity) <= 0.05 * capacity)
        spread = (max(lows) - min(lows)) / min(lows) if lows else float("nan")
        t = statistics.median(r[3] for r in rows)
        print("  %-8s answers (low end) %s; spread %.1f%% (precision 5%%); interval holds %.1f in %d of %d, low end "
              "within 5%% of it in %d; median time %.0f s" % (name, lows, 100 * spread, capacity, holds, len(rows),
                                                             near, t))
        points = [r[5] for r in rows if r[5] is not None]
        if points:
            worst = max(abs(x - capacity) / capacity for x in points)
            print("  %-8s point estimates %s; within %.1f%% of %.1f at worst (an estimate, not a confidence statement)"
                  % (name, ["%.1f" % x for x in points], 100 * worst, capacity))
        out[name] = {"lows": lows, "spread": spread, "holds": holds, "near": near, "time_s": t, "points": points}
    if baseline:
        print("  time ratio surge / baseline: %.2fx (target <= 2x)" % (out["surge"]["time_s"] / out["baseline"]["time_s"]))
    return out


class LlamaServer:
    """llama.cpp's llama-server with the tests' tiny model (tests/data/fetch-llama-server builds both into the test
    data cache), pinned to `cpu`, on 127.0.0.1 and a free port. Its prompt cache in host memory (--cache-ram, 8 GiB
    by default) is off: with every prompt unique it keeps each one, and the server's single loop then spends longer
    on every request the more it has seen (slot selection to launch: 0.2 ms fresh, 1.9 ms after 5,400 requests,
    8.5 ms after 16,000), so one search's capacity was less than a third of the previous one's on the same server."""

    def __init__(self, cpu, parallel=16, ctx=8192):
        base = os.path.join(os.environ.get("SURGE_TESTDATA") or os.path.expanduser("~/.cache/surge-testdata"),
                            "llama-server-3.22.1")
        binary, model = os.path.join(base, "llama-server"), os.path.join(base, "tiny-llama.gguf")
        if not (os.path.exists(binary) and os.path.exists(model)):
            raise RuntimeError("no llama-server in %s: run tests/data/fetch-llama-server first" % base)
        import socket
        with socket.socket() as sk:
            sk.bind(("127.0.0.1", 0))
            self.port = sk.getsockname()[1]
        self.log = tempfile.NamedTemporaryFile(prefix="surge-bench-llama-", suffix=".log", delete=False)
        env = dict(os.environ, LD_LIBRARY_PATH=base)
        self.proc = subprocess.Popen(pin_prefix(cpu) + ["timeout", "3600", binary, "-m", model, "--host", "127.0.0.1",
                                                        "--port", str(self.port), "-c", str(ctx), "-np",
                                                        str(parallel), "-t", "1", "--cache-ram", "0"],
                                     stdout=self.log, stderr=subprocess.STDOUT, env=env)
        import urllib.request
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/health" % self.port, timeout=1) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError("llama-server did not start")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.stop()


def reference_run(surge, port, cpu, workload, rate, seconds, bound_ms=100.0):
    """One fixed-rate run before a search, the same workload at `rate` for `seconds`: how many requests' TTFT was
    past bound_ms, and in how many separate stretches of seconds (episodes). The same run before each search says
    whether the server itself moved between them, apart from anything the search decides."""
    fresh(ARTIFACTS)
    cmd = pin_prefix(cpu) + [surge, "profile", "-m", "tiny-llama", "-u", "127.0.0.1:%d" % port, "--workers", "1",
                             "--no-progress", "--artifact-dir", ARTIFACTS, "--request-rate", str(rate),
                             "--benchmark-duration", str(seconds)] + workload
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=seconds * 3 + 120)
    ttft, starts = [], []
    with open(os.path.join(ARTIFACTS, "profile_export.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            v = (r.get("metrics") or {}).get("time_to_first_token")
            if v is not None:
                ttft.append(v["value"])
                starts.append(r["metadata"]["request_start_ns"])
    if not ttft:
        return None
    t0 = min(starts)
    secs = sorted({int((t - t0) / 1e9) for t, v in zip(starts, ttft) if v > bound_ms})
    episodes = sum(1 for i, x in enumerate(secs) if i == 0 or x != secs[i - 1] + 1)
    past = sum(1 for v in ttft if v > bound_ms)
    p99 = sorted(ttft)[max(0, int(math.ceil(0.99 * len(ttft))) - 1)]
    return len(ttft), past, episodes, p99


def bench_search_llama(surge, repeat, client_cpu, server_cpu, baseline=None, reference_rate=None):
    """The README's kind of search against a real server, llama-server with a tiny model: Poisson arrivals (the
    default), 10 s probes (the default), SLO p99 TTFT < 100 ms and error_rate < 0.01, --repeat times in a row (and
    a baseline build's beside it): each answer and how long it took, and how far apart the answers are."""
    args = ["--streaming", "--output-tokens-mean", "16", "--extra-inputs", "ignore_eos:true",
            "--synthetic-input-tokens-mean", "64", "--search", "max-request-rate", "--slo", "ttft:p99<100", "--slo",
            "error_rate<0.01", "--search-range", "10:", "--parameter-sweep-cooldown-seconds", "1"]
    workload = ["--streaming", "--output-tokens-mean", "16", "--extra-inputs", "ignore_eos:true",
                "--synthetic-input-tokens-mean", "64"]
    builds = [("surge", surge)] + ([("baseline", baseline)] if baseline else [])
    res = {name: [] for name, _ in builds}
    refs = []
    with LlamaServer(server_cpu) as srv:
        for i in range(repeat):
            if reference_rate:
                ref = reference_run(surge, srv.port, client_cpu, workload, reference_rate, 60)
                refs.append(ref)
                if ref:
                    print("  reference before search %d: 60 s at %g req/s, %d requests, TTFT p99 %.1f ms, %d past 100 ms "
                          "(%.2f%%) in %d episode%s" % (i + 1, reference_rate, ref[0], ref[3], ref[1],
                                                        100.0 * ref[1] / ref[0], ref[2], "" if ref[2] == 1 else "s"),
                          flush=True)
            for name, binary in builds:
                cmd = pin_prefix(client_cpu) + [binary, "profile", "-m", "tiny-llama", "-u",
                                                "127.0.0.1:%d" % srv.port, "--workers", "1", "--no-progress",
                                                "--artifact-dir", ARTIFACTS] + args
                res[name].append(one_search(name, i, cmd))
    print("search against llama-server (tiny model, -np 16 -t 1): Poisson, 10 s probes, p99 TTFT < 100 ms, "
          "error_rate < 0.01")
    for name, _ in builds:
        lows = [r[0] for r in res[name] if r[0] is not None]
        spread = (max(lows) - min(lows)) / min(lows) if lows else float("nan")
        print("  %-8s answers %s; spread of the low ends %.1f%% (target <= 10%%); times %s s" % (
            name, ["%s-%s" % (r[0], r[1]) for r in res[name]], 100 * spread, [round(r[3]) for r in res[name]]))
        ends = [(r[0], r[1]) for r in res[name] if r[0] is not None and r[1] is not None]
        if ends:
            # each interval is a 95% statement about the server during its own search: disjoint intervals say the
            # server moved between searches (docs/capacity.md, "What the level covers")
            common = max(lo for lo, _ in ends) <= min(hi for _, hi in ends)
            print("  %-8s the intervals %s" % (name, "share a value" if common else
                                                "are disjoint: the server's capacity moved between searches"))
        points = [r[5] for r in res[name] if r[5] is not None]
        if points:
            print("  %-8s point estimates %s; spread %.1f%%" % (name, ["%.1f" % x for x in points],
                                                               100 * (max(points) - min(points)) / min(points)))
    if any(refs):
        # the same fixed-rate run before each search: shares past the bound far apart (in episodes, not requests:
        # slow requests come in stretches) say the server itself changed between the searches
        print("  reference runs at %g req/s: past 100 ms %s; TTFT p99 %s ms" % (
            reference_rate, ["%d of %d in %d episodes" % (r[1], r[0], r[2]) if r else "failed" for r in refs],
            ["%.1f" % r[3] if r else "-" for r in refs]))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["cpu", "h2", "tls", "stream", "grpc", "memory", "points", "scrape", "report",
                                     "backends", "ranks", "embeddings", "search", "trickle", "all"])
    ap.add_argument("--baseline", help="search: another surge build to run the same searches beside")
    ap.add_argument("--no-hog", action="store_true", help="search: no busy loop on the client's core")
    ap.add_argument("--target", choices=["mock", "llama"], default="mock",
                    help="search: the bundled mock (known capacity) or llama-server (tests/data/fetch-llama-server)")
    ap.add_argument("--arrivals", choices=["constant", "poisson"], default="constant",
                    help="search: the probes' arrivals (poisson: the capacity is the M/D/4 queue's, simulated)")
    ap.add_argument("--reference-rate", type=float, default=40,
                    help="search --target llama: a 60 s run at this rate before each search, to show whether the "
                         "server moved between searches (0: none)")
    ap.add_argument("--surge", default=os.path.join(ROOT, "build", "surge"))
    ap.add_argument("--requests", type=int, default=ap_default_requests)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    if not shutil.which("h2load"):
        sys.exit("bench: h2load not found (apt-get install nghttp2-client)")
    global ARTIFACTS
    ARTIFACTS = tempfile.mkdtemp(prefix="surge-bench-artifacts-")
    try:
        run(args)
    finally:
        shutil.rmtree(ARTIFACTS, ignore_errors=True)


def run(args):
    cs = cpus()
    client_cpu, mock_cpu = (cs[0], cs[1]) if len(cs) >= 2 else (None, None)
    if args.what in ("cpu", "all"):
        bench_cpu(args.surge, args.requests, args.repeat, client_cpu, mock_cpu)
    if args.what in ("h2", "all"):
        bench_h2(args.surge, args.requests, args.repeat, client_cpu, mock_cpu)
    if args.what in ("tls", "all"):
        bench_tls(args.surge, args.requests, args.repeat, client_cpu, mock_cpu)
    if args.what in ("stream", "all"):
        bench_stream(args.surge, max(args.requests // 100, 200), 1000, args.repeat, client_cpu, mock_cpu)
    if args.what in ("trickle", "all"):
        bench_trickle(args.surge, min(args.repeat, 3), client_cpu, mock_cpu)
    if args.what in ("grpc", "all"):
        bench_grpc(args.surge, max(args.requests // 100, 200), 1000, args.repeat, client_cpu, mock_cpu)
    if args.what in ("points", "all"):
        bench_points(args.surge, args.requests, args.repeat, client_cpu, mock_cpu)
    if args.what in ("memory", "all"):
        bench_memory(args.surge, min(args.repeat, 3), client_cpu, mock_cpu)
    if args.what in ("scrape", "all"):
        bench_scrape(args.surge, args.requests, args.repeat, client_cpu, mock_cpu)
    if args.what in ("backends", "all"):
        bench_backends(args.surge, args.requests, args.repeat, client_cpu, mock_cpu)
    if args.what in ("ranks", "all"):
        bench_ranks(args.surge, args.requests if args.requests != ap_default_requests else 3000,
                    min(args.repeat, 3), client_cpu, mock_cpu)
    if args.what in ("embeddings", "all"):
        bench_embeddings(args.surge, args.requests, args.repeat, client_cpu, mock_cpu)
    if args.what in ("search", "all"):
        if args.target == "llama":
            bench_search_llama(args.surge, args.repeat, client_cpu, mock_cpu, args.baseline, args.reference_rate)
        else:
            bench_search(args.surge, args.repeat, client_cpu, mock_cpu, args.baseline, not args.no_hog,
                         arrivals=args.arrivals)
    if args.what in ("report", "all"):
        n = args.requests if args.requests != ap_default_requests else 1000000
        bench_report(args.surge, n, min(args.repeat, 3), client_cpu, mock_cpu)


if __name__ == "__main__":
    main()
