# ctest: run-serial (five processes measuring arrival times to the millisecond)
"""One run over three "machines": each rank and the server in a network namespace of its own, joined by a bridge
(veth pairs), as separate hosts on one switch are.

The merged result is checked against the server's own log (surge mock --record, in its namespace): every
request once (one distinct prompt each); the arrivals at the server pass a KS test for Poisson at the total
rate; the merged percentiles equal the nearest-rank values recomputed from the merged JSONL; the summary lists
the three ranks, none lost, with a start skew bound under 1 ms, and each rank's own summary says its rank.
Needs root and iproute2 (`ip netns`); skips with the reason otherwise. The namespaces are removed at the end.
"""
import json
import math
import os
import shutil
import subprocess
import time

import harness
from profiling import Result, ks_exponential, nearest_rank

NET = "10.213.77"


def ip(*args, check=True):
    p = subprocess.run(["ip"] + [str(a) for a in args], capture_output=True, text=True, timeout=20)
    if check and p.returncode != 0:
        raise RuntimeError("ip %s: %s" % (" ".join(map(str, args)), p.stderr.strip()))
    return p


class Net:
    """A bridge namespace and one namespace per host, each host at NET.<octet>."""

    def __init__(self, tag, hosts):
        self.tag = tag
        self.br = "sgbr%s" % tag
        self.names = {}
        ip("netns", "add", self.br)
        ip("-n", self.br, "link", "add", "br0", "type", "bridge")
        ip("-n", self.br, "link", "set", "br0", "up")
        for i, (name, octet) in enumerate(hosts):
            ns = "sg%s%s" % (tag, name)
            self.names[name] = (ns, "%s.%d" % (NET, octet))
            ip("netns", "add", ns)
            ip("link", "add", "sgv%s%d" % (tag, i), "netns", self.br, "type", "veth", "peer", "name", "eth0", "netns",
               ns)
            ip("-n", self.br, "link", "set", "sgv%s%d" % (tag, i), "master", "br0", "up")
            ip("-n", ns, "addr", "add", "%s/24" % self.names[name][1], "dev", "eth0")
            ip("-n", ns, "link", "set", "eth0", "up")
            ip("-n", ns, "link", "set", "lo", "up")

    def wrap(self, name):
        return ["ip", "netns", "exec", self.names[name][0]]

    def addr(self, name):
        return self.names[name][1]

    def close(self):
        for ns, _ in self.names.values():
            ip("netns", "del", ns, check=False)
        ip("netns", "del", self.br, check=False)




