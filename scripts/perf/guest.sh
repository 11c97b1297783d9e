#!/usr/bin/env bash
# The measuring half of scripts/perf/compare.sh: runs where verbs work (inside
# the Soft-RoCE guest started by scripts/vm/run.sh, or natively), with rank 0 /
# the perftest server on the first device and rank 1 / the client on the
# second, so every byte crosses the link between them (the veth in the guest).
#
# Usage (by compare.sh only): scripts/perf/guest.sh OUTDIR
#
# OUTDIR/config.env holds the parameters (written by compare.sh). Results go
# to OUTDIR: meta.env (versions, guest), runs.tsv (one line per run: rep,
# metric, tool, key, status, exit code, seconds, packets sent by each device,
# output file, note) and raw/ (each run's output). Runs are interleaved:
# for each rep, for each metric, perftest, then Open MPI and rdmx in each
# progress mode (RDMX_PROGRESS=caller, thread), in an order rotated by one
# each rep. A run that fails
# or times out is recorded and the next one starts; runs that would start
# after the time budget are recorded as skipped.
set -u

out="${1:?usage: guest.sh OUTDIR}"
# shellcheck source=/dev/null
. "$out/config.env" || { echo "perf: cannot read $out/config.env" >&2; exit 125; }
: "${PERF_RDMX_PROGRESS:=caller thread}" "${PERF_METRICS:=lat bw mr}"
raw="$out/raw"
mkdir -p "$raw"
runs="$out/runs.tsv"
: >"$runs"
t_start=$SECONDS

note() { echo "perf: $*" >&2; }

ulimit -l unlimited 2>/dev/null || note "warning: cannot raise the locked-memory limit"

# ------------------------------------------------------------ devices ---
# Two devices, each with the GID index of its IPv4 (RoCE v2) address. The test
# bed names them in RDMX_TEST_DEVICES; otherwise the first two ACTIVE ports.
ib=/sys/class/infiniband
read -r -a devs <<<"${PERF_DEVICES:-${RDMX_TEST_DEVICES:-}}"
if [ "${#devs[@]}" -eq 0 ]; then
  for d in "$ib"/*; do
    [ -e "$d/ports/1/state" ] || continue
    st="$(<"$d/ports/1/state")"
    [[ "$st" == *ACTIVE* ]] && devs+=("${d##*/}")
  done
fi
[ "${#devs[@]}" -ge 1 ] || { note "no RDMA device"; exit 125; }
[ "${#devs[@]}" -ge 2 ] || { note "only one device (${devs[0]}): both ends use it"; devs+=("${devs[0]}"); }
dev0="${devs[0]}" dev1="${devs[1]}"

ipv4_gid() {  # ipv4_gid DEV -> "INDEX ADDRESS" of the first IPv4-mapped RoCE v2 GID
  local dev="$1" f i g ty h
  for f in "$ib/$dev"/ports/1/gids/*; do
    i="${f##*/}"
    g="$(<"$f")" 2>/dev/null || continue
    [[ "$g" == 0000:0000:0000:0000:0000:ffff:* ]] || continue
    ty=""
    [ -r "$ib/$dev/ports/1/gid_attrs/types/$i" ] && ty="$(<"$ib/$dev/ports/1/gid_attrs/types/$i")" 2>/dev/null
    [ -n "$ty" ] && [[ "$ty" != *v2* ]] && continue
    h="${g:30:4}${g:35:4}"
    echo "$i $((16#${h:0:2})).$((16#${h:2:2})).$((16#${h:4:2})).$((16#${h:6:2}))"
    return 0
  done
  return 1
}
# (No process substitution: the guest has no /dev/fd.)
read -r gid0 addr0 <<<"$(ipv4_gid "$dev0")"
[ -n "${addr0:-}" ] || { note "$dev0 has no IPv4 RoCE v2 GID"; exit 125; }
read -r gid1 addr1 <<<"$(ipv4_gid "$dev1")"
[ -n "${addr1:-}" ] || { note "$dev1 has no IPv4 RoCE v2 GID"; exit 125; }

snap_counters() {  # snap_counters FILE: every hw counter of both devices, "dev.name value"
  local d f v
  for d in "$dev0" "$dev1"; do
    for f in "$ib/$d"/ports/1/hw_counters/*; do
      [ -f "$f" ] || continue
      v=""
      read -r v 2>/dev/null <"$f" || continue
      echo "$d.${f##*/} $v"
    done
  done >"$1"
}

