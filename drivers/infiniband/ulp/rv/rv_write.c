// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The data path: RDMA WRITE with immediate over a job's connection, the
 * completions that end each write in its poster's ring, and the receive
 * side that routes each arriving immediate to the ring of the slot it
 * names.
 *
 * A write is a struct rv_write_ctx from POST_WRITE until its last
 * segment completes.  The contexts are preallocated with each QP (struct
 * rv_ibqp, when rv_qp_create() creates it), one per credit of its send
 * queue (a write holds at least one), so posting never allocates and a
 * connection that never connects holds none; they are freed with the QP,
 * after its CQ, when no completion can reach them.  A write is on its
 * slot's @inflight list meanwhile, holds one credit of its QP per segment
 * and an io reference on its registration, and counts in its file's and
 * slot's in-flight figures.
 *
 * Posting takes no lock of the connection (its mutex is shared by every
 * process of the job writing to that node): only the chosen QP slot's
 * @sq_lock, under which the slot's credits, free contexts, list and the
 * QP to post on (@post_iq, with the generation it serves) are read and
 * the work requests are posted.  rv_conn_update_state() publishes
 * @post_iq under that same lock, non-NULL only while the whole
 * connection is CONNECTED and the QP is current, and clears it before any
 * QP is parked for destruction.  So a post either happens before the
 * clearing (it is then on the QP before the drain's marker, and ends by
 * its completion or the flush) or finds no QP and fails like today
 * (EAGAIN while connecting, EPIPE after an error, ENODEV once torn down);
 * its generation is the one under which its QP was published.
 *
 * POST_WRITES groups consecutive writes that go to one QP and posts them
 * as chained work requests (RV_POST_CHAIN per ib_post_send(), one
 * doorbell).  A run of writes to one connection is spread over its QPs by
 * bytes (rv_write_share()): a large message's pieces travel on every QP
 * (each has its own send engine and window of unacknowledged packets),
 * small writes still share a doorbell.  Only the last segment of a write
 * is signaled; the others use @seg_cqe.  An RC send queue executes and
 * completes in order, so a successful last completion means every earlier
 * segment is done, and the write's credits all come back with it.  On an
 * error the device completes the failing work request and flushes every
 * later one, signaled or not (IB spec 10.7.3.1 and 11.4.2.1: unsignaled
 * requests generate a completion when they complete in error; rxe's
 * do_complete() posts a CQE when "wqe->status != IB_WC_SUCCESS", mlx5 and
 * irdma report flushed entries of the whole queue).  Segments that
 * completed before the error report nothing.  Hence: @seg_cqe only records
 * an error, and the write ends exactly once, on the completion of its last
 * segment, whose status is then an error too.
 *
 * A chain the device refuses part of (bad_wr) leaves the writes wholly
 * before bad_wr posted, the ones wholly after it unposted (their credits
 * and contexts returned, not counted: POST_WRITES reports them as not
 * posted, with EAGAIN), and at most one write in between, some of its
 * segments posted but not its signaled last one: it counts as posted,
 * gets IB_WC_LOC_QP_OP_ERR and its QP is failed, and is ended by
 * rv_write_qp_flush() when that QP is destroyed (it keeps its
 * registration until then: the device may still read it).
 *
 * How every write ends exactly once:
 *  - normally, by its last segment's completion (rv_write_done());
 *  - when a QP is destroyed, rv_qp_drain() first moves it to the
 *    error state and waits (bounded) for a marker posted behind all
 *    writes: the hardware flushes them, in order, before the marker;
 *  - the QP and then its own CQ are destroyed (no completion of the QP
 *    can run after that) and rv_write_qp_flush() ends the writes still
 *    listed for it with a flush status: those whose drain timed out and
 *    those whose last segment was never posted.
 * So every write ends by the time its QP is gone, and a closing file
 * waits for its writes (rv_write_file_quiesce()): a completion always
 * finds its file, ring and registration.
 *
 * Locks: completions run in softirq (IB_POLL_SOFTIRQ) and take only
 * spinlocks (@sq_lock, the MR cache's, the ring's), which process context
 * takes with bottom halves disabled; whatever may sleep is left to work
 * items (a registration's free, a failed QP's replacement).  Nothing else
 * is taken under @sq_lock but the device's own post-send lock (inside
 * ib_post_send()) and rv_qp_fault()'s queue_work(); registrations are
 * released outside it.
 */
#include "rv.h"
#include "rv_cm.h"
#include "rv_conn.h"
#include "rv_qp.h"
#include "rv_write.h"
#include "rv_conn_trace.h"

#include <linux/sched/signal.h>
#include <linux/sizes.h>
#include <linux/slab.h>

/* Work requests posted by one ib_post_send() at most (one doorbell). */
#define RV_POST_CHAIN		32

