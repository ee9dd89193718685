"""No run replaces or mixes into another's artifact directory.

  1. A second identical run (the default artifacts/<run name>, and a --profile-export-file name) goes to DIR-2,
     then DIR-3, with one line on stderr saying so; the first run's files are untouched, byte for byte.
  2. --overwrite replaces the earlier run in DIR: its files of surge's go first (those of another
     --profile-export-file name too, and a sweep's point directories), so nothing of it is left beside the new
     run's; a file of the user's stays. No DIR-2 is made.
  3. A single run into a sweep's directory goes to DIR-2 and leaves the sweep whole; a sweep, and a capacity
     search, into a single run's directory likewise.
  4. surge merge -o OUT into a directory holding a run goes to OUT-2 (--overwrite replaces it); a run over two
     processes (on one host, sharing the directory) into a directory holding one: both ranks take DIR-2 and rank
     0 merges there, the earlier run untouched; with --overwrite both ranks write into DIR.
  5. surge report on a directory holding two kinds of run (a run's summary beside a sweep's, a search's beside a
     sweep's) exits 2 and names both, leaving no page.
"""
import hashlib
import json
import os
import shutil
import subprocess

import harness
from servers import free_port

LOAD = ["--request-count", 4, "--concurrency", 2, "--streaming", "--output-tokens-mean", 4,
        "--synthetic-input-tokens-mean", 8]


def digest(d):
    """{relative path: sha256} of every file under d."""
    out = {}
    for root, _, files in os.walk(d):
        for f in files:
            p = os.path.join(root, f)
            with open(p, "rb") as x:
                out[os.path.relpath(p, d)] = hashlib.sha256(x.read()).hexdigest()
    return out


def summary(d, stem="profile_export"):
    p = os.path.join(d, stem + "_surge.json")
    if not os.path.exists(p):
        return None
    with open(p) as f:
        return json.load(f)


