#!/usr/bin/env bash
# rdmx-bench latency --rounds: the loop runs once per round and size, rank 0
# idle between rounds; the main table keeps round 1's row, a second table
# (latency-rounds) holds every round's, in order, after it. And --rounds is
# refused for other subcommands, --pause without --rounds.
# Usage: bench_rounds_check.sh PYTHON3 RDMX_BENCH(-MPI) MPIRUN [MPIRUN FLAGS...]
set -uo pipefail
py=$1 bench=$2; shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
rounds=3

"$@" -np 2 "$bench" latency --rounds $rounds --pause 0.05 --max-size 64 --iters 50 --warmup 5 --verify --quiet \
  --json - >"$work/out.json" 2>"$work/err" || fail "exited $?: $(tail -5 "$work/err")"
"$py" - "$work/out.json" "$rounds" <<'PY' || fail "the rounds table is not what it should be"
import json, sys
doc = json.load(open(sys.argv[1], encoding="utf-8"))
rounds = int(sys.argv[2])
tables = {t["test"]: t for t in doc["tables"]}
if [t["test"] for t in doc["tables"]] != ["latency", "latency-rounds"]:
    sys.exit(f"tables {[t['test'] for t in doc['tables']]}, expected latency then latency-rounds")
main, by_round = tables["latency"], tables["latency-rounds"]
if by_round["columns"] != [main["columns"][0], "Round"] + main["columns"][1:]:
    sys.exit(f"rounds columns {by_round['columns']} do not follow {main['columns']}")
rows = by_round["rows"]
if len(rows) != rounds * len(main["rows"]) or not main["rows"]:
    sys.exit(f"{len(rows)} round rows for {len(main['rows'])} sizes and {rounds} rounds")
for k, m in enumerate(main["rows"]):
    mine = rows[k * rounds:(k + 1) * rounds]
    if [r[0] for r in mine] != [m[0]] * rounds or [r[1] for r in mine] != list(range(1, rounds + 1)):
        sys.exit(f"size {m[0]}: rows {mine} are not rounds 1..{rounds} of that size")
    if mine[0][:1] + mine[0][2:] != m:
        sys.exit(f"size {m[0]}: round 1 {mine[0]} is not the main table's row {m}")
    if any(not v > 0 for r in mine for v in r[2:]):
        sys.exit(f"size {m[0]}: a latency that is not positive in {mine}")
print(f"{len(main['rows'])} sizes x {rounds} rounds")
PY
for bad in "bw --rounds 2" "latency --pause 0.1" "latency --rounds 0" "latency --rounds 2 --pause -1"; do
  # shellcheck disable=SC2086 # the words are the command line
  "$bench" $bad >"$work/bad" 2>&1
  st=$?
  [ "$st" = 2 ] || fail "'$bad' exited $st, expected 2 (usage error): $(head -3 "$work/bad")"
  grep -q -E -- "--rounds|--pause" "$work/bad" || fail "'$bad': the error does not name the option: $(head -3 "$work/bad")"
done
echo "bench rounds: OK"
