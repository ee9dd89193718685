"""surge merge DIR... -o OUT: several runs' artifact directories into one run's files.

  1. A run merged alone gives back its own files: the summary's every statistic, the per-request JSONL, AIPerf's
     JSONL and both CSVs byte for byte (the JSONL holds every value the metrics are made of, exactly).
  2. Two runs of one configuration (two workers' worth each, run side by side against one mock): every request
     once, in intended-time order; counts, errors and tokens summed; throughput over the global window; each
     percentile within the histogram's 1/2048 of the nearest-rank value recomputed from the merged JSONL;
     goodput and --slo judged again on the merged metrics; the parts listed in "merged_from".
  3. Bad input: no -o, a directory that is not a run, parts of different configurations, a record file cut off,
     a value that does not fit its field (a negative id or count, a status past 32 bits): one line naming the
     problem, exit 2, and no merged summary.
"""
import json
import os
import shutil
import threading

import harness
from profiling import profile, nearest_rank



def merge(h, dirs, out, *extra):
    return h.run([h.surge, "merge"] + list(dirs) + ["-o", out] + list(extra))


def main(h):
    load = ["--streaming", "--request-rate", 150, "--request-count", 300, "--workers", 2, "--num-prompts", 7,
            "--output-tokens-mean", 8, "--goodput", "time_to_first_token:22", "--slo", "time_to_first_token:p90<500"]
    with h.mock("--ttft-ms", 20, "--itl-ms", 3, "--error-rate", 0.05) as m:
        # 1. one run, merged alone
        a = profile(h, m.url, *load, "--max-error-rate", 0.5)
        out1 = h.path("alone")
        p = merge(h, [a.dir], out1, "-q")
        h.check(p.returncode == 0, "merging one run exits 0", (p.returncode, p.stderr))
        with open(os.path.join(out1, "profile_export_surge.json")) as f:
            s1 = json.load(f)
        skip = {"input_config", "clock", "merged_from"}
        diffs = [k for k in a.summary if k not in skip and a.summary[k] != s1.get(k)]
        h.check(not diffs, "the merged summary equals the run's, every statistic", diffs[:5])
        for name in ("profile_export_surge.jsonl", "profile_export.jsonl", "profile_export_surge.csv",
                     "profile_export_aiperf.csv"):
            with open(os.path.join(a.dir, name), "rb") as x, open(os.path.join(out1, name), "rb") as y:
                h.check(x.read() == y.read(), "%s byte for byte" % name)

        # 2. two parts of one configuration, side by side
        parts = [None, None]

        def run(i):
            parts[i] = profile(h, m.url, *load, "--max-error-rate", 0.5)

        ts = [threading.Thread(target=run, args=(i,)) for i in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        out2 = h.path("merged")
        p = merge(h, [parts[0].dir, parts[1].dir], out2)
        h.check(p.returncode == 0, "merging two parts exits 0", (p.returncode, p.stderr))
        h.check("surge | LLM Metrics (merged)" in p.stdout, "the merged table on stdout", p.stdout[:300])
        with open(os.path.join(out2, "profile_export_surge.json")) as f:
            s = json.load(f)
        with open(os.path.join(out2, "profile_export_surge.jsonl")) as f:
            recs = [json.loads(x) for x in f]
        n = sum(len(x.records) for x in parts)
        h.check(len(recs) == n == 600, "every request once", (len(recs), n))
        h.check(s["request_count"]["avg"] + s["error_request_count"]["avg"] == n, "counts summed",
                (s["request_count"], s["error_request_count"]))
        h.check(s["error_request_count"]["avg"] == sum(x.summary["error_request_count"]["avg"] for x in parts),
                "errors summed")
        keys = [(r["intended_ns"], r["id"]) for r in recs]
        h.check(keys == sorted(keys), "in intended-time order")
        ok = [r for r in recs if r["status"] == "ok"]
        for tag, field in (("request_latency", "request_latency_ms"), ("time_to_first_token", "time_to_first_token_ms")):
            vals = [r[field] for r in ok]
            for p_ in (50, 90, 99):
                want = nearest_rank(vals, p_)
                got = s[tag]["p%d" % p_]
                h.check(abs(got - want) <= want / 2048 + 1e-3, "%s p%d %.4f vs %.4f from the merged JSONL"
                        % (tag, p_, got, want))
            h.near(s[tag]["avg"], sum(vals) / len(vals), 1e-6 * max(vals), tag + " mean exact")
        # the global window: first intended start to the last end, over both parts
        span_s = (max(r["end_ns"] for r in recs) - min(r["intended_ns"] for r in recs)) / 1e9
        h.near(s["benchmark_duration"]["avg"], span_s, 1e-6, "duration over the global window")
        h.near(s["request_throughput"]["avg"], len(ok) / span_s, 1e-6 * len(ok) / span_s, "throughput from it")
        good = sum(1 for r in ok if r["time_to_first_token_ms"] <= 22)
        h.near(s["goodput"]["avg"] * span_s, good, 0.01, "goodput recounted on the merged requests")
        h.check(s.get("slo_pass") is True, "the --slo judged on the merged metrics", s.get("slo"))
        h.check([x["dir"] for x in s.get("merged_from", [])] == [parts[0].dir, parts[1].dir], "merged_from lists the parts",
                s.get("merged_from"))

        # 3. bad input
        p = h.run([h.surge, "merge", a.dir])
        h.check(p.returncode == 2 and "-o OUT is required" in p.stderr, "no -o: exit 2", (p.returncode, p.stderr))
        bad = h.path("bad1")
        p = merge(h, [a.dir, h.tmpdir], bad)
        h.check(p.returncode == 2 and "is not a surge run" in p.stderr, "not a run: exit 2", (p.returncode, p.stderr))
        h.check(not os.path.exists(os.path.join(bad, "profile_export_surge.json")), "no merged summary")
        other = profile(h, m.url, *(load[:-4]), "--max-error-rate", 0.5)
        bad = h.path("bad2")
        p = merge(h, [a.dir, other.dir], bad)
        # the other run has neither --goodput nor --slo: the message names the first setting that differs
        h.check(p.returncode == 2 and "ran different configurations" in p.stderr and
                ("goodput" in p.stderr or "slo" in p.stderr),
                "different configurations: exit 2, naming what differs", (p.returncode, p.stderr))
        h.check(not os.path.exists(os.path.join(bad, "profile_export_surge.json")), "no merged summary")
        cut = h.path("cut")
        shutil.copytree(a.dir, cut)
        path = os.path.join(cut, "profile_export_surge.jsonl")
        with open(path, "rb") as f:
            data = f.read()
        with open(path, "wb") as f:
            f.write(data[:len(data) - 40])
        bad = h.path("bad3")
        p = merge(h, [cut], bad)
        h.check(p.returncode == 2 and "cut off" in p.stderr, "a cut-off record file: exit 2", (p.returncode, p.stderr))
        h.check(not os.path.exists(os.path.join(bad, "profile_export_surge.json")), "no merged summary")
        h.check(not [x for x in os.listdir(bad) if x.startswith(".surge-merge")], "no temporary file left",
                os.listdir(bad))
        # a value that does not fit its field (a negative id or count, a status past 32 bits, a token time past
        # int64 microseconds) is no record surge writes: refused by name, where a cast would wrap it into a huge
        # figure in the merged metrics. The token times' pair wrapped to an accepted 855 s gap before the bound
        for i, (field, value) in enumerate([("id", -1), ("input_sequence_length", -1),
                                            ("output_sequence_length", 2**32), ("http_status", 2**31),
                                            ("response_bytes", -5), ("worker", -2),
                                            ("token_times_ms", [9223372036000000.0, 1e20])]):
            odd = h.path("odd%d" % i)
            shutil.copytree(a.dir, odd)
            path = os.path.join(odd, "profile_export_surge.jsonl")
            with open(path) as f:
                lines = f.readlines()
            first = json.loads(lines[0])
            first[field] = value
            lines[0] = json.dumps(first) + "\n"
            with open(path, "w") as f:
                f.writelines(lines)
            bad = h.path("bad-odd%d" % i)
            p = merge(h, [odd], bad)
            h.check(p.returncode == 2 and "line 1 is not a surge request record" in p.stderr,
                    "%s %s: exit 2, naming the line" % (field, value), (p.returncode, p.stderr))
            h.check(not os.path.exists(os.path.join(bad, "profile_export_surge.json")), "no merged summary")

if __name__ == "__main__":
    harness.main(main)
