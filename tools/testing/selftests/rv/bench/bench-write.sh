#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# bench-write.sh - rv's data path against perftest on the same rxe link.
#
# Usage: bench-write.sh [rv-vm options...]      (on the host; make all first)
#
# Boots 2 nodes (BENCH_SMP vCPUs each, default 2) and, in one run over the
# same link, measures from node 0 (sender/client) to node 1 (receiver/server):
#   rv_bench bw   sizes $BENCH_SIZES, num_conn 1, 4 and 16 (rv_post_writes
#                 batches), and num_conn 4 with one rv_post_write per write
#   ranks         P = $BENCH_RANKS rv_bench bw senders of 4 KiB writes on
#                 node 0, one job (one job key: one connection to node 1),
#                 each with its own file and slot and its own receiver
#                 process on node 1, started together: aggregate writes/s
#   rv_bench lat  8 bytes, num_conn 4, batch call of 1 and rv_post_write
#   ib_write_bw   the same sizes (one RC QP, tx depth 128)
#   ib_write_lat  8 bytes
# then prints a table with rv/perftest ratios and plots bandwidth against
# size (gnuplot) into the output directory, whose path it prints.
#
# CPU per write (sizes $BENCH_CPU_SIZES, sender and receiver): both rv and
# perftest are measured the same way, the node's busy ticks in /proc/stat
# (user+nice+system+irq+softirq: kworkers, softirqs and rxe count too)
# divided by the writes; not perftest's --cpu_util, which exists only in
# duration mode, on the client only.  rv_bench --cpu reads /proc/stat at
# the ends of its measurement window on each side.  perftest cannot be
# hooked, so each node samples /proc/stat and rxe's packet counters every
# 0.1 s and takes the ticks between the first and the last packet; the
# same for a run of 5 iterations ("pcal") removes what the window's edges
# add: (ticks(N) - ticks(5)) / (N - 5).  The senders of both spin on their
# completions; the receivers sleep.
#
# Environment: BENCH_SIZES (default 4K,16K,64K,256K,1M,4M,8M),
# BENCH_SECONDS per bw point (default 3), BENCH_LAT_ITERS (default 1000),
# BENCH_CONNS, the num_conn values of the batched bw runs (default
# "1 4 16"), BENCH_CPU_SIZES (default "4K 64K", each also in BENCH_SIZES),
# BENCH_PERF_MBS (MB/s that sizes perftest's iteration counts, default 20),
# BENCH_RANKS (default "1 2 4"; empty: no ranks step), BENCH_RANK_ARGS
# (rv_bench options of the ranks, default "-C 4 --sleep": senders wait in
# poll(2), so 4 of them on 2 vCPUs leave the kernel its CPU), BENCH_SMP
# (default 2), BENCH_OUT (default build/vm/bench-write/<time>).
#
# Units: MB/s = 10^6 bytes/s everywhere in the table; perftest prints
# MiB/s (2^20), converted here.  rv's bw is measured on the sender from the
# first post to the last completion; perftest's is its BW average.  Latency
# is one-way, half a round trip, in us, for both.
#
# Inside a VM (RV_NODE set by rv-vm) the script plays its node's part.

set -euo pipefail

SIZES=${BENCH_SIZES:-4K,16K,64K,256K,1M,4M,8M}
SECONDS_PER_POINT=${BENCH_SECONDS:-3}
LAT_ITERS=${BENCH_LAT_ITERS:-1000}
CONNS=${BENCH_CONNS:-1 4 16}
CPU_SIZES=${BENCH_CPU_SIZES-4K 64K}
RANKS=${BENCH_RANKS-1 2 4}
RANK_ARGS=${BENCH_RANK_ARGS:--C 4 --sleep}
SMP=${BENCH_SMP:-2}
PERF_MBS=${BENCH_PERF_MBS:-20}
# perftest's bound per step: several times BENCH_SECONDS, for a slow host.
PERF_TIMEOUT=$((60 + 30 * SECONDS_PER_POINT))

# "4K" -> 4096
to_bytes() {
	local v=$1
	case $v in
	*[kK]) echo $((${v%?} * 1024)) ;;
	*[mM]) echo $((${v%?} * 1048576)) ;;
	*) echo "$v" ;;
	esac
}

