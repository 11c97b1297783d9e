#!/usr/bin/env bash
# Debian's NPmpich2 (netpipe-mpich2), unmodified, on rdmx's MPICH-ABI library
# (LD_LIBRARY_PATH=<build>/lib/rdmx-mpich, launched by Open MPI's mpirun) and
# on Debian's MPICH (mpiexec.mpich), side by side: natively over shared
# memory (sm) and in the Soft-RoCE guest over rc (scripts/vm/run.sh).
#
# Usage: scripts/mpi/netpipe.sh [--build DIR] [--where sm|rc|both] [--out FILE] [--raw DIR]
#                               [--timeout S]
#   --build DIR    build tree with lib/rdmx-mpich/libmpich.so.12 (default: build)
#   --where W      sm (native), rc (one guest), or both (default)
#   --out FILE     replace the netpipe-sm / netpipe-rc begin/end blocks of FILE
#                  (docs/mpi.md) with the tables
#   --raw DIR      keep NetPIPE's outputs in DIR (default: a temporary directory)
#   --barrier-shim preload scripts/mpi/barrier_shim.c's MPI_Barrier (from
#                  point-to-point) into the rdmx runs, for a library whose
#                  MPI_Barrier is still a stub; the table says so
#   --report-only  run nothing: make the tables from an earlier --raw DIR
#   --timeout S    limit for each NPmpich2 run (default: 120 natively, 240 in
#                  the guest, which gets two runs' worth plus its boot)
#
# Each table row is one message size of NetPIPE's sweep: throughput (Mbps)
# and one-way time (usec, half the round trip) for both libraries. NetPIPE's
# arguments: NP_ARGS_SM (default "-p 0 -u 1048576": no perturbed sizes, up to
# 1 MiB) and NP_ARGS_RC (default "-p 0 -u 262144 -n 10": up to 256 KiB, a
# fixed 10 repeats per trial: the emulated guest moves a few MB/s). Over rc, each rank
# has a device of its own (rdmx: RDMX_DEVICE=rxe0,rxe1; MPICH over UCX:
# UCX_NET_DEVICES=rxe0:1 / rxe1:1, UCX_TLS=rc_v,self) and shared memory is
# off for both, so every message crosses the veth pair.
# shellcheck disable=SC2054  # commas inside mpirun and UCX arguments
set -euo pipefail
prog="netpipe"
die() { echo "$prog: error: $*" >&2; exit 2; }
note() { echo "$prog: $*" >&2; }
here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
top="$(cd -- "$here/../.." && pwd -P)"
self="$here/$(basename -- "${BASH_SOURCE[0]}")"
build="$top/build"; where=both; out=""; raw=""; run_timeout=""; inside=""; shim=0; report_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build) [ $# -ge 2 ] || die "--build needs a value"; build="$2"; shift 2 ;;
    --where) [ $# -ge 2 ] || die "--where needs a value"; where="$2"; shift 2 ;;
    --out) [ $# -ge 2 ] || die "--out needs a value"; out="$2"; shift 2 ;;
    --raw) [ $# -ge 2 ] || die "--raw needs a value"; raw="$2"; shift 2 ;;
    --timeout) [ $# -ge 2 ] || die "--timeout needs a value"; run_timeout="$2"; shift 2 ;;
    --barrier-shim) shim=1; shift ;;
    --report-only) report_only=1; shift ;;
    --inside-guest) inside=1; shift ;;   # internal: the guest half of --where rc
    --np-args-rc) [ $# -ge 2 ] || die "--np-args-rc needs a value"; NP_ARGS_RC="$2"; shift 2 ;;  # internal
    -h|--help) sed -n '2,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $1 (see --help)" ;;
  esac
