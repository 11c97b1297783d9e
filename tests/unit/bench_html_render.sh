#!/usr/bin/env bash
# The HTML report as a browser shows it: headless Chromium loads the page of
# a healthy bring-up and of an all-pairs run with one link made slow on
# purpose, and tests/unit/html_render_check.py reads what it rendered (the
# DOM after load, and a screenshot): no script error, the heat maps and
# figures are there, red cells exactly where the run's verdict (its --json)
# flagged a link, so none in a healthy run and the slow link among them; and
# the page of a made-up 512-rank run (bench_html_synth) keeps one heat-map
# cell per host pair that still points at the bad link. Skips (exit 77)
# without chromium.
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

# render NAME: NAME.html -> NAME.dom (DOM after load) and NAME.png, failing
# on any console error the page raised.
render() {
  local url="file://$work/$1.html"
  timeout $chrome_timeout "${chrome[@]}" --dump-dom "$url" >"$work/$1.dom" 2>"$work/$1.log" ||
    fail "chromium could not load $1.html: $(tail -3 "$work/$1.log")"
  timeout $chrome_timeout "${chrome[@]}" --screenshot="$work/$1.png" "$url" >/dev/null 2>>"$work/$1.log" ||
    fail "chromium could not take a screenshot of $1.html: $(tail -3 "$work/$1.log")"
  if grep -E 'CONSOLE.*(Uncaught|Error)|Uncaught ' "$work/$1.log"; then
    fail "$1.html raised a script error in the browser"
  fi
  grep -q '</svg>' "$work/$1.dom" || fail "$1.html rendered without a figure"
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
"$synth" "$work/big.html" 512 16 5 300 7 8 || fail "bench_html_synth failed"
render big
"$py" "$here/html_render_check.py" "$work/big.dom" "$work/big.png" grouped 16 5:300 7:8 || fail "512-rank page"
echo "bench html render: OK"
