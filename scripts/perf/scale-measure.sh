#!/usr/bin/env bash
# Per-process bring-up time and memory of an rdmx job against its rank
# count: the measured inputs of the scale model (docs/scale.md).
#
# Usage: scripts/perf/scale-measure.sh [--mode sm|rc|mixed|two-node] [--build DIR] [--np "1 2 4 8 16"]
#                                      [--repeat R] [--per-node K] [--raw DIR] [--mpi]
#                                      [--connect "mesh lazy"]
#
#   --mode sm     every rank on one node over shared memory (RDMX_TRANSPORTS=sm,self);
#                 runs natively, no device needed (default)
#   --mode rc     every pair over rc (RDMX_TRANSPORTS=rc,self): needs an RDMA
#                 device, i.e. the Soft-RoCE guest:
#                   scripts/vm/run.sh --timeout 900 -- $PWD/scripts/perf/scale-measure.sh --mode rc
#   --mode mixed  rc and sm: pretend nodes of K ranks (--per-node, default 2)
#   --mode two-node  two real hosts, N ranks on each (--np counts ranks per
#                 host): sm within a host, rc across. Runs on both guests of
#                 scripts/vm/run.sh --nodes 2, which it joins into a Slurm
#                 cluster (scripts/slurm/pair.sh); rdmx starts under
#                 srun --mpi=pmix, Open MPI's mpirun inside salloc -N 2:
#                   scripts/vm/run.sh --nodes 2 --timeout 3000 -- \
#                     $PWD/scripts/perf/scale-measure.sh --mode two-node --build $PWD/build --mpi
#   --build DIR   build tree with bench/rdmx-bench (default: build)
#   --np LIST     rank counts (default "1 2 4 8 16"; 1 is the baseline with no transport)
#   --repeat R    connect runs per job: run 1 is the first rdmx_init, runs 2..R
#                 finalize and init again (default 5)
#   --raw DIR     keep every run's output in DIR (default: a new temporary directory)
#   --mpi         also run rdmx-bench-mpi connect (Open MPI: MPI_Init + first exchange)
#   --connect L   run rdmx once per RDMX_CONNECT value in L (e.g. "mesh lazy";
#                 default: the library's own choice, RDMX_CONNECT unset)
#
# Per tool and N it prints one markdown row: the first init (rdmx_init, which
# connects the full mesh, or MPI_Init), the first bring-up (MPI: the first
# 1-byte exchange with every peer), the median of the later bring-ups (all
# the slowest rank's), the peak RSS per rank (max and median over ranks, from
# /usr/bin/time) and the peak pinned memory of any rank (VmPin, sampled from
# /proc every 50 ms: zero over sm, the registered pools over rc; "-" when a
# job ended before the first sample). Ranks are oversubscribed on whatever
# CPUs the host has, so times include waiting for a CPU.
set -euo pipefail

prog="scale-measure"
die() { echo "$prog: error: $*" >&2; exit 2; }
note() { echo "$prog: $*" >&2; }
here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
top="$(cd -- "$here/../.." && pwd -P)"
usage() { sed -n '5,28p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

mode=sm
build="$top/build"
nps="1 2 4 8 16"
repeat=5
per_node=2
rawdir=""
with_mpi=0
connects=""
readonly kSampleSeconds=0.05   # VmPin sampling period
readonly kJobTimeout=600       # one job, seconds
while [ $# -gt 0 ]; do
  case "$1" in
    --mode) [ $# -ge 2 ] || die "--mode needs a value"; mode="$2"; shift 2 ;;
    --build) [ $# -ge 2 ] || die "--build needs a value"; build="$2"; shift 2 ;;
    --np) [ $# -ge 2 ] || die "--np needs a value"; nps="$2"; shift 2 ;;
    --repeat) [ $# -ge 2 ] || die "--repeat needs a value"; repeat="$2"; shift 2 ;;
    --per-node) [ $# -ge 2 ] || die "--per-node needs a value"; per_node="$2"; shift 2 ;;
    --raw) [ $# -ge 2 ] || die "--raw needs a value"; rawdir="$2"; shift 2 ;;
    --mpi) with_mpi=1; shift ;;
    --connect) [ $# -ge 2 ] || die "--connect needs a value"; connects="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done
case "$mode" in sm|rc|mixed|two-node) ;; *) die "--mode wants sm, rc, mixed or two-node, got '$mode'" ;; esac
for cm in $connects; do
  case "$cm" in mesh|lazy|auto) ;; *) die "--connect wants mesh, lazy or auto, got '$cm'" ;; esac
