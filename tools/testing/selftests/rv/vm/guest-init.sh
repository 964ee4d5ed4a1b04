#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# guest-init.sh - PID 1 of an rv test VM, after the initramfs switched root
# to the host's file system (read-only 9p).  Not meant to be run by hand.
#
# Reads the run configuration rv-vm wrote to /run/rv/out/.rvvm/env, brings
# up eth0 with the node's address, creates the Soft-RoCE device rxe0 on it,
# loads rv.ko when it exists, then either runs the command (mode "run") or
# gives node 0 a shell on the serial console (mode "shell").
#
# Results go to the shared output directory (host: OUT/):
#   node<i>.out    stdout+stderr of the command (or of the setup on failure)
#   node<i>.dmesg  the kernel log after the command finished
#   node<i>.rc     exit status of the command (absent: VM died or timed out)
#   node<i>.boot   seconds since kernel start when the command began

set -uo pipefail	# no -e: PID 1 must always reach poweroff.

export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8 TERM=${TERM:-linux}
umask 022

outdir=/run/rv/out
node=
for arg in $(</proc/cmdline); do
	case $arg in
	rvvm_node=*) node=${arg#rvvm_node=} ;;
	esac
done

halt() {
	sync
	umount "$outdir" 2>/dev/null
	# busybox-static on the host root: poweroff(8) of systemd needs systemd.
	busybox poweroff -f 2>/dev/null
	echo o >/proc/sysrq-trigger
	sleep 30
}

if [[ -z $node || ! -r $outdir/.rvvm/env ]]; then
	echo "guest-init: no rvvm_node= or no $outdir/.rvvm/env" >/dev/console
	halt
fi
# shellcheck source=/dev/null
source "$outdir/.rvvm/env"
# From env (written by rv-vm): RV_NODES RV_NODE_IPS RV_IBDEV RV_KO RV_KO_ARGS
# RV_TIME_SCALE RV_REPO
# RVVM_MODE RVVM_CMD RVVM_MODDIR RVVM_PREFIX_LEN RVVM_TTY_ROWS RVVM_TTY_COLS
export RV_NODE=$node RV_NODES RV_NODE_IPS RV_IBDEV RV_KO RV_KO_ARGS RV_CLUSTER_KEY RV_TIME_SCALE RV_REPO
export RV_OUT=$outdir/node$node
mkdir -p "$RV_OUT"
log=$outdir/node$node.out
exec >"$log" 2>&1 </dev/null

mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts 2>/dev/null ||
	{ mkdir -p /dev/pts && mount -t devpts devpts /dev/pts; }
mkdir -p /dev/shm && mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
ln -sf /proc/self/fd /dev/fd
hostname "node$node"

setup_fail() {
	echo "guest-init: setup failed: $*"
	dmesg >"$outdir/node$node.dmesg"
	echo 125 >"$outdir/node$node.rc.setup"
	halt
}

# A kernel built elsewhere (debug kernel) brings its own modules directory;
# make modprobe find it at the standard place.  /lib/modules is read-only
# (9p), so shadow it with a tmpfs holding just that one bind mount.
kver=$(uname -r)
if [[ -n ${RVVM_MODDIR:-} &&
      $(readlink -f "$RVVM_MODDIR") != $(readlink -f "/lib/modules/$kver") ]]; then
	# Grab the directory before the tmpfs hides it (it may live under
	# /lib/modules itself).
	if ! { mkdir -p /run/rv/modules &&
		mount --bind "$RVVM_MODDIR" /run/rv/modules &&
		mount -t tmpfs tmpfs /lib/modules &&
		mkdir -p "/lib/modules/$kver" &&
		mount --move /run/rv/modules "/lib/modules/$kver"; }; then
		setup_fail "cannot use modules from $RVVM_MODDIR"
	fi
fi

my_ip=$(awk -v i=$((node + 1)) '{ print $i }' <<<"$RV_NODE_IPS")
modprobe virtio_net || setup_fail "modprobe virtio_net"
ip link set lo up
# rxe derives its path MTU from the netdev's.  1500 (rxe: 1024) measured
# both faster and lower-latency under TCG than 9000 (rxe: 4096).
ip link set eth0 mtu "${RVVM_MTU:-1500}" || setup_fail "eth0 mtu"
ip link set eth0 up || setup_fail "no eth0"
ip addr add "$my_ip/${RVVM_PREFIX_LEN:-24}" dev eth0 || setup_fail "ip addr"

modprobe rdma_rxe || setup_fail "modprobe rdma_rxe"
rdma link add "$RV_IBDEV" type rxe netdev eth0 || setup_fail "rdma link add"
# rxe's port follows the carrier of eth0; virtio-net's is up at once, but
# don't let a test race it.  Bounded: 5 s.
for ((i = 0; i < 50; i++)); do
	grep -q ACTIVE "/sys/class/infiniband/$RV_IBDEV/ports/1/state" 2>/dev/null && break
	sleep 0.1
done
grep -q ACTIVE "/sys/class/infiniband/$RV_IBDEV/ports/1/state" ||
	setup_fail "$RV_IBDEV port not ACTIVE"
# Also the user-space verbs device file the tests open.
modprobe ib_uverbs rdma_ucm 2>/dev/null

if [[ -f $RV_KO ]]; then
	# insmod does not resolve dependencies: load what rv.ko declares first.
	deps=$(modinfo -F depends "$RV_KO" 2>/dev/null | tr ',' ' ')
	for d in $deps; do
		modprobe "$d" || setup_fail "modprobe $d (needed by rv.ko)"
	done
	# shellcheck disable=SC2086 # RV_KO_ARGS: blank-separated parameters
	insmod "$RV_KO" ${RV_KO_ARGS:-} || setup_fail "insmod $RV_KO ${RV_KO_ARGS:-}"
	echo "guest-init: loaded $RV_KO"
else
	echo "guest-init: $RV_KO not built, rv not loaded"
fi

cd "$RV_REPO" || setup_fail "no $RV_REPO"
read -r up _ </proc/uptime
echo "$up" >"$outdir/node$node.boot"

if [[ $RVVM_MODE == shell && $node == 0 ]]; then
	stty -F /dev/ttyS0 rows "${RVVM_TTY_ROWS:-24}" cols "${RVVM_TTY_COLS:-80}" 2>/dev/null
	echo "rv-vm: node0 ready (${RV_NODES} nodes, $RV_NODE_IPS); exit the shell to stop" \
		>/dev/ttyS0
	# setsid -c: the serial line becomes the shell's controlling tty, so
	# job control and ^C work.
	setsid -c -w bash -l </dev/ttyS0 >/dev/ttyS0 2>&1
	rc=$?
elif [[ $RVVM_MODE == shell ]]; then
	echo "guest-init: node$node idle (shell mode), address $my_ip"
	sleep infinity
	rc=0
else
	bash -c "$RVVM_CMD"
	rc=$?
fi

# Debug kernel (CONFIG_DEBUG_KMEMLEAK, automatic scans off): end every run
# with a leak scan.  kmemleak reports an object only when it is older than
# 5 s and unchanged between two scans, hence the wait and the second scan.
# A report prints "kmemleak: N new suspected memory leaks" to the kernel
# log and the objects (with allocation backtraces) are appended to it:
# both fail the run through rv-vm's bad-dmesg scan.
kmemleak=/sys/kernel/debug/kmemleak
leaks=
if [[ -w $kmemleak ]]; then
	sleep 6
	echo scan >"$kmemleak"
	echo scan >"$kmemleak"
	leaks=$(cat "$kmemleak")
fi

dmesg >"$outdir/node$node.dmesg"
[[ -z $leaks ]] || printf '%s\n' "$leaks" >>"$outdir/node$node.dmesg"
echo "$rc" >"$outdir/node$node.rc"
halt
