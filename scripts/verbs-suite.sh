#!/usr/bin/env bash
# Runs the verbs suites where verbs work (called inside the Soft-RoCE guest
# by scripts/test.sh, or directly on a host with an RDMA device):
#   BUILD      every test labelled "verbs";
#   ASAN_BUILD under ASan + UBSan, what touches memory a peer or the
#              application hands in: hostile peers (forged private_data,
#              malformed headers and rendezvous descriptors), rendezvous
#              (cached and per-transfer registrations, buffers freed under
#              the cache, rotating buffers), truncation, probe, cancel, the
#              soak, a bootstrap through the application's callback, and the
#              teardowns (peer death, device removal, repeated bring-ups);
#   TSAN_BUILD under TSan, what runs on more than one thread: application
#              threads, the progress thread taking over (overlap), flow
#              control under a flood, the soak, rendezvous, async events,
#              peer death, device removal and link down.
# Left to the main run, for CI time (the whole label under ASan took 31 min
# of guest time; CI has under 30 for everything): the collectives against
# Open MPI, the benchmarks' --verify runs, the examples (built by the user's
# compiler against an installed library), "big" (a >2 GiB message: the
# guest's memory, doubled by the shadow), and the cases whose code paths the
# selections above already cover (mesh on 2 and 8 ranks, order, sizes on 4
# ranks, a peer that never starts, the corruption self-check).
# Repetition and message counts are shrunk (RDMX_TEST_SHRINK) and the soak
# is shorter; every case still makes its point (see docs/testing.md).
# Prints ctest's summary for each; exits nonzero if any failed.
set -uo pipefail
ulimit -l unlimited 2>/dev/null || true
rc=0
run() {  # name dir ctest-args...
  local name=$1 dir=$2; shift 2
  [ -d "$dir" ] || return 0
  echo "==== verbs: $name ($dir) ===="
  local t0=$SECONDS
  ctest --test-dir "$dir" --output-on-failure "$@" 2>&1 | tee "$dir/verbs-$name.txt"
  [ "${PIPESTATUS[0]}" = 0 ] || rc=1
  echo "==== verbs: $name took $((SECONDS - t0)) s ====" | tee -a "$dir/verbs-$name.txt"
}
run main "$BUILD" -L verbs --timeout 600

# Open MPI under a sanitizer (MPI_Init in bootstrap_mpi_test, hostile_test,
# coll_vs_mpi; mpirun's PMIx in all):
#  - HWLOC_COMPONENTS=-pci: MPI_Init's topology discovery has libpciaccess
#    read pci.ids into a buffer grown by realloc, which both sanitizers turn
#    into a fresh copy each time: ~400,000 page faults per process, minutes
#    per test under emulation. rdmx's own placement does not use PCI objects.
#  - fast_unwind_on_malloc=0: MPI_Finalize dlcloses Open MPI's components,
#    whose frames (no frame pointers) leave frame-pointer stacks of their
#    leaks ending in unmapped code. At exit LeakSanitizer then re-reads
#    /proc/self/maps for every such frame (minutes: the old "hang") and
#    still cannot match them to tests/sanitizers/lsan.supp. DWARF-unwound
#    stacks reach libmpi/libopen-pal and match at once.
san_env=(HWLOC_COMPONENTS=-pci RDMX_TEST_SHRINK=10 RDMX_SOAK_SECONDS=20)
asan_sel='^verbs\.(hostile|hostile_rndv|rndv|rndv_freed|rndv_rotate|mixed_order|sizes|truncate|probe|cancel|soak|bootstrap_callback|fault\.kill|fault\.remove|mesh)\.np[0-9]+$'
tsan_sel='^verbs\.(threads|overlap|flood|soak|rndv|cancel|probe|mesh|fault\.async|fault\.kill|fault\.remove|fault\.linkdown)\.np[0-9]+$'
san() {  # name dir selection extra-env...: one sanitizer run in a subshell with its environment
  local name=$1 dir=$2 sel=$3; shift 3
  [ -n "$dir" ] || return 0
  # shellcheck disable=SC2163  # "$@" holds NAME=value words
  (export "${san_env[@]}" "$@"; run "$name" "$dir" -L verbs -R "$sel" -E '^verbs\.(mesh\.np[28]|sizes\.np4)$' --timeout 900; exit $rc) ||
    rc=1
}
san asan "${ASAN_BUILD:-}" "$asan_sel" ASAN_OPTIONS=fast_unwind_on_malloc=0
san tsan "${TSAN_BUILD:-}" "$tsan_sel"
exit $rc
