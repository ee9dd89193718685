# ctest: one-backend (the launcher is under test)
# ctest: run-serial (a whole Slurm, three daemons and three ranks, would take the cores from tests that time arrivals)
"""A run over several Slurm tasks, launched by a real Slurm (Debian's slurm-wlm and munge), as on a cluster.

The test starts a private one-node Slurm: munged on its own key and socket, slurmctld and slurmd in the foreground
on free ports, everything (configuration, state, spool, logs) in a temporary directory, nothing of the system's
/etc/slurm, /etc/munge or services used. Then:

- `srun -N1 -n3 surge profile ...`: each task takes its rank from SLURM_PROCID, the size from
  SLURM_STEP_NUM_TASKS and rank 0's host from SLURM_STEP_NODELIST; the merged run has every request once, from
  ranks "launched_by" Slurm;
- deploy/slurm/surge.sbatch submitted with sbatch as users do, with the server, model, load and port given in
  the environment and the artifact directory left to its default (under the directory sbatch ran from).

Every daemon, job step and task carries a marker in its environment; whatever carries it is killed at the end,
and the directory removed, pass or fail. Where Slurm cannot start here (not root, packages missing, a daemon that
exits), the test skips and says why.
"""
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import harness
from servers import free_port
from profiling import Result

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SBATCH_SCRIPT = os.path.join(ROOT, "deploy", "slurm", "surge.sbatch")
TOOLS = ("munged", "mungekey", "slurmctld", "slurmd", "srun", "sbatch", "sinfo", "scontrol")
LOAD = ["--request-rate", "150", "--request-count", "300", "--num-prompts", "300", "--workers", "1"]


class Unavailable(Exception):
    """Slurm could not be started here; the message says why."""


# Started in a session of its own beside the test: once the test's process is gone (killed outright, so that its
# finally never ran), it kills whatever carries the marker (job steps and tasks are not our children) and removes
# the directory; once the directory is gone (the test cleaned up), it just ends.
WATCHDOG = r"""
import os, shutil, signal, sys, time
parent, mark, where = int(sys.argv[1]), sys.argv[2].encode(), sys.argv[3]
def alive(pid):
    try:
        os.kill(pid, 0)
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
while alive(parent) and os.path.isdir(where):
    time.sleep(1)
if os.path.isdir(where) and not os.environ.get("SURGE_KEEP_TMP"):
    for e in os.listdir("/proc"):
        try:
            with open("/proc/%s/environ" % e, "rb") as f:
                if e.isdigit() and mark in f.read().split(b"\0"):
                    os.kill(int(e), signal.SIGKILL)
        except OSError:
            pass
    shutil.rmtree(where, ignore_errors=True)
"""


