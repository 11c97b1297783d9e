#!/usr/bin/env bash
# Builds rdmx's Debian packages (librdmx0, librdmx-dev, rdmx-tools, rdmx-mpich) from a
# copy of this checkout with dpkg-buildpackage, then checks them: what each
# holds, that nothing depends on MPI, and that the examples build and run
# against the unpacked packages alone (docs/quickstart.md's commands, as
# tests/examples/run_examples.sh runs them, with the packages as the prefix).
#
# Usage: scripts/deb.sh [OUT_DIR]     (default: build-deb beside build/)
# The .deb files end up in OUT_DIR. Needs debhelper and dpkg-dev
# (scripts/deps.sh tests).
set -euo pipefail
top="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)"
out="${1:-${RDMX_BUILD_DIR:-$top/build}-deb}"
fail() { echo "deb: FAIL: $*" >&2; exit 1; }
say() { echo "deb: $*"; }

rm -rf -- "$out"
mkdir -p -- "$out/src"
# The tracked files only (a work tree's build directories stay behind).
if git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
  git -C "$top" ls-files -z --cached --others --exclude-standard | (cd "$top" && xargs -0 cp --parents -t "$out/src")
else
  cp -a "$top/." "$out/src"
fi
say "dpkg-buildpackage in $out/src"
# The compiler cache, when there is one (CMake reads the launchers from the
# environment), as scripts/build.sh uses it. Two things kept every run cold:
# debhelper points HOME and XDG_CACHE_HOME into the package's build tree,
# so ccache made a fresh cache there each time (CCACHE_DIR names the
# user's); and ccache hashes the working directory of a compile with debug
# information unless a -fdebug-prefix-map covers it, where dpkg-buildflags
# maps the source tree with -ffile-prefix-map, so each clone's copy (at its
# own path) missed. That map already makes the debug information's paths
# relative, so the directory is left out of the hash (CCACHE_NOHASHDIR).
cache_env=()
command -v ccache >/dev/null && [ -z "${RDMX_NO_CCACHE:-}" ] &&
  cache_env=(CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR="$out/src"
             CCACHE_DIR="$(ccache -k cache_dir)" CCACHE_NOHASHDIR=1)
(cd "$out/src" && env "${cache_env[@]}" DEB_BUILD_OPTIONS="parallel=$(nproc) nocheck" dpkg-buildpackage -us -uc -b) \
  >"$out/build.log" 2>&1 ||
  { tail -30 "$out/build.log"; fail "dpkg-buildpackage failed (log: $out/build.log)"; }

arch="$(dpkg-architecture -qDEB_HOST_MULTIARCH)"
root="$out/root"
for p in librdmx0 librdmx-dev rdmx-tools rdmx-mpich; do
  deb="$(ls "$out"/${p}_*.deb 2>/dev/null | head -1)"
  [ -n "$deb" ] || fail "no $p package was built"
  dpkg-deb -x "$deb" "$root"
  deps="$(dpkg-deb -f "$deb" Depends)"
  say "$p: $(dpkg-deb -c "$deb" | grep -vc '/$') files; Depends: $deps"
  ! grep -qi 'mpi' <<<"$deps" || fail "$p depends on MPI: $deps"
done
for f in "usr/lib/$arch/librdmx.so.0" "usr/include/rdmx/rdmx.h" "usr/lib/$arch/pkgconfig/rdmx.pc" \
         "usr/lib/$arch/cmake/rdmx/rdmxConfig.cmake" "usr/bin/rdmx-bench" "usr/bin/rdmx-info" \
         "usr/lib/$arch/rdmx-mpich/libmpich.so.12" "usr/include/rdmx-mpich/mpi.h" "usr/bin/rdmx-mpicc"; do
  [ -e "$root/$f" ] || fail "$f is in no package"
done
drv="$top/tests/examples/run_examples.sh"
export EX_SOURCE_DIR="$top" EX_WORK="$out/examples" EX_PREFIX="$root/usr" EX_LIBDIR="lib/$arch"
for ex in ring halo2d; do
  bash "$drv" build "$ex" >"$out/example-$ex.log" 2>&1 || { tail -20 "$out/example-$ex.log"; fail "$ex did not build against the packages"; }
done
bash "$drv" run ring 0 >"$out/example-run.log" 2>&1 || { tail -20 "$out/example-run.log"; fail "ring did not run"; }
bash "$drv" run halo2d-serial >>"$out/example-run.log" 2>&1 || { tail -20 "$out/example-run.log"; fail "halo2d did not run"; }
LD_LIBRARY_PATH="$root/usr/lib/$arch" "$root/usr/bin/rdmx-info" >/dev/null 2>&1 ||
  [ $? -ne 127 ] || fail "rdmx-info from the package does not start"
say "PASS: librdmx0, librdmx-dev, rdmx-tools, rdmx-mpich built; the examples build and run against them"
