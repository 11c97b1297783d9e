#!/usr/bin/env bash
# Runs a device/link fault test, then puts the test bed back the way the
# next test expects it, whatever the test did or however it ended: netdev
# NETDEV up, RDMA device DEV (rxe on NETDEV) present and its port ACTIVE.
# Usage: link_restore.sh DEV NETDEV -- COMMAND [ARGS...]
set -u
dev=$1 netdev=$2
shift 2
[ "${1:-}" = -- ] && shift
"$@"
rc=$?
# Skipped, or not on a bed with that netdev: nothing was touched.
if [ "$rc" = 77 ] || [ ! -e "/sys/class/net/$netdev" ]; then exit "$rc"; fi
ip link set "$netdev" up 2>/dev/null
# A removal still in progress (someone held the device) must finish before
# the name can be reused.
for _ in $(seq 1 300); do
  if [ -d "/sys/class/infiniband/$dev" ]; then break; fi
  if rdma link add "$dev" type rxe netdev "$netdev" 2>/dev/null; then break; fi
  sleep 0.1
done
for _ in $(seq 1 200); do
  grep -q ACTIVE "/sys/class/infiniband/$dev/ports/1/state" 2>/dev/null && break
  sleep 0.1
done
if ! grep -q ACTIVE "/sys/class/infiniband/$dev/ports/1/state" 2>/dev/null; then
  echo "link_restore: $dev on $netdev is not back and ACTIVE within 30 s; later verbs tests will fail" >&2
  rdma link show >&2
  exit 1
fi
echo "link_restore: $dev on $netdev ACTIVE again"
exit $rc