/* Bytes of a run of writes below which they are not spread over QPs. */
#define RV_SPREAD_BYTES		SZ_64K

/**
 * struct rv_write_ctx - one write in flight
 * @cqe: completion entry of its last (signaled) segment
 * @seg_cqe: completion entry of its other segments: they report only
 *	errors
 * @list: on @qp->inflight while in flight, on @iq->ctx_free otherwise;
 *	under @qp->sq_lock
 * @rf: the posting file (waits for us at close)
 * @mr: the registration's entry with our io reference; NULL for 0 bytes
 * @qp: the QP slot of @iq
 * @iq: the QP that owns this context, on which its segments are posted
 * @wr_id: the caller's
 * @status: first error status, 0 while none (cmpxchg)
 * @bytes: the write's length
 * @segs: segments: credits to give back
 * @posted: segments the device took; only used while posting, under
 *	@qp->sq_lock
 * @generation: the connection's when posted
 */
struct rv_write_ctx {
	struct ib_cqe cqe;
	struct ib_cqe seg_cqe;
	struct list_head list;
	struct rv_file *rf;
	struct rv_mr_entry *mr;
	struct rv_conn_qp *qp;
	struct rv_ibqp *iq;
	u64 wr_id;
	u32 status;
	u32 bytes;
	u32 segs;
	u32 posted;
	u32 generation;
};

static void rv_write_finish(struct rv_write_ctx *ctx)
{
	struct rv_conn_qp *qp = ctx->qp;
	struct rv_ibqp *iq = ctx->iq;
	struct rv_conn *conn = qp->conn;
	struct rv_file *rf = ctx->rf;
	struct rv_mr_entry *mr = ctx->mr;
	u32 status = READ_ONCE(ctx->status);
	bool overflow;
	struct rv_event ev = {
		.kind = RV_EVENT_SEND,
		.status = status,
		.wr_id = ctx->wr_id,
		.bytes = ctx->bytes,
		.conn_id = conn->id,
		.generation = ctx->generation,
	};

	/* A full ring counts the loss in its overflows. */
	overflow = !rv_ring_post(rf->ring, &ev);
	trace_rv_write_done(conn->job->id, conn->id, qp->index, rf->slot,
			    ctx->wr_id, ctx->bytes, ctx->segs, status, overflow);
	if (status) {
		this_cpu_add(rf->stats->writes_failed, 1);
		this_cpu_add(conn->stats->writes_failed, 1);
	} else {
		this_cpu_add(rf->stats->writes_completed, 1);
		this_cpu_add(conn->stats->writes_completed, 1);
	}

	/*
	 * The context is the next poster's once back on the free list, and
	 * @iq's to free: neither is touched after the unlock.
	 */
	spin_lock_bh(&qp->sq_lock);
	list_move(&ctx->list, &iq->ctx_free);
	iq->sq_free += ctx->segs;
	qp->nr_inflight--;
	spin_unlock_bh(&qp->sq_lock);

	if (mr)
		rv_mr_put_io(mr);
	/* Release may free @rf once it sees 0, but only after an RCU grace. */
	rcu_read_lock();
	if (atomic_dec_and_test(&rf->inflight))
		wake_up(&rf->inflight_wait);
	rcu_read_unlock();
}

static void rv_write_set_status(struct rv_write_ctx *ctx, u32 status)
{
	cmpxchg(&ctx->status, 0, status);
}

static void rv_write_wc_status(struct rv_write_ctx *ctx, struct ib_wc *wc)
{
	WRITE_ONCE(ctx->qp->last_activity, jiffies);
	if (wc->status == IB_WC_SUCCESS)
		return;
	rv_write_set_status(ctx, wc->status);
	/* The QP is in error now: have it replaced. */
	if (wc->status != IB_WC_WR_FLUSH_ERR)
		rv_qp_fault(ctx->qp, wc->qp, ib_wc_status_msg(wc->status));
	else
		rv_qp_flushed(ctx->qp);
}

/* The last segment: whatever its status, the write is over. */
static void rv_write_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rv_write_ctx *ctx = container_of(wc->wr_cqe,
						struct rv_write_ctx, cqe);

	rv_write_wc_status(ctx, wc);
	rv_write_finish(ctx);
}

/*
 * An unsignaled segment completes only in error, and always before its
 * write's last segment (same send queue, in order): record the status.
 */
static void rv_write_seg_done(struct ib_cq *cq, struct ib_wc *wc)
{
	rv_write_wc_status(container_of(wc->wr_cqe, struct rv_write_ctx,
					seg_cqe), wc);
}

