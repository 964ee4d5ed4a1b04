// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * FI_MSG and FI_TAGGED: posting sends and receives, matching arrivals
 * against posted receives (in posting order, as MPI needs), the
 * unexpected-message queues, cancel, FI_PEEK / FI_CLAIM / FI_DISCARD, and
 * the completion levels of sends (ack_level()).
 *
 * A send of at most FI_RV_RNDV_THRESHOLD bytes (or an inject) is one
 * EAGER frame on the TCP connection; a larger one is an RTS, and the data
 * follows once the receiver matched it (rndv.c): over rv to another node,
 * over TCP to an endpoint of the same node.
 */
#include <stdlib.h>
#include <string.h>

#include "rvfi.h"

/* ---- sends --------------------------------------------------------------- */

/*
 * The completion level of a send (fi_cq(3)) as the RVFI_F_ACK flags its
 * frames carry: none for FI_INJECT_COMPLETE (the default: the buffer is
 * reusable once TCP has the data, or once the rv writes completed);
 * RVFI_F_ACK for FI_TRANSMIT_COMPLETE (the peer's provider read the
 * frame); RVFI_F_ACK|RVFI_F_DC for FI_DELIVERY_COMPLETE (a receive took
 * it).  A rendezvous to another node needs no ACK at any level: its CTS
 * came from the receive that matched it, and a write completes once the
 * target's RC QP has the data.
 */
static uint8_t ack_level(uint64_t flags)
{
	if (flags & FI_DELIVERY_COMPLETE)
		return RVFI_F_ACK | RVFI_F_DC;
	if (flags & FI_TRANSMIT_COMPLETE)
		return RVFI_F_ACK;
	return 0;
}

static ssize_t do_send(struct rvfi_ep *ep, const void *buf, size_t len,
		       fi_addr_t dest, uint64_t tag, uint64_t data,
		       uint64_t flags, bool tagged, void *context,
		       bool inject_call)
{
	bool inject = flags & FI_INJECT;
	struct rvfi_hdr h;
	struct rvfi_peer *p;
	struct rvfi_op *op = NULL;
	ssize_t ret;

	if (len && !buf)
		return -FI_EINVAL;
	/* FI_COMMIT_COMPLETE (persistent memory) is not offered. */
	if (flags & FI_COMMIT_COMPLETE)
		return -FI_EBADFLAGS;
	if (len > RVFI_MAX_MSG_SIZE || (inject && len > RVFI_INJECT_SIZE))
		return -FI_EMSGSIZE;
	pthread_mutex_lock(&ep->dom->lock);
	if (!ep->enabled) {
		ret = -FI_EOPBADSTATE;
		goto out;
	}
	p = rvfi_peer_of(ep, dest);
	if (!p) {
		ret = -FI_EINVAL;
		goto out;
	}
	/*
	 * fi_inject*() generate no completion: no op.  FI_INJECT in
	 * fi_*sendmsg() only means the buffer is copied.
	 */
	if (!inject_call) {
		op = calloc(1, sizeof(*op));
		if (!op) {
			ret = -FI_ENOMEM;
			goto out;
		}
		op->ep = ep;
		op->kind = RVFI_SEND;
		op->context = context;
		op->cq_flags = FI_SEND | (tagged ? FI_TAGGED : FI_MSG);
		op->completion = !ep->tx_selective || (flags & FI_COMPLETION);
		op->buf = (void *)buf;
		op->len = len;
		op->tag = tag;
		op->data = data;
		op->has_data = flags & FI_REMOTE_CQ_DATA;
		op->peer = p;
		op->src = FI_ADDR_NOTAVAIL;
		op->ack = ack_level(flags);
		ret = rvfi_op_reserve(op, ep->tx_cq);
		if (ret) {
			free(op);
			goto out;
		}
	}
	memset(&h, 0, sizeof(h));
	h.flags = (tagged ? RVFI_F_TAGGED : 0) |
		  ((flags & FI_REMOTE_CQ_DATA) ? RVFI_F_DATA : 0);
	h.tag = tag;
	h.data = (flags & FI_REMOTE_CQ_DATA) ? data : 0;
	h.len = len;
	if (!inject && len > rvfi_env.rndv_threshold) {
		ep->n_rndv_tx++;
		ret = rvfi_rndv_send(ep, op);
	} else {
		h.op = RVFI_OP_EAGER;
		ep->n_eager_tx++;
		/* On ack_wait before it can be written (and failed). */
		if (op && op->ack) {
			h.flags |= op->ack;
			h.msg_id = op->msg_id = ++ep->next_msg_id;
			rvfi_list_add_tail(&p->ack_wait, &op->link);
		}
		ret = rvfi_tcp_send(ep, p, &h, buf, inject, op);
		if (ret && op && op->ack)
			rvfi_list_del(&op->link);
	}
	if (ret && op)
		rvfi_op_free(op);
	if (!ret)
		rvfi_progress(ep->dom);
out:
	pthread_mutex_unlock(&ep->dom->lock);
	return ret;
}

