#!/usr/bin/env bash
# rdmx's shared-memory transport against Open MPI's and UCX's, natively on
# one host, in one run, interleaved, with one core's memcpy as the limit.
#
# Usage: scripts/perf/native.sh [--build DIR] [--reps N] [--out FILE|-] [--raw DIR] [--check]
#
#   --build DIR   build tree with bench/rdmx-bench, bench/rdmx-bench-mpi and
#                 bench/rdmx-micro (default: build)
#   --reps N      interleaved repetitions (default 3)
#   --out FILE    markdown file whose perf-native:begin/end block is replaced
#                 (default: docs/performance.md; '-' prints only)
#   --raw DIR     keep every run's output in DIR (default: a new temporary directory)
#   --check       exit 1 if a target is missed or a figure could not be measured
#
# Two ranks pinned to two cores (mpirun --bind-to core --map-by core). For
# each rep, for each metric (8 B latency, bandwidth 64 KiB-4 MiB, 8 B message
# rate), it runs: rdmx-bench on rdmx over sm, then rdmx-bench-mpi on Open MPI
# vader with CMA, on vader with no single copy, on UCX posix+cma (pml ucx),
# and for bandwidth one core's memcpy (rdmx-micro Memcpy/S). Then
# native_report.py takes medians and ratios, judges the targets and writes
# the markdown. See docs/performance.md.
set -euo pipefail

prog="perf-native"
die() { echo "$prog: error: $*" >&2; exit 2; }
note() { echo "$prog: $*" >&2; }
here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
top="$(cd -- "$here/../.." && pwd -P)"

usage() { sed -n '5,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

build="$top/build"
reps=3
outfile="$top/docs/performance.md"
rawdir=""
check=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build) [ $# -ge 2 ] || die "--build needs a value"; build="$2"; shift 2 ;;
    --build=*) build="${1#*=}"; shift ;;
    --reps) [ $# -ge 2 ] || die "--reps needs a value"; reps="$2"; shift 2 ;;
    --reps=*) reps="${1#*=}"; shift ;;
    --out) [ $# -ge 2 ] || die "--out needs a value"; outfile="$2"; shift 2 ;;
    --out=*) outfile="${1#*=}"; shift ;;
    --raw) [ $# -ge 2 ] || die "--raw needs a value"; rawdir="$2"; shift 2 ;;
    --raw=*) rawdir="${1#*=}"; shift ;;
    --check) check=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done
[[ "$reps" =~ ^[1-9][0-9]*$ ]] || die "--reps wants a positive integer, got '$reps'"
build="$(cd -- "$build" 2>/dev/null && pwd -P)" || die "no build directory '$build' (configure and build first, see docs/performance.md)"
bench="$build/bench/rdmx-bench"
bench_mpi="$build/bench/rdmx-bench-mpi"
micro="$build/bench/rdmx-micro"
for b in "$bench" "$bench_mpi" "$micro"; do
  [ -x "$b" ] || die "missing $b: cmake --build $build --target rdmx-bench rdmx-bench-mpi rdmx-micro"
done
for c in python3 mpirun taskset timeout; do
  command -v "$c" >/dev/null 2>&1 || die "'$c' not found (scripts/deps.sh installs rdmx's packages)"
