// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv_fi_levels.c - fi_cq(3) completion levels: FI_INJECT_COMPLETE,
 * FI_TRANSMIT_COMPLETE and FI_DELIVERY_COMPLETE against a stopped
 * receiver and one without a receive; FI_COMMIT_COMPLETE refused.
 */
#include "rv_fi_test.h"

/* Polls txcq for @ms: which of @ctx1, @ctx2 completed (bit 0, bit 1). */
static int poll_tx(int ms, void *ctx1, void *ctx2, int have)
{
	uint64_t end = now_ms() + ms;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;

	while (now_ms() < end) {
		ssize_t n = fi_cq_read(txcq, &e, 1);

		if (n == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			fi_cq_readerr(txcq, &err, 0);
			diag("send error %s", fi_strerror(err.err));
			continue;
		}
		if (n != 1)
			continue;
		if (e.op_context == ctx1)
			have |= 1;
		else if (e.op_context == ctx2)
			have |= 2;
		if (have == 3)
			break;
	}
	return have;
}

static int tsend_flags(uint64_t tag, uint64_t flags, void *ctx)
{
	struct iovec iov = { sbuf, 64 };
	struct fi_msg_tagged m = {
		.msg_iov = &iov, .iov_count = 1, .addr = peer, .tag = tag,
		.context = ctx,
	};

	return POST(fi_tsendmsg(ep, &m, flags | FI_COMPLETION));
}

/*
 * fi_cq(3) completion levels, B sending to A:
 * 1. A is stopped (makes no provider call): an FI_INJECT_COMPLETE send
 *    completes (TCP took it), an FI_TRANSMIT_COMPLETE one must not until
 *    A's provider read it.
 * 2. A progresses without a receive posted: the FI_TRANSMIT_COMPLETE send
 *    completes, the FI_DELIVERY_COMPLETE one (set in the endpoint's
 *    op_flags, as fabtests -U does) must not until A posts the receive.
 * Dropping either flag makes the send complete early: the case fails.
 */
void t_complete_levels(void)
{
	/* Static: no stale entry of an earlier case can carry their address. */
	static struct fi_context c1, c2;
	struct fi_cq_tagged_entry e;
	uint64_t f;
	int have;

	/* A completion an earlier case left behind would be misread. */
	while (fi_cq_read(txcq, &e, 1) == 1)
		diag("stale send completion (context %p) dropped",
		     e.op_context);
	/* 1: stopped receiver */
	if (server) {
		/*
		 * Stopped from before B sends until B's window is over: B
		 * sends once it has our first byte and sends its second once
		 * its window closed.  sync_peer() would progress in between
		 * and could read and ACK B's frames (issue 20).
		 */
		sync_peer_stopped();
		sync_peer_stopped();
		result(recv_tags(0xc0e10, 2), "tc-stopped-recv", "lost");
	} else {
		bool ok;

		sync_peer();
		ok = tsend_flags(0xc0e10, FI_INJECT_COMPLETE, &c1) == 0 &&
		     tsend_flags(0xc0e11, FI_TRANSMIT_COMPLETE, &c2) == 0;
		have = poll_tx(1000, &c1, &c2, 0);
		result(ok && have == 1, "tc-waits-for-peer",
		       "inject-complete %s, transmit-complete %s while the receiver is stopped",
		       have & 1 ? "done" : "not done",
		       have & 2 ? "done (flag dropped)" : "pending");
		sync_peer();
		have = poll_tx(WAIT_MS, &c1, &c2, have);
		result(have == 3, "tc-completes", "no transmit-complete");
	}
	/* 2: receiver progresses, no receive posted */
	sync_peer();
	if (server) {
		uint64_t end = now_ms() + 2000;

		while (now_ms() < end) {
			fi_cq_read(rxcq, NULL, 0);
			usleep(1000);
		}
		sync_peer();
		result(recv_tags(0xc0e20, 2), "dc-recv", "lost");
	} else {
		bool ok;

		f = FI_TRANSMIT | FI_DELIVERY_COMPLETE;
		ok = fi_control(&ep->fid, FI_SETOPSFLAG, &f) == 0;
		ok &= POST(fi_tsend(ep, sbuf, 64, NULL, peer, 0xc0e20,
				    &c1)) == 0;
		f = FI_TRANSMIT;
		fi_control(&ep->fid, FI_SETOPSFLAG, &f);
		ok &= tsend_flags(0xc0e21, FI_TRANSMIT_COMPLETE, &c2) == 0;
		have = poll_tx(1200, &c1, &c2, 0);
		result(ok && have == 2, "dc-waits-for-receive",
		       "delivery-complete %s, transmit-complete %s, receiver progressing without a receive",
		       have & 1 ? "done (flag dropped)" : "pending",
		       have & 2 ? "done" : "not done");
		sync_peer();
		have = poll_tx(WAIT_MS, &c1, &c2, have);
		result(have == 3, "dc-completes", "no delivery-complete");
	}
	sync_peer();
}

/* fi_getinfo and the post calls on what is and is not offered. */
void t_levels_info(void)
{
	struct fi_info *hints = fi_dupinfo(info), *got = NULL;
	struct fi_msg_tagged m = { .addr = peer, .tag = 1 };
	int ret;

	hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &got);
	result(!ret && (got->tx_attr->op_flags & FI_DELIVERY_COMPLETE),
	       "info-delivery-complete", "fi_getinfo %d", ret);
	fi_freeinfo(got);
	got = NULL;
	hints->tx_attr->op_flags = FI_COMMIT_COMPLETE;
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &got);
	result(ret == -FI_ENODATA, "info-no-commit-complete",
	       "fi_getinfo %d", ret);
	fi_freeinfo(got);
	fi_freeinfo(hints);
	result(fi_tsendmsg(ep, &m, FI_COMMIT_COMPLETE) == -FI_EBADFLAGS,
	       "commit-complete-refused", "not -FI_EBADFLAGS");
}
