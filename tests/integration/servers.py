"""Third-party servers the integration tests start on 127.0.0.1 and stop themselves: a free port, nginx from a
config body (the common preamble — one worker, foreground, temp paths under its own prefix — is added here), and
llama.cpp's llama-server with a tiny model (built by tests/data/fetch-llama-server)."""
import os
import random
import shutil
import socket
import subprocess
import time


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def free_port():
    """A port for a server the test starts (nginx, llama-server, a coordinator), which binds it a moment later.
    Drawn at random below the kernel's ephemeral range, where no connect() is given a local port: a port from bind(0)
    is an ephemeral one, and any test beside this one that connects in that moment can be handed it (the server then
    fails to bind). A draw that another socket holds is drawn again."""
    lo = _ephemeral_low()
    if lo > 12000:
        rng = random.SystemRandom()
        for _ in range(200):
            port = rng.randrange(10000, lo)
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
            finally:
                s.close()
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


_held = []


def refused_port():
    """A port nothing listens on and nothing else can take: bound but never listening, held until this process
    exits, so connects to it are refused. A port bound and closed at once (free_port) can be taken by a test
    running beside this one, and the "dead" URL then answers."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    _held.append(s)
    return s.getsockname()[1]


def wait_listening(proc, ports, seconds=10):
    """Until every port accepts a connection, the process exits, or the time is up."""
    deadline = time.monotonic() + seconds
    for port in ports:
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if proc.poll() is not None:
                    return
                time.sleep(0.02)


NGINX_PREAMBLE = """
worker_processes 1;
daemon off;
error_log {prefix}/error.log warn;
pid {prefix}/nginx.pid;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {prefix}/body;
  proxy_temp_path {prefix}/proxy;
  fastcgi_temp_path {prefix}/fcgi;
  uwsgi_temp_path {prefix}/uwsgi;
  scgi_temp_path {prefix}/scgi;
