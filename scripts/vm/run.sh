#!/usr/bin/env bash
# Run a command where RDMA verbs work: natively if this host has an ACTIVE
# RDMA port, otherwise inside a throw-away qemu guest (Debian's kernel, TCG)
# with two Soft-RoCE devices, rxe0 and rxe1, on a veth pair.
#
# Usage: scripts/vm/run.sh [--timeout SECONDS] [--numa] [--mem MB] [--nodes 2] -- COMMAND [ARGS...]
#
#   --timeout SECONDS  limit for the whole run, boot included (default 1800);
#                      on expiry qemu is killed, the console tail is printed
#                      and the exit status is 124
#   --numa             guest with two NUMA nodes (one CPU and half the memory each)
#   --mem MB           guest memory (default 6144; 4096 each with --nodes 2)
#   --nodes 2          two guests, vm0 and vm1, joined by a virtual Ethernet link
#                      (virtio-net, a UDP tunnel on the host's loopback), each with
#                      one Soft-RoCE device rxe0 on it (10.56.0.1 and 10.56.0.2).
#                      COMMAND runs on both, with RDMX_VM_NODE=0|1, RDMX_VM_NODES=2
#                      and RDMX_VM_SHARED (a directory both see); node 0's output is
#                      streamed and its status is this script's; node 1 is stopped
#                      when node 0 ends (its output is printed if node 0 failed)
#
# COMMAND runs as root in the caller's working directory (the host's / is the
# guest's /, shared over 9p); its stdout and stderr are streamed to this
# script's stdout, and its exit status is this script's. Failures of the test
# bed itself (missing packages, guest setup, guest crash) exit 125.
#
# Environment: RDMX_VM_CACHE (default /var/cache/rdmx-vm) holds the guest
# kernel, its modules and the initramfs; RDMX_VM_KERNEL=VERSION pins the
# kernel (default: what linux-image-amd64 depends on); RDMX_VM_FORCE=1 uses the
# VM even on a host with RDMA; RDMX_VM_CONSOLE=FILE keeps a copy of the guest's
# serial console log. See docs/softroce.md.
set -euo pipefail

prog="rdmx-vm"
die() { echo "$prog: error: $*" >&2; exit 125; }
note() { echo "$prog: $*" >&2; }

usage() {
  sed -n '6,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

t0=$SECONDS
here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
self="$here/$(basename -- "${BASH_SOURCE[0]}")"

# ---------------------------------------------------------------- options ---
timeout_s=1800
numa=0
nodes=1
mem_mb="${MEM:-}"
while [ $# -gt 0 ]; do
  case "$1" in
    --timeout) [ $# -ge 2 ] || die "--timeout needs a value"; timeout_s="$2"; shift 2 ;;
    --timeout=*) timeout_s="${1#*=}"; shift ;;
    --mem) [ $# -ge 2 ] || die "--mem needs a value"; mem_mb="$2"; shift 2 ;;
    --mem=*) mem_mb="${1#*=}"; shift ;;
    --numa) numa=1; shift ;;
    --nodes) [ $# -ge 2 ] || die "--nodes needs a value"; nodes="$2"; shift 2 ;;
    --nodes=*) nodes="${1#*=}"; shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; break ;;
    -*) usage >&2; die "unknown option: $1" ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { usage >&2; die "no COMMAND given"; }
[[ "$timeout_s" =~ ^[1-9][0-9]*$ ]] || die "--timeout wants a positive number of seconds, got '$timeout_s'"
[ "$nodes" = 1 ] || [ "$nodes" = 2 ] || die "--nodes wants 1 or 2, got '$nodes'"
[ "$nodes" = 1 ] || [ "$numa" = 0 ] || die "--nodes 2 and --numa do not go together"
[ -n "$mem_mb" ] || { [ "$nodes" = 2 ] && mem_mb=4096 || mem_mb=6144; }
[[ "$mem_mb" =~ ^[1-9][0-9]*$ ]] && [ "$mem_mb" -ge 1024 ] || die "--mem wants megabytes (>= 1024), got '$mem_mb'"

