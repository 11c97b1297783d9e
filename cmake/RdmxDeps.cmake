# Every external dependency, found with CMake's modules or pkg-config. A
# missing one stops configure and names the Debian package that provides it
# (scripts/deps.sh installs them, by group: lib, tools, tests, testbed).
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

# The library needs only the packages above. The test suite needs MPI (the
# reference the collectives are checked against, and the launcher) and
# GoogleTest; the tools need neither: rdmx-bench-mpi and rdmx-micro are built
# when MPI and Google Benchmark are there (bench/CMakeLists.txt).
if(RDMX_BUILD_TESTS)
  find_package(MPI COMPONENTS C CXX)
  if(NOT MPI_FOUND)
    message(FATAL_ERROR "the test suite needs MPI: apt-get install libopenmpi-dev openmpi-bin (or run scripts/deps.sh), "
                        "or configure with -DRDMX_BUILD_TESTS=OFF for the library and tools alone")
  endif()
  find_package(GTest)
  if(NOT GTest_FOUND)
    message(FATAL_ERROR "tests need GoogleTest: apt-get install libgtest-dev libgmock-dev (or run scripts/deps.sh)")
  endif()
elseif(RDMX_BUILD_BENCH)
  find_package(MPI QUIET COMPONENTS C CXX)
endif()

# Layers that must not touch verbs (core, collectives) see these headers first:
# including <infiniband/verbs.h> or <rdma/rdma_cma.h> there fails the build.
set(RDMX_POISON_VERBS_DIR ${CMAKE_CURRENT_LIST_DIR}/poison)
