#!/usr/bin/env bash
# The whole test suite (what CI runs): installs what is missing, builds the
# release tree plus ASan+UBSan and TSan trees, runs every native test (no
# device needed), then the verbs suites where verbs work (natively on a host
# with an RDMA device, else in the Soft-RoCE guest, one boot), and prints
# ctest's summary for each. Exit status is nonzero if anything failed.
set -uo pipefail
top="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)"
bdir="${RDMX_BUILD_DIR:-$top/build}"
asan="$bdir-asan"
tsan="$bdir-tsan"

t_start=$SECONDS
stamp() { echo "at $((SECONDS - t_start)) s"; }

"$top/scripts/deps.sh" || exit 1
"$top/scripts/build.sh" "$bdir" || { echo "rdmx: build failed" >&2; exit 1; }
# The sanitizer trees build everything but the benchmarks, with line tables
# only (-g1: reports keep function, file and line; a quarter less compile
# time): the engine's rc tests run under both (scripts/verbs-suite.sh says
# which and why).
BUILD_TYPE=Asan "$top/scripts/build.sh" "$asan" -DRDMX_BUILD_BENCH=OFF -DRDMX_SAN_DEBUG=-g1 ||
  { echo "rdmx: ASan build failed" >&2; exit 1; }
# Both run the MPI layer's tests (label mpi) natively: its request table and
# MPI_THREAD_MULTIPLE are checked by TSan too (tests/mpi/conformance/conf_init.c).
BUILD_TYPE=Tsan "$top/scripts/build.sh" "$tsan" -DRDMX_BUILD_BENCH=OFF -DRDMX_SAN_DEBUG=-g1 ||
  { echo "rdmx: TSan build failed" >&2; exit 1; }
# libFuzzer needs clang: a tree of its own with only the fuzz targets (each
# compiles the wire decoders itself).
fuzz="$bdir-fuzz"
CC=clang CXX=clang++ BUILD_TYPE=RelWithDebInfo "$top/scripts/build.sh" "$fuzz" -DRDMX_BUILD_FUZZ=ON \
  -DRDMX_BUILD_BENCH=OFF --target fuzz_connect_priv fuzz_msg_hdr fuzz_rndv_desc fuzz_pmi fuzz_sm_slot ||
  { echo "rdmx: fuzz build failed" >&2; exit 1; }

native=0
# A cluster node installs the library and its tools without the test
# suite's dependencies: the Debian packages are built with MPI and Google
# Benchmark hidden from CMake, must not depend on MPI, and the examples must
# build and run against them (scripts/deb.sh).
echo "==== Debian packages ($(stamp)) ===="
if "$top/scripts/deb.sh" "$bdir-deb"; then
  echo "packages: PASS (librdmx0, librdmx-dev, rdmx-tools, rdmx-mpich; examples built against them)" >"$bdir/packages.txt"
else
  echo "packages: FAIL" >"$bdir/packages.txt"; native=1
fi
echo "==== native tests (no RDMA device needed; $(stamp)) ===="
ctest --test-dir "$bdir" -LE verbs -j2 --output-on-failure --timeout 600 2>&1 | tee "$bdir/native.txt"
[ "${PIPESTATUS[0]}" = 0 ] || native=1
# The engine's suite again at the other thread level: RDMX_THREADS=single with
# caller progress is the lock-free path (no engine lock, no pins, no locked
# adds); the one test whose threads call at once asks for multiple itself.
# The collectives and the bindings are left out here: they use only the
# point-to-point calls this pass covers.
echo "==== native sm tests at RDMX_THREADS=single ($(stamp)) ===="
RDMX_THREADS=single RDMX_PROGRESS=caller ctest --test-dir "$bdir" -L sm -LE 'example|coll|bindings' -j2 --output-on-failure \
  --timeout 600 2>&1 | tee "$bdir/native-single.txt"
