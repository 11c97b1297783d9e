#!/usr/bin/env bash
# Test driver for examples/: install rdmx into a scratch prefix, build each
# example from that prefix alone with the very commands docs/quickstart.md
# shows, run the examples, check the installed library's exported symbols,
# and check that docs/api.md is up to date.
#
# Usage: run_examples.sh install
#        run_examples.sh build ring|halo2d|pingpong
#        run_examples.sh run ring|halo2d|pingpong NP    (NP 0: no launcher)
#        run_examples.sh run halo2d-serial
#        run_examples.sh symbols
#        run_examples.sh apidoc OUTFILE
#
# Environment (set by tests/examples/CMakeLists.txt):
#   EX_SOURCE_DIR  rdmx source tree (examples/, docs/quickstart.md, scripts/)
#   EX_BUILD_DIR   rdmx build tree to install from
#   EX_WORK        scratch directory for the example builds
#   EX_PREFIX      scratch install prefix
#   EX_LIBDIR      library directory relative to the prefix (CMAKE_INSTALL_LIBDIR)
#   EX_CMAKE       cmake to install with (default: cmake)
#   EX_MPIRUN      launcher command line without -np (default: mpirun)
#
# Exit status: 0 pass, 1 fail, 77 skip (no RDMA device for a multi-rank run,
# or a missing tool such as gfortran or python3).
set -euo pipefail

say() { echo "run_examples: $*"; }
fail() { echo "run_examples: FAIL: $*" >&2; exit 1; }
skip() { echo "run_examples: SKIP: $*"; exit 77; }

src="${EX_SOURCE_DIR:?}"
work="${EX_WORK:?}"
prefix="${EX_PREFIX:?}"
libdir="$prefix/${EX_LIBDIR:-lib}"

# Where the quickstart's commands leave each example (checked after building).
binary_of() {
  case "$1" in
    ring) echo "$work/ring/build-ring/ring" ;;
    halo2d) echo "$work/halo2d/build-halo2d/halo2d" ;;
    pingpong) echo "$work/pingpong/build-pingpong/pingpong" ;;
    *) fail "unknown example '$1'" ;;
  esac
}

# Nothing from the caller's environment may point the builds elsewhere: only
# what the quickstart's commands set.
clean_env() {
  unset PKG_CONFIG_PATH PKG_CONFIG_LIBDIR PKG_CONFIG CMAKE_PREFIX_PATH CMAKE_INSTALL_PREFIX \
        LD_LIBRARY_PATH LIBRARY_PATH CPATH C_INCLUDE_PATH CPLUS_INCLUDE_PATH rdmx_DIR RDMX_DIR
}

# The shell commands of docs/quickstart.md's block marked <!-- example-build: NAME -->.
quickstart_block() {
  awk -v marker="<!-- example-build: $1 -->" '
    index($0, marker) == 1 { found = 1; next }
    found && !inside && /^```/ { inside = 1; next }
    inside && /^```/ { exit }
    inside { print }
  ' "$src/docs/quickstart.md"
}

pc_path() { echo "$libdir/pkgconfig"; }

cmd_install() {
  [ -f "${EX_BUILD_DIR:?}/cmake_install.cmake" ] || fail "$EX_BUILD_DIR is not a configured rdmx build tree"
  rm -rf -- "$prefix" "$work"
  mkdir -p -- "$work"
  say "${EX_CMAKE:-cmake} --install $EX_BUILD_DIR --prefix $prefix"
  "${EX_CMAKE:-cmake}" --install "$EX_BUILD_DIR" --prefix "$prefix" >"$work/install.log" 2>&1 ||
    { cat "$work/install.log"; fail "cmake --install failed"; }
  local f
  for f in include/rdmx/rdmx.h include/rdmx/rdmx.hpp include/rdmx/rdmx.f90 \
           "${EX_LIBDIR:-lib}/librdmx.so" "${EX_LIBDIR:-lib}/pkgconfig/rdmx.pc" \
           "${EX_LIBDIR:-lib}/cmake/rdmx/rdmxConfig.cmake"; do
    [ -e "$prefix/$f" ] || fail "the install lacks $f"
  done
  say "installed into $prefix"
}

