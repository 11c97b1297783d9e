# Every external dependency, found with CMake's modules or pkg-config. A
# missing one stops configure and names the Debian package that provides it
# (scripts/deps.sh installs them all).
find_package(PkgConfig)
if(NOT PKG_CONFIG_FOUND)
  message(FATAL_ERROR "pkg-config not found: apt-get install pkg-config (or run scripts/deps.sh)")
endif()

function(rdmx_require_pc target module deb)
  pkg_check_modules(${target} IMPORTED_TARGET ${module})
  if(NOT ${target}_FOUND)
    message(FATAL_ERROR "rdmx needs ${module} (pkg-config): apt-get install ${deb} (or run scripts/deps.sh)")
  endif()
endfunction()

rdmx_require_pc(IBVERBS libibverbs libibverbs-dev)
rdmx_require_pc(RDMACM librdmacm librdmacm-dev)
rdmx_require_pc(HWLOC hwloc libhwloc-dev)
rdmx_require_pc(PMIX pmix libpmix-dev)
find_package(Threads REQUIRED)

if(RDMX_BUILD_TESTS OR RDMX_BUILD_BENCH)
  find_package(MPI COMPONENTS C CXX)
  if(NOT MPI_FOUND)
    message(FATAL_ERROR "tests and comparison benchmarks need MPI: apt-get install libopenmpi-dev openmpi-bin (or run scripts/deps.sh)")
  endif()
endif()
if(RDMX_BUILD_TESTS)
  find_package(GTest)
  if(NOT GTest_FOUND)
    message(FATAL_ERROR "tests need GoogleTest: apt-get install libgtest-dev libgmock-dev (or run scripts/deps.sh)")
  endif()
endif()
if(RDMX_BUILD_BENCH)
  find_package(benchmark)
  if(NOT benchmark_FOUND)
    message(FATAL_ERROR "microbenchmarks need Google Benchmark: apt-get install libbenchmark-dev (or run scripts/deps.sh)")
  endif()
endif()

# Layers that must not touch verbs (core, collectives) see these headers first:
# including <infiniband/verbs.h> or <rdma/rdma_cma.h> there fails the build.
set(RDMX_POISON_VERBS_DIR ${CMAKE_CURRENT_LIST_DIR}/poison)
