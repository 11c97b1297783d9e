#!/usr/bin/env bash
# What the MPI layer (libmpich.so.12) costs on top of rdmx: the same blocking
# ping-pong (bench/mpi_overhead/pingpong.c) through the shim and through
# rdmx's own API, natively over shared memory, two ranks.
#
# Usage: scripts/perf/mpi-overhead.sh [--build DIR] [--reps N] [--no-icount] [--check] [--out FILE]
#   --build DIR   build tree with bench/mpi_overhead/mpi-overhead-{mpi,rdmx} (default: build)
#   --reps N      interleaved repetitions of the timed runs (default 5); medians are reported
#   --no-icount   skip the instruction counts (callgrind)
#   --check       exit 1 when the shim costs more than 5% at 8 B or 2% at 1 MiB
#   --out FILE    replace the mpi-overhead:begin/end block of FILE with the table
#
# Timed runs (OSU method: warm-up, then iterations; half round trip) at 8 B
# and 1 MiB alternate between the two programs (rep 1: MPI first; rep 2: rdmx
# first; ...), ranks bound to a core each. The instruction count is the
# noise-free figure: rank 0's instructions per 8 B iteration inside the
# library calls, counted by callgrind at two iteration counts and the
# difference divided (as scripts/perf/icount.sh counts rdmx alone). With
# --check the 8 B limit applies to the instruction ratio when it was counted
# (the time at 8 B moves by more than 5% between runs on a shared host) and
# to the time ratio otherwise; the 1 MiB limit to the time ratio.
# Both programs run with RDMX_TRANSPORTS=sm,self RDMX_PROGRESS=caller
# RDMX_THREADS=single (what MPI_Init asks for) unless the environment says
# otherwise; the MPI one with LD_LIBRARY_PATH=<build>/lib/rdmx-mpich.
# PP_ITERS / PP_WARMUP in the environment override the timed iteration counts;
# ICOUNT_REPS (default 3) the number of counts whose median is reported.
# shellcheck disable=SC2054  # commas inside mpirun arguments
set -euo pipefail
prog="mpi-overhead"
die() { echo "$prog: error: $*" >&2; exit 2; }
here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
top="$(cd -- "$here/../.." && pwd -P)"
build="$top/build"; reps=5; icount=1; check=0; out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build) [ $# -ge 2 ] || die "--build needs a value"; build="$2"; shift 2 ;;
    --reps) [ $# -ge 2 ] || die "--reps needs a value"; reps="$2"; shift 2 ;;
    --no-icount) icount=0; shift ;;
    --check) check=1; shift ;;
    --out) [ $# -ge 2 ] || die "--out needs a value"; out="$2"; shift 2 ;;
    -h|--help) sed -n '2,27p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $1 (see --help)" ;;
  esac
done
[[ "$reps" =~ ^[1-9][0-9]*$ ]] || die "--reps needs a positive number"
build="$(cd -- "$build" && pwd -P)" || die "no build tree $build"
readonly SMALL=8 LARGE=1048576 LIMIT_SMALL=1.05 LIMIT_LARGE=1.02 N1=1000 N2=5000 RUN_TIMEOUT=300
ICOUNT_REPS="${ICOUNT_REPS:-3}"
bin="$build/bench/mpi_overhead"
libdir="$build/lib/rdmx-mpich"
for v in mpi rdmx; do
  [ -x "$bin/mpi-overhead-$v" ] || die "missing $bin/mpi-overhead-$v (cmake --build $build --target mpi-overhead-$v)"
done
command -v mpirun >/dev/null || die "mpirun not found (scripts/deps.sh tests installs Open MPI)"
shim="$build/tests/perf/libpidfd_shim.so"
if [ "$icount" = 1 ]; then
  command -v valgrind >/dev/null || die "valgrind not found (or pass --no-icount)"
  [ -f "$shim" ] || die "missing $shim (cmake --build $build --target pidfd_shim, or pass --no-icount)"
fi
work="$(mktemp -d -t rdmx-mpi-overhead.XXXXXXXX)"
trap 'rm -rf -- "$work"' EXIT

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=(mpirun --oversubscribe --mca btl self,tcp --mca pml ob1 --mca btl_tcp_if_include lo
     --mca oob_tcp_if_include lo)
