#!/usr/bin/env bash
# The main job: install what is missing, build, and run the cluster bring-up
# benchmark (rdmx-bench bringup) on NP ranks (default 4) over RDMA: natively
# on a host with an RDMA device, else in the Soft-RoCE guest.
# Usage: scripts/bringup.sh [NP] [extra rdmx-bench options]
set -euo pipefail
top="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)"
bdir="${RDMX_BUILD_DIR:-$top/build}"
np="${1:-4}"
shift || true
"$top/scripts/deps.sh"
"$top/scripts/build.sh" "$bdir"
cd "$bdir"
# In the guest, ranks alternate between rxe0 and rxe1 so traffic crosses the veth.
dev="${RDMX_DEVICE:-}"
[ -z "$dev" ] && [ ! -d /sys/class/infiniband ] && dev="rxe0,rxe1"
# Emulated links are too noisy for relative speed verdicts: there the
# all-pairs check covers reachability and data; real fabrics keep 0.8.
extra=""
[ ! -d /sys/class/infiniband ] && extra="--quick --flag-fraction 0"
exec "$top/scripts/vm/run.sh" --timeout "${RDMX_VM_TIMEOUT:-1800}" -- \
  bash -c "ulimit -l unlimited; RDMX_DEVICE='$dev' mpirun --allow-run-as-root --oversubscribe --bind-to none \
    -x RDMX_DEVICE -np $np ./bench/rdmx-bench bringup --verify $extra $*"
