// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Jobs made by the cluster's launcher.  Root (the launcher's privileged
 * part, e.g. Slurm's slurmstepd through tools/slurm/spank_rv.c) binds a
 * uid and job key to its job and that job's cgroup before the tasks start
 * (RV_IOCTL_LAUNCHER_JOB): from then on only processes of that uid inside
 * that cgroup attach with the key, the rv job they make carries the
 * launcher's id (DUMP, and every tag of its handshakes, so that it
 * connects only to the same launcher job elsewhere: rv_auth.h), and
 * destroying the binding ends the job: its connections go at once.
 */
#include "rv.h"

#include <linux/cgroup.h>
#include <linux/cred.h>
#include <linux/module.h>
#include <linux/slab.h>

/* Most bindings on a node: far above any number of steps at once. */
#define RV_LAUNCHER_MAX_BINDINGS	65536

/**
 * struct rv_launcher_binding - a uid and job key bound to a launcher job
 * @list: in rv_launcher_bindings
 * @id: the launcher's id of the job, not 0
 * @uid: the job's user
 * @key_len: bytes of @key
 * @key: the job key
 * @cgrp: the job's cgroup (a reference)
 * @limits: what each rv job made under it may use
 */
struct rv_launcher_binding {
	struct list_head list;
	u64 id;
	kuid_t uid;
	u32 key_len;
	u8 key[RV_JOB_KEY_MAX];
	struct cgroup *cgrp;
	struct rv_job_limits limits;
};

#ifdef CONFIG_CGROUPS
static struct cgroup *rv_launcher_cgroup_get(int fd)
{
	return cgroup_get_from_fd(fd);
}

static void rv_launcher_cgroup_put(struct cgroup *cgrp)
{
	cgroup_put(cgrp);
}

static bool rv_launcher_in_cgroup(struct cgroup *cgrp)
{
	bool in;

	rcu_read_lock();
	in = task_under_cgroup_hierarchy(current, cgrp);
	rcu_read_unlock();
	return in;
}
#else
/* A kernel without cgroups has no job to bind: create is EOPNOTSUPP. */
static struct cgroup *rv_launcher_cgroup_get(int fd)
{
	return ERR_PTR(-EOPNOTSUPP);
}

static void rv_launcher_cgroup_put(struct cgroup *cgrp)
{
}

static bool rv_launcher_in_cgroup(struct cgroup *cgrp)
{
	return false;
}
#endif

/*
 * Protects rv_launcher_bindings and rv_launcher_count.  A leaf: ATTACH
 * takes it under rv_file.lock, before the device's read section.
 */
static DEFINE_MUTEX(rv_launcher_lock);
static LIST_HEAD(rv_launcher_bindings);
static unsigned int rv_launcher_count;

static struct rv_launcher_binding *rv_launcher_find(kuid_t uid, u32 key_len,
						    const u8 *key)
{
	struct rv_launcher_binding *b;

	lockdep_assert_held(&rv_launcher_lock);
	list_for_each_entry(b, &rv_launcher_bindings, list)
		if (uid_eq(b->uid, uid) && b->key_len == key_len &&
		    !memcmp(b->key, key, key_len))
			return b;
	return NULL;
}

static struct rv_launcher_binding *rv_launcher_find_id(u64 id)
{
	struct rv_launcher_binding *b;

	lockdep_assert_held(&rv_launcher_lock);
	list_for_each_entry(b, &rv_launcher_bindings, list)
		if (b->id == id)
			return b;
	return NULL;
}

/**
 * rv_launcher_attach_check - may the caller attach with @params?
 * @params: ATTACH's parameters; sets @params->launcher_id
 *
 * Return: 0, or -EPERM: a launcher bound the uid and key and the caller
 * is not in that job's cgroup, or none did and launcher_jobs_only is set.
 */
int rv_launcher_attach_check(struct rv_job_params *params)
{
	struct rv_launcher_binding *b;
	int ret = 0;

	mutex_lock(&rv_launcher_lock);
	b = rv_launcher_find(params->uid, params->key_len, params->key);
	params->launcher_id = b ? b->id : 0;
	if (b) {
		params->limits = b->limits;
		if (!rv_launcher_in_cgroup(b->cgrp))
			ret = -EPERM;
	} else if (READ_ONCE(rv_launcher_only)) {
		ret = -EPERM;
	}
	mutex_unlock(&rv_launcher_lock);
	return ret;
}

/*
 * The next job of @dev bound to @id that is not ended yet, referenced;
 * NULL if none is left or the device is removed (its jobs hold nothing
 * of it then).
 */
static struct rv_job *rv_launcher_next_job(struct rv_device *dev, u64 id)
{
	struct rv_job *job = NULL, *pos;
	int idx;

	idx = rv_device_enter(dev, true);
	if (idx < 0)
		goto out_leave;
	mutex_lock(&dev->jobs_lock);
	list_for_each_entry(pos, &dev->jobs, list) {
		if (pos->params.launcher_id == id && !READ_ONCE(pos->ended)) {
			kref_get(&pos->kref);
			job = pos;
			break;
		}
	}
	mutex_unlock(&dev->jobs_lock);
out_leave:
	rv_device_leave(dev, idx);
	return job;
}

