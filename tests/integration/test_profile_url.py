"""The URL as peers' users write it: the OpenAI SDK's base URL ends in /v1 (http://host:8000/v1), and surge must
send to /v1/chat/completions under it, not /v1/v1/chat/completions (a run of 404s and a table of zeros, once).
An --endpoint given in full is kept as given, and a base path that is not /v1 still prefixes the usual path."""
import json

import harness
from profiling import HttpServer, profile

CHAT = b'{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant",' \
       b'"content":"a b c"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":3}}'
COMPLETION = b'{"id":"x","object":"text_completion","choices":[{"index":0,"text":"a b c","finish_reason":"stop"}],' \
             b'"usage":{"prompt_tokens":5,"completion_tokens":3}}'


def answer(body):
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


NOT_FOUND = b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"


def server_at(routes):
    """A server that answers only at the given paths (POST), 404 elsewhere, as vLLM and llama-server do."""
    def respond(line, headers, body):
        method, path = line.split(" ")[:2]
        return answer(routes[path]) if method == "POST" and path in routes else NOT_FOUND
    return HttpServer(respond)


def paths(srv):
    return sorted({r[0].split(" ")[1] for r in srv.requests})


def main(h):
    routes = {"/v1/chat/completions": CHAT, "/v1/completions": COMPLETION}
    with server_at(routes) as srv:
        for url in (srv.url + "/v1", srv.url + "/v1/"):
            srv.requests.clear()
            r = profile(h, url, "--request-count", 3)
            h.check(paths(srv) == ["/v1/chat/completions"],
                    "-u %s: chat goes to /v1/chat/completions" % url, (paths(srv), r.stderr[-800:]))
            h.check("%s/v1/chat/completions" % srv.url in r.stderr,
                    "the start line shows the path used", r.stderr[:600])
        srv.requests.clear()
        r = profile(h, srv.url + "/v1", "--endpoint-type", "completions", "--request-count", 3)
        h.check(paths(srv) == ["/v1/completions"], "completions under a /v1 base",
                (paths(srv), r.stderr[-800:]))
        cfg = (r.summary or {}).get("input_config", {})
        h.check(cfg.get("endpoint") == "/v1/completions", "input_config names the path used", json.dumps(cfg)[:600])
        # without a base path nothing changes
        srv.requests.clear()
        r = profile(h, srv.url, "--request-count", 2)
        h.check(paths(srv) == ["/v1/chat/completions"], "no base path: /v1/chat/completions",
                paths(srv))
        # an --endpoint in full is the user's: kept as given, even after a /v1 base (the 404 hint explains)
        srv.requests.clear()
        r = profile(h, srv.url + "/v1", "--endpoint", "/chat/completions", "--request-count", 2)
        h.check(paths(srv) == ["/v1/chat/completions"], "--endpoint after a /v1 base",
                paths(srv))
    # a base that is not /v1 still takes the usual path under it
    with server_at({"/api/v1/chat/completions": CHAT}) as srv:
        r = profile(h, srv.url + "/api", "--request-count", 2)
        h.check(paths(srv) == ["/api/v1/chat/completions"], "a /api base prefixes v1/...",
                paths(srv))
        srv.requests.clear()
        r = profile(h, srv.url + "/api/v1", "--request-count", 2)
        h.check(paths(srv) == ["/api/v1/chat/completions"], "a base ending in /v1 under /api",
                paths(srv))


harness.main(main)
