// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv_fi_test - the libfabric provider "rv" between two nodes, through the
 * libfabric API only (plus rv's read-only DUMP of this process's counters,
 * to check which path a message took).
 *
 *   rv_fi_test -s [-p PORT]            node A (waits for B)
 *   rv_fi_test -c HOST [-p PORT]       node B
 *
 * The two meet over a TCP control connection (PORT, default 18571) that
 * carries the endpoint names and a one-byte barrier between the cases.
 * Both run the same cases in the same order; most send in one direction
 * (B to A) and check on the receiving side.  Output is TAP; exit status 0
 * only if every case passed on this node.
 *
 * Every wait is bounded (WAIT_MS), so a lost message fails the case
 * instead of hanging the run.
 */
#include <pthread.h>

#include "rv_fi_util.h"
/* The wire layout (address, frame header, HELLO) for the hostile peer. */
#include "../src/rvfi.h"

/* ---- the cases ----------------------------------------------------------- */

/* B sends three tags; A receives them out of order with ignore bits. */
static void t_tagged_ignore(void)
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
static void t_data_source(void)
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
static void t_directed_cancel(void)
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

/* Every size both ways, pre-posted receives, all bytes checked. */
static void t_sizes(void)
{
	static const size_t sizes[] = {
		0, 1, 7, 64, 1000, 1024, 4096, 16383, 16384, 16385, 65536,
		100000, 1 << 20, (4 << 20) + 3, 8 << 20, 16 << 20,
	};
	size_t i, dir;

	for (dir = 0; dir < 2; dir++) {
		bool sending = server == (dir == 1);
		bool ok = true;

		sync_peer();
		for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			struct fi_cq_tagged_entry e;
			struct fi_cq_err_entry err;
			uint64_t seed = 1000 + i + dir * 100;
			int ret;

			if (sending) {
				fill(sbuf, sizes[i], seed);
				ret = send_wait(sbuf, sizes[i], seed);
				if (ret) {
					ok = false;
					diag("send %zu: %s", sizes[i],
					     fi_strerror(-ret));
				}
				continue;
			}
			memset(rbuf, 0xee, sizes[i] + 16 < BIG ? sizes[i] + 16 : BIG);
			ret = trecv(rbuf, sizes[i], peer, seed, 0, &e);
			if (!ret)
				ret = wait_comp(rxcq, &e, NULL, &err);
			if (ret != 1 || e.len != sizes[i] ||
			    check(rbuf, sizes[i], seed) >= 0 ||
			    (sizes[i] + 1 < BIG && (uint8_t)rbuf[sizes[i]] != 0xee)) {
				ok = false;
				diag("recv %zu: ret %d len %zu bad byte %ld",
				     sizes[i], ret, ret == 1 ? e.len : 0,
				     check(rbuf, sizes[i], seed));
			}
		}
		result(ok, dir ? "sizes-a-to-b" : "sizes-b-to-a",
		       "a size failed");
	}
}

/* B sends eager and rendezvous messages before A posts anything. */
static void t_unexpected(void)
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
static void t_truncation(void)
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

/*
 * Many messages in flight both ways at once: each side pre-posts its
 * receives, then sends all of its messages, then reaps everything.
 */
static void t_inflight(void)
{
	static struct fi_cq_tagged_entry sctx[NINFLIGHT], rctx[NINFLIGHT];
	size_t slot = (BIG / NINFLIGHT) & ~4095ul, i;
	size_t nsend = 0, nrecv = 0;
	struct fi_cq_err_entry err;
	bool ok = true;
	uint64_t mine = server ? 0x1000 : 0x2000;
	uint64_t theirs = server ? 0x2000 : 0x1000;
	uint64_t t0;

	for (i = 0; i < NINFLIGHT; i++) {
		/* Mostly eager, every 7th a rendezvous. */
		size_t len = i % 7 ? 512 + i : slot - 64;

		memset(rbuf + i * slot, 0, len);
		ok &= !trecv(rbuf + i * slot, slot, peer, theirs + i, 0,
			     &rctx[i]);
	}
	sync_peer();
	for (i = 0; i < NINFLIGHT; i++) {
		size_t len = i % 7 ? 512 + i : slot - 64;

		fill(sbuf + i * slot, len, mine + i);
		ok &= !tsend(sbuf + i * slot, len, mine + i, &sctx[i]);
	}
	t0 = now_ms();
	while (nsend < NINFLIGHT || nrecv < NINFLIGHT) {
		struct fi_cq_tagged_entry e;
		ssize_t n;

		n = fi_cq_read(txcq, &e, 1);
		if (n == 1) {
			nsend++;
		} else if (n == -FI_EAVAIL &&
			   fi_cq_readerr(txcq, &err, 0) == 1) {
			ok = false;
			nsend++;
		}
		n = fi_cq_read(rxcq, &e, 1);
		if (n == 1) {
			i = (struct fi_cq_tagged_entry *)e.op_context - rctx;
			if (i >= NINFLIGHT || e.tag != theirs + i ||
			    check(rbuf + i * slot, e.len, theirs + i) >= 0 ||
			    e.len != (i % 7 ? 512 + i : slot - 64)) {
				ok = false;
				diag("in-flight message %zu bad", i);
			}
			nrecv++;
		} else if (n == -FI_EAVAIL &&
			   fi_cq_readerr(rxcq, &err, 0) == 1) {
			ok = false;
			nrecv++;
		}
		if (now_ms() - t0 > WAIT_MS)
			break;
	}
	result(ok && nsend == NINFLIGHT && nrecv == NINFLIGHT, "inflight-both-ways",
	       "%zu of %d sends, %zu receives", nsend, NINFLIGHT, nrecv);
	sync_peer();
}

/*
 * FI_THREAD_SAFE: one thread posts this side's receives while another
 * posts its sends and this one reaps both CQs, on both nodes at once;
 * every tenth message takes the rendezvous path.
 */
#define NTHR		200
#define TSLOT		65536ul

struct poster {
	bool recv;
	int ret;
};

static struct fi_cq_tagged_entry thr_sctx[NTHR], thr_rctx[NTHR];

static size_t thr_len(size_t i)
{
	return i % 10 == 9 ? 40000 + i : 100 + i;
}

static void *poster(void *arg)
{
	struct poster *p = arg;
	uint64_t mine = server ? 0x3000 : 0x4000;
	uint64_t theirs = server ? 0x4000 : 0x3000;
	size_t i;

	for (i = 0; i < NTHR && !p->ret; i++) {
		if (p->recv) {
			p->ret = trecv(rbuf + i * TSLOT, TSLOT, peer, theirs + i,
				       0, &thr_rctx[i]);
		} else {
			fill(sbuf + i * TSLOT, thr_len(i), mine + i);
			p->ret = tsend(sbuf + i * TSLOT, thr_len(i), mine + i,
				       &thr_sctx[i]);
		}
	}
	return NULL;
}

static void t_threads(void)
{
	struct poster pr = { .recv = true }, ps = { .recv = false };
	uint64_t theirs = server ? 0x4000 : 0x3000, t0;
	size_t nsend = 0, nrecv = 0, i;
	struct fi_cq_err_entry err;
	pthread_t tr, ts;
	bool ok = true;

	memset(rbuf, 0, NTHR * TSLOT);
	sync_peer();
	if (pthread_create(&tr, NULL, poster, &pr) ||
	    pthread_create(&ts, NULL, poster, &ps))
		die("pthread_create", errno);
	t0 = now_ms();
	while ((nsend < NTHR || nrecv < NTHR) && now_ms() - t0 < WAIT_MS) {
		struct fi_cq_tagged_entry e;

		if (fi_cq_read(txcq, &e, 1) == 1) {
			nsend++;
		} else if (fi_cq_readerr(txcq, &err, 0) == 1) {
			ok = false;
			nsend++;
		}
		if (fi_cq_read(rxcq, &e, 1) == 1) {
			i = (struct fi_cq_tagged_entry *)e.op_context - thr_rctx;
			if (i >= NTHR || e.tag != theirs + i ||
			    e.len != thr_len(i) ||
			    check(rbuf + i * TSLOT, e.len, theirs + i) >= 0) {
				ok = false;
				diag("threads: message %zu bad", i);
			}
			nrecv++;
		} else if (fi_cq_readerr(rxcq, &err, 0) == 1) {
			ok = false;
			nrecv++;
		}
	}
	pthread_join(tr, NULL);
	pthread_join(ts, NULL);
	result(ok && !pr.ret && !ps.ret && nsend == NTHR && nrecv == NTHR,
	       "threads", "post %d/%d, %zu sends, %zu receives of %d",
	       pr.ret, ps.ret, nsend, nrecv, NTHR);
	sync_peer();
}

