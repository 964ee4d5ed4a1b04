#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# forge.sh - connection requests forged by an unprivileged user of another
# host, sent as plain UDP (rv_roce_forge), against a job of uid $VUID on
# node0 (10.77.0.1, the client: the lower address) and node1 (10.77.0.2,
# the server, which accepts requests).  3 nodes; node2 is the attacker:
# root unloads rdma_rxe there (its UDP socket holds port 4791), then uid
# 65534, without any capability, sends the requests and reads the answers
# on UDP 4791.  The requests claim node0's address and a privileged port
# (700) in rdma_cm's header and carry the job's uid and key.
#
#   idle-own  node1's side of the job exists, node0's not yet (node1's QPs
#             wait for requests); the forger names its own address as the
#             requester's GID of the primary path, so ib_cm sends it the
#             REP, and answers with an RTU
#   idle-src  the same with the claimed source (node0) as the path's GID:
#             the REP, if any, goes to node0, which ignores it
#             In both: node1's cm_stats "accepted" must not move, the forger
#             gets no REP, no RC QP of node1 has the forger's QPN as its
#             remote QPN; then node0 connects and a verified stream runs.
#   conn      the job connected on both nodes; the forger sends, every
#             40 ms for 5 s and for every QP index, a REQ with node0's CA
#             GUID and one of the job's real client QPNs (ib_cm takes it
#             for a stale connection's and disconnects the real one) and a
#             REQ with its own QPN.  The job may be disconnected, but must
#             end connected to node0 again; the forger gets no REP; no QP
#             of node1 ever (sampled every 0.2 s) has the forger's QPN as
#             remote; node1's accepted count grows by at most the
#             connections node0 established (its rv_cm_event trace); a
#             verified stream runs afterwards.
# node1's cm_stats are printed before and after each case (every line: the
# names of the reject reasons depend on the module); only "accepted" is
# asserted.  The forger sends each request in rv's request layouts 1 and 2
# (alternate rounds), so the test does not depend on the module's version.
#
# Nodes meet at barriers: files in the run's shared output directory.

set -uo pipefail
# shellcheck source=tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"

: "${RV_NODE:?run me with rv-vm}" "${RV_NODES:?}" "${RV_IBDEV:?}" "${RV_OUT:?}"
me=$RV_NODE
T=$RV_REPO/tools/testing/selftests/rv
CT=$T/rv_conn_test
WT=$T/rv_write_test
F=$T/rv_roce_forge
VUID=1000
V=(setpriv "--reuid=$VUID" "--regid=$VUID" --clear-groups)
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
NC=4
shared=$(dirname "$RV_OUT")/forge-barriers
work=$RV_OUT/forge
# The victim's status files: written by uid $VUID, on the guest's tmpfs.
st=/tmp/forge-status
cmport=$(cat /sys/module/rv/parameters/cm_port 2>/dev/null)
stats=/sys/kernel/debug/rv/cm_stats
tr=/sys/kernel/tracing
ip0=$(rv_node_ip 0)
ip1=$(rv_node_ip 1)
ip2=$(rv_node_ip 2)
mkdir -p "$shared" "$work" "$st"
chmod 1777 "$shared" "$st"

barrier() {
	rv_barrier "$shared" "$@"
}

stat_of() {
	awk -v k="$1" '$1 == k { print $2 }' "$stats"
}

show_stats() {
	local l
	while IFS= read -r l; do
		tap_diag "node$me cm_stats $1: $l"
	done <"$stats"
}

# rv's RC QPs (rdma_cm's), one "lqpn rqpn state" line each.
rc_qps() {
	rdma res show qp 2>/dev/null | grep -w 'type RC' |
		grep 'comm \[rdma_cm\]' |
		sed -n 's/.* lqpn \([0-9]*\) rqpn \([0-9]*\) .* state \([A-Z]*\) .*/\1 \2 \3/p'
}

connected_all() {
	rv_status_refresh "$1" && grep -q "state connected .* connected $NC/$NC" "$1"
}

