# ctest: one-backend (encoders and decoders, no event loop)
# ctest: no-tsan (sg_kserve_tool: encoders and decoders on one thread)
"""surge's KServe v2 messages against Google's protobuf runtime (Debian's python3-protobuf).

proto/kserve.proto is compiled with protoc --python_out at test time. Then:
  - requests surge encodes (sg_kserve_tool request) are byte-for-byte the ModelInferRequest that Python builds
    from GenAI-Perf's converter rules for each backend, and parse back to the same tensors;
  - responses Python builds (raw and typed BYTES tensors, several outputs and elements, Triton's
    triton_final_response parameter, stream error messages) decode in surge (sg_kserve_tool decode) to the
    right text, flag and error;
  - responses surge encodes parse in Python to what was asked.
Needs protoc and google.protobuf: under CI their absence fails the test, elsewhere it skips.
"""

import json
import os
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402

SYSTEM_PYTHON = "/usr/bin/python3"


def has_protobuf(python):
    try:
        return subprocess.run([python, "-c", "import google.protobuf"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


# The interpreter running the tests may lack google.protobuf (a pyenv Python); Debian's has it with
# python3-protobuf. Re-run this file there when so.
try:
    import google.protobuf  # noqa: F401

    HAVE_PROTOBUF = True
except ImportError:
    HAVE_PROTOBUF = False
    if os.path.realpath(sys.executable) != os.path.realpath(SYSTEM_PYTHON) and os.access(SYSTEM_PYTHON, os.X_OK) \
            and has_protobuf(SYSTEM_PYTHON):
        os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON] + sys.argv)


def missing(h, what):
    if os.environ.get("CI"):
        h.check(False, "%s present (Debian: protobuf-compiler python3-protobuf)" % what)
        raise harness.Skip("cannot go on without %s" % what)
    h.skip("%s missing (Debian: protobuf-compiler python3-protobuf)" % what)


def frame(msg):
    return b"\0" + struct.pack(">I", len(msg)) + msg


def unframe(h, data, what):
    h.check(len(data) >= 5 and data[0] == 0, "%s: a plain gRPC frame" % what, data[:16])
    n = struct.unpack(">I", data[1:5])[0]
    h.check(n == len(data) - 5, "%s: the prefix gives the message length" % what, (n, len(data)))
    return data[5:]


# ---------- requests: GenAI-Perf's converters, restated ----------

def genai_perf_inputs(backend, prompt, max_tokens, stream, deterministic, extras):
    """The (name, datatype, raw bytes) of each input, in order, as GenAI-Perf's tensorrtllm / vllm converters
    and perf_analyzer's raw encoding give them (max_tokens -1: no output length asked for)."""
    inputs = {}
    if backend == "tensorrtllm":
        inputs["text_input"] = ("BYTES", prompt)
        inputs["max_tokens"] = ("INT32", 256)
        if stream:
            inputs["stream"] = ("BOOL", True)
        if max_tokens != -1:
            if deterministic:
                inputs["min_length"] = ("INT32", max_tokens)
            inputs["max_tokens"] = ("INT32", max_tokens)
    else:
        inputs["text_input"] = ("BYTES", prompt)
        inputs["exclude_input_in_output"] = ("BOOL", True)
        if stream:
            inputs["stream"] = ("BOOL", True)
        if max_tokens != -1:
            params = {"max_tokens": "%d" % max_tokens}
            if deterministic:
                params["min_tokens"] = "%d" % max_tokens
            inputs["sampling_parameters"] = ("BYTES", json.dumps(params).encode())
    for name, dtype, value in extras:
        inputs[name] = (dtype, value)
    out = []
    for name, (dtype, value) in inputs.items():
        if dtype == "BYTES":
            raw = struct.pack("<I", len(value)) + value
        elif dtype == "BOOL":
            raw = b"\1" if value else b"\0"
        elif dtype == "INT32":
            raw = struct.pack("<i", value)
        elif dtype == "INT64":
            raw = struct.pack("<q", value)
        else:
            raw = struct.pack("<f", value)
        out.append((name, dtype, raw))
    return out


def tool_extra(name, dtype, value):
    if dtype == "BOOL":
        return "%s:bool:%s" % (name, "true" if value else "false")
    if dtype == "BYTES":
        return "%s:bytes:%s" % (name, value.decode())
    return "%s:%s:%s" % (name, dtype.lower(), value)


