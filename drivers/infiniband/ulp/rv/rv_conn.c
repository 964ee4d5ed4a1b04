// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Connections: the job's shared pool of num_conn RC QPs to one remote
 * node, its lifetime (references, teardown, device removal), its state,
 * and the per-file handle table.  The CONN_* commands are in
 * rv_conn_cmd.c, the rdma_cm side (requests, attempts, retries) in rv_cm.c,
 * the listener in rv_cm_listen.c and the QPs in rv_qp.c.
 */
#include "rv.h"
#include "rv_cm.h"
#include "rv_conn.h"
#include "rv_qp.h"
#include "rv_write.h"
#include "rv_conn_trace.h"

#include <linux/idr.h>
#include <linux/inet.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <net/ipv6.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>

/* Protects rv_conns (and each job's conns list, see struct rv_conn). */
DEFINE_MUTEX(rv_conn_list_lock);
LIST_HEAD(rv_conns);

static DEFINE_IDA(rv_conn_ida);

static bool rv_addr_equal(const struct sockaddr_storage *a,
			  const struct sockaddr_storage *b)
{
	const struct sockaddr_in *a4 = (const void *)a, *b4 = (const void *)b;
	const struct sockaddr_in6 *a6 = (const void *)a, *b6 = (const void *)b;

	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return a4->sin_addr.s_addr == b4->sin_addr.s_addr;
	return ipv6_addr_equal(&a6->sin6_addr, &b6->sin6_addr);
}

/* Addresses compare as big-endian byte strings; same family assumed. */
static int rv_addr_cmp(const struct sockaddr_storage *a,
		       const struct sockaddr_storage *b)
{
	const struct sockaddr_in *a4 = (const void *)a, *b4 = (const void *)b;
	const struct sockaddr_in6 *a6 = (const void *)a, *b6 = (const void *)b;

	if (a->ss_family == AF_INET)
		return memcmp(&a4->sin_addr, &b4->sin_addr,
			      sizeof(a4->sin_addr));
	return memcmp(&a6->sin6_addr, &b6->sin6_addr, sizeof(a6->sin6_addr));
}

bool rv_conn_addr_match(const struct rv_conn *conn,
			const struct sockaddr *local,
			const struct sockaddr *remote)
{
	struct sockaddr_storage l = {}, r = {};

	memcpy(&l, local, local->sa_family == AF_INET ?
	       sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6));
	memcpy(&r, remote, remote->sa_family == AF_INET ?
	       sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6));
	return rv_addr_equal(&conn->local, &l) &&
	       rv_addr_equal(&conn->remote, &r);
}

/*
 * The job's source address: its GID as an IP address.  A link-local IPv6
 * address gets the GID's netdev as scope.  Caller is in the device's
 * read section.
 */
static int rv_conn_local_addr(struct rv_job *job, struct sockaddr_storage *ss)
{
	const struct ib_gid_attr *attr;
	struct net_device *ndev;

	attr = rdma_get_gid_attr(job->dev->ibdev, job->params.port_num,
				 job->params.gid_index);
	if (IS_ERR(attr))
		return -EADDRNOTAVAIL;
	memset(ss, 0, sizeof(*ss));
	rdma_gid2ip((struct sockaddr *)ss, &attr->gid);
	if (ss->ss_family == AF_INET6) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		if (ipv6_addr_type(&sin6->sin6_addr) & IPV6_ADDR_LINKLOCAL) {
			rcu_read_lock();
			ndev = rdma_read_gid_attr_ndev_rcu(attr);
			if (!IS_ERR(ndev))
				sin6->sin6_scope_id = ndev->ifindex;
			rcu_read_unlock();
		}
	}
	rdma_put_gid_attr(attr);
	return 0;
}

/*
 * A new connection, not linked anywhere yet.  Its QPs and their CQs come
 * with each connection attempt (rv_qp_create()), so this is cheap and
 * takes no list lock.  Caller is in the device's read section.
 */
