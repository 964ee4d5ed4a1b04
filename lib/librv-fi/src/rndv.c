// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The rendezvous path, for messages above FI_RV_RNDV_THRESHOLD:
 *
 *   sender                                receiver
 *   rv_reg_mem(buf); RTS{id, tag, len} -->
 *                                         match (or queue as unexpected)
 *                                         rv_reg_mem(buf, REMOTE_WRITE)
 *              <-- CTS{id, iova, rkeys, len to write, token}
 *   rv_post_writes(imm = slot | token) ==> (RDMA WRITE with immediate)
 *   ... one write per piece ...
 *   RV_EVENT_SEND each: send complete     RV_EVENT_RECV(token) each:
 *                                         the last one: recv done
 *
 * Pipelined: the receiver registers its whole buffer (one CTS carries
 * every key: rv gives a remote-access registration one key per aligned
 * chunk of 1 << rkey_shift bytes, 2 MiB on rxe) and chooses the write
 * size, 1 << wshift bytes (CTS @data): about one piece per QP of the
 * connection, 64 KiB to 1 MiB, never more than a key chunk.  Pieces are
 * aligned on the remote address, so both sides count the same number of
 * them and none crosses a key chunk; each is one write with immediate,
 * and rv stripes them over the connection's QPs.  The receiver counts one
 * RECV per piece.  The sender registers its buffer in windows of about
 * RVFI_REG_WINDOW (the first at RTS time, overlapping the handshake; each
 * next one once the current one's writes are posted, while they fly).
 *
 * Bounded by the event ring: a SEND event per write lands in the
 * sender's ring, a RECV per piece in the receiver's.  An endpoint (one rv
 * file, one ring) posts a write only while fewer than half its ring's
 * entries are taken by unreaped SEND events, and sends a CTS only if the
 * RECVs it announces fit the other half (less RVFI_RING_SLACK); the rest
 * waits, in order, for events to be reaped.  The kernel thus never has
 * more events for the ring than it holds; should it still report an
 * overflow, every message waiting for an event fails (ring_overflowed()).
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
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "rvfi.h"

#define RVFI_CONN_TIMEOUT_MS	120000
#define RVFI_RECONNECT_MS	10000

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000ull + ts.tv_nsec / 1000;
}

uint64_t rvfi_now_ms(void)
{
	return now_us() / 1000;
}

/* ---- FI_RV_STATS --------------------------------------------------------- */

/* Microseconds, or 0 (nothing is timed) without FI_RV_STATS. */
uint64_t rvfi_stat_now(void)
{
	struct timespec ts;

	if (!rvfi_env.stats)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000ull + ts.tv_nsec / 1000;
}

void rvfi_stat_add(struct rvfi_dur *d, uint64_t t0)
{
	uint64_t dt;

	if (!rvfi_env.stats || !t0)
		return;
	dt = rvfi_stat_now() - t0;
	d->n++;
	d->sum += dt;
	if (dt > d->max)
		d->max = dt;
}

static void dur_print(const char *name, const struct rvfi_dur *d)
{
	fprintf(stderr, "  %-10s n %llu avg %llu us max %llu us\n", name,
		(unsigned long long)d->n,
		(unsigned long long)(d->n ? d->sum / d->n : 0),
		(unsigned long long)d->max);
}

