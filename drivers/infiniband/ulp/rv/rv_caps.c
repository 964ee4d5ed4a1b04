// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What one user may make rv hold: jobs and connections counted per uid
 * against the module parameters max_jobs_per_uid and max_conns_per_uid,
 * and the one RLIMIT_MEMLOCK budget of a process that its event rings and
 * its MR cache's pins share.
 *
 * Why per uid: most of a connection's kernel memory (its QPs' queues and
 * CQs, at least 0.5 MiB on rxe once connected) is allocated by the device in
 * rdma_cm's context and charged to no memory cgroup, so neither memcg nor
 * RLIMIT_MEMLOCK bounds a loop of CONN_CREATE (and CONN_CONNECT); the
 * number of objects does.  The uid is the job's (ATTACH's current_uid(),
 * the real uid): a job and its connections are charged to the user that
 * owns them, whichever of its processes or files created them, until
 * they are freed.  A process in a user namespace is charged to the user
 * who created the outermost one (rv_uid_accountable()): the uids a user
 * maps there (its subordinate ranges, up to 65536 of them) are all that
 * user's, and must not each get a cap of their own.
 */
#include "rv.h"

#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/hashtable.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/user_namespace.h>

/**
 * struct rv_uid_count - what one uid holds
 * @node: entry in rv_uids, protected by rv_uid_lock
 * @uid: the user
 * @n: objects held, per enum rv_uid_kind; the entry is freed when all
 *	are 0
 */
struct rv_uid_count {
	struct hlist_node node;
	kuid_t uid;
	u32 n[RV_UID_NR];
};

/*
 * Protects rv_uids and every count in it.  A leaf: held only to look up
 * and change a count, never while taking another lock (see rv.h); a
 * mutex, because charging may allocate and every caller may sleep.
 */
static DEFINE_MUTEX(rv_uid_lock);
static DEFINE_HASHTABLE(rv_uids, 6);

static struct rv_uid_count *rv_uid_find(kuid_t uid)
{
	struct rv_uid_count *c;

	hash_for_each_possible(rv_uids, c, node, __kuid_val(uid))
		if (uid_eq(c->uid, uid))
			return c;
	return NULL;
}

/**
 * rv_uid_accountable - the user whose caps a caller's objects count against
 * @cred: the caller's credentials
 *
 * Its real uid in the initial user namespace; in another namespace, the
 * owner of the namespace just below the initial one on the way up, the
 * user who could map every uid of the ones below.
 */
kuid_t rv_uid_accountable(const struct cred *cred)
{
	const struct user_namespace *ns = cred->user_ns;

	if (ns == &init_user_ns)
		return cred->uid;
	while (ns->parent != &init_user_ns)
		ns = ns->parent;
	return ns->owner;
}

static unsigned int rv_uid_max(enum rv_uid_kind kind)
{
	return kind == RV_UID_JOBS ? rv_max_jobs_per_uid :
				     rv_max_conns_per_uid;
}

/**
 * rv_uid_charge - count one more job or connection of @uid
 * @uid: the owner (the job's uid)
 * @kind: RV_UID_JOBS or RV_UID_CONNS
 *
 * No exemption, root included: the cap is about the node's memory, and
 * the site sets it with the module parameter.
 *
 * Return: 0, -EDQUOT when @uid already holds its cap, -ENOMEM.
 */
int rv_uid_charge(kuid_t uid, enum rv_uid_kind kind)
{
	struct rv_uid_count *c;
	int ret = 0;

	mutex_lock(&rv_uid_lock);
	c = rv_uid_find(uid);
	if (!c) {
		/* Module-wide bookkeeping outlives the caller: not charged. */
		c = kzalloc(sizeof(*c), GFP_KERNEL);
		if (!c) {
			ret = -ENOMEM;
			goto out_unlock;
		}
		c->uid = uid;
		hash_add(rv_uids, &c->node, __kuid_val(uid));
	}
	if (c->n[kind] >= rv_uid_max(kind)) {
		ret = -EDQUOT;
		/* An entry made just now holds nothing and goes again. */
		if (!c->n[RV_UID_JOBS] && !c->n[RV_UID_CONNS]) {
			hash_del(&c->node);
			kfree(c);
		}
		goto out_unlock;
	}
	c->n[kind]++;
out_unlock:
	mutex_unlock(&rv_uid_lock);
	return ret;
}

/* Undo one rv_uid_charge() of @uid and @kind, at the object's free. */
void rv_uid_uncharge(kuid_t uid, enum rv_uid_kind kind)
{
	struct rv_uid_count *c;

	mutex_lock(&rv_uid_lock);
	c = rv_uid_find(uid);
	if (WARN_ON_ONCE(!c || !c->n[kind]))
		goto out_unlock;
	if (--c->n[kind] || c->n[RV_UID_JOBS] || c->n[RV_UID_CONNS])
		goto out_unlock;
	hash_del(&c->node);
	kfree(c);
out_unlock:
	mutex_unlock(&rv_uid_lock);
}

/* Module unload: every job and connection is gone, so is every count. */
void rv_uid_exit(void)
{
	WARN_ON(!hash_empty(rv_uids));
}

/**
 * rv_pin_charge - charge @pages to the process's RLIMIT_MEMLOCK budget
 * @mm: the caller's address space (current->mm)
 * @pages: pages to add
 *
 * The event ring and the MR cache's pins both count here, in @mm's
 * pinned_vm (VmPin, which ib_umem_get() also charges for the verbs
 * registrations of the same process), so that a process cannot hold
 * RLIMIT_MEMLOCK in each.  mlock() counts locked_vm (VmLck), as in the
 * core kernel: the two are separate there too.  CAP_IPC_LOCK exempts the
 * caller from the limit, not from the count.
 *
 * Return: 0, or -ENOMEM over the limit (nothing charged).
 */
int rv_pin_charge(struct mm_struct *mm, unsigned long pages)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;

	if (atomic64_add_return(pages, &mm->pinned_vm) > limit &&
	    !capable(CAP_IPC_LOCK)) {
		atomic64_sub(pages, &mm->pinned_vm);
		return -ENOMEM;
	}
	return 0;
}

/*
 * Charge @pages to the job's launcher limit too (max_pinned_bytes of
 * RV_IOCTL_LAUNCHER_JOB); -EDQUOT beyond it.
 */
int rv_job_pin_charge(struct rv_job *job, unsigned long pages)
{
	u64 max = job->params.limits.max_pinned_pages;

	if (atomic64_add_return(pages, &job->pinned_pages) > max && max) {
		atomic64_sub(pages, &job->pinned_pages);
		return -EDQUOT;
	}
	return 0;
}

void rv_job_pin_uncharge(struct rv_job *job, unsigned long pages)
{
	atomic64_sub(pages, &job->pinned_pages);
}

/*
 * Give back a charge of rv_pin_charge().  @mm need only be allocated
 * (mmgrab()), not alive: the counter is an atomic of the mm_struct.
 */
void rv_pin_uncharge(struct mm_struct *mm, unsigned long pages)
{
	atomic64_sub(pages, &mm->pinned_vm);
}
