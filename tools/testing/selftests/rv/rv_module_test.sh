#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# rv module lifetime tests (TAP 13).  Run as root on a test machine or VM
# where rv may be unloaded and loaded at will:
#
#  - rmmod is refused while a file of /dev/rv is open (attached or not)
#    and works once it is closed; insmod works again afterwards
#  - an attached file owns a kernel PD ("comm [rv]" in rdma resource); none
#    is left once every file is closed, nor after unload
#  - 5 load/attach/unload cycles
#  - rv's rdma_cm port (cm_port): a load with cm_port >= 1024 or 0 is
#    refused; while rv is loaded root cannot listen on it, once unloaded
#    it can, and a load while someone holds it fails; after rv was loaded
#    with no device, the device created afterwards gets rv's listener (a
#    request from an unprivileged port is rejected by rv, UNPRIVILEGED)
#
# Environment: RV_KO (default drivers/infiniband/ulp/rv/rv.ko in the repo),
# RV_IBDEV (default rxe0).  Leaves rv loaded if it was loaded at start.
# Exit status: 0 all passed, 1 a failure, 4 skipped (kselftest).

set -u

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../../.." && pwd)
RV_KO=${RV_KO:-$repo/drivers/infiniband/ulp/rv/rv.ko}
RV_IBDEV=${RV_IBDEV:-rxe0}
export RV_IBDEV
HOLD=$here/rv_hold
FORGE=$here/rv_cm_forge
# shellcheck source=vm/tap.sh
. "$here/vm/tap.sh"

hold_pid=
hold_in=

skip_all() {
	tap_skip_all "$*"
}

diag() {
	sed 's/^/# /'
}

loaded() {
	[ -d /sys/module/rv ]
}

# /dev/rv appears asynchronously (devtmpfs/udev); wait up to 5 s.
wait_devnode() {
	local i

	for i in $(seq 50); do
		[ -c /dev/rv ] && return 0
		sleep 0.1
	done
	return 1
}

load() {
	# shellcheck disable=SC2086 # RV_KO_ARGS: blank-separated parameters
	insmod "$RV_KO" ${RV_KO_ARGS:-} 2>&1 | diag
	[ "${PIPESTATUS[0]}" -eq 0 ] && loaded && wait_devnode
}

unload() {
	rmmod rv 2>&1 | diag
	[ "${PIPESTATUS[0]}" -eq 0 ] && ! loaded
}

# rmmod must fail, say the module is in use, and leave it loaded.
unload_refused() {
	local out

	out=$(rmmod rv 2>&1) && { echo "# rmmod succeeded"; return 1; }
	echo "$out" | diag
	loaded || { echo "# module gone after failed rmmod"; return 1; }
	[[ $out == *"in use"* || $out == *"busy"* || $out == *"Resource"* ]]
}

# hold_start [-a]: rv_hold in the background, file open (and attached with
# -a) once this returns 0; released by hold_stop.
hold_start() {
	local line

	coproc HOLD_PROC { exec "$HOLD" "$@" 2>&1; }
	hold_pid=$HOLD_PROC_PID
	exec {hold_in}>&"${HOLD_PROC[1]}"
	if ! read -r -t 30 line <&"${HOLD_PROC[0]}" || [[ $line != ready* ]]; then
		echo "# rv_hold: ${line:-no answer}"
		hold_stop
		return 1
	fi
	echo "# rv_hold: $line"
}

hold_stop() {
	local rc=0

	[ -n "$hold_in" ] && exec {hold_in}>&-
	# coproc's own copy of the write end is closed with the coproc array.
	[ -n "${HOLD_PROC[1]:-}" ] && exec {HOLD_PROC[1]}>&-
	if [ -n "$hold_pid" ]; then
		wait "$hold_pid" || rc=$?
	fi
	hold_pid=
	hold_in=
	return $rc
}

# Lines of "rdma resource show pd" for PDs that rv (a kernel user) owns.
rv_pds() {
	rdma resource show pd 2>/dev/null | grep -F 'comm [rv]'
}

