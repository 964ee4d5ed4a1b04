#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# fuzz.sh - rv_fuzz on every node of a group (see tests.list); with 2
# nodes each fuzzes a live connection to the other (writes with good and
# bad keys, so QPs fail and are replaced under load).  Then the module
# must unload: nothing may be left behind.
#
#   fuzz.sh [ITERATIONS]      default 20000; RV_FUZZ_SEED picks the seed
#                             (default 1; node N uses SEED + N)

set -uo pipefail
# shellcheck source=tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"

: "${RV_NODE:?run me with rv-vm}" "${RV_NODES:?}" "${RV_IBDEV:?}"
iters=${1:-20000}
seed=$((${RV_FUZZ_SEED:-1} + RV_NODE))
T=$RV_REPO/tools/testing/selftests/rv
read -r -a ips <<<"$RV_NODE_IPS"
peer=()
if [[ $RV_NODES -ge 2 ]]; then
	peer=(-p "${ips[$(((RV_NODE + 1) % RV_NODES))]}")
	[[ $RV_NODE == 0 ]] && peer+=(-l)
fi

# rv_fuzz prints its own TAP (3 tests); number them after ours.
timeout 900 "$T/rv_fuzz" -s "$seed" -n "$iters" "${peer[@]}" -d "$RV_IBDEV"
rc=$?
tap_diag "rv_fuzz exit status $rc"
# The peer may still be fuzzing over our connection: wait for it before
# unloading (bounded), so its writes do not fail because we left.
shared=$(dirname "$RV_OUT")/fuzz-barriers
mkdir -p "$shared"
rv_barrier "$shared" fuzz-done 300
if rmmod rv 2>"$RV_OUT/rmmod.err"; then
	echo "ok 4 fuzz.unload"
else
	echo "not ok 4 fuzz.unload # $(cat "$RV_OUT/rmmod.err")"
fi
echo "1..4"
exit 0