void rvfi_stats_print(struct rvfi_ep *ep)
{
	const struct rvfi_stats *st = &ep->st;

	if (!rvfi_env.stats)
		return;
	fprintf(stderr, "rv stats pid %d slot %d: progress %llu, ring events %llu, rv_post_writes %llu calls %llu writes, ring held tx %u/%u rx %u/%u, waits for ring room %llu\n",
		(int)getpid(), ep->slot, (unsigned long long)st->progress,
		(unsigned long long)st->ring_events,
		(unsigned long long)st->post_calls,
		(unsigned long long)st->writes, st->tx_used_max, ep->tx_max,
		st->rx_used_max, ep->rx_max,
		(unsigned long long)ep->n_ring_waits);
	dur_print("progress", &st->in_progress);
	dur_print("reg send", &st->reg_tx);
	dur_print("reg recv", &st->reg_rx);
	dur_print("dereg", &st->dereg);
	dur_print("RTS->CTS", &st->rts_cts);
	dur_print("CTS->done", &st->cts_done);
	dur_print("match->CTS", &st->match_cts);
	dur_print("CTS->data", &st->cts_data);
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

/*
 * Registers [@lo, @hi) of @op's buffer as the window writes are now taken
 * from.  The first window (at RTS time) is op->mr; later ones go on
 * op->wmrs, all dropped when the op is freed.
 */
static int reg_window(struct rvfi_ep *ep, struct rvfi_op *op, size_t lo,
		      size_t hi)
{
	uint64_t t0 = rvfi_stat_now();
	int *w, ret;

	ret = rv_reg_mem(ep->rv, (char *)op->buf + lo, hi - lo, 0, NULL);
	rvfi_stat_add(&ep->st.reg_tx, t0);
	if (ret <= 0)
		return ret ? ret : -EINVAL;
	if (!op->mr) {
		op->mr = ret;
	} else {
		w = realloc(op->wmrs, (op->nwmr + 1) * sizeof(*w));
		if (!w) {
			rv_dereg_mem(ep->rv, ret);
			return -ENOMEM;
		}
		op->wmrs = w;
		w[op->nwmr++] = ret;
	}
	op->cur_mr = ret;
	op->mr_lo = lo;
	op->mr_hi = hi;
	return 0;
}

int rvfi_rndv_send(struct rvfi_ep *ep, struct rvfi_op *op)
{
	struct rvfi_peer *p = op->peer;
	struct rvfi_hdr h;
	int ret;

	op->msg_id = ++ep->next_msg_id;
	/* Same node: rv connects nodes, the data goes as RDATA (no MR). */
	if (!p->local && !ep->rv_broken) {
		if (!p->node)
			p->node = rvfi_node_get(ep, p->addr.ip);
		node_usable(ep, p->node, true);
		/*
		 * The first window now, overlapping the RTS/CTS round trip;
		 * the next ones while the writes of the previous one fly.
		 */
		ret = reg_window(ep, op, 0, op->len < RVFI_REG_WINDOW ?
				 op->len : RVFI_REG_WINDOW);
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
	op->t_a = rvfi_stat_now();
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

/*
 * Writes into [@raddr, @raddr + @len) come in pieces of 1 << @wshift bytes
 * aligned on the remote address (so none crosses a key chunk, whose size is
 * a larger power of two): how many.  Both sides count them this way.
 */
static uint64_t nr_pieces(uint64_t raddr, uint64_t len, unsigned int wshift)
{
	return ((raddr + len - 1) >> wshift) - (raddr >> wshift) + 1;
}

/* Offset in @op where the piece holding offset @off ends. */
static size_t piece_end(const struct rvfi_op *op, size_t off)
{
	uint64_t r = op->raddr + off;
	size_t end = (size_t)(((r >> op->wshift) + 1) << op->wshift) -
		     (size_t)op->raddr;

	return end < op->xfer ? end : op->xfer;
}

/* The next write of @op: one piece, from op->posted. */
static void next_write(struct rvfi_ep *ep, struct rvfi_op *op,
		       struct rv_write *w)
{
	struct rvfi_node *n = op->peer->node;
	uint64_t raddr = op->raddr + op->posted;

	memset(w, 0, sizeof(*w));
	w->rkey = op->rkey;
	if (op->nkeys > 1)
		w->rkey = op->rkeys[rv_rkey_index(op->raddr, raddr,
						  op->rkey_shift)];
	w->wr_id = (uintptr_t)op;
	w->local_addr = (uintptr_t)op->buf + op->posted;
	w->remote_addr = raddr;
	w->length = piece_end(op, op->posted) - op->posted;
	w->conn_handle = n ? n->handle : 0;
	w->mr_handle = op->cur_mr;
	w->imm = rv_imm(ep->slot_bits, ntohl(op->peer->addr.slot), op->token);
}

/*
 * Makes the piece at op->posted covered by the current window: registers
 * the next one, [posted, about RVFI_REG_WINDOW on, to a piece's end).
 */
static int window_for_next(struct rvfi_ep *ep, struct rvfi_op *op)
{
	size_t end = piece_end(op, op->posted);
	size_t hi;

	if (op->posted >= op->mr_lo && end <= op->mr_hi)
		return 0;
	hi = op->posted + RVFI_REG_WINDOW;
	hi = hi >= op->xfer ? op->xfer : piece_end(op, hi - 1);
	return reg_window(ep, op, op->posted, hi);
}

/* Every write of @op has completed: done, or the data goes over TCP. */
static void writes_done(struct rvfi_ep *ep, struct rvfi_op *op)
{
	rvfi_stat_add(&ep->st.cts_done, op->t_b);
	if (!op->write_failed) {
		rvfi_complete_ok(op);
		return;
	}
	/* The receiver still waits; no write of ours can land any more. */
	send_rdata(ep, op);
}

#define RVFI_POST_BATCH	16

/*
 * Post what is left of @op's writes, as many as the ring has room for
 * the SEND events of.  @op is on no list; it ends on @ep->write_pending
 * (no ring room, queues full or connecting: retried from progress) or
 * @ep->writing (all posted, completions due).
 */
static void post_write(struct rvfi_ep *ep, struct rvfi_op *op)
{
	struct rvfi_node *n = op->peer->node;
	struct rv_write w[RVFI_POST_BATCH];
	unsigned int nw, i;
	size_t save;
	int ret = 0;

	while (op->posted < op->xfer && ep->tx_used < ep->tx_max) {
		ret = window_for_next(ep, op);
		if (ret)
			break;
		/* A batch: pieces of the current window, as room allows. */
		save = op->posted;
		for (nw = 0; nw < RVFI_POST_BATCH && op->posted < op->xfer &&
		     ep->tx_used + nw < ep->tx_max &&
		     piece_end(op, op->posted) <= op->mr_hi; nw++) {
			next_write(ep, op, &w[nw]);
			op->posted += w[nw].length;
		}
		op->posted = save;
		ret = rv_post_writes(ep->rv, w, nw);
		ep->st.post_calls++;
		if (ret > 0) {
			for (i = 0; i < (unsigned int)ret; i++)
				op->posted += w[i].length;
			op->writes += ret;
			ep->tx_used += ret;
			ep->st.writes += ret;
			if (ep->tx_used > ep->st.tx_used_max)
				ep->st.tx_used_max = ep->tx_used;
		}
		if (ret < 0)
			break;
		if ((unsigned int)ret < nw) {
			/* A batch does not say why it stopped: post it alone. */
			next_write(ep, op, &w[0]);
			ret = rv_post_write(ep->rv, &w[0]);
			if (ret)
				break;
			op->posted += w[0].length;
			op->writes++;
			ep->tx_used++;
		}
		ret = 0;
	}
	if (!ret && op->posted == op->xfer) {
		op->state = RVFI_ST_WRITING;
		rvfi_list_add_tail(&ep->writing, &op->link);
		return;
	}
	/* No ring room, not connected yet, or queues full: from progress. */
	if (!ret || ret == -EAGAIN ||
	    (ret == -EPIPE && node_usable(ep, n, false) &&
	     n->state == RV_CONN_STATE_CONNECTING)) {
		/* Refused by rv: not again before a completion or the timer. */
		if (ret && n)
			n->refused_us = now_us();
		/* Counted once per message that has to wait. */
		if (!ret && op->state != RVFI_ST_WRITE_PENDING)
			ep->n_ring_waits++;
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
	uint32_t i;

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
	rvfi_stat_add(&ep->st.rts_cts, op->t_a);
	op->t_b = rvfi_stat_now();
	if (!h->len) {
		/* The receiver takes nothing (zero-length buffer). */
		rvfi_complete_ok(op);
		return;
	}
	op->xfer = h->len < op->len ? h->len : op->len;
	op->token = h->token;
	if ((h->flags & RVFI_F_TCP) || !op->mr || ep->rv_broken ||
	    !node_usable(ep, op->peer->node, false)) {
		send_rdata(ep, op);
		return;
	}
	op->raddr = h->raddr;
	op->rkey = h->rkey;
	op->nkeys = h->nkeys;
	op->rkey_shift = h->rkey_shift;
	op->wshift = (unsigned int)h->data;
	/*
	 * A peer's shifts must make sense before we index with them: pieces
	 * of 4 KiB..RV_MAX_WRITE_BYTES, none across a key chunk.
	 */
	if (op->wshift < 12 || op->wshift > 30 || op->raddr + op->xfer < op->raddr ||
	    (op->nkeys > 1 && (h->rkey_shift < 12 || h->rkey_shift >= 64 ||
			       op->wshift > op->rkey_shift))) {
		RVFI_WARN("CTS with write shift %u, key shift %u: sending over TCP\n",
			  op->wshift, h->rkey_shift);
		send_rdata(ep, op);
		return;
	}
	if (op->nkeys > 1) {
		op->rkeys = malloc(op->nkeys * sizeof(uint32_t));
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
	/* rv refuses writes to that node for now: behind those waiting. */
	if (op->peer->node && op->peer->node->refused_us) {
		op->state = RVFI_ST_WRITE_PENDING;
		rvfi_list_add_tail(&ep->write_pending, &op->link);
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

static bool cts_try(struct rvfi_ep *ep, struct rvfi_op *op);

/*
 * Receives waiting for a token or for ring room get their CTS, in order,
 * while there is room.  Not reentered: a CTS that fails completes its
 * receive, which releases a token and would come back here.
 */
static void cts_drain(struct rvfi_ep *ep)
{
	struct rvfi_op *w;

	if (ep->cts_draining)
		return;
	ep->cts_draining = true;
	while (!rvfi_list_empty(&ep->token_wait)) {
		w = container_of(ep->token_wait.next, struct rvfi_op, link);
		/* Waiting for ring room (@writes RECVs): no retry before. */
		if (w->writes && ep->rx_used + w->writes > ep->rx_max)
			break;
		rvfi_list_del(&w->link);
		if (!cts_try(ep, w)) {
			/* Still no room: it stays first in line. */
			w->link.next = ep->token_wait.next;
			w->link.prev = &ep->token_wait;
			ep->token_wait.next->prev = &w->link;
			ep->token_wait.next = &w->link;
			break;
		}
	}
	ep->cts_draining = false;
}

static void token_put(struct rvfi_ep *ep, struct rvfi_op *op)
{
	ep->tokens[op->token & (ep->ntokens - 1)] = NULL;
	/* RECVs that will not come (the data came as RDATA) free room. */
	ep->rx_used -= op->rx_reserved;
	op->rx_reserved = 0;
	cts_drain(ep);
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

	/*
	 * Room for every key at once once the chunk size is known: a short
	 * array costs a second ioctl (-EOVERFLOW, then the retry).
	 */
	if (ep->rkey_shift)
		nr = (uint32_t)nr_pieces((uintptr_t)op->buf, op->xfer,
					 ep->rkey_shift);
	*keys = NULL;
	for (;;) {
		uint64_t t0;

		k = malloc(nr * sizeof(*k));
		if (!k)
			return -ENOMEM;
		t0 = rvfi_stat_now();
		ret = rv_reg_mem_keys(ep->rv, op->buf, op->xfer,
				      RV_ACCESS_REMOTE_WRITE, &reg, k, nr);
		rvfi_stat_add(&ep->st.reg_rx, t0);
		/* The device's key chunk: the same for every registration. */
		if (reg.rkey_shift >= 12 && reg.rkey_shift < 48 &&
		    (ret > 0 || ret == -EOVERFLOW))
			ep->rkey_shift = reg.rkey_shift;
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
	if (reg.nr_rkeys > 1) {
		for (i = 0; i < reg.nr_rkeys; i++)
			k[i] = htole32(k[i]);
		*keys = k;
	} else {
		free(k);
	}
	return ret;
}

/*
 * The write size for @op's @xfer bytes at @raddr: about one piece per QP
 * of the connection (rv stripes writes over them), RVFI_WSHIFT_MIN to
 * RVFI_WSHIFT_MAX, never across a key chunk; larger if the RECVs would
 * not fit the ring's receive half.  0 if they never can: RDATA then.
 */
static unsigned int pick_wshift(struct rvfi_ep *ep, const struct rvfi_hdr *h,
				size_t xfer)
{
	unsigned int ws = RVFI_WSHIFT_MIN;
	unsigned int max = h->nkeys > 1 ? h->rkey_shift : 30;

	while (ws < RVFI_WSHIFT_MAX && ((size_t)1 << ws) * ep->num_conn < xfer)
		ws++;
	if (ws > max)
		ws = max;
	while (nr_pieces(h->raddr, xfer, ws) > ep->rx_max && ws < max)
		ws++;
	return nr_pieces(h->raddr, xfer, ws) <= ep->rx_max ? ws : 0;
}

/*
 * Sends @op's CTS if a token and the ring room for its RECVs are free;
 * false if not (nothing held: the caller queues it).
 */
static bool cts_try(struct rvfi_ep *ep, struct rvfi_op *op)
{
	struct rvfi_peer *from = op->from;
	uint32_t *keys = NULL;
	struct rvfi_hdr h;
	unsigned int ws = 0;
	uint64_t n = 0;
	int ret;

	memset(&h, 0, sizeof(h));
	h.op = RVFI_OP_CTS;
	h.msg_id = op->src_id;
	h.len = op->xfer;
	op->writes = 0;
	if (!token_take(ep, op))
		return false;
	h.token = op->token;
	/* A peer on this node gets RVFI_F_TCP: node_usable(NULL) fails. */
	if (!from->node && !from->local)
		from->node = rvfi_node_get(ep, from->addr.ip);
	ret = !ep->rv_broken && node_usable(ep, from->node, true) ?
	      reg_recv_buf(ep, op, &h, &keys) : -ENOTCONN;
	if (ret > 0) {
		ws = pick_wshift(ep, &h, op->xfer);
		n = ws ? nr_pieces(h.raddr, op->xfer, ws) : 0;
		if (n && ep->rx_used + n > ep->rx_max) {
			/* The ring could not report them all: wait. */
			rv_dereg_mem(ep->rv, ret);
			free(keys);
			ep->tokens[op->token & (ep->ntokens - 1)] = NULL;
			ep->n_ring_waits++;
			op->writes = (uint32_t)n;	/* what it waits for */
			return false;
		}
		if (!n) {
			RVFI_INFO("%zu bytes need more writes than the ring holds: over TCP\n",
				  op->xfer);
			rv_dereg_mem(ep->rv, ret);
			free(keys);
			keys = NULL;
			ret = -ENOSPC;
		}
	}
	if (ret > 0) {
		op->mr = ret;
		op->writes = (uint32_t)n;
		op->rx_reserved = (uint32_t)n;
		ep->rx_used += (uint32_t)n;
		if (ep->rx_used > ep->st.rx_used_max)
			ep->st.rx_used_max = ep->rx_used;
		h.data = ws;
	} else {
		RVFI_DBG("rv_reg_mem_keys(%zu): %s, data will go over TCP\n",
			 op->xfer, strerror(-ret));
		memset(&h.raddr, 0, sizeof(h) - offsetof(struct rvfi_hdr, raddr));
		h.flags = RVFI_F_TCP;
	}
	op->state = RVFI_ST_WAIT_DATA;
	/* The keys are copied into the frame. */
	ret = rvfi_tcp_send(ep, from, &h, keys, true, NULL);
	free(keys);
	rvfi_stat_add(&ep->st.match_cts, op->t_a);
	op->t_b = rvfi_stat_now();
	if (ret) {
		token_put(ep, op);
		rvfi_complete_err(op, FI_EIO, 0);
	}
	return true;
}

static void send_cts(struct rvfi_ep *ep, struct rvfi_op *op)
{
	struct rvfi_hdr h;

	if (!op->xfer) {
		/* Nothing to write: answer and complete at once. */
		memset(&h, 0, sizeof(h));
		h.op = RVFI_OP_CTS;
		h.msg_id = op->src_id;
		rvfi_tcp_send(ep, op->from, &h, NULL, false, NULL);
		if (op->olen)
			rvfi_complete_err(op, FI_ETRUNC, op->olen);
		else
			rvfi_complete_ok(op);
		return;
	}
	/* In order: behind those already waiting. */
	if (!rvfi_list_empty(&ep->token_wait) || !cts_try(ep, op)) {
		op->state = RVFI_ST_WAIT_TOKEN;
		rvfi_list_add_tail(&ep->token_wait, &op->link);
	}
}

/* A receive matched an RTS (msg.c filled in xfer, olen, from, src_id). */
void rvfi_rndv_matched(struct rvfi_ep *ep, struct rvfi_op *op)
{
	op->t_a = rvfi_stat_now();
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
		if (ep->tx_used)
			ep->tx_used--;
		/* Its send queue slots are free: writes waiting may go. */
		if (op->peer->node)
			op->peer->node->refused_us = 0;
		/* Already failed by a ring overflow: kept until close. */
		if (op->dead)
			return;
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
		if (!op || !op->writes) {
			RVFI_DBG("RECV event for no receive (imm %#x)\n",
				 e->imm);
			return;
		}
		if (op->rx_reserved) {
			op->rx_reserved--;
			ep->rx_used--;
		}
		/* One RECV per piece: the last says every write landed. */
		if (!--op->writes) {
			rvfi_stat_add(&ep->st.cts_data, op->t_b);
			recv_done(ep, op);
		}
	}
}

/* An error completion for @op, which stays allocated on @ep->dead. */
static void fail_dead(struct rvfi_ep *ep, struct rvfi_op *op)
{
	struct rvfi_cq *cq = op->kind == RVFI_SEND ? ep->tx_cq : ep->rx_cq;

	/*
	 * The reserved entry becomes this one now, not when the op is freed
	 * at close: until then it would count twice against the CQ's size.
	 */
	rvfi_op_unreserve(op);
	if (cq)
		rvfi_cq_push_err(cq, op->context, op->cq_flags,
				 op->kind == RVFI_RECV ? op->xfer : 0,
				 op->kind == RVFI_RECV ? op->buf : NULL,
				 op->has_data ? op->data : 0,
				 (op->cq_flags & FI_TAGGED) ? op->tag : 0,
				 0, FI_EIO, -EOVERFLOW, op->src);
	op->dead = true;
	rvfi_list_add_tail(&ep->dead, &op->link);
}

/*
 * The kernel dropped events although the ring was never asked to hold
 * more than it has.  Which ones is unknown, so every message waiting for
 * one fails (FI_EIO, prov_errno -EOVERFLOW) instead of hanging: writes in
 * flight and receives expecting RECVs.  Their ops stay allocated (an
 * event may still name them) until the endpoint closes, and from now on
 * the endpoint sends all rendezvous data over TCP.
 */
static void ring_overflowed(struct rvfi_ep *ep)
{
	struct rvfi_list *pos, *tmp;
	struct rvfi_op *op;
	uint32_t i;

	RVFI_WARN("rv event ring overflowed (%llu events lost): failing every message in flight over rv, TCP from now on\n",
		  (unsigned long long)ep->ring_overflows);
	ep->rv_broken = true;
	rvfi_list_for_each_safe(pos, tmp, &ep->writing) {
		rvfi_list_del(pos);
		fail_dead(ep, container_of(pos, struct rvfi_op, link));
	}
	rvfi_list_for_each_safe(pos, tmp, &ep->write_pending) {
		rvfi_list_del(pos);
		fail_dead(ep, container_of(pos, struct rvfi_op, link));
	}
	for (i = 0; i < ep->ntokens; i++) {
		op = ep->tokens[i];
		if (!op || !op->rx_reserved)
			continue;
		ep->tokens[i] = NULL;
		fail_dead(ep, op);
	}
	ep->tx_used = 0;
	ep->rx_used = 0;
	cts_drain(ep);
}

void rvfi_rndv_progress(struct rvfi_ep *ep)
{
	struct rv_event evs[64];
	struct rvfi_list retry, *pos, *tmp;
	uint64_t now = 0;
	int n, i;

	do {
		n = rv_poll_events(ep->rv, evs, 64);
		if (n > 0)
			ep->st.ring_events += n;
		for (i = 0; i < n; i++)
			on_event(ep, &evs[i]);
	} while (n == 64);
	/* Impossible by construction (see struct rvfi_ep); loud if not. */
	if (rv_ring_overflows(ep->rv) != ep->ring_overflows) {
		ep->ring_overflows = rv_ring_overflows(ep->rv);
		ring_overflowed(ep);
	}
	/* RECVs reaped may have made room for waiting CTSs. */
	cts_drain(ep);

	if (rvfi_list_empty(&ep->write_pending))
		return;
	/*
	 * Retry each pending write once, in order; post_write() re-queues
	 * EAGAINs.  One refusal holds the node's other writes until a write
	 * to it completes or FI_RV_SQ_RETRY_US pass.
	 */
	rvfi_list_init(&retry);
	rvfi_list_for_each_safe(pos, tmp, &ep->write_pending) {
		rvfi_list_del(pos);
		rvfi_list_add_tail(&retry, pos);
	}
	rvfi_list_for_each_safe(pos, tmp, &retry) {
		struct rvfi_op *op = container_of(pos, struct rvfi_op, link);
		struct rvfi_node *node = op->peer->node;

		rvfi_list_del(pos);
		if (node && node->refused_us) {
			if (!now)
				now = now_us();
			/* @now may predate the marks of this pass. */
			if (now < node->refused_us + rvfi_env.sq_retry_us) {
				rvfi_list_add_tail(&ep->write_pending, pos);
				continue;
			}
			node->refused_us = 0;
		}
		post_write(ep, op);
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

	RVFI_INFO("ep slot %d: ring of %u entries, %llu waits for ring room, %llu overflows\n",
		  ep->slot, ep->ring_entries,
		  (unsigned long long)ep->n_ring_waits,
		  (unsigned long long)ep->ring_overflows);
	free_list(&ep->write_pending);
	free_list(&ep->writing);
	free_list(&ep->token_wait);
	free_list(&ep->dead);
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