/* Deliver an arrived immediate to the ring of the slot it names. */
static void rv_write_route(struct rv_conn *conn, u32 imm, u32 bytes)
{
	struct rv_job *job = conn->job;
	struct rv_event ev = {
		.kind = RV_EVENT_RECV,
		.imm = imm,
		.bytes = bytes,
		.conn_id = conn->id,
		.generation = (u32)READ_ONCE(conn->generation),
	};
	u32 slot = imm >> (32 - job->params.slot_bits);
	struct rv_ring *ring = NULL;
	int result = RV_RECV_DELIVERED;
	struct rv_file *rf;

	/* Files leave the slots, then wait for a grace period to free. */
	rcu_read_lock();
	rf = xa_load(&job->slots, slot);
	if (rf)	/* pairs with ATTACH's release store of the ring */
		ring = smp_load_acquire(&rf->ring);
	if (!ring) {
		result = RV_RECV_NO_SLOT;
		atomic64_inc(&conn->drops_no_slot);
	} else if (!rv_ring_post(ring, &ev)) {
		result = RV_RECV_RING_FULL;
		atomic64_inc(&conn->drops_ring_full);
	} else {
		this_cpu_add(rf->stats->recvs, 1);
		this_cpu_add(rf->stats->bytes_received, bytes);
		this_cpu_add(conn->stats->recvs, 1);
		this_cpu_add(conn->stats->bytes_received, bytes);
	}
	rcu_read_unlock();
	trace_rv_recv(job->id, conn->id, slot, imm, bytes, result);
}

static void rv_write_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rv_ibqp *iq = cq->cq_context;
	struct rv_conn_qp *qp = iq->slot;
	struct rv_conn *conn = qp->conn;

	WRITE_ONCE(qp->last_activity, jiffies);
	if (wc->status != IB_WC_SUCCESS) {
		/* Flushes: the QP is going away, its receives with it. */
		if (wc->status != IB_WC_WR_FLUSH_ERR) {
			atomic64_inc(&conn->recv_errors);
			rv_qp_fault(qp, iq->ibqp,
				    ib_wc_status_msg(wc->status));
		} else {
			rv_qp_flushed(qp);
		}
		return;
	}
	/*
	 * Not before the peer proved the cluster key: its proof is the
	 * QP's first message, so only a peer that is not rv gets here.
	 */
	if (!READ_ONCE(iq->authed)) {
		atomic64_inc(&conn->recv_errors);
		rv_qp_fault(qp, iq->ibqp, "a message before the proof");
		return;
	}
	if (wc->wc_flags & IB_WC_WITH_IMM)
		rv_write_route(conn, be32_to_cpu(wc->ex.imm_data),
			       wc->byte_len);
	else
		atomic64_inc(&conn->recv_errors);	/* not rv's peer */

	/*
	 * Batched: the queue was posted with RV_RECV_BATCH - 1 extra, so
	 * the connection's depth stays posted while fewer than a batch wait
	 * here, and a batch is full before the queue could run short.
	 */
	if (++iq->recv_pending == RV_RECV_BATCH)
		rv_qp_repost_recvs(iq);
}

void rv_write_qp_init(struct rv_conn_qp *qp)
{
	qp->recv_cqe.done = rv_write_recv_done;
	spin_lock_init(&qp->sq_lock);
	INIT_LIST_HEAD(&qp->inflight);
	qp->hb_cqe.done = rv_qp_hb_done;
	qp->last_activity = jiffies;
}

/*
 * Set up a new QP's receive work requests and drain markers, and allocate
 * its write contexts, one per credit of its send queue (every write in
 * flight holds one), and the RV_POST_CHAIN work requests and SGEs its
 * posts chain, used under @iq->slot->sq_lock.  At QP creation, not with
 * the connection: a connection that never connects costs none of it.  On
 * error nothing is left allocated.
 */
int rv_write_ibqp_init(struct rv_ibqp *iq)
{
	struct rv_conn *conn = iq->slot->conn;
	u32 i;

	iq->ctxs = kvcalloc(conn->depth, sizeof(*iq->ctxs),
			    GFP_KERNEL_ACCOUNT);
	if (!iq->ctxs)
		goto out;
	iq->chain = kcalloc(RV_POST_CHAIN, sizeof(*iq->chain),
			    GFP_KERNEL_ACCOUNT);
	if (!iq->chain)
		goto out_free_ctxs;
	iq->chain_sge = kcalloc(RV_POST_CHAIN * conn->max_sge,
				sizeof(*iq->chain_sge), GFP_KERNEL_ACCOUNT);
	if (!iq->chain_sge)
		goto out_free_chain;
	iq->sq_free = conn->depth;
	INIT_LIST_HEAD(&iq->ctx_free);
	for (i = 0; i < conn->depth; i++) {
		struct rv_write_ctx *ctx = &iq->ctxs[i];

		ctx->cqe.done = rv_write_done;
		ctx->seg_cqe.done = rv_write_seg_done;
		ctx->qp = iq->slot;
		ctx->iq = iq;
		list_add_tail(&ctx->list, &iq->ctx_free);
	}

	/* No SGE: a write with immediate consumes a receive, no buffer. */
	for (i = 0; i < RV_RECV_BATCH; i++) {
		iq->recv_wrs[i].wr_cqe = &iq->slot->recv_cqe;
		iq->recv_wrs[i].next = i + 1 < RV_RECV_BATCH ?
				       &iq->recv_wrs[i + 1] : NULL;
	}
	iq->sdrain.cqe.done = rv_qp_drain_done;
	iq->rdrain.cqe.done = rv_qp_drain_done;
	init_completion(&iq->sdrain.done);
	init_completion(&iq->rdrain.done);
	return 0;

out_free_chain:
	kfree(iq->chain);
out_free_ctxs:
	kvfree(iq->ctxs);
out:
	return -ENOMEM;
}

