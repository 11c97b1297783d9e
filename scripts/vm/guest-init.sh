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

# This script reconfigures the machine it runs on and powers it off: make sure
# that is the guest (PID 1, booted by run.sh), never a host.
if [ "$$" != 1 ] || ! grep -qs 'rdmx_run=' /proc/cmdline; then
  echo "guest-init.sh: only for the rdmx Soft-RoCE guest (run by scripts/vm/run.sh)" >&2
  exit 2
fi

run="$1"
exec </dev/null >/dev/console 2>&1

# Which guest this is (run.sh --nodes 2 boots two: rdmx_node=0|1). Node 0
# writes "out" and "status", node 1 "out1" and "status1".
node=0
nodes=1
for arg in $(</proc/cmdline); do
  case "$arg" in
    rdmx_node=[01]) node=${arg#rdmx_node=} ;;
    rdmx_nodes=[12]) nodes=${arg#rdmx_nodes=} ;;
  esac
done
sfx=""
[ "$node" = 0 ] || sfx=$node

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
  printf 'rdmx-vm: guest setup failed: %s\n' "$*" >>"$run/out$sfx"
  echo 125 >"$run/status$sfx.tmp" && mv -f "$run/status$sfx.tmp" "$run/status$sfx"
  poweroff_now
}

trap 'setup_fail "guest-init.sh: unexpected error near line $LINENO"' ERR

[ -r "$run/vm.env" ] || setup_fail "cannot read $run/vm.env"
# Defines RDMX_VM_KROOT, RDMX_VM_KVER, RDMX_VM_CWD, RDMX_VM_CMD (array) and
# RDMX_VM_ENV (array of NAME=VALUE for the command's environment).
# shellcheck source=/dev/null
. "$run/vm.env"

# --- file systems ----------------------------------------------------------
# (Few external commands here: under TCG, with binaries read over 9p, every
# exec costs tens of milliseconds.) proc, sys and devtmpfs normally arrive
# mounted from the initramfs.
[ -e /proc/self/mounts ] || mount -t proc proc /proc
mounts="$(</proc/self/mounts)"
[[ "$mounts" == *" /sys sysfs "* ]] || mount -t sysfs sysfs /sys
[[ "$mounts" == *" /dev devtmpfs "* ]] || mount -t devtmpfs devtmpfs /dev
log "guest root mounted"
# Where a booted Debian has its cgroup v2 tree and systemd's system.slice
# (slurmd refuses to start without them, even with no cgroup-based plugin
# configured; scripts/slurm/cluster.sh tells it to do without systemd).
if mountpoint -q /sys/fs/cgroup || mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null; then
  mkdir -p /sys/fs/cgroup/system.slice
else
  log "no cgroup2 mount"
fi
mkdir -p /dev/pts /dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
# 9p cannot hold sockets or FIFOs: Open MPI / PMIx session dirs go to tmpfs.
mount -t tmpfs -o mode=755 tmpfs /run
mkdir -m 1777 /run/tmp
mkdir -m 755 /run/rdmx-vm

echo "vm$node" >/proc/sys/kernel/hostname
ulimit -l unlimited

# --- kernel modules from the cached guest kernel tree -----------------------
# The host's /lib/modules is left alone: modprobe -d points at the cache, and
# the kernel's own module requests (e.g. crypto-crc32 for rxe) use a wrapper.
read -r osrelease </proc/sys/kernel/osrelease
[ -d "$RDMX_VM_KROOT/lib/modules/$osrelease" ] ||
  setup_fail "no module tree for $osrelease under $RDMX_VM_KROOT"
printf '#!/bin/bash\nexec /sbin/modprobe -d %q "$@"\n' "$RDMX_VM_KROOT" >/run/rdmx-vm/modprobe
chmod 755 /run/rdmx-vm/modprobe
echo /run/rdmx-vm/modprobe >/proc/sys/kernel/modprobe
port_active() {
  local st=""
  read -r st 2>/dev/null <"/sys/class/infiniband/$1/ports/1/state" || true
  [[ "$st" == *ACTIVE* ]]
}

