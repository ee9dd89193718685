"""What a run reports, read as a GenAI-Perf, AIPerf or vLLM user reads it: the console table's columns and rows,
the CSV in GenAI-Perf's layout, inputs.json with the bodies sent (and read back), goodput per constraint with
requests that cannot be measured, error lines whose status reads as one, the 404 hint and the tokenizer hint."""
import base64
import csv
import json
import os

import harness
from profiling import HttpServer, profile

# GenAI-Perf's CSV (genai_perf/export_data/csv_exporter.py): its header and, streaming, its rows in order.
GAP_HEADER = ["Metric", "avg", "min", "max", "p99", "p95", "p90", "p75", "p50", "p25", "p10", "p5", "p1"]
GAP_ROWS = ["Time To First Token (ms)", "Time To Second Token (ms)", "Request Latency (ms)", "Inter Token Latency (ms)",
            "Output Token Throughput Per User (tokens/sec/user)", "Output Sequence Length (tokens)",
            "Input Sequence Length (tokens)"]
GAP_VALUES = ["Output Token Throughput (tokens/sec)", "Request Throughput (per sec)", "Request Count (count)"]

# The mock's output words, one per token (mock/mock_render.c).
WORDS = [" the", " of", " and", " to", " in", " is", " that", " for", " it", " as", " with", " was", " on", " be",
         " at", " by"]


