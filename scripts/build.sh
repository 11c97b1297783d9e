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
cmake -S "$top" -B "$bdir" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" -DRDMX_WERROR="$werror" "${cfg[@]}" >/dev/null
if [ ${#targets[@]} -gt 0 ]; then
  cmake --build "$bdir" -j"$(nproc)" --target "${targets[@]}"
else
  cmake --build "$bdir" -j"$(nproc)"
fi
