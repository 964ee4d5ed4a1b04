// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * DUMP: the node's jobs, connections and processes as fixed records, for
 * rvstat.  Records are filled into a kernel buffer under the objects' own
 * locks and copied out after every lock is dropped.
 */
#include "rv.h"
#include "rv_conn.h"
#include "rv_write.h"

#include <linux/capability.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

/* Devices a dump walks; more are not expected on one node. */

struct rv_dump_buf {
	void *records;
	u32 record_size;
	u32 max;
	u32 count;
	u32 total;
	bool all;	/* CAP_SYS_ADMIN: every uid's jobs */
};

/* The next record to fill (zeroed), or NULL when the buffer is full. */
static void *rv_dump_next(struct rv_dump_buf *b)
{
	b->total++;
	if (b->count == b->max)
		return NULL;
	return b->records + (size_t)b->record_size * b->count++;
}

static bool rv_dump_visible(const struct rv_dump_buf *b,
			    const struct rv_job *job)
{
	return b->all || uid_eq(job->params.uid, current_uid());
}

/* As for rv_dump_device(). */
static void rv_dump_job(struct rv_dump_buf *b, struct rv_job *job)
{
	struct rv_dump_job *r = rv_dump_next(b);
	struct rv_device *dev = job->dev;
	const struct list_head *pos;
	struct rv_file *rf;
	unsigned long slot;

	if (!r)
		return;
	r->job_id = job->id;
	r->dev_index = dev->index;
	r->port_num = job->params.port_num;
	r->uid = from_kuid_munged(current_user_ns(), job->params.uid);
	r->num_conn = job->params.num_conn;
	r->slot_bits = job->params.slot_bits;
	r->heartbeat_ms = job->params.heartbeat_ms;
	r->key_len = job->params.key_len;
	r->launcher_id = job->params.launcher_id;
	memcpy(r->key, job->params.key, sizeof(r->key));
	if (dev->ibdev)
		strscpy(r->dev_name, dev_name(&dev->ibdev->dev),
			sizeof(r->dev_name));
	xa_for_each(&job->slots, slot, rf)
		r->slots_used++;
	mutex_lock(&rv_conn_list_lock);
	list_for_each(pos, &job->conns)
		r->conns++;
	mutex_unlock(&rv_conn_list_lock);
}

/* Caller holds dev->jobs_lock; @rf stays allocated under RCU. */
static void rv_dump_proc(struct rv_dump_buf *b, struct rv_job *job,
			 struct rv_file *rf)
{
	struct rv_dump_proc *r = rv_dump_next(b);
	struct rv_mr_cache *cache = &rf->mr_cache;
	struct rv_io_stats s;
	struct rv_ring *ring;

	if (!r)
		return;
	r->job_id = job->id;
	r->slot = rf->slot;
	/* Set before the file's ring is published, with it. */
	ring = smp_load_acquire(&rf->ring);
	if (ring) {
		r->pid = pid_vnr(rf->pid);
		r->ring_entries = ring->entries;
		r->ring_overflows = READ_ONCE(ring->overflows);
	}
	r->inflight = atomic_read(&rf->inflight);
	spin_lock_bh(&cache->lock);
	r->mr_entries = cache->stats.entries;
	r->mr_bytes = cache->stats.bytes;
	r->mr_hits = cache->stats.hits;
	r->mr_misses = cache->stats.misses;
	spin_unlock_bh(&cache->lock);
	rv_stats_sum(rf->stats, &s);
	r->writes_posted = s.writes_posted;
	r->bytes_posted = s.bytes_posted;
	r->writes_completed = s.writes_completed;
	r->writes_failed = s.writes_failed;
	r->posts_eagain = atomic64_read(&rf->posts_eagain);
	r->recvs = s.recvs;
	r->bytes_received = s.bytes_received;
}

/*
 * Caller is in the device's read section (or came after its removal) and
 * holds dev->jobs_lock.
 */
static void rv_dump_device(struct rv_dump_buf *b, struct rv_device *dev)
{
	struct rv_dump_device *r = rv_dump_next(b);
	struct rv_job *job;

	if (!r)
		return;
	r->dev_index = dev->index;
	r->removed = READ_ONCE(dev->removed);
	if (dev->ibdev)
		strscpy(r->name, dev_name(&dev->ibdev->dev), sizeof(r->name));
	list_for_each_entry(job, &dev->jobs, list)
		if (rv_dump_visible(b, job))
			r->jobs++;
}

/* Devices, or the jobs (or processes) on them the caller may see. */
static void rv_dump_jobs(struct rv_dump_buf *b, u32 kind)
{
	struct rv_device **devs;
	unsigned int n, i;
	struct rv_job *job;

	devs = kcalloc(RV_MAX_DEVICES, sizeof(*devs), GFP_KERNEL);
	if (!devs)
		return;
	n = rv_device_get_all(devs, RV_MAX_DEVICES);
	for (i = 0; i < n; i++) {
		struct rv_device *dev = devs[i];
		int idx = rv_device_enter(dev, false);

		mutex_lock(&dev->jobs_lock);
		if (kind == RV_DUMP_DEVICES)
			rv_dump_device(b, dev);
		list_for_each_entry(job, &dev->jobs, list) {
			struct rv_file *rf;
			unsigned long slot;

			if (kind == RV_DUMP_DEVICES || !rv_dump_visible(b, job))
				continue;
			if (kind == RV_DUMP_JOBS) {
				rv_dump_job(b, job);
				continue;
			}
			/* Released files leave the slots before an RCU grace. */
			rcu_read_lock();
			xa_for_each(&job->slots, slot, rf)
				rv_dump_proc(b, job, rf);
			rcu_read_unlock();
		}
		mutex_unlock(&dev->jobs_lock);
		rv_device_leave(dev, idx);
		rv_device_put(dev);
	}
	kfree(devs);
}