static struct rv_conn *rv_conn_alloc(struct rv_job *job,
				     const struct sockaddr_storage *local,
				     const struct sockaddr_storage *remote)
{
	struct ib_device *ibdev = job->dev->ibdev;
	u32 num_conn = job->params.num_conn;
	struct ib_port_attr port_attr;
	struct rv_conn *conn;
	u32 depth, i;
	int ret;

	ret = ib_query_port(ibdev, job->params.port_num, &port_attr);
	if (ret)
		return ERR_PTR(ret);

	/* Charged to the caller's memory cgroup: users create these. */
	conn = kzalloc(struct_size(conn, qps, num_conn), GFP_KERNEL_ACCOUNT);
	if (!conn)
		return ERR_PTR(-ENOMEM);
	ret = ida_alloc_min(&rv_conn_ida, 1, GFP_KERNEL);
	if (ret < 0)
		goto out_free;
	conn->id = ret;
	ret = -ENOMEM;
	conn->stats = alloc_percpu_gfp(struct rv_io_stats, GFP_KERNEL_ACCOUNT);
	if (!conn->stats)
		goto out_free_id;

	/*
	 * Room for a drain marker and a heartbeat on the send queue, a
	 * receive batch's slack and a drain marker on the receive queue,
	 * all on the QP's CQ: see rv_conn_qp.  A device too small for
	 * those gets depth 1, and its QP creation fails.
	 */
	depth = rv_conn_wqe_budget / num_conn;
	depth = min_t(u32, depth,
		      max_t(int, ibdev->attrs.max_qp_wr - RV_RECV_BATCH, 1));
	depth = min_t(u32, depth,
		      max_t(int, ibdev->attrs.max_cqe - 2 - RV_RECV_BATCH,
			    2) / 2);
	depth = max(depth, 1U);

	kref_init(&conn->kref);
	conn->job = job;
	conn->local = *local;
	conn->remote = *remote;
	conn->client = rv_addr_cmp(local, remote) < 0;
	conn->num_conn = num_conn;
	conn->depth = depth;
	/* Consecutive vectors for its QPs, the next ones for the next conn. */
	conn->cq_vector = (u32)atomic_add_return(num_conn,
						 &job->dev->cq_vector) -
			  num_conn;
	mutex_init(&conn->lock);
	init_waitqueue_head(&conn->wait);
	conn->timeout = msecs_to_jiffies(rv_conn_timeout_ms);
	conn->max_segment = port_attr.max_msg_sz ?: SZ_1G;
	conn->max_sge = clamp_t(u32, ibdev->attrs.max_send_sge, 1,
				RV_MAX_SEND_SGE);
	rv_qp_conn_init(conn);

	for (i = 0; i < num_conn; i++) {
		struct rv_conn_qp *qp = &conn->qps[i];

		qp->conn = conn;
		qp->index = i;
		rv_cm_qp_init(qp);
	}
	return conn;

out_free_id:
	ida_free(&rv_conn_ida, conn->id);
out_free:
	kfree(conn);
	return ERR_PTR(ret);
}

static void rv_conn_free(struct rv_conn *conn)
{
	free_percpu(conn->stats);
	mutex_destroy(&conn->lock);
	ida_free(&rv_conn_ida, conn->id);
	kfree(conn);
}

/**
 * rv_conn_release_ib - disconnect and destroy the QPs, CQs and cm_ids
 * @conn: the connection
 * @reason: RV_CONN_REASON_* reported from now on
 *
 * Called by the last put in the device's read section, and by device
 * removal once no section is left, so never twice at once; the second
 * call does nothing.  Holds neither rv_conn_list_lock nor
 * @conn->lock while destroying cm_ids (rdma_destroy_id() waits for the
 * id's running handler, which takes them).
 */
