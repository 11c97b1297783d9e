#!/usr/bin/env bash
# rdmx against perftest and Open MPI, side by side, in one boot of the
# Soft-RoCE guest (or natively on a host with RDMA devices).
#
# Usage: scripts/perf/compare.sh [--build DIR] [--reps N] [--metrics LIST] [--out FILE] [--raw DIR]
#                                [--budget S] [--check] [--trace]
#
#   --build DIR     build tree holding bench/rdmx-bench, bench/rdmx-bench-mpi and bench/bed-probe (default: build)
#   --reps N        interleaved repetitions of every run (default 5)
#   --metrics LIST  comma-separated subset of lat,bw,mr (default: all three)
#   --out FILE      markdown file whose perf:begin/perf:end block is replaced
#                   (default: docs/performance.md; '-' prints only)
#   --raw DIR       keep every run's raw output in DIR (default: a new temporary directory)
#   --budget S      seconds of measuring after which remaining runs are skipped
#                   (default 200 per rep of all three metrics)
#   --check         exit 1 if a target is missed or a component failed
#   --trace         record a scheduler trace of every rdmx-bench(-mpi) latency run and print
#                   what it shows (scripts/perf/sched_trace.py); the tracing
#                   perturbs the figures, so the report is printed, not
#                   written, unless --out is given
#
# Inside one guest (scripts/vm/run.sh), for each rep and each metric, it runs
# perftest, then rdmx-bench-mpi on Open MPI (pml ucx, rc_v), then rdmx-bench on
# rdmx with RDMX_PROGRESS=caller and with RDMX_PROGRESS=thread, all between
# the same two devices (rank 0 / server on rxe0, rank 1 / client on rxe1,
# across the veth), and then prints and writes the medians, the percentiles,
# the spread over the reps, the ratios and the targets. See docs/performance.md.
set -euo pipefail

prog="perf"
die() { echo "$prog: error: $*" >&2; exit 2; }
here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
top="$(cd -- "$here/../.." && pwd -P)"

usage() { sed -n '5,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

build="$top/build"
reps=5
metrics="lat,bw,mr"
outfile="$top/docs/performance.md"
rawdir=""
budget=""
check=0
trace=0
out_given=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build) [ $# -ge 2 ] || die "--build needs a value"; build="$2"; shift 2 ;;
    --build=*) build="${1#*=}"; shift ;;
    --reps) [ $# -ge 2 ] || die "--reps needs a value"; reps="$2"; shift 2 ;;
    --reps=*) reps="${1#*=}"; shift ;;
    --out) [ $# -ge 2 ] || die "--out needs a value"; outfile="$2"; out_given=1; shift 2 ;;
    --out=*) outfile="${1#*=}"; out_given=1; shift ;;
    --raw) [ $# -ge 2 ] || die "--raw needs a value"; rawdir="$2"; shift 2 ;;
    --raw=*) rawdir="${1#*=}"; shift ;;
    --metrics) [ $# -ge 2 ] || die "--metrics needs a value"; metrics="$2"; shift 2 ;;
    --metrics=*) metrics="${1#*=}"; shift ;;
    --budget) [ $# -ge 2 ] || die "--budget needs a value"; budget="$2"; shift 2 ;;
    --budget=*) budget="${1#*=}"; shift ;;
    --check) check=1; shift ;;
    --trace) trace=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done
[[ "$reps" =~ ^[1-9][0-9]*$ ]] || die "--reps wants a positive integer, got '$reps'"
[[ "$metrics" =~ ^(lat|bw|mr)(,(lat|bw|mr))*$ ]] || die "--metrics wants a comma-separated subset of lat,bw,mr, got '$metrics'"
metrics="${metrics//,/ }"
[ "$trace" = 1 ] && [ "$out_given" = 0 ] && outfile=-
n_metrics=$(wc -w <<<"$metrics")
# Three contenders measured about 90 s per rep of every metric on an idle
# host; four, with 1,000-iteration latency runs, take about a third more.
# On a loaded host (load average near 10 on 2 CPUs) one rep took 584 s:
# give --budget there.
budget_default=$((200 * reps * n_metrics / 3))
[ -n "$budget" ] || budget=$budget_default
[[ "$budget" =~ ^[1-9][0-9]*$ ]] || die "--budget wants seconds, got '$budget'"
build="$(cd -- "$build" 2>/dev/null && pwd -P)" || die "no build directory '$build' (configure and build first, see docs/performance.md)"
bench="$build/bench/rdmx-bench"
bench_mpi="$build/bench/rdmx-bench-mpi"
probe="$build/bench/bed-probe"
for b in "$bench" "$bench_mpi" "$probe"; do
  [ -x "$b" ] || die "missing $b: cmake --build $build --target rdmx-bench rdmx-bench-mpi bed-probe"
done
for c in python3 mpirun ib_send_lat ib_write_bw ib_read_bw ib_send_bw timeout taskset; do
  command -v "$c" >/dev/null 2>&1 || die "'$c' not found (scripts/deps.sh installs rdmx's packages)"
