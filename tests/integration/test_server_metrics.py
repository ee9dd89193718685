# ctest: run-serial (headless Chromium takes both cores for seconds: the timing tests beside it would suffer)
"""--server-metrics-url: the server's Prometheus metrics scraped during the run, from three producers.

- surge mock (vLLM's names, from its --max-batch queue), driven past its capacity: a sample about every interval
  from just before the load to just after, requests waiting at some point and never more running than the
  batch, the summary in profile_export_surge.json agrees with the series, and the tokens the server says it
  generated over the run are the tokens the client counted.
- a refused port and a server that accepts and never answers: the run ends on time, every scrape of them is
  a failure with its error in server_metrics.json and a line on stderr, and the mock's scrapes are unharmed.
- Debian's prometheus-node-exporter, an unrelated producer: hundreds of series parsed, no failed scrape.
- llama.cpp's llama-server --metrics: its llamacpp:* series, the known ones mapped (needs
  tests/data/fetch-llama-server: skipped without it, a failure under CI).
The report of the mock run draws the server's charts in headless Chromium when it is installed.
Bad flags are refused before anything is sent.
"""
import json
import os
import shutil
import subprocess
import time

import browser
import harness
import profiling
from servers import LlamaServer, TcpServer, free_port, refused_port, wait_listening

INTERVAL = 0.25


def load(path):
    with open(path) as f:
        return json.load(f)


def series(sm, name):
    return [s for s in sm["series"] if s["name"] == name]


def mock_overload(h):
    # 4 slots, 20 + 19*2 = 58 ms each: about 69 requests/s; 120/s offered builds a queue
    with h.mock("--max-batch", "4", "--ttft-ms", "20", "--itl-ms", "2", "--output-tokens", "20") as m:
        t0 = time.monotonic()
        r = profiling.profile(h, m.url, "--endpoint-type", "chat", "--streaming", "--request-rate", "120",
                              "--request-distribution", "constant", "--request-count", "240",
                              "--server-metrics-url", m.url + "/metrics", "--server-metrics-interval", str(INTERVAL),
                              "--generate-plots", check_rc=0)
        wall = time.monotonic() - t0
    sm = load(os.path.join(r.dir, "server_metrics.json"))
    ep = sm["endpoints"][0]
    h.check(ep["failed"] == 0, "mock: no failed scrape", ep)
    dur = r.metric("benchmark_duration")
    h.check(ep["scrapes"] >= dur / INTERVAL - 1 and ep["scrapes"] <= wall / INTERVAL + 3,
            "mock: a scrape about every %g s over the run (%d scrapes, %.1f s)" % (INTERVAL, ep["scrapes"], dur))
    running = series(sm, "vllm:num_requests_running")
    waiting = series(sm, "vllm:num_requests_waiting")
    gen = series(sm, "vllm:generation_tokens_total")
    h.check(len(running) == 1 and running[0]["known"] == "requests_running" and running[0]["type"] == "gauge",
            "mock: running is a known gauge", running)
    h.check(running[0]["labels"] == {"model_name": "mock-model"}, "mock: labels kept", running[0]["labels"])
    h.check(max(v for _, v in running[0]["samples"]) <= 4, "mock: never more running than --max-batch")
    h.check(max(v for _, v in waiting[0]["samples"]) > 0, "mock: the queue built up (waiting > 0)")
    times = [t for t, _ in running[0]["samples"]]
    h.check(times == sorted(times) and times[0] < 0.05 and times[-1] >= dur - 0.1,
            "mock: samples from just before the load to just after it", (times[:2], times[-2:], dur))
    gaps = [b - a for a, b in zip(times, times[1:])]
    h.check(profiling.median(gaps) < INTERVAL * 1.5, "mock: median gap near the interval", profiling.median(gaps))
    # the server's token count over the run: what the client counted (the first scrape is before any request,
    # the last after every response)
    first, last = gen[0]["samples"][0][1], gen[0]["samples"][-1][1]
    client_tokens = sum(x["output_sequence_length"] for x in r.records if x["status"] == "ok")
    h.check(first == 0 and last - first == client_tokens,
            "mock: tokens generated per the server = tokens the client counted", (first, last, client_tokens))
    summ = r.summary["server_metrics"]["endpoints"][0]["metrics"]
    h.check(summ["generation_tokens"]["delta"] == last - first, "summary: generation_tokens delta", summ)
    vals = [v for _, v in waiting[0]["samples"]]
    h.check(summ["requests_waiting"]["max"] == max(vals) and
            abs(summ["requests_waiting"]["avg"] - sum(vals) / len(vals)) < 1e-9,
            "summary: requests_waiting max and avg from the series", summ["requests_waiting"])
    h.check(summ["kv_cache_usage"]["unit"] == "fraction" and summ["kv_cache_usage"]["max"] <= 1,
            "summary: kv_cache_usage is a fraction", summ["kv_cache_usage"])
    with open(os.path.join(r.dir, "server_metrics.csv")) as f:
        rows = f.read().splitlines()
    h.check(rows[0] == "Endpoint,Metric,Labels,Time,Value" and len(rows) - 1 == sum(len(s["samples"])
                                                                                   for s in sm["series"]),
            "server_metrics.csv: a row per sample", rows[:2])
    page = os.path.join(r.dir, "report.html")
    if shutil.which("chromium") and os.path.exists(page):
        rr = browser.render(h, page)
        browser.page_ok(h, rr, "run page with server metrics",
                        ("server-requests_running", "server-requests_waiting", "server-kv_cache_usage",
                         "server-generation_tokens"))


