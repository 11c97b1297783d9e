#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, runs the native
# tests (no device needed), then the verbs suite where verbs work (natively on
# a host with an RDMA device, else in the Soft-RoCE guest), and prints ctest's
# summary for each. Exit status is nonzero if anything failed.
set -uo pipefail
top="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)"
bdir="${RDMX_BUILD_DIR:-$top/build}"
log="$bdir/test-logs"

"$top/scripts/deps.sh" || exit 1
"$top/scripts/build.sh" "$bdir" || { echo "rdmx: build failed" >&2; exit 1; }
mkdir -p "$log"
cd "$bdir" || exit 1

echo "==== native tests (no RDMA device needed) ===="
ctest -LE verbs --output-on-failure --timeout 600 2>&1 | tee "$log/native.txt"
native=${PIPESTATUS[0]}

echo "==== verbs tests (Soft-RoCE guest, or this host's RDMA device) ===="
ulimit -l unlimited 2>/dev/null || true
"$top/scripts/vm/run.sh" --timeout "${RDMX_VM_TIMEOUT:-2400}" -- \
  bash -c 'ulimit -l unlimited; ctest -L verbs --output-on-failure --timeout 600' 2>&1 | tee "$log/verbs.txt"
verbs=${PIPESTATUS[0]}

echo "==== summary ===="
echo "native: $(grep -E 'tests passed|tests failed' "$log/native.txt" | tail -1)"
echo "verbs:  $(grep -E 'tests passed|tests failed' "$log/verbs.txt" | tail -1)"
[ "$native" = 0 ] && [ "$verbs" = 0 ]