# victim KEY STATUS: this node's side of the job, as uid $VUID; its pid
# in $vpid.
victim() {
	local peer=$ip1
	[[ $me -eq 1 ]] && peer=$ip0
	"${V[@]}" "$CT" -k "$1" -n $NC -t 150000 -s "$2" "$peer" \
		>/dev/null 2>"$2.err" &
	vpid=$!
}

# The forger's own QPNs: from 0xf00000 up (rxe allocates below 0x20000).
FQPN=$((0xf00000))

# forger_peers: rv RC QPs (rc_qps lines on stdin) whose remote QPN is one
# of the forger's own.
forger_peers() {
	awk -v min=$FQPN '$2 >= min { print $1 " -> " $2 " " $3 }'
}

# stream NAME KEY: a verified stream over the job's connection (uid
# $VUID, one more process per node).
stream() {
	local d=$shared/wt-$1 out rc=0
	mkdir -p "$d"
	chmod 1777 "$d"
	out=$(ulimit -l unlimited
	      timeout 150 "${V[@]}" "$WT" -m stream -D "$d" -N "$me" -T 90 \
		-k "$2" -c $NC -P 1 -b $((1 << 20)) -M 16 "$ip0" "$ip1" 2>&1) ||
		rc=$?
	grep -v '^ok ' <<<"$out" | sed 's/^/# /'
	tap_run "$1-data-flows" test "$rc" -eq 0
}

# forger NAME ARGS...: rv_roce_forge as uid 65534, claiming node0's
# address and port 700, against node1; its output kept in the shared
# directory.  A result: no REP came (exit status 0).
forger() {
	local name=$1 out rc=0
	shift
	out=$("${NOBODY[@]}" "$F" --target "$ip1" --src-ip "$ip0" \
		--src-port 700 --cm-port "$cmport" --uid $VUID \
		--num-conn $NC --version 1,2 "$@" 2>&1) || rc=$?
	printf '%s\n' "$out" >"$shared/$name.forger"
	# shellcheck disable=SC2001
	sed 's/^/# /' <<<"$out"
	if [[ $rc -eq 0 ]]; then
		tap_ok "$name-forger-no-rep"
	else
		tap_fail "$name-forger-no-rep" "exit status $rc: $(grep -c '^REP' <<<"$out") REPs"
	fi
}

# ---- setup: node2 becomes the attacker ------------------------------------

attacker_setup() {
	timeout 60 rdma link delete "$RV_IBDEV"
	tap_run attacker-rxe-deleted test -z "$(rdma link show 2>/dev/null)"
	# rv lets go of the device on its removal; rdma_rxe then unloads.
	rv_wait_until 30 rmmod rdma_rxe
	tap_run attacker-rxe-unloaded bash -c '! grep -qw "^rdma_rxe" /proc/modules'
	tap_run attacker-no-capabilities "${NOBODY[@]}" \
		bash -c 'grep -q "^CapEff:[[:space:]]*0*$" /proc/self/status'
}

# ---- idle QPs ----------------------------------------------------------------