# Run a perftest client until its server (started at about the same time
# on the peer) accepts: perftest cannot wait for its listener.  Bounded:
# 60 attempts, 0.5 s apart.
perf_client() {
	local i log=$RV_OUT/perf-client.log
	for ((i = 0; i < 60; i++)); do
		if "$@" >"$log" 2>&1; then
			cat "$log"
			return 0
		fi
		sleep 0.5
	done
	cat "$log" >&2
	return 1
}

# The steps, in the same order on both nodes; step i uses TCP port
# 18600 + i, so a lingering server of step i-1 never answers step i.
# Each line: kind args...
steps() {
	local nc size
	# perftest's bandwidth first: the baseline of every ratio, so a test
	# bed that loses its link later (see Documentation/rv/kernels.rst) still has it.
	for size in ${SIZES//,/ }; do
		echo "pbw $(to_bytes "$size")"
	done
	for size in $CPU_SIZES; do
		echo "pcal $(to_bytes "$size")"
	done
	for nc in $CONNS; do
		echo "rvbw -C $nc"
	done
	echo "rvbw -C 4 --single"
	for nc in $RANKS; do
		echo "rvrate $nc"
	done
	# Waiting in a yielding spin and in poll(2): see Documentation/rv/performance.rst.
	echo "rvlat -C 4"
	echo "rvlat -C 4 --single"
	echo "rvlat -C 4 --sleep"
	echo "rvlat -C 4 --single --sleep"
	echo "plat"
}

# perftest's window: every 0.1 s, the node's busy clock ticks (user +
# nice + system + irq + softirq) and rxe's packets sent + received, into
# $RV_OUT/sampler, until killed.  Builtins only (the wait is a read that
# times out on a pipe nobody writes), so it costs next to nothing.
sampler() {
	local d=/sys/class/infiniband/$RV_IBDEV/ports/1/hw_counters
	local user nice sys irq softirq tx rx
	exec 3<> <(:)
	while :; do
		read -r _ user nice sys _ _ irq softirq _ </proc/stat
		read -r tx <"$d/sent_pkts"
		read -r rx <"$d/rcvd_pkts"
		echo "$((user + nice + sys + irq + softirq)) $((tx + rx))"
		read -r -t 0.1 <&3 || true
	done >"$RV_OUT/sampler"
}

# Busy ticks from the sample before the first packet to the first sample
# after the last: perftest's setup, its wait for the peer and its
# teardown exchange no rxe packets, so they fall outside.
sampled_ticks() {
	awk 'NR == 1 { p0 = $2 }
	     { t[NR] = $1; p[NR] = $2 }
	     END {
		a = 0; b = 0
		for (i = 2; i <= NR; i++)
			if (p[i] != p[i - 1]) { if (!a) a = i - 1; b = i }
		print (a ? t[b] - t[a] : 0)
	     }' "$RV_OUT/sampler"
}

# One ranks step: P rv_bench bw pairs of one job (job key "rvrank<P>";
# rv_bench appends num_conn), 4 KiB writes, TCP ports $2 + 0..P-1.  Node 0
# starts its senders with --start-after and creates the file once all of
# them are connected, so they post over the same seconds; it prints their
# bw and cpu rows prefixed with "rank P i".
ranks() {
	local p=$1 base=$2 peer=$3 bench=$4 j t rc=0 pids=() go
	go=$RV_OUT/rank-go.$p
	rm -f "$go"
	for ((j = 0; j < p; j++)); do
		# shellcheck disable=SC2086
		if ((RV_NODE == 1)); then
			timeout 300 "$bench" bw -S -P $((base + j)) -s 4K \
				-k "rvrank$p" --cpu $RANK_ARGS \
				>"$RV_OUT/rank$p.$j.log" 2>&1 &
		else
			timeout 300 "$bench" bw -c "$peer" -P $((base + j)) \
				-s 4K -T "$SECONDS_PER_POINT" -k "rvrank$p" \
				--cpu --start-after "$go" $RANK_ARGS \
				>"$RV_OUT/rank$p.$j.log" 2>&1 &
		fi
		pids+=($!)
	done
	if ((RV_NODE == 0)); then
		# Bounded: rv_bench itself gives up after 120 s.
		for ((t = 0; t < 600; t++)); do
			[[ $(cat "$RV_OUT"/rank"$p".*.log | grep -c '^rv_bench bw:') -ge $p ]] &&
				break
			sleep 0.2
		done
		touch "$go"
	fi
	for j in "${pids[@]}"; do
		wait "$j" || rc=1
	done
	for ((j = 0; j < p; j++)); do
		((rc == 0)) || cat "$RV_OUT/rank$p.$j.log" >&2
		awk -v p="$p" -v j="$j" '$1 == "bw" || $1 == "cpu" {
			print "rank", p, j, $0 }' "$RV_OUT/rank$p.$j.log"
	done
	return $rc
}

