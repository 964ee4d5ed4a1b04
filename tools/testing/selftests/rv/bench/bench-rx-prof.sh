#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# bench-rx-prof.sh - what the receiver of rv_bench bw does per write:
# event counts on node 1 (perf stat, system wide) over a whole rv_bench
# receiver, and the receiver process's own context switches and CPU time.
#
#   rv-vm run --nodes 2 --smp 2 [--rv-ko KO] [--rv-args ack_timeout=18] -- \
#       "NC=4 SZ=64K tools/testing/selftests/rv/bench/bench-rx-prof.sh"
#
# Node 0 writes SZ (default 64K) for 15 s with num_conn NC (default 4);
# node 1 writes stat.txt (system-wide counts: rv:rv_recv = writes,
# wakeups, context switches, system calls, softirqs, interrupts, IPIs, CQ
# passes of ib_core, then /proc/stat and ctxt before and after) and
# task.txt (the receiver's context switches and task clock) into its
# RV_OUT.  Divide by rv:rv_recv for figures per write.  Counts, not
# times: under TCG on a loaded host, perf's sampling and ftrace durations
# lose the time a vCPU thread waits for a host CPU (see Documentation/rv/performance.rst).
set -u
B=${BENCH_BIN:-$RV_REPO/tools/testing/selftests/rv/rv_bench}
NC=${NC:-4}
SZ=${SZ:-64K}
read -r _ peer _ <<<"$RV_NODE_IPS"
if ((RV_NODE == 1)); then
	s0=$(grep '^cpu ' /proc/stat)
	c0=$(awk '/^ctxt/ { print $2 }' /proc/stat)
	perf stat -o "$RV_OUT/stat.txt" -a -e rv:rv_recv,sched:sched_wakeup,sched:sched_switch,raw_syscalls:sys_enter,irq:softirq_entry,irq:irq_handler_entry,irq:softirq_raise,irq_vectors:call_function_single_entry,irq_vectors:reschedule_entry,rdma_core:cq_process,rdma_core:cq_poll,rdma_core:cq_schedule,cpu-clock -- \
		perf stat -o "$RV_OUT/task.txt" -e context-switches,task-clock,cpu-migrations -- \
		timeout 200 "$B" bw -S -P 21000 -s "$SZ" -k prof -C "$NC" --cpu \
		>"$RV_OUT/rx.log" 2>&1
	rc=$?
	s1=$(grep '^cpu ' /proc/stat)
	c1=$(awk '/^ctxt/ { print $2 }' /proc/stat)
	{
		echo "stat0 $s0"
		echo "stat1 $s1"
		echo "ctxt $c0 $c1"
	} >>"$RV_OUT/stat.txt"
	cat "$RV_OUT/rx.log" "$RV_OUT/stat.txt" "$RV_OUT/task.txt"
else
	sleep 2
	timeout 200 "$B" bw -c "$peer" -P 21000 -s "$SZ" -k prof -C "$NC" \
		-T 15 --cpu >"$RV_OUT/tx.log" 2>&1
	rc=$?
	cat "$RV_OUT/tx.log"
fi
exit $rc