no_rv_pd() {
	local pds

	pds=$(rv_pds)
	[ -z "$pds" ] && return 0
	echo "$pds" | diag
	return 1
}

have_rv_pd() {
	[ -n "$(rv_pds)" ]
}

# Number of MRs rv registered (in its kernel PDs).
rv_mr_count() {
	rdma resource show mr 2>/dev/null | grep -cF 'comm [rv]'
}

no_rv_mr() {
	[ "$(rv_mr_count)" = 0 ]
}

rv_mrs_are() {
	local n

	n=$(rv_mr_count)
	echo "# rv MRs: $n (want $1)"
	[ "$n" = "$1" ]
}

# insmod with PARAM=VALUE... must fail and leave rv unloaded.
load_refused() {
	local out

	# shellcheck disable=SC2086 # RV_KO_ARGS: blank-separated parameters
	if out=$(insmod "$RV_KO" ${RV_KO_ARGS:-} "$@" 2>&1); then
		echo "# insmod $* succeeded"
		rmmod rv
		return 1
	fi
	echo "$out" | diag
	! loaded
}

# rv_cm_forge ARGS..., its output as diagnostics.
forge() {
	"$FORGE" "$@" 2>&1 | diag
	[ "${PIPESTATUS[0]}" -eq 0 ]
}

# The kernel log says PATTERN (grep -E).
logged() {
	dmesg | tail -50 | grep -E "$1" | tail -1 | diag
	dmesg | tail -50 | grep -qE "$1"
}

# A request to this node's own address from an unprivileged port (uid
# 65534, the port rdma_cm picks) is answered by rv's listener with its
# reject UNPRIVILEGED (6); "no listener" would be another reject.
listener_serves() {
	local ip i

	ip=$(ip -4 -o addr show dev "$netdev" | awk '{ sub("/.*", "", $4); print $4; exit }')
	[ -n "$ip" ] || { echo "# no IPv4 address on $netdev"; return 1; }
	for i in $(seq 50); do
		grep -qs ACTIVE "/sys/class/infiniband/$RV_IBDEV/ports/1/state" && break
		sleep 0.1
	done
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$FORGE" -r "$ip" -P "$cmport" -k x -x 6 2>&1 | diag
	[ "${PIPESTATUS[0]}" -eq 0 ]
}

cleanup() {
	[ -n "$hold_pid" ] && hold_stop
	if [ "$was_loaded" = 1 ] && ! loaded; then
		# shellcheck disable=SC2086
		insmod "$RV_KO" ${RV_KO_ARGS:-} >/dev/null 2>&1
	fi
}

[ "$(id -u)" = 0 ] || skip_all "needs root"
[ -f "$RV_KO" ] || skip_all "no module at $RV_KO"
[ -x "$HOLD" ] || skip_all "$HOLD not built"
[ -x "$FORGE" ] || skip_all "$FORGE not built"
command -v rdma >/dev/null || skip_all "no rdma tool (iproute2)"
rdma dev show "$RV_IBDEV" >/dev/null 2>&1 || skip_all "no RDMA device $RV_IBDEV"

was_loaded=0
loaded && was_loaded=1
trap cleanup EXIT

tap_begin
if ! loaded; then
	tap_check "insmod" load
fi
cmport=$(cat /sys/module/rv/parameters/cm_port 2>/dev/null || echo 1023)

# An open, unattached file pins the module.
exec {rvfd}<>/dev/rv
tap_check "rmmod refused while /dev/rv is open" unload_refused
exec {rvfd}>&-

# An attached file pins it too, and owns the job's kernel PD.
if hold_start -a; then
	tap_ok "attach $RV_IBDEV"
	tap_check "attached job has a kernel PD (comm [rv])" have_rv_pd
	tap_check "rmmod refused while a file is attached" unload_refused
	tap_check "rv_hold exits cleanly" hold_stop
else
	tap_fail "attach $RV_IBDEV"
fi
tap_check "no rv PD once every file is closed" no_rv_pd

