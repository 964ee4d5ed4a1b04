#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# race.sh - two nodes with two vCPUs each: rv_race_test's racer on node 0
# (a posting thread against close, munmap, dereg+evict and connection
# destroy from another thread, the ring reaped on a third), its target on
# node 1 (every write received at most once).  Each TAP result of the
# tool is one result.

set -uo pipefail
# shellcheck source=tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"

: "${RV_NODE:?run me with rv-vm}" "${RV_NODES:?}" "${RV_IBDEV:?}" "${RV_OUT:?}"
T=$RV_REPO/tools/testing/selftests/rv
peer=$(rv_node_ip $((1 - RV_NODE)))
shared=$(dirname "$RV_OUT")/race
mkdir -p "$shared"

tap_begin
tap_diag "node$RV_NODE: $(nproc) CPUs"
timeout "$(rv_secs 600)" "$T/rv_race_test" -N "$RV_NODE" -k race -d "$shared" \
	-r "${RV_RACE_ROUNDS:-24}" -T "$(rv_secs 540)" "$peer" >"$RV_OUT/race.out" 2>&1
rc=$?
tap_checks "" <"$RV_OUT/race.out"
((TAP_CHECKS)) || tap_fail race-ran "rv_race_test exit status $rc, no check"
tap_end
