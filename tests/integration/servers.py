"""Third-party servers the integration tests start on 127.0.0.1 and stop themselves: a free port, and nginx from a
config body (the common preamble — one worker, foreground, temp paths under its own prefix — is added here)."""
import os
import shutil
import socket
import subprocess
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


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
