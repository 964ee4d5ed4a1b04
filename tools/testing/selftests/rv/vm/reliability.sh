#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# reliability.sh - faults in the middle of verified traffic; runs on every
# node of a 2-node group (soak: 2 or 3 nodes; see tests.list) and drives
# rv_rel_test:
#
#   reliability.sh kill     3 processes per node stream to their peers on
#                           the other node while a 4th (send only) is
#                           SIGKILLed on each node: its MR and slot are
#                           released, rmmod is refused meanwhile, the
#                           survivors finish verified with no failed write
#                           and no generation change, a newcomer gets a
#                           slot other than the dead process's (in
#                           quarantine) and streams too; rmmod
#                           succeeds at the end (rv reloaded with
#                           ack_timeout=17 first: see kill_test)
#   reliability.sh remove   3 processes per node in flight when node0 runs
#                           "rdma link delete": node0's posts end in ENODEV,
#                           node1's in EPIPE once its connection gives up;
#                           every write has its SEND event; rmmod works on
#                           both nodes afterwards
#   reliability.sh link     transient: node1's eth0 down for 8 s under
#                           traffic (connection timeout 60 s): failed writes
#                           are re-sent, EAGAIN while reconnecting, the
#                           generation advances, every byte verified, the
#                           recovery time printed
#   reliability.sh perm     node1's processes killed and its rv unloaded
#                           mid-traffic: node0's connection ends in ERROR
#                           with a reason, every write has its SEND event,
#                           posts end in EPIPE
#   reliability.sh soak     2 or 3 nodes: 4 processes per node stream in
#                           rounds to partners on every other node (all
#                           to all) while one node is cut off (netem drops
#                           all it sends), node1, node2, node0, ...,
#                           RV_SOAK_FLAPS times (default 2: node1 then
#                           node0, or node1 then node2), each cut
#                           longer than rv's 7 tries at its ack_timeout
#                           (3 s at 15; 3 nodes: ack_timeout=17, 5 s)
#                           and 9 s apart (scaled): every write
#                           completes or is re-sent, every message
#                           verified; totals (bytes, flaps, re-sent)
#
# rv_rel_test's TAP results become this script's (tap_checks), plus one
# per process for its exit status.  Every wait is bounded.

set -uo pipefail
# shellcheck source=tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"

: "${RV_NODE:?run me with rv-vm}" "${RV_NODES:?}" "${RV_IBDEV:?}" "${RV_OUT:?}"
mode=${1:?usage: reliability.sh kill|remove|link|perm|soak}
me=$RV_NODE
T=$RV_REPO/tools/testing/selftests/rv
RT=$T/rv_rel_test
shared=$(dirname "$RV_OUT")/rel-rdv
mkdir -p "$shared"
read -r -a ips <<<"$RV_NODE_IPS"
declare -A pid

# barrier NAME [SECONDS]: wait until every node reached NAME.
barrier() {
	rv_barrier "$shared" "$@"
}

# start NAME ARGS...: one rv_rel_test in the background, output kept.
start() {
	local name=$1 a prev=
	local -a args=()
	shift
	# Its time budget (-T) scales with the guest's speed, as the waits
	# below do.
	for a in "$@"; do
		[[ $prev == -T ]] && a=$(rv_secs "$a")
		args+=("$a")
		prev=$a
	done
	"$RT" -D "$shared" -N "$me" "${args[@]}" "${ips[@]}" \
		>"$RV_OUT/$name.out" 2>&1 &
	pid[$name]=$!
}

# The waits below are bounded in wall-clock time (rv_wait_until).

# wait_files GLOB COUNT SECONDS: until COUNT files match in $shared.
wait_files() {
	rv_wait_until "$3" files_at_least "$1" "$2" && return 0
	tap_diag "waited $(rv_secs "$3")s for $2 files $1"
	return 1
}

files_at_least() {
	[[ $(find "$shared" -maxdepth 1 -name "$1" | wc -l) -ge $2 ]]
}

