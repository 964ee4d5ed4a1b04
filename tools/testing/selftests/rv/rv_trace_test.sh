#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# rv_trace_test.sh - rv's tracepoints, recorded with trace-cmd (root, in a
# VM with rv loaded): runs the MR cache tests under "trace-cmd record -e rv"
# and checks that every event they must cause appears, with its fields.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=vm/tap.sh
. "$here/vm/tap.sh"

tap_begin
if [[ $(id -u) -ne 0 ]] || ! command -v trace-cmd >/dev/null ||
	[[ ! -e /dev/rv ]]; then
	tap_skip trace "needs root, trace-cmd and rv loaded"
	tap_end
	exit 4
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The MR tests exercise every MR event; the race adds nothing here.
tap_run "trace-cmd record -e rv (rv_mr_test)" \
	trace-cmd record -q -e rv -o "$work/rv.dat" \
	env RV_MR_STRESS_SECONDS=0 "$here/rv_mr_test"
trace-cmd report -i "$work/rv.dat" >"$work/report" 2>/dev/null
tap_diag "$(wc -l <"$work/report") lines in the report"

# event name, then a regex its line must match (the TP_printk fields)
# check_event NAME RE: NAME was recorded, and one of its lines has RE.
check_event() {
	local name=$1 re=$2 line
	while IFS= read -r line; do
		if [[ $line =~ $re ]]; then
			tap_ok "event $name"
			return
		fi
	done < <(grep -E " $name: " "$work/report")
	line=$(grep -m1 -E " $name: " "$work/report")
	if [[ -z $line ]]; then
		tap_fail "event $name" "not recorded"
	else
		tap_fail "event $name" "no line with /$re/, e.g.: $line"
	fi
}

mr_re='job [0-9]+ handle [1-9][0-9]* start 0x[0-9a-f]+ length [1-9][0-9]* access [L-][W-][R-] refs [0-9]+'
check_event rv_job_create 'job [0-9]+ dev [0-9]+ port 1 uid [0-9]+ num_conn [0-9]+ slot_bits [0-9]+'
check_event rv_attach 'job [0-9]+ slot [0-9]+'
check_event rv_mr_insert "$mr_re"
check_event rv_mr_hit "$mr_re"
check_event rv_mr_evict "$mr_re"
check_event rv_mr_invalidate "$mr_re"
check_event rv_mr_free "$mr_re"
check_event rv_detach 'job [0-9]+ slot [0-9]+'
check_event rv_job_destroy 'job [0-9]+ dev [0-9]+'

# With a second node: a rendezvous transfer (node 0 receives, node 1
# sends) and an idle connection, for the connection, data path and
# heartbeat events.
if [[ ${RV_NODES:-1} -ge 2 && -n ${RV_NODE_IPS:-} ]]; then
	read -r -a ips <<<"$RV_NODE_IPS"
	demo=$here/../../../../examples/rv_rendezvous
	if [[ ${RV_NODE:-0} -eq 0 ]]; then
		role=(-s)
		peer=${ips[1]}
	else
		role=(-c "${ips[0]}")
		peer=${ips[0]}
	fi
	tap_run "trace-cmd record -e rv (rendezvous transfer)" \
		trace-cmd record -q -e rv -o "$work/xfer.dat" \
		timeout 300 "$demo" "${role[@]}" -d "$RV_IBDEV" -t 4M -m 1M -M 2M -q
	trace-cmd report -i "$work/xfer.dat" >"$work/xfer" 2>/dev/null
	# A connection left idle for 4 s: heartbeats (default every 1 s).
	tap_run "trace-cmd record -e rv (idle connection)" \
		trace-cmd record -q -e rv -o "$work/idle.dat" \
		timeout -s TERM 8 "$here/rv_conn_test" -k tr-idle -n 1 \
		-t 30000 -s "$work/idle.status" "$peer"
	trace-cmd report -i "$work/idle.dat" >"$work/idle" 2>/dev/null
	# One rv_post_writes() of 4 writes of 1 MiB with nothing in flight
	# (rv_bench bw's first call, wr_id 0..3) on a connection of 4 QPs:
	# rv spreads a run of writes over the QPs by bytes, so that one large
	# message uses all of them.
	if [[ ${RV_NODE:-0} -eq 0 ]]; then
		brole=(-S)
	else
		brole=(-c "${ips[0]}")
	fi
	tap_run "trace-cmd record -e rv:rv_write_post (rv_bench bw, 1 MiB, batches of 4)" \
		trace-cmd record -q -e rv:rv_write_post -o "$work/batch.dat" \
		timeout 300 "$here/rv_bench" bw "${brole[@]}" -d "$RV_IBDEV" \
		-P 47990 -C 4 -k trbatch -s 1M -t 4 -b 4 -B 8M
	if [[ ${RV_NODE:-0} -eq 1 ]]; then
		qps=$(trace-cmd report -i "$work/batch.dat" 2>/dev/null |
			sed -nE 's/.* rv_write_post: .* qp ([0-9]+) slot [0-9]+ wr_id [0-3] .*/\1/p' |
			sort -u | tr '\n' ' ')
		tap_diag "QPs of the first batch (wr_id 0..3): $qps"
		if [[ $(wc -w <<<"$qps") -eq 4 ]]; then
			tap_ok "one batch of 4 x 1 MiB writes goes over the connection's 4 QPs"
		else
			tap_fail "one batch of 4 x 1 MiB writes goes over the connection's 4 QPs" \
				"QPs used: $qps"
		fi
	fi
	cat "$work/xfer" "$work/idle" >"$work/report"
	check_event rv_conn_state 'job [0-9]+ conn [0-9]+ CONNECTED reason 0 generation 1 connected [1-9]'
	check_event rv_cm_event 'job [0-9]+ conn [0-9]+ qp [0-9]+ event ESTABLISHED status 0'
	check_event rv_heartbeat 'job [0-9]+ conn [0-9]+ qp 0 idle [0-9]+ ms'
	if [[ ${RV_NODE:-0} -eq 0 ]]; then
		check_event rv_recv 'job [0-9]+ conn [0-9]+ slot 0 imm 0x[0-9a-f]+ bytes [1-9][0-9]* delivered'
	else
		# segs: work requests, one per SGE limit of scattered pages.
		check_event rv_write_post 'job [0-9]+ conn [0-9]+ qp [0-9]+ slot 0 wr_id [0-9]+ bytes [1-9][0-9]* segs [1-9][0-9]* status SUCCESS'
		check_event rv_write_done 'job [0-9]+ conn [0-9]+ qp [0-9]+ slot 0 wr_id [0-9]+ bytes [1-9][0-9]* segs [1-9][0-9]* status SUCCESS$'
	fi
fi

tap_end
