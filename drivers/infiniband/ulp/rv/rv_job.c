// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Jobs: the processes of one uid that attach with the same key to the same
 * device port.  A job owns what its processes share (its kernel PD now, its
 * connections later) and hands each process a slot, the index that
 * write-with-immediate traffic uses to reach it.
 *
 * Slot reuse.  A peer that posted writes to a process before learning it
 * left must not reach the next process given its slot.  Slots are handed
 * out next-fit (xa_alloc_cyclic()), so a freed slot is the last one
 * reused, and a freed slot stays in quarantine for slot_quarantine_ms:
 * rv_job.slots keeps a reserved entry for it, which allocation skips and
 * the receive path reads as "nobody" (drops_no_slot).  Quarantines end
 * lazily, when an ATTACH looks for a slot: no timer to cancel, and the
 * records are bounded by the job's slots.  A job lives only as long as
 * its processes, and its connections with it: a later job of the same
 * key gets new QPs, which no write of the old ones can reach.
 */
#include "rv.h"
#include "rv_cm.h"
#include "rv_conn.h"
#include "rv_trace.h"

#include <linux/idr.h>
#include <linux/slab.h>

static DEFINE_IDA(rv_job_ida);

static bool rv_job_same_identity(const struct rv_job_params *a,
				 const struct rv_job_params *b)
{
	/* One job per namespace: a job's connections live in one. */
	return net_eq(a->net, b->net) &&
	       uid_eq(a->uid, b->uid) && a->port_num == b->port_num &&
	       a->key_len == b->key_len && !memcmp(a->key, b->key, a->key_len);
}

static bool rv_job_same_config(const struct rv_job_params *a,
			       const struct rv_job_params *b)
{
	return a->gid_index == b->gid_index && a->num_conn == b->num_conn &&
	       a->slot_bits == b->slot_bits &&
	       a->heartbeat_ms == b->heartbeat_ms;
}

/* Caller is in the device's read section and holds dev->jobs_lock. */
static struct rv_job *rv_job_find(struct rv_device *dev,
				  const struct rv_job_params *params)
{
	struct rv_job *job;

	list_for_each_entry(job, &dev->jobs, list)
		if (rv_job_same_identity(&job->params, params))
			return job;
	return NULL;
}

/*
 * Caller is in the device's read section and holds dev->jobs_lock; the job
 * takes over @listener's reference.
 */
static struct rv_job *rv_job_create(struct rv_device *dev,
				    const struct rv_job_params *params,
				    struct rv_cm_listener *listener)
{
	struct rv_job *job;
	int ret;

	ret = rv_uid_charge(params->charge_uid, RV_UID_JOBS);
	if (ret)
		return ERR_PTR(ret);

	job = kzalloc(sizeof(*job), GFP_KERNEL_ACCOUNT);
	if (!job) {
		ret = -ENOMEM;
		goto out_uncharge;
	}

	ret = ida_alloc(&rv_job_ida, GFP_KERNEL);
	if (ret < 0)
		goto out_free_job;
	job->id = ret;

	job->pd = ib_alloc_pd(dev->ibdev, 0);
	if (IS_ERR(job->pd)) {
		ret = PTR_ERR(job->pd);
		goto out_free_id;
	}

	kref_init(&job->kref);
	kref_get(&dev->kref);
	job->dev = dev;
	job->params = *params;
	get_net(job->params.net);
	job->listener = listener;
	xa_init_flags(&job->slots, XA_FLAGS_ALLOC | XA_FLAGS_ACCOUNT);
	INIT_LIST_HEAD(&job->quarantine);
	INIT_LIST_HEAD(&job->conns);
	init_completion(&job->released);
	rv_frwr_init(&job->frwr);
	list_add_tail(&job->list, &dev->jobs);
	trace_rv_job_create(job);
	return job;

out_free_id:
	ida_free(&rv_job_ida, job->id);
out_free_job:
	kfree(job);
out_uncharge:
	rv_uid_uncharge(params->charge_uid, RV_UID_JOBS);
	return ERR_PTR(ret);
}

/*
 * Release the job's resources on the ib_device.  Called under
 * dev->jobs_lock by device removal once no read section of the device is
 * left, by rv_job_end() once none that could use the job is, or by the
 * last detach in one (or after either, when nothing is left); safe to
 * call twice.
 */
void rv_job_release_ib(struct rv_job *job)
{
	struct rv_file *rf;
	unsigned long slot;

	/* Connections use the PD (and their QPs the MRs): they go first. */
	rv_conn_job_release_ib(job);

	/*
	 * The files' MRs are in the PD.  A file in a slot cannot be freed
	 * meanwhile: detach enters a read section after leaving its slot,
	 * and waits for a removal in progress.
	 */
	xa_for_each(&job->slots, slot, rf)
		rv_mr_cache_release_ib(&rf->mr_cache);
	rv_frwr_release(job);

	if (job->pd) {
		ib_dealloc_pd(job->pd);
		job->pd = NULL;
	}
}