def failing_endpoints(h):
    def silent(conn, index, stop):
        stop.wait(30)  # accept, read nothing, answer nothing

    with TcpServer(silent, lifetime=60) as quiet, h.mock("--ttft-ms", "5", "--itl-ms", "1") as m:
        refused = "http://127.0.0.1:%d/metrics" % refused_port()
        t0 = time.monotonic()
        r = profiling.profile(h, m.url, "--streaming", "--request-rate", "50", "--benchmark-duration", "2",
                              "--server-metrics-url", quiet.url + "/metrics", "--server-metrics-url", refused,
                              "--server-metrics-url", m.url + "/metrics", "--server-metrics-interval", "0.5",
                              check_rc=0)
        wall = time.monotonic() - t0
    # the quiet endpoint costs each scrape its deadline (0.5 s), on the scraper's thread only: the load runs its
    # 2 s; the end waits for at most the last scrape's deadline
    h.check(wall < 2 + 0.5 * 2 + 2.5, "failing endpoints: the run ends on time (%.1f s)" % wall)
    h.check(abs(r.metric("benchmark_duration") - 2) < 0.5, "failing endpoints: the load ran its 2 s",
            r.metric("benchmark_duration"))
    sm = load(os.path.join(r.dir, "server_metrics.json"))
    eps = {e["url"]: e for e in sm["endpoints"]}
    q, x, ok = eps[quiet.url + "/metrics"], eps[refused], eps[m.url + "/metrics"]
    h.check(q["scrapes"] >= 2 and q["failed"] == q["scrapes"] and "within" in q["errors"][0]["error"],
            "a server that never answers: every scrape failed, timed out", q)
    h.check(x["scrapes"] >= 2 and x["failed"] == x["scrapes"] and "refused" in x["errors"][0]["error"],
            "a refused port: every scrape failed, refused", x["errors"][:1])
    h.check(ok["failed"] == 0 and ok["scrapes"] >= 2, "the mock's scrapes are unharmed", ok)
    h.check("%s, %d failed" % (refused, x["failed"]) in r.stderr, "stderr says the refused endpoint failed",
            r.stderr[-1500:])


