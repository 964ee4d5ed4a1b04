#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# bench-link.sh - measure the VM-to-VM link rv's tests and benchmarks run on.
#
# Usage: bench-link.sh [rv-vm options...]      (on the host)
#   e.g. bench-link.sh --smp 2 --net bridge
#
# Boots 2 nodes and prints ICMP RTT (ping -c 20 -i 0.2), 8-byte RDMA WRITE
# latency (ib_write_lat -s 8 -n 1000) and 1 MiB RDMA WRITE bandwidth
# (ib_write_bw -s 1048576 -n 500) between node 0 (client) and node 1 (server),
# over rxe0.  Set BENCH_BW=0 to skip the bandwidth test.
#
# Inside a VM (RV_NODE set by rv-vm) the script plays its node's part.

set -euo pipefail

# Run a perftest client until its server (started at about the same time
# on the peer) accepts; perftest gives no way to wait for the listener.
# Bounded: 60 attempts, 0.5 s apart.
perf_client() {
	local i
	for ((i = 0; i < 60; i++)); do
		if "$@" >"$RV_OUT/client.log" 2>&1; then
			cat "$RV_OUT/client.log"
			return 0
		fi
		sleep 0.5
	done
	cat "$RV_OUT/client.log"
	return 1
}

guest() {
	local peer lat bw
	read -r _ peer _ <<<"$RV_NODE_IPS"
	if [[ $RV_NODE == 1 ]]; then
		# Both servers at once on their own ports: the latency server
		# sometimes lingers after the client is done (perftest's final
		# handshake), which must not hold up the bandwidth test.
		timeout 120 ib_write_lat -d "$RV_IBDEV" -s 8 -n 1000 -p 18515 &
		lat=$!
		if [[ ${BENCH_BW:-1} != 0 ]]; then
			timeout 180 ib_write_bw -d "$RV_IBDEV" -s 1048576 -n 500 -p 18516 || true
			kill "$lat" 2>/dev/null || true
		fi
		wait "$lat" || true
		return 0
	fi
	echo "== ping -c 20 -i 0.2 $peer"
	ping -q -c 20 -i 0.2 "$peer" | tail -n 1
	echo "== ib_write_lat -d $RV_IBDEV -s 8 -n 1000 $peer"
	lat=$(perf_client timeout 120 ib_write_lat -d "$RV_IBDEV" -s 8 -n 1000 -p 18515 "$peer")
	# Data line: #bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%
	awk '/^ *8 +1000 /{ printf "lat_usec: min %s typical %s avg %s 99%% %s\n", $3, $5, $6, $8 }' <<<"$lat"
	if [[ ${BENCH_BW:-1} != 0 ]]; then
		echo "== ib_write_bw -d $RV_IBDEV -s 1048576 -n 500 $peer"
		bw=$(perf_client timeout 180 ib_write_bw -d "$RV_IBDEV" -s 1048576 -n 500 -p 18516 "$peer")
		# Data line: #bytes #iterations BW_peak BW_average MsgRate (MB/s, Mpps)
		awk '/^ *1048576 /{ printf "bw_MBps: peak %s avg %s\n", $3, $4 }' <<<"$bw"
	fi
}

if [[ -n ${RV_NODE:-} ]]; then
	guest
	exit
fi

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rc=0
out=$(mktemp -d "${TMPDIR:-/tmp}/rv-bench.XXXXXX")
trap '[[ $rc -eq 0 ]] && rm -rf "$out"' EXIT

"$here/../vm/rv-vm" run --nodes 2 --timeout 400 --out "$out" "$@" \
	-- "BENCH_BW=${BENCH_BW:-1} $here/bench-link.sh" || rc=$?
grep -E '^(== |rtt|lat_usec|bw_MBps)' "$out/node0.out" || cat "$out/node0.out"
exit $rc
