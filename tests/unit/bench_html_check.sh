#!/usr/bin/env bash
# The HTML report as a person reads it (bench/html*.cc): with no link
# flagged, no heat-map cell is red; with a link flagged, exactly its cells
# are; a bandwidth measured at one size is written as a value, not drawn as
# an empty chart. Runs rdmx-bench's MPI twin on 2 or 4 ranks of this host.
# Usage: bench_html_check.sh RDMX_BENCH_MPI MPIRUN [MPIRUN FLAGS...]
set -uo pipefail
bench=$1; shift
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
red='fill="#c00000"'

"$@" -np 2 "$bench" bringup --quick --quiet --flag-fraction 0 --html "$work/ok.html" >/dev/null ||
  fail "healthy bringup run failed"
grep -q '<svg' "$work/ok.html" || fail "no charts in the report"
! grep -q "$red" "$work/ok.html" || fail "a red cell in a report whose verdict flags no link"
! grep -qE 'fill="hsl\(([0-9]|[1-5][0-9])(\.[0-9]+)?,' "$work/ok.html" ||
  fail "a red-to-yellow cell (relative shading) in a report whose verdict flags no link"
grep -q 'class="values"' "$work/ok.html" || fail "a one-size bandwidth was drawn as a chart, not written as a value"
grep -q 'Bandwidth.*MB/s at 64K B' "$work/ok.html" || fail "the lone bandwidth value is missing"

# A link made slow on purpose (hidden test hook): flagged, and red.
"$@" -np 4 "$bench" allpairs --quick --quiet --flag-fraction 0 --max-lat 20000 --inject-slow 0:1 \
  --html "$work/slow.html" >/dev/null 2>&1  # exits 1: a check failed
grep -q "$red" "$work/slow.html" || fail "the flagged link is not red"
# Cells carry a tooltip; the legend's red swatch does not.
n=$(grep -o "$red[^>]*><title>" "$work/slow.html" | wc -l)
[ "$n" -le 4 ] || fail "$n red cells for one flagged link (at most 2 per matrix, 2 matrices)"
echo "bench html: OK"
