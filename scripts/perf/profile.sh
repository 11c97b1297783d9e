#!/usr/bin/env bash
# Where the CPU goes in an 8-byte ping-pong (rdmx-bench latency and
# ib_send_lat) or an 8-byte message-rate run (rdmx-bench mr and the same
# benchmark on Open MPI, pml ucx over rc_v) between the test bed's two
# devices, each profiled system-wide with perf (cpu-clock samples) for the
# same time in the middle of a long run, in one boot of the Soft-RoCE guest
# (or natively). Prints, for each, the achieved latency or rate and the
# share of CPU samples per process and per object (kernel, rxe provider,
# rdmx, UCX or perftest, libc, idle), then the top symbols.
# docs/performance.md explains the latency and message-rate gaps with it.
#
# Usage: scripts/perf/profile.sh [--build DIR] [--metric lat|mr] [--seconds S] [--iters N] [--mode thread|caller]
#
#   --build DIR    build tree holding bench/rdmx-bench (default: build)
#   --metric M     lat (default): ping-pong against ib_send_lat; mr: message
#                  rate (window 64) against Open MPI
#   --seconds S    sampling time per contender (default 8)
#   --iters N      ping-pongs (lat) or windows (mr) per run; they must outlast
#                  the start-up delay (4 s; mr 15 s) + S (default (S + 6) x
#                  15,000 ping-pongs, for the emulated bed's ~70 us round
#                  trip, or (S + 21) x 150 windows of 64 messages, for its
#                  ~10,000 messages/s under perf)
#   --mode M       RDMX_PROGRESS for rdmx (default thread)
#
# Needs perf (Debian's linux-perf, installed by scripts/deps.sh); inside the
# guest, perf samples the guest's own kernel through its cpu-clock event.
set -euo pipefail

prog="perf-profile"
die() { echo "$prog: error: $*" >&2; exit 2; }
here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
top="$(cd -- "$here/../.." && pwd -P)"

build="$top/build"
seconds=8
iters=""
mode=thread
metric=lat
while [ $# -gt 0 ]; do
  case "$1" in
    --build) [ $# -ge 2 ] || die "--build needs a value"; build="$2"; shift 2 ;;
    --seconds) [ $# -ge 2 ] || die "--seconds needs a value"; seconds="$2"; shift 2 ;;
    --iters) [ $# -ge 2 ] || die "--iters needs a value"; iters="$2"; shift 2 ;;
    --mode) [ $# -ge 2 ] || die "--mode needs a value"; mode="$2"; shift 2 ;;
    --metric) [ $# -ge 2 ] || die "--metric needs a value"; metric="$2"; shift 2 ;;
    --in-guest) shift; break ;;
    -h|--help) sed -n '12,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $1" ;;
  esac
done
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || die "--seconds wants a positive integer, got '$seconds'"
[[ "$mode" == thread || "$mode" == caller ]] || die "--mode is thread or caller, got '$mode'"
[[ "$metric" == lat || "$metric" == mr ]] || die "--metric is lat or mr, got '$metric'"
delay=4
[ "$metric" = lat ] || delay=15
if [ -z "$iters" ]; then
  if [ "$metric" = lat ]; then iters=$(( (seconds + 6) * 15000 )); else iters=$(( (seconds + delay + 6) * 150 )); fi
fi
[[ "$iters" =~ ^[1-9][0-9]*$ ]] || die "--iters wants a positive integer, got '$iters'"

if [ "${1:-}" != guest ]; then
  build="$(cd -- "$build" 2>/dev/null && pwd -P)" || die "no build directory '$build'"
  [ -x "$build/bench/rdmx-bench" ] || die "missing $build/bench/rdmx-bench: cmake --build $build --target rdmx-bench"
  for c in perf mpirun ib_send_lat timeout; do
    command -v "$c" >/dev/null 2>&1 || die "'$c' not found (scripts/deps.sh installs rdmx's packages)"
  done
  exec "$top/scripts/vm/run.sh" --timeout 900 -- "$here/profile.sh" --build "$build" --seconds "$seconds" \
    --iters "$iters" --mode "$mode" --metric "$metric" --in-guest guest
fi

# ------------------------------------------------------------ in the guest ---
set +o pipefail   # the reports are cut with head: perf then dies of SIGPIPE, which is fine
ulimit -l unlimited 2>/dev/null || true
work="$(mktemp -d /dev/shm/rdmx-profile.XXXXXX)"   # perf cannot mmap its output over 9p
trap 'rm -rf -- "$work"' EXIT
ib=/sys/class/infiniband
read -r -a devs <<<"${RDMX_TEST_DEVICES:-rxe0 rxe1}"
[ "${#devs[@]}" -ge 2 ] || devs+=("${devs[0]}")
gid_of() {  # DEV -> index of its first IPv4-mapped GID
  local f g
  for f in "$ib/$1"/ports/1/gids/*; do
    g="$(<"$f")" 2>/dev/null || continue
    [[ "$g" == 0000:0000:0000:0000:0000:ffff:* ]] && { echo "${f##*/}"; return 0; }
  done
  return 1
}
addr_of() {  # DEV -> its IPv4 address, from the GID
  local g h
  g="$(<"$ib/$1/ports/1/gids/$(gid_of "$1")")"
  h="${g:30:4}${g:35:4}"
  echo "$((16#${h:0:2})).$((16#${h:2:2})).$((16#${h:4:2})).$((16#${h:6:2}))"
}

