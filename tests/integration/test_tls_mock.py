# ctest: epoll-asan (run on epoll under ASan too: tests/CMakeLists.txt)
"""surge profile over https:// straight against `surge mock --tls`: HTTP/1.1 and h2 chosen through ALPN, --http2,
timing and exact OSL as over plaintext, session resumption on reconnects, the error cases a user meets first
(untrusted certificate, host-name mismatch, a plaintext server, a bad --cacert) as one clear line and exit 2, and
h2load and curl over TLS against the same mock as third-party cross-checks. Certificates are made at test time
with the openssl CLI (a CA, and a server certificate for another name) and by the mock itself (--tls)."""
import os
import re
import shutil

import harness
from profiling import profile, tol, late
from tlsutil import make_ca, make_dated_self_signed, tls_stat


def main(h):
    ttft, itl, osl, n = 40, 8, 24, 120
    cert_out = h.path("mock-ca.pem")
    with h.mock("--tls", "--tls-cert-out", cert_out, "--ttft-ms", ttft, "--itl-ms", itl, record=True) as m:
        url = "https://127.0.0.1:%d" % m.port
        # 1. negotiated: the mock prefers h2, so a run without --http2 speaks HTTP/2 (ALPN)
        r = profile(h, url, "--cacert", cert_out, "--streaming", "--concurrency", 16, "--workers", 1,
                    "--request-count", n, "--output-tokens-mean", osl, "--synthetic-input-tokens-mean", 100,
                    "--verbose")
        s = r.summary
        h.check(s is not None, "ALPN h2: summary written")
        if s:
            h.check(s["request_count"]["avg"] == n and s["error_request_count"]["avg"] == 0, "ALPN h2: all ok",
                    s.get("error_summary"))
            h.within(s["time_to_first_token"]["p50"], ttft - 1, ttft + late(10.0), "TTFT p50 (ms) over TLS h2")
            h.within(s["time_to_first_token"]["p99"], ttft - 1, ttft + late(30.0), "TTFT p99 (ms) over TLS h2")
            h.near(s["inter_token_latency"]["p50"], itl, tol(0.5), "ITL p50 (ms) over TLS h2")
            h.check(s["output_sequence_length"]["min"] == osl and s["output_sequence_length"]["max"] == osl,
                    "OSL exactly %d over TLS h2" % osl, s["output_sequence_length"])
        h.check("ALPN h2" in r.stderr and "TLSv1.3" in r.stderr, "ALPN selected h2, TLS 1.3", r.stderr[-2000:])
        h.check("(HTTP/2, streaming" in r.stderr, "the run says HTTP/2", r.stderr[-2000:])
        h.check("1 connections opened" in r.stderr, "16 streams on one TLS connection", r.stderr[-2000:])
        recs = m.records()
        h.check(len(recs) == n and len({x["conn"] for x in recs}) == 1, "mock: every request, one connection",
                len(recs))

        # 2. --http2 (h2 required through ALPN), non-streamed
        r = profile(h, url, "--cacert", cert_out, "--http2", "--concurrency", 8, "--workers", 1,
                    "--request-count", 100, "--output-tokens-mean", 4, "--verbose")
        if r.summary:
            h.check(r.summary["request_count"]["avg"] == 100 and r.summary["error_request_count"]["avg"] == 0,
                    "--http2 over TLS: all ok", r.summary.get("error_summary"))
            h.check(r.summary["output_sequence_length"]["p50"] == 4, "--http2 over TLS: OSL 4")

        # 3. -k: no verification, same result
        r = profile(h, "https://localhost:%d" % m.port, "-k", "--request-count", 20, "--concurrency", 2)
        if r.summary:
            h.check(r.summary["request_count"]["avg"] == 20, "-k: all ok", r.summary.get("error_summary"))
        want = "https://localhost:%d/v1/chat/completions [127.0.0.1:%d]" % (m.port, m.port)
        h.check(want in r.stderr, "the URL is echoed as given, then the address it resolved to", r.stderr[:600])

        # 4. untrusted: the mock's self-signed certificate against the system store
        r = profile(h, url, "--request-count", 5, check_rc=2)
        h.check("certificate" in r.stderr and ("not trusted" in r.stderr or "self-signed" in r.stderr),
                "untrusted certificate: one clear line", r.stderr[-1000:])
        h.check(r.summary is None, "untrusted certificate: nothing measured")

        # 5. a --cacert file that holds no certificate
        junk = h.path("junk.pem")
        with open(junk, "w") as f:
            f.write("not a certificate\n")
        r = profile(h, url, "--cacert", junk, "--request-count", 5, check_rc=2)
        h.check("CA certificates" in r.stderr and "junk.pem" in r.stderr, "bad --cacert named", r.stderr[-1000:])

        # 6. h2load (nghttp2's client) over TLS against the same mock: every request 2xx
        if shutil.which("h2load"):
            body = h.path("body.json")
            with open(body, "w") as f:
                f.write('{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":4}')
            p = h.run(["h2load", "-n", "200", "-c", "2", "-m", "16", "-d", body, "-H", "content-type: application/json",
                       url + "/v1/chat/completions"], timeout=60)
            h.check("200 succeeded" in p.stdout and "200 2xx" in p.stdout, "h2load over TLS: 200 2xx",
                    p.stdout[-1500:])
            h.check(re.search(r"Application protocol: h2", p.stdout) is not None, "h2load negotiated h2",
                    p.stdout[-1500:])
        if shutil.which("curl"):
            p = h.run(["curl", "-s", "--http1.1", "--cacert", cert_out, "https://localhost:%d/v1/models" % m.port],
                      timeout=30)
            h.check('"object":"list"' in p.stdout, "curl --http1.1 over TLS with the mock's certificate", p.stdout)
        m.stop()

    # 7. --drop-rate over TLS h2: streams reset, counted by class, the TLS connection carries on (resumption on
    # reconnects is checked in test_tls_nginx, where keepalive_requests closes HTTP/1.1 connections)
    with h.mock("--tls", "--ttft-ms", 10, "--itl-ms", 2, "--drop-rate", 0.2) as m:
        r = profile(h, "https://localhost:%d" % m.port, "-k", "--streaming", "--concurrency", 4, "--workers", 1,
                    "--request-count", 100, "--output-tokens-mean", 8, "--verbose", check_rc=None)
        h.check(tls_stat(r.stderr, "full handshakes") == 1, "one full handshake", r.stderr[-1500:])
        if r.summary:
            errs = r.summary["error_request_count"]["avg"]
            h.check(5 <= errs <= 40 and "stream_reset" in str(r.summary.get("error_summary")),
                    "drops over TLS h2 are stream resets", r.summary.get("error_summary"))

    # 8. host-name mismatch: a certificate for another name, trusted CA
    d = h.path("other")
    os.makedirs(d)
    ca, cert, key = make_ca(h, d, "other.example", "DNS:other.example")
    with h.mock("--tls-cert", cert, "--tls-key", key) as m:
        r = profile(h, "https://127.0.0.1:%d" % m.port, "--cacert", ca, "--request-count", 5, check_rc=2)
        h.check("does not match the host name" in r.stderr and "127.0.0.1" in r.stderr,
                "host-name mismatch: one clear line", r.stderr[-1000:])
        r = profile(h, "https://127.0.0.1:%d" % m.port, "-k", "--request-count", 5)
        h.check(r.summary is not None and r.summary["request_count"]["avg"] == 5, "-k accepts the mismatch")

    # 10. trust anchors out of date: an expired self-signed certificate given as --cacert (how a test server is
    # usually trusted) is refused before anything is sent, as curl refuses it; so is one not valid yet. In a file
    # beside a valid CA it is left out with a note, and the valid one still works.
    for name, start, end, words in [("expired", "20200101000000Z", "20200102000000Z", "expired on 2020-01-02"),
                                    ("early", "20990101000000Z", "20990102000000Z", "is not valid until 2099-01-01")]:
        cert, key = make_dated_self_signed(h, h.path(name), start, end)
        with h.mock("--tls-cert", cert, "--tls-key", key, record=True) as m:
            url = "https://127.0.0.1:%d" % m.port
            r = profile(h, url, "--cacert", cert, "--request-count", 5, check_rc=2)
            h.check("no certificate in" in r.stderr and words in r.stderr and "/CN=localhost" in r.stderr,
                    "%s --cacert: refused, the date named" % name, r.stderr[-1000:])
            h.check(r.summary is None and len(m.records()) == 0, "%s --cacert: nothing sent" % name)
            if shutil.which("curl"):
                p = h.run(["curl", "-s", "--cacert", cert, url + "/v1/models"], timeout=30)
                h.check(p.returncode == 60, "curl refuses the %s anchor too (exit 60)" % name, p.returncode)
            if name == "expired":
                both = h.path("both.pem")
                with open(both, "w") as f, open(cert) as a, open(cert_out) as b:
                    f.write(a.read() + b.read())
                r = profile(h, url, "--cacert", both, "--request-count", 5, check_rc=2)
                h.check("1 of the 2 CA certificates" in r.stderr and "not trusted" in r.stderr,
                        "a bundle with an expired anchor: a note, and the server it signed is not trusted",
                        r.stderr[-1000:])

    # 9. https:// to a plaintext server: a clear line, not a hang
    with h.mock() as m:
        r = profile(h, "https://127.0.0.1:%d" % m.port, "-k", "--request-count", 5, check_rc=2)
        h.check("TLS" in r.stderr, "https:// to a plaintext server: a TLS message", r.stderr[-1000:])


if __name__ == "__main__":
    harness.main(main)
