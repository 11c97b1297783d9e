# Spack recipe for rdmx. Each variant sets one of the project's CMake options
# (CMakeLists.txt, bench/CMakeLists.txt, cmake/RdmxLibrary.cmake), and each
# dependency is one that CMake looks for; scripts/spack-check.py cross-checks
# both against the CMake files (ctest packaging.spack). See docs/quickstart.md,
# section 8.

from spack.package import *


class Rdmx(CMakePackage):
    """Kernel-bypass message passing for HPC on rdma-core: an MPI-like tagged
    send/receive API with communicators and collectives over RDMA verbs
    (InfiniBand, RoCE) and shared memory, the rdmx-bench bring-up benchmark,
    the rdmx-info diagnostic tool and an MPI library with MPICH's ABI."""

    # No public release archive or repository yet: build from a checkout with
    # `spack dev-build rdmx@0.1.0` or `spack develop` (docs/packaging.md).
    version("0.1.0")

    variant("bench", default=True, description="Build rdmx-bench and rdmx-info")
    variant(
        "bench_mpi",
        default=False,
        description="Build rdmx-bench-mpi, the MPI twin of rdmx-bench (needs MPI)",
    )
    variant(
        "micro",
        default=False,
        description="Build rdmx-micro, the Google Benchmark microbenchmarks",
    )
    variant(
        "mpich_abi",
        default=True,
        description="Build the MPI library with MPICH's ABI (lib/rdmx-mpich/libmpich.so.12)",
    )
    variant(
        "tests",
        default=False,
        description="Build the test suite (needs MPI and GoogleTest; verbs tests need an RDMA device)",
    )
    variant(
        "lto",
        default=True,
        description="Link librdmx.so with link-time optimisation (GCC release builds)",
    )

    conflicts("+bench_mpi", when="~bench", msg="rdmx-bench-mpi is part of the benchmarks (+bench)")
    conflicts("+micro", when="~bench", msg="rdmx-micro is part of the benchmarks (+bench)")
    # CMake turns LTO on for GCC only; its flags (-ffat-lto-objects) are GCC's.
    conflicts("+lto", when="%clang", msg="RDMX_LTO uses GCC's LTO flags: build with ~lto")

    # The languages of project(): Spack gives a package a compiler for each.
    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("cmake@3.22:", type="build")
    depends_on("pkgconfig", type="build")

    # The library: verbs and RDMA CM, hwloc for placement, PMIx for the
    # bootstrap (PMI-1 and PMI-2 are spoken over the launcher's socket and
    # need no library).
    depends_on("rdma-core")
    depends_on("hwloc")
    depends_on("pmix")

    # rdmx-info writes its JSON, and rdmx-bench its HTML report's drill-down data,
    # with nlohmann::json (header only).
    depends_on("nlohmann-json@3:", type="build", when="+bench")
    depends_on("mpi", when="+bench_mpi")
    depends_on("benchmark", when="+micro")

    # The test suite checks the collectives against MPI and launches with it.
    depends_on("mpi", when="+tests")
    depends_on("googletest", when="+tests")
    depends_on("python@3:", type=("build", "test"), when="+tests")
    depends_on("ucx", when="+tests")

    def cmake_args(self):
        return [
            self.define_from_variant("RDMX_BUILD_BENCH", "bench"),
            self.define_from_variant("RDMX_BUILD_BENCH_MPI", "bench_mpi"),
            self.define_from_variant("RDMX_BUILD_MICRO", "micro"),
            self.define_from_variant("RDMX_BUILD_MPI", "mpich_abi"),
            self.define_from_variant("RDMX_BUILD_TESTS", "tests"),
            self.define_from_variant("RDMX_LTO", "lto"),
            # A site's compiler may warn where CI's does not: never -Werror.
            self.define("RDMX_WERROR", False),
            # libFuzzer targets are for development (clang, scripts/test.sh).
            self.define("RDMX_BUILD_FUZZ", False),
            # Without +bench_mpi or +micro, CMake must not pick up an MPI or
            # Google Benchmark that happens to be on the path.
            self.define("CMAKE_DISABLE_FIND_PACKAGE_MPI", self.spec.satisfies("~bench_mpi~tests")),
            self.define("CMAKE_DISABLE_FIND_PACKAGE_benchmark", self.spec.satisfies("~micro")),
        ]