static void rv_dump_addr(struct rv_dump_conn *r,
			 const struct sockaddr_storage *ss)
{
	const struct sockaddr_in *sin = (const void *)ss;
	const struct sockaddr_in6 *sin6 = (const void *)ss;

	r->family = ss->ss_family;
	if (ss->ss_family == AF_INET) {
		r->remote_port = ntohs(sin->sin_port);
		memcpy(r->remote_addr, &sin->sin_addr, 4);
	} else {
		r->remote_port = ntohs(sin6->sin6_port);
		memcpy(r->remote_addr, &sin6->sin6_addr, 16);
	}
}

/* Caller holds rv_conn_list_lock. */
static void rv_dump_conn(struct rv_dump_buf *b, struct rv_conn *conn)
{
	struct rv_dump_conn *r = rv_dump_next(b);
	unsigned long now = jiffies;
	u32 i;

	if (!r)
		return;
	r->conn_id = conn->id;
	r->job_id = conn->job->id;
	r->num_conn = conn->num_conn;
	r->max_segment = conn->max_segment;
	rv_dump_addr(r, &conn->remote);

	mutex_lock(&conn->lock);
	r->state = conn->state;
	r->reason = conn->reason;
	r->role = conn->client ? RV_CONN_ROLE_CLIENT : RV_CONN_ROLE_SERVER;
	r->connected = conn->connected;
	r->handles = conn->handles;
	r->generation = conn->generation;
	for (i = 0; i < conn->num_conn; i++) {
		struct rv_conn_qp *qp = &conn->qps[i];

		r->qp[i].state = qp->state;
		r->qp[i].idle_ms =
			jiffies_to_msecs(now - READ_ONCE(qp->last_activity));
		/* Under conn->lock the current QP is not destroyed. */
		if (qp->cm_id && qp->cm_id->qp) {
			struct rv_ibqp *iq = qp->cm_id->qp->qp_context;

			r->qp[i].qp_num = qp->cm_id->qp->qp_num;
			spin_lock_bh(&qp->sq_lock);
			r->qp[i].send_free = iq->sq_free;
			spin_unlock_bh(&qp->sq_lock);
		}
	}
	mutex_unlock(&conn->lock);

	rv_conn_read_counters(r, conn);
}

static void rv_dump_conns(struct rv_dump_buf *b)
{
	struct rv_conn *conn;

	mutex_lock(&rv_conn_list_lock);
	list_for_each_entry(conn, &rv_conns, list)
		if (rv_dump_visible(b, conn->job))
			rv_dump_conn(b, conn);
	mutex_unlock(&rv_conn_list_lock);
}

int rv_cmd_dump(struct rv_file *rf, const struct rv_ucmd *ucmd, void *arg)
{
	struct rv_dump *cmd = arg;
	struct rv_dump_buf b = {};
	int ret = 0;

	if (cmd->flags || cmd->rsvd || cmd->count || cmd->total)
		return -EINVAL;
	switch (cmd->kind) {
	case RV_DUMP_JOBS:
		b.record_size = sizeof(struct rv_dump_job);
		break;
	case RV_DUMP_CONNS:
		b.record_size = sizeof(struct rv_dump_conn);
		break;
	case RV_DUMP_PROCS:
		b.record_size = sizeof(struct rv_dump_proc);
		break;
	case RV_DUMP_DEVICES:
		b.record_size = sizeof(struct rv_dump_device);
		break;
	default:
		return -EINVAL;
	}
	b.max = min_t(u32, cmd->buf_len / b.record_size, RV_DUMP_MAX_RECORDS);
	if (b.max) {
		b.records = kvcalloc(b.max, b.record_size,
				     GFP_KERNEL_ACCOUNT | __GFP_NOWARN |
				     __GFP_RETRY_MAYFAIL);
		if (!b.records)
			return -ENOMEM;
	}
	b.all = ns_capable_noaudit(&init_user_ns, CAP_SYS_ADMIN);

	if (cmd->kind == RV_DUMP_CONNS)
		rv_dump_conns(&b);
	else
		rv_dump_jobs(&b, cmd->kind);

	if (b.count && copy_to_user(u64_to_user_ptr(cmd->buf), b.records,
				    (size_t)b.count * b.record_size))
		ret = -EFAULT;
	kvfree(b.records);
	if (ret)
		return ret;
	cmd->record_size = b.record_size;
	cmd->count = b.count;
	cmd->total = b.total;
	return rv_ucmd_respond(ucmd, cmd, sizeof(*cmd));
}
