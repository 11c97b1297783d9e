#!/usr/bin/env python3
"""What the scheduler and the kernel's packet work did during each latency
run of a traced comparison (scripts/perf/compare.sh --trace).

With --trace, the guest records an ftrace of every rdmx-bench(-mpi) latency
run (sched_switch, sched_wakeup, softirq entry and exit, system-call entry;
clock mono, tgid recorded) into raw/rREP-lat-TOOL.trace.gz. For each run
this prints, over the measured loop only:

  * the run's average, p50 and p99.9 half round trip (from its JSON);
  * the median NET_RX softirq per vCPU, in us: on Soft-RoCE the kernel's
    receive path for a packet (rxe's responder and completer) runs there,
    in the sending rank's post system call, so this is the kernel's cost
    per packet on that vCPU; a run whose figure stands well above the
    others' on one vCPU had slow kernel packet work for its whole length;
  * sched_yield and futex calls by thread name (a waiter spinning on
    sched_yield shows here);
  * every wait longer than --wait-us of a benchmark thread for a CPU: the
    thread was preempted (by whom; a thread that called sched_yield shows
    the same way) or woken (by whom: the waker of sched_waking) and ran
    again only that much later;
  * events lost: when a CPU's trace buffer overflowed (raw/*.trace.stats),
    the counts above are short, and the row says so.

A run of several sizes is read as one loop (its figures are the first
size's, and the row says how many sizes ran): trace one size.

The measured loop is the longest stretch of NET_RX softirqs with no gap
over 10 ms: a latency run's bring-up and finish are separated from its
loop by longer quiet gaps, and its loop is one packet every few tens of
microseconds on each side.

Usage: sched_trace.py RAWDIR [--wait-us N] [--waits K]
  RAWDIR      compare.sh's raw directory (the one with runs.tsv and raw/)
  --wait-us   report waits longer than this (default 500)
  --waits     list at most this many waits per run (default 8)
Exit status: 0; 2 on bad arguments or when RAWDIR holds no trace.
"""

import collections
import glob
import gzip
import json
import os
import re
import statistics
import sys

# "  comm-123  (  120) [001] d..2.  12.345678: event: fields"
LINE = re.compile(r"^\s*(.+?)-(\d+)\s+(?:\(\s*[\d-]+\)\s+)?\[(\d+)\]\s+\S+\s+([\d.]+): (\w+): (.*)$")
SWITCH = re.compile(
    r"prev_comm=(.+?) prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+) ==> next_comm=(.+?) next_pid=(\d+)")
WAKEUP = re.compile(r"comm=(.+?) pid=(\d+) prio=\d+ target_cpu=(\d+)")
LOOP_GAP_S = 0.010
NR_SCHED_YIELD = 24   # x86-64
NR_FUTEX = 202
BENCH_PREFIX = ("rdmx-bench", "rdmx-progress")


class Event:
    __slots__ = ("comm", "pid", "cpu", "t", "name", "rest")

    def __init__(self, comm, pid, cpu, t, name, rest):
        self.comm, self.pid, self.cpu, self.t, self.name, self.rest = comm, pid, cpu, t, name, rest


KEPT = ("sched_switch", "sched_waking", "sched_wakeup", "sched_wakeup_new", "softirq_entry", "softirq_exit")
KEPT_CALLS = ("NR %d " % NR_SCHED_YIELD, "NR %d " % NR_FUTEX)


def parse(lines):
    """The events this report reads, in order: other events and lines that
    are not events are dropped as they are read (a full trace holds
    millions of system-call entries)."""
    out = []
    for line in lines:
        m = LINE.match(line)
        if not m:
            continue
        name, rest = m[5], m[6]
        if name in KEPT or (name == "sys_enter" and rest.startswith(KEPT_CALLS)):
            out.append(Event(m[1], int(m[2]), int(m[3]), float(m[4]), name, rest))
    return out


