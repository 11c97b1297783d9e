#!/usr/bin/env bash
# Runs the verbs suites where verbs work (called inside the Soft-RoCE guest
# by scripts/test.sh, or directly on a host with an RDMA device):
#   BUILD      every test labelled "verbs";
#   ASAN_BUILD the engine's own verbs tests (label p2p) under ASan + UBSan;
#   TSAN_BUILD the multi-threaded ones under TSan.
# Prints ctest's summary for each; exits nonzero if any failed.
set -uo pipefail
ulimit -l unlimited 2>/dev/null || true
rc=0
run() {  # name dir ctest-args...
  local name=$1 dir=$2; shift 2
  [ -d "$dir" ] || return 0
  echo "==== verbs: $name ($dir) ===="
  ctest --test-dir "$dir" --output-on-failure "$@" 2>&1 | tee "$dir/verbs-$name.txt"
  [ "${PIPESTATUS[0]}" = 0 ] || rc=1
}
run main "$BUILD" -L verbs --timeout 600
[ -n "${ASAN_BUILD:-}" ] && run asan "$ASAN_BUILD" -L p2p -E 'bootstrap|peer_never|hostile|flood' --timeout 900
[ -n "${TSAN_BUILD:-}" ] && run tsan "$TSAN_BUILD" -L p2p -R 'threads|mesh.np4|fault' --timeout 900
exit $rc