done
case "$where" in sm|rc|both) ;; *) die "--where wants sm, rc or both, got '$where'" ;; esac
[ -z "$run_timeout" ] || [[ "$run_timeout" =~ ^[1-9][0-9]*$ ]] || die "--timeout wants seconds"
build="$(cd -- "$build" && pwd -P)" || die "no build tree $build"
libdir="$build/lib/rdmx-mpich"
np=/usr/bin/NPmpich2
[ -x "$np" ] || die "no $np (apt-get install netpipe-mpich2, or scripts/deps.sh tests)"
[ -e "$libdir/libmpich.so.12" ] || die "no $libdir/libmpich.so.12 (cmake --build $build --target rdmx_mpich)"
command -v mpirun >/dev/null || die "no mpirun (Open MPI: scripts/deps.sh tests)"
command -v mpiexec.mpich >/dev/null || die "no mpiexec.mpich (apt-get install mpich)"
NP_ARGS_SM="${NP_ARGS_SM:--p 0 -u 1048576}"
NP_ARGS_RC="${NP_ARGS_RC:--p 0 -u 262144 -n 10}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ompi=(mpirun --oversubscribe --bind-to none --mca btl self,tcp --mca pml ob1 --mca btl_tcp_if_include lo
      --mca oob_tcp_if_include lo -np 2)

# run NAME COMMAND...: one NPmpich2 run; NetPIPE's own table goes to
# $raw/np.NAME (bytes, Mbps, seconds), its console to $raw/NAME.log.
run() {
  local name="$1"; shift
  note "running $name"
  rm -f "$raw/np.$name"
  if ! (cd "$raw" && timeout "$run_timeout" "$@") >"$raw/$name.log" 2>&1; then
    tail -15 "$raw/$name.log" >&2
    note "$name failed (exit status above; log $raw/$name.log)"
  fi
}

run_sm() {
  # shellcheck disable=SC2086
  run rdmx.sm "${ompi[@]}" -x RDMX_TRANSPORTS=sm,self -x LD_LIBRARY_PATH="$libdir" "${preload[@]}" "$np" $NP_ARGS_SM -o np.rdmx.sm
  # shellcheck disable=SC2086
  run mpich.sm env -u LD_LIBRARY_PATH mpiexec.mpich -n 2 "$np" $NP_ARGS_SM -o np.mpich.sm
}

run_rc() {  # inside the guest
  local ucx=(UCX_TLS=rc_v,self UCX_UD_ETH_DGID_CHECK=n)
  # shellcheck disable=SC2086
  run rdmx.rc "${ompi[@]}" -x RDMX_TRANSPORTS=rc,self -x RDMX_DEVICE=rxe0,rxe1 -x LD_LIBRARY_PATH="$libdir" \
    "${preload[@]}" "$np" $NP_ARGS_RC -o np.rdmx.rc
  # shellcheck disable=SC2086
  run mpich.rc env -u LD_LIBRARY_PATH mpiexec.mpich \
    -n 1 -env UCX_NET_DEVICES rxe0:1 -env "${ucx[0]%%=*}" "${ucx[0]#*=}" -env "${ucx[1]%%=*}" "${ucx[1]#*=}" \
      "$np" $NP_ARGS_RC -o np.mpich.rc : \
    -n 1 -env UCX_NET_DEVICES rxe1:1 -env "${ucx[0]%%=*}" "${ucx[0]#*=}" -env "${ucx[1]%%=*}" "${ucx[1]#*=}" \
      "$np" $NP_ARGS_RC -o np.mpich.rc
}

if [ -n "$inside" ]; then
  { [ -n "$raw" ] && [ -n "$run_timeout" ]; } || die "--inside-guest needs --raw and --timeout"
  preload=()
  [ "$shim" = 0 ] || preload=(-x "LD_PRELOAD=$raw/libbarrier_shim.so")   # built by the host half
  ulimit -l unlimited 2>/dev/null || true
  run_rc
  exit 0
fi

if [ -z "$raw" ]; then
  # Under the build tree, not /tmp: the guest sees the host's files over 9p,
  # but mounts its own /tmp.
  raw="$(mktemp -d "$build/netpipe.XXXXXXXX")"
  trap 'rm -rf -- "$raw"' EXIT
else
  mkdir -p "$raw"; raw="$(cd -- "$raw" && pwd -P)"
fi

