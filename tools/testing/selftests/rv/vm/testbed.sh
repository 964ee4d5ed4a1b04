#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# testbed.sh - prove the VM test bed works; runs on every node of a group
# (rv-vm run --nodes N -- tools/testing/selftests/rv/vm/testbed.sh).
#
# Per node: rxe0 is ACTIVE, rv is loaded (when rv.ko is built), every peer
# answers ping.  Per pair of nodes a < b: an RC verbs exchange
# (ibv_rc_pingpong) and an rdma_cm exchange (rping), server on b, client on
# a.  With 2+ nodes node 0 also runs an ib_write_bw to node 1.  Clients
# retry until their server listens; every wait is bounded.

set -euo pipefail
# shellcheck source=tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"

: "${RV_NODE:?run me with rv-vm}" "${RV_NODES:?}" "${RV_IBDEV:?}"
me=$RV_NODE
port_state=/sys/class/infiniband/$RV_IBDEV/ports/1/state
srvlog=$RV_OUT/servers
mkdir -p "$srvlog"

tap_begin
tap_diag "node$me of $RV_NODES, $(uname -r), ips: $RV_NODE_IPS"

tap_run rxe-active grep ACTIVE "$port_state"
if [[ -f $RV_KO ]]; then
	tap_run rv-loaded grep -w '^rv' /proc/modules
else
	tap_skip rv-loaded "$RV_KO not built"
fi
gid=$(rv_gid_index "$RV_IBDEV") || gid=
if [[ -n $gid ]]; then
	tap_ok ipv4-gid
else
	tap_fail ipv4-gid "no IPv4 GID on $RV_IBDEV"
	gid=1
fi

for ((p = 0; p < RV_NODES; p++)); do
	[[ $p -eq $me ]] && continue
	tap_run "ping-node$p" rv_retry 5 1 ping -q -c 3 -i 0.2 -W 2 "$(rv_node_ip "$p")"
done

# Distinct ports per pair: a node can serve one peer while being the client
# of another.
pp_port() { echo $((18600 + 10 * $1 + $2)); }
rping_port() { echo $((7400 + 10 * $1 + $2)); }

# Servers first (this node is b for every a < b), in the background.
declare -A srv=()
for ((a = 0; a < me; a++)); do
	timeout 120 ibv_rc_pingpong -d "$RV_IBDEV" -g "$gid" -n 100 \
		-p "$(pp_port "$a" "$me")" >"$srvlog/pp-$a.log" 2>&1 &
	srv[pp-$a]=$!
	timeout 120 rping -s -a "$(rv_node_ip "$me")" -p "$(rping_port "$a" "$me")" -C 10 -V \
		>"$srvlog/rping-$a.log" 2>&1 &
	srv[rping-$a]=$!
done
# 50 MiB: a second or two on Debian's kernel, under a minute on the debug
# kernel (KASAN slows rxe's copies several times); the client's timeout
# must not cut a transfer short, or its retry finds the server gone.
bw_args=(-d "$RV_IBDEV" -s 1048576 -n 50 -p 18700)
if [[ $me -eq 1 ]]; then
	timeout 300 ib_write_bw "${bw_args[@]}" >"$srvlog/bw.log" 2>&1 &
	srv[bw]=$!
fi

# Then clients (this node is a for every b > a).  40 tries 0.5 s apart
# cover the server node booting a little later than this one.
for ((b = me + 1; b < RV_NODES; b++)); do
	ip=$(rv_node_ip "$b")
	tap_run "rc-pingpong-node$b" rv_retry 40 0.5 timeout 60 \
		ibv_rc_pingpong -d "$RV_IBDEV" -g "$gid" -n 100 -p "$(pp_port "$me" "$b")" "$ip"
	tap_run "rping-node$b" rv_retry 40 0.5 timeout 60 \
		rping -c -a "$ip" -p "$(rping_port "$me" "$b")" -C 10 -V
done
if [[ $me -eq 0 && $RV_NODES -ge 2 ]]; then
	tap_run write-bw-node1 rv_retry 40 0.5 timeout 240 \
		ib_write_bw "${bw_args[@]}" "$(rv_node_ip 1)"
fi

# Collect the servers.
while read -r k; do
	[[ -n $k ]] || continue
	case $k in
	bw) name=write-bw-server ;;
	pp-*) name=rc-pingpong-server-node${k#pp-} ;;
	rping-*) name=rping-server-node${k#rping-} ;;
	esac
	rc=0
	wait "${srv[$k]}" || rc=$?
	sed 's/^/# /' "$srvlog/$k.log"
	if [[ $rc -eq 0 ]]; then
		tap_ok "$name"
	else
		tap_fail "$name" "exit status $rc"
	fi
done < <(printf '%s\n' "${!srv[@]}" | sort)

tap_end
