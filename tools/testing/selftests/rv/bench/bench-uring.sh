#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# bench-uring.sh - system calls per write of rv's three ways of posting,
# in one run between two VMs: RV_IOCTL_POST_WRITE, RV_URING_CMD_POST_WRITE
# through io_uring without SQPOLL (one io_uring_enter() per batch of 16),
# and with SQPOLL (expected: none).
#
# Usage: bench-uring.sh [rv-vm options...]      (on the host; make all first)
#
# Boots 2 nodes with 2 vCPUs and runs vm/uring.sh (rv_uring_test) with
# BENCH_URING_WRITES writes per way (default 10000) of 4 KiB, at most 48
# in flight.  The sender counts its own system calls with a perf counter
# on raw_syscalls:sys_enter (perf_event_open of its thread), enabled after
# 256 writes of warm-up, so the figures are the steady state's; clock
# reads are subtracted where they are system calls (a clock without vDSO).
# An SQPOLL thread is a kernel thread: what it does is no system call of
# the program.  Prints a table; BENCH_OUT (default
# build/vm/bench-uring/<time>) keeps the VMs' output.  Not a test: the
# "uring" group of tests.list checks the same figures.

set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../../../.." && pwd)
writes=${BENCH_URING_WRITES:-10000}
if [[ ! -x $here/../rv_uring_test ]]; then
	echo "bench-uring.sh: $here/../rv_uring_test not built (make all)" >&2
	exit 1
fi
out=${BENCH_OUT:-$repo/build/vm/bench-uring/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
rc=0
"$here/../vm/rv-vm" run --nodes 2 --smp 2 --timeout 1200 --out "$out/vm" "$@" -- \
	"RV_URING_WRITES=$writes $here/../vm/uring.sh" || rc=$?

# "# uring: 20000 writes, 0 reposts, 1234 system calls in the last 19744:
#  0.063 per write; 1234 submits (16.0 writes each), 1.000 system calls
#  per submit"
printf '%-34s %9s %13s %16s %13s\n' way writes "syscalls" "syscalls/write" "writes/batch"
awk '
/^# (ioctl|uring|sqpoll|fallback): [0-9]+ writes/ {
	way = $2; sub(":", "", way)
	name["ioctl"] = "ioctl POST_WRITE"
	name["uring"] = "io_uring, no SQPOLL (submit/batch)"
	name["sqpoll"] = "io_uring, SQPOLL"
	name["fallback"] = "ioctl, io_uring denied (seccomp)"
	for (i = 1; i <= NF; i++) {
		if ($i == "calls" && $(i + 1) == "in") { sys = $(i - 2); n = $(i + 4) }
		if ($i == "submits") each = $(i + 1)
	}
	sub(":", "", n); sub(/\(/, "", each)
	printf "%-34s %9s %13s %16.3f %13s\n", name[way], n, sys, sys / n,
	       way == "ioctl" || way == "fallback" ? "-" : each
}' "$out/vm/node0.out"
grep -h 'not ok' "$out/vm/node0.out" "$out/vm/node1.out" 2>/dev/null || true
echo "output: $out"
exit $rc
