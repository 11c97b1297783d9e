#!/usr/bin/env bash
# Instructions per 8-byte ping-pong iteration, counted by callgrind: rdmx over
# shared memory at both thread levels (RDMX_PROGRESS=caller), and UCX's tag
# API over its shared-memory transport (UCX_TLS=posix,self) by the same
# method (tests/perf/icount_pingpong.c, tests/perf/icount_ucx.c). Each is run
# at two iteration counts and the difference divided, so set-up and warm-up
# cancel; the count is exact to a few instructions from run to run.
#
# Usage: scripts/perf/icount.sh [--build DIR] [--check REF] [--ucx] [--out FILE]
#   --build DIR   build tree (default: build)
#   --check REF   exit 1 if an rdmx count is more than 10% above its figure in
#                 REF (lines "<name> <count>"; tests/perf/icount.ref)
#   --ucx         measure UCX too (needs the build's icount_ucx: libucx-dev)
#   --out FILE    replace the icount:begin/icount:end block of FILE with the table
set -euo pipefail
prog="icount"
die() { echo "$prog: error: $*" >&2; exit 2; }
here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
top="$(cd -- "$here/../.." && pwd -P)"
build="$top/build"; ref=""; ucx=0; out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build) [ $# -ge 2 ] || die "--build needs a value"; build="$2"; shift 2 ;;
    --check) [ $# -ge 2 ] || die "--check needs a reference file"; ref="$2"; shift 2 ;;
    --ucx) ucx=1; shift ;;
    --out) [ $# -ge 2 ] || die "--out needs a value"; out="$2"; shift 2 ;;
    -h|--help) sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $1 (see --help)" ;;
  esac
done
command -v valgrind >/dev/null || die "valgrind not found (scripts/deps.sh tests installs it)"
command -v mpirun >/dev/null || die "mpirun not found (scripts/deps.sh tests installs Open MPI)"
pp="$build/tests/perf/icount_pingpong"; shim="$build/tests/perf/libpidfd_shim.so"; ux="$build/tests/perf/icount_ucx"
[ -x "$pp" ] && [ -f "$shim" ] || die "missing $pp or $shim: build the tests first"
[ "$ucx" = 0 ] || [ -x "$ux" ] || die "missing $ux (install libucx-dev and reconfigure)"
[ -z "$ref" ] || [ -f "$ref" ] || die "no reference file $ref"
work="$(mktemp -d -t rdmx-icount.XXXXXXXX)"
trap 'rm -rf -- "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=(mpirun --oversubscribe --bind-to none --mca btl self,tcp --mca pml ob1 --mca btl_tcp_if_include lo
     --mca oob_tcp_if_include lo)
readonly N1=1000 N2=5000

# One run of `exe ITERS FLAG`: rank 0 under callgrind; prints its count.
count() {  # count EXE ITERS [ENV=VAL...] [-- PRELOAD]
  local exe="$1" n="$2"; shift 2
  local env=() preload=""
  while [ $# -gt 0 ]; do
    if [ "$1" = "--preload" ]; then preload="$2"; shift 2; else env+=(-x "$1"); shift; fi
  done
  rm -f "$work"/flag* "$work/cg.out"
  head -c 8 /dev/zero >"$work/flag"
  local pre=()
  [ -z "$preload" ] || pre=(env "LD_PRELOAD=$preload")
  if ! timeout 300 "${mpi[@]}" "${env[@]}" -np 1 "${pre[@]}" valgrind --tool=callgrind --collect-atstart=no \
       --callgrind-out-file="$work/cg.out" "$exe" "$n" "$work/flag" : -np 1 "$exe" "$n" "$work/flag" \
       >"$work/log" 2>&1; then
    tail -20 "$work/log" >&2
    die "$(basename "$exe") $n failed"
  fi
  awk '/^totals:/ {print $2}' "$work/cg.out"
}

per_iter() {  # per_iter EXE [args for count...]
  local a b
  a="$(count "$1" "$N1" "${@:2}")"; b="$(count "$1" "$N2" "${@:2}")"
  echo $(( (b - a + (N2 - N1) / 2) / (N2 - N1) ))
}

# Both ranks spin for the whole run: under valgrind the shim's eventfds
# never wake anyone (tests/perf/pidfd_shim.c).
rdmx_env=(RDMX_TRANSPORTS=sm,self RDMX_PROGRESS=caller RDMX_SPIN_US=1000000000 --preload "$shim")
declare -A got
got[sm.single]="$(per_iter "$pp" "${rdmx_env[@]}" RDMX_THREADS=single)"
got[sm.multiple]="$(per_iter "$pp" "${rdmx_env[@]}" RDMX_THREADS=multiple)"
[ "$ucx" = 0 ] || got[ucx.posix]="$(per_iter "$ux" UCX_TLS=posix,self)"

table="$(
  echo "| 8 B ping-pong, rank 0, per iteration | instructions |"
  echo "| --- | ---: |"
  echo "| rdmx sm, RDMX_THREADS=single | ${got[sm.single]} |"
  echo "| rdmx sm, RDMX_THREADS=multiple | ${got[sm.multiple]} |"
  [ "$ucx" = 0 ] || echo "| UCX 1.13 tag API, posix shared memory, UCS_THREAD_MODE_SINGLE | ${got[ucx.posix]} |"
)"
echo "$table"
if [ -n "$out" ]; then
  python3 - "$out" "$table" <<'PY'
import sys, re
path, table = sys.argv[1], sys.argv[2]
s = open(path).read()
new, n = re.subn(r"(<!-- icount:begin -->\n).*?(<!-- icount:end -->)", lambda m: m.group(1) + table + "\n" + m.group(2), s, flags=re.S)
if n != 1:
    sys.exit(f"icount: no icount:begin/icount:end block in {path}")
open(path, "w").write(new)
PY
fi
[ -n "$ref" ] || exit 0
fail=0
while read -r name want; do
  case "$name" in ''|\#*) continue ;; esac
  have="${got[$name]:-}"
  [ -n "$have" ] || { echo "$prog: $name: not measured" >&2; fail=1; continue; }
  limit=$(( want + want / 10 ))
  if [ "$have" -gt "$limit" ]; then
    echo "$prog: FAIL $name: $have instructions per iteration, more than 10% above the recorded $want" \
         "(profile: valgrind --tool=callgrind as in docs/performance.md)" >&2
    fail=1
  else
    echo "$prog: ok $name: $have (recorded $want, limit $limit)"
    [ "$have" -ge $(( want - want / 5 )) ] || echo "$prog: note: $name is 20% below its record; lower the figure in $ref"
  fi
done <"$ref"
exit $fail
