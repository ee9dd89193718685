"""Request bodies sent as written (--input-format raw_payload) and responses measured by what they are: bodies with
"stream": true sent without --streaming used to be parsed as streams but reported as OSL 1 with no TTFT and the
wrong token throughput, exit 0; their JSONL "model" was -m's, not the body's. Now a text/event-stream answer gets
its stream metrics whatever the flags said, a whole answer is a whole answer, the records name each body's own
model, a note says when the bodies and --streaming differ, and an SLO no response can measure is refused."""
import json
import os

import harness
from profiling import HttpServer, profile


def body(i, model, stream, usage=True, max_tokens=8):
    b = {"model": model, "messages": [{"role": "user", "content": "prompt number %d" % i}], "max_tokens": max_tokens}
    if stream:
        b["stream"] = True
        if usage:
            b["stream_options"] = {"include_usage": True}
    return b


def write(h, name, bodies):
    path = h.path(name)
    with open(path, "w") as f:
        for b in bodies:
            f.write(json.dumps(b) + "\n")
    return path


def main(h):
    with h.mock("--ttft-ms", 20, "--itl-ms", 2, record=True) as m:
        # streamed bodies, two models, no --streaming: measured as streams, each under its own model
        path = write(h, "stream.jsonl", [body(i, "alpha" if i % 2 else "beta", True) for i in range(4)])
        r = profile(h, m.url, "--input-file", path, "--request-count", 8)
        s = r.summary
        h.check('4 of 4 request bodies ask for "stream": true' in r.stderr, "a note says the bodies stream",
                r.stderr[:800])
        h.check("(streaming," in r.stderr, "the start line says streaming", r.stderr[:800])
        h.check("time_to_first_token" in s and s["time_to_first_token"]["count"] == 8, "TTFT of all 8",
                s.get("time_to_first_token"))
        h.near(s["time_to_first_token"]["p50"], 20, 5, "TTFT p50 (ms) is the mock's 20")
        h.check(s["output_sequence_length"]["avg"] == 8 and s["osl_source"]["usage"] == 8, "OSL 8 from usage",
                (s["output_sequence_length"], s["osl_source"]))
        h.near(s["inter_token_latency"]["p50"], 2, 0.5, "ITL p50 (ms) is the mock's 2")
        dur = s["benchmark_duration"]["avg"]
        h.near(s["output_token_throughput"]["avg"], 64 / dur, 0.01 * 64 / dur, "output token throughput: 64 tokens")
        h.check(sorted(x["model"] for x in r.records) == ["alpha"] * 4 + ["beta"] * 4,
                "the JSONL names each body's own model, not -m's", [x["model"] for x in r.records])
        h.check(all(x["streaming"] for x in r.records), "every record says streaming")
        h.check("Time to first token" in r.stdout, "the table shows TTFT", r.stdout[:1500])
        with open(os.path.join(r.dir, "profile_export_surge.csv")) as f:
            h.check("Time To First Token (ms)" in f.read(), "the CSV has the TTFT row")

        # without usage the events are counted, one per token: still 8, not 1
        path = write(h, "nousage.jsonl", [body(i, "alpha", True, usage=False, max_tokens=6) for i in range(3)])
        r = profile(h, m.url, "--input-file", path, "--request-count", 3)
        h.check(r.summary["output_sequence_length"]["avg"] == 6 and r.summary["osl_source"]["events"] == 3,
                "no usage: OSL 6 from the stream's events", (r.summary["output_sequence_length"],
                                                            r.summary["osl_source"]))

        # a mixed file: each request measured by what it is; TTFT covers the streamed ones, and says how many
        path = write(h, "mixed.jsonl", [body(i, "alpha", i % 2 == 0) for i in range(4)])
        r = profile(h, m.url, "--input-file", path, "--request-count", 8)
        h.check("2 of 4 bodies streaming" in r.stderr, "the start line says how many bodies stream", r.stderr[:800])
        h.check(r.summary["time_to_first_token"]["count"] == 4 and r.summary["request_count"]["avg"] == 8,
                "mixed: TTFT of the 4 streamed of 8", r.summary.get("time_to_first_token"))
        h.check(r.summary["output_sequence_length"]["min"] == 8, "mixed: OSL 8 for every request",
                r.summary["output_sequence_length"])
        h.check(sorted(x["streaming"] for x in r.records) == [False] * 4 + [True] * 4, "mixed: records say which")

        # --streaming does not rewrite raw bodies: a note, and whole answers measured as such
        path = write(h, "whole.jsonl", [body(i, "alpha", False) for i in range(2)])
        r = profile(h, m.url, "--input-file", path, "--request-count", 2, "--streaming")
        h.check("--streaming does not change request bodies" in r.stderr, "a note for --streaming with whole bodies",
                r.stderr[:800])
        h.check("time_to_first_token" not in r.summary and r.summary["output_sequence_length"]["avg"] == 8,
                "whole answers: no TTFT, OSL from usage", r.summary.get("output_sequence_length"))

        # goodput: refused when no body streams, taken when they do
        r = profile(h, m.url, "--input-file", path, "--request-count", 2, "--goodput", "ttft:500", check_rc=2)
        h.check("time_to_first_token cannot be measured without streamed responses" in r.stderr,
                "a TTFT SLO over whole answers is refused", r.stderr)
        path = write(h, "stream2.jsonl", [body(i, "alpha", True) for i in range(2)])
        r = profile(h, m.url, "--input-file", path, "--request-count", 2, "--goodput", "ttft:500")
        h.check(r.summary["good_request_count"]["avg"] == 2, "a TTFT SLO over streamed bodies is measured",
                r.summary.get("good_request_count"))

    # a server that answers a request for a whole answer with a stream: measured as the stream it is
    sse = b"".join(b'data: {"choices":[{"index":0,"delta":{"content":"w%d "}}]}\n\n' % i for i in range(5))
    sse += b'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":5}}\n\ndata: [DONE]\n\n'
    resp = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s" % (len(sse), sse)
    with HttpServer(lambda line, headers, b: resp) as srv:
        r = profile(h, srv.url, "--request-count", 3)
        h.check(r.summary["output_sequence_length"]["avg"] == 5 and "time_to_first_token" in r.summary,
                "an unasked-for stream: OSL 5 and a TTFT", (r.summary.get("output_sequence_length"),
                                                            r.summary.get("time_to_first_token")))
        h.check(all(x["streaming"] for x in r.records), "its records say streaming")

    # SLOs that need a stream, or two tokens, refused before anything is sent
    for args, want in ((["--goodput", "time_to_first_token:200"], "time_to_first_token cannot be measured"),
                       (["--goodput", "tpot:20", "--streaming", "--osl", "1"], "inter_token_latency needs answers"),
                       (["--goodput", "output_token_throughput_per_user:5", "--streaming", "--osl", "1"],
                        "output_token_throughput_per_user needs answers")):
        rc = h.run([h.surge, "profile", "-m", "x", "-u", "127.0.0.1:9", "--artifact-dir", h.path("no")] + args,
                   timeout=30)
        h.check(rc.returncode == 2 and want in rc.stderr and "cannot connect" not in rc.stderr,
                "refused before connecting: %s" % " ".join(args), rc.stderr)


harness.main(main)