def check_requests(h, pb, tool):
    extras_sets = [
        [],
        [("temperature", "FP32", 0.25), ("end_id", "INT32", 2), ("random_seed", "INT64", -7),
         ("stop", "BYTES", b"###"), ("max_tokens", "INT32", 9), ("ignore_eos", "BOOL", True)],
    ]
    prompts = [b"Hello, world", b"", "caf\u00e9 \u2713\nline two \"quoted\"".encode(), bytes(range(256)) * 40]
    n = 0
    for backend in ("tensorrtllm", "vllm"):
        for max_tokens in (-1, 1, 300, 2 ** 31 - 1):
            for stream in (False, True):
                for deterministic in (False, True):
                    for rank in (0, 1, 2):
                        for extras in extras_sets:
                            prompt = prompts[n % len(prompts)]
                            n += 1
                            flags = ("s" if stream else "") + ("d" if deterministic else "") + \
                                (str(rank) if rank else "") or "-"
                            cmd = [tool, "request", backend, "model-%d" % n, str(max_tokens), flags] + \
                                [tool_extra(*e) for e in extras]
                            what = "%s max_tokens=%d flags=%s extras=%d" % (backend, max_tokens, flags, len(extras))
                            p = subprocess.run(cmd, input=prompt, capture_output=True, timeout=30)
                            if not h.check(p.returncode == 0, "%s: encodes" % what, p.stderr):
                                continue
                            ours = unframe(h, p.stdout, what)

                            want = pb.ModelInferRequest()
                            want.model_name = "model-%d" % n
                            shape = [1] if (rank or (1 if backend == "vllm" else 2)) == 1 else [1, 1]
                            for name, dtype, raw in genai_perf_inputs(backend, prompt, max_tokens, stream,
                                                                      deterministic, extras):
                                t = want.inputs.add()
                                t.name = name
                                t.datatype = dtype
                                t.shape.extend(shape)
                                want.raw_input_contents.append(raw)
                            h.check(ours == want.SerializeToString(deterministic=True),
                                    "%s: the same bytes as Python's ModelInferRequest" % what,
                                    (ours[:200], want.SerializeToString()[:200]))

                            got = pb.ModelInferRequest.FromString(ours)
                            h.check(got.model_name == want.model_name and got.model_version == "" and got.id == "",
                                    "%s: model name, no version or id" % what)
                            h.check([(t.name, t.datatype, list(t.shape)) for t in got.inputs] ==
                                    [(t.name, t.datatype, list(t.shape)) for t in want.inputs],
                                    "%s: input names, datatypes and shapes" % what,
                                    [(t.name, t.datatype, list(t.shape)) for t in got.inputs])
                            text = got.raw_input_contents[0]
                            h.check(struct.unpack("<I", text[:4])[0] == len(prompt) and text[4:] == prompt,
                                    "%s: text_input holds the prompt" % what)
    # Refusals reach the tool's caller as a message and exit status 1.
    p = subprocess.run([tool, "request", "vllm", "m", "5", "-", "a:bool:true", "a:bool:false"], input=b"x",
                       capture_output=True, timeout=30)
    h.check(p.returncode == 1 and b"extra input a given twice" in p.stderr, "a duplicate extra is refused", p.stderr)


# ---------- responses built by Python, decoded by surge ----------

def decode(h, tool, kind, data, what):
    p = subprocess.run([tool, "decode", kind], input=data, capture_output=True, timeout=30)
    h.check(p.returncode == 0, "%s: surge decodes the frames" % what, p.stderr)
    lines = []
    for line in p.stdout.decode().splitlines():
        f = line.split(" ", 1)
        if f[0] == "err":
            lines.append(("err", f[1]))
            continue
        text, final, has_text, has_resp, err = f[1].split(" ")
        lines.append(("ok", b"" if text == "-" else bytes.fromhex(text), int(final), has_text == "1",
                      has_resp == "1", b"" if err == "-" else bytes.fromhex(err)))
    return lines


def infer_response(pb, text_elems, typed, final, outputs_before=0):
    r = pb.ModelInferResponse()
    r.model_name = "ensemble"
    r.id = "7"
    for i in range(outputs_before):
        o = r.outputs.add()
        o.name = "cum_log_probs_%d" % i
        o.datatype = "FP32"
        o.shape.append(1)
        if not typed:
            r.raw_output_contents.append(struct.pack("<f", -1.5))
        else:
            o.contents.fp32_contents.append(-1.5)
    if text_elems is not None:
        o = r.outputs.add()
        o.name = "text_output"
        o.datatype = "BYTES"
        o.shape.append(len(text_elems))
        if typed:
            o.contents.bytes_contents.extend(text_elems)
        else:
            r.raw_output_contents.append(b"".join(struct.pack("<I", len(e)) + e for e in text_elems))
    if final is not None:
        r.parameters["triton_final_response"].bool_param = final
    r.parameters["other"].int64_param = 3
    return r


