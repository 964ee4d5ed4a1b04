// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv_fi_cq.c - CQ size: FI_RM_ENABLED reservations (-FI_EAGAIN) and the
 * FI_RM_DISABLED overrun (-FI_EOVERRUN).
 */
#include "rv_fi_test.h"

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
void t_cq_limits(void)
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
	struct fi_info *h, *i3 = NULL;
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

	/*
	 * fi_getinfo answers the resource management asked for, and
	 * FI_RM_ENABLED when asked nothing.
	 */
	h = addr_hints(FI_FORMAT_UNSPEC, FI_MSG | FI_TAGGED);
	h->domain_attr->resource_mgmt = FI_RM_DISABLED;
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &i3);
	fi_freeinfo(h);
	result(!ret && i3->domain_attr->resource_mgmt == FI_RM_DISABLED &&
	       info->domain_attr->resource_mgmt == FI_RM_ENABLED,
	       "getinfo-resource-mgmt", "ret %d, asked disabled: %d, default: %d",
	       ret, ret ? -1 : (int)i3->domain_attr->resource_mgmt,
	       (int)info->domain_attr->resource_mgmt);
	if (ret)
		goto out;

	/* FI_RM_DISABLED: the overrun is reported, not silent */
	ok = true;
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
