#!/usr/bin/env bash
# The one list of rdmx's Debian packages. Installs whatever is missing.
# Usage: scripts/deps.sh            (as root, or with sudo available)
set -euo pipefail

RDMX_DEBS=(
  build-essential cmake pkg-config gfortran
  rdma-core libibverbs-dev librdmacm-dev ibverbs-providers ibverbs-utils rdmacm-utils perftest
  libhwloc-dev hwloc libpmix-dev
  openmpi-bin libopenmpi-dev
  mpich
  libgtest-dev libgmock-dev libbenchmark-dev
  qemu-system-x86 busybox-static cpio kmod iproute2 procps
  clang libclang-rt-14-dev
  linux-perf
)

missing=()
for p in "${RDMX_DEBS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done

SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
if [ ${#missing[@]} -gt 0 ]; then
  echo "rdmx: installing missing Debian packages: ${missing[*]}" >&2
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
