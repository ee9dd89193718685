# ctest: one-backend (it picks each backend itself)
# ctest: run-serial (schedule lag under millisecond waits is part of what it checks)
"""--io-backend: epoll where io_uring is blocked, as under a container's seccomp profile.

Under tests/tools/no_uring (io_uring_setup, io_uring_enter and io_uring_register answered EPERM, as the default
profiles of Docker, containerd and Podman answer them):
  1. surge profile (auto) says once that io_uring is unavailable, runs on epoll and measures as it does on
     io_uring: the mock's TTFT and ITL, every request, the rate, the schedule held; "io_backend": "epoll";
  2. --io-backend io_uring fails before anything is sent: exit 3, the reason on one line, no artifact directory;
  3. surge mock (auto) falls back to epoll and serves a run;
  4. with epoll_pwait2 refused too (a profile older than it), waits on a timerfd keep the schedule.
Without the filter: each backend when asked for, the summary and console saying which ran; bad values exit 2.
"""
import os

import harness
from profiling import profile, tol


def check_run(h, r, n, ttft, itl, osl, backend, what):
    s = r.summary
    if not h.check(s is not None, what + ": summary written", r.stderr[-2000:]):
        return
    h.check(s.get("io_backend") == backend, what + ": io_backend %s in the summary" % backend, s.get("io_backend"))
    h.check(s["input_config"].get("io_backend") in ("auto", backend), what + ": input_config names what was asked",
            s["input_config"].get("io_backend"))
    h.check(", %s)" % backend in r.stdout, what + ": the console's Client CPU line names the backend",
            r.stdout[-600:])
    h.check(s["request_count"]["avg"] == n and s["error_request_count"]["avg"] == 0,
            what + ": every request, no errors", (s["request_count"], s.get("error_summary")))
    h.check(len(r.records) == n, what + ": one record per request", len(r.records))
    h.near(s["time_to_first_token"]["p50"], ttft, tol(2.0), what + ": TTFT p50 (ms) vs the mock's")
    h.near(s["inter_token_latency"]["p50"], itl, tol(0.5), what + ": ITL p50 (ms) vs the mock's")
    h.check(s["output_sequence_length"]["min"] == osl and s["output_sequence_length"]["max"] == osl,
            what + ": OSL exactly %d" % osl, s["output_sequence_length"])
    h.check(s["schedule_lag"]["p50"] < tol(1.0), what + ": schedule lag p50 under 1 ms", s["schedule_lag"])
    # constant arrivals at 100/s: the intended starts are exactly 10 ms apart, and the sends follow them
    intended = sorted(x["intended_ns"] for x in r.records)
    gaps = [(b - a) / 1e6 for a, b in zip(intended, intended[1:])]
    h.check(all(abs(g - 10.0) < 0.01 for g in gaps), what + ": intended starts 10 ms apart",
            (min(gaps), max(gaps)) if gaps else None)


