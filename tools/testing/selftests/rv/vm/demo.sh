#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# demo.sh [rv_rendezvous size options] - the rendezvous demo
# (examples/rv_rendezvous) between two VMs, as TAP: node 0 receives, node 1
# sends to node 0's eth0 address; the RTS/CTS control messages go over TCP,
# the data over rv.  Default sizes: 64 MiB in each of 1, 2, 4, 8 and
# 16 MiB messages, one rv write per key chunk of the receiver's buffer (so
# within rxe's largest message: 8 MiB on 6.1, 2 GiB on 6.12).
#
# Results: the demo's exit status, and its own report checked against the
# sizes asked for: every byte verified by the receiver, every write posted
# completed without error, nothing dropped.  The demo's output is shown as
# diagnostics (bandwidth per size, rv counters).

set -uo pipefail
# shellcheck source=tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"

: "${RV_NODE:?run me with rv-vm}" "${RV_NODES:?}" "${RV_IBDEV:?}"
DEMO=$RV_REPO/examples/rv_rendezvous
total=64M min=1M max=16M
args=("$@")
# The sizes are needed here too, to know what the demo must report.
while getopts "t:m:M:" o "$@"; do
	case $o in
	t) total=$OPTARG ;;
	m) min=$OPTARG ;;
	M) max=$OPTARG ;;
	*) echo "usage: demo.sh [-t BYTES] [-m BYTES] [-M BYTES]" >&2; exit 2 ;;
	esac
done

bytes() {
	local v=$1
	case $v in
	*[kK]) echo $((${v%?} << 10)) ;;
	*[mM]) echo $((${v%?} << 20)) ;;
	*[gG]) echo $((${v%?} << 30)) ;;
	*) echo $((v)) ;;
	esac
}
total=$(bytes "$total") min=$(bytes "$min") max=$(bytes "$max")
want_bytes=0 want_msgs=0 sizes=0
for ((s = min; s <= max; s *= 2)); do
	want_msgs=$((want_msgs + total / s))
	want_bytes=$((want_bytes + total / s * s))
	sizes=$((sizes + 1))
done

tap_begin
if [[ ! -x $DEMO ]]; then
	tap_fail demo "$DEMO not built (make -C examples)"
	tap_end
	exit
fi
[[ $RV_NODES -eq 2 ]] || { tap_fail demo "needs 2 nodes"; tap_end; exit; }

if [[ $RV_NODE -eq 0 ]]; then
	role=receiver
	cmd=("$DEMO" -s -d "$RV_IBDEV" "${args[@]}")
else
	role=sender
	cmd=("$DEMO" -c "$(rv_node_ip 0)" -d "$RV_IBDEV" "${args[@]}")
fi
# rvstat every 2 s while the transfer runs; the last snapshot that shows
# the connection is printed after the demo's own output.
RVSTAT=$RV_REPO/tools/rvstat/rvstat
snap=$RV_OUT/rvstat.snap
(
	while sleep 2; do
		"$RVSTAT" >"$snap.tmp" 2>&1 &&
			grep -q '^  conn ' "$snap.tmp" && mv "$snap.tmp" "$snap"
	done
) &
watcher=$!
rc=0
out=$(timeout 900 "${cmd[@]}" 2>&1) || rc=$?
kill "$watcher" 2>/dev/null
wait "$watcher" 2>/dev/null
# shellcheck disable=SC2001
sed 's/^/# /' <<<"$out"
if [[ -s $snap ]]; then
	echo "# rvstat on node$RV_NODE during the transfer:"
	sed 's/^/# /' "$snap"
	tap_ok demo-rvstat
else
	tap_fail demo-rvstat "rvstat never showed the connection"
fi

if [[ $rc -eq 0 ]]; then
	tap_ok "demo-$role-exit"
else
	tap_fail "demo-$role-exit" "exit status $rc"
fi

# printed NAME REGEX: one result, whether the demo printed a matching line.
printed() {
	if grep -Eq "$2" <<<"$out"; then
		tap_ok "$1"
	else
		tap_fail "$1" "no line matching /$2/"
	fi
}

# per_chunk NAME WHAT: the demo's count of WHAT (writes or RECVs) for its
# $want_msgs messages, one per key chunk of each message's buffer: at
# least one per message.  Sets $chunks for the counters' check.
per_chunk() {
	chunks=$(sed -n "s/^$role: \([0-9]*\) $2 for $want_msgs messages .*/\1/p" <<<"$out")
	if [[ -n $chunks && $chunks -ge $want_msgs ]]; then
		tap_ok "$1"
	else
		tap_fail "$1" "${chunks:-no} $2 for $want_msgs messages"
		chunks=x
	fi
}

if [[ $role == receiver ]]; then
	printed demo-verified "^receiver: $want_bytes bytes received and verified$"
	n=$(grep -Ec '^received .* verified$' <<<"$out")
	if [[ $n -eq $sizes ]]; then
		tap_ok demo-sizes
	else
		tap_fail demo-sizes "$n of $sizes sizes verified"
	fi
	# rv's counters say exactly what the demo saw.
	per_chunk demo-receiver-recvs-per-chunk RECVs
	printed demo-receiver-counters "^receiver stats: writes 0 posted, 0 completed, 0 failed, 0 EAGAIN; recvs $chunks \\([0-9]+ bytes\\); ring overflows 0"
else
	printed demo-sent "^sender: $want_bytes bytes sent, receiver verified all of them$"
	per_chunk demo-sender-writes-per-chunk writes
	printed demo-sender-counters "^sender stats: writes $chunks posted, $chunks completed, 0 failed, [0-9]+ EAGAIN; recvs 0 \\(0 bytes\\); ring overflows 0"
fi
tap_end