tap_check "rmmod after close" unload
tap_check "/dev/rv gone after rmmod" test ! -e /dev/rv
tap_check "no rv PD after rmmod" no_rv_pd

# cm_port: privileged, or no load (rv(7), "Security model").
tap_check "insmod refused with cm_port=1024" load_refused cm_port=1024
tap_check "the log says cm_port=1024 is not privileged" \
	logged "rv: cm_port=1024 is not a privileged port"
tap_check "insmod refused with cm_port=0" load_refused cm_port=0
# quiesce_ms: 1000..600000 (rv(7)).
tap_check "insmod refused with quiesce_ms=999" load_refused quiesce_ms=999
tap_check "the log says quiesce_ms=999 is out of range" \
	logged "rv: quiesce_ms=999 out of range 1000..600000"
tap_check "insmod refused with quiesce_ms=600001" load_refused quiesce_ms=600001
# Free once rv is gone; whoever holds it then keeps rv from loading.
tap_check "root can listen on cm_port $cmport without rv" \
	forge -L -P "$cmport"
hold_out=$(mktemp)
"$FORGE" -L -P "$cmport" -H 10000 >"$hold_out" 2>&1 &
squat_pid=$!
for i in $(seq 50); do
	grep -qs listening "$hold_out" && break
	sleep 0.1
done
tap_check "a root listener holds cm_port $cmport" grep -q listening "$hold_out"
tap_check "insmod refused while cm_port is held" load_refused
tap_check "the log says it cannot listen" logged "rv: cannot listen on cm_port $cmport"
kill "$squat_pid" 2>/dev/null
wait "$squat_pid" 2>/dev/null
rm -f "$hold_out"
tap_check "insmod again" load
tap_check "root cannot listen on cm_port while rv is loaded (EADDRNOTAVAIL)" \
	forge -L -P "$cmport" -E 99

for i in 1 2 3 4 5; do
	ok_cycle=1
	if hold_start -a; then
		hold_stop || ok_cycle=0
	else
		ok_cycle=0
	fi
	unload || ok_cycle=0
	load || ok_cycle=0
	if [ $ok_cycle = 1 ]; then
		tap_ok "reload cycle $i (attach, close, rmmod, insmod)"
	else
		tap_fail "reload cycle $i (attach, close, rmmod, insmod)"
	fi
done
tap_check "no rv PD after reload cycles" no_rv_pd

# Device removal while a file is attached: rv releases the job's PD inside
# the ib_client remove callback (or the core would wait forever), the file
# still closes cleanly, the module unloads, and the re-created device works.
attach_cycle() {
	hold_start -a && hold_stop
}
netdev=$(rdma link show "$RV_IBDEV/1" 2>/dev/null |
	sed -n 's/.* netdev \([^ ]*\).*/\1/p')
if [ -z "$netdev" ]; then
	tap_skip "device removal while attached" "$RV_IBDEV has no netdev link"
elif hold_start -a -m; then
	# A remote-access registration only cached (its fast-registration
	# MR) and a local-only one in use (pinned pages, no MR): removal
	# releases both.
	tap_check "attached file holds 1 MR" rv_mrs_are 1
	tap_check "rdma link delete $RV_IBDEV while attached with MRs" \
		timeout 60 rdma link delete "$RV_IBDEV"
	tap_check "no rv MR after device removal" no_rv_mr
	tap_check "attached file drops its MR and closes after device removal" \
		hold_stop
	tap_check "rmmod after device removal" unload
	tap_check "insmod after device removal" load
	tap_check "re-create $RV_IBDEV" \
		rdma link add "$RV_IBDEV" type rxe netdev "$netdev"
	tap_check "attach to the re-created device" attach_cycle
	tap_check "rv (loaded before the device) listens on it" listener_serves
	tap_check "no rv PD after device removal and re-creation" no_rv_pd
else
	tap_fail "attach before device removal"
fi

if [ "$was_loaded" = 0 ]; then
	tap_check "final rmmod" unload
fi

tap_end