# One rvbw step: an rv_bench bw pair per size (TCP port 20000 + 32 * step
# + i, job key "b<step>.<i>"), so that a write failing on a lossy link
# (rxe answers some retransmissions with a NAK, see Documentation/rv/kernels.rst) costs
# that size only; both nodes go on to the next size.
rv_bw_sizes() {
	local args=$1 step=$2 peer=$3 bench=$4 size i=0 port rc=0
	for size in ${SIZES//,/ }; do
		port=$((20000 + 32 * step + i))
		i=$((i + 1))
		# Word splitting of $args is intended: they are options.
		# shellcheck disable=SC2086
		if ((RV_NODE == 1)); then
			timeout 300 "$bench" bw -S -P "$port" -s "$size" \
				-k "b$step.$i" --cpu $args || rc=1
		else
			timeout 300 "$bench" bw -c "$peer" -P "$port" -s "$size" \
				-k "b$step.$i" -T "$SECONDS_PER_POINT" --cpu $args ||
				rc=1
		fi
	done
	return $rc
}

# rxe's port counters, "name value" per line.
hw_snap() {
	local f
	for f in /sys/class/infiniband/"$RV_IBDEV"/ports/1/hw_counters/*; do
		echo "${f##*/} $(<"$f")"
	done
}

guest() {
	local bench=$RV_REPO/tools/testing/selftests/rv/rv_bench
	local peer step=0 kind args port n out rc=0 before sampler_pid
	read -r _ peer _ <<<"$RV_NODE_IPS"

	while read -r kind args; do
		port=$((18600 + step))
		step=$((step + 1))
		before=$(hw_snap)
		# Word splitting of $args is intended: they are options.
		# shellcheck disable=SC2086
		case $kind.$RV_NODE in
		rvbw.*)
			rv_bw_sizes "$args" "$step" "$peer" "$bench" || rc=1 ;;
		rvrate.*)
			ranks "$args" $((19000 + 8 * step)) "$peer" "$bench" ||
				rc=1 ;;
		rvlat.1)
			timeout 120 "$bench" lat -S -P "$port" $args || rc=1 ;;
		rvlat.0)
			timeout 120 "$bench" lat -c "$peer" -P "$port" \
				-n "$LAT_ITERS" $args || rc=1 ;;
		plat.1)
			timeout 120 ib_write_lat -d "$RV_IBDEV" -s 8 \
				-n "$LAT_ITERS" -p "$port" >/dev/null || rc=1 ;;
		plat.0)
			out=$(perf_client timeout 120 ib_write_lat -d "$RV_IBDEV" \
				-s 8 -n "$LAT_ITERS" -p "$port" "$peer") || rc=1
			# #bytes #iter t_min t_max t_typical t_avg t_stdev 99% 99.9%
			awk -v n="$LAT_ITERS" '$1 == 8 && $2 == n {
				printf "plat %s %s %s %s %s\n", $1, $3, $5, $6, $8 }' \
				<<<"$out" ;;
		pbw.1 | pcal.1)
			n=$(pbw_iters "$args")
			[[ $kind == pcal ]] && n=5
			sampler &
			sampler_pid=$!
			timeout "$PERF_TIMEOUT" ib_write_bw -d "$RV_IBDEV" -s "$args" -N \
				-n "$n" -p "$port" >/dev/null || rc=1 ;;
		pbw.0 | pcal.0)
			n=$(pbw_iters "$args")
			[[ $kind == pcal ]] && n=5
			sampler &
			sampler_pid=$!
			out=$(perf_client timeout "$PERF_TIMEOUT" ib_write_bw -d "$RV_IBDEV" \
				-s "$args" -N -n "$n" -p "$port" "$peer") || rc=1
			# #bytes #iterations BW_peak BW_average MsgRate; MiB/s
			[[ $kind == pbw ]] && awk -v s="$args" '$1 == s && NF >= 5 {
				printf "pbw %s %.2f\n", $1, $4 * 1.048576 }' <<<"$out" ;;
		esac
		# perftest's CPU: the node's busy ticks while its packets flowed.
		case $kind in
		pbw | pcal)
			kill "$sampler_pid"
			wait "$sampler_pid" || true
			echo "$kind.cpu node$RV_NODE $args $n $(sampled_ticks) $(getconf CLK_TCK)" ;;
		esac
		# What rxe saw during the step: retransmissions (sender's
		# completer_retry_err), lost or reordered packets (receiver's
		# out_of_seq_request, rcvd_seq_err) explain stalls.
		echo "hwc node$RV_NODE $kind $args: $(join --nocheck-order <(echo "$before") <(hw_snap) |
			awk '$3 != $2 { printf "%s=%d ", $1, $3 - $2 }')"
	done < <(steps)
	return $rc
}

