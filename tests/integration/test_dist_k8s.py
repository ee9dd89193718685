# ctest: one-backend (the launcher's environment is under test)
"""The Kubernetes recipes (deploy/k8s/indexed-job.yaml, deploy/k8s/jobset.yaml), as far as this machine allows.

No cluster runs here, so each pod of the recipes is played by a process in UTS and mount namespaces of its own
(util-linux unshare): the pod's host name (<job>-<index>, JobSet's <jobset>-<rjob>-<job>-<index>), the /etc/hosts
Kubernetes writes into a pod of a headless Service (its fully qualified name first; here rank 0's name points at
127.0.0.1 too, as the Service's DNS would), and the Job's environment: JOB_COMPLETION_INDEX and the manifest's
own SURGE_WORLD_SIZE. The container's arguments are the manifest's, with the server's URL, the request count and
the artifact directory swapped for the test's. Checked: the manifests hang together (headless Service named by
the pods' subdomain, Indexed completions = parallelism = SURGE_WORLD_SIZE); each rank finds rank 0's name on its
own; the merged run has every request, from ranks launched by "Kubernetes"; and a pod without SURGE_WORLD_SIZE
says what is missing (exit 2).
"""
import os
import shutil
import subprocess

import harness
from servers import free_port
from profiling import Result

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))



def pod(h, host, fqdn, rank0_fqdn, env, args):
    """A process that looks like a pod: its own host name and /etc/hosts, the Job's environment."""
    hosts = h.path("hosts-" + host)
    with open(hosts, "w") as f:
        f.write("127.0.0.1\tlocalhost\n127.0.0.1\t%s %s\n" % (fqdn, host))
        if rank0_fqdn != fqdn:
            f.write("127.0.0.1\t%s\n" % rank0_fqdn)
    script = 'mount --bind "$1" /etc/hosts && hostname "$2" && shift 2 && exec "$@"'
    cmd = ["unshare", "--uts", "--mount", "--", "sh", "-c", script, "pod", hosts, host, "env"]
    cmd += ["%s=%s" % kv for kv in env.items()] + [h.surge] + args
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def container_args(container, url, art, count):
    args = list(container["args"])
    for flag, value in (("--url", url), ("--artifact-dir", art), ("--request-count", str(count)),
                        ("--request-rate", "200")):
        args[args.index(flag) + 1] = value
    return args + ["--no-progress", "--workers", "1"]


def env_of(container):
    return {e["name"]: e["value"] for e in container.get("env", [])}


def run_pods(h, names, url, art, container, count, port, ns="default"):
    world = int(env_of(container)["SURGE_WORLD_SIZE"])
    procs = []
    for i in range(world):
        env = dict(env_of(container), JOB_COMPLETION_INDEX=str(i), SURGE_COORDINATOR_PORT=str(port))
        host, fqdn = names(i)
        procs.append(pod(h, host, fqdn, names(0)[1], env, container_args(container, url, art, count)))
    out = []
    for p in procs:
        try:
            o, e = p.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            p.kill()
            o, e = p.communicate()
        out.append((p.returncode, o, e))
    return world, out


def main(h):
    try:
        import yaml
    except ImportError:
        h.skip("python3-yaml missing")
    if os.geteuid() != 0 or not shutil.which("unshare"):
        h.skip("playing pods needs root and util-linux unshare")
    probe = subprocess.run(["unshare", "--uts", "--mount", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        h.skip("unshare --uts --mount refused here: %s" % probe.stderr.strip())

    with open(os.path.join(ROOT, "deploy", "k8s", "indexed-job.yaml")) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    svc = next(d for d in docs if d["kind"] == "Service")
    job = next(d for d in docs if d["kind"] == "Job")
    spec = job["spec"]
    container = spec["template"]["spec"]["containers"][0]
    world = int(env_of(container)["SURGE_WORLD_SIZE"])
    h.check(svc["spec"].get("clusterIP") == "None" and spec["template"]["spec"].get("subdomain") == svc["metadata"]
            ["name"], "the Service is headless and names the pods' subdomain")
    h.check(spec["completionMode"] == "Indexed" and spec["completions"] == spec["parallelism"] == world,
            "Indexed, completions = parallelism = SURGE_WORLD_SIZE (%d)" % world)
    h.check(svc["spec"]["selector"].get("job-name") == job["metadata"]["name"], "the Service selects the Job's pods")

    with open(os.path.join(ROOT, "deploy", "k8s", "jobset.yaml")) as f:
        jobset = yaml.safe_load(f)
    rj = jobset["spec"]["replicatedJobs"][0]
    jspec = rj["template"]["spec"]
    jcontainer = jspec["template"]["spec"]["containers"][0]
    h.check(rj["replicas"] == 1 and jspec["completionMode"] == "Indexed"
            and jspec["completions"] == jspec["parallelism"] == int(env_of(jcontainer)["SURGE_WORLD_SIZE"]),
            "JobSet: one Indexed job whose size is SURGE_WORLD_SIZE")

    with h.mock("--ttft-ms", 3, "--itl-ms", 1, record=True) as m:
        name, sub = job["metadata"]["name"], svc["metadata"]["name"]
        recipes = (
            ("indexed-job", container,
             lambda i: ("%s-%d" % (name, i), "%s-%d.%s.default.svc.cluster.local" % (name, i, sub))),
            ("jobset", jcontainer,
             lambda i: ("%s-%s-0-%d" % (jobset["metadata"]["name"], rj["name"], i),
                        "%s-%s-0-%d.%s.default.svc.cluster.local" % (jobset["metadata"]["name"], rj["name"], i,
                                                                     jobset["metadata"]["name"]))),
        )
        for recipe, cont, names in recipes:
            art = h.path(recipe)
            port = free_port()
            n, res = run_pods(h, names, m.url, art, cont, 400, port)
            for i, (rc, out, err) in enumerate(res):
                h.check(rc == 0, "%s: pod %d exits 0" % (recipe, i), err[-1500:])
            h.check("Kubernetes (JOB_COMPLETION_INDEX)" in res[1][2] and "rank 0 at %s:%d" % (names(0)[1], port)
                    in res[1][2], "%s: rank 1 found rank 0 by name, %s" % (recipe, names(0)[1]), res[1][2][:600])
            s = Result(subprocess.CompletedProcess([], 0, "", ""), art).summary or {}
            h.check(s.get("request_count", {}).get("avg") == 400, "%s: the merged run has every request" % recipe,
                    s.get("request_count"))
            ranks = s.get("ranks", {})
            h.check(ranks.get("world") == n and ranks.get("launched_by", "").startswith("Kubernetes"),
                    "%s: %d ranks launched by Kubernetes" % (recipe, n), ranks)

        # a pod of a Job that forgot SURGE_WORLD_SIZE
        host, fqdn = recipes[0][2](1)
        env = {"JOB_COMPLETION_INDEX": "1"}
        p = pod(h, host, fqdn, recipes[0][2](0)[1], env, container_args(container, m.url, h.path("bad"), 10))
        o, e = p.communicate(timeout=30)
        h.check(p.returncode == 2 and "SURGE_WORLD_SIZE" in e, "without SURGE_WORLD_SIZE: exit 2 saying so", e)


if __name__ == "__main__":
    harness.main(main)
