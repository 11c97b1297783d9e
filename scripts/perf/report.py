#!/usr/bin/env python3
"""Aggregate the runs of scripts/perf/guest.sh into the comparison tables.

Usage (by compare.sh): report.py RAWDIR [--out FILE|-] [--command CMD]
                                        [--bed-status N] [--check]

Reads RAWDIR/runs.tsv, RAWDIR/meta.env, RAWDIR/config.env and the raw outputs
under RAWDIR/raw, prints a markdown report (medians per size, ratios, targets,
8 B latency percentiles and the spread of the 8 B latency over the reps) and,
unless --out is '-', replaces the block between <!-- perf:begin --> and
<!-- perf:end --> in FILE with it. rdmx is one contender per progress mode
(tools rdmx-caller, rdmx-thread; "rdmx" in raw directories of older runs).
Python standard library only.

Exit status: 0 report written; 1 with --check when a target is missed or not
measurable; 125 nothing was measured (FILE is left alone).
"""

import argparse
import datetime
import json
import math
import os
import re
import shlex
import statistics
import sys

BEGIN = "<!-- perf:begin -->"
END = "<!-- perf:end -->"
MIB = 1048576.0  # perftest's "MB" (format_factor 0x100000); rdmx-bench's MB is 10^6

REFERENCES = ("perftest", "ompi")
TOOL_NAMES = {"perftest": "perftest", "ompi": "Open MPI", "rdmx": "rdmx"}

# The targets (issue 17's for latency and message rate), judged for each
# rdmx progress mode on the ratio of the medians.
LAT_PT_BOUND = 1.05   # 8 B latency at most 1.05 x ib_send_lat's
LAT_OMPI_BOUND = 0.9  # ... and at most 0.9 x Open MPI's
BW_PT_BOUND = 0.9     # 1 and 4 MiB bandwidth at least 0.9 x max(ib_write_bw, ib_read_bw)
BW_OMPI_BOUND = 1.0   # ... and at least Open MPI's
MR_OMPI_BOUND = 1.2   # 8 B message rate (window 64) at least 1.2 x Open MPI's

# Latency percentiles: report.py's series, rdmx-bench's JSON column, ib_send_lat's field.
PERCENTILES = (("p50", "P50(us)", "t_typical"), ("p99", "P99(us)", "99%"), ("p999", "P99.9(us)", "99.9%"))
PCT_LABEL = {"p50": "p50", "p99": "p99", "p999": "p99.9"}
OSU_LAT_ITERS = ((8192, 10000), (None, 1000))  # rdmx-bench's latency counts: up to 8 KiB, above


def tool_name(tool):
    """perftest, Open MPI, rdmx, rdmx caller, rdmx thread, ..."""
    if tool in TOOL_NAMES:
        return TOOL_NAMES[tool]
    if tool.startswith("rdmx-"):
        return "rdmx " + tool[len("rdmx-"):]
    return tool


# ------------------------------------------------------------------ input ---
def read_env(path):
    """KEY=VALUE lines (shell quoting allowed) into a dict."""
    env = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                if not line or line.startswith("#") or "=" not in line:
                    continue
                # "dev0=rxe0 gid0=1 addr0=..." holds several pairs on one line
                for tok in shlex.split(line):
                    if "=" in tok:
                        k, v = tok.split("=", 1)
                        env[k] = v
    except OSError:
        pass
    return env


def snap_size(x):
    """rdmx-bench prints sizes with 6 significant digits (1.04858e+06):
    snap them back to the power of two they came from."""
    x = float(x)
    if x <= 0:
        return 0
    p = round(math.log2(x))
    if abs(2 ** p - x) / x < 1e-4:
        return int(2 ** p)
    return int(round(x))


