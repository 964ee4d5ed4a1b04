#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# bench-fabtests.sh - fabtests' fi_rdm_tagged_bw (or, with
# BENCH_FT_TEST=fi_rdm_tagged_pingpong, its ping-pong) over several builds of the
# rv provider and over verbs;ofi_rxm, in one boot of 2 VMs, so that their
# figures share the host's load (issue 20's bandwidth comparison).
#
# Usage: bench-fabtests.sh [rv-vm options...]  (on the host; make all fabtests)
#
# Node 0 is the server (receiver), node 1 the client (sender).  For each
# repetition, size and configuration in turn: fi_rdm_tagged_bw -p PROV
# -W W -w 1 -I N (below 4 MiB W = $BENCH_FT_WINDOW, fabtests' own default
# window, and N = $BENCH_FT_ITERS; from 4 MiB $BENCH_FT_WINDOW_BIG and
# $BENCH_FT_ITERS_BIG, which keep a window's buffers within the VMs'
# memory; verbs;ofi_rxm stops at rxe's 8 MiB).  fabtests' bandwidth test
# waits for the whole window, and then for an acknowledgement from the
# receiver, before it posts the next: each window pays a protocol's
# round trips once, so a short window measures its latency as much as
# its bandwidth.
# Around each run each node records rxe's counters (rdma statistic; the
# non-zero deltas, e.g. completer_retry_err: a retransmission timeout) and
# its CPU ticks (/proc/stat).  Prints per size the best MB/s of each
# configuration and the ratio to verbs;ofi_rxm.
#
# Environment: BENCH_FT_CONFIGS (default "rv=lib/librv-fi rxm"): NAME=DIR
# runs -p rv with FI_PROVIDER_PATH=DIR (relative to the repo, or absolute:
# e.g. a copy of another branch's librv-fi.so), NAME=DIR:VAR=VALUE[:...]
# also sets each VAR (e.g. FI_RV_STATS=1, FI_RV_YIELD=1), "rxm" is
# verbs;ofi_rxm, "ibw" and "ibr" are perftest's ib_write_bw and
# ib_read_bw (one QP, -n N, up to 8 MiB): the ceilings of rxe's RDMA WRITE
# (what rv's rendezvous uses) and RDMA READ (what ofi_rxm's uses) on the
# same link, so that each provider can be set against its own verb;
# BENCH_FT_SIZES (default "262144 1048576 4194304"), BENCH_FT_REPEAT (2),
# BENCH_FT_WINDOW (64), BENCH_FT_ITERS (128), BENCH_FT_WINDOW_BIG (16),
# BENCH_FT_ITERS_BIG (8), BENCH_FT_TEST (fi_rdm_tagged_bw, or
# fi_rdm_tagged_pingpong: one message at a time, so each pays the
# protocol's latency; its MB/s is size / one-way time, "ibw" and "ibr"
# are skipped),
# BENCH_OUT (default build/vm/bench-fabtests/<time>).  The stderr of each
# run (FI_RV_STATS' lines) is kept in the node's output.
#
# Inside a VM (RV_NODE set by rv-vm) the script plays its node's part.

set -uo pipefail

CONFIGS=${BENCH_FT_CONFIGS:-rv=lib/librv-fi rxm}
SIZES=${BENCH_FT_SIZES:-262144 1048576 4194304}
REPEAT=${BENCH_FT_REPEAT:-2}
WINDOW=${BENCH_FT_WINDOW:-64}
ITERS=${BENCH_FT_ITERS:-128}
WINDOW_BIG=${BENCH_FT_WINDOW_BIG:-16}
ITERS_BIG=${BENCH_FT_ITERS_BIG:-8}
TEST=${BENCH_FT_TEST:-fi_rdm_tagged_bw}
case $TEST in
fi_rdm_tagged_bw | fi_rdm_tagged_pingpong) ;;
*) echo "bench-fabtests.sh: BENCH_FT_TEST $TEST: fi_rdm_tagged_bw or fi_rdm_tagged_pingpong" >&2; exit 2 ;;
esac

# counters FILE: rxe's counters of this node's device, "name value" lines.
counters() {
	rdma statistic show link "$RV_IBDEV/1" 2>/dev/null |
		tr ' ' '\n' | awk 'NR > 1 && $0 ~ /^[0-9]+$/ { print p, $0 } { p = $0 }' >"$1"
}

