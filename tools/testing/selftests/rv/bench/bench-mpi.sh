#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# bench-mpi.sh - Open MPI over the rv libfabric provider against
# verbs;ofi_rxm (libfabric's RC verbs path) on the same rxe link.
#
# Usage: bench-mpi.sh [rv-vm options...]      (on the host; make all first)
#
# Boots 2 nodes; node 0 launches every job with mpirun over ssh
# (mpi/launch.sh), pml cm + mtl ofi restricted to one provider:
#   bandwidth/latency  1 rank per node, rv_mpi_bench over sizes
#                      $BENCH_MPI_SIZES, for each provider, $BENCH_MPI_REPEAT
#                      times alternating the providers; per size the best
#                      bandwidth and the lowest average latency are kept
#                      (the host is shared: the best run is the least
#                      disturbed one)
#   QP count           2 ranks per node, all cross-node pairs, short; each
#                      node samples "rdma res show qp" (RC QPs) and, for rv,
#                      rvstat every second
# then prints a table (MB/s and latency per size, ratio rv/rxm) and the QP
# counts per node, and plots bandwidth and latency against size (gnuplot)
# into the output directory, whose path it prints.
#
# verbs;ofi_rxm over rxe cannot send MPI messages above 8 MiB (rxe's
# largest message; the ofi MTL does not split), so its sizes stop there.
#
# Environment: BENCH_MPI_SIZES ("MIN MAX FACTOR", default "1 16M 2"),
# BENCH_MPI_ARGS (more rv_mpi_bench options for the bandwidth runs,
# default "-w 32 -b 32M -l 4M -n 100 -W 1"), BENCH_MPI_REPEAT (default 2),
# BENCH_MPI_PROVIDERS (default "rv verbs;ofi_rxm": the first is the one
# measured, the second the reference), BENCH_OUT (default
# build/vm/bench-mpi/<time>), FI_RV_RNDV_THRESHOLD (passed on), RV_FI_DIR
# (the provider's directory, default lib/librv-fi; rv-vm's --rv-ko picks
# the module).
#
# Units: MB/s = 10^6 bytes/s, measured by the sending rank from posting a
# window of nonblocking sends to the receiver's acknowledgement;
# latency = half the ping-pong round trip, average, us.  Every byte of
# every message is verified by its receiver, outside the timed part.
#
# Inside a VM (RV_NODE set by rv-vm) the script plays its node's part.

set -uo pipefail

SIZES=${BENCH_MPI_SIZES:-1 16M 2}
ARGS=${BENCH_MPI_ARGS:--w 32 -b 32M -l 4M -n 100 -W 1}
REPEAT=${BENCH_MPI_REPEAT:-2}
PROVIDERS=${BENCH_MPI_PROVIDERS:-rv verbs;ofi_rxm}
# The QP-count runs: every cross-node pair, a few messages above any
# rendezvous threshold so rv's connection is up.
QP_ARGS="-m 1 -M 1M -f 32 -w 4 -b 1M -l 64K -n 5 -W 0"

