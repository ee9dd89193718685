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


def make_dated_self_signed(h, d, start, end):
    """A self-signed CA certificate for localhost and 127.0.0.1 valid from start to end (openssl ca dates,
    YYYYMMDDHHMMSSZ): openssl req cannot make one in the past. Returns (cert, key) paths."""
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "index.txt"), "w"):
        pass
    with open(os.path.join(d, "serial"), "w") as f:
        f.write("01\n")
    cnf = os.path.join(d, "ca.cnf")
    with open(cnf, "w") as f:
        f.write("[ca]\ndefault_ca = d\n[d]\ndir = %s\ndatabase = $dir/index.txt\nserial = $dir/serial\n"
                "new_certs_dir = $dir\ndefault_md = sha256\npolicy = p\ncopy_extensions = copy\n"
                "[p]\ncommonName = supplied\n" % d)
    key, csr, cert = os.path.join(d, "dated.key"), os.path.join(d, "dated.csr"), os.path.join(d, "dated.pem")
    openssl(h, "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj",
            "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-addext",
            "basicConstraints=critical,CA:TRUE", "-keyout", key, "-out", csr)
    openssl(h, "ca", "-batch", "-config", cnf, "-selfsign", "-keyfile", key, "-in", csr, "-startdate", start,
            "-enddate", end, "-out", cert)
    return cert, key


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