def is_net_rx(e):
    return e.rest.endswith("[action=NET_RX]")


def loop_window(events):
    """(start, end, count) of the longest run of NET_RX entries with no gap
    over LOOP_GAP_S; None when the trace has none."""
    ts = [e.t for e in events if e.name == "softirq_entry" and is_net_rx(e)]
    if not ts:
        return None
    best, start = (0, 0, 0), 0
    for i in range(1, len(ts) + 1):
        if i == len(ts) or ts[i] - ts[i - 1] > LOOP_GAP_S:
            if i - start > best[0]:
                best = (i - start, start, i - 1)
            start = i
    n, a, b = best
    return ts[a], ts[b], n


def net_rx_us(events, a, b):
    """Median NET_RX softirq length per CPU within [a, b], in us."""
    entered, lengths = {}, collections.defaultdict(list)
    for e in events:
        if not a <= e.t <= b or not is_net_rx(e):
            continue
        if e.name == "softirq_entry":
            entered[e.cpu] = e.t
        elif e.name == "softirq_exit" and e.cpu in entered:
            lengths[e.cpu].append(e.t - entered.pop(e.cpu))
    return {cpu: statistics.median(v) * 1e6 for cpu, v in sorted(lengths.items())}


def calls(events, a, b):
    """sched_yield and futex calls within [a, b], by thread name."""
    n = collections.Counter()
    for e in events:
        if a <= e.t <= b and e.name == "sys_enter":
            nr = e.rest.split()[1] if e.rest.startswith("NR ") else ""
            if nr == str(NR_SCHED_YIELD):
                n[(e.comm, "sched_yield")] += 1
            elif nr == str(NR_FUTEX):
                n[(e.comm, "futex")] += 1
    return n


def waits(events, a, b, min_s):
    """Waits longer than min_s, within [a, b], of benchmark threads for a
    CPU: (start, seconds, cpu, thread, cause), longest first."""
    pending, out = {}, []
    for e in events:
        if not a <= e.t <= b:
            continue
        if e.name == "sched_waking":  # in the waker's context: who woke it
            m = WAKEUP.search(e.rest)
            if m:
                pending[int(m[2])] = (e.t, "woken by %s on cpu %d" % (e.comm, e.cpu))
        elif e.name in ("sched_wakeup", "sched_wakeup_new"):  # a trace without sched_waking
            m = WAKEUP.search(e.rest)
            if m:
                pending.setdefault(int(m[2]), (e.t, "woken by %s on cpu %d" % (e.comm, e.cpu)))
        elif e.name == "sched_switch":
            m = SWITCH.search(e.rest)
            if not m:
                continue
            prev, prev_pid, state, nxt, next_pid = m[1], int(m[2]), m[3], m[4], int(m[5])
            if state.startswith("R"):  # preempted, still runnable
                pending[prev_pid] = (e.t, "preempted by " + nxt)
            if next_pid in pending:
                t0, cause = pending.pop(next_pid)
                if e.t - t0 > min_s and nxt.startswith(BENCH_PREFIX):
                    out.append((t0, e.t - t0, e.cpu, "%s/%d" % (nxt, next_pid), cause))
    out.sort(key=lambda w: -w[1])
    return out


def open_text(path):
    return gzip.open(path, "rt", errors="replace") if path.endswith(".gz") else open(path, errors="replace")


def run_figures(json_path):
    """(average, p50, p99.9, sizes) of the first size in a bench JSON (a
    figure the bench left empty is None), or None."""
    try:
        with open(json_path) as f:
            rows = json.load(f)["tables"][0]["rows"]
        return rows[0][1], rows[0][2], rows[0][4], len(rows)
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None


def lost_events(stats_path):
    """Events the trace buffers lost (sum of the CPUs' overrun), or 0."""
    try:
        with open(stats_path) as f:
            return sum(int(line.split(":")[-1]) for line in f if "overrun" in line)
    except (OSError, ValueError):
        return 0