def check_responses_in(h, pb, tool):
    cases = [
        ([b" token"], False, None),
        ([b" token"], True, None),
        ([b""], False, True),
        ([b"ab", b"", b"\xff\x00cd"], False, False),
        ([b"ab", b"", b"\xff\x00cd"], True, True),
        (None, False, True),  # Triton's empty final response
        ([("x" * 70000).encode()], False, None),
    ]
    for elems, typed, final in cases:
        for before in (0, 2):
            what = "response elems=%s typed=%s final=%s before=%d" % (
                None if elems is None else len(elems), typed, final, before)
            r = infer_response(pb, elems, typed, final, before)
            want = ("ok", b"".join(elems or []), -1 if final is None else int(final), elems is not None, True, b"")
            got = decode(h, tool, "unary", frame(r.SerializeToString()), what)
            h.check(got == [want], "%s: unary decode" % what, (got, want))
            s = pb.ModelStreamInferResponse()
            s.infer_response.CopyFrom(r)
            # Two messages in one read: each comes out on its own.
            got = decode(h, tool, "stream", frame(s.SerializeToString()) * 2, what)
            h.check(got == [want, want], "%s: stream decode" % what, (got, want))

    s = pb.ModelStreamInferResponse()
    s.error_message = "in ensemble 'ensemble', Encountered error for requestId 12: out of memory \u2013 retry"
    got = decode(h, tool, "stream", frame(s.SerializeToString()), "stream error")
    h.check(got == [("ok", b"", -1, False, False, s.error_message.encode())], "a stream error message decodes", got)
    s.infer_response.CopyFrom(infer_response(pb, [b"partial"], False, True))
    got = decode(h, tool, "stream", frame(s.SerializeToString()), "stream error with a response")
    h.check(got == [("ok", b"partial", 1, True, True, s.error_message.encode())],
            "an error next to a response: both come out", got)

    r = pb.ModelInferResponse()
    o = r.outputs.add()
    o.name = "text_output"
    o.datatype = "INT32"
    got = decode(h, tool, "unary", frame(r.SerializeToString()), "wrong datatype")
    h.check(got == [("err", "text_output has datatype INT32, not BYTES")], "a non-BYTES text_output is refused", got)


# ---------- responses encoded by surge, parsed by Python ----------

def check_responses_out(h, pb, tool):
    for stream in (False, True):
        for typed in (False, True):
            for final in (-1, 0, 1):
                for text in (b"", b" hello", "\u00e9\u2713".encode() * 1000):
                    flags = "x" + ("s" if stream else "") + ("t" if typed else "")
                    what = "surge response %s final=%d len=%d" % (flags, final, len(text))
                    p = subprocess.run([tool, "response", "ensemble", str(final), flags], input=text,
                                       capture_output=True, timeout=30)
                    if not h.check(p.returncode == 0, "%s: encodes" % what, p.stderr):
                        continue
                    msg = unframe(h, p.stdout, what)
                    if stream:
                        s = pb.ModelStreamInferResponse.FromString(msg)
                        h.check(s.error_message == "" and s.HasField("infer_response"), "%s: stream wrapper" % what)
                        r = s.infer_response
                    else:
                        r = pb.ModelInferResponse.FromString(msg)
                    h.check(r.model_name == "ensemble" and len(r.outputs) == 1 and r.outputs[0].name == "text_output"
                            and r.outputs[0].datatype == "BYTES" and list(r.outputs[0].shape) == [1],
                            "%s: one text_output BYTES [1]" % what, r)
                    if typed:
                        got = list(r.outputs[0].contents.bytes_contents)
                        h.check(got == [text] and len(r.raw_output_contents) == 0, "%s: bytes_contents" % what)
                    else:
                        raw = list(r.raw_output_contents)
                        h.check(raw == [struct.pack("<I", len(text)) + text], "%s: raw_output_contents" % what)
                    if final < 0:
                        h.check("triton_final_response" not in r.parameters, "%s: no final flag" % what)
                    else:
                        p_ = r.parameters["triton_final_response"]
                        h.check(p_.WhichOneof("parameter_choice") == "bool_param" and p_.bool_param == bool(final),
                                "%s: triton_final_response" % what, p_)
    p = subprocess.run([tool, "response", "", "-1", "s", "model gone"], input=b"", capture_output=True, timeout=30)
    s = pb.ModelStreamInferResponse.FromString(unframe(h, p.stdout, "error"))
    h.check(s.error_message == "model gone" and not s.HasField("infer_response"),
            "a surge stream error parses in Python", s)


def main(h):
    tool = os.environ.get("SURGE_KSERVE_TOOL") or os.path.join(os.path.dirname(h.surge), "tests", "sg_kserve_tool")
    proto_dir = os.environ.get("SURGE_PROTO_DIR") or os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                  "..", "..", "proto")
    if not os.access(tool, os.X_OK):
        h.check(False, "sg_kserve_tool built", tool)
        return
    protoc = shutil.which("protoc")
    if not protoc:
        missing(h, "protoc")
    if not HAVE_PROTOBUF:
        missing(h, "python3 google.protobuf")
    out = h.path("pb")
    os.makedirs(out)
    p = subprocess.run([protoc, "-I", proto_dir, "--python_out", out, os.path.join(proto_dir, "kserve.proto")],
                       capture_output=True, text=True, timeout=60)
    if not h.check(p.returncode == 0, "protoc --python_out kserve.proto", p.stderr):
        return
    sys.path.insert(0, out)
    import kserve_pb2 as pb

    check_requests(h, pb, tool)
    check_responses_in(h, pb, tool)
    check_responses_out(h, pb, tool)
    print("kserve proto: %d checks against google.protobuf %s" % (h.checks, google.protobuf.__version__))


if __name__ == "__main__":
    harness.main(main)