def main(h):
    def run(url, *args, cwd=None, art=None):
        cmd = [h.surge, "profile", "-m", "mock-model", "-u", url, "--no-progress"]
        if art:
            cmd += ["--artifact-dir", art]
        return h.run(cmd + [str(a) for a in LOAD] + [str(a) for a in args], timeout=120, cwd=cwd)

    with h.mock("--ttft-ms", 2, "--itl-ms", 1) as m:
        # 1. the default directory, three times
        cwd = h.path("cwd")
        os.makedirs(cwd)
        base = os.path.join(cwd, "artifacts", "mock-model-openai-chat-concurrency2")
        p1 = run(m.url, cwd=cwd)
        h.check(p1.returncode == 0 and summary(base) is not None, "first run into the default directory",
                (p1.returncode, p1.stderr[-1500:]))
        first = digest(base)
        p2 = run(m.url, cwd=cwd)
        want = "surge: artifacts: artifacts/mock-model-openai-chat-concurrency2 holds an earlier run " \
               "(profile_export_surge.json); writing to artifacts/mock-model-openai-chat-concurrency2-2 " \
               "(--overwrite replaces it)"
        h.check(p2.returncode == 0 and want in p2.stderr, "the second run says where it writes instead",
                p2.stderr[-1500:])
        h.check(summary(base + "-2") is not None, "the second run's files are in DIR-2")
        h.check(digest(base) == first, "the first run's files are untouched, byte for byte")
        s2 = summary(base + "-2") or {}
        h.check(s2.get("input_config", {}).get("artifact_dir") == "artifacts/mock-model-openai-chat-concurrency2-2",
                "the second run's summary names the directory it is in", s2.get("input_config", {}).get("artifact_dir"))
        p3 = run(m.url, cwd=cwd)
        h.check(p3.returncode == 0 and summary(base + "-3") is not None and "writing to " in p3.stderr and
                base.split("/")[-1] + "-3" in p3.stderr, "a third run goes to DIR-3", p3.stderr[-1500:])
        h.check(digest(base) == first, "and the first is still untouched")

        # an empty directory, or one with only files of the user's, is no run: used as given
        own = h.path("own")
        os.makedirs(own)
        with open(os.path.join(own, "notes.txt"), "w") as f:
            f.write("mine\n")
        p = run(m.url, art=own)
        h.check(p.returncode == 0 and summary(own) is not None and "artifacts:" not in p.stderr,
                "a directory holding no run is used as given", p.stderr[-1500:])

        # --profile-export-file: a second run of the same name goes elsewhere too
        named = h.path("named")
        p = run(m.url, "--profile-export-file", "mine.json", art=named)
        h.check(p.returncode == 0 and summary(named, "mine") is not None, "a run with another export name",
                p.stderr[-1500:])
        before = digest(named)
        p = run(m.url, "--profile-export-file", "mine.json", art=named)
        h.check(p.returncode == 0 and "(mine_surge.json); writing to %s-2" % named in p.stderr and
                summary(named + "-2", "mine") is not None and digest(named) == before,
                "a second run of that name goes to DIR-2, the first untouched", p.stderr[-1500:])

        # 2. --overwrite: the earlier run's files go, the user's stay
        with open(os.path.join(named, "notes.txt"), "w") as f:
            f.write("mine\n")
        p = run(m.url, "--overwrite", "--request-count", 6, art=named)
        left = sorted(os.listdir(named))
        h.check(p.returncode == 0 and "held an earlier run; its files were removed (--overwrite)" in p.stderr,
                "--overwrite says it replaced the earlier run", p.stderr[-1500:])
        h.check(not any(x.startswith("mine") for x in left), "no file of the earlier run (another export name) is "
                "left beside the new one", left)
        h.check("notes.txt" in left and (summary(named) or {}).get("request_count", {}).get("avg") == 6,
                "the user's file stays; the new run is there", left)
        h.check(not os.path.exists(named + "-3"), "--overwrite makes no fresh directory")

        # 3. a sweep's directory: a single run goes elsewhere, and the sweep stays whole
        sweep = h.path("sweep")
        p = h.run([h.surge, "profile", "-m", "mock-model", "-u", m.url, "--no-progress", "--artifact-dir", sweep,
                   "--concurrency-range", "1:2", "--request-count", 4], timeout=120)
        h.check(p.returncode == 0 and os.path.exists(os.path.join(sweep, "sweep_summary.json")), "a sweep",
                p.stderr[-1500:])
        whole = digest(sweep)
        p = run(m.url, art=sweep)
        h.check(p.returncode == 0 and "(sweep_summary.json); writing to %s-2" % sweep in p.stderr,
                "a single run into a sweep's directory goes to DIR-2", p.stderr[-1500:])
        h.check(digest(sweep) == whole and summary(sweep) is None, "the sweep's directory holds the sweep alone")
        # and a sweep into a single run's directory (the one just made)
        single = digest(sweep + "-2")
        p = h.run([h.surge, "profile", "-m", "mock-model", "-u", m.url, "--no-progress", "--artifact-dir",
                   sweep + "-2", "--concurrency-range", "1:2", "--request-count", 4], timeout=120)
        h.check(p.returncode == 0 and os.path.exists(os.path.join(sweep + "-2-2", "sweep_summary.json")) and
                digest(sweep + "-2") == single, "a sweep into a single run's directory (DIR) goes to DIR-2",
                p.stderr[-1500:])
        # --overwrite on a sweep's directory: its points go too; a single run is left alone in it
        p = run(m.url, "--overwrite", art=sweep + "-2-2")
        left = sorted(os.listdir(sweep + "-2-2"))
        h.check(p.returncode == 0 and "sweep_summary.json" not in left and not any(
            x.startswith("concurrency") for x in left) and summary(sweep + "-2-2") is not None,
            "--overwrite on a sweep's directory removes the sweep and its points", left)

        # a capacity search into a single run's directory
        single_own = digest(own)
        p = h.run([h.surge, "profile", "-m", "mock-model", "-u", m.url, "--no-progress", "--artifact-dir", own,
                   "--search", "max-concurrency", "--search-range", "1:2", "--slo", "error_rate<0.5",
                   "--request-count", 4, "--parameter-sweep-cooldown-seconds", 0], timeout=120)
        h.check(p.returncode == 0 and "writing to %s-2" % own in p.stderr and
                os.path.exists(os.path.join(own + "-2", "search.json")) and digest(own) == single_own,
                "a search into a single run's directory goes to DIR-2, the run untouched", p.stderr[-1500:])

        # 4. surge merge -o OUT
        out = h.path("merged")
        merge = [h.surge, "merge", base, base + "-2", "-o", out, "-q"]
        p = h.run(merge)
        h.check(p.returncode == 0 and summary(out) is not None, "a merge", (p.returncode, p.stderr[-1500:]))
        merged = digest(out)
        p = h.run(merge)
        h.check(p.returncode == 0 and "surge merge: artifacts: %s holds an earlier run" % out in p.stderr and
                summary(out + "-2") is not None and digest(out) == merged,
                "a second merge into OUT goes to OUT-2", (p.returncode, p.stderr[-1500:]))
        p = h.run(merge + ["--overwrite"])
        h.check(p.returncode == 0 and not os.path.exists(out + "-3") and summary(out) is not None,
                "merge --overwrite replaces OUT", (p.returncode, p.stderr[-1500:]))

        # a run over two processes, twice into one directory, then with --overwrite
        dist = h.path("dist")
        for round_ in range(3):
            port = free_port()
            extra = ["--overwrite"] if round_ == 2 else []
            procs = [subprocess.Popen([str(c) for c in [h.surge, "profile", "-m", "mock-model", "-u", m.url,
                                                          "--artifact-dir", dist, "--no-progress", "--world-size", 2,
                                                          "--rank", r, "--coordinator", "127.0.0.1:%d" % port] +
                                       LOAD + extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                     for r in range(2)]
            res = [p.communicate(timeout=90) for p in procs]
            h.check(all(p.returncode == 0 for p in procs), "run over 2 ranks, round %d: both exit 0" % round_,
                    [e[-800:] for _, e in res])
            if round_ == 0:
                earlier = digest(dist)
            elif round_ == 1:
                h.check(all("writing to %s-2" % dist in e for _, e in res) and
                        (summary(dist + "-2") or {}).get("request_count", {}).get("avg") == 4 and
                        os.path.isdir(os.path.join(dist + "-2", "rank1")) and digest(dist) == earlier,
                        "a second run over 2 ranks: both ranks write to DIR-2, merged there; DIR untouched",
                        [e[-800:] for _, e in res])
            else:
                # the ranks claim the directory before they meet: the first removes the run's files and says so, a
                # later one finds no run left there (inputs.json alone is none) and has nothing to say
                h.check(any("its files were removed (--overwrite)" in e for _, e in res) and
                        not os.path.exists(dist + "-3") and digest(dist) != earlier and
                        (summary(dist) or {}).get("request_count", {}).get("avg") == 4,
                        "--overwrite over 2 ranks: the run replaces DIR's", [e[-800:] for _, e in res])

    # 5. surge report on a directory holding two kinds of run
    mixed = h.path("mixed")
    shutil.copytree(sweep, mixed)
    shutil.copy(os.path.join(base, "profile_export_surge.json"), mixed)
    shutil.copy(os.path.join(base, "profile_export_surge.jsonl"), mixed)
    p = h.run([h.surge, "report", mixed])
    h.check(p.returncode == 2 and "a single run (profile_export_surge.json)" in p.stderr and
            "a sweep (sweep_summary.json)" in p.stderr, "report on a run beside a sweep exits 2 naming both",
            (p.returncode, p.stderr))
    h.check(not os.path.exists(os.path.join(mixed, "report.html")), "and writes no page")
    os.remove(os.path.join(mixed, "profile_export_surge.json"))
    with open(os.path.join(mixed, "sweep_summary.json")) as f:
        sw = json.load(f)
    with open(os.path.join(mixed, "search.json"), "w") as f:
        json.dump({"search": sw["sweep"], "probes": sw["points"]}, f)
    p = h.run([h.surge, "report", mixed])
    h.check(p.returncode == 2 and "a sweep (sweep_summary.json) and a capacity search (search.json)" in p.stderr,
            "report on a search beside a sweep exits 2 naming both", (p.returncode, p.stderr))
    # the sweep alone reads
    os.remove(os.path.join(mixed, "search.json"))
    p = h.run([h.surge, "report", mixed, "-q"])
    h.check(p.returncode == 0, "the sweep alone gets its report", (p.returncode, p.stderr))


if __name__ == "__main__":
    harness.main(main)
