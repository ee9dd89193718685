# ctest: one-backend (the ranks meet over the coordinator's own sockets, polled outside the event loop; each
# rank's workers are a single-process run's, covered on both backends by every profile test)
"""One run over several processes (--world-size/--rank/--coordinator), all on 127.0.0.1: the cases with no timed
check, beside other tests (test_dist has the timed one, run alone).

  2. A closed loop (--concurrency 6 over 3 ranks): every slot used, every request once.
  3. The launchers' environment: Open MPI's and PMI's variables (one host: rank 0 at 127.0.0.1) give the rank.
     With --server-metrics-url rank 0 alone scrapes, and its view joins the merged run; --generate-plots writes
     the merged run's report.
  4. A rank that never arrives: rank 0 gives up after --coordinator-timeout with one line naming it (exit 3),
     and the rank that came is told and exits too.
  5. A rank killed during the run: the others stop within seconds, rank 0 merges what the rest measured, marks
     the run stopped early and names the lost rank (exit 3). Rank 0 killed: a rank stops, keeps its own files,
     says where (exit 3).
  6. A rank started with another configuration, or a bad launch (--rank without --world-size): exit 2 or 3 with
     a line saying what differs, before anything is sent.
  7. SIGINT to a rank other than 0 stops every rank; the merged run is marked interrupted (exit 130).
"""
import os
import signal
import subprocess
import time

import harness
from profiling import Result
from servers import free_port
from test_dist import LOAD, finish, start_ranks