# finish NAME SECONDS: wait (bounded) for the process, then its checks and
# exit status as TAP.  A process still running is killed and fails.
finish() {
	local name=$1 limit p=${pid[$1]} rc=0
	limit=$(rv_secs "$2")
	if ! rv_wait_until "$2" exited "$p"; then
		kill -9 "$p"
		wait "$p" 2>/dev/null
		rc=999
	else
		wait "$p" || rc=$?
	fi
	tap_checks "" <"$RV_OUT/$name.out"
	if [[ $rc -eq 999 ]]; then
		tap_fail "$name.exit" "still running after ${limit}s: killed"
	elif [[ $rc -eq 0 && $TAP_CHECKS -gt 0 ]]; then
		tap_ok "$name.exit"
	else
		tap_fail "$name.exit" "exit status $rc, $TAP_CHECKS checks"
	fi
}

# kernel MRs of rv (restrack names them after the PD's owner)
count_mrs() {
	rdma res show mr 2>/dev/null | grep -c 'comm \[rv\]'
}

mrs_are() {
	[[ $(count_mrs) -eq $1 ]]
}

exited() {
	! kill -0 "$1" 2>/dev/null
}

# wait_mrs WANT SECONDS: until count_mrs is WANT.
wait_mrs() {
	rv_wait_until "$2" mrs_are "$1" && return 0
	echo "rv MRs: $(count_mrs), expected $1"
	return 1
}

# field KEY NODE IDX WORD: a word of a process's info file ("slot", "pid").
field() {
	sed -n "s/.*\<$4 \([0-9a-f]*\).*/\1/p" "$shared/$1.info.$2.$3"
}

# survivors_running KEY: no survivor of this node has finished its stream
# (else the kill or the newcomer did not happen next to live traffic).
survivors_running() {
	local i
	for i in 0 1 2; do
		if [[ -e $shared/$1.done.$me.$i ]]; then
			echo "process $i had already finished"
			return 1
		fi
	done
}

rmmod_refused() {
	! rmmod rv 2>/dev/null && grep -qw '^rv' /proc/modules
}

reload_rv() {
	grep -qw '^rv' /proc/modules || rv_insmod
}

# ---- SIGKILL mid-traffic -------------------------------------------------

kill_test() {
	local k=rk i vslot vpin mrs vmrs ack
	# 5 streaming processes per guest, 2 guests on the host's 2 cores: a
	# guest stall can outlast the 7 tries of the default ack_timeout (15)
	# and fail a QP with RETRY_EXC_ERR, a reconnect the clean processes
	# report as a generation change (seen once in CI).  17 rides such
	# stalls out (tap.sh, mpi.sh); this test is about SIGKILL.
	ack=$(rv_ack_timeout_at_least 17)
	tap_run reload-ack-timeout rv_reload "$ack"
	barrier kill-start || true
	# -R: rounds until $k.stop, so the kill and the newcomer happen next
	# to live traffic however fast each stream goes (checked below)
	for i in 0 1 2; do
		start "clean$i" -k $k -I $i -m clean -R -n 100 -s 32768 -S 4 -T 200
	done
	# idx 3 of each node writes to the sink idx 4 of the other node: the
	# dead process's receive buffer is then nobody's target (a write to
	# a freed MR would break the shared QP, which is RDMA, not rv)
	start victim -k $k -I 3 -p 4 -m victim -n 64 -s 65536 -S 2 -T 200
	start sink -k $k -I 4 -p 3 -m sink -n 64 -s 65536 -T 230
	wait_files "$k.streaming.$me.*" 5 120 || true
	barrier kill-strike || true
	vslot=$(field $k "$me" 3 slot)
	vpin=$(awk '/^VmPin/ {print $2}' "/proc/${pid[victim]}/status" 2>/dev/null)
	mrs=$(count_mrs)
	tap_diag "victim slot $vslot VmPin ${vpin:-?} kB, rv MRs on the node $mrs"
	kill -9 "${pid[victim]}"
	wait "${pid[victim]}" 2>/dev/null
	tap_run survivors-mid-stream-at-kill survivors_running $k
	tap_diag "victim killed, $(rdma res show qp 2>/dev/null | grep -c 'comm \[rdma_cm\]') rv QPs"
	# the survivors still use the module
	tap_run unload-refused-in-use rmmod_refused
	# its one registration (the send buffer, with remote read so that
	# it has kernel MRs, one per key chunk: its "mrs" file) goes with its
	# file; the file waits for its writes in flight first (at most 10 s)
	vmrs=$(sed -n 's/^mrs \([0-9]*\)$/\1/p' "$shared/$k.mrs.$me.3" 2>/dev/null)
	tap_diag "victim's registration: ${vmrs:-?} kernel MRs"
	tap_run victim-mr-released wait_mrs $((mrs - ${vmrs:-1})) 30
	if [[ -n $vpin && $vpin -gt 0 ]]; then tap_ok victim-was-pinned
	else tap_fail victim-was-pinned "VmPin ${vpin:-unknown} kB before the kill"; fi
	# a newcomer gets another slot than the dead process's (next-fit, and
	# that one is in quarantine) and streams over the same connection
	tap_run survivors-mid-stream-at-newcomer survivors_running $k
	start newcomer -k $k -I 5 -m clean -n 40 -s 32768 -w "${vslot:-0}" -T 120
	finish newcomer 130
	barrier kill-newcomers-done 150 || true
	# survivors finish their round, sinks end
	touch "$shared/$k.stop"
	for i in 0 1 2; do
		finish "clean$i" 100
	done
	finish sink 30
	tap_run no-mr-left wait_mrs 0 30
	barrier kill-end 60 || true
	tap_run unload-after rmmod rv
	tap_run reload reload_rv
}