def main(h):
    if os.geteuid() != 0 or not shutil.which("ip"):
        h.skip("network namespaces need root and iproute2")
    tag = "%d" % (os.getpid() % 10000)
    try:
        net = Net(tag, [("srv", 10), ("r0", 20), ("r1", 21), ("r2", 22)])
    except RuntimeError as e:
        ip("netns", "del", "sgbr%s" % tag, check=False)
        for n_ in ("srv", "r0", "r1", "r2"):
            ip("netns", "del", "sg%s%s" % (tag, n_), check=False)
        h.skip("cannot make network namespaces here: %s" % e)
    try:
        # What the server sees carries the host's pauses as well as the schedule (a pause of the VM turns the
        # arrivals around it into a burst): arrivals out of the KS band are measured once more, with fresh processes,
        # and judged on the second run; a schedule that is wrong fails both.
        for attempt in (1, 2):
            # the server, in its own namespace, on its own address
            record = h.path("server%d.jsonl" % attempt)
            port_file = h.path("port%d" % attempt)
            cmd = net.wrap("srv") + [h.surge, "mock", "--host", net.addr("srv"), "--port", 0, "--port-file", port_file,
                                     "--exit-after", 120, "--ttft-ms", 5, "--itl-ms", 2, "--record", record, "--quiet"]
            mock = subprocess.Popen([str(a) for a in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            deadline = time.monotonic() + 10
            while not (os.path.exists(port_file) and open(port_file).read().strip()) and time.monotonic() < deadline:
                time.sleep(0.02)
            port = int(open(port_file).read().strip())
            url = "http://%s:%d" % (net.addr("srv"), port)
            # the ranks, each from its own address; rank 0 listens on its own
            # Five processes on two cores jitter by a millisecond or more (under a sanitizer, TSan above all, and on a
            # busy CI VM: 300/s failed the KS test there on both runs): a 10 ms mean gap keeps that small, so the KS
            # test still judges the schedule, not the host.
            n, rate = 600, 100.0
            art = h.path("art%d" % attempt)
            coord = "%s:%d" % (net.addr("r0"), 29516 + attempt)
            procs = {}
            for r in range(3):
                cmd = net.wrap("r%d" % r) + [h.surge, "profile", "-m", "mock-model", "-u", url, "--artifact-dir", art,
                                             "--no-progress", "--world-size", 3, "--rank", r, "--coordinator", coord,
                                             "--request-rate", rate, "--request-count", n, "--num-prompts", n,
                                             "--workers", 1, "--streaming", "--output-tokens-mean", 3,
                                             "--synthetic-input-tokens-mean", 30, "--random-seed", 1]
                procs[r] = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                            text=True)
            res = {}
            for r, p in procs.items():
                try:
                    o, e = p.communicate(timeout=90)
                except subprocess.TimeoutExpired:
                    p.kill()
                    o, e = p.communicate()
                res[r] = (p.returncode, o, e)
                h.check(p.returncode == 0, "rank %d (in its namespace) exits 0" % r, e[-1500:])
            mock.send_signal(2)
            mock.communicate(timeout=10)
            with open(record) as f:
                seen = [json.loads(x) for x in f if x.strip()]
            merged = Result(subprocess.CompletedProcess([], 0, "", ""), art)
            s = merged.summary
            if not h.check(s is not None, "rank 0 wrote the merged run", res[0][2][-1500:]):
                return
            h.check(len(seen) == n and len({x["prompt"] for x in seen}) == n,
                    "the server saw every request once (%d of %d, one prompt each)" % (len(seen), n))
            h.check(len(merged.records) == n and s["request_count"]["avg"] == n, "the merged run has each once",
                    s["request_count"])
            t = sorted(x["t_ns"] for x in seen)
            gaps = [(b - a) / 1e9 for a, b in zip(t, t[1:])]
            crit = 1.628 / math.sqrt(len(gaps))
            d = ks_exponential(gaps, rate)
            if d < crit or attempt == 2:
                break
            print("note: arrivals at the server: D=%.4f >= %.4f on the first run, measured again" % (d, crit))
        h.check(d < crit, "arrivals at the server: Poisson at %g/s by KS (D=%.4f < %.4f)" % (rate, d, crit))
        h.check(abs(len(gaps) / sum(gaps) - rate) / rate < 0.1, "the total rate at the server (%.1f/s)"
                % (len(gaps) / sum(gaps)))
        ok = [x for x in merged.records if x["status"] == "ok"]
        for tag_, field in (("request_latency", "request_latency_ms"),
                            ("time_to_first_token", "time_to_first_token_ms")):
            vals = [x[field] for x in ok]
            for pc in (50, 99):
                want, got = nearest_rank(vals, pc), s[tag_]["p%d" % pc]
                h.check(abs(got - want) <= want / 2048 + 1e-3, "merged %s p%d %.4f = %.4f from the merged JSONL"
                        % (tag_, pc, got, want))
        each = s.get("ranks", {}).get("each", [])
        h.check(len(each) == 3 and all(not x["lost"] for x in each), "three ranks, none lost", each)
        skew = s.get("ranks", {}).get("start_skew_bound_ms", 9)
        h.check(skew < 1.0, "start skew bound under 1 ms (%.3f ms)" % skew, s.get("ranks"))
        for r in range(3):
            with open(os.path.join(art, "rank%d" % r, "profile_export_surge.json")) as f:
                own = json.load(f)
            h.check(own.get("dist", {}).get("rank") == r, "rank %d's own summary says its rank" % r)
    finally:
        net.close()
    left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    h.check("sg%s" % tag not in left and "sgbr%s" % tag not in left, "the namespaces are gone", left)


if __name__ == "__main__":
    harness.main(main)