def node_exporter(h):
    exe = shutil.which("prometheus-node-exporter")
    if not exe:
        if os.environ.get("CI"):
            h.check(False, "prometheus-node-exporter installed (tests/run installs it)")
        else:
            print("note: prometheus-node-exporter not installed; its part is skipped")
        return
    port = free_port()
    proc = subprocess.Popen(["timeout", "60", exe, "--web.listen-address=127.0.0.1:%d" % port],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(proc, [port])
        with h.mock("--ttft-ms", "5", "--itl-ms", "1") as m:
            r = profiling.profile(h, m.url, "--streaming", "--request-rate", "50", "--request-count", "60",
                                  "--server-metrics-url", "http://127.0.0.1:%d/metrics" % port,
                                  "--server-metrics-interval", "0.5", check_rc=0)
    finally:
        proc.terminate()
        proc.wait(10)
    sm = load(os.path.join(r.dir, "server_metrics.json"))
    ep = sm["endpoints"][0]
    h.check(ep["failed"] == 0 and ep["scrapes"] >= 2, "node_exporter: every scrape parsed", ep)
    names = {s["name"] for s in sm["series"]}
    h.check(len(sm["series"]) > 100 and "node_cpu_seconds_total" in names,
            "node_exporter: its series are all there (%d)" % len(sm["series"]))
    types = {s["type"] for s in sm["series"]}
    h.check({"counter", "gauge", "summary"} <= types, "node_exporter: TYPE lines applied", types)
    h.check(all(s["known"] is None for s in sm["series"]), "node_exporter: nothing taken for an LLM metric")


def llama(h):
    try:
        srv = LlamaServer(h, parallel=4, extra=["--metrics"])
    except RuntimeError as e:
        h.check(False, str(e))
        return
    with srv:
        r = profiling.profile(h, srv.url, "--endpoint-type", "chat", "--streaming", "--request-rate", "20",
                              "--request-count", "40", "--output-tokens-mean", "16", "--extra-inputs",
                              "ignore_eos:true", "--server-metrics-url", srv.url + "/metrics",
                              "--server-metrics-interval", "0.5", model="tiny", check_rc=0)
    sm = load(os.path.join(r.dir, "server_metrics.json"))
    h.check(sm["endpoints"][0]["failed"] == 0, "llama-server: every scrape parsed", sm["endpoints"])
    known = {s["name"]: s["known"] for s in sm["series"] if s["name"].startswith("llamacpp:")}
    h.check(known.get("llamacpp:tokens_predicted_total") == "generation_tokens" and
            known.get("llamacpp:requests_processing") == "requests_running",
            "llama-server: its llamacpp: series with the known ones mapped", known)
    gen = r.summary["server_metrics"]["endpoints"][0]["metrics"].get("generation_tokens", {})
    client = sum(x["output_sequence_length"] for x in r.records if x["status"] == "ok")
    h.check(gen.get("delta") == client, "llama-server: tokens predicted over the run = tokens counted",
            (gen, client))


def bad_flags(h):
    for args, what in ((["--server-metrics-url", "notaurl"], "not a URL"),
                       (["--server-metrics-url", "https://127.0.0.1:1/metrics"], "https"),
                       (["--server-metrics-url", "http://127.0.0.1:99999/metrics"], "port"),
                       (["--server-metrics-url", "http://surge-test-host.invalid/metrics"], "a host that does not resolve"),
                       (["--server-metrics-interval", "0"], "interval 0"),
                       (["--server-metrics-interval", "2"], "an interval without a URL")):
        rc = h.run([h.surge, "profile", "-m", "x", "-u", "http://127.0.0.1:1", "--no-progress"] + args, timeout=30)
        h.check(rc.returncode == 2 and "server-metrics" in rc.stderr and "connect" not in rc.stderr,
                "%s: refused before anything is sent, exit 2" % what, (rc.returncode, rc.stderr[-500:]))


def main(h):
    bad_flags(h)
    mock_overload(h)
    failing_endpoints(h)
    node_exporter(h)
    llama(h)


harness.main(main)