# delta A B: the counters that changed from A to B, "name=delta ...".
delta() {
	awk 'NR == FNR { a[$1] = $2; next }
	     $2 != a[$1] { printf "%s=%d ", $1, $2 - a[$1] }' "$1" "$2"
}

cputicks() {
	awk '$1 == "cpu" { print "user=" $2, "sys=" $4, "idle=" $5, "softirq=" $8 }' /proc/stat
}

# perftest_run ibw|ibr SIZE ITERS PORT SERVER_IP: ib_write_bw or ib_read_bw
# (node 0 serves, node 1's client retries until it listens); sets $out to
# a line shaped like fabtests' ("SIZE ITERS BYTES TIME MB/s usec/xfer
# rate", MB/s = 10^6 bytes/s, from perftest's average MiB/s) plus
# perftest's output as comments.
perftest_run() {
	local verb=write i raw mbs
	[[ $1 == ibr ]] && verb="read"
	local -a cmd=(timeout 600 "ib_${verb}_bw" -d "$RV_IBDEV" -s "$2" -N
		-n "$3" -p "$4")
	if [[ $RV_NODE -eq 0 ]]; then
		raw=$("${cmd[@]}" 2>&1)
	else
		for ((i = 0; i < 60; i++)); do
			raw=$("${cmd[@]}" "$5" 2>&1) && break
			sleep 0.5
		done
	fi
	mbs=$(awk -v s="$2" '$1 == s && NF >= 5 { printf "%.2f", $4 * 1.048576 }' <<<"$raw")
	out="$2 $3 - - ${mbs:-0} - -"$'\n'"$(grep -v "^ *$2 " <<<"$raw" | tail -4)"
	[[ -n $mbs || $RV_NODE -eq 0 ]]
}

