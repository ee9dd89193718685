#!/usr/bin/env python3
"""A TCP fault proxy for tests: sits between surge and a server on 127.0.0.1 and adds what a network does to a
stream, since this kernel has no netem (docs/faults.md).

    client --> 127.0.0.1:LISTEN --(proxy: delay, jitter, bandwidth cap, loss spikes, link down)--> 127.0.0.1:TO

Per direction of each connection, every chunk read (at most 16 KiB) gets a release time and is written when it
falls due, in order:

    sent      = max(arrival, link free) + bytes / rate        (--rate-bps: one FIFO link per direction, shared
                                                                by all connections, as a capped link is)
    release   = max(sent + delay + U(-jitter, +jitter) [+ loss spike], the previous chunk's release)

The max() keeps byte order: TCP hands the application an in-order stream, so a late chunk holds up everything
behind it (head-of-line blocking), as it would on a real link.

What a userspace TCP proxy cannot do: drop or reorder segments inside a stream. The proxy's sockets are TCP on
loopback, so the kernel delivers every byte in order. What an application sees of a lost segment is a stall: the
segment and every byte behind it arrive one retransmission timeout (Linux's minimum RTO is 200 ms) or one
round trip (fast retransmit) late. --loss P emulates that: each chunk with probability P is held --loss-delay-ms
(default 200) more, and the chunks behind it wait for it. Reordering inside one stream is invisible to the
application except as the same kind of delay (the receiver's TCP waits for the gap to fill): use --loss with a
small --loss-delay-ms. Neither changes what TCP's own congestion control does (no shrinking window); for that,
tunloss.py beside this file drops packets below TCP (a TUN device in a network namespace).

Link down (--down-at S --down-for D, or Proxy.link_down()): for D seconds nothing is read or written in either
direction on any connection, and connections are kept; then forwarding resumes where it stopped. The senders'
kernel buffers fill and they see backpressure, as across a pulled cable for a few seconds. A connection accepted
while the link is down completes its handshake (the kernel answers SYNs on a listening socket), but nothing
passes, and the proxy connects upstream only when the link is back up.

Bounded: at most --max-connections connections at a time (default 1024), each direction buffers at most 256 KiB
(then stops reading: backpressure), and the command-line proxy exits after --exit-after seconds (default 300).

Use from a test (in-process; asyncio on a thread of its own):

    with FaultProxy(("127.0.0.1", mock.port), delay_ms=250) as p:
        run surge against p.url; p.link_down(3.0, after=2.0); p.stats()

or as a command (prints its port):

    python3 tests/tools/faultproxy.py --to 127.0.0.1:8000 --delay-ms 50 --jitter-ms 10 --port-file F
"""

import argparse
import asyncio
import os
import random
import signal
import socket
import struct
import sys
import threading
import time

CHUNK = 16384
QUEUE_CHUNKS = 16  # per direction: 16 x 16 KiB buffered at most, then the reader waits


class Link:
    """One direction of the link (up: client to server, down: server to client), shared by all connections."""

    def __init__(self, rate_bps):
        self.rate = float(rate_bps or 0)  # bytes per second; 0: no cap
        self.free_at = 0.0  # when the link has sent everything given so far (loop clock)
        self.bytes = 0  # bytes written to the far side
        self.chunks = 0
        self.spikes = 0  # chunks given a loss spike
        self.first_write = None
        self.last_write = None

    def transmit(self, now, n):
        """The time the link has sent n more bytes handed over at now (FIFO)."""
        if self.rate <= 0:
            return now
        self.free_at = max(self.free_at, now) + n / self.rate
        return self.free_at


