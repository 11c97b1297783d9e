// Linked into the test programs that call Open MPI's MPI_Init in their
// ranks (rdmx_ompi_rank_defaults in tests/RdmxTestHelpers.cmake).
//
// MPI_Finalize dlcloses Open MPI's components. The frame-pointer stacks
// ASan records by default for the allocations they leak (process-lifetime
// state, never freed) then end in unmapped code: at exit LeakSanitizer
// re-reads /proc/self/maps for every such frame (minutes under emulation)
// and still cannot match them to tests/sanitizers/lsan.supp. Stacks
// unwound through DWARF reach libmpi/libopen-pal and match at once. Every
// allocation pays for the slow unwind (the rc tests under ASan in the guest
// ran a quarter faster without it), so only these programs ask for it; the
// rest keep ASan's fast unwinder (scripts/test.sh and verbs-suite.sh set no
// ASAN_OPTIONS). An ASAN_OPTIONS in the environment still overrides this.
// Outside an ASan build nothing reads the function.
extern "C" __attribute__((visibility("default"), used)) const char *__asan_default_options() {
    return "fast_unwind_on_malloc=0";
}
