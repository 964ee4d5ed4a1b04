#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# storm.sh - one node, 2 vCPUs: "rdma link delete" lands in a storm of
# remote-access registrations (rv_storm_test: two threads, each REG_MEM
# evicting and unpinning a 32 MiB victim after it left the device's read
# section), ROUNDS times at staggered moments.  Each round every thread
# must end with ENODEV and the removal within RM_BOUND seconds; the link
# comes back for the next round; at the end rv must unload.  A removal
# that pulls the device out from under a registration shows as an oops,
# which fails the group (run_tests.sh scans the kernel log).  On an rv
# built with CONFIG_INFINIBAND_RV_DEBUG_WINDOWS (make debug-module) each
# registration also sleeps 100 ms right after leaving the section
# (debug_window_ms), so the removal lands there nearly every round.

set -uo pipefail
# shellcheck source=tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"

: "${RV_NODE:?run me with rv-vm}" "${RV_IBDEV:?}" "${RV_OUT:?}"
ST=$RV_REPO/tools/testing/selftests/rv/rv_storm_test
ROUNDS=${RV_STORM_ROUNDS:-6}
RM_BOUND=30

netdev=$(rdma link show "$RV_IBDEV/1" | sed -n 's/.* netdev \([^ ]*\).*/\1/p')
window=/sys/module/rv/parameters/debug_window_ms
if [[ -w $window ]]; then
	echo 100 >"$window"
	tap_diag "debug_window_ms 100: each registration waits after its section"
fi
for ((r = 1; r <= ROUNDS; r++)); do
	out=$RV_OUT/storm.$r
	"$ST" -t 2 -m 32 -s "$(rv_secs 60)" >"$out" 2>&1 &
	pid=$!
	if ! rv_wait_until 30 grep -q '^storming' "$out"; then
		sed 's/^/# /' "$out"
		kill -KILL "$pid" 2>/dev/null
		wait "$pid"
		if [[ $? == 4 ]]; then
			tap_skip "round$r" "$(head -n 1 "$out")"
		else
			tap_fail "round$r-storming" "no storm"
		fi
		break
	fi
	# 0..450 ms into the storm: the removal meets the registrations at
	# another point of their cycle each round.
	sleep "0.$(((r * 150) % 500))"
	rv_link_delete "$RM_BOUND"
	tap_diag "round $r: rdma link delete: status $rv_rm_rc after $rv_rm_ms ms"
	tap_run "round$r-link-delete" test "$rv_rm_rc" = 0
	if rv_wait_until 30 rv_gone "$pid"; then
		wait "$pid"
		rc=$?
	else
		rc=timeout
		kill -KILL "$pid" 2>/dev/null
	fi
	tap_checks "round$r" <"$out"
	((TAP_CHECKS)) || tap_fail "round$r-checked" "rv_storm_test printed no check"
	tap_run "round$r-exit" test "$rc" = 0
	rv_wait_until 30 rv_gone "$rv_rm_pid" || break
	tap_run "round$r-link-add" rdma link add "$RV_IBDEV" type rxe \
		netdev "${netdev:-eth0}"
done
tap_run rmmod timeout 60 rmmod rv
tap_run reload rv_insmod
tap_end