[ "${PIPESTATUS[0]}" = 0 ] || native=1
echo "==== fuzzers (a fixed time each, from tests/fuzz/corpus; $(stamp)) ===="
ctest --test-dir "$fuzz" -L fuzz -j3 --output-on-failure 2>&1 | tee "$fuzz/native.txt"
[ "${PIPESTATUS[0]}" = 0 ] || native=1
# The engine's whole suite over shared memory (label sm: p2p, rendezvous,
# faults, soak, collectives against Open MPI) runs under both sanitizers
# here, natively; the guest keeps what needs RDMA. Under ASan the
# collectives' own code (buffer and offset arithmetic of every algorithm)
# runs too, over the MPI shim, at every rank count and forcing profile with
# the quick size sweeps (about 45 s). The examples are built by the user's
# compiler against an installed library: not in the sanitizer trees.
for t in asan tsan; do
  d="$bdir-$t"
  # Under both also the MPI layer (label mpi): its own programs are
  # instrumented; the ones MPICH's compiler built get the runtime preloaded
  # into the ranks (tests/RdmxTestHelpers.cmake).
  # TSan keeps the collectives against Open MPI at 2 and 3 ranks (the
  # nonblocking ones advance from the progress thread's callback) and leaves
  # the other rank counts, the forced profiles and the MPI layer's run of
  # them out: the same single-threaded schedules again, about 100 s.
  sel=(-L 'unit|sm|mpi' -LE example -E 'coll_vs_mpi_(np[4-8]|env)|mpi\.twins\.coll_vs_mpi')
  [ "$t" = asan ] && sel=(-L 'unit|coll|sm|mpi' -LE example)
  echo "==== native tests under ${t^^} ($(stamp)) ===="
  # (The Open MPI settings for sanitizers: scripts/verbs-suite.sh says why.)
  # Two at a time, as the release tree's: most are 2-4 rank jobs that wait
  # on each other as much as they compute.
  env HWLOC_COMPONENTS=-pci RDMX_TEST_SHRINK=10 RDMX_SOAK_SECONDS=20 \
    ctest --test-dir "$d" "${sel[@]}" -j2 --output-on-failure --timeout 600 2>&1 | tee "$d/native.txt"
  [ "${PIPESTATUS[0]}" = 0 ] || native=1
done

echo "==== verbs tests (Soft-RoCE guest, or this host's RDMA device; $(stamp)) ===="
"$top/scripts/vm/run.sh" --timeout "${RDMX_VM_TIMEOUT:-3000}" -- \
  env BUILD="$bdir" ASAN_BUILD="$asan" TSAN_BUILD="$tsan" "$top/scripts/verbs-suite.sh"
verbs=$?

echo "==== two nodes (two guests joined by a link, Slurm across them; $(stamp)) ===="
"$top/scripts/vm/run.sh" --nodes 2 --timeout 1200 -- "$top/tests/launch/two_node.sh" "$bdir" 2>&1 |
  tee "$bdir/two-node.txt"
[ "${PIPESTATUS[0]}" = 0 ] || verbs=1

echo "==== NUMA placement (guest with two NUMA nodes; $(stamp)) ===="
RDMX_VM_FORCE=1 "$top/scripts/vm/run.sh" --numa --timeout 600 -- "$top/scripts/numa-check.sh" "$bdir" 2>&1 |
  tee "$bdir/numa.txt"
numa=${PIPESTATUS[0]}

echo "==== summary ($(stamp)) ===="
for f in "$bdir/native.txt" "$bdir/native-single.txt" "$asan/native.txt" "$tsan/native.txt" "$fuzz/native.txt" "$bdir/verbs-main.txt" \
         "$bdir/verbs-twins.txt" "$asan/verbs-asan.txt" "$tsan/verbs-tsan.txt"; do
  [ -f "$f" ] && printf '%-40s %s\n' "${f#$top/}" "$(grep -E 'tests passed' "$f" | tail -1) $(grep -o 'took [0-9]* s' "$f" | tail -1)"
done
grep -h "numa-check: \(PASS\|FAIL\|SKIP\)" "$bdir/numa.txt" 2>/dev/null
grep -h "two_node: .*\(PASS\|FAIL\|passed\|failed\)" "$bdir/two-node.txt" 2>/dev/null
cat "$bdir/packages.txt" 2>/dev/null
[ "$native" = 0 ] && [ "$verbs" = 0 ] && [ "$numa" = 0 ]
