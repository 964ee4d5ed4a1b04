// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv_fi_peek.c - fi_tinject, bounded sread and fi_cq_signal, FI_PEEK,
 * FI_CLAIM and FI_DISCARD, and a few refusals of the API (iov limit,
 * unknown option).
 */
#include "rv_fi_test.h"

/* fi_tinject (no completion), FI_PEEK, iov limit, unknown option. */
void t_misc(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct fi_context pctx, cctx;
	struct iovec riov = { rbuf, 200 };
	struct iovec iov[2] = { { sbuf, 8 }, { sbuf + 8, 8 } };
	struct fi_msg_tagged m = {
		.msg_iov = iov, .iov_count = 2, .addr = peer, .tag = 1,
	};
	size_t optlen = sizeof(size_t);
	uint64_t t0;
	size_t opt;
	ssize_t n;
	int ret;

	result(fi_tsendmsg(ep, &m, 0) == -FI_EINVAL, "iov-limit",
	       "two iovs accepted");
	result(fi_getopt(&ep->fid, FI_OPT_ENDPOINT, 12345, &opt, &optlen) ==
	       -FI_ENOPROTOOPT, "getopt-unknown", "not -FI_ENOPROTOOPT");
	sync_peer();
	if (!server) {
		fill(sbuf, 200, 99);
		ret = POST(fi_tinject(ep, sbuf, 200, peer, 0x99));
		memset(sbuf, 0, 200);	/* inject copied it */
		result(ret == 0, "tinject", "fi_tinject %d", ret);
		sync_peer();
		sync_peer();
		result(fi_cq_read(txcq, &e, 1) == -FI_EAGAIN,
		       "tinject-no-completion", "a completion appeared");
		return;
	}
	sync_peer();	/* B's inject is on its way */
	/* Nothing completes yet: a bounded sread times out, a signal ends one. */
	t0 = now_ms();
	n = fi_cq_sread(rxcq, &e, 1, NULL, 300);
	result(n == -FI_EAGAIN && now_ms() - t0 >= 250, "sread-timeout",
	       "sread %zd after %llu ms", n,
	       (unsigned long long)(now_ms() - t0));
	fi_cq_signal(rxcq);
	t0 = now_ms();
	n = fi_cq_sread(rxcq, &e, 1, NULL, -1);
	result(n == -FI_EAGAIN && now_ms() - t0 < 5000, "cq-signal",
	       "sread %zd after %llu ms", n,
	       (unsigned long long)(now_ms() - t0));
	m.msg_iov = NULL;
	m.iov_count = 0;
	m.tag = 0x99;
	m.ignore = 0;
	m.context = &pctx;
	m.addr = FI_ADDR_UNSPEC;
	ret = fi_trecvmsg(ep, &m, FI_PEEK);
	if (!ret)
		ret = wait_comp(rxcq, &e, NULL, &err);
	result(ret == 1 && e.len == 200 && e.tag == 0x99, "peek",
	       "ret %d len %zu", ret, e.len);
	m.tag = 0x12345;
	ret = fi_trecvmsg(ep, &m, FI_PEEK);
	if (!ret)
		ret = wait_comp(rxcq, &e, NULL, &err);
	result(ret == 0 && err.err == FI_ENOMSG, "peek-nomsg",
	       "ret %d err %d", ret, ret ? 0 : err.err);
	/* MPI_Improbe + MPI_Mrecv: FI_PEEK | FI_CLAIM, then FI_CLAIM. */
	m.tag = 0x99;
	m.context = &cctx;
	ret = fi_trecvmsg(ep, &m, FI_PEEK | FI_CLAIM);
	if (!ret)
		ret = wait_comp(rxcq, &e, NULL, &err);
	result(ret == 1 && e.len == 200 && e.op_context == &cctx, "peek-claim",
	       "ret %d len %zu", ret, e.len);
	memset(rbuf, 0, 200);
	m.msg_iov = &riov;
	m.iov_count = 1;
	ret = fi_trecvmsg(ep, &m, FI_CLAIM);
	n = ret ? ret : fi_cq_sread(rxcq, &e, 1, NULL, WAIT_MS);
	result(n == 1 && e.op_context == &cctx && check(rbuf, 200, 99) < 0,
	       "claim-recv-sread", "ret %zd", n);
	sync_peer();
}

