#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# caps.sh - one node: the per-uid caps on jobs and connections
# (max_jobs_per_uid, max_conns_per_uid).  rv is loaded with the defaults,
# which come from the guest's memory.  uid 65534 creates connections
# (then jobs) in a loop until refused: the count must be the cap and the
# errno EDQUOT; another process of that uid is refused at once, while
# another uid (65533) and root still create theirs; MemAvailable comes
# back after close; and the count is given back on every teardown path:
# close, SIGKILL of the holder, and close after the device was removed
# (each checked by reaching the cap again from zero).  Finally rv unloads
# (its count table must be empty: a WARNING otherwise, which fails the
# run) and is loaded again.  A uid mapped in a user namespace counts as
# the namespace's owner.

set -uo pipefail
# shellcheck source=tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"

: "${RV_NODE:?run me with rv-vm}" "${RV_IBDEV:?}" "${RV_OUT:?}"
HOLD=$RV_REPO/tools/testing/selftests/rv/rv_hold
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
OTHER=(setpriv --reuid=65533 --regid=65533 --clear-groups)
# One-page rings: 100 files stay far inside 65534's RLIMIT_MEMLOCK.
RING=(-r 64)
# What MemAvailable may lack after everything was closed, in kB: the
# helper's page cache (9p), and slab and per-CPU caches that keep freed
# objects, move it by a few MiB from one measurement to the next; 8 MiB
# is about 1% of the guest, a twelfth of what the connection cap lets
# connected connections hold (176 x 534 kB here).
TOLERANCE_KB=8192

tap_begin

param() {
	cat "/sys/module/rv/parameters/$1"
}

# MemAvailable plus the free pages parked on the per-CPU lists (their
# "count" in /proc/zoneinfo, in base pages), which MemFree leaves out:
# the pages a connection or job frees go back there first.
mem_avail_kb() {
	local avail pcp
	avail=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
	pcp=$(awk '$1 == "count:" { n += $2 } END { print n + 0 }' /proc/zoneinfo)
	echo $((avail + pcp * $(getconf PAGESIZE) / 1024))
}

# expect NAME LINE WANT: one result, LINE (rv_hold's count line) = WANT.
expect() {
	if [[ $2 == "$3" ]]; then
		tap_ok "$1"
	else
		tap_fail "$1" "got '$2', want '$3'"
	fi
}

# once NAME CMD...: an rv_hold that gives up at once; its count lines.
once() {
	local name=$1
	shift
	"$@" </dev/null >"$RV_OUT/hold-$name.out" 2>&1
	sed 's/^/# /' "$RV_OUT/hold-$name.out"
}

# userns_once NAME HOLD_ARGS...: once, as uid 7 of a user namespace that
# uid 65534 created and root gave 1000 uids (kuids 300000..300999), the
# way newuidmap maps a user's subordinate range.
userns_once() {
	local name=$1 pid pidfile=/dev/shm/rv-caps-userns.pid
	shift
	rm -f "$pidfile"
	"${NOBODY[@]}" unshare --user sh -c "echo \$\$ >$pidfile; exec sleep 600" &
	rv_wait_until 10 test -s "$pidfile"
	pid=$(cat "$pidfile")
	if echo "0 300000 1000" >"/proc/$pid/uid_map" &&
	   echo "0 300000 1000" >"/proc/$pid/gid_map"; then
		once "$name" nsenter --target "$pid" --user --setuid 7 --setgid 7 \
			"$HOLD" "$@"
	else
		echo "userns map failed" >"$RV_OUT/hold-$name.out"
	fi
	kill "$pid"
	wait "$pid" 2>/dev/null
}

gid_back() {
	[[ $(rv_gid_index "$RV_IBDEV" 2>/dev/null) =~ ^[0-9]+$ ]]
}

mem_returns() {
	now_kb=$(mem_avail_kb)
	((now_kb >= $1 - TOLERANCE_KB))
}

if [[ ! -x $HOLD ]] || ! grep -qw '^rv' /proc/modules; then
	tap_skip caps "rv_hold not built or rv not loaded"
	tap_end
	exit 0
fi

# The defaults: one connection per 4 MiB and one job per 8 MiB of RAM.
maxc=$(param max_conns_per_uid)
maxj=$(param max_jobs_per_uid)
ram=$(awk '/^MemTotal:/ { print $2 * 1024 }' /proc/meminfo)
want_c=$((ram / 4194304 < 64 ? 64 : ram / 4194304))
want_j=$((ram / 8388608 < 64 ? 64 : ram / 8388608))
tap_diag "MemTotal $((ram / 1048576)) MiB: max_conns_per_uid $maxc, max_jobs_per_uid $maxj"
if [[ " ${RV_KO_ARGS:-} " == *_per_uid=* ]]; then
	tap_skip default-caps "set by --rv-args"
else
	expect default-caps "$maxc $maxj" "$want_c $want_j"
fi

