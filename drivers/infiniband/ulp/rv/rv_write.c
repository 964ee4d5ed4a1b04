// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The data path: RDMA WRITE with immediate over a job's connection, the
 * completions that end each write in its poster's ring, and the receive
 * side that routes each arriving immediate to the ring of the slot it
 * names.
 *
 * A write is a struct rv_write_ctx from POST_WRITE until its last
 * segment completes.  It is on its QP's @inflight list meanwhile, holds
 * one send queue credit per segment and an io reference on its
 * registration, and counts in its file's and connection's @inflight.
 * Every segment is signaled: a write whose later segments cannot be
 * posted still ends, with an error, once the posted ones complete.
 *
 * How every write ends exactly once:
 *  - normally, by its last completion (rv_write_done());
 *  - when a QP is destroyed, rv_write_qp_drain() first moves it to the
 *    error state and waits (bounded) for a marker posted behind all
 *    writes: the hardware flushes them, in order, before the marker;
 *  - if that wait times out, the QP and then its own CQ are destroyed
 *    (no completion of the QP can run after that) and rv_write_qp_flush()
 *    ends the writes still listed for it with a flush status.
 * So every write ends by the time its QP is gone, and a closing file
 * waits for its writes (rv_write_file_quiesce()): a completion always
 * finds its file, ring and registration.
 *
 * Completions run in softirq (IB_POLL_SOFTIRQ): they take only spinlocks
 * (sq_lock, the MR cache's, the ring's), which process context takes
 * with bottom halves disabled, and leave whatever may sleep to work
 * items (a registration's free, a failed QP's replacement).
 */
#include "rv.h"
#include "rv_conn.h"
#include "rv_conn_trace.h"

#include <linux/sched/signal.h>
#include <linux/slab.h>

/* Longest wait at close for the file's writes on healthy QPs. */
#define RV_QUIESCE_MS		10000

/**
 * struct rv_write_ctx - one write in flight
 * @cqe: completion entry of every segment
 * @list: on @qp->inflight, under @qp->sq_lock
 * @rf: the posting file (waits for us at close)
 * @mr: the registration's entry with our io reference; NULL for 0 bytes
 * @qp: the QP slot the segments were posted on
 * @iq: the QP of that slot they were posted on
 * @wr_id: the caller's
 * @pending: segments not completed yet (and, while posting, not posted)
 * @status: first error status, 0 while none (cmpxchg)
 * @bytes: the write's length
 * @segs: segments posted: credits to give back
 * @generation: the connection's when posted
 */
struct rv_write_ctx {
	struct ib_cqe cqe;
	struct list_head list;
	struct rv_file *rf;
	struct rv_mr_entry *mr;
	struct rv_conn_qp *qp;
	struct rv_ibqp *iq;
	u64 wr_id;
	atomic_t pending;
	u32 status;
	u32 bytes;
	u32 segs;
	u32 generation;
};

static struct kmem_cache *rv_write_cache;

static void rv_write_finish(struct rv_write_ctx *ctx)
{
	struct rv_conn_qp *qp = ctx->qp;
	struct rv_conn *conn = qp->conn;
	struct rv_file *rf = ctx->rf;
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

	/* Softirq (a completion) or process context (a flush). */
	spin_lock_bh(&qp->sq_lock);
	list_del(&ctx->list);
	qp->sq_free += ctx->segs;
	spin_unlock_bh(&qp->sq_lock);

	/* A full ring counts the loss in its overflows. */
	overflow = !rv_ring_post(rf->ring, &ev);
	trace_rv_write_done(conn->job->id, conn->id, qp->index, rf->slot,
			    ctx->wr_id, ctx->bytes, ctx->segs, status, overflow);
	if (status) {
		atomic64_inc(&rf->stats.writes_failed);
		atomic64_inc(&conn->stats.writes_failed);
	} else {
		atomic64_inc(&rf->stats.writes_completed);
		atomic64_inc(&conn->stats.writes_completed);
	}
	if (ctx->mr)
		rv_mr_put_io(ctx->mr);
	atomic_dec(&conn->inflight);
	/* Release may free @rf once it sees 0, but only after an RCU grace. */
	rcu_read_lock();
	if (atomic_dec_and_test(&rf->inflight))
		wake_up(&rf->inflight_wait);
	rcu_read_unlock();
	kmem_cache_free(rv_write_cache, ctx);
}

