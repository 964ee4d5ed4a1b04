#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# lockstat-write.sh - the locks rv's post path takes, from lockdep's lock
# statistics (CONFIG_LOCK_STAT: the debug kernel, see "make lockstat-write").
#
# Usage: lockstat-write.sh [rv-vm options...]   (on the host; the debug
#        kernel, its modules and its rv.ko come as rv-vm options)
#
# Boots 2 nodes.  Node 1 runs P = $LOCKSTAT_P rv_bench bw receivers; node 0
# P senders of one job (one job key: one connection to node 1, num_conn
# QPs), each with its own file and slot, posting 4 KiB writes in
# rv_post_writes batches, $LOCKSTAT_BYTES per sender (a few thousand writes
# in all: the debug kernel under TCG is slow).  Once all P are connected,
# node 0 clears and enables lock_stat, starts them together (rv_bench
# --start-after), and disables lock_stat when all P have reported their
# writes (all completed): connection setup is outside the window, each
# sender's teardown (about) too.  It then prints, from /proc/lock_stat,
# rv's lock classes and those of the device's post path (rxe's send queue
# lock), the classes most acquired in the window (xarrays, RCU, the
# device: whatever runs per write), with acquisitions, contentions and
# wait times, and the writes and POST_WRITES calls of the window, so that
# per-write figures can be read.
#
# The check (non-zero exit when it fails): no lock class whose instances
# the job's processes share (the connection's mutex, the node-wide and
# device-wide rv mutexes, the job's registration QP lock) is acquired per
# write or per call: each must show at most writes / $LOCKSTAT_RATIO
# acquisitions in the window (setup and teardown take a few, a number that
# does not grow with the writes).  Heartbeats take the connection's lock
# once per heartbeat_ms, however long the window: "make lockstat-write"
# loads rv with them off (heartbeat_ms=4294967295), the report says which.  Lock statistics count per class,
# not per instance, so per-file locks (rv_file.lock, the MR cache's, the
# ring's) count every process's acquisitions in one line; their
# contentions tell whether processes met on them.  As a control that the
# window was recorded, rv_file.lock must show at least one acquisition per
# POST_WRITES call.  SRCU and RCU read sections (the device's liveness,
# connection and slot lookups) are lockdep maps without lock statistics:
# lock_stat shows no acquisitions for them.
#
# Environment: LOCKSTAT_P (default 4), LOCKSTAT_BYTES per sender (default
# 8M: 2048 writes of 4 KiB), LOCKSTAT_ARGS (rv_bench options, default
# "-C 4 --sleep"), LOCKSTAT_RATIO (default 64), LOCKSTAT_SMP (vCPUs per
# node, default 2: the senders run at once), LOCKSTAT_OUT (default
# build/vm/lockstat-write/<time>).
#
# Inside a VM (RV_NODE set by rv-vm) the script plays its node's part.

set -euo pipefail

P=${LOCKSTAT_P:-4}
BYTES=${LOCKSTAT_BYTES:-8M}
ARGS=${LOCKSTAT_ARGS:--C 4 --sleep}
RATIO=${LOCKSTAT_RATIO:-64}
PORT=19500

# rv's classes shared by the processes of a job (lockdep names them after
# the lock expression; "#N" tells apart classes of the same name, "-R"/"-W"
# the two sides of an rwsem): the check's subjects.
SHARED='^(&conn->lock|rv_conn_list_lock|&dev->jobs_lock|rv_uid_lock|rv_devices_lock|rv_cm_listen_lock|&f->lock)(#[0-9]+)?(-[RW])?$'
# Printed always: the above, rv's per-file and per-QP classes, rxe's send
# queue lock.
RV_CLASSES='^(&rf->lock|&cache->lock|&ring->lock|&qp->sq_lock|&qp->sq\.sq_lock|&conn->lock|rv_conn_list_lock|&dev->jobs_lock|rv_uid_lock|rv_devices_lock|rv_cm_listen_lock|&f->lock)(#[0-9]+)?(-[RW])?$'