# perftest has no time limit in iteration mode: size the iteration count
# for about BENCH_SECONDS at BENCH_PERF_MBS (default 20, the MB/s of rxe
# under TCG on an idle host; lower it on a loaded one), 20 at least so
# that the CPU figure is not the 5-iteration run's.
pbw_iters() {
	local n=$((SECONDS_PER_POINT * PERF_MBS * 1000000 / $1))
	((n < 20)) && n=20
	echo $n
}

if [[ -n ${RV_NODE:-} ]]; then
	guest
	exit
fi

# ---- host ----
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../../../.." && pwd)
if [[ ! -x $here/../rv_bench ]]; then
	echo "bench-write.sh: $here/../rv_bench not built (make all)" >&2
	exit 1
fi
# BENCH_REPORT=DIR: only the report, from the vm/ of an earlier run there.
out=${BENCH_REPORT:-${BENCH_OUT:-$repo/build/vm/bench-write/$(date +%Y%m%d-%H%M%S)}}
mkdir -p "$out"
rc=0
[[ -n ${BENCH_REPORT:-} ]] ||
"$here/../vm/rv-vm" run --nodes 2 --smp "$SMP" --timeout 1200 --out "$out/vm" "$@" -- \
	"BENCH_SIZES=$SIZES BENCH_SECONDS=$SECONDS_PER_POINT BENCH_LAT_ITERS=$LAT_ITERS BENCH_CONNS='$CONNS' BENCH_CPU_SIZES='$CPU_SIZES' BENCH_RANKS='$RANKS' BENCH_RANK_ARGS='$RANK_ARGS' BENCH_SMP=$SMP BENCH_PERF_MBS=$PERF_MBS $here/bench-write.sh" ||
	rc=$?
node0=$out/vm/node0.out
cp "$node0" "$out/node0.out" 2>/dev/null || true

# The CPU and ranks tables (cpu_table, rank_table).
# shellcheck source=tools/testing/selftests/rv/bench/bench-write-report.sh
. "$here/bench-write-report.sh"

# bw.dat: size, rv nc=1, nc=4, nc=16, nc=4 single, perftest (MB/s); "-"
# where a point is missing, which gnuplot skips.
awk '
$1 == "bw" && NF >= 11 {
	k = $3 "." $4; sz[$2] = 1
	rv[$2, k] = $7
}
$1 == "pbw" { pb[$2] = $3 }
function bytes(s) {
	if (s ~ /K$/) return substr(s, 1, length(s) - 1) * 1024
	if (s ~ /M$/) return substr(s, 1, length(s) - 1) * 1048576
	return s + 0
}
function v(x) { return x == "" ? "-" : x }
END {
	for (s in sz) {
		b = bytes(s)
		printf "%d %s %s %s %s %s\n", b, v(rv[s, "1.vec"]),
		       v(rv[s, "4.vec"]), v(rv[s, "16.vec"]),
		       v(rv[s, "4.one"]), v(pb[b])
	}
}' "$node0" | sort -n >"$out/bw.dat"

