#!/usr/bin/env python3
"""rdmx-info --json, read from stdin: it must parse, hold the setting given
in the environment byte for byte (quote, backslash, tab), and carry the
limits, collectives and protocols sections."""
import json
import sys

want = sys.argv[1]
d = json.load(sys.stdin)
dev = [e for e in d["config"] if e["name"] == "RDMX_DEVICE"]
assert dev and dev[0]["value"] == want, (dev, want)
assert "memlock_soft" in d["limits"], d["limits"]
assert d["protocols"] and d["collectives"], d
print("info json: OK")
