# ctest: one-backend (it runs bench/demo as a user would, on the default backend)
"""bench/demo, the README's quick start, as a user runs it: it builds surge quietly (the build's output goes to a
log), profiles the mock, prints the table, and the user's own flags replace the demo's defaults for the same thing
instead of clashing with them (`bench/demo --concurrency 8` used to fail against the demo's --request-rate 200).
The demo's capacity search, which is timed, is test_demo_search's (run alone)."""

import json
import os
import re

import harness

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEMO = os.path.join(ROOT, "bench", "demo")


def demo(h, *args, env=None):
    return h.run(["bash", DEMO] + list(args), timeout=240, env=env)


def summary(path):
    with open(os.path.join(path, "profile_export_surge.json")) as f:
        return json.load(f)


def preconditions(h):
    if not os.path.exists(os.path.join(ROOT, "build", "surge")):
        h.skip("bench/demo builds into %s/build, which this checkout has not built" % ROOT)
    # The demo runs build/surge whatever build this test belongs to: under the sanitizer builds it would run the
    # release binary again, for 40 s each (CI's time target); the release pass covers it.
    if os.path.realpath(h.surge) != os.path.realpath(os.path.join(ROOT, "build", "surge")):
        h.skip("bench/demo runs build/surge, not this build's %s: the release build's pass covers it" % h.surge)


def main(h):
    preconditions(h)

    # A closed loop and a count of the user's: the demo's --request-rate, --request-count and artifact
    # directory give way; its other defaults (streaming, lengths, warmup) stay.
    out = h.path("closed")
    rc = demo(h, "--concurrency", "3", "--request-count", "12", "--artifact-dir", out)
    h.check(rc.returncode == 0, "demo --concurrency 3 exits 0", rc.stderr[-2000:])
    h.check("concurrency 3, 12 requests" in rc.stderr, "the run is the user's closed loop of 12 requests",
            rc.stderr[-2000:])
    h.check("request_rate" not in rc.stderr and "cannot be combined" not in rc.stderr,
            "no clash with the demo's --request-rate", rc.stderr[-2000:])
    h.check("Time to first token" in rc.stdout and "Request count" in rc.stdout, "the table is printed",
            rc.stdout[-2000:])
    h.check(os.path.exists(os.path.join(out, "report.html")) and "report in" in rc.stderr,
            "the demo writes the run's HTML report and says where", rc.stderr[-1000:])
    h.check("Building C object" not in rc.stdout + rc.stderr and "build.log" in rc.stderr,
            "the build's output goes to its log", rc.stderr[:2000])
    if rc.returncode == 0:
        s = summary(out)
        cfg = s["input_config"]
        h.check(cfg.get("concurrency") == 3 and cfg.get("request_rate") is None, "summary: concurrency 3, no rate",
                json.dumps(cfg)[:800])
        h.check(s["request_count"]["avg"] == 12, "summary: 12 measured requests", s["request_count"])
        h.check(cfg.get("streaming") is True and cfg.get("warmup_request_count") == 100,
                "the demo's other defaults stay (streaming, 100 warmup requests)", json.dumps(cfg)[:800])

    # --flag=value spelling, and an open-loop rate of the user's replacing the demo's.
    out = h.path("rate")
    rc = demo(h, "--request-rate=50", "--request-count=20", "--warmup-request-count", "0", "--artifact-dir=" + out)
    h.check(rc.returncode == 0, "demo --request-rate=50 exits 0", rc.stderr[-2000:])
    h.check("request rate 50/s" in rc.stderr and "20 requests" in rc.stderr, "the user's rate and count",
            rc.stderr[-2000:])
    if rc.returncode == 0:
        h.check(summary(out)["request_count"]["avg"] == 20, "summary: 20 measured requests")


if __name__ == "__main__":
    harness.main(main)
