// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The QPs of a connection (rv_qp.h): creation and destruction of a QP
 * with its own CQ, the posting of its receives, the drain that ends
 * everything posted on it before it goes, the replacement of a QP that
 * failed, and the heartbeats that find a dead path on an idle one.
 *
 * rv_cm.c decides when a QP is created (an accepted request, a client's
 * resolved route) and when its id fails; rv_write.c posts the writes on
 * it and handles their completions.
 */
#include "rv.h"
#include "rv_cm.h"
#include "rv_conn.h"
#include "rv_qp.h"
#include "rv_write.h"
#include "rv_conn_trace.h"

#include <linux/slab.h>

/* The proof's buffer, mapped both ways (rv_ibqp.proof). */
static int rv_qp_proof_init(struct ib_device *ibdev, struct rv_ibqp *iq)
{
	iq->proof = kzalloc(RV_AUTH_TAG_LEN, GFP_KERNEL_ACCOUNT);
	if (!iq->proof)
		return -ENOMEM;
	iq->proof_dma = ib_dma_map_single(ibdev, iq->proof, RV_AUTH_TAG_LEN,
					  DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(ibdev, iq->proof_dma)) {
		kfree(iq->proof);
		return -ENOMEM;
	}
	return 0;
}

static void rv_qp_proof_free(struct ib_device *ibdev, struct rv_ibqp *iq)
{
	ib_dma_unmap_single(ibdev, iq->proof_dma, RV_AUTH_TAG_LEN,
			    DMA_BIDIRECTIONAL);
	kfree(iq->proof);
}

/*
 * Destroy @id's QP, then its CQ, then end the writes no completion ended,
 * and only then free the write contexts: nothing can complete on them
 * any more.  Without a drain only for a QP that never connected (nothing
 * but flushes can complete).
 */
void rv_qp_free(struct rdma_cm_id *id)
{
	struct rv_ibqp *iq = id->qp->qp_context;
	struct ib_device *ibdev = iq->cq->device;

	rdma_destroy_qp(id);
	ib_free_cq(iq->cq);
	rv_write_qp_flush(iq);
	rv_qp_proof_free(ibdev, iq);
	rv_write_ibqp_free(iq);
	kfree(iq);
}

/*
 * Destroy a QP of a slot and its CQ; the QP's writes and receives are
 * drained first, so each write ends through its completion.  When the
 * drain times out the device may still deliver completions: the receive
 * handler stops reposting (an RCU grace period makes sure it is not in the
 * middle of it), the QP goes, then its CQ, after which nothing of the QP
 * can complete, and the writes left are ended here.  Neither the drain
 * nor the flush touches another QP, so a late completion cannot end
 * another QP's drain or fill another QP's CQ.
 */
void rv_qp_destroy(struct rdma_cm_id *id)
{
	struct rv_ibqp *iq;

	if (!id->qp)
		return;
	iq = id->qp->qp_context;
	if (!rv_qp_drain(iq)) {
		WRITE_ONCE(iq->repost, false);
		synchronize_rcu();
	}
	rv_qp_free(id);
}

/*
 * Disconnect and destroy an id and its QP; never from the id's own
 * handler, never holding its connection's lock.
 */
void rv_qp_destroy_id(struct rdma_cm_id *id)
{
	if (!id)
		return;
	if (id->qp) {
		rdma_disconnect(id);
		rv_qp_destroy(id);
	}
	rdma_destroy_id(id);
}

static void rv_qp_async(struct ib_event *event, void *context)
{
	struct rv_ibqp *iq = context;
	struct rv_conn_qp *qp = iq->slot;

	rv_conn_dbg(qp->conn, "qp %u: async event %s\n", qp->index,
		    ib_event_msg(event->event));
	switch (event->event) {
	case IB_EVENT_QP_FATAL:
	case IB_EVENT_QP_REQ_ERR:
	case IB_EVENT_QP_ACCESS_ERR:
		rv_qp_fault(qp, event->element.qp,
			    ib_event_msg(event->event));
		break;
	default:
		break;
	}
}

