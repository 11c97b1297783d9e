#!/usr/bin/env bash
# Configure and build rdmx.
# Usage: scripts/build.sh [BUILD_DIR] [cmake -D options...] [--target T...]
# BUILD_TYPE (default RelWithDebInfo) selects Release, Debug, Asan or Tsan.
set -euo pipefail
top="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)"
bdir="${1:-$top/build}"
shift || true
cfg=()
targets=()
while [ $# -gt 0 ]; do
  if [ "$1" = --target ]; then shift; targets=("$@"); break; fi
  cfg+=("$1"); shift
done
werror=OFF
[ -n "${CI:-}" ] && werror=ON
# A compiler cache when there is one (scripts/deps.sh installs it): the four
# trees of scripts/test.sh share most objects with earlier runs. Paths are
# taken relative to the checkout, so clones elsewhere share the cache. With
# debug information ccache also hashes the build directory's absolute path
# unless a -fdebug-prefix-map covers it: without the map a clone at another
# path (CI's) missed on every object and rebuilt all four trees cold. The
# map makes the debug information's paths relative to the checkout too.
launcher=()
flags=()
if [ -z "${RDMX_NO_CCACHE:-}" ] && command -v ccache >/dev/null; then
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$top}"
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  flags=(-DCMAKE_C_FLAGS="-fdebug-prefix-map=$CCACHE_BASEDIR=." -DCMAKE_CXX_FLAGS="-fdebug-prefix-map=$CCACHE_BASEDIR=.")
fi
cmake -S "$top" -B "$bdir" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" -DRDMX_WERROR="$werror" \
  "${launcher[@]}" "${flags[@]}" "${cfg[@]}" >/dev/null
if [ ${#targets[@]} -gt 0 ]; then
  cmake --build "$bdir" -j"$(nproc)" --target "${targets[@]}"
else
  cmake --build "$bdir" -j"$(nproc)"
fi
