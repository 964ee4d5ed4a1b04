// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Endpoints: each one is an rv process slot (its own /dev/rv file,
 * attached to the job) plus a TCP listener; its address (fi_getname)
 * names both.  Also the peer table and the completion helpers every data
 * path shares.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <unistd.h>

#include "rvfi.h"

/* ---- peers --------------------------------------------------------------- */

struct rvfi_peer *rvfi_peer_get(struct rvfi_ep *ep, const struct rvfi_addr *a)
{
	struct rvfi_list *pos, *tmp;
	struct rvfi_peer *p;

	rvfi_list_for_each_safe(pos, tmp, &ep->peers) {
		p = container_of(pos, struct rvfi_peer, link);
		if (rvfi_addr_eq(&p->addr, a))
			return p;
	}
	/*
	 * A bare peer (we were given only its node and port) is the
	 * endpoint now on that port: the full address, from its HELLO,
	 * completes it (slot for the rendezvous, identity for FI_SOURCE),
	 * so that both directions share one peer.
	 */
	rvfi_list_for_each_safe(pos, tmp, &ep->peers) {
		p = container_of(pos, struct rvfi_peer, link);
		if (!rvfi_addr_match(&p->addr, a))
			continue;
		if (rvfi_addr_bare(&p->addr) && !rvfi_addr_bare(a)) {
			p->addr = *a;
			p->src_gen = UINT64_MAX;
		}
		return p;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->addr = *a;
	p->fd = -1;
	p->state = RVFI_PEER_IDLE;
	p->pe.kind = RVFI_PK_OUT;
	p->pe.ep = ep;
	p->local = a->ip == ep->self.ip;
	p->src = FI_ADDR_NOTAVAIL;
	p->src_gen = UINT64_MAX;
	rvfi_list_init(&p->txq);
	rvfi_list_init(&p->rndv_sends);
	rvfi_list_init(&p->ack_wait);
	rvfi_list_add_tail(&ep->peers, &p->link);
	return p;
}

/* The peer an fi_addr_t names, through a per-endpoint cache. */
struct rvfi_peer *rvfi_peer_of(struct rvfi_ep *ep, fi_addr_t addr)
{
	struct rvfi_av *av = ep->av;

