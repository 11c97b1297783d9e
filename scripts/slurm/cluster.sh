#!/usr/bin/env bash
# A one-node Slurm cluster for the test suite: munged, slurmctld and slurmd
# on this host (in the guest, or natively), with a configuration written to
# a private directory, so jobs can be launched with srun --mpi=pmix|pmi2
# and sbatch the way a site does.
#
#   scripts/slurm/cluster.sh start DIR   write DIR/slurm.conf, start the daemons, wait for the node
#   scripts/slurm/cluster.sh stop DIR    stop what start started
#   scripts/slurm/cluster.sh env DIR     print the exports a shell needs (SLURM_CONF)
#
# Everything lives under DIR (state, spool, logs, the munge key and socket),
# which must be on a file system that holds sockets (tmpfs in the guest, not
# 9p). Runs as root; the daemons run as root too (SlurmUser=root), since a
# test bed has no slurm account to rely on.
set -euo pipefail

die() { echo "scripts/slurm/cluster.sh: $*" >&2; exit 1; }
[ $# -eq 2 ] || die "usage: $0 start|stop|env DIR"
cmd=$1
dir=$(mkdir -p "$2" && cd "$2" && pwd)
conf=$dir/slurm.conf
munge_sock=$dir/munge/munge.socket.2
host=$(hostname -s)
# How long start waits for the node to become idle; slurmd registers within
# a second on a quiet machine, an emulated guest under load needs longer.
readonly kReadySeconds=60
readonly kCpus=16

write_conf() {
  mkdir -p "$dir/state" "$dir/spool" "$dir/log" "$dir/munge"
  cat > "$conf" <<CONF
# Written by scripts/slurm/cluster.sh: one node, root-run daemons, no cgroups
# (the test bed has no systemd and its kernel may not delegate them).
ClusterName=rdmx-test
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$munge_sock
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldPort=${RDMX_SLURM_PORT:-16817}
SlurmdPort=$(( ${RDMX_SLURM_PORT:-16817} + 1 ))
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
# More CPUs than a test machine has, so that a job may run more ranks than
# cores (config_overrides: slurmd reports the configured count, not the real).
SlurmdParameters=config_overrides
NodeName=$host NodeAddr=127.0.0.1 CPUs=$kCpus State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=30 State=UP
CONF
  # slurmd sets up its cgroup plugin even when no cgroup-based plugin is
  # configured; under cgroup v2 without systemd (the guest) it must build
  # the hierarchy itself instead of asking systemd over dbus.
  cat > "$dir/cgroup.conf" <<CONF
CgroupPlugin=autodetect
IgnoreSystemdOnFailure=yes
CONF
}

daemon_failed() {
  echo "slurm: $1 did not start; its log:" >&2
  tail -n 20 "$dir/log/$1.log" >&2 2>/dev/null || true
}

start() {
  command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null ||
    die "slurmctld, slurmd and munged are needed (scripts/deps.sh testbed installs them)"
  write_conf
  [ -s "$dir/munge/munge.key" ] || { dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none; }
  chmod 700 "$dir/munge"; chmod 400 "$dir/munge/munge.key"
  munged --key-file="$dir/munge/munge.key" --socket="$munge_sock" --pid-file="$dir/munge/munged.pid" \
         --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed" --origin=127.0.0.1 --force ||
    { daemon_failed munged; return 1; }
  export SLURM_CONF=$conf
  slurmctld -i || { daemon_failed slurmctld; return 1; }
  slurmd || { daemon_failed slurmd; return 1; }
  local t=0 state=""
  while [ $t -lt $kReadySeconds ]; do
    state=$(sinfo -h -n "$host" -o %T 2>/dev/null || true)
    case "$state" in idle*|mixed*|allocated*) echo "slurm: node $host is $state (SLURM_CONF=$conf)"; return 0 ;; esac
    sleep 1; t=$((t + 1))
  done
  echo "slurm: node $host not ready after ${kReadySeconds}s (state '${state:-none}'); logs:" >&2
  tail -n 20 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2 || true
  return 1
}

stop() {
  local f pid
  for f in slurmd.pid slurmctld.pid munge/munged.pid; do
    [ -s "$dir/$f" ] || continue
    pid=$(cat "$dir/$f")
    kill "$pid" 2>/dev/null || true
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$dir/$f"
  done
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  env) echo "export SLURM_CONF=$conf" ;;
  *) die "unknown command '$cmd' (start, stop, env)" ;;
esac
