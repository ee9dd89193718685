# ctest: run-serial (the demo's capacity search judges TTFT against a 60 ms bound)
# ctest: one-backend (it runs bench/demo as a user would, on the default backend)
"""bench/demo's capacity search, the part of the README's quick start that a run bare shows after its table (forced
here with SURGE_DEMO_SEARCH=1): it finds the mock's known capacity and says how it searched. test_demo checks the rest
of the demo, beside other tests; this part is timed and runs alone."""

import os
import re

import harness
from test_demo import demo, preconditions


def main(h):
    preconditions(h)
    # The profile part is kept short. The mock's known capacity is 80 requests/s (test_search checks it to the asked
    # precision).
    env = dict(os.environ, SURGE_DEMO_SEARCH="1")
    rc = demo(h, "--request-count", "20", "--warmup-request-count", "0", "--artifact-dir", h.path("s"), env=env)
    h.check(rc.returncode == 0, "demo with its capacity search exits 0", rc.stderr[-2000:])
    m = re.search(r"Capacity: request rate ([0-9.]+)-([0-9.]+) req/s at 95% confidence", rc.stdout)
    h.check(m is not None and 60 <= float(m.group(1)) <= 82 and float(m.group(2)) > float(m.group(1)),
            "the demo's search finds about 80 req/s, an interval at 95% confidence", rc.stdout[-2500:])
    # the answer depends on how the probes arrive and how long they last: the demo and surge both say it
    h.check("arrivals evenly spaced (--request-distribution constant), each probe 2 s" in rc.stdout,
            "the demo says its search's arrivals and probe length", rc.stdout[-2500:])
    h.check("(constant (evenly spaced) arrivals, each probe 2 s)" in rc.stderr,
            "surge's search says its arrivals and probe length when it starts", rc.stderr[-2500:])


harness.main(main)