def die_with_us():
    """In the child before exec: SIGKILL when the test's process dies (ctest's timeout kills it outright)."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def tail(path, n=1500):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")[-n:]
    except OSError:
        return ""


def node_name():
    """This host's short name, as slurmd calls itself, when it resolves (surge's ranks find rank 0 by it);
    else localhost, which slurmd is then told to be (-N)."""
    name = socket.gethostname().split(".")[0]
    try:
        socket.getaddrinfo(name, None)
        return name
    except OSError:
        return "localhost"


class Slurm:
    """munged, slurmctld and slurmd of our own, in a temporary directory; start() raises Unavailable."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="surge-slurm-")
        os.chmod(self.dir, 0o755)  # munged wants every directory above its socket searchable by all
        self.mark = "SURGE_SLURM_TEST=%s" % self.dir
        self.procs = {}
        self.node = node_name()
        self.conf = os.path.join(self.dir, "slurm.conf")
        # not an outer job's settings, nor a rank's settings of another run
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_", "SQUEUE_"))
               and k not in ("SURGE_COORDINATOR", "SURGE_COORDINATOR_PORT", "SURGE_WORLD_SIZE")}
        env.update(SLURM_CONF=self.conf, SURGE_SLURM_TEST=self.dir)
        self.env = env
        self.watchdog = subprocess.Popen([sys.executable, "-c", WATCHDOG, str(os.getpid()), self.mark, self.dir],
                                         stdin=subprocess.DEVNULL, start_new_session=True)

    def p(self, *names):
        return os.path.join(self.dir, *names)

    def daemon(self, name, cmd):
        log = open(self.p("log", name + ".out"), "wb")
        self.procs[name] = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                            env=self.env, preexec_fn=die_with_us)
        log.close()

    def died(self, name):
        p = self.procs[name]
        if p.poll() is None:
            return None
        return "%s exited with %d: %s" % (name, p.returncode, tail(self.p("log", name + ".out")))

    def cmd(self, args, timeout=20, **kw):
        return subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=self.env, **kw)

    def start(self):
        for d, mode in (("key", 0o700), ("run", 0o755), ("state", 0o755), ("spool", 0o755), ("log", 0o755)):
            os.mkdir(self.p(d), mode)
            os.chmod(self.p(d), mode)
        key, sock = self.p("key", "munge.key"), self.p("run", "munge.sock")
        r = self.cmd(["mungekey", "--create", "--keyfile", key], timeout=20)
        if r.returncode != 0:
            raise Unavailable("mungekey --create failed (%d): %s" % (r.returncode, r.stderr.strip()))
        self.daemon("munged", ["munged", "--foreground", "--force", "--socket", sock, "--key-file", key,
                               "--pid-file", self.p("run", "munged.pid"), "--log-file", self.p("log", "munged.log"),
                               "--seed-file", self.p("key", "munged.seed")])
        deadline = time.monotonic() + 10
        while not os.path.exists(sock):
            why = self.died("munged")
            if why or time.monotonic() > deadline:
                raise Unavailable(why or "munged made no socket within 10 s: %s" % tail(self.p("log", "munged.out")))
            time.sleep(0.05)

        host = socket.gethostname().split(".")[0]
        cpus = max(os.cpu_count() or 1, 3)  # room for 3 tasks of one CPU; config_overrides lets it be more
        with open(self.p("plugstack.conf"), "w"):
            pass
        with open(self.conf, "w") as f:
            f.write("\n".join([
                "ClusterName=surgetest",
                "SlurmctldHost=%s(127.0.0.1)" % host,
                "SlurmctldPort=%d" % free_port(),
                "SlurmdPort=%d" % free_port(),
                "SlurmUser=root",
                "SlurmdUser=root",
                "AuthType=auth/munge",
                "AuthInfo=socket=%s" % sock,
                "CredType=cred/munge",
                "MpiDefault=none",
                "ProctrackType=proctrack/linuxproc",
                "TaskPlugin=task/none",
                "JobAcctGatherType=jobacct_gather/none",
                "AccountingStorageType=accounting_storage/none",
                "JobCompType=jobcomp/none",
                "SchedulerType=sched/builtin",
                "SchedulerParameters=batch_sched_delay=0",  # a batch job starts when submitted, not up to 3 s on
                "SelectType=select/cons_tres",
                "SelectTypeParameters=CR_Core",
                "SlurmdParameters=config_overrides",
                "ReturnToService=2",
                "KillWait=5",
                "StateSaveLocation=%s" % self.p("state"),
                "SlurmdSpoolDir=%s" % self.p("spool"),
                "SlurmctldPidFile=%s" % self.p("run", "slurmctld.pid"),
                "SlurmdPidFile=%s" % self.p("run", "slurmd.pid"),
                "SlurmctldLogFile=%s" % self.p("log", "slurmctld.log"),
                "SlurmdLogFile=%s" % self.p("log", "slurmd.log"),
                "PlugStackConfig=%s" % self.p("plugstack.conf"),
                "NodeName=%s NodeAddr=127.0.0.1 CPUs=%d State=UNKNOWN" % (self.node, cpus),
                "PartitionName=surge Nodes=%s Default=YES MaxTime=INFINITE State=UP" % self.node,
            ]) + "\n")
        self.daemon("slurmctld", ["slurmctld", "-D", "-i", "-f", self.conf])
        self.daemon("slurmd", ["slurmd", "-D", "-f", self.conf, "-N", self.node])

        self.wait_idle(30)

    def wait_idle(self, seconds):
        """Until sinfo says the node is idle (up, or done with the last job); Unavailable when a daemon died or
        the time is up."""
        deadline = time.monotonic() + seconds
        state = ""
        while True:
            for name in ("slurmctld", "slurmd"):
                why = self.died(name)
                if why:
                    raise Unavailable(why + "\n" + tail(self.p("log", name + ".log")))
            try:
                r = self.cmd(["sinfo", "-h", "-N", "-n", self.node, "-o", "%t"], timeout=10)
                state = (r.stdout.strip() or r.stderr.strip())
            except subprocess.TimeoutExpired:
                state = "sinfo did not answer within 10 s"
            if state == "idle":
                return
            if time.monotonic() > deadline:
                reason = ""
                try:
                    reason = self.cmd(["sinfo", "-R", "-h"], timeout=10).stdout.strip()
                except subprocess.TimeoutExpired:
                    pass
                raise Unavailable("the node is not idle after %d s (%s; %s)\nslurmctld: %s\nslurmd: %s" % (
                    seconds, state, reason, tail(self.p("log", "slurmctld.log")), tail(self.p("log", "slurmd.log"))))
            time.sleep(0.1)

    def marked(self):
        """Processes with our marker in their environment: the daemons, slurmstepd, the tasks."""
        want = self.mark.encode()
        pids = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                with open("/proc/%s/environ" % entry, "rb") as f:
                    if want in f.read().split(b"\0"):
                        pids.append(int(entry))
            except OSError:
                pass
        return pids

    def stop(self):
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            try:
                self.cmd(["scancel", "--full", "--partition", "surge"], timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass
        for name in ("slurmd", "slurmctld", "munged"):
            p = self.procs.get(name)
            if p and p.poll() is None:
                p.terminate()
        for name, p in self.procs.items():
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)
        for pid in self.marked():  # job steps and tasks left behind
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if os.environ.get("SURGE_KEEP_TMP"):
            print("kept %s" % self.dir)
            self.watchdog.kill()
        else:
            shutil.rmtree(self.dir, ignore_errors=True)
        try:
            self.watchdog.wait(timeout=5)  # it sees the directory gone within a second
        except subprocess.TimeoutExpired:
            self.watchdog.kill()
            self.watchdog.wait(timeout=5)


