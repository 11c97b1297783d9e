// Linked into the test programs that call Open MPI's MPI_Init in their
// ranks (rdmx_ompi_keep_mapped in tests/RdmxTestHelpers.cmake). Under
// ASan only: elsewhere this file compiles to nothing.
//
// MPI_Finalize dlcloses Open MPI's components. The stacks ASan records for
// the allocations they leak (process-lifetime state, never freed) then end
// in unmapped code: at exit LeakSanitizer re-reads /proc/self/maps for
// every such frame (minutes under emulation) and still cannot match them to
// tests/sanitizers/lsan.supp. So these programs keep every library they
// loaded mapped until exit: their dlclose, which the components' unloading
// calls instead of libc's, unloads nothing. The leaked frames then name
// their modules and match the rules at once, with ASan's fast unwinder
// (DWARF unwinding, the other way to reach a mapped frame, made every
// allocation several times dearer: the MPI_Init tests took half as long
// again in the guest).
#if defined(__SANITIZE_ADDRESS__)
extern "C" __attribute__((visibility("default"), used)) int dlclose(void *handle) {
    (void)handle;
    return 0;
}
#endif
