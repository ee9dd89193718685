"""Helpers for integration tests that run `surge profile` against a mock (on top of harness.py)."""

import json
import os
import statistics

SLOW = bool(os.environ.get("SURGE_SLOW"))  # sanitizer builds: timing tolerances widen


def tol(ms):
    """A timing tolerance in ms, widened under sanitizers."""
    return ms * 4 if SLOW else ms


class Result:
    def __init__(self, proc, artifact_dir):
        self.proc = proc
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.dir = artifact_dir
        self.summary = None
        self.records = []
        path = os.path.join(artifact_dir, "profile_export_surge.json")
        if os.path.exists(path):
            with open(path) as f:
                self.summary = json.load(f)
        path = os.path.join(artifact_dir, "profile_export.jsonl")
        if os.path.exists(path):
            with open(path) as f:
                self.records = [json.loads(line) for line in f if line.strip()]

    def metric(self, tag, stat="avg"):
        return self.summary[tag][stat]

    def has(self, tag):
        return self.summary is not None and tag in self.summary

    def errors_by_class(self):
        out = {}
        for g in (self.summary or {}).get("error_summary", []):
            out[g["class"]] = out.get(g["class"], 0) + g["count"]
        return out


_counter = [0]


def profile(h, url, *args, timeout=120, model="mock-model", check_rc=0):
    """Run surge profile against url with a private artifact dir; returns a Result."""
    _counter[0] += 1
    art = h.path("art%d" % _counter[0])
    cmd = [h.surge, "profile", "-m", model, "-u", url, "--artifact-dir", art, "--no-progress"] + [str(a) for a in args]
    proc = h.run(cmd, timeout=timeout)
    r = Result(proc, art)
    if check_rc is not None:
        h.check(r.rc == check_rc, "surge profile %s exits %d" % (" ".join(map(str, args)), check_rc),
                (r.rc, r.stderr[-3000:]))
    h.check("runtime error:" not in r.stderr and "Sanitizer" not in r.stderr, "no sanitizer report from profile",
            r.stderr[-3000:])
    return r


def median(xs):
    return statistics.median(xs) if xs else float("nan")