/**
 * rv_job_end - release for good what a job holds on its device
 * @job: the job, referenced by the caller, who is in no read section
 *
 * What device removal does, for one job, so that a launcher ending its
 * job frees the job's QPs and MRs even while processes of it are stuck.
 * From now on the job's commands meet it as a removed device
 * (rv_job_enter()), no ATTACH joins it and no connection is made for it.
 * Its connections go first (rv_conn_job_end(), which sets @job->ended),
 * then, once every read section that began before is over, its MRs, its
 * registration QP and its PD.  Pins of registrations its processes still
 * hold stay with them, device-less, until dropped or the process exits;
 * cached ones nobody holds are unpinned by the cache's work item.
 */
void rv_job_end(struct rv_job *job)
{
	struct rv_device *dev = job->dev;
	int idx;

	idx = rv_device_enter(dev, false);
	rv_conn_job_end(job);
	rv_device_leave(dev, idx);
	synchronize_srcu(&dev->srcu);
	/* Serialised with device removal, which may release it too. */
	mutex_lock(&dev->jobs_lock);
	rv_job_release_ib(job);
	mutex_unlock(&dev->jobs_lock);
	complete_all(&job->released);
}

/*
 * End the quarantines that are over (all of them with @all); caller holds
 * the slots' lock.
 */
static void rv_job_end_quarantines(struct rv_job *job, bool all)
{
	struct rv_slot_quarantine *q, *tmp;

	lockdep_assert_held(&job->slots.xa_lock);
	list_for_each_entry_safe(q, tmp, &job->quarantine, list) {
		/* In the order they began: the first still on stops the walk. */
		if (!all && time_before(jiffies, q->until))
			break;
		__xa_erase(&job->slots, q->slot);
		list_del(&q->list);
		kfree(q);
	}
}

/* kref release: called in the device's read section and dev->jobs_lock. */
static void rv_job_free(struct kref *kref)
{
	struct rv_job *job = container_of(kref, struct rv_job, kref);

	trace_rv_job_destroy(job);
	list_del(&job->list);
	rv_job_release_ib(job);
	xa_lock(&job->slots);
	rv_job_end_quarantines(job, true);
	xa_unlock(&job->slots);
	WARN_ON(!xa_empty(&job->slots));
	xa_destroy(&job->slots);
	ida_free(&rv_job_ida, job->id);
	rv_uid_uncharge(job->params.charge_uid, RV_UID_JOBS);
	put_net(job->params.net);
	/* Never the last reference: every caller holds one of its own. */
	rv_device_put(job->dev);
	kfree(job);
}

/*
 * Drop a reference taken under dev->jobs_lock by another than a file
 * (rv_launcher.c); caller is in the device's read section, or met the
 * job (or its device) released (rv_job_enter()).
 */
void rv_job_put(struct rv_job *job)
{
	struct rv_device *dev = job->dev;

	mutex_lock(&dev->jobs_lock);
	kref_put(&job->kref, rv_job_free);
	mutex_unlock(&dev->jobs_lock);
}

/**
 * rv_job_attach - join (or create) the job described by @params
 * @rf: the file, locked and not attached
 * @dev: the device; the caller keeps its own reference
 * @params: validated parameters, defaults applied
 *
 * Return: 0 with @rf->job and @rf->slot set, -ENODEV if the device is being
 * removed, -EBUSY if the job exists with another configuration, -ENOSPC if
 * all its slots are taken, -EAGAIN if the free ones are all in quarantine,
 * -EDQUOT if a new job would exceed the uid's max_jobs_per_uid or the job
 * has its launcher's max_procs attached,
 * -EADDRINUSE if cm_port is taken in the job's namespace (rv cannot listen
 * there), -EPERM if the job belongs to another launcher job (or none) or
 * its launcher ended it, -ENOMEM.
 */
