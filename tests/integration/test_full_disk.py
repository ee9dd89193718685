"""A full disk, as a reliability engineer meets it: the artifact directory on a small tmpfs in a private mount
namespace (root and unshare needed; skipped otherwise).
- Too small even for inputs.json, the first file: the run stops before anything is sent, saying the directory cannot
  take the run's files (exit 3), and the server saw nothing.
- Room for inputs.json but not for the per-request files: the console table is whole, every failed file is named with
  its real error ("No space left on device", never "protocol error" or "Input/output error"), both JSONL files are
  named (AIPerf's profile_export.jsonl too), the summary lists them under files_not_written, the closing line says the
  artifacts are INCOMPLETE rather than claiming them, and the exit status is 3."""
import json
import os
import re
import shutil
import subprocess

import harness


def run_on_tmpfs(h, m, size, n, extra=(), tag=""):
    mnt = h.path("full-%s%s" % (size, tag))
    out = h.path("out-%s%s" % (size, tag))
    os.makedirs(mnt)
    os.makedirs(out)
    art = os.path.join(mnt, "a")
    # inside the namespace: mount, run, then copy what was written out before the namespace (and its tmpfs) goes
    script = ('mount -t tmpfs -o size=%s tmpfs "$1" || exit 99; shift; "$@" >"$OUT/stdout" 2>"$OUT/stderr"; '
              'echo $? >"$OUT/rc"; cp -r "$ART" "$OUT/art" 2>/dev/null; exit 0' % size)
    env = dict(os.environ, OUT=out, ART=art)
    p = subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", mnt, h.surge, "profile", "-m", "mock-model", "-u",
                        m.url, "--artifact-dir", art, "--no-progress", "--request-count", str(n),
                        "--synthetic-input-tokens-mean", "20", "--output-tokens-mean", "4"] + [str(a) for a in extra],
                       env=env, capture_output=True, text=True, timeout=120)
    if p.returncode == 99 or not os.path.exists(os.path.join(out, "rc")):
        h.skip("cannot mount a tmpfs in a private mount namespace here: %s" % p.stderr[-300:])

    def read(name):
        with open(os.path.join(out, name)) as f:
            return f.read()
    return int(read("rc")), read("stdout"), read("stderr"), os.path.join(out, "art")


def main(h):
    if os.geteuid() != 0 or not shutil.which("unshare"):
        h.skip("a private tmpfs needs root and unshare")
    with h.mock("--ttft-ms", 1, record=True) as m:
        # 1. no room for inputs.json: nothing is sent
        rc, out, err, art = run_on_tmpfs(h, m, "8k", 400)
        h.check(rc == 3 and "No space left on device" in err and "nothing was sent" in err,
                "full before the run: exit 3, the real error, nothing sent", (rc, err[-800:]))
        h.check(len(m.records()) == 0, "full before the run: the server saw no request", len(m.records()))

        # 2. room for inputs.json (about 20 KB here), not for the per-request files (about 260 KB each)
        rc, out, err, art = run_on_tmpfs(h, m, "100k", 400)
        h.check(rc == 3, "full during the export: exit 3", (rc, err[-1500:]))
        h.check("Request latency" in out or "Request Latency" in out, "the console table is whole", out[-1500:])
        h.check("No space left on device" in err and "protocol error" not in err and "Input/output error" not in err,
                "the real error, by its name", err[-1500:])
        h.check("profile_export_surge.jsonl" in err and "profile_export.jsonl" in err,
                "both per-request files are named", err[-1500:])
        h.check("INCOMPLETE" in err and not re.search(r"surge: artifacts in \S+/\n", err),
                "no claim of complete artifacts", err[-800:])
        summary = os.path.join(art, "profile_export_surge.json")
        if h.check(os.path.exists(summary), "the summary was written (it is small)", os.listdir(art) if
                   os.path.isdir(art) else art):
            with open(summary) as f:
                s = json.load(f)
            nw = s.get("files_not_written")
            h.check(isinstance(nw, list) and "profile_export_surge.jsonl" in nw and "profile_export.jsonl" in nw,
                    "the summary lists the files not written", nw)
            h.check(s["request_count"]["avg"] == 400, "the summary counts every request", s["request_count"])
        for name in ("profile_export_surge.jsonl", "profile_export.jsonl"):
            h.check(not os.path.exists(os.path.join(art, name)), "%s: no partial file left" % name)

        # 3. 400 distinct prompts: inputs.json takes most of the room, and the workers' record logs (from which the
        # JSONL is written) run out of it during the run. The JSONL's failure is the disk's, not a corrupt log's.
        rc, out, err, art = run_on_tmpfs(h, m, "100k", 400, extra=("--num-prompts", 400), tag="-distinct")
        h.check(rc == 3, "record log full: exit 3", (rc, err[-1500:]))
        h.check("No space left on device" in err and "protocol error" not in err and "Input/output error" not in err,
                "record log full: the real error, by its name", err[-1500:])
        h.check("INCOMPLETE" in err, "record log full: the artifacts are said INCOMPLETE", err[-800:])


if __name__ == "__main__":
    harness.main(main)
