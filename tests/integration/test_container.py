# ctest: run-serial (the image build compiles surge on every core; the tests that time arrivals must not share them)
# ctest: one-backend (inside a container the runtime's seccomp profile picks the backend)
"""The container image (deploy/container/Containerfile, docs/containers.md), built and run with Debian's podman.

The image cannot start from debian:bookworm-slim here (no registry is reachable), so it is built FROM a Debian 12
root file system that tests/data/fetch-container-base made with debootstrap, passed as BASE_IMAGE; everything
else is the recipe as users build it: both stages, the build packages from apt inside the build, the runtime
stage's libraries. Podman keeps its own storage under $SURGE_TESTDATA/containers, so the base and the build
stage's packages are there for the next run. Then, all containers under podman's default seccomp profile:
  1. the image: a user that is not root (10001), ENTRYPOINT surge, the same --version as the host's build, and
     small (the layers over the base are checked against a bound);
  2. `surge mock` in one container, `surge profile` in another (host network), the artifact directory a bind
     mount: every request, no errors, and "io_backend" what the profile allows (podman's default refuses
     io_uring: one line on stderr, then epoll), for the mock as for the client;
  3. --security-opt seccomp=unconfined gives io_uring back (where the host allows it); SURGE_IO_BACKEND=epoll
     still chooses epoll, without the fallback's line;
  4. the docs' mock line: published with -p on podman's default network, profiled from the host;
  5. deploy/k8s/pod.yaml played by `podman kube play`, with the image, the URL and the count replaced and the
     host's network (to reach the mock): it runs as the manifest says, on a read-only root file system.
Whatever this host cannot do is said in the SKIP or "not run" line, with podman's own message. Hosts without
CAP_SYS_RESOURCE (podman's default ulimits refused) or with hybrid cgroups that crun refuses get the
workaround (ulimits of this process's size, runc) in a containers.conf of the test's own, reported as a note.
"""
import hashlib
import json
import os
import resource
import shutil
import subprocess
import time

import harness
from profiling import Result, tol
from servers import free_port

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONTAINERFILE = os.path.join(ROOT, "deploy", "container", "Containerfile")
POD = os.path.join(ROOT, "deploy", "k8s", "pod.yaml")
DOC = os.path.join(ROOT, "docs", "containers.md")
FETCH = "tests/data/fetch-container-base"
BASE_DIR = os.path.join(harness.TESTDATA, "container-base-bookworm")
IMAGE = "localhost/surge-test:latest"
BUILD = "localhost/surge-test-build:latest"  # the build stage, tagged: a prune keeps it (and its packages)
LABEL = "surge-test-container"  # on every container and pod this test starts, with RUN_ID as its value
RUN_ID = str(os.getpid())
MARK = "%s=%s" % (LABEL, RUN_ID)
MAX_ADDED_MB = 80  # what the runtime stage adds to Debian: libraries (ICU is 36 MB), CA store, the binary


def note(msg):
    print("note: %s" % msg, flush=True)


