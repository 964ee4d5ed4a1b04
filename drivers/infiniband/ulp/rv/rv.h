/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rv: shared kernel RC connections, MR cache and event ring for RDMA
 * middleware.  Internal definitions.
 *
 * Objects and their lifetimes:
 *
 *   struct rv_device  one per RDMA device, created by the ib_client add
 *                     callback; refcounted by the device list and by jobs.
 *   struct rv_job     one per (uid, job key, device, port); refcounted by
 *                     the files attached to it; owns the job's kernel PD.
 *   struct rv_file    one per open of /dev/rv; attached to at most one job,
 *                     holding one slot of it.
 *
 * Device liveness is not a lock: code that uses a device's ib resources
 * runs in an SRCU read section of the device (rv_device_enter()), which
 * never blocks and is never blocked by removal; removal marks the device
 * removed, waits for the sections in progress (synchronize_srcu()) and
 * releases everything.  No section sleeps on anything user space
 * controls (page faults on its memory, copies from or to it, the page
 * locks that unpinning takes, the mm's invalidations that removing an MMU
 * notifier waits for), so removal waits only for bounded kernel work.
 *
 * Lock order (outermost first):
 *
 *   rv_file.lock
 *     (the device's SRCU read section)
 *       rv_device.jobs_lock
 *         rv_job.slots (xarray's internal spinlock, which also guards
 *                       the job's next_slot and quarantine list; detach
 *                       takes it without jobs_lock)
 *         rv_frwr_qp.lock (a job's release takes it here)
 *       rv_frwr_qp.lock (REG_MEM, and freeing registrations: never with
 *                        jobs_lock or a cache lock)
 *       rv_mr_cache.lock (also taken alone by the MMU notifier, and by
 *                         send completions, in softirq: see below)
 *         rv_mr_cache.handles (xarray's internal spinlock; nested in a
 *                              softirq-safe lock, so taken with _bh)
 *
 *   rv_devices_lock is a leaf: it is held only to look up, insert or
 *   unlink an rv_device, never while taking another rv lock.
 *
 *   rv_launcher_lock (rv_launcher.c) and rv_auth_lock (rv_auth.c) are
 *   leaves: ATTACH takes the first under rv_file.lock, before the
 *   device's read section, and LAUNCHER_JOB alone (it ends jobs after
 *   dropping it); the second is held only to swap the cluster key.
 *
 *   rv_uid_lock (rv_caps.c) is a leaf too: jobs are charged to their uid
 *   under rv_device.jobs_lock, connections under rv_conn_list_lock, and
 *   both are uncharged where they are freed (under jobs_lock, or with no
 *   rv lock but rv_file.lock); it is never held while taking another.
 *
 *   Connections (rv_conn.h) add rv_cm_listen_lock under rv_file.lock,
 *   outside the device's read section, and rv_conn_list_lock ->
 *   rv_conn.lock -> rv_conn_qp.sq_lock under rv_device.jobs_lock;
 *   rdma_cm handlers take only the first two (and sq_lock under them):
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
 *   rdma_cm event handlers run in the CM's work context and take only
 *   rv_conn_list_lock (a connection request, to find its connection: it
 *   takes that connection's rv_conn.lock, then drops the list lock before
 *   creating a QP) and rv_conn.lock.  Whoever destroys a cm_id
 *   (rdma_destroy_id() waits for its running handler) therefore holds
 *   neither of those two; it may hold rv_file.lock and be in a device's
 *   read section, which no handler enters.  No cm_id is ever destroyed
 *   from its own handler: ids that fail are parked in rv_conn_qp.dead_id
 *   and destroyed by the QP's work; a rejected incoming request is
 *   destroyed by rdma_cm itself (the handler returns non-zero).
 *
 *   The write path (POST_WRITE(S), rv_write.c) takes, in order:
 *   rv_file.lock, the device's read section, rv_mr_cache.lock (each
 *   write's registration, released before the next lock), then one
 *   rv_conn_qp.sq_lock at a time (spin_lock_bh: completions take it).
 *   Nothing shared by the job's processes: no rv_conn.lock.
 *
 *   Completion handlers run in softirq (IB_POLL_SOFTIRQ CQs, rv_qp.h).
 *   The locks they take are leaves, taken one at a time:
 *   rv_conn_qp.sq_lock, rv_mr_cache.lock (dropping a write's io
 *   reference) and rv_ring.lock (posting an event).  Everyone else takes
 *   the first two with spin_lock_bh() and the ring's with
 *   spin_lock_irqsave(), so a completion in softirq never interrupts a
 *   holder on its own CPU.  They never sleep: what may sleep
 *   (freeing a registration, replacing a failed QP) is queued to a
 *   workqueue.
 *
 * Memory: user-driven allocations are charged to the caller's memory
 * cgroup, so that a process cannot make the kernel hold more on its
 * behalf than its cgroup allows: objects a command creates for its
 * caller use GFP_KERNEL_ACCOUNT (also the ring's vmalloc area) and
 * xarrays that grow with them XA_FLAGS_ACCOUNT.  Module-wide and
 * per-device objects are not charged, nor is anything allocated in
 * completion or rdma_cm handler context (a kworker's charge goes to the
 * root cgroup): a connection's QPs, CQs and their write contexts, which
 * the per-uid connection cap bounds instead.
 */
#ifndef RV_H
#define RV_H

/* Every .c includes this first, so all rv messages carry the prefix. */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/completion.h>
#include <linux/sched.h>
#include <linux/srcu.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <linux/xarray.h>
#include <net/net_namespace.h>
#include <rdma/ib_verbs.h>
#include <rdma/rv_user_ioctls.h>

#include "rv_compat.h"
#include "rv_mr.h"
#include "rv_ring.h"

/**
 * struct rv_device - an RDMA device rv may use
 * @ibdev: the device; NULL once it has been removed
 * @index: ibdev->index, kept for logging after removal
 * @kref: held by the device list and by each job on the device
 * @list: entry in rv_devices, protected by rv_devices_lock
 * @srcu: read sections of the code using @ibdev and the jobs' ib
 *	resources (rv_device_enter()); removal waits for them
 * @removed: removal began: no new section starts; set once, before
 *	removal's synchronize_srcu()
 * @released: completed when removal has released every ib resource and
 *	cleared @ibdev
 * @jobs_lock: protects @jobs and the membership of each job in it
 * @jobs: jobs on this device
 * @cq_vector: where the next connection's CQs start on the completion
 *	vectors (atomic, taken modulo num_comp_vectors): consecutive
 *	connections, and a connection's QPs, land on different vectors
 */
struct rv_device {
	struct ib_device *ibdev;
	u32 index;
	struct kref kref;
	struct list_head list;
	struct srcu_struct srcu;
	bool removed;
	struct completion released;
	struct mutex jobs_lock; /* protects jobs */
	struct list_head jobs;
	atomic_t cq_vector;
};

/**
 * struct rv_job_limits - what a launcher allows one rv job of its job
 * @max_procs: files attached at once, 0 for no limit
 * @max_conns: connections, 0 for no limit
 * @max_pinned_pages: pages the files' registrations pin, 0 for no limit
 */
struct rv_job_limits {
	u32 max_procs;
	u32 max_conns;
	u64 max_pinned_pages;
};

/**
 * struct rv_job_params - what identifies a job and must match across it
 * @uid: owner; only files of this uid join the job
 * @charge_uid: whom the per-uid caps charge for the job and its
 *	connections: @uid, or the owner of the caller's user namespace
 *	(rv_uid_accountable())
 * @launcher_id: the launcher job it belongs to (rv_launcher.c), 0 for
 *	none; a process of another (or none) cannot join it
 * @limits: its launcher's limits (RV_IOCTL_LAUNCHER_JOB), zero without one
 * @port_num: device port, from 1
 * @key_len: bytes used in @key
 * @key: job key from user space, zero past @key_len
 * @gid_index: local GID index the job's connections use
 * @num_conn: RC QPs per remote node
 * @slot_bits: immediate bits naming a process slot
 * @heartbeat_ms: idle time before a QP sends a heartbeat, or
 *	RV_HEARTBEAT_OFF
 * @net: network namespace of the process that created the job; the job
 *	holds a reference (rv_job_create()), its connections' cm_ids live
 *	there and only requests arriving there reach them
 */
struct rv_job_params {
	struct net *net;
	kuid_t uid;
	kuid_t charge_uid;
	u64 launcher_id;
	struct rv_job_limits limits;
	u32 port_num;
	u32 key_len;
	u8 key[RV_JOB_KEY_MAX];
	u32 gid_index;
	u32 num_conn;
	u32 slot_bits;
	u32 heartbeat_ms;
};

/*
 * Send queue entries of the registration QP: the work requests of one
 * batch, posted as a chain with only the last signaled, so that a
 * registration of many key chunks waits once per batch.
 */
#define RV_FRWR_SQ_DEPTH	32

/**
 * struct rv_frwr_qp - a job's QP for fast registration (rv_frwr.c)
 * @lock: protects @cq, @qp, @no_local_inv and @wrs, and serialises the work
 *	requests, each batch waited for under it
 * @cq: completions of @qp; NULL with @qp
 * @qp: RC QP in RTS, connected to itself; NULL until the first
 *	registration and after an error
 * @cqe: the work requests' completion
 * @done: completed by @cqe (once per completion: the signaled last work
 *	request of a batch, or an unsignaled one that failed)
 * @status: work completion status of the last completion
 * @no_local_inv: the device refused an IB_WR_LOCAL_INV when posted: MRs
 *	are deregistered instead of invalidated for reuse
 * @wrs: the work requests of the batch being posted
 */
struct rv_frwr_qp {
	struct mutex lock; /* see above */
	struct ib_cq *cq;
	struct ib_qp *qp;
	struct ib_cqe cqe;
	struct completion done;
	int status;
	bool no_local_inv;
	union {
		struct ib_reg_wr reg[RV_FRWR_SQ_DEPTH];
		struct ib_send_wr inv[RV_FRWR_SQ_DEPTH];
	} wrs;
};

/**
 * struct rv_slot_quarantine - a freed slot that is not handed out yet
 * @list: entry in rv_job.quarantine
 * @slot: the slot; rv_job.slots holds a reserved entry for it
 * @until: jiffies from which the slot may be handed out again
 *
 * Allocated by ATTACH (so that detaching cannot fail), freed when the
 * slot leaves quarantine or with the job.
 */
struct rv_slot_quarantine {
	struct list_head list;
	u32 slot;
	unsigned long until;
};

/**
 * struct rv_job - processes of one job on one device port of this node
 * @kref: one reference per attached file
 * @dev: the device, holding a reference on it
 * @listener: the rdma_cm listeners of @params.net (a reference), which
 *	accept the requests for the job's connections; put after the job is
 *	freed, outside the device's locks
 * @list: entry in @dev->jobs, protected by @dev->jobs_lock
 * @id: small number naming the job in logs and traces
 * @params: identity and job-wide parameters, constant after creation
 * @slots: slot index -> attached rv_file, or a reserved (zero) entry while
 *	the slot is in quarantine; allocation is serialised by the xarray's
 *	own lock, which also protects @next_slot and @quarantine
 * @next_slot: where the next-fit search for a free slot starts
 * @quarantine: struct rv_slot_quarantine of the slots in quarantine, in
 *	the order they were freed (so also of their expiry)
 * @pd: the job's kernel PD; used in @dev's read sections, NULL after
 *	removal
 * @conns: the job's connections (struct rv_conn.job_list); see rv_conn.h
 *	for its locking
 * @frwr: registers remote-access MRs; its QP lives in @pd
 * @ended: its launcher ended it (rv_job_end()): no ATTACH joins it, no
 *	connection is created for it any more, and read sections meet it as
 *	a removed device (rv_job_enter()).  Set under rv_conn_list_lock (read
 *	there by CONN_CREATE), read with READ_ONCE() elsewhere
 * @released: completed once rv_job_end() released the job's ib resources
 * @nr_procs: files attached (not slots in quarantine); under the slots'
 *	lock, for @params.limits
 * @nr_conns: connections in @conns; under rv_conn_list_lock
 * @pinned_pages: pages pinned by the files' registrations (atomic)
 */
struct rv_cm_listener;

struct rv_job {
	struct kref kref;
	struct rv_cm_listener *listener;
	struct rv_device *dev;
	struct list_head list;
	u32 id;
	struct rv_job_params params;
	struct xarray slots;
	u32 next_slot;
	struct list_head quarantine;
	struct ib_pd *pd;
	struct list_head conns;
	struct rv_frwr_qp frwr;
	bool ended;
	struct completion released;
	u32 nr_procs;
	u32 nr_conns;
	atomic64_t pinned_pages;
};

/**
 * struct rv_io_stats - data path counters of a file or a connection
 * @writes_posted: writes accepted by POST_WRITE(S)
 * @bytes_posted: their bytes
 * @writes_completed: writes completed successfully
 * @writes_failed: writes completed with an error
 * @recvs: writes with immediate delivered to a ring
 * @bytes_received: their bytes
 *
 * One instance per CPU (alloc_percpu()): posters and completion handlers
 * on every CPU count without sharing a cache line; this_cpu_add() is safe
 * against preemption and interrupts.  Readers add the CPUs' figures up
 * (rv_stats_sum()): each is exact once the data path is quiet, and never
 * goes back while it runs (rv is 64-bit only: 64-bit loads do not tear).
 */
struct rv_io_stats {
	u64 writes_posted;
	u64 bytes_posted;
	u64 writes_completed;
	u64 writes_failed;
	u64 recvs;
	u64 bytes_received;
};

static inline void rv_stats_sum(const struct rv_io_stats __percpu *pcpu,
				struct rv_io_stats *sum)
{
	int cpu;

	memset(sum, 0, sizeof(*sum));
	for_each_possible_cpu(cpu) {
		const struct rv_io_stats *c = per_cpu_ptr(pcpu, cpu);

		sum->writes_posted += READ_ONCE(c->writes_posted);
		sum->bytes_posted += READ_ONCE(c->bytes_posted);
		sum->writes_completed += READ_ONCE(c->writes_completed);
		sum->writes_failed += READ_ONCE(c->writes_failed);
		sum->recvs += READ_ONCE(c->recvs);
		sum->bytes_received += READ_ONCE(c->bytes_received);
	}
}

/**
 * struct rv_file - one open of /dev/rv
 * @lock: protects every field below; serialises ioctls against close
 * @job: the job this file is attached to, NULL before ATTACH
 * @slot: this file's slot in @job
 * @slot_q: the quarantine record @slot takes when the file detaches;
 *	NULL when slot_quarantine_ms is 0 or the file is not attached
 * @mm: address space of the process that attached (mmgrab()ed); the only
 *	one allowed to use the file's job-bound commands
 * @pid: the process that attached (a reference), for DUMP
 * @ring_entries: event ring size requested at ATTACH
 * @mr_cache_bytes: MR cache limit requested at ATTACH
 * @mr_cache: the file's MR cache, usable once attached; has its own lock
 * @ring: the event ring, set once by ATTACH (release store) and freed at
 *	release; mmap and poll read it without @lock (mmap runs under
 *	mmap_lock, which REG_MEM takes while holding @lock)
 * @conns: connection handle -> struct rv_conn (one reference each);
 *	changed under @lock
 * @stats: data path counters, per CPU (no lock); allocated at open
 * @posts_eagain: posts refused with EAGAIN (atomic)
 * @inflight: writes posted and not completed (atomic); release waits for
 *	0 on @inflight_wait
 * @inflight_wait: woken when @inflight drops to 0
 * @dev_idx: rv_device_enter()'s answer for the command holding @lock
 *
 * The receive path finds files through their job's slots under RCU, and
 * write completions use their file until @inflight drops; release waits
 * for both (synchronize_rcu()) before freeing the file and its ring.
 */
struct rv_file {
	struct mutex lock; /* protects the fields below */
	struct rv_job *job;
	u32 slot;
	struct rv_slot_quarantine *slot_q;
	struct mm_struct *mm;
	struct pid *pid;
	u32 ring_entries;
	u64 mr_cache_bytes;
	struct rv_mr_cache mr_cache;
	struct rv_ring *ring;
	struct xarray conns;
	struct rv_io_stats __percpu *stats;
	atomic64_t posts_eagain;
	atomic_t inflight;
	wait_queue_head_t inflight_wait;
	int dev_idx;
};

/* A command's user buffer, as the dispatcher saw it. */
struct rv_ucmd {
	void __user *ubuffer;
	u32 user_size;
};

int rv_ucmd_respond(const struct rv_ucmd *ucmd, const void *cmd,
		    size_t cmd_len);
int rv_file_lock_dev(struct rv_file *rf, bool need_device);
int rv_file_trylock_dev(struct rv_file *rf, bool need_device);
void rv_file_unlock_dev(struct rv_file *rf);

/* rv_device_enter()'s answer when the device is gone (removal done). */
#define RV_DEVICE_GONE	(-1)

/*
 * Commands that use the job need an attached file, used from the address
 * space that attached it (not a forked child, not a receiver of the fd).
 * Caller holds rf->lock.
 */
static inline int rv_file_check_owner(const struct rv_file *rf)
{
	if (!rf->job)
		return -ENOTCONN;
	if (current->mm != rf->mm)
		return -EPERM;
	return 0;
}

/* Module parameters, validated once at load time (rv_main.c). */
extern unsigned int rv_default_num_conn;
extern unsigned int rv_default_slot_bits;
extern unsigned int rv_default_ring_entries;
extern unsigned long rv_default_mr_cache_bytes;
extern unsigned long long rv_max_mr_cache_bytes;
extern unsigned int rv_default_heartbeat_ms;
extern unsigned int rv_heartbeat_budget;
extern unsigned int rv_frwr_max_pages_param;
extern unsigned int rv_max_jobs_per_uid;
extern unsigned int rv_max_conns_per_uid;
extern unsigned int rv_slot_quarantine_ms;
extern unsigned int rv_quiesce_ms;
extern unsigned int rv_cm_port;
extern unsigned int rv_conn_wqe_budget;
extern unsigned int rv_conn_timeout_ms;
extern unsigned int rv_ack_timeout;
extern unsigned int rv_drain_timeout_ms;
extern bool rv_launcher_only;

#define RV_QUIESCE_MIN_MS	1000
#define RV_QUIESCE_MAX_MS	600000
#define RV_DRAIN_TIMEOUT_MAX_MS	60000

/* rv_main.c */
/* Runs every QP's work (rv_cm.c, rv_qp.c) and the listen work. */
extern struct workqueue_struct *rv_cm_wq;
#if IS_ENABLED(CONFIG_INFINIBAND_RV_DEBUG_WINDOWS)
void rv_debug_window(void);
#else
static inline void rv_debug_window(void) { }
#endif

/* rv_caps.c: per-uid counts and the RLIMIT_MEMLOCK charge */
enum rv_uid_kind {
	RV_UID_JOBS,
	RV_UID_CONNS,
	RV_UID_NR
};

kuid_t rv_uid_accountable(const struct cred *cred);
int rv_uid_charge(kuid_t uid, enum rv_uid_kind kind);
void rv_uid_uncharge(kuid_t uid, enum rv_uid_kind kind);
void rv_uid_exit(void);
int rv_pin_charge(struct mm_struct *mm, unsigned long pages);
void rv_pin_uncharge(struct mm_struct *mm, unsigned long pages);
int rv_job_pin_charge(struct rv_job *job, unsigned long pages);
void rv_job_pin_uncharge(struct rv_job *job, unsigned long pages);

/* rv_device.c */
int rv_device_init(void);
void rv_device_exit(void);
struct rv_device *rv_device_get_by_index(u32 index);
int rv_device_enter(struct rv_device *dev, bool need_device)
	__acquires(&dev->srcu);
int rv_job_enter(struct rv_job *job, bool need_device)
	__acquires(&job->dev->srcu);
void rv_device_leave(struct rv_device *dev, int idx)
	__releases(&dev->srcu);
/* Most devices a walk over all of them takes (rv_device_get_all()). */
#define RV_MAX_DEVICES	64
unsigned int rv_device_get_all(struct rv_device **devs, unsigned int max);
void rv_device_put(struct rv_device *dev);

/* rv_frwr.c */
void rv_frwr_init(struct rv_frwr_qp *f);
void rv_frwr_release(struct rv_job *job);
u8 rv_frwr_key_shift(const struct rv_job *job);
int rv_frwr_alloc_mr(struct rv_job *job, u32 pages, struct rv_frmr *frmr);
int rv_frwr_register(struct rv_job *job, struct rv_frmr *frmrs, u32 nr_mrs,
		     int ib_access);
u32 rv_frwr_invalidate(struct rv_job *job, struct rv_frmr *frmrs,
		       u32 nr_mrs);

/* rv_job.c */
int rv_job_attach(struct rv_file *rf, struct rv_device *dev,
		  const struct rv_job_params *params);
void rv_job_detach(struct rv_file *rf, bool quarantine);
void rv_job_release_ib(struct rv_job *job);
void rv_job_end(struct rv_job *job);
void rv_job_put(struct rv_job *job);
void rv_job_exit(void);

/* rv_launcher.c */
int rv_launcher_attach_check(struct rv_job_params *params);
int rv_cmd_launcher_job(struct rv_file *rf, const struct rv_ucmd *ucmd,
			void *arg);
void rv_launcher_exit(void);

/* rv_dump.c */
int rv_cmd_dump(struct rv_file *rf, const struct rv_ucmd *ucmd, void *arg);

/* rv_file.c */
extern const struct file_operations rv_fops;

/* Jobs are named by their id in messages, as in the rv_job_* traces. */
#define rv_job_dbg(job, fmt, ...) \
	pr_debug("job%u: " fmt, (job)->id, ##__VA_ARGS__)

#endif /* RV_H */