/* Small messages never touch rv; large ones are exactly one write each. */
static void t_rv_counters(void)
{
	uint64_t w0, r0, w1, r1, w2, r2;
	int i, n = 4;
	bool ok = true;

	sync_peer();
	if (!rv_counters(&w0, &r0)) {
		result(false, "rv-counters", "no rv record for this pid");
		sync_peer();
		return;
	}
	for (i = 0; i < 20; i++) {
		if (!server) {
			fill(sbuf, threshold, i);
			ok &= send_wait(sbuf, threshold, 0x77) == 0;
		} else {
			struct fi_cq_tagged_entry e;
			struct fi_cq_err_entry err;

			ok &= trecv(rbuf, threshold, peer, 0x77, 0, &e) == 0 &&
			      wait_comp(rxcq, &e, NULL, &err) == 1;
		}
	}
	sync_peer();
	rv_counters(&w1, &r1);
	result(ok && w1 == w0 && r1 == r0, "eager-not-over-rv",
	       "writes %llu -> %llu, recvs %llu -> %llu",
	       (unsigned long long)w0, (unsigned long long)w1,
	       (unsigned long long)r0, (unsigned long long)r1);
	for (i = 0; i < n; i++) {
		if (!server) {
			fill(sbuf, threshold + 1, i);
			ok &= send_wait(sbuf, 2 << 20, 0x78) == 0;
		} else {
			struct fi_cq_tagged_entry e;
			struct fi_cq_err_entry err;

			ok &= trecv(rbuf, 2 << 20, peer, 0x78, 0, &e) == 0 &&
			      wait_comp(rxcq, &e, NULL, &err) == 1;
		}
	}
	sync_peer();
	rv_counters(&w2, &r2);
	/*
	 * Pipelined: a 2 MiB message goes in several writes (one per QP of
	 * the connection, 4 by default; at least 2), and each write the
	 * sender posted is one RECV on the receiver.
	 */
	{
		uint64_t mine_w = w2 - w1, mine_r = r2 - r1, peer_w, peer_r;

		ctl_write(&mine_w, sizeof(mine_w));
		ctl_write(&mine_r, sizeof(mine_r));
		ctl_read(&peer_w, sizeof(peer_w));
		ctl_read(&peer_r, sizeof(peer_r));
		if (server)
			result(ok && mine_r >= 2 * (uint64_t)n &&
			       mine_r == peer_w && mine_w == 0,
			       "rndv-over-rv-recvs",
			       "recvs +%llu (want >= %d and the sender's %llu writes), writes +%llu",
			       (unsigned long long)mine_r, 2 * n,
			       (unsigned long long)peer_w,
			       (unsigned long long)mine_w);
		else
			result(ok && mine_w >= 2 * (uint64_t)n &&
			       mine_w == peer_r && mine_r == 0,
			       "rndv-over-rv-writes",
			       "writes +%llu (want >= %d and the receiver's %llu RECVs), recvs +%llu",
			       (unsigned long long)mine_w, 2 * n,
			       (unsigned long long)peer_r,
			       (unsigned long long)mine_r);
	}
	diag("rv counters of this process: %llu writes posted, %llu received",
	     (unsigned long long)w2, (unsigned long long)r2);
}

/* fi_tinject (no completion), FI_PEEK, iov limit, unknown option. */
static void t_misc(void)
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

/* ---- a hostile peer ------------------------------------------------------ */

#define HOSTILE_MS	10000	/* a refusal closes the connection before */
#define KEPT_MS		1500	/* an accepted connection stays this long */

static struct rvfi_addr name_addr(const char *name)
{
	struct rvfi_addr a;

	memcpy(&a, name, sizeof(a));
	return a;
}

/* A raw TCP connection to A's endpoint, from our RDMA address. */
static int raw_connect(void)
{
	struct rvfi_addr to = name_addr(peer_name), me = name_addr(self_name);
	struct sockaddr_in src = { .sin_family = AF_INET,
				   .sin_addr.s_addr = me.ip };
	struct sockaddr_in dst = { .sin_family = AF_INET,
				   .sin_addr.s_addr = to.ip,
				   .sin_port = to.port };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		die("socket", errno);
	if (bind(fd, (struct sockaddr *)&src, sizeof(src)) ||
	    connect(fd, (struct sockaddr *)&dst, sizeof(dst)))
		die("raw connect", errno);
	return fd;
}

static void raw_bytes(int fd, const void *p, size_t n)
{
	size_t off = 0;

	while (off < n) {
		ssize_t r = send(fd, (const char *)p + off, n - off,
				 MSG_NOSIGNAL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return;	/* closed already: raw_closed() sees it */
		off += r;
	}
}

/* One frame: @h (host order) and @plen bytes of @payload, if any. */
static void raw_frame(int fd, const struct rvfi_hdr *h, const void *payload,
		      size_t plen)
{
	struct rvfi_hdr w = *h;
	char buf[sizeof(w) + 256];

	if (plen > 256)
		die("raw frame", EINVAL);
	w.token = htole32(h->token);
	w.len = htole64(h->len);
	w.nkeys = htole32(h->nkeys);
	memcpy(buf, &w, sizeof(w));
	if (plen)
		memcpy(buf + sizeof(w), payload, plen);
	raw_bytes(fd, buf, sizeof(w) + plen);
}

static void raw_hello(int fd, const struct rvfi_hello *m, size_t len)
{
	struct rvfi_hdr h = { .op = RVFI_OP_HELLO, .len = len };

	raw_frame(fd, &h, m, len);
}

/*
 * Waits up to @ms for the other end to close @fd: 1 closed without a
 * byte written to us, 0 still open, -1 it wrote something (a reply).
 */
static int raw_closed(int fd, int ms)
{
	uint64_t deadline = now_ms() + ms;

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN | POLLRDHUP };
		int64_t left = deadline - now_ms();
		ssize_t r;
		char c;

		if (left <= 0)
			return 0;
		if (poll(&pfd, 1, left) <= 0)
			continue;
		r = recv(fd, &c, 1, MSG_DONTWAIT);
		if (r > 0)
			return -1;
		if (r == 0 || (errno != EAGAIN && errno != EINTR))
			return 1;
	}
}

static void expect(int fd, int ms, int want, const char *name)
{
	int got = raw_closed(fd, ms);

	result(got == want, name, "%s", got == 1 ? "closed" :
	       got ? "the endpoint replied" : "still open");
}

/*
 * A HELLO from a made-up endpoint of our node (not our real one, so that
 * nothing it sends can be taken for our endpoint's), for A's endpoint.
 */
static struct rvfi_hello forged_hello(void)
{
	struct rvfi_hello m;

	m.from = name_addr(self_name);
	m.from.port = htons(1);
	m.from.nonce ^= 0x5a5a5a5a5a5a5a5aull;
	m.to_nonce = name_addr(peer_name).nonce;
	return m;
}

