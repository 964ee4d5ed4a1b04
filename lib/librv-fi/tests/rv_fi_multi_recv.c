// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv_fi_multi_recv.c - FI_MULTI_RECV: one buffer for many messages,
 * eager and rendezvous, waiting ones, and a full CQ.
 */
#include "rv_fi_test.h"

/*
 * FI_MULTI_RECV on A's published endpoint: one buffer takes eager and
 * rendezvous messages at successive offsets until fewer than
 * FI_OPT_MIN_MULTI_RECV bytes are left; only the completion that releases
 * it (the last) carries FI_MULTI_RECV.  Then messages already waiting
 * when the buffer is posted, one left over for the next receive.
 */
void t_multi_recv(fi_addr_t bare)
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

/*
 * FI_MULTI_RECV into a CQ of 2 (FI_RM_ENABLED), on this node: six 1000 B
 * messages for one 6500 B buffer.  Two fit; the others wait for room
 * and must come, in order, as the CQ is read: none lost, no overrun, the
 * last flagged FI_MULTI_RECV.
 */
void t_multi_recv_cq_full(void)
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
