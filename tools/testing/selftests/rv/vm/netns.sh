#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# netns.sh - one node: ATTACH honours the RDMA subsystem's network
# namespace mode.  Shared mode (the default): a process in a new network
# namespace may attach to rxe0, like its verbs may open it.  Exclusive
# mode: rxe0 stays in the initial namespace, and a process in another one
# gets ENODEV from ATTACH even when it names the device's index directly
# (netlink no longer shows it there); the initial namespace still attaches.
# The mode is set back to shared at the end.  In shared mode, rv listens
# on cm_port in a namespace while it has a job there: the job's attach
# adds the namespace's listeners (cm_stats' listen_netns: 1 -> 2), its
# exit removes them (back to 1).

set -uo pipefail
# shellcheck source=tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"

: "${RV_NODE:?run me with rv-vm}" "${RV_IBDEV:?}" "${RV_OUT:?}"
HOLD=$RV_REPO/tools/testing/selftests/rv/rv_hold

tap_begin

# A kernel without CONFIG_NET_NS (the debug kernel) has no namespace to test.
if ! unshare -n true 2>/dev/null; then
	tap_skip netns "no network namespaces (CONFIG_NET_NS)"
	tap_end
	exit 0
fi

# set_mode MODE: the kernel refuses a mode change (EBUSY) while any
# namespace but the initial one exists, and a namespace of an exited
# process is freed by a work item: retry for 20 s.
set_mode() {
	local i
	for ((i = 0; i < 100; i++)); do
		rdma system set netns "$1" 2>/dev/null && return 0
		sleep 0.2
	done
	rdma system set netns "$1"
}

# hold_in_new_netns ARGS...: rv_hold in a network namespace of its own,
# with its stdin at EOF (attach, report, close).
hold_in_new_netns() {
	unshare -n "$HOLD" "$@" </dev/null
}

idx=$(rdma dev show "$RV_IBDEV" | sed -n 's/^\([0-9]*\): .*/\1/p')
if [[ -z $idx ]]; then
	tap_fail netns-device-index "rdma dev show $RV_IBDEV gave no index"
	tap_end
	exit 1
fi
tap_diag "$RV_IBDEV is device $idx; $(rdma system show netns)"

cmport=$(cat /sys/module/rv/parameters/cm_port)

# The namespaces rv listens in.
listeners() {
	sed -n 's/^listen_netns //p' /sys/kernel/debug/rv/cm_stats
}

# For the record: rv's ids on cm_port that restrack shows.
cm_port_ids() {
	rdma res show cm_id 2>/dev/null | grep 'comm \[rv\]' |
		sed -n 's/.* src-addr [^ ]*:\([0-9]*\).*/\1/p' |
		grep -cx "$cmport"
}

test_listeners_back() {
	[[ $(listeners) -eq $1 ]]
}

more_listeners() {
	[[ $(listeners) -gt $1 ]]
}

tap_run netns-shared-mode set_mode shared
tap_run netns-shared-attach-other-ns hold_in_new_netns -a -i "$idx"

n0=$(listeners)
tap_diag "listen_netns before: $n0; rv ids on cm_port $cmport: $(cm_port_ids)"
tap_run netns-init-listener test "$n0" -eq 1
# A pipe for its stdin (RV_OUT, a 9p share, takes no fifo): rv_hold
# keeps its job until the pipe is closed.
coproc HOLDP { unshare -n "$HOLD" -a -i "$idx" >"$RV_OUT/netns-hold.out" 2>&1; }
hpid=$HOLDP_PID
hin=${HOLDP[1]}
tap_run netns-listener-created rv_wait_until 20 more_listeners "$n0"
tap_diag "listen_netns with a job in a new namespace: $(listeners); rv ids on cm_port: $(cm_port_ids)"
exec {hin}>&-
wait "$hpid"
tap_run netns-hold-exit test $? -eq 0
tap_run netns-listener-destroyed rv_wait_until 20 test_listeners_back "$n0"
tap_run netns-exclusive-mode set_mode exclusive
out=$(hold_in_new_netns -a -i "$idx" 2>&1)
rc=$?
tap_diag "$out"
if [[ $rc -ne 0 && $out == *"rv_attach: No such device"* ]]; then
	tap_ok netns-exclusive-other-ns-enodev
else
	tap_fail netns-exclusive-other-ns-enodev \
		"exit status $rc, want 1 with rv_attach: No such device (ENODEV)"
fi
tap_run netns-exclusive-init-ns-attach "$HOLD" -a -i "$idx" </dev/null
tap_run netns-back-to-shared set_mode shared

tap_end
