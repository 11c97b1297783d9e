#!/usr/bin/env python3
"""Self-test of scripts/perf/sched_trace.py on a made-up trace (no guest):
the loop window, the NET_RX medians per vCPU, the sched_yield and futex
counts, the waits and their causes (the waker from sched_waking), lost
events, a run of several sizes, a trace without the tgid column, and the
refusals.

Usage: sched_trace_test.py [PYTHON]   (prints "sched trace: OK" and exits 0)
"""

import gzip
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "sched_trace.py")
PY = sys.argv[1] if len(sys.argv) > 1 else sys.executable


TGID = True  # the guest records it (options/record-tgid); a trace may lack it


def ev(comm, pid, cpu, t, name, rest):
    if not TGID:
        return "%16s-%-7d [%03d] d..2. %12.6f: %s: %s\n" % (comm, pid, cpu, t, name, rest)
    return "%16s-%-7d (%7d) [%03d] d..2. %12.6f: %s: %s\n" % (comm, pid, pid, cpu, t, name, rest)


def switch(cpu, t, prev, prev_pid, state, nxt, next_pid):
    return ev(prev, prev_pid, cpu, t, "sched_switch",
              "prev_comm=%s prev_pid=%d prev_prio=120 prev_state=%s ==> next_comm=%s next_pid=%d next_prio=120"
              % (prev, prev_pid, state, nxt, next_pid))


def netrx(cpu, t, us, comm="rdmx-bench", pid=100):
    return (ev(comm, pid, cpu, t, "softirq_entry", "vec=3 [action=NET_RX]") +
            ev(comm, pid, cpu, t + us / 1e6, "softirq_exit", "vec=3 [action=NET_RX]"))


def make_trace():
    lines = []
    # Bring-up: three packets, then 200 ms of quiet.
    for i in range(3):
        lines.append(netrx(0, 1.0 + i * 0.001, 90))
    # The loop: a packet every 50 us on each vCPU for 20 ms; cpu 0's take
    # 18 us, cpu 1's 40 us (its kernel work is slow).
    t = 1.2
    while t < 1.22:
        lines.append(netrx(0, t, 18))
        lines.append(netrx(1, t + 0.000025, 40, pid=101))
        t += 0.00005
    # In the loop: the progress thread preempts rank 0 on cpu 0 and yields
    # 3 times; rank 0 runs again 2 ms later. A wake-up on cpu 1 that runs
    # 0.1 ms later is too short to report.
    lines.append(switch(0, 1.205, "rdmx-bench", 100, "R", "rdmx-progress", 102))
    for k in range(3):
        lines.append(ev("rdmx-progress", 102, 0, 1.2051 + k * 1e-5, "sys_enter", "NR 24 (0, 0, 0, 0, 0, 0)"))
    lines.append(ev("rdmx-progress", 102, 0, 1.2052, "sys_enter", "NR 202 (7f00, 80, 2, 0, 0, 0)"))
    lines.append(switch(0, 1.207, "rdmx-progress", 102, "S", "rdmx-bench", 100))
    lines.append(ev("rdmx-progress", 102, 0, 1.2099, "sched_waking", "comm=rdmx-bench pid=101 prio=120 target_cpu=001"))
    lines.append(ev("<idle>", 0, 1, 1.210, "sched_wakeup", "comm=rdmx-bench pid=101 prio=120 target_cpu=001"))
    lines.append(switch(1, 1.2101, "swapper/1", 0, "R", "rdmx-bench", 101))
    # Finish: more packets after a quiet gap, not part of the loop; a long
    # wait there is not reported.
    lines.append(switch(0, 1.30, "rdmx-bench", 100, "R", "kworker/0:1", 7))
    lines.append(switch(0, 1.31, "kworker/0:1", 7, "S", "rdmx-bench", 100))
    for i in range(3):
        lines.append(netrx(0, 1.35 + i * 0.001, 90))
    lines.sort(key=lambda l: float(l.split("]")[1].split()[1].rstrip(":")))
    return "# tracer: nop\n#\n" + "".join(lines)