done
if [ "$outfile" != - ]; then
  case "$outfile" in /*) ;; *) outfile="$PWD/$outfile" ;; esac
  [ -f "$outfile" ] || die "no file $outfile (the report goes into its perf-native block)"
fi
if [ -n "$rawdir" ]; then
  mkdir -p -- "$rawdir"
  rawdir="$(cd -- "$rawdir" && pwd -P)"
  rm -rf -- "$rawdir/raw" "$rawdir/runs.tsv"
else
  rawdir="$(mktemp -d -t rdmx-perf-native.XXXXXXXX)"
fi
raw="$rawdir/raw"
mkdir -p "$raw"
runs="$rawdir/runs.tsv"
: >"$runs"

# ------------------------------------------------------------ parameters ---
# Counts long enough that one figure takes tens of milliseconds or more at
# shared-memory speed (the OSU defaults time 6,400 messages for the rate:
# under a millisecond here); PERF_* variables in the environment override them.
cat >"$rawdir/config.env" <<EOF
PERF_REPS=$reps
PERF_TIMEOUT=${PERF_TIMEOUT:-120}
PERF_LAT_SIZE=${PERF_LAT_SIZE:-8}
PERF_LAT_ITERS=${PERF_LAT_ITERS:-50000}
PERF_LAT_WARMUP=${PERF_LAT_WARMUP:-2000}
PERF_BW_SIZES="${PERF_BW_SIZES:-65536 262144 1048576 4194304}"
PERF_BW_WINDOW=${PERF_BW_WINDOW:-64}
PERF_BW_ITERS=${PERF_BW_ITERS:-20}
PERF_BW_WARMUP=${PERF_BW_WARMUP:-2}
PERF_MR_SIZE=${PERF_MR_SIZE:-8}
PERF_MR_WINDOW=${PERF_MR_WINDOW:-64}
PERF_MR_ITERS=${PERF_MR_ITERS:-20000}
PERF_MR_WARMUP=${PERF_MR_WARMUP:-500}
PERF_MEMCPY_MIN_TIME=${PERF_MEMCPY_MIN_TIME:-0.2}
PERF_MEMCPY_CORE=${PERF_MEMCPY_CORE:-0}
EOF
# shellcheck source=/dev/null
. "$rawdir/config.env"
read -r -a bw_sizes <<<"$PERF_BW_SIZES"
[ "${#bw_sizes[@]}" -ge 1 ] || die "PERF_BW_SIZES is empty"
bw_min="${bw_sizes[0]}" bw_max="${bw_sizes[0]}"
for s in "${bw_sizes[@]}"; do
  [[ "$s" =~ ^[1-9][0-9]*$ ]] || die "PERF_BW_SIZES holds '$s', not a size in bytes"
  [ "$s" -lt "$bw_min" ] && bw_min="$s"
  [ "$s" -gt "$bw_max" ] && bw_max="$s"
done

# ------------------------------------------------------------- contenders ---
# Every job: two ranks, one per core. Open MPI's settings are the ones that
# make each of its shared-memory paths the one measured (the job fails
# rather than falling back to another path).
mpirun_common=(mpirun --allow-run-as-root --bind-to core --map-by core -np 2)
declare -A launch=(
  [rdmx]="-x RDMX_TRANSPORTS=sm,self"
  [vader_cma]="--mca pml ob1 --mca btl self,vader"
  [vader_copy]="--mca pml ob1 --mca btl self,vader --mca btl_vader_single_copy_mechanism none"
  [ucx]="--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any --mca btl ^vader,tcp,openib,ofi -x UCX_TLS=posix,cma,self"
)
mpi_tools=(rdmx vader_cma vader_copy ucx)

{
  echo "date='$(date -u '+%Y-%m-%d %H:%M UTC')'"
  echo "kernel='$(uname -r)'"
  echo "cpu='$(awk -F': *' '/^model name/ {print $2; exit}' /proc/cpuinfo)'"
  echo "cpus=$(nproc)"
  echo "mem_kb=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)"
  echo "ptrace_scope='$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 'no Yama')'"
  echo "ompi='$(mpirun --version 2>/dev/null | awk 'NR==1 {print $NF}')'"
  echo "ucx='$(dpkg-query -W -f='${Version}' libucx0 2>/dev/null || echo '?')'"
  # The source the benchmarks were built from (the build tree may be another checkout's).
  src="$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt" 2>/dev/null)"
  echo "rdmx_commit='$(git -C "${src:-$top}" describe --always --dirty 2>/dev/null || echo '?')'"
  echo "uptime_start='$(uptime | sed 's/^ *//')'"
  echo "load_start=$(cut -d' ' -f1 /proc/loadavg)"
  for t in "${mpi_tools[@]}"; do
    echo "launch_$t='${launch[$t]}'"
  done
} >"$rawdir/host.env"

# record REP METRIC TOOL STATUS RC SECS FILE NOTE
record() {
  local IFS=$'\t'
  echo "$*" >>"$runs"
}

why() {  # why RC FILE: a short reason for a failed run
  local rc="$1" line=""
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    echo "timeout"
    return
  fi
  line="$(tr -d '\r' <"$2" 2>/dev/null | grep -i -E 'error|fail|unable|cannot|abort|refused|denied|not ' | tail -n 1)"
  line="${line//$'\t'/ }"
  echo "exit $rc${line:+: ${line:0:160}}"
}