static void rv_conn_release_ib(struct rv_conn *conn, u32 reason)
{
	struct rdma_cm_id *ids[2 * RV_MAX_CONN_PER_NODE];
	unsigned int n = 0, i;

	mutex_lock(&conn->lock);
	if (conn->dead) {
		mutex_unlock(&conn->lock);
		return;
	}
	WRITE_ONCE(conn->dead, true);
	mutex_unlock(&conn->lock);

	/* No work can be queued again: every kick checks @dead. */
	cancel_delayed_work_sync(&conn->hb_work);
	rv_qp_hb_disarm(conn);
	for (i = 0; i < conn->num_conn; i++) {
		cancel_delayed_work_sync(&conn->qps[i].work);
		cancel_work_sync(&conn->qps[i].fault_work);
		cancel_work_sync(&conn->qps[i].auth_work);
	}

	mutex_lock(&conn->lock);
	for (i = 0; i < conn->num_conn; i++) {
		struct rv_conn_qp *qp = &conn->qps[i];

		if (qp->cm_id)
			ids[n++] = qp->cm_id;
		if (qp->dead_id)
			ids[n++] = qp->dead_id;
		qp->cm_id = NULL;
		qp->dead_id = NULL;
		qp->state = RV_QP_FAILED;
		qp->reason = reason;
	}
	rv_conn_update_state(conn);
	mutex_unlock(&conn->lock);

	/* Each QP goes with its CQ, ending the writes on it. */
	for (i = 0; i < n; i++)
		rv_qp_destroy_id(ids[i]);
	for (i = 0; i < conn->num_conn; i++) {
		WARN_ON_ONCE(!list_empty(&conn->qps[i].inflight));
		/* Completions during the drain may have queued them again. */
		cancel_work_sync(&conn->qps[i].fault_work);
		cancel_work_sync(&conn->qps[i].auth_work);
	}
	conn->ib_released = true;
	rv_conn_dbg(conn, "released, reason %u\n", reason);
}

/*
 * kref release, called by kref_put_mutex() with rv_conn_list_lock held
 * and in the device's read section (or after its removal) by
 * rv_conn_put().
 */
static void rv_conn_unlink(struct kref *kref)
{
	struct rv_conn *conn = container_of(kref, struct rv_conn, kref);

	list_del(&conn->list);
	list_del(&conn->job_list);
	conn->job->nr_conns--;
	mutex_unlock(&rv_conn_list_lock);

	rv_conn_release_ib(conn, RV_CONN_REASON_NONE);
	rv_uid_uncharge(conn->job->params.charge_uid, RV_UID_CONNS);
	rv_conn_free(conn);
}

/*
 * Drop a reference.  The caller may hold rv_file.lock but no lock below
 * it in the order: the last put enters the device's read section and
 * tears down.
 */
void rv_conn_put(struct rv_conn *conn)
{
	struct rv_device *dev = conn->job->dev;
	int idx;

	/* After removal the teardown finds the connection released. */
	idx = rv_job_enter(conn->job, false);
	kref_put_mutex(&conn->kref, rv_conn_unlink, &rv_conn_list_lock);
	rv_device_leave(dev, idx);
}

/*
 * A new handle's reference on the job's connection to @remote, created if
 * needed.  Caller holds rf->lock of an attached file of @job.
 */
struct rv_conn *rv_conn_get(struct rv_job *job,
			    const struct sockaddr_storage *remote)
{
	struct rv_device *dev = job->dev;
	struct rv_conn *conn, *fresh;
	struct sockaddr_storage local;
	int ret, idx;

	idx = rv_job_enter(job, true);
	if (idx < 0 || !job->pd) {
		ret = -ENODEV;
		goto out_unlock_dev;
	}
	ret = rv_conn_local_addr(job, &local);
	if (ret)
		goto out_unlock_dev;
	if (local.ss_family != remote->ss_family ||
	    rv_addr_equal(&local, remote)) {
		ret = -EINVAL;
		goto out_unlock_dev;
	}

	/*
	 * Allocated before the list lock, which incoming requests need: a
	 * loop of CONN_CREATE and CONN_DESTROY must not stall the CM.
	 */
	fresh = rv_conn_alloc(job, &local, remote);
	if (IS_ERR(fresh)) {
		ret = PTR_ERR(fresh);
		goto out_unlock_dev;
	}

	mutex_lock(&rv_conn_list_lock);
	/* Its launcher ended the job (rv_conn_job_end()). */
	if (job->ended) {
		mutex_unlock(&rv_conn_list_lock);
		rv_conn_free(fresh);
		ret = -ENODEV;
		goto out_unlock_dev;
	}
	list_for_each_entry(conn, &job->conns, job_list) {
		if (rv_addr_equal(&conn->remote, remote) &&
		    rv_addr_equal(&conn->local, &local) &&
		    /* sin_port and sin6_port are at the same offset */
		    ((struct sockaddr_in *)&conn->remote)->sin_port ==
		    ((const struct sockaddr_in *)remote)->sin_port) {
			kref_get(&conn->kref);
			goto out_found;
		}
	}
	/* Counted when linked, so that a second handle costs no quota. */
	ret = -EDQUOT;
	if (!job->params.limits.max_conns ||
	    job->nr_conns < job->params.limits.max_conns)
		ret = rv_uid_charge(job->params.charge_uid, RV_UID_CONNS);
	if (ret) {
		mutex_unlock(&rv_conn_list_lock);
		rv_conn_free(fresh);
		goto out_unlock_dev;
	}
	conn = fresh;
	fresh = NULL;
	list_add_tail(&conn->list, &rv_conns);
	list_add_tail(&conn->job_list, &job->conns);
	job->nr_conns++;
	rv_conn_dbg(conn, "created: %u QPs of depth %u, %s\n",
		    conn->num_conn, conn->depth,
		    conn->client ? "client" : "server");

out_found:
	mutex_lock(&conn->lock);
	conn->handles++;
	mutex_unlock(&conn->lock);
	mutex_unlock(&rv_conn_list_lock);
	rv_device_leave(dev, idx);
	if (fresh)
		rv_conn_free(fresh);
	return conn;

out_unlock_dev:
	rv_device_leave(dev, idx);
	return ERR_PTR(ret);
}

