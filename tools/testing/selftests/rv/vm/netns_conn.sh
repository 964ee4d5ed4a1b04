#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# netns_conn.sh - two nodes, shared netns mode: a job's connections live in
# the network namespace of the process that attached.  "lo" is the node
# whose address is lower (its connections are the clients), "hi" the
# other one.  Both sides of each pair use the same uid and key, so each
# pair would connect if rv made its connections in the initial namespace,
# from the host's addresses (as it once did):
#
#   client-other-ns:  lo, in a new namespace (only "lo"), connects to hi,
#                     whose job waits in the initial namespace: the
#                     namespace has neither lo's address nor a route, so
#                     the connection fails UNREACHABLE, within 20 s.
#   server-other-ns:  hi waits in a new namespace; lo's request arrives in
#                     the initial namespace, where hi has no such job:
#                     rejected, lo's connection fails NO_CONN.
#   init-ns:          the same pair, both in the initial namespace,
#                     connects.

set -uo pipefail
# shellcheck source=tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"

: "${RV_NODE:?run me with rv-vm}" "${RV_NODES:?}" "${RV_IBDEV:?}" "${RV_OUT:?}"
me=$RV_NODE
CT=$RV_REPO/tools/testing/selftests/rv/rv_conn_test
shared=$(dirname "$RV_OUT")/netns-barriers
mkdir -p "$shared"

barrier() {
	rv_barrier "$shared" "$@"
}

tap_begin

if [[ ! -x $CT || ! -d /sys/module/rv ]]; then
	tap_skip netns-conn "rv_conn_test not built or rv not loaded"
	tap_end
	exit 0
fi
# A kernel without CONFIG_NET_NS (the debug kernel) has no namespace to test.
if ! unshare -n true 2>/dev/null; then
	tap_skip netns-conn "no network namespaces (CONFIG_NET_NS)"
	tap_end
	exit 0
fi
rdma system set netns shared

mine=$(rv_node_ip "$me")
peer=$(rv_node_ip $((1 - me)))
role=$(rv_pair_role)
tap_diag "node$me $mine is $role; peer $peer"

# settle NAME SECONDS CMD...: CMD must succeed within SECONDS.
settle() {
	local name=$1 limit=$2 t0 t1
	shift 2
	t0=$(date +%s)
	tap_run "$name" "$@"
	t1=$(date +%s)
	tap_diag "$name: $((t1 - t0)) s"
	tap_run "$name-bounded" test $((t1 - t0)) -le "$(rv_secs "$limit")"
}

barrier start || true
if [[ $role == lo ]]; then
	settle client-other-ns 20 \
		unshare -n "$CT" -k nsa -t 8000 -e unreachable -1 "$peer"
else
	# Waits for lo; connected only if lo's namespace did not matter.
	"$CT" -k nsa -t 15000 -e timeout -1 "$peer" >"$RV_OUT/nsa.out" 2>&1 &
	hold=$!
fi
barrier client-done || true
if [[ $role == hi ]]; then
	wait "$hold"
	rc=$?
	sed 's/^/# /' "$RV_OUT/nsa.out"
	tap_run server-not-reached-from-other-ns test "$rc" -eq 0
fi

barrier server-start || true
if [[ $role == hi ]]; then
	unshare -n "$CT" -k nsb -t 15000 -e timeout -1 "$peer" \
		>"$RV_OUT/nsb.out" 2>&1 &
	hold=$!
	sleep 2
fi
barrier server-ready || true
if [[ $role == lo ]]; then
	settle server-other-ns 20 "$CT" -k nsb -t 8000 -e no_conn -1 "$peer"
fi
barrier server-done || true
if [[ $role == hi ]]; then
	wait "$hold"
	rc=$?
	sed 's/^/# /' "$RV_OUT/nsb.out"
	tap_run server-other-ns-not-served test "$rc" -eq 0
fi

# Both sides stay until both have settled: a client that exits as soon
# as it is connected may disconnect QPs the server has not seen
# established yet.
settled() {
	grep -q '^result' "$RV_OUT/nsc.status" 2>/dev/null
}

barrier init-start || true
t0=$(date +%s)
"$CT" -k nsc -t 30000 -s "$RV_OUT/nsc.status" "$peer" &
pid=$!
rv_wait_until 45 settled
t1=$(date +%s)
barrier init-settled || true
kill -TERM "$pid"
wait "$pid"
sed 's/^/# /' "$RV_OUT/nsc.status"
tap_run init-ns grep -qx 'result ok' "$RV_OUT/nsc.status"
tap_diag "init-ns: $((t1 - t0)) s"
tap_run init-ns-bounded test $((t1 - t0)) -le "$(rv_secs 40)"

tap_end