#define EP(fid) container_of(fid, struct rvfi_ep, ep)

static ssize_t msg_send(struct fid_ep *fid, const void *buf, size_t len,
			void *desc, fi_addr_t dest, void *context)
{
	(void)desc;
	return do_send(EP(fid), buf, len, dest, 0, 0, EP(fid)->tx_op_flags,
		       false, context, false);
}

static ssize_t msg_sendv(struct fid_ep *fid, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t dest,
			 void *context)
{
	(void)desc;
	if (count > RVFI_IOV_LIMIT)
		return -FI_EINVAL;
	return do_send(EP(fid), count ? iov[0].iov_base : NULL,
		       count ? iov[0].iov_len : 0, dest, 0, 0,
		       EP(fid)->tx_op_flags, false, context, false);
}

static ssize_t msg_sendmsg(struct fid_ep *fid, const struct fi_msg *m,
			   uint64_t flags)
{
	if (m->iov_count > RVFI_IOV_LIMIT)
		return -FI_EINVAL;
	return do_send(EP(fid), m->iov_count ? m->msg_iov[0].iov_base : NULL,
		       m->iov_count ? m->msg_iov[0].iov_len : 0, m->addr, 0,
		       m->data, flags, false, m->context, false);
}

static ssize_t msg_inject(struct fid_ep *fid, const void *buf, size_t len,
			  fi_addr_t dest)
{
	return do_send(EP(fid), buf, len, dest, 0, 0, FI_INJECT, false, NULL, true);
}

static ssize_t msg_senddata(struct fid_ep *fid, const void *buf, size_t len,
			    void *desc, uint64_t data, fi_addr_t dest,
			    void *context)
{
	(void)desc;
	return do_send(EP(fid), buf, len, dest, 0, data,
		       EP(fid)->tx_op_flags | FI_REMOTE_CQ_DATA, false,
		       context, false);
}

static ssize_t msg_injectdata(struct fid_ep *fid, const void *buf, size_t len,
			      uint64_t data, fi_addr_t dest)
{
	return do_send(EP(fid), buf, len, dest, 0, data,
		       FI_INJECT | FI_REMOTE_CQ_DATA,
		       false, NULL, true);
}

static ssize_t tag_send(struct fid_ep *fid, const void *buf, size_t len,
			void *desc, fi_addr_t dest, uint64_t tag,
			void *context)
{
	(void)desc;
	return do_send(EP(fid), buf, len, dest, tag, 0, EP(fid)->tx_op_flags,
		       true, context, false);
}

static ssize_t tag_sendv(struct fid_ep *fid, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t dest,
			 uint64_t tag, void *context)
{
	(void)desc;
	if (count > RVFI_IOV_LIMIT)
		return -FI_EINVAL;
	return do_send(EP(fid), count ? iov[0].iov_base : NULL,
		       count ? iov[0].iov_len : 0, dest, tag, 0,
		       EP(fid)->tx_op_flags, true, context, false);
}