/* End every job of @dev bound to @id, one at a time. */
static void rv_launcher_end_jobs(struct rv_device *dev, u64 id)
{
	struct rv_job *job;
	int idx;

	while ((job = rv_launcher_next_job(dev, id))) {
		rv_job_end(job);
		/* Ended and released: the put needs no read section. */
		idx = rv_job_enter(job, false);
		rv_job_put(job);
		rv_device_leave(dev, idx);
	}
}

static void rv_launcher_free(struct rv_launcher_binding *b)
{
	rv_launcher_cgroup_put(b->cgrp);
	kfree(b);
}

/* End the jobs of @b on every device, then free it; @devs has room. */
static void rv_launcher_destroy(struct rv_launcher_binding *b,
				struct rv_device **devs)
{
	unsigned int n, i;

	n = rv_device_get_all(devs, RV_MAX_DEVICES);
	for (i = 0; i < n; i++) {
		rv_launcher_end_jobs(devs[i], b->id);
		rv_device_put(devs[i]);
	}
	rv_launcher_free(b);
}

static int rv_launcher_create(const struct rv_launcher_job *cmd, kuid_t uid)
{
	struct rv_launcher_binding *b;
	struct cgroup *cgrp;
	int ret;

	cgrp = rv_launcher_cgroup_get(cmd->cgroup_fd);
	if (IS_ERR(cgrp))
		return PTR_ERR(cgrp);
	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b) {
		rv_launcher_cgroup_put(cgrp);
		return -ENOMEM;
	}
	b->id = cmd->launcher_id;
	b->uid = uid;
	b->key_len = cmd->job_key_len;
	memcpy(b->key, cmd->job_key, cmd->job_key_len);
	b->cgrp = cgrp;
	b->limits.max_procs = cmd->max_procs;
	b->limits.max_conns = cmd->max_conns;
	b->limits.max_pinned_pages = DIV_ROUND_UP_ULL(cmd->max_pinned_bytes,
						      PAGE_SIZE);

	mutex_lock(&rv_launcher_lock);
	ret = -ENOSPC;
	if (rv_launcher_count >= RV_LAUNCHER_MAX_BINDINGS)
		goto out_unlock;
	ret = -EEXIST;
	if (rv_launcher_find(uid, b->key_len, b->key) ||
	    rv_launcher_find_id(b->id))
		goto out_unlock;
	ret = 0;
	list_add_tail(&b->list, &rv_launcher_bindings);
	rv_launcher_count++;
out_unlock:
	mutex_unlock(&rv_launcher_lock);
	if (ret)
		rv_launcher_free(b);
	return ret;
}

/* Destroy: the binding must name the same id, uid and key. */
static int rv_launcher_remove(const struct rv_launcher_job *cmd, kuid_t uid)
{
	struct rv_launcher_binding *b;
	struct rv_device **devs;

	/* First: once unlinked, the binding's jobs must end. */
	devs = kcalloc(RV_MAX_DEVICES, sizeof(*devs), GFP_KERNEL);
	if (!devs)
		return -ENOMEM;
	mutex_lock(&rv_launcher_lock);
	b = rv_launcher_find(uid, cmd->job_key_len, cmd->job_key);
	if (!b || b->id != cmd->launcher_id) {
		mutex_unlock(&rv_launcher_lock);
		kfree(devs);
		return -ENOENT;
	}
	list_del(&b->list);
	rv_launcher_count--;
	mutex_unlock(&rv_launcher_lock);
	/* No ATTACH finds it now; the jobs made under it end. */
	rv_launcher_destroy(b, devs);
	kfree(devs);
	return 0;
}

int rv_cmd_launcher_job(struct rv_file *rf, const struct rv_ucmd *ucmd,
			void *arg)
{
	const struct rv_launcher_job *cmd = arg;
	kuid_t uid;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if ((cmd->flags & ~RV_LAUNCHER_JOB_F_DESTROY) || !cmd->launcher_id ||
	    !cmd->job_key_len || cmd->job_key_len > RV_JOB_KEY_MAX ||
	    memchr_inv(cmd->job_key + cmd->job_key_len, 0,
		       RV_JOB_KEY_MAX - cmd->job_key_len) || cmd->rsvd)
		return -EINVAL;
	uid = make_kuid(current_user_ns(), cmd->uid);
	if (!uid_valid(uid))
		return -EINVAL;
	if (cmd->flags & RV_LAUNCHER_JOB_F_DESTROY)
		return rv_launcher_remove(cmd, uid);
	return rv_launcher_create(cmd, uid);
}

/* Module unload: no file is open, so no job is left to end. */
void rv_launcher_exit(void)
{
	struct rv_launcher_binding *b, *tmp;

	list_for_each_entry_safe(b, tmp, &rv_launcher_bindings, list) {
		list_del(&b->list);
		rv_launcher_free(b);
	}
	rv_launcher_count = 0;
}