class FaultProxy:
    """The proxy. Parameters (each optional): delay_ms (one way, each direction), jitter_ms (uniform +-, each
    chunk), rate_bps (bytes/s per direction, over all connections), loss (0..1, per chunk) with loss_delay_ms,
    directions ("both", "up" or "down": where delay, jitter and loss apply; the cap applies to both),
    seed (jitter and loss draws), max_connections, listen (host, port)."""

    def __init__(self, target, delay_ms=0.0, jitter_ms=0.0, rate_bps=0, loss=0.0, loss_delay_ms=200.0,
                 directions="both", seed=1, max_connections=1024, listen=("127.0.0.1", 0)):
        if directions not in ("both", "up", "down"):
            raise ValueError("directions: both, up or down, not %r" % directions)
        for name, v in (("delay_ms", delay_ms), ("jitter_ms", jitter_ms), ("rate_bps", rate_bps),
                        ("loss_delay_ms", loss_delay_ms)):
            if v < 0:
                raise ValueError("%s must be >= 0, not %r" % (name, v))
        if not 0.0 <= loss <= 1.0:
            raise ValueError("loss must be in 0..1, not %r" % loss)
        if jitter_ms > delay_ms:
            raise ValueError("jitter_ms (%g) above delay_ms (%g): a chunk cannot arrive before it was sent"
                             % (jitter_ms, delay_ms))
        self.target = target
        self.delay = delay_ms / 1000.0
        self.jitter = jitter_ms / 1000.0
        self.loss = loss
        self.loss_delay = loss_delay_ms / 1000.0
        self.directions = directions
        self.rng = random.Random(seed)
        self.max_connections = max_connections
        self.listen_addr = listen
        self.links = {"up": Link(rate_bps), "down": Link(rate_bps)}
        self.connections = 0  # accepted in all
        self.open = 0
        self.refused = 0  # over max_connections, or the upstream connect failed
        self.resetting = False  # reset_new(): new connections are reset once their first bytes arrive
        self.reset_since = None  # when the resets began (time.time())
        self.reset = 0  # connections reset that way
        self.downs = []  # [start, end] of each link-down window, on the wall clock (time.time(), as surge's
        # summary's clock.start_realtime_ns)
        self._up = None  # asyncio.Event: set while the link is up
        self._loop = None
        self._thread = None
        self._server = None
        self._tasks = set()
        self._ready = threading.Event()
        self._error = None
        self.port = None
        self.url = None

    # -- lifetime -----------------------------------------------------------------------------------------------
    def start(self):
        self._thread = threading.Thread(target=self._run, name="faultproxy", daemon=True)
        self._thread.start()
        if not self._ready.wait(10) or self._error:
            raise RuntimeError("fault proxy did not start: %s" % (self._error or "timeout"))
        return self

    def stop(self):
        if self._loop and self._thread and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._shutdown)
            self._thread.join(10)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    def _run(self):
        self._loop = asyncio.new_event_loop()
        try:
            self._loop.run_until_complete(self._main())
        except Exception as e:  # noqa: BLE001 - reported through start()
            self._error = repr(e)
            self._ready.set()
        finally:
            self._loop.close()

    async def _main(self):
        self._up = asyncio.Event()
        self._up.set()
        self._stopped = asyncio.Event()
        self._server = await asyncio.start_server(self._accept, self.listen_addr[0], self.listen_addr[1],
                                                  limit=CHUNK)
        self.port = self._server.sockets[0].getsockname()[1]
        self.url = "http://%s:%d" % (self.listen_addr[0], self.port)
        self._ready.set()
        await self._stopped.wait()
        # every connection's task ends (cancelled) before the loop closes
        tasks = list(self._tasks)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _shutdown(self):
        self._server.close()
        self._up.set()
        self._stopped.set()

    # -- faults set while running -------------------------------------------------------------------------------
    def link_down(self, seconds, after=0.0):
        """Take the link down for `seconds`, `after` seconds from now (thread-safe; returns at once)."""
        self._loop.call_soon_threadsafe(self._loop.call_later, after, self._down, seconds)

    def reset_new(self, after=0.0):
        """From `after` seconds from now, every new connection is accepted, its first bytes read (a TLS ClientHello)
        and then reset (RST), never forwarded: a TLS front whose backend is gone. Connections already open go on.
        reset_since is when that began (time.time())."""
        def on():
            self.reset_since = time.time()
            self.resetting = True
        self._loop.call_soon_threadsafe(self._loop.call_later, after, on)

    def _down(self, seconds):
        self.downs.append([time.time(), None])
        self._up.clear()

        def up():
            self.downs[-1][1] = time.time()
            self._up.set()
        self._loop.call_later(seconds, up)

    def stats(self):
        """Counters: connections, open, refused, and per direction bytes, chunks, spikes, first/last write
        (time.monotonic), and the link-down windows ([start, end], time.time())."""
        out = {"connections": self.connections, "open": self.open, "refused": self.refused, "reset": self.reset,
               "downs": [tuple(d) for d in self.downs]}
        for name, link in self.links.items():
            out[name] = {"bytes": link.bytes, "chunks": link.chunks, "spikes": link.spikes,
                         "first_write": link.first_write, "last_write": link.last_write}
        return out

    # -- forwarding ---------------------------------------------------------------------------------------------
    async def _accept(self, creader, cwriter):
        task = asyncio.current_task()
        self._tasks.add(task)
        self.connections += 1
        swriter = None
        try:
            if self.open >= self.max_connections:
                self.refused += 1
                return
            if self.resetting:
                await creader.read(CHUNK)
                sock = cwriter.get_extra_info("socket")
                if sock is not None:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                cwriter.transport.abort()
                self.reset += 1
                return
            self.open += 1
            try:
                await self._up.wait()  # no upstream connect while the link is down
                try:
                    sreader, swriter = await asyncio.open_connection(self.target[0], self.target[1], limit=CHUNK)
                except OSError:
                    self.refused += 1
                    return
                await asyncio.gather(self._pump(creader, swriter, "up"), self._pump(sreader, cwriter, "down"))
            finally:
                self.open -= 1
        except asyncio.CancelledError:
            pass
        finally:
            cwriter.close()
            if swriter is not None:
                swriter.close()
            self._tasks.discard(task)

    def _faulted(self, direction):
        return self.directions in ("both", direction)

    async def _pump(self, reader, writer, direction):
        """Read chunks from reader, give each a release time, write them in order; EOF is passed on after the
        last chunk (a half close, as TCP's FIN)."""
        loop = asyncio.get_running_loop()
        link = self.links[direction]
        queue = asyncio.Queue(QUEUE_CHUNKS)
        faulted = self._faulted(direction)

        async def read_side():
            last = 0.0
            try:
                while True:
                    await self._up.wait()
                    data = await reader.read(CHUNK)
                    if not data:
                        break
                    await self._up.wait()  # read just as the link went down: hold it until it is back
                    now = loop.time()
                    release = link.transmit(now, len(data))
                    if faulted:
                        release += self.delay
                        if self.jitter:
                            release += self.rng.uniform(-self.jitter, self.jitter)
                        if self.loss and self.rng.random() < self.loss:
                            release += self.loss_delay
                            link.spikes += 1
                    release = max(release, last)
                    last = release
                    await queue.put((release, data))
            except (ConnectionError, OSError):
                pass
            await queue.put((None, None))

        async def write_side():
            done = False  # the reader's end mark was taken
            try:
                while True:
                    release, data = await queue.get()
                    if data is None:
                        done = True
                        break
                    while True:
                        wait = release - loop.time()
                        if wait > 0:
                            await asyncio.sleep(wait)
                        if self._up.is_set():
                            break
                        t0 = loop.time()
                        await self._up.wait()  # down: the chunk waits as long as the outage, then goes on
                        release += loop.time() - t0
                    writer.write(data)
                    await writer.drain()
                    t = time.monotonic()
                    link.bytes += len(data)
                    link.chunks += 1
                    if link.first_write is None:
                        link.first_write = t
                    link.last_write = t
                if writer.can_write_eof():
                    writer.write_eof()
            except (ConnectionError, OSError):
                # the far side went away: close this side too (the client sees a reset or EOF, as it would) and
                # drop what is still queued, so that the reader is never stuck on a full queue
                writer.close()
                while not done:
                    done = (await queue.get())[1] is None

        await asyncio.gather(read_side(), write_side(), return_exceptions=True)


