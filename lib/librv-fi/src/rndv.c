// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The rendezvous path, for messages above FI_RV_RNDV_THRESHOLD:
 *
 *   sender                                receiver
 *   rv_reg_mem(buf); RTS{id, tag, len} -->
 *                                         match (or queue as unexpected)
 *                                         rv_reg_mem(buf, REMOTE_WRITE)
 *              <-- CTS{id, iova, rkeys, len to write, token}
 *   rv_post_write(imm = slot | token) ==> (RDMA WRITE with immediate)
 *   ... one write per rkey ...
 *   RV_EVENT_SEND each: send complete     RV_EVENT_RECV(token) each:
 *                                         the last one: recv done
 *
 * rv gives a remote-access registration one key per aligned chunk of
 * 1 << rkey_shift bytes (2 MiB on rxe), and a write must stay in one
 * chunk: the sender writes chunk by chunk, the writes striped over the
 * connection's QPs, and the receiver counts one RECV per key.
 *
 * The token (the immediate's user bits) indexes the receiver's table of
 * receives waiting for data, with a sequence number in the high bits so a
 * stale immediate never completes a newer receive.
 *
 * When rv cannot carry a message (the node's rv connection failed, a
 * registration failed, the write completed in error), the data goes over
 * the TCP connection instead as an RDATA frame for the same token: slower,
 * but the message is delivered.  Both MRs are dropped after completion;
 * rv's cache keeps them registered for the next message.  Between two
 * endpoints of the same node (rv connects nodes) the data always goes as
 * RDATA: the handshake still bounds it by the receive's buffer, which an
 * eager frame of that size could not be (see RVFI_MAX_EAGER).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rvfi.h"

#define RVFI_CONN_TIMEOUT_MS	120000
#define RVFI_RECONNECT_MS	10000

uint64_t rvfi_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ull + ts.tv_nsec / 1000000;
}

/* ---- rv connections ------------------------------------------------------ */

struct rvfi_node *rvfi_node_get(struct rvfi_ep *ep, uint32_t ip)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = ip };
	struct rvfi_list *pos, *tmp;
	struct rvfi_node *n;
	int h, ret;

	rvfi_list_for_each_safe(pos, tmp, &ep->nodes) {
		n = container_of(pos, struct rvfi_node, link);
		if (n->ip == ip)
			return n;
	}
	n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->ip = ip;
	n->state = RV_CONN_STATE_ERROR;
	h = rv_conn_create(ep->rv, (struct sockaddr *)&sin, sizeof(sin), NULL);
	if (h < 0) {
		RVFI_WARN("rv_conn_create: %s\n", strerror(-h));
	} else {
		n->handle = h;
		ret = rv_conn_connect(ep->rv, h, RVFI_CONN_TIMEOUT_MS);
		if (ret)
			RVFI_WARN("rv_conn_connect: %s\n", strerror(-ret));
		else
			n->state = RV_CONN_STATE_CONNECTING;
		n->last_connect = rvfi_now_ms();
	}
	rvfi_list_add_tail(&ep->nodes, &n->link);
	return n;
}

/*
 * Whether writes can go to @n, now or once it is connected.  With @retry
 * (a new rendezvous starts), a connection that ended in ERROR is started
 * again, at most every RVFI_RECONNECT_MS: rv restarts a connection from
 * ERROR with a fresh timeout.  Retrying writes never restart it, so a
 * message waits at most one connection timeout before it goes over TCP.
 */
static bool node_usable(struct rvfi_ep *ep, struct rvfi_node *n, bool retry)
{
	struct rv_conn_query q;
	uint64_t now;

	if (!n || !n->handle)
		return false;
	if (n->state == RV_CONN_STATE_CONNECTING) {
		if (rv_conn_query(ep->rv, n->handle, &q))
			return false;
		n->state = q.state;
	}
	if (n->state == RV_CONN_STATE_ERROR && retry) {
		now = rvfi_now_ms();
		if (now - n->last_connect >= RVFI_RECONNECT_MS &&
		    !rv_conn_connect(ep->rv, n->handle, RVFI_CONN_TIMEOUT_MS)) {
			RVFI_INFO("rv connection in ERROR: connecting again\n");
			n->state = RV_CONN_STATE_CONNECTING;
			n->last_connect = now;
		}
	}
	return n->state == RV_CONN_STATE_CONNECTED ||
	       n->state == RV_CONN_STATE_CONNECTING;
}

/* ---- sender -------------------------------------------------------------- */

