#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# uffd.sh - one node: calls that wait on user space do not hold up the
# device.  rv_uffd_test hold blocks REG_MEM (the rkeys array it writes)
# and POST_WRITES (the array it reads) on memory a userfaultfd never fills.  Meanwhile another
# process's calls must return, "rdma link delete" must finish within
# RM_BOUND seconds, and calls after it must fail with ENODEV at once.
# Then the userfaultfd is closed (the two calls return), the link comes
# back, and rv must unload.  Every wait is bounded.

set -uo pipefail
# shellcheck source=tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"

: "${RV_NODE:?run me with rv-vm}" "${RV_IBDEV:?}" "${RV_OUT:?}"
T=$RV_REPO/tools/testing/selftests/rv
UT=$T/rv_uffd_test
RM_BOUND=10

blocked() {
	grep -q '^blocked' "$RV_OUT/hold.out"
}

"$UT" hold >"$RV_OUT/hold.out" 2>&1 &
holder=$!
if ! rv_wait_until 30 blocked; then
	sed 's/^/# /' "$RV_OUT/hold.out"
	if grep -q 'userfaultfd:' "$RV_OUT/hold.out"; then
		tap_skip uffd-blocked "no userfaultfd"
		tap_end
		exit 0
	fi
	tap_fail uffd-blocked "REG_MEM and POST_WRITES did not block"
	kill -TERM "$holder" 2>/dev/null
	tap_end
	exit 1
fi
tap_ok uffd-blocked

tap_run probe-while-blocked timeout "$(rv_secs 10)" "$UT" probe
# Attached now, its calls made after the removal.
"$UT" probe-later >"$RV_OUT/later.out" 2>&1 &
later=$!
rv_wait_until 30 grep -q '^attached' "$RV_OUT/later.out" || true

netdev=$(rdma link show "$RV_IBDEV/1" | sed -n 's/.* netdev \([^ ]*\).*/\1/p')
rv_link_delete "$RM_BOUND"
rm_pid=$rv_rm_pid rc=$rv_rm_rc ms=$rv_rm_ms
tap_diag "rdma link delete: status $rc after $ms ms with REG_MEM and POST_WRITES blocked on a userfaultfd"
if [[ $rc == 0 ]]; then
	tap_ok link-delete-bounded
else
	tap_fail link-delete-bounded "status $rc after $ms ms, bound $(rv_secs "$RM_BOUND") s"
fi
if [[ -d /sys/class/infiniband/$RV_IBDEV ]]; then
	tap_fail device-gone "$RV_IBDEV still there"
else
	tap_ok device-gone
fi

# The attached process's calls now fail with ENODEV, at once.
kill -USR1 "$later"
if rv_wait_until 10 rv_gone "$later"; then
	wait "$later"
	rc=$?
	if ((rc == 0)) && grep -q '^probe ENODEV' "$RV_OUT/later.out"; then
		tap_ok calls-after-removal
	else
		tap_fail calls-after-removal "status $rc: $(tr '\n' ' ' <"$RV_OUT/later.out")"
	fi
else
	tap_fail calls-after-removal "still inside rv 10 s after the removal"
	kill -KILL "$later"
fi

kill -USR1 "$holder"
if rv_wait_until 20 rv_gone "$holder"; then
	wait "$holder"
	tap_run holder-released test $? -eq 0
else
	tap_fail holder-released "still blocked after the userfaultfd was closed"
	kill -KILL "$holder"
fi
sed 's/^/# /' "$RV_OUT/hold.out"
# The removal, if it was still waiting, can end now.
rv_wait_until 60 rv_gone "$rm_pid" || tap_diag "rdma link delete still running"

tap_run rmmod timeout 60 rmmod rv
tap_run link-add rdma link add "$RV_IBDEV" type rxe netdev "${netdev:-eth0}"
tap_run reload rv_insmod
tap_end