/* Drop a handle's reference; caller holds rf->lock, the handle is gone. */
u32 rv_conn_put_handle(struct rv_conn *conn)
{
	u32 left;

	mutex_lock(&conn->lock);
	left = --conn->handles;
	mutex_unlock(&conn->lock);
	rv_conn_put(conn);
	return left;
}

bool rv_conn_settled(struct rv_conn *conn)
{
	u32 state = READ_ONCE(conn->state);

	return state == RV_CONN_STATE_CONNECTED ||
	       state == RV_CONN_STATE_ERROR;
}

/* What an operator wants to see in the log, once per transition. */
static void rv_conn_log_transition(const struct rv_conn *conn, u32 state,
				   u32 reason)
{
	if (state == RV_CONN_STATE_CONNECTED && conn->generation > 1)
		pr_info_ratelimited("job%u conn%u to %pISpc: reconnected, generation %llu\n",
				    conn->job->id, conn->id, &conn->remote,
				    conn->generation);
	else if (state == RV_CONN_STATE_ERROR)
		pr_info_ratelimited("job%u conn%u to %pISpc: failed, reason %u\n",
				    conn->job->id, conn->id, &conn->remote,
				    reason);
	else if (conn->state == RV_CONN_STATE_CONNECTED &&
		 state == RV_CONN_STATE_CONNECTING &&
		 reason == RV_CONN_REASON_DISCONNECTED)
		/* Routine when the job's last process there closed. */
		pr_info_ratelimited("job%u conn%u to %pISpc: the peer disconnected a QP (its processes left, or it replaced the QP), reconnecting\n",
				    conn->job->id, conn->id, &conn->remote);
	else if (conn->state == RV_CONN_STATE_CONNECTED &&
		 state == RV_CONN_STATE_CONNECTING)
		pr_info_ratelimited("job%u conn%u to %pISpc: lost a QP (reason %u), reconnecting\n",
				    conn->job->id, conn->id, &conn->remote,
				    reason);
}

/**
 * rv_conn_update_state - recompute the connection state from its QPs
 * @conn: the connection, @conn->lock held
 *
 * Wakes CONN_QUERY waiters when the state changes; each transition into
 * CONNECTED advances the generation.
 */