/* A tagged receive with @flags (FI_PEEK...) on ep; 1, or -err. */
static int trecv_flags(uint64_t tag, uint64_t flags, struct fi_context *ctx,
		       struct fi_cq_tagged_entry *e)
{
	struct iovec iov = { rbuf, 1 << 20 };
	struct fi_msg_tagged m = {
		.msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC,
		.tag = tag, .context = ctx,
	};
	struct fi_cq_err_entry err;
	int ret;

	if (flags & (FI_PEEK | FI_DISCARD)) {
		m.msg_iov = NULL;
		m.iov_count = 0;
	}
	ret = POST(fi_trecvmsg(ep, &m, flags));
	if (ret)
		return ret;
	ret = wait_comp(rxcq, e, NULL, &err);
	return ret == 1 ? 1 : ret == 0 ? -err.err : ret;
}

/* FI_PEEK until the message is there (bounded), with @flags added. */
static int peek_until(uint64_t tag, uint64_t flags, struct fi_context *ctx,
		      struct fi_cq_tagged_entry *e)
{
	uint64_t deadline = now_ms() + WAIT_MS;
	int ret;

	do {
		ret = trecv_flags(tag, FI_PEEK | flags, ctx, e);
	} while (ret == -FI_ENOMSG && now_ms() < deadline);
	return ret;
}

/*
 * fi_tagged(3) FI_DISCARD: B sends an eager, a rendezvous and another
 * eager message; A drops the first two with FI_PEEK | FI_DISCARD (the
 * rendezvous sender must complete: it gets a CTS for 0 bytes), and the
 * third with FI_CLAIM | FI_DISCARD after FI_PEEK | FI_CLAIM.  A second
 * FI_PEEK must then find nothing.
 */
void t_peek_discard(void)
{
	const size_t big = threshold * 4;
	const uint64_t tags[] = { 0xd15c0001, 0xd15c0002, 0xd15c0003 };
	const size_t lens[] = { 64, big, 100 };
	struct fi_cq_tagged_entry e, ctxs[3];
	struct fi_context fctx;
	bool ok = true;
	int i, ret;

	sync_peer();
	if (!server) {
		for (i = 0; i < 3; i++) {
			fill(sbuf, lens[i], tags[i]);
			ret = send_wait(sbuf, lens[i], tags[i]);
			if (i == 0 && ret)
				ok = false;
			if (i == 0)
				continue;
			/* The rendezvous completes once A discarded it. */
			if (ret) {
				ok = false;
				diag("discarded send %d: %s", i,
				     fi_strerror(-ret));
			}
		}
		(void)ctxs;
		result(ok, "peek-discard-send", "a send of a discarded message failed");
		sync_peer();
		return;
	}
	for (i = 0; i < 2; i++) {
		ret = peek_until(tags[i], FI_DISCARD, &fctx, &e);
		if (ret != 1 || e.tag != tags[i] || e.len != lens[i]) {
			ok = false;
			diag("peek|discard %d: ret %d tag %#llx len %zu", i,
			     ret, (unsigned long long)e.tag, e.len);
		}
		ret = trecv_flags(tags[i], FI_PEEK, &fctx, &e);
		if (ret != -FI_ENOMSG) {
			ok = false;
			diag("message %d still there after FI_DISCARD: %d", i,
			     ret);
		}
	}
	result(ok, "peek-discard", "see above");
	ok = true;
	ret = peek_until(tags[2], FI_CLAIM, &fctx, &e);
	if (ret == 1)
		ret = trecv_flags(tags[2], FI_CLAIM | FI_DISCARD, &fctx, &e);
	if (ret != 1 || e.tag != tags[2]) {
		ok = false;
		diag("claim|discard: ret %d", ret);
	}
	if (trecv_flags(tags[2], FI_PEEK, &fctx, &e) != -FI_ENOMSG)
		ok = false;
	result(ok, "claim-discard", "claimed message not discarded");
	sync_peer();
}
