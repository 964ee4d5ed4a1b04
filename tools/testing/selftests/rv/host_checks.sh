#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# host_checks.sh - the checks that need no RDMA device, as TAP: the uAPI
# layout on i386/x32/x86-64, librv's man pages, the verbs audit's coverage
# of rv.ko's imports (Documentation/rv/drivers.rst), and the kernel lint
# (W=1, sparse, checkpatch --strict).  Run from the repo root after
# "make all".

set -uo pipefail

# What a user's shell would run: the variables of a make that runs us
# ("make check KERNEL=6.12") must not reach the makes below, e.g. the DKMS
# build, which expects rv.ko in place.
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES

n=0
failed=0
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

# check NAME CMD...: one TAP result; the command's output becomes comments
# when it fails.
check() {
	local name=$1
	shift
	n=$((n + 1))
	if "$@" >"$log/$n" 2>&1; then
		echo "ok $n $name"
	else
		failed=1
		sed 's/^/# /' "$log/$n" | tail -n 40
		echo "not ok $n $name"
	fi
}

# renumber NAME CMD...: CMD prints TAP of its own; renumber its results
# into this stream (its diagnostics too), plus one result for its exit
# status so that a crash before any "not ok" still fails.
renumber() {
	local name=$1 rc=0 line
	shift
	"$@" >"$log/$name" 2>&1 || rc=$?
	while IFS= read -r line; do
		if [[ $line =~ ^(ok|not\ ok)\ [0-9]+\ (.*)$ ]]; then
			n=$((n + 1))
			[[ ${BASH_REMATCH[1]} == ok ]] || failed=1
			echo "${BASH_REMATCH[1]} $n ${BASH_REMATCH[2]}"
		elif [[ $line == "# "* ]]; then
			echo "$line"
		fi
	done <"$log/$name"
	check "$name-exit" test "$rc" -eq 0
}

echo "TAP version 13"
renumber layout-check make -s -C tools/testing/selftests/rv layout-check
check man-pages make -s check-man
renumber driver-audit tools/testing/selftests/rv/check_driver_audit.sh
check kernel-W=1 make -s lint-w1
check kernel-sparse make -s lint-sparse
check kernel-checkpatch make -s checkpatch
renumber install tools/testing/selftests/rv/install_test.sh
echo "1..$n"
exit "$failed"