# After a failed run: the counters that moved (FILE.counters) and the end of
# the kernel log (FILE.dmesg); prints the error counters that moved, if any.
post_mortem() {  # post_mortem FILE BEFORE
  local f="$1" before="$2"
  snap_counters "$f.after"
  awk 'NR == FNR { b[$1] = $2; next } ($1 in b) && $2 != b[$1] { printf "%s +%d\n", $1, $2 - b[$1] }' \
    "$before" "$f.after" >"$f.counters" 2>/dev/null
  rm -f "$f.after"
  dmesg 2>/dev/null | tail -n 40 >"$f.dmesg"
  grep -v -E '\.(sent_pkts|rcvd_pkts|rdma_sends|rdma_recvs|ack_deferred) ' "$f.counters" 2>/dev/null |
    head -n 6 | tr '\n' ' ' | sed 's/ $//'
}

pkts() {  # packets sent so far by DEV (or -)
  local v="-"
  read -r v 2>/dev/null <"$ib/$1/ports/1/hw_counters/sent_pkts" || v="-"
  echo "$v"
}

# ---------------------------------------------------------------- meta ---
{
  echo "kernel=$(uname -r)"
  echo "vcpus=$(nproc)"
  echo "mem_kb=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)"
  echo "in_vm=${RDMX_TEST_IN_VM:-unknown}"
  echo "dev0=$dev0 gid0=$gid0 addr0=$addr0"
  echo "dev1=$dev1 gid1=$gid1 addr1=$addr1"
  echo "active_mtu=$(ibv_devinfo -d "$dev0" 2>/dev/null | awk '/active_mtu/ {print $2; exit}')"
  echo "perftest=$(ib_send_lat --version 2>/dev/null | awk '{print $NF; exit}')"
  echo "perftest_pkg=$(dpkg-query -W -f='${Version}' perftest 2>/dev/null)"
  echo "ompi=$(mpirun --version 2>/dev/null | awk 'NR==1 {print $NF}')"
  echo "ucx=$(dpkg-query -W -f='${Version}' libucx0 2>/dev/null)"
} >"$out/meta.env" 2>/dev/null

# ------------------------------------------------- the machine's speed ---
# bed-probe (bench/bed_probe.c: a fixed loop, no memory traffic) timed
# PERF_PROBE_N times, on each CPU in turn, before any measurement. The CPUs
# under an emulated bed change speed within a second (the loop's time jumps
# between two levels about 3 x apart); the spread of these readings says how
# unsteady the bed was in this boot, which the latency spread must be read
# against (docs/performance.md, "Reading the 8 B results").
if [ -x "${PERF_PROBE:-}" ]; then
  readings="" ncpu="$(nproc)"
  for ((i = 0; i < ${PERF_PROBE_N:-40}; i++)); do
    ms="$(taskset -c $((i % ncpu)) "$PERF_PROBE" 2>/dev/null)" && readings+="$ms,"
  done
  echo "bed_probe=${readings%,}" >>"$out/meta.env"
  unset readings ncpu ms i
fi
# The same for the memory system: bed-probe --chase (dependent loads
# through PERF_CHASE_MIB MiB, above the caches) PERF_CHASE_N times, each on
# every CPU at once, as a two-rank run loads the bed. The multiply-add loop
# above cannot see memory change speed; a 16 MB walk on the host has been
# seen to take from 156 to 256 ms within one minute.
if [ -x "${PERF_PROBE:-}" ] && [ "${PERF_CHASE_N:-10}" -gt 0 ]; then
  readings="" ncpu="$(nproc)" tmp="$(mktemp -d)"
  for ((i = 0; i < ${PERF_CHASE_N:-10}; i++)); do
    pids=()
    for ((c = 0; c < ncpu; c++)); do
      taskset -c "$c" "$PERF_PROBE" --chase "${PERF_CHASE_MIB:-16}" >"$tmp/$c" 2>/dev/null &
      pids+=($!)
    done
    for ((c = 0; c < ncpu; c++)); do
      wait "${pids[$c]}" && readings+="$(cat "$tmp/$c"),"
    done
  done
  rm -rf -- "$tmp"
  { echo "bed_chase=${readings%,}"; echo "bed_chase_mib=${PERF_CHASE_MIB:-16}"; } >>"$out/meta.env"
  unset readings ncpu tmp pids i c