static ssize_t tag_sendmsg(struct fid_ep *fid, const struct fi_msg_tagged *m,
			   uint64_t flags)
{
	if (m->iov_count > RVFI_IOV_LIMIT)
		return -FI_EINVAL;
	return do_send(EP(fid), m->iov_count ? m->msg_iov[0].iov_base : NULL,
		       m->iov_count ? m->msg_iov[0].iov_len : 0, m->addr,
		       m->tag, m->data, flags, true, m->context, false);
}

static ssize_t tag_inject(struct fid_ep *fid, const void *buf, size_t len,
			  fi_addr_t dest, uint64_t tag)
{
	return do_send(EP(fid), buf, len, dest, tag, 0, FI_INJECT, true, NULL, true);
}

static ssize_t tag_senddata(struct fid_ep *fid, const void *buf, size_t len,
			    void *desc, uint64_t data, fi_addr_t dest,
			    uint64_t tag, void *context)
{
	(void)desc;
	return do_send(EP(fid), buf, len, dest, tag, data,
		       EP(fid)->tx_op_flags | FI_REMOTE_CQ_DATA, true,
		       context, false);
}

static ssize_t tag_injectdata(struct fid_ep *fid, const void *buf, size_t len,
			      uint64_t data, fi_addr_t dest, uint64_t tag)
{
	return do_send(EP(fid), buf, len, dest, tag, data,
		       FI_INJECT | FI_REMOTE_CQ_DATA,
		       true, NULL, true);
}

/* ---- matching ------------------------------------------------------------ */

static bool matches(const struct rvfi_op *op, bool tagged,
		    struct rvfi_peer *from, uint64_t tag)
{
	if (op->peer && op->peer != from)
		return false;
	return !tagged || !((op->tag ^ tag) & ~op->ignore);
}

/*
 * Gives a matched message to a receive: the data of an EAGER frame is
 * copied now; an RTS starts the rendezvous.
 */
static void fulfil(struct rvfi_ep *ep, struct rvfi_op *op, uint8_t wire_op,
		   uint8_t flags, uint64_t tag, uint64_t data, uint64_t len,
		   uint64_t msg_id, const void *payload, struct rvfi_peer *from)
{
	op->tag = tag;
	op->has_data = flags & RVFI_F_DATA;
	op->data = data;
	if (op->has_data)
		op->cq_flags |= FI_REMOTE_CQ_DATA;
	op->src = rvfi_peer_fiaddr(ep, from);
	op->from = from;
	op->xfer = len < op->len ? len : op->len;
	op->olen = len - op->xfer;
	if (wire_op == RVFI_OP_RTS) {
		op->src_id = msg_id;
		ep->n_rndv_rx++;
		rvfi_rndv_matched(ep, op);
		return;
	}
	ep->n_eager_rx++;
	/* FI_DELIVERY_COMPLETE: a receive has it now. */
	if (flags & RVFI_F_DC)
		rvfi_send_ack(ep, from, msg_id);
	if (op->xfer)
		memcpy(op->buf, payload, op->xfer);
	if (op->olen)
		rvfi_complete_err(op, FI_ETRUNC, op->olen);
	else
		rvfi_complete_ok(op);
}

/* ---- FI_MULTI_RECV (see struct rvfi_op) ------------------------------------ */

/*
 * The receive for one message of @len bytes in @parent's buffer: the rest
 * of the buffer, of which the message takes what it needs (more is
 * truncated, as any receive).  Retires the parent once fewer than
 * min_multi_recv bytes are left.  NULL: out of memory.
 */
