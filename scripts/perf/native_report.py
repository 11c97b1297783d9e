#!/usr/bin/env python3
"""Aggregate the runs of scripts/perf/native.sh into the shared-memory table.

Usage (by native.sh): native_report.py RAWDIR [--out FILE|-] [--command CMD] [--check]

Reads RAWDIR/runs.tsv, RAWDIR/host.env, RAWDIR/config.env and each run's JSON
(rdmx-bench, rdmx-bench-mpi, rdmx-micro), prints a markdown report (medians
over the reps, ratios of medians, the targets) and, unless --out is '-',
replaces the block between <!-- perf-native:begin --> and
<!-- perf-native:end --> in FILE with it. Python standard library only.

Exit status: 0 report written; 1 with --check when a target is missed or not
measurable; 125 nothing was measured (FILE is left alone).
"""

import argparse
import json
import os
import re
import sys

from report import fmt_size, median, parse_bench_json, read_env, replace_block, short

BEGIN = "<!-- perf-native:begin -->"
END = "<!-- perf-native:end -->"

MPIS = ("vader_cma", "vader_copy", "ucx")  # the references rdmx is judged against
TOOLS = ("rdmx",) + MPIS
NAMES = {
    "rdmx": "rdmx sm",
    "vader_cma": "vader CMA",
    "vader_copy": "vader no single copy",
    "ucx": "UCX posix+cma",
    "memcpy": "memcpy (1 core)",
}
# The targets: metric -> (needed ratio rdmx / best of the MPIs, op).
LAT_BOUND = 1.0  # 8 B latency no worse than the best
BW_BOUND = 1.0  # bandwidth at least the best
MR_BOUND = 1.2  # 8 B message rate at least 1.2 x the best
GB = 1e3  # rdmx-bench prints MB/s (10^6 B/s); the tables show GB/s
# rdmx's log prefix, "[rdmx HOST:RANK:PID SECONDS.MICROS] " (older runs: "[rdmx RANK:PID] ")
LOG_LINE = re.compile(r"^\[rdmx [^\]]*\] ((?:WARN|ERROR|NOTICE): .*)$")
PID = re.compile(r"pid [0-9]+")


class Results:
    def __init__(self, rawdir):
        self.rawdir = rawdir
        self.cfg = read_env(os.path.join(rawdir, "config.env"))
        self.host = read_env(os.path.join(rawdir, "host.env"))
        self.reps = int(self.cfg.get("PERF_REPS", "1"))
        self.vals = {}  # metric -> tool -> size -> rep -> value
        self.runs = []
        self.version = ""
        self.notices = {}  # rdmx log line -> number of rdmx runs that printed it

    def put(self, metric, tool, size, rep, v):
        self.vals.setdefault(metric, {}).setdefault(tool, {}).setdefault(size, {})[rep] = v

    def get(self, metric, tool, size):
        return self.vals.get(metric, {}).get(tool, {}).get(size, {})

    def med(self, metric, tool, size):
        return median(self.get(metric, tool, size).values())

    def load(self):
        try:
            with open(os.path.join(self.rawdir, "runs.tsv"), encoding="utf-8", errors="replace") as f:
                lines = f.read().splitlines()
        except OSError:
            lines = []
        for line in lines:
            p = line.split("\t")
            if len(p) < 7:
                continue
            p += [""] * (8 - len(p))
            rep, metric, tool, status, rc, secs, fpath, note = p[:8]
            run = dict(rep=int(rep), metric=metric, tool=tool, status=status, rc=rc,
                       secs=int(secs or 0), file=fpath, note=note)
            self.runs.append(run)
            if status == "ok" and not self.parse(run):
                run["status"] = "failed"
                run["note"] = "no result in the output"
            if tool == "rdmx":
                self.scan_notices(fpath[: -len(".json")] + ".txt")

    def parse(self, run):
        if run["tool"] == "memcpy":
            return self.parse_memcpy(run)
        rows, doc = parse_bench_json(run["file"])
        if not rows:
            return False
        if run["tool"] == "rdmx" and doc:
            self.version = doc.get("backend_version", "") or self.version
        for size, tail in rows.items():
            if not tail or tail[0] is None:
                continue
            if run["metric"] == "mr":
                if len(tail) < 2 or tail[1] is None:
                    continue
                self.put("mr", run["tool"], size, run["rep"], float(tail[1]))
            else:
                self.put(run["metric"], run["tool"], size, run["rep"], float(tail[0]))
        return True

    def parse_memcpy(self, run):
        """Google Benchmark's JSON: Memcpy/S with bytes_per_second."""
        try:
            with open(run["file"], encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError):
            return False
        got = False
        for b in doc.get("benchmarks") or []:
            name, bps = b.get("name", ""), b.get("bytes_per_second")
            if not name.startswith("Memcpy/") or bps is None or b.get("error_occurred"):
                continue
            self.put("bw", "memcpy", int(name.split("/")[1]), run["rep"], float(bps) / 1e6)
            got = True
        return got

    def scan_notices(self, path):
        """rdmx's warnings and errors (e.g. the sm transport's CMA fallback),
        without the rank and pid that differ from run to run: message -> runs."""
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            return
        seen = set()
        for line in text.splitlines():
            m = LOG_LINE.match(line.strip())
            if m:
                seen.add(short(PID.sub("pid N", m.group(1)), 200))
        for msg in seen:
            self.notices[msg] = self.notices.get(msg, 0) + 1