int rv_job_attach(struct rv_file *rf, struct rv_device *dev,
		  const struct rv_job_params *params)
{
	struct rv_cm_listener *listener, *freed = NULL;
	struct rv_slot_quarantine *q = NULL;
	struct rv_job *job;
	bool created = false;
	u32 slot;
	int ret, idx;

	/* Taken now so that detaching, which cannot fail, needs nothing. */
	if (rv_slot_quarantine_ms) {
		q = kmalloc(sizeof(*q), GFP_KERNEL_ACCOUNT);
		if (!q)
			return -ENOMEM;
	}

	/*
	 * A new job needs the listeners of its namespace; taken before the
	 * device's locks, under which they cannot be created or destroyed
	 * (see the lock order in rv.h).  Dropped at the end if the job exists.
	 */
	listener = rv_cm_listener_get(params->net);
	if (IS_ERR(listener)) {
		kfree(q);
		return PTR_ERR(listener);
	}

	idx = rv_device_enter(dev, true);
	if (idx < 0) {
		ret = idx;
		goto out_leave;
	}

	mutex_lock(&dev->jobs_lock);
	job = rv_job_find(dev, params);
	if (job) {
		/* Not another launcher job's, nor one its launcher ended. */
		if (job->params.launcher_id != params->launcher_id ||
		    READ_ONCE(job->ended)) {
			ret = -EPERM;
			goto out_unlock_jobs;
		}
		if (!rv_job_same_config(&job->params, params)) {
			rv_job_dbg(job, "attach refused: num_conn %u slot_bits %u gid_index %u differ\n",
				   params->num_conn, params->slot_bits,
				   params->gid_index);
			ret = -EBUSY;
			goto out_unlock_jobs;
		}
		kref_get(&job->kref);
	} else {
		job = rv_job_create(dev, params, listener);
		if (IS_ERR(job)) {
			ret = PTR_ERR(job);
			goto out_unlock_jobs;
		}
		listener = NULL;
		created = true;
	}

	xa_lock(&job->slots);
	rv_job_end_quarantines(job, false);
	if (job->params.limits.max_procs &&
	    job->nr_procs >= job->params.limits.max_procs) {
		xa_unlock(&job->slots);
		ret = -EDQUOT;
		goto out_put_job;
	}
	/* May drop and retake the lock to allocate: the list stays valid. */
	ret = __xa_alloc_cyclic(&job->slots, &slot, rf,
				XA_LIMIT(0, (1U << params->slot_bits) - 1),
				&job->next_slot, GFP_KERNEL);
	/* -EBUSY when the range is full: taken, or some in quarantine. */
	if (ret == -EBUSY)
		ret = list_empty(&job->quarantine) ? -ENOSPC : -EAGAIN;
	if (ret >= 0)
		job->nr_procs++;
	xa_unlock(&job->slots);
	if (ret < 0)	/* 1 says the search wrapped: a success */
		goto out_put_job;

	rf->job = job;
	rf->slot = slot;
	rf->slot_q = q;
	mutex_unlock(&dev->jobs_lock);
	rv_device_leave(dev, idx);
	trace_rv_attach(job, slot, created);
	if (listener)
		rv_cm_listener_put(listener);
	return 0;

out_put_job:
	freed = job->listener;
	if (!kref_put(&job->kref, rv_job_free))
		freed = NULL;
out_unlock_jobs:
	mutex_unlock(&dev->jobs_lock);
out_leave:
	rv_device_leave(dev, idx);
	kfree(q);
	if (freed)
		rv_cm_listener_put(freed);
	if (listener)
		rv_cm_listener_put(listener);
	return ret;
}

/**
 * rv_job_detach - give up @rf's slot and job reference
 * @rf: the file, locked; nothing happens if it is not attached
 * @quarantine: the slot was handed to user space (ATTACH succeeded): keep
 *	it out of use for slot_quarantine_ms
 *
 * The last file of a job frees the job.  Safe after device removal.
 */
void rv_job_detach(struct rv_file *rf, bool quarantine)
{
	struct rv_slot_quarantine *q = rf->slot_q;
	struct rv_cm_listener *listener;
	struct rv_job *job = rf->job;
	struct rv_device *dev;
	int idx;

	if (!job)
		return;
	dev = job->dev;
	/* Keep the device alive across the job's final put. */
	kref_get(&dev->kref);

	trace_rv_detach(job, rf->slot);
	rf->slot_q = NULL;
	xa_lock(&job->slots);
	job->nr_procs--;
	if (q && quarantine) {
		q->slot = rf->slot;
		q->until = jiffies + msecs_to_jiffies(rv_slot_quarantine_ms);
		/*
		 * NULL in an allocating xarray reserves the index: replacing
		 * an entry allocates nothing, so this cannot fail.
		 */
		__xa_store(&job->slots, rf->slot, NULL, 0);
		list_add_tail(&q->list, &job->quarantine);
		q = NULL;
	} else {
		__xa_erase(&job->slots, rf->slot);
	}
	xa_unlock(&job->slots);
	kfree(q);
	rf->job = NULL;

	listener = job->listener;
	idx = rv_job_enter(job, false);
	mutex_lock(&dev->jobs_lock);
	if (!kref_put(&job->kref, rv_job_free))
		listener = NULL;
	mutex_unlock(&dev->jobs_lock);
	rv_device_leave(dev, idx);
	/* The job's connections are gone: no request needs its listener. */
	if (listener)
		rv_cm_listener_put(listener);

	rv_device_put(dev);
}

void rv_job_exit(void)
{
	ida_destroy(&rv_job_ida);
}
