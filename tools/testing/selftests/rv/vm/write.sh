#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# write.sh - rv's data path across VMs; runs on every node of a group (see
# tests.list) and drives rv_write_test:
#
#   write.sh pair   2 nodes: a verified stream with random sizes and
#                   16 MiB / 8 MiB + 1 / 8 MiB writes (split by size
#                   where rxe's largest message is 8 MiB, 6.1; 6.12's
#                   takes 2 GiB: split-by-size is a SKIP there), 2
#                   processes per node, then 4 processes per node
#                   posting batches through one connection at once;
#                   a batch whose middle write is bad; error completions (bad
#                   rkey, remote range outside the MR, remote MR munmapped
#                   mid-stream) next to an unaffected job; ring overflow,
#                   poll() wake-up, writes to a slot nobody holds; EAGAIN
#                   under a small conn_wqe_budget (rv reloaded)
#   write.sh a2a    3 nodes x 4 processes: every process writes to every
#                   process of the other nodes at once, verified (rv
#                   reloaded with ack_timeout=17, 20 on the debug kernel)
#   write.sh slot   2 nodes: slot reuse.  A process leaves in the middle
#                   of a stream to its slot, which goes on for 2 s after:
#                   those writes are dropped and counted (drops_no_slot),
#                   never delivered to the processes attaching next, which
#                   get other slots; ATTACH is EAGAIN while the only free
#                   slot is in quarantine (slot_quarantine_ms), and gets
#                   it once the quarantine is over, with only new writes
#
# rv_write_test prints kselftest TAP; each result becomes one of this script's
# "<phase>-<name>", plus one per phase for its exit status.  Processes
# meet through files in the run's shared output directory; every wait in
# rv_write_test is bounded (-T), and timeout(1) bounds it once more.

set -uo pipefail
# shellcheck source=tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"

: "${RV_NODE:?run me with rv-vm}" "${RV_NODES:?}" "${RV_IBDEV:?}" "${RV_OUT:?}"
mode=${1:?usage: write.sh pair|a2a|slot}
me=$RV_NODE
T=$RV_REPO/tools/testing/selftests/rv
WT=$T/rv_write_test
shared=$(dirname "$RV_OUT")/write-rdv
mkdir -p "$shared"
read -r -a ips <<<"$RV_NODE_IPS"

# barrier NAME [SECONDS]: wait until every node reached NAME.
barrier() {
	rv_barrier "$shared" "$@"
}

# phase NAME SECONDS ARGS...: one rv_write_test run as TAP results.
phase() {
	local name=$1 nominal=$2 secs out rc=0
	secs=$(rv_secs "$nominal")
	shift 2
	barrier "start-$name" || true
	out=$(timeout $((secs + 60)) "$WT" -D "$shared" -N "$me" -T "$secs" \
		"$@" "${ips[@]}" 2>&1) || rc=$?
	tap_checks "$name" <<<"$out"
	if [[ $rc -eq 4 ]]; then
		tap_skip "$name" "no rv or no RDMA device"
	elif [[ $rc -eq 0 && $TAP_CHECKS -gt 0 ]]; then
		tap_ok "$name"
	else
		tap_fail "$name" "exit status $rc, $TAP_CHECKS checks"
	fi
	barrier "end-$name" $((nominal + 90)) || true
}

pair() {
	phase stream 200 -m stream -k ws -P 2 -b $((4 << 20)) -M 20 \
		-B 16777216,8388609,8388608
	# Sources of scattered 4 KiB pages: writes split by SGEs (rxe's DMA
	# addresses are kernel addresses: no IOMMU merges them).
	phase stream-sge 200 -m stream -k wsg -P 2 -b $((2 << 20)) -M 20 \
		-B 4194304,1048577 -S
	stream_p4
	phase errors 200 -m errors -k we -P 2 -b $((2 << 20)) -M 18
	phase ring 120 -m ring -k wr -P 3
	# EAGAIN: a budget far below the default.  rv refuses values below
	# its minimum (16; 256 before): then 256, with one QP per
	# connection and writes posted faster than rxe moves them.
	barrier before-reload || true
	if rmmod rv; then
		rv_insmod conn_wqe_budget=16 2>/dev/null ||
			tap_run insmod-small-budget rv_insmod conn_wqe_budget=256
	else
		tap_fail rmmod-for-small-budget
	fi
	grep -qw '^rv' /proc/modules || rv_insmod
	tap_diag "conn_wqe_budget=$(cat /sys/module/rv/parameters/conn_wqe_budget 2>/dev/null)"
	barrier after-reload || true
	phase eagain 200 -m eagain -k wg -P 1 -c 1 -F 16384 -C 1024
	barrier before-restore || true
	tap_run reload-default rv_reload
}

# 4 processes of one job per node post POST_WRITES batches at once through
# the same connection (rv posts without a job-wide lock and chains each
# batch's work requests): every write ends exactly once, with its own
# wr_id, and the data is verified.  8 busy processes on 2 emulated CPUs:
# the longer ack_timeout of a2a, for the same reason.
stream_p4() {
	barrier before-reload-p4 || true
	tap_run reload-ack-timeout-p4 rv_reload "$(rv_ack_timeout_busy)"
	barrier after-reload-p4 || true
	phase stream-p4 200 -m stream -k ws4 -P 4 -b $((1 << 19)) -M 14
	barrier before-restore-p4 || true
	tap_run reload-default-p4 rv_reload
}

a2a() {
	# 3 VMs on 2 host cores: a longer ack_timeout (see tap.sh), or QPs
	# fail with RETRY_EXC_ERR without any fault injected (an error event,
	# not a data-path bug: write-pair and rel-* test that path).
	barrier before-reload || true
	tap_run reload-ack-timeout rv_reload "$(rv_ack_timeout_busy)"
	barrier after-reload || true
	phase a2a 220 -m stream -k wa -P 4 -b $((1 << 20)) -M 18
	barrier before-restore || true
	tap_run reload-default rv_reload
}

slot() {
	tap_diag "slot_quarantine_ms=$(cat /sys/module/rv/parameters/slot_quarantine_ms 2>/dev/null)"
	phase slot 120 -m slot -k wq -P 5
}

tap_begin
tap_diag "node$me of $RV_NODES ($RV_NODE_IPS), mode $mode"
if [[ ! -x $WT ]] || ! grep -qw '^rv' /proc/modules; then
	tap_skip "write-$mode" "rv_write_test not built or rv not loaded"
	tap_end
	exit
fi
case $mode in
pair) pair ;;
a2a) a2a ;;
slot) slot ;;
*)
	echo "unknown mode $mode" >&2
	exit 2
	;;
esac
tap_end