int rvfi_rndv_send(struct rvfi_ep *ep, struct rvfi_op *op)
{
	struct rvfi_peer *p = op->peer;
	struct rvfi_hdr h;
	int ret;

	op->msg_id = ++ep->next_msg_id;
	/* Same node: rv connects nodes, the data goes as RDATA (no MR). */
	if (!p->local) {
		if (!p->node)
			p->node = rvfi_node_get(ep, p->addr.ip);
		node_usable(ep, p->node, true);
		/* Registering now overlaps the RTS/CTS round trip. */
		ret = rv_reg_mem(ep->rv, op->buf, op->len, 0, NULL);
		op->mr = ret > 0 ? ret : 0;
		if (ret < 0)
			RVFI_DBG("rv_reg_mem(%zu): %s, data will go over TCP\n",
				 op->len, strerror(-ret));
	}
	memset(&h, 0, sizeof(h));
	h.op = RVFI_OP_RTS;
	h.flags = (op->cq_flags & FI_TAGGED) ? RVFI_F_TAGGED : 0;
	if (op->has_data)
		h.flags |= RVFI_F_DATA;
	h.tag = op->tag;
	h.data = op->has_data ? op->data : 0;
	h.len = op->len;
	h.msg_id = op->msg_id;
	ret = rvfi_tcp_send(ep, p, &h, NULL, false, NULL);
	if (ret) {
		if (op->mr)
			rv_dereg_mem(ep->rv, op->mr);
		op->mr = 0;
		return ret;
	}
	op->state = RVFI_ST_WAIT_CTS;
	rvfi_list_add_tail(&p->rndv_sends, &op->link);
	return 0;
}

/*
 * The data over TCP: the op completes when the frame is written, or, for
 * FI_TRANSMIT_COMPLETE and FI_DELIVERY_COMPLETE, when the receiver acks
 * it (RVFI_F_ACK): a written frame is only in our socket.
 */
static void send_rdata(struct rvfi_ep *ep, struct rvfi_op *op)
{
	struct rvfi_hdr h;
	int ret;

	memset(&h, 0, sizeof(h));
	h.op = RVFI_OP_RDATA;
	h.token = op->token;
	h.len = op->xfer;
	if (op->ack) {
		h.flags = RVFI_F_ACK;
		h.msg_id = op->msg_id;
		rvfi_list_add_tail(&op->peer->ack_wait, &op->link);
	}
	ep->n_rdata_tx++;
	ret = rvfi_tcp_send(ep, op->peer, &h, op->buf, false, op);
	if (ret) {
		if (op->ack)
			rvfi_list_del(&op->link);
		rvfi_complete_err(op, FI_EIO, 0);
	}
}

/* The next write of @op: up to the end of its remote key chunk. */
static void next_write(struct rvfi_ep *ep, struct rvfi_op *op,
		       struct rv_write *w)
{
	struct rvfi_node *n = op->peer->node;
	uint64_t raddr = op->raddr + op->posted;
	uint64_t len = op->xfer - op->posted;

	memset(w, 0, sizeof(*w));
	w->rkey = op->rkey;
	if (op->nkeys > 1) {
		uint64_t span = rv_rkey_span(raddr, op->rkey_shift);

		if (len > span)
			len = span;
		w->rkey = op->rkeys[rv_rkey_index(op->raddr, raddr,
						  op->rkey_shift)];
	}
	w->wr_id = (uintptr_t)op;
	w->local_addr = (uintptr_t)op->buf + op->posted;
	w->remote_addr = raddr;
	w->length = len;
	w->conn_handle = n ? n->handle : 0;
	w->mr_handle = op->mr;
	w->imm = rv_imm(ep->slot_bits, ntohl(op->peer->addr.slot), op->token);
}

/* Every write of @op has completed: done, or the data goes over TCP. */
static void writes_done(struct rvfi_ep *ep, struct rvfi_op *op)
{
	if (!op->write_failed) {
		rvfi_complete_ok(op);
		return;
	}
	/* The receiver still waits; no write of ours can land any more. */
	send_rdata(ep, op);
}

/*
 * Post what is left of @op's writes.  @op is on no list; it ends on
 * @ep->write_pending (queues full or connecting: retried from progress)
 * or @ep->writing (all posted, completions due).
 */