done
[[ "$repeat" =~ ^[1-9][0-9]*$ ]] || die "--repeat wants a positive integer, got '$repeat'"
[[ "$per_node" =~ ^[1-9][0-9]*$ ]] || die "--per-node wants a positive integer, got '$per_node'"
for n in $nps; do [[ "$n" =~ ^[1-9][0-9]*$ ]] || die "--np wants positive integers, got '$n'"; done
build="$(cd -- "$build" 2>/dev/null && pwd -P)" || die "no build directory '$build'"
bench="$build/bench/rdmx-bench"
bench_mpi="$build/bench/rdmx-bench-mpi"
[ -x "$bench" ] || die "missing $bench: cmake --build $build --target rdmx-bench"
[ "$with_mpi" = 0 ] || [ -x "$bench_mpi" ] || die "missing $bench_mpi (--mpi)"
for c in mpirun python3 /usr/bin/time timeout; do
  command -v "$c" >/dev/null || die "$c not found"
done
if [ "$mode" = two-node ]; then
  # shellcheck source=../slurm/pair.sh
  . "$top/scripts/slurm/pair.sh"
  pair_start $((kJobTimeout * 40))  # the other guest returns only when this one is done
  # Both hosts write their ranks' files: a directory both see.
  [ -n "$rawdir" ] || rawdir="$pair_shared/scale-measure"
fi
[ -n "$rawdir" ] || rawdir="$(mktemp -d "${TMPDIR:-/tmp}/scale-measure.XXXXXX")"
mkdir -p "$rawdir"
rawdir="$(cd -- "$rawdir" && pwd -P)"

case "$mode" in
  sm) transports="sm,self" ;;
  rc) transports="rc,self" ;;
  mixed|two-node) transports="sm,rc,self" ;;
esac

# rank.sh: one rank, under /usr/bin/time (peak RSS in KiB into time.RANK);
# in mixed mode it also names the rank's pretend node.
cat >"$rawdir/rank.sh" <<EOF
#!/bin/sh
rank="\${OMPI_COMM_WORLD_RANK:-\${SLURM_PROCID:-\${PMIX_RANK:-0}}}"
if [ "$mode" = mixed ]; then RDMX_NODE_ID="pretend\$((rank / $per_node))"; export RDMX_NODE_ID; fi
out="\$1"; shift
exec /usr/bin/time -f "%M" -o "\$out.time.\$rank" "\$@"
EOF
chmod +x "$rawdir/rank.sh"

# sample_pins TAG PROGRAM: the largest VmPin and VmRSS (KiB) seen in any
# process running PROGRAM on this host, every kSampleSeconds, until killed.
# Builtins only (test -ef, read): a fork per process made one pass over /proc
# take longer than a whole small job in the TCG guest, so nothing was sampled.
sample_pins() {
  local tag="$1" exe="$2" pin=0 rss=0 d k v rest
  # Killed (TERM) mid-write, the file would be left empty: the trap runs
  # after the current command and writes it whole.
  trap 'echo "$pin $rss" >"$tag.pin"; exit 0' TERM
  while :; do
    for d in /proc/[0-9]*; do
      [ "$d/exe" -ef "$exe" ] || continue
      { while read -r k v rest; do
          case "$k" in
            VmPin:) if [ "$v" -gt "$pin" ]; then pin="$v"; fi ;;
            VmRSS:) if [ "$v" -gt "$rss" ]; then rss="$v"; fi ;;
          esac
        done <"$d/status"; } 2>/dev/null || true
    done
    echo "$pin $rss" >"$tag.pin"
    sleep "$kSampleSeconds"
  done
}

# launcher TOOL N CONNECT: the command that starts N ranks (two-node: N per
# host; srun and salloc pass the whole environment on).
launcher() {
  local tool="$1" n="$2" cm="$3"
  if [ "$mode" != two-node ]; then
    echo mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$n" -x RDMX_TRANSPORTS ${cm:+-x RDMX_CONNECT}
  elif [ "$tool" = mpi ]; then
    # Open MPI as scripts/perf/compare.sh runs it on Soft-RoCE (pml ucx, RC
    # verbs; UD's GID check off for RoCE), plus UCX's shared memory on a host.
    echo salloc -N 2 --ntasks-per-node="$n" -t $((kJobTimeout / 60)) mpirun --allow-run-as-root --oversubscribe \
      --bind-to none -np $((2 * n)) --map-by "ppr:$n:node" --mca pml ucx -x UCX_TLS=rc_v,sm,self \
      -x UCX_NET_DEVICES=rxe0:1 -x UCX_UD_ETH_DGID_CHECK=n
  else
    echo srun -N 2 --ntasks-per-node="$n" --mpi=pmix -t $((kJobTimeout / 60))
  fi
}

