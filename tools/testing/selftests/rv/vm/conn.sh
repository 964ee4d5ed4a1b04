#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# conn.sh - rv's shared connections across VMs; runs on every node of a
# group (see tests.list):
#
#   conn.sh scale   3 nodes: P processes per node of one job connect to
#                   every other node; QP count per node for (num_conn, P) = (1, 1),
#                   (1, 8), (4, 4), (16, 1), (16, 8) must be num_conn * (N - 1)
#   conn.sh pair    2 nodes: creation order and timing, isolation (other
#                   uid, other key, forged requests), privileged ports
#                   (requests from users' ports refused, rv's port cannot
#                   be taken), reconnect after the
#                   server side went away, churn (one side created and
#                   torn down repeatedly), a CONN_CREATE/DESTROY storm
#                   next to another job's connects, unreachable / no
#                   listener, lifetime and unload, device removal
#                   heartbeat cost: idle connections make no heartbeat
#                   pass, connected ones no more than heartbeat_budget a
#                   second
#   conn.sh storm   2 nodes: idle connections own no CQ; the storm
#
# Nodes meet at barriers: files in the run's shared output directory.
# Every wait is bounded.  rv's QPs are created through rdma_cm, so "rdma
# res show qp" lists them as kernel RC QPs of "[rdma_cm]" (kernel QPs show
# no PD); nothing else in the VMs creates kernel RC QPs.  rv's CQs (one per
# QP) show as "[rv]".

set -uo pipefail
# shellcheck source=tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"

: "${RV_NODE:?run me with rv-vm}" "${RV_NODES:?}" "${RV_IBDEV:?}" "${RV_OUT:?}"
mode=${1:?usage: conn.sh scale|pair|storm}
me=$RV_NODE
T=$RV_REPO/tools/testing/selftests/rv
CT=$T/rv_conn_test
shared=$(dirname "$RV_OUT")/conn-barriers
# rv's listener (a privileged port); the forgeries below send from
# privileged ports outside rv's client range (960..1023) when root.
cmport=$(cat /sys/module/rv/parameters/cm_port 2>/dev/null)
work=$RV_OUT/conn
mkdir -p "$shared" "$work"
# Every phase has its own job key (the VMs are fresh for each run), so
# leftovers of a failed phase never match the next one.
run=k

# barrier NAME [SECONDS]: wait until every node reached NAME.
barrier() {
	rv_barrier "$shared" "$@"
}

count_qps() {
	rdma res show qp 2>/dev/null | grep -w 'type RC' | grep -c 'comm \[rdma_cm\]'
}
count_cqs() {
	rdma res show cq 2>/dev/null | grep -c 'comm \[rv\]'
}

qps_are() {
	[[ $(count_qps) -eq $1 ]]
}

# wait_count WANT SECONDS: until count_qps is WANT; prints the count.
wait_count() {
	local rc=0
	rv_wait_until "$2" qps_are "$1" || rc=1
	count_qps
	return $rc
}

peers_except_me() {
	local i
	for ((i = 0; i < RV_NODES; i++)); do
		[[ $i -eq $me ]] || echo -n "$(rv_node_ip "$i") "
	done
}

# ---- scale ------------------------------------------------------------------

scale_one() {
	# Two statements: a declaration's words are expanded before it runs.
	local C=$1 P=$2
	local key="s$run$C-$P" tag="n$C-p$P" i c cq pids=() st=()
	local peers want=$((C * (RV_NODES - 1)))
	peers=$(peers_except_me)
	barrier "start-$tag" || true
	for ((i = 0; i < P; i++)); do
		st+=("$work/$tag.$i")
		# shellcheck disable=SC2086
		$CT -k "$key" -n "$C" -t 90000 -s "$work/$tag.$i" $peers \
			2>"$work/$tag.$i.err" &
		pids+=($!)
	done
	rv_status_wait "${st[@]}"
	tap_run "connected-$tag" rv_status_ok "${st[@]}"
	c=$(wait_count "$want" 10)
	cq=$(count_cqs)
	tap_diag "qp-count node$me P=$P num_conn=$C: rv RC QPs $c, rv CQs $cq, expected $want, one QP per process pair would be $((P * P * (RV_NODES - 1)))"
	if [[ $c -eq $want && $cq -eq $want ]]; then
		tap_ok "qp-count-$tag"
	else
		tap_fail "qp-count-$tag" "$c QPs, $cq CQs, want $want"
	fi
	barrier "measured-$tag" || true
	rv_stop_all "${pids[@]}"
	c=$(wait_count 0 30)
	if [[ $c -eq 0 ]]; then
		tap_ok "qp-released-$tag"
	else
		tap_fail "qp-released-$tag" "$c QPs left"
	fi
	barrier "done-$tag" || true
}

