#!/usr/bin/env bash
# A small Slurm cluster for the test suite: munged, slurmctld and slurmd
# with a configuration written to a private directory, so jobs can be
# launched with srun --mpi=pmix|pmi2 and sbatch the way a site does.
#
#   scripts/slurm/cluster.sh start DIR [--nodes LIST] [--state SDIR]
#       write DIR/slurm.conf and the munge key, start munged, slurmctld and
#       this node's slurmd, and wait until every node of LIST is up
#   scripts/slurm/cluster.sh join DIR [--state SDIR]
#       on another node that sees DIR (a shared file system): start munged
#       and slurmd from DIR's configuration and key
#   scripts/slurm/cluster.sh stop DIR [--state SDIR]
#       stop the daemons this node started
#
# LIST is NAME=ADDRESS[,NAME=ADDRESS...], the first being this node (the
# controller); default: this host at 127.0.0.1. SDIR (default DIR) holds
# what must be local to each node and on a file system that holds sockets
# (state, spool, the munge socket: tmpfs in the guest, not 9p); give every
# node the same SDIR path. Logs go to DIR/log, one file per daemon and node.
# Runs as root; the daemons run as root too (SlurmUser=root), since a test
# bed has no slurm account to rely on. After start:
# export SLURM_CONF=DIR/slurm.conf.
set -euo pipefail

die() { echo "scripts/slurm/cluster.sh: $*" >&2; exit 1; }
[ $# -ge 2 ] || die "usage: $0 start|join|stop DIR [--nodes NAME=ADDR,...] [--state SDIR]"
cmd=$1
dir=$(mkdir -p "$2" && cd "$2" && pwd)
shift 2
host=$(hostname -s)
nodes="$host=127.0.0.1"
state=$dir
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) [ $# -ge 2 ] || die "--nodes needs a value"; nodes=$2; shift 2 ;;
    --state) [ $# -ge 2 ] || die "--state needs a value"; state=$2; shift 2 ;;
    *) die "unknown argument '$1'" ;;
  esac
done
[[ "$nodes" =~ ^[A-Za-z0-9-]+=[0-9.]+(,[A-Za-z0-9-]+=[0-9.]+)*$ ]] ||
  die "--nodes wants NAME=ADDRESS[,NAME=ADDRESS...], got '$nodes'"
mkdir -p "$state"
state=$(cd "$state" && pwd)
conf=$dir/slurm.conf
munge_sock=$state/munge/munge.socket.2
# How long start waits for the nodes to become idle; slurmd registers within
# a second on a quiet machine, an emulated guest under load needs longer.
readonly kReadySeconds=120
# More CPUs than a test machine has, so that a job may run more ranks than
# cores (config_overrides: slurmd reports the configured count, not the real).
readonly kCpus=16
readonly kPort=${RDMX_SLURM_PORT:-16817}

write_conf() {
  local first=${nodes%%,*} names="" n
  for n in ${nodes//,/ }; do names="${names:+$names,}${n%%=*}"; done
  mkdir -p "$dir/log"
  {
    cat <<CONF
# Written by scripts/slurm/cluster.sh: root-run daemons, no cgroup-based
# plugins (the test bed has no systemd and its kernel may not delegate them).
ClusterName=rdmx-test
SlurmctldHost=${first%%=*}(${first#*=})
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$munge_sock
CredType=cred/munge
StateSaveLocation=$state/state
SlurmdSpoolDir=$state/spool
# Job steps' scratch (the PMIx plugin's per-step directories among it):
# node-local, never a file system two nodes share.
TmpFS=$state/tmp
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
SlurmctldPort=$kPort
SlurmdPort=$((kPort + 1))
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
SlurmdParameters=config_overrides
CONF
    for n in ${nodes//,/ }; do echo "NodeName=${n%%=*} NodeAddr=${n#*=} CPUs=$kCpus State=UNKNOWN"; done
    echo "PartitionName=test Nodes=$names Default=YES MaxTime=30 State=UP"
  } >"$conf"
  # slurmd sets up its cgroup plugin even when no cgroup-based plugin is
  # configured; under cgroup v2 without systemd (the guest) it must build
  # the hierarchy itself instead of asking systemd over dbus.
  printf 'CgroupPlugin=autodetect\nIgnoreSystemdOnFailure=yes\n' >"$dir/cgroup.conf"
  mkdir -p "$dir/munge"
  chmod 700 "$dir/munge"
  [ -s "$dir/munge/munge.key" ] || dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$dir/munge/munge.key"
}

daemon_failed() {  # NAME LOG
  echo "slurm: $1 did not start on $host; its log:" >&2
  tail -n 20 "$2" >&2 2>/dev/null || true
}

start_node_daemons() {  # munged and slurmd, on every node
  command -v slurmd >/dev/null && command -v munged >/dev/null ||
    die "slurmd and munged are needed (scripts/deps.sh tests installs them)"
  mkdir -p "$state/munge" "$state/spool" "$state/state" "$state/tmp"
  chmod 700 "$state/munge"
  munged --key-file="$dir/munge/munge.key" --socket="$munge_sock" --pid-file="$state/munge/munged.pid" \
         --log-file="$dir/log/munged-$host.log" --seed-file="$state/munge/seed" --origin=127.0.0.1 --force ||
    { daemon_failed munged "$dir/log/munged-$host.log"; return 1; }
  export SLURM_CONF=$conf
  if [ "$1" = controller ]; then
    command -v slurmctld >/dev/null || die "slurmctld is needed (scripts/deps.sh tests installs it)"
    slurmctld -i || { daemon_failed slurmctld "$dir/log/slurmctld.log"; return 1; }
  fi
  slurmd -N "$host" || { daemon_failed slurmd "$dir/log/slurmd-$host.log"; return 1; }
}

wait_ready() {  # every node of the partition idle
  local t=0 want down
  want=$(echo "${nodes//,/ }" | wc -w)
  while [ $t -lt $kReadySeconds ]; do
    down=$(sinfo -h -N -o '%N %T' 2>/dev/null | grep -cvE ' (idle|mixed|allocated)' || true)
    if [ "$(sinfo -h -N -o %N 2>/dev/null | wc -l)" = "$want" ] && [ "$down" = 0 ]; then
      echo "slurm: $want node(s) up (SLURM_CONF=$conf)"
      return 0
    fi
    sleep 1; t=$((t + 1))
  done
  echo "slurm: not every node is up after ${kReadySeconds}s:" >&2
  sinfo -N >&2 2>/dev/null || true
  tail -n 20 "$dir"/log/*.log >&2 || true
  return 1
}

stop() {
  local f pid
  for f in slurmd.pid slurmctld.pid munge/munged.pid; do
    [ -s "$state/$f" ] || continue
    pid=$(cat "$state/$f")
    kill "$pid" 2>/dev/null || true
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$state/$f"
  done
}

case "$cmd" in
  start) write_conf; start_node_daemons controller && wait_ready ;;
  join) [ -s "$conf" ] || die "no $conf: run start on the first node first"; start_node_daemons node ;;
  stop) stop ;;
  *) die "unknown command '$cmd' (start, join, stop)" ;;
esac
