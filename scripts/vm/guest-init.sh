#!/bin/bash
# PID 1 of the rdmx Soft-RoCE guest, run from the host's root file system
# (shared over 9p) after the initramfs switched root into it.
# Usage (by the initramfs only): guest-init.sh RUNDIR
#
# RUNDIR is the per-run directory that scripts/vm/run.sh created on the host;
# it holds vm.env (what to run, and where), and receives "out" (the command's
# stdout+stderr) and "status" (its exit status). Progress goes to the serial
# console. Everything written here lands in RAM (tmpfs, the guest's own
# proc/sys/dev) except RUNDIR and whatever the command itself writes.
# See docs/softroce.md.

run="$1"
exec </dev/null >/dev/console 2>&1

log() { local up; read -r up _ </proc/uptime; echo "rdmx-vm [${up}s]: $*"; }

poweroff_now() {
  sync
  echo o >/proc/sysrq-trigger 2>/dev/null
  sleep 10
  /bin/busybox poweroff -f 2>/dev/null
  exit 1   # PID 1 exiting panics the kernel; panic=-1 + -no-reboot stops qemu
}

# A setup failure is reported as status 125, with the reason in the output.
setup_fail() {
  log "setup failed: $*"
  printf 'rdmx-vm: guest setup failed: %s\n' "$*" >>"$run/out"
  echo 125 >"$run/status.tmp" && mv -f "$run/status.tmp" "$run/status"
  poweroff_now
}

trap 'setup_fail "guest-init.sh: unexpected error near line $LINENO"' ERR

[ -r "$run/vm.env" ] || setup_fail "cannot read $run/vm.env"
# Defines RDMX_VM_KROOT, RDMX_VM_KVER, RDMX_VM_CWD, RDMX_VM_CMD (array) and
# RDMX_VM_ENV (array of NAME=VALUE for the command's environment).
# shellcheck source=/dev/null
. "$run/vm.env"

# --- file systems ----------------------------------------------------------
mountpoint -q /proc || mount -t proc proc /proc
log "guest root mounted"
mountpoint -q /sys || mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
# 9p cannot hold sockets or FIFOs: Open MPI / PMIx session dirs go to tmpfs.
mount -t tmpfs -o mode=755 tmpfs /run
mkdir -p /run/tmp /run/rdmx-vm
chmod 1777 /run/tmp

echo vm0 >/proc/sys/kernel/hostname
ulimit -l unlimited
ip link set lo up

# --- kernel modules from the cached guest kernel tree -----------------------
# The host's /lib/modules is left alone: modprobe -d points at the cache, and
# the kernel's own module requests (e.g. crypto-crc32 for rxe) use a wrapper.
printf '#!/bin/bash\nexec /sbin/modprobe -d %q "$@"\n' "$RDMX_VM_KROOT" >/run/rdmx-vm/modprobe
chmod 755 /run/rdmx-vm/modprobe
echo /run/rdmx-vm/modprobe >/proc/sys/kernel/modprobe
[ -d "$RDMX_VM_KROOT/lib/modules/$(uname -r)" ] ||
  setup_fail "no module tree for $(uname -r) under $RDMX_VM_KROOT"
log "loading modules"
/run/rdmx-vm/modprobe -a rdma_rxe rdma_ucm veth || setup_fail "modprobe rdma_rxe rdma_ucm veth"
log "modules loaded"

# --- veth pair + Soft-RoCE ---------------------------------------------------
ip link add rv0 mtu 9000 type veth peer name rv1 mtu 9000 || setup_fail "cannot create veth pair"
ip addr add 10.55.0.1/24 dev rv0
ip addr add 10.55.0.2/24 dev rv1
ip link set rv0 up
ip link set rv1 up

# Both ends live in one namespace: each side sees a local source address.
for c in all rv0 rv1; do echo 1 >"/proc/sys/net/ipv4/conf/$c/accept_local"; done
for c in all default rv0 rv1; do echo 0 >"/proc/sys/net/ipv4/conf/$c/rp_filter"; done
# RDMA READ responses burst >1000 packets into veth's backlog.
echo 100000 >/proc/sys/net/core/netdev_max_backlog

log "veth ready"
rdma link add rxe0 type rxe netdev rv0 || setup_fail "rdma link add rxe0"
rdma link add rxe1 type rxe netdev rv1 || setup_fail "rdma link add rxe1"

log "rxe links added"
active=0
for _ in $(seq 1 200); do
  active=1
  for d in rxe0 rxe1; do
    grep -q ACTIVE "/sys/class/infiniband/$d/ports/1/state" 2>/dev/null || active=0
  done
  [ "$active" = 1 ] && break
  sleep 0.1
done
[ "$active" = 1 ] || setup_fail "rxe0/rxe1 ports did not become ACTIVE within 20 s"
# ... and as user space sees them (libibverbs + the rxe provider).
n="$(ibv_devinfo 2>/dev/null | grep -c PORT_ACTIVE || true)"
[ "$n" = 2 ] || setup_fail "ibv_devinfo shows $n PORT_ACTIVE ports, expected 2 (is ibverbs-providers installed?)"
log "soft-roce ready (rxe0 on rv0 10.55.0.1, rxe1 on rv1 10.55.0.2)"

# --- the command -------------------------------------------------------------
trap - ERR
cd -- "$RDMX_VM_CWD" || setup_fail "cannot cd to $RDMX_VM_CWD"
log "running: ${RDMX_VM_CMD[*]}"
env -i "${RDMX_VM_ENV[@]}" "${RDMX_VM_CMD[@]}" >>"$run/out" 2>&1 </dev/null
rc=$?
log "command exited with status $rc"
echo "$rc" >"$run/status.tmp" && mv -f "$run/status.tmp" "$run/status"
poweroff_now