/*
 * B, speaking raw TCP to A's live endpoint, sends what the provider must
 * refuse: each connection is closed without a reply (and logged by A,
 * which fabric.sh checks), no claimed length is allocated (a 512 MiB
 * frame header alone must close the connection), and a valid HELLO is
 * not refused.  A meanwhile only progresses; afterwards both endpoints
 * still carry eager and rendezvous messages both ways.
 */
static void t_hostile(void)
{
	static const size_t sizes[] = { 1000, 1 << 20 };
	struct rvfi_hello m;
	struct rvfi_hdr h;
	size_t i, dir;
	int fd;

	sync_peer();
	if (!server) {
		fd = raw_connect();
		m = forged_hello();
		m.to_nonce ^= 1;
		raw_hello(fd, &m, sizeof(m));
		expect(fd, HOSTILE_MS, 1, "refuse-hello-wrong-nonce");
		close(fd);

		/*
		 * No nonce (0: sent to a bare address), but A's endpoint
		 * is not published (its port was not chosen): refused.
		 */
		fd = raw_connect();
		m = forged_hello();
		m.to_nonce = 0;
		raw_hello(fd, &m, sizeof(m));
		expect(fd, HOSTILE_MS, 1, "refuse-hello-bare-unpublished");
		close(fd);

		/* An address-only HELLO (no target nonce, older layout). */
		fd = raw_connect();
		m = forged_hello();
		m.from.version = 1;
		m.from.len = 0;
		raw_hello(fd, &m, sizeof(m.from));
		expect(fd, HOSTILE_MS, 1, "refuse-hello-no-nonce");
		close(fd);

		/* The right nonce, but claiming to be on A's node. */
		fd = raw_connect();
		m = forged_hello();
		m.from.ip = name_addr(peer_name).ip;
		raw_hello(fd, &m, sizeof(m));
		expect(fd, HOSTILE_MS, 1, "refuse-hello-wrong-source");
		close(fd);

		fd = raw_connect();
		memset(&h, 0, sizeof(h));
		h.op = RVFI_OP_EAGER;
		h.len = 16;
		raw_frame(fd, &h, sbuf, 16);
		expect(fd, HOSTILE_MS, 1, "refuse-no-hello");
		close(fd);

		fd = raw_connect();
		memset(&h, 0, sizeof(h));
		h.op = RVFI_OP_HELLO;
		h.len = 512u << 20;
		raw_frame(fd, &h, NULL, 0);
		expect(fd, HOSTILE_MS, 1, "refuse-hello-oversized");
		close(fd);

		/*
		 * Admitted (its HELLO in two pieces: the header alone must
		 * not be taken for a whole frame); a stale RDATA is
		 * dropped; then too much.
		 */
		fd = raw_connect();
		m = forged_hello();
		memset(&h, 0, sizeof(h));
		h.op = RVFI_OP_HELLO;
		h.len = sizeof(m);
		raw_frame(fd, &h, NULL, 0);
		usleep(200000);
		raw_bytes(fd, &m, sizeof(m));
		expect(fd, KEPT_MS, 0, "accept-hello-valid");
		memset(&h, 0, sizeof(h));
		h.op = RVFI_OP_RDATA;
		h.token = 0x1234;
		h.len = 200;
		raw_frame(fd, &h, sbuf, 200);
		expect(fd, KEPT_MS, 0, "accept-rdata-stale");
		h.op = RVFI_OP_EAGER;
		h.len = 512u << 20;
		raw_frame(fd, &h, NULL, 0);
		expect(fd, HOSTILE_MS, 1, "refuse-eager-oversized");
		close(fd);

		fd = raw_connect();
		raw_hello(fd, &m, sizeof(m));
		memset(&h, 0, sizeof(h));
		h.op = RVFI_OP_RDATA;
		h.token = 0x1234;
		h.len = 2ull << 30;
		raw_frame(fd, &h, NULL, 0);
		expect(fd, HOSTILE_MS, 1, "refuse-rdata-oversized");
		close(fd);
	}
	sync_peer();	/* A progressed all along, in sync_peer() */

	for (dir = 0; dir < 2; dir++) {
		bool sending = server == (dir == 1);
		bool ok = true;

		for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			struct fi_cq_tagged_entry e;
			struct fi_cq_err_entry err;
			uint64_t seed = 4400 + i + dir * 10;
			int ret;

			if (sending) {
				fill(sbuf, sizes[i], seed);
				ok &= send_wait(sbuf, sizes[i], seed) == 0;
				continue;
			}
			ret = trecv(rbuf, sizes[i], peer, seed, 0, &e);
			if (!ret)
				ret = wait_comp(rxcq, &e, NULL, &err);
			if (ret != 1 || e.len != sizes[i] ||
			    check(rbuf, sizes[i], seed) >= 0) {
				ok = false;
				diag("recv %zu after the hostile peer: ret %d",
				     sizes[i], ret);
			}
		}
		result(ok, dir ? "after-hostile-a-to-b" : "after-hostile-b-to-a",
		       "a message failed");
		sync_peer();
	}
}

/* ---- two endpoints of one node ------------------------------------------- */

/*
 * A second endpoint of this process: a peer on the same node, which rv
 * does not connect to.  Small messages are eager, large ones take the
 * rendezvous with the data over TCP (bounded by the receive: a larger
 * message is truncated, not buffered), and rv carries nothing.
 */
static void t_local(void)
{
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED,
				  .wait_obj = FI_WAIT_NONE };
	struct fi_av_attr ava = { .type = FI_AV_TABLE };
	static const size_t sizes[] = { 1000, (3 << 20) + 3 };
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct fid_ep *ep2 = NULL;
	struct fid_av *av2 = NULL;
	struct fid_cq *cq2 = NULL;
	fi_addr_t to2, to1;
	char name2[64];
	size_t len = sizeof(name2), i;
	uint64_t w0 = 0, r0 = 0, w1 = 0, r1 = 0;
	bool ok = true, counted;
	int ret;

	sync_peer();
	counted = rv_counters(&w0, &r0);
	if ((ret = fi_av_open(domain, &ava, &av2, NULL)) ||
	    (ret = fi_cq_open(domain, &cqa, &cq2, NULL)) ||
	    (ret = fi_endpoint(domain, info, &ep2, NULL)) ||
	    (ret = fi_ep_bind(ep2, &av2->fid, 0)) ||
	    (ret = fi_ep_bind(ep2, &cq2->fid, FI_TRANSMIT | FI_RECV)) ||
	    (ret = fi_enable(ep2)) ||
	    (ret = fi_getname(&ep2->fid, name2, &len))) {
		result(false, "local-setup", "%s", fi_strerror(-ret));
		goto out;
	}
	if (fi_av_insert(av, name2, 1, &to2, 0, NULL) != 1 ||
	    fi_av_insert(av2, self_name, 1, &to1, 0, NULL) != 1) {
		result(false, "local-setup", "fi_av_insert");
		goto out;
	}
	/* ep2 -> ep, both sizes; then 3 MiB into a 1 MiB receive. */
	for (i = 0; i < 3; i++) {
		size_t n = i < 2 ? sizes[i] : sizes[1];
		size_t room = i < 2 ? n : 1 << 20;

		fill(sbuf, n, 5500 + i);
		memset(rbuf, 0xee, room + 1);
		ret = POST(fi_trecv(ep, rbuf, room, NULL, to2, 5500 + i, 0, &e));
		if (!ret)
			ret = POST(fi_tsend(ep2, sbuf, n, NULL, to1, 5500 + i,
					    &err));
		if (ret) {
			ok = false;
			diag("local post %zu: %s", n, fi_strerror(-ret));
			break;
		}
		ret = wait_comp(cq2, &e, NULL, &err);
		if (ret != 1) {
			ok = false;
			diag("local send %zu: ret %d", n, ret);
		}
		ret = wait_comp(rxcq, &e, NULL, &err);
		if (i < 2 && (ret != 1 || e.len != n ||
			      check(rbuf, n, 5500 + i) >= 0 ||
			      (uint8_t)rbuf[n] != 0xee)) {
			ok = false;
			diag("local recv %zu: ret %d", n, ret);
		}
		if (i == 2 && (ret != 0 || err.err != FI_ETRUNC ||
			       err.olen != n - room ||
			       check(rbuf, room, 5500 + i) >= 0 ||
			       (uint8_t)rbuf[room] != 0xee)) {
			ok = false;
			diag("local truncated recv: ret %d err %d olen %zu",
			     ret, ret ? 0 : err.err, ret ? 0 : err.olen);
		}
	}
	result(ok, "local-eager-rndv-trunc", "see above");
	if (counted) {
		rv_counters(&w1, &r1);
		result(w1 == w0 && r1 == r0, "local-not-over-rv",
		       "writes %llu -> %llu, recvs %llu -> %llu",
		       (unsigned long long)w0, (unsigned long long)w1,
		       (unsigned long long)r0, (unsigned long long)r1);
	}