/*
 * Free what rv_write_ibqp_init() allocated.  Only once @iq's QP and CQ
 * are destroyed and rv_write_qp_flush() ended the writes no completion
 * ended (or the QP never took one): every context is free again.
 */
void rv_write_ibqp_free(struct rv_ibqp *iq)
{
	WARN_ON_ONCE(iq->sq_free != iq->slot->conn->depth);
	kfree(iq->chain_sge);
	kfree(iq->chain);
	kvfree(iq->ctxs);
}

/*
 * End the writes posted on @iq that no completion ended (its drain timed
 * out, or their last segment was never posted): it and its CQ are
 * destroyed, so no completion can now.
 */
void rv_write_qp_flush(struct rv_ibqp *iq)
{
	struct rv_conn_qp *qp = iq->slot;
	struct rv_write_ctx *ctx, *next;
	LIST_HEAD(ended);

	spin_lock_bh(&qp->sq_lock);
	list_for_each_entry_safe(ctx, next, &qp->inflight, list)
		if (ctx->iq == iq)
			list_move_tail(&ctx->list, &ended);
	/* Nor will its heartbeat complete: let the next QP send one. */
	if (qp->hb_inflight && qp->hb_iq == iq)
		qp->hb_inflight = false;
	spin_unlock_bh(&qp->sq_lock);
	/* rv_write_finish() moves each from @ended to the free list. */
	list_for_each_entry_safe(ctx, next, &ended, list) {
		rv_write_set_status(ctx, IB_WC_WR_FLUSH_ERR);
		rv_write_finish(ctx);
	}
}

/* Whether @rf has a write in flight on @qp. */
bool rv_write_qp_busy_for(struct rv_conn_qp *qp, const struct rv_file *rf)
{
	struct rv_write_ctx *ctx;
	bool busy = false;

	spin_lock_bh(&qp->sq_lock);
	list_for_each_entry(ctx, &qp->inflight, list) {
		if (ctx->rf == rf) {
			busy = true;
			break;
		}
	}
	spin_unlock_bh(&qp->sq_lock);
	return busy;
}

/*
 * Publish the QP each slot of @conn posts on, and its generation: the
 * current QP while the connection is CONNECTED and not torn down, else
 * none.  Called under @conn->lock after every change of a QP's id or
 * state (rv_conn_update_state()), so a QP is unpublished before it is
 * parked for destruction.
 */
void rv_write_conn_publish(struct rv_conn *conn)
{
	bool up = conn->state == RV_CONN_STATE_CONNECTED && !conn->dead;
	u32 i;

	lockdep_assert_held(&conn->lock);
	for (i = 0; i < conn->num_conn; i++) {
		struct rv_conn_qp *qp = &conn->qps[i];
		struct rv_ibqp *iq = NULL;

		if (up && qp->state == RV_QP_CONNECTED && qp->cm_id &&
		    qp->cm_id->qp)
			iq = qp->cm_id->qp->qp_context;
		spin_lock_bh(&qp->sq_lock);
		qp->post_iq = iq;
		qp->post_gen = (u32)conn->generation;
		spin_unlock_bh(&qp->sq_lock);
	}
}

/* Writes in flight on @conn's QPs, for CONN_QUERY and DUMP. */
u32 rv_write_conn_inflight(struct rv_conn *conn)
{
	u32 i, n = 0;

	for (i = 0; i < conn->num_conn; i++)
		n += READ_ONCE(conn->qps[i].nr_inflight);
	return n;
}

/* What one write needs before it is posted: taken outside any spinlock. */
struct rv_write_prep {
	struct rv_conn *conn;
	struct rv_mr_entry *mr;
	u32 segs;
};