def _hostport(text, what):
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise SystemExit("faultproxy: %s wants HOST:PORT, not %r" % (what, text))
    return host, int(port)


def main(argv=None):
    ap = argparse.ArgumentParser(description="A TCP fault proxy: delay, jitter, bandwidth cap, loss-like delay "
                                 "spikes and link down between a client and a server (docs/faults.md).")
    ap.add_argument("--listen", default="127.0.0.1:0", help="HOST:PORT to listen on (default 127.0.0.1:0)")
    ap.add_argument("--to", required=True, help="HOST:PORT of the server")
    ap.add_argument("--delay-ms", type=float, default=0.0, help="one-way delay added to each chunk")
    ap.add_argument("--jitter-ms", type=float, default=0.0, help="uniform +- spread around the delay")
    ap.add_argument("--rate-bps", type=float, default=0.0, help="bandwidth cap per direction, bytes per second")
    ap.add_argument("--loss", type=float, default=0.0, help="fraction of chunks given a loss spike (0..1)")
    ap.add_argument("--loss-delay-ms", type=float, default=200.0, help="the spike (default 200: Linux's min RTO)")
    ap.add_argument("--directions", default="both", choices=("both", "up", "down"),
                    help="where delay, jitter and loss apply (default both)")
    ap.add_argument("--down-at", type=float, help="take the link down this many seconds after start")
    ap.add_argument("--down-for", type=float, default=3.0, help="for this many seconds (default 3)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-connections", type=int, default=1024)
    ap.add_argument("--port-file", help="write the bound port here once listening")
    ap.add_argument("--exit-after", type=float, default=300.0, help="exit after this many seconds (default 300)")
    a = ap.parse_args(argv)
    try:
        p = FaultProxy(_hostport(a.to, "--to"), delay_ms=a.delay_ms, jitter_ms=a.jitter_ms, rate_bps=a.rate_bps,
                       loss=a.loss, loss_delay_ms=a.loss_delay_ms, directions=a.directions, seed=a.seed,
                       max_connections=a.max_connections, listen=_hostport(a.listen, "--listen"))
    except ValueError as e:
        raise SystemExit("faultproxy: %s" % e)
    p.start()
    print(p.port, flush=True)
    if a.port_file:
        tmp = a.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % p.port)
        os.replace(tmp, a.port_file)
    if a.down_at is not None:
        p.link_down(a.down_for, after=a.down_at)
    done = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: done.set())
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    done.wait(a.exit_after)
    p.stop()
    s = p.stats()
    print("faultproxy: %d connections; up %d bytes, down %d bytes; %d loss spikes; link down %s"
          % (s["connections"], s["up"]["bytes"], s["down"]["bytes"], s["up"]["spikes"] + s["down"]["spikes"],
             ", ".join("%.3f s" % (b - a) for a, b in s["downs"] if b) or "never"), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