static void post_write(struct rvfi_ep *ep, struct rvfi_op *op)
{
	struct rvfi_node *n = op->peer->node;
	struct rv_write w;
	int ret = 0;

	while (op->posted < op->xfer) {
		next_write(ep, op, &w);
		ret = rv_post_write(ep->rv, &w);
		if (ret)
			break;
		op->posted += w.length;
		op->writes++;
	}
	if (!ret) {
		op->state = RVFI_ST_WRITING;
		rvfi_list_add_tail(&ep->writing, &op->link);
		return;
	}
	/* Not connected yet, or queues full: retried from progress. */
	if (ret == -EAGAIN || (ret == -EPIPE && node_usable(ep, n, false) &&
			       n->state == RV_CONN_STATE_CONNECTING)) {
		op->state = RVFI_ST_WRITE_PENDING;
		rvfi_list_add_tail(&ep->write_pending, &op->link);
		return;
	}
	RVFI_WARN("rv_post_write(%zu bytes): %s, sending over TCP\n",
		  op->xfer, strerror(-ret));
	op->write_failed = true;
	op->posted = op->xfer;
	if (!op->writes) {
		send_rdata(ep, op);
		return;
	}
	/* Those in flight complete first. */
	op->state = RVFI_ST_WRITING;
	rvfi_list_add_tail(&ep->writing, &op->link);
}

/* A CTS from @from: write (or send) the data it asks for. */
void rvfi_rndv_cts(struct rvfi_ep *ep, struct rvfi_peer *from,
		   const struct rvfi_hdr *h, const void *payload)
{
	struct rvfi_list *pos, *tmp;
	struct rvfi_op *op = NULL;

	rvfi_list_for_each_safe(pos, tmp, &from->rndv_sends) {
		struct rvfi_op *o = container_of(pos, struct rvfi_op, link);

		if (o->msg_id == h->msg_id) {
			op = o;
			break;
		}
	}
	if (!op) {
		RVFI_WARN("CTS for unknown message %llu\n",
			  (unsigned long long)h->msg_id);
		return;
	}
	rvfi_list_del(&op->link);
	if (!h->len) {
		/* The receiver takes nothing (zero-length buffer). */
		rvfi_complete_ok(op);
		return;
	}
	op->xfer = h->len < op->len ? h->len : op->len;
	op->token = h->token;
	op->raddr = h->raddr;
	op->rkey = h->rkey;
	op->nkeys = h->nkeys;
	op->rkey_shift = h->rkey_shift;
	if (op->nkeys > 1 && !(h->flags & RVFI_F_TCP)) {
		uint32_t i;

		/* A peer's shift must make sense before we index with it. */
		op->rkeys = h->rkey_shift >= 12 && h->rkey_shift < 64 ?
			    malloc(op->nkeys * sizeof(uint32_t)) : NULL;
		if (!op->rkeys) {
			send_rdata(ep, op);
			return;
		}
		for (i = 0; i < op->nkeys; i++) {
			uint32_t k;

			memcpy(&k, (const char *)payload + 4 * i, 4);
			op->rkeys[i] = le32toh(k);
		}
		if (rv_rkey_index(op->raddr, op->raddr + op->xfer - 1,
				  op->rkey_shift) >= op->nkeys) {
			RVFI_WARN("CTS with %u keys for %zu bytes\n",
				  op->nkeys, op->xfer);
			send_rdata(ep, op);
			return;
		}
	}
	if ((h->flags & RVFI_F_TCP) || !op->mr ||
	    !node_usable(ep, op->peer->node, false)) {
		send_rdata(ep, op);
		return;
	}
	post_write(ep, op);
}

/* ---- receiver ------------------------------------------------------------ */

static bool token_take(struct rvfi_ep *ep, struct rvfi_op *op)
{
	uint32_t i, idx;

	for (i = 0; i < ep->ntokens; i++) {
		idx = (ep->token_seq + i) & (ep->ntokens - 1);
		if (!ep->tokens[idx])
			break;
	}
	if (i == ep->ntokens)
		return false;
	ep->token_seq += i + 1;
	ep->tokens[idx] = op;
	/* The sequence above the index bits tells reuses apart. */
	op->token = ((ep->token_seq * ep->ntokens) | idx) &
		    ep->token_user_mask;
	return true;
}

static struct rvfi_op *token_find(struct rvfi_ep *ep, uint32_t token)
{
	struct rvfi_op *op = ep->tokens[token & (ep->ntokens - 1)];

	return op && op->token == token ? op : NULL;
}

static void send_cts(struct rvfi_ep *ep, struct rvfi_op *op);