	if (!av || addr >= av->count || !av->tab[addr].used)
		return NULL;
	if (ep->by_fiaddr_gen != av->gen || ep->by_fiaddr_cap < av->count) {
		if (ep->by_fiaddr_cap < av->cap) {
			struct rvfi_peer **t = realloc(ep->by_fiaddr,
						       av->cap * sizeof(*t));

			if (!t)
				return rvfi_peer_get(ep, &av->tab[addr].addr);
			ep->by_fiaddr = t;
			ep->by_fiaddr_cap = av->cap;
		}
		memset(ep->by_fiaddr, 0,
		       ep->by_fiaddr_cap * sizeof(*ep->by_fiaddr));
		ep->by_fiaddr_gen = av->gen;
	}
	if (!ep->by_fiaddr[addr])
		ep->by_fiaddr[addr] = rvfi_peer_get(ep, &av->tab[addr].addr);
	return ep->by_fiaddr[addr];
}

/* FI_SOURCE: the sender's fi_addr_t, or FI_ADDR_NOTAVAIL. */
fi_addr_t rvfi_peer_fiaddr(struct rvfi_ep *ep, struct rvfi_peer *p)
{
	if (!ep->av || !p)
		return FI_ADDR_NOTAVAIL;
	if (p->src_gen != ep->av->gen) {
		if (rvfi_av_find(ep->av, &p->addr, &p->src))
			p->src = FI_ADDR_NOTAVAIL;
		p->src_gen = ep->av->gen;
	}
	return p->src;
}

/* ---- completions --------------------------------------------------------- */

void rvfi_op_free(struct rvfi_op *op)
{
	uint64_t t0;
	uint32_t i;

	/* A multi-receive parent waits for its last child. */
	if (op->multi && rvfi_multi_hold(op))
		return;
	if (op->mparent)
		rvfi_multi_put(op);
	rvfi_op_unreserve(op);
	/* Closing: rv_close(), outside the domain lock, frees them all. */
	t0 = rvfi_stat_now();
	if (op->mr > 0 && !op->ep->closing)
		rv_dereg_mem(op->ep->rv, op->mr);
	for (i = 0; i < op->nwmr && !op->ep->closing; i++)
		rv_dereg_mem(op->ep->rv, op->wmrs[i]);
	if (op->mr > 0 && !op->ep->closing)
		rvfi_stat_add(&op->ep->st.dereg, t0);
	free(op->wmrs);
	free(op->rkeys);
	free(op);
}

void rvfi_complete_ok(struct rvfi_op *op)
{
	struct rvfi_ep *ep = op->ep;

	/* The reserved entry becomes this one. */
	rvfi_op_unreserve(op);
	if (op->kind == RVFI_SEND) {
		if (op->completion && ep->tx_cq)
			rvfi_cq_push(ep->tx_cq, op->context, op->cq_flags, 0,
				     NULL, 0, 0, FI_ADDR_NOTAVAIL);
	} else if ((op->completion || rvfi_multi_flags(op)) && ep->rx_cq) {
		rvfi_cq_push(ep->rx_cq, op->context,
			     op->cq_flags | rvfi_multi_flags(op), op->xfer,
			     op->buf, op->has_data ? op->data : 0,
			     (op->cq_flags & FI_TAGGED) ? op->tag : 0, op->src);
	}
	rvfi_op_free(op);
}

/* Errors are always reported, whatever FI_SELECTIVE_COMPLETION says. */
void rvfi_complete_err(struct rvfi_op *op, int err, size_t olen)
{
	struct rvfi_ep *ep = op->ep;
	struct rvfi_cq *cq = op->kind == RVFI_SEND ? ep->tx_cq : ep->rx_cq;

	rvfi_op_unreserve(op);
	if (cq)
		rvfi_cq_push_err(cq, op->context,
				 op->cq_flags | rvfi_multi_flags(op),
				 op->kind == RVFI_RECV ? op->xfer : 0,
				 op->kind == RVFI_RECV ? op->buf : NULL,
				 op->has_data ? op->data : 0,
				 (op->cq_flags & FI_TAGGED) ? op->tag : 0,
				 olen, err, -err, op->src);
	rvfi_op_free(op);
}

/* ---- fi_ops_ep ----------------------------------------------------------- */

static ssize_t ep_cancel(fid_t fid, void *context)
{
	struct rvfi_ep *ep = container_of(fid, struct rvfi_ep, ep.fid);
	ssize_t ret;

	pthread_mutex_lock(&ep->dom->lock);
	ret = rvfi_cancel(ep, context);
	pthread_mutex_unlock(&ep->dom->lock);
	return ret;
}

static int ep_getopt(fid_t fid, int level, int optname, void *optval,
		     size_t *optlen)
{
	struct rvfi_ep *ep = container_of(fid, struct rvfi_ep, ep.fid);

	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	switch (optname) {
	case FI_OPT_MIN_MULTI_RECV:
		if (*optlen < sizeof(size_t))
			return -FI_ETOOSMALL;
		*(size_t *)optval = ep->min_multi_recv;
		*optlen = sizeof(size_t);
		return 0;
	case FI_OPT_CM_DATA_SIZE:
		if (*optlen < sizeof(size_t))
			return -FI_ETOOSMALL;
		*(size_t *)optval = 0;
		*optlen = sizeof(size_t);
		return 0;
	default:
		return -FI_ENOPROTOOPT;
	}
}

static int ep_setopt(fid_t fid, int level, int optname, const void *optval,
		     size_t optlen)
{
	struct rvfi_ep *ep = container_of(fid, struct rvfi_ep, ep.fid);

	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	switch (optname) {
	case FI_OPT_MIN_MULTI_RECV:
		if (optlen != sizeof(size_t))
			return -FI_EINVAL;
		ep->min_multi_recv = *(const size_t *)optval;
		return 0;
	default:
		return -FI_ENOPROTOOPT;
	}
}

static ssize_t ep_size_left(struct fid_ep *ep)
{
	(void)ep;
	return RVFI_QUEUE_SIZE;
}

static struct fi_ops_ep ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = ep_cancel,
	.getopt = ep_getopt,
	.setopt = ep_setopt,
	.tx_ctx = rvfi_no_tx_ctx,
	.rx_ctx = rvfi_no_rx_ctx,
	.rx_size_left = ep_size_left,
	.tx_size_left = ep_size_left,
};

