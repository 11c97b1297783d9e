#!/usr/bin/env bash
# scripts/bringup.sh's argument handling (--dry-run: nothing is installed,
# built or started): --np in any position and form, the older leading NP,
# every other argument passed to rdmx-bench as one word (spaces and quotes
# intact), the emulated-guest note, and bad --np values refused.
set -uo pipefail
script="$1"
fail() { echo "FAIL: $*" >&2; exit 1; }
words() { "$script" --dry-run "$@"; }

out=$(words --html "my report.html" --np 8 --json=out.json) || fail "dry run exited $?"
grep -qx -- '-np' <<<"$out" && grep -qx '8' <<<"$out" || fail "--np 8 after other options not taken: $out"
grep -qxF 'my\ report.html' <<<"$out" || fail "an argument with a space was split or lost: $out"
grep -qxF -- '--json=out.json' <<<"$out" || fail "--json=out.json not passed through"
[ "$(tail -1 <<<"$out")" = '--json=out.json' ] || fail "bench options not last, in order"
out=$(words 6 --quick) || fail "leading NP form exited $?"
grep -qx '6' <<<"$out" || fail "leading NP not taken"
out=$(words --np=3 "it's") || fail "--np=3 exited $?"
grep -qx '3' <<<"$out" && grep -qxF "it\\'s" <<<"$out" || fail "--np=3 or a quote mishandled: $out"
if [ ! -d /sys/class/infiniband ]; then
  grep -qF 'self-test\ in\ an\ emulated\ guest' <<<"$out" || fail "no emulated-guest note on a host without RDMA"
fi
for bad in x 0 -1; do
  "$script" --dry-run --np "$bad" >/dev/null 2>&1 && fail "--np $bad accepted"
done
echo "bringup args: OK"
