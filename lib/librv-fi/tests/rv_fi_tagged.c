// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv_fi_tagged.c - tagged matching: ignore bits, CQ data and FI_SOURCE,
 * directed receive and cancel, unexpected messages, truncation.
 */
#include "rv_fi_test.h"

/* B sends three tags; A receives them out of order with ignore bits. */
void t_tagged_ignore(void)
{
	static const uint64_t tags[] = { 0x100, 0x201, 0x302 };
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	static const struct { uint64_t tag, ignore, want; } r[] = {
		{ 0x300, 0x00f, 0x302 }, { 0x201, 0, 0x201 },
		{ 0, ~0ull, 0x100 },
	};
	bool ok = true;
	int i, ret;

	sync_peer();
	if (!server) {
		for (i = 0; i < 3; i++) {
			fill(sbuf, 64, tags[i]);
			ok &= send_wait(sbuf, 64, tags[i]) == 0;
		}
		result(ok, "tagged-ignore-send", "send failed");
		sync_peer();
		return;
	}
	sync_peer();	/* all three are unexpected by now (or in flight) */
	for (i = 0; i < 3; i++) {
		memset(rbuf, 0, 64);
		ret = trecv(rbuf, 64, FI_ADDR_UNSPEC, r[i].tag, r[i].ignore,
			    &e);
		if (!ret)
			ret = wait_comp(rxcq, &e, NULL, &err);
		if (ret != 1 || e.tag != r[i].want || e.len != 64 ||
		    check(rbuf, 64, r[i].want) >= 0) {
			ok = false;
			diag("recv %d: ret %d tag %#llx len %zu", i, ret,
			     (unsigned long long)e.tag, e.len);
		}
	}
	result(ok, "tagged-ignore", "wrong match");
}

/* CQ data and FI_SOURCE, eager and rendezvous, and after an AV change. */
void t_data_source(void)
{
	static const size_t sizes[] = { 100, 1 << 20 };
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t src;
	int i, ret;

	for (i = 0; i < 2; i++) {
		uint64_t data = 0xdeadbeefcafe0000ull + i;

		sync_peer();
		if (!server) {
			fill(sbuf, sizes[i], data);
			ret = POST(fi_tsenddata(ep, sbuf, sizes[i], NULL, data,
						peer, 7, &e));
			if (!ret)
				ret = wait_comp(txcq, &e, NULL, &err);
			result(ret == 1, i ? "senddata-rndv" : "senddata-eager",
			       "ret %d", ret);
			continue;
		}
		ret = trecv(rbuf, sizes[i], FI_ADDR_UNSPEC, 7, 0, &e);
		if (!ret)
			ret = wait_comp(rxcq, &e, &src, &err);
		result(ret == 1 && (e.flags & FI_REMOTE_CQ_DATA) &&
		       e.data == data && e.len == sizes[i] &&
		       (e.flags & FI_TAGGED) && (e.flags & FI_RECV) &&
		       check(rbuf, sizes[i], data) < 0,
		       i ? "cq-data-rndv" : "cq-data-eager",
		       "ret %d flags %#llx data %#llx len %zu", ret,
		       (unsigned long long)e.flags,
		       (unsigned long long)e.data, e.len);
		result(ret == 1 && src == peer,
		       i ? "source-rndv" : "source-eager",
		       "src %llu, peer is %llu", (unsigned long long)src,
		       (unsigned long long)peer);
	}

	/* The sender leaves the AV: its messages come FI_ADDR_NOTAVAIL. */
	sync_peer();
	if (!server) {
		result(send_wait(sbuf, 10, 8) == 0, "source-notavail-send",
		       "send failed");
		sync_peer();
		return;
	}
	{
		char name[64];
		size_t len = sizeof(name);

		fi_av_lookup(av, peer, name, &len);
		fi_av_remove(av, &peer, 1, 0);
		ret = trecv(rbuf, 10, FI_ADDR_UNSPEC, 8, 0, &e);
		if (!ret)
			ret = wait_comp(rxcq, &e, &src, &err);
		result(ret == 1 && src == FI_ADDR_NOTAVAIL, "source-notavail",
		       "ret %d src %llu", ret, (unsigned long long)src);
		/* Back in, under a new fi_addr (not reused: TABLE). */
		if (fi_av_insert(av, name, 1, &peer, 0, NULL) != 1)
			die("fi_av_insert", EINVAL);
		diag("peer re-inserted as fi_addr %llu",
		     (unsigned long long)peer);
	}
	sync_peer();
}

/*
 * A receive directed at the made-up address never matches B's message; an
 * undirected one does; cancelling the directed one reports FI_ECANCELED.
 */
