#!/usr/bin/env bash
# Placement check on a machine with two NUMA nodes (the guest booted with
# --numa): a process bound to node 1 must get its progress thread on node 1's
# cores. rxe has no PCI locality, so this checks the process-binding path.
# Usage: scripts/numa-check.sh BUILD_DIR
set -uo pipefail
info="$1/bench/rdmx-info"
nodes=$(ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l)
if [ "$nodes" -lt 2 ]; then echo "numa-check: SKIP ($nodes NUMA node(s))"; exit 0; fi
want=$(hwloc-calc --physical-output --intersect PU node:1 2>/dev/null | tr ',' '\n' | head -1)
got=$(hwloc-bind node:1 -- "$info" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(d["devices"][0]["progress_thread"])')
echo "numa-check: bound to node 1 (first PU $want); progress thread: $got"
case "$got" in
  "cpus $want:"*|"cpus $want-"*|"cpus $want,"*) echo "numa-check: PASS"; exit 0 ;;
esac
echo "numa-check: FAIL: progress thread not on node 1's cores"
exit 1
