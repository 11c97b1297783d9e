# shellcheck shell=bash
# A two-node Slurm cluster across the guests of `scripts/vm/run.sh --nodes 2`
# (vm0 10.56.0.1, vm1 10.56.0.2), for scripts that run on both guests:
# sourced, then
#
#   pair_start DONE_SECONDS
#
# On vm0 it starts the cluster (configuration and munge key in the
# directory both guests share, RDMX_VM_SHARED), exports SLURM_CONF and
# returns; on exit vm0 stops its daemons and tells vm1 it is done. On vm1 it
# joins the cluster and waits until vm0 is done (at most DONE_SECONDS), or
# powers the guest off when vm0 asks (touch "$pair_shared/poweroff": sysrq
# 'o', no shutdown, no disconnects: the link just goes quiet), then exits:
# pair_start never returns there.
pair_top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
pair_cluster=$pair_top/scripts/slurm/cluster.sh
pair_shared=${RDMX_VM_SHARED:?run under scripts/vm/run.sh --nodes 2}
pair_node=${RDMX_VM_NODE:?run under scripts/vm/run.sh --nodes 2}
pair_sdir=$pair_shared/slurm
pair_state=/run/tmp/rdmx-slurm
readonly kPairJoinSeconds=240

pair_wait_for() {  # FILE SECONDS
  local t=0
  while [ ! -e "$1" ] && [ $t -lt "$2" ]; do sleep 1; t=$((t + 1)); done
  [ -e "$1" ]
}

pair_start() {  # DONE_SECONDS
  local done_seconds=$1 t
  if [ "$pair_node" != 0 ]; then
    pair_wait_for "$pair_sdir/slurm.conf" $kPairJoinSeconds ||
      { echo "pair: vm$pair_node: no cluster configuration after ${kPairJoinSeconds}s"; exit 1; }
    "$pair_cluster" join "$pair_sdir" --state "$pair_state" || exit 1
    echo "pair: vm$pair_node joined"
    for ((t = 0; t < done_seconds; t++)); do
      [ -e "$pair_shared/done" ] && break
      if [ -e "$pair_shared/poweroff" ]; then
        echo "pair: vm$pair_node powering off"
        echo o >/proc/sysrq-trigger
        sleep 60
      fi
      sleep 1
    done
    "$pair_cluster" stop "$pair_sdir" --state "$pair_state"
    exit 0
  fi
  trap '"$pair_cluster" stop "$pair_sdir" --state "$pair_state"; touch "$pair_shared/done"' EXIT
  "$pair_cluster" start "$pair_sdir" --nodes vm0=10.56.0.1,vm1=10.56.0.2 --state "$pair_state" || exit 1
  export SLURM_CONF=$pair_sdir/slurm.conf
}