{
	echo "rv RDMA WRITE with immediate vs perftest, node0 -> node1 over rxe (TCG), $(date -u +%F)"
	echo "MB/s = 10^6 B/s. rv: sender, first post to last completion, rv_post_writes batches"
	echo "('vec') or one rv_post_write per write ('one'); perftest: ib_write_bw BW average, 1 QP."
	printf "%8s %9s %9s %9s %9s %9s %7s %7s %7s %7s\n" size "rv.nc1" "rv.nc4" \
		"rv.nc16" "rv.nc4.1" perftest "nc1/pt" "nc4/pt" "nc16/pt" "1/pt"
	awk 'function r(a, b) { if (a == "-" || b == "-" || b == 0) return "-"
				 return sprintf("%.2f", a / b) }
	{ printf "%8d %9s %9s %9s %9s %9s %7s %7s %7s %7s\n", $1, $2, $3,
		 $4, $5, $6, r($2, $6), r($3, $6), r($4, $6), r($5, $6) }' \
		"$out/bw.dat"
	echo
	echo "8-byte one-way latency (half round trip), us"
	echo "rv: num_conn 4; spin = sched_yield() loop on the ring, poll = poll(2) on the file"
	printf "%-30s %8s %8s %8s %8s\n" what min median avg p99
	awk '$1 == "lat" {
		what = ($4 == "one" ? "rv_post_write" : "rv_post_writes(1)")
		med[what " " $10] = $6
		printf "%-30s %8s %8s %8s %8s\n", what ", " $10, $5, $6, $7, $8
	}
	$1 == "plat" {
		printf "%-30s %8s %8s %8s %8s\n", "ib_write_lat", $3, $4, $5, $6
		pt = $4
	}
	END {
		if (pt > 0)
			for (w in med)
				printf "median ratio rv/perftest, %s: %.2f\n", w, med[w] / pt
	}' "$node0"
	echo
	cpu_table "$node0" "$out/vm/node1.out"
	echo
	rank_table "$node0"
	echo
	echo "post cost per write (us, time inside the post calls / writes) and longest"
	echo "wait for a completion (gap.ms), rv_bench bw:"
	awk '$1 == "bw" && NF >= 12 { printf "  %-6s nc=%-2s %s calls %-8s writes %-8s post.us %-9s gap.ms %s\n",
		$2, $3, $4, $9, $5, $11, $12 }' "$node0"
	echo
	echo "rxe counters that changed during each step (node0 sends, node1 receives):"
	grep -h '^hwc ' "$node0" "$out/vm/node1.out" 2>/dev/null |
		sed 's/ \(rcvd_pkts\|sent_pkts\|rdma_sends\|rdma_recvs\)=[0-9]*//g'
} | tee "$out/summary.txt"

if command -v gnuplot >/dev/null && [[ -s $out/bw.dat ]]; then
	# One tick per measured size, labelled in binary units ("64K").
	xtics=$(awk '{ b = $1; u = ""
		       if (b >= 1048576 && b % 1048576 == 0) { b /= 1048576; u = "M" }
		       else if (b >= 1024 && b % 1024 == 0) { b /= 1024; u = "K" }
		       printf "%s\"%d%s\" %d", (NR > 1 ? ", " : ""), b, u, $1 }' \
		"$out/bw.dat")
	gnuplot <<EOF || rc=1
set terminal pngcairo size 960,600 noenhanced
set output '$out/bw.png'
set title 'RDMA WRITE bandwidth over rxe (QEMU TCG), node0 -> node1'
set xlabel 'message size (bytes)'
set ylabel 'MB/s (10^6 B/s)'
set logscale x 2
set xtics ($xtics)
set yrange [0:*]
set key outside bottom center horizontal maxrows 2
set grid
set datafile missing '-'
plot '$out/bw.dat' using 1:2 with linespoints title 'rv num_conn=1', \
     '' using 1:3 with linespoints title 'rv num_conn=4', \
     '' using 1:4 with linespoints title 'rv num_conn=16', \
     '' using 1:5 with linespoints title 'rv num_conn=4, rv_post_write per write', \
     '' using 1:6 with linespoints lw 2 title 'perftest ib_write_bw (1 QP)'
EOF
	echo "plot: $out/bw.png"
else
	echo "bench-write.sh: no gnuplot or no data: no plot" >&2
fi
echo "output: $out (vm/node<i>.out: raw output)"
((rc == 0)) || echo "bench-write.sh: failed (rc $rc)" >&2
exit $rc
