#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# rvstat.sh - rvstat against a live job on every node (2 nodes): a holder
# process (rv_conn_test) connects to the other node with num_conn 2; rvstat
# must show the device, the job, the connected connection with its QPs and
# heartbeats, and the holder's process record, in text and JSON; another
# uid sees none of it; -w refreshes; after the holder exits nothing is left.

set -uo pipefail
# shellcheck source=tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"

: "${RV_NODE:?run me with rv-vm}" "${RV_NODES:?}" "${RV_IBDEV:?}" "${RV_OUT:?}"
me=$RV_NODE
T=$RV_REPO/tools/testing/selftests/rv
RVSTAT=$RV_REPO/tools/rvstat/rvstat
shared=$(dirname "$RV_OUT")/rvstat-barriers
mkdir -p "$shared"
read -r -a ips <<<"$RV_NODE_IPS"
peer=${ips[$((1 - me))]}
st=$RV_OUT/holder.status

# barrier NAME [SECONDS]: wait until every node reached NAME.
barrier() {
	rv_barrier "$shared" "$@"
}

# has PATTERN FILE: grep -E, diagnosing a miss.
has() {
	grep -Eq -- "$1" "$2" && return 0
	tap_diag "no match for '$1' in $2:"
	head -c 2000 "$2" | sed 's/^/# /'
	return 1
}

tap_begin
"$T/rv_conn_test" -k rvs -n 2 -t 60000 -s "$st" "$peer" 2>"$st.err" &
holder=$!
rv_wait_until 90 grep -qs '^result' "$st"
tap_run holder-connected grep -q '^result ok' "$st"
# Two heartbeat periods (1 s default) of idleness.
sleep 3

"$RVSTAT" >"$RV_OUT/rvstat.txt" 2>&1
tap_run text-exit test $? -eq 0
tap_diag "rvstat on node$me:"
sed 's/^/# /' "$RV_OUT/rvstat.txt"
tap_run text-device has "^  [0-9]+ +$RV_IBDEV +active +1$" "$RV_OUT/rvstat.txt"
# The key "rvs" in hex.
tap_run text-job has " 727673 +1 +2 " "$RV_OUT/rvstat.txt"
tap_run text-conn has "remote $peer:$(cat /sys/module/rv/parameters/cm_port) (client|server) connected \(none\) generation 1 qps 2/2" "$RV_OUT/rvstat.txt"
tap_run text-qps has "qp 1 +connected +qpn [1-9]" "$RV_OUT/rvstat.txt"
tap_run text-proc has "^  [0-9]+ +0 +$holder " "$RV_OUT/rvstat.txt"

"$RVSTAT" --json >"$RV_OUT/rvstat.json" 2>&1
tap_run json-exit test $? -eq 0
tap_run json-valid python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$RV_OUT/rvstat.json"
tap_run json-conn has '"state":"connected","reason":"none"' "$RV_OUT/rvstat.json"
tap_run json-heartbeats has '"heartbeats":[1-9]' "$RV_OUT/rvstat.json"
tap_run json-proc has "\"pid\":$holder," "$RV_OUT/rvstat.json"
tap_run json-job has '"slots_used":1,"num_conn":2' "$RV_OUT/rvstat.json"

setpriv --reuid=65534 --regid=65534 --clear-groups "$RVSTAT" --json \
	>"$RV_OUT/rvstat.nobody.json" 2>&1
tap_run other-uid-sees-nothing has '"jobs":\[\],"connections":\[\],"processes":\[\]' "$RV_OUT/rvstat.nobody.json"

"$RVSTAT" --json -w 1 -n 2 >"$RV_OUT/rvstat.watch" 2>&1
tap_run watch-two-rounds test "$(grep -c '^{"time"' "$RV_OUT/rvstat.watch")" -eq 2

barrier checked || true
kill "$holder"
wait "$holder"
"$RVSTAT" --json >"$RV_OUT/rvstat.after.json" 2>&1
tap_run after-exit-empty has '"jobs":\[\],"connections":\[\],"processes":\[\]' "$RV_OUT/rvstat.after.json"
tap_end
