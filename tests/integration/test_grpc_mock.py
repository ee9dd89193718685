# ctest: epoll-asan (run on epoll under ASan too: tests/CMakeLists.txt)
"""surge profile --service-kind triton against surge mock's KServe v2 gRPC service (h2c): ModelStreamInfer timing
(TTFT, ITL) within the tolerances of the HTTP/1.1 and h2c tests, exact OSL, ModelInfer, both backends' input
tensors as the mock recorded them (GenAI-Perf's, --extra-inputs typed), grpc-status errors classed grpc with
their message, resets classed stream_reset, and a server that is not gRPC (nghttpd) a clear error and a
non-zero exit."""
import json
import os
import shutil
import subprocess

import harness
from profiling import late, profile, tol
from servers import free_port, wait_listening


def by_class(r):
    return r.errors_by_class()





def main(h):
    ttft, itl, osl, n = 40, 8, 24, 120
    # 1. streamed (decoupled ModelStreamInfer), tensorrtllm: timing and exact OSL; the tensors as GenAI-Perf's
    with h.mock("--ttft-ms", ttft, "--itl-ms", itl, record=True) as m:
        r = profile(h, "127.0.0.1:%d" % m.port, "--service-kind", "triton", "--streaming", "--concurrency", 16,
                    "--workers", 1, "--request-count", n, "--output-tokens-mean", osl,
                    "--synthetic-input-tokens-mean", 100, "--extra-inputs", "temperature:0.5", "--extra-inputs",
                    "top_k:4", "--extra-inputs", "beam_width:1", "--extra-inputs", "end_id:50256",
                    "--extra-inputs", "bad_words:\"\"", "--extra-inputs", "random_seed:5000000000", model="gpt2")
        m.stop()
        s = r.summary
        h.check(s is not None, "streamed: summary written")
        if s:
            h.check(s["request_count"]["avg"] == n and s["error_request_count"]["avg"] == 0, "streamed: all ok",
                    s.get("error_summary"))
            # the mock answers late when it waits for a CPU, never early: a tight lower bound, room above. The
            # flakiness pass (10 runs, release) had p50 at 40.4-41.3 ms and p90 at 41-46 ms; the old +-2 and +-12 ms
            # left under twice that spread
            h.within(s["time_to_first_token"]["p50"], ttft - 1, ttft + late(6.0), "TTFT p50 (ms) over gRPC")
            # the 16 streams run in lockstep waves: one wave delayed by a busy (shared) machine is 13% of samples
            h.within(s["time_to_first_token"]["p90"], ttft - 1, ttft + late(24.0), "TTFT p90 (ms) over gRPC")
            h.near(s["inter_token_latency"]["p50"], itl, tol(0.5), "ITL p50 (ms) over gRPC")
            h.check(s["output_sequence_length"]["min"] == osl and s["output_sequence_length"]["max"] == osl,
                    "OSL exactly %d (one token per stream response)" % osl, s["output_sequence_length"])
            h.check(s["input_config"]["service_kind"] == "triton" and s["input_config"]["backend"] == "tensorrtllm",
                    "input_config says triton/tensorrtllm", s["input_config"])
        h.check("ModelStreamInfer" in r.stderr and "backend tensorrtllm" in r.stderr, "start line names the RPC",
                r.stderr[:400])
        recs = m.records()
        h.check(len(recs) == n, "mock recorded every call", len(recs))
        if recs:
            x = recs[0]
            ins = x["inputs"]
            h.check(x["path"] == "/inference.GRPCInferenceService/ModelStreamInfer" and x["model"] == "gpt2",
                    "ModelStreamInfer for model gpt2", x["path"])
            want = {"text_input": ("BYTES", [1, 1]), "max_tokens": ("INT32", [1, 1]), "stream": ("BOOL", [1, 1]),
                    "temperature": ("FP32", [1, 1]), "top_k": ("INT32", [1, 1]), "beam_width": ("INT32", [1, 1]),
                    "end_id": ("INT32", [1, 1]), "bad_words": ("BYTES", [1, 1]),
                    "random_seed": ("INT64", [1, 1])}
            for name, (dt, shape) in want.items():
                t = ins.get(name)
                h.check(t is not None and t["datatype"] == dt and t["shape"] == shape,
                        "tensorrtllm input %s %s %s" % (name, dt, shape), t)
            h.check(ins["max_tokens"]["value"] == osl and ins["stream"]["value"] is True, "max_tokens and stream",
                    ins)
            h.check(abs(ins["temperature"]["value"] - 0.5) < 1e-6 and ins["top_k"]["value"] == 4 and
                    ins["random_seed"]["value"] == 5000000000 and ins["bad_words"]["value"] == "",
                    "extra inputs' values", ins)
            h.check(x["prompt_words"] == 100 and ins["text_input"]["value"] == x["prompt"], "the prompt in text_input",
                    x["prompt_words"])
            h.check(set(ins) == set(want), "no other inputs", sorted(ins))

    # 2. ModelInfer (unary) with vllm: one response, latency = TTFT + (n-1) ITL; vLLM's tensors
    with h.mock("--ttft-ms", 20, "--itl-ms", 2, record=True) as m:
        r = profile(h, "http://127.0.0.1:%d" % m.port, "--service-kind", "triton", "--backend", "vllm",
                    "--concurrency", 8, "--workers", 1, "--request-count", 40, "--output-tokens-mean", 10,
                    "--output-tokens-mean-deterministic", model="llama")
        m.stop()
        s = r.summary
        if h.check(s is not None, "unary: summary written"):
            h.check(s["request_count"]["avg"] == 40 and s["error_request_count"]["avg"] == 0, "unary: all ok",
                    s.get("error_summary"))
            # the mock's 38 ms is the lower bound; above it, room for a busy host (39.1 to 39.9 ms with four tests at
            # once, 42.0 under ASan with three: tests/flaky)
            h.within(s["request_latency"]["p50"], 20 + 9 * 2 - 1, 20 + 9 * 2 + late(6.0), "ModelInfer latency p50 (ms)")
            h.check("time_to_first_token" not in s or s["time_to_first_token"].get("avg") in (None, 0),
                    "no TTFT without streaming", s.get("time_to_first_token"))
        recs = m.records()
        if h.check(len(recs) == 40, "mock recorded 40 ModelInfer calls", len(recs)):
            ins = recs[0]["inputs"]
            h.check(recs[0]["path"].endswith("/ModelInfer") and not recs[0]["stream"], "unary path", recs[0]["path"])
            h.check(set(ins) == {"text_input", "exclude_input_in_output", "sampling_parameters"},
                    "vllm inputs: text_input, exclude_input_in_output, sampling_parameters (no stream)", sorted(ins))
            h.check(ins["text_input"]["shape"] == [1] and ins["exclude_input_in_output"]["value"] is True,
                    "vllm shape [1], exclude_input_in_output true", ins)
            sp = json.loads(ins["sampling_parameters"]["value"])
            h.check(sp == {"max_tokens": "10", "min_tokens": "10"}, "sampling_parameters as GenAI-Perf writes it", sp)

    # 2b. --tokenizer: OSL counted on the text_output text (each mock word is one cl100k token), both RPCs
    tok = harness.tokenizer_file(h, "cl100k_base")
    if tok:
        with h.mock("--ttft-ms", 2, "--itl-ms", 1) as m:
            for args in ((), ("--streaming",)):
                r = profile(h, "127.0.0.1:%d" % m.port, "--service-kind", "triton", "--tokenizer", tok,
                            "--concurrency", 4, "--workers", 1, "--request-count", 20, "--output-tokens-mean", 17,
                            *args)
                s = r.summary
                what = "tokenizer, %s" % ("ModelStreamInfer" if args else "ModelInfer")
                if h.check(s is not None, what + ": summary"):
                    h.check(s["output_sequence_length"]["min"] == 17 and s["output_sequence_length"]["max"] == 17,
                            what + ": OSL 17 by the tokenizer", s["output_sequence_length"])
                    h.check("tokenizer 20" in r.stdout, what + ": source tokenizer for all 20", r.stdout[-300:])

    # 3. --tokenizer-free OSL of vllm streaming, --error-rate as grpc-status INTERNAL, classed grpc
    with h.mock("--ttft-ms", 2, "--itl-ms", 1, "--error-rate", 0.25) as m:
        r = profile(h, "127.0.0.1:%d" % m.port, "--service-kind", "triton", "--backend", "vllm", "--streaming",
                    "--concurrency", 32, "--workers", 1, "--request-count", 300, "--output-tokens-mean", 6,
                    check_rc=None)
        s = r.summary
        if h.check(s is not None, "errors: summary written"):
            errs = s["error_request_count"]["avg"]
            h.check(40 <= errs <= 120, "about 25%% of 300 calls ended with a grpc-status error", errs)
            h.check(by_class(r).get("grpc") == errs, "all classed grpc", s.get("error_summary"))
            msgs = [g.get("sample", g.get("message", "")) for g in s.get("error_summary", [])]
            h.check(any("grpc-status 13 INTERNAL" in str(g) and "injected" in str(g) for g in
                        s.get("error_summary", [])), "the message names the status and grpc-message",
                    s.get("error_summary"))
            h.check(s["output_sequence_length"]["p50"] == 6, "the rest: OSL 6", msgs)
        h.check(r.rc != 0, "errors above --max-error-rate: non-zero exit", r.rc)

    # 4. --drop-rate resets streams: stream_reset
    with h.mock("--ttft-ms", 2, "--itl-ms", 1, "--drop-rate", 0.2) as m:
        r = profile(h, "127.0.0.1:%d" % m.port, "--service-kind", "triton", "--streaming", "--concurrency", 16,
                    "--workers", 1, "--request-count", 200, "--output-tokens-mean", 8, "--max-error-rate", 0.9)
        s = r.summary
        if s:
            errs = s["error_request_count"]["avg"]
            h.check(15 <= errs <= 70, "about 20%% of 200 streams reset", errs)
            h.check(by_class(r).get("stream_reset") == errs, "resets classed stream_reset", s.get("error_summary"))

    # 5. a server that is not gRPC: nghttpd (HTTP/2, h2c) answers 404 text/html
    nghttpd = shutil.which("nghttpd") or (os.path.exists("/usr/sbin/nghttpd") and "/usr/sbin/nghttpd")
    if not nghttpd:
        h.check(not os.environ.get("CI"), "nghttpd installed (nghttp2-server, SURGE_TEST_PKGS)")
        return
    root = h.path("www")
    os.makedirs(root, exist_ok=True)
    port = free_port()
    srv = subprocess.Popen([nghttpd, "--no-tls", "-d", root, "-a", "127.0.0.1", str(port)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(srv, [port])
        r = profile(h, "127.0.0.1:%d" % port, "--service-kind", "triton", "--request-count", 5, check_rc=None)
        h.check(r.rc != 0, "not a gRPC server: non-zero exit", r.rc)
        cls = by_class(r)
        h.check(cls.get("protocol") == 5, "every call a protocol error", r.summary and r.summary.get("error_summary"))
        h.check("HTTP status 404" in json.dumps(r.summary or {}) and "not a gRPC server" in r.stdout,
                "the error table says HTTP 404, not a gRPC server", (r.stdout[-1500:], r.summary))
        h.check("is not a gRPC server" in r.stderr, "and one line on stderr says so", r.stderr[-800:])
    finally:
        srv.kill()
        srv.wait(timeout=10)


harness.main(main)