static void rv_write_set_status(struct rv_write_ctx *ctx, u32 status)
{
	cmpxchg(&ctx->status, 0, status);
}

static void rv_write_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rv_write_ctx *ctx = container_of(wc->wr_cqe,
						struct rv_write_ctx, cqe);

	WRITE_ONCE(ctx->qp->last_activity, jiffies);
	if (wc->status != IB_WC_SUCCESS) {
		rv_write_set_status(ctx, wc->status);
		/* The QP is in error now: have it replaced. */
		if (wc->status != IB_WC_WR_FLUSH_ERR)
			rv_cm_qp_fault(ctx->qp, wc->qp,
				       ib_wc_status_msg(wc->status));
		else
			rv_cm_qp_flushed(ctx->qp);
	}
	if (atomic_dec_and_test(&ctx->pending))
		rv_write_finish(ctx);
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
		atomic64_inc(&rf->stats.recvs);
		atomic64_add(bytes, &rf->stats.bytes_received);
		atomic64_inc(&conn->stats.recvs);
		atomic64_add(bytes, &conn->stats.bytes_received);
	}
	rcu_read_unlock();
	trace_rv_recv(job->id, conn->id, slot, imm, bytes, result);
}

/*
 * Post @iq's @recv_pending consumed receives again, as one chain.  The
 * QP is alive: it is destroyed after a drain, which waits for this
 * handler (same CQ) to have run, or, when the drain timed out, after
 * @repost is cleared and an RCU grace period.  In the error state the
 * receives are flushed.  Receives a failed post leaves out are counted as
 * receive errors and not retried: the post fails only on a QP that is
 * going away.
 */
static void rv_write_repost(struct rv_ibqp *iq)
{
	const struct ib_recv_wr *first, *bad = NULL;
	u32 n = iq->recv_pending;
	int ret = 0;

	iq->recv_pending = 0;
	first = &iq->recv_wrs[RV_RECV_BATCH - n];
	rcu_read_lock();
	if (READ_ONCE(iq->repost))
		ret = ib_post_recv(iq->ibqp, first, &bad);
	rcu_read_unlock();
	if (!ret)
		return;
	/* @bad is the first one not posted: it and those after it. */
	if (bad >= first && bad < &iq->recv_wrs[RV_RECV_BATCH])
		n = &iq->recv_wrs[RV_RECV_BATCH] - bad;
	atomic64_add(n, &iq->slot->conn->recv_errors);
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
			rv_cm_qp_fault(qp, iq->ibqp,
				       ib_wc_status_msg(wc->status));
		} else {
			rv_cm_qp_flushed(qp);
		}
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
		rv_write_repost(iq);
}

/*
 * Fill a new QP's receive queue, a batch per call, before it can complete
 * anything: @depth + RV_RECV_BATCH - 1 receives (see rv_conn_qp).
 */
int rv_write_post_recvs(struct rv_ibqp *iq)
{
	u32 left = iq->slot->conn->depth + RV_RECV_BATCH - 1, n;
	int ret;

	iq->recv_pending = 0;
	while (left) {
		n = min_t(u32, left, RV_RECV_BATCH);
		ret = ib_post_recv(iq->ibqp, &iq->recv_wrs[RV_RECV_BATCH - n],
				   NULL);
		if (ret)
			return ret;
		left -= n;
	}
	return 0;
}

static void rv_write_hb_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rv_conn_qp *qp = container_of(wc->wr_cqe, struct rv_conn_qp,
					     hb_cqe);

	spin_lock_bh(&qp->sq_lock);
	qp->hb_inflight = false;
	spin_unlock_bh(&qp->sq_lock);
	if (wc->status == IB_WC_SUCCESS)
		WRITE_ONCE(qp->last_activity, jiffies);
	else if (wc->status != IB_WC_WR_FLUSH_ERR)	/* the path is dead */
		rv_cm_qp_fault(qp, wc->qp, ib_wc_status_msg(wc->status));
	else
		rv_cm_qp_flushed(qp);
}

/*
 * A QP idle for heartbeat_ms sends a zero-length RDMA WRITE (no rkey
 * needed, no receive consumed): the transport's acknowledgment proves the
 * path, its retry exhaustion fails the QP, which is then replaced.  Both
 * sides do it, so a node that only receives notices a dead path too.
 */