static struct rvfi_op *multi_child(struct rvfi_ep *ep, struct rvfi_op *parent,
				   uint64_t len)
{
	struct rvfi_op *op = calloc(1, sizeof(*op));
	size_t left = parent->len - parent->moff;

	if (!op)
		return NULL;
	/*
	 * Each message gets its own CQ entry (FI_RM_ENABLED): the first
	 * takes the one reserved when the buffer was posted, the others
	 * reserve theirs now.  With the CQ full the message waits as
	 * unexpected, in order, until a CQ read makes room
	 * (rvfi_multi_retry()): a completion is never lost.
	 */
	if (parent->rcq) {
		op->rcq = parent->rcq;
		parent->rcq = NULL;
	} else if (rvfi_op_reserve(op, ep->rx_cq)) {
		free(op);
		ep->multi_stalled = true;
		return NULL;
	}
	op->ep = ep;
	op->kind = RVFI_RECV;
	op->context = parent->context;
	op->cq_flags = parent->cq_flags;
	op->completion = parent->completion;
	op->buf = (char *)parent->buf + parent->moff;
	op->len = left;
	op->peer = parent->peer;
	op->src = FI_ADDR_NOTAVAIL;
	op->mparent = parent;
	parent->mchildren++;
	parent->moff += len < left ? len : left;
	left = parent->len - parent->moff;
	if (!left || left < ep->min_multi_recv) {
		rvfi_list_del(&parent->link);
		parent->mretired = true;
	}
	return op;
}

/*
 * The FI_MULTI_RECV flag of @op's completion: on the last child of a
 * retired buffer, or on a cancelled buffer that has no child left.
 */
uint64_t rvfi_multi_flags(const struct rvfi_op *op)
{
	if (op->multi)
		return op->mchildren ? 0 : FI_MULTI_RECV;
	if (op->mparent && op->mparent->mretired &&
	    op->mparent->mchildren == 1)
		return FI_MULTI_RECV;
	return 0;
}

/* A child is freed: the last one of a retired buffer frees it. */
void rvfi_multi_put(struct rvfi_op *op)
{
	struct rvfi_op *parent = op->mparent;

	op->mparent = NULL;
	if (!--parent->mchildren && parent->mretired) {
		rvfi_op_unreserve(parent);
		free(parent);
	}
}

/*
 * The buffer leaves posted_msg (cancel, endpoint close): true while
 * children still use it, which then free it.
 */
bool rvfi_multi_hold(struct rvfi_op *op)
{
	rvfi_list_del(&op->link);
	op->mretired = true;
	return op->mchildren != 0;
}

/* An EAGER or RTS frame arrived from @from. */
void rvfi_deliver(struct rvfi_ep *ep, struct rvfi_peer *from,
		  const struct rvfi_hdr *h, void *payload)
{
	bool tagged = h->flags & RVFI_F_TAGGED;
	struct rvfi_list *posted = tagged ? &ep->posted_tagged : &ep->posted_msg;
	struct rvfi_list *pos, *tmp;
	struct rvfi_unexp *u;

	/* FI_TRANSMIT_COMPLETE: our provider has it, matched or not. */
	if (h->op == RVFI_OP_EAGER &&
	    (h->flags & (RVFI_F_ACK | RVFI_F_DC)) == RVFI_F_ACK)
		rvfi_send_ack(ep, from, h->msg_id);
	/* Untagged messages kept waiting for CQ room come first. */
	if (!tagged) {
		rvfi_multi_retry(ep);
		if (ep->multi_stalled)
			goto unexpected;
	}
	rvfi_list_for_each_safe(pos, tmp, posted) {
		struct rvfi_op *op = container_of(pos, struct rvfi_op, link);

		if (!matches(op, tagged, from, h->tag))
			continue;
		if (op->multi) {
			op = multi_child(ep, op, h->len);
			if (!op)
				break;	/* kept as unexpected */
		} else {
			rvfi_list_del(&op->link);
		}
		fulfil(ep, op, h->op, h->flags, h->tag, h->data, h->len,
		       h->msg_id, payload, from);
		return;
	}
unexpected:
	u = calloc(1, sizeof(*u));
	if (!u)
		goto oom;
	u->op = h->op;
	u->flags = h->flags;
	u->tag = h->tag;
	u->data = h->data;
	u->len = h->len;
	u->msg_id = h->msg_id;
	u->from = from;
	if (h->op == RVFI_OP_EAGER && h->len) {
		u->payload = malloc(h->len);
		if (!u->payload) {
			free(u);
			goto oom;
		}
		memcpy(u->payload, payload, h->len);
	}
	rvfi_list_add_tail(tagged ? &ep->unexp_tagged : &ep->unexp_msg,
			   &u->link);
	return;
oom:
	RVFI_WARN("out of memory: unexpected message of %llu bytes dropped\n",
		  (unsigned long long)h->len);
}

