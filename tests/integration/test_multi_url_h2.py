# ctest: one-backend (the balancing and the dead-URL handling are the worker's, above the event loop)
"""Several URLs over HTTP/2 (docs/metrics.md, "Several URLs"), checked at the servers: over h2c (--http2)
round_robin gives each mock its share within one per worker (each mock's own --record counts), on a few
connections each (streams, not a connection per request), also under --max-connections 1 (the one session goes
from URL to URL); a mock that crashes in the middle of an open-loop h2c run is
taken out of rotation, the requests not yet sent go to the live one, and only what was in flight on it fails;
over https:// two TLS mocks are balanced on h2 chosen through ALPN; --service-kind triton balances its gRPC calls
over two mocks. Every request is counted once: the per-URL counts add up to the totals and match what each server
recorded."""

import collections

import harness
from profiling import profile
from servers import refused_port
from test_multi_url import check_totals, per_url


def counts_at(h, r, ms, n, what, workers):
    """Each mock's own record count, checked against the per-URL counts and round robin's shares."""
    got = [len(m.records()) for m in ms]
    h.check(sum(got) == n and all(abs(g - n / len(ms)) <= workers for g in got),
            "%s: each mock got n/%d within one per worker (its own record)" % (what, len(ms)), got)
    if r.summary:
        check_totals(h, r, n, what)
        urls = per_url(r)
        h.check([urls[i]["request_count"] for i in range(len(ms))] == got, what + ": per-URL counts = the mocks'",
                ([urls[i]["request_count"] for i in range(len(ms))], got))
    return got


