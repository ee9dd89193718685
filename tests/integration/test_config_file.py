# ctest: one-backend (a config file becomes flags before the run; the runs themselves are tested on both elsewhere)
"""Config files (docs/config.md): surge profile --config/-f FILE runs what the file says (checked at the server),
flags on the command line win over the file's (a repeatable one replaces the file's list), a sweep runs from a
file, the run records the file's path and SHA-256, and surge config validate names every problem with its line
(unknown key with a suggestion, bad value, YAML syntax, a section) and exits 2 without sending anything."""
import hashlib
import http.server
import json
import os
import threading

import harness
from profiling import profile


def write(h, name, text):
    path = h.path(name)
    with open(path, "w") as f:
        f.write(text)
    return path


class HeaderServer:
    """A minimal OpenAI chat server on 127.0.0.1 that keeps every request's headers (the mock does not record
    them)."""

    def __init__(self):
        seen = self.seen = []

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(n) or b"{}")
                seen.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                             "body": body})
                out = json.dumps({"id": "x", "object": "chat.completion", "model": body.get("model", ""),
                                  "choices": [{"index": 0, "finish_reason": "stop",
                                               "message": {"role": "assistant", "content": "hello there"}}],
                                  "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        return False


def validate(h, path, *flags):
    return h.run([h.surge, "config", "validate", path] + [str(f) for f in flags], timeout=30)


def main(h):
    with h.mock("--ttft-ms", 2, "--itl-ms", 1, record=True) as m:
        # a whole run from the file: model, counts, lengths, streaming; underscores and dashes alike
        cfg = write(h, "run.yaml", "# a run\nmodel: cfg-model\nurl: %s\nrequest_count: 5\nisl: 20\n"
                                   "output-tokens-mean: 4\nstreaming: true\nprogress: false\n" % m.url)
        art = h.path("art_file")
        rc = h.run([h.surge, "profile", "--config", cfg, "--artifact-dir", art], timeout=60)
        h.check(rc.returncode == 0, "profile --config exits 0", rc.stderr[-2000:])
        with open(os.path.join(art, "profile_export_surge.json")) as f:
            summary = json.load(f)
        ic = summary["input_config"]
        with open(cfg, "rb") as f:
            sha = hashlib.sha256(f.read()).hexdigest()
        h.check(ic.get("config_file") == cfg and ic.get("config_file_sha256") == sha,
                "input_config records the file and its SHA-256", (ic.get("config_file"), ic.get("config_file_sha256"),
                                                                  sha))
        # flags win: -f, a different count and length on the command line
        r = profile(h, m.url, "-f", cfg, "--request-count", 3, "--osl", 7)
        h.check(r.summary["input_config"]["request_count"] == 3, "the command line's --request-count wins",
                r.summary["input_config"]["request_count"])
        # a sweep from the file: a list for concurrency
        sweep = write(h, "sweep.yaml", "model: cfg-model\nconcurrency: [1, 2]\nrequest-count: 4\nosl: 3\n"
                                       "parameter_sweep_cooldown_seconds: 0\n")
        r = profile(h, m.url, "--config", sweep)
        with open(os.path.join(r.dir, "sweep_summary.json")) as f:
            s = json.load(f)
        h.check(s["sweep"]["values"] == [1, 2] and [p["request_count"] for p in s["points"]] == [4, 4],
                "the file's concurrency list is a sweep", s.get("sweep"))
        # GenAI-Perf's sectioned layout (genai-perf config -f): its keys that map onto flags
        genai = write(h, "genai.yaml", "model_name: genai-model\nendpoint:\n  type: chat\n  streaming: true\n"
                                       "  url: %s\nperf_analyzer:\n  stimulus:\n    concurrency: 2\n"
                                       "  measurement:\n    mode: request_count\n    num: 6\ninput:\n"
                                       "  synthetic_tokens:\n    mean: 30\n  output_tokens:\n    mean: 5\n"
                                       "  extra:\n    temperature: 0.25\n  goodput:\n    time_to_first_token: 500\n"
                                       "output:\n  enable_checkpointing: false\n" % m.url)
        art = h.path("art_genai")  # no -m, -u: the file's model_name and endpoint.url
        rc = h.run([h.surge, "profile", "--config", genai, "--artifact-dir", art, "--no-progress"], timeout=60)
        h.check(rc.returncode == 0, "a GenAI-Perf config file runs", rc.stderr[-2000:])
        with open(os.path.join(art, "profile_export_surge.json")) as f:
            ic = json.load(f)["input_config"]
        h.check(ic.get("concurrency") == 2 and ic.get("extra_inputs") == {"temperature": 0.25} and
                ic.get("goodput") == {"time_to_first_token": 500.0}, "GenAI-Perf's stimulus, extra and goodput", ic)
    recs = m.records()
    genai_recs, recs = recs[16:], recs[:16]
    h.check(len(genai_recs) == 6 and all(x["model"] == "genai-model" and x["prompt_words"] == 30 and
                                         x["max_tokens"] == 5 and x["stream"] for x in genai_recs),
            "GenAI-Perf's model_name, measurement num, lengths and streaming at the server", genai_recs[:1])
    rc = validate(h, write(h, "genai_bad.yaml", "model_name: x\ninput:\n  file_name: a\ntokenizer:\n"
                                                "  trust_remote_code: true\nanalyze:\n  sweep_parameters: {}\n"
                                                "schemaVersion: \"2.0\"\n"))
    for want in ("genai_bad.yaml:3: GenAI-Perf's input.file_name: not a key surge knows",
                 "genai_bad.yaml:5: GenAI-Perf's tokenizer.trust_remote_code has no counterpart here",
                 "genai_bad.yaml:6: analyze: GenAI-Perf's sweeps are lists here",
                 "genai_bad.yaml:8: schemaVersion: AIPerf's YAML layout is not read"):
        h.check(want in rc.stderr, "validate names %r" % want, rc.stderr)
    h.check(len(recs) == 5 + 3 + 8, "the server saw 5 (file), 3 (override) and 4 + 4 (sweep) requests", len(recs))
    first, second, third = recs[:5], recs[5:8], recs[8:]
    h.check(all(x["model"] == "cfg-model" and x["prompt_words"] == 20 and x["max_tokens"] == 4 and x["stream"]
                for x in first), "the file's model, isl, osl and streaming at the server", first[:1])
    h.check(all(x["max_tokens"] == 7 and x["prompt_words"] == 20 for x in second),
            "the override's osl 7 at the server, the file's isl kept", second[:1])
    h.check(all(x["max_tokens"] == 3 for x in third), "the sweep file's osl at the server", third[:1])

    # headers: the file's list, and the command line's -H replacing that list (not adding to it)
    hdr = write(h, "hdr.yaml", "model: hdr-model\nheader: [\"X-From-File: 1\", \"X-Second: 2\"]\n"
                               "extra_inputs: [\"temperature:0.5\"]\nrequest-count: 2\n")
    with HeaderServer() as srv:
        profile(h, srv.url, "--config", hdr)
        profile(h, srv.url, "--config", hdr, "-H", "X-From-Cli: 3")
    seen = srv.seen
    h.check(len(seen) == 4, "the header server saw 2 + 2 requests", len(seen))
    h.check(all(s["headers"].get("x-from-file") == "1" and s["headers"].get("x-second") == "2" and
                s["body"].get("temperature") == 0.5 for s in seen[:2]),
            "both of the file's headers and its extra input at the server", seen[:1])
    h.check(all(s["headers"].get("x-from-cli") == "3" and "x-from-file" not in s["headers"] and
                s["body"].get("temperature") == 0.5 for s in seen[2:4]),
            "-H on the command line replaces the file's headers; the file's extra input stays", seen[2:3])

    # validate: a good file, then every problem of a bad one with its line
    rc = validate(h, cfg)
    h.check(rc.returncode == 0 and "valid" in rc.stdout, "validate accepts a good file", (rc.returncode, rc.stdout,
                                                                                         rc.stderr))
    bad = write(h, "bad.yaml", "model: m\nconcurency: 4\nisl: abc\nstreaming: yes\nosl-stddev:\n  a: 1\n"
                               "request-count: 0\nnum_requests: 5\n")
    rc = validate(h, bad)
    err = rc.stderr
    for want in ("bad.yaml:2: unknown key concurency (did you mean concurrency?)",
                 "bad.yaml:3: --isl: expected a whole number",
                 "bad.yaml:4: streaming: a flag without a value: expected true or false",
                 "bad.yaml:5: osl-stddev: a section",
                 "bad.yaml:7: --request-count: expected a whole number >= 1, got 0",
                 "bad.yaml:8: num_requests: the same option as request-count on line 7"):
        h.check(want in err, "validate names %r" % want, err)
    h.check(rc.returncode == 2, "validate exits 2 on a bad file", rc.returncode)
    syntax = write(h, "syntax.yaml", "model: m\nisl: [1, 2\nosl: 3\n")
    rc = validate(h, syntax)
    h.check(rc.returncode == 2 and "syntax.yaml:3: YAML:" in rc.stderr, "a YAML syntax error names its line",
            rc.stderr)
    # a value refused by the full parse (two loads at once), named by the flags
    both = write(h, "both.yaml", "model: m\nconcurrency: 2\nrequest-rate: 5\n")
    rc = validate(h, both)
    h.check(rc.returncode == 2 and "--concurrency: cannot be combined with --request-rate" in rc.stderr,
            "cross-flag rules apply to a file", rc.stderr)
    # the command line's --concurrency replaces the file's list (no sweep left); its --request-rate joins it
    rc = h.run([h.surge, "config", "expand", sweep, "--concurrency", "3,5"], timeout=30)
    out = json.loads(rc.stdout) if rc.returncode == 0 else {}
    h.check((out.get("sweep") or {}).get("values") == [3, 5], "--concurrency 3,5 replaces the file's list",
            (rc.stderr, out.get("sweep")))
    rc = validate(h, sweep, "--request-rate", 7)
    h.check(rc.returncode == 2 and "request-rate" in rc.stderr, "flags are checked together with the file's",
            rc.stderr)
    rc = h.run([h.surge, "config", "expand", cfg, "--request-count", 11, "-H", "X-A: b"], timeout=30)
    out = json.loads(rc.stdout) if rc.returncode == 0 else {}
    h.check(out.get("request_count") == 11 and out.get("synthetic_input_tokens_mean") == 20 and
            out.get("headers") == ["X-A: b"] and out.get("config_file_sha256") == sha,
            "expand prints the resolved configuration, the command line's values winning", (rc.stderr, out))
    # the media flags share one getopt value but are options of their own (engine/options.c's rows): two of them in
    # a file are not "the same option", and the command line's --image-height-mean replaces only the file's height
    media = write(h, "media.yaml", "model: m\nimage-width-mean: 10\nimage-height-mean: 20\nrequest-count: 3\n")
    rc = h.run([h.surge, "config", "expand", media, "--image-height-mean", 30], timeout=30)
    out = json.loads(rc.stdout) if rc.returncode == 0 else {}
    m = out.get("media") or {}
    h.check(m.get("image_width_mean") == 10 and m.get("image_height_mean") == 30,
            "two media keys in a file, one replaced by the command line", (rc.stderr, m))
    # a list under a repeatable key: several URLs (and DCGM exporters), one flag each, not a comma-joined word
    urls = write(h, "urls.yaml", "model: m\nurl:\n  - http://127.0.0.1:8001\n  - http://127.0.0.1:8002\n"
                                 "gpu-telemetry: [127.0.0.1:9400, 127.0.0.1:9401]\nrequest-count: 5\n")
    rc = h.run([h.surge, "config", "expand", urls], timeout=30)
    out = json.loads(rc.stdout) if rc.returncode == 0 else {}
    h.check(out.get("urls") == ["http://127.0.0.1:8001", "http://127.0.0.1:8002"],
            "url: a list is several URLs", (rc.stderr, out.get("urls")))
    h.check(len([u for u in out.get("server_metrics_url") or [] if ":940" in u]) == 2,
            "gpu-telemetry: a list is several exporters", (rc.stderr, out.get("server_metrics_url")))
    # the expanded configuration is a config file too: fed back, it expands to the same JSON but for the file's name
    # and hash (several URLs, DCGM exporters, a sweep, headers, extra inputs)
    full = write(h, "full.yaml", "model: [m, n]\nurl: [127.0.0.1:8001, 127.0.0.1:8002]\nurl-strategy: least_in_flight\n"
                                 "gpu-telemetry: [127.0.0.1:9400, 127.0.0.1:9401]\nconcurrency: [2, 6]\n"
                                 "request-count: 9\nheader: ['X-A: b']\nextra-inputs: ['temperature:0.5']\n"
                                 "streaming: true\nisl: 33\nosl: 7\nslo: ['time_to_first_token:p90<300']\n")
    rc = h.run([h.surge, "config", "expand", full], timeout=30)
    first = json.loads(rc.stdout) if rc.returncode == 0 else {}
    h.check(first.get("sweep", {}).get("values") == [2, 6], "expand of a full file", (rc.stderr, first))
    again = write(h, "again.json", rc.stdout)
    rc = h.run([h.surge, "config", "expand", again], timeout=30)
    second = json.loads(rc.stdout) if rc.returncode == 0 else {}
    h.check(second.get("config_file") == again and first.get("config_file") == full,
            "the expanded file names itself", (rc.stderr, second.get("config_file")))
    for out in (first, second):
        out.pop("config_file", None)
        out.pop("config_file_sha256", None)
    h.check(first == second, "surge config expand's JSON fed back expands to the same configuration",
            (rc.stderr, [(k, first.get(k), second.get(k)) for k in set(first) | set(second)
                         if first.get(k) != second.get(k)]))
    # a run's input_config with a credential header redacted: refused unless the command line gives the headers
    secret = write(h, "secret.json", json.dumps(dict(first, headers=["Authorization: <redacted>"],
                                                     config_file=None, config_file_sha256=None)))
    rc = validate(h, secret)
    h.check(rc.returncode == 2 and "<redacted>" in rc.stderr, "a redacted header is refused", rc.stderr)
    rc = validate(h, secret, "-H", "Authorization: Bearer k")
    h.check(rc.returncode == 0, "the command line's -H replaces the redacted list", rc.stderr)
    # profile with a bad file sends nothing and says where
    rc = h.run([h.surge, "profile", "-f", bad, "-u", "127.0.0.1:9", "--artifact-dir", h.path("never")], timeout=30)
    h.check(rc.returncode == 2 and "bad.yaml:2: unknown key concurency" in rc.stderr and
            not os.path.exists(h.path("never")), "profile refuses a bad file before anything", rc.stderr)
    rc = h.run([h.surge, "profile", "-f", cfg, "--config", bad], timeout=30)
    h.check(rc.returncode == 2 and "given twice" in rc.stderr, "two config files are refused", rc.stderr)
    # the template validates as it is
    rc = h.run([h.surge, "config", "init"], timeout=30)
    tpl = write(h, "tpl.yaml", rc.stdout)
    rc = validate(h, tpl)
    h.check(rc.returncode == 0, "the template from config init validates", rc.stderr)


harness.main(main)