static struct rvfi_unexp *find_unexp(struct rvfi_ep *ep, struct rvfi_op *op,
				     bool tagged)
{
	struct rvfi_list *q = tagged ? &ep->unexp_tagged : &ep->unexp_msg;
	struct rvfi_list *pos, *tmp;

	rvfi_list_for_each_safe(pos, tmp, q) {
		struct rvfi_unexp *u = container_of(pos, struct rvfi_unexp,
						    link);

		if (matches(op, tagged, u->from, u->tag))
			return u;
	}
	return NULL;
}

static void take_unexp(struct rvfi_ep *ep, struct rvfi_op *op,
		       struct rvfi_unexp *u)
{
	fulfil(ep, op, u->op, u->flags, u->tag, u->data, u->len, u->msg_id,
	       u->payload, u->from);
	free(u->payload);
	free(u);
}

/*
 * Feeds the untagged messages waiting as unexpected to multi-receive
 * buffer @op.  True once @op retired (its last child may free it: the
 * caller must not touch it again).
 */
static bool multi_take_waiting(struct rvfi_ep *ep, struct rvfi_op *op)
{
	struct rvfi_unexp *u;

	while ((u = find_unexp(ep, op, false))) {
		struct rvfi_op *child = multi_child(ep, op, u->len);
		bool retired = op->mretired;

		if (!child)
			return false;
		rvfi_list_del(&u->link);
		take_unexp(ep, child, u);
		if (retired)
			return true;
	}
	return false;
}

/*
 * Messages kept waiting because the CQ was full (multi_child()) go to
 * the posted multi-receive buffers, in order, once there is room.
 */
void rvfi_multi_retry(struct rvfi_ep *ep)
{
	struct rvfi_list *pos, *tmp;

	if (!ep->multi_stalled)
		return;
	ep->multi_stalled = false;
	rvfi_list_for_each_safe(pos, tmp, &ep->posted_msg) {
		struct rvfi_op *op = container_of(pos, struct rvfi_op, link);

		if (!op->multi)
			continue;
		if (!multi_take_waiting(ep, op) && ep->multi_stalled)
			return;
	}
}

/*
 * FI_DISCARD (with FI_PEEK, or FI_CLAIM of a claimed message): the
 * message is dropped and @op completes successfully with the message's
 * tag, data and length and no data moved.  Its sender is released: an
 * RTS gets a CTS for 0 bytes (the send completes), a delivery-complete
 * EAGER its ACK.
 */
static void discard_unexp(struct rvfi_ep *ep, struct rvfi_op *op,
			  struct rvfi_unexp *u)
{
	struct rvfi_hdr h;

	if (u->op == RVFI_OP_RTS) {
		memset(&h, 0, sizeof(h));
		h.op = RVFI_OP_CTS;
		h.msg_id = u->msg_id;
		if (rvfi_tcp_send(ep, u->from, &h, NULL, false, NULL))
			RVFI_WARN("CTS of a discarded message not sent\n");
	} else if (u->flags & RVFI_F_DC) {
		rvfi_send_ack(ep, u->from, u->msg_id);
	}
	op->tag = u->tag;
	op->has_data = u->flags & RVFI_F_DATA;
	op->data = u->data;
	if (op->has_data)
		op->cq_flags |= FI_REMOTE_CQ_DATA;
	op->src = rvfi_peer_fiaddr(ep, u->from);
	op->xfer = u->len;
	op->buf = NULL;
	free(u->payload);
	free(u);
	rvfi_complete_ok(op);
}

