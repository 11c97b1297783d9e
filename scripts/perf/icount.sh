#!/usr/bin/env bash
# Instructions per 8-byte ping-pong iteration, counted by callgrind: rdmx at
# both thread levels (RDMX_PROGRESS=caller) over shared memory, or over rc
# between two RDMA devices, and UCX's tag API over the same transport
# (UCX_TLS=posix,self or rc_v,self) by the same method
# (tests/perf/icount_pingpong.c, tests/perf/icount_ucx.c). Each is run at two
# iteration counts and the difference divided, so set-up and warm-up cancel;
# the count is exact to a few instructions from run to run over sm. Over rc
# the library's count includes libibverbs and the provider's user-space part
# (posting, polling), as the application pays them. callgrind instruments
# nothing until the harness starts its counted pings
# (CALLGRIND_START_INSTRUMENTATION; --instr-atstart=no): the counts are the
# same, and start-up and warm-up run under valgrind's translation alone,
# which is faster. callgrind_annotate's inclusive figures for the functions
# already on the stack then (main, the ping loop) are incomplete; those of
# everything called from the counted region are whole.
#
# Usage: scripts/perf/icount.sh [--build DIR] [--transport sm|rc] [--levels L] [--check REF] [--ucx] [--out FILE]
#   --build DIR     build tree (default: build)
#   --transport T   sm (default): both ranks on shared memory; rc: rank 0 on
#                   the first device of RDMX_TEST_DEVICES (or RDMX_DEVICE's
#                   list), rank 1 on the second, so the pong crosses a link
#   --levels L      the thread levels to count, "single multiple" (default)
#                   or one of them (verbs.perf.icount_rc counts single: each
#                   level is two runs, about 50 s each in the emulated guest,
#                   and the lock path multiple adds is the engine's, which
#                   perf.icount checks over sm)
#   --check REF     exit 1 if a count measured here is more than 10% above
#                   its figure in REF (lines "<transport>.<level> <count>";
#                   tests/perf/icount.ref); other transports' and levels'
#                   lines are skipped
#   --ucx           measure UCX too, over the same transport (posix or rc_v), at
#                   both thread modes (needs the build's icount_ucx: libucx-dev)
#   --keep DIR      keep callgrind's output of each run in DIR
#                   (callgrind_annotate shows where the count goes)
#   --out FILE      replace the icount:begin/icount:end block of FILE with the
#                   table (sm), or the icount-rc:begin/icount-rc:end block (rc)
# ICOUNT_TIMEOUT: seconds allowed per run (default 300; a run over rc in the
# emulated guest takes about 20 s). ICOUNT_VALGRIND: more options for
# callgrind (e.g. --dump-instr=yes, for callgrind_annotate's per-instruction
# view of the --keep files).
set -euo pipefail
prog="icount"
die() { echo "$prog: error: $*" >&2; exit 2; }
here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
top="$(cd -- "$here/../.." && pwd -P)"
build="$top/build"; ref=""; ucx=0; out=""; tp=sm; keep=""; levels="single multiple"
while [ $# -gt 0 ]; do
  case "$1" in
    --build) [ $# -ge 2 ] || die "--build needs a value"; build="$2"; shift 2 ;;
    --check) [ $# -ge 2 ] || die "--check needs a reference file"; ref="$2"; shift 2 ;;
    --transport) [ $# -ge 2 ] || die "--transport needs sm or rc"; tp="$2"; shift 2 ;;
    --levels) [ $# -ge 2 ] || die "--levels needs \"single multiple\", single or multiple"; levels="$2"; shift 2 ;;
    --keep) [ $# -ge 2 ] || die "--keep needs a directory"; keep="$2"; shift 2 ;;
    --ucx) ucx=1; shift ;;
    --out) [ $# -ge 2 ] || die "--out needs a value"; out="$2"; shift 2 ;;
    -h|--help) sed -n '2,36p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $1 (see --help)" ;;
  esac
done
case "$tp" in sm|rc) ;; *) die "--transport wants sm or rc, got '$tp'" ;; esac
for l in $levels; do case "$l" in single|multiple) ;; *) die "--levels wants single and/or multiple, got '$l'" ;; esac; done
[ -n "${levels// /}" ] || die "--levels is empty"
command -v valgrind >/dev/null || die "valgrind not found (scripts/deps.sh tests installs it)"
command -v mpirun >/dev/null || die "mpirun not found (scripts/deps.sh tests installs Open MPI)"
pp="$build/tests/perf/icount_pingpong"; shim="$build/tests/perf/libpidfd_shim.so"; ux="$build/tests/perf/icount_ucx"
[ -x "$pp" ] && [ -f "$shim" ] || die "missing $pp or $shim: build the tests first"
[ "$ucx" = 0 ] || [ -x "$ux" ] || die "missing $ux (install libucx-dev and reconfigure)"
[ -z "$ref" ] || [ -f "$ref" ] || die "no reference file $ref"
[ -z "$keep" ] || { mkdir -p -- "$keep" && keep="$(cd -- "$keep" && pwd -P)"; } || die "cannot make $keep"
work="$(mktemp -d -t rdmx-icount.XXXXXXXX)"
trap 'rm -rf -- "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=(mpirun --oversubscribe --bind-to none --mca btl self,tcp --mca pml ob1 --mca btl_tcp_if_include lo
     --mca oob_tcp_if_include lo)
readonly N1=1000 N2=5000