# ---- device removal in flight ----------------------------------------------

remove_test() {
	local k=rd i e netdev t0
	barrier remove-start || true
	e=EPIPE
	[[ $me == 0 ]] && e=ENODEV
	# connection timeout 10 s: node1 gives up soon after node0 is gone
	for i in 0 1 2; do
		start "fail$i" -k $k -I $i -m fail -E $e -t 10000 -n 64 -s 65536 -T 150
	done
	wait_files "$k.streaming.*" 6 120 || true
	barrier remove-strike || true
	if [[ $me == 0 ]]; then
		netdev=$(rdma link show "$RV_IBDEV/1" | sed -n 's/.* netdev \([^ ]*\).*/\1/p')
		t0=$(date +%s%N)
		tap_run link-delete timeout 60 rdma link delete "$RV_IBDEV"
		tap_diag "rdma link delete took $((($(date +%s%N) - t0) / 1000000)) ms"
	fi
	for i in 0 1 2; do
		finish "fail$i" 170
	done
	if [[ $me == 0 ]]; then
		# Whether a write here fails is timing: those a process still
		# counts in flight when its post fails may have completed
		# before rv's remove callback flushed the QPs, their events
		# not yet reaped (debug kernel: 3 in flight, all completed).
		# A count, not a check; each process checked that every write
		# was accounted for.  The peer's writes do fail (checked there).
		tap_diag "$(failed_writes fail0 fail1 fail2) writes ended with an error event on the removed device"
	else
		error_events fail0 fail1 fail2
	fi
	tap_run unload-after rmmod rv
	barrier remove-end 200 || true
	if [[ $me == 0 ]]; then
		tap_run link-add rdma link add "$RV_IBDEV" type rxe netdev "${netdev:-eth0}"
	fi
	tap_run reload reload_rv
}

# ---- link down: transient, then permanent ------------------------------------

