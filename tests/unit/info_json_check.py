#!/usr/bin/env python3
"""rdmx-info --json, read from stdin: it must parse, hold the setting given
in the environment byte for byte (quote, backslash, tab), and carry the
limits, collectives and protocols sections, and give each port's rate with
its source."""
import json
import sys

want = sys.argv[1]
d = json.load(sys.stdin)
dev = [e for e in d["config"] if e["name"] == "RDMX_DEVICE"]
assert dev and dev[0]["value"] == want, (dev, want)
assert "memlock_soft" in d["limits"], d["limits"]
assert d["protocols"] and d["collectives"], d
# Every port says its rate and where it came from (null figures when unknown).
for dev in d["devices"]:
    for port in dev["ports"]:
        assert port["rate_source"] in ("ibv_query_port", "netdev", "unknown"), port
        assert port["device_kind"] in ("hardware", "soft-roce", "siw", "unknown"), port
        rate = port["rate_data_gbps"]
        assert (rate is None) == (port["rate_source"] == "unknown"), port
        assert rate is None or 0 < rate <= port["rate_signal_gbps"], port
print("info json: OK")
