#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# poll.sh - rv_poll_test between the two nodes of a group (see tests.list):
# node0 streams zero-byte writes with immediate to node1.
#
#   poll.sh [EVENTS]   a thread on each node sleeps in poll() whenever its
#                      ring is empty; no wakeup may be missed, every event
#                      arrives once (default 500000, $RV_POLL_EVENTS);
#                      then EVENTS / 5 more with the consumers taking one
#                      event per read ("one-" checks): each consumer
#                      goes back to poll() after every event, racing
#                      every post with a sleep; then EVENTS / 5 with two
#                      consumer threads on each ring ("two-" checks):
#                      each event reaches exactly one of them
#   poll.sh teardown   3 rounds: node1's process is SIGKILLed in the middle
#                      of the stream, so its QPs are torn down with
#                      receive completions still arriving (run with
#                      drain_timeout_ms=0: as if the device withheld its
#                      flushes), and node0's QPs with its writes on them:
#                      every write node0 posted must end in one event
#                      within 30 s; then rv must unload on both nodes.
#                      The harness fails the run on any KASAN or other
#                      report.

set -uo pipefail
# shellcheck source=tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"

: "${RV_NODE:?run me with rv-vm}" "${RV_NODES:?}" "${RV_IBDEV:?}" "${RV_OUT:?}"
T=$RV_REPO/tools/testing/selftests/rv
peer=$(rv_node_ip $((1 - RV_NODE)))
shared=$(dirname "$RV_OUT")/poll-barriers
mkdir -p "$shared"

teardown() {
	local round rc
	for round in 1 2 3; do
		rv_barrier "$shared" "round$round" || true
		if ((RV_NODE == 0)); then
			# Its writes fail once node1 is gone; every write it
			# posted must still end, the ones on QPs whose drain
			# timed out included ("round<N>-ended").
			"$T/rv_poll_test" -N 0 -n 1000000 -T "$(rv_secs 14)" \
				-k "$(rv_secs 30)" "$peer" \
				>"$RV_OUT/teardown.$round" 2>&1
			tap_checks "round$round" <"$RV_OUT/teardown.$round"
			((TAP_CHECKS)) || tap_fail "round$round-ran" "rv_poll_test printed no check"
		else
			timeout -s KILL "$(rv_secs 8)" "$T/rv_poll_test" -N 1 \
				-n 1000000 -T 60 "$peer" \
				>"$RV_OUT/teardown.$round" 2>&1
			rc=$?
			tap_run "killed-mid-stream-$round" test "$rc" -eq 137
		fi
	done
	rv_barrier "$shared" teardown-done 120 || true
	tap_run rmmod rmmod rv
}

if [[ ${1:-} == teardown ]]; then
	teardown
	tap_end
	exit
fi

events=${1:-${RV_POLL_EVENTS:-500000}}

# One rv_poll_test pair: $1 the checks' prefix, $2 events, the rest its
# options.  Both nodes start a pass together (a barrier): a pass's job
# (key "poll") is gone from both nodes before the next one connects.
pass() {
	local prefix=$1 n=$2 out=$RV_OUT/poll${1:+.$1}.out rc
	shift 2
	rv_barrier "$shared" "pass${prefix:+-$prefix}" || true
	timeout "$(rv_secs 1200)" "$T/rv_poll_test" -N "$RV_NODE" -n "$n" \
		-T "$(rv_secs 900)" "$@" "$peer" >"$out" 2>&1
	rc=$?
	tap_checks "$prefix" <"$out"
	if ((TAP_CHECKS == 0)); then
		tap_fail "${prefix:+$prefix-}poll-ran" "rv_poll_test exit status $rc, no check"
	else
		tap_run "${prefix:+$prefix-}exit-status" test "$rc" -eq 0
	fi
}

pass "" "$events"
pass one $((events / 5 > 0 ? events / 5 : 1)) -b 1
pass two $((events / 5 > 0 ? events / 5 : 1)) -c 2
tap_end