/* FI_PEEK: report the first match without receiving it. */
static ssize_t peek(struct rvfi_ep *ep, struct rvfi_op *op, uint64_t flags)
{
	struct rvfi_unexp *u = find_unexp(ep, op, true);
	struct rvfi_cq *cq = ep->rx_cq;

	if (!u) {
		op->xfer = 0;
		rvfi_complete_err(op, FI_ENOMSG, 0);
		return 0;
	}
	if (flags & FI_DISCARD) {
		rvfi_list_del(&u->link);
		discard_unexp(ep, op, u);
		return 0;
	}
	rvfi_op_unreserve(op);
	if (cq)
		rvfi_cq_push(cq, op->context, FI_RECV | FI_TAGGED |
			     ((u->flags & RVFI_F_DATA) ? FI_REMOTE_CQ_DATA : 0),
			     u->len, NULL, u->data, u->tag,
			     rvfi_peer_fiaddr(ep, u->from));
	if (flags & FI_CLAIM) {
		/* The message now belongs to the context (fi_tagged(3)). */
		rvfi_list_del(&u->link);
		((struct fi_context *)op->context)->internal[0] = u;
	}
	rvfi_op_free(op);
	return 0;
}

static ssize_t do_recv(struct rvfi_ep *ep, void *buf, size_t len,
		       fi_addr_t src, uint64_t tag, uint64_t ignore,
		       uint64_t flags, bool tagged, void *context)
{
	struct rvfi_op *op;
	struct rvfi_unexp *u;
	ssize_t ret = 0;

	if (len && !buf && !(flags & (FI_PEEK | FI_DISCARD)))
		return -FI_EINVAL;
	if ((flags & (FI_PEEK | FI_CLAIM)) && (!tagged || !context))
		return -FI_EINVAL;
	/* fi_msg(3) only; never with FI_PEEK / FI_CLAIM (tagged). */
	if ((flags & FI_MULTI_RECV) && (tagged || !len ||
					!(ep->caps & FI_MULTI_RECV)))
		return -FI_EINVAL;
	op = calloc(1, sizeof(*op));
	if (!op)
		return -FI_ENOMEM;
	rvfi_list_init(&op->link);
	op->multi = flags & FI_MULTI_RECV;
	op->kind = RVFI_RECV;
	op->context = context;
	op->cq_flags = FI_RECV | (tagged ? FI_TAGGED : FI_MSG);
	op->buf = buf;
	op->len = len;
	op->tag = tag;
	op->ignore = ignore;
	op->src = FI_ADDR_NOTAVAIL;

	pthread_mutex_lock(&ep->dom->lock);
	op->ep = ep;
	op->completion = !ep->rx_selective || (flags & FI_COMPLETION);
	if (!ep->enabled) {
		ret = -FI_EOPBADSTATE;
		goto out_free;
	}
	ret = rvfi_op_reserve(op, ep->rx_cq);
	if (ret)
		goto out_free;
	if (src != FI_ADDR_UNSPEC && (ep->caps & FI_DIRECTED_RECV)) {
		op->peer = rvfi_peer_of(ep, src);
		if (!op->peer) {
			ret = -FI_EINVAL;
			goto out_free;
		}
	}
	rvfi_progress(ep->dom);
	if (flags & FI_PEEK) {
		ret = peek(ep, op, flags);
		goto out;
	}
	if (flags & FI_CLAIM) {
		u = ((struct fi_context *)context)->internal[0];
		if (!u) {
			ret = -FI_EINVAL;
			goto out_free;
		}
		((struct fi_context *)context)->internal[0] = NULL;
		if (flags & FI_DISCARD)
			discard_unexp(ep, op, u);
		else
			take_unexp(ep, op, u);
		goto out;
	}
	/*
	 * A multi-receive buffer takes what waits, until it retires (after
	 * which its last child may free it: it is not touched again).
	 */
	if (op->multi && multi_take_waiting(ep, op))
		goto out;
	if (op->multi) {
		rvfi_list_add_tail(&ep->posted_msg, &op->link);
		goto out;
	}
	u = find_unexp(ep, op, tagged);
	if (u) {
		rvfi_list_del(&u->link);
		take_unexp(ep, op, u);
	} else {
		rvfi_list_add_tail(tagged ? &ep->posted_tagged : &ep->posted_msg,
				   &op->link);
	}
out:
	pthread_mutex_unlock(&ep->dom->lock);
	return ret;
out_free:
	rvfi_op_free(op);
	pthread_mutex_unlock(&ep->dom->lock);
	return ret;
}