# /proc/lock_stat -> "name con wait_max wait_total acq hold_total" per
# class, times in us.  Version 0.4 has 12 figures per class (with the
# averages), 0.3 has 10.
lockstat_rows() {
	awk '
	$1 ~ /:$/ && (NF == 13 || NF == 11) {
		for (i = 2; i <= NF; i++)
			if ($i !~ /^[0-9.]+$/)
				next
		name = substr($1, 1, length($1) - 1)
		if (NF == 13)
			print name, $3, $5, $6, $9, $12
		else
			print name, $3, $5, $6, $8, $11
	}' "$1"
}

# lock_rows lines on stdin -> the report's table; $1: writes.
lock_table() {
	awk -v w="$1" '{
		printf "%-26s %12d %9.3f %11d %11.2f %13.2f %13.2f\n", $1, $5,
		       w ? $5 / w : 0, $2, $3, $4, $6
	}'
}

guest_sender() {
	local bench=$1 peer=$2 go=$RV_OUT/go j t pids=() rc=0 tmo
	local writes calls secs t0 t1
	tmo=$((300 * ${RV_TIME_SCALE:-1}))
	if [[ ! -w /proc/sys/kernel/lock_stat || ! -r /proc/lock_stat ]]; then
		echo "lockstat-write: no /proc/lock_stat: needs CONFIG_LOCK_STAT (the debug kernel)" >&2
		return 1
	fi
	rm -f "$go"
	for ((j = 0; j < P; j++)); do
		# shellcheck disable=SC2086
		timeout "$tmo" "$bench" bw -c "$peer" -P $((PORT + j)) -s 4K \
			-B "$BYTES" -T $((60 * ${RV_TIME_SCALE:-1})) -k rvlock \
			--start-after "$go" $ARGS >"$RV_OUT/send.$j.log" 2>&1 &
		pids+=($!)
	done
	# All connected (rv_bench gives up on its own after 120 s).
	for ((t = 0; t < 600 * ${RV_TIME_SCALE:-1}; t++)); do
		(($(cat "$RV_OUT"/send.*.log | grep -c '^rv_bench bw:') >= P)) && break
		sleep 0.2
	done
	echo 0 >/proc/lock_stat
	echo 1 >/proc/sys/kernel/lock_stat
	t0=$(date +%s.%N)
	touch "$go"
	# The window ends when every sender has printed its bw row: its
	# writes are all posted and completed.
	for ((t = 0; t < 5 * tmo; t++)); do
		(($(cat "$RV_OUT"/send.*.log | grep -c '^bw ') >= P)) && break
		sleep 0.2
	done
	echo 0 >/proc/sys/kernel/lock_stat
	t1=$(date +%s.%N)
	cp /proc/lock_stat "$RV_OUT/lock_stat"
	for j in "${pids[@]}"; do
		wait "$j" || rc=1
	done
	for ((j = 0; j < P; j++)); do
		((rc == 0)) || cat "$RV_OUT/send.$j.log" >&2
	done
	((rc == 0)) || return 1

	# bw row: bw size conn api writes window MB/s.snd MB/s.rcv calls ...
	writes=$(awk '$1 == "bw" { n += $5 } END { print n + 0 }' "$RV_OUT"/send.*.log)
	calls=$(awk '$1 == "bw" { n += $9 } END { print n + 0 }' "$RV_OUT"/send.*.log)
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
	lockstat_rows "$RV_OUT/lock_stat" >"$RV_OUT/lock_rows"

	echo "lockstat-write: $P rv_bench bw senders of one job on node0 (options: $ARGS), 4 KiB writes in rv_post_writes batches to node1, $(uname -r), rv heartbeat_ms $(cat /sys/module/rv/parameters/heartbeat_ms)"
	echo "window: $secs s, writes posted $writes, POST_WRITES calls $calls ($(awk -v w="$writes" -v c="$calls" 'BEGIN { printf "%.1f", c ? w / c : 0 }') writes per call)"
	printf "%-26s %12s %9s %11s %11s %13s %13s\n" class acquisitions \
		per-write contentions wait-max-us wait-total-us hold-total-us
	echo "rv's classes of the post path and the job-shared ones, rxe's send queue lock:"
	awk -v re="$RV_CLASSES" '$1 ~ re' "$RV_OUT/lock_rows" | sort -k5,5nr |
		lock_table "$writes"
	echo "the 12 classes most acquired in the window:"
	sort -k5,5nr "$RV_OUT/lock_rows" | head -n 12 | lock_table "$writes"

	awk -v w="$writes" -v c="$calls" -v r="$RATIO" -v re="$SHARED" '
	BEGIN { bad = 0; bound = int(w / r) }
	$1 ~ re { acq[$1] = $5 }
	$1 ~ /^&rf->lock(#[0-9]+)?$/ { ctl += $5 }
	END {
		if (w < 16 * r) {
			printf "FAIL: %d writes in the window: fewer than %d, too few to tell O(1) from O(writes)\n", w, 16 * r
			exit 1
		}
		if (ctl < c) {
			printf "FAIL: control: rv_file.lock acquired %d times for %d POST_WRITES calls: lock_stat did not record the window\n", ctl, c
			exit 1
		}
		printf "control: rv_file.lock (per file, one class) acquired %d times for %d calls\n", ctl, c
		printf "check: classes shared by the job'"'"'s processes, at most writes/%d = %d acquisitions each:\n", r, bound
		n = 0
		for (k in acq) {
			n++
			ok = acq[k] <= bound
			if (!ok)
				bad = 1
			printf "  %-24s %8d %s\n", k, acq[k], ok ? "ok" : "FAIL (per write or per call)"
		}
		if (!n)
			print "  (none acquired in the window)"
		print bad ? "FAIL" : "PASS: no job-wide lock on the post path"
		exit bad
	}' "$RV_OUT/lock_rows"
}

guest_receiver() {
	local bench=$1 j pids=() rc=0 tmo
	tmo=$((300 * ${RV_TIME_SCALE:-1}))
	for ((j = 0; j < P; j++)); do
		# shellcheck disable=SC2086
		timeout "$tmo" "$bench" bw -S -P $((PORT + j)) -s 4K -k rvlock \
			$ARGS >"$RV_OUT/recv.$j.log" 2>&1 &
		pids+=($!)
	done
	for j in "${pids[@]}"; do
		wait "$j" || rc=1
	done
	if ((rc)); then
		cat "$RV_OUT"/recv.*.log >&2
	fi
	return $rc
}

if [[ -n ${RV_NODE:-} ]]; then
	bench=$RV_REPO/tools/testing/selftests/rv/rv_bench
	read -r _ peer _ <<<"$RV_NODE_IPS"
	if ((RV_NODE == 0)); then
		guest_sender "$bench" "$peer"
	else
		guest_receiver "$bench"
	fi
	exit
fi

# ---- host ----
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../../../.." && pwd)
if [[ ! -x $here/../rv_bench ]]; then
	echo "lockstat-write.sh: $here/../rv_bench not built (make all)" >&2
	exit 1
fi
out=${LOCKSTAT_OUT:-$repo/build/vm/lockstat-write/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
rc=0
"$here/../vm/rv-vm" run --nodes 2 --smp "${LOCKSTAT_SMP:-2}" --timeout 1800 --out "$out/vm" "$@" -- \
	"LOCKSTAT_P=$P LOCKSTAT_BYTES=$BYTES LOCKSTAT_ARGS='$ARGS' LOCKSTAT_RATIO=$RATIO $here/lockstat-write.sh" ||
	rc=$?
# The report: node 0's output from its first line on.
sed -n '/^lockstat-write: /,$p' "$out/vm/node0.out" 2>/dev/null | tee "$out/report.txt"
[[ -s $out/report.txt ]] || rc=1
echo "lockstat-write: output in $out (rc $rc)"
exit $rc
