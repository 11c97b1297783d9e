#!/usr/bin/env bash
# Configure and build rdmx. Usage: scripts/build.sh [BUILD_DIR] [extra cmake args]
# BUILD_TYPE (default RelWithDebInfo) selects Release, Debug, Asan or Tsan.
set -euo pipefail
top="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)"
bdir="${1:-$top/build}"
shift || true
werror=OFF
[ -n "${CI:-}" ] && werror=ON
cmake -S "$top" -B "$bdir" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" -DRDMX_WERROR="$werror" "$@" >/dev/null
cmake --build "$bdir" -j"$(nproc)"
