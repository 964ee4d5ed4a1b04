/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rv: a job's shared connection to a remote node (num_conn kernel RC QPs,
 * rv_qp.h).  Its wire format is in rv_wire.h, its locks in rv.h's lock
 * order.
 *
 * Objects:
 *
 *   struct rv_conn     one per (job, remote address); refcounted by the
 *                      handles files hold on it (CONN_CREATE); the last
 *                      put disconnects and destroys its QPs, CQs and
 *                      cm_ids.  It never outlives its job: every handle
 *                      belongs to a file attached to the job, and a file
 *                      drops its handles before it detaches.
 */
#ifndef RV_CONN_H
#define RV_CONN_H

#include <linux/mutex.h>
#include <linux/socket.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "rv.h"
#include "rv_qp.h"

/* Most handles one file may hold (ENOSPC beyond). */
#define RV_CONN_MAX_HANDLES	65535

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
 * @hb_armed: @hb_work is counted in rv_qp.c's armed connections;
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

/* rv_conn.c */
extern struct mutex rv_conn_list_lock;
extern struct list_head rv_conns;
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

/* rv_conn_cmd.c */
int rv_cmd_conn_create(struct rv_file *rf, const struct rv_ucmd *ucmd,
		       void *arg);
int rv_cmd_conn_connect(struct rv_file *rf, const struct rv_ucmd *ucmd,
			void *arg);
int rv_cmd_conn_query(struct rv_file *rf, const struct rv_ucmd *ucmd,
		      void *arg);
int rv_cmd_conn_destroy(struct rv_file *rf, const struct rv_ucmd *ucmd,
			void *arg);

#define rv_conn_dbg(conn, fmt, ...) do {				\
	const struct rv_conn *__conn = (conn);				\
									\
	pr_debug("job%u conn%u: " fmt, __conn->job->id, __conn->id,	\
		 ##__VA_ARGS__);					\
} while (0)

#endif /* RV_CONN_H */
