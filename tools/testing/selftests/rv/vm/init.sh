#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# /init of the rv test VM initramfs (busybox sh, PID 1).
#
# Mounts the host's root file system (9p tag "hostroot", read-only) on
# /newroot, puts tmpfs wherever the guest needs to write, mounts the per-run
# output directory (9p tag "rvout", read-write) on /run/rv/out, then
# switch_root's into the host root and execs the guest script named by
# rvvm_init= on the kernel command line (guest-init.sh of the repo).

PATH=/bin
export PATH

# CONFIG_DEVTMPFS_MOUNT is off in Debian's kernel and the initramfs has no
# /dev/console node: the kernel started us without stdio.
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1

fail() {
	echo "rvvm-init: FATAL: $*"
	# Power off rather than panic: rv-vm then sees no .rc file and reports
	# the failure at once instead of waiting for its timeout.
	poweroff -f
	sleep 10
}

mount -t proc proc /proc || fail "mount /proc"
mount -t sysfs sysfs /sys || fail "mount /sys"

while read -r m; do
	insmod "/lib/modules/$m" || fail "insmod $m"
done </lib/modules/load.order

rvvm_init=
rvvm_repo=
# shellcheck disable=SC2013	# words, not lines, are wanted
for arg in $(cat /proc/cmdline); do
	case $arg in
	rvvm_init=*) rvvm_init=${arg#rvvm_init=} ;;
	rvvm_repo=*) rvvm_repo=${arg#rvvm_repo=} ;;
	esac
done
[ -n "$rvvm_init" ] || fail "no rvvm_init= on the kernel command line"

# msize: 9p's per-request payload; 512000 keeps large reads (binaries,
# modules) to few round trips.  cache=loose: the export is read-only for
# the guest and the host files it uses do not change during a run, so page
# cache and dentry caching are safe and make exec/stat much cheaper.
# The virtio devices may still be probing right after insmod; retry briefly.
i=0
until mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose \
	hostroot /newroot 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 50 ] || fail "cannot mount 9p hostroot"
	sleep 0.1
done

# Writable places.  The host root is read-only; these are what the guest
# scripts, rdma-core, perftest and a login shell write to.  A repo checked
# out below one of them (a CI clone in /tmp, say) would be hidden by the
# tmpfs: hold it aside and put it back on top.
[ -n "$rvvm_repo" ] || fail "no rvvm_repo= on the kernel command line"
held=
for d in tmp run var/tmp var/log root; do
	case $rvvm_repo/ in
	/$d/*)
		mkdir -p /held
		mount --bind "/newroot$rvvm_repo" /held || fail "hold $rvvm_repo"
		held=1
		;;
	esac
	mount -t tmpfs -o mode=0755,size=50% tmpfs "/newroot/$d" ||
		fail "tmpfs on /$d"
done
chmod 1777 /newroot/tmp /newroot/var/tmp
if [ -n "$held" ]; then
	mkdir -p "/newroot$rvvm_repo"
	mount --move /held "/newroot$rvvm_repo" || fail "restore $rvvm_repo"
fi

mkdir -p /newroot/run/rv/out
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 rvout \
	/newroot/run/rv/out || fail "cannot mount 9p rvout"

# Hand the pseudo file systems over to the new root.
mount --move /dev /newroot/dev || fail "move /dev"
mount --move /proc /newroot/proc || fail "move /proc"
mount --move /sys /newroot/sys || fail "move /sys"

# shellcheck disable=SC2093	# fail only runs if the exec fails
exec switch_root /newroot "$rvvm_init"
fail "switch_root $rvvm_init"