# tag PROVIDER: a file-name-safe name.
tag() {
	local t=${1//;/+}
	echo "${t//[^a-zA-Z0-9+_-]/_}"
}

guest() {
	local here shared prov rep rc=0 min max fac
	here=$(dirname "${BASH_SOURCE[0]}")
	# shellcheck source-path=SCRIPTDIR source=../vm/tap.sh
	. "$here/../vm/tap.sh"
	# shellcheck source-path=SCRIPTDIR source=../mpi/launch.sh
	. "$here/../mpi/launch.sh"
	local bench=$RV_REPO/tools/testing/selftests/rv/mpi/rv_mpi_bench
	shared=$(dirname "$RV_OUT")/bench-mpi
	read -r min max fac <<<"$SIZES"

	[[ -c /dev/rv ]] || echo "bench-mpi.sh: node$RV_NODE: no /dev/rv (rv.ko not built?): the rv runs will fail"
	mpi_setup "$shared" || { [[ $RV_NODE -eq 0 ]] && mpi_done; return 1; }
	sampler "$shared" &
	local spid=$!

	if [[ $RV_NODE -eq 0 ]]; then
		# See mpi.sh: ofi_rxm's CQ for 256 peers exceeds rxe's.
		export FI_UNIVERSE_SIZE=16
		export FI_PROVIDER_PATH=${RV_FI_DIR:-$RV_REPO/lib/librv-fi}
		local envs=(-x FI_UNIVERSE_SIZE -x FI_PROVIDER_PATH)
		[[ -n ${FI_RV_RNDV_THRESHOLD:-} ]] && envs+=(-x FI_RV_RNDV_THRESHOLD)
		# run NAME PPN PROVIDER BENCH-ARGS...
		run() {
			local name=$1 ppn=$2 p=$3
			shift 3
			echo "$name" >"$shared/phase"
			echo "bench-run $name: provider $p, $ppn per node: $*"
			mpi_run "$name" 900 -np $((ppn * RV_NODES)) \
				--host "$(mpi_hosts "$ppn")" --map-by node \
				--mca pml cm --mca mtl ofi --mca btl self \
				--mca mtl_ofi_provider_include "$p" \
				"${envs[@]}" "$bench" "$@" >/dev/null
			local r=$?
			grep -h '^rvmb-result' "$RV_OUT/$name.out"
			echo "bench-run $name: exit $r"
			echo idle >"$shared/phase"
			# Let the samplers see the job gone before the next.
			sleep 2
			return $r
		}
		for ((rep = 1; rep <= REPEAT; rep++)); do
			for prov in $PROVIDERS; do
				local m=$max
				# rxe's 8 MiB limit, see the header.
				[[ $prov == verbs* && $(to_bytes "$m") -gt 8388608 ]] && m=8M
				# shellcheck disable=SC2086 # ARGS: options
				run "bw.$(tag "$prov").$rep" 1 "$prov" -m "$min" \
					-M "$m" -f "$fac" $ARGS || rc=1
			done
		done
		for prov in $PROVIDERS; do
			# shellcheck disable=SC2086 # QP_ARGS: options
			run "qp.$(tag "$prov")" 2 "$prov" $QP_ARGS -H 3 || rc=1
		done
		mpi_done
	else
		mpi_wait_done 3000 || rc=1
	fi
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	for prov in $PROVIDERS; do
		qp_summary "qp.$(tag "$prov")"
	done
	rv_barrier "$shared" summaries 120
	mpi_teardown
	return $rc
}

# sampler SHARED: every second, while node 0 names a phase in
# SHARED/phase, append this node's QP list and rvstat to per-phase files.
sampler() {
	local shared=$1 phase
	while [[ ! -e $shared/mpi-done ]]; do
		phase=$(cat "$shared/phase" 2>/dev/null)
		if [[ -n $phase && $phase != idle ]]; then
			rdma -j res show qp >>"$RV_OUT/qps.$phase.jsonl" 2>/dev/null
			"$RV_REPO/tools/rvstat/rvstat" --json \
				>>"$RV_OUT/rvstat.$phase.jsonl" 2>/dev/null
		fi
		sleep 1
	done
}

# qp_summary PHASE: one line, "qps PHASE nodeI rc_max=N rv_jobs=J
# rv_slots=S rv_conns=C rv_qps=Q" (rv_* from the rvstat sample with the
# most QPs; 0 without rv).
qp_summary() {
	python3 - "$1" "$RV_NODE" "$RV_OUT/qps.$1.jsonl" "$RV_OUT/rvstat.$1.jsonl" <<'EOF'
import json, sys

def docs(path):
    try:
        for line in open(path, errors="replace"):
            line = line.strip()
            if line[:1] in "[{":
                try:
                    yield json.loads(line)
                except ValueError:
                    pass
    except OSError:
        return

rc = max([sum(1 for q in d if isinstance(q, dict) and q.get("type") == "RC")
          for d in docs(sys.argv[3])] or [0])
best = (0, 0, 0, 0)
for d in docs(sys.argv[4]):
    if not isinstance(d, dict) or not d.get("jobs"):
        continue
    c = d["connections"]
    v = (sum(x["num_conn"] for x in c), len(d["jobs"]),
         sum(j["slots_used"] for j in d["jobs"]), len(c))
    best = max(best, v)
print("qps %s node%s rc_max=%d rv_qps=%d rv_jobs=%d rv_slots=%d rv_conns=%d"
      % ((sys.argv[1], sys.argv[2], rc) + best))
EOF
}

# "4K" -> 4096
to_bytes() {
	local v=$1
	case $v in
	*[kK]) echo $((${v%?} * 1024)) ;;
	*[mM]) echo $((${v%?} * 1048576)) ;;
	*) echo "$v" ;;
	esac
}

