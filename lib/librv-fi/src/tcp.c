// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The TCP side: a listener per endpoint, an outgoing connection per peer
 * (opened on the first frame for it, all our frames to that peer in
 * order), and accepted connections carrying the peers' frames to us.
 *
 * Why TCP and not UD: TCP is reliable and flow controlled on rxe and on
 * any real NIC, so the provider needs no acknowledgements, retransmission
 * or reassembly of its own for eager messages and RTS/CTS; the price is a
 * socket per peer and direction and the kernel's TCP stack in the small
 * message path.  A UD transport with its own reliability is future work.
 *
 * Each direction has its own connection, so two endpoints that send to
 * each other at the same time never have to agree which of two
 * simultaneous connects survives: A's frames to B always go on A's
 * connection, which keeps them in order, and the same for B.  The one
 * exception: B acknowledges A's transmit- and delivery-complete messages
 * with ACK frames back on A's connection (rvfi_send_ack(), read_acks()).
 *
 * Every socket is non-blocking and in the domain's epoll set
 * (edge-triggered): progress reads and writes until EAGAIN.
 *
 * What an endpoint accepts from the network: sockets are bound to the
 * node's RDMA address (the GID's IPv4), not to every address.  A
 * connection's first frame must be a HELLO that carries the nonce of this
 * endpoint's address (or, for a published endpoint, one bound to a port
 * the application chose, no nonce: 0) and names a sender whose IPv4 is
 * the connection's source; anything else closes the connection without a
 * reply (counted, FI_WARN).  Every frame's payload is bounded before anything is
 * allocated for it: by its type's fixed size, RVFI_MAX_EAGER, the keys a
 * CTS may carry, or, for RDATA, the bytes the receive asked for in its
 * CTS.  A frame out of bounds closes that connection only.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rvfi.h"

#define RVFI_RBUF	65536
#define RVFI_MAX_BATCH	32

_Static_assert(RVFI_INJECT_SIZE <= RVFI_MAX_EAGER, "an inject is one EAGER");
_Static_assert(sizeof(struct rvfi_addr) == 24, "the address on the wire");
_Static_assert(sizeof(struct rvfi_hello) == 32, "HELLO on the wire");

struct rvfi_rbuf {
	size_t len, off;
	char data[RVFI_RBUF];
};

/* ---- wire byte order ----------------------------------------------------- */

static void hdr_swap(struct rvfi_hdr *w, const struct rvfi_hdr *h, bool out)
{
	*w = *h;
	if (out) {
		w->token = htole32(h->token);
		w->tag = htole64(h->tag);
		w->data = htole64(h->data);
		w->len = htole64(h->len);
		w->msg_id = htole64(h->msg_id);
		w->raddr = htole64(h->raddr);
		w->rkey = htole32(h->rkey);
		w->rkey_shift = htole16(h->rkey_shift);
		w->nkeys = htole32(h->nkeys);
	} else {
		w->token = le32toh(h->token);
		w->tag = le64toh(h->tag);
		w->data = le64toh(h->data);
		w->len = le64toh(h->len);
		w->msg_id = le64toh(h->msg_id);
		w->raddr = le64toh(h->raddr);
		w->rkey = le32toh(h->rkey);
		w->rkey_shift = le16toh(h->rkey_shift);
		w->nkeys = le32toh(h->nkeys);
	}
}

/* Bytes that follow the header (host byte order @h). */
static uint64_t payload_len(const struct rvfi_hdr *h)
{
	if (h->op == RVFI_OP_HELLO || h->op == RVFI_OP_EAGER ||
	    h->op == RVFI_OP_RDATA)
		return h->len;
	if (h->op == RVFI_OP_CTS && h->nkeys > 1)
		return (uint64_t)h->nkeys * sizeof(uint32_t);
	return 0;
}

/* ---- listener ------------------------------------------------------------ */

/*
 * @port (network order): the one the application chose (fi_getinfo's
 * service with FI_SOURCE, or its src_addr), else 0 for any.  A chosen
 * port is taken with SO_REUSEADDR, so that a server restarted on it does
 * not wait for its old connections' TIME_WAIT; two live endpoints still
 * cannot share it (EADDRINUSE, -FI_EADDRINUSE from fi_endpoint).
 */