/* ---- fi_ops_cm ----------------------------------------------------------- */

static int ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct rvfi_ep *ep = container_of(fid, struct rvfi_ep, ep.fid);
	size_t n = sizeof(ep->self);

	if (!addrlen)
		return -FI_EINVAL;
	if (addr && *addrlen)
		memcpy(addr, &ep->self, *addrlen < n ? *addrlen : n);
	if (*addrlen < n) {
		*addrlen = n;
		return -FI_ETOOSMALL;
	}
	*addrlen = n;
	return 0;
}

static struct fi_ops_cm ep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = rvfi_no_setname,
	.getname = ep_getname,
	.getpeer = rvfi_no_getpeer,
	.connect = rvfi_no_connect,
	.listen = rvfi_no_listen,
	.accept = rvfi_no_accept,
	.reject = rvfi_no_reject,
	.shutdown = rvfi_no_shutdown,
	.join = rvfi_no_join,
};

/* ---- fi_ops -------------------------------------------------------------- */

static int ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct rvfi_ep *ep = container_of(fid, struct rvfi_ep, ep.fid);
	int ret = 0;

	pthread_mutex_lock(&ep->dom->lock);
	if (ep->enabled) {
		ret = -FI_EOPBADSTATE;
		goto out;
	}
	switch (bfid->fclass) {
	case FI_CLASS_AV: {
		struct rvfi_av *av = container_of(bfid, struct rvfi_av, av.fid);

		if (ep->av || av->dom != ep->dom) {
			ret = -FI_EINVAL;
			break;
		}
		ep->av = av;
		av->refs++;
		break;
	}
	case FI_CLASS_CQ: {
		struct rvfi_cq *cq = container_of(bfid, struct rvfi_cq, cq.fid);

		if (flags & ~(uint64_t)(FI_TRANSMIT | FI_RECV |
					FI_SELECTIVE_COMPLETION) ||
		    !(flags & (FI_TRANSMIT | FI_RECV)) || cq->dom != ep->dom) {
			ret = -FI_EINVAL;
			break;
		}
		if (((flags & FI_TRANSMIT) && ep->tx_cq) ||
		    ((flags & FI_RECV) && ep->rx_cq)) {
			ret = -FI_EINVAL;
			break;
		}
		if (flags & FI_TRANSMIT) {
			ep->tx_cq = cq;
			ep->tx_selective = flags & FI_SELECTIVE_COMPLETION;
			cq->refs++;
		}
		if (flags & FI_RECV) {
			ep->rx_cq = cq;
			ep->rx_selective = flags & FI_SELECTIVE_COMPLETION;
			cq->refs++;
		}
		break;
	}
	case FI_CLASS_EQ:
		/* RDM endpoints report nothing through an EQ. */
		break;
	default:
		ret = -FI_ENOSYS;
	}
out:
	pthread_mutex_unlock(&ep->dom->lock);
	return ret;
}