# sample NAME: perf for $seconds, starting $delay s into the run that is
# already going (past mpirun's and rdmx_init's start-up: 4 s for the
# ping-pong; the message-rate runs start slower and are sampled later)
sample() {
  sleep "$delay"
  perf record -e cpu-clock -F 2000 -a -o "$work/$1.data" -- sleep "$seconds" >/dev/null 2>&1
}
report() {  # NAME TITLE
  echo "## $2"
  echo
  echo "CPU samples by process and object (both vCPUs, ${seconds} s):"
  echo
  perf report -i "$work/$1.data" --no-children --sort comm,dso --stdio 2>/dev/null |
    grep -v '^#' | grep -v '^$' | awk '$1+0 >= 0.5' | head -12
  echo
  echo "Top symbols:"
  echo
  perf report -i "$work/$1.data" --no-children --sort comm,sym --stdio 2>/dev/null |
    grep -v '^#' | grep -v '^$' | head -25
  echo
}

common=(--allow-run-as-root --oversubscribe --bind-to none)
rdmx_run() {  # SUBCOMMAND ARGS...: rdmx-bench between the two devices, in the background
  mpirun "${common[@]}" -np 2 -x "RDMX_DEVICE=${devs[0]},${devs[1]}" -x RDMX_TRANSPORTS=rc,self \
    -x "RDMX_PROGRESS=$mode" timeout 300 "$build/bench/rdmx-bench" "$@" --quiet >"$work/rdmx.txt" 2>&1 &
}

if [ "$metric" = mr ]; then
  mr=(mr --min-size 8 --max-size 8 --window 64 --iters "$iters" --warmup 10)
  rdmx_run "${mr[@]}"
  sample rdmx
  wait || true
  # Open MPI as the guest table runs it: one app context per rank and device.
  ucx=(-x UCX_TLS=rc_v,self -x UCX_UD_ETH_DGID_CHECK=n)
  mpirun "${common[@]}" --mca pml ucx -np 1 "${ucx[@]}" -x "UCX_NET_DEVICES=${devs[0]}:1" \
    timeout 300 "$build/bench/rdmx-bench-mpi" "${mr[@]}" --quiet : \
    -np 1 "${ucx[@]}" -x "UCX_NET_DEVICES=${devs[1]}:1" timeout 300 "$build/bench/rdmx-bench-mpi" "${mr[@]}" --quiet \
    >"$work/ompi.txt" 2>&1 &
  sample ompi
  wait || true
  rate() { awk '$1 == 8 {print $NF " messages/s"}' "$1"; }
  echo "# 8-byte message-rate profile (window 64, perf cpu-clock, system-wide)"
  echo
  echo "- rdmx-bench mr (RDMX_PROGRESS=$mode): $(rate "$work/rdmx.txt")"
  echo "- rdmx-bench-mpi mr on Open MPI (pml ucx, rc_v): $(rate "$work/ompi.txt")"
  echo
  report rdmx "rdmx-bench mr"
  report ompi "rdmx-bench-mpi mr on Open MPI"
  exit 0
fi

rdmx_run latency --min-size 8 --max-size 8 --iters "$iters" --warmup 100
sample rdmx
wait || true

port=18517
g0="$(gid_of "${devs[0]}")" g1="$(gid_of "${devs[1]}")"
# perftest's own averages overflow past ~100,000 iterations: a duration run.
timeout 300 ib_send_lat -d "${devs[0]}" -x "$g0" -p "$port" -F -s 8 -D $((seconds + 6)) >"$work/pt-server.txt" 2>&1 &
sleep 1
timeout 300 ib_send_lat -d "${devs[1]}" -x "$g1" -p "$port" -F -s 8 -D $((seconds + 6)) "$(addr_of "${devs[0]}")" \
  >"$work/pt.txt" 2>&1 &
sample perftest
wait || true

echo "# 8-byte ping-pong profile (perf cpu-clock, system-wide)"
echo
echo "- rdmx-bench latency (RDMX_PROGRESS=$mode), half round trip: $(awk '$1 == 8 {print $2 " us"}' "$work/rdmx.txt")"
echo "- ib_send_lat (duration mode):"
echo
grep -A1 -E 't_min|t_avg' "$work/pt.txt" | sed 's/^/      /'

echo
report rdmx "rdmx-bench latency"
report perftest "ib_send_lat"
