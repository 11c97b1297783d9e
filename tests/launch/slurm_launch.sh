#!/usr/bin/env bash
# rdmx jobs launched by a real Slurm, the way a site launches them: a
# one-node cluster (scripts/slurm/cluster.sh) is started in a scratch
# directory, then
#   srun --mpi=pmix  -n N launch_job      PMIx
#   srun --mpi=pmi2  -n N launch_job      PMI-2 (Slurm's own server)
#   sbatch --wait    a batch script whose step is srun --mpi=pmix
#   srun --mpi=none  -n 2 launch_job      must fail, naming the fix
# and the cluster is stopped whatever happened. Each launched job passes a
# token both ways round the ring and checks rank and size against Slurm's
# SLURM_PROCID/SLURM_NTASKS (tests/launch/launch_job.c).
#
#   slurm_launch.sh CLUSTER_SH LAUNCH_JOB NRANKS
# Exit 77 (ctest: skipped) when Slurm is not installed.
set -uo pipefail
cluster=$1 job=$2 np=$3
for t in slurmctld slurmd munged srun sbatch; do
  command -v "$t" >/dev/null || { echo "slurm_launch: $t not installed (scripts/deps.sh tests): skipped"; exit 77; }
done
# Sockets (munge, slurmstepd) cannot live on 9p: under TMPDIR (tmpfs in the guest).
dir=$(mktemp -d "${TMPDIR:-/tmp}/rdmx-slurm.XXXXXX")
trap '"$cluster" stop "$dir"; rm -rf "$dir"' EXIT
"$cluster" start "$dir" || exit 1
export SLURM_CONF=$dir/slurm.conf
# A job step that outlives its time limit is killed by Slurm; `timeout`
# is the backstop for a wedged srun itself.
readonly kStepMinutes=3 kStepSeconds=240
fails=0
check() {  # name expected-regex output-file exit-status
  if [ "$4" = 0 ] && grep -Eq "$2" "$3"; then
    echo "slurm_launch: $1: PASS"
  else
    echo "slurm_launch: $1: FAIL (exit $4); output:"
    sed 's/^/    /' "$3"
    fails=$((fails + 1))
  fi
}
want="launch_job: $np ranks on [^:]+: OK"
for mpi in pmix pmi2; do
  out=$dir/srun-$mpi.out
  timeout $kStepSeconds srun --mpi=$mpi -n "$np" -t $kStepMinutes "$job" SLURM_PROCID SLURM_NTASKS >"$out" 2>&1
  check "srun --mpi=$mpi -n $np" "$want" "$out" $?
done

cat >"$dir/batch.sh" <<BATCH
#!/bin/bash
#SBATCH -n $np
#SBATCH -t $kStepMinutes
srun --mpi=pmix "$job" SLURM_PROCID SLURM_NTASKS
BATCH
out=$dir/sbatch.out
timeout $kStepSeconds sbatch --wait -o "$out" "$dir/batch.sh" >"$dir/sbatch.log" 2>&1
st=$?
cat "$dir/sbatch.log" >>"$out" 2>/dev/null
check "sbatch --wait (srun --mpi=pmix inside)" "$want" "$out" $st

# No PMI at all: every task must fail, saying how to launch it instead of
# running as N one-rank jobs.
out=$dir/srun-none.out
timeout $kStepSeconds srun --mpi=none -n 2 -t $kStepMinutes "$job" SLURM_PROCID SLURM_NTASKS >"$out" 2>&1
st=$?
if [ $st != 0 ] && grep -q "srun --mpi=pmix" "$out" && ! grep -q "launch_job: 1 ranks" "$out"; then
  echo "slurm_launch: srun --mpi=none: PASS (refused with the fix named)"
else
  echo "slurm_launch: srun --mpi=none: FAIL (exit $st; it must fail and name srun --mpi=pmix); output:"
  sed 's/^/    /' "$out"
  fails=$((fails + 1))
fi
[ $fails = 0 ] && echo "slurm_launch: all launches passed" || echo "slurm_launch: $fails launch(es) failed"
[ $fails = 0 ]