# bench REP METRIC TOOL SUBCOMMAND ARGS...: rdmx-bench(-mpi) under mpirun.
bench() {
  local rep="$1" metric="$2" tool="$3" sub="$4"
  shift 4
  local f="$raw/r$rep-$metric-$tool" t0=$SECONDS rc st=ok reason="" exe="$bench_mpi"
  local opts
  read -r -a opts <<<"${launch[$tool]}"
  [ "$tool" = rdmx ] && exe="$bench"
  rm -f "$f.json"
  set +e
  timeout -k 10 "$PERF_TIMEOUT" "${mpirun_common[@]}" "${opts[@]}" \
    "$exe" "$sub" "$@" --quiet --json "$f.json" >"$f.txt" 2>&1 </dev/null
  rc=$?
  set -e
  if [ "$rc" != 0 ]; then
    st=failed reason="$(why "$rc" "$f.txt")"
  elif [ ! -s "$f.json" ]; then
    st=failed reason="no JSON output"
  fi
  record "$rep" "$metric" "$tool" "$st" "$rc" $((SECONDS - t0)) "$f.json" "$reason"
  note "rep $rep $metric $tool: $st ${reason:+($reason) }in $((SECONDS - t0)) s"
}

# memcpy REP: one core copying each bandwidth size (rdmx-micro Memcpy/S).
memcpy_run() {
  local rep="$1" f="$raw/r$1-bw-memcpy" t0=$SECONDS rc st=ok reason="" filt
  filt="^Memcpy/($(tr ' ' '|' <<<"${bw_sizes[*]}"))\$"
  rm -f "$f.json"
  set +e
  timeout -k 10 "$PERF_TIMEOUT" taskset -c "$PERF_MEMCPY_CORE" "$micro" \
    --benchmark_filter="$filt" --benchmark_min_time="$PERF_MEMCPY_MIN_TIME" \
    --benchmark_out="$f.json" --benchmark_out_format=json >"$f.txt" 2>&1 </dev/null
  rc=$?
  set -e
  if [ "$rc" != 0 ]; then
    st=failed reason="$(why "$rc" "$f.txt")"
  elif [ ! -s "$f.json" ]; then
    st=failed reason="no JSON output"
  fi
  record "$rep" bw memcpy "$st" "$rc" $((SECONDS - t0)) "$f.json" "$reason"
  note "rep $rep bw memcpy: $st ${reason:+($reason) }in $((SECONDS - t0)) s"
}

note "$reps reps, raw results in $rawdir; load average $(cut -d' ' -f1-3 /proc/loadavg)"
t_start=$SECONDS
for ((rep = 1; rep <= reps; rep++)); do
  for tool in "${mpi_tools[@]}"; do
    bench "$rep" lat "$tool" latency --min-size "$PERF_LAT_SIZE" --max-size "$PERF_LAT_SIZE" \
      --iters "$PERF_LAT_ITERS" --warmup "$PERF_LAT_WARMUP"
  done
  for tool in "${mpi_tools[@]}"; do
    bench "$rep" bw "$tool" bw --min-size "$bw_min" --max-size "$bw_max" \
      --window "$PERF_BW_WINDOW" --iters "$PERF_BW_ITERS" --warmup "$PERF_BW_WARMUP"
  done
  memcpy_run "$rep"
  for tool in "${mpi_tools[@]}"; do
    bench "$rep" mr "$tool" mr --min-size "$PERF_MR_SIZE" --max-size "$PERF_MR_SIZE" \
      --window "$PERF_MR_WINDOW" --iters "$PERF_MR_ITERS" --warmup "$PERF_MR_WARMUP"
  done
done
{
  echo "elapsed=$((SECONDS - t_start))"
  echo "uptime_end='$(uptime | sed 's/^ *//')'"
  echo "load_end=$(cut -d' ' -f1 /proc/loadavg)"
} >>"$rawdir/host.env"
note "measurements done in $((SECONDS - t_start)) s"

# The command as the report shows it: the options that change the results.
cmdline="scripts/perf/native.sh --reps $reps"
report=(python3 "$here/native_report.py" "$rawdir" --out "$outfile" --command "$cmdline")
[ "$check" = 1 ] && report+=(--check)
"${report[@]}"
