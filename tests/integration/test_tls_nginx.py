"""surge profile over https:// through a real third-party TLS server: nginx terminating TLS (h2 through ALPN, and
an HTTP/1.1-only listener) and proxying to surge mock (proxy_buffering off, so SSE streams through). Timing and
OSL as over plaintext; --http2 against the listener without h2 fails with a clear line; a client certificate
(--cert/--key) against ssl_verify_client on; reconnects after nginx's keepalive_requests resume the session.
Certificates are made at test time with the openssl CLI."""
import os
import shutil

import harness
from profiling import profile, tol, late
from servers import Nginx
from tlsutil import make_ca, openssl, tls_stat

NGINX_HTTP = """  upstream mock {{ server 127.0.0.1:{mock_port}; keepalive 64; }}
  ssl_protocols TLSv1.2 TLSv1.3;
  ssl_certificate {cert};
  ssl_certificate_key {key};
  keepalive_requests {keepalive_requests};
  proxy_http_version 1.1;
  proxy_set_header Connection "";
  proxy_buffering off;
  server {{
    listen 127.0.0.1:{h2_port} ssl http2;
    location / {{ proxy_pass http://mock; }}
  }}
  server {{
    listen 127.0.0.1:{h1_port} ssl;
    location / {{ proxy_pass http://mock; }}
  }}
  server {{
    listen 127.0.0.1:{mtls_port} ssl;
    ssl_client_certificate {ca};
    ssl_verify_client on;
    location / {{ proxy_pass http://mock; }}
  }}
}}
"""


def nginx(h, mock_port, ca, cert, key, keepalive_requests=100000):
    return Nginx(h, NGINX_HTTP, ["h2_port", "h1_port", "mtls_port"], mock_port=mock_port, ca=ca, cert=cert, key=key,
                 keepalive_requests=keepalive_requests)


def main(h):
    if not shutil.which("nginx") or not shutil.which("openssl"):
        if os.environ.get("CI"):
            h.check(False, "nginx and openssl installed (SURGE_TEST_PKGS)")
            return
        h.skip("nginx or openssl is not installed")
    d = h.path("pki")
    os.makedirs(d)
    ca, cert, key = make_ca(h, d, "localhost", "DNS:localhost,IP:127.0.0.1")
    # a client certificate from the same CA
    ccert, ckey, ccsr = os.path.join(d, "client.pem"), os.path.join(d, "client.key"), os.path.join(d, "client.csr")
    openssl(h, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=surge client",
            "-keyout", ckey, "-out", ccsr)
    openssl(h, "x509", "-req", "-in", ccsr, "-CA", ca, "-CAkey", os.path.join(d, "ca.key"), "-CAcreateserial",
            "-days", "2", "-out", ccert)

    ttft, itl, osl, n = 40, 8, 24, 200
    with h.mock("--ttft-ms", ttft, "--itl-ms", itl) as m, nginx(h, m.port, ca, cert, key) as ng:
        h.check(ng.proc.poll() is None, "nginx runs", ng.failed())
        h2 = "https://localhost:%d" % ng.h2_port
        h1 = "https://localhost:%d" % ng.h1_port
        # 1. TLS h2 (negotiated through ALPN), SSE through nginx: timing and OSL as over plaintext
        r = profile(h, h2, "--cacert", ca, "--streaming", "--concurrency", 32, "--max-connections", 2, "--workers",
                    1, "--request-count", n, "--output-tokens-mean", osl, "--synthetic-input-tokens-mean", 100,
                    "--verbose")
        s = r.summary
        h.check(s is not None, "TLS h2: summary written")
        if s:
            h.check(s["request_count"]["avg"] == n and s["error_request_count"]["avg"] == 0, "TLS h2: all ok",
                    s.get("error_summary"))
            h.within(s["time_to_first_token"]["p50"], ttft - 1, ttft + late(10.0), "TTFT p50 (ms) through nginx over TLS h2")
            h.near(s["inter_token_latency"]["p50"], itl, tol(0.5), "ITL p50 (ms) through nginx over TLS h2")
            h.check(s["output_sequence_length"]["min"] == osl and s["output_sequence_length"]["max"] == osl,
                    "OSL exactly %d" % osl, s["output_sequence_length"])
        h.check("ALPN h2" in r.stderr and "2 connections opened" in r.stderr, "h2 selected, 2 connections",
                r.stderr[-2000:])

        # 2. the HTTP/1.1-only listener: negotiation falls back to HTTP/1.1 and streams the same
        r = profile(h, h1, "--cacert", ca, "--streaming", "--concurrency", 8, "--workers", 1, "--request-count", 80,
                    "--output-tokens-mean", osl, "--verbose")
        s = r.summary
        if s:
            h.check(s["request_count"]["avg"] == 80 and s["error_request_count"]["avg"] == 0, "TLS HTTP/1.1: all ok",
                    s.get("error_summary"))
            h.within(s["time_to_first_token"]["p50"], ttft - 1, ttft + late(10.0),
                     "TTFT p50 (ms) through nginx over TLS HTTP/1.1")
            h.check(s["output_sequence_length"]["min"] == osl, "TLS HTTP/1.1: OSL exact", s["output_sequence_length"])
        h.check("ALPN http/1.1" in r.stderr and "HTTP/2" not in r.stderr, "http/1.1 selected", r.stderr[-2000:])

        # 3. --http2 against it: h2 is required, the server does not offer it
        r = profile(h, h1, "--cacert", ca, "--http2", "--request-count", 5, check_rc=2)
        h.check("no_application_protocol" in r.stderr or "ALPN" in r.stderr, "no h2: the alert named",
                r.stderr[-1000:])
        h.check("--http2 on https:// requires" in r.stderr, "no h2: what to do", r.stderr[-1000:])

        # 4. client certificates: refused without, served with --cert/--key
        mtls = "https://localhost:%d" % ng.mtls_port
        r = profile(h, mtls, "--cacert", ca, "--request-count", 5, check_rc=1)
        if r.summary:
            h.check(r.errors_by_class().get("http") == 5, "no client certificate: nginx answers 400",
                    r.summary.get("error_summary"))
        r = profile(h, mtls, "--cacert", ca, "--cert", ccert, "--key", ckey, "--request-count", 20, "--concurrency", 2)
        if r.summary:
            h.check(r.summary["request_count"]["avg"] == 20 and r.summary["error_request_count"]["avg"] == 0,
                    "--cert/--key: served", r.summary.get("error_summary"))

    # 5. nginx closes every connection after 10 requests: the reconnects resume the TLS session
    with h.mock("--ttft-ms", 2, "--itl-ms", 1) as m, nginx(h, m.port, ca, cert, key, keepalive_requests=10) as ng:
        r = profile(h, "https://localhost:%d" % ng.h1_port, "--cacert", ca, "--concurrency", 2, "--workers", 1,
                    "--request-count", 100, "--output-tokens-mean", 2, "--verbose")
        full, resumed = tls_stat(r.stderr, "full handshakes"), tls_stat(r.stderr, "resumed")
        if r.summary:
            h.check(r.summary["request_count"]["avg"] == 100 and r.summary["error_request_count"]["avg"] == 0,
                    "keepalive_requests 10: every request ok", r.summary.get("error_summary"))
        h.check(full <= 2 and resumed >= 6, "reconnects resume (%d full, %d resumed)" % (full, resumed),
                r.stderr[-1500:])


harness.main(main)
