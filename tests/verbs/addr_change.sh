#!/usr/bin/env bash
# Runs COMMAND on a bonded Soft-RoCE bed built beside the usual one, and
# takes that bed down again however COMMAND ends.
#
# rdma_cm reports RDMA_CM_EVENT_ADDR_CHANGE only when an active-backup bond
# whose MAC follows its active slave (fail_over_mac=active) fails over, so
# the bed is such a bond and a bridge facing it:
#
#   rbs0 -- rbp0 \                          rbond0 10.56.0.1/24, rxeb0 on it
#                  rbbr0 (bridge)           rbbr0  10.56.0.2/24, rxeb1 on it
#   rbs1 -- rbp1 /
#   (rbs0, rbs1 enslaved to rbond0; rbp0, rbp1 ports of rbbr0)
#
# COMMAND forces the failover itself (it knows when traffic is flowing), by
# writing the backup slave to /sys/class/net/rbond0/bonding/active_slave.
# Afterwards every --expect REGEX must match COMMAND's output, and the
# kernel log must show the ADDR_CHANGE it queued ("RDMA CM addr change for
# ndev rbond0"): a pass without the event would prove nothing.
# Exit: COMMAND's status; 77 when not root or the bed cannot be built;
# 1 when an expectation is missing. COMMAND gets RDMX_FAULT_LIMIT seconds
# (default 150), then it is stopped.
# Usage: addr_change.sh [--expect REGEX]... -- COMMAND [ARGS...]
set -u
expects=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
  case $1 in
    --expect) [ $# -ge 2 ] || { echo "addr_change: --expect needs a REGEX" >&2; exit 2; }
              expects+=("$2"); shift 2 ;;
    *) echo "addr_change: unknown option '$1' (usage: [--expect REGEX]... -- COMMAND)" >&2; exit 2 ;;
  esac
done
[ "${1:-}" = -- ] && [ $# -ge 2 ] || { echo "addr_change: usage: [--expect REGEX]... -- COMMAND [ARGS...]" >&2; exit 2; }
shift
limit=${RDMX_FAULT_LIMIT:-150}
bond=rbond0 br=rbbr0
skip() { echo "SKIP: $*" >&2; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root to build a bond and rxe devices"
command -v rdma >/dev/null || skip "the rdma tool (iproute2) is missing"

teardown() {
  # A device still held by a process finishes its removal when that exits;
  # the time limit keeps a stuck one from hanging the suite.
  local d
  for d in rxeb0 rxeb1; do
    [ -d "/sys/class/infiniband/$d" ] && timeout 60 rdma link delete "$d"
  done
  ip link del "$bond" 2>/dev/null
  ip link del "$br" 2>/dev/null
  ip link del rbs0 2>/dev/null
  ip link del rbs1 2>/dev/null
  rm -f "${out:-}"
}
trap teardown EXIT
trap 'exit 143' TERM INT

setsys() { echo "$2" >"/proc/sys/net/ipv4/conf/$1/$3" 2>/dev/null; }
build_bed() {
  ip link add "$bond" type bond mode active-backup fail_over_mac active miimon 100 || return 1
  ip link add "$br" type bridge || return 1
  local i
  for i in 0 1; do
    ip link add rbs$i mtu 9000 type veth peer name rbp$i mtu 9000 || return 1
    ip link set rbs$i master "$bond" || return 1
    ip link set rbp$i master "$br" || return 1
    ip link set rbp$i up && ip link set rbs$i up || return 1
  done
  ip link set "$bond" mtu 9000 up && ip link set "$br" mtu 9000 up || return 1
  ip addr add 10.56.0.1/24 dev "$bond" && ip addr add 10.56.0.2/24 dev "$br" || return 1
  # One namespace: each end sees a local source address (as on the main bed).
  for i in "$bond" "$br" rbs0 rbs1 rbp0 rbp1; do
    setsys "$i" 1 accept_local; setsys "$i" 0 rp_filter
  done
  rdma link add rxeb0 type rxe netdev "$bond" && rdma link add rxeb1 type rxe netdev "$br"
}
# ACTIVE, and the netdev's IPv4 address in the GID table (rdmx looks for it).
active() {
  grep -q ACTIVE "/sys/class/infiniband/$1/ports/1/state" 2>/dev/null &&
    grep -qs '^0000:0000:0000:0000:0000:ffff:' /sys/class/infiniband/"$1"/ports/1/gids/*
}

build_bed || skip "could not build the bonded bed (bond, bridge, veth or rxe on a bond unsupported here)"
for _ in $(seq 1 200); do active rxeb0 && active rxeb1 && break; sleep 0.1; done
active rxeb0 && active rxeb1 || skip "rxeb0/rxeb1 not ACTIVE with an IPv4 GID within 20 s"
echo "addr_change: $bond (active slave $(cat /sys/class/net/$bond/bonding/active_slave)," \
  "MAC $(cat /sys/class/net/$bond/address)) with rxeb0, $br with rxeb1: ACTIVE"

klog_before=$(dmesg 2>/dev/null | wc -l)
out=$(mktemp "${TMPDIR:-/tmp}/addr_change.XXXXXX")
timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
[ "$rc" = 124 ] && echo "addr_change: COMMAND did not finish within $limit s" >&2
[ "$rc" = 77 ] && exit 77
echo "addr_change: $bond now: active slave $(cat /sys/class/net/$bond/bonding/active_slave)," \
  "MAC $(cat /sys/class/net/$bond/address)"
klog=$(dmesg 2>/dev/null | tail -n +"$((klog_before + 1))" | grep "RDMA CM addr change for ndev $bond")
if [ -n "$klog" ]; then
  echo "addr_change: kernel: $(echo "$klog" | wc -l) ids got ADDR_CHANGE, e.g. $(echo "$klog" | head -1)"
elif dmesg >/dev/null 2>&1; then
  echo "addr_change: the kernel queued no ADDR_CHANGE for $bond (no 'RDMA CM addr change' line)" >&2
  [ "$rc" = 0 ] && rc=1
fi
for re in "${expects[@]}"; do
  if ! grep -Eq -- "$re" "$out"; then
    echo "addr_change: expected output missing: $re" >&2
    [ "$rc" = 0 ] && rc=1
  fi
done
exit "$rc"
