#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# host_checks.sh - the checks that need no RDMA device, as TAP: the uAPI
# layout on i386/x32/x86-64, librv's man pages and ring consumer, the verbs
# audit's coverage of rv.ko's imports (Documentation/rv/drivers.rst), and
# the kernel lint (W=1, sparse, checkpatch --strict).  Run from the repo root after
# "make all".

set -uo pipefail

# What a user's shell would run: the variables of a make that runs us
# ("make check KERNEL=6.12") must not reach the makes below, e.g. the DKMS
# build, which expects rv.ko in place.
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES

# shellcheck source=vm/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/vm/tap.sh"

log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

# renumber NAME CMD...: CMD prints TAP of its own; its results become
# this script's (tap_checks), plus one result for its exit status so that
# a crash before any "not ok" still fails.
renumber() {
	local name=$1 rc=0
	shift
	"$@" >"$log/$name" 2>&1 || rc=$?
	tap_checks "" <"$log/$name"
	tap_check "$name-exit" test "$rc" -eq 0
}

tap_begin
renumber layout-check make -s -C tools/testing/selftests/rv layout-check
tap_check man-pages make -s check-man
renumber librv-ring tools/testing/selftests/rv/librv_ring_test
renumber driver-audit tools/testing/selftests/rv/check_driver_audit.sh
tap_check kernel-W=1 make -s lint-w1
tap_check kernel-sparse make -s lint-sparse
tap_check kernel-checkpatch make -s checkpatch
renumber install tools/testing/selftests/rv/install_test.sh
tap_end