fi

# ------------------------------------------------------------- tracing ---
# PERF_TRACE=1 (compare.sh --trace): an ftrace of every rdmx-bench(-mpi)
# latency run, for scripts/perf/sched_trace.py. Scheduling, wake-ups,
# softirqs and system-call entries, on the monotonic clock, with each
# event's process id; 30 MB per CPU holds a run of a few seconds.
tracefs=/sys/kernel/tracing
trace_on=0
if [ "${PERF_TRACE:-0}" = 1 ]; then
  mountpoint -q "$tracefs" || mount -t tracefs nodev "$tracefs" 2>/dev/null
  if [ -w "$tracefs/tracing_on" ]; then
    echo 0 >"$tracefs/tracing_on"
    echo 30000 >"$tracefs/buffer_size_kb"
    echo mono >"$tracefs/trace_clock"
    echo 1 >"$tracefs/options/record-tgid"
    for e in sched/sched_switch sched/sched_waking sched/sched_wakeup sched/sched_wakeup_new irq/softirq_entry \
             irq/softirq_exit raw_syscalls/sys_enter; do
      echo 1 >"$tracefs/events/$e/enable"
    done
    trace_on=1
  else
    note "warning: no tracefs at $tracefs: runs are not traced"
  fi
fi
trace_start() { [ "$trace_on" = 1 ] && echo >"$tracefs/trace" && echo 1 >"$tracefs/tracing_on"; }
trace_stop() {  # trace_stop FILE: FILE.trace.gz, and FILE.trace.stats (events each CPU's buffer lost)
  [ "$trace_on" = 1 ] || return 0
  echo 0 >"$tracefs/tracing_on"
  gzip -1 -c "$tracefs/trace" >"$1.trace.gz"
  grep -H '^overrun' "$tracefs"/per_cpu/cpu*/stats >"$1.trace.stats" 2>/dev/null
}

# ----------------------------------------------------------- recording ---
budget_left() { [ $((SECONDS - t_start)) -lt "$PERF_BUDGET" ]; }

# record REP METRIC TOOL KEY STATUS RC SECS D0 D1 FILE NOTE
record() {
  local IFS=$'\t'
  echo "$*" >>"$runs"
}

# A short reason for a failed run: the exit status and the last telling line.
why() {  # why RC FILE...
  local rc="$1" line=""
  shift
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    echo "timeout"
    return
  fi
  line="$(cat "$@" 2>/dev/null | tr -d '\r' | grep -v -E '^\s*$|^-+$|^=+$|^\[vm0:|^ *[0-9]+ +/' |
    grep -i -E 'error|fail|unable|couldn|cannot|abort|timeout|refused|denied|not |invalid' | tail -n 1)"
  line="${line//$'\t'/ }"
  echo "exit $rc${line:+: ${line:0:160}}"
}

port=$((PERF_PT_PORT - 1))
wait_listen() {  # wait_listen PORT: until a TCP socket listens on it (at most 15 s)
  local hex i f loc st rest
  hex="$(printf '%04X' "$1")"
  for ((i = 0; i < 150; i++)); do
    for f in /proc/net/tcp /proc/net/tcp6; do
      [ -r "$f" ] || continue
      while read -r _ loc _ st rest; do
        [[ "$loc" == *":$hex" && "$st" == 0A ]] && return 0
      done <"$f"
    done
    sleep 0.1
  done
  return 1
}