out:
	if (ep2)
		fi_close(&ep2->fid);
	if (av2)
		fi_close(&av2->fid);
	if (cq2)
		fi_close(&cq2->fid);
	sync_peer();
}

/* ---- addressing and FI_MULTI_RECV (issue 20) ---------------------------- */

#define PUB_PORT	"18573"

static void ip_str(const char *name, char *buf)
{
	struct rvfi_addr a = name_addr(name);

	inet_ntop(AF_INET, &a.ip, buf, INET_ADDRSTRLEN);
}

static struct fi_info *addr_hints(uint32_t format, uint64_t caps)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		die("fi_allocinfo", ENOMEM);
	h->ep_attr->type = FI_EP_RDM;
	h->caps = caps;
	h->addr_format = format;
	h->fabric_attr->prov_name = strdup("rv");
	return h;
}

/*
 * fi_getinfo's node/service: with FI_SOURCE they are the source (our own
 * node), else the destination; FI_SOCKADDR_IN or the provider's format;
 * formats and sources the provider cannot take are FI_ENODATA.  Each node
 * checks on its own.
 */
static void t_getinfo_addr(void)
{
	char me[INET_ADDRSTRLEN], him[INET_ADDRSTRLEN];
	struct fi_info *h, *fi = NULL;
	const struct sockaddr_in *sin;
	const struct rvfi_addr *ra;
	struct rvfi_addr self = name_addr(self_name);
	int ret;

	sync_peer();
	ip_str(self_name, me);
	ip_str(peer_name, him);

	h = addr_hints(FI_SOCKADDR_IN, FI_MSG);
	ret = fi_getinfo(FI_VERSION(1, 17), me, "18574", FI_SOURCE, h, &fi);
	sin = fi ? fi->src_addr : NULL;
	result(!ret && fi->addr_format == FI_SOCKADDR_IN &&
	       fi->src_addrlen == sizeof(*sin) && sin &&
	       sin->sin_family == AF_INET && sin->sin_port == htons(18574) &&
	       sin->sin_addr.s_addr == self.ip && !fi->dest_addr,
	       "getinfo-source-sockaddr-in", "ret %d format %u srclen %zu",
	       ret, fi ? fi->addr_format : 0, fi ? fi->src_addrlen : 0);
	fi_freeinfo(fi);
	fi = NULL;

	ret = fi_getinfo(FI_VERSION(1, 17), him, "18575", 0, h, &fi);
	sin = fi ? fi->dest_addr : NULL;
	result(!ret && fi->dest_addrlen == sizeof(*sin) && sin &&
	       sin->sin_port == htons(18575) &&
	       sin->sin_addr.s_addr == name_addr(peer_name).ip &&
	       fi->src_addrlen == sizeof(*sin),
	       "getinfo-dest-sockaddr-in", "ret %d destlen %zu", ret,
	       fi ? fi->dest_addrlen : 0);
	fi_freeinfo(fi);
	fi = NULL;
	fi_freeinfo(h);

	/* The provider's format: a bare address (no nonce). */
	h = addr_hints(FI_FORMAT_UNSPEC, FI_MSG);
	ret = fi_getinfo(FI_VERSION(1, 17), him, "18575", 0, h, &fi);
	ra = fi ? fi->dest_addr : NULL;
	result(!ret && fi->dest_addrlen == sizeof(*ra) && ra &&
	       rvfi_addr_valid(ra) && rvfi_addr_bare(ra) &&
	       ra->port == htons(18575) &&
	       ra->ip == name_addr(peer_name).ip && fi->src_addr,
	       "getinfo-dest-provider", "ret %d destlen %zu", ret,
	       fi ? fi->dest_addrlen : 0);
	fi_freeinfo(fi);
	fi = NULL;
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, "18576", FI_SOURCE, h, &fi);
	ra = fi ? fi->src_addr : NULL;
	result(!ret && ra && fi->src_addrlen == sizeof(*ra) &&
	       ra->port == htons(18576) && ra->ip == self.ip &&
	       !fi->dest_addr, "getinfo-service-only-source", "ret %d", ret);
	fi_freeinfo(fi);
	fi = NULL;
	/* Another node's address is no source of ours. */
	ret = fi_getinfo(FI_VERSION(1, 17), him, NULL, FI_SOURCE, h, &fi);
	result(ret == -FI_ENODATA, "getinfo-foreign-source-enodata",
	       "ret %d", ret);
	fi_freeinfo(fi);
	fi = NULL;
	fi_freeinfo(h);

	h = addr_hints(FI_SOCKADDR_IN6, FI_MSG);
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &fi);
	fi_freeinfo(h);
	fi_freeinfo(fi);
	fi = NULL;
	h = addr_hints(FI_ADDR_STR, FI_MSG);
	result(ret == -FI_ENODATA &&
	       fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &fi) ==
	       -FI_ENODATA, "getinfo-bad-format-enodata", "ret %d", ret);
	fi_freeinfo(h);
	fi_freeinfo(fi);
}

/* A's second endpoint, published on PUB_PORT, with FI_MULTI_RECV. */
static struct fid_ep *pub_ep;
static struct fid_av *pub_av;
static struct fid_cq *pub_cq;
static struct fi_info *pub_info;

static void open_published(void)
{
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED,
				  .wait_obj = FI_WAIT_NONE };
	struct fi_av_attr ava = { .type = FI_AV_TABLE };
	struct fi_info *h = addr_hints(FI_FORMAT_UNSPEC,
				       FI_MSG | FI_MULTI_RECV | FI_SOURCE);
	int ret;

	ret = fi_getinfo(FI_VERSION(1, 17), NULL, PUB_PORT, FI_SOURCE, h,
			 &pub_info);
	fi_freeinfo(h);
	if (ret)
		die("fi_getinfo(FI_SOURCE)", ret);
	if ((ret = fi_av_open(domain, &ava, &pub_av, NULL)) ||
	    (ret = fi_cq_open(domain, &cqa, &pub_cq, NULL)) ||
	    (ret = fi_endpoint(domain, pub_info, &pub_ep, NULL)) ||
	    (ret = fi_ep_bind(pub_ep, &pub_av->fid, 0)) ||
	    (ret = fi_ep_bind(pub_ep, &pub_cq->fid, FI_TRANSMIT | FI_RECV)) ||
	    (ret = fi_enable(pub_ep)))
		die("published endpoint", ret);
}

static void close_published(void)
{
	fi_close(&pub_ep->fid);
	fi_close(&pub_av->fid);
	fi_close(&pub_cq->fid);
	fi_freeinfo(pub_info);
}

