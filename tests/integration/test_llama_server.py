# ctest: run-serial (its capacity search measures llama-server, whose capacity is the CPU it gets: with four tests
# at once beside it, no rate passed)
# ctest: one-backend (the subject is the server's habits and surge's learning of them, above the event loop; how each
# backend sees a close is test_keepalive's, on both and under ASan on epoll)
"""surge against llama.cpp's llama-server, a real third-party server (cpp-httplib, HTTP/1.1) that closes its
connection after every streamed response while its Keep-Alive header promises more. With a tiny random-weight
model and ignore_eos, every response is exactly max_tokens long: streamed chat and completions at 1, 4 and 16 in
flight, and a non-streamed run, end with no error, exit 0, and every request's OSL from the server's usage equal
to what was asked. surge learns that the server closes after streamed responses: a few requests are re-sent at
the start, then connections are not reused after streamed responses (no more wasted attempts); whole answers keep
their connections. Needs tests/data/fetch-llama-server (a skip without it, a failure under CI)."""
import json
import os

import harness
from profiling import profile
from servers import LlamaServer

OSL = 16
N = 80
LIMIT = 3  # SG_SILENT_CLOSE_LIMIT (engine/sg_worker.h)


def check_run(h, r, what, streaming, conc):
    if not r.summary:
        h.check(False, "%s: a summary was written" % what, r.stderr[-2000:])
        return
    h.check(r.summary["error_request_count"]["avg"] == 0, "%s: no errors" % what, r.summary.get("error_summary"))
    h.check(r.summary["request_count"]["avg"] == N, "%s: %d requests measured" % (what, N))
    resent = r.summary.get("resent_request_count", {}).get("avg", -1)
    workers = len({x["worker"] for x in r.records}) or 1
    ka = r.summary.get("keep_alive", {})
    if streaming:
        # it closes after every streamed answer: a few re-sends until each worker has learnt it, then none
        h.check(0 <= resent <= conc + workers * (LIMIT - 1), "%s: a few re-sends (%d), not one per request"
                % (what, resent))
        h.check(ka.get("reused_after_streamed") is False and "right after streamed responses" in r.stderr,
                "%s: connections not reused after streamed answers" % what, ka)
    else:
        h.check(resent == 0 and ka.get("reused_after_whole") is True, "%s: whole answers keep their connections"
                % what, (resent, ka))
    h.check(len(r.records) == N, "%s: %d records" % (what, N), len(r.records))
    bad = [x for x in r.records
           if x["status"] != "ok" or x["osl_source"] != "usage" or x["output_sequence_length"] != OSL
           or x["output_sequence_length_server"] != OSL]
    h.check(not bad, "%s: every request's OSL is %d, from usage" % (what, OSL), bad[:2])
    # llama-server counts the prompt it tokenized (BOS, and a chat template) in usage.prompt_tokens
    short = [x for x in r.records if not x.get("input_sequence_length_server")
             or x["input_sequence_length_server"] <= x["input_sequence_length"]]
    h.check(not short, "%s: the server's prompt_tokens kept, above the client's count" % what, short[:2])
    if streaming:
        # the first chunk carries only the role ("content": null): the first token is the first content event
        # (token_times_ms is rounded to the microsecond)
        h.check(all(x["content_events"] >= 1 and abs(x["time_to_first_token_ms"] - x["token_times_ms"][0]) < 0.002
                    for x in r.records), "%s: TTFT is the first content event" % what)
        h.check(r.summary["time_to_first_token"]["count"] == N, "%s: TTFT for every request" % what)


def main(h):
    try:
        server = LlamaServer(h, parallel=16)
    except RuntimeError:  # under CI, without the test data: testdata_file has failed a check
        return
    with server as s:
        common = ("--output-tokens-mean", OSL, "--extra-inputs", "ignore_eos:true", "--synthetic-input-tokens-mean",
                  32, "--request-count", N, "--model", "tiny-llama")
        for endpoint in ("chat", "completions"):
            for conc in (1, 4, 16):
                what = "llama-server %s, streamed, concurrency %d" % (endpoint, conc)
                r = profile(h, s.url, "--endpoint-type", endpoint, "--streaming", "--concurrency", conc, *common,
                            timeout=180)
                check_run(h, r, what, True, conc)
        r = profile(h, s.url, "--endpoint-type", "chat", "--concurrency", 4, *common, timeout=180)
        check_run(h, r, "llama-server chat, not streamed, concurrency 4", False, 4)
        check_search(h, s)
        h.check(s.proc.poll() is None, "llama-server still running", s.log()[-2000:])


def check_search(h, s):
    """A short capacity search against a real server: it brackets, bisects and answers, its passing probes had no
    errors, and each probe left its files. The answer depends on the machine, so only its shape is checked."""
    r = profile(h, s.url, "--streaming", "--output-tokens-mean", OSL, "--extra-inputs", "ignore_eos:true",
                "--synthetic-input-tokens-mean", 32, "--model", "tiny-llama", "--search", "max-request-rate",
                "--slo", "ttft:p90<100", "--slo", "error_rate<0.05", "--search-range", "20:", "--search-precision",
                0.25, "--benchmark-duration", 2, "--parameter-sweep-cooldown-seconds", 0.3, timeout=240)
    path = os.path.join(r.dir, "search.json")
    if not h.check(os.path.exists(path), "llama-server search: search.json", r.stderr[-2000:]):
        return
    with open(path) as f:
        doc = json.load(f)
    sr, probes = doc["search"], doc["probes"]
    print("llama-server search: highest passing %s req/s, lowest failing %s, %d probes"
          % (sr["highest_passing"], sr["lowest_failing"], len(probes)))
    h.check(sr["complete"] and sr["highest_passing"] is not None and sr["lowest_failing"] is not None,
            "llama-server search: an answer between a passing and a failing rate", sr)
    h.check([p["request_rate"] for p in probes[:2]] == [20, 40], "llama-server search: doubles from LO", probes)
    passing = [p for p in probes if p["slo_pass"]]
    h.check(passing and all(p["error_count"] == 0 for p in passing), "llama-server search: passing probes had no "
            "errors", passing)
    h.check(all(os.path.exists(os.path.join(r.dir, p["artifact_subdir"], "profile_export_surge.jsonl")) for p in probes),
            "llama-server search: each probe's records")
    h.check("Capacity: request rate" in r.stdout, "llama-server search: the answer line", r.stdout[-1500:])


if __name__ == "__main__":
    harness.main(main)