int rvfi_tcp_listen(struct rvfi_ep *ep, uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = port };
	socklen_t len = sizeof(sin);
	struct epoll_event ev;
	int one = 1;

	ep->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK |
			       SOCK_CLOEXEC, 0);
	if (ep->listen_fd < 0)
		return -errno;
	if (port && setsockopt(ep->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one,
			       sizeof(one)))
		return -errno;
	/* Only the address in our name (the GID's): the RDMA network. */
	sin.sin_addr.s_addr = ep->dom->ip;
	if (bind(ep->listen_fd, (struct sockaddr *)&sin, sizeof(sin)) ||
	    listen(ep->listen_fd, 512) ||
	    getsockname(ep->listen_fd, (struct sockaddr *)&sin, &len))
		return -errno;
	ep->self.port = sin.sin_port;
	ep->listen_pe.kind = RVFI_PK_LISTEN;
	ep->listen_pe.ep = ep;
	ev.events = EPOLLIN;
	ev.data.ptr = &ep->listen_pe;
	if (epoll_ctl(ep->dom->epfd, EPOLL_CTL_ADD, ep->listen_fd, &ev))
		return -errno;
	return 0;
}

static void tune(int fd)
{
	int one = 1;

	/* RTS/CTS and small messages are latency-bound. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void do_accept(struct rvfi_ep *ep)
{
	for (;;) {
		struct sockaddr_in sin = { 0 };
		socklen_t slen = sizeof(sin);
		struct epoll_event ev;
		struct rvfi_inconn *c;
		int fd = accept4(ep->listen_fd, (struct sockaddr *)&sin, &slen,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR &&
			    errno != ECONNABORTED)
				RVFI_WARN("accept: %s\n", strerror(errno));
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return;
		}
		tune(fd);
		/* The receive buffer comes with the HELLO (read_hello()). */
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->fd = fd;
		c->sin = sin;
		c->pe.kind = RVFI_PK_IN;
		c->pe.ep = ep;
		/* EPOLLOUT: ACK frames that did not fit go when it has room. */
		ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
		ev.data.ptr = &c->pe;
		if (epoll_ctl(ep->dom->epfd, EPOLL_CTL_ADD, fd, &ev)) {
			free(c);
			close(fd);
			continue;
		}
		rvfi_list_add_tail(&ep->inconns, &c->link);
	}
}

/* ---- incoming frames ----------------------------------------------------- */

/* A frame whose payload does not fit in what was read is gathered here. */
struct rvfi_big {
	char *buf;
	size_t len, got;
};

void rvfi_inconn_close(struct rvfi_ep *ep, struct rvfi_inconn *c)
{
	(void)ep;
	close(c->fd);
	rvfi_list_del(&c->link);
	free(c->rbuf);
	free(c->ackq);
	if (c->big)
		free(c->big->buf);
	free(c->big);
	free(c);
}

/*
 * Refuses what @c sent: the connection will be closed, without a reply.
 * Logged with a running count, rate-limited to powers of two so that a
 * flood cannot flood the log.
 */
static void refuse(struct rvfi_ep *ep, struct rvfi_inconn *c, bool is_hello,
		   const char *why, const struct rvfi_hdr *h)
{
	uint64_t n = is_hello ? ++ep->n_hello_refused : ++ep->n_frames_refused;
	char ip[INET_ADDRSTRLEN];

	if (n & (n - 1))
		return;
	inet_ntop(AF_INET, &c->sin.sin_addr, ip, sizeof(ip));
	RVFI_WARN("%s from %s:%u refused (%s; op %u, length %llu), connection closed; %llu so far\n",
		  is_hello ? "HELLO" : "frame", ip, ntohs(c->sin.sin_port), why,
		  h->op, (unsigned long long)h->len, (unsigned long long)n);
}

/*
 * Checks a frame's header before anything is read or allocated for its
 * payload.  Returns 0 if the frame may be read (*@discard: read and
 * dropped, an RDATA whose receive is gone), -1 if the connection is to be
 * closed.
 */