/*
 * Create the QP of @id, with its own CQ and write contexts, in the job's
 * PD and post its receives (first the proof's on an authenticated
 * server, qp->auth).  Caller holds conn->lock with conn->dead
 * false: the PD and the device are alive.  Called in rdma_cm's handlers
 * or rv_cm_wq's work, so what it allocates is charged to no user's
 * cgroup, like the device's QP and CQ memory: the per-uid connection
 * cap bounds all of it.
 */
int rv_qp_create(struct rv_conn_qp *qp, struct rdma_cm_id *id)
{
	struct rv_conn *conn = qp->conn;
	struct ib_device *ibdev = conn->job->pd->device;
	struct ib_qp_init_attr attr = {
		.event_handler = rv_qp_async,
		.cap = {
			/*
			 * Drain markers, a heartbeat (or the proof) on the
			 * send queue, the proof on the receive queue.
			 */
			.max_send_wr = conn->depth + 2,
			.max_recv_wr = conn->depth + RV_RECV_BATCH + 1,
			.max_send_sge = conn->max_sge,
			.max_recv_sge = 1,
		},
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.qp_type = IB_QPT_RC,
	};
	struct rv_ibqp *iq;
	int ret;

	iq = kzalloc(sizeof(*iq), GFP_KERNEL_ACCOUNT);
	if (!iq)
		return -ENOMEM;
	iq->slot = qp;
	iq->repost = true;
	iq->authed = !qp->auth;
	ret = rv_write_ibqp_init(iq);
	if (ret)
		goto out_free_iq;
	ret = rv_qp_proof_init(ibdev, iq);
	if (ret)
		goto out_free_write;
	/*
	 * Completions in softirq, right after the device's interrupt (no
	 * kworker between a completion and its event), on a vector of the
	 * connection's own run of them (rv_conn.cq_vector), so that the
	 * QPs of a connection, and connections, spread over the vectors as
	 * nvme-rdma's queues do.  A private CQ, not a pooled one: see
	 * struct rv_ibqp.
	 */
	iq->cq = ib_alloc_cq(ibdev, iq,
			     attr.cap.max_send_wr + attr.cap.max_recv_wr,
			     (conn->cq_vector + qp->index) %
			     ibdev->num_comp_vectors,
			     IB_POLL_SOFTIRQ);
	if (IS_ERR(iq->cq)) {
		ret = PTR_ERR(iq->cq);
		goto out_free_proof;
	}
	attr.send_cq = iq->cq;
	attr.recv_cq = iq->cq;
	attr.qp_context = iq;
	ret = rdma_create_qp(id, conn->job->pd, &attr);
	if (ret)
		goto out_free_cq;
	iq->ibqp = id->qp;
	/* The old QP's faults were all handled before it was destroyed. */
	WRITE_ONCE(qp->broken, false);
	WRITE_ONCE(qp->fault_qp, NULL);
	ret = 0;
	if (qp->auth && !conn->client)
		ret = rv_cm_post_proof_recv(iq, conn->job->pd);
	if (!ret)
		ret = rv_qp_post_recvs(iq);
	if (ret)
		rv_qp_free(id);
	return ret;

out_free_cq:
	ib_free_cq(iq->cq);
out_free_proof:
	rv_qp_proof_free(ibdev, iq);
out_free_write:
	rv_write_ibqp_free(iq);
out_free_iq:
	kfree(iq);
	return ret;
}

/* Whether @ibqp is in the error state; false when it cannot say. */
static bool rv_qp_in_error(struct ib_qp *ibqp)
{
	struct ib_qp_init_attr init_attr;
	struct ib_qp_attr attr;

	if (ib_query_qp(ibqp, &attr, IB_QP_STATE, &init_attr))
		return false;
	return attr.qp_state == IB_QPS_ERR;
}

/*
 * A QP in the error state stays "connected" for the CM: fail its id (the
 * client reconnects) unless it was replaced already.
 *
 * A QP can also reach the error state with nothing but flushes to show
 * for it: rxe's responder moves it there after NAKing a bad request (the
 * error completion is the peer's), and then every receive, write and
 * heartbeat on it is flushed.  A flush is routine for a QP being replaced,
 * so the current QP is asked for its state before it is failed.
 */
