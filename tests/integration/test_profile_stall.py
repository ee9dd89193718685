# ctest: epoll-asan (run on epoll under ASan too: tests/CMakeLists.txt)
"""Coordinated omission: a server stall shows in latency measured from the intended start, even for the
requests that waited inside the client and were sent after the stall."""
import harness
from profiling import profile


def main(h):
    stall_start, stall = 600, 600
    # the stall counts from the first request, so surge's start-up cannot move it
    with h.mock("--ttft-ms", 5, "--itl-ms", 1, "--fault-origin", "request", "--stall-start-ms", stall_start,
                "--stall-ms", stall) as m:
        # 100/s for 2 s, at most 2 in flight: during the stall the 2 slots hang and the rest queue in surge.
        r = profile(h, m.url, "--request-rate", 100, "--request-distribution", "constant", "--max-concurrency", 2,
                    "--request-count", 200, "--output-tokens-mean", 2, "--workers", 1, timeout=60)
        s = r.summary
        if not s:
            return
        lat, lat_send, lag = s["request_latency"], s["request_latency_from_send"], s["schedule_lag"]
        h.check(lat["max"] > 0.6 * stall, "stall shows in max latency from the intended start (%.0f ms)" % lat["max"])
        h.check(lag["max"] > 0.5 * stall, "requests queued in the client: schedule lag max %.0f ms" % lag["max"])
        # Requests that queued behind the stall were fast once sent: from-send hides them, intended does not.
        late = [x for x in r.records if x["schedule_lag_ms"] > 100]
        h.check(len(late) >= 20, "many requests waited more than 100 ms to be sent (%d)" % len(late))
        if late:
            from_send = sorted(x["request_latency_ms"] - x["schedule_lag_ms"] for x in late)
            h.check(from_send[len(from_send) // 2] < 100, "late requests were quick once sent (median %.1f ms)"
                    % from_send[len(from_send) // 2])
            h.check(all(x["request_latency_ms"] >= x["schedule_lag_ms"] for x in late),
                    "latency from intended includes the time spent waiting")
        h.check(lat["p90"] > lat_send["p90"] * 2, "p90 from intended (%.1f) well above p90 from send (%.1f)"
                % (lat["p90"], lat_send["p90"]))
        # intended times were not re-spaced: constant 10 ms apart
        intended = sorted(x["intended_ns"] for x in r.records)
        gaps = [(b - a) / 1e6 for a, b in zip(intended, intended[1:])]
        h.check(max(abs(g - 10.0) for g in gaps) < 0.01, "intended times stay 10 ms apart through the stall")


harness.main(main)