def run(*args):
    p = subprocess.run([PY, TOOL, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def check(cond, what, out=""):
    if not cond:
        print("FAIL: %s\n%s" % (what, out))
        sys.exit(1)


def main():
    with tempfile.TemporaryDirectory() as d:
        rc, _, err = run(d)
        check(rc == 2 and "no traces" in err, "an empty directory is refused", err)
        raw = os.path.join(d, "raw")
        os.mkdir(raw)
        with gzip.open(os.path.join(raw, "r2-lat-rdmx-thread.trace.gz"), "wt") as f:
            f.write(make_trace())
        with open(os.path.join(raw, "r2-lat-rdmx-thread.json"), "w") as f:
            json.dump({"tables": [{"rows": [[8, 21.5, 19.0, 60.0, 2100.0]]}]}, f)
        rc, out, err = run(d)
        check(rc == 0, "exit 0", out + err)
        row = [l for l in out.splitlines() if l.startswith("| rdmx-thread r2 ")]
        check(len(row) == 1, "one row for the run", out)
        cells = [c.strip() for c in row[0].strip("|").split("|")]
        check(cells[1:4] == ["21.5", "19.0", "2100"], "the run's figures from its JSON", out)
        check(cells[4] == "0:18 1:40", "NET_RX medians per vCPU over the loop only", out)
        check(cells[5] == "3 / 1", "sched_yield and futex calls", out)
        check(cells[6] == "1", "one wait over 500 us in the loop (the finish's is outside)", out)
        check("rdmx-bench/100 waited 2000 us (preempted by rdmx-progress)" in out, "the wait and its cause", out)
        check("+5.0 ms cpu 0" in out, "the wait's time from the loop's start", out)
        check("rdmx-progress: 3 sched_yield" in out, "the yields by thread", out)
        rc, out, _ = run(d, "--wait-us", "50")
        check("rdmx-bench/101 waited 200 us (woken by rdmx-progress on cpu 0)" in out,
              "a lower threshold lists the wake-up, timed from sched_waking and naming the waker", out)
        # A second run: two sizes, an empty p99.9, lost events, no tgid column.
        global TGID
        TGID = False
        with open(os.path.join(raw, "r3-lat-rdmx-caller.trace"), "w") as f:
            f.write(make_trace())
        with open(os.path.join(raw, "r3-lat-rdmx-caller.json"), "w") as f:
            json.dump({"tables": [{"rows": [[8, 20.0, 18.0, 50.0, None], [16, 21.0, 19.0, 51.0, 90.0]]}]}, f)
        with open(os.path.join(raw, "r3-lat-rdmx-caller.trace.stats"), "w") as f:
            f.write("/t/per_cpu/cpu0/stats:overrun: 0\n/t/per_cpu/cpu1/stats:overrun: 12\n")
        rc, out, err = run(d)
        row = [l for l in out.splitlines() if l.startswith("| rdmx-caller r3 ")]
        check(rc == 0 and len(row) == 1, "the second run has a row", out + err)
        check(".stats" not in out, "one row per trace, none for the .stats files", out)
        cells = [c.strip() for c in row[0].strip("|").split("|")]
        check(cells[0] == "rdmx-caller r3 (2 sizes) (12 events lost)", "sizes and lost events named", out)
        check(cells[1:4] == ["20.0", "18.0", "-"], "an empty figure prints as -", out)
        check(cells[4] == "0:18 1:40", "read without the tgid column", out)
        for bad in (["--wait-us", "x"], ["--waits", "0"], ["--bogus"], [d, d]):
            rc, _, err = run(*bad)
            check(rc == 2 and "error" in err, "refused: %s" % bad, err)
    print("sched trace: OK")


if __name__ == "__main__":
    main()