def main(h):
    load = LOAD
    with h.mock("--ttft-ms", 5, "--itl-ms", 2, "--workers", 2, record=True) as m:
        # 2. a closed loop over the ranks
        art = h.path("closed")
        res = finish(start_ranks(h, m.url, art, 3, ["--concurrency", 6, "--request-count", 300, "--num-prompts", 300,
                                                    "--workers", 2, "--output-tokens-mean", 3]))
        for r, (rc, out, err) in res.items():
            h.check(rc == 0, "closed loop: rank %d exits 0" % r, (rc, err[-1500:]))
        s = Result(subprocess.CompletedProcess([], 0, "", ""), art).summary or {}
        h.check(s.get("request_count", {}).get("avg") == 300, "closed loop: every request", s.get("request_count"))
        h.check(sum(x["workers"] for x in s.get("ranks", {}).get("each", [])) == 6,
                "closed loop: 6 slots, 6 worker streams over 3 ranks", s.get("ranks"))

        # 2b. multi-turn sessions over the ranks: ids unique over the world, the merged per-turn counts
        art = h.path("sessions")
        res = finish(start_ranks(h, m.url, art, 2, ["--conversation-turn-mean", 3, "--concurrency", 4,
                                                    "--request-count", 24, "--workers", 1, "--streaming",
                                                    "--synthetic-input-tokens-mean", 4]))
        for r, (rc, out, err) in res.items():
            h.check(rc == 0, "sessions: rank %d exits 0" % r, (rc, err[-1500:]))
        merged = Result(subprocess.CompletedProcess([], 0, "", ""), art)
        s = merged.summary or {}
        h.check([t["request_count"] for t in s.get("turns", [])] == [8, 8, 8],
                "sessions: the merged per-turn counts", s.get("turns"))
        by = {}
        for x in merged.records or []:
            by.setdefault(x["session"], []).append(x["turn"])
        h.check(len(by) == 8 and all(sorted(v) == [0, 1, 2] for v in by.values()),
                "sessions: 8 sessions over the 2 ranks, each id once with its 3 turns", by)

        # 3. the launchers' environment: Open MPI's, then PMI's (all on this host: rank 0 at 127.0.0.1)
        for names in (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"),
                      ("PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS")):
            art = h.path("env-" + names[0])
            port = free_port()
            procs = {}
            for r in range(2):
                env = dict(os.environ, SURGE_COORDINATOR_PORT=str(port))
                env[names[0]], env[names[1]], env[names[2]] = str(r), "2", "2"
                procs[r] = subprocess.Popen([h.surge, "profile", "-m", "mock-model", "-u", m.url, "--artifact-dir",
                                             art, "--no-progress", "--request-rate", "100", "--request-count", "100"],
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            res = finish(procs)
            h.check(all(rc == 0 for rc, _, _ in res.values()), "%s: both ranks exit 0" % names[0],
                    [e[-800:] for _, _, e in res.values()])
            h.check(names[0].split("_")[0] in res[1][2] or "PMI" in res[1][2], "the rank says where its rank came from",
                    res[1][2][:400])
            s = Result(subprocess.CompletedProcess([], 0, "", ""), art).summary or {}
            h.check(s.get("request_count", {}).get("avg") == 100, "%s: one merged run" % names[0])

        # 3b. server metrics (rank 0 alone scrapes) and the report of the merged run
        art = h.path("scraped")
        res = finish(start_ranks(h, m.url, art, 2, ["--request-rate", 100, "--request-count", 200,
                                                    "--server-metrics-url", m.url + "/metrics",
                                                    "--server-metrics-interval", 0.25, "--generate-plots"]))
        h.check(all(rc == 0 for rc, _, _ in res.values()), "with scraping: both ranks exit 0",
                [e[-800:] for _, _, e in res.values()])
        h.check(os.path.exists(os.path.join(art, "rank0", "server_metrics.json"))
                and not os.path.exists(os.path.join(art, "rank1", "server_metrics.json")),
                "rank 0 alone scraped the server")
        h.check(os.path.exists(os.path.join(art, "server_metrics.json")), "its files beside the merged run")
        s = Result(subprocess.CompletedProcess([], 0, "", ""), art).summary or {}
        h.check("server_metrics" in s, "the merged summary has the server's metrics")
        h.check(os.path.exists(os.path.join(art, "report.html")), "--generate-plots: the merged run's report",
                res[0][2][-800:])

        # 4. a rank that never arrives
        art = h.path("missing")
        t0 = time.monotonic()
        res = finish(start_ranks(h, m.url, art, 3, load + ["--coordinator-timeout", 3], ranks=[0, 1]))
        took = time.monotonic() - t0
        h.check(res[0][0] == 3 and "rank 2 never arrived within 3 s" in res[0][2], "rank 0: exit 3 naming rank 2",
                res[0][2][-800:])
        h.check(res[1][0] == 3 and "rank 0 stopped the run" in res[1][2], "rank 1 is told and exits 3",
                res[1][2][-800:])
        h.check(took < 20, "both within a bounded time (%.1f s)" % took)
        h.check(not os.path.exists(os.path.join(art, "profile_export_surge.json")), "no merged files")

        # 5. a rank killed during the run, then rank 0 killed
        slow = ["--request-rate", 50, "--request-count", 1000, "--workers", 1, "--output-tokens-mean", 3,
                "--max-error-rate", 1]
        for victim in (2, 0):
            art = h.path("killed%d" % victim)
            procs = start_ranks(h, m.url, art, 3, slow)
            time.sleep(3)
            procs[victim].kill()
            t0 = time.monotonic()
            res = finish(procs, timeout=60)
            took = time.monotonic() - t0
            rest = [r for r in range(3) if r != victim]
            h.check(took < 20, "after rank %d is killed the others end within 20 s (%.1f s)" % (victim, took))
            for r in rest:
                h.check(res[r][0] == 3, "rank %d exits 3 after rank %d is lost" % (r, victim), res[r][2][-1200:])
            if victim == 2:
                h.check("rank 2" in res[0][2] and "was lost" in res[0][2] and "STOPPED EARLY" in res[0][2],
                        "rank 0 names the lost rank and says the run stopped early", res[0][2][-1200:])
                s = Result(subprocess.CompletedProcess([], 0, "", ""), art).summary or {}
                h.check(s.get("was_interrupted") is True, "the merged run is marked stopped", s.get("was_interrupted"))
                done = s.get("request_count", {}).get("avg", 0) + s.get("error_request_count", {}).get("avg", 0)
                h.check(0 < done < 1000, "what ranks 0 and 1 measured is kept (%s requests)" % done)
                each = s.get("ranks", {}).get("each", [{}] * 3)
                h.check(each[2].get("lost") is True and each[1].get("lost") is False, "the summary marks rank 2 lost",
                        each)
            else:
                for r in rest:
                    h.check("rank 0" in res[r][2] and "was lost" in res[r][2] and "own results are in" in res[r][2],
                            "rank %d says rank 0 was lost and where its own files are" % r, res[r][2][-1200:])
                    h.check(os.path.exists(os.path.join(art, "rank%d" % r, "profile_export_surge.json")),
                            "rank %d kept its own files" % r)

        # 6. another configuration; a bad launch
        art = h.path("mismatch")
        res = finish(start_ranks(h, m.url, art, 2, load, extra={1: ["--request-rate", 200]}))
        h.check(res[0][0] == 3 and "another configuration" in res[0][2], "rank 0 refuses a rank with another config",
                res[0][2][-800:])
        h.check(res[1][0] == 3 and "another configuration" in res[1][2], "and that rank is told why", res[1][2][-800:])
        p = h.run([h.surge, "profile", "-m", "m", "-u", m.url, "--rank", 1, "--artifact-dir", h.path("bad")])
        h.check(p.returncode == 2 and "--world-size" in p.stderr, "--rank without --world-size: exit 2", p.stderr)
        p = h.run([h.surge, "profile", "-m", "m", "-u", m.url, "--world-size", 2, "--rank", 0,
                   "--request-rate", 10, "--parameter-sweep-cooldown-seconds", 0,
                   "--request-rate-range", "10:20:10", "--artifact-dir", h.path("bad")])
        h.check(p.returncode == 2 and "one load point" in p.stderr, "a sweep over ranks is refused", p.stderr)

        # 7. SIGINT to rank 1 stops every rank
        art = h.path("sigint")
        procs = start_ranks(h, m.url, art, 3, slow)
        time.sleep(3)
        procs[1].send_signal(signal.SIGINT)
        res = finish(procs, timeout=60)
        h.check(res[0][0] == 130, "rank 0 exits 130 after rank 1's interrupt", (res[0][0], res[0][2][-1000:]))
        s = Result(subprocess.CompletedProcess([], 0, "", ""), art).summary or {}
        h.check(s.get("was_interrupted") is True, "the merged run is marked interrupted")
        h.check(all(rc != 0 for rc, _, _ in res.values()), "every rank stopped", [rc for rc, _, _ in res.values()])


harness.main(main)
