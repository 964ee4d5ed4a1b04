#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# uring.sh - writes through io_uring (RV_URING_CMD_POST_WRITE) between two
# nodes; runs on both nodes of the "uring" group (tests.list) and drives
# rv_uring_test: node 1 is the target, node 0 the sender, which tries the
# hostile commands (ring without SQE128, unknown cmd_op, flags/rsvd, a
# file not attached, a ring of another process), streams verified writes
# by ioctl, through io_uring and through io_uring with SQPOLL, counting
# its system calls per write, then disables io_uring (sysctl where it
# exists, seccomp) and checks the fallback to the ioctls.
#
# RV_URING_WRITES (default 3000) writes per phase (the eagain phase: 64 KiB
# writes, all at once, EAGAIN answers posted again).  rv_uring_test's checks
# become this script's results, plus one for its exit status.

set -uo pipefail
# shellcheck source=tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"

: "${RV_NODE:?run me with rv-vm}" "${RV_NODES:?}" "${RV_OUT:?}"
T=$RV_REPO/tools/testing/selftests/rv
UT=$T/rv_uring_test
shared=$(dirname "$RV_OUT")/uring-rdv
mkdir -p "$shared"
read -r -a ips <<<"$RV_NODE_IPS"

tap_begin
tap_diag "node$RV_NODE of $RV_NODES ($RV_NODE_IPS)"
if [[ ! -x $UT ]] || ! grep -qw '^rv' /proc/modules; then
	tap_skip uring "rv_uring_test not built or rv not loaded"
	tap_end
	exit
fi
secs=$(rv_secs 240)
rc=0
out=$(timeout $((secs + 60)) "$UT" -D "$shared" -k ur -N "$RV_NODE" \
	-T "$secs" -n "${RV_URING_WRITES:-3000}" "${ips[@]}" 2>&1) || rc=$?
tap_checks uring <<<"$out"
if [[ $rc -eq 4 ]]; then
	tap_skip uring "no rv or no RDMA device"
elif [[ $rc -eq 0 && $TAP_CHECKS -gt 0 ]]; then
	tap_ok uring
else
	tap_fail uring "exit status $rc, $TAP_CHECKS checks"
fi
tap_end