void rv_conn_update_state(struct rv_conn *conn)
{
	u32 state, reason = RV_CONN_REASON_NONE, connected = 0, i;
	bool failed = false, busy = false;

	lockdep_assert_held(&conn->lock);
	for (i = 0; i < conn->num_conn; i++) {
		const struct rv_conn_qp *qp = &conn->qps[i];

		if (qp->state == RV_QP_CONNECTED)
			connected++;
		else if (qp->reason && (!reason || qp->state == RV_QP_FAILED))
			reason = qp->reason;
		if (qp->state == RV_QP_FAILED)
			failed = true;
		if (qp->state == RV_QP_CONNECTING || qp->state == RV_QP_RETRY)
			busy = true;
	}

	if (connected == conn->num_conn) {
		state = RV_CONN_STATE_CONNECTED;
		reason = RV_CONN_REASON_NONE;
	} else if (failed) {
		state = RV_CONN_STATE_ERROR;
	} else if (conn->started || connected || busy) {
		state = RV_CONN_STATE_CONNECTING;
	} else {
		state = RV_CONN_STATE_IDLE;
	}

	conn->connected = connected;
	conn->reason = reason;
	if (connected)
		rv_qp_hb_arm(conn);
	if (state == conn->state) {
		/* A QP may have changed under an unchanged state. */
		rv_write_conn_publish(conn);
		return;
	}
	if (state == RV_CONN_STATE_CONNECTED)
		conn->generation++;
	rv_conn_dbg(conn, "state %u -> %u reason %u generation %llu\n",
		    conn->state, state, reason, conn->generation);
	/* The local teardown of a connection is not news. */
	if (!conn->dead)
		rv_conn_log_transition(conn, state, reason);
	WRITE_ONCE(conn->state, state);
	/* Before the wake-up: a woken waiter may post at once. */
	rv_write_conn_publish(conn);
	trace_rv_conn_state(conn->job->id, conn->id, state, reason,
			    conn->generation, connected);
	wake_up_all(&conn->wait);
}

/**
 * rv_conn_job_release_ib - release the ib resources of the job's connections
 * @job: the job
 *
 * Called from rv_job_release_ib() before the job's PD goes: by device
 * removal (the connections then report RV_CONN_REASON_DEVICE_REMOVED)
 * once no read section of the device is left, or by the job's last
 * detach, when it has none.  @job->conns cannot change: that needs a
 * read section.
 */
void rv_conn_job_release_ib(struct rv_job *job)
{
	struct rv_conn *conn;

	list_for_each_entry(conn, &job->conns, job_list)
		rv_conn_release_ib(conn, RV_CONN_REASON_DEVICE_REMOVED);
}

/**
 * rv_conn_job_end - release the connections of a job its launcher ended
 * @job: the job, referenced by the caller
 *
 * No connection is created for @job from now on; each it has is released
 * (QPs, CQs, cm_ids; reason RV_CONN_REASON_JOB_ENDED) under a reference
 * of ours, so that the last handle's put cannot free it meanwhile, and
 * stays a dead connection until its handles are dropped.  Caller is in
 * the device's read section and holds no lock.
 */
void rv_conn_job_end(struct rv_job *job)
{
	struct rv_conn *conn;

	mutex_lock(&rv_conn_list_lock);
	WRITE_ONCE(job->ended, true);
	mutex_unlock(&rv_conn_list_lock);
	for (;;) {
		mutex_lock(&rv_conn_list_lock);
		/* Listed means referenced: the last put unlinks under the lock. */
		list_for_each_entry(conn, &job->conns, job_list)
			if (!READ_ONCE(conn->dead))
				break;
		if (list_entry_is_head(conn, &job->conns, job_list))
			conn = NULL;
		else
			kref_get(&conn->kref);
		mutex_unlock(&rv_conn_list_lock);
		if (!conn)
			break;
		rv_conn_release_ib(conn, RV_CONN_REASON_JOB_ENDED);
		kref_put_mutex(&conn->kref, rv_conn_unlink, &rv_conn_list_lock);
	}
}

void rv_conn_file_init(struct rv_file *rf)
{
	xa_init_flags(&rf->conns, XA_FLAGS_ALLOC1 | XA_FLAGS_ACCOUNT);
}

/* Drop every handle of a closing file; rf->lock held, before detach. */
void rv_conn_file_release(struct rv_file *rf)
{
	struct rv_conn *conn;
	unsigned long handle;

	xa_for_each(&rf->conns, handle, conn) {
		xa_erase(&rf->conns, handle);
		rv_conn_put_handle(conn);
	}
	xa_destroy(&rf->conns);
}

int rv_conn_init(void)
{
	return rv_cm_init();
}

/* Module unload: no file is open, so no connection is left. */
void rv_conn_exit(void)
{
	rv_cm_exit();
	ida_destroy(&rv_conn_ida);
}