# idle NAME PATH_GID QPNS
idle() {
	local name=$1 gid=$2 qpns=$3 key="fi$1" s=$st/$1 pid="" a0 a1 q
	barrier "start-$name" || true
	if [[ $me -eq 1 ]]; then
		victim "$key" "$s"
		pid=$vpid
		# CONN_CREATE and CONNECT come right after ATTACH; the server's
		# QPs then wait for requests.
		sleep "$(rv_secs 3)"
		a0=$(stat_of accepted)
		show_stats "before $name"
	fi
	barrier "victim-$name" || true
	if [[ $me -eq 2 ]]; then
		forger "$name" --path-gid "$gid" --key "$key" \
			--qp-index 0,1,2,3 --qpn "$qpns" --qpn-step 16 --rtu --count 4 \
			--interval-ms 500 --wait-ms "$(rv_secs 5)000"
	fi
	barrier "forged-$name" 120 || true
	if [[ $me -eq 1 ]]; then
		sleep 1
		a1=$(stat_of accepted)
		show_stats "after $name"
		tap_diag "node1 accepted before $a0 after $a1"
		tap_diag "node1 rv RC QPs (lqpn rqpn state): $(rc_qps | tr '\n' ',')"
		if [[ $a1 -eq $a0 ]]; then
			tap_ok "$name-none-accepted"
		else
			tap_fail "$name-none-accepted" "accepted +$((a1 - a0))"
		fi
		q=$(rc_qps | forger_peers)
		if [[ -z $q ]]; then
			tap_ok "$name-no-qp-to-forger"
		else
			tap_fail "$name-no-qp-to-forger" "node1 QPs connected to the forger's QPNs: $(tr '\n' ',' <<<"$q")"
		fi
	fi
	barrier "checked-$name" || true
	# Now the real peer: node0's side connects.
	if [[ $me -eq 0 ]]; then
		victim "$key" "$s"
		pid=$vpid
	fi
	if [[ $me -le 1 ]]; then
		rv_status_wait "$s"
		# Re-queried: node1's may have settled on taken-over QPs, which
		# are released only when they fail.
		rv_wait_until 90 connected_all "$s"
		tap_run "$name-job-connected" rv_status_ok "$s"
		tap_run "$name-job-all-qps" grep -q "connected $NC/$NC" "$s"
		tap_diag "node$me rv RC QPs (lqpn rqpn state): $(rc_qps | tr '\n' ',')"
	fi
	barrier "connected-$name" 180 || true
	[[ $me -le 1 ]] && stream "$name" "$key"
	barrier "end-$name" 240 || true
	[[ -n $pid ]] && rv_stop_all "$pid"
}

# ---- a connected job -------------------------------------------------------