def fmt(v, metric):
    if v is None:
        return "-"
    if metric == "lat":
        return f"{v:.3f}" if v < 1 else f"{v:.2f}"
    if metric == "mr":
        return f"{v / 1e6:.2f}"
    return f"{v / GB:.1f}" if v < 10 * GB else f"{v / GB:.0f}"


class Report:
    def __init__(self, res, command):
        self.r = res
        self.command = command
        self.lines = []
        self.targets = []

    def out(self, s=""):
        self.lines.append(s)

    def best(self, metric, size):
        """(tool, median) of the best MPI at size: lowest latency, highest rate."""
        cand = [(t, self.r.med(metric, t, size)) for t in MPIS]
        cand = [c for c in cand if c[1] is not None]
        if not cand:
            return None, None
        pick = min if metric == "lat" else max
        return pick(cand, key=lambda c: c[1])

    def cell(self, metric, tool, size):
        per = self.r.get(metric, tool, size)
        if not per:
            fails = [x for x in self.r.runs if x["metric"] == metric and x["tool"] == tool and x["status"] != "ok"]
            return f"failed ({short(fails[0]['note'], 50)})" if fails else "-"
        s = fmt(median(per.values()), metric)
        if len(per) < self.r.reps:
            s += f" ({len(per)}/{self.r.reps} reps)"
        return s

    def target(self, label, metric, size, bound):
        mine = self.r.med(metric, "rdmx", size)
        tool, theirs = self.best(metric, size)
        need = f"<= {bound:.2f}" if metric == "lat" else f">= {bound:.2f}"
        if mine is None or theirs is None:
            self.targets.append((label, self.cell(metric, "rdmx", size), "-", "-", need, "NOT MEASURED"))
            return
        q = mine / theirs
        ok = q <= bound if metric == "lat" else q >= bound
        self.targets.append((label, fmt(mine, metric), f"{fmt(theirs, metric)} ({NAMES[tool]})", f"{q:.2f}", need,
                             "MET" if ok else "MISSED"))

    def header(self):
        r, h, c = self.r, self.r.host, self.r.cfg
        mem = h.get("mem_kb", "")
        mem_s = f"{int(mem) / 1048576:.1f} GiB" if mem.isdigit() else "?"
        self.out(f"_Generated by `{self.command}` on {h.get('date', '?')}._")
        self.out()
        self.out(f"- **Host**: {h.get('cpu', '?')}, {h.get('cpus', '?')} CPUs, {mem_s}, kernel {h.get('kernel', '?')} "
                 f"(Yama ptrace_scope: {h.get('ptrace_scope', '?')}). Shared with other work: load average "
                 f"{h.get('load_start', '?')} at the start, {h.get('load_end', '?')} at the end.")
        self.out(f"- **Software**: Open MPI {h.get('ompi', '?')}, UCX {h.get('ucx', '?')}, {r.version or 'rdmx ?'} "
                 f"(commit {h.get('rdmx_commit', '?')}).")
        self.out("- **Jobs**: `mpirun --bind-to core --map-by core -np 2` (one rank per core), plus: rdmx sm `"
                 f"{h.get('launch_rdmx', '?')}`; vader CMA `{h.get('launch_vader_cma', '?')}`; vader no single copy "
                 f"`{h.get('launch_vader_copy', '?')}`; UCX `{h.get('launch_ucx', '?')}`. memcpy: `taskset -c "
                 f"{c.get('PERF_MEMCPY_CORE', '0')} rdmx-micro --benchmark_filter=Memcpy/S "
                 f"--benchmark_min_time={c.get('PERF_MEMCPY_MIN_TIME')}`.")
        self.out(f"- **Counts**: `latency --iters {c.get('PERF_LAT_ITERS')} --warmup {c.get('PERF_LAT_WARMUP')}`, "
                 f"`bw --window {c.get('PERF_BW_WINDOW')} --iters {c.get('PERF_BW_ITERS')} --warmup "
                 f"{c.get('PERF_BW_WARMUP')}`, `mr --window {c.get('PERF_MR_WINDOW')} --iters {c.get('PERF_MR_ITERS')} "
                 f"--warmup {c.get('PERF_MR_WARMUP')}` (rdmx-bench and rdmx-bench-mpi alike).")
        self.out(f"- **Reps**: {r.reps}, interleaved (each rep runs every metric as rdmx, vader CMA, vader no single "
                 f"copy, UCX, then memcpy); medians over reps, ratios of medians. Measuring took "
                 f"{h.get('elapsed', '?')} s.")
        nruns = sum(1 for x in r.runs if x["tool"] == "rdmx")
        for n in sorted(r.notices):
            self.out(f"- **rdmx logged** (in {r.notices[n]} of {nruns} rdmx runs): `{n}`")
        self.out()

    def targets_table(self):
        lat, mr = int(self.r.cfg.get("PERF_LAT_SIZE", "8")), int(self.r.cfg.get("PERF_MR_SIZE", "8"))
        self.target(f"{fmt_size(lat)} latency <= best MPI", "lat", lat, LAT_BOUND)
        for size in self.bw_sizes():
            self.target(f"{fmt_size(size)} bandwidth >= best MPI", "bw", size, BW_BOUND)
        self.target(f"{fmt_size(mr)} message rate >= {MR_BOUND} x best MPI", "mr", mr, MR_BOUND)
        self.out("#### Targets")
        self.out()
        self.out("| target | rdmx sm | best MPI | rdmx / best | needed | result |")
        self.out("| --- | ---: | ---: | ---: | ---: | :---: |")
        for t in self.targets:
            self.out("| " + " | ".join(t[:5]) + f" | **{t[5]}** |")
        self.out()

    def bw_sizes(self):
        return [int(s) for s in self.r.cfg.get("PERF_BW_SIZES", "").split()]

    def main_table(self):
        lat, mr = int(self.r.cfg.get("PERF_LAT_SIZE", "8")), int(self.r.cfg.get("PERF_MR_SIZE", "8"))
        self.out("#### Medians")
        self.out()
        self.out("Latency in us (half the round trip; lower is better), bandwidth in GB/s (10^9 B/s) with its "
                 "ratio to one core's memcpy of the same size in parentheses, message rate in millions of "
                 "messages/s. rdmx / best: rdmx's median over the best of the three MPI medians.")
        self.out()
        self.out("| metric | " + " | ".join(NAMES[t] for t in TOOLS) + " | memcpy (1 core) | rdmx / best MPI |")
        self.out("| --- | " + " | ".join("---:" for _ in TOOLS) + " | ---: | ---: |")
        rows = [("lat", lat, f"{fmt_size(lat)} latency (us)")]
        rows += [("bw", s, f"{fmt_size(s)} bandwidth (GB/s)") for s in self.bw_sizes()]
        rows.append(("mr", mr, f"{fmt_size(mr)} message rate (M/s)"))
        for metric, size, label in rows:
            limit = self.r.med("bw", "memcpy", size) if metric == "bw" else None
            cells = []
            for t in TOOLS:
                s = self.cell(metric, t, size)
                v = self.r.med(metric, t, size)
                if limit and v is not None:
                    s += f" ({v / limit:.2f})"
                cells.append(s)
            cells.append(self.cell("bw", "memcpy", size) if metric == "bw" else "")
            _, theirs = self.best(metric, size)
            mine = self.r.med(metric, "rdmx", size)
            cells.append(f"{mine / theirs:.2f}" if mine is not None and theirs else "-")
            self.out(f"| {label} | " + " | ".join(cells) + " |")
        self.out()

    def per_rep(self):
        r = self.r
        lat, mr = int(r.cfg.get("PERF_LAT_SIZE", "8")), int(r.cfg.get("PERF_MR_SIZE", "8"))
        self.out("#### Every rep (the spread is the noise)")
        self.out()
        self.out("| metric | " + " | ".join(NAMES[t] for t in TOOLS + ("memcpy",)) + " |")
        self.out("| --- | " + " | ".join("---:" for _ in TOOLS + ("memcpy",)) + " |")
        rows = [("lat", lat)] + [("bw", s) for s in self.bw_sizes()] + [("mr", mr)]
        for metric, size in rows:
            cells = []
            for t in TOOLS + ("memcpy",):
                per = r.get(metric, t, size)
                cells.append(" / ".join(fmt(per.get(i), metric) for i in range(1, r.reps + 1)) if per else "")
            self.out(f"| {metric} {fmt_size(size)} | " + " | ".join(cells) + " |")
        self.out()
        ok = sum(1 for x in r.runs if x["status"] == "ok")
        self.out(f"{ok} of {len(r.runs)} runs succeeded, {sum(x['secs'] for x in r.runs)} s in all.")
        fails = [x for x in r.runs if x["status"] != "ok"]
        for x in fails[:20]:
            self.out(f"- rep {x['rep']} {x['metric']} {NAMES.get(x['tool'], x['tool'])}: {x['status']} "
                     f"({short(x['note'] or 'no result', 200)})")
        self.out()

    def build(self):
        self.out(BEGIN)
        self.header()
        self.targets_table()
        self.main_table()
        self.per_rep()
        self.out(END)

    def verdict_ok(self):
        return all(t[5] == "MET" for t in self.targets)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rawdir")
    ap.add_argument("--out", default="-")
    ap.add_argument("--command", default="scripts/perf/native.sh")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()

    res = Results(a.rawdir)
    res.load()
    if not any(x["status"] == "ok" for x in res.runs):
        print(f"perf-native: nothing was measured; see {os.path.join(a.rawdir, 'raw')}", file=sys.stderr)
        for x in res.runs[:10]:
            print(f"perf-native:   rep {x['rep']} {x['metric']} {x['tool']}: {x['status']} ({x['note']})",
                  file=sys.stderr)
        return 125
    rep = Report(res, a.command)
    rep.build()
    block = "\n".join(rep.lines)
    print(block)
    if a.out != "-":
        replace_block(a.out, block, BEGIN, END)
        print(f"perf-native: wrote the report into {a.out}", file=sys.stderr)
    if a.check and not rep.verdict_ok():
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
