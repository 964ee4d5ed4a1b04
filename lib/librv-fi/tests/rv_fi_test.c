// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv_fi_test - the libfabric provider "rv" between two nodes, through the
 * libfabric API only (plus rv's read-only DUMP of this process's counters,
 * to check which path a message took).
 *
 *   rv_fi_test -s [-p PORT] [-R | -O | -B]          node A (waits for B)
 *   rv_fi_test -c HOST [-p PORT] [-R | -O | -B]     node B
 *
 * -R runs only t_ring() (with FI_RV_RING_ENTRIES=64), -O only
 * t_ring_overflow() (with FI_RV_RING_ENTRIES=64 and
 * FI_RV_TEST_RING_UNBOUNDED=1): the provider reads its environment once,
 * so each is a run of its own.  -B runs only t_sq_full_backoff(), under
 * an rv loaded with a small conn_wqe_budget (vm/fabric.sh reloads it).
 *
 * The two meet over a TCP control connection (PORT, default 18571) that
 * carries the endpoint names and a one-byte barrier between the cases.
 * Both run the same cases in the same order; most send in one direction
 * (B to A) and check on the receiving side.  Output is TAP; exit status 0
 * only if every case passed on this node.
 *
 * Every wait is bounded (WAIT_MS), so a lost message fails the case
 * instead of hanging the run.
 *
 * This file: main() and the order of the cases.  rv_fi_util.c is the
 * harness; the cases live by theme in the other rv_fi_*.c files
 * (rv_fi_test.h lists them).
 */
#include "rv_fi_test.h"

/*
 * Both nodes run them in this order; some rely on what an earlier one left
 * (t_data_source() re-inserts the peer under a new fi_addr).
 */
static void (*const cases[])(void) = {
	t_tagged_ignore,
	t_data_source,
	t_directed_cancel,
	t_sizes,
	t_unexpected,
	t_truncation,
	t_inflight,
	t_threads,
	t_rv_counters,
	t_misc,
	t_hostile,
	t_local,
	t_addressing,
	t_peek_discard,
	t_complete_levels,
	t_levels_info,
	t_cq_limits,
	t_multi_recv_cq_full,
	t_close_nonblocking,
};

static void usage(void)
{
	fprintf(stderr, "usage: rv_fi_test -s | -c HOST [-p PORT] [-R | -O | -B]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *host = NULL, *port = "18571";
	void (*only)(void) = NULL;
	size_t i;
	int c;

	while ((c = getopt(argc, argv, "sc:p:D:ROB")) != -1) {
		switch (c) {
		case 's': server = true; break;
		case 'c': host = optarg; break;
		case 'p': port = optarg; break;
		case 'D': break;	/* accepted for the VM scripts */
		case 'R': only = t_ring; break;	/* FI_RV_RING_ENTRIES=64 */
		/* FI_RV_RING_ENTRIES=64 FI_RV_TEST_RING_UNBOUNDED=1 */
		case 'O': only = t_ring_overflow; break;
		/* rv loaded with conn_wqe_budget=16: its queues fill */
		case 'B': only = t_sq_full_backoff; break;
		default: usage();
		}
	}
	if (server == !!host)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Read once by the provider: t_close_nonblocking() needs it. */
	setenv("FI_RV_CLOSE_DELAY_MS", "3000", 0);
	printf("TAP version 13\n");
	ctl_connect(host, port);
	setup();

	if (only) {
		only();
		goto out;
	}
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cases[i]();
out:
	sync_peer();
	fi_close(&ep->fid);
	fi_close(&av->fid);
	fi_close(&txcq->fid);
	fi_close(&rxcq->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	close(ctl);
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}