# ---- connections -------------------------------------------------------
# The holder's connections to distinct addresses (nothing is sent: never
# connected) stop at the cap with EDQUOT.
"$HOLD" </dev/null >/dev/null 2>&1	# its pages in the page cache first
m0=$(mem_avail_kb)
if rv_hold_start c1 "${NOBODY[@]}" "$HOLD" -a -g "${RING[@]}" -c 0; then
	m1=$(mem_avail_kb)
	expect conns-cap-edquot "$(rv_held c1 conns)" "conns $maxc EDQUOT"
	tap_diag "available $m0 kB before, $m1 kB at the cap ($(((m0 - m1) / maxc)) kB per idle connection)"

	once c-same "${NOBODY[@]}" "$HOLD" -a -g "${RING[@]}" -c 1
	expect conns-cap-across-files "$(rv_held c-same conns)" "conns 0 EDQUOT"
	once c-other "${OTHER[@]}" "$HOLD" -a -g "${RING[@]}" -c 8
	expect conns-other-uid-unaffected "$(rv_held c-other conns)" "conns 8 0"
	once c-root "$HOLD" -a -g -c 8
	expect conns-root-unaffected "$(rv_held c-root conns)" "conns 8 0"

	rv_hold_stop c1
	if rv_wait_until 20 mem_returns "$m0"; then
		tap_ok conns-memory-returns
	else
		tap_fail conns-memory-returns "available $now_kb kB after close, $m0 kB before"
	fi
	tap_diag "available $now_kb kB after close"
	once c-again "${NOBODY[@]}" "$HOLD" -a -g "${RING[@]}" -c 0
	expect conns-released-at-close "$(rv_held c-again conns)" "conns $maxc EDQUOT"
else
	tap_fail conns-cap-edquot "no holder"
fi

# SIGKILL: the file is released by the dying process.
if rv_hold_start c2 "${NOBODY[@]}" "$HOLD" -a -g "${RING[@]}" -c 0; then
	rv_hold_stop c2 KILL
	once c-killed "${NOBODY[@]}" "$HOLD" -a -g "${RING[@]}" -c 0
	expect conns-released-after-kill "$(rv_held c-killed conns)" "conns $maxc EDQUOT"
else
	tap_fail conns-released-after-kill "no holder"
fi

# ---- jobs ----------------------------------------------------------------
m0=$(mem_avail_kb)
if rv_hold_start j1 "${NOBODY[@]}" "$HOLD" "${RING[@]}" -j 0; then
	m1=$(mem_avail_kb)
	expect jobs-cap-edquot "$(rv_held j1 jobs)" "jobs $maxj EDQUOT"
	tap_diag "available $m0 kB before, $m1 kB at the cap ($(((m0 - m1) / maxj)) kB per job and its file)"

	once j-same "${NOBODY[@]}" "$HOLD" "${RING[@]}" -j 1
	expect jobs-cap-across-processes "$(rv_held j-same jobs)" "jobs 0 EDQUOT"
	once j-other "${OTHER[@]}" "$HOLD" "${RING[@]}" -j 8
	expect jobs-other-uid-unaffected "$(rv_held j-other jobs)" "jobs 8 0"
	once j-root "$HOLD" "${RING[@]}" -j 8
	expect jobs-root-unaffected "$(rv_held j-root jobs)" "jobs 8 0"
	# Subordinate uids are their owner's: uid 7 of 65534's namespace
	# (kuid 300007) is charged to 65534, which holds its cap.
	if [[ -e /proc/self/ns/user ]]; then
		userns_once j-userns "${RING[@]}" -j 1
		expect jobs-userns-charged-to-owner "$(rv_held j-userns jobs)" "jobs 0 EDQUOT"
	else
		tap_skip jobs-userns-charged-to-owner "no user namespaces in $(uname -r)"
	fi

	rv_hold_stop j1
	if rv_wait_until 20 mem_returns "$m0"; then
		tap_ok jobs-memory-returns
	else
		tap_fail jobs-memory-returns "available $now_kb kB after close, $m0 kB before"
	fi
	once j-again "${NOBODY[@]}" "$HOLD" "${RING[@]}" -j 0
	expect jobs-released-at-close "$(rv_held j-again jobs)" "jobs $maxj EDQUOT"
else
	tap_fail jobs-cap-edquot "no holder"
fi

if rv_hold_start j2 "${NOBODY[@]}" "$HOLD" "${RING[@]}" -j 0; then
	rv_hold_stop j2 KILL
	once j-killed "${NOBODY[@]}" "$HOLD" "${RING[@]}" -j 0
	expect jobs-released-after-kill "$(rv_held j-killed jobs)" "jobs $maxj EDQUOT"
else
	tap_fail jobs-released-after-kill "no holder"
fi

# ---- device removal ------------------------------------------------------
# A holder at both caps (its attached file is one of the jobs) while the
# device goes: the objects stay until the files close, and their counts
# go with them.
if rv_hold_start d1 "${NOBODY[@]}" "$HOLD" -a -g "${RING[@]}" -c 0 -j 0; then
	expect removal-holder-at-caps "$(rv_held d1 conns) $(rv_held d1 jobs)" \
		"conns $maxc EDQUOT jobs $((maxj - 1)) EDQUOT"
	netdev=$(rdma link show "$RV_IBDEV/1" | sed -n 's/.* netdev \([^ ]*\).*/\1/p')
	tap_run removal-link-delete timeout 60 rdma link delete "$RV_IBDEV"
	rv_hold_stop d1
	tap_run removal-link-add rdma link add "$RV_IBDEV" type rxe netdev "${netdev:-eth0}"
	rv_wait_until 30 gid_back || tap_diag "no IPv4 GID on $RV_IBDEV yet"
	once d-again "${NOBODY[@]}" "$HOLD" -a -g "${RING[@]}" -c 0 -j 0
	expect caps-released-after-removal "$(rv_held d-again conns) $(rv_held d-again jobs)" \
		"conns $maxc EDQUOT jobs $((maxj - 1)) EDQUOT"
else
	tap_fail removal-holder-at-caps "no holder"
fi

if dmesg | grep -q 'Out of memory'; then
	tap_fail no-oom "$(dmesg | grep 'Out of memory' | head -1)"
else
	tap_ok no-oom
fi

tap_run rmmod timeout 60 rmmod rv
tap_run reload rv_insmod
tap_end