def read_text(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def to_float(tok):
    try:
        return float(tok)  # accepts "-nan" (t_stdev on a noisy run)
    except ValueError:
        return None


def result_row(text, header_word, ncols):
    """The fields of the first line after the header holding header_word whose
    first ncols fields are numbers (later fields: a number or None)."""
    seen_header = False
    for line in text.splitlines():
        if header_word in line:
            seen_header = True
            continue
        if seen_header:
            tok = line.split()
            if len(tok) >= ncols and tok[0].isdigit() and tok[1].isdigit():
                vals = [to_float(t) for t in tok]
                if all(v is not None for v in vals[:ncols]):
                    return vals
    return None


def parse_perftest_lat(text):
    """{"avg", "t_typical", "99%", "99.9%"} in us (half the round trip) from
    ib_send_lat's result line:
    bytes iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%."""
    row = result_row(text, "t_avg", 6)
    if not row:
        return None
    got = {"avg": row[5], "t_typical": row[4]}
    for i, key in ((7, "99%"), (8, "99.9%")):
        if len(row) > i and row[i] is not None:
            got[key] = row[i]
    return got


def parse_perftest_bw(text):
    """(MB/s in 10^6 B/s, messages/s) from ib_*_bw's result line:
    bytes iterations BW-peak BW-average MsgRate[Mpps] (BW in 2^20 B/s)."""
    row = result_row(text, "BW average", 5)
    return (row[3] * MIB / 1e6, row[4] * 1e6) if row else None


def parse_bench_json(path):
    """{size: {column: value}} from rdmx-bench(-mpi)'s first table (columns
    after Size, by name; a null cell is left out)."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None, None
    tables = doc.get("tables") or []
    if not tables:
        return None, doc
    columns = tables[0].get("columns") or []
    rows = {}
    for row in tables[0].get("rows") or []:
        if not row or row[0] is None:
            continue
        rows[snap_size(row[0])] = {c: float(v) for c, v in zip(columns[1:], row[1:]) if v is not None}
    return rows, doc


# The column each metric's value comes from in rdmx-bench's table.
BENCH_COLUMN = {"lat": "Latency(us)", "bw": "Bandwidth(MB/s)", "mr": "Messages/s"}


def bench_lat_iters(cfg, size):
    """Iterations rdmx-bench(-mpi) timed at size, from OSU's counts and the scale."""
    try:
        scale = float(cfg.get("PERF_LAT_SCALE", ""))
    except ValueError:
        return None
    for top, base in OSU_LAT_ITERS:
        if top is None or size <= top:
            return max(1, int(math.floor(base * scale + 0.5)))
    return None


class Results:
    def __init__(self, rawdir):
        self.rawdir = rawdir
        self.cfg = read_env(os.path.join(rawdir, "config.env"))
        self.meta = read_env(os.path.join(rawdir, "meta.env"))
        self.host = read_env(os.path.join(rawdir, "host.env"))
        self.reps = int(self.cfg.get("PERF_REPS", "0") or 0)
        # rdmx's contenders, one per progress mode, in the order they ran
        modes = self.cfg.get("PERF_RDMX_PROGRESS")
        self.rdmx_tools = ["rdmx-" + m for m in modes.split()] if modes is not None else ["rdmx"]
        # vals[metric][series][size][rep] = value
        self.vals = {}
        # problems[(metric, tool)] = [(rep, key, status, note)]
        self.problems = {}
        self.runs = []
        self.version = {}
        self.ok_runs = 0

    def put(self, metric, series, size, rep, value):
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return
        self.vals.setdefault(metric, {}).setdefault(series, {}).setdefault(size, {})[rep] = value

    def get(self, metric, series, size):
        return self.vals.get(metric, {}).get(series, {}).get(size, {})

    def sizes(self, metric):
        s = set()
        for series in self.vals.get(metric, {}).values():
            s.update(series.keys())
        return sorted(s)

    def problem(self, metric, tool, rep, key, status, note):
        self.problems.setdefault((metric, tool), []).append((rep, key, status, note))

    def load(self):
        path = os.path.join(self.rawdir, "runs.tsv")
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                lines = f.read().splitlines()
        except OSError:
            lines = []
        for line in lines:
            p = line.split("\t")
            if len(p) < 10:
                continue
            p += [""] * (11 - len(p))
            rep, metric, tool, key, status, rc, secs, d0, d1, fpath, note = p[:11]
            rep = int(rep)
            if tool not in REFERENCES and tool not in self.rdmx_tools:
                self.rdmx_tools.append(tool)
            run = dict(rep=rep, metric=metric, tool=tool, key=key, status=status, rc=rc,
                       secs=int(secs or 0), d0=d0, d1=d1, file=fpath, note=note)
            self.runs.append(run)
            if status != "ok":
                self.problem(metric, tool, rep, key, status, note or status)
                continue
            got = self.parse_run(run)
            if got:
                self.ok_runs += 1
            else:
                run["status"] = "failed"
                self.problem(metric, tool, rep, key, "failed", "no result in the output")

    def parse_run(self, run):
        metric, tool, rep, key = run["metric"], run["tool"], run["rep"], run["key"]
        if tool == "perftest":
            text = read_text(run["file"])
            if metric == "lat":
                r = parse_perftest_lat(text)
                if not r:
                    return False
                size = int(key)
                self.put("lat", "perftest", size, rep, r["avg"])
                self.put("lat", "perftest_typical", size, rep, r["t_typical"])
                for series, _, field in PERCENTILES:
                    self.put("lat_" + series, "perftest", size, rep, r.get(field))
                return True
            r = parse_perftest_bw(text)
            if not r:
                return False
            verb, size = key.split("-", 1)
            size = int(size)
            if metric == "bw":
                self.put("bw", "pt_" + verb, size, rep, r[0])
            else:
                self.put("mr", "perftest", size, rep, r[1])
                self.put("mr", "perftest_mbs", size, rep, r[0])
            return True
        rows, doc = parse_bench_json(run["file"])
        if not rows:
            return False
        if doc:
            self.version[tool] = doc.get("backend_version", "")
        for size, cols in rows.items():
            self.put(metric, tool, size, rep, cols.get(BENCH_COLUMN.get(metric, "")))
            if metric == "mr":
                self.put("mr", tool + "_mbs", size, rep, cols.get("MB/s"))
            if metric == "lat":
                for series, column, _ in PERCENTILES:
                    self.put("lat_" + series, tool, size, rep, cols.get(column))
        return True

    def tools(self):
        return list(REFERENCES) + self.rdmx_tools

    def derive(self):
        """perftest bandwidth reference = max(write, read) in each rep."""
        bw = self.vals.get("bw", {})
        sizes = set(bw.get("pt_write", {})) | set(bw.get("pt_read", {}))
        for size in sizes:
            w = bw.get("pt_write", {}).get(size, {})
            r = bw.get("pt_read", {}).get(size, {})
            for rep in set(w) | set(r):
                self.put("bw", "perftest", size, rep, max(v for v in (w.get(rep), r.get(rep)) if v is not None))


# ------------------------------------------------------------ formatting ---
def fmt_size(n):
    for unit, f in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f and n % f == 0:
            return f"{n // f} {unit}"
    return f"{n} B"


def fmt_val(v, metric):
    if v is None:
        return "-"
    if metric == "mr":
        return f"{v:,.0f}"
    if v >= 100:
        return f"{v:.0f}"
    return f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


# A rep whose median iteration is this much slower than the contender's best
# rep in the boot spent its whole run in the slow state, not in a tail.
SLOW_REP = 1.5


def spread_of(values):
    """(count, median, min, max, max/min) of the values, or None."""
    xs = [x for x in values if x is not None]
    if not xs:
        return None
    lo, hi = min(xs), max(xs)
    return (len(xs), statistics.median(xs), lo, hi, hi / lo if lo > 0 else float("inf"))


def short(note, n=70):
    note = " ".join(str(note).split())
    return note if len(note) <= n else note[: n - 3] + "..."


class Report:
    def __init__(self, res, command, bed_status):
        self.r = res
        self.command = command
        self.bed_status = bed_status
        self.lines = []
        self.targets = []

    def out(self, s=""):
        self.lines.append(s)

    # A failed or missing cell: the reason of the run that should have filled it.
    def why_missing(self, metric, tool, size):
        probs = self.r.problems.get((metric, tool), [])
        if tool == "perftest":
            probs = [p for p in probs if p[1].split("-")[-1] == str(size)]
        if not probs:
            return "-"
        statuses = {p[2] for p in probs}
        if statuses == {"skipped"}:
            return "skipped (time budget)"
        note = next((p[3] for p in probs if p[2] != "skipped"), probs[0][3])
        return f"failed ({short(note, 60)})"

    def cell(self, metric, series, size, tool=None):
        per_rep = self.r.get(metric, series, size)
        if not per_rep:
            return self.why_missing(metric.split("_")[0], tool or series, size), None
        m = median(per_rep.values())
        s = fmt_val(m, metric)
        if len(per_rep) < self.r.reps:
            s += f" ({len(per_rep)}/{self.r.reps} reps)"
        return s, m

    def ratio(self, metric, size, ref, tool):
        """tool's median over ref's median (each over the reps it has)."""
        a = median(self.r.get(metric, tool, size).values())
        b = median(self.r.get(metric, ref, size).values())
        return a / b if a is not None and b else None

    def table(self, metric, title, unit_note, ref_label="perftest"):
        r = self.r
        self.out(f"### {title}")
        self.out()
        if unit_note:
            self.out(unit_note)
            self.out()
        heads = [ref_label, "Open MPI"] + [tool_name(t) for t in r.rdmx_tools]
        heads += [f"{tool_name(t)} / {ref}" for t in r.rdmx_tools for ref in ("perftest", "Open MPI")]
        self.out("| size | " + " | ".join(heads) + " |")
        self.out("| ---: |" + " ---: |" * len(heads))
        for size in r.sizes(metric):
            cells = [fmt_size(size)]
            for tool in r.tools():
                # perftest runs at fewer sizes than the rdmx-bench sweep
                if tool == "perftest" and not r.get(metric, tool, size) and not self.planned_pt(metric, size):
                    cells.append("")
                    continue
                cells.append(self.cell(metric, tool, size)[0])
            for tool in r.rdmx_tools:
                for ref in REFERENCES:
                    q = self.ratio(metric, size, ref, tool)
                    cells.append("" if q is None else f"{q:.2f}")
            self.out("| " + " | ".join(cells) + " |")
        self.out()

    def planned_pt(self, metric, size):
        key = {"lat": "PERF_LAT_SIZES", "bw": "PERF_BW_SIZES", "mr": "PERF_MR_SIZE"}[metric]
        return str(size) in self.r.cfg.get(key, "").split()

    def target(self, label, metric, size, ref, op, bound, tool):
        q = self.ratio(metric, size, ref, tool)
        mine = self.cell(metric, tool, size)
        theirs = self.cell(metric, ref, size)
        if q is None:
            missing = mine[0] if mine[1] is None else theirs[0]
            verdict = "NOT MEASURED"
            detail = missing
        else:
            ok = q <= bound if op == "<=" else q >= bound
            verdict = "MET" if ok else "MISSED"
            detail = f"{q:.2f}"
        self.targets.append((f"{label} ({tool_name(tool)})", mine[0], theirs[0], f"{op} {bound:.2f}", detail, verdict))

    def build(self):
        r = self.r
        meta, cfg, host = r.meta, r.cfg, r.host
        date = host.get("date") or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        self.out(BEGIN)
        self.out(f"_Generated by `{self.command}` on {date}._")
        self.out()
        # --- set-up
        mem = meta.get("mem_kb")
        mem_s = f"{int(mem) / 1048576:.1f} GiB" if mem and mem.isdigit() else "?"
        where = "qemu guest (TCG)" if meta.get("in_vm") == "1" else "this host (native)" if meta.get("in_vm") == "0" else "?"
        self.out(f"- **Where**: {where}, kernel {meta.get('kernel', '?')}, {meta.get('vcpus', '?')} vCPUs, {mem_s}; "
                 f"host {host.get('host_cpus', '?')} CPUs, load average {host.get('load_start', '?')} at the start, "
                 f"{host.get('load_end', '?')} at the end.")
        for line in (self.bed_line(meta), self.chase_line(meta)):
            if line:
                self.out(line)
        self.out(f"- **Devices**: rank 0 / server on {meta.get('dev0', '?')} ({meta.get('addr0', '?')}), rank 1 / client on "
                 f"{meta.get('dev1', '?')} ({meta.get('addr1', '?')}); active MTU {meta.get('active_mtu', '?')}.")
        self.out(f"- **Software**: perftest {meta.get('perftest', '?')} (package {meta.get('perftest_pkg', '?')}), "
                 f"Open MPI {meta.get('ompi', '?')} with UCX {meta.get('ucx', '?')} (pml ucx, UCX_TLS=rc_v,self), "
                 f"{next((r.version[t] for t in r.rdmx_tools if r.version.get(t)), 'rdmx ?')}.")
        order = ", ".join(["Open MPI"] + [tool_name(t) for t in r.rdmx_tools])
        if "PERF_RDMX_PROGRESS" in cfg:
            order = f"perftest, then {order} in an order rotated by one each rep"
            modes = "; rdmx MODE: `RDMX_PROGRESS=MODE`, `RDMX_TRANSPORTS=rc,self`"
            if cfg.get("PERF_RDMX_ENV"):
                modes += ", " + ", ".join(f"`{kv}`" for kv in cfg["PERF_RDMX_ENV"].split())
        else:
            order, modes = "perftest, " + order, ""
        self.out(f"- **Reps**: {r.reps}, interleaved (each rep runs every metric as {order}{modes}); "
                 f"medians over reps, ratios of medians. Measuring took {meta.get('elapsed', '?')} s.")
        if "PERF_LAT_SCALE" in cfg:
            lat_counts = (f"latency --iters-scale {cfg.get('PERF_LAT_SCALE')} ({bench_lat_iters(cfg, 8)} iterations up to "
                          f"8 KiB, {bench_lat_iters(cfg, 16384)} above)")
        else:
            lat_counts = f"latency --iters {cfg.get('PERF_LAT_ITERS')}"
        self.out(f"- **Counts**: ib_send_lat -n {cfg.get('PERF_LAT_ITERS')}; ib_write_bw/ib_read_bw -n = "
                 f"{int(cfg.get('PERF_PT_BW_BYTES', '0')) >> 20} MiB / size within "
                 f"[{cfg.get('PERF_PT_BW_MIN_ITERS')}, {cfg.get('PERF_PT_BW_MAX_ITERS')}]; ib_send_bw -s {cfg.get('PERF_MR_SIZE')} "
                 f"-n {cfg.get('PERF_PT_MR_ITERS')}; rdmx-bench(-mpi) {lat_counts} "
                 f"--warmup {cfg.get('PERF_LAT_WARMUP')}, bw --window {cfg.get('PERF_BW_WINDOW')} --iters-scale "
                 f"{cfg.get('PERF_BW_SCALE')}, mr --window {cfg.get('PERF_MR_WINDOW')} --iters {cfg.get('PERF_MR_ITERS')} "
                 f"--warmup {cfg.get('PERF_MR_WARMUP')}.")
        if self.bed_status not in ("0", ""):
            self.out(f"- **Test bed exit status {self.bed_status}**: the guest stopped early; missing runs show as failed or skipped.")
        self.out()

        # --- targets, for each rdmx progress mode
        metrics = cfg.get("PERF_METRICS", "lat bw mr").split()
        for tool in r.rdmx_tools:
            if "lat" in metrics:
                self.target(f"8 B latency <= {LAT_PT_BOUND:.2f} x ib_send_lat", "lat", 8, "perftest", "<=",
                            LAT_PT_BOUND, tool)
                self.target(f"8 B latency <= {LAT_OMPI_BOUND:.2f} x Open MPI", "lat", 8, "ompi", "<=", LAT_OMPI_BOUND,
                            tool)
            for size in (1 << 20, 4 << 20) if "bw" in metrics else ():
                self.target(f"{fmt_size(size)} bandwidth >= {BW_PT_BOUND:.2f} x max(ib_write_bw, ib_read_bw)", "bw",
                            size, "perftest", ">=", BW_PT_BOUND, tool)
                self.target(f"{fmt_size(size)} bandwidth >= {BW_OMPI_BOUND:.2f} x Open MPI", "bw", size, "ompi", ">=",
                            BW_OMPI_BOUND, tool)
            if "mr" in metrics:
                self.target(f"8 B message rate >= {MR_OMPI_BOUND:.2f} x Open MPI", "mr", 8, "ompi", ">=",
                            MR_OMPI_BOUND, tool)
        self.out("### Targets")
        self.out()
        self.out("| target | rdmx | reference | rdmx / reference | needed | result |")
        self.out("| --- | ---: | ---: | ---: | ---: | :---: |")
        for label, mine, theirs, need, detail, verdict in self.targets:
            self.out(f"| {label} | {mine} | {theirs} | {detail} | {need} | **{verdict}** |")
        self.out()

        # --- tables
        if "lat" in metrics:
            self.table("lat", "Latency (us, half the round trip; lower is better)",
                       "perftest: `ib_send_lat` t_avg (send/receive ping-pong); Open MPI and rdmx: "
                       "`rdmx-bench(-mpi) latency` (blocking send/receive ping-pong, average).", "ib_send_lat")
            self.percentiles()
            self.spread()
        if "bw" in metrics:
            self.table("bw", "Bandwidth (MB/s = 10^6 B/s; higher is better)",
                       "perftest: the larger of `ib_write_bw` and `ib_read_bw` in each rep (perftest prints 2^20 B/s, "
                       "converted); Open MPI and rdmx: `rdmx-bench(-mpi) bw` (a window of nonblocking sends, then a "
                       "4-byte ack).", "max(write, read)")
        if "mr" in metrics:
            self.table("mr", "Message rate (messages/s; higher is better)",
                       "perftest: `ib_send_bw` (RC send, no ack per window); Open MPI and rdmx: `rdmx-bench(-mpi) mr` "
                       "with one pair.", "ib_send_bw")
        self.detail()
        self.runs_summary()
        self.out(END)

    @staticmethod
    def readings_spread(readings):
        """'A-B ms over N readings: p10, median, p90 (p90/p10)' of a comma list, or None."""
        ms = sorted(x for x in (to_float(t) for t in readings.split(",")) if x is not None and x > 0)
        if not ms:
            return None

        def rank(permille):  # nearest rank, as the latency percentiles
            return ms[max(0, math.ceil(permille * len(ms) / 1000) - 1)]

        lo, hi = rank(100), rank(900)
        return (f"{ms[0]:.1f}-{ms[-1]:.1f} ms over {len(ms)} readings: p10 {lo:.1f}, median {median(ms):.1f}, "
                f"p90 {hi:.1f} (p90/p10 {hi / lo:.2f}; a steady machine gives about 1.0)")

    @classmethod
    def bed_line(cls, meta):
        """How steady the CPUs ran: guest.sh's bed-probe readings, or None."""
        s = cls.readings_spread(meta.get("bed_probe", ""))
        return s and f"- **Bed speed**: `bed-probe` (a fixed loop, each vCPU in turn, before the runs) took {s}."

    @classmethod
    def chase_line(cls, meta):
        """How steady the memory system ran: guest.sh's bed-probe --chase readings, or None."""
        s = cls.readings_spread(meta.get("bed_chase", ""))
        mib = meta.get("bed_chase_mib", "?")
        return s and (f"- **Memory speed**: `bed-probe --chase {mib}` (dependent loads over {mib} MiB, on every vCPU "
                      f"at once, before the runs) took {s}.")

    def lat_iters(self, tool, size):
        cfg = self.r.cfg
        if tool == "perftest":
            return cfg.get("PERF_LAT_ITERS", "?")
        n = bench_lat_iters(cfg, size)
        return str(n) if n is not None else cfg.get("PERF_LAT_ITERS", "?")

    def percentiles(self):
        """Average and percentiles at the sizes perftest ran, every contender."""
        r = self.r
        sizes = [s for s in r.sizes("lat") if self.planned_pt("lat", s)]
        if not sizes:
            return
        self.out("### Latency percentiles (us, half the round trip; lower is better)")
        self.out()
        self.out("Each run's average and nearest-rank percentiles of its iterations' half round trips; each cell the "
                 "median over the reps. perftest: `ib_send_lat`'s t_avg, t_typical (its median), 99% and 99.9%; "
                 "Open MPI and rdmx: `rdmx-bench(-mpi) latency` (each iteration timed by rank 0 with the cycle "
                 "counter). p99.9 of 1,000 iterations is the second-largest one.")
        self.out()
        heads = ["average"] + [PCT_LABEL[p[0]] for p in PERCENTILES] + ["p99 / Open MPI's", "iterations"]
        self.out("| size | contender | " + " | ".join(heads) + " |")
        self.out("| ---: | --- |" + " ---: |" * len(heads))
        for size in sizes:
            ompi_p99 = median(r.get("lat_p99", "ompi", size).values())
            for tool in r.tools():
                cells = [self.cell("lat", tool, size)[0]]
                cells += [self.cell("lat_" + p[0], tool, size, tool)[0] for p in PERCENTILES]
                mine = median(r.get("lat_p99", tool, size).values())
                q = mine / ompi_p99 if mine is not None and ompi_p99 and tool != "ompi" else None
                cells += ["" if q is None else f"{q:.2f}", self.lat_iters(tool, size)]
                self.out(f"| {fmt_size(size)} | {tool_name(tool)} | " + " | ".join(cells) + " |")
        self.out()

    def spread(self):
        """How much each contender's 8 B latency moved over the reps."""
        r = self.r
        size = 8
        self.out("### Spread of the 8 B latency over the reps")
        self.out()
        self.out("Each rep's average (ib_send_lat: t_avg) and median (p50; ib_send_lat: t_typical) half round "
                 "trip, over the reps of this boot. Issue 17 is done when, over 10 reps in one boot, each rdmx "
                 "mode's 8 B latency varies no more than Open MPI's: max/min at most Open MPI's (last column) and "
                 "median at most Open MPI's (the latency targets above). Slow reps: reps whose p50 is more than "
                 f"{SLOW_REP} x the contender's lowest p50 in this boot, runs that spent their whole length in the "
                 "bed's slow state (docs/performance.md, \"Reading the 8 B results\").")
        self.out()
        self.out("| contender | reps | median | min | max | max/min | p50 median | p50 max/min | slow reps "
                 "| max/min <= Open MPI's |")
        self.out("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | :---: |")
        ompi = spread_of(r.get("lat", "ompi", size).values())
        for tool in r.tools():
            avg = spread_of(r.get("lat", tool, size).values())
            p50 = spread_of(r.get("lat_p50", tool, size).values())
            if avg is None:
                self.out(f"| {tool_name(tool)} | 0 | {self.why_missing('lat', tool, size)} |  |  |  |  |  |  |  |")
                continue
            verdict = ""
            if tool not in REFERENCES and ompi is not None:
                if min(avg[0], ompi[0]) < 2:
                    verdict = "- (1 rep)"
                else:
                    verdict = "yes" if avg[4] <= ompi[4] else "**no**"
            cells = [str(avg[0])] + [fmt_val(v, "lat") for v in avg[1:4]] + [f"{avg[4]:.2f}"]
            if p50:
                slow = sum(1 for v in r.get("lat_p50", tool, size).values() if v is not None and v > SLOW_REP * p50[2])
                cells += [fmt_val(p50[1], "lat"), f"{p50[4]:.2f}", str(slow)]
            else:
                cells += ["", "", ""]
            self.out(f"| {tool_name(tool)} | " + " | ".join(cells) + f" | {verdict} |")
        self.out()

    def detail(self):
        r = self.r
        self.out("### Details")
        self.out()
        self.out("perftest per verb (median MB/s) and ib_send_lat's typical (median) latency:")
        self.out()
        self.out("| size | ib_write_bw | ib_read_bw | ib_send_lat t_typical (us) |")
        self.out("| ---: | ---: | ---: | ---: |")
        sizes = sorted(set(r.vals.get("bw", {}).get("pt_write", {})) | set(r.vals.get("bw", {}).get("pt_read", {}))
                       | set(r.vals.get("lat", {}).get("perftest_typical", {})))
        for size in sizes:
            w = median(r.get("bw", "pt_write", size).values())
            rd = median(r.get("bw", "pt_read", size).values())
            t = median(r.get("lat", "perftest_typical", size).values())
            self.out(f"| {fmt_size(size)} | {fmt_val(w, 'bw') if w else ''} | {fmt_val(rd, 'bw') if rd else ''} | "
                     f"{fmt_val(t, 'lat') if t else ''} |")
        self.out()
        self.out("Every rep at the target sizes (spread shows the noise):")
        self.out()
        self.out("| metric | size | tool | " + " | ".join(f"rep {i}" for i in range(1, r.reps + 1)) + " |")
        self.out("| --- | ---: | --- | " + " | ".join("---:" for _ in range(r.reps)) + " |")
        for metric, size in (("lat", 8), ("lat_p99", 8), ("bw", 1 << 20), ("bw", 4 << 20), ("mr", 8)):
            if metric not in r.vals:
                continue
            for tool in r.tools():
                per = r.get(metric, tool, size)
                cells = [fmt_val(per.get(i), metric) if per.get(i) is not None else "-" for i in range(1, r.reps + 1)]
                label = metric.replace("lat_", "lat ")
                self.out(f"| {label} | {fmt_size(size)} | {tool_name(tool)} | " + " | ".join(cells) + " |")
        self.out()

    def runs_summary(self):
        r = self.r
        self.out("### Runs")
        self.out()
        # Did the traffic take the link between the two devices?
        low = []
        counted = 0
        for run in r.runs:
            if run["status"] != "ok":
                continue
            try:
                d0, d1 = int(run["d0"]), int(run["d1"])
            except ValueError:
                continue
            counted += 1
            if min(d0, d1) < 10:
                low.append(f"rep {run['rep']} {run['metric']} {tool_name(run['tool'])} {run['key']}: "
                           f"{r.meta.get('dev0')} sent {d0}, {r.meta.get('dev1')} sent {d1} packets")
        dev0, dev1 = r.meta.get("dev0", "?"), r.meta.get("dev1", "?")
        if counted and not low:
            self.out(f"- Path check: in each of the {counted} successful runs both {dev0} and {dev1} sent packets "
                     f"(hw_counters/sent_pkts), so the traffic crossed the link between them.")
        elif low:
            self.out(f"- Path check: **{len(low)} run(s) did not use both devices**: " + "; ".join(low[:5]))
        by = {}
        for run in r.runs:
            by.setdefault(run["tool"], []).append(run)
        for tool in r.tools():
            rs = by.get(tool, [])
            if not rs:
                continue
            ok = sum(1 for x in rs if x["status"] == "ok")
            secs = sum(x["secs"] for x in rs)
            self.out(f"- {tool_name(tool)}: {ok} of {len(rs)} runs succeeded, {secs} s in all.")
        fails = [x for x in r.runs if x["status"] != "ok"]
        if fails:
            self.out("- Failed or skipped runs:")
            for x in fails[:30]:
                self.out(f"  - rep {x['rep']} {x['metric']} {tool_name(x['tool'])} {x['key']}: "
                         f"{x['status']} ({short(x['note'] or 'no result in the output', 200)})")
            if len(fails) > 30:
                self.out(f"  - ... and {len(fails) - 30} more")
        self.out()

    def verdict_ok(self):
        return all(t[5] == "MET" for t in self.targets)


def replace_block(path, block, begin=BEGIN, end=END):
    """Replace the lines from begin to end (each alone on its line) with block
    (block holds the markers itself); without them, append block."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except FileNotFoundError:
        lines = ["# Performance", "", begin, end, ""]
    try:
        b = next(i for i, l in enumerate(lines) if l.strip() == begin)
        e = next(i for i in range(b + 1, len(lines)) if lines[i].strip() == end)
    except StopIteration:
        while lines and lines[-1] == "":
            lines.pop()
        lines += ["", begin, end, ""]
        b, e = len(lines) - 3, len(lines) - 2
    text = "\n".join(lines[:b] + block.split("\n") + lines[e + 1:])
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rawdir")
    ap.add_argument("--out", default="-")
    ap.add_argument("--command", default="scripts/perf/compare.sh")
    ap.add_argument("--bed-status", default="0")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()

    res = Results(a.rawdir)
    res.load()
    res.derive()
    if res.ok_runs == 0:
        print(f"perf: nothing was measured (test bed status {a.bed_status}); "
              f"see {os.path.join(a.rawdir, 'raw')}", file=sys.stderr)
        for run in res.runs[:10]:
            print(f"perf:   rep {run['rep']} {run['metric']} {run['tool']} {run['key']}: {run['status']} ({run['note']})",
                  file=sys.stderr)
        return 125
    rep = Report(res, a.command, a.bed_status)
    rep.build()
    block = "\n".join(rep.lines)
    print(block)
    if a.out != "-":
        replace_block(a.out, block)
        print(f"perf: wrote the report into {a.out}", file=sys.stderr)
    if a.check and not rep.verdict_ok():
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