cmd_build() {
  local name="$1" dir block bin
  [ -d "$prefix" ] || fail "no install in $prefix (run the examples.install test first)"
  case "$name" in
    pingpong) command -v gfortran >/dev/null || skip "gfortran not found" ;;
    ring | halo2d) ;;
    *) fail "unknown example '$name'" ;;
  esac
  block="$(quickstart_block "$name")"
  [ -n "$block" ] || fail "docs/quickstart.md has no block marked <!-- example-build: $name -->"
  # The quickstart writes $PREFIX/lib; a build whose libdir is another
  # (lib64, lib/<multiarch>) gets that instead.
  if [ "${EX_LIBDIR:-lib}" != lib ]; then
    block="${block//\$PREFIX\/lib\//\$PREFIX/${EX_LIBDIR}/}"
  fi
  dir="$work/$name"
  rm -rf -- "$dir"
  mkdir -p -- "$dir"
  # A fresh directory with the examples where the quickstart expects them
  # (its commands run from the top of a checkout).
  ln -s -- "$src/examples" "$dir/examples"
  clean_env
  export PREFIX="$prefix"
  # rdmx.pc names the prefix given at configure time; this install went
  # elsewhere (cmake --install --prefix). Say so, and use the quickstart's
  # advice for relocated installs.
  local pcprefix
  pcprefix="$(PKG_CONFIG_PATH="$(pc_path)" pkg-config --variable=prefix rdmx)" ||
    fail "pkg-config cannot read $(pc_path)/rdmx.pc"
  # (rdmx.pc derives its prefix from its own directory: compare real paths.)
  if [ "$(readlink -f -- "$pcprefix")" != "$(readlink -f -- "$prefix")" ]; then
    say "NOTE: the installed rdmx.pc says prefix=$pcprefix, not $prefix (not relocatable):" \
        "building with PKG_CONFIG='pkg-config --define-prefix'"
    export PKG_CONFIG="pkg-config --define-prefix"
  fi
  say "in a fresh directory, running docs/quickstart.md's commands for $name:"
  printf '%s\n' "$block" | sed 's/^/    /'
  (cd "$dir" && bash -euxo pipefail -c "$block") || fail "building $name as docs/quickstart.md says failed"
  bin="$(binary_of "$name")"
  [ -x "$bin" ] || fail "the quickstart's commands did not produce $bin"
  # The example must use the installed library, never the build tree's.
  local lib
  lib="$(ldd "$bin" | awk '$1 ~ /^librdmx\.so/ { print $3 }')"
  [ -n "$lib" ] || fail "$bin does not link librdmx.so (ldd: $(ldd "$bin" | tr '\n' ' '))"
  [ "$(readlink -f "$lib")" = "$(readlink -f "$libdir/librdmx.so.0")" ] ||
    fail "$bin loads $lib, not the installed $libdir/librdmx.so.0"
  say "built $bin (loads $lib)"
}

# run_logged OUTFILE COMMAND...: run, show and keep the output; return its status.
run_logged() {
  local out="$1"
  shift
  say "running: $*"
  set +e
  "$@" >"$out" 2>&1
  local rc=$?
  set -e
  cat "$out"
  return "$rc"
}

# A multi-rank job on a machine without RDMA fails in rdmx_init: skip it.
skip_if_no_device() {
  if grep -q "no usable RDMA device" "$1"; then
    skip "no RDMA device on this machine (run it where verbs work: scripts/vm/run.sh)"
  fi
}

launch() {  # launch NP COMMAND...: mpirun -np NP, or the bare command for NP 0
  local np="$1"
  shift
  if [ "$np" = 0 ]; then
    # No launcher: rdmx makes a job of one rank by itself.
    env -u PMIX_NAMESPACE -u PMIX_SERVER_URI -u PMIX_SERVER_URI2 -u PMIX_SERVER_URI3 "$@"
  else
    # shellcheck disable=SC2086  # EX_MPIRUN is a command line
    ${EX_MPIRUN:-mpirun} -np "$np" "$@"
  fi
}

cmd_run() {
  local name="$1" np="${2:-0}" bin out rc=0
  if [ "$name" = halo2d-serial ]; then
    bin="$(binary_of halo2d)"
  else
    bin="$(binary_of "$name")"
  fi
  [ -x "$bin" ] || fail "$bin is not built: run the native tests first (ctest -L native -R example)"
  mkdir -p -- "$work/runs"
  out="$work/runs/$name.np$np.out"
  case "$name" in
    ring)
      run_logged "$out" launch "$np" "$bin" || rc=$?
      [ "$rc" = 0 ] || { skip_if_no_device "$out"; fail "ring exited with status $rc"; }
      local want=$((np > 0 ? np : 1))
      grep -Eq "^ring: $want ranks, token [0-9]+ after [0-9]+ laps OK$" "$out" ||
        fail "ring did not print 'ring: $want ranks, token ... OK'"
      ;;
    pingpong)
      run_logged "$out" launch "$np" "$bin" || rc=$?
      [ "$rc" = 0 ] || { skip_if_no_device "$out"; fail "pingpong exited with status $rc"; }
      grep -Eq '^pingpong: [0-9]+ bytes, [0-9]+ round trips, latency [0-9.]+ us$' "$out" ||
        fail "pingpong printed no latency"
      grep -Eq '^pingpong: [0-9]+ ranks, every payload verified OK$' "$out" || fail "pingpong did not print OK"
      ;;
    halo2d-serial)
      run_logged "$out" "$bin" --serial || fail "halo2d --serial exited with status $?"
      grep -Eq '^halo2d: 64x64 grid, 1 ranks, 200 iterations, residual [0-9]' "$out" ||
        fail "halo2d --serial printed no residual"
      ;;
    halo2d)
      # The parallel residual must equal the serial one exactly: halo2d makes
      # the reduction order independent of the number of ranks (see its
      # source), so the 17 printed digits are compared as text.
      local sout="${out%.out}.serial.out" par ser  # one per test: ranks counts run side by side
      run_logged "$sout" "$bin" --serial || fail "halo2d --serial exited with status $?"
      run_logged "$out" launch "$np" "$bin" || rc=$?
      [ "$rc" = 0 ] || { skip_if_no_device "$out"; fail "halo2d exited with status $rc"; }
      ser="$(sed -n 's/^halo2d: .*, residual \(.*\)$/\1/p' "$sout")"
      par="$(sed -n 's/^halo2d: .*, residual \(.*\)$/\1/p' "$out")"
      [ -n "$ser" ] || fail "halo2d --serial printed no residual"
      [ -n "$par" ] || fail "halo2d on $np ranks printed no residual"
      local want=$((np > 0 ? np : 1))
      grep -Eq "^halo2d: .*, $want ranks, " "$out" || fail "halo2d did not run on $want ranks"
      [ "$par" = "$ser" ] || fail "residual on $want ranks $par differs from the serial $ser"
      say "residual on $want ranks equals the serial one: $par"
      ;;
    *) fail "unknown example '$name'" ;;
  esac
  say "PASS $name"
}