static int frame_check(struct rvfi_ep *ep, struct rvfi_inconn *c,
		       const struct rvfi_hdr *h, bool *discard)
{
	int64_t room;

	*discard = false;
	if (!c->peer) {
		if (h->op != RVFI_OP_HELLO) {
			refuse(ep, c, true, "no HELLO first", h);
			return -1;
		}
		/* A HELLO without a target nonce (older layout) too. */
		if (h->len != sizeof(struct rvfi_hello)) {
			refuse(ep, c, true, "size: no target nonce", h);
			return -1;
		}
		return 0;
	}
	switch (h->op) {
	case RVFI_OP_HELLO:
		refuse(ep, c, false, "second HELLO", h);
		return -1;
	case RVFI_OP_EAGER:
		if (h->len <= RVFI_MAX_EAGER)
			return 0;
		refuse(ep, c, false, "EAGER above RVFI_MAX_EAGER", h);
		return -1;
	case RVFI_OP_RTS:
		/* No payload; a receive takes at most what it posted. */
		if (h->len <= RVFI_MAX_MSG_SIZE)
			return 0;
		refuse(ep, c, false, "RTS above max_msg_size", h);
		return -1;
	case RVFI_OP_CTS:
		if (h->nkeys <= RV_MAX_REG_KEYS && h->len <= RVFI_MAX_MSG_SIZE)
			return 0;
		refuse(ep, c, false, "CTS out of bounds", h);
		return -1;
	case RVFI_OP_RDATA:
		room = rvfi_rndv_rdata_room(ep, c->peer, h->token);
		if (room < 0 && h->len <= RVFI_MAX_MSG_SIZE) {
			/* The write landed first and completed the receive. */
			RVFI_DBG("RDATA for a finished token %u dropped\n",
				 h->token);
			*discard = true;
			return 0;
		}
		if (room >= 0 && h->len <= (uint64_t)room)
			return 0;
		refuse(ep, c, false, room < 0 ? "RDATA above max_msg_size" :
		       "RDATA above its receive", h);
		return -1;
	default:
		refuse(ep, c, false, "unknown op", h);
		return -1;
	}
}

/* The HELLO's payload (its size is checked): who is on the other end. */
static int hello_check(struct rvfi_ep *ep, struct rvfi_inconn *c,
		       const struct rvfi_hdr *h, const void *payload)
{
	struct rvfi_hello m;

	memcpy(&m, payload, sizeof(m));
	if (!rvfi_addr_valid(&m.from)) {
		refuse(ep, c, true, "address version", h);
		return -1;
	}
	/*
	 * Only someone given our address knows the nonce.  A published
	 * endpoint's node and port are its address too (a bare one): to
	 * them a HELLO without a nonce (0) is admitted, not a wrong one.
	 */
	if (m.to_nonce != ep->self.nonce &&
	    (m.to_nonce || !ep->published)) {
		refuse(ep, c, true, "wrong nonce", h);
		return -1;
	}
	/* Peers connect from their published address (peer_connect()). */
	if (m.from.ip != c->sin.sin_addr.s_addr) {
		refuse(ep, c, true, "sender address is not the source", h);
		return -1;
	}
	c->peer = rvfi_peer_get(ep, &m.from);
	if (!c->peer)
		return -1;
	/* The rv connection to its node, so a rendezvous is ready. */
	if (!c->peer->local && !c->peer->node)
		c->peer->node = rvfi_node_get(ep, m.from.ip);
	return 0;
}

/* An ACK from @from: the send it names is complete. */
static void ack_rx(struct rvfi_peer *from, uint64_t msg_id)
{
	struct rvfi_list *pos, *tmp;

	rvfi_list_for_each_safe(pos, tmp, &from->ack_wait) {
		struct rvfi_op *op = container_of(pos, struct rvfi_op, link);

		if (op->msg_id == msg_id) {
			rvfi_list_del(&op->link);
			rvfi_complete_ok(op);
			return;
		}
	}
	RVFI_DBG("ACK for unknown message %llu\n", (unsigned long long)msg_id);
}