static void token_put(struct rvfi_ep *ep, struct rvfi_op *op)
{
	ep->tokens[op->token & (ep->ntokens - 1)] = NULL;
	if (!rvfi_list_empty(&ep->token_wait)) {
		struct rvfi_op *w = container_of(ep->token_wait.next,
						 struct rvfi_op, link);

		rvfi_list_del(&w->link);
		send_cts(ep, w);
	}
}

static void recv_done(struct rvfi_ep *ep, struct rvfi_op *op)
{
	token_put(ep, op);
	if (op->olen)
		rvfi_complete_err(op, FI_ETRUNC, op->olen);
	else
		rvfi_complete_ok(op);
}

/*
 * Register @op's buffer for the sender's writes.  Returns the handle and
 * fills @h's keys; *@keys is the CTS payload (little-endian) when there
 * are several, to be freed by the caller.
 */
static int reg_recv_buf(struct rvfi_ep *ep, struct rvfi_op *op,
			struct rvfi_hdr *h, uint32_t **keys)
{
	struct rv_reg_mem reg;
	uint32_t *k = NULL;
	uint32_t nr = 1, i;
	int ret;

	*keys = NULL;
	for (;;) {
		k = malloc(nr * sizeof(*k));
		if (!k)
			return -ENOMEM;
		ret = rv_reg_mem_keys(ep->rv, op->buf, op->xfer,
				      RV_ACCESS_REMOTE_WRITE, &reg, k, nr);
		if (ret != -EOVERFLOW || reg.nr_rkeys <= nr)
			break;
		/* The registration stays cached: the retry is a hit. */
		nr = reg.nr_rkeys;
		free(k);
	}
	if (ret < 0) {
		free(k);
		return ret;
	}
	h->raddr = reg.iova;
	h->rkey = reg.rkey;
	h->nkeys = reg.nr_rkeys;
	h->rkey_shift = reg.rkey_shift;
	op->writes = reg.nr_rkeys;
	if (reg.nr_rkeys > 1) {
		for (i = 0; i < reg.nr_rkeys; i++)
			k[i] = htole32(k[i]);
		*keys = k;
	} else {
		free(k);
	}
	return ret;
}

static void send_cts(struct rvfi_ep *ep, struct rvfi_op *op)
{
	struct rvfi_peer *from = op->from;
	uint32_t *keys = NULL;
	struct rvfi_hdr h;
	int ret;

	memset(&h, 0, sizeof(h));
	h.op = RVFI_OP_CTS;
	h.msg_id = op->src_id;
	h.len = op->xfer;
	if (!op->xfer) {
		/* Nothing to write: answer and complete at once. */
		rvfi_tcp_send(ep, from, &h, NULL, false, NULL);
		if (op->olen)
			rvfi_complete_err(op, FI_ETRUNC, op->olen);
		else
			rvfi_complete_ok(op);
		return;
	}
	if (!token_take(ep, op)) {
		op->state = RVFI_ST_WAIT_TOKEN;
		rvfi_list_add_tail(&ep->token_wait, &op->link);
		return;
	}
	h.token = op->token;
	/* A peer on this node gets RVFI_F_TCP: node_usable(NULL) fails. */
	if (!from->node && !from->local)
		from->node = rvfi_node_get(ep, from->addr.ip);
	ret = node_usable(ep, from->node, true) ?
	      reg_recv_buf(ep, op, &h, &keys) : -ENOTCONN;
	if (ret > 0) {
		op->mr = ret;
	} else {
		RVFI_DBG("rv_reg_mem_keys(%zu): %s, data will go over TCP\n",
			 op->xfer, strerror(-ret));
		h.flags = RVFI_F_TCP;
	}
	op->state = RVFI_ST_WAIT_DATA;
	/* The keys are copied into the frame. */
	ret = rvfi_tcp_send(ep, from, &h, keys, true, NULL);
	free(keys);
	if (ret) {
		token_put(ep, op);
		rvfi_complete_err(op, FI_EIO, 0);
	}
}

/* A receive matched an RTS (msg.c filled in xfer, olen, from, src_id). */
void rvfi_rndv_matched(struct rvfi_ep *ep, struct rvfi_op *op)
{
	send_cts(ep, op);
}

/*
 * How many bytes an RDATA of @from for @token may carry: what the receive
 * holding the token asked for in its CTS, or -1 if @from holds no such
 * token (finished already, or never @from's): its data is then dropped.
 */
int64_t rvfi_rndv_rdata_room(struct rvfi_ep *ep, struct rvfi_peer *from,
			     uint32_t token)
{
	struct rvfi_op *op = token_find(ep, token);

	return op && op->from == from ? (int64_t)op->xfer : -1;
}