void t_directed_cancel(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int ctx_dir, ctx_any, ret;
	ssize_t c;

	sync_peer();
	if (!server) {
		fill(sbuf, 256, 9);
		result(send_wait(sbuf, 256, 9) == 0, "directed-send",
		       "send failed");
		sync_peer();
		return;
	}
	ret = trecv(rbuf + 4096, 256, fake, 9, 0, &ctx_dir);
	ret |= trecv(rbuf, 256, peer, 9, 0, &ctx_any);
	if (!ret)
		ret = wait_comp(rxcq, &e, NULL, &err);
	result(ret == 1 && e.op_context == &ctx_any && check(rbuf, 256, 9) < 0,
	       "directed-recv", "ret %d context %p (want %p)", ret,
	       e.op_context, (void *)&ctx_any);
	c = fi_cancel(&ep->fid, &ctx_dir);
	ret = wait_comp(rxcq, &e, NULL, &err);
	result(c == 0 && ret == 0 && err.err == FI_ECANCELED &&
	       err.op_context == &ctx_dir, "cancel",
	       "fi_cancel %zd, completion %d err %d", c, ret, err.err);
	c = fi_cancel(&ep->fid, &ctx_dir);
	result(c != 0, "cancel-twice", "second fi_cancel returned 0");
	sync_peer();
}

/* B sends eager and rendezvous messages before A posts anything. */
void t_unexpected(void)
{
	static const size_t sizes[] = { 10, 70000, 2000, 3 << 20, 0, 16385 };
	struct fi_cq_tagged_entry e[6];
	struct fi_cq_err_entry err;
	size_t n = 6, i, off;
	bool ok = true;
	int ret;

	sync_peer();
	if (!server) {
		for (i = 0, off = 0; i < n; off += sizes[i++]) {
			fill(sbuf + off, sizes[i], 50 + i);
			ret = tsend(sbuf + off, sizes[i], 0x50, &e[i]);
			ok &= !ret;
		}
		/* Tell A they are all posted, then reap. */
		sync_peer();
		for (i = 0; i < n; i++)
			ok &= wait_comp(txcq, &e[0], NULL, &err) == 1;
		result(ok, "unexpected-send", "a send failed");
		sync_peer();
		return;
	}
	sync_peer();
	/* Let the frames arrive and queue as unexpected. */
	usleep(500000);
	fi_cq_read(rxcq, NULL, 0);
	for (i = 0, off = 0; i < n; off += sizes[i++]) {
		memset(rbuf + off, 0, sizes[i]);
		ret = trecv(rbuf + off, sizes[i], FI_ADDR_UNSPEC, 0x50, 0, &e[i]);
		ok &= !ret;
	}
	for (i = 0; i < n; i++) {
		struct fi_cq_tagged_entry c;

		ret = wait_comp(rxcq, &c, NULL, &err);
		if (ret != 1) {
			ok = false;
			diag("unexpected recv %zu: %d", i, ret);
		}
	}
	for (i = 0, off = 0; i < n; off += sizes[i++]) {
		if (check(rbuf + off, sizes[i], 50 + i) >= 0) {
			ok = false;
			diag("unexpected message %zu (%zu bytes) wrong or out of order",
			     i, sizes[i]);
		}
	}
	result(ok, "unexpected-in-order", "see above");
	sync_peer();
}

/* Truncation: eager and rendezvous, FI_ETRUNC with olen; 0-byte buffer. */
void t_truncation(void)
{
	static const struct { size_t sent, room; } c[] = {
		{ 1000, 100 }, { 1 << 20, 65536 }, { 100000, 0 },
	};
	size_t i;

	for (i = 0; i < 3; i++) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		char name[32];
		int ret;

		snprintf(name, sizeof(name), "truncation-%zu-%zu", c[i].sent,
			 c[i].room);
		sync_peer();
		if (!server) {
			fill(sbuf, c[i].sent, 70 + i);
			ret = send_wait(sbuf, c[i].sent, 70);
			result(ret == 0, name, "send: %d", ret);
			continue;
		}
		memset(rbuf, 0, c[i].room + 1);
		ret = trecv(c[i].room ? rbuf : NULL, c[i].room, peer, 70, 0,
			    &e);
		if (!ret)
			ret = wait_comp(rxcq, &e, NULL, &err);
		result(ret == 0 && err.err == FI_ETRUNC &&
		       err.olen == c[i].sent - c[i].room &&
		       err.op_context == &e && check(rbuf, c[i].room, 70 + i) < 0 &&
		       rbuf[c[i].room] == 0, name,
		       "completion %d err %d olen %zu", ret,
		       ret ? 0 : err.err, ret ? 0 : err.olen);
	}
}