/* Writes what ACK frames @c has queued, until the socket is full. */
static void inconn_flush(struct rvfi_inconn *c)
{
	while (c->ackq_len) {
		ssize_t n = send(c->fd, c->ackq, c->ackq_len,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;		/* EPOLLOUT calls again */
		if (n < 0) {
			/* Broken: reading it finds that and closes it. */
			c->ackq_len = 0;
			return;
		}
		memmove(c->ackq, c->ackq + n, c->ackq_len - n);
		c->ackq_len -= n;
	}
}

/*
 * Tells @to that its message @msg_id got here (RVFI_F_ACK), back on the
 * connection its frames come on (the newest, if it reconnected: its sends
 * on an older one failed when that one broke).  No connection from @to
 * any more: nothing to do, for the same reason.
 */
void rvfi_send_ack(struct rvfi_ep *ep, struct rvfi_peer *to, uint64_t msg_id)
{
	struct rvfi_inconn *c = NULL;
	struct rvfi_list *pos, *tmp;
	struct rvfi_hdr h, w;

	rvfi_list_for_each_safe(pos, tmp, &ep->inconns) {
		struct rvfi_inconn *i = container_of(pos, struct rvfi_inconn,
						     link);

		if (i->peer == to)
			c = i;
	}
	if (!c) {
		RVFI_DBG("ACK of message %llu: its connection is gone\n",
			 (unsigned long long)msg_id);
		return;
	}
	if (c->ackq_len + sizeof(w) > c->ackq_cap) {
		size_t cap = c->ackq_cap ? 2 * c->ackq_cap : 16 * sizeof(w);
		char *q = realloc(c->ackq, cap);

		if (!q) {
			RVFI_WARN("out of memory: ACK of message %llu dropped\n",
				  (unsigned long long)msg_id);
			return;
		}
		c->ackq = q;
		c->ackq_cap = cap;
	}
	memset(&h, 0, sizeof(h));
	h.op = RVFI_OP_ACK;
	h.msg_id = msg_id;
	hdr_swap(&w, &h, true);
	memcpy(c->ackq + c->ackq_len, &w, sizeof(w));
	c->ackq_len += sizeof(w);
	inconn_flush(c);
}

static int dispatch(struct rvfi_ep *ep, struct rvfi_inconn *c,
		    const struct rvfi_hdr *h, void *payload)
{
	/* frame_check() let only a HELLO come first, and only once. */
	switch (h->op) {
	case RVFI_OP_HELLO:
		return hello_check(ep, c, h, payload);
	case RVFI_OP_EAGER:
	case RVFI_OP_RTS:
		rvfi_deliver(ep, c->peer, h, payload);
		return 0;
	case RVFI_OP_CTS:
		rvfi_rndv_cts(ep, c->peer, h, payload);
		return 0;
	case RVFI_OP_RDATA:
		rvfi_rndv_rdata(ep, c->peer, h, payload);
		/* Copied into the receive (or it was complete already). */
		if (h->flags & RVFI_F_ACK)
			rvfi_send_ack(ep, c->peer, h->msg_id);
		return 0;
	default:
		/* ACKs come back on our own connections (read_acks()). */
		return -1;
	}
}

/*
 * Parses what is buffered.  Returns 0 when it needs more bytes, -1 on a
 * protocol error (the connection is closed).
 */
static int parse(struct rvfi_ep *ep, struct rvfi_inconn *c)
{
	struct rvfi_rbuf *b = c->rbuf;

	for (;;) {
		size_t avail = b->len - b->off;
		uint64_t plen;
		bool discard;

		if (c->skip) {
			size_t n = c->skip < avail ? c->skip : avail;

			b->off += n;
			c->skip -= n;
			if (c->skip)
				return 0;
			continue;
		}
		if (c->big) {
			size_t n = c->big->len - c->big->got;

			if (n > avail)
				n = avail;
			memcpy(c->big->buf + c->big->got, b->data + b->off, n);
			c->big->got += n;
			b->off += n;
			if (c->big->got < c->big->len)
				return 0;
			if (dispatch(ep, c, &c->hdr, c->big->buf))
				return -1;
			free(c->big->buf);
			free(c->big);
			c->big = NULL;
			continue;
		}
		if (avail < sizeof(struct rvfi_hdr))
			return 0;
		hdr_swap(&c->hdr, (struct rvfi_hdr *)(b->data + b->off), false);
		if (frame_check(ep, c, &c->hdr, &discard))
			return -1;
		b->off += sizeof(struct rvfi_hdr);
		avail -= sizeof(struct rvfi_hdr);
		plen = payload_len(&c->hdr);
		if (discard) {
			/* An RDATA whose receive is complete: still acked. */
			if (c->hdr.flags & RVFI_F_ACK)
				rvfi_send_ack(ep, c->peer, c->hdr.msg_id);
			c->skip = plen;
			continue;
		}
		if (avail >= plen) {
			/* Whole frame buffered: deliver in place. */
			if (dispatch(ep, c, &c->hdr,
				     plen ? b->data + b->off : NULL))
				return -1;
			b->off += plen;
			continue;
		}
		/* Bounded by frame_check(). */
		c->big = calloc(1, sizeof(*c->big));
		if (!c->big)
			return -1;
		c->big->buf = malloc(plen);
		if (!c->big->buf)
			return -1;
		c->big->len = plen;
	}
}

/*
 * Before its HELLO a connection is read into @c->pre, exactly up to the
 * end of the HELLO: an unauthenticated connection costs its socket and
 * this struct, not a receive buffer.  Returns 1 once the HELLO admitted
 * the sender (the receive buffer is allocated), 0 if more is to come, -1
 * if the connection is to be closed.
 */
static int read_hello(struct rvfi_ep *ep, struct rvfi_inconn *c)
{
	const size_t hs = sizeof(struct rvfi_hdr);
	size_t want = hs;
	bool discard;

	for (;;) {
		ssize_t n;

		if (c->pre_len >= hs) {
			/* Checks op and size; frame_check() logs a refusal. */
			memcpy(&c->hdr, c->pre, hs);
			hdr_swap(&c->hdr, &c->hdr, false);
			if (frame_check(ep, c, &c->hdr, &discard))
				return -1;
			want = sizeof(c->pre);
			if (c->pre_len == want)
				break;
		}
		n = recv(c->fd, c->pre + c->pre_len, want - c->pre_len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n <= 0)
			return -1;
		c->pre_len += n;
	}
	if (dispatch(ep, c, &c->hdr, c->pre + hs))
		return -1;
	c->rbuf = malloc(sizeof(*c->rbuf));
	if (!c->rbuf)
		return -1;
	c->rbuf->len = 0;
	c->rbuf->off = 0;
	return 1;
}

static void inconn_read(struct rvfi_ep *ep, struct rvfi_inconn *c)
{
	struct rvfi_rbuf *b;
	int ret;

	if (!c->peer) {
		ret = read_hello(ep, c);
		if (ret < 0)
			goto close;
		if (!ret)
			return;
	}
	b = c->rbuf;
	for (;;) {
		ssize_t n;

		/* Keep the unparsed tail at the start of the buffer. */
		if (b->off) {
			memmove(b->data, b->data + b->off, b->len - b->off);
			b->len -= b->off;
			b->off = 0;
		}
		n = recv(c->fd, b->data + b->len, RVFI_RBUF - b->len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0)
			goto close;
		b->len += n;
		if (parse(ep, c))
			goto close;
	}
close:
	/* The peer went away (or broke the protocol): its frames end here. */
	rvfi_inconn_close(ep, c);
}

/* ---- outgoing frames ----------------------------------------------------- */

static void txf_free(struct rvfi_txf *f)
{
	rvfi_list_del(&f->link);
	free(f);
}

/*
 * Closes the outgoing connection; frames not written yet fail their
 * sends, and so do sends waiting for an ACK.  The next frame for the peer connects again.
 */
void rvfi_peer_close(struct rvfi_ep *ep, struct rvfi_peer *p)
{
	struct rvfi_list *pos, *tmp;

	(void)ep;
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	p->state = RVFI_PEER_IDLE;
	p->ackin_len = 0;
	rvfi_list_for_each_safe(pos, tmp, &p->txq) {
		struct rvfi_txf *f = container_of(pos, struct rvfi_txf, link);

		/* Those waiting for an ACK fail below, once. */
		if (f->op && !f->op->ack)
			rvfi_complete_err(f->op, FI_EIO, 0);
		txf_free(f);
	}
	/* Sent, maybe received: an ACK would have come on this peer. */
	rvfi_list_for_each_safe(pos, tmp, &p->ack_wait) {
		struct rvfi_op *op = container_of(pos, struct rvfi_op, link);

		rvfi_list_del(&op->link);
		rvfi_complete_err(op, FI_EIO, 0);
	}
}

/*
 * The outgoing connection broke (or the peer closed it: it exited).
 * Frames not written fail their sends, and so do rendezvous sends still
 * waiting for a CTS: it would come from a peer that is gone.  A close with
 * nothing pending is the normal end of a peer and not worth a warning.
 */
static void peer_fail(struct rvfi_ep *ep, struct rvfi_peer *p, int err)
{
	char ip[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &p->addr.ip, ip, sizeof(ip));
	if (rvfi_list_empty(&p->txq) && rvfi_list_empty(&p->rndv_sends) &&
	    rvfi_list_empty(&p->ack_wait))
		RVFI_INFO("connection to %s:%u closed: %s\n", ip,
			  ntohs(p->addr.port), strerror(err));
	else
		RVFI_WARN("connection to %s:%u: %s, failing its sends\n", ip,
			  ntohs(p->addr.port), strerror(err));
	rvfi_peer_close(ep, p);
	rvfi_rndv_peer_failed(ep, p);
}

/* Writes queued frames, several per sendmsg(), until EAGAIN. */
static void flush(struct rvfi_ep *ep, struct rvfi_peer *p)
{
	while (p->state == RVFI_PEER_UP && !rvfi_list_empty(&p->txq)) {
		struct iovec iov[2 * RVFI_MAX_BATCH];
		struct rvfi_hdr wire[RVFI_MAX_BATCH];
		struct msghdr mh = { .msg_iov = iov };
		struct rvfi_list *pos;
		int nf = 0;
		ssize_t n;

		for (pos = p->txq.next; pos != &p->txq && nf < RVFI_MAX_BATCH;
		     pos = pos->next, nf++) {
			struct rvfi_txf *f = container_of(pos, struct rvfi_txf,
							  link);
			size_t hs = sizeof(f->hdr), done = f->done;

			hdr_swap(&wire[nf], &f->hdr, true);
			if (done < hs) {
				iov[mh.msg_iovlen].iov_base =
					(char *)&wire[nf] + done;
				iov[mh.msg_iovlen++].iov_len = hs - done;
				done = hs;
			}
			if (payload_len(&f->hdr)) {
				iov[mh.msg_iovlen].iov_base =
					(char *)f->payload + (done - hs);
				iov[mh.msg_iovlen++].iov_len =
					payload_len(&f->hdr) - (done - hs);
			}
		}
		n = sendmsg(p->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n < 0) {
			peer_fail(ep, p, errno);
			return;
		}
		while (n > 0) {
			struct rvfi_txf *f = container_of(p->txq.next,
							  struct rvfi_txf,
							  link);
			size_t total = sizeof(f->hdr) + payload_len(&f->hdr);
			size_t left = total - f->done;

			if ((size_t)n < left) {
				f->done += n;
				return;	/* the socket is full */
			}
			n -= left;
			/*
			 * FI_INJECT_COMPLETE: an eager send is complete once
			 * TCP has its data; the other levels wait for the
			 * receiver's ACK (on ack_wait already).
			 */
			if (f->op && !f->op->ack)
				rvfi_complete_ok(f->op);
			txf_free(f);
		}
	}
}

static int peer_connect(struct rvfi_ep *ep, struct rvfi_peer *p)
{
	struct sockaddr_in sin = {
		.sin_family = AF_INET, .sin_addr.s_addr = p->addr.ip,
		.sin_port = p->addr.port,
	};
	struct sockaddr_in src = {
		.sin_family = AF_INET, .sin_addr.s_addr = ep->self.ip,
	};
	struct rvfi_hello m = { .from = ep->self, .to_nonce = p->addr.nonce };
	struct epoll_event ev;
	struct rvfi_txf *hello;
	int fd, one = 1;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	tune(fd);
	/*
	 * From our published address: the peer checks the source against
	 * our HELLO.  The port is chosen at connect() time, as without a
	 * bind (IP_BIND_ADDRESS_NO_PORT).
	 */
	setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&src, sizeof(src)) ||
	    (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) &&
	     errno != EINPROGRESS)) {
		int err = errno;

		close(fd);
		return -err;
	}
	/* EPOLLIN: the peer's ACK frames (read_acks()), and its close. */
	ev.events = EPOLLOUT | EPOLLIN | EPOLLRDHUP | EPOLLET;
	ev.data.ptr = &p->pe;
	if (epoll_ctl(ep->dom->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		int err = errno;

		close(fd);
		return -err;
	}
	/* HELLO goes first: it names us and proves we know the peer. */
	hello = calloc(1, sizeof(*hello) + sizeof(m));
	if (!hello) {
		close(fd);
		return -FI_ENOMEM;
	}
	hello->hdr.op = RVFI_OP_HELLO;
	hello->hdr.len = sizeof(m);
	memcpy(hello->copy, &m, sizeof(m));
	hello->payload = hello->copy;
	/* Before anything already queued. */
	hello->link.next = p->txq.next;
	hello->link.prev = &p->txq;
	p->txq.next->prev = &hello->link;
	p->txq.next = &hello->link;
	p->fd = fd;
	p->state = RVFI_PEER_CONNECTING;
	return 0;
}