if [[ -n ${RV_NODE:-} ]]; then
	guest
	exit
fi

# ---- host ----
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../../../.." && pwd)
if [[ ! -x $here/../mpi/rv_mpi_bench ]]; then
	echo "bench-mpi.sh: $here/../mpi/rv_mpi_bench not built (make all)" >&2
	exit 1
fi
out=${BENCH_OUT:-$repo/build/vm/bench-mpi/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
rc=0
q=$(printf '%q ' "BENCH_MPI_SIZES=$SIZES" "BENCH_MPI_ARGS=$ARGS" \
	"BENCH_MPI_REPEAT=$REPEAT" "BENCH_MPI_PROVIDERS=$PROVIDERS")
[[ -n ${FI_RV_RNDV_THRESHOLD:-} ]] &&
	q+=$(printf '%q ' "FI_RV_RNDV_THRESHOLD=$FI_RV_RNDV_THRESHOLD")
[[ -n ${RV_FI_DIR:-} ]] && q+=$(printf '%q ' "RV_FI_DIR=$RV_FI_DIR")
# ack_timeout=19 (~2.1 s; an rv-vm --rv-args of the caller replaces it):
# rv's default (15, ~134 ms) is too short for guests that a busy 2-core
# host stalls (QPs fail with RETRY_EXC_ERR, see mpi.sh), and the QPs
# ofi_rxm opens through rdma_cm get 19 on RoCE (cm_ack_timeout() of the
# packet lifetime rdma_cm sets for RoCE, 18): the same retry budget.
"$here/../vm/rv-vm" run --nodes 2 --timeout 3600 --out "$out/vm" \
	--rv-args ack_timeout=19 "$@" -- \
	"$q $here/bench-mpi.sh" || rc=$?
cp "$out/vm/node0.out" "$out/node0.out" 2>/dev/null || true

read -r ref_prov < <(awk '{ print $2 }' <<<"$PROVIDERS")
read -r rv_prov < <(awk '{ print $1 }' <<<"$PROVIDERS")
rvt=$(tag "$rv_prov") reft=$(tag "$ref_prov")

# best FILES...: "size bw lat" per size, best bandwidth and lowest average
# latency over the repeated runs (pair 0-1, round 0).
best() {
	cat "$@" 2>/dev/null | awk '/^rvmb / {
		for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		s = v["size"] + 0
		if (!(s in bw) || v["bw_mbs"] + 0 > bw[s]) bw[s] = v["bw_mbs"] + 0
		if (!(s in lat) || v["lat_us"] + 0 < lat[s]) lat[s] = v["lat_us"] + 0
		if (!(s in mn) || v["lat_min_us"] + 0 < mn[s]) mn[s] = v["lat_min_us"] + 0
	} END { for (s in bw) printf "%d %.3f %.3f %.3f\n", s, bw[s], lat[s], mn[s] }' |
		sort -k1,1	# join(1) wants its own collation, not numeric
}
best "$out"/vm/node0/bw."$rvt".*.out >"$out/rv.dat"
best "$out"/vm/node0/bw."$reft".*.out >"$out/ref.dat"
# bw.dat: size rv_bw ref_bw rv_lat ref_lat rv_lat_min ref_lat_min ("-" when
# missing)
join -a1 -a2 -e - -o 0,1.2,2.2,1.3,2.3,1.4,2.4 "$out/rv.dat" "$out/ref.dat" |
	sort -n >"$out/bw.dat"