def read_gap_csv(path):
    """The two parts of a GenAI-Perf CSV as a script reading one does: rows up to the blank line, then values."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    blank = rows.index([])
    return rows[0], rows[1:blank], rows[blank + 1:]


def check_table_and_csv(h, r, n, isl):
    s = r.summary
    out = r.stdout
    head = next((line for line in out.splitlines() if "Statistic" in line), "")
    cols = [c.strip() for c in head.strip("┃").split("┃")]
    h.check(cols == ["Statistic", "avg", "min", "max", "p99", "p90", "p75", "p50", "std"],
            "table columns: GenAI-Perf's, then AIPerf's p50 and std", cols)
    for label in ("Input token throughput (tokens/sec)", "Total token throughput (tokens/sec)", "Request count",
                  "Error request count", "Benchmark duration (sec)", "Output token throughput (tokens/sec)"):
        h.check(label in out, "table row " + label, out[:3000])
    dur = s["benchmark_duration"]["avg"]
    h.near(s["input_token_throughput"]["avg"], n * isl / dur, 0.001 * n * isl / dur, "input token throughput")
    h.near(s["total_token_throughput"]["avg"], s["input_token_throughput"]["avg"] + s["output_token_throughput"]["avg"],
           0.01, "total = input + output token throughput")
    row = next((line for line in out.splitlines() if "Time to first token (ms)" in line), "")
    cells = [c.strip() for c in row.strip("│").split("│")]
    h.check(len(cells) == 9 and cells[7] == "%.2f" % s["time_to_first_token"]["p50"],
            "the table's p50 of TTFT is the summary's", (cells, s["time_to_first_token"]["p50"]))
    count_row = next((line for line in out.splitlines() if "│ Request count" in line or " Request count │" in line), "")
    h.check(count_row.split("│")[2].strip() == str(n), "request count row", count_row)

    header, dists, values = read_gap_csv(os.path.join(r.dir, "profile_export_surge.csv"))
    h.check(header[:len(GAP_HEADER)] == GAP_HEADER, "CSV header starts as GenAI-Perf's", header)
    h.check(header[len(GAP_HEADER):] == ["std", "p99_9", "count"], "surge's columns after GenAI-Perf's", header)
    h.check([x[0] for x in dists[:len(GAP_ROWS)]] == GAP_ROWS, "CSV rows: GenAI-Perf's names in its order",
            [x[0] for x in dists])
    by_name = {x[0]: dict(zip(header, x)) for x in dists}
    ttft = by_name.get("Time To First Token (ms)", {})
    h.check(ttft.get("p50") == "%.2f" % s["time_to_first_token"]["p50"] and
            ttft.get("p25") == "%.2f" % s["time_to_first_token"]["p25"], "CSV TTFT p50/p25 are the summary's", ttft)
    h.check(values[0] == ["Metric", "Value"] and [v[0] for v in values[1:4]] == GAP_VALUES,
            "CSV values: GenAI-Perf's rows first, in its order", values)
    vals = {v[0]: v[1] for v in values[1:]}
    h.check(float(vals.get("Request Count (count)", -1)) == n and float(vals.get("Error Request Count (count)", -1)) == 0,
            "CSV counts", vals)
    h.check("Input Token Throughput (tokens/sec)" in vals and "Benchmark Duration (sec)" in vals,
            "surge's values after GenAI-Perf's", vals)


def check_inputs_json(h, r, m_records, n, osl):
    path = os.path.join(r.dir, "inputs.json")
    h.check(os.path.exists(path), "inputs.json written")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        doc = json.load(f)
    data = doc.get("data", [])
    h.check(len(data) == 100 and all(list(x) == ["payload"] and len(x["payload"]) == 1 for x in data),
            "inputs.json: GenAI-Perf's layout, one element per prompt (--num-prompts 100)", data[:1])
    bodies = [x["payload"][0] for x in data]
    h.check(all(b.get("model") == "mock-model" and b.get("stream") is True and b.get("max_tokens") == osl
                for b in bodies), "inputs.json: the bodies' fields as sent", bodies[:1])
    # closed loop at concurrency 1: the server saw request i as the i-th, and request i used prompt i
    sent = [b["messages"][0]["content"] for b in bodies[:n]]
    h.check([x["prompt"] for x in m_records[:n]] == sent, "inputs.json: exactly the prompts the server received")
    return path


def main(h):
    isl, osl, n = 40, 4, 12
    with h.mock("--ttft-ms", 2, "--itl-ms", 1, record=True) as m:
        r = profile(h, m.url, "--streaming", "--request-count", n, "--output-tokens-mean", osl,
                    "--synthetic-input-tokens-mean", isl)
        h.check("every request got HTTP 404" not in r.stderr, "no 404 hint on a run that worked", r.stderr)
        if r.summary:
            check_table_and_csv(h, r, n, isl)
        m.stop()
        inputs = check_inputs_json(h, r, m.records(), n, osl)

    # inputs.json is perf_analyzer input data: surge reads it back and sends the same bodies
    if inputs:
        with h.mock("--ttft-ms", 1, "--itl-ms", 1, record=True) as m:
            r2 = profile(h, m.url, "--streaming", "--input-file", inputs, "--request-count", 5)
            m.stop()
            with open(inputs) as f:
                first = [x["payload"][0]["messages"][0]["content"] for x in json.load(f)["data"][:5]]
            h.check([x["prompt"] for x in m.records()] == first, "replaying inputs.json sends the same prompts",
                    r2.stderr[-1000:])

    # goodput: requests with OSL 1 have no ITL: not measurable for that SLO, never a miss, and not good
    with h.mock("--ttft-ms", 2, "--itl-ms", 1) as m:
        r = profile(h, m.url, "--streaming", "--request-count", 40, "--output-tokens-mean", 2,
                    "--output-tokens-stddev", 1, "--random-seed", 7, "--goodput",
                    "inter_token_latency:500 time_to_first_token:5000")
        s = r.summary
        if s:
            one = sum(1 for x in r.records if x["output_sequence_length"] < 2)
            h.check(0 < one < 40, "the run has requests of OSL 1 and longer ones", one)
            gc = {c["metric"]: c for c in s.get("goodput_constraints", [])}
            itl = gc.get("inter_token_latency", {})
            h.check(itl.get("not_measurable") == one and itl.get("missed") == 0 and itl.get("met") == 40 - one,
                    "ITL SLO: OSL-1 requests not measurable, none missed", itl)
            ttft = gc.get("time_to_first_token", {})
            h.check(ttft.get("met") == 40 and ttft.get("not_measurable") == 0, "TTFT SLO met by all", ttft)
            h.check(s["good_request_count"]["avg"] == 40 - one, "good requests: those with an ITL",
                    s.get("good_request_count"))
            h.check(("inter_token_latency <= 500 ms: met %d, missed 0, not measurable %d" % (40 - one, one)) in r.stdout,
                    "the table says how many met, missed and could not be measured", r.stdout[-1500:])

    # an error class with a status: the status reads as one
    with h.mock("--ttft-ms", 3000, "--itl-ms", 1) as m:
        r = profile(h, m.url, "--streaming", "--request-count", 2, "--request-timeout", 0.3, check_rc=1)
        h.check("timeout (after HTTP 200 headers): 2 (" in r.stdout, "timeout after the head: says HTTP 200 headers",
                r.stdout[-800:])
        g = (r.summary or {}).get("error_summary", [{}])[0]
        h.check(g.get("class") == "timeout" and g.get("http_status") == 200 and
                g.get("label") == "timeout (after HTTP 200 headers)", "error_summary: http_status and label", g)

    # every request 404: one line with the method, the URL and how the path was made
    body = b'{"error":{"message":"Not Found","code":404}}'
    resp = b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body),
                                                                                                       body)
    with HttpServer(lambda line, headers, b: resp) as srv:
        r = profile(h, srv.url + "/api", "--request-count", 3, check_rc=1)
        want = "surge: every request got HTTP 404 Not Found from POST http://127.0.0.1:%d/api/v1/chat/completions; " \
               "the URL's base path is /api and the endpoint v1/chat/completions" % srv.port
        h.check(want in r.stderr and "drop it from -u/--url" in r.stderr, "404 hint: base path", r.stderr[-1500:])
        h.check("http 404 Not Found: 3" in r.stdout, "error line: http 404 Not Found", r.stdout[-800:])
        # the OpenAI SDK's base URL is understood (test_profile_url.py); an --endpoint that repeats its v1 is not
        r = profile(h, srv.url + "/v1", "--endpoint", "v1/chat/completions", "--request-count", 2, check_rc=1)
        h.check("the URL's base path is /v1 and --endpoint is v1/chat/completions, so v1 comes twice: drop /v1 "
                "from -u/--url, or give --endpoint chat/completions" in r.stderr, "404 hint: v1 twice",
                r.stderr[-1500:])
    with h.mock() as m:
        r = profile(h, m.url, "--endpoint", "v1/chat/complete", "--request-count", 2, check_rc=1)
        h.check(("from POST %s/v1/chat/complete; the URL has no base path and --endpoint is v1/chat/complete: "
                 "check --endpoint" % m.url) in r.stderr, "404 hint: --endpoint", r.stderr[-1500:])

    # --help says where the peers' names are: vLLM's TPOT and ITL are not surge's ITL
    helptext = h.run([h.surge, "profile", "--help"], timeout=30).stdout
    h.check("vLLM's TPOT is inter_token_latency, its ITL is inter_chunk_latency" in " ".join(helptext.split()) and
            "docs/metrics.md" in helptext, "--help maps vLLM's names", helptext[-1500:])

    # a tokenizer that is not the model's: byte-level ranks against the mock's word counts
    tok = h.path("cl100k_base.tiktoken")
    with open(tok, "w") as f:
        for b in range(256):
            f.write("%s %d\n" % (base64.b64encode(bytes([b])).decode(), b))
    text = "".join(WORDS[i % len(WORDS)] for i in range(5))
    with h.mock("--ttft-ms", 1, "--itl-ms", 1) as m:
        r = profile(h, m.url, "--streaming", "--tokenizer", tok, "--request-count", 4, "--output-tokens-mean", 5,
                    "--synthetic-input-tokens-mean", 20)
        want = ("Hint: the server's usage.completion_tokens and --tokenizer cl100k_base (tiktoken, %s) differ on every "
                "one of the 4 compared requests (usage minus tokenizer: mean %+.2f tokens); it is probably not the "
                "model's tokenizer" % (tok, 5 - len(text.encode())))
        h.check(want in r.stdout, "tokenizer hint names the tokenizer and the mean difference", r.stdout[-1500:])


harness.main(main)
