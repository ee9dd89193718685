# ctest: one-backend (the balancing and the dead-URL handling are the worker's, above the event loop)
"""Several URLs (-u repeated; docs/metrics.md, "Several URLs"), checked at the servers: round_robin gives each mock
its share within one per worker (each mock's own --record counts, and each worker's records), least_in_flight sends
more to the faster of a slow and a fast mock, a URL that never listened is named at the start and skipped (no
request of it fails), a mock that crashes in the middle of an open-loop run is taken out of rotation and its later
requests go to the live ones, and every request is counted once: the per-URL counts add up to the totals and match
what each server recorded. Also the refusals (mixed schemes, different base paths). HTTP/2, sessions and
ranks: test_multi_url_h2.py, test_multi_url_sessions.py."""

import collections
import json
import os

import harness
from profiling import profile
from servers import refused_port


def per_url(r):
    return {u["index"]: u for u in (r.summary or {}).get("urls", [])}


def check_totals(h, r, n, what):
    s = r.summary
    urls = per_url(r)
    total = s["request_count"]["avg"] + s["error_request_count"]["avg"] + s["cancelled_request_count"]["avg"]
    h.check(total == n and len(r.records) == n, what + ": every request counted once", (total, len(r.records)))
    for key in ("request_count", "error_request_count", "cancelled_request_count"):
        h.check(sum(u[key] for u in urls.values()) == s[key]["avg"], what + ": per-URL %s adds up" % key,
                ([u[key] for u in urls.values()], s[key]["avg"]))
    by_url = collections.Counter(x["url"] for x in r.records if x["status"] == "ok")
    for i, u in urls.items():
        h.check(by_url.get(i, 0) == u["request_count"], what + ": URL %d's ok records match its count" % i,
                (by_url.get(i, 0), u["request_count"]))