class Podman:
    """podman with the test's own storage and, once probe() found it needed, its own containers.conf."""

    def __init__(self, h):
        self.h = h
        graph = os.path.join(harness.TESTDATA, "containers", "storage")
        # the run root and tmpdir belong to this storage (podman records them) and must not outlive a reboot
        tag = hashlib.sha1(graph.encode()).hexdigest()[:12]
        state = os.path.join("/run" if os.access("/run", os.W_OK) else "/tmp", "surge-test-podman-" + tag)
        self.base = ["podman", "--root", graph, "--runroot", os.path.join(state, "run"),
                     "--tmpdir", os.path.join(state, "tmp"), "--cgroup-manager", "cgroupfs",
                     "--events-backend", "file"]
        self.env = dict(os.environ)
        self.env.pop("SURGE_IO_BACKEND", None)
        self.conf = {}  # section -> lines of the containers.conf written for this host

    def __call__(self, *args, timeout=60):
        return self.h.run(self.base + [str(a) for a in args], timeout=timeout, env=self.env)

    def build(self, *args, timeout=240):
        """podman build, its cache mounts (the Containerfile's ccache) kept with the test's storage: buildah puts
        them under $TMPDIR, /var/tmp by default."""
        tmp = os.path.join(harness.TESTDATA, "containers", "tmp")
        os.makedirs(tmp, exist_ok=True)
        return self.h.run(self.base + ["build"] + [str(a) for a in args], timeout=timeout,
                          env=dict(self.env, TMPDIR=tmp))

    def write_conf(self):
        path = self.h.path("containers.conf")
        with open(path, "w") as f:
            for section, lines in self.conf.items():
                f.write("[%s]\n%s\n" % (section, "\n".join(lines)))
        self.env["CONTAINERS_CONF"] = path

    def probe(self, image):
        """Start a container of image; on the failures a sandbox gives, retry with the workaround. Returns None
        when containers run (notes say what was needed), else podman's errors, each attempt's."""
        errors = []
        for _ in range(3):
            r = self("run", "--rm", "--network", "none", "--label", MARK, image, "true", timeout=60)
            if r.returncode == 0:
                return None
            err = r.stderr.strip()
            errors.append(err)
            if "rlimit" in err and "containers" not in self.conf:
                # podman asks for nofile 1048576 (and a large nproc); without CAP_SYS_RESOURCE nothing above
                # this process's own hard limits can be set
                nofile = min(resource.getrlimit(resource.RLIMIT_NOFILE)[1], 1048576)
                limits = '"nofile=%d:%d", "nproc=4096:4096"' % (nofile, nofile)
                self.conf["containers"] = ["default_ulimits = [%s]" % limits]
                note("podman's default ulimits are refused here (%s); using nofile=%d, nproc=4096" % (err, nofile))
            elif "crun" in err and "engine" not in self.conf and shutil.which("runc"):
                self.conf["engine"] = ['runtime = "runc"']
                note("crun cannot start a container here (%s); using runc" % err)
            else:
                break
            self.write_conf()
        return " / ".join(errors)