# The corners and the middle of num_conn x P: the count depends on
# num_conn alone, and each phase costs 10-20 s of connecting under TCG.
scale() {
	local CP
	for CP in 1:1 1:8 4:4 16:1 16:8; do
		scale_one "${CP%:*}" "${CP#*:}"
	done
}

# ---- pair -------------------------------------------------------------------

# order NAME LATE_NODE: LATE_NODE creates its side 3 s after the other.
order() {
	local name=$1 late=$2 d=0 pid peer
	peer=$(rv_node_ip $((1 - me)))
	[[ $me -eq $late ]] && d=3000
	barrier "start-$name" || true
	$CT -k "o$run$late" -d "$d" -t 60000 -s "$work/$name" "$peer" \
		2>"$work/$name.err" &
	pid=$!
	rv_status_wait "$work/$name"
	tap_run "$name" rv_status_ok "$work/$name"
	barrier "end-$name" || true
	rv_stop_all "$pid"
}

rej_count() {
	awk -v k="$1" '$1 == k { print $2 }' /sys/kernel/debug/rv/cm_stats
}

# node0 (10.77.0.1, the client) attacks node1's job "iso".
isolation() {
	local key="i$run" peer pid st=$work/iso b0 n0 m0 u0 a0 r0 b1 n1 m1 u1 a1 r1
	# Root from a privileged port with the cluster key, as rv would send
	# them: the checks after the port's and the tag's are tested here.
	local F=("$T/rv_cm_forge" -r "$(rv_node_ip 1)" -P "$cmport" -b 700
		-K "$RV_CLUSTER_KEY")
	peer=$(rv_node_ip $((1 - me)))
	barrier start-iso || true
	$CT -k "$key" -t 60000 -s "$st" "$peer" 2>"$st.err" &
	pid=$!
	rv_status_wait "$st"
	tap_run iso-legit-connected rv_status_ok "$st"
	barrier iso-connected || true
	if [[ $me -eq 1 ]]; then
		b0=$(rej_count rejected_bad_request)
		n0=$(rej_count rejected_no_conn)
		m0=$(rej_count rejected_mismatch)
		u0=$(rej_count rejected_busy)
		a0=$(rej_count rejected_auth)
		r0=$(rej_count rejected_replay)
	fi
	barrier iso-counted || true
	if [[ $me -eq 0 ]]; then
		tap_run iso-other-uid setpriv --reuid=65534 --regid=65534 \
			--clear-groups "$CT" -k "$key" -t 4000 -e no_conn -1 "$peer"
		tap_run iso-other-key "$CT" -k "x$run" -t 4000 -e no_conn -1 "$peer"
		# Forged requests: one field wrong each (rv_cm_forge -x: the
		# RV_CM_REJ_* expected: 1 no_conn, 2 busy, 4 bad_request,
		# 5 mismatch, 7 auth, 8 replay).
		tap_run forge-bad-magic "${F[@]}" -k "$key" -m 0x12345678 -x 4
		tap_run forge-bad-version "${F[@]}" -k "$key" -v 1 -x 4
		# Without the key the tag cannot be right; untagged requests
		# are refused while rv has a key; so is a tag over a request
		# 400 s old (rv_auth.h: 300 s at most).
		tap_run forge-no-cluster-key "${F[@]:0:7}" -k "$key" -x 7
		tap_run forge-untagged "${F[@]}" -k "$key" -A 0 -x 7
		tap_run forge-stale-request "${F[@]}" -k "$key" -T -400 -x 8
		tap_run forge-short-pdata "${F[@]}" -k "$key" -l 8 -x 4
		tap_run forge-bad-qp-index "${F[@]}" -k "$key" -i 4 -x 4
		tap_run forge-num-conn "${F[@]}" -k "$key" -n 2 -i 0 -x 5
		tap_run forge-wrong-key "${F[@]}" -k "y$run" -x 1
		tap_run forge-wrong-uid "${F[@]}" -k "$key" -u 4242 -x 1
		tap_run forge-hijack-connected-qp "${F[@]}" -k "$key" -i 0 -x 2
	fi
	barrier iso-attacked 180 || true
	if [[ $me -eq 1 ]]; then
		b1=$(rej_count rejected_bad_request)
		n1=$(rej_count rejected_no_conn)
		m1=$(rej_count rejected_mismatch)
		u1=$(rej_count rejected_busy)
		a1=$(rej_count rejected_auth)
		r1=$(rej_count rejected_replay)
		tap_diag "rejects counted: bad_request +$((b1 - b0)) no_conn +$((n1 - n0)) mismatch +$((m1 - m0)) busy +$((u1 - u0)) auth +$((a1 - a0)) replay +$((r1 - r0))"
		tap_run iso-rejects-counted test $((b1 - b0)) -eq 4 -a \
			$((m1 - m0)) -eq 1 -a $((u1 - u0)) -eq 1 -a $((n1 - n0)) -ge 4 \
			-a $((a1 - a0)) -eq 2 -a $((r1 - r0)) -eq 1
	fi
	# The job's own connection never noticed.
	rv_status_refresh "$st"
	tap_run iso-legit-untouched grep -q 'state connected reason none generation 1 connected 4/4' "$st"
	barrier iso-end || true
	rv_stop_all "$pid"
}