/*
 * Validate @w and take its connection and registration into @p.  Caller
 * holds rf->lock of an attached file used by its owner and is in the
 * device's read section; on error nothing is held.
 */
static int rv_write_prepare(struct rv_file *rf, const struct rv_write *w,
			    struct rv_write_prep *p)
{
	struct rv_conn *conn;

	if (w->length > RV_MAX_WRITE_BYTES)
		return -EMSGSIZE;
	/* An empty write names no memory; others must not wrap. */
	if (!w->length && w->mr_handle)
		return -EINVAL;
	if (w->local_addr + w->length < w->local_addr)
		return -EINVAL;
	conn = w->conn_handle ? xa_load(&rf->conns, w->conn_handle) : NULL;
	if (!conn)
		return -ENOENT;
	p->conn = conn;
	p->mr = NULL;
	p->segs = 1;
	if (!w->length)
		return 0;
	p->mr = rv_mr_get_io(&rf->mr_cache, w->mr_handle, w->local_addr,
			     w->length);
	if (IS_ERR(p->mr))
		return PTR_ERR(p->mr);
	p->segs = rv_mr_count_wrs(p->mr, w->local_addr, w->length,
				  conn->max_sge, conn->max_segment);
	if (p->segs > conn->depth) {
		rv_mr_put_io(p->mr);
		return -EMSGSIZE;
	}
	return 0;
}

/* Connection states in which a post may proceed, or the errno. */
static int rv_write_conn_ready(const struct rv_conn *conn)
{
	if (READ_ONCE(conn->dead))
		return -ENODEV;
	switch (READ_ONCE(conn->state)) {
	case RV_CONN_STATE_CONNECTED:
		return 0;
	case RV_CONN_STATE_CONNECTING:
		return -EAGAIN;
	default:
		return -EPIPE;
	}
}

static struct rv_write_ctx *rv_write_wr_ctx(const struct ib_send_wr *wr)
{
	if (wr->send_flags & IB_SEND_SIGNALED)
		return container_of(wr->wr_cqe, struct rv_write_ctx, cqe);
	return container_of(wr->wr_cqe, struct rv_write_ctx, seg_cqe);
}

/* A write none of whose segments the device took: as if never posted. */
static void rv_write_unreserve(struct rv_conn_qp *q, struct rv_write_ctx *ctx)
{
	list_move(&ctx->list, &ctx->iq->ctx_free);
	ctx->iq->sq_free += ctx->segs;
	q->nr_inflight--;
	atomic_dec(&ctx->rf->inflight);
}

/*
 * Post the @n work requests built in @q->post_iq->chain, @q->sq_lock
 * held.  If the device refuses some (see the top comment), returns its
 * errno and in *@unposted how many of the chain's writes were handed back
 * unposted (the last ones reserved).
 */
static int rv_write_chain_post(struct rv_conn_qp *q, u32 n, u32 *unposted)
{
	struct ib_rdma_wr *chain = q->post_iq->chain;
	const struct ib_send_wr *bad = NULL;
	struct rv_write_ctx *ctx, *last = NULL;
	u32 k;
	int ret;

	chain[n - 1].wr.next = NULL;
	ret = ib_post_send(q->post_iq->ibqp, &chain[0].wr, &bad);
	if (!ret) {
		for (k = 0; k < n; k++)
			rv_write_wr_ctx(&chain[k].wr)->posted++;
		return 0;
	}
	for (k = 0; k < n && &chain[k].wr != bad; k++)
		rv_write_wr_ctx(&chain[k].wr)->posted++;
	*unposted = 0;
	for (; k < n; k++) {
		ctx = rv_write_wr_ctx(&chain[k].wr);
		if (ctx == last)
			continue;
		last = ctx;
		if (!ctx->posted) {
			rv_write_unreserve(q, ctx);
			(*unposted)++;
			continue;
		}
		/* No signaled segment: rv_write_qp_flush() will end it. */
		rv_write_set_status(ctx, IB_WC_LOC_QP_OP_ERR);
		rv_qp_fault(q, q->post_iq->ibqp, "post refused");
	}
	return ret;
}

/*
 * Post the consecutive writes @w[0..@count) of one connection, prepared
 * in @p, on @q (its @sq_lock held, room for the first) while it has room,
 * as chains of RV_POST_CHAIN work requests.  Returns how many were
 * posted; *@err is the device's errno if it refused one.
 */