def main(h):
    # round robin: 3 mocks, 2 workers; each worker's requests go in turn
    n, workers = 90, 2
    with h.mock("--ttft-ms", 5, "--itl-ms", 1, record=True) as a, h.mock("--ttft-ms", 5, "--itl-ms", 1,
                                                                       record=True) as b, \
            h.mock("--ttft-ms", 5, "--itl-ms", 1, record=True) as c:
        ms = [a, b, c]
        r = profile(h, a.url, "-u", b.url, "-u", c.url, "--concurrency", 6, "--workers", workers,
                    "--request-count", n, "--output-tokens-mean", 4)
        for m in ms:
            m.stop()
        got = [len(m.records()) for m in ms]
        h.check(sum(got) == n and all(abs(g - n / 3) <= workers for g in got),
                "round_robin: each mock got n/3 within one per worker (its own record)", got)
        if r.summary:
            check_totals(h, r, n, "round_robin")
            urls = per_url(r)
            h.check([urls[i]["request_count"] for i in range(3)] == got, "round_robin: per-URL counts = the mocks'",
                    ([urls[i]["request_count"] for i in range(3)], got))
            for w in range(workers):
                mine = collections.Counter(x["url"] for x in r.records if x["worker"] == w)
                counts = [mine.get(i, 0) for i in range(3)]
                h.check(max(counts) - min(counts) <= 1, "round_robin: worker %d in turn (within 1)" % w, counts)
        h.check("Per URL (ms)" in r.stdout and b.url.replace("http://", "") in r.stdout or b.url in r.stdout,
                "the console has the per-URL lines", r.stdout[-2000:])
        h.check("round_robin" in r.stderr, "the run says how it balances", r.stderr[:1500])
        # surge merge recomputes the per-URL part from the records, with the URLs' names from the configuration
        out = h.path("merged")
        mp = h.run([h.surge, "merge", r.dir, "-o", out])
        h.check(mp.returncode == 0, "surge merge of a several-URL run", mp.stderr[-1500:])
        if mp.returncode == 0 and r.summary:
            with open(os.path.join(out, "profile_export_surge.json")) as f:
                merged = json.load(f)
            h.check([(u["url"], u["request_count"]) for u in merged.get("urls", [])] ==
                    [(u["url"], u["request_count"]) for u in r.summary["urls"]], "merge: the same per-URL counts",
                    (merged.get("urls"), r.summary["urls"]))

    # least_in_flight: a fast and a slow mock; the fast one finishes sooner, so has fewer in flight, so gets more
    n = 80
    with h.mock("--ttft-ms", 60, record=True) as slow, h.mock("--ttft-ms", 4, record=True) as fast:
        r = profile(h, slow.url, "-u", fast.url, "--url-strategy", "least_in_flight", "--concurrency", 4,
                    "--workers", 1, "--request-count", n, "--output-tokens-mean", 2)
        slow.stop()
        fast.stop()
        ns, nf = len(slow.records()), len(fast.records())
        h.check(ns + nf == n and nf >= 3 * ns, "least_in_flight: the fast mock got at least 3x the slow one's",
                (nf, ns))
        if r.summary:
            check_totals(h, r, n, "least_in_flight")

    # a URL that never listened, and one that crashes for good in the middle of an open loop at 100/s: 600 ms
    # after its first request (not after a timer started with surge, whose start-up under a sanitizer once left the
    # mock 10 requests before it died)
    n = 150
    dead = "http://127.0.0.1:%d" % refused_port()
    with h.mock("--ttft-ms", 10, "--itl-ms", 2, record=True) as a, \
            h.mock("--ttft-ms", 10, "--itl-ms", 2, "--fault-origin", "request", "--fault", "crash:600") as b:
        # what was in flight on the crashed mock fails (that is its error rate, not a failed run)
        r = profile(h, a.url, "-u", b.url, "-u", dead, "--streaming", "--request-rate", 100,
                    "--workers", 2, "--request-count", n, "--output-tokens-mean", 4, "--max-error-rate", 0.1)
        a.stop()
        h.check("URL 2, %s" % dead in r.stderr and "cannot connect" in r.stderr,
                "the dead URL is named at the start", r.stderr[:1500])
        if r.summary:
            check_totals(h, r, n, "dead URLs")
            urls = per_url(r)
            d, k = urls[2], urls[1]
            h.check(d["request_count"] + d["error_request_count"] == 0 and d["outages"] >= 1 and d["down_at_end"],
                    "the URL that never listened: no request sent to it, out of rotation", d)
            h.check(k["request_count"] > 10 and k["outages"] >= 1 and k["down_at_end"] and
                    k["first_down_s"] is not None and 0.1 < k["first_down_s"] < 1.6,
                    "the crashed URL served first, then left the rotation when it crashed", k)
            # only what was in flight on it when it died fails (about a TTFT's worth at 100/s): the rest went on
            h.check(r.summary["error_request_count"]["avg"] <= 10, "the dead URLs cost at most the requests in "
                    "flight at the crash", r.summary.get("error_summary"))
            h.check(urls[0]["request_count"] == len(a.records()), "the live mock recorded every request of its URL",
                    (urls[0]["request_count"], len(a.records())))
            h.check(d["rerouted_request_count"] + k["rerouted_request_count"] >= 1,
                    "requests meant for the dead URLs were re-routed", (d, k))
            # skipped, not spun on: its connects back off (100 ms doubling) instead of one per request sent its way
            h.check(k["connect_failures"] <= 30, "the crashed URL's connects back off", k["connect_failures"])
        h.check("URL 1 (%s) refused connections from +" % b.url.replace("http://", "") in r.stdout or
                "URL 1 (%s) refused connections from +" % b.url in r.stdout,
                "the console names the crashed URL once, with when", r.stdout[-2500:])


    # what several URLs refuse, before anything is sent
    r = profile(h, "http://127.0.0.1:1", "-u", "https://127.0.0.1:2", "--request-count", 1, check_rc=2)
    h.check("same scheme" in r.stderr, "mixed schemes refused", r.stderr[-500:])
    r = profile(h, "http://127.0.0.1:1/a", "-u", "http://127.0.0.1:2/b", "--request-count", 1, check_rc=2)
    h.check("base path" in r.stderr, "different base paths refused", r.stderr[-500:])


if __name__ == "__main__":
    harness.main(main)