def wait_file(path, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(path):
            with open(path) as f:
                text = f.read().strip()
            if text:
                return text
        time.sleep(0.05)
    return None


def shared_dir(h, name):
    """A directory the image's user (10001) can write, to bind-mount."""
    path = h.path(name)
    os.makedirs(path)
    os.chmod(path, 0o777)
    return path


def uring_allowed(profile_path):
    """Whether a seccomp profile (the OCI JSON podman reads) lets io_uring_setup through."""
    try:
        with open(profile_path) as f:
            prof = json.load(f)
    except (OSError, ValueError):
        return None
    for rule in prof.get("syscalls") or []:
        if "io_uring_setup" in (rule.get("names") or [rule.get("name")]):
            return rule.get("action") == "SCMP_ACT_ALLOW"
    return prof.get("defaultAction") == "SCMP_ACT_ALLOW"


def host_uring():
    """io_uring as an unprivileged user may use it on this kernel: kernel.io_uring_disabled says."""
    try:
        with open("/proc/sys/kernel/io_uring_disabled") as f:
            return f.read().strip() == "0"
    except OSError:
        return True  # older kernels have no switch


def check_summary(h, art, n, backend, what):
    r = Result(subprocess.CompletedProcess([], 0, "", ""), art)
    s = r.summary
    if not h.check(s is not None, what + ": profile_export_surge.json in the bind mount", art):
        return
    h.check(s["request_count"]["avg"] == n and s["error_request_count"]["avg"] == 0,
            what + ": %d requests, no errors" % n, (s["request_count"], s.get("error_summary")))
    h.check(len(r.records) == n, what + ": one record per request", len(r.records))
    h.check(s.get("io_backend") == backend, what + ": io_backend %s" % backend, s.get("io_backend"))
    return s


def main(h):
    if os.environ.get("SURGE_SLOW"):
        h.skip("the image builds its own release binary, whatever this build's sanitizers; the release pass runs "
               "this test")
    if not shutil.which("podman"):
        if os.environ.get("CI"):
            h.check(False, "podman installed (scripts/common.sh's SURGE_TEST_PKGS)")
            return
        h.skip("podman missing (apt-get install podman)")
    if os.geteuid() != 0:
        h.skip("rootless podman is not tried: run as root")
    tar = os.path.join(BASE_DIR, "rootfs.tar")
    stamp_path = os.path.join(BASE_DIR, "STAMP")
    if not (os.path.exists(tar) and os.path.exists(stamp_path)):
        harness.testdata_missing(h, tar, FETCH)
        return
    with open(stamp_path) as f:
        base = "localhost/surge-test-base:%s" % f.read().strip()

    t0 = time.monotonic()
    pm = Podman(h)
    info = pm("info", "--format", "{{json .Host.Security}}")
    if info.returncode != 0:
        h.skip("podman does not work here: %s" % info.stderr.strip()[-1000:])
    security = json.loads(info.stdout or "{}")
    # what a run of this test killed half-way left behind (stopped by now: every surge in it has a bound), but
    # nothing of a run going on beside this one
    for ps in (["container", "ps", "-a"], ["pod", "ps"]):
        for status in ("exited", "created"):
            left = pm(*(ps + ["-q", "--filter", "label=" + LABEL, "--filter", "status=" + status]))
            for cid in left.stdout.split():
                pm(ps[0], "rm", "-f", cid)
    try:
        run_all(h, pm, base, tar, security, t0)
    finally:
        left = pm("ps", "-a", "-q", "--filter", "label=" + MARK)
        for cid in left.stdout.split():
            pm("rm", "-f", "-t", "0", cid)
        # older images (a previous source tree's build stage and image, old bases) go; the tagged ones stay
        pm("image", "prune", "-f", timeout=120)
        note("test_container took %.0f s" % (time.monotonic() - t0))


def run_all(h, pm, base, tar, sec, t0):
    if pm("image", "exists", base).returncode != 0:
        # a new base: the old ones (other stamps) go, with what was built on them
        old = pm("images", "--format", "{{.Repository}}:{{.Tag}}", "--filter", "reference=localhost/surge-test-base")
        r = pm("import", tar, base, timeout=180)
        if not h.check(r.returncode == 0, "podman import of the base root file system", r.stderr[-2000:]):
            return
        for ref in old.stdout.split():
            if ref != base:
                pm("rmi", "-f", ref, timeout=120)
        note("imported %s (%.0f s)" % (base, time.monotonic() - t0))
    err = pm.probe(base)
    if err is not None:
        h.skip("podman cannot start a container here: %s" % err)

    # the Containerfile as users build it, from the repository's root, but FROM the local base; its RUN steps on
    # the host's network, so that apt in the build does not depend on podman's bridge (part 4 tries that)
    t = time.monotonic()
    build = ["-f", CONTAINERFILE, "--build-arg", "BASE_IMAGE=" + base, "--network", "host"]
    r = pm.build(*(build + ["--target", "build", "-t", BUILD, ROOT]))
    if not h.check(r.returncode == 0, "the build stage: packages from apt inside the build, then surge compiled",
                   (r.stdout[-3000:], r.stderr[-2000:])):
        return
    r = pm.build(*(build + ["-t", IMAGE, ROOT]))
    if not h.check(r.returncode == 0, "podman build of deploy/container/Containerfile", (r.stdout[-3000:],
                                                                                        r.stderr[-2000:])):
        return
    note("image built in %.0f s" % (time.monotonic() - t))

    # 1. the image itself
    r = pm("image", "inspect", IMAGE, "--format", "{{json .Config}}|{{.Size}}")
    cfg, _, size = r.stdout.strip().partition("|")
    cfg = json.loads(cfg or "{}")
    base_size = int(pm("image", "inspect", base, "--format", "{{.Size}}").stdout.strip() or 0)
    size = int(size or 0)
    note("image size %.1f MB (the base %.1f MB, added %.1f MB)" % (size / 1e6, base_size / 1e6,
                                                                   (size - base_size) / 1e6))
    h.check(cfg.get("User") == "10001:10001" and cfg.get("Entrypoint") == ["surge"] and cfg.get("WorkingDir")
            == "/work", "user 10001, ENTRYPOINT surge, WORKDIR /work", cfg)
    h.check(0 < size - base_size < MAX_ADDED_MB * 1e6, "the runtime stage adds under %d MB to Debian" % MAX_ADDED_MB,
            size - base_size)
    want = h.run([h.surge, "--version"]).stdout.strip()
    r = pm("run", "--rm", "--label", MARK, "--network", "none", IMAGE, "--version")
    h.check(r.returncode == 0 and r.stdout.strip() == want, "surge --version in the image: %s" % want,
            (r.returncode, r.stdout, r.stderr))
    r = pm("run", "--rm", "--label", MARK, "--network", "none", IMAGE)
    h.check(r.returncode == 0 and "surge profile" in r.stdout, "with no arguments: the help", r.stdout[:500])
    r = pm("run", "--rm", "--label", MARK, "--network", "none", "--entrypoint", "id", IMAGE, "-u")
    h.check(r.stdout.strip() == "10001", "it runs as uid 10001, not root", (r.stdout, r.stderr))

    profile_path = sec.get("seccompProfilePath") or "/usr/share/containers/seccomp.json"
    allowed = True if sec.get("seccompEnabled") is False else uring_allowed(profile_path)
    if allowed is None:
        allowed = False  # podman's built-in profile, as every default profile since 2023, refuses io_uring
    confined = "io_uring" if allowed and host_uring() else "epoll"
    unconfined = "io_uring" if host_uring() else "epoll"
    note("seccomp %s, profile %s: io_uring_setup %s; expecting %s" % (
        "off" if sec.get("seccompEnabled") is False else "on", profile_path, "allowed" if allowed else "refused",
        confined))

    # 2. the mock in one container, the client in another, on the host's network
    out = shared_dir(h, "mock")
    mock = "surge-test-mock-%d" % os.getpid()
    ttft, itl, n = 20, 4, 100
    r = pm("run", "-d", "--name", mock, "--label", MARK, "--network", "host", "-v", out + ":/out", IMAGE, "mock",
           "--host", "127.0.0.1", "--port", 0, "--port-file", "/out/port", "--exit-after", 120, "--ttft-ms", ttft,
           "--itl-ms", itl)
    if not h.check(r.returncode == 0, "surge mock starts in a container", r.stderr):
        return
    port = wait_file(os.path.join(out, "port"), 30)
    if not h.check(port is not None, "the mock writes its port file", pm("logs", mock).stderr[-2000:]):
        return
    url = "http://127.0.0.1:%s" % port
    log = pm("logs", mock).stderr
    if confined == "epoll":
        h.check("surge mock: io_uring is unavailable (" in log and "using epoll" in log,
                "the mock says once that io_uring is refused and uses epoll", log)

    def profile(what, count, *opts):
        art = shared_dir(h, what)
        p = pm("run", "--rm", "--label", MARK, "--network", "host", "-v", art + ":/work/out", *opts, IMAGE,
               "profile", "-m", "x", "-u", url, "--streaming", "--request-count", count, "--request-rate", 50,
               "--artifact-dir", "/work/out/run", "--no-progress", timeout=120)
        h.check(p.returncode == 0, what + ": surge profile in a container exits 0", (p.returncode, p.stderr[-2000:]))
        return p, os.path.join(art, "run")

    p, art = profile("confined", n)
    s = check_summary(h, art, n, confined, "default seccomp")
    fallback = [x for x in p.stderr.splitlines() if "io_uring is unavailable" in x]
    if confined == "epoll":
        h.check(len(fallback) == 1 and "using epoll" in fallback[0], "one line says io_uring is refused",
                p.stderr[-2000:])
    if s:
        h.near(s["time_to_first_token"]["p50"], ttft, tol(3.0), "TTFT p50 (ms) vs the mock's")
        h.near(s["inter_token_latency"]["p50"], itl, tol(1.0), "ITL p50 (ms) vs the mock's")
    owners = {os.stat(os.path.join(art, f)).st_uid for f in os.listdir(art)} if os.path.isdir(art) else set()
    h.check(owners == {10001}, "the files in the bind mount belong to the image's user (10001)", owners)

    # 3. the profile decides: unconfined gives io_uring back, SURGE_IO_BACKEND still chooses
    p, art = profile("unconfined", 20, "--security-opt", "seccomp=unconfined")
    check_summary(h, art, 20, unconfined, "seccomp=unconfined")
    p, art = profile("env-epoll", 20, "--security-opt", "seccomp=unconfined", "-e", "SURGE_IO_BACKEND=epoll")
    check_summary(h, art, 20, "epoll", "SURGE_IO_BACKEND=epoll")
    h.check("io_uring is unavailable" not in p.stderr, "a chosen epoll is not a fallback: no line", p.stderr[-1000:])

    # 4. the docs' mock line: published on podman's own network, profiled from the host
    out2 = shared_dir(h, "mock-published")
    hp = free_port()
    published = "surge-test-mock-pub-%d" % os.getpid()
    r = pm("run", "-d", "--name", published, "--label", MARK, "-p", "127.0.0.1:%d:8000" % hp, "-v",
           out2 + ":/out", IMAGE, "mock", "--host", "0.0.0.0", "--port", 8000, "--port-file", "/out/port",
           "--exit-after", 60)
    if r.returncode != 0:
        note("not run: the mock on podman's default network with -p (%s)" % r.stderr.strip()[-500:])
    elif h.check(wait_file(os.path.join(out2, "port"), 30) == "8000", "the published mock listens",
                 pm("logs", published).stderr[-1000:]):
        art = h.path("published")
        p = h.run([h.surge, "profile", "-m", "x", "-u", "http://127.0.0.1:%d" % hp, "--request-count", 20,
                   "--request-rate", 50, "--streaming", "--artifact-dir", art, "--no-progress"], timeout=60)
        h.check(p.returncode == 0, "the host profiles the published mock", p.stderr[-2000:])
        s = Result(p, art).summary or {}
        h.check(s.get("request_count", {}).get("avg") == 20 and s.get("error_request_count", {}).get("avg") == 0,
                "published: 20 requests, no errors", s.get("error_summary"))

    # 5. the Pod manifest, played
    play_pod(h, pm, url, confined)


def play_pod(h, pm, url, backend):
    try:
        import yaml
    except ImportError:
        note("not run: the Pod manifest (python3-yaml missing)")
        return
    with open(POD) as f:
        text = f.read()
    pod = yaml.safe_load(text)
    # docs/containers.md shows the manifest: the same one, less its opening comment
    body = "".join(line for line in text.splitlines(True) if not line.startswith("#")).lstrip("\n")
    with open(DOC) as f:
        h.check("```yaml\n" + body + "```" in f.read(), "docs/containers.md shows deploy/k8s/pod.yaml as it is")
    spec = pod["spec"]
    c = spec["containers"][0]
    sec = spec.get("securityContext", {})
    h.check(sec.get("runAsNonRoot") is True and sec.get("runAsUser") == 10001,
            "pod.yaml: non-root, the image's user", sec)
    args = list(c["args"])
    h.check(args[0] == "profile" and "--url" in args and "--artifact-dir" in args,
            "pod.yaml: a profile with a URL and an artifact directory", args)
    # the image under test, the mock for the server, a short run, and the host's network to reach the mock
    c["image"] = IMAGE
    args[args.index("--url") + 1] = url
    args[args.index("--request-count") + 1] = "50"
    c["args"] = args
    spec["hostNetwork"] = True
    pod["metadata"]["name"] += "-" + RUN_ID
    pod["metadata"].setdefault("labels", {})[LABEL] = RUN_ID
    path = h.path("pod.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(pod, f)
    name = "%s-%s" % (pod["metadata"]["name"], c["name"])  # podman names a pod's container <pod>-<container>
    r = pm("kube", "play", path, timeout=120)
    if r.returncode != 0 and ("pause" in r.stderr or "catatonit" in r.stderr):
        note("not run: podman kube play of deploy/k8s/pod.yaml (%s)" % r.stderr.strip()[-500:])
        return
    if not h.check(r.returncode == 0, "podman kube play of deploy/k8s/pod.yaml", r.stderr[-2000:]):
        return
    try:
        w = pm("wait", name, timeout=90)
        h.check(w.returncode == 0 and w.stdout.strip() == "0", "the pod's surge exits 0", (w.stdout, w.stderr))
        log = pm("logs", name)
        h.check("Request count" in log.stdout and "artifacts in /results/" in log.stderr,
                "its log has the table and where the files went", (log.stdout[-1500:], log.stderr[-1000:]))
        if backend == "epoll":
            h.check("io_uring is unavailable" in log.stderr, "RuntimeDefault: the fallback's line", log.stderr)
        ins = pm("inspect", name, "--format", "{{.Config.User}} {{.HostConfig.ReadonlyRootfs}}")
        h.check(ins.stdout.split() == ["10001:10001", "true"] or ins.stdout.split() == ["10001", "true"],
                "as the manifest says: user 10001, read-only root", ins.stdout)
    finally:
        pm("kube", "play", "--down", path, timeout=60)
        pm("pod", "rm", "-f", "-i", pod["metadata"]["name"])


if __name__ == "__main__":
    harness.main(main)
