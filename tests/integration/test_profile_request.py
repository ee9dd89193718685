"""The bytes surge puts on the wire: request line, base path, headers, API key, and the JSON body with
max_tokens, stream, stream_options and --extra-inputs typed and merged."""
import json

import harness
from profiling import HttpServer, profile


def openai_reply(line, headers, body):
    """A fixed OpenAI answer, streamed when the request asks for it."""
    if json.loads(body).get("stream"):
        events = [b'{"choices":[{"delta":{"role":"assistant","content":""}}]}',
                  b'{"choices":[{"delta":{"content":" hi"}}]}', b'{"choices":[{"delta":{"content":" there"}}]}',
                  b'{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}', b"[DONE]"]
        payload = b"".join(b"data: " + e + b"\n\n" for e in events)
        ctype = b"text/event-stream"
    else:
        payload = b'{"choices":[{"message":{"content":"hi there"}}],"usage":{"completion_tokens":2}}'
        ctype = b"application/json"
    return b"HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s" % (ctype, len(payload), payload)


def captured(s):
    return [(line, headers, json.loads(body)) for line, headers, body in list(s.requests)]


def main(h):
    with HttpServer(openai_reply) as s:
        r = profile(h, "http://127.0.0.1:%d/base" % s.port, "--streaming", "--concurrency", 1, "--request-count", 4,
                    "--output-tokens-mean", 7, "--synthetic-input-tokens-mean", 12, "-H", "X-Trace: abc",
                    "--header", "X-Other: 1", "--api-key", "sk-test",
                    "--extra-inputs", "temperature:0.5", "--extra-inputs", "ignore_eos:true",
                    "--extra-inputs", "top_k:40", "--extra-inputs", 'stop:["a","b"]', "--extra-inputs", "note:hello",
                    model="org/model-1")
        reqs = captured(s)
        h.check(len(reqs) == 4, "server received 4 requests", len(reqs))
        line, hdr, body = reqs[0]
        h.check(line == "POST /base/v1/chat/completions HTTP/1.1", "request line with the base path", line)
        h.check(hdr.get("host") == "127.0.0.1:%d" % s.port, "Host header", hdr)
        h.check(hdr.get("x-trace") == "abc" and hdr.get("x-other") == "1", "-H headers sent", hdr)
        h.check(hdr.get("authorization") == "Bearer sk-test", "--api-key as a bearer token", hdr)
        h.check(hdr.get("content-type") == "application/json", "JSON content type", hdr)
        h.check(body["model"] == "org/model-1", "model", body)
        h.check(body["stream"] is True and body["stream_options"] == {"include_usage": True},
                "stream with include_usage", body)
        h.check(body["max_tokens"] == 7, "max_tokens from --output-tokens-mean", body)
        h.check(body["temperature"] == 0.5 and body["ignore_eos"] is True and body["top_k"] == 40
                and body["stop"] == ["a", "b"] and body["note"] == "hello", "extra inputs typed and merged", body)
        msgs = body["messages"]
        h.check(len(msgs) == 1 and msgs[0]["role"] == "user" and len(msgs[0]["content"].split()) == 12,
                "one user message of 12 words", msgs)
        h.check(len({json.dumps(b["messages"]) for _, _, b in reqs}) == 4, "4 distinct prompts")
        if r.summary:
            s_ = r.summary
            h.check(s_["output_sequence_length"]["avg"] == 2, "OSL from the usage chunk", s_["output_sequence_length"])
            h.check(s_["time_to_first_token"]["count"] == 4, "empty role chunk is not the first token")
            h.check(all(x["content_events"] == 2 for x in r.records), "two content events per request")
        s.requests.clear()
        profile(h, "127.0.0.1:%d" % s.port, "--endpoint-type", "completions", "--endpoint", "custom/path",
                "--request-count", 2, "--extra-inputs", '{"max_tokens": 3, "echo": false}')
        line, hdr, body = captured(s)[0]
        h.check(line == "POST /custom/path HTTP/1.1", "--endpoint overrides the path", line)
        h.check(isinstance(body.get("prompt"), str) and "messages" not in body, "completions body has a prompt", body)
        h.check(body.get("max_tokens") == 3 and body.get("echo") is False, "a JSON object of extra inputs overrides",
                body)
        h.check("stream_options" not in body and body.get("stream") is False, "no stream_options when not streaming",
                body)


harness.main(main)