static int ep_control(struct fid *fid, int command, void *arg)
{
	struct rvfi_ep *ep = container_of(fid, struct rvfi_ep, ep.fid);
	int ret = 0;

	pthread_mutex_lock(&ep->dom->lock);
	switch (command) {
	case FI_ENABLE:
		if (!ep->av || (!ep->tx_cq && !ep->rx_cq))
			ret = -FI_ENOCQ;
		else
			ep->enabled = true;
		break;
	case FI_GETOPSFLAG: {
		uint64_t *f = arg;

		if (*f & FI_TRANSMIT)
			*f = ep->tx_op_flags;
		else if (*f & FI_RECV)
			*f = ep->rx_op_flags;
		else
			ret = -FI_EINVAL;
		break;
	}
	case FI_SETOPSFLAG: {
		uint64_t *f = arg;

		if (*f & FI_TRANSMIT)
			ep->tx_op_flags = *f & ~(uint64_t)FI_TRANSMIT;
		else if (*f & FI_RECV)
			ep->rx_op_flags = *f & ~(uint64_t)FI_RECV;
		else
			ret = -FI_EINVAL;
		break;
	}
	default:
		ret = -FI_ENOSYS;
	}
	pthread_mutex_unlock(&ep->dom->lock);
	return ret;
}

static void free_ops(struct rvfi_list *head)
{
	struct rvfi_list *pos, *tmp;

	rvfi_list_for_each_safe(pos, tmp, head) {
		rvfi_list_del(pos);
		rvfi_op_free(container_of(pos, struct rvfi_op, link));
	}
}

static void free_unexp(struct rvfi_list *head)
{
	struct rvfi_list *pos, *tmp;

	rvfi_list_for_each_safe(pos, tmp, head) {
		struct rvfi_unexp *u = container_of(pos, struct rvfi_unexp,
						    link);

		rvfi_list_del(pos);
		free(u->payload);
		free(u);
	}
}

/*
 * Frees everything the endpoint holds but its rv file; the domain lock is
 * held.  The caller closes the rv file (rv_close()).
 */
static void ep_teardown(struct rvfi_ep *ep)
{
	struct rvfi_list *pos, *tmp;

	rvfi_list_for_each_safe(pos, tmp, &ep->inconns)
		rvfi_inconn_close(ep, container_of(pos, struct rvfi_inconn,
						   link));
	rvfi_list_for_each_safe(pos, tmp, &ep->peers) {
		struct rvfi_peer *p = container_of(pos, struct rvfi_peer, link);

		rvfi_peer_close(ep, p);
		free_ops(&p->rndv_sends);
		rvfi_list_del(&p->link);
		free(p);
	}
	rvfi_rndv_cleanup(ep);
	free_ops(&ep->posted_msg);
	free_ops(&ep->posted_tagged);
	free_unexp(&ep->unexp_msg);
	free_unexp(&ep->unexp_tagged);
	if (ep->listen_fd >= 0)
		close(ep->listen_fd);
	free(ep->by_fiaddr);
	free(ep->tokens);
}

/*
 * Under the domain lock: the endpoint leaves the domain (its sockets
 * closed, its rv fd out of the epoll set, its operations failed or freed,
 * the MRs left to rv_close()), so no progress call can reach it any more.
 * Then, without the lock, rv_close(): it waits for the rv writes still in
 * flight, up to the QP timeouts (~30 s to a dead node), and the domain's
 * other endpoints must not wait with it.
 */
static int ep_close(struct fid *fid)
{
	struct rvfi_ep *ep = container_of(fid, struct rvfi_ep, ep.fid);
	struct rvfi_domain *dom = ep->dom;

	pthread_mutex_lock(&dom->lock);
	ep->closing = true;
	if (ep->rv)
		epoll_ctl(dom->epfd, EPOLL_CTL_DEL, rv_fd(ep->rv), NULL);
	RVFI_INFO("ep slot %d: eager tx %llu rx %llu, rendezvous tx %llu (%llu over TCP) rx %llu, refused %llu HELLOs %llu frames\n",
		  ep->slot, (unsigned long long)ep->n_eager_tx,
		  (unsigned long long)ep->n_eager_rx,
		  (unsigned long long)ep->n_rndv_tx,
		  (unsigned long long)ep->n_rdata_tx,
		  (unsigned long long)ep->n_rndv_rx,
		  (unsigned long long)ep->n_hello_refused,
		  (unsigned long long)ep->n_frames_refused);
	rvfi_stats_print(ep);
	ep_teardown(ep);
	if (ep->av)
		ep->av->refs--;
	if (ep->tx_cq)
		ep->tx_cq->refs--;
	if (ep->rx_cq)
		ep->rx_cq->refs--;
	rvfi_list_del(&ep->link);
	pthread_mutex_unlock(&dom->lock);

	/* Lets a test see that the slow part runs without the lock. */
	if (rvfi_env.close_delay_ms)
		usleep(rvfi_env.close_delay_ms * 1000u);
	rv_close(ep->rv);
	free(ep);
	/* Last: the domain cannot close while this endpoint still counts. */
	pthread_mutex_lock(&dom->lock);
	dom->refs--;
	pthread_mutex_unlock(&dom->lock);
	return 0;
}