# Peers are rv instances: node1 refuses every request from a port a user
# can bind, whatever it carries, and counts it; root on node0 sending from
# a privileged port is a peer like rv (an idle QP index with the job's uid
# and key is accepted, a connected one is not); nobody but rv listens on
# cm_port.  Job "p" is connected between the nodes; job "v" exists only
# on node1 (created, never connected: its QPs wait for requests).
privports() {
	local key="p$run" idle="v$run" peer pid ipid="" pst=$work/priv
	local ist=$work/priv-idle hold=$work/priv-hold hpid rc u0 u1 r0 r1 out p0 p1
	local N=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	local F=("$T/rv_cm_forge" -r "$(rv_node_ip 1)" -P "$cmport")
	# Root holds the cluster key: with it, a peer (uid 65534 has neither).
	local R=("${F[@]}" -K "$RV_CLUSTER_KEY")
	local ips
	read -r -a ips <<<"$RV_NODE_IPS"
	peer=$(rv_node_ip $((1 - me)))
	barrier start-priv || true
	$CT -k "$key" -t 60000 -s "$pst" "$peer" 2>"$pst.err" &
	pid=$!
	if [[ $me -eq 1 ]]; then
		$CT -k "$idle" -0 -s "$ist" "$peer" 2>"$ist.err" &
		ipid=$!
		rv_status_wait "$ist"
		tap_run priv-idle-created rv_status_ok "$ist"
	fi
	rv_status_wait "$pst"
	tap_run priv-legit-connected rv_status_ok "$pst"
	barrier priv-connected || true
	if [[ $me -eq 1 ]]; then
		u0=$(rej_count rejected_unprivileged)
		r0=$(rej_count rejected)
		p0=$(rej_count auth_bad_proof)
	fi
	barrier priv-counted || true
	if [[ $me -eq 0 ]]; then
		# Root, privileged port, no RTU: job v's QP 2 is accepted and
		# stays connecting on node1 for 8 s.
		"${R[@]}" -b 701 -k "$idle" -i 2 -H 8000 -x 0 >"$hold" 2>&1 &
		hpid=$!
		rv_wait_until 10 grep -qs '^accepted' "$hold"
		tap_run priv-root-holds-connecting grep -q '^accepted' "$hold"
		# uid 65534 forging the jobs' uid (0) and keys from its own
		# (unprivileged) port: an idle, a connecting and a connected
		# QP index, all refused with RV_CM_REJ_UNPRIVILEGED (6).
		tap_run priv-nobody-idle-qp "${N[@]}" "${F[@]}" -k "$idle" -u 0 -i 1 -x 6
		tap_run priv-nobody-connecting-qp "${N[@]}" "${F[@]}" -k "$idle" -u 0 -i 2 -x 6
		tap_run priv-nobody-connected-qp "${N[@]}" "${F[@]}" -k "$key" -u 0 -i 0 -x 6
		# Nor can it send from a privileged port: EACCES (13).
		tap_run priv-nobody-bind-refused "${N[@]}" "${F[@]}" -k "$key" -u 0 -b 702 -E 13
		wait "$hpid"
		rc=$?
		sed 's/^/# /' "$hold"
		tap_run priv-root-held-accepted test "$rc" -eq 0
		# Root from a privileged port is a peer: an idle index with the
		# job's uid and key is accepted; a connected one stays refused
		# (BUSY, 2).
		tap_run priv-root-idle-accepted "${R[@]}" -b 701 -k "$idle" -i 3 -x 0
		tap_run priv-root-hijack-busy "${R[@]}" -b 701 -k "$key" -i 0 -x 2
		# The key gets a request accepted, not a QP: established by the
		# CM, node1's QP waits for the proof, and anything else first
		# (32 wrong bytes, a write with immediate) fails it.  Both are
		# held established while node1 looks at job v.
		"${R[@]}" -b 701 -k "$idle" -i 0 -F bad -H 8000 -x 0 \
			>"$work/proof-bad" 2>&1 &
		local bpid=$! wpid
		"${R[@]}" -b 703 -k "$idle" -i 1 -F write -H 8000 -x 0 \
			>"$work/proof-write" 2>&1 &
		wpid=$!
		rv_wait_until 20 grep -qs 'instead of the proof' "$work/proof-bad"
		rv_wait_until 20 grep -qs 'instead of the proof' "$work/proof-write"
		barrier priv-proof-held 60 || true
		barrier priv-proof-checked 60 || true
		wait "$bpid"
		tap_run priv-root-bad-proof test $? -eq 0
		sed 's/^/# /' "$work/proof-bad"
		wait "$wpid"
		tap_run priv-root-write-before-proof test $? -eq 0
		sed 's/^/# /' "$work/proof-write"
	fi
	if [[ $me -eq 1 ]]; then
		# While node0 holds two accepted QPs of job v that sent no
		# valid proof: none of job v's QPs is connected.
		barrier priv-proof-held 180 || true
		rv_status_refresh "$ist"
		sed 's/^/# /' "$ist"
		tap_run priv-idle-never-connected grep -q ' connected 0/4 ' "$ist"
		barrier priv-proof-checked 60 || true
	fi
	barrier priv-attacked 120 || true
	if [[ $me -eq 1 ]]; then
		u1=$(rej_count rejected_unprivileged)
		r1=$(rej_count rejected)
		tap_diag "node1 rejects: unprivileged +$((u1 - u0)), all +$((r1 - r0))"
		tap_run priv-unprivileged-counted test $((u1 - u0)) -eq 3 -a \
			$((r1 - r0)) -eq 4
		p1=$(rej_count auth_bad_proof)
		tap_diag "node1 proofs refused: +$((p1 - p0))"
		tap_run priv-bad-proofs-counted test $((p1 - p0)) -ge 2
		# rv's port, held from module load: a user gets EACCES (13),
		# root EADDRNOTAVAIL (99: rdma_cm's answer when a wildcard
		# listener holds the port).
		tap_run priv-listen-nobody "${N[@]}" "$T/rv_cm_forge" -L -P "$cmport" -E 13
		tap_run priv-listen-root "$T/rv_cm_forge" -L -P "$cmport" -E 99
	fi
	barrier priv-listened || true
	# Job p never noticed, and carries data: a verified stream over its
	# connection (same job, so same QPs) from one more process per node.
	rv_status_refresh "$pst"
	tap_run priv-legit-untouched grep -q 'state connected reason none generation 1 connected 4/4' "$pst"
	out=$(timeout 150 "$T/rv_write_test" -m stream -D "$shared" -N "$me" \
		-T 90 -k "$key" -P 1 -b $((1 << 20)) -M 16 "${ips[@]}" 2>&1)
	rc=$?
	grep -v '^ok ' <<<"$out" | sed 's/^/# /'
	tap_run priv-legit-data-flows test "$rc" -eq 0
	rv_status_refresh "$pst"
	tap_run priv-legit-still-gen1 grep -q 'state connected reason none generation 1 connected 4/4' "$pst"
	barrier priv-end || true
	rv_stop_all "$pid" $ipid
}