# job TOOL N [CONNECT]: one connect job; its CSV, times and pin samples
# under $rawdir, tagged TOOL[-CONNECT].npN.
job() {
  local tool="$1" n="$2" cm="${3:-}" tag exe
  if [ "$tool" = rdmx ]; then exe="$bench"; else exe="$bench_mpi"; fi
  tag="$rawdir/$tool${cm:+-$cm}.np$n"
  rm -f "$tag".*
  sample_pins "$tag" "$exe" &
  local sampler=$!
  local rc=0
  local env=(RDMX_TRANSPORTS="$transports")
  [ -z "$cm" ] || env+=(RDMX_CONNECT="$cm")
  # shellcheck disable=SC2046  # the launcher's words
  env "${env[@]}" timeout -k 10 "$kJobTimeout" $(launcher "$tool" "$n" "$cm") \
    "$rawdir/rank.sh" "$tag" "$exe" connect --repeat "$repeat" --quiet --csv "$tag.csv" \
    >"$tag.out" 2>"$tag.err" || rc=$?
  kill "$sampler" 2>/dev/null || true
  wait "$sampler" 2>/dev/null || true
  [ "$rc" = 0 ] || note "$tool${cm:+ ($cm)} at $n ranks failed (exit $rc): see $tag.err"
  return 0
}

note "mode $mode (RDMX_TRANSPORTS=$transports), ranks: $nps, $repeat connect runs each; raw output in $rawdir"
note "host: $(nproc) CPU(s), $(uname -r)"
tools=""
if [ -z "$connects" ]; then
  tools="rdmx"
else
  for cm in $connects; do tools="$tools rdmx-$cm"; done
fi
[ "$with_mpi" = 0 ] || tools="$tools mpi"
for n in $nps; do
  for tool in $tools; do
    case "$tool" in
      rdmx-*) job rdmx "$n" "${tool#rdmx-}" ;;
      *) job "$tool" "$n" ;;
    esac
  done
done

python3 - "$rawdir" "$mode" "$nps" "$tools" <<'PY'
import csv, glob, os, statistics, sys
raw, mode, nps, tools = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4].split()

def connect_rows(path):
    """(first Init ms, first BringUp ms, median of later BringUps ms) from
    the connect section of the CSV (sections are separated by blank lines)."""
    if not os.path.exists(path):
        return None, None, None
    runs, header = [], None
    with open(path) as f:
        for line in f:
            cells = line.strip().split(",")
            if cells[:2] == ["test", "Run"]:
                header = cells
            elif header and cells[0] == "connect" and len(cells) == len(header):
                row = dict(zip(header, cells))
                val = lambda k: float(row[k]) if row.get(k) else None
                runs.append((val("Init(ms)"), val("BringUp(ms)")))
    if not runs:
        return None, None, None
    later = [b for _, b in runs[1:] if b is not None]
    return runs[0][0], runs[0][1], (statistics.median(later) if later else None)

def fmt(v, spec="{:.1f}"):
    return "-" if v is None else spec.format(v)

print("| tool | N | first init ms | first bring-up ms | later bring-ups ms (median) | peak RSS/rank MiB (max, median) | peak VmPin/rank MiB |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for tool in tools:
    for n in nps:
        tag = os.path.join(raw, f"{tool}.np{n}")
        init, first, later = connect_rows(tag + ".csv")
        rss = []
        for p in glob.glob(tag + ".time.*"):
            try:
                rss.append(int(open(p).read().split()[-1]) / 1024.0)
            except (ValueError, IndexError):
                pass
        pin = None
        if os.path.exists(tag + ".pin"):
            try:
                pin = int(open(tag + ".pin").read().split()[0]) / 1024.0
            except (ValueError, IndexError):
                pass
        rss_s = "-" if not rss else f"{max(rss):.1f}, {statistics.median(rss):.1f}"
        print(f"| {tool} ({mode}) | {n} | {fmt(init)} | {fmt(first)} | {fmt(later)} | {rss_s} | {fmt(pin)} |")
PY
