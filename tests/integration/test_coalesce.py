# ctest: epoll-asan (run on epoll under ASan too: tests/CMakeLists.txt)
# ctest: run-serial (schedule lag to a fraction of a millisecond is what it checks)
"""--coalesce-us: a worker receiving many slow streams wakes once per batch, and still sends on time.

  1. An open loop on a constant schedule (200/s) whose 800 ms streams keep about 140 in flight, window 8 ms: the
     worker coalesces (client_wakeups: coalesced turns, several completions per wake-up) and the schedule holds:
     schedule lag p50 and p90 a small fraction of the window (a window not cut short before each due send would
     make them milliseconds);
  2. --coalesce-us 0: no turn coalesces, fewer completions per wake-up, the summary says 0; the default, auto,
     is 1000 with the kernel's receive stamps (timestamp_source "kernel") and 0 with user-space times;
  3. a closed loop of fast whole answers: the window shrinks to 1/100 of their latency (to nothing when that is
     under 20 us), even with a 10 ms window asked for;
  4. bad values exit 2 before anything is sent.
Run once per backend by ctest (integration.* on io_uring, epoll.* on epoll).
"""
import os

import harness
from profiling import profile, tol


def wakeups(h, r, what):
    s = r.summary
    if not h.check(s is not None and s["error_request_count"]["avg"] == 0, what + ": summary, no errors",
                   r.stderr[-2000:]):
        return None
    w = s.get("client_wakeups")
    h.check(w is not None and w.get("method") in ("io_uring_min_wait", "sleep"),
            what + ": client_wakeups in the summary, with the method", w)
    return w


def main(h):
    with h.mock("--ttft-ms", 20, "--itl-ms", 20, "--output-tokens", 40, "--workers", 1) as m:
        load = ["--streaming", "--request-rate", 200, "--request-distribution", "constant", "--request-count", 300,
                "--output-tokens-mean", 40, "--workers", 1]
        # 1. window on
        r = profile(h, m.url, *load, "--coalesce-us", 8000)
        w = wakeups(h, r, "window 8 ms")
        if w:
            h.check(w["coalesce_us"] == 8000, "the window asked for is reported", w)
            h.check(w["coalesced"] > 100, "turns coalesced", w)
            h.check(w["completions_per_wakeup"] > 1.5, "several completions per wake-up (%.2f > 1.5)"
                    % w["completions_per_wakeup"], w)
            if r.summary.get("io_backend") == "epoll":
                h.check(w["method"] == "sleep", "epoll coalesces by sleeping", w)
            lag = sorted((x["sent_ns"] - x["intended_ns"]) / 1e6 for x in r.records if x.get("sent_ns"))
            if h.check(len(lag) == 300, "every request sent", len(lag)):
                p50, p90 = lag[len(lag) // 2], lag[len(lag) * 9 // 10]
                h.check(p50 < tol(0.5), "schedule lag p50 %.3f ms < %.1f ms with the window on" % (p50, tol(0.5)))
                h.check(p90 < tol(2.0), "schedule lag p90 %.3f ms < %.1f ms with the window on" % (p90, tol(2.0)))
                print("schedule lag with the window on: p50 %.3f p90 %.3f p99 %.3f max %.3f ms"
                      % (p50, p90, lag[len(lag) * 99 // 100], lag[-1]))
            print("window 8 ms: %s; console: %s" % (w, [x for x in r.stdout.splitlines() if "wake-ups" in x]))
            h.check("Client wake-ups:" in r.stdout and "--coalesce-us 8000" in r.stdout,
                    "the console's wake-ups line", r.stdout[-800:])

        # default (auto): a window only where receive times are the kernel's stamps
        r = profile(h, m.url, *load)
        wa = wakeups(h, r, "default window")
        if wa:
            want = 1000 if r.summary.get("timestamp_source") == "kernel" else 0
            h.check(wa["coalesce_us"] == want and r.summary["input_config"].get("coalesce_us") == "auto",
                    "--coalesce-us auto: %d with timestamp_source %s" % (want, r.summary.get("timestamp_source")),
                    (wa, r.summary["input_config"].get("coalesce_us")))
            if want == 0:
                h.check(wa["coalesced"] == 0, "no turn coalesces with user-space receive times", wa)

        # 2. window off
        r = profile(h, m.url, *load, "--coalesce-us", 0)
        w0 = wakeups(h, r, "window off")
        if w0:
            h.check(w0["coalesce_us"] == 0 and w0["coalesced"] == 0, "no turn coalesces with the window off", w0)
            if w:
                h.check(w0["completions_per_wakeup"] * 1.5 < w["completions_per_wakeup"],
                        "the window gives more completions per wake-up (%.2f vs %.2f off)"
                        % (w["completions_per_wakeup"], w0["completions_per_wakeup"]))

    # 3. fast whole answers in a closed loop
    with h.mock("--ttft-ms", 0, "--itl-ms", 0, "--output-tokens", 1, "--workers", 1) as m:
        r = profile(h, m.url, "--concurrency", 8, "--request-count", 3000, "--output-tokens-mean", 1, "--workers", 1,
                    "--coalesce-us", 10000)
        w = wakeups(h, r, "closed loop, whole answers")
        if w:
            # the rule: each window at most 1/100 of the requests' mean sent-to-end time (of the oldest one's age
            # before any has finished), none under 20 us; so the time held over the run stays within 1% of the time
            # the requests took (a window left at 10 ms would hold for seconds)
            lat = r.summary["request_latency"]["avg"]
            held_us = w["mean_window_us"] * w["coalesced"]
            budget_us = 0.01 * lat * 1000 * r.summary["request_count"]["avg"]
            h.check(held_us <= budget_us, "the window shrinks for fast exchanges: %.0f us held <= %.0f us (1%% of "
                    "%.3f ms x %d requests)" % (held_us, budget_us, lat, r.summary["request_count"]["avg"]), w)
            print("closed loop, whole answers: %s, latency %.3f ms" % (w, lat))

    # 4. bad values
    for bad, why in (("-1", "expected"), ("100001", "expected"), ("x", "expected")):
        art = h.path("bad-%s" % bad)
        p = h.run([h.surge, "profile", "-m", "m", "-u", "127.0.0.1:9", "--coalesce-us", bad, "--artifact-dir", art])
        h.check(p.returncode == 2 and "--coalesce-us" in p.stderr, "--coalesce-us %s exits 2 naming the flag" % bad,
                (p.returncode, p.stderr))
        h.check(not os.path.exists(art), "and writes nothing", art)


if __name__ == "__main__":
    harness.main(main)