def main(h):
    no_uring = os.environ.get("SURGE_NO_URING") or os.path.join(os.path.dirname(h.surge), "tests", "no_uring")
    env = dict(os.environ)
    env.pop("SURGE_IO_BACKEND", None)  # this test chooses; the epoll pass's default would hide the fallback
    # the filter itself works here: it is what everything below relies on
    probe = h.run([no_uring, "true"], env=env) if os.access(no_uring, os.X_OK) else None
    if probe is None or probe.returncode != 0:
        h.skip("tests/tools/no_uring unavailable (libseccomp-dev missing, or seccomp refused here): %s"
               % (probe.stderr.strip() if probe else no_uring))
    ttft, itl, osl, n = 20, 4, 12, 150
    load = ["--streaming", "--request-rate", 100, "--request-distribution", "constant", "--request-count", n,
            "--output-tokens-mean", osl, "--output-tokens-mean-deterministic", "--workers", 1]

    # 1.-2. the client under the filter, the mock outside it
    with h.mock("--ttft-ms", ttft, "--itl-ms", itl, env=env) as m:
        r = profile(h, m.url, *load, wrap=[no_uring], env=env)
        check_run(h, r, n, ttft, itl, osl, "epoll", "auto under the filter")
        lines = [x for x in r.stderr.splitlines() if "io_uring is unavailable" in x]
        h.check(len(lines) == 1, "one line says io_uring is unavailable, and why", r.stderr[-2000:])
        h.check(lines and "Operation not permitted" in lines[0] and "using epoll" in lines[0],
                "it names the refusal and the fallback", lines)

        art = h.path("forced-uring")
        p = h.run([no_uring, h.surge, "profile", "-m", "m", "-u", m.url, "--io-backend", "io_uring",
                   "--request-count", 5, "--artifact-dir", art], env=env)
        h.check(p.returncode == 3, "--io-backend io_uring under the filter exits 3", (p.returncode, p.stderr))
        h.check("--io-backend io_uring: io_uring_setup: Operation not permitted" in p.stderr
                and "--io-backend epoll" in p.stderr, "one line with the reason and the way out", p.stderr)
        h.check(not os.path.exists(art), "nothing written: no artifact directory", art)
        h.check("protocol error" not in p.stderr and "Request latency" not in p.stdout, "no empty table",
                p.stdout[-500:])

        # 4. epoll_pwait2 refused as well: the waits go through a timerfd, in nanoseconds all the same (p90: a
        # late wait would show in most requests; a stall of the machine in a few)
        r = profile(h, m.url, *load, wrap=[no_uring, "-b", "epoll_pwait2"], env=env)
        check_run(h, r, n, ttft, itl, osl, "epoll", "epoll without epoll_pwait2")
        if r.summary:
            h.check(r.summary["schedule_lag"]["p90"] < tol(1.0), "schedule lag p90 under 1 ms with timerfd waits",
                    r.summary["schedule_lag"])

    # 3. the mock under the filter
    with h.mock("--ttft-ms", ttft, "--itl-ms", itl, wrap=[no_uring], env=env) as m:
        r = profile(h, m.url, *load, env=env)
        h.check("io_uring is unavailable" in m.stderr() and "using epoll" in m.stderr(),
                "surge mock says it falls back to epoll", m.stderr()[-1000:])
        uring_ok = r.summary is not None and r.summary.get("io_backend") == "io_uring"
        check_run(h, r, n, ttft, itl, osl, "io_uring" if uring_ok else "epoll", "served by the mock on epoll")

    # without the filter: each backend when asked for
    with h.mock("--ttft-ms", ttft, "--itl-ms", itl, env=env) as m:
        r = profile(h, m.url, *load, "--io-backend", "epoll", env=env)
        check_run(h, r, n, ttft, itl, osl, "epoll", "--io-backend epoll")
        h.check("io_uring is unavailable" not in r.stderr, "no fallback line when epoll was asked for", r.stderr)
        if uring_ok:
            r = profile(h, m.url, *load, "--io-backend", "io_uring", env=env)
            check_run(h, r, n, ttft, itl, osl, "io_uring", "--io-backend io_uring")
        for flag, env2 in ((["--io-backend", "kqueue"], env), ([], dict(env, SURGE_IO_BACKEND="kqueue"))):
            art = h.path("bad%d" % len(flag))
            p = h.run([h.surge, "profile", "-m", "m", "-u", m.url, "--request-count", 1, "--artifact-dir", art]
                      + flag, env=env2)
            h.check(p.returncode == 2 and "expected auto, io_uring or epoll" in p.stderr,
                    "a bad backend (%s) exits 2 with the choices" % (flag or "SURGE_IO_BACKEND"), (p.returncode,
                                                                                                  p.stderr))
            h.check(not os.path.exists(art), "and writes nothing", art)
        p = h.run([h.surge, "mock", "--io-backend", "kqueue"], env=env)
        h.check(p.returncode == 2 and "expected auto, io_uring or epoll" in p.stderr, "surge mock too",
                (p.returncode, p.stderr))


if __name__ == "__main__":
    harness.main(main)
