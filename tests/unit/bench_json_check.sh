#!/usr/bin/env bash
# One rdmx-bench subcommand's --json - (small sizes, --quick, 2 ranks of this
# host): the run succeeds, its standard output is one JSON document, and the
# document says which command ran and holds its results.
# Usage: bench_json_check.sh PYTHON3 SUBCOMMAND RDMX_BENCH_MPI MPIRUN [MPIRUN FLAGS...]
set -uo pipefail
py=$1 cmd=$2 bench=$3; shift 3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $cmd: $*" >&2; exit 1; }
max_size=4K   # big enough for two sizes of every curve, small enough to be quick

"$@" -np 2 "$bench" "$cmd" --quick --quiet --verify --max-size $max_size --flag-fraction 0 --json - \
  >"$work/out.json" 2>"$work/err" || fail "exited $?: $(tail -5 "$work/err")"
"$py" - "$work/out.json" "$cmd" <<'PY' || fail "its --json output is not what it should be"
import json, sys
path, cmd = sys.argv[1], sys.argv[2]
with open(path, encoding="utf-8") as f:
    text = f.read()
try:
    doc = json.loads(text)   # the whole of stdout: nothing printed around it
except json.JSONDecodeError as e:
    sys.exit(f"not JSON ({e}); output begins: {text[:200]!r}")
for key in ("tool", "command", "ranks", "tables", "checks", "result"):
    if key not in doc:
        sys.exit(f"no '{key}' in {sorted(doc)}")
if doc["command"] != cmd or doc["ranks"] != 2:
    sys.exit(f"command {doc['command']!r} on {doc['ranks']} ranks, expected {cmd!r} on 2")
if not doc["tables"] and not doc.get("matrices"):
    sys.exit("no table and no matrix")
print(f"{len(doc['tables'])} tables, {len(doc.get('matrices') or [])} matrices, {len(doc['checks'])} checks")
PY
echo "bench json $cmd: OK"