/*
 * Queues a frame for @p and writes what the socket takes.  @payload is
 * copied when @copy (inject), otherwise it must stay valid until @op
 * completes; @op (may be NULL) completes when the frame is written.
 */
int rvfi_tcp_send(struct rvfi_ep *ep, struct rvfi_peer *p,
		  const struct rvfi_hdr *h, const void *payload, bool copy,
		  struct rvfi_op *op)
{
	size_t extra = copy ? payload_len(h) : 0;
	struct rvfi_txf *f;
	int ret;

	f = malloc(sizeof(*f) + extra);
	if (!f)
		return -FI_ENOMEM;
	f->hdr = *h;
	f->done = 0;
	f->op = op;
	if (extra) {
		memcpy(f->copy, payload, extra);
		f->payload = f->copy;
	} else {
		f->payload = payload;
	}
	rvfi_list_add_tail(&p->txq, &f->link);
	if (p->state == RVFI_PEER_IDLE) {
		ret = peer_connect(ep, p);
		if (ret) {
			/* Not queued after all: the caller reports it. */
			f->op = NULL;
			txf_free(f);
			return ret;
		}
	}
	flush(ep, p);
	return 0;
}

/* ---- epoll events -------------------------------------------------------- */

/*
 * What the peer sends back on our connection: ACK frames, nothing else.
 * Returns -1 if the connection failed (closed, or another frame).
 */