/* B: A's published endpoint, from fi_getinfo(A's node, PUB_PORT). */
static fi_addr_t bare_peer(void)
{
	char him[INET_ADDRSTRLEN];
	struct fi_info *h = addr_hints(FI_SOCKADDR_IN, FI_MSG), *fi = NULL;
	fi_addr_t a = FI_ADDR_NOTAVAIL;
	int ret;

	ip_str(peer_name, him);
	ret = fi_getinfo(FI_VERSION(1, 17), him, PUB_PORT, 0, h, &fi);
	fi_freeinfo(h);
	if (ret || !fi->dest_addr)
		die("fi_getinfo(node, service)", ret ? ret : EINVAL);
	if (fi_av_insert(av, fi->dest_addr, 1, &a, 0, NULL) != 1)
		die("fi_av_insert(sockaddr_in)", EINVAL);
	fi_freeinfo(fi);
	return a;
}

static int msend_wait(const void *buf, size_t len, fi_addr_t to)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int ret = POST(fi_send(ep, buf, len, NULL, to, &e));

	if (!ret)
		ret = wait_comp(txcq, &e, NULL, &err);
	return ret == 1 ? 0 : -1;
}

/*
 * In-band addressing as fabtests does it: B knows only A's node and the
 * published port (a bare sockaddr_in address), sends its own fi_getname
 * there; A inserts it and answers; the answer's FI_SOURCE is B's bare
 * fi_addr, and a rendezvous to the bare address (which needs A's slot,
 * learnt from A's HELLO) arrives intact.
 */
static void t_inband(fi_addr_t bare)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t src = FI_ADDR_NOTAVAIL, b = FI_ADDR_NOTAVAIL;
	size_t big = 1 << 20;
	int ret;

	sync_peer();
	if (!server) {
		result(msend_wait(self_name, name_len, bare) == 0,
		       "inband-send-to-bare", "send failed");
		ret = POST(fi_recv(ep, rbuf, 64, NULL, FI_ADDR_UNSPEC, &e));
		if (!ret)
			ret = wait_comp(rxcq, &e, &src, &err);
		result(ret == 1 && e.len == 8 && check(rbuf, 8, 77) < 0 &&
		       src == bare, "inband-reply-source-bare",
		       "ret %d len %zu src %llu bare %llu", ret,
		       ret == 1 ? e.len : 0, (unsigned long long)src,
		       (unsigned long long)bare);
		fill(sbuf, big, 78);
		result(msend_wait(sbuf, big, bare) == 0, "inband-rndv-send",
		       "send failed");
		sync_peer();
		return;
	}
	memset(rbuf, 0, 64);
	ret = POST(fi_recv(pub_ep, rbuf, 64, NULL, FI_ADDR_UNSPEC, &e));
	if (!ret)
		ret = wait_comp(pub_cq, &e, &src, &err);
	if (ret == 1 && e.len == name_len &&
	    fi_av_insert(pub_av, rbuf, 1, &b, 0, NULL) == 1) {
		fill(sbuf, 8, 77);
		ret = POST(fi_send(pub_ep, sbuf, 8, NULL, b, &e));
		if (!ret)
			ret = wait_comp(pub_cq, &e, NULL, &err);
	} else {
		ret = -1;
	}
	result(ret == 1, "inband-exchange", "ret %d", ret);
	memset(rbuf, 0, big);
	ret = POST(fi_recv(pub_ep, rbuf, big, NULL, FI_ADDR_UNSPEC, &e));
	if (!ret)
		ret = wait_comp(pub_cq, &e, &src, &err);
	result(ret == 1 && e.len == big && check(rbuf, big, 78) < 0 &&
	       src == b, "inband-rndv", "ret %d src %llu", ret,
	       (unsigned long long)src);
	sync_peer();
}

/*
 * FI_MULTI_RECV on A's published endpoint: one buffer takes eager and
 * rendezvous messages at successive offsets until fewer than
 * FI_OPT_MIN_MULTI_RECV bytes are left; only the completion that releases
 * it (the last) carries FI_MULTI_RECV.  Then messages already waiting
 * when the buffer is posted, one left over for the next receive.
 */
static void t_multi_recv(fi_addr_t bare)
{
	static const size_t sz[] = { 1000, 1000, 65536, 1000, 1000 };
	const size_t n = sizeof(sz) / sizeof(sz[0]);
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct fi_context mctx;
	struct iovec iov;
	struct fi_msg m = { .msg_iov = &iov, .iov_count = 1,
			    .addr = FI_ADDR_UNSPEC, .context = &mctx };
	size_t min = 1000, got, off, i, total = 500, flagged, seen;
	bool ok = true;
	int ret;

	for (i = 0; i < n; i++)
		total += sz[i];
	sync_peer();
	if (!server) {
		sync_peer();	/* A's buffer is posted */
		for (i = 0; i < n; i++) {
			fill(sbuf, sz[i], 900 + i);
			ok &= msend_wait(sbuf, sz[i], bare) == 0;
		}
		for (i = 0; i < 3; i++) {
			fill(sbuf, 1000, 950 + i);
			ok &= msend_wait(sbuf, 1000, bare) == 0;
		}
		result(ok, "multi-recv-send", "send failed");
		sync_peer();
		sync_peer();
		return;
	}
	got = sizeof(min);
	ret = fi_setopt(&pub_ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
			&min, sizeof(min));
	if (!ret)
		ret = fi_getopt(&pub_ep->fid, FI_OPT_ENDPOINT,
				FI_OPT_MIN_MULTI_RECV, &min, &got);
	result(!ret && min == 1000, "multi-recv-min-opt", "ret %d min %zu",
	       ret, min);
	memset(rbuf, 0, total);
	iov.iov_base = rbuf;
	iov.iov_len = total;
	ret = POST(fi_recvmsg(pub_ep, &m, FI_MULTI_RECV));
	if (ret)
		diag("fi_recvmsg(FI_MULTI_RECV): %d", ret);
	sync_peer();
	/*
	 * The rendezvous may complete after the eager messages behind it:
	 * each completion is checked against the message at its offset.
	 */
	flagged = 0;
	seen = 0;
	for (i = 0; i < n && !ret; i++) {
		size_t j;

		ret = wait_comp(pub_cq, &e, NULL, &err);
		if (ret != 1) {
			ok = false;
			diag("completion %zu: ret %d err %d", i, ret,
			     ret ? 0 : err.err);
			break;
		}
		for (j = 0, off = 0; j < n && rbuf + off != e.buf; j++)
			off += sz[j];
		if (j == n || (seen & (1u << j)) || e.op_context != &mctx ||
		    e.len != sz[j] || !(e.flags & FI_RECV) ||
		    !(e.flags & FI_MSG) || check(e.buf, sz[j], 900 + j) >= 0) {
			ok = false;
			diag("completion %zu: buf +%td (message %zu) len %zu flags %#llx",
			     i, (char *)e.buf - rbuf, j, e.len,
			     (unsigned long long)e.flags);
		}
		if (j < n)
			seen |= 1u << j;
		if (e.flags & FI_MULTI_RECV)
			flagged |= 1u << i;
		ret = 0;
	}
	result(ok && !ret && seen == (1u << n) - 1, "multi-recv-fill",
	       "messages seen %#zx", seen);
	result(flagged == 1u << (n - 1), "multi-recv-last-flag",
	       "FI_MULTI_RECV on completions %#zx", flagged);

	/* Three 1000-byte messages wait; a 2500-byte buffer takes two. */
	sync_peer();
	sync_peer();
	iov.iov_len = 2500;
	ok = true;
	flagged = 0;
	ret = POST(fi_recvmsg(pub_ep, &m, FI_MULTI_RECV));
	for (i = 0; i < 2 && !ret; i++) {
		ret = wait_comp(pub_cq, &e, NULL, &err);
		if (ret != 1 || e.buf != rbuf + 1000 * i || e.len != 1000 ||
		    check(e.buf, 1000, 950 + i) >= 0)
			ok = false;
		if (ret == 1 && (e.flags & FI_MULTI_RECV))
			flagged |= 1u << i;
		ret = ret == 1 ? 0 : -1;
	}
	if (!ret) {
		ret = POST(fi_recv(pub_ep, rbuf + 4096, 1000, NULL,
				   FI_ADDR_UNSPEC, &e));
		if (!ret)
			ret = wait_comp(pub_cq, &e, NULL, &err);
		ok &= ret == 1 && !(e.flags & FI_MULTI_RECV) &&
		      check(rbuf + 4096, 1000, 952) < 0;
	}
	result(ok && flagged == 2, "multi-recv-unexpected",
	       "ret %d flagged %#zx", ret, flagged);
}

