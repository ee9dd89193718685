#!/usr/bin/env python3
"""Packet loss and reordering below TCP, for tests: a TUN device in a private network namespace, with a loop
that drops, delays and reorders the IP packets between a client and a server (docs/faults.md). Where the fault
proxy (faultproxy.py) can only delay bytes of a stream, this loses real segments: TCP retransmits them, its
congestion window shrinks, a SYN lost costs a second.

Run a command inside it (as an unprivileged user: `unshare -rn` gives a user and network namespace):

    unshare -rn python3 tests/tools/tunloss.py --loss 0.05 -- COMMAND ARGS...

Inside the namespace, the device sgtun0 holds 10.9.0.1. A client that connects to 10.9.0.2:PORT reaches a server
listening on 10.9.0.1:PORT (or 0.0.0.0:PORT) through the loop, which rewrites addresses as a NAT does (the
server sees the client as 10.9.0.3): every packet of that connection, both ways, crosses the loop and can be
dropped (--loss), held (--delay-ms) or held longer than the ones after it (--reorder, --reorder-ms). Connections
to 127.0.0.1 do not cross it. COMMAND's exit status is this script's; when it exits, the loop prints its counters
to stderr: `tunloss: N packets, D dropped, R reordered`. Bounded: --exit-after (default 300 s) kills COMMAND.
Linux only; needs /dev/net/tun and CAP_NET_ADMIN in the namespace (unshare -rn gives it)."""

import argparse
import fcntl
import heapq
import os
import random
import select
import struct
import subprocess
import sys
import threading
import time

TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000
DEV = "sgtun0"
LOCAL, VSERVER, VCLIENT = bytes([10, 9, 0, 1]), bytes([10, 9, 0, 2]), bytes([10, 9, 0, 3])


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def rewrite(pkt):
    """The packet with its addresses rewritten (client -> virtual server becomes virtual client -> server, and
    back), checksums recomputed; None for anything else (not IPv4, not TCP, another address)."""
    if len(pkt) < 20 or pkt[0] >> 4 != 4 or pkt[9] != 6:
        return None
    ihl = (pkt[0] & 0x0F) * 4
    src, dst = pkt[12:16], pkt[16:20]
    if dst == VSERVER and src == LOCAL:
        src, dst = VCLIENT, LOCAL
    elif dst == VCLIENT and src == LOCAL:
        src, dst = VSERVER, LOCAL
    else:
        return None
    total = struct.unpack("!H", pkt[2:4])[0]
    ip = bytearray(pkt[:ihl])
    ip[12:16], ip[16:20] = src, dst
    ip[10:12] = b"\0\0"
    ip[10:12] = struct.pack("!H", checksum(bytes(ip)))
    tcp = bytearray(pkt[ihl:total])
    tcp[16:18] = b"\0\0"
    pseudo = src + dst + struct.pack("!BBH", 0, 6, len(tcp))
    tcp[16:18] = struct.pack("!H", checksum(pseudo + bytes(tcp)))
    return bytes(ip) + bytes(tcp)


class Loop:
    def __init__(self, fd, loss, delay, reorder, reorder_delay, seed):
        self.fd = fd
        self.loss, self.delay, self.reorder, self.reorder_delay = loss, delay, reorder, reorder_delay
        self.rng = random.Random(seed)
        self.heap = []  # (due, seq, packet)
        self.seq = 0
        self.packets = self.dropped = self.reordered = self.other = 0
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            now = time.monotonic()
            while self.heap and self.heap[0][0] <= now:
                _, _, p = heapq.heappop(self.heap)
                try:
                    os.write(self.fd, p)
                except OSError:
                    pass
            wait = min(0.05, self.heap[0][0] - now) if self.heap else 0.05
            r, _, _ = select.select([self.fd], [], [], max(0.0, wait))
            if not r:
                continue
            pkt = os.read(self.fd, 65536)
            out = rewrite(pkt)
            if out is None:
                self.other += 1
                continue
            self.packets += 1
            if self.loss and self.rng.random() < self.loss:
                self.dropped += 1
                continue
            due = time.monotonic() + self.delay
            if self.reorder and self.rng.random() < self.reorder:
                due += self.reorder_delay
                self.reordered += 1
            self.seq += 1
            heapq.heappush(self.heap, (due, self.seq, out))


def sh(*cmd):
    subprocess.run(cmd, check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--loss", type=float, default=0.0, help="fraction of packets dropped (0..1)")
    ap.add_argument("--delay-ms", type=float, default=0.0, help="one-way delay of every packet")
    ap.add_argument("--reorder", type=float, default=0.0, help="fraction of packets held --reorder-ms more")
    ap.add_argument("--reorder-ms", type=float, default=5.0, help="(default 5)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--exit-after", type=float, default=300.0)
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not cmd:
        sys.exit("tunloss: no command given (tunloss.py [options] -- COMMAND ...)")
    if not 0 <= a.loss < 1 or not 0 <= a.reorder <= 1 or a.delay_ms < 0 or a.reorder_ms < 0:
        sys.exit("tunloss: --loss in [0, 1), --reorder in [0, 1], delays >= 0")
    try:
        fd = os.open("/dev/net/tun", os.O_RDWR)
        fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", DEV.encode(), IFF_TUN | IFF_NO_PI))
        sh("ip", "link", "set", "lo", "up")
        sh("ip", "addr", "add", "10.9.0.1/24", "dev", DEV)
        sh("ip", "link", "set", DEV, "up")
    except (OSError, subprocess.CalledProcessError) as e:
        print("tunloss: cannot set up %s (run it under `unshare -rn`): %s" % (DEV, e), file=sys.stderr)
        return 75
    loop = Loop(fd, a.loss, a.delay_ms / 1000, a.reorder, a.reorder_ms / 1000, a.seed)
    t = threading.Thread(target=loop.run, daemon=True)
    t.start()
    p = subprocess.Popen(cmd)
    try:
        rc = p.wait(timeout=a.exit_after)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = p.wait()
        print("tunloss: killed %s after %g s" % (cmd[0], a.exit_after), file=sys.stderr)
    loop.stop.set()
    t.join(5)
    print("tunloss: %d packets, %d dropped, %d reordered" % (loop.packets, loop.dropped, loop.reordered),
          file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