# One guest: two Soft-RoCE devices on the two ends of a veth pair.
one_node_fabric() {
/run/rdmx-vm/modprobe -a rdma_rxe rdma_ucm veth || setup_fail "modprobe rdma_rxe rdma_ucm veth"
log "modules loaded"

# --- veth pair + Soft-RoCE ---------------------------------------------------
ip -batch - <<'END_IP' || setup_fail "cannot set up the veth pair rv0/rv1"
link set lo up
link add rv0 mtu 9000 type veth peer name rv1 mtu 9000
addr add 10.55.0.1/24 dev rv0
addr add 10.55.0.2/24 dev rv1
link set rv0 up
link set rv1 up
END_IP

# Both ends live in one namespace: each side sees a local source address.
for c in all rv0 rv1; do echo 1 >"/proc/sys/net/ipv4/conf/$c/accept_local"; done
for c in all default rv0 rv1; do echo 0 >"/proc/sys/net/ipv4/conf/$c/rp_filter"; done
# RDMA READ responses burst >1000 packets into veth's backlog.
echo 100000 >/proc/sys/net/core/netdev_max_backlog

rdma -b - <<'END_RDMA' || setup_fail "rdma link add rxe0/rxe1 failed"
link add rxe0 type rxe netdev rv0
link add rxe1 type rxe netdev rv1
END_RDMA
log "rxe0/rxe1 added"

for ((i = 0; i < 200; i++)); do
  port_active rxe0 && port_active rxe1 && break
  sleep 0.1
done
port_active rxe0 && port_active rxe1 || setup_fail "rxe0/rxe1 ports did not become ACTIVE within 20 s"
# ... and as user space sees them (libibverbs + the rxe provider).
n="$(ibv_devinfo 2>/dev/null | grep -c PORT_ACTIVE || true)"
[ "$n" = 2 ] || setup_fail "ibv_devinfo shows $n PORT_ACTIVE ports, expected 2 (is ibverbs-providers installed?)"
log "soft-roce ready (rxe0 on rv0 10.55.0.1, rxe1 on rv1 10.55.0.2)"

}

# Two guests: rxe0 on the virtio-net link between them, 10.56.0.1 on vm0 and
# 10.56.0.2 on vm1 (MTU 9000: rxe's active MTU becomes 4096, as on one node).
two_node_fabric() {
  local me="10.56.0.$((node + 1))" dev="" d
  /run/rdmx-vm/modprobe -a rdma_rxe rdma_ucm virtio_net || setup_fail "modprobe rdma_rxe rdma_ucm virtio_net"
  for ((i = 0; i < 100; i++)); do
    for d in /sys/class/net/*; do [ -e "$d/device" ] && dev=${d##*/}; done
    [ -n "$dev" ] && break
    sleep 0.1
  done
  [ -n "$dev" ] || setup_fail "no virtio-net interface appeared"
  ip -batch - <<END_IP || setup_fail "cannot configure $dev"
link set lo up
link set $dev mtu 9000
addr add $me/24 dev $dev
link set $dev up
END_IP
  echo 100000 >/proc/sys/net/core/netdev_max_backlog
  rdma link add rxe0 type rxe netdev "$dev" || setup_fail "rdma link add rxe0 on $dev failed"
  for ((i = 0; i < 200; i++)); do port_active rxe0 && break; sleep 0.1; done
  port_active rxe0 || setup_fail "rxe0 did not become ACTIVE within 20 s"
  log "soft-roce ready (vm$node: rxe0 on $dev $me)"
}

if [ "$nodes" = 2 ]; then two_node_fabric; else one_node_fabric; fi

# --- the command -------------------------------------------------------------
trap - ERR
cd -- "$RDMX_VM_CWD" || setup_fail "cannot cd to $RDMX_VM_CWD"
log "running: ${RDMX_VM_CMD[*]}"
env -i "${RDMX_VM_ENV[@]}" RDMX_VM_NODE="$node" "${RDMX_VM_CMD[@]}" >>"$run/out$sfx" 2>&1 </dev/null
rc=$?
log "command exited with status $rc"
echo "$rc" >"$run/status$sfx.tmp" && mv -f "$run/status$sfx.tmp" "$run/status$sfx"
poweroff_now