cmd_symbols() {
  local so="$libdir/librdmx.so" bad soname exported declared
  [ -e "$so" ] || fail "$so not installed"
  { command -v nm && command -v readelf; } >/dev/null || skip "nm/readelf (binutils) not found"
  # Every defined dynamic symbol is rdmx_*, apart from the version node.
  exported="$(nm -D --defined-only "$so" | awk 'NF >= 3 { print $3 }' | sed 's/@.*//' | sort -u)"
  bad="$(printf '%s\n' "$exported" | grep -Ev '^(rdmx_.*|RDMX_0)$' || true)"
  [ -z "$bad" ] || fail "librdmx.so exports symbols outside rdmx_*: $(echo "$bad" | tr '\n' ' ')"
  # ... and exactly the functions rdmx.h declares.
  declared="$(grep -oE 'RDMX_API[^(]*[^A-Za-z0-9_]rdmx_[a-z0-9_]+ *\(' "$prefix/include/rdmx/rdmx.h" |
              grep -oE 'rdmx_[a-z0-9_]+ *\($' | tr -d ' (' | sort -u)"
  [ -n "$declared" ] || fail "found no RDMX_API functions in rdmx.h"
  local missing extra
  missing="$(comm -23 <(echo "$declared") <(printf '%s\n' "$exported" | grep '^rdmx_'))"
  extra="$(comm -13 <(echo "$declared") <(printf '%s\n' "$exported" | grep '^rdmx_'))"
  [ -z "$missing" ] || fail "declared in rdmx.h but not exported: $(echo "$missing" | tr '\n' ' ')"
  [ -z "$extra" ] || fail "exported but not declared in rdmx.h: $(echo "$extra" | tr '\n' ' ')"
  soname="$(readelf -d "$so" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')"
  [[ "$soname" =~ ^librdmx\.so\.[0-9]+$ ]] || fail "SONAME is '$soname', want librdmx.so.<major>"
  [ -e "$libdir/$soname" ] || fail "$libdir/$soname (the SONAME) is not installed"
  say "librdmx.so: SONAME $soname, $(echo "$declared" | wc -l) functions, all rdmx_*, all declared in rdmx.h"
}

cmd_apidoc() {
  local gen="$1"
  command -v python3 >/dev/null || skip "python3 not found"
  mkdir -p -- "$(dirname -- "$gen")"
  python3 "$src/scripts/gen-api-doc.py" -o "$gen" || fail "scripts/gen-api-doc.py failed"
  if ! diff -u "$src/docs/api.md" "$gen"; then
    fail "docs/api.md is stale: regenerate it with 'python3 scripts/gen-api-doc.py' and commit it"
  fi
  say "docs/api.md matches the headers"
}

[ $# -ge 1 ] || fail "usage: $0 install|build NAME|run NAME [NP]|symbols|apidoc OUTFILE"
what="$1"
shift
case "$what" in
  install) cmd_install ;;
  build) [ $# -eq 1 ] || fail "usage: $0 build NAME"; cmd_build "$1" ;;
  run) [ $# -ge 1 ] || fail "usage: $0 run NAME [NP]"; cmd_run "$@" ;;
  symbols) cmd_symbols ;;
  apidoc) [ $# -eq 1 ] || fail "usage: $0 apidoc OUTFILE"; cmd_apidoc "$1" ;;
  *) fail "unknown command '$what'" ;;
esac