# Caller variables handed to COMMAND (VM and native alike).
passenv=()
pass_names() {
  local n
  for n in PATH HOME; do
    [ -n "${!n+x}" ] && passenv+=("$n=${!n}")
  done
  while IFS= read -r n; do
    case "$n" in
      RDMX_VM_*) ;;  # this script's own knobs
      RDMX_*|CI|CI_*|GITHUB_*|GITLAB_*|RUNNER_*|BUILDKITE*|JENKINS_*|TRAVIS*|\
      GTEST_*|CTEST_*|ASAN_OPTIONS|UBSAN_OPTIONS|LSAN_OPTIONS|TSAN_OPTIONS|MSAN_OPTIONS)
        passenv+=("$n=${!n}") ;;
    esac
  done < <(compgen -e)
}

# ----------------------------------------------------------- native path ---
ibsys=/sys/class/infiniband
host_active_rdma() {
  local s
  for s in "$ibsys"/*/ports/*/state; do
    [ -r "$s" ] && grep -q ACTIVE "$s" && return 0
  done
  return 1
}

if [ "${RDMX_VM_FORCE:-0}" != 1 ] && host_active_rdma; then
  devs=""
  for d in "$ibsys"/*; do
    grep -qs ACTIVE "$d"/ports/*/state && devs="${devs:+$devs }${d##*/}"
  done
  note "this host has active RDMA devices ($devs): running natively"
  export RDMX_TEST_IN_VM=0
  export RDMX_TEST_DEVICES="${RDMX_TEST_DEVICES:-$devs}"
  # timeout puts COMMAND in its own process group and kills all of it.
  timeout -k 10 "$timeout_s" "$@" &
  npid=$!
  trap 'kill "$npid" 2>/dev/null; note "interrupted"; exit 130' INT
  trap 'kill "$npid" 2>/dev/null; note "terminated"; exit 143' TERM
  set +e
  wait "$npid"
  rc=$?
  [ "$rc" = 124 ] && note "timed out after ${timeout_s}s"
  exit "$rc"
fi

# ---------------------------------------------------------- prerequisites ---
# The guest mounts its own /proc, /sys, /dev and /run: host paths under
# them are not the same there.
case "$PWD/" in
  /proc/*|/sys/*|/dev/*|/run/*) die "the working directory $PWD is hidden in the guest (it mounts its own /proc, /sys, /dev and /run)" ;;
esac
need() {  # need COMMAND DEBIAN-PACKAGE
  command -v "$1" >/dev/null 2>&1 ||
    die "'$1' not found: install the Debian package '$2' (scripts/deps.sh installs all of rdmx's packages)"
}
need qemu-system-x86_64 qemu-system-x86
need cpio cpio
need depmod kmod
need modprobe kmod
need ip iproute2
need rdma iproute2
need ibv_devinfo ibverbs-utils
need dpkg dpkg
need apt-get apt
need apt-cache apt
need flock util-linux
need timeout coreutils
need gzip gzip
need sha256sum coreutils
[ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1 ||
  die "no static /bin/busybox: install the Debian package 'busybox-static' (scripts/deps.sh)"
compgen -G '/usr/lib/*/libibverbs/librxe-rdmav*.so' >/dev/null ||
  die "no rxe provider for libibverbs: install the Debian package 'ibverbs-providers' (scripts/deps.sh)"
for f in initrd-init.sh guest-init.sh; do
  [ -r "$here/$f" ] || die "missing $here/$f"
done

# ------------------------------------------------------------------ cache ---
cache="${RDMX_VM_CACHE:-/var/cache/rdmx-vm}"
mkdir -p -- "$cache" 2>/dev/null && [ -w "$cache" ] ||
  die "cannot write the cache directory $cache (run as root, or set RDMX_VM_CACHE)"
cache="$(cd -- "$cache" && pwd -P)"
# Locks: .lock is held (exclusively) only while something is built; every
# running guest holds .inuse shared, so an old kernel is only pruned when no
# guest can be reading its modules.
exec 9>>"$cache/.lock" 8>>"$cache/.inuse"

remaining() {  # seconds left of --timeout, at least 1
  local left=$((timeout_s - (SECONDS - t0)))
  [ "$left" -ge 1 ] && echo "$left" || echo 1
}

kernel_version() {
  if [ -n "${RDMX_VM_KERNEL:-}" ]; then echo "$RDMX_VM_KERNEL"; return; fi
  { apt-cache depends linux-image-amd64 2>/dev/null || true; } |
    sed -n 's/^ *Depends: linux-image-\([0-9].*-amd64\)$/\1/p' | head -n 1
}