conn() {
	local name=conn key=fc s=$st/conn pid="" a0 a1 est guid qpns idx n
	local own=0xf10000,0xf10001,0xf10002,0xf10003 spid q
	barrier start-conn || true
	if [[ $me -le 1 ]]; then
		victim "$key" "$s"
		pid=$vpid
		rv_status_wait "$s"
		tap_run conn-job-connected rv_status_ok "$s"
	fi
	barrier conn-connected 180 || true
	if [[ $me -eq 0 ]]; then
		# What the forger is handed: node0's CA GUID and the job's
		# client QPNs (root can read both; a user of node0 too).
		guid=$(tr -d ':' <"/sys/class/infiniband/$RV_IBDEV/node_guid")
		# (The two nodes number their QPs alike, so a client QP and
		# its server peer often have the same number.)
		qpns=$(rc_qps | awk '$3 == "RTS" { print $1 }' |
			head -$NC | paste -sd,)
		tap_diag "node0 CA GUID $guid, client QPNs $qpns"
		echo "$guid" >"$shared/conn.guid"
		echo "$qpns" >"$shared/conn.qpns"
		rc_qps >"$work/conn-qps-before"
		if [[ -d $tr/events/rv/rv_cm_event ]]; then
			echo 0 >"$tr/tracing_on"
			echo >"$tr/trace"
			echo 1 >"$tr/events/rv/rv_cm_event/enable"
			echo 1 >"$tr/tracing_on"
		fi
	fi
	if [[ $me -eq 1 ]]; then
		a0=$(stat_of accepted)
		show_stats "before conn"
		touch "$work/sampling"
		(
			end=$((SECONDS + $(rv_secs 120)))
			while [[ -e $work/sampling ]] && ((SECONDS < end)); do
				rc_qps >>"$work/conn-samples"
				sleep 0.2
			done
		) &
		spid=$!
	fi
	barrier conn-ready || true
	if [[ $me -eq 2 ]]; then
		guid=$(<"$shared/conn.guid")
		qpns=$(<"$shared/conn.qpns")
		n=$(tr ',' '\n' <<<"$qpns" | grep -c .)
		if ((n < 1)); then
			tap_fail conn-forger-no-rep "no client QPNs from node0"
		else
			idx=$(seq 0 $((n - 1)) | paste -sd,)
			forger conn --path-gid "$ip2" --key "$key" --qp-index "$idx" \
				--qpn "$(cut -d, -f1-"$n" <<<"$own")" --qpn-step 16 \
				--stale-qpn "$qpns" --ca-guid "$guid" --rtu \
				--count 125 --interval-ms 40 \
				--wait-ms "$(rv_secs 5)000" --quiet
		fi
	fi
	barrier conn-forged 120 || true
	if [[ $me -le 1 ]]; then
		# Disconnected or not, the job must come back to its peer.
		rv_wait_until 90 connected_all "$s"
		tap_run conn-job-reconnected grep -q "state connected .* connected $NC/$NC" "$s"
		sed 's/^/# /' "$s"
	fi
	if [[ $me -eq 0 ]]; then
		rc_qps >"$shared/conn.qps-after"
		est=0
		if [[ -d $tr/events/rv/rv_cm_event ]]; then
			echo 0 >"$tr/events/rv/rv_cm_event/enable"
			est=$(grep -c 'rv_cm_event:.* event ESTABLISHED' "$tr/trace")
			grep 'rv_cm_event:' "$tr/trace" | tail -n 40 | sed 's/^/# node0 trace: /'
		fi
		echo "$est" >"$shared/conn.established"
		tap_diag "node0: $est connections established during the attack"
	fi
	barrier conn-counted 120 || true
	if [[ $me -eq 1 ]]; then
		rm -f "$work/sampling"
		wait "$spid"
		a1=$(stat_of accepted)
		show_stats "after conn"
		est=$(cat "$shared/conn.established" 2>/dev/null || echo 0)
		tap_diag "node1 accepted before $a0 after $a1 (+$((a1 - a0))), node0 established $est"
		tap_run conn-accepted-only-real test $((a1 - a0)) -le "$est"
		q=$(forger_peers <"$work/conn-samples" | sort -u)
		tap_diag "node1: $(wc -l <"$work/conn-samples") QP samples"
		if [[ -z $q ]]; then
			tap_ok conn-no-qp-to-forger
		else
			tap_fail conn-no-qp-to-forger "node1 QPs seen connected to the forger's QPNs: $(tr '\n' ',' <<<"$q")"
		fi
		# Now every QP's peer is one of node0's QPs.
		q=$(rc_qps | awk 'NR == FNR { real[$1] = 1; next } !real[$2] { print $1 " -> " $2 " " $3 }' "$shared/conn.qps-after" -)
		tap_diag "node1 rv RC QPs (lqpn rqpn state): $(rc_qps | tr '\n' ',')"
		tap_diag "node0 rv RC QPs: $(tr '\n' ',' <"$shared/conn.qps-after")"
		if [[ -z $q ]]; then
			tap_ok conn-peers-are-node0
		else
			tap_fail conn-peers-are-node0 "node1 QPs whose peer is no QP of node0: $(tr '\n' ',' <<<"$q")"
		fi
	fi
	barrier conn-checked || true
	[[ $me -le 1 ]] && stream conn "$key"
	barrier conn-end 240 || true
	[[ -n $pid ]] && rv_stop_all "$pid"
}

tap_begin
tap_diag "node$me of $RV_NODES ($RV_NODE_IPS), rv cm_port $cmport"
if ((RV_NODES != 3)) || [[ ! -x $F || ! -x $CT || ! -x $WT ]] ||
	! grep -qw '^rv' /proc/modules; then
	tap_skip forge "3 nodes, rv loaded and rv_roce_forge built needed"
	tap_end
	exit
fi
[[ $me -eq 2 ]] && attacker_setup
barrier setup 180 || true
idle idle-own "$ip2" 0xf00000,0xf00001,0xf00002,0xf00003
idle idle-src "$ip0" 0xf00100,0xf00101,0xf00102,0xf00103
conn
tap_end