def cell(v, fmt):
    return "-" if v is None else fmt % v


def run_key(path):
    m = re.match(r"r(\d+)-lat-(.+)\.trace(\.gz)?$", os.path.basename(path))
    return (m[2], int(m[1])) if m else (os.path.basename(path), 0)


def report(rawdir, wait_us, max_waits, out):
    traces = sorted((p for ext in (".trace", ".trace.gz") for p in glob.glob(os.path.join(rawdir, "raw", "r*-lat-*" + ext))),
                    key=run_key)
    if not traces:
        print("sched_trace: error: no traces in %s/raw (run compare.sh with --trace)" % rawdir, file=sys.stderr)
        return 2
    print("| run | average | p50 | p99.9 | NET_RX us per vCPU | sched_yield / futex | waits > %d us |" % wait_us,
          file=out)
    print("| --- | ---: | ---: | ---: | --- | --- | ---: |", file=out)
    details = []
    for path in traces:
        tool, rep = run_key(path)
        with open_text(path) as f:
            events = parse(f)
        win = loop_window(events)
        base = re.sub(r"\.trace(\.gz)?$", "", path)
        fig = run_figures(base + ".json")
        figs = [cell(fig[0], "%.1f"), cell(fig[1], "%.1f"), cell(fig[2], "%.0f")] if fig else ["-", "-", "-"]
        name = "%s r%d" % (tool, rep)
        if fig and fig[3] > 1:
            name += " (%d sizes)" % fig[3]
        lost = lost_events(base + ".trace.stats")
        if lost:
            name += " (%d events lost)" % lost
        if win is None:
            print("| %s | %s | no NET_RX in the trace | | |" % (name, " | ".join(figs)), file=out)
            continue
        a, b, _ = win
        rx = net_rx_us(events, a, b)
        n = calls(events, a, b)
        by_kind = collections.Counter()
        for (_, kind), v in n.items():
            by_kind[kind] += v
        w = waits(events, a, b, wait_us / 1e6)
        print("| %s | %s | %s | %d / %d | %d |" % (
            name, " | ".join(figs), " ".join("%d:%.0f" % kv for kv in rx.items()),
            by_kind["sched_yield"], by_kind["futex"], len(w)), file=out)
        if w or n:
            details.append((tool, rep, a, b, n, w))
    for tool, rep, a, b, n, w in details:
        print("\n%s r%d: loop %.1f ms" % (tool, rep, (b - a) * 1e3), file=out)
        for (comm, kind), v in sorted(n.items()):
            print("  %s: %d %s" % (comm, v, kind), file=out)
        for t0, secs, cpu, who, cause in w[:max_waits]:
            print("  +%.1f ms cpu %d: %s waited %.0f us (%s)" % ((t0 - a) * 1e3, cpu, who, secs * 1e6, cause),
                  file=out)
        if len(w) > max_waits:
            print("  (%d more)" % (len(w) - max_waits), file=out)
    return 0


def main(argv):
    args, wait_us, max_waits = [], 500, 8
    it = iter(argv)
    for arg in it:
        if arg in ("--wait-us", "--waits"):
            val = next(it, None)
            if val is None or not val.isdigit() or int(val) <= 0:
                print("sched_trace: error: %s wants a positive integer, got %r" % (arg, val), file=sys.stderr)
                return 2
            if arg == "--wait-us":
                wait_us = int(val)
            else:
                max_waits = int(val)
        elif arg in ("-h", "--help"):
            print(__doc__)
            return 0
        elif arg.startswith("-"):
            print("sched_trace: error: unknown option %r (see --help)" % arg, file=sys.stderr)
            return 2
        else:
            args.append(arg)
    if len(args) != 1 or not os.path.isdir(args[0]):
        print("sched_trace: error: give one raw directory (see --help)", file=sys.stderr)
        return 2
    return report(args[0], wait_us, max_waits, sys.stdout)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
