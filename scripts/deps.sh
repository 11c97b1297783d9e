#!/usr/bin/env bash
# The one list of rdmx's Debian packages, in groups. Installs whatever is
# missing of the groups asked for (default: all).
# Usage: scripts/deps.sh [lib] [tools] [tests] [testbed]   (as root, or with sudo)
#   lib      build the library, rdmx-bench and rdmx-info (configure with -DRDMX_BUILD_TESTS=OFF):
#            all a cluster node building rdmx needs; no MPI, no qemu, no clang
#   tools    run the comparisons beside rdmx-bench (perftest, Open MPI, UCX) and build the
#            optional rdmx-bench-mpi (MPI) and rdmx-micro (Google Benchmark)
#   tests    build and run the test suite: MPI, GoogleTest, Python (checks of scripts), clang for
#            the fuzzers, MPICH's mpiexec, header and NPmpich2 (the MPICH-ABI layer's checks),
#            Slurm and munge (a one-node cluster launches jobs: scripts/slurm/cluster.sh),
#            debhelper for the packages
#   testbed  the Soft-RoCE qemu guest and the profiler
set -euo pipefail

# nlohmann-json3-dev is header only: rdmx-info and rdmx-bench (built by default) write JSON with it.
LIB_DEBS=(build-essential cmake pkg-config ccache rdma-core libibverbs-dev librdmacm-dev ibverbs-providers
          libhwloc-dev libpmix-dev nlohmann-json3-dev)
TOOLS_DEBS=(ibverbs-utils rdmacm-utils perftest hwloc openmpi-bin libopenmpi-dev libbenchmark-dev
            ucx-utils libucx-dev)
TESTS_DEBS=(python3 gfortran openmpi-bin libopenmpi-dev mpich libmpich-dev netpipe-mpich2 libgtest-dev libgmock-dev clang libclang-rt-14-dev valgrind
            slurmctld slurmd slurm-client munge
            debhelper dpkg-dev)
TESTBED_DEBS=(qemu-system-x86 busybox-static cpio kmod iproute2 procps linux-perf)

# The HTML report's test loads the page in a headless browser (skipped without it).
TESTS_DEBS+=(chromium)

groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=(lib tools tests testbed)
RDMX_DEBS=()
for g in "${groups[@]}"; do
  case "$g" in
    lib) RDMX_DEBS+=("${LIB_DEBS[@]}") ;;
    tools) RDMX_DEBS+=("${TOOLS_DEBS[@]}") ;;
    tests) RDMX_DEBS+=("${TESTS_DEBS[@]}") ;;
    testbed) RDMX_DEBS+=("${TESTBED_DEBS[@]}") ;;
    *) echo "scripts/deps.sh: unknown group '$g' (lib, tools, tests, testbed)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${RDMX_DEBS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | awk 'NF && !seen[$0]++')

SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
if [ ${#missing[@]} -gt 0 ]; then
  echo "rdmx: installing missing Debian packages: ${missing[*]}" >&2
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