static u32 rv_write_post_group(struct rv_file *rf, struct rv_conn_qp *q,
			       const struct rv_write *w,
			       const struct rv_write_prep *p, u32 count,
			       int *err)
{
	struct rv_conn *conn = q->conn;
	struct rv_ibqp *iq = q->post_iq;
	u32 lkey = rf->job->pd->local_dma_lkey, max_sge = conn->max_sge;
	u32 i, s, n = 0, unposted = 0;
	struct rv_mr_sge_iter sges;
	struct rv_write_ctx *ctx;
	int ret = 0;

	for (i = 0; i < count && iq->sq_free >= p[i].segs; i++) {
		u64 done = 0;

		/* A credit per write in flight, a context per credit. */
		ctx = list_first_entry(&iq->ctx_free, struct rv_write_ctx,
				       list);
		list_move_tail(&ctx->list, &q->inflight);
		iq->sq_free -= p[i].segs;
		q->nr_inflight++;
		/* Counted first: a completion may run before we return. */
		atomic_inc(&rf->inflight);
		ctx->rf = rf;
		ctx->mr = p[i].mr;
		ctx->wr_id = w[i].wr_id;
		ctx->status = 0;
		ctx->bytes = w[i].length;
		ctx->segs = p[i].segs;
		ctx->posted = 0;
		ctx->generation = q->post_gen;
		trace_rv_write_post(conn->job->id, conn->id, q->index, rf->slot,
				    ctx->wr_id, ctx->bytes, ctx->segs, 0, false);
		if (ctx->mr)
			rv_mr_sge_start(&sges, ctx->mr, lkey, w[i].local_addr,
					w[i].length);

		for (s = 0; s < ctx->segs; s++) {
			struct ib_rdma_wr *wr = &iq->chain[n];
			u32 bytes = 0;

			wr->wr.sg_list = &iq->chain_sge[n * max_sge];
			wr->wr.num_sge = ctx->mr ?
				rv_mr_sge_next(&sges, wr->wr.sg_list, max_sge,
					       conn->max_segment, &bytes) : 0;
			wr->remote_addr = w[i].remote_addr + done;
			wr->rkey = w[i].rkey;
			if (s == ctx->segs - 1) {
				wr->wr.opcode = IB_WR_RDMA_WRITE_WITH_IMM;
				wr->wr.ex.imm_data = cpu_to_be32(w[i].imm);
				wr->wr.send_flags = IB_SEND_SIGNALED;
				wr->wr.wr_cqe = &ctx->cqe;
			} else {
				wr->wr.opcode = IB_WR_RDMA_WRITE;
				wr->wr.send_flags = 0;
				wr->wr.wr_cqe = &ctx->seg_cqe;
			}
			if (n)
				iq->chain[n - 1].wr.next = &wr->wr;
			done += bytes;
			if (++n < RV_POST_CHAIN)
				continue;
			ret = rv_write_chain_post(q, n, &unposted);
			n = 0;
			if (ret) {
				/* Write @i was reserved: count it in. */
				i++;
				goto out;
			}
		}
	}
	if (n)
		ret = rv_write_chain_post(q, n, &unposted);
out:
	*err = ret;
	return i - unposted;
}

/*
 * Post the run @w[0..@count) of writes to one connection on its first
 * published QP, from the round-robin hint, with room for the first.
 * Returns how many were posted, 0 with *@err 0 when no QP had room.
 */
static u32 rv_write_post_run(struct rv_file *rf, const struct rv_write *w,
			     const struct rv_write_prep *p, u32 count,
			     int *err)
{
	struct rv_conn *conn = p[0].conn;
	u32 n = conn->num_conn, start = (u32)atomic_read(&conn->next_qp), i;
	u32 posted;

	*err = 0;
	for (i = 0; i < n; i++) {
		struct rv_conn_qp *q = &conn->qps[(start + i) % n];

		if (READ_ONCE(q->broken))
			continue;
		spin_lock_bh(&q->sq_lock);
		if (!q->post_iq || q->post_iq->sq_free < p[0].segs) {
			spin_unlock_bh(&q->sq_lock);
			continue;
		}
		posted = rv_write_post_group(rf, q, w, p, count, err);
		spin_unlock_bh(&q->sq_lock);
		/* A hint: racing posters only share the QPs less evenly. */
		atomic_set(&conn->next_qp, (q->index + 1) % n);
		return posted;
	}
	return 0;
}

/*
 * How many of the writes @w[0..@count) to one connection of @num_conn QPs
 * go on one QP: an equal share of their bytes, at least RV_SPREAD_BYTES
 * (and at least one write).  Posting the rest continues on the next QP.
 */
static u32 rv_write_share(const struct rv_write *w, u32 count, u32 num_conn)
{
	u64 total = 0, share, bytes = 0;
	u32 i;

	for (i = 0; i < count; i++)
		total += w[i].length;
	share = max_t(u64, div_u64(total + num_conn - 1, num_conn),
		      RV_SPREAD_BYTES);
	for (i = 0; i < count && bytes < share; i++)
		bytes += w[i].length;
	return i;
}