def check_run(h, what, rc, out, err, art, mock):
    """The checks both runs share: exit 0, three ranks from Slurm, every request once, merged on rank 0."""
    h.check(rc == 0, "%s exits 0" % what, (rc, err[-2000:], out[-1000:]))
    h.check(err.count("(Slurm (SLURM_PROCID))") == 3, "%s: each of the 3 ranks took its rank from Slurm" % what,
            err[-2000:])
    h.check(not any(mark in out + err for mark in harness.SANITIZER_MARKS), "%s: no sanitizer report" % what,
            err[-3000:])
    h.check("surge | LLM Metrics (merged)" in out, "%s: rank 0 printed the merged table" % what, out[-600:])
    r = Result(subprocess.CompletedProcess([], rc, out, err), art)
    s = r.summary or {}
    h.check(s.get("request_count", {}).get("avg") == 300 and len(r.records) == 300,
            "%s: the merged run has every request once" % what, (art, s.get("request_count"), len(r.records)))
    ranks = s.get("ranks", {})
    h.check(ranks.get("world") == 3 and len(ranks.get("each", [])) == 3
            and ranks.get("launched_by", "").startswith("Slurm"), "%s: the summary says 3 ranks from Slurm" % what,
            ranks)
    h.check(all(os.path.exists(os.path.join(art, "rank%d" % i, "profile_export_surge.json")) for i in range(3)),
            "%s: each rank's own files in rank<R>/" % what, art)
    seen = mock.records()
    h.check(len(seen) == 300 and len({x["prompt"] for x in seen}) == 300, "%s: the server saw 300 distinct prompts"
            % what, len(seen))