static void rv_write_hb_work(struct work_struct *work)
{
	struct rv_conn *conn = container_of(to_delayed_work(work),
					    struct rv_conn, hb_work);
	unsigned long period = msecs_to_jiffies(conn->job->params.heartbeat_ms);
	struct ib_rdma_wr wr = {
		.wr = {
			.opcode = IB_WR_RDMA_WRITE,
			.send_flags = IB_SEND_SIGNALED,
		},
	};
	bool busy;
	u32 i;

	mutex_lock(&conn->lock);
	if (conn->dead)
		goto out_unlock;
	for (i = 0; i < conn->num_conn; i++) {
		struct rv_conn_qp *qp = &conn->qps[i];

		if (qp->state != RV_QP_CONNECTED || !qp->cm_id ||
		    time_before(jiffies, READ_ONCE(qp->last_activity) + period))
			continue;
		spin_lock_bh(&qp->sq_lock);
		busy = qp->hb_inflight;
		qp->hb_inflight = true;
		if (!busy)
			qp->hb_iq = qp->cm_id->qp->qp_context;
		spin_unlock_bh(&qp->sq_lock);
		if (busy)
			continue;
		wr.wr.wr_cqe = &qp->hb_cqe;
		if (ib_post_send(qp->cm_id->qp, &wr.wr, NULL)) {
			spin_lock_bh(&qp->sq_lock);
			qp->hb_inflight = false;
			spin_unlock_bh(&qp->sq_lock);
			continue;
		}
		atomic64_inc(&conn->heartbeats);
		trace_rv_heartbeat(conn->job->id, conn->id, qp->index,
				   jiffies_to_msecs(jiffies -
						    READ_ONCE(qp->last_activity)));
	}
	queue_delayed_work(rv_cm_wq, &conn->hb_work, period);
out_unlock:
	mutex_unlock(&conn->lock);
}

/*
 * Have @qp send a heartbeat at once, idle or not.  Caller holds
 * @qp->conn->lock; nothing happens when the job's heartbeats are off.
 */
void rv_write_probe(struct rv_conn_qp *qp)
{
	struct rv_conn *conn = qp->conn;
	u32 ms = conn->job->params.heartbeat_ms;

	if (conn->dead || ms == RV_HEARTBEAT_OFF)
		return;
	WRITE_ONCE(qp->last_activity, jiffies - msecs_to_jiffies(ms) - 1);
	mod_delayed_work(rv_cm_wq, &conn->hb_work, 0);
}

void rv_write_conn_init(struct rv_conn *conn)
{
	INIT_DELAYED_WORK(&conn->hb_work, rv_write_hb_work);
}

static void rv_drain_done(struct ib_cq *cq, struct ib_wc *wc)
{
	complete(&container_of(wc->wr_cqe, struct rv_drain, cqe)->done);
}

void rv_write_qp_init(struct rv_conn_qp *qp)
{
	qp->recv_cqe.done = rv_write_recv_done;
	spin_lock_init(&qp->sq_lock);
	qp->sq_free = qp->conn->depth;
	INIT_LIST_HEAD(&qp->inflight);
	qp->hb_cqe.done = rv_write_hb_done;
	qp->last_activity = jiffies;
}

void rv_write_ibqp_init(struct rv_ibqp *iq)
{
	u32 i;

	/* No SGE: a write with immediate consumes a receive, no buffer. */
	for (i = 0; i < RV_RECV_BATCH; i++) {
		iq->recv_wrs[i].wr_cqe = &iq->slot->recv_cqe;
		iq->recv_wrs[i].next = i + 1 < RV_RECV_BATCH ?
				       &iq->recv_wrs[i + 1] : NULL;
	}
	iq->sdrain.cqe.done = rv_drain_done;
	iq->rdrain.cqe.done = rv_drain_done;
	init_completion(&iq->sdrain.done);
	init_completion(&iq->rdrain.done);
}

static bool rv_drain_wait(struct rv_ibqp *iq, struct rv_drain *d,
			  const char *which)
{
	const struct rv_conn_qp *qp = iq->slot;

	if (wait_for_completion_timeout(&d->done,
					msecs_to_jiffies(rv_drain_timeout_ms)))
		return true;
	pr_warn_ratelimited("job%u conn%u qp%u: %s queue drain timed out\n",
			    qp->conn->job->id, qp->conn->id, qp->index, which);
	return false;
}

