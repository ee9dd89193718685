# ctest: epoll-asan (run on epoll under ASan too: tests/CMakeLists.txt)
"""surge mock over h2c against a client that opens huge flow-control windows and then stops reading: many
streams of long streamed outputs must not pile up in the mock's memory (nghttp2's flow control does not bound
it when the client's windows are 2 GiB; the mock's own back-pressure must). The mock's RSS is read from
/proc/PID/status while the client sits on an unread socket; then the client reads everything and each stream's
SSE must arrive whole. Uses the h2 package (Debian: python3-h2); under CI its absence fails the test."""
import json
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402

SYSTEM_PYTHON = "/usr/bin/python3"

# The interpreter running the tests may lack h2 (a pyenv Python); Debian's has it with python3-h2.
try:
    import h2.config
    import h2.connection
    import h2.events
    import h2.settings

    HAVE_H2 = True
except ImportError:
    HAVE_H2 = False
    if os.path.realpath(sys.executable) != os.path.realpath(SYSTEM_PYTHON) and os.access(SYSTEM_PYTHON, os.X_OK) \
            and subprocess.run([SYSTEM_PYTHON, "-c", "import h2"], capture_output=True, timeout=30).returncode == 0:
        os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON] + sys.argv)

STREAMS = 64
TOKENS = 20000  # per stream: about 2.5 MB of SSE each, 160 MB in all
MAX_WINDOW = 2 ** 31 - 1


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def main(h):
    if not HAVE_H2:
        if os.environ.get("CI"):
            h.check(False, "python h2 present (Debian: python3-h2, SURGE_TEST_PKGS)")
        h.skip("python h2 missing (Debian: python3-h2)")
    # itl 0: every token is due at once, so the mock would render whole responses in one go
    with h.mock("--ttft-ms", 0, "--itl-ms", 0, "--output-tokens", TOKENS, "--max-concurrent-streams", STREAMS,
                exit_after=60) as m:
        pid = m.proc.pid
        base = rss_kib(pid)
        sock = socket.create_connection(("127.0.0.1", m.port), timeout=10)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 10)
        conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        conn.local_settings = h2.settings.Settings(client=True, initial_values={
            h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: MAX_WINDOW})
        conn.initiate_connection()
        conn.increment_flow_control_window(MAX_WINDOW - 65535)
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "go"}], "stream": True,
                           "max_tokens": TOKENS}).encode()
        ids = []
        for _ in range(STREAMS):
            sid = conn.get_next_available_stream_id()
            conn.send_headers(sid, [(":method", "POST"), (":scheme", "http"), (":authority", "127.0.0.1"),
                                    (":path", "/v1/chat/completions"), ("content-type", "application/json")])
            conn.send_data(sid, body, end_stream=True)
            ids.append(sid)
        sock.sendall(conn.data_to_send())

        # the client reads nothing for 3 s while the mock has 160 MB of output due
        peak = 0
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:
            peak = max(peak, rss_kib(pid))
            time.sleep(0.05)
        grown_mib = (peak - base) / 1024.0
        print("mock RSS %d KiB before, %d KiB peak while the client did not read (+%.1f MiB)" % (base, peak, grown_mib))
        # about 2 x 64 streams x 64 KiB with the bound (more under ASan), 400 MiB without
        h.check(grown_mib < 64, "mock output bounded while the client does not read: +%.1f MiB < 64 MiB" % grown_mib)

        # now read everything: every stream's SSE whole, ending with [DONE]
        got = {sid: bytearray() for sid in ids}
        ended = set()
        sock.settimeout(20)
        deadline = time.monotonic() + 25
        while len(ended) < len(ids) and time.monotonic() < deadline:
            data = sock.recv(1 << 20)
            if not data:
                break
            for ev in conn.receive_data(data):
                if isinstance(ev, h2.events.DataReceived):
                    got[ev.stream_id] += ev.data
                    conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                elif isinstance(ev, (h2.events.StreamEnded, h2.events.StreamReset)):
                    ended.add(ev.stream_id)
            out = conn.data_to_send()
            if out:
                sock.sendall(out)
        sock.close()
        h.check(len(ended) == len(ids), "all %d streams ended" % len(ids), len(ended))
        complete = 0
        for sid in ids:
            text = got[sid].decode("utf-8", "replace")
            events = [e for e in text.split("\n\n") if e.startswith("data: ")]
            if text.endswith("data: [DONE]\n\n") and len(events) >= TOKENS:
                complete += 1
        h.check(complete == len(ids), "every stream's SSE whole (%d tokens, [DONE])" % TOKENS,
                "%d of %d" % (complete, len(ids)))
        m.stop()


harness.main(main)
