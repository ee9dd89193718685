# ctest: one-backend (the launcher, not the I/O, is under test)
"""A run over several processes launched by Open MPI's mpirun (Debian's openmpi-bin), as users of MPI clusters do:
surge takes its rank and the size from OMPI_COMM_WORLD_RANK/SIZE, finds that every rank is on this host (so rank 0
is at 127.0.0.1) and meets the others on SURGE_COORDINATOR_PORT. The merged run has every request once and the
ranks mpirun started; a bad flag on every rank ends the job with exit 2 and no merged files.
"""
import os
import shutil
import subprocess

import harness
from servers import free_port
from profiling import Result



def mpirun(h, np_, args, timeout=120):
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(np_), "env",
           "SURGE_COORDINATOR_PORT=%d" % free_port(), h.surge] + [str(a) for a in args]
    # mpirun's own plumbing (ssh agents, shared-memory checks) has nothing to do here
    env = dict(os.environ, OMPI_MCA_plm_rsh_agent="", OMPI_MCA_btl_vader_single_copy_mechanism="none")
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def main(h):
    if not shutil.which("mpirun"):
        h.skip("mpirun not installed (Debian's openmpi-bin)")
    with h.mock("--ttft-ms", 5, "--itl-ms", 2, record=True) as m:
        art = h.path("mpi")
        p = mpirun(h, 3, ["profile", "-m", "mock-model", "-u", m.url, "--artifact-dir", art, "--no-progress",
                          "--request-rate", 150, "--request-count", 300, "--num-prompts", 300, "--workers", 1,
                          "--streaming", "--output-tokens-mean", 4])
        m.stop()
        h.check(p.returncode == 0, "mpirun -np 3 surge profile exits 0", (p.returncode, p.stderr[-2000:]))
        h.check(p.stderr.count("(Open MPI (OMPI_COMM_WORLD_RANK))") == 3, "each rank took its rank from Open MPI",
                p.stderr[-2000:])
        h.check("surge | LLM Metrics (merged)" in p.stdout, "rank 0 printed the merged table", p.stdout[-600:])
        r = Result(p, art)
        s = r.summary or {}
        h.check(s.get("request_count", {}).get("avg") == 300 and len(r.records) == 300, "every request once",
                s.get("request_count"))
        seen = m.records()
        h.check(len(seen) == 300 and len({x["prompt"] for x in seen}) == 300, "the server saw each once", len(seen))
        each = s.get("ranks", {}).get("each", [])
        h.check(len(each) == 3 and s["ranks"].get("launched_by", "").startswith("Open MPI"),
                "the summary says 3 ranks from Open MPI", s.get("ranks"))

        art = h.path("bad")
        p = mpirun(h, 2, ["profile", "-m", "mock-model", "-u", m.url, "--artifact-dir", art, "--request-rate", -1])
        h.check(p.returncode != 0 and "--request-rate" in p.stderr, "a bad flag fails the job", p.stderr[-1000:])
        h.check(not os.path.exists(os.path.join(art, "profile_export_surge.json")), "and nothing is merged")


if __name__ == "__main__":
    harness.main(main)