{
	echo "Open MPI 4.1 (pml cm, mtl ofi), provider $rv_prov vs $ref_prov, 1 rank per node,"
	echo "node0 <-> node1 over rxe (QEMU TCG), $(date -u +%F); best of $REPEAT runs each."
	echo "MB/s = 10^6 B/s (sender, window of nonblocking sends to the receiver's ack);"
	echo "latency = half round trip in us: average over the iterations (the lowest"
	echo "of the runs) and the single fastest iteration.  Every byte verified."
	printf "%9s %10s %10s %6s %11s %11s %6s %10s %10s\n" size "$rv_prov" \
		"$ref_prov" ratio "lat $rv_prov" "lat ref" ratio "min $rv_prov" \
		"min ref"
	awk 'function r(a, b) { if (a == "-" || b == "-" || b == 0) return "-"
				 return sprintf("%.2f", a / b) }
	{ printf "%9d %10s %10s %6s %11s %11s %6s %10s %10s\n", $1, $2, $3,
		 r($2, $3), $4, $5, r($4, $5), $6, $7 }' "$out/bw.dat"
	echo
	awk '$1 >= 1048576 && $2 != "-" && $3 != "-" && $3 > 0 {
		n++; r = $2 / $3; s += r; if (!m || r < m) m = r }
	END { if (n) printf "1 MiB and above: bandwidth ratio rv/ref mean %.2f, worst %.2f over %d sizes (goal: >= 0.90)\n", s / n, m, n }' \
		"$out/bw.dat"
	echo
	echo "Runs (rvmb-result lines; verified bytes, errors):"
	grep -hE '^(bench-run .*: exit|rvmb-result)' "$out/vm/node0.out" |
		sed 's/^/  /'
	echo
	echo "QPs per node, 2 ranks per node (4 ranks, all cross-node pairs):"
	echo "  RC QPs = most RC QPs 'rdma res show qp' listed at once during the run"
	echo "  (rv's are kernel QPs; ofi_rxm's are the ranks' own, also for pairs on"
	echo "  one node: pml cm has no shared-memory path); rv = rvstat's view."
	grep -h '^qps ' "$out"/vm/node*.out | sort | awk '{
		printf "  %-24s %s %s %s %s %s %s\n", $2, $3, $4, $5, $6, $7, $8 }'
} | tee "$out/summary.txt"

if command -v gnuplot >/dev/null && [[ -s $out/bw.dat ]]; then
	xtics=$(awk -v lines="$(wc -l <"$out/bw.dat")" '{ b = $1; u = ""
		       if (b >= 1048576 && b % 1048576 == 0) { b /= 1048576; u = "M" }
		       else if (b >= 1024 && b % 1024 == 0) { b /= 1024; u = "K" }
		       if (lines <= 13 || NR % 2 == 1)
			       printf "%s\"%d%s\" %d", (n++ ? ", " : ""), b, u, $1 }' \
		"$out/bw.dat")
	gnuplot <<EOF || rc=1
set terminal pngcairo size 1200,560 noenhanced
set output '$out/bw.png'
set multiplot layout 1,2 title 'Open MPI over rxe (QEMU TCG), 1 rank per node, best of $REPEAT'
set logscale x 2
set xtics ($xtics) rotate by -45
set grid
set datafile missing '-'
set key top left
set title 'bandwidth'
set xlabel 'message size (bytes)'
set ylabel 'MB/s (10^6 B/s)'
set yrange [0:*]
plot '$out/bw.dat' using 1:2 with linespoints lw 2 title '$rv_prov', \
     '' using 1:3 with linespoints title '$ref_prov'
set title 'latency (half round trip)'
set ylabel 'us'
set logscale y 10
set yrange [*:*]
plot '$out/bw.dat' using 1:4 with linespoints lw 2 title '$rv_prov', \
     '' using 1:5 with linespoints title '$ref_prov'
unset multiplot
EOF
	echo "plot: $out/bw.png"
else
	echo "bench-mpi.sh: no gnuplot or no data: no plot" >&2
fi
echo "output: $out (vm/node<i>.out: raw output; vm/node0/<run>.out: each mpirun)"
((rc == 0)) || echo "bench-mpi.sh: failed (rc $rc)" >&2
exit $rc