/* fi_cancel: a posted receive is withdrawn with an FI_ECANCELED entry. */
ssize_t rvfi_cancel(struct rvfi_ep *ep, void *context)
{
	struct rvfi_list *lists[] = { &ep->posted_tagged, &ep->posted_msg };
	struct rvfi_list *pos, *tmp;
	size_t i;

	for (i = 0; i < 2; i++) {
		rvfi_list_for_each_safe(pos, tmp, lists[i]) {
			struct rvfi_op *op = container_of(pos, struct rvfi_op,
							  link);

			if (op->context != context)
				continue;
			rvfi_list_del(&op->link);
			rvfi_complete_err(op, FI_ECANCELED, 0);
			return 0;
		}
	}
	return -FI_ENOENT;
}

static ssize_t msg_recv(struct fid_ep *fid, void *buf, size_t len, void *desc,
			fi_addr_t src, void *context)
{
	(void)desc;
	return do_recv(EP(fid), buf, len, src, 0, 0, EP(fid)->rx_op_flags,
		       false, context);
}

static ssize_t msg_recvv(struct fid_ep *fid, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t src,
			 void *context)
{
	(void)desc;
	if (count > RVFI_IOV_LIMIT)
		return -FI_EINVAL;
	return do_recv(EP(fid), count ? iov[0].iov_base : NULL,
		       count ? iov[0].iov_len : 0, src, 0, 0,
		       EP(fid)->rx_op_flags, false, context);
}

static ssize_t msg_recvmsg(struct fid_ep *fid, const struct fi_msg *m,
			   uint64_t flags)
{
	if (m->iov_count > RVFI_IOV_LIMIT)
		return -FI_EINVAL;
	return do_recv(EP(fid), m->iov_count ? m->msg_iov[0].iov_base : NULL,
		       m->iov_count ? m->msg_iov[0].iov_len : 0, m->addr, 0, 0,
		       flags, false, m->context);
}

static ssize_t tag_recv(struct fid_ep *fid, void *buf, size_t len, void *desc,
			fi_addr_t src, uint64_t tag, uint64_t ignore,
			void *context)
{
	(void)desc;
	return do_recv(EP(fid), buf, len, src, tag, ignore,
		       EP(fid)->rx_op_flags, true, context);
}

static ssize_t tag_recvv(struct fid_ep *fid, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t src,
			 uint64_t tag, uint64_t ignore, void *context)
{
	(void)desc;
	if (count > RVFI_IOV_LIMIT)
		return -FI_EINVAL;
	return do_recv(EP(fid), count ? iov[0].iov_base : NULL,
		       count ? iov[0].iov_len : 0, src, tag, ignore,
		       EP(fid)->rx_op_flags, true, context);
}

static ssize_t tag_recvmsg(struct fid_ep *fid, const struct fi_msg_tagged *m,
			   uint64_t flags)
{
	if (m->iov_count > RVFI_IOV_LIMIT)
		return -FI_EINVAL;
	return do_recv(EP(fid), m->iov_count ? m->msg_iov[0].iov_base : NULL,
		       m->iov_count ? m->msg_iov[0].iov_len : 0, m->addr,
		       m->tag, m->ignore, flags, true, m->context);
}

struct fi_ops_msg rvfi_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = msg_recv,
	.recvv = msg_recvv,
	.recvmsg = msg_recvmsg,
	.send = msg_send,
	.sendv = msg_sendv,
	.sendmsg = msg_sendmsg,
	.inject = msg_inject,
	.senddata = msg_senddata,
	.injectdata = msg_injectdata,
};

struct fi_ops_tagged rvfi_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = tag_recv,
	.recvv = tag_recvv,
	.recvmsg = tag_recvmsg,
	.send = tag_send,
	.sendv = tag_sendv,
	.sendmsg = tag_sendmsg,
	.inject = tag_inject,
	.senddata = tag_senddata,
	.injectdata = tag_injectdata,
};
