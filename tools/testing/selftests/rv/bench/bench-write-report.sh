# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
#
# bench-write-report.sh - report helpers of bench-write.sh (sourced on the
# host): the CPU-per-write and ranks tables from the nodes' raw output.
# Uses bench-write.sh's CPU_SIZES and RANK_ARGS.

# CPU per write, us: rv's "cpu" rows (node0 snd, node1 rcv) against
# perftest's sampled ticks minus those of its 5-iteration run ("pcal").
cpu_table() {
	echo "CPU per write, us: the node's busy time (/proc/stat user+nice+system+irq+softirq,"
	echo "all vCPUs) / writes; snd = node0, rcv = node1. rv: over rv_bench's window;"
	echo "perftest: ticks from its first to its last rxe packet (0.1 s samples) of the"
	echo "ib_write_bw -n N run minus those of a 5-iteration run, / (N - 5), each node"
	printf "%-18s %6s %9s %9s %9s %8s %8s %8s\n" what size snd rcv total \
		"snd/pt" "rcv/pt" "tot/pt"
	awk -v sizes="$CPU_SIZES" '
	function bytes(s) {
		if (s ~ /[kK]$/) return substr(s, 1, length(s) - 1) * 1024
		if (s ~ /[mM]$/) return substr(s, 1, length(s) - 1) * 1048576
		return s + 0
	}
	function r(a, b) { return (a == "" || b == "" || b <= 0) ? "-" : sprintf("%.2f", a / b) }
	function f(x) { return x == "" ? "-" : sprintf("%.1f", x) }
	FNR == 1 { file++ }
	# cpu SIDE SIZE NC API WRITES TICKS HZ US T0 T1; first row of a kind wins
	$1 == "cpu" && NF >= 11 {
		k = bytes($3) SUBSEP "rv nc=" $4 " " $5
		if (file == 1 && !((k, "snd") in v)) v[k, "snd"] = $9
		if (file == 2 && !((k, "rcv") in v)) v[k, "rcv"] = $9
		if (!(k in what)) { what[k] = 1; order[++nw] = k }
	}
	# pbw.cpu|pcal.cpu nodeI BYTES N TICKS HZ
	$1 ~ /^(pbw|pcal)\.cpu$/ && NF >= 6 && $5 ~ /^[0-9]+$/ {
		side = ($2 == "node0") ? "snd" : "rcv"
		t[$1, $3, side] = $5; n[$1, $3] = $4; hz = $6
	}
	END {
		ns = split(sizes, sz, " ")
		for (i = 1; i <= ns; i++) {
			b = bytes(sz[i]); pk = b SUBSEP "perftest (1 QP)"
			if ((("pbw.cpu", b, "snd") in t) && (("pcal.cpu", b, "snd") in t) &&
			    n["pbw.cpu", b] > 5) {
				d = (n["pbw.cpu", b] - 5) * hz
				v[pk, "snd"] = (t["pbw.cpu", b, "snd"] - t["pcal.cpu", b, "snd"]) * 1e6 / d
				if ((("pbw.cpu", b, "rcv") in t) && (("pcal.cpu", b, "rcv") in t))
					v[pk, "rcv"] = (t["pbw.cpu", b, "rcv"] - t["pcal.cpu", b, "rcv"]) * 1e6 / d
			}
			ps = v[pk, "snd"]; pr = v[pk, "rcv"]
			pt = (ps != "" && pr != "") ? ps + pr : ""
			printf "%-18s %6s %9s %9s %9s\n", "perftest (1 QP)", sz[i], f(ps), f(pr), f(pt)
			for (j = 1; j <= nw; j++) {
				w = order[j]
				split(w, kk, SUBSEP)
				if (kk[1] != b) continue
				s = v[w, "snd"]; rr = v[w, "rcv"]
				tt = (s != "" && rr != "") ? s + rr : ""
				printf "%-18s %6s %9s %9s %9s %8s %8s %8s\n", kk[2], sz[i], f(s), f(rr),
				       f(tt), r(s, ps), r(rr, pr), r(tt, pt)
			}
		}
	}' "$1" "$2"
}

# Message rate with ranks: P senders of one job; aggregate = all writes
# over the span from the first start to the last completion on node 0
# (one clock); "overlap" is the share of that span all P were posting.
rank_table() {
	echo "Message rate with ranks: P rv_bench bw senders on node0, one job, 4 KiB writes to"
	echo "node1 ($RANK_ARGS), started together; writes/s = all writes / (first start .. last completion)"
	printf "%3s %9s %8s %10s %7s %8s\n" P writes "span.s" "writes/s" "vs P=1" overlap
	awk '
	# rank P I cpu snd SIZE NC API WRITES TICKS HZ US T0 T1
	$1 == "rank" && $4 == "cpu" && $5 == "snd" && NF >= 14 {
		p = $2; ps[p] = 1; w[p] += $9
		if (!(p in t0) || $13 < t0[p]) t0[p] = $13
		if (!(p in t1) || $14 > t1[p]) t1[p] = $14
		if (!(p in l0) || $13 > l0[p]) l0[p] = $13
		if (!(p in l1) || $14 < l1[p]) l1[p] = $14
	}
	END {
		for (p in ps) {
			span = (t1[p] - t0[p]) / 1e9
			rate[p] = span > 0 ? w[p] / span : 0
			ov = span > 0 ? (l1[p] - l0[p]) / 1e9 / span : 0
			line[p] = sprintf("%3d %9d %8.2f %10.1f", p, w[p], span, rate[p])
			o[p] = sprintf("%7.2f", ov < 0 ? 0 : ov)
		}
		for (p in ps) {
			vs = rate[1] > 0 ? sprintf("%.2f", rate[p] / rate[1]) : "-"
			printf("%s %7s %s\n", line[p], vs, o[p]) | "sort -n"
		}
	}' "$1"
}