/**
 * rv_write_qp_drain - complete everything posted on a QP before it goes
 * @iq: the QP, about to be destroyed
 *
 * Moves the QP to the error state and waits, at most drain_timeout_ms
 * per queue, for a marker posted behind every write and receive: the
 * flushes of everything before it have then been handled.  Caller holds
 * neither the connection's lock nor anything a completion takes.
 *
 * Return: true if both markers completed; false if completions of the QP
 * may still come (the caller then stops reposts before destroying it).
 */
bool rv_write_qp_drain(struct rv_ibqp *iq)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	struct ib_rdma_wr swr = {
		.wr = {
			.wr_cqe = &iq->sdrain.cqe,
			.opcode = IB_WR_RDMA_WRITE,
			.send_flags = IB_SEND_SIGNALED,
		},
	};
	struct ib_recv_wr rwr = { .wr_cqe = &iq->rdrain.cqe };
	bool sent, received;

	if (ib_modify_qp(iq->ibqp, &attr, IB_QP_STATE))
		return false;
	/* Each queue has a free entry for its marker: see rv_conn_qp. */
	sent = !ib_post_send(iq->ibqp, &swr.wr, NULL);
	received = !ib_post_recv(iq->ibqp, &rwr, NULL);
	/* Both waits run: each is bounded, and a QP drains both queues. */
	sent = sent && rv_drain_wait(iq, &iq->sdrain, "send");
	received = received && rv_drain_wait(iq, &iq->rdrain, "receive");
	return sent && received;
}

/*
 * End the writes posted on @iq that no completion ended: its drain timed
 * out, and it and its CQ are destroyed, so none can now.
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
	/* rv_write_finish() unlinks each from @ended. */
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
 * Post @ctx's @segs work requests on the first connected QP from
 * conn->next_qp with room for them, taking their SGEs from @sges.  Caller
 * holds conn->lock.  Returns 0 once the first work request is posted (the
 * write then ends with a SEND event), or an errno with nothing posted.
 */
static int rv_write_post_segs(struct rv_conn *conn, struct rv_write_ctx *ctx,
			      const struct rv_write *w,
			      struct rv_mr_sge_iter *sges)
{
	struct ib_sge sge[RV_MAX_SEND_SGE];
	struct rv_conn_qp *qp = NULL;
	struct ib_rdma_wr wr = {
		.wr = {
			.wr_cqe = &ctx->cqe,
			.sg_list = sge,
			.send_flags = IB_SEND_SIGNALED,
		},
		.rkey = w->rkey,
	};
	u32 i, n = conn->num_conn, segs = ctx->segs, posted, bytes = 0;
	u64 done = 0;
	int ret = 0;

	for (i = 0; i < n; i++) {
		struct rv_conn_qp *q = &conn->qps[(conn->next_qp + i) % n];

		if (q->state != RV_QP_CONNECTED || !q->cm_id ||
		    READ_ONCE(q->broken))
			continue;
		spin_lock_bh(&q->sq_lock);
		if (q->sq_free >= segs) {
			q->sq_free -= segs;
			qp = q;
			ctx->qp = qp;
			ctx->iq = q->cm_id->qp->qp_context;
			atomic_set(&ctx->pending, segs);
			list_add_tail(&ctx->list, &qp->inflight);
		}
		spin_unlock_bh(&q->sq_lock);
		if (qp)
			break;
	}
	if (!qp)
		return -EAGAIN;
	conn->next_qp = (qp->index + 1) % n;
	ctx->generation = (u32)conn->generation;
	trace_rv_write_post(conn->job->id, conn->id, qp->index, ctx->rf->slot,
			    ctx->wr_id, ctx->bytes, segs, 0, false);

	for (posted = 0; posted < segs; posted++) {
		wr.wr.num_sge = sges ? rv_mr_sge_next(sges, sge, conn->max_sge,
						      conn->max_segment,
						      &bytes) : 0;
		wr.remote_addr = w->remote_addr + done;
		if (posted == segs - 1) {
			wr.wr.opcode = IB_WR_RDMA_WRITE_WITH_IMM;
			wr.wr.ex.imm_data = cpu_to_be32(w->imm);
		} else {
			wr.wr.opcode = IB_WR_RDMA_WRITE;
		}
		ret = ib_post_send(qp->cm_id->qp, &wr.wr, NULL);
		if (ret)
			break;
		done += bytes;
	}
	if (posted == segs)
		return 0;