static int read_acks(struct rvfi_ep *ep, struct rvfi_peer *p)
{
	for (;;) {
		struct rvfi_hdr h;
		ssize_t n = recv(p->fd, p->ackin + p->ackin_len,
				 sizeof(p->ackin) - p->ackin_len, MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n <= 0) {
			peer_fail(ep, p, n ? errno : ECONNRESET);
			return -1;
		}
		p->ackin_len += n;
		if (p->ackin_len < sizeof(p->ackin))
			continue;
		p->ackin_len = 0;
		hdr_swap(&h, (struct rvfi_hdr *)p->ackin, false);
		if (h.op != RVFI_OP_ACK) {
			peer_fail(ep, p, EPROTO);
			return -1;
		}
		ack_rx(p, h.msg_id);
	}
}

static void out_event(struct rvfi_ep *ep, struct rvfi_peer *p, uint32_t ev)
{
	if (p->state == RVFI_PEER_CONNECTING) {
		int err = 0;
		socklen_t len = sizeof(err);

		if (getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &err, &len))
			err = errno;
		if (err) {
			peer_fail(ep, p, err);
			return;
		}
		if (!(ev & EPOLLOUT))
			return;
		p->state = RVFI_PEER_UP;
	}
	if ((ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) &&
	    read_acks(ep, p))
		return;
	flush(ep, p);
}

void rvfi_tcp_event(struct rvfi_pollent *pe, uint32_t events)
{
	struct rvfi_ep *ep = pe->ep;

	switch (pe->kind) {
	case RVFI_PK_LISTEN:
		do_accept(ep);
		break;
	case RVFI_PK_OUT:
		out_event(ep, container_of(pe, struct rvfi_peer, pe), events);
		break;
	case RVFI_PK_IN:
		/* ACKs first: reading may close and free the connection. */
		if (events & EPOLLOUT)
			inconn_flush(container_of(pe, struct rvfi_inconn, pe));
		inconn_read(ep, container_of(pe, struct rvfi_inconn, pe));
		break;
	case RVFI_PK_RV:
		break;	/* the ring is polled by every progress call */
	}
}