"""


class Nginx:
    """nginx with `http_body` (a str.format template closed with the http block's "}}") inside the common
    preamble. `ports` names the listening ports to allocate: each becomes an attribute and a format field;
    everything in `fields` is a format field too. Stopped on exit (and by `timeout` after 120 s regardless)."""

    def __init__(self, h, http_body, ports, **fields):
        self.prefix = h.path("nginx-%d" % free_port())
        os.makedirs(self.prefix)
        for name in ports:
            setattr(self, name, free_port())
            fields[name] = getattr(self, name)
        conf = os.path.join(self.prefix, "nginx.conf")
        with open(conf, "w") as f:
            f.write((NGINX_PREAMBLE + http_body).format(prefix=self.prefix, **fields))
        self.proc = subprocess.Popen(["timeout", "120", shutil.which("nginx"), "-c", conf, "-p", self.prefix],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_listening(self.proc, [getattr(self, name) for name in ports])

    def failed(self):
        """'' while it runs, else what it printed."""
        return self.proc.stderr.read().decode() if self.proc.poll() is not None else ""

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.stop()


# llama.cpp's llama-server and its tiny model, as tests/data/fetch-llama-server lays them out under harness.TESTDATA
LLAMA_SERVER_DIR = "llama-server-3.22.1"


# nginx as an h2c reverse proxy (prior knowledge; proxy_buffering off, so SSE streams through) in front of an
# HTTP/1.1 server on 127.0.0.1:{upstream_port}.
NGINX_H2C_PROXY = """  upstream backend {{ server 127.0.0.1:{upstream_port}; {keepalive} }}
  server {{
    listen 127.0.0.1:{port} http2;
    http2_max_concurrent_streams 128;
    keepalive_requests {keepalive_requests};
    location / {{
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }}
  }}
}}
"""


def nginx_h2c(h, upstream_port, keepalive_requests=100000, upstream_keepalive=True):
    """An Nginx serving h2c in front of upstream_port; .url is its address. upstream_keepalive=False: a fresh
    upstream connection per request, for a server that closes idle kept-alive connections (llama-server), where
    nginx would answer a request it cannot re-send (a POST) with 502."""
    ng = Nginx(h, NGINX_H2C_PROXY, ["port"], upstream_port=upstream_port, keepalive_requests=keepalive_requests,
               keepalive="keepalive 64;" if upstream_keepalive else "")
    ng.url = "http://127.0.0.1:%d" % ng.port
    return ng


class LlamaServer:
    """llama.cpp's llama-server (a real third-party OpenAI-compatible server: cpp-httplib, HTTP/1.1) with the tiny
    random-weight model, on 127.0.0.1 and a free port: `-c ctx -np parallel -t 1`, `parallel` requests decoding at
    once. Its binary and model come from tests/data/fetch-llama-server; when they are missing, a failed check under
    CI (the constructor raises RuntimeError) and a skip elsewhere (harness.Skip). start() waits at most
    `start_timeout` s for GET /health to answer 200; stop() (also on leaving a with block) terminates it, then kills
    it; `timeout` ends it after `lifetime` s whatever the test does. Its log is `log_path`."""

    def __init__(self, h, parallel=16, ctx=8192, lifetime=300, start_timeout=60, extra=()):
        import harness
        base = os.path.join(harness.TESTDATA, LLAMA_SERVER_DIR)
        fetch = "tests/data/fetch-llama-server"
        binary = harness.testdata_file(h, os.path.join(LLAMA_SERVER_DIR, "llama-server"), fetch)
        model = binary and harness.testdata_file(h, os.path.join(LLAMA_SERVER_DIR, "tiny-llama.gguf"), fetch)
        if not model:
            raise RuntimeError("llama-server test data missing from %s" % base)
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.log_path = h.path("llama-server-%d.log" % self.port)
        self.cmd = ["timeout", str(lifetime), binary, "-m", model, "--host", "127.0.0.1", "--port", str(self.port),
                    "-c", str(ctx), "-np", str(parallel), "-t", "1"] + [str(a) for a in extra]
        self.env = dict(os.environ)
        # a shared-library build keeps its lib*.so beside the binary; the script's static one needs nothing
        self.env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (base, os.environ.get("LD_LIBRARY_PATH")) if p)
        self.start_timeout = start_timeout
        self.proc = None

    def log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def start(self):
        import urllib.error
        import urllib.request
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(self.cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         env=self.env)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("llama-server exited with %d before it was ready: %s"
                                   % (self.proc.returncode, self.log()[-2000:]))
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=1) as r:
                    if r.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                pass  # not listening yet, or 503 while the model loads
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("llama-server not ready within %g s: %s" % (self.start_timeout, self.log()[-2000:]))

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *a):
        self.stop()


class TcpServer:
    """A TCP server on 127.0.0.1 for what no real server does on demand (accept and never answer, answer the first
    connection one way and the rest another): each accepted connection goes to handle(conn, index, stop) in a
    thread of its own (index counts from 0; stop is a threading.Event set on exit). With ssl_context connections
    are TLS-wrapped first (one whose handshake fails is just closed). Bounded: it stops by itself after `lifetime`
    seconds, and every connection still open is closed on exit. Attributes: port, url, accepted."""

    def __init__(self, handle, lifetime=60, ssl_context=None, scheme="http"):
        import threading
        self.handle = handle
        self.ssl_context = ssl_context
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.url = "%s://127.0.0.1:%d" % (scheme, self.port)
        self.accepted = 0
        self.stop = threading.Event()
        self.conns = []
        self.lock = threading.Lock()
        self.deadline = time.monotonic() + lifetime
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self):
        import threading
        while not self.stop.is_set() and time.monotonic() < self.deadline:
            try:
                c, _ = self.sock.accept()
            except OSError:
                continue
            with self.lock:
                self.conns.append(c)
                index = self.accepted
                self.accepted += 1
            threading.Thread(target=self._run, args=(c, index), daemon=True).start()
        self.stop.set()

    def _run(self, c, index):
        try:
            if self.ssl_context is not None:
                c.settimeout(5)
                c = self.ssl_context.wrap_socket(c, server_side=True)
                with self.lock:
                    self.conns.append(c)
            self.handle(c, index, self.stop)
        except OSError:
            pass

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *a):
        self.stop.set()
        self.thread.join(5)
        with self.lock:
            for c in self.conns:
                try:
                    c.close()
                except OSError:
                    pass
        self.sock.close()


def read_until_closed(conn, stop, seconds=60):
    """Take whatever the peer sends, answer nothing, until it closes, `stop` is set or the time is up."""
    conn.settimeout(0.1)
    deadline = time.monotonic() + seconds
    while not stop.is_set() and time.monotonic() < deadline:
        try:
            if not conn.recv(65536):
                return
        except socket.timeout:
            continue
        except OSError:
            return