# perftest REP METRIC KEY PROG ARGS...: server on dev0, client on dev1.
perftest() {
  local rep="$1" metric="$2" key="$3" prog="$4"
  shift 4
  local f="$raw/r$rep-$metric-perftest-$key"
  if ! budget_left; then
    record "$rep" "$metric" perftest "$key" skipped - 0 - - - "time budget"
    return
  fi
  port=$((port + 1))
  local a0 a1 t0=$SECONDS spid crc src st=ok reason=""
  a0="$(pkts "$dev0")" a1="$(pkts "$dev1")"
  timeout -k 5 "$PERF_PT_TIMEOUT" "$prog" -d "$dev0" -x "$gid0" -p "$port" -F "$@" >"$f.server" 2>&1 </dev/null &
  spid=$!
  if ! wait_listen "$port"; then
    kill "$spid" 2>/dev/null
    wait "$spid" 2>/dev/null
    record "$rep" "$metric" perftest "$key" failed - $((SECONDS - t0)) - - "$f.server" "server did not listen: $(why 1 "$f.server")"
    return
  fi
  timeout -k 5 "$PERF_PT_TIMEOUT" "$prog" -d "$dev1" -x "$gid1" -p "$port" -F "$@" "$addr0" >"$f" 2>&1 </dev/null
  crc=$?
  if [ "$crc" != 0 ]; then
    sleep 1
    kill "$spid" 2>/dev/null
  fi
  wait "$spid"
  src=$?
  if [ "$crc" != 0 ]; then
    st=failed reason="client $(why "$crc" "$f" "$f.server")"
  elif [ "$src" != 0 ]; then
    st=failed reason="server $(why "$src" "$f.server")"
  fi
  record "$rep" "$metric" perftest "$key" "$st" "$crc" $((SECONDS - t0)) \
    $(($(pkts "$dev0") - a0)) $(($(pkts "$dev1") - a1)) "$f" "$reason"
  echo "perf: rep $rep $metric perftest $key: $st ${reason:+($reason) }in $((SECONDS - t0)) s" >&2
}

# bench REP METRIC TOOL SUBCOMMAND ARGS...: rdmx-bench(-mpi) under mpirun.
# TOOL is ompi (rdmx-bench-mpi on Open MPI) or rdmx-MODE (rdmx-bench with
# RDMX_PROGRESS=MODE, caller or thread).
bench() {
  local rep="$1" metric="$2" tool="$3" sub="$4"
  shift 4
  local f="$raw/r$rep-$metric-$tool"
  if ! budget_left; then
    record "$rep" "$metric" "$tool" "$sub" skipped - 0 - - - "time budget"
    return
  fi
  local a0 a1 t0=$SECONDS rc st=ok reason="" last errs
  local common=(--allow-run-as-root --oversubscribe --bind-to none)
  local args=("$sub" "$@" --quiet --json "$f.json")
  rm -f "$f.json"
  snap_counters "$f.before"
  a0="$(pkts "$dev0")" a1="$(pkts "$dev1")"
  [ "$metric" = lat ] && trace_start
  if [ "$tool" = ompi ]; then
    # One app context per rank, each with its own device (UCX_NET_DEVICES);
    # rc_v + self only, so nothing goes through shared memory.
    local ucx=(-x "UCX_TLS=rc_v,self" -x UCX_UD_ETH_DGID_CHECK=n)
    timeout -k 10 "$PERF_MPI_TIMEOUT" mpirun "${common[@]}" --mca pml ucx \
      -np 1 "${ucx[@]}" -x "UCX_NET_DEVICES=$dev0:1" "$PERF_BENCH_MPI" "${args[@]}" : \
      -np 1 "${ucx[@]}" -x "UCX_NET_DEVICES=$dev1:1" "$PERF_BENCH_MPI" "${args[@]}" \
      >"$f.txt" 2>&1 </dev/null
  else
    # rc + self only, like Open MPI's rc_v + self: both ranks share the
    # guest, and rdmx's default list would put them on shared memory.
    # PERF_RDMX_ENV: further VAR=VALUE settings for rdmx (to try a knob).
    local extra=() kv
    for kv in ${PERF_RDMX_ENV:-}; do
      extra+=(-x "$kv")
    done
    timeout -k 10 "$PERF_MPI_TIMEOUT" mpirun "${common[@]}" -np 2 -x RDMX_TRANSPORTS=rc,self "${extra[@]}" \
      -x "RDMX_DEVICE=$dev0,$dev1" -x "RDMX_PROGRESS=${tool#rdmx-}" "$PERF_BENCH" "${args[@]}" \
      >"$f.txt" 2>&1 </dev/null
  fi
  rc=$?
  [ "$metric" = lat ] && trace_stop "$f"
  if [ "$rc" != 0 ]; then
    st=failed reason="$(why "$rc" "$f.txt")"
    # The text table is printed as sizes finish: name the last one done.
    last="$(grep -E '^[0-9]+ ' "$f.txt" 2>/dev/null | tail -n 1 | awk '{print $1}')"
    reason+="${last:+ (last size done: $last B)}"
  elif [ ! -s "$f.json" ]; then
    st=failed reason="no JSON output"
  fi
  if [ "$st" != ok ]; then
    errs="$(post_mortem "$f" "$f.before")"
    reason+="${errs:+; counters: $errs}"
  fi
  rm -f "$f.before"
  record "$rep" "$metric" "$tool" "$sub" "$st" "$rc" $((SECONDS - t0)) \
    $(($(pkts "$dev0") - a0)) $(($(pkts "$dev1") - a1)) "$f.json" "$reason"
  echo "perf: rep $rep $metric $tool: $st ${reason:+($reason) }in $((SECONDS - t0)) s" >&2
}