fetch_kernel() {  # fetch_kernel VERSION: download, unpack and depmod one kernel .deb
  local ver="$1" tmp deb
  tmp="$(mktemp -d "$cache/fetch.XXXXXXXX")"
  note "downloading linux-image-$ver (first run only)"
  if ! (cd "$tmp" && apt-get -q -o APT::Sandbox::User=root download "linux-image-$ver" >/dev/null); then
    note "apt-get download failed; running apt-get update and retrying once"
    apt-get -q update >/dev/null 2>&1 || true
    (cd "$tmp" && apt-get -q -o APT::Sandbox::User=root download "linux-image-$ver" >/dev/null) || {
      rm -rf -- "$tmp"
      die "cannot download linux-image-$ver (needs the Debian archive; try 'apt-get update')"
    }
  fi
  deb="$(echo "$tmp"/linux-image-*.deb)"
  [ -f "$deb" ] || { rm -rf -- "$tmp"; die "apt-get download produced no .deb"; }
  mkdir "$tmp/root"
  dpkg -x "$deb" "$tmp/root" || { rm -rf -- "$tmp"; die "dpkg -x $deb failed"; }
  [ -f "$tmp/root/boot/vmlinuz-$ver" ] && [ -d "$tmp/root/lib/modules/$ver" ] ||
    { rm -rf -- "$tmp"; die "unexpected layout in $deb"; }
  depmod -b "$tmp/root" "$ver" || { rm -rf -- "$tmp"; die "depmod failed for $ver"; }
  rm -f -- "$deb"
  rm -rf -- "$cache/kernel/$ver"
  mkdir -p "$cache/kernel"
  mv -- "$tmp/root" "$cache/kernel/$ver"
  rmdir -- "$tmp"
  touch "$cache/kernel/$ver/.complete"
}

build_initrd() {  # build_initrd OUTPUT
  local out="$1" tmp
  note "building the initramfs for $kver"
  tmp="$(mktemp -d "$cache/initrd.XXXXXXXX")"
  mkdir -p "$tmp/bin" "$tmp/lib/rdmx-modules" "$tmp/dev" "$tmp/proc" "$tmp/sys" "$tmp/newroot"
  cp /bin/busybox "$tmp/bin/busybox"
  ln -s busybox "$tmp/bin/sh"
  install -m 755 "$here/initrd-init.sh" "$tmp/init"
  # virtio-pci and 9p, dependencies first, as modprobe would load them.
  modprobe -d "$kroot" -S "$kver" --show-depends -a virtio_pci 9pnet_virtio 9p |
    awk '$1 == "insmod" && !seen[$2]++ { print $2 }' |
    while IFS= read -r ko; do
      cp -- "$ko" "$tmp/lib/rdmx-modules/"
      basename -- "$ko" >>"$tmp/lib/rdmx-modules/order"
    done
  [ -s "$tmp/lib/rdmx-modules/order" ] || { rm -rf -- "$tmp"; die "cannot resolve the 9p modules in $kroot"; }
  (cd "$tmp" && find . -print0 | sort -z | cpio --null -o -H newc --quiet --owner 0:0) | gzip -1 >"$out.tmp"
  rm -rf -- "$tmp"
  mv -f -- "$out.tmp" "$out"
}

kver="$(kernel_version)"
if [ -z "$kver" ]; then
  # No package lists: fall back on the newest cached kernel, if any.
  kver="$( { ls -1 "$cache/kernel" 2>/dev/null || true; } | sort -V | tail -n 1)"
  [ -n "$kver" ] && [ -f "$cache/kernel/$kver/.complete" ] ||
    die "cannot tell which kernel linux-image-amd64 wants: run 'apt-get update' (scripts/deps.sh does), or set RDMX_VM_KERNEL"
fi
[[ "$kver" =~ ^[0-9][0-9A-Za-z.+~-]*$ ]] || die "odd kernel version '$kver'"
kroot="$cache/kernel/$kver"
vmlinuz="$kroot/boot/vmlinuz-$kver"
# The initramfs is named after a hash of what goes into it, so a changed
# script (or another checkout's version) gets its own, built once.
stamp="$( { sha256sum "$self" "$here/initrd-init.sh" /bin/busybox | cut -d' ' -f1; echo "$kver"; } | sha256sum | cut -c1-16)"
initrd="$cache/initrd-$kver-$stamp.img"