envs=(-x "RDMX_TRANSPORTS=${RDMX_TRANSPORTS:-sm,self}" -x "RDMX_PROGRESS=${RDMX_PROGRESS:-caller}"
      -x "RDMX_THREADS=${RDMX_THREADS:-single}" -x "LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
# Iteration counts for a quick trial (the program's defaults are OSU's).
for var in PP_ITERS PP_WARMUP; do [ -z "${!var:-}" ] || envs+=(-x "$var=${!var}"); done

# Timed runs: "VARIANT SIZE USEC" lines in $work/times.
: >"$work/times"
for ((rep = 1; rep <= reps; ++rep)); do
  order=(mpi rdmx); [ $((rep % 2)) = 1 ] || order=(rdmx mpi)
  for v in "${order[@]}"; do
    log="$work/lat.$v.$rep"
    if ! timeout "$RUN_TIMEOUT" "${mpi[@]}" --bind-to core --map-by core -np 2 "${envs[@]}" \
         "$bin/mpi-overhead-$v" lat "$SMALL" "$LARGE" >"$log" 2>&1; then
      tail -20 "$log" >&2; die "mpi-overhead-$v lat (rep $rep) failed"
    fi
    awk -v v="$v" '/^[0-9]+ [0-9.]+$/ {print v, $1, $2}' "$log" >>"$work/times"
    echo "$prog: rep $rep $v: $(awk '/^[0-9]+ /{printf "%s B %s us  ", $1, $2}' "$log")" >&2
  done
done

# Instruction counts: rank 0 under callgrind, collection toggled by the program.
count() {  # count VARIANT ITERS
  local v="$1" n="$2" exe="$bin/mpi-overhead-$1"
  rm -f "$work/cg.out"; head -c 16 /dev/zero >"$work/flag"
  local spin=(-x RDMX_SPIN_US=1000000000)
  if ! timeout "$RUN_TIMEOUT" "${mpi[@]}" --bind-to none \
       -np 1 "${envs[@]}" "${spin[@]}" env "LD_PRELOAD=$shim" valgrind --tool=callgrind --collect-atstart=no \
       --callgrind-out-file="$work/cg.out" "$exe" icount "$n" "$work/flag" : \
       -np 1 "${envs[@]}" "${spin[@]}" "$exe" icount "$n" "$work/flag" >"$work/cg.log" 2>&1; then
    tail -20 "$work/cg.log" >&2; die "mpi-overhead-$v icount $n failed"
  fi
  awk '/^totals:/ {print $2}' "$work/cg.out"
}
# Each figure is the median of ICOUNT_REPS pairs of runs, the two programs
# interleaved. The settings go to each app context: with them given once,
# before the first, rank 1 ran with the default spin, fell asleep while rank
# 0 crawled under callgrind, and rank 0's sends paid a wake-up write() a
# varying number of times (counts moved by 3% from run to run; with them in
# both contexts they agree to a few instructions).
declare -A ins=([mpi]="" [rdmx]="")
declare -A per=([mpi]="" [rdmx]="")
if [ "$icount" = 1 ]; then
  for ((r = 1; r <= ICOUNT_REPS; ++r)); do
    for v in rdmx mpi; do
      a="$(count "$v" "$N1")"; b="$(count "$v" "$N2")"
      per[$v]+=" $(( (b - a + (N2 - N1) / 2) / (N2 - N1) ))"
    done
  done
  for v in rdmx mpi; do
    ins[$v]="$(tr ' ' '\n' <<<"${per[$v]}" | sed '/^$/d' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')"
    echo "$prog: instructions per 8 B iteration, $v:${per[$v]} (median ${ins[$v]})" >&2
  done
fi

python3 - "$work/times" "$SMALL" "$LARGE" "$LIMIT_SMALL" "$LIMIT_LARGE" "${ins[mpi]}" "${ins[rdmx]}" \
  "$reps" "$check" "$out" <<'PY'
import re, statistics, sys
times, small, large, lim_s, lim_l, ins_mpi, ins_rdmx, reps, check, out = sys.argv[1:]
small, large, lim_s, lim_l = int(small), int(large), float(lim_s), float(lim_l)
got = {}
for line in open(times):
    v, size, us = line.split()
    got.setdefault((v, int(size)), []).append(float(us))
rows, fails = [], []
def judge(what, ratio, limit):
    ok = ratio <= limit
    if not ok:
        fails.append(f"{what}: the shim costs {ratio:.3f}x rdmx's own API, above the {limit:.2f}x limit")
    return "ok" if ok else "OVER"
for size in (small, large):
    m, r = got.get(("mpi", size)), got.get(("rdmx", size))
    if not m or not r:
        fails.append(f"{size} B: not measured"); continue
    mm, mr = statistics.median(m), statistics.median(r)
    ratio = mm / mr
    label = "8 B" if size == 8 else ("1 MiB" if size == 1 << 20 else f"{size} B")
    counted = size == small and ins_mpi and ins_rdmx
    verdict = judge(f"{label} time", ratio, lim_l if size == large else lim_s) if not counted else "(see instructions)"
    rows.append(f"| {label} half round trip, median of {reps} | {mr:.3f} us | {mm:.3f} us | {ratio:.3f} | {verdict} |")
if ins_mpi and ins_rdmx:
    ratio = int(ins_mpi) / int(ins_rdmx)
    verdict = judge("8 B instructions", ratio, lim_s)
    rows.insert(0, f"| 8 B instructions per iteration, rank 0 (callgrind) | {ins_rdmx} | {ins_mpi} | {ratio:.3f} | {verdict} |")
table = "\n".join(["| blocking ping-pong, 2 ranks over sm | rdmx API | MPI shim | shim / rdmx | limit |",
                   "| --- | ---: | ---: | ---: | --- |"] + rows)
print(table)
for f in fails:
    print(f"mpi-overhead: FAIL {f}", file=sys.stderr)
if out:
    s = open(out).read()
    new, n = re.subn(r"(<!-- mpi-overhead:begin -->\n).*?(<!-- mpi-overhead:end -->)",
                     lambda mt: mt.group(1) + table + "\n" + mt.group(2), s, flags=re.S)
    if n != 1:
        sys.exit(f"mpi-overhead: no mpi-overhead:begin/end block in {out}")
    open(out, "w").write(new)
sys.exit(1 if fails and check == "1" else 0)
PY
