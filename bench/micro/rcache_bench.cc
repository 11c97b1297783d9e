// Registration-cache lookup: reserved for the owner of core/rcache.h
// (RegCache), which is still changing; nothing here measures it yet.
//
// ---- RCACHE LOOKUP BENCHMARK GOES HERE ---------------------------------------
// Register, as in the other files here and checking each result with
// rdmx::micro::fail, with Ops whose reg/dereg hand out fake handles (no
// device), one iteration = RegCache::get() + put():
//   BM_RcacheLookup/regions:N/hit:1  a buffer inside a cached region
//   BM_RcacheLookup/regions:N/hit:0  a buffer no region covers (fake reg,
//                                    then eviction once the bound is full)
// for N = 1, 10, 100, 1000, 10000 cached regions. Add the family to the
// micro.smoke filter in tests/unit/CMakeLists.txt and a row to the table in
// docs/bench.md.
// ------------------------------------------------------------------------------