if [ ! -f "$kroot/.complete" ] || [ ! -f "$initrd" ]; then
  flock -w "$(remaining)" 9 || die "timed out waiting for the cache lock $cache/.lock"
  if [ ! -f "$kroot/.complete" ]; then
    fetch_kernel "$kver"
    # One kernel is enough: drop older ones, unless a guest is using them.
    if flock -n -x 8; then
      for old in "$cache"/kernel/*; do
        [ "$old" = "$kroot" ] || rm -rf -- "$old"
      done
      find "$cache" -maxdepth 1 -name 'initrd-*' ! -name "initrd-$kver-*" -delete
      flock -u 8
    fi
  fi
  [ -f "$initrd" ] || build_initrd "$initrd"
  # Initramfs images of other script versions, unused for two days.
  find "$cache" -maxdepth 1 -name 'initrd-*.img' ! -name "${initrd##*/}" -mtime +1 -delete 2>/dev/null || true
  flock -u 9
fi
touch -c "$initrd" 2>/dev/null || true
flock -s 8   # held (also by qemu) while the guest runs

# ---------------------------------------------------------------- the run ---
# The run directory is shared with the guest through 9p and named on the
# kernel command line, so its path must be plain.
base="${TMPDIR:-/tmp}"
case "$base/" in /proc/*|/sys/*|/dev/*|/run/*) base=/tmp ;; esac
[[ "$base" =~ ^/[A-Za-z0-9_./-]*$ ]] && [ -d "$base" ] && [ -w "$base" ] || base=/tmp
run="$(mktemp -d "$base/rdmx-vm.XXXXXXXX")"
run="$(cd -- "$run" && pwd -P)"
[[ "$run" =~ ^/[A-Za-z0-9_./-]*$ ]] || die "run directory path '$run' is not plain"

qpid=""
tpid=""
q1pid=""
cleanup() {
  [ -n "$qpid" ] && kill "$qpid" 2>/dev/null
  [ -n "$q1pid" ] && kill "$q1pid" 2>/dev/null
  [ -n "$tpid" ] && kill "$tpid" 2>/dev/null
  if [ -n "${RDMX_VM_CONSOLE:-}" ] && [ -f "$run/console.log" ]; then
    cp -f -- "$run/console.log" "$RDMX_VM_CONSOLE" 2>/dev/null || note "cannot write $RDMX_VM_CONSOLE"
  fi
  rm -rf -- "$run"
}
trap cleanup EXIT
trap 'note "interrupted"; exit 130' INT
trap 'note "terminated"; exit 143' TERM

pass_names
if [ "$nodes" = 2 ]; then
  mkdir -m 700 "$run/shared"
  nodeenv=("RDMX_TEST_DEVICES=rxe0" "RDMX_VM_NODES=2" "RDMX_VM_SHARED=$run/shared")
else
  nodeenv=("RDMX_TEST_DEVICES=rxe0 rxe1" "RDMX_TEST_ADDRS=10.55.0.1 10.55.0.2")
fi
cmdenv=("${passenv[@]}" "${nodeenv[@]}"
  "TMPDIR=/run/tmp"
  "RDMX_TEST_IN_VM=1"
  "OMPI_ALLOW_RUN_AS_ROOT=1"
  "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
  "OMPI_MCA_btl_vader_single_copy_mechanism=none"
)
{
  printf 'RDMX_VM_KROOT=%q\n' "$kroot"
  printf 'RDMX_VM_KVER=%q\n' "$kver"
  printf 'RDMX_VM_CWD=%q\n' "$PWD"
  printf 'RDMX_VM_CMD=('; printf '%q ' "$@"; printf ')\n'
  printf 'RDMX_VM_ENV=('; printf '%q ' "${cmdenv[@]}"; printf ')\n'
} >"$run/vm.env"
cp -- "$here/guest-init.sh" "$run/guest-init.sh"
: >"$run/out"
console="$run/console.log"

qemu_for() {  # qemu_for NODE CONSOLE: the command line of one guest, in qemu=()
  qemu=(qemu-system-x86_64
    -accel tcg,thread=multi -cpu max -smp 2 -m "$mem_mb"
    -display none -monitor none -serial "file:$2" -no-reboot -nic none
    -kernel "$vmlinuz" -initrd "$initrd"
    -append "console=ttyS0 quiet panic=-1 rdmx_run=$run rdmx_node=$1 rdmx_nodes=$nodes"
    -virtfs local,path=/,mount_tag=hostroot,security_model=passthrough,multidevs=remap
  )
  # Two guests: one virtio-net each, the frames carried between the two
  # qemu processes as UDP datagrams on the host's loopback (nothing else
  # can reach those ports' traffic, and nothing leaves the host).
  if [ "$nodes" = 2 ]; then
    local me=$((link_port + $1)) peer=$((link_port + 1 - $1))
    qemu+=(-netdev "dgram,id=link,local.type=inet,local.host=127.0.0.1,local.port=$me,remote.type=inet,remote.host=127.0.0.1,remote.port=$peer"
           -device "virtio-net-pci,netdev=link,mac=52:54:00:56:00:0$1")
  fi
}
# Two UDP ports for the link, chosen at random and checked free.
link_port=0
if [ "$nodes" = 2 ]; then
  for _ in 1 2 3 4 5 6 7 8; do
    p=$((20000 + RANDOM % 20000 * 2))
    if ! ss -Huln "sport = :$p or sport = :$((p + 1))" 2>/dev/null | grep -q .; then link_port=$p; break; fi
  done
  [ "$link_port" != 0 ] || die "no free pair of UDP ports on 127.0.0.1 for the guests' link"
fi
qemu_for 0 "$console"
if [ "$numa" = 1 ]; then
  half=$((mem_mb / 2))
  qemu+=(
    -object "memory-backend-ram,id=rdmxmem0,size=${half}M"
    -object "memory-backend-ram,id=rdmxmem1,size=$((mem_mb - half))M"
    -numa node,nodeid=0,cpus=0,memdev=rdmxmem0
    -numa node,nodeid=1,cpus=1,memdev=rdmxmem1
  )
fi

console_tail() {
  echo "$prog: ---- last lines of the guest console ----" >&2
  tail -n 60 "$console" 2>/dev/null | tr -d '\r' >&2 || true
  if [ -s "$run/qemu.log" ]; then
    echo "$prog: ---- qemu ----" >&2
    tail -n 20 "$run/qemu.log" >&2
  fi
  echo "$prog: ----------------------------------------" >&2
}

start=$SECONDS
timeout -k 10 "$(remaining)" "${qemu[@]}" </dev/null >"$run/qemu.log" 2>&1 &
qpid=$!
if [ "$nodes" = 2 ]; then
  : >"$run/out1"
  qemu_for 1 "$run/console1.log"
  timeout -k 10 "$(remaining)" "${qemu[@]}" </dev/null >"$run/qemu1.log" 2>&1 &
  q1pid=$!
fi
tail -s 0.2 -n +1 -f --pid="$qpid" -- "$run/out" </dev/null &
tpid=$!
set +e
wait "$qpid"
qrc=$?
qpid=""
wait "$tpid"
tpid=""
set -e
elapsed=$((SECONDS - start))
if [ -n "$q1pid" ]; then
  # Node 1 may have powered off already (a test that pulls its plug).
  kill "$q1pid" 2>/dev/null || true
  wait "$q1pid" 2>/dev/null || true
  q1pid=""
  if [ "$(cat "$run/status" 2>/dev/null)" != 0 ]; then
    echo "$prog: ---- node 1 (vm1) output ----" >&2
    tail -n 40 "$run/out1" >&2 2>/dev/null || true
    echo "$prog: ---- node 1 console ----" >&2
    tail -n 20 "$run/console1.log" 2>/dev/null | tr -d '\r' >&2 || true
  fi
fi

if [ -s "$run/status" ]; then
  rc="$(cat "$run/status")"
  [[ "$rc" =~ ^[0-9]+$ ]] || { console_tail; die "garbled status '$rc' from the guest"; }
  if [ "$rc" = 125 ] && tail -n 1 "$run/out" | grep -q '^rdmx-vm: guest setup failed'; then
    console_tail
  fi
  exit "$rc"
fi
if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
  note "timed out after ${timeout_s}s (boot included); qemu killed"
  console_tail
  exit 124
fi
note "the guest stopped after ${elapsed}s without a result (qemu exit status $qrc)"
console_tail
exit 125