/*
 * Post the writes @w[0..@count) for @rf, using @p for their preparation.
 * Caller holds rf->lock of an attached file used by its owner and is in
 * the device's read section.  Writes are posted in order; the first that
 * cannot be stops the rest.  Returns how many were posted and in *@err
 * the errno that stopped the rest (0 if none did).
 */
static u32 rv_write_post_batch(struct rv_file *rf, const struct rv_write *w,
			       struct rv_write_prep *p, u32 count, int *err)
{
	u32 prepared, done = 0, k;
	int ret = 0, prep_err = 0;

	/* Registrations first: their lookups may not nest in @sq_lock. */
	for (prepared = 0; prepared < count; prepared++) {
		prep_err = rv_write_prepare(rf, &w[prepared], &p[prepared]);
		if (prep_err)
			break;
	}
	while (done < prepared) {
		struct rv_conn *conn = p[done].conn;
		u32 run = 1, posted;
		u64 bytes = 0;
		int perr;

		while (done + run < prepared && p[done + run].conn == conn)
			run++;
		run = rv_write_share(&w[done], run, conn->num_conn);
		ret = rv_write_conn_ready(conn);
		if (ret)
			break;
		posted = rv_write_post_run(rf, &w[done], &p[done], run, &perr);
		if (!posted && !perr) {
			ret = rv_write_conn_ready(conn) ?: -EAGAIN;
			break;
		}
		for (k = done; k < done + posted; k++)
			bytes += w[k].length;
		this_cpu_add(rf->stats->writes_posted, posted);
		this_cpu_add(rf->stats->bytes_posted, bytes);
		this_cpu_add(conn->stats->writes_posted, posted);
		this_cpu_add(conn->stats->bytes_posted, bytes);
		done += posted;
		if (perr) {
			/* Full (-ENOMEM) or broken before the CM noticed. */
			ret = -EAGAIN;
			break;
		}
	}
	/* The registrations of the writes not posted. */
	for (k = done; k < prepared; k++)
		if (p[k].mr)
			rv_mr_put_io(p[k].mr);
	/* All prepared writes posted: the one after them stopped the rest. */
	if (done == prepared)
		ret = prep_err;
	if (ret == -EAGAIN)
		atomic64_inc(&rf->posts_eagain);
	*err = ret;
	return done;
}

/**
 * rv_write_post_one - post one write already copied into the kernel
 * @rf: the file, held by rv_file_lock_dev() or rv_file_trylock_dev()
 *	(owner checked, in the device's read section)
 * @w: the write, in kernel memory: user space can no longer change it
 *	between its checks and its use
 *
 * The one path of POST_WRITE and of the io_uring command
 * RV_URING_CMD_POST_WRITE (rv_uring.c).  Sleeps on nothing: it takes
 * spinlocks only, so it may run from an io_uring issue that must not
 * block.
 *
 * Return: 0 once posted (its end comes as an RV_EVENT_SEND in the ring),
 * or POST_WRITE's errno.
 */
int rv_write_post_one(struct rv_file *rf, const struct rv_write *w)
{
	struct rv_write_prep p;
	int ret;

	rv_write_post_batch(rf, w, &p, 1, &ret);
	return ret;
}

int rv_cmd_post_write(struct rv_file *rf, const struct rv_ucmd *ucmd,
		      void *arg)
{
	struct rv_post_write *cmd = arg;
	int ret;

	if (cmd->flags)
		return -EINVAL;
	ret = rv_file_lock_dev(rf, true);
	if (ret)
		return ret;
	ret = rv_write_post_one(rf, &cmd->write);
	rv_file_unlock_dev(rf);
	return ret;
}

int rv_cmd_post_writes(struct rv_file *rf, const struct rv_ucmd *ucmd,
		       void *arg)
{
	struct rv_post_writes *cmd = arg;
	struct rv_write_prep *p;
	struct rv_write *w;
	u32 copied;
	int ret, idx;

	if (cmd->flags || cmd->posted || cmd->error || !cmd->count ||
	    cmd->count > RV_MAX_POST_WRITES ||
	    cmd->entry_size != sizeof(struct rv_write))
		return -EINVAL;
	/*
	 * The answer must be writable before anything is posted, so that
	 * EFAULT means nothing was done: written back unchanged (posted and
	 * error are 0), it can fail later only if the caller unmaps or
	 * write-protects it during the call.
	 */
	if (rv_ucmd_respond(ucmd, cmd, sizeof(*cmd)))
		return -EFAULT;
	/* At most 72 KiB; the caller's cgroup pays, a failure is ENOMEM. */
	w = kvmalloc_array(cmd->count, sizeof(*w) + sizeof(*p),
			   GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL);
	if (!w)
		return -ENOMEM;
	p = (struct rv_write_prep *)(w + cmd->count);

	mutex_lock(&rf->lock);
	ret = rv_file_check_owner(rf);
	if (ret)
		goto out_unlock;
	/*
	 * The copy may fault on memory user space serves: never in the
	 * device's read section.  Entries copied whole are posted before a
	 * fault is reported, as if copied one by one.
	 */
	copied = cmd->count -
		 DIV_ROUND_UP(copy_from_user(w, u64_to_user_ptr(cmd->writes),
					     cmd->count * sizeof(*w)),
			      sizeof(*w));
	idx = rv_job_enter(rf->job, true);
	if (idx < 0) {
		ret = idx;
	} else if (copied) {
		cmd->posted = rv_write_post_batch(rf, w, p, copied, &ret);
		if (!ret && copied < cmd->count)
			ret = -EFAULT;
	} else {
		ret = -EFAULT;
	}
	rv_device_leave(rf->job->dev, idx);
out_unlock:
	mutex_unlock(&rf->lock);
	kvfree(w);

	if (!cmd->posted)
		return ret;
	cmd->error = -ret;
	return rv_ucmd_respond(ucmd, cmd, sizeof(*cmd));
}

