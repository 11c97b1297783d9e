#!/usr/bin/env bash
# Runs the verbs suites where verbs work (called inside the Soft-RoCE guest
# by scripts/test.sh, or directly on a host with an RDMA device):
#   BUILD      every test labelled "verbs" at a third of its repetitions
#              (RDMX_TEST_SHRINK=3): the engine over rc alone, and on
#              pretend nodes (label mixed: pairs on a node over sm, the
#              others over rc); then those with a shared-memory twin
#              (label twin), whose full counts run natively over sm;
#   ASAN_BUILD under ASan + UBSan, the engine tests whose subject is rc
#              (labels p2p or fault, without the labels twin or sm, whose
#              shared-memory runs belong to the host): hostile peers,
#              flow control, exposure, the send ring, async events, device
#              removal (link down and address change are left to the main
#              run: see below). The tests with a shared-
#              memory twin (label twin: matching, eager, rendezvous, probe,
#              cancel, threads, soak, peer death, ...) run under both
#              sanitizers natively instead (scripts/test.sh, label sm);
#   TSAN_BUILD under TSan, the rc tests labelled race: those where rc's
#              code runs in more threads than the progress thread and the
#              application's (three application threads, the async event
#              thread, connection events), or where two threads meet on
#              rc's own state (the rendezvous READ, the full send
#              ring, a peer's forged messages and credits closing its
#              connection under the progress thread). Every other rc test
#              runs the same two-thread pattern over paths these cover, and
#              the engine's logic runs under TSan natively, over sm.
# The layers above the engine are left to the main run, for CI time: the
# collectives against Open MPI on the engine, the benchmarks' --verify runs
# (the benchmark is not built in the sanitizer trees), the examples (built
# by the user's compiler against an installed library) and "big" (a >2 GiB
# message: the guest's memory, doubled by the shadow).
# Repetition and message counts are shrunk (RDMX_TEST_SHRINK) and the soak
# is shorter; every case still makes its point (see docs/testing.md).
# Prints ctest's summary for each; exits nonzero if any failed.
# Two tests at a time (RDMX_VERBS_JOBS): under emulation a test spends much
# of its time waiting (connection set-up, timeouts, the peer's turn), so a
# second one fills the idle vCPU; measured on the guest's twins, 229 s at
# two against 315-391 s one at a time, each test about 12% slower. The
# device and link faults (RUN_SERIAL) still run alone.
set -uo pipefail
ulimit -l unlimited 2>/dev/null || true
rc=0
jobs="${RDMX_VERBS_JOBS:-2}"
run() {  # name dir ctest-args...
  local name=$1 dir=$2; shift 2
  [ -d "$dir" ] || return 0
  echo "==== verbs: $name ($dir) ===="
  local t0=$SECONDS
  ctest --test-dir "$dir" -j "$jobs" --output-on-failure "$@" 2>&1 | tee "$dir/verbs-$name.txt"
  [ "${PIPESTATUS[0]}" = 0 ] || rc=1
  echo "==== verbs: $name took $((SECONDS - t0)) s ====" | tee -a "$dir/verbs-$name.txt"
}
# The soak here is the mixed one (sm and rc in one job): 30 s, as the twins'.
# Repetitions at a third as well (mixed flood: 33,000 messages per sender,
# still several times the SRQ and every sender's credits).
(export RDMX_SOAK_SECONDS=30 RDMX_TEST_SHRINK=3; run main "$BUILD" -L verbs -LE twin --timeout 600; exit $rc) || rc=1
# The rc versions of the tests with a shared-memory twin (label twin) run
# their every case here at a third of the repetitions, and the soak for
# 30 s: the full counts run natively over shared memory (scripts/test.sh),
# where the engine logic they repeat is the same and a minute costs seconds.
(export RDMX_TEST_SHRINK=3 RDMX_SOAK_SECONDS=30; run twins "$BUILD" -L twin --timeout 600; exit $rc) || rc=1

# RDMX_VERBS_SINGLE=1: the engine over rc again at the other thread level
# (RDMX_THREADS=single, caller progress: no engine lock, no pins), every rc
# test of labels p2p and twin, shrunk. About 300 s in the guest, so not part
# of CI's run (scripts/test.sh); the native run covers that path over sm.
if [ "${RDMX_VERBS_SINGLE:-0}" = 1 ]; then
  (export RDMX_THREADS=single RDMX_PROGRESS=caller RDMX_TEST_SHRINK=10 RDMX_SOAK_SECONDS=10
   run single "$BUILD" -L 'p2p|twin' -LE sm --timeout 600; exit $rc) || rc=1
fi
# Open MPI under a sanitizer (MPI_Init in bootstrap_mpi_test, hostile_test,
# coll_vs_mpi; mpirun's PMIx in all):
#  - HWLOC_COMPONENTS=-pci: MPI_Init's topology discovery has libpciaccess
#    read pci.ids into a buffer grown by realloc, which both sanitizers turn
#    into a fresh copy each time: ~400,000 page faults per process, minutes
#    per test under emulation. rdmx's own placement does not use PCI objects.
#  - the programs that call MPI_Init keep Open MPI's components mapped
#    until exit under ASan, so that LeakSanitizer can match their leaks to
#    tests/sanitizers/lsan.supp (tests/sanitizers/ompi_keep_mapped.cc).
san_env=(HWLOC_COMPONENTS=-pci RDMX_TEST_SHRINK=10 RDMX_SOAK_SECONDS=20)
san() {  # name dir labels exclude extra-env...: one sanitizer run in a subshell with its environment
  local name=$1 dir=$2 labels=$3 exclude=$4; shift 4
  [ -n "$dir" ] || return 0
  # shellcheck disable=SC2163  # "$@" holds NAME=value words
  (export "${san_env[@]}" "$@"; run "$name" "$dir" -L "$labels" -LE 'twin|sm' -E "$exclude" --timeout 900
   exit $rc) || rc=1
}
# Left out under ASan, for CI time (about 150 s of guest time), each run by
# the main run above: the link-down and address-change faults (they run
# alone, 45 s each, and their subject is the port events and the
# keepalive's deadlines, whose code holds no buffers; device removal, which
# tears down every verbs object under live requests, stays); the test whose
# subject is the deadline on a peer that never starts (60 s of waiting);
# and the tests that skip under a sanitizer or on Soft-RoCE anyway (the
# LOCAL_INV on a device failure needs the registration cache, which the
# sanitizer builds turn off; windows where type 2 windows do not work).
san asan "${ASAN_BUILD:-}" 'p2p|fault' \
  '^verbs\.(fault\.linkdown|fault\.addrchange|peer_never_starts|inval_device_fatal|rndv\.windows_(get|put))\.'
san tsan "${TSAN_BUILD:-}" race '^$'
exit $rc