static struct fi_ops ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = ep_close,
	.bind = ep_bind,
	.control = ep_control,
	.ops_open = rvfi_no_ops_open,
	.tostr = rvfi_no_tostr,
	.ops_set = rvfi_no_ops_set,
};

/* ---- open ---------------------------------------------------------------- */

/* Joins the job on the domain's device: a slot, the event ring. */
static int ep_attach(struct rvfi_ep *ep)
{
	struct rvfi_domain *dom = ep->dom;
	struct rv_attach at;
	struct epoll_event ev;
	int ret;

	ret = rv_open(&ep->rv, 0);
	if (ret) {
		RVFI_WARN("rv_open: %s\n", strerror(-ret));
		return -FI_ENODEV;
	}
	memset(&at, 0, sizeof(at));
	at.dev_index = dom->dev_index;
	at.port_num = 1;
	at.gid_index = dom->gid_index;
	at.job_key_len = strlen(rvfi_env.job_key);
	memcpy(at.job_key, rvfi_env.job_key, at.job_key_len);
	at.num_conn = rvfi_env.num_conn;
	at.ring_entries = rvfi_env.ring_entries;
	ret = rv_attach(ep->rv, &at);
	if (ret < 0) {
		RVFI_WARN("rv_attach(%s, gid %d, job %s): %s\n", dom->name,
			  dom->gid_index, rvfi_env.job_key, strerror(-ret));
		/* EAGAIN: every free slot is in quarantine, retry later */
		if (ret == -EAGAIN)
			return -FI_EAGAIN;
		return ret == -ENOSPC ? -FI_ENOSPC : -FI_ENODEV;
	}
	ep->slot = ret;
	ep->slot_bits = rv_slot_bits(ep->rv);
	/* The kernel wrote back what is in effect. */
	ep->num_conn = at.num_conn ? at.num_conn : 1;
	ep->ring_entries = at.ring_entries;
	ep->tx_max = at.ring_entries / 2;
	ep->rx_max = at.ring_entries / 2 - RVFI_RING_SLACK;
	/*
	 * Tests only: no bound, so that the kernel ring overflows for real.
	 * Half of UINT32_MAX: used + n never wraps.
	 */
	if (rvfi_env.test_ring_unbounded)
		ep->tx_max = ep->rx_max = UINT32_MAX / 2;
	ep->token_user_mask = UINT32_MAX >> ep->slot_bits;
	ep->ntokens = 4096;
	while (ep->ntokens - 1 > ep->token_user_mask)
		ep->ntokens /= 2;
	ep->tokens = calloc(ep->ntokens, sizeof(*ep->tokens));
	if (!ep->tokens)
		return -FI_ENOMEM;
	ep->rv_pe.kind = RVFI_PK_RV;
	ep->rv_pe.ep = ep;
	ev.events = EPOLLIN;
	ev.data.ptr = &ep->rv_pe;
	if (epoll_ctl(dom->epfd, EPOLL_CTL_ADD, rv_fd(ep->rv), &ev))
		return -errno;
	RVFI_INFO("attached %s gid %d job %s slot %d slot_bits %d\n",
		  dom->name, dom->gid_index, rvfi_env.job_key, ep->slot,
		  ep->slot_bits);
	return 0;
}

/*
 * The nonce admits senders (tcp.c): from the kernel's CSPRNG, never
 * something guessable like the pid and the time.  Blocks only until the
 * CSPRNG is seeded, which is early in boot.
 */