guest() {
	# shellcheck source-path=SCRIPTDIR source=../vm/tap.sh
	. "$(dirname "${BASH_SOURCE[0]}")/../vm/tap.sh"
	local ftbin=$RV_REPO/build/fabtests/install/bin shared server_ip
	local port=47800 rep size cfg name dir prov iters window out t0 t1 rc=0
	shared=$(dirname "$RV_OUT")/bench-fabtests-rdv
	mkdir -p "$shared"
	server_ip=$(rv_node_ip 0)
	export FI_RV_DEVICE=$RV_IBDEV
	# As bench-mpi.sh: ofi_rxm's CQ for 256 peers exceeds rxe's.
	export FI_UNIVERSE_SIZE=16
	echo "load: $(cat /proc/loadavg)"
	for ((rep = 1; rep <= REPEAT; rep++)); do
		for size in $SIZES; do
			for cfg in $CONFIGS; do
				local -a envs=()
				name=${cfg%%=*}
				[[ $cfg == ib? && $TEST != fi_rdm_tagged_bw ]] && continue
				if [[ $cfg == rxm || $cfg == ibw || $cfg == ibr ]]; then
					prov="verbs;ofi_rxm" dir=/nonexistent
					((size > 8388608)) && continue
				else
					prov=rv dir=${cfg#*=}
					if [[ $dir == *:* ]]; then
						IFS=: read -r -a envs <<<"${dir#*:}"
						dir=${dir%%:*}
					fi
					[[ $dir == /* ]] || dir=$RV_REPO/$dir
				fi
				iters=$ITERS window=$WINDOW
				((size >= 4194304)) && iters=$ITERS_BIG window=$WINDOW_BIG
				port=$((port + 1))
				rv_barrier "$shared" "run$port" 120 || rc=1
				[[ $RV_NODE -eq 1 ]] && sleep 1
				counters /tmp/bft.c0
				t0=$(cputicks)
				if [[ $cfg == ib? ]]; then
					perftest_run "$cfg" "$size" "$iters" "$port" "$server_ip" || rc=1
				else
					local -a cmd=(env FI_PROVIDER_PATH="$dir" "${envs[@]}"
						timeout 600 "$ftbin/$TEST" -p "$prov"
						-E="$port" -S "$size" -W "$window" -I "$iters" -w 1)
					[[ $RV_NODE -eq 1 ]] && cmd+=("$server_ip")
					out=$(cd /tmp && "${cmd[@]}" 2>&1) || rc=1
				fi
				t1=$(cputicks)
				counters /tmp/bft.c1
				echo "bft node=$RV_NODE rep=$rep cfg=$name size=$size $(grep -E '^[0-9]+[kmg]? ' <<<"$out" | tail -1)"
				grep -vE '^[0-9]+[kmg]? |^bytes' <<<"$out" | sed 's/^/#   /'
				echo "#   rxe: $(delta /tmp/bft.c0 /tmp/bft.c1)"
				echo "#   cpu before: $t0; after: $t1"
			done
		done
	done
	rv_barrier "$shared" end 300 || rc=1
	echo "load: $(cat /proc/loadavg)"
	return $rc
}

if [[ -n ${RV_NODE:-} ]]; then
	guest
	exit
fi

# ---- host ----
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../../../.." && pwd)
if [[ ! -x $repo/build/fabtests/install/bin/fi_rdm_tagged_bw ]]; then
	echo "bench-fabtests.sh: fabtests not built (make fabtests)" >&2
	exit 1
fi
out=${BENCH_OUT:-$repo/build/vm/bench-fabtests/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
echo "host load: $(cat /proc/loadavg)"
q=$(printf '%q ' "BENCH_FT_CONFIGS=$CONFIGS" "BENCH_FT_SIZES=$SIZES" \
	"BENCH_FT_REPEAT=$REPEAT" "BENCH_FT_WINDOW=$WINDOW" \
	"BENCH_FT_ITERS=$ITERS" "BENCH_FT_WINDOW_BIG=$WINDOW_BIG" \
	"BENCH_FT_ITERS_BIG=$ITERS_BIG" "BENCH_FT_TEST=$TEST")
# ack_timeout=19: as bench-mpi.sh (the retry budget rdma_cm gives ofi_rxm).
rc=0
"$here/../vm/rv-vm" run --nodes 2 --timeout 3600 --out "$out/vm" \
	--rv-args ack_timeout=19 "$@" -- "$q $here/bench-fabtests.sh" || rc=$?
# Best MB/s per size and configuration (the client's figure: it sends).
awk '/^bft node=1 / {
	for (i = 2; i <= 5; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
	bw = $(NF - 2) + 0; k = v["size"] SUBSEP v["cfg"]
	if (!(k in best) || bw > best[k]) best[k] = bw
	sizes[v["size"]] = 1; if (!(v["cfg"] in seen)) { seen[v["cfg"]] = 1; cfgs[n++] = v["cfg"] }
} END {
	# Ratios: each rv build to rxm and to ib_write_bw, rxm to
	# ib_read_bw, ib_write_bw to ib_read_bw (those measured).
	m = 0
	for (i = 0; i < n; i++) {
		c = cfgs[i]
		if (c == "rxm" || c == "ibw" || c == "ibr") continue
		if ("rxm" in seen) { num[m] = c; den[m++] = "rxm" }
		if ("ibw" in seen) { num[m] = c; den[m++] = "ibw" }
	}
	if (("rxm" in seen) && ("ibr" in seen)) { num[m] = "rxm"; den[m++] = "ibr" }
	if (("ibw" in seen) && ("ibr" in seen)) { num[m] = "ibw"; den[m++] = "ibr" }
	printf "%9s", "size"; for (i = 0; i < n; i++) printf " %10s", cfgs[i]
	for (j = 0; j < m; j++) printf " %10s", num[j] "/" den[j]
	printf "\n"
	for (s in sizes) {
		printf "%9d", s
		for (i = 0; i < n; i++) { k = s SUBSEP cfgs[i]; printf " %10s", (k in best) ? sprintf("%.2f", best[k]) : "-" }
		for (j = 0; j < m; j++) {
			k = s SUBSEP num[j]; r = s SUBSEP den[j]
			printf " %10s", (k in best && r in best && best[r] > 0) ? sprintf("%.2f", best[k] / best[r]) : "-"
		}
		printf "\n"
	}
}' "$out/vm/node1.out" 2>/dev/null | sort -n | tee "$out/summary.txt"
echo "host load: $(cat /proc/loadavg)"
echo "output: $out (vm/node<i>.out: each run with its rxe counters and CPU ticks)"
((rc == 0)) || echo "bench-fabtests.sh: failed (rc $rc)" >&2
exit $rc
