#!/usr/bin/env bash
# The compiler wrappers end to end: builds hello.c with rdmx-mpicc and
# hello.cc with rdmx-mpicxx, checks what -show and friends print and that
# the programs carry an rpath to lib/rdmx-mpich, then runs each on 2 ranks
# with no LD_LIBRARY_PATH: the rpath alone must find libmpich.so.12.
#
# Usage: wrapper_test.sh build BUILD_DIR MPIRUN [mpirun flags...]
#        wrapper_test.sh install BUILD_DIR MPIRUN [mpirun flags...]
#   build    the build tree's wrappers (BUILD_DIR/mpi/rdmx-mpicc)
#   install  installs BUILD_DIR into a temporary prefix first and uses
#            <prefix>/bin/rdmx-mpicc (the tree an rdmx package ships)
set -euo pipefail
prog="wrapper_test"
fail() { echo "$prog: FAIL: $*" >&2; exit 1; }
[ $# -ge 3 ] || { echo "usage: $prog build|install BUILD_DIR MPIRUN [flags...]" >&2; exit 2; }
tree="$1"; build="$2"; shift 2
mpirun=("$@")
src="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
work="$(mktemp -d -t rdmx-mpicc.XXXXXXXX)"
trap 'rm -rf -- "$work"' EXIT

case "$tree" in
  build) bin="$build/mpi"; libdir="$build/lib/rdmx-mpich" ;;
  install)
    cmake --install "$build" --prefix "$work/prefix" >"$work/install.log" 2>&1 ||
      { tail -20 "$work/install.log" >&2; fail "cmake --install $build failed"; }
    bin="$work/prefix/bin"
    libdir="$(dirname "$(find "$work/prefix" -name libmpich.so.12 -print -quit)")"
    [ -f "$work/prefix/include/rdmx-mpich/mpi.h" ] || fail "no include/rdmx-mpich/mpi.h in the install tree" ;;
  *) fail "unknown tree $tree (build or install)" ;;
esac
libdir="$(cd -- "$libdir" && pwd -P)"
mpicc="$bin/rdmx-mpicc"; mpicxx="$bin/rdmx-mpicxx"
{ [ -x "$mpicc" ] && [ -x "$mpicxx" ]; } || fail "missing $mpicc or $mpicxx"

# What -show and friends print (no compiler runs).
show="$("$mpicc" -show -o x x.c)"
for want in "-I" "-L$libdir" "-Wl,-rpath,$libdir" "-lmpich" "x.c"; do
  [[ "$show" == *"$want"* ]] || fail "rdmx-mpicc -show lacks '$want': $show"
done
[ "$("$mpicc" -compile-info x.c)" = "$show" ] || [[ "$("$mpicc" -compile-info x.c)" == *-lmpich* ]] ||
  fail "-compile-info does not print the command"
[[ "$("$mpicc" -show -c x.c)" != *-lmpich* ]] || fail "a compile-only -show (-c) still links"
[[ "$("$mpicc" -show-compile-info)" == -I* ]] || fail "-show-compile-info: $("$mpicc" -show-compile-info)"
[[ "$("$mpicc" -show-link-info)" == *-lmpich ]] || fail "-show-link-info: $("$mpicc" -show-link-info)"
[[ "$("$mpicc" -show -profile=foo x.c)" == *"-lfoo -lmpich"* ]] || fail "-profile=foo is not linked before -lmpich"
[[ "$("$mpicc" -show -cc=clang-x x.c)" == clang-x* ]] || fail "-cc= does not pick the compiler"
cc_word="$("$mpicc" -show x.c | cut -d' ' -f1)"; cxx_word="$("$mpicxx" -show x.cc | cut -d' ' -f1)"
[ "$cc_word" != "$cxx_word" ] || fail "rdmx-mpicxx runs the C compiler ($cxx_word)"
if "$mpicc" >/dev/null 2>&1; then fail "rdmx-mpicc with no arguments succeeded"; fi

# The hello programs need point-to-point; a layer without it yet skips the rest.
syms="$(nm -D --defined-only "$libdir/libmpich.so.12")"   # no pipe into grep -q: SIGPIPE under pipefail
if ! grep -qw 'MPI_Sendrecv' <<<"$syms"; then
  echo "$prog: SKIP: $libdir/libmpich.so.12 has no MPI_Sendrecv yet (the wrappers' flags were checked)"
  exit 77
fi

# Compile (separately and in one step) and check the rpath.
(cd "$work" && "$mpicc" -O2 -Wall -Werror=implicit-function-declaration -c "$src/hello.c" -o hello.o &&
   "$mpicc" hello.o -o hello_c && "$mpicxx" -O2 -Wall "$src/hello.cc" -o hello_cxx) || fail "compiling failed"
for exe in hello_c hello_cxx; do
  readelf -d "$work/$exe" | grep -E 'R(UN)?PATH' | grep -qF "$libdir" || fail "$exe has no rpath to $libdir"
  readelf -d "$work/$exe" | grep -qF 'libmpich.so.12' || fail "$exe does not need libmpich.so.12"
done

# Run, with no LD_LIBRARY_PATH: the rpath must find the library.
for exe in hello_c hello_cxx; do
  out="$(env -u LD_LIBRARY_PATH "${mpirun[@]}" -np 2 "$work/$exe" 2>&1)" || { echo "$out" >&2; fail "$exe failed"; }
  echo "$out"
  [ "$(grep -c ' ok' <<<"$out")" = 2 ] || fail "$exe: not every rank reported ok"
  [[ "$exe" != hello_c ]] || grep -q 'rdmx MPI' <<<"$out" || fail "$exe did not run on rdmx's library"
done
echo "$prog: ok ($tree tree)"
