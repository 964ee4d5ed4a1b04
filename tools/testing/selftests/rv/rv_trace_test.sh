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
check_event() {
	local name=$1 re=$2 line
	line=$(grep -m1 -E " $name: " "$work/report")
	if [[ -z $line ]]; then
		tap_fail "event $name" "not recorded"
	elif [[ ! $line =~ $re ]]; then
		tap_fail "event $name" "fields: $line"
	else
		tap_ok "event $name"
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

tap_end