static int nonce(uint64_t *n)
{
	ssize_t r;

	/* 0 marks a bare address (rvfi.h). */
	do {
		r = getrandom(n, sizeof(*n), 0);
	} while ((r < 0 && errno == EINTR) || (r == sizeof(*n) && !*n));
	if (r != sizeof(*n)) {
		RVFI_WARN("getrandom: %s\n", r < 0 ? strerror(errno) : "short");
		return -FI_EIO;
	}
	return 0;
}

int rvfi_ep_open(struct fid_domain *domain, struct fi_info *info,
		 struct fid_ep **epp, void *context)
{
	struct rvfi_domain *dom = container_of(domain, struct rvfi_domain, dom);
	struct rvfi_addr src = { 0 };
	struct rvfi_ep *ep;
	size_t alen;
	bool is_sin;
	int ret;

	if (!info || !info->ep_attr || info->ep_attr->type != FI_EP_RDM)
		return -FI_EINVAL;
	/*
	 * src_addr (fi_getinfo's, or the application's): its port, if any,
	 * is the listener's; its node must be the domain's.
	 */
	if (info->src_addr &&
	    (rvfi_addr_parse(info->src_addr, info->src_addrlen, &src, &alen,
			     &is_sin) ||
	     (src.ip != htonl(INADDR_ANY) && src.ip != dom->ip)))
		return -FI_EINVAL;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->dom = dom;
	ep->listen_fd = -1;
	ep->published = src.port != 0;
	ep->min_multi_recv = RVFI_MIN_MULTI_RECV;
	ep->caps = info->caps ? info->caps : FI_MSG | FI_TAGGED;
	ep->tx_op_flags = info->tx_attr ? info->tx_attr->op_flags : 0;
	ep->rx_op_flags = info->rx_attr ? info->rx_attr->op_flags : 0;
	rvfi_list_init(&ep->peers);
	rvfi_list_init(&ep->inconns);
	rvfi_list_init(&ep->nodes);
	rvfi_list_init(&ep->posted_msg);
	rvfi_list_init(&ep->posted_tagged);
	rvfi_list_init(&ep->unexp_msg);
	rvfi_list_init(&ep->unexp_tagged);
	rvfi_list_init(&ep->write_pending);
	rvfi_list_init(&ep->token_wait);
	rvfi_list_init(&ep->writing);
	rvfi_list_init(&ep->dead);
	ep->by_fiaddr_gen = UINT64_MAX;

	ep->self.version = RVFI_ADDR_VERSION;
	ep->self.len = sizeof(ep->self);
	ep->self.ip = dom->ip;
	ep->self.pid = htonl(getpid());
	ret = nonce(&ep->self.nonce);
	if (ret) {
		free(ep);
		return ret;
	}
	pthread_mutex_lock(&dom->lock);
	ret = ep_attach(ep);
	if (!ret)
		ret = rvfi_tcp_listen(ep, src.port);
	if (ret) {
		ep->closing = true;
		ep_teardown(ep);
		pthread_mutex_unlock(&dom->lock);
		rv_close(ep->rv);
		free(ep);
		return ret;
	}
	ep->self.slot = htonl(ep->slot);
	rvfi_list_add_tail(&dom->eps, &ep->link);
	dom->refs++;
	pthread_mutex_unlock(&dom->lock);

	ep->ep.fid.fclass = FI_CLASS_EP;
	ep->ep.fid.context = context;
	ep->ep.fid.ops = &ep_fi_ops;
	ep->ep.ops = &ep_ops;
	ep->ep.cm = &ep_cm_ops;
	ep->ep.msg = &rvfi_msg_ops;
	ep->ep.tagged = &rvfi_tagged_ops;
	ep->ep.rma = &rvfi_no_rma_ops;
	ep->ep.atomic = &rvfi_no_atomic_ops;
	ep->ep.collective = &rvfi_no_coll_ops;
	*epp = &ep->ep;
	return 0;
}
