"""Helpers for the TLS integration tests: certificates made with the openssl CLI, and the --verbose TLS counts."""
import os
import shutil
import ssl
import subprocess


def openssl(h, *args):
    p = subprocess.run(["openssl"] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    h.check(p.returncode == 0, "openssl %s" % args[0], p.stderr.decode()[-500:])


def make_ca(h, d, cn, san):
    """A CA in d and a server certificate signed by it for cn / san. Returns (ca, cert, key) paths."""
    ca, cakey = os.path.join(d, "ca.pem"), os.path.join(d, "ca.key")
    cert, key, csr = os.path.join(d, "srv.pem"), os.path.join(d, "srv.key"), os.path.join(d, "srv.csr")
    ext = os.path.join(d, "ext.cnf")
    with open(ext, "w") as f:
        f.write("subjectAltName=%s\n" % san)
    openssl(h, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
            "-subj", "/CN=surge test CA", "-keyout", cakey, "-out", ca)
    openssl(h, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=" + cn,
            "-keyout", key, "-out", csr)
    openssl(h, "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", cakey, "-CAcreateserial", "-days", "2",
            "-extfile", ext, "-out", cert)
    return ca, cert, key


def localhost_server_context(h, name, alpn=None):
    """A server-side ssl.SSLContext with a certificate for localhost and 127.0.0.1 from a CA made in h.path(name),
    ALPN limited to alpn when given. Returns (ca path, context), or None when openssl is missing (a failed check
    under CI, where tests/run installs it)."""
    if not shutil.which("openssl"):
        if os.environ.get("CI"):
            h.check(False, "openssl installed")
        return None
    d = h.path(name)
    os.makedirs(d)
    ca, cert, key = make_ca(h, d, "localhost", "DNS:localhost,IP:127.0.0.1")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    if alpn:
        ctx.set_alpn_protocols(alpn)
    return ca, ctx


def tls_stat(stderr, word):
    """Sum of '<n> <word>' over the --verbose 'tls:' worker lines."""
    total = 0
    for line in stderr.splitlines():
        if ": tls: " in line:
            for part in line.split(": tls: ", 1)[1].split(", "):
                if word in part:
                    total += int(part.split()[0])
    return total
