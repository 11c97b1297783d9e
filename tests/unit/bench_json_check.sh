#!/usr/bin/env bash
# One rdmx-bench subcommand's --json - (small sizes, --quick, 2 ranks of this
# host): the run succeeds, its standard output is one JSON document, and the
# document says which command ran, how it was started, and holds its results.
# Usage: bench_json_check.sh PYTHON3 SUBCOMMAND RDMX_BENCH_MPI MPIRUN [MPIRUN FLAGS...]
set -uo pipefail
py=$1 cmd=$2 bench=$3; shift 3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $cmd: $*" >&2; exit 1; }
max_size=4K   # big enough for two sizes of every curve, small enough to be quick

# A setting with a quote and a backslash: the provenance must carry it intact.
export RDMX_JSON_CHECK_MARK='a "quoted" \ value'
"$@" -np 2 "$bench" "$cmd" --quick --quiet --verify --max-size $max_size --flag-fraction 0 --json - \
  >"$work/out.json" 2>"$work/err" || fail "exited $?: $(tail -5 "$work/err")"
"$py" - "$work/out.json" "$cmd" <<'PY' || fail "its --json output is not what it should be"
import json, re, sys
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
# Provenance: the command line as given, an ISO 8601 start time, and the
# RDMX_* environment (bench_json_check.sh sets RDMX_JSON_CHECK_MARK).
prov = doc.get("provenance") or {}
argv, env = prov.get("argv") or [], prov.get("environment")
if cmd not in argv or "--json" not in argv:
    sys.exit(f"provenance argv {argv!r} lacks the command line")
if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", prov.get("started", "")):
    sys.exit(f"provenance started {prov.get('started')!r} is not an ISO 8601 UTC time")
if not isinstance(env, dict) or env.get("RDMX_JSON_CHECK_MARK") != 'a "quoted" \\ value':
    sys.exit(f"provenance environment {env!r} lacks RDMX_JSON_CHECK_MARK as set")
print(f"{len(doc['tables'])} tables, {len(doc.get('matrices') or [])} matrices, {len(doc['checks'])} checks")
PY
echo "bench json $cmd: OK"