	/* Segments never posted will not complete: account for them now. */
	if (!posted) {
		spin_lock_bh(&qp->sq_lock);
		list_del(&ctx->list);
		qp->sq_free += segs;
		spin_unlock_bh(&qp->sq_lock);
		/* Full (-ENOMEM) or broken before the CM noticed. */
		return -EAGAIN;
	}
	rv_write_set_status(ctx, IB_WC_LOC_QP_OP_ERR);
	if (atomic_sub_and_test(segs - posted, &ctx->pending))
		rv_write_finish(ctx);
	/* Counted as posted by the caller, which must not touch @ctx now. */
	return 1;
}

/* Connection states in which a post may proceed, or the errno. */
static int rv_write_conn_ready(const struct rv_conn *conn)
{
	if (conn->dead)
		return -ENODEV;
	switch (conn->state) {
	case RV_CONN_STATE_CONNECTED:
		return 0;
	case RV_CONN_STATE_CONNECTING:
		return -EAGAIN;
	default:
		return -EPIPE;
	}
}

/*
 * Post one write for @rf.  Caller holds rf->lock of an attached file used
 * by its owner, and is in the device's read section.
 */
static int rv_write_post(struct rv_file *rf, const struct rv_write *w)
{
	u32 lkey = rf->job->pd->local_dma_lkey, segs = 1;
	struct rv_mr_entry *mr = NULL;
	struct rv_mr_sge_iter sges;
	struct rv_write_ctx *ctx;
	struct rv_conn *conn;
	int ret;

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

	if (w->length) {
		mr = rv_mr_get_io(&rf->mr_cache, w->mr_handle, w->local_addr,
				  w->length);
		if (IS_ERR(mr))
			return PTR_ERR(mr);
		segs = rv_mr_count_wrs(mr, w->local_addr, w->length,
				       conn->max_sge, conn->max_segment);
		rv_mr_sge_start(&sges, mr, lkey, w->local_addr, w->length);
	}
	if (segs > conn->depth) {
		ret = -EMSGSIZE;
		goto out_put_mr;
	}
	ctx = kmem_cache_alloc(rv_write_cache, GFP_KERNEL);
	if (!ctx) {
		ret = -ENOMEM;
		goto out_put_mr;
	}
	ctx->cqe.done = rv_write_done;
	ctx->rf = rf;
	ctx->mr = mr;
	ctx->wr_id = w->wr_id;
	ctx->status = 0;
	ctx->bytes = w->length;
	ctx->segs = segs;

	mutex_lock(&conn->lock);
	ret = rv_write_conn_ready(conn);
	if (!ret) {
		/* Counted first: a completion may run before we return. */
		atomic_inc(&conn->inflight);
		atomic_inc(&rf->inflight);
		ret = rv_write_post_segs(conn, ctx, w, mr ? &sges : NULL);
		if (ret < 0) {
			atomic_dec(&conn->inflight);
			atomic_dec(&rf->inflight);
		}
	}
	mutex_unlock(&conn->lock);
	if (ret < 0)
		goto out_free;

	atomic64_inc(&rf->stats.writes_posted);
	atomic64_add(w->length, &rf->stats.bytes_posted);
	atomic64_inc(&conn->stats.writes_posted);
	atomic64_add(w->length, &conn->stats.bytes_posted);
	return 0;

out_free:
	kmem_cache_free(rv_write_cache, ctx);
out_put_mr:
	if (mr)
		rv_mr_put_io(mr);
	if (ret == -EAGAIN)
		atomic64_inc(&rf->posts_eagain);
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
	ret = rv_write_post(rf, &cmd->write);
	rv_file_unlock_dev(rf);
	return ret;
}

/* Writes POST_WRITES copies in at a time, outside the device's section. */
#define RV_POST_CHUNK	16

