"""Honest client CPU: the summary and the console give the load phase's CPU and the whole process's, each with its
user/system split, and for a streamed run the output tokens per client CPU-second over each.

Checks: the fields exist and add up (user + system = total), the whole process used at least what its load phase
did (it contains it), tokens per CPU-second are the successful requests' output tokens over those CPU figures, the
console's lines say the same, the existing `client_cpu_time` is still there (bench/bench.py reads it), and a
non-streamed run has the CPU fields but no tokens per CPU-second.
"""
import re

import harness
from profiling import profile


def cpu_fields(h, s, what):
    ok = True
    for key in ("client_cpu_time", "client_cpu_time_user", "client_cpu_time_system", "process_cpu_time",
                "process_cpu_time_user", "process_cpu_time_system"):
        ok &= h.check(key in s and s[key].get("unit") == "sec", what + ": %s in the summary, in seconds" % key,
                      s.get(key))
    if not ok:
        return False
    load, proc = s["client_cpu_time"]["avg"], s["process_cpu_time"]["avg"]
    for name, total in (("client_cpu_time", load), ("process_cpu_time", proc)):
        parts = s[name + "_user"]["avg"] + s[name + "_system"]["avg"]
        h.check(abs(parts - total) <= 1e-6 * max(1.0, total), what + ": %s user + system = total (%.6f vs %.6f)"
                % (name, parts, total))
    h.check(load > 0, what + ": the load phase used CPU (%.6f s)" % load)
    # the whole process contains the load phase: never less, in total and in each part
    h.check(proc >= load, what + ": whole process %.6f s >= load phase %.6f s" % (proc, load))
    for part in ("_user", "_system"):
        h.check(s["process_cpu_time" + part]["avg"] >= s["client_cpu_time" + part]["avg"],
                what + ": whole process >= load phase, %s" % part[1:],
                (s["process_cpu_time" + part], s["client_cpu_time" + part]))
    return True


def console_cpu(h, stdout, what):
    """The two console lines' totals (load, whole), or None."""
    m1 = re.search(r"^Client CPU, load phase: ([0-9.]+) s \(user ([0-9.]+) s, system ([0-9.]+) s;", stdout, re.M)
    m2 = re.search(r"^Client CPU, whole process: ([0-9.]+) s \(user ([0-9.]+) s, system ([0-9.]+) s;", stdout, re.M)
    h.check(m1 is not None, what + ": console line 'Client CPU, load phase' with its split", stdout[-1500:])
    h.check(m2 is not None, what + ": console line 'Client CPU, whole process' with its split", stdout[-1500:])
    return (float(m1.group(1)), float(m2.group(1))) if m1 and m2 else None


def main(h):
    osl, n = 40, 120
    with h.mock("--ttft-ms", 5, "--itl-ms", 1) as m:
        # closed loop, 32 connections opened before the start instant (set-up outside the load phase)
        r = profile(h, m.url, "--streaming", "--concurrency", 32, "--request-count", n, "--output-tokens-mean", osl,
                    "--output-tokens-mean-deterministic", "--workers", 1, timeout=60)
        s = r.summary
        if not h.check(s is not None, "streamed: summary written", r.stderr[-2000:]):
            return
        if cpu_fields(h, s, "streamed"):
            load, proc = s["client_cpu_time"]["avg"], s["process_cpu_time"]["avg"]
            tokens = sum(x["output_sequence_length"] for x in r.records if x.get("status") == "ok")
            h.check(tokens == n * osl, "streamed: %d output tokens in the records" % (n * osl), tokens)
            for key, cpu in (("output_tokens_per_process_cpu_sec", proc), ("output_tokens_per_client_cpu_sec", load)):
                if h.check(key in s and s[key].get("unit") == "tokens/sec", "streamed: %s in the summary" % key,
                           s.get(key)):
                    want = tokens / cpu
                    h.check(abs(s[key]["avg"] - want) <= 1e-6 * want, "streamed: %s %.1f = %d tokens / %.6f s (%.1f)"
                            % (key, s[key]["avg"], tokens, cpu, want))
            h.check(s["output_tokens_per_process_cpu_sec"]["avg"] <= s["output_tokens_per_client_cpu_sec"]["avg"],
                    "streamed: fewer tokens per CPU-second over the whole process than over the load phase")
            c = console_cpu(h, r.stdout, "streamed")
            if c:
                h.check(abs(c[0] - load) <= 0.006 and abs(c[1] - proc) <= 0.006,
                        "streamed: the console's totals are the summary's (%s vs %.3f, %.3f)" % (c, load, proc))
            m3 = re.search(r"^Output tokens per client CPU-second: ([0-9,]+) \(whole process\), ([0-9,]+) \(load "
                           r"phase\)", r.stdout, re.M)
            if h.check(m3 is not None, "streamed: console line 'Output tokens per client CPU-second'",
                       r.stdout[-1500:]):
                got = float(m3.group(1).replace(",", ""))
                want = s["output_tokens_per_process_cpu_sec"]["avg"]
                h.check(abs(got - want) <= 1 + 1e-6 * want, "streamed: console tokens per CPU-second %.0f vs %.1f"
                        % (got, want))

        # non-streamed: the CPU fields, no tokens per CPU-second
        r = profile(h, m.url, "--concurrency", 4, "--request-count", 40, "--output-tokens-mean", 8, "--workers", 1,
                    timeout=60)
        s = r.summary
        if h.check(s is not None, "non-streamed: summary written", r.stderr[-2000:]):
            cpu_fields(h, s, "non-streamed")
            h.check("output_tokens_per_process_cpu_sec" not in s and "output_tokens_per_client_cpu_sec" not in s,
                    "non-streamed: no tokens per CPU-second", [k for k in s if "per_" in k and "cpu" in k])
            console_cpu(h, r.stdout, "non-streamed")
            h.check("Output tokens per client CPU-second" not in r.stdout, "non-streamed: no tokens per CPU line")


harness.main(main)
