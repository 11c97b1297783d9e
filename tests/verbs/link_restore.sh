#!/usr/bin/env bash
# Runs a device or link fault test, then rebuilds the test bed's Soft-RoCE
# devices whatever the test did or however it ended, so later tests find it
# as the bed made it: every NETDEV up, and a fresh rxe DEV on it, ACTIVE.
# Fresh, not merely present: a link that went down can leave a device's
# management QP in error, and then no new connection to it ever completes.
# COMMAND gets LIMIT seconds (RDMX_FAULT_LIMIT, default 150; keep it below
# the ctest timeout so the rebuild always runs); past that, where each of
# its processes is stuck is printed and it is killed.
# Usage: link_restore.sh DEV:NETDEV [DEV:NETDEV...] -- COMMAND [ARGS...]
set -u
pairs=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do pairs+=("$1"); shift; done
shift
limit=${RDMX_FAULT_LIMIT:-150}

descendants() {  # pid: its children, grandchildren, ...
  local kid
  for kid in $(ps -o pid= --ppid "$1"); do echo "$kid"; descendants "$kid"; done
}
dump_stuck() {
  local pid t
  for pid in $(descendants "$1"); do
    echo "---- pid $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-100)"
    for t in /proc/"$pid"/task/*; do
      echo "  task ${t##*/} in $(cat "$t/wchan" 2>/dev/null):"
      sed 's/^/    /' "$t/stack" 2>/dev/null | head -8
    done
    command -v gdb >/dev/null && timeout 20 gdb -p "$pid" -batch -ex 'thread apply all bt 12' 2>/dev/null |
      grep '^#' | sed 's/^/    /'
  done
}

"$@" &
cmd=$!
end=$((SECONDS + limit))
while kill -0 "$cmd" 2>/dev/null && [ "$SECONDS" -lt "$end" ]; do sleep 0.5; done
if kill -0 "$cmd" 2>/dev/null; then
  echo "link_restore: the test did not finish within $limit s; where it is:" >&2
  dump_stuck "$cmd" >&2
  kids=$(descendants "$cmd")
  kill -TERM "$cmd"
  sleep 5
  kill -KILL "$cmd" $kids 2>/dev/null
fi
wait "$cmd"
rc=$?
# Skipped, or not on a bed with these netdevs: nothing was touched.
for p in "${pairs[@]}"; do
  [ "$rc" = 77 ] || [ ! -e "/sys/class/net/${p#*:}" ] && exit "$rc"
done
# ACTIVE, and the netdev's IPv4 address in the GID table (rdmx looks for it).
active() {
  grep -q ACTIVE "/sys/class/infiniband/$1/ports/1/state" 2>/dev/null &&
    grep -qs '^0000:0000:0000:0000:0000:ffff:' /sys/class/infiniband/"$1"/ports/1/gids/*
}
for p in "${pairs[@]}"; do
  dev=${p%%:*} netdev=${p#*:}
  ip link set "$netdev" up
  # A removal still in progress (a process held the device) finishes first.
  [ -d "/sys/class/infiniband/$dev" ] && timeout 60 rdma link delete "$dev"
  for _ in $(seq 1 300); do
    [ -d "/sys/class/infiniband/$dev" ] || rdma link add "$dev" type rxe netdev "$netdev" 2>/dev/null && break
    sleep 0.1
  done
done
for p in "${pairs[@]}"; do
  dev=${p%%:*}
  for _ in $(seq 1 200); do active "$dev" && break; sleep 0.1; done
  if ! active "$dev"; then
    echo "link_restore: $dev is not back and ACTIVE; later verbs tests will fail" >&2
    rdma link show >&2
    exit 1
  fi
done
echo "link_restore: ${pairs[*]} recreated and ACTIVE"
exit $rc
