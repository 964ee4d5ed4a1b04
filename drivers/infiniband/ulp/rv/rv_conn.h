/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rv: a job's shared connection to a remote node (num_conn kernel RC QPs)
 * and its rdma_cm wire format.
 *
 * Objects:
 *
 *   struct rv_conn     one per (job, remote address); refcounted by the
 *                      handles files hold on it (CONN_CREATE); the last
 *                      put disconnects and destroys its QPs, CQs and
 *                      cm_ids.  It never outlives its job: every handle
 *                      belongs to a file attached to the job, and a file
 *                      drops its handles before it detaches.
 *   struct rv_conn_qp  one of the connection's num_conn QPs, with its CQ,
 *                      its current rdma_cm id and the delayed work that
 *                      (re)starts attempts and enforces the timeout.
 *
 * Lock order additions (see rv.h for the rest):
 *
 *   rv_file.lock
 *     rv_cm_listen_lock (rv_cm_listen.c; ATTACH before it enters the
 *                        device, detach after it leaves it; held while
 *                        rdma_cm creates or destroys a listener, which
 *                        waits for the listener's handlers and for
 *                        rv_cm_wq's listen work)
 *     (the device's read section)
 *       rv_device.jobs_lock
 *         rv_conn_list_lock
 *           rv_conn.lock
 *             rv_conn_qp.sq_lock (rv_write_conn_publish(), heartbeats,
 *                                 DUMP; posts and send completions take
 *                                 it alone, one slot at a time)
 *           rv_uid_lock (a leaf: counting a new connection, rv_caps.c)
 *
 * rdma_cm event handlers run in the CM's work context and take only
 * rv_conn_list_lock (a connection request, to find its connection: it
 * takes that connection's rv_conn.lock, then drops the list lock before
 * creating a QP) and rv_conn.lock.  Whoever
 * destroys a cm_id (rdma_destroy_id() waits for its running handler)
 * therefore holds neither of those two; it may hold rv_file.lock and be in
 * a device's read section, which no handler enters.  No cm_id is ever destroyed
 * from its own handler: ids that fail are parked in rv_conn_qp.dead_id
 * and destroyed by the QP's work; a rejected incoming request is
 * destroyed by rdma_cm itself (the handler returns non-zero).
 *
 * Completion handlers run in softirq (each QP's CQ is IB_POLL_SOFTIRQ)
 * and take, one at a time and never nested, rv_conn_qp.sq_lock,
 * rv_mr_cache.lock and rv_ring.lock, whose other takers use the _bh
 * (_irqsave for the ring) variant.  They never sleep: what may sleep
 * (freeing a registration, replacing a failed QP) is queued to a
 * workqueue.
 */
#ifndef RV_CONN_H
#define RV_CONN_H

#include <linux/seq_file.h>
#include <linux/socket.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <rdma/rdma_cm.h>

#include "rv.h"
#include "rv_auth.h"

/* Module parameters (rv_cm_listen.c), validated by rv_cm_init(). */
extern unsigned int rv_cm_port;
extern unsigned int rv_conn_wqe_budget;
extern unsigned int rv_conn_timeout_ms;
extern unsigned int rv_ack_timeout;
extern unsigned int rv_drain_timeout_ms;

#define RV_DRAIN_TIMEOUT_MAX_MS	60000

/*
 * Transport retries before a QP fails.  7 would mean "forever" on some
 * devices (rxe among them), and a write to a peer that is gone must end
 * with an error; RNR retries stay unlimited (the peer reposts receives).
 */
#define RV_CM_RETRY_COUNT	6

/*
 * Ports below this are privileged for rdma_cm: cma_use_port() lets only
 * CAP_NET_BIND_SERVICE bind them (its PROT_SOCK, whatever
 * net.ipv4.ip_unprivileged_port_start says).  rv listens on one and its
 * clients send from one, so a peer's request from such a port comes from
 * its kernel (rv), not from a user (see "Security model" in rv(7)).
 */
#define RV_CM_PRIV_PORT_END	1024

/* Most handles one file may hold (ENOSPC beyond). */
#define RV_CONN_MAX_HANDLES	65535

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
 *	complete anything, by rv_write_post_recvs()
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
 * Created with the QP (rv_cm_create_qp()), freed with it
 * (rv_cm_destroy_qp()), write contexts included: a connection that never
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
 * @fault_work: replaces the QP after an error (rv_cm_qp_fault())
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

/**
 * struct rv_conn - a job's connection to one remote node
 * @kref: one reference per handle (and per waiting CONN_QUERY)
 * @job: the job; constant
 * @list: entry in the global list of connections, for incoming requests;
 *	protected by rv_conn_list_lock
 * @job_list: entry in @job->conns; changed under rv_conn_list_lock in the
 *	device's read section, so device removal (after the last section)
 *	walks it without the list lock
 * @id: node-wide number of the connection (CONN_CREATE's conn_id)
 * @local: the job's address (its GID as an IP address), port 0; constant
 * @remote: the remote node's address and CM port; constant
 * @client: this node sends the requests (lower address); constant
 * @num_conn: number of QPs, the job's num_conn; constant
 * @depth: send and receive queue depth of each QP; constant
 * @cq_vector: completion vector of QP 0's CQ (QP i uses the next i-th,
 *	modulo the device's count); constant
 * @lock: protects the fields below and each QP's cm_id, dead_id, state,
 *	reason; also guards use of the job's PD and device by CM handlers:
 *	they create QPs and CQs only while @dead is false.  Not taken by
 *	posts: they read @dead and @state with READ_ONCE() for the errno
 *	and post on what rv_write_conn_publish() published
 * @dead: teardown started; no new cm_id, attempt or work from now on
 * @ib_released: the QPs, CQs and cm_ids are gone (teardown is done)
 * @started: CONNECT was issued (and not undone by an error)
 * @timeout: establishment timeout from CONNECT, in jiffies
 * @deadline: jiffies by which every QP must be connected
 * @state: RV_CONN_STATE_*, read without the lock by waiters
 * @reason: RV_CONN_REASON_* reported by CONN_QUERY
 * @connected: QPs in RV_QP_CONNECTED
 * @generation: times the connection became CONNECTED
 * @handles: handles on the connection (CONN_QUERY's @handles)
 * @attempts: client: requests sent
 * @rejects: client: requests the remote rejected
 * @wait: CONN_QUERY waiters, woken on every state change
 * @max_segment: longest RDMA WRITE the port takes; constant
 * @max_sge: SGEs per write work request: the device's limit, at most
 *	RV_MAX_SEND_SGE; constant
 * @next_qp: where the next write's search for a QP with room starts; a
 *	hint, read and set without a lock
 * @stats: data path counters, per CPU (no lock)
 * @drops_no_slot: arrivals for a slot with no ring (atomic)
 * @drops_ring_full: arrivals dropped on a full ring (atomic)
 * @recv_errors: receive completions in error, flushes aside (atomic)
 * @hb_work: sends heartbeats on idle QPs, every job heartbeat_ms (or
 *	longer: rv_heartbeat_budget); queued only while a QP is connected
 * @hb_armed: @hb_work is counted in rv_write.c's armed connections;
 *	under @lock
 * @heartbeats: heartbeats sent (atomic)
 * @qp_errors: QPs replaced after errors (atomic)
 * @qps: @num_conn QPs
 */
struct rv_conn {
	struct kref kref;
	struct rv_job *job;
	struct list_head list;
	struct list_head job_list;
	u32 id;
	struct sockaddr_storage local;
	struct sockaddr_storage remote;
	bool client;
	u32 num_conn;
	u32 depth;
	u32 cq_vector;

	struct mutex lock; /* see above */
	bool dead;
	bool ib_released;
	bool started;
	unsigned long timeout;
	unsigned long deadline;
	u32 state;
	u32 reason;
	u32 connected;
	u64 generation;
	u32 handles;
	u64 attempts;
	u32 rejects;
	wait_queue_head_t wait;

	u32 max_segment;
	u32 max_sge;
	atomic_t next_qp;
	struct rv_io_stats __percpu *stats;
	atomic64_t drops_no_slot;
	atomic64_t drops_ring_full;
	atomic64_t recv_errors;
	struct delayed_work hb_work;
	bool hb_armed;
	atomic64_t heartbeats;
	atomic64_t qp_errors;

	struct rv_conn_qp qps[];
};

/* Private data magic: "RVCM". */
#define RV_CM_MAGIC	0x5256434dU
/* 2: authenticated requests and accepts (rv_auth.h). */
#define RV_CM_VERSION	2

/* struct rv_cm_req_pdata.flags */
#define RV_CM_F_AUTH		0x01	/* the request and accept carry tags */
#define RV_CM_F_LAUNCHER	0x02	/* the client's job is a launcher's */

/**
 * struct rv_cm_req_pdata - private data of a connection request
 * @magic: RV_CM_MAGIC
 * @version: RV_CM_VERSION; a server refuses other versions
 * @qp_index: which QP of the connection, < @num_conn
 * @num_conn: the client job's num_conn; must equal the server job's
 * @key_len: bytes used in @key, 1..RV_JOB_KEY_MAX
 * @flags: RV_CM_F_*; RV_CM_F_AUTH unless both nodes run without a
 *	cluster key (insecure_no_cluster_key)
 * @uid: the job's uid in the initial user namespace
 * @key: the job key; bytes past @key_len are 0
 * @time_ns: the client's CLOCK_REALTIME, for the server's replay check
 * @nonce: the client's nonce (struct rv_auth_msg.nonce_c)
 * @tag: the first bytes of the request's tag (RV_AUTH_LABEL_REQ): lets
 *	the server refuse a node without the key before it creates a QP;
 *	the proof that counts comes with the QP's first message
 *
 * All multi-byte fields are big endian.  56 bytes: all that rdma_cm
 * leaves for private data in an IB CM REQ.
 */
struct rv_cm_req_pdata {
	__be32 magic;
	__be16 version;
	__be16 qp_index;
	__be16 num_conn;
	u8 key_len;
	u8 flags;
	__be32 uid;
	u8 key[RV_JOB_KEY_MAX];
	__be64 time_ns;
	u8 nonce[RV_AUTH_NONCE_LEN];
	u8 tag[RV_AUTH_REQ_TAG_LEN];
};

/**
 * struct rv_cm_rep_pdata - private data of an accept
 * @magic: RV_CM_MAGIC
 * @version: RV_CM_VERSION
 * @qp_index: the request's QP index, echoed
 * @nonce: the server's nonce (struct rv_auth_msg.nonce_s)
 * @tag: the accept's tag (RV_AUTH_LABEL_REP); zero when the request
 *	was not authenticated
 */
struct rv_cm_rep_pdata {
	__be32 magic;
	__be16 version;
	__be16 qp_index;
	u8 nonce[RV_AUTH_NONCE_LEN];
	u8 tag[RV_AUTH_TAG_LEN];
};

/* Reject reasons on the wire (struct rv_cm_rej_pdata.reason). */
enum {
	RV_CM_REJ_NO_CONN = 1,		/* retryable: no matching connection */
	RV_CM_REJ_BUSY = 2,		/* retryable: the QP is in use */
	RV_CM_REJ_NO_RESOURCES = 3,	/* retryable: QP creation failed */
	RV_CM_REJ_BAD_REQUEST = 4,	/* fatal: invalid private data */
	RV_CM_REJ_MISMATCH = 5,		/* fatal: num_conn differs */
	RV_CM_REJ_UNPRIVILEGED = 6,	/* fatal: source port >= 1024 */
	RV_CM_REJ_AUTH = 7,		/* retryable: the tag did not check */
	RV_CM_REJ_REPLAY = 8,		/* retryable: an old request */
	RV_CM_REJ_PATH = 9,		/* retryable: path is not the source */
	RV_CM_REJ_MAX = RV_CM_REJ_PATH,
};

/**
 * struct rv_cm_rej_pdata - private data of a reject
 * @magic: RV_CM_MAGIC
 * @version: the server's RV_CM_VERSION
 * @reason: RV_CM_REJ_*
 */
struct rv_cm_rej_pdata {
	__be32 magic;
	__be16 version;
	__be16 reason;
};

/* rv_conn.c, rv_conn_cmd.c */
int rv_conn_init(void);
void rv_conn_exit(void);
void rv_conn_file_init(struct rv_file *rf);
void rv_conn_file_release(struct rv_file *rf);
void rv_conn_job_release_ib(struct rv_job *job);
void rv_conn_job_end(struct rv_job *job);
void rv_conn_update_state(struct rv_conn *conn);
struct rv_conn *rv_conn_get(struct rv_job *job,
			    const struct sockaddr_storage *remote);
void rv_conn_put(struct rv_conn *conn);
u32 rv_conn_put_handle(struct rv_conn *conn);
bool rv_conn_settled(struct rv_conn *conn);
bool rv_conn_addr_match(const struct rv_conn *conn,
			const struct sockaddr *local,
			const struct sockaddr *remote);
int rv_cmd_conn_create(struct rv_file *rf, const struct rv_ucmd *ucmd,
		       void *arg);
int rv_cmd_conn_connect(struct rv_file *rf, const struct rv_ucmd *ucmd,
			void *arg);
int rv_cmd_conn_query(struct rv_file *rf, const struct rv_ucmd *ucmd,
		      void *arg);
int rv_cmd_conn_destroy(struct rv_file *rf, const struct rv_ucmd *ucmd,
			void *arg);

/* rv_conn_cmd.c: the CONN_* ioctls are declared above */

/* rv_cm.c */
extern struct mutex rv_conn_list_lock;
extern struct list_head rv_conns;
extern struct workqueue_struct *rv_cm_wq;
int rv_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev);
int rv_cm_stats_show(struct seq_file *s, void *unused);

/* How an arrived write with immediate was routed (trace_rv_recv()). */
enum rv_recv_result {
	RV_RECV_DELIVERED,
	RV_RECV_NO_SLOT,
	RV_RECV_RING_FULL,
};

/* rv_write.c */
void rv_write_file_init(struct rv_file *rf);
void rv_write_file_quiesce(struct rv_file *rf);
void rv_write_qp_init(struct rv_conn_qp *qp);
void rv_write_conn_publish(struct rv_conn *conn);
u32 rv_write_conn_inflight(struct rv_conn *conn);

/*
 * CONN_QUERY and DUMP report the same data path counters in two uAPI
 * records whose fields share their names: one list keeps them in step.
 */
#define rv_conn_read_counters(dst, conn)				\
do {									\
	typeof(dst) __d = (dst);					\
	struct rv_conn *__c = (conn);					\
	struct rv_io_stats __s;						\
									\
	rv_stats_sum(__c->stats, &__s);					\
	__d->writes_posted = __s.writes_posted;				\
	__d->bytes_posted = __s.bytes_posted;				\
	__d->writes_completed = __s.writes_completed;			\
	__d->writes_failed = __s.writes_failed;				\
	__d->recvs = __s.recvs;						\
	__d->bytes_received = __s.bytes_received;			\
	__d->drops_no_slot = atomic64_read(&__c->drops_no_slot);	\
	__d->drops_ring_full = atomic64_read(&__c->drops_ring_full);	\
	__d->recv_errors = atomic64_read(&__c->recv_errors);		\
	__d->heartbeats = atomic64_read(&__c->heartbeats);		\
	__d->qp_errors = atomic64_read(&__c->qp_errors);		\
	__d->inflight = rv_write_conn_inflight(__c);			\
} while (0)

int rv_write_ibqp_init(struct rv_ibqp *iq);
void rv_write_ibqp_free(struct rv_ibqp *iq);
void rv_write_conn_init(struct rv_conn *conn);
void rv_write_probe(struct rv_conn_qp *qp);
void rv_write_hb_arm(struct rv_conn *conn);
void rv_write_hb_disarm(struct rv_conn *conn);
u32 rv_write_hb_armed(void);
bool rv_write_qp_drain(struct rv_ibqp *iq);
void rv_write_qp_flush(struct rv_ibqp *iq);
int rv_write_post_recvs(struct rv_ibqp *iq);
bool rv_write_qp_busy_for(struct rv_conn_qp *qp, const struct rv_file *rf);
int rv_cmd_post_write(struct rv_file *rf, const struct rv_ucmd *ucmd,
		      void *arg);
int rv_cmd_post_writes(struct rv_file *rf, const struct rv_ucmd *ucmd,
		       void *arg);
int rv_cmd_stats(struct rv_file *rf, const struct rv_ucmd *ucmd, void *arg);

/* rv_cm_listen.c */
struct rv_cm_listener *rv_cm_listener_get(struct net *net);
void rv_cm_listener_put(struct rv_cm_listener *l);
unsigned int rv_cm_listen_netns(void);
int rv_cm_init(void);
void rv_cm_exit(void);
void rv_cm_qp_init(struct rv_conn_qp *qp);
void rv_cm_kick(struct rv_conn_qp *qp, unsigned long delay);
void rv_cm_destroy_id(struct rdma_cm_id *id);
void rv_cm_qp_break(struct rv_conn_qp *qp);
void rv_cm_qp_fault(struct rv_conn_qp *qp, struct ib_qp *ibqp,
		    const char *cause);
void rv_cm_qp_flushed(struct rv_conn_qp *qp);

#define rv_conn_dbg(conn, fmt, ...) do {				\
	const struct rv_conn *__conn = (conn);				\
									\
	pr_debug("job%u conn%u: " fmt, __conn->job->id, __conn->id,	\
		 ##__VA_ARGS__);					\
} while (0)

#endif /* RV_CONN_H */