def main(h):
    # 1. h2c, round robin: 3 mocks, 2 workers, a closed loop of 12 streams
    n, workers = 120, 2
    with h.mock("--ttft-ms", 5, "--itl-ms", 1, record=True) as a, \
            h.mock("--ttft-ms", 5, "--itl-ms", 1, record=True) as b, \
            h.mock("--ttft-ms", 5, "--itl-ms", 1, record=True) as c:
        ms = [a, b, c]
        r = profile(h, a.url, "-u", b.url, "-u", c.url, "--http2", "--streaming", "--concurrency", 12,
                    "--workers", workers, "--request-count", n, "--output-tokens-mean", 4)
        for m in ms:
            m.stop()
        counts_at(h, r, ms, n, "h2c round_robin", workers)
        h.check("(HTTP/2" in r.stderr, "h2c: the run says HTTP/2", r.stderr[:1500])
        for i, m in enumerate(ms):
            conns = {x["conn"] for x in m.records()}
            h.check(1 <= len(conns) <= workers, "h2c: URL %d's streams on at most a connection per worker" % i,
                    len(conns))
        if r.summary:
            urls = per_url(r)
            h.check(all(urls[i].get("time_to_first_token", {}).get("count") == urls[i]["request_count"]
                        for i in range(3)), "h2c: each URL's TTFT distribution has its requests",
                    [urls[i].get("time_to_first_token") for i in range(3)])
            for w in range(workers):
                mine = collections.Counter(x["url"] for x in r.records if x["worker"] == w)
                cs = [mine.get(i, 0) for i in range(3)]
                h.check(max(cs) - min(cs) <= 1, "h2c: worker %d in turn (within 1)" % w, cs)

    # 1b. --max-connections 1: one connection at a time, handed from URL to URL when it carries nothing (HTTP/2
    # and HTTP/1.1: the descriptor given up goes to the queue's head's URL, else the run livelocks)
    n = 40
    for proto in (["--http2"], []):
        what = "one connection, " + ("h2c" if proto else "HTTP/1.1")
        with h.mock("--ttft-ms", 2, record=True) as a, h.mock("--ttft-ms", 2, record=True) as b:
            r = profile(h, a.url, "-u", b.url, "--max-connections", 1, "--concurrency", 4, "--workers", 1,
                        "--request-count", n, "--output-tokens-mean", 2, *proto,
                        timeout=60)
            a.stop()
            b.stop()
            counts_at(h, r, [a, b], n, what, 1)
            if r.summary:
                h.check(r.summary["error_request_count"]["avg"] == 0, what + ": no error",
                        r.summary.get("error_summary"))

    # 2. h2c, one mock that crashes for good in the middle of an open loop at 100/s (600 ms after its first request,
    # so that surge's start-up cannot move it), and a URL that never listened
    n = 150
    dead = "http://127.0.0.1:%d" % refused_port()
    with h.mock("--ttft-ms", 10, "--itl-ms", 2, record=True) as a, \
            h.mock("--ttft-ms", 10, "--itl-ms", 2, "--fault-origin", "request", "--fault", "crash:600") as b:
        r = profile(h, a.url, "-u", b.url, "-u", dead, "--http2", "--streaming", "--request-rate", 100,
                    "--workers", 2, "--request-count", n, "--output-tokens-mean", 4, "--max-error-rate", 0.1)
        a.stop()
        if r.summary:
            check_totals(h, r, n, "h2c dead URLs")
            urls = per_url(r)
            d, k = urls[2], urls[1]
            h.check(d["request_count"] + d["error_request_count"] == 0 and d["outages"] >= 1 and d["down_at_end"],
                    "h2c: the URL that never listened: no request sent to it, out of rotation", d)
            h.check(k["request_count"] > 10 and k["outages"] >= 1 and k["down_at_end"] and
                    k["first_down_s"] is not None and 0.1 < k["first_down_s"] < 1.6,
                    "h2c: the crashed URL served first, then left the rotation when it crashed", k)
            # the streams in flight on it when it died (about a TTFT's worth at 100/s) fail; the rest went on
            h.check(r.summary["error_request_count"]["avg"] <= 10,
                    "h2c: the dead URLs cost at most the streams in flight at the crash", r.summary.get("error_summary"))
            h.check(urls[0]["request_count"] == len(a.records()),
                    "h2c: the live mock recorded every request of its URL", (urls[0]["request_count"], len(a.records())))
            h.check(d["rerouted_request_count"] + k["rerouted_request_count"] >= 1,
                    "h2c: requests meant for the dead URLs were re-routed", (d, k))
            h.check(k["connect_failures"] <= 30, "h2c: the crashed URL's connects back off", k["connect_failures"])

    # 3. https://: two TLS mocks, h2 chosen through ALPN (the first URL's choice), each server's own handshake
    n = 60
    with h.mock("--tls", "--ttft-ms", 5, "--itl-ms", 1, record=True) as a, \
            h.mock("--tls", "--ttft-ms", 5, "--itl-ms", 1, record=True) as b:
        r = profile(h, "https://127.0.0.1:%d" % a.port, "-u", "https://127.0.0.1:%d" % b.port, "-k", "--streaming",
                    "--concurrency", 8, "--workers", 1, "--request-count", n, "--output-tokens-mean", 4)
        a.stop()
        b.stop()
        counts_at(h, r, [a, b], n, "TLS h2", 1)
        h.check("(HTTP/2" in r.stderr, "TLS: ALPN chose h2 with several URLs", r.stderr[:1500])

    # 4. --service-kind triton: gRPC calls over HTTP/2 to two mocks
    n = 60
    with h.mock("--ttft-ms", 5, "--itl-ms", 1, record=True) as a, h.mock("--ttft-ms", 5, "--itl-ms", 1,
                                                                       record=True) as b:
        r = profile(h, "127.0.0.1:%d" % a.port, "-u", "127.0.0.1:%d" % b.port, "--service-kind", "triton",
                    "--streaming", "--concurrency", 8, "--workers", 2, "--request-count", n, "--output-tokens-mean", 4)
        a.stop()
        b.stop()
        counts_at(h, r, [a, b], n, "triton", 2)
        h.check(all(x.get("inputs") for m in (a, b) for x in m.records()), "triton: the mocks saw gRPC calls",
                [x for m in (a, b) for x in m.records()][:2])


if __name__ == "__main__":
    harness.main(main)
