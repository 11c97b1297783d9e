#!/bin/busybox sh
# /init of the rdmx Soft-RoCE guest's initramfs (busybox sh, not bash).
# Built into the initramfs by scripts/vm/run.sh; see docs/softroce.md.
#
# Loads the virtio/9p modules, mounts the host's root file system (9p tag
# "hostroot") on /newroot and switch_root's into it, running the per-run
# guest-init.sh named on the kernel command line (rdmx_run=DIR) as PID 1.
# Switching root (rather than a plain chroot) keeps kernel module auto-loading
# working: the kernel's usermode helpers resolve paths in PID 1's root.

if [ "$$" != 1 ]; then
  echo "initrd-init.sh: only for the rdmx Soft-RoCE guest's initramfs" >&2
  exit 2
fi

/bin/busybox mkdir -p /proc /sys /dev /newroot
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
/bin/busybox mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1

say() { echo "rdmx-vm(initramfs): $*" > /dev/console; }

fail() {
  say "FATAL: $*"
  /bin/busybox sleep 1
  /bin/busybox poweroff -f
}

run=""
for arg in $(/bin/busybox cat /proc/cmdline); do
  case "$arg" in
    rdmx_run=*) run="${arg#rdmx_run=}" ;;
  esac
done
[ -n "$run" ] || fail "no rdmx_run= on the kernel command line"

say "loading virtio/9p modules"
# Modules in dependency order (computed on the host when the initramfs is built).
while read -r ko; do
  [ -n "$ko" ] || continue
  /bin/busybox insmod "/lib/rdmx-modules/$ko" || fail "insmod $ko failed"
done < /lib/rdmx-modules/order

i=0
until /bin/busybox mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 \
        hostroot /newroot 2>/dev/null; do
  i=$((i + 1))
  if [ "$i" -ge 50 ]; then
    /bin/busybox mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 hostroot /newroot
    /bin/busybox dmesg | /bin/busybox tail -n 15
    fail "cannot mount the 9p share 'hostroot'"
  fi
  /bin/busybox sleep 0.1
done

say "host root mounted over 9p, switching root"
[ -f "/newroot$run/guest-init.sh" ] || fail "missing $run/guest-init.sh on the share"

# Hand the kernel file systems over to the new root (over the host's
# directories, which the guest's mounts hide; nothing on the host changes).
for fs in dev proc sys; do
  /bin/busybox mount -o move "/$fs" "/newroot/$fs" || fail "cannot move /$fs"
done
exec /bin/busybox switch_root /newroot /bin/bash "$run/guest-init.sh" "$run"