link_test() {
	local k=rl i t0
	barrier link-start || true
	for i in 0 1; do
		# -R: rounds until $k.stop, so the outage finds traffic
		start "recover$i" -k $k -I $i -m recover -R -t 60000 -n 200 -s 32768 -S 20 -T 150
	done
	wait_files "$k.streaming.*" 4 120 || true
	barrier link-strike || true
	# connection events into dmesg (best effort: needs debugfs)
	echo 'module rv file rv_cm.c +p' >/sys/kernel/debug/dynamic_debug/control 2>/dev/null
	echo 'module rv file rv_qp.c +p' >/sys/kernel/debug/dynamic_debug/control 2>/dev/null
	if [[ $me == 1 ]]; then
		t0=$(date +%s)
		tap_run link-down ip link set eth0 down
		sleep 8
		tap_run link-up ip link set eth0 up
		tap_diag "eth0 down for $(($(date +%s) - t0)) s"
		# no new rounds: each process finishes (and re-sends) the
		# one it is in once the connection is back
		touch "$shared/$k.stop"
	fi
	for i in 0 1; do
		finish "recover$i" 170
	done
	# rv's and rxe's view of the outage, for a bug report
	dmesg | grep -i 'rv\|rxe\|eth0' | tail -n 30 | sed 's/^/# dmesg: /'
	barrier link-end 180 || true
}

# failed_writes NAME...: writes of these processes that ended with an
# error event, from their last "conn: ..." line.
failed_writes() {
	local name sum=0 n
	for name in "$@"; do
		n=$(sed -n 's/.*conn: .* posted, [0-9]* ok, \([0-9]*\) failed$/\1/p' \
			"$RV_OUT/$name.out" | tail -n 1)
		sum=$((sum + ${n:-0}))
	done
	echo "$sum"
}

# error_events NAME...: one result, at least one write of these processes
# (their "conn:" lines) ended with an error event.
error_events() {
	local sum
	sum=$(failed_writes "$@")
	if [[ $sum -gt 0 ]]; then
		tap_ok "error-events"
	else
		tap_fail "error-events" "no write of $* ended with an error event"
	fi
}

# ---- soak: rounds of verified traffic through repeated link flaps -------

# soak_rxe_debug: rxe's own reasons for dropping a send (its dynamic debug
# lines of the requester and the address vectors) into the kernel log,
# where a soak that lost its connection manager shows them.
soak_rxe_debug() {
	local ctl=/sys/kernel/debug/dynamic_debug/control f
	[[ -e $ctl ]] || mount -t debugfs none /sys/kernel/debug 2>/dev/null
	[[ -w $ctl ]] || return 0
	for f in rxe_req.c rxe_av.c rxe_net.c; do
		echo "file $f +p" >"$ctl" 2>/dev/null
	done
	return 0
}

# cm_counts MSG...: "msg tx/rx/retries/duplicates" of ib_cm on port 1.
cm_counts() {
	local d=/sys/class/infiniband/$RV_IBDEV/ports/1 m
	for m in "$@"; do
		printf '%s %s/%s/%s/%s  ' "$m" \
			"$(cat "$d/cm_tx_msgs/$m" 2>/dev/null)" \
			"$(cat "$d/cm_rx_msgs/$m" 2>/dev/null)" \
			"$(cat "$d/cm_tx_retries/$m" 2>/dev/null)" \
			"$(cat "$d/cm_rx_duplicates/$m" 2>/dev/null)"
	done
}