int rv_cmd_post_writes(struct rv_file *rf, const struct rv_ucmd *ucmd,
		       void *arg)
{
	struct rv_post_writes *cmd = arg;
	const struct rv_write __user *uw;
	struct rv_write w[RV_POST_CHUNK];
	u32 n, copied, i;
	int ret = 0, idx;

	if (cmd->flags || cmd->posted || cmd->error || !cmd->count ||
	    cmd->count > RV_MAX_POST_WRITES ||
	    cmd->entry_size != sizeof(struct rv_write))
		return -EINVAL;
	uw = u64_to_user_ptr(cmd->writes);
	mutex_lock(&rf->lock);
	ret = rv_file_check_owner(rf);
	while (!ret && cmd->posted < cmd->count) {
		/*
		 * The copy may fault on memory user space serves: never in
		 * the device's read section.  Entries copied whole are posted
		 * before a fault is reported, as if copied one by one.
		 */
		n = min_t(u32, cmd->count - cmd->posted, RV_POST_CHUNK);
		copied = n - DIV_ROUND_UP(copy_from_user(w, &uw[cmd->posted],
							 n * sizeof(*w)),
					  sizeof(*w));
		idx = rv_device_enter(rf->job->dev, true);
		if (idx < 0) {
			rv_device_leave(rf->job->dev, idx);
			ret = idx;
			break;
		}
		for (i = 0; i < copied && !ret; i++) {
			ret = rv_write_post(rf, &w[i]);
			if (!ret)
				cmd->posted++;
		}
		rv_device_leave(rf->job->dev, idx);
		if (!ret && copied < n)
			ret = -EFAULT;
	}
	mutex_unlock(&rf->lock);

	if (!cmd->posted)
		return ret;
	cmd->error = -ret;
	return rv_ucmd_respond(ucmd, cmd, sizeof(*cmd));
}

int rv_cmd_stats(struct rv_file *rf, const struct rv_ucmd *ucmd, void *arg)
{
	struct rv_stats *cmd = arg;
	const struct rv_io_stats *s = &rf->stats;

	if (cmd->flags || cmd->rsvd)
		return -EINVAL;
	/* Figures only: any process holding the file may read them. */
	mutex_lock(&rf->lock);
	if (!rf->job) {
		mutex_unlock(&rf->lock);
		return -ENOTCONN;
	}
	cmd->writes_posted = atomic64_read(&s->writes_posted);
	cmd->bytes_posted = atomic64_read(&s->bytes_posted);
	cmd->writes_completed = atomic64_read(&s->writes_completed);
	cmd->writes_failed = atomic64_read(&s->writes_failed);
	cmd->posts_eagain = atomic64_read(&rf->posts_eagain);
	cmd->recvs = atomic64_read(&s->recvs);
	cmd->bytes_received = atomic64_read(&s->bytes_received);
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

	idx = rv_device_enter(job->dev, false);
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
 * RV_QUIESCE_MS the QPs still carrying ours are broken.  A broken QP is
 * destroyed by its work, and every write on it ends by then, flushed or
 * (drain timed out) ended by rv_write_qp_flush(): within two drain
 * timeouts and the work's queueing.  The file is never freed, nor release
 * left, while a write may still use it; a warning each RV_QUIESCE_MS says
 * what it waits for.
 */
void rv_write_file_quiesce(struct rv_file *rf)
{
	if (!rf->job)
		return;
	if (wait_event_timeout(rf->inflight_wait, !atomic_read(&rf->inflight),
			       msecs_to_jiffies(RV_QUIESCE_MS)))
		return;
	pr_warn_ratelimited("job%u slot%u: %d writes in flight at close: breaking their QPs\n",
			    rf->job->id, rf->slot, atomic_read(&rf->inflight));
	rv_write_break_file(rf);
	while (!wait_event_timeout(rf->inflight_wait,
				   !atomic_read(&rf->inflight),
				   msecs_to_jiffies(RV_QUIESCE_MS)))
		pr_warn("job%u slot%u: still waiting for %d writes at close\n",
			rf->job->id, rf->slot, atomic_read(&rf->inflight));
}

int rv_write_init(void)
{
	/*
	 * Every context is a user's POST_WRITE(S): SLAB_ACCOUNT charges
	 * them all to its memory cgroup whatever the call site passes.
	 */
	rv_write_cache = KMEM_CACHE(rv_write_ctx, SLAB_ACCOUNT);
	return rv_write_cache ? 0 : -ENOMEM;
}

void rv_write_exit(void)
{
	kmem_cache_destroy(rv_write_cache);
}