void rv_qp_fault_work(struct work_struct *work)
{
	struct rv_conn_qp *qp = container_of(work, struct rv_conn_qp,
					     fault_work);
	struct rv_conn *conn = qp->conn;
	const char *cause = NULL;
	bool flushed;

	mutex_lock(&conn->lock);
	flushed = READ_ONCE(qp->flush_seen);
	WRITE_ONCE(qp->flush_seen, false);
	if (conn->dead || !qp->cm_id || qp->dead_id || !qp->cm_id->qp)
		goto out_unlock;
	if (qp->cm_id->qp == READ_ONCE(qp->fault_qp))
		cause = READ_ONCE(qp->fault_cause);
	else if (flushed && qp->state == RV_QP_CONNECTED &&
		 rv_qp_in_error(qp->cm_id->qp))
		cause = "in the error state, completions flushed";
	if (!cause)
		goto out_unlock;
	pr_warn_ratelimited("job%u conn%u qp%u: QP %u failed (%s), replacing it\n",
			    conn->job->id, conn->id, qp->index,
			    qp->cm_id->qp->qp_num, cause);
	atomic64_inc(&conn->qp_errors);
	rv_cm_fail(qp, qp->cm_id, RV_CONN_REASON_QP_ERROR);
out_unlock:
	mutex_unlock(&conn->lock);
}

/*
 * @ibqp of @qp failed because of @cause (static text); any context (async
 * events may be atomic).
 */
void rv_qp_fault(struct rv_conn_qp *qp, struct ib_qp *ibqp,
		 const char *cause)
{
	WRITE_ONCE(qp->fault_cause, cause);
	WRITE_ONCE(qp->broken, true);
	WRITE_ONCE(qp->fault_qp, ibqp);
	queue_work(rv_cm_wq, &qp->fault_work);
}

/*
 * A completion of @qp was flushed: have the work check whether the current
 * QP went to the error state unnoticed.  Any context.
 */
void rv_qp_flushed(struct rv_conn_qp *qp)
{
	if (READ_ONCE(qp->flush_seen))
		return;
	WRITE_ONCE(qp->flush_seen, true);
	queue_work(rv_cm_wq, &qp->fault_work);
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
void rv_qp_repost_recvs(struct rv_ibqp *iq)
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

/*
 * Fill a new QP's receive queue, a batch per call, before it can complete
 * anything: @depth + RV_RECV_BATCH - 1 receives (see rv_conn_qp).
 */
int rv_qp_post_recvs(struct rv_ibqp *iq)
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

void rv_qp_drain_done(struct ib_cq *cq, struct ib_wc *wc)
{
	complete(&container_of(wc->wr_cqe, struct rv_drain, cqe)->done);
}

static bool rv_qp_drain_wait(struct rv_ibqp *iq, struct rv_drain *d,
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
 * rv_qp_drain - complete everything posted on a QP before it goes
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
bool rv_qp_drain(struct rv_ibqp *iq)
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
	sent = sent && rv_qp_drain_wait(iq, &iq->sdrain, "send");
	received = received && rv_qp_drain_wait(iq, &iq->rdrain, "receive");
	return sent && received;
}

void rv_qp_hb_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rv_conn_qp *qp = container_of(wc->wr_cqe, struct rv_conn_qp,
					     hb_cqe);

	spin_lock_bh(&qp->sq_lock);
	qp->hb_inflight = false;
	spin_unlock_bh(&qp->sq_lock);
	if (wc->status == IB_WC_SUCCESS)
		WRITE_ONCE(qp->last_activity, jiffies);
	else if (wc->status != IB_WC_WR_FLUSH_ERR)	/* the path is dead */
		rv_qp_fault(qp, wc->qp, ib_wc_status_msg(wc->status));
	else
		rv_qp_flushed(qp);
}

/* Connections whose heartbeat work is queued (rv_conn.hb_armed). */
static atomic_t rv_hb_armed = ATOMIC_INIT(0);

