#!/usr/bin/env bash
# The main job: install what is missing, build, and run the cluster bring-up
# benchmark (rdmx-bench bringup) on NP ranks (default 4) over RDMA: natively
# on a host with an RDMA device, else in the Soft-RoCE guest.
#
# Usage: scripts/bringup.sh [--np N] [rdmx-bench options...]
#   --np N (or --np=N, or N as the first argument) ranks; every other
#   argument goes to `rdmx-bench bringup` as it is, in any order, e.g.
#   scripts/bringup.sh --html report.html --np 8 --json out.json
#   --dry-run prints the command it would run (one shell-quoted word each)
#   and stops, before installing or building anything.
# Relative paths (--html, --json, --csv) are relative to where this script
# was run from.
set -euo pipefail
top="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)"
bdir="${RDMX_BUILD_DIR:-$top/build}"

np=4
dry=0
bench_args=()
if [[ "${1:-}" =~ ^[0-9]+$ ]]; then np=$1; shift; fi  # the older form: NP first
while [ $# -gt 0 ]; do
  case "$1" in
    --np) [ $# -ge 2 ] || { echo "bringup.sh: --np needs a number" >&2; exit 2; }; np=$2; shift 2 ;;
    --np=*) np=${1#--np=}; shift ;;
    --dry-run) dry=1; shift ;;
    *) bench_args+=("$1"); shift ;;
  esac
done
[[ "$np" =~ ^[1-9][0-9]*$ ]] || { echo "bringup.sh: --np wants a positive number of ranks, got '$np'" >&2; exit 2; }

[ "$dry" = 1 ] || "$top/scripts/deps.sh"
[ "$dry" = 1 ] || "$top/scripts/build.sh" "$bdir"
# In the guest, ranks alternate between rxe0 and rxe1 so traffic crosses the veth.
dev="${RDMX_DEVICE:-}"
[ -z "$dev" ] && [ ! -d /sys/class/infiniband ] && dev="rxe0,rxe1"
# Emulated links are too noisy for relative speed verdicts: there the
# all-pairs check covers reachability and data, and the summary says so;
# real fabrics keep 0.8.
extra=()
# Every rank of the guest sits on one node, where shared memory would carry
# every pair: the bring-up is there to test the RDMA path, so rc carries
# them (on a real cluster, pairs on one node use sm and are reported so).
lanes="${RDMX_TRANSPORTS:-}"
if [ ! -d /sys/class/infiniband ]; then
  extra=(--quick --flag-fraction 0 --note "this is a self-test in an emulated guest; speed verdicts are off")
  [ -z "$lanes" ] && lanes="rc,self"
fi
lane_env=()
[ -n "$lanes" ] && lane_env=(RDMX_TRANSPORTS="$lanes")
# The command runs in this directory (the guest shares the host's files), so
# relative output paths land where the user asked; arguments pass as words.
cmd=("$top/scripts/vm/run.sh" --timeout "${RDMX_VM_TIMEOUT:-1800}" --
  bash -c 'ulimit -l unlimited; exec "$@"' bringup
  env RDMX_DEVICE="$dev" "${lane_env[@]}" mpirun --allow-run-as-root --oversubscribe --bind-to none -x RDMX_DEVICE
  ${lanes:+-x RDMX_TRANSPORTS} -np "$np"
  "$bdir/bench/rdmx-bench" bringup --verify "${extra[@]}" "${bench_args[@]}")
if [ "$dry" = 1 ]; then
  printf '%q\n' "${cmd[@]}"
  exit 0
fi
exec "${cmd[@]}"
