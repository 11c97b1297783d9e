#!/usr/bin/env bash
# Usage: tests/verbs/scale_ring.sh BUILD_DIR [NP] [ROUNDS]
# What a process pins and how long bring-up takes when each rank talks to
# its two ring neighbours only, full mesh against connections on demand
# (docs/scale.md, "Sized by the connected peers"). Runs `lazy_test ring`
# with NP ranks (default 8) over rc, mesh and lazy alternating, ROUNDS times
# each (default 2), and prints per run the slowest rank's rdmx_init, the rc
# full mesh inside it (its log's "connections up in"; none on demand) and
# the first exchange with the neighbours (which makes the connections on
# demand), and the largest rank's rc connections, VmPin and receive buffers
# on the SRQ (from its log: the open line, then the last growth). Needs an
# RDMA device: run it through scripts/vm/run.sh.
set -euo pipefail
bdir="$(cd "${1:?usage: scale_ring.sh BUILD_DIR [NP] [ROUNDS]}" && pwd -P)"
np="${2:-8}"
rounds="${3:-2}"
exe="$bdir/tests/verbs/lazy_test"
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
flags=(--allow-run-as-root --oversubscribe --bind-to none --mca btl self,tcp --mca pml ob1
       --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo)

# The receive buffers a rank's log says its SRQ holds last: a growth line
# (connections on demand), else the line written when the device opened.
srq_of() {
  local f="$1" n
  n="$(sed -n 's/.* \([0-9][0-9]*\) receive buffers registered.*/\1/p' "$f" | tail -n 1)"
  [ -n "$n" ] || n="$(sed -n 's/.*SRQ of [0-9]* (up to [0-9]*) x [0-9]* B with \([0-9][0-9]*\) posted.*/\1/p' "$f" | head -n 1)"
  echo "${n:-?}"
}

printf '%-5s %3s %5s %10s %10s %15s %6s %9s %9s\n' mode np round "init ms" "mesh ms" "neighbours ms" conns "VmPin kB" \
  "SRQ bufs"
for r in $(seq 1 "$rounds"); do
  for mode in mesh lazy; do
    out="$logs/$mode-$r.out"
    mpirun "${flags[@]}" -np "$np" -x RDMX_TRANSPORTS=rc,self -x RDMX_CONNECT="$mode" -x RDMX_LOG_LEVEL=3 \
      -x RDMX_LOG_FILE="$logs/$mode-$r-%r.log" "$exe" ring > "$out"
    srq=0
    for f in "$logs/$mode-$r-"*.log; do
      s="$(srq_of "$f")"
      [ "$s" != "?" ] && [ "$s" -gt "$srq" ] && srq="$s"
    done
    mesh_ms="$(cat "$logs/$mode-$r-"*.log | sed -n 's/.*rc: connections up in \([0-9.]*\) s.*/\1/p' |
      awk '{ if ($1 > m) m = $1 } END { printf "%.1f", m * 1000 }')"
    awk -v mode="$mode" -v np="$np" -v r="$r" -v srq="$srq" -v mesh_ms="$mesh_ms" '
      /^lazy ring:/ {
        for (i = 1; i <= NF; i++) {
          if ($i == "connections,") c = $(i - 2) + 0
          if ($i == "VmPin") p = $(i + 1) + 0
          if ($i == "init") t = $(i + 1) + 0
          if ($i == "neighbours") x = $(i + 1) + 0
        }
        if (c > cm) cm = c; if (p > pm) pm = p; if (t > tm) tm = t; if (x > xm) xm = x; ++ranks
      }
      END {
        if (ranks != np) { printf "%s run %d: %d of %d ranks reported\n", mode, r, ranks, np; exit 1 }
        printf "%-5s %3d %5d %10.1f %10.1f %15.1f %6d %9d %9d\n", mode, np, r, tm, mesh_ms, xm, cm, pm, srq
      }' "$out"
  done
done
