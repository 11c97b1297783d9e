#!/usr/bin/env bash
# The HTML report as a browser shows it: headless Chromium loads the page of
# a healthy bring-up and of an all-pairs run with one link made slow on
# purpose, and tests/unit/html_render_check.py reads what it rendered (the
# DOM after load, and a screenshot): no script error, the heat maps and
# figures are there, red cells exactly where the run's verdict (its --json)
# flagged a link, so none in a healthy run and the slow link among them; and
# the page of a made-up 512-rank run (bench_html_synth) keeps one heat-map
# cell per host pair that still points at the bad link, opens a host pair
# rank by rank from the URL fragment (#drill=...) and from a click or the
# keyboard (html_drill_click.py) with the values, red and black cells of the
# run's JSON, stays under a size budget, and without its script still shows
# the host map. Skips (exit 77) without chromium.
# Usage: bench_html_render.sh PYTHON3 BENCH_HTML_SYNTH RDMX_BENCH_MPI MPIRUN [MPIRUN FLAGS...]
set -uo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
py=$1 synth=$2 bench=$3; shift 3
skip=77
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "SKIP: chromium is not installed (scripts/deps.sh tests installs it)"
  exit $skip
fi
work=$(mktemp -d)
trap '[ -n "${RDMX_KEEP_HTML:-}" ] && cp "$work"/*.html "$work"/*.json "$work"/*.png "$RDMX_KEEP_HTML"/; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# The page is at most 1100 CSS pixels wide; the window is tall enough for a
# 4-rank all-pairs page, and drawn at half scale to keep the screenshot small.
chrome=("$browser" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars
        --user-data-dir="$work/profile"
        --enable-logging=stderr --v=0 --window-size=1200,7000 --force-device-scale-factor=0.5)
chrome_timeout=60
page_budget=3000000   # bytes of the 512-rank, 2-matrix page: about 0.8 MB per matrix today

# render NAME [FRAGMENT OUT]: NAME.html (at #FRAGMENT) -> OUT.dom (DOM after
# load) and OUT.png (OUT defaults to NAME), failing on any console error the
# page raised.
render() {
  local url="file://$work/$1.html${2:+#$2}" out=${3:-$1}
  timeout $chrome_timeout "${chrome[@]}" --dump-dom "$url" >"$work/$out.dom" 2>"$work/$out.log" ||
    fail "chromium could not load $1.html${2:+#$2}: $(tail -3 "$work/$out.log")"
  timeout $chrome_timeout "${chrome[@]}" --screenshot="$work/$out.png" "$url" >/dev/null 2>>"$work/$out.log" ||
    fail "chromium could not take a screenshot of $1.html${2:+#$2}: $(tail -3 "$work/$out.log")"
  if grep -E 'CONSOLE.*(Uncaught|Error)|Uncaught ' "$work/$out.log"; then
    fail "$1.html${2:+#$2} raised a script error in the browser"
  fi
  grep -q '</svg>' "$work/$out.dom" || fail "$1.html rendered without a figure"
}

"$@" -np 2 "$bench" bringup --quick --quiet --flag-fraction 0 --html "$work/ok.html" --json "$work/ok.json" >/dev/null ||
  fail "healthy bring-up run failed"
render ok
"$py" "$here/html_render_check.py" "$work/ok.dom" "$work/ok.png" healthy "$work/ok.json" || fail "healthy bring-up page"

# A link made slow on purpose (hidden test hook): the verdict flags it (the
# checker finds it among the flagged cells of the run's --json; timing noise
# may flag more), and the run exits 1 because a check failed.
"$@" -np 4 "$bench" allpairs --quick --quiet --flag-fraction 0 --max-lat 20000 --inject-slow 0:1 \
  --html "$work/slow.html" --json "$work/slow.json" >"$work/slow.out" 2>&1
[ -s "$work/slow.html" ] || fail "the all-pairs run wrote no page: $(tail -5 "$work/slow.out")"
render slow
"$py" "$here/html_render_check.py" "$work/slow.dom" "$work/slow.png" flagged "$work/slow.json" 0:1 || fail "flagged all-pairs page"
# 512 ranks on 16 hosts: rank 5 (host 0) -> rank 300 (host 9) flagged, and
# ranks 7 -> 8 (both on host 0) cannot talk.
"$synth" "$work/big.html" 512 16 5 300 7 8 "$work/big.json" || fail "bench_html_synth failed"
render big
"$py" "$here/html_render_check.py" "$work/big.dom" "$work/big.png" grouped 16 5:300 7:8 || fail "512-rank page"
# Its drill-down: node000 -> node009 holds the flagged link 5 -> 300 in both
# maps; node000 -> node000, opened in the bandwidth map only, the silent 7 -> 8.
render big "drill=node000,node009" drill
"$py" "$here/html_render_check.py" "$work/drill.dom" "$work/drill.png" drill "$work/big.json" - node000 node009 ||
  fail "512-rank page, host pair node000 -> node009 opened"
render big "drill=bw_alone,node000,node000" drill_self
"$py" "$here/html_render_check.py" "$work/drill_self.dom" "$work/drill_self.png" drill "$work/big.json" \
  bw_alone node000 node000 || fail "512-rank page, host pair node000 -> node000 opened in one map"
# The same by hand: a click on a cell, the page's Back button, the arrows
# and Enter from the cell the focus went back to, Esc, Space.
"$py" "$here/html_drill_click.py" "$browser" "$work/big.html" "$work/ui" lat_alone 0,9 >"$work/ui.out" 2>&1 ||
  fail "could not drive the 512-rank page in chromium: $(tail -3 "$work/ui.out")"
while read -r step matrix from to; do
  "$py" "$here/html_render_check.py" "$work/ui-$step.dom" "$work/ui-$step.png" drill "$work/big.json" \
    "$matrix" "$from" "$to" || fail "512-rank page after the step '$step' ($(grep "^$step:" "$work/ui.out"))"
done <<'STEPS'
click lat_alone node000 node009
back none node000 node009
keys lat_alone node001 node008
escape none node001 node008
space lat_alone node001 node008
STEPS
# Without its script (the JSON blocks are inert), the page is the host map.
strip='import re, sys; s = open(sys.argv[1]).read()
open(sys.argv[2], "w").write(re.sub(r"<script>.*?</script>", "", s, flags=re.S))'
"$py" -c "$strip" "$work/big.html" "$work/noscript.html"
! grep -q '<script>' "$work/noscript.html" || fail "the page's script could not be removed"
render noscript "drill=node000,node009"
"$py" "$here/html_render_check.py" "$work/noscript.dom" "$work/noscript.png" grouped 16 5:300 7:8 ||
  fail "512-rank page without its script"
# What the page weighs: each matrix's links are kept in the page once.
bytes=$(wc -c <"$work/big.html")
echo "512-rank page with 2 matrices: $bytes bytes (budget $page_budget)"
[ "$bytes" -le "$page_budget" ] || fail "the 512-rank page is $bytes bytes, over $page_budget"
echo "bench html render: OK"