# rv's client ids on this node: their source ports (cm_port aside).
rv_client_ports() {
	rdma res show cm_id 2>/dev/null | grep 'comm \[rv\]' |
		sed -n 's/.* src-addr [^ ]*:\([0-9]*\).*/\1/p' |
		grep -vx "$cmport"
}

no_rv_client_ids() {
	[[ -z $(rv_client_ports) ]]
}

# PORT...: each one of the free ports of srcports (960..1022, multiple of 8).
free_ports_only() {
	local p
	(($#)) || return 1
	for p; do
		((p >= 960 && p <= 1022 && p % 8 == 0)) || return 1
	done
}

# A client's source ports are privileged (960..1023, cm_port aside) and
# shared by all of rv's ids; a port someone holds is skipped.  Root on
# node0 (the client) listens on 55 of them, all but the multiples of 8,
# so every QP's first port is taken unless it is one of those and its
# next free one is at most 7 down: a job of 16 QPs still connects, and
# its ids use free ports only.
srcports() {
	local key="q$run" peer pid sst=$work/src sq=$work/squat p list="" sqpid
	local ports
	peer=$(rv_node_ip $((1 - me)))
	barrier start-src || true
	if [[ $me -eq 0 ]]; then
		rv_wait_until 30 no_rv_client_ids
		for ((p = 960; p < 1023; p++)); do
			((p % 8)) && list+="${list:+,}$p"
		done
		"$T/rv_cm_forge" -L -P "$list" -H 120000 >"$sq" 2>&1 &
		sqpid=$!
		rv_wait_until 10 grep -qs '^listening' "$sq"
		sed 's/^/# /' "$sq"
		tap_run src-squatter-holds-55-ports grep -q '^listening' "$sq"
	fi
	barrier src-squatted || true
	$CT -k "$key" -n 16 -t 60000 -s "$sst" "$peer" 2>"$sst.err" &
	pid=$!
	rv_status_wait "$sst"
	tap_run src-connected-around-squatter rv_status_ok "$sst"
	if [[ $me -eq 0 ]]; then
		ports=$(rv_client_ports | sort -n | uniq -c | awk '{ printf "%s(x%s) ", $2, $1 }')
		tap_diag "node0: rv client source ports: $ports"
		# shellcheck disable=SC2046 # one word per port
		tap_run src-free-ports-only free_ports_only $(rv_client_ports)
		kill "$sqpid" 2>/dev/null
		wait "$sqpid" 2>/dev/null
	fi
	barrier src-end || true
	rv_stop_all "$pid"
}

# The server side goes away and comes back: the client reconnects within
# its timeout and the generation advances.
reconnect() {
	local key="c$run" peer pid st=$work/rc i ok=0
	peer=$(rv_node_ip $((1 - me)))
	barrier start-rc || true
	$CT -k "$key" -t 60000 -s "$st" "$peer" 2>/dev/null &
	pid=$!
	rv_status_wait "$st"
	tap_run rc-connected rv_status_ok "$st"
	barrier rc-connected || true
	if [[ $me -eq 1 ]]; then
		rv_stop_all "$pid"
		rm -f "$st"
		sleep 1
		$CT -k "$key" -t 60000 -s "$st" "$peer" 2>/dev/null &
		pid=$!
		rv_status_wait "$st"
		tap_run rc-server-recreated rv_status_ok "$st"
	else
		for ((i = 0; i < 60; i++)); do
			rv_status_refresh "$st"
			if grep -q 'state connected reason none generation 2 ' "$st"; then
				ok=1
				break
			fi
			sleep 0.5
		done
		sed 's/^/# /' "$st"
		tap_run rc-client-generation-2 test "$ok" -eq 1
	fi
	barrier rc-end || true
	rv_stop_all "$pid"
}

# Churn: one node holds its side of a job while the other node's side is
# created, connected and torn down again 8 times (each process exits as
# soon as it is connected), so requests, reconnects and teardown overlap.
# Job A churns on node1 (the server side), job B on node0 (the client).
churn() {
	local n=8 i c ok=0 pid st=$work/churn peer hold go
	peer=$(rv_node_ip $((1 - me)))
	if [[ $me -eq 0 ]]; then
		hold=A go=B
	else
		hold=B go=A
	fi
	barrier start-churn || true
	$CT -k "$hold$run" -t 60000 -s "$st" "$peer" 2>/dev/null &
	pid=$!
	for ((i = 0; i < n; i++)); do
		if timeout 60 "$CT" -k "$go$run" -t 30000 -1 "$peer" \
			>"$work/churn.$i" 2>&1; then
			ok=$((ok + 1))
		else
			sed 's/^/# /' "$work/churn.$i"
		fi
	done
	tap_run churn-short-lived-connected test "$ok" -eq "$n"
	barrier churn-done 180 || true
	rv_status_refresh "$st"
	sed 's/^/# /' "$st"
	tap_run churn-holder-alive grep -q '^peer .* generation [1-9]' "$st"
	rv_stop_all "$pid"
	barrier churn-stopped || true
	c=$(wait_count 0 30)
	tap_run churn-qps-zero test "$c" -eq 0
	barrier churn-end || true
}

# connect_ms KEY: one connect of job KEY to the other node (both nodes
# start it at a barrier and keep it until both are done); prints its
# connect time in ms, or 99999 if it failed.
connect_ms() {
	local st=$work/storm.$1 pid
	barrier "storm-$1" || true
	$CT -k "$1" -t 30000 -s "$st" "$(rv_node_ip $((1 - me)))" 2>/dev/null &
	pid=$!
	rv_status_wait "$st"
	barrier "storm-$1-done" || true
	rv_stop_all "$pid"
	if grep -q '^result ok' "$st"; then
		sed -n 's/^peer .* ms \([0-9]*\)$/\1/p' "$st"
	else
		sed 's/^/# /' "$st" >&2
		echo 99999
	fi
}

# Connections created but not connected own no CQ (nor QP): creating one
# costs a little memory, whatever num_conn is.
idle_conns() {
	local pid st=$work/idle c q
	$CT -k "i$run" -n 16 -0 -s "$st" 10.77.0.99 10.77.0.98 2>/dev/null &
	pid=$!
	rv_status_wait "$st"
	tap_run idle-created rv_status_ok "$st"
	c=$(count_cqs)
	q=$(count_qps)
	tap_diag "2 connections of 16 QPs created, not connected: $c rv CQs, $q rv QPs"
	tap_run idle-no-cqs test "$c" -eq 0 -a "$q" -eq 0
	rv_stop_all "$pid"
}

# On a kernel with CONFIG_LOCK_STAT (the debug kernel): what the storm
# did to rv_conn_list_lock, printed for the record (its hold times include
# the request handler's QP creation, so they are not a verdict).
lockstat_reset() {
	[[ -w /proc/lock_stat ]] && echo 0 >/proc/lock_stat
}
lockstat_show() {
	[[ -r /proc/lock_stat ]] || return 0
	awk '$1 == "rv_conn_list_lock:" {
		printf "lock_stat rv_conn_list_lock: %s contentions, wait max %s us, %s acquisitions, hold max %s us, hold avg %s us\n", $3, $5, $9, $11, $13
	}
	$1 == "rv_conn_list_lock" && $4 != "" {
		printf "lock_stat rv_conn_list_lock: %s contentions at %s\n", $2, $4
	}' /proc/lock_stat | while read -r line; do tap_diag "node$me: $line"; done
}

# A storm of CONN_CREATE/DESTROY (two jobs of one process per node, 16
# QPs per connection, never connected) while another job connects the
# nodes 4 times: incoming requests need the node-wide connection list,
# which creation must not hold for long.  Each connect under the storm
# must take at most 3 times the slowest of 4 without it, plus 1 s.
storm() {
	local i ms base=0 worst=0 n=4 pids=() peer dur c procs=${RV_STORM_PROCS:-2}
	peer=$(rv_node_ip $((1 - me)))
	for ((i = 0; i < n; i++)); do
		ms=$(connect_ms "sb$run$i")
		((ms > base)) && base=$ms
	done
	barrier storm-go || true
	lockstat_reset
	# Long enough for the 4 connects below (about 0.7 s each here).
	dur=$(rv_secs 8)000
	for ((i = 0; i < procs; i++)); do
		"$CT" -k "sx$run$i" -n 16 -S "$dur" "$peer" >"$work/storm-x.$i" 2>&1 &
		pids+=($!)
	done
	sleep 1
	for ((i = 0; i < n; i++)); do
		ms=$(connect_ms "sc$run$i")
		((ms > worst)) && worst=$ms
	done
	for ((i = 0; i < procs; i++)); do
		wait "${pids[$i]}" || tap_diag "storm $i: $(cat "$work/storm-x.$i")"
	done
	lockstat_show
	c=$(cat "$work"/storm-x.* | awk '/^storm/ { n += $2 } END { print n + 0 }')
	tap_diag "storm node$me: $c creates+destroys in ${dur} ms; slowest connect $base ms alone, $worst ms during the storm"
	tap_run storm-ran test "$c" -gt 0
	if ((worst <= 3 * base + 1000)); then
		tap_ok storm-connect-bounded
	else
		tap_fail storm-connect-bounded "slowest connect $worst ms during the storm, $base ms without: bound $((3 * base + 1000)) ms"
	fi
	barrier storm-end 120 || true
}

# Bounded failures: node0 only; node1 idles at the barrier.
failures() {
	local t0 t1 out
	if [[ $me -eq 0 ]]; then
		t0=$(date +%s)
		tap_run unreachable "$CT" -k "u$run" -t 3000 -e unreachable -1 10.77.0.99
		t1=$(date +%s)
		tap_run unreachable-bounded test $((t1 - t0)) -le 20
		t0=$(date +%s)
		tap_run no-listener "$CT" -k "l$run" -t 3000 -e no_listener -1 "$(rv_node_ip 1):959"
		t1=$(date +%s)
		tap_run no-listener-bounded test $((t1 - t0)) -le 20
		# 1024, the first port a user can listen on: EINVAL (err -22).
		out=$("$CT" -k "l$run" -t 3000 -1 "$(rv_node_ip 1):1024" 2>&1)
		sed 's/^/# /' <<<"$out"
		tap_run unprivileged-remote-port-refused grep -q ' err -22 ' <<<"$out"
	fi
	barrier failures-end 120 || true
}

# Processes exit one by one; the connection lives until the last.
lifetime() {
	local key="t$run" peer i c pids=() st=() P=3
	peer=$(rv_node_ip $((1 - me)))
	barrier start-life || true
	for ((i = 0; i < P; i++)); do
		st+=("$work/life.$i")
		$CT -k "$key" -t 60000 -s "$work/life.$i" "$peer" 2>/dev/null &
		pids+=($!)
	done
	rv_status_wait "${st[@]}"
	tap_run life-connected rv_status_ok "${st[@]}"
	barrier life-connected || true
	for ((i = 0; i < P - 1; i++)); do
		rv_stop_all "${pids[$i]}"
		barrier "life-exit$i" || true
		c=$(count_qps)
		rv_status_refresh "${st[@]:i+1}"
		if [[ $c -eq 4 ]] && rv_status_ok "${st[@]:i+1}" >/dev/null &&
			grep -q 'generation 1 ' "${st[$((P - 1))]}"; then
			tap_ok "life-up-after-exit$i"
		else
			tap_fail "life-up-after-exit$i" "$c QPs; $(cat "${st[$((P - 1))]}")"
		fi
		barrier "life-checked$i" || true
	done
	rv_stop_all "${pids[$((P - 1))]}"
	c=$(wait_count 0 30)
	tap_run life-qps-zero test "$c" -eq 0
	barrier life-end || true
	tap_run rmmod rmmod rv
	tap_run reload rv_insmod
}

# Device removal under a connected job: node0 removes its rxe device.
device_removal() {
	local key="r$run" peer pid st=$work/rm netdev
	peer=$(rv_node_ip $((1 - me)))
	barrier start-rm || true
	$CT -k "$key" -t 60000 -s "$st" "$peer" 2>/dev/null &
	pid=$!
	rv_status_wait "$st"
	tap_run rm-connected rv_status_ok "$st"
	barrier rm-connected || true
	if [[ $me -eq 0 ]]; then
		netdev=$(rdma link show "$RV_IBDEV/1" | sed -n 's/.* netdev \([^ ]*\).*/\1/p')
		tap_run rm-link-delete timeout 60 rdma link delete "$RV_IBDEV"
		rv_status_refresh "$st"
		tap_run rm-reports-removed grep -q 'state error reason device_removed' "$st"
		rv_stop_all "$pid"
		tap_run rm-link-add rdma link add "$RV_IBDEV" type rxe netdev "${netdev:-eth0}"
	fi
	barrier rm-removed || true
	rv_stop_all "$pid"
	barrier rm-end || true
}

# hb_passes SECONDS: heartbeat passes (runs of rv_qp_hb_work) on this
# node in SECONDS, counted by the function tracer.
hb_passes() {
	local tr=/sys/kernel/tracing n
	echo rv_qp_hb_work >"$tr/set_ftrace_filter" || return 1
	echo 0 >"$tr/tracing_on"
	echo function >"$tr/current_tracer"
	echo >"$tr/trace"
	echo 1 >"$tr/tracing_on"
	sleep "$1"
	# Stopped, not switched off: changing the tracer empties the buffer.
	echo 0 >"$tr/tracing_on"
	n=$(grep -c 'rv_qp_hb_work' "$tr/trace")
	echo nop >"$tr/current_tracer"
	echo 1 >"$tr/tracing_on"
	echo >"$tr/set_ftrace_filter"
	echo >"$tr/trace"
	echo "$n"
}

# Eight jobs of this node, each with a connection to the peer at a 50 ms
# heartbeat: never connected, they make no pass at all; connected, with
# heartbeat_budget 40, the node's passes stay within 40 a second (160
# per second without the budget).
heartbeat_cost() {
	local peer i n pids=() st=() budget=40 secs=3 bound
	peer=$(rv_node_ip $((1 - me)))
	barrier start-hb || true
	if ! grep -qw function /sys/kernel/tracing/available_tracers 2>/dev/null; then
		tap_skip hb-idle-no-pass "no function tracer in $(uname -r)"
		tap_skip hb-budget-bounds-passes "no function tracer"
		barrier hb-end || true
		return
	fi
	for ((i = 0; i < 8; i++)); do
		st+=("$work/hb-idle.$i")
		$CT -k "hi$run$i" -H 50 -0 -s "${st[i]}" "$peer" 2>/dev/null &
		pids+=($!)
	done
	rv_status_wait "${st[@]}"
	n=$(hb_passes 2)
	tap_diag "heartbeat passes in 2 s, 8 idle connections at 50 ms: $n (one per interval each: 320)"
	tap_run hb-idle-no-pass test "${n:-1}" -eq 0
	rv_stop_all "${pids[@]}"
	pids=() st=()
	barrier hb-idle-done || true
	echo "$budget" >/sys/module/rv/parameters/heartbeat_budget
	for ((i = 0; i < 8; i++)); do
		st+=("$work/hb-conn.$i")
		$CT -k "hc$run$i" -H 50 -t 60000 -s "${st[i]}" "$peer" 2>/dev/null &
		pids+=($!)
	done
	rv_status_wait "${st[@]}"
	tap_run hb-connected rv_status_ok "${st[@]}"
	barrier hb-connected || true
	n=$(hb_passes "$secs")
	bound=$((budget * secs * 5 / 4 + 8))
	tap_diag "heartbeat passes in $secs s, 8 connected connections at 50 ms, budget $budget/s: $n (bound $bound; 480 without the budget)"
	tap_run hb-budget-bounds-passes test "${n:-999999}" -le "$bound"
	tap_run hb-passes-go-on test "${n:-0}" -gt 0
	barrier hb-measured || true
	echo 10000 >/sys/module/rv/parameters/heartbeat_budget
	rv_stop_all "${pids[@]}"
	barrier hb-end || true
}

tap_begin
tap_diag "node$me of $RV_NODES ($RV_NODE_IPS), mode $mode, run $run"
if [[ ! -x $CT ]] || ! grep -qw '^rv' /proc/modules; then
	tap_skip "conn-$mode" "rv_conn_test not built or rv not loaded"
	tap_end
	exit
fi
case $mode in
scale)
	scale
	;;
pair)
	tr=/sys/kernel/tracing
	[[ -d $tr/events/rv/rv_conn_state ]] && echo 1 >"$tr/events/rv/enable"
	order order-node1-late 1
	order order-node0-late 0
	isolation
	privports
	srcports
	reconnect
	churn
	failures
	# Before lifetime's rmmod: the events of the tests so far.
	if [[ -d $tr/events/rv/rv_conn_state ]]; then
		grep -m 3 'rv_conn_state:.*CONNECTED' "$tr/trace" | sed 's/^/# /'
		tap_run trace-conn-events grep -q 'rv_cm_event:' "$tr/trace"
		echo 0 >"$tr/events/rv/enable"
	else
		tap_skip trace-conn-events "no tracefs"
	fi
	# After the trace check: its events would fill the trace buffer.
	heartbeat_cost
	idle_conns
	storm
	lifetime
	device_removal
	;;
storm)
	idle_conns
	storm
	;;
*)
	echo "unknown mode $mode" >&2
	exit 2
	;;
esac
tap_end