static void t_addressing(void)
{
	fi_addr_t bare = FI_ADDR_NOTAVAIL;

	t_getinfo_addr();
	if (server)
		open_published();
	sync_peer();
	if (!server)
		bare = bare_peer();
	t_inband(bare);
	t_multi_recv(bare);
	sync_peer();
	if (server)
		close_published();
}

/* ---- completion levels, CQ size, FI_DISCARD, ep close (issue 20) --------- */

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
static void t_peek_discard(void)
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

/* A receives @n tags from @t0 on, in any order; true if all came. */
static bool recv_tags(uint64_t t0, int n)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	bool ok = true;
	int i;

	for (i = 0; i < n; i++) {
		if (trecv(rbuf, 64, FI_ADDR_UNSPEC, t0 + i, 0, &e) ||
		    wait_comp(rxcq, &e, NULL, &err) != 1 || e.tag != t0 + i) {
			diag("receive of tag %#llx failed",
			     (unsigned long long)(t0 + i));
			ok = false;
		}
	}
	return ok;
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
static void t_complete_levels(void)
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
static void t_levels_info(void)
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

/* Reads up to @max entries of @cq (bounded); entries read, or -err. */
static int drain(struct fid_cq *cq, int max, int ms, ssize_t *last)
{
	struct fi_cq_tagged_entry e;
	uint64_t end = now_ms() + ms;
	int n = 0;

	*last = -FI_EAGAIN;
	while (n < max && now_ms() < end) {
		*last = fi_cq_read(cq, &e, 1);
		if (*last == 1)
			n++;
		else if (*last != -FI_EAGAIN)
			break;
	}
	return n;
}

/*
 * CQ size (local, ep2 -> ep on this node): under FI_RM_ENABLED a CQ of 4
 * takes 4 operations, the 5th post gets -FI_EAGAIN until the CQ is read,
 * sends and receives alike; nothing is lost.  Under FI_RM_DISABLED the
 * 5th and 6th completions overrun the CQ: 4 entries are read, then
 * -FI_EOVERRUN.
 */
static void t_cq_limits(void)
{
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED,
				  .wait_obj = FI_WAIT_NONE, .size = 4 };
	struct fi_av_attr ava = { .type = FI_AV_TABLE };
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct fi_context ctx[6];
	struct fid_ep *ep2 = NULL, *ep3 = NULL;
	struct fid_av *av2 = NULL, *av3 = NULL;
	struct fid_cq *tx2 = NULL, *rx2 = NULL, *cq3 = NULL;
	struct fid_domain *dom3 = NULL;
	struct fi_info *i3 = NULL;
	fi_addr_t to1, to1b;
	ssize_t last;
	bool ok = true;
	int i, n, ret;

	sync_peer();
	if ((ret = fi_av_open(domain, &ava, &av2, NULL)) ||
	    (ret = fi_cq_open(domain, &cqa, &tx2, NULL)) ||
	    (ret = fi_cq_open(domain, &cqa, &rx2, NULL)) ||
	    (ret = fi_endpoint(domain, info, &ep2, NULL)) ||
	    (ret = fi_ep_bind(ep2, &av2->fid, 0)) ||
	    (ret = fi_ep_bind(ep2, &tx2->fid, FI_TRANSMIT)) ||
	    (ret = fi_ep_bind(ep2, &rx2->fid, FI_RECV)) ||
	    (ret = fi_enable(ep2)) ||
	    (ret = fi_av_insert(av2, self_name, 1, &to1, 0, NULL)) != 1) {
		result(false, "cq-size-setup", "%s", fi_strerror(-ret));
		goto out;
	}
	/* sends */
	for (i = 0; i < 5; i++) {
		ret = fi_tsend(ep2, sbuf, 64, NULL, to1, 0xc9000 + i, &ctx[i]);
		if (ret != (i < 4 ? 0 : -FI_EAGAIN)) {
			ok = false;
			diag("send %d into a CQ of 4: %s", i, fi_strerror(-ret));
		}
	}
	n = drain(tx2, 4, WAIT_MS, &last);
	if (n != 4) {
		ok = false;
		diag("%d of 4 send completions", n);
	}
	ret = POST(fi_tsend(ep2, sbuf, 64, NULL, to1, 0xc9004, &ctx[4]));
	if (ret || drain(tx2, 1, WAIT_MS, &last) != 1)
		ok = false;
	ok &= recv_tags(0xc9000, 5);
	result(ok, "cq-size-send-eagain", "see above");
	/* receives: 4 posted, the 5th refused; cancels fill the CQ */
	ok = true;
	for (i = 0; i < 5; i++) {
		ret = fi_trecv(ep2, rbuf, 64, NULL, FI_ADDR_UNSPEC,
			       0xc9100 + i, 0, &ctx[i]);
		if (ret != (i < 4 ? 0 : -FI_EAGAIN)) {
			ok = false;
			diag("recv %d into a CQ of 4: %s", i, fi_strerror(-ret));
		}
	}
	for (i = 0; i < 4; i++) {
		if (fi_cancel(&ep2->fid, &ctx[i]) ||
		    wait_comp(rx2, &e, NULL, &err) != 0 ||
		    err.err != FI_ECANCELED) {
			ok = false;
			diag("cancel %d", i);
		}
	}
	ret = fi_trecv(ep2, rbuf, 64, NULL, FI_ADDR_UNSPEC, 0xc9104, 0,
		       &ctx[4]);
	if (ret || fi_cancel(&ep2->fid, &ctx[4]) ||
	    wait_comp(rx2, &e, NULL, &err) != 0)
		ok = false;
	result(ok, "cq-size-recv-eagain", "see above");

	/* FI_RM_DISABLED: the overrun is reported, not silent */
	ok = true;
	i3 = fi_dupinfo(info);
	i3->domain_attr->resource_mgmt = FI_RM_DISABLED;
	if ((ret = fi_domain(fabric, i3, &dom3, NULL)) ||
	    (ret = fi_av_open(dom3, &ava, &av3, NULL)) ||
	    (ret = fi_cq_open(dom3, &cqa, &cq3, NULL)) ||
	    (ret = fi_endpoint(dom3, i3, &ep3, NULL)) ||
	    (ret = fi_ep_bind(ep3, &av3->fid, 0)) ||
	    (ret = fi_ep_bind(ep3, &cq3->fid, FI_TRANSMIT | FI_RECV)) ||
	    (ret = fi_enable(ep3)) ||
	    (ret = fi_av_insert(av3, self_name, 1, &to1b, 0, NULL)) != 1) {
		result(false, "cq-overrun-setup", "%s", fi_strerror(-ret));
		goto out;
	}
	for (i = 0; i < 6; i++) {
		ret = fi_tsend(ep3, sbuf, 64, NULL, to1b, 0xc9200 + i, &ctx[i]);
		if (ret) {
			ok = false;
			diag("send %d under FI_RM_DISABLED: %s", i,
			     fi_strerror(-ret));
		}
	}
	/*
	 * Reading cq3 drives dom3's progress (the connection to ep comes
	 * up, the 6 frames are written, 6 completions for 4 entries).
	 */
	n = drain(cq3, 6, 5000, &last);
	if (n != 4 || last != -FI_EOVERRUN) {
		ok = false;
		diag("overrun CQ of 4: %d entries, then %s", n,
		     fi_strerror((int)-last));
	}
	/* The messages themselves all went out. */
	ok &= recv_tags(0xc9200, 6);
	result(ok, "cq-overrun-reported", "see above");
