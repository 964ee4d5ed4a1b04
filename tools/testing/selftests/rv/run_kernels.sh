#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# run_kernels.sh - run_tests.sh once per kernel, one summary at the end.
#
#   run_kernels.sh ARGS... [::: ARGS...]...
#
# Each ARGS is one run_tests.sh command line (its -k, -g, -p, -- rv-vm
# options); the runs go one after the other, their TAP streams as they
# come.  The last line sums them: "N passed, N failed, N skipped" (what
# .ci/run reports).  Exit status 1 if any run failed or printed no summary.

set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
summary_re='^([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped$'
passed=0 failed=0 skipped=0 rc=0 runs=0

run() {
	local line seen=0 status=
	runs=$((runs + 1))
	while IFS= read -r line; do
		if [[ $line == "run_kernels: exit "* ]]; then
			status=${line#run_kernels: exit }
			continue
		fi
		echo "$line"
		if [[ $line =~ $summary_re ]]; then
			passed=$((passed + BASH_REMATCH[1]))
			failed=$((failed + BASH_REMATCH[2]))
			skipped=$((skipped + BASH_REMATCH[3]))
			seen=1
		fi
	done < <("$here/run_tests.sh" "$@"; echo "run_kernels: exit $?")
	# The exit status comes through the stream's last line.
	[[ $status == 0 ]] || rc=1
	if ((!seen)); then
		echo "# run_kernels: run $runs printed no summary"
		failed=$((failed + 1))
		rc=1
	fi
}

args=()
for a in "$@"; do
	if [[ $a == ::: ]]; then
		run "${args[@]}"
		args=()
	else
		args+=("$a")
	fi
done
run "${args[@]}"
((runs > 1)) && echo "# run_kernels: $runs runs"
echo "$passed passed, $failed failed, $skipped skipped"
exit "$rc"