soak_test() {
	# Two cuts hit every connection of the job, on 2 nodes and on 3
	# (node1's cut takes 0-1 and 1-2, node2's 0-2 and 1-2 again).
	local k=rs flaps=${RV_SOAK_FLAPS:-2}
	local per p i f n ok name bytes=0 resent=0
	local down ack ack_arg gap conn_ms gsi cut_fails=0
	local -a names=()
	# Processes per peer node: 4 processes per node whatever the size of
	# the group (4 with 2 nodes, 2 per peer with 3).  Node me's process i
	# for peer p is idx p*per+i; its partner on p is idx me*per+i.
	per=${RV_SOAK_PROCS:-$((4 / (RV_NODES - 1)))}
	if [[ $RV_NODES -eq 3 ]]; then
		# 3 VMs on 2 host cores need a longer ack_timeout (tap.sh).
		barrier soak-before-reload || true
		ack_arg=$(rv_ack_timeout_busy)
		if ! rv_reload "$ack_arg"; then
			tap_diag "reload with $ack_arg failed"
		fi
	fi
	# A cut must outlast the 7 tries of a write (4.096 us * 2^ack_timeout
	# each) by a quarter, or the QPs ride it out and nothing is tested:
	# 1.25 * 7 * 4096 ns = 35840 ns per 2^ack_timeout, rounded up to
	# whole seconds: 3 s at 15 (the floor), 5 s at 17, 10 s at 18.
	ack=$(cat /sys/module/rv/parameters/ack_timeout 2>/dev/null || echo 15)
	down=$(((35840 * (1 << ack) + 999999999) / 1000000000))
	((down < 3)) && down=3
	# Between cuts the connections reconnect: slower on a slower guest.
	gap=$(rv_secs 9)
	# The connection timeout (-t) must outlast a cut and the reconnect
	# after it, and a reconnect is refused (BUSY) until the peer's QP has
	# failed too, 7 tries after its last send: 60 s, or 4 cuts' worth.
	conn_ms=$((down * 4 > 60 ? down * 4000 : 60000))
	soak_rxe_debug
	# The cut toggles netem's loss on a qdisc put in place before any
	# traffic.  Adding and deleting the root qdisc per cut would swap in
	# noop_qdisc for a moment, which answers NET_XMIT_CN; 6.12's rxe
	# turns any non-zero ip_local_out() return into a fatal send error
	# (6.1's mapped it through net_xmit_eval() and retried), and on QP1
	# that stops the node's CM for good.  The limit keeps netem's queue
	# from overflowing (NET_XMIT_DROP, the same error) while passing.
	if ! tc qdisc replace dev eth0 root netem loss 0% limit 100000; then
		cut_fails=$((cut_fails + 1))
	fi
	barrier soak-start || true
	for ((p = 0; p < RV_NODES; p++)); do
		[[ $p -eq $me ]] && continue
		for ((i = 0; i < per; i++)); do
			name=soak.p$p.$i
			start "$name" -k $k -I $((p * per + i)) -P $p -p $((me * per + i)) \
				-m recover -R -t "$conn_ms" -n 100 -s 65536 -S 20 -T 400
			names+=("$name")
		done
	done
	wait_files "$k.streaming.*" $((RV_NODES * (RV_NODES - 1) * per)) 120 || true
	barrier soak-strike || true
	tap_diag "soak: rv's kernel QPs and MRs on node$me:" \
		"$(rdma res show qp 2>/dev/null | grep -F 'comm [rv]')" \
		"$(rdma res show mr 2>/dev/null | grep -cF 'comm [rv]') MRs"
	# Flap f cuts node (f mod N) off for $down s, $gap s after the
	# previous one ended, node1 first: every connection of the job is
	# hit.  The cut is a netem qdisc dropping everything eth0 sends:
	# toggling the link, "ip link set down" and QEMU's set_link alike,
	# was seen to leave virtio_net's TX queue stalled for good afterwards
	# under load (NETDEV WATCHDOG, then rxe's QP cleanup WARNING), 1 run
	# in 4.  The port stays ACTIVE, so rv also reconnects against a dead
	# path.  The nodes leave the barrier within a poll interval (0.2 s)
	# of each other, so one schedule on every node's clock is good
	# enough.
	n=0
	for ((f = 1; f <= flaps; f++)); do
		sleep "$gap"
		if [[ $((f % RV_NODES)) -eq $me ]]; then
			if tc qdisc change dev eth0 root netem loss 100%; then
				n=$((n + 1))
			else
				cut_fails=$((cut_fails + 1))
			fi
			sleep "$down"
			tc qdisc change dev eth0 root netem loss 0% ||
				cut_fails=$((cut_fails + 1))
		else
			sleep "$down"
		fi
	done
	tap_diag "node$me: cut off $n times ($down s at ack_timeout $ack, $gap s apart) of $flaps flaps of the job"
	if [[ $cut_fails -eq 0 ]]; then
		tap_ok "soak.cuts"
	else
		tap_fail "soak.cuts" "tc could not set up or change the netem qdisc $cut_fails times (CONFIG_NET_SCH_NETEM?)"
	fi
	if [[ $me == 0 ]]; then
		sleep "$(rv_secs 20)"	# the last outage's re-sends
		touch "$shared/$k.stop"
	fi
	for name in "${names[@]}"; do
		finish "$name" 380
	done
	# "N writes posted (R re-sent), K ok, ..." of each process
	for name in "${names[@]}"; do
		read -r n ok < <(sed -n 's/.* writes posted (\([0-9]*\) re-sent), \([0-9]*\) ok,.*/\1 \2/p' \
			"$RV_OUT/$name.out" | tail -n 1)
		resent=$((resent + ${n:-0}))
		bytes=$((bytes + ${ok:-0} * 65536))
	done
	tap_diag "soak: $bytes bytes written and completed, $resent writes re-sent by the ${#names[@]} processes of node$me"
	# What the connection manager saw: a reconnect that never came back
	# shows here as REQs sent but not received, or retried, or duplicates.
	tap_diag "soak: node$me's CM messages (tx/rx/retries/duplicates):" \
		"$(cm_counts req rep rtu rej dreq drep)" \
		"soak: node$me's neighbours: $(ip neigh show dev eth0 | tr '\n' ';')" \
		"soak: node$me's GSI QP: $(rdma res show qp lqpn 1 2>&1 | tr -s ' ')" \
		"soak: node$me's rxe counters: $(grep -H . /sys/class/infiniband/"$RV_IBDEV"/ports/1/hw_counters/* 2>/dev/null |
			sed 's|.*/||' | tr '\n' ' ')"
	# QP1 in ERR means this node's CM has been deaf and mute since, and
	# every failure above follows from it rather than from rv.
	gsi=$(rdma res show qp lqpn 1 2>&1 | sed -n 's/.* state \([A-Z]*\) .*/\1/p')
	if [[ $gsi == RTS ]]; then
		tap_ok "soak.gsi-qp-ready"
	else
		tap_fail "soak.gsi-qp-ready" "node$me's GSI QP is in state '${gsi:-unknown}', not RTS: its CM can no longer send"
	fi
	barrier soak-end 400 || true
	tc qdisc del dev eth0 root 2>/dev/null
}

