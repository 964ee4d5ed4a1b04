#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# bench-mr.sh - rv's MR cache against plain verbs registration.
#
# Usage: bench-mr.sh [rv-vm options...] [-- rv_bench mr options...]  (host)
#   e.g. bench-mr.sh                       default sizes, 100 rounds each
#        bench-mr.sh -- -n 20 -s 1M        quick look at the goal size
#
# Boots 1 node and runs "rv_bench mr" there on rxe0: REG_MEM miss and hit
# cost against ibv_reg_mr/ibv_dereg_mr, per buffer size, and the verdict
# (a hit under 2% of a verbs registration at 1 MiB); a hit and release
# through librv's MR table against the null ioctl it saves (at most 0.02).  Build first
# (make all).  Exit status: rv-vm's (non-zero if rv_bench failed).

set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bench=$here/../rv_bench
vm_args=()
while (($#)) && [[ $1 != -- ]]; do
	vm_args+=("$1")
	shift
done
(($#)) && shift			# the rest is for rv_bench
if [[ ! -x $bench ]]; then
	echo "bench-mr.sh: $bench not built (make all)" >&2
	exit 1
fi

rc=0
out=$(mktemp -d "${TMPDIR:-/tmp}/rv-bench.XXXXXX")
trap '[[ $rc -eq 0 ]] && rm -rf "$out"' EXIT

# Under TCG the 8 MiB rounds dominate: about 1-2 minutes in all at the
# default 100 rounds.
"$here/../vm/rv-vm" run --nodes 1 --timeout 900 --out "$out" "${vm_args[@]}" \
	-- "$bench" mr "$@" || rc=$?
cat "$out/node0.out"
((rc == 0)) || echo "bench-mr.sh: failed (rc $rc), output kept in $out" >&2
exit $rc