def wait_job(slurm, job, seconds):
    """Poll the job until it ends (sbatch --wait polls only after 2 s, then 8 s more); (state, ExitCode)."""
    deadline = time.monotonic() + seconds
    state = code = ""
    while time.monotonic() < deadline:
        r = slurm.cmd(["scontrol", "show", "job", "-o", job], timeout=10)
        fields = dict(kv.split("=", 1) for kv in r.stdout.split() if "=" in kv)
        state, code = fields.get("JobState", r.stderr.strip()), fields.get("ExitCode", "")
        if state in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL",
                     "DEADLINE", "PREEMPTED"):
            return state, code
        time.sleep(0.2)
    return "still %s after %d s" % (state, seconds), code


def main(h):
    missing = [t for t in TOOLS if not shutil.which(t)]
    if missing:
        h.skip("not installed: %s (Debian's slurm-wlm and munge)" % " ".join(missing))
    if os.geteuid() != 0:
        h.skip("slurmd must run as root to start job steps as the submitting user")
    r = subprocess.run(["bash", "-n", SBATCH_SCRIPT], capture_output=True, text=True, timeout=10)
    h.check(r.returncode == 0, "deploy/slurm/surge.sbatch parses (bash -n)", r.stderr)

    slurm = Slurm()
    try:
        t0 = time.monotonic()
        try:
            slurm.start()
        except Unavailable as e:
            h.skip("a private Slurm could not start here: %s" % e)
        except subprocess.TimeoutExpired as e:
            h.skip("a private Slurm could not start here: %s timed out" % e.cmd)
        print("slurm up in %.1f s (node %s)" % (time.monotonic() - t0, slurm.node), flush=True)

        # srun, as a user types it
        with h.mock("--ttft-ms", 5, "--itl-ms", 2, record=True) as m:
            art = h.path("srun")
            t0 = time.monotonic()
            p = slurm.cmd(["srun", "-N1", "-n3", "--export=ALL,SURGE_COORDINATOR_PORT=%d" % free_port(), h.surge,
                           "profile", "-m", "mock-model", "-u", m.url, "--artifact-dir", art, "--no-progress"]
                          + LOAD, timeout=75, stdin=subprocess.DEVNULL, preexec_fn=die_with_us)
            m.stop()
            print("srun run: %.1f s" % (time.monotonic() - t0), flush=True)
            check_run(h, "srun -N1 -n3 surge profile", p.returncode, p.stdout, p.stderr, art, m)

        # deploy/slurm/surge.sbatch as it is, the settings in the environment, the artifact dir its default
        with h.mock("--ttft-ms", 5, "--itl-ms", 2, record=True) as m:
            submit = h.path("submit")
            os.mkdir(submit)
            env = dict(slurm.env, SURGE_BIN=h.surge, SURGE_URL=m.url, SURGE_MODEL="mock-model",
                       SURGE_LOAD=" ".join(LOAD), SURGE_COORDINATOR_PORT=str(free_port()))
            env.pop("SURGE_ARTIFACT_DIR", None)
            t0 = time.monotonic()
            try:  # the srun's job may still be completing: a job submitted now would wait for the next pass
                slurm.wait_idle(20)
            except Unavailable as e:
                h.check(False, "the node is idle again after the srun", e)
            p = subprocess.run(["sbatch", "--parsable", "-N1", "-n3", "--ntasks-per-node=3", "--cpus-per-task=1",
                                "--output=%s/job-%%j.out" % submit, SBATCH_SCRIPT],
                               capture_output=True, text=True, timeout=20, env=env, cwd=submit,
                               stdin=subprocess.DEVNULL)
            job = p.stdout.strip().split(";")[0]
            h.check(p.returncode == 0 and job.isdigit(), "sbatch deploy/slurm/surge.sbatch submits the job",
                    (p.returncode, p.stderr))
            state, code = wait_job(slurm, job, 75) if job.isdigit() else ("not submitted", "")
            m.stop()
            print("sbatch job %s: %s in %.1f s" % (job, state, time.monotonic() - t0), flush=True)
            out = harness._read(os.path.join(submit, "job-%s.out" % job))
            # the job's output file holds every task's stdout and stderr
            rc = 0 if (state, code) == ("COMPLETED", "0:0") else "%s %s" % (state, code)
            check_run(h, "the job of deploy/slurm/surge.sbatch", rc, out, out, os.path.join(submit, "surge-" + job),
                      m)
    finally:
        slurm.stop()


if __name__ == "__main__":
    harness.main(main)
