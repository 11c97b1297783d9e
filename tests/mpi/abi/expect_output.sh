#!/bin/sh
# expect_output.sh [--fail] [--match ERE]... -- COMMAND...
# Runs COMMAND (stdout and stderr together, shown) and checks it: exit 0, or
# with --fail a non-zero exit; every --match extended regular expression
# matches at least one line of the output.
set -u
want_fail=0
patterns=$(mktemp) out=$(mktemp) || exit 1
trap 'rm -f "$patterns" "$out"' EXIT
while [ $# -gt 0 ]; do
  case $1 in
    --fail) want_fail=1; shift ;;
    --match) printf '%s\n' "$2" >> "$patterns"; shift 2 ;;
    --) shift; break ;;
    *) echo "expect_output.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
"$@" > "$out" 2>&1
rc=$?
cat "$out"
fail=0
if [ $want_fail = 1 ] && [ $rc = 0 ]; then echo "expected a non-zero exit, got 0"; fail=1; fi
if [ $want_fail = 0 ] && [ $rc != 0 ]; then echo "expected exit 0, got $rc"; fail=1; fi
while IFS= read -r re; do
  grep -Eq -- "$re" "$out" || { echo "no line of the output matches: $re"; fail=1; }
done < "$patterns"
[ $fail = 0 ] && echo "PASS (exit $rc)" || echo "FAIL (exit $rc)"
exit $fail