int rv_cmd_stats(struct rv_file *rf, const struct rv_ucmd *ucmd, void *arg)
{
	struct rv_stats *cmd = arg;
	struct rv_io_stats s;

	if (cmd->flags || cmd->rsvd)
		return -EINVAL;
	/* Figures only: any process holding the file may read them. */
	mutex_lock(&rf->lock);
	if (!rf->job) {
		mutex_unlock(&rf->lock);
		return -ENOTCONN;
	}
	rv_stats_sum(rf->stats, &s);
	cmd->writes_posted = s.writes_posted;
	cmd->bytes_posted = s.bytes_posted;
	cmd->writes_completed = s.writes_completed;
	cmd->writes_failed = s.writes_failed;
	cmd->posts_eagain = atomic64_read(&rf->posts_eagain);
	cmd->recvs = s.recvs;
	cmd->bytes_received = s.bytes_received;
	cmd->ring_overflows = rf->ring ? READ_ONCE(rf->ring->overflows) : 0;
	cmd->inflight = atomic_read(&rf->inflight);
	mutex_unlock(&rf->lock);
	return rv_ucmd_respond(ucmd, cmd, sizeof(*cmd));
}

void rv_write_file_init(struct rv_file *rf)
{
	atomic_set(&rf->inflight, 0);
	init_waitqueue_head(&rf->inflight_wait);
}

/*
 * Break the QPs @rf has writes on: their flushes end those writes (and
 * the others on them: the connection reconnects).  Caller holds rf->lock.
 */
static void rv_write_break_file(struct rv_file *rf)
{
	struct rv_job *job = rf->job;
	struct rv_conn *conn;
	int idx;
	u32 i;

	idx = rv_job_enter(job, false);
	mutex_lock(&rv_conn_list_lock);
	list_for_each_entry(conn, &job->conns, job_list) {
		mutex_lock(&conn->lock);
		for (i = 0; i < conn->num_conn; i++)
			if (rv_write_qp_busy_for(&conn->qps[i], rf))
				rv_cm_qp_break(&conn->qps[i]);
		mutex_unlock(&conn->lock);
	}
	mutex_unlock(&rv_conn_list_lock);
	rv_device_leave(job->dev, idx);
}

/**
 * rv_write_file_quiesce - wait for a closing file's writes
 * @rf: the file, rf->lock held, still attached and holding its handles
 *
 * Writes on healthy QPs end within the transport's retry limits; after
 * quiesce_ms the QPs still carrying ours are broken.  A broken QP is
 * destroyed by its work, and every write on it ends by then, flushed or
 * (drain timed out) ended by rv_write_qp_flush(): within two drain
 * timeouts and the work's queueing.  The file is never freed, nor release
 * left, while a write may still use it; a warning each quiesce_ms says
 * what it waits for.
 */
void rv_write_file_quiesce(struct rv_file *rf)
{
	if (!rf->job)
		return;
	if (wait_event_timeout(rf->inflight_wait, !atomic_read(&rf->inflight),
			       msecs_to_jiffies(rv_quiesce_ms)))
		return;
	pr_warn_ratelimited("job%u slot%u: %d writes in flight at close: breaking their QPs\n",
			    rf->job->id, rf->slot, atomic_read(&rf->inflight));
	rv_write_break_file(rf);
	while (!wait_event_timeout(rf->inflight_wait,
				   !atomic_read(&rf->inflight),
				   msecs_to_jiffies(rv_quiesce_ms)))
		pr_warn("job%u slot%u: still waiting for %d writes at close\n",
			rf->job->id, rf->slot, atomic_read(&rf->inflight));
}