void rvfi_rndv_rdata(struct rvfi_ep *ep, struct rvfi_peer *from,
		     const struct rvfi_hdr *h, const void *payload)
{
	struct rvfi_op *op = token_find(ep, h->token);

	/* Only the peer the CTS went to may fill the receive. */
	if (!op || op->from != from) {
		/* The write landed first and completed the receive. */
		RVFI_DBG("RDATA for a finished token %u\n", h->token);
		return;
	}
	if (h->len && payload)
		memcpy(op->buf, payload, h->len < op->xfer ? h->len : op->xfer);
	recv_done(ep, op);
}

/* ---- rv's event ring ----------------------------------------------------- */

static void on_event(struct rvfi_ep *ep, const struct rv_event *e)
{
	struct rvfi_op *op;

	if (e->kind == RV_EVENT_SEND) {
		op = (struct rvfi_op *)(uintptr_t)e->wr_id;
		if (e->status && !op->write_failed) {
			/* The receiver still waits: TCP once all are done. */
			RVFI_WARN("rv write of %zu bytes failed (status %u), sending over TCP\n",
				  op->xfer, e->status);
			op->write_failed = true;
		}
		/* Pending ones need a write that can land: stop posting. */
		if (op->write_failed)
			op->posted = op->xfer;
		if (--op->writes || op->posted < op->xfer)
			return;
		rvfi_list_del(&op->link);
		writes_done(ep, op);
		return;
	}
	if (e->kind == RV_EVENT_RECV) {
		op = token_find(ep, rv_imm_user(ep->slot_bits, e->imm));
		/* One RECV per key: the last says every write landed. */
		if (op && !--op->writes)
			recv_done(ep, op);
		else
			RVFI_DBG("RECV event for no receive (imm %#x)\n",
				 e->imm);
	}
}

void rvfi_rndv_progress(struct rvfi_ep *ep)
{
	struct rv_event evs[64];
	struct rvfi_list retry, *pos, *tmp;
	int n, i;

	do {
		n = rv_poll_events(ep->rv, evs, 64);
		for (i = 0; i < n; i++)
			on_event(ep, &evs[i]);
	} while (n == 64);
	/* A lost event is a message that never completes: say so. */
	if (rv_ring_overflows(ep->rv) != ep->ring_overflows) {
		ep->ring_overflows = rv_ring_overflows(ep->rv);
		RVFI_WARN("rv event ring overflowed (%llu events lost so far)\n",
			  (unsigned long long)ep->ring_overflows);
	}

	if (rvfi_list_empty(&ep->write_pending))
		return;
	/* Retry each pending write once; post_write() re-queues EAGAINs. */
	rvfi_list_init(&retry);
	rvfi_list_for_each_safe(pos, tmp, &ep->write_pending) {
		rvfi_list_del(pos);
		rvfi_list_add_tail(&retry, pos);
	}
	rvfi_list_for_each_safe(pos, tmp, &retry) {
		rvfi_list_del(pos);
		post_write(ep, container_of(pos, struct rvfi_op, link));
	}
}

/* @p is gone: its rendezvous sends waiting for a CTS fail. */
void rvfi_rndv_peer_failed(struct rvfi_ep *ep, struct rvfi_peer *p)
{
	struct rvfi_list *pos, *tmp;

	(void)ep;
	rvfi_list_for_each_safe(pos, tmp, &p->rndv_sends) {
		rvfi_list_del(pos);
		rvfi_complete_err(container_of(pos, struct rvfi_op, link),
				  FI_EIO, 0);
	}
}

static void free_list(struct rvfi_list *head)
{
	struct rvfi_list *pos, *tmp;

	rvfi_list_for_each_safe(pos, tmp, head) {
		rvfi_list_del(pos);
		rvfi_op_free(container_of(pos, struct rvfi_op, link));
	}
}

/* Endpoint close: ops still in flight are dropped without completion. */
void rvfi_rndv_cleanup(struct rvfi_ep *ep)
{
	struct rvfi_list *pos, *tmp;
	uint32_t i;

	free_list(&ep->write_pending);
	free_list(&ep->writing);
	free_list(&ep->token_wait);
	for (i = 0; ep->tokens && i < ep->ntokens; i++) {
		if (ep->tokens[i])
			rvfi_op_free(ep->tokens[i]);
		ep->tokens[i] = NULL;
	}
	rvfi_list_for_each_safe(pos, tmp, &ep->nodes) {
		rvfi_list_del(pos);
		free(container_of(pos, struct rvfi_node, link));
	}
}