preload=(); shim_arg=()
if [ "$shim" = 1 ] && [ "$report_only" = 0 ]; then
  preload=(-x "LD_PRELOAD=$raw/libbarrier_shim.so"); shim_arg=(--barrier-shim)
  "$build/mpi/rdmx-mpicc" -O2 -shared -fPIC "$here/barrier_shim.c" -o "$raw/libbarrier_shim.so" ||
    die "cannot build the barrier shim"
fi

user_timeout="$run_timeout"
if [ "$report_only" = 1 ]; then
  [ -d "$raw" ] || die "--report-only needs the --raw DIR of an earlier run"
elif [ "$where" != rc ]; then
  run_timeout="${user_timeout:-120}"
  run_sm
fi
if [ "$where" != sm ] && [ "$report_only" = 0 ]; then
  run_timeout="${user_timeout:-240}"
  note "booting the guest for the rc runs"
  "$top/scripts/vm/run.sh" --timeout $((2 * run_timeout + 120)) -- \
    "$self" --inside-guest --build "$build" --raw "$raw" --timeout "$run_timeout" --np-args-rc "$NP_ARGS_RC" \
    "${shim_arg[@]}" ||
    note "the guest run failed (status $?)"
fi

# rdmx's settings from the environment go into the tables' captions.
rdmx_env="$(env | grep '^RDMX_' | grep -v '^RDMX_VM_' | sort | tr '\n' ' ' || true)"
python3 - "$raw" "$where" "$out" "$NP_ARGS_SM" "$NP_ARGS_RC" "$shim" "$rdmx_env" <<'PY'
import os, re, sys
raw, where, out, args_sm, args_rc, shim, rdmx_env = sys.argv[1:]

def load(name):
    path = os.path.join(raw, "np." + name)
    rows = {}
    if os.path.exists(path):
        for line in open(path):
            f = line.split()
            if len(f) >= 3:
                rows[int(f[0])] = (float(f[1]), float(f[2]) * 1e6)
    return rows

def cell(rows, size):
    if size not in rows:
        return "| - | -"
    mbps, us = rows[size]
    return f"| {mbps:,.1f} | {us:,.2f}"

tables = {}
for tr in ("sm", "rc"):
    if where not in (tr, "both"):
        continue
    r, m = load("rdmx." + tr), load("mpich." + tr)
    sizes = sorted(set(r) | set(m))
    head = {"sm": "natively over shared memory", "rc": "in the Soft-RoCE guest over rc (rxe0 <-> rxe1)"}[tr]
    env = f"; rdmx with {rdmx_env.strip()}" if rdmx_env.strip() else ""
    lines = [f"NPmpich2 {args_sm if tr == 'sm' else args_rc}, 2 ranks, {head}{env}",
             "",
             "| bytes | rdmx Mbps | rdmx usec | MPICH 4.0 Mbps | MPICH 4.0 usec |",
             "| ---: | ---: | ---: | ---: | ---: |"]
    lines += [f"| {s} {cell(r, s)} {cell(m, s)} |" for s in sizes]
    if shim == "1":
        lines.append("\nrdmx runs with scripts/mpi/barrier_shim.c preloaded (MPI_Barrier from point-to-point: "
                     "the library's own MPI_Barrier was still a stub).")
    if not r:
        lines.append(f"\n(rdmx: no result; see the rdmx.{tr} log)")
    if not m:
        lines.append(f"\n(MPICH: no result; see the mpich.{tr} log)")
    tables[tr] = "\n".join(lines)
    print(tables[tr] + "\n")
if out:
    s = open(out).read()
    for tr, t in tables.items():
        s, n = re.subn(rf"(<!-- netpipe-{tr}:begin -->\n).*?(<!-- netpipe-{tr}:end -->)",
                       lambda mt: mt.group(1) + t + "\n" + mt.group(2), s, flags=re.S)
        if n != 1:
            sys.exit(f"netpipe: no netpipe-{tr}:begin/end block in {out}")
    open(out, "w").write(s)
missing = [tr for tr in tables if not load("rdmx." + tr) or not load("mpich." + tr)]
sys.exit(1 if missing else 0)
PY
