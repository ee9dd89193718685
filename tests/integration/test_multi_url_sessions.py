# ctest: one-backend (the balancing and the merge are above the event loop)
"""Several URLs with multi-turn sessions and over several ranks (docs/metrics.md, "Several URLs"), checked at the
servers. Sessions: every turn of a session goes to one URL (its server holds the history's cache), the URL chosen
per session by round_robin, over HTTP/1.1 and HTTP/2: the mocks' records (each turn's text names its session) show
each session's turns at one mock and each mock with its share of the sessions. Ranks: two ranks (--world-size 2)
against two mocks and a URL that never listened: each mock got what the merged per-URL section says, the merged
per-URL percentiles are those of the merged records of that URL, and the dead URL's outages and failed connects
are the ranks' summed."""

import json
import os
import re
import subprocess

import harness
from profiling import Result, nearest_rank, profile
from test_dist import finish, start_ranks
from servers import refused_port
from test_multi_url import check_totals, per_url

TURN = re.compile(r"\bs(\d+)t(\d+)\b")


def sessions_at(m):
    """{session label: [turn, ...]} from a mock's own records (each turn's text is 's<k>t<j> ...')."""
    out = {}
    for x in m.records():
        g = TURN.search(x.get("prompt", ""))
        if g:
            out.setdefault(int(g.group(1)), []).append(int(g.group(2)))
    return out


def main(h):
    # -- sessions: 16 conversations of 3 turns from a multi_turn file, 2 workers, 2 mocks
    n_sess, turns = 16, 3
    path = h.path("conv.jsonl")
    with open(path, "w") as f:
        for k in range(n_sess):
            f.write(json.dumps({"session_id": "c%d" % k, "turns": [
                {"text": "s%dt%d tell me more about item %d" % (k, t, k), "delay": 5} for t in range(turns)]}) + "\n")
    n = n_sess * turns
    for proto in ([], ["--http2"]):
        what = "sessions over " + ("HTTP/2" if proto else "HTTP/1.1")
        with h.mock("--ttft-ms", 3, "--itl-ms", 1, record=True) as a, h.mock("--ttft-ms", 3, "--itl-ms", 1,
                                                                           record=True) as b:
            r = profile(h, a.url, "-u", b.url, "--input-file", path, "--concurrency", 4, "--workers", 2,
                        "--request-count", n, "--streaming", "--output-tokens-mean", 3, *proto)
            a.stop()
            b.stop()
            sa, sb = sessions_at(a), sessions_at(b)
            h.check(len(a.records()) + len(b.records()) == n, what + ": every turn reached a mock",
                    (len(a.records()), len(b.records())))
            h.check(not set(sa) & set(sb), what + ": no session has turns at both mocks", sorted(set(sa) & set(sb)))
            h.check(sorted(set(sa) | set(sb)) == list(range(n_sess)) and
                    all(sorted(v) == list(range(turns)) for v in list(sa.values()) + list(sb.values())),
                    what + ": every session whole, at one mock", (sa, sb))
            # round robin per session: each worker's sessions alternate over the two URLs
            h.check(len(sa) == len(sb) == n_sess // 2, what + ": each mock got half the sessions", (len(sa), len(sb)))
            if r.summary:
                check_totals(h, r, n, what)
                by = {}
                for x in r.records:
                    by.setdefault(x["session"], set()).add(x["url"])
                h.check(len(by) == n_sess and all(len(v) == 1 for v in by.values()),
                        what + ": the records give each session one URL", by)
                urls = per_url(r)
                h.check([urls[0]["request_count"], urls[1]["request_count"]] == [len(a.records()), len(b.records())],
                        what + ": per-URL counts = the mocks'", (urls, len(a.records()), len(b.records())))

    # -- two ranks against two mocks and a URL that never listened
    n = 200
    dead = "http://127.0.0.1:%d" % refused_port()
    with h.mock("--ttft-ms", 5, "--itl-ms", 1, record=True) as a, h.mock("--ttft-ms", 5, "--itl-ms", 1,
                                                                       record=True) as b:
        art = h.path("ranks")
        res = finish(start_ranks(h, a.url, art, 2, ["-u", b.url, "-u", dead, "--request-rate", 100,
                                                    "--request-count", n, "--workers", 1, "--streaming",
                                                    "--output-tokens-mean", 3]))
        a.stop()
        b.stop()
        for rk, (rc, out, err) in res.items():
            h.check(rc == 0, "ranks: rank %d exits 0" % rk, (rc, err[-2000:]))
        merged = Result(subprocess.CompletedProcess([], 0, "", ""), art)
        s = merged.summary
        if not h.check(s is not None, "ranks: rank 0 wrote the merged summary", res[0][2][-2000:]):
            return
        got = [len(a.records()), len(b.records())]
        # (requests re-routed from the dead URL go to the next in turn: not an exact half each)
        h.check(sum(got) == n and all(g >= n / 4 for g in got), "ranks: both mocks served, every request once", got)
        check_totals(h, merged, n, "ranks")
        urls = per_url(merged)
        h.check([urls[0]["request_count"], urls[1]["request_count"]] == got,
                "ranks: merged per-URL counts = the mocks'", ([urls[i]["request_count"] for i in (0, 1)], got))
        for i in (0, 1):
            vals = [x["time_to_first_token_ms"] for x in merged.records if x["status"] == "ok" and x["url"] == i]
            for pc in (50, 90, 99):
                want, have = nearest_rank(vals, pc), urls[i]["time_to_first_token"]["p%d" % pc]
                h.check(abs(have - want) <= want / 2048 + 1e-3,
                        "ranks: merged URL %d TTFT p%d %.4f = %.4f from its merged records" % (i, pc, have, want))
        parts = []
        for rk in (0, 1):
            with open(os.path.join(art, "rank%d" % rk, "profile_export_surge.json")) as f:
                parts.append({u["index"]: u for u in json.load(f).get("urls", [])})
        d = urls[2]
        h.check(d["request_count"] + d["error_request_count"] == 0 and d["down_at_end"],
                "ranks: no request sent to the dead URL, out at the end", d)
        for key in ("outages", "connect_failures", "rerouted_request_count"):
            h.check(d[key] == sum(p[2][key] for p in parts) and (key != "outages" or d[key] >= 2),
                    "ranks: the dead URL's %s summed over the ranks" % key, (d[key], [p[2][key] for p in parts]))


if __name__ == "__main__":
    harness.main(main)