done
if [ "$outfile" != - ]; then
  case "$outfile" in /*) ;; *) outfile="$PWD/$outfile" ;; esac
  [ -d "$(dirname -- "$outfile")" ] || die "no directory for $outfile"
fi

if [ -n "$rawdir" ]; then
  mkdir -p -- "$rawdir"
  rawdir="$(cd -- "$rawdir" && pwd -P)"
  rm -rf -- "$rawdir/raw" "$rawdir/runs.tsv" "$rawdir/meta.env"
else
  rawdir="$(mktemp -d -t rdmx-perf.XXXXXXXX)"
fi

# ------------------------------------------------------------ parameters ---
# Sized for Soft-RoCE under TCG (8 B latency 20-40 us, 30-40 MB/s, and much
# worse on a loaded host); PERF_* variables in the environment override them.
# Latency: ib_send_lat -n PERF_LAT_ITERS; rdmx-bench(-mpi) scales OSU's counts
# by PERF_LAT_SCALE (0.1: 1,000 iterations up to 8 KiB, 100 above), so that
# the 8 B percentiles rest on 1,000 samples in all three (p99.9: the second
# largest) while the sweep up to 64 KiB stays within a few seconds.
cat >"$rawdir/config.env" <<EOF
PERF_REPS=$reps
PERF_BUDGET=$budget
PERF_BENCH=$(printf '%q' "$bench")
PERF_BENCH_MPI=$(printf '%q' "$bench_mpi")
PERF_PROBE=$(printf '%q' "$probe")
PERF_PROBE_N=${PERF_PROBE_N:-40}
PERF_CHASE_N=${PERF_CHASE_N:-10}
PERF_CHASE_MIB=${PERF_CHASE_MIB:-16}
PERF_PT_TIMEOUT=${PERF_PT_TIMEOUT:-120}
PERF_MPI_TIMEOUT=${PERF_MPI_TIMEOUT:-120}
PERF_PT_PORT=${PERF_PT_PORT:-18515}
PERF_LAT_SIZES="${PERF_LAT_SIZES:-8 1024 16384}"
PERF_LAT_MIN=${PERF_LAT_MIN:-8}
PERF_LAT_MAX=${PERF_LAT_MAX:-65536}
PERF_METRICS="$metrics"
PERF_RDMX_PROGRESS="${PERF_RDMX_PROGRESS:-caller thread}"
PERF_RDMX_ENV="${PERF_RDMX_ENV:-}"
PERF_LAT_ITERS=${PERF_LAT_ITERS:-1000}
PERF_LAT_SCALE=${PERF_LAT_SCALE:-0.1}
PERF_LAT_WARMUP=${PERF_LAT_WARMUP:-20}
PERF_BW_SIZES="${PERF_BW_SIZES:-65536 1048576 4194304}"
PERF_BW_MIN=${PERF_BW_MIN:-4096}
PERF_BW_MAX=${PERF_BW_MAX:-4194304}
PERF_BW_WINDOW=${PERF_BW_WINDOW:-16}
PERF_BW_SCALE=${PERF_BW_SCALE:-0.1}
PERF_PT_BW_BYTES=${PERF_PT_BW_BYTES:-67108864}
PERF_PT_BW_MIN_ITERS=${PERF_PT_BW_MIN_ITERS:-20}
PERF_PT_BW_MAX_ITERS=${PERF_PT_BW_MAX_ITERS:-2000}
PERF_TRACE=$trace
PERF_MR_SIZE=${PERF_MR_SIZE:-8}
PERF_MR_WINDOW=${PERF_MR_WINDOW:-64}
PERF_MR_ITERS=${PERF_MR_ITERS:-100}
PERF_MR_WARMUP=${PERF_MR_WARMUP:-10}
PERF_PT_MR_ITERS=${PERF_PT_MR_ITERS:-6400}
EOF

{
  echo "date='$(date -u '+%Y-%m-%d %H:%M UTC')'"
  echo "host_cpus=$(nproc)"
  echo "load_start=$(cut -d' ' -f1 /proc/loadavg)"
} >"$rawdir/host.env"

echo "$prog: $reps reps, raw results in $rawdir" >&2
t0=$SECONDS
set +e
# The guest's own limit: the measuring budget plus boot, setup and the runs
# that were already going when the budget ran out.
"$top/scripts/vm/run.sh" --timeout $((budget + 300)) -- bash "$here/guest.sh" "$rawdir"
vrc=$?
set -e
echo "$prog: test bed finished with status $vrc after $((SECONDS - t0)) s" >&2
echo "load_end=$(cut -d' ' -f1 /proc/loadavg)" >>"$rawdir/host.env"

# The command as the report shows it: the options that change the results
# (where the build, the raw files and the report go does not).
cmdline="scripts/perf/compare.sh --reps $reps"
[ "$metrics" != "lat bw mr" ] && cmdline+=" --metrics ${metrics// /,}"
[ "$budget" != "$budget_default" ] && cmdline+=" --budget $budget"
[ "$trace" = 1 ] && [ "$outfile" != - ] && cmdline+=" --trace"
report=(python3 "$here/report.py" "$rawdir" --out "$outfile" --bed-status "$vrc" --command "$cmdline")
[ "$check" = 1 ] && report+=(--check)
if [ "$trace" = 1 ]; then
  "${report[@]}" || rc=$?
  echo
  echo "## Scheduler traces of the latency runs (raw/*.trace.gz)"
  python3 "$here/sched_trace.py" "$rawdir" || echo "$prog: the traces could not be read (see above)" >&2
  exit "${rc:-0}"
fi
"${report[@]}"