out:
	if (ep3)
		fi_close(&ep3->fid);
	if (cq3)
		fi_close(&cq3->fid);
	if (av3)
		fi_close(&av3->fid);
	if (dom3)
		fi_close(&dom3->fid);
	fi_freeinfo(i3);
	if (ep2)
		fi_close(&ep2->fid);
	if (tx2)
		fi_close(&tx2->fid);
	if (rx2)
		fi_close(&rx2->fid);
	if (av2)
		fi_close(&av2->fid);
	sync_peer();
}

struct closer {
	struct fid_ep *ep;
	uint64_t ms;
};

static void *closer(void *arg)
{
	struct closer *c = arg;
	uint64_t t0 = now_ms();

	fi_close(&c->ep->fid);
	c->ms = now_ms() - t0;
	return NULL;
}

/*
 * Closing an endpoint does not block the domain: ep4 has a rendezvous
 * (registered, waiting for a CTS that never comes) and a
 * delivery-complete send (waiting for an ACK that never comes) to the
 * other node when a thread closes it; FI_RV_CLOSE_DELAY_MS (set by main)
 * stretches the part of the close that runs without the domain lock.
 * Meanwhile ep keeps sending to the other node: each send must complete
 * well within the delay.
 */
#define CLOSE_DELAY_MS	3000
#define CLOSE_SENDS	20
static void t_close_nonblocking(void)
{
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED,
				  .wait_obj = FI_WAIT_NONE };
	struct fi_msg_tagged m = { .iov_count = 1, .tag = 0xc105f };
	struct iovec iov = { sbuf, 64 };
	struct fi_context c1, c2;
	struct fid_ep *ep4 = NULL;
	struct fid_cq *cq4 = NULL;
	struct closer cl = { 0 };
	uint64_t worst = 0;
	pthread_t thr;
	bool ok = true;
	int i, ret;

	sync_peer();
	if ((ret = fi_cq_open(domain, &cqa, &cq4, NULL)) ||
	    (ret = fi_endpoint(domain, info, &ep4, NULL)) ||
	    (ret = fi_ep_bind(ep4, &av->fid, 0)) ||
	    (ret = fi_ep_bind(ep4, &cq4->fid, FI_TRANSMIT | FI_RECV)) ||
	    (ret = fi_enable(ep4))) {
		result(false, "close-setup", "%s", fi_strerror(-ret));
		goto out;
	}
	m.msg_iov = &iov;
	m.addr = peer;
	m.context = &c2;
	if (POST(fi_tsend(ep4, sbuf, 4 * threshold, NULL, peer, 0xc105e,
			  &c1)) ||
	    POST(fi_tsendmsg(ep4, &m, FI_DELIVERY_COMPLETE))) {
		result(false, "close-setup", "posts on ep4");
		goto out;
	}
	fi_cq_read(cq4, NULL, 0);
	cl.ep = ep4;
	ep4 = NULL;
	if (pthread_create(&thr, NULL, closer, &cl)) {
		result(false, "close-setup", "pthread_create");
		goto out;
	}
	usleep(100 * 1000);
	for (i = 0; i < CLOSE_SENDS; i++) {
		uint64_t t0 = now_ms(), dt;

		fill(sbuf, 64, 0xc1000 + i);
		ret = send_wait(sbuf, 64, 0xc1000 + i);
		dt = now_ms() - t0;
		if (ret)
			ok = false;
		if (dt > worst)
			worst = dt;
		usleep(100 * 1000);
	}
	pthread_join(thr, NULL);
	diag("ep close took %llu ms; slowest of %d sends meanwhile %llu ms",
	     (unsigned long long)cl.ms, CLOSE_SENDS,
	     (unsigned long long)worst);
	result(ok && cl.ms >= CLOSE_DELAY_MS && worst < CLOSE_DELAY_MS / 3,
	       "close-does-not-block",
	       "close %llu ms (hook %d ms), worst send %llu ms",
	       (unsigned long long)cl.ms, CLOSE_DELAY_MS,
	       (unsigned long long)worst);
	sync_peer();
	result(recv_tags(0xc1000, CLOSE_SENDS), "close-peer-sends",
	       "lost while an endpoint closed");
out:
	if (ep4)
		fi_close(&ep4->fid);
	if (cq4)
		fi_close(&cq4->fid);
	sync_peer();
}

/*
 * FI_MULTI_RECV into a CQ of 2 (FI_RM_ENABLED), on this node: six 1000 B
 * messages for one 6500 B buffer.  Two fit; the others wait for room
 * and must come, in order, as the CQ is read: none lost, no overrun, the
 * last flagged FI_MULTI_RECV.
 */
static void t_multi_recv_cq_full(void)
{
	struct fi_cq_attr small = { .format = FI_CQ_FORMAT_TAGGED,
				    .wait_obj = FI_WAIT_NONE, .size = 2 };
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED,
				  .wait_obj = FI_WAIT_NONE };
	struct fi_av_attr ava = { .type = FI_AV_TABLE };
	struct fi_info *h = addr_hints(FI_FORMAT_UNSPEC,
				       FI_MSG | FI_MULTI_RECV);
	struct fid_ep *rx_ep = NULL, *tx_ep = NULL;
	struct fid_av *rx_av = NULL, *tx_av = NULL;
	struct fid_cq *rx_cq = NULL, *tx_cq = NULL;
	struct fi_info *mi = NULL;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct fi_context mctx, sctx;
	struct iovec iov = { rbuf, 6500 };
	struct fi_msg m = { .msg_iov = &iov, .iov_count = 1,
			    .addr = FI_ADDR_UNSPEC, .context = &mctx };
	char name[64];
	size_t len = sizeof(name), i, flagged = 0;
	fi_addr_t to;
	bool ok = true;
	int ret;

	sync_peer();
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &mi);
	fi_freeinfo(h);
	if (ret ||
	    (ret = fi_av_open(domain, &ava, &rx_av, NULL)) ||
	    (ret = fi_cq_open(domain, &small, &rx_cq, NULL)) ||
	    (ret = fi_endpoint(domain, mi, &rx_ep, NULL)) ||
	    (ret = fi_ep_bind(rx_ep, &rx_av->fid, 0)) ||
	    (ret = fi_ep_bind(rx_ep, &rx_cq->fid, FI_TRANSMIT | FI_RECV)) ||
	    (ret = fi_enable(rx_ep)) ||
	    (ret = fi_getname(&rx_ep->fid, name, &len)) ||
	    (ret = fi_av_open(domain, &ava, &tx_av, NULL)) ||
	    (ret = fi_cq_open(domain, &cqa, &tx_cq, NULL)) ||
	    (ret = fi_endpoint(domain, info, &tx_ep, NULL)) ||
	    (ret = fi_ep_bind(tx_ep, &tx_av->fid, 0)) ||
	    (ret = fi_ep_bind(tx_ep, &tx_cq->fid, FI_TRANSMIT | FI_RECV)) ||
	    (ret = fi_enable(tx_ep)) ||
	    (ret = fi_av_insert(tx_av, name, 1, &to, 0, NULL)) != 1) {
		result(false, "multi-recv-cq-full-setup", "%s",
		       fi_strerror(-ret));
		goto out;
	}
	memset(rbuf, 0, 6500);
	ret = fi_recvmsg(rx_ep, &m, FI_MULTI_RECV);
	for (i = 0; i < 6 && !ret; i++) {
		fill(sbuf + 1000 * i, 1000, 700 + i);
		ret = POST(fi_send(tx_ep, sbuf + 1000 * i, 1000, NULL, to,
				   &sctx));
		if (!ret && wait_comp(tx_cq, &e, NULL, &err) != 1)
			ret = -FI_EIO;
	}
	if (ret) {
		result(false, "multi-recv-cq-full", "post/send: %s",
		       fi_strerror(-ret));
		goto out;
	}
	/* All six were sent (and read by this domain) before the first read. */
	for (i = 0; i < 6; i++) {
		ret = wait_comp(rx_cq, &e, NULL, &err);
		if (ret != 1 || e.buf != rbuf + 1000 * i || e.len != 1000 ||
		    check(e.buf, 1000, 700 + i) >= 0) {
			ok = false;
			diag("completion %zu: ret %d (err %d) buf +%td len %zu",
			     i, ret, ret ? 0 : err.err,
			     ret == 1 ? (char *)e.buf - rbuf : -1,
			     ret == 1 ? e.len : 0);
			break;
		}
		if (e.flags & FI_MULTI_RECV)
			flagged |= 1u << i;
	}
	result(ok, "multi-recv-cq-full", "see above");
	result(ok && flagged == 1u << 5, "multi-recv-cq-full-last-flag",
	       "FI_MULTI_RECV on completions %#zx", flagged);