u32 rv_qp_hb_armed(void)
{
	return atomic_read(&rv_hb_armed);
}

/*
 * The job's interval, stretched so that the armed connections of the node
 * together make at most heartbeat_budget passes a second.
 */
static unsigned long rv_qp_hb_period(const struct rv_conn *conn)
{
	u64 ms = conn->job->params.heartbeat_ms;
	u32 budget = READ_ONCE(rv_heartbeat_budget);

	if (budget)
		ms = max_t(u64, ms, div_u64((u64)atomic_read(&rv_hb_armed) *
					    MSEC_PER_SEC, budget));
	return msecs_to_jiffies(min_t(u64, ms, RV_MAX_HEARTBEAT_MS));
}

/* Count @conn in rv_hb_armed or not; caller holds @conn->lock. */
static void rv_qp_hb_count(struct rv_conn *conn, bool armed)
{
	lockdep_assert_held(&conn->lock);
	if (conn->hb_armed == armed)
		return;
	conn->hb_armed = armed;
	if (armed)
		atomic_inc(&rv_hb_armed);
	else
		atomic_dec(&rv_hb_armed);
}

/*
 * Queue @conn's heartbeat pass, if its job has heartbeats and it is not
 * queued yet: called when a QP is connected, so an idle or unconnected
 * connection costs no pass at all.  Caller holds @conn->lock.
 */
void rv_qp_hb_arm(struct rv_conn *conn)
{
	lockdep_assert_held(&conn->lock);
	if (conn->hb_armed || conn->dead ||
	    conn->job->params.heartbeat_ms == RV_HEARTBEAT_OFF)
		return;
	rv_qp_hb_count(conn, true);
	queue_delayed_work(rv_cm_wq, &conn->hb_work, rv_qp_hb_period(conn));
}

/* @conn is dead and its work cancelled: uncount it. */
void rv_qp_hb_disarm(struct rv_conn *conn)
{
	mutex_lock(&conn->lock);
	rv_qp_hb_count(conn, false);
	mutex_unlock(&conn->lock);
}

/*
 * A QP idle for heartbeat_ms sends a zero-length RDMA WRITE (no rkey
 * needed, no receive consumed): the transport's acknowledgment proves the
 * path, its retry exhaustion fails the QP, which is then replaced.  Both
 * sides do it, so a node that only receives notices a dead path too.  The
 * pass requeues itself while a QP is connected, at most heartbeat_budget
 * passes a second over the node (rv_qp_hb_period()).
 */
static void rv_qp_hb_work(struct work_struct *work)
{
	struct rv_conn *conn = container_of(to_delayed_work(work),
					    struct rv_conn, hb_work);
	unsigned long period = msecs_to_jiffies(conn->job->params.heartbeat_ms);
	bool any_connected = false;
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

		if (qp->state != RV_QP_CONNECTED || !qp->cm_id)
			continue;
		any_connected = true;
		if (time_before(jiffies, READ_ONCE(qp->last_activity) + period))
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
	/* A probe may have queued the pass while it was disarmed. */
	rv_qp_hb_count(conn, any_connected);
	if (any_connected)
		queue_delayed_work(rv_cm_wq, &conn->hb_work,
				   rv_qp_hb_period(conn));
out_unlock:
	mutex_unlock(&conn->lock);
}

/*
 * Have @qp send a heartbeat at once, idle or not.  Caller holds
 * @qp->conn->lock; nothing happens when the job's heartbeats are off.
 */
void rv_qp_probe(struct rv_conn_qp *qp)
{
	struct rv_conn *conn = qp->conn;
	u32 ms = conn->job->params.heartbeat_ms;

	if (conn->dead || ms == RV_HEARTBEAT_OFF)
		return;
	WRITE_ONCE(qp->last_activity, jiffies - msecs_to_jiffies(ms) - 1);
	mod_delayed_work(rv_cm_wq, &conn->hb_work, 0);
}

void rv_qp_conn_init(struct rv_conn *conn)
{
	INIT_DELAYED_WORK(&conn->hb_work, rv_qp_hb_work);
}