pt_bw_iters() {  # iterations moving about PERF_PT_BW_BYTES at SIZE, clamped
  local n=$((PERF_PT_BW_BYTES / $1))
  [ "$n" -lt "$PERF_PT_BW_MIN_ITERS" ] && n=$PERF_PT_BW_MIN_ITERS
  [ "$n" -gt "$PERF_PT_BW_MAX_ITERS" ] && n=$PERF_PT_BW_MAX_ITERS
  echo "$n"
}

# Open MPI, then rdmx in each progress mode asked for.
tools=(ompi)
for m in $PERF_RDMX_PROGRESS; do
  tools+=("rdmx-$m")
done
has_metric() { [[ " $PERF_METRICS " == *" $1 "* ]]; }
# This rep's order of the rdmx-bench(-mpi) contenders: rotated by one each
# rep, so that none of them always runs first (right after perftest's own
# processes) or last.
rotate_tools() {  # rotate_tools REP -> rep_tools
  local n=${#tools[@]} k i
  k=$(((${1} - 1) % n))
  rep_tools=()
  for ((i = 0; i < n; i++)); do
    rep_tools+=("${tools[$(((i + k) % n))]}")
  done
}

note "devices: $dev0 ($addr0, GID $gid0) <-> $dev1 ($addr1, GID $gid1); $PERF_REPS reps, budget ${PERF_BUDGET}s"
note "metrics: $PERF_METRICS; contenders: perftest ${tools[*]}"
for ((rep = 1; rep <= PERF_REPS; rep++)); do
  rotate_tools "$rep"
  # --- latency: ping-pong, half the round trip
  if has_metric lat; then
    for s in $PERF_LAT_SIZES; do
      perftest "$rep" lat "$s" ib_send_lat -s "$s" -n "$PERF_LAT_ITERS"
    done
    for tool in "${rep_tools[@]}"; do
      bench "$rep" lat "$tool" latency --min-size "$PERF_LAT_MIN" --max-size "$PERF_LAT_MAX" \
        --iters-scale "$PERF_LAT_SCALE" --warmup "$PERF_LAT_WARMUP"
    done
  fi
  # --- bandwidth: one direction
  if has_metric bw; then
    for s in $PERF_BW_SIZES; do
      n="$(pt_bw_iters "$s")"
      perftest "$rep" bw "write-$s" ib_write_bw -s "$s" -n "$n"
      perftest "$rep" bw "read-$s" ib_read_bw -s "$s" -n "$n"
    done
    for tool in "${rep_tools[@]}"; do
      bench "$rep" bw "$tool" bw --min-size "$PERF_BW_MIN" --max-size "$PERF_BW_MAX" \
        --window "$PERF_BW_WINDOW" --iters-scale "$PERF_BW_SCALE"
    done
  fi
  # --- message rate: 8 B sends, one pair
  if has_metric mr; then
    perftest "$rep" mr "send-$PERF_MR_SIZE" ib_send_bw -s "$PERF_MR_SIZE" -n "$PERF_PT_MR_ITERS"
    for tool in "${rep_tools[@]}"; do
      bench "$rep" mr "$tool" mr --min-size "$PERF_MR_SIZE" --max-size "$PERF_MR_SIZE" \
        --window "$PERF_MR_WINDOW" --iters "$PERF_MR_ITERS" --warmup "$PERF_MR_WARMUP"
    done
  fi
done
echo "elapsed=$((SECONDS - t_start))" >>"$out/meta.env"
note "measurements done in $((SECONDS - t_start)) s"
exit 0
