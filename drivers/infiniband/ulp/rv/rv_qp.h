/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rv: the QPs of a connection (rv_conn.h).
 *
 * Objects:
 *
 *   struct rv_conn_qp  one of the connection's num_conn QPs, with its CQ,
 *                      its current rdma_cm id and the delayed work that
 *                      (re)starts attempts and enforces the timeout.
 *   struct rv_ibqp     one ib_qp of a struct rv_conn_qp and its own CQ,
 *                      from its creation (rv_qp_create()) to its
 *                      destruction (rv_qp_destroy()).
 *
 * rv_qp.c creates and destroys them, posts their receives, drains them,
 * replaces a failed one and sends the heartbeats; rv_cm.c connects them
 * and rv_write.c posts the writes on them.
 */
#ifndef RV_QP_H
#define RV_QP_H

#include <linux/completion.h>
#include <linux/list.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "rv_auth.h"

/**
 * enum rv_conn_qp_state - one QP's progress
 * @RV_QP_IDLE: client: CONNECT not issued; server: waiting for a request
 * @RV_QP_CONNECTING: client: an attempt is in flight; server: a request
 *	was accepted, the CM has not reported ESTABLISHED yet
 * @RV_QP_RETRY: client: the last attempt failed retryably; the QP's work
 *	starts the next one (or gives up at the deadline)
 * @RV_QP_CONNECTED: connected
 * @RV_QP_FAILED: client: gave up (fatal reject or deadline) until the
 *	next CONNECT
 */
enum rv_conn_qp_state {
	RV_QP_IDLE,
	RV_QP_CONNECTING,
	RV_QP_RETRY,
	RV_QP_CONNECTED,
	RV_QP_FAILED,
};

struct rv_conn;
struct rv_write_ctx;

/*
 * Receives consumed are posted again RV_RECV_BATCH at a time, as one
 * chain (one doorbell); the receive queue holds RV_RECV_BATCH - 1 extra
 * so that batching never leaves fewer than the connection's depth posted.
 */
#define RV_RECV_BATCH	16

/* A marker work request and its completion, for draining a QP. */
struct rv_drain {
	struct ib_cqe cqe;
	struct completion done;
};

/**
 * struct rv_ibqp - one ib_qp of a connection's QP slot, and its own CQ
 * @slot: the QP slot it serves (its completions and faults go there)
 * @ibqp: the QP (also its cm_id's qp); its qp_context is this struct
 * @cq: send and receive CQ of @ibqp and of nothing else; its cq_context is
 *	this struct.  Freed right after @ibqp: once both are gone no
 *	completion of @ibqp can reach a handler, whatever the device did
 *	with the ones it had not delivered yet (ib_free_cq() waits for a
 *	running poll, work or softirq).  This is why rv does not take CQs
 *	from the core's pool (ib_cq_pool_get()): a pooled CQ outlives the
 *	QP and would hand a completion the QP left behind, after a drain
 *	that timed out, to a handler whose write or QP is already freed
 * @repost: receive completions may repost on @ibqp; cleared, then an RCU
 *	grace period, before a QP whose drain timed out is destroyed
 * @recv_pending: receives consumed and not posted again yet, at most
 *	RV_RECV_BATCH - 1 between completions; touched only by @cq's
 *	handler (one poll of a CQ runs at a time) and, before the QP can
 *	complete anything, by rv_qp_post_recvs()
 * @recv_wrs: RV_RECV_BATCH receive work requests chained in order; the
 *	last n of them post n receives with one call
 * @sdrain: send queue marker of its drain
 * @rdrain: receive queue marker of its drain
 * @sq_free: entries of @ibqp's send queue not used by writes in flight
 *	(credits); under @slot->sq_lock
 * @ctx_free: the free write contexts of @ctxs (rv_write.c); under
 *	@slot->sq_lock
 * @ctxs: @slot->conn->depth write contexts, one per credit: never short
 * @chain: RV_POST_CHAIN work requests a post chains (rv_write.c); used
 *	under @slot->sq_lock
 * @chain_sge: their SGEs, @slot->conn->max_sge each
 * @authed: the peer proved the cluster key on this QP; receives are
 *	routed only then (the peer's proof is the QP's first message, so an
 *	unproved QP completes nothing else).  Client: set once the accept's
 *	tag checked, before the QP sends its proof; server: by @cq's handler
 *	when the proof arrived.  True from the start without authentication
 * @proof: RV_AUTH_TAG_LEN bytes mapped both ways at @proof_dma: the proof
 *	the client sends, or the one the server receives
 * @proof_dma: its DMA address
 * @expect: server: the proof it waits for, computed at accept
 * @proof_cqe: server: completion of the proof's receive, posted first
 *
 * Created with the QP (rv_qp_create()), freed with it
 * (rv_qp_destroy()), write contexts included: a connection that never
 * connects holds none, and no context outlives the QP and CQ whose
 * completions point at it.
 */
struct rv_ibqp {
	struct rv_conn_qp *slot;
	struct ib_qp *ibqp;
	struct ib_cq *cq;
	bool repost;
	u32 recv_pending;
	struct ib_recv_wr recv_wrs[RV_RECV_BATCH];
	struct rv_drain sdrain;
	struct rv_drain rdrain;
	u32 sq_free;
	struct list_head ctx_free;
	struct rv_write_ctx *ctxs;
	struct ib_rdma_wr *chain;
	struct ib_sge *chain_sge;
	bool authed;
	u8 *proof;
	u64 proof_dma;
	u8 expect[RV_AUTH_TAG_LEN];
	struct ib_cqe proof_cqe;
};