out:
	if (tx_ep)
		fi_close(&tx_ep->fid);
	if (rx_ep)
		fi_close(&rx_ep->fid);
	if (tx_cq)
		fi_close(&tx_cq->fid);
	if (rx_cq)
		fi_close(&rx_cq->fid);
	if (tx_av)
		fi_close(&tx_av->fid);
	if (rx_av)
		fi_close(&rx_av->fid);
	fi_freeinfo(mi);
	sync_peer();
}

/* This process's ring size and overflows (rv's record of its file). */
static bool rv_ring(uint32_t *entries, uint64_t *overflows, uint64_t *failed)
{
	struct rv_dump_proc sum;
	bool found = rv_self_record(&sum);

	*entries = sum.ring_entries;
	*overflows = sum.ring_overflows;
	*failed = sum.writes_failed;
	return found;
}

/*
 * Run with FI_RV_RING_ENTRIES=64 (-R): NRING rendezvous messages posted
 * each way at once, every fifth 1 MiB (several writes each), far more
 * writes and RECVs than the ring holds.  Every one must complete with
 * its data, the kernel must report no ring overflow, and the writes one
 * side posted must be the RECVs the other got.
 */
#define NRING		160
#define RSLOT		(72ul << 10)

static size_t ring_len(size_t i)
{
	return i % 5 == 4 ? (1ul << 20) + 8 * i : (64ul << 10) + 8 * i;
}

static void t_ring(void)
{
	static struct fi_cq_tagged_entry sctx[NRING], rctx[NRING];
	size_t off[NRING + 1], i, nsend = 0, nrecv = 0, bad = 0;
	uint64_t mine = server ? 0x5000 : 0x6000;
	uint64_t theirs = server ? 0x6000 : 0x5000;
	uint64_t w0, r0, w1, r1, ov = 0, failed = 0, peer_r;
	struct fi_cq_err_entry err;
	uint32_t entries = 0;
	char *sb, *rb;
	uint64_t t0;
	bool ok = true;

	for (off[0] = 0, i = 0; i < NRING; i++)
		off[i + 1] = off[i] + ((ring_len(i) + 4095) & ~4095ul);
	sb = mmap(NULL, off[NRING], PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	rb = mmap(NULL, off[NRING], PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sb == MAP_FAILED || rb == MAP_FAILED)
		die("mmap", errno);
	for (i = 0; i < NRING; i++)
		fill(sb + off[i], ring_len(i), mine + i);
	sync_peer();
	if (!rv_counters(&w0, &r0))
		w0 = r0 = 0;
	for (i = 0; i < NRING; i++)
		ok &= !trecv(rb + off[i], ring_len(i), peer, theirs + i, 0,
			     &rctx[i]);
	sync_peer();
	for (i = 0; i < NRING; i++)
		ok &= !tsend(sb + off[i], ring_len(i), mine + i, &sctx[i]);
	t0 = now_ms();
	while ((nsend < NRING || nrecv < NRING) && now_ms() - t0 < 4 * WAIT_MS) {
		struct fi_cq_tagged_entry e;
		ssize_t n;

		n = fi_cq_read(txcq, &e, 1);
		if (n == 1) {
			nsend++;
		} else if (n == -FI_EAVAIL &&
			   fi_cq_readerr(txcq, &err, 0) == 1) {
			diag("send error %d (prov %d)", err.err, err.prov_errno);
			ok = false;
			nsend++;
		}
		n = fi_cq_read(rxcq, &e, 1);
		if (n == 1) {
			i = (struct fi_cq_tagged_entry *)e.op_context - rctx;
			if (i >= NRING || e.len != ring_len(i) ||
			    check(rb + off[i], e.len, theirs + i) >= 0) {
				if (bad++ < 4)
					diag("ring message %zu bad", i);
				ok = false;
			}
			nrecv++;
		} else if (n == -FI_EAVAIL &&
			   fi_cq_readerr(rxcq, &err, 0) == 1) {
			diag("recv error %d (prov %d)", err.err, err.prov_errno);
			ok = false;
			nrecv++;
		}
	}
	result(ok && nsend == NRING && nrecv == NRING, "ring-bound-all-complete",
	       "%zu of %d sends, %zu of %d receives, %zu bad", nsend, NRING,
	       nrecv, NRING, bad);
	sync_peer();
	if (!rv_counters(&w1, &r1))
		w1 = r1 = 0;
	/* The peer's RECVs against our writes. */
	r1 -= r0;
	ctl_write(&r1, sizeof(r1));
	ctl_read(&peer_r, sizeof(peer_r));
	/*
	 * Read before result(): its arguments are evaluated in any order.
	 * A write that failed (a QP lost under load; its message then went
	 * over TCP) may or may not have landed: the peer's RECVs lie between
	 * the writes that succeeded and all the writes.
	 */
	ok = rv_ring(&entries, &ov, &failed);
	result(ok && entries == 64 && ov == 0 && w1 - w0 > NRING &&
	       peer_r + failed >= w1 - w0 && peer_r <= w1 - w0,
	       "ring-bound-no-overflow",
	       "ring %u entries, %llu overflows, %llu writes (%llu failed since attach), peer got %llu RECVs (want > %d)",
	       entries, (unsigned long long)ov,
	       (unsigned long long)(w1 - w0), (unsigned long long)failed,
	       (unsigned long long)peer_r, NRING);
	diag("ring of %u entries: %llu writes posted for %d messages",
	     entries, (unsigned long long)(w1 - w0), NRING);
	munmap(sb, off[NRING]);
	munmap(rb, off[NRING]);
	sync_peer();
}

static void usage(void)
{
	fprintf(stderr, "usage: rv_fi_test -s | -c HOST [-p PORT] [-R]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *host = NULL, *port = "18571";
	bool ring_only = false;
	int c;

	while ((c = getopt(argc, argv, "sc:p:D:R")) != -1) {
		switch (c) {
		case 's': server = true; break;
		case 'c': host = optarg; break;
		case 'p': port = optarg; break;
		case 'D': break;	/* accepted for the VM scripts */
		case 'R': ring_only = true; break;	/* FI_RV_RING_ENTRIES=64 */
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

	if (ring_only) {
		t_ring();
		goto out;
	}
	t_tagged_ignore();
	t_data_source();
	t_directed_cancel();
	t_sizes();
	t_unexpected();
	t_truncation();
	t_inflight();
	t_threads();
	t_rv_counters();
	t_misc();
	t_hostile();
	t_local();
	t_addressing();
	t_peek_discard();
	t_complete_levels();
	t_levels_info();
	t_cq_limits();
	t_multi_recv_cq_full();
	t_close_nonblocking();
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