# One run of `exe ITERS FLAG`: rank 0 under callgrind; prints its count.
count() {  # count EXE ITERS [ENV=VAL...] [--rank0|--rank1 ENV=VAL] [--preload LIB] [--arg ARG]
  local exe="$1" n="$2"; shift 2
  local env=() env0=() env1=() preload="" arg=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --preload) preload="$2"; shift 2 ;;
      --arg) arg+=("$2"); shift 2 ;;
      --rank0) env0+=(-x "$2"); shift 2 ;;
      --rank1) env1+=(-x "$2"); shift 2 ;;
      *) env+=(-x "$1"); shift ;;
    esac
  done
  rm -f "$work"/flag* "$work/cg.out"
  head -c 8 /dev/zero >"$work/flag"
  local pre=()
  [ -z "$preload" ] || pre=(env "LD_PRELOAD=$preload")
  # Each app context gets the whole environment: mpirun's -x before the first
  # -np reaches the first context only.
  if ! timeout "${ICOUNT_TIMEOUT:-300}" "${mpi[@]}" -np 1 "${env[@]}" "${env0[@]}" "${pre[@]}" valgrind --tool=callgrind --collect-atstart=no --instr-atstart=no ${ICOUNT_VALGRIND:-} \
       --callgrind-out-file="$work/cg.out" "$exe" "$n" "$work/flag" "${arg[@]}" \
       : -np 1 "${env[@]}" "${env1[@]}" "$exe" "$n" "$work/flag" "${arg[@]}" >"$work/log" 2>&1; then
    tail -20 "$work/log" >&2
    die "$(basename "$exe") $n failed"
  fi
  # Named by the program's argument (UCX's thread mode) or else the last
  # setting (rdmx's RDMX_THREADS), and the iteration count.
  [ -z "$keep" ] || cp -- "$work/cg.out" "$keep/callgrind.$(basename "$exe").${arg[*]:-${env[*]: -1}}.$n"
  awk '/^totals:/ {print $2}' "$work/cg.out"
}

per_iter() {  # per_iter EXE [args for count...]
  local a b
  a="$(count "$1" "$N1" "${@:2}")"; b="$(count "$1" "$N2" "${@:2}")"
  echo $(( (b - a + (N2 - N1) / 2) / (N2 - N1) ))
}

# Both ranks spin for the whole run: under valgrind the shim's eventfds
# never wake anyone (tests/perf/pidfd_shim.c).
rdmx_env=(RDMX_PROGRESS=caller RDMX_SPIN_US=1000000000 --preload "$shim")
if [ "$tp" = sm ]; then
  rdmx_env+=(RDMX_TRANSPORTS=sm,self)
else
  dev_list="${RDMX_DEVICE:-}"
  read -r -a devs <<<"${RDMX_TEST_DEVICES:-${dev_list//,/ }}"
  [ "${#devs[@]}" -ge 2 ] || die "--transport rc needs two devices in RDMX_TEST_DEVICES (or RDMX_DEVICE=dev0,dev1)"
  rdmx_env+=(RDMX_TRANSPORTS=rc,self "RDMX_DEVICE=${devs[0]},${devs[1]}")
fi
declare -A got
for l in $levels; do got[$tp.$l]="$(per_iter "$pp" "${rdmx_env[@]}" RDMX_THREADS="$l")"; done
# UCX beside it on the same transport: posix shared memory, or rc verbs
# (rc_v, as the guest table's Open MPI runs) with each rank on its device.
ucx_env=(UCX_TLS=posix,self)
[ "$tp" = sm ] || ucx_env=(UCX_TLS=rc_v,self UCX_UD_ETH_DGID_CHECK=n --rank0 "UCX_NET_DEVICES=${devs[0]}:1"
                          --rank1 "UCX_NET_DEVICES=${devs[1]}:1")
if [ "$ucx" = 1 ]; then
  got[ucx.single]="$(per_iter "$ux" "${ucx_env[@]}" --arg single)"
  got[ucx.multi]="$(per_iter "$ux" "${ucx_env[@]}" --arg multi)"
fi

block=icount ucx_tl="posix shared memory"
[ "$tp" = sm ] || block="icount-$tp" ucx_tl="rc verbs (rc_v)"
table="$(
  echo "| 8 B ping-pong, rank 0, per iteration | instructions |"
  echo "| --- | ---: |"
  for l in $levels; do echo "| rdmx $tp, RDMX_THREADS=$l | ${got[$tp.$l]} |"; done
  if [ "$ucx" = 1 ]; then
    echo "| UCX 1.13 tag API, $ucx_tl, UCS_THREAD_MODE_SINGLE | ${got[ucx.single]} |"
    echo "| UCX 1.13 tag API, $ucx_tl, UCS_THREAD_MODE_MULTI | ${got[ucx.multi]} |"
  fi
)"
echo "$table"
if [ -n "$out" ]; then
  python3 - "$out" "$table" "$block" <<'PY'
import sys, re
path, table, block = sys.argv[1], sys.argv[2], sys.argv[3]
s = open(path).read()
new, n = re.subn(rf"(<!-- {block}:begin -->\n).*?(<!-- {block}:end -->)", lambda m: m.group(1) + table + "\n" + m.group(2), s, flags=re.S)
if n != 1:
    sys.exit(f"icount: no {block}:begin/{block}:end block in {path}")
open(path, "w").write(new)
PY
fi
[ -n "$ref" ] || exit 0
fail=0
while read -r name want; do
  case "$name" in ''|\#*) continue ;; "$tp".*) ;; *) continue ;; esac
  [[ " $levels " == *" ${name#"$tp".} "* ]] || continue
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