/**
 * struct rv_conn_qp - one RC QP of a connection
 * @conn: the connection
 * @index: QP index in the connection, sent in the request's private data
 * @recv_cqe: completion entry of every receive posted on the QP
 * @work: starts attempts, retries, times out, destroys @dead_id
 * @cm_id: the current rdma_cm id (its QP is cm_id->qp), NULL if none;
 *	protected by @conn->lock
 * @dead_id: an id that failed, to be destroyed by @work; protected by
 *	@conn->lock
 * @state: enum rv_conn_qp_state, protected by @conn->lock
 * @reason: RV_CONN_REASON_* of the last failure, protected by @conn->lock
 * @attempt_start: client: jiffies when the current attempt began;
 *	protected by @conn->lock
 * @sq_lock: protects @inflight, @nr_inflight, @post_iq, @post_gen, the
 *	heartbeat's fields and, of each of the slot's QPs (struct rv_ibqp),
 *	the credits, free contexts and chain buffers, and serialises the
 *	posts of writes on the slot; taken by posters without @conn->lock,
 *	by rv_write_conn_publish() under it, and by send completions in
 *	softirq: everyone else takes it with spin_lock_bh()
 * @inflight: struct rv_write_ctx of the writes in flight on the slot,
 *	whichever of its QPs (struct rv_ibqp) they were posted on
 * @nr_inflight: how many; read without the lock for CONN_QUERY and DUMP
 * @post_iq: the QP writes are posted on, NULL while the connection is
 *	not CONNECTED: set by rv_write_conn_publish() under @conn->lock,
 *	cleared before its QP is parked or destroyed
 * @post_gen: the connection's generation writes on @post_iq report
 * @hb_cqe: completion entry of the QP's heartbeat
 * @hb_inflight: a heartbeat is posted; protected by @sq_lock
 * @hb_iq: the QP it is posted on (compared, never dereferenced);
 *	protected by @sq_lock
 * @last_activity: jiffies of the QP's last completion (any kind)
 * @broken: the current QP failed and waits for @fault_work: posts skip
 *	it; set without a lock from any context, cleared (with @fault_qp)
 *	under @conn->lock when a new QP is created
 * @fault_work: replaces the QP after an error (rv_qp_fault())
 * @fault_qp: the ib_qp that failed, compared (never dereferenced) with
 *	the current one by @fault_work
 * @fault_cause: static text naming the first failure, for the log line
 * @flush_seen: a completion of the QP was flushed; set without a lock
 *	from completion context, tested and cleared by @fault_work, which
 *	asks the current QP whether it is in the error state
 * @auth: the current handshake is authenticated (rv_auth.h); protected
 *	by @conn->lock, like the fields below
 * @hs: what the current handshake's tags bind
 * @auth_newest: server: @hs.time_ns of the newest request accepted for
 *	this QP: an older or equal one is a replay
 * @established: server: the CM reported ESTABLISHED for the current id;
 *	the QP is connected once the client's proof has arrived too
 * @auth_work: server: checks, after the proof arrived, whether the QP is
 *	connected now
 *
 * A QP's send queue has @conn->depth + 2 entries: @depth for writes, one
 * for a drain marker, one for a heartbeat; its receive queue @depth +
 * RV_RECV_BATCH: @depth + RV_RECV_BATCH - 1 receives posted when none is
 * waiting for its batch, so at least @depth are always posted (as many
 * as the peer can have writes with immediate in flight), and one entry
 * for a drain marker; its CQ the sum of both queues.
 */
struct rv_conn_qp {
	struct rv_conn *conn;
	u32 index;
	struct ib_cqe recv_cqe;
	struct delayed_work work;
	struct rdma_cm_id *cm_id;
	struct rdma_cm_id *dead_id;
	enum rv_conn_qp_state state;
	u32 reason;
	unsigned long attempt_start;
	spinlock_t sq_lock; /* see above */
	struct list_head inflight;
	u32 nr_inflight;
	struct rv_ibqp *post_iq;
	u32 post_gen;
	struct ib_cqe hb_cqe;
	bool hb_inflight;
	struct rv_ibqp *hb_iq;
	unsigned long last_activity;
	bool broken;
	struct work_struct fault_work;
	struct ib_qp *fault_qp;
	const char *fault_cause;
	bool flush_seen;
	bool auth;
	struct rv_auth_msg hs;
	u64 auth_newest;
	bool established;
	struct work_struct auth_work;
};

/* rv_qp.c */
int rv_qp_create(struct rv_conn_qp *qp, struct rdma_cm_id *id);
void rv_qp_free(struct rdma_cm_id *id);
void rv_qp_destroy(struct rdma_cm_id *id);
void rv_qp_destroy_id(struct rdma_cm_id *id);
void rv_qp_fault_work(struct work_struct *work);
void rv_qp_fault(struct rv_conn_qp *qp, struct ib_qp *ibqp,
		 const char *cause);
void rv_qp_flushed(struct rv_conn_qp *qp);
void rv_qp_repost_recvs(struct rv_ibqp *iq);
int rv_qp_post_recvs(struct rv_ibqp *iq);
void rv_qp_drain_done(struct ib_cq *cq, struct ib_wc *wc);
bool rv_qp_drain(struct rv_ibqp *iq);
void rv_qp_hb_done(struct ib_cq *cq, struct ib_wc *wc);
void rv_qp_conn_init(struct rv_conn *conn);
void rv_qp_hb_arm(struct rv_conn *conn);
void rv_qp_hb_disarm(struct rv_conn *conn);
u32 rv_qp_hb_armed(void);
void rv_qp_probe(struct rv_conn_qp *qp);

#endif /* RV_QP_H */