# ---- permanent failure: the peer's processes die and its rv goes away -----

perm_test() {
	local k=rp i
	barrier perm-start || true
	for i in 0 1; do
		start "perm$i" -k $k -I $i -m fail -E EPIPE -t 10000 -n 64 -s 65536 -T 90
	done
	wait_files "$k.streaming.*" 4 120 || true
	barrier perm-strike || true
	if [[ $me == 1 ]]; then
		for i in 0 1; do
			kill -9 "${pid[perm$i]}"
		done
		for i in 0 1; do
			wait "${pid[perm$i]}" 2>/dev/null
		done
		tap_run peer-unload timeout 60 rmmod rv
	else
		for i in 0 1; do
			finish "perm$i" 100
		done
		error_events perm0 perm1
	fi
	barrier perm-end 120 || true
	tap_run reload reload_rv
}

tap_begin
tap_diag "node$me of $RV_NODES ($RV_NODE_IPS), mode $mode"
# soak runs on 2 or 3 nodes, the others on exactly 2.
if [[ $mode == soak ]]; then
	nodes_ok=$((RV_NODES == 2 || RV_NODES == 3))
else
	nodes_ok=$((RV_NODES == 2))
fi
if [[ ! -x $RT ]] || ! grep -qw '^rv' /proc/modules || [[ $nodes_ok -eq 0 ]]; then
	tap_skip "reliability-$mode" "rv_rel_test not built, rv not loaded or wrong number of nodes"
	tap_end
	exit
fi
case $mode in
kill) kill_test ;;
remove) remove_test ;;
link) link_test ;;
perm) perm_test ;;
soak) soak_test ;;
*)
	echo "unknown mode $mode" >&2
	exit 2
	;;
esac
tap_end
