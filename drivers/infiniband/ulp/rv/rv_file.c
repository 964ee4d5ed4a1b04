// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * /dev/rv file operations and the ioctl dispatcher.
 *
 * Every command takes one struct that starts with "__u32 size; __u32
 * flags;".  The dispatcher copies it in with copy_struct_from_user() so
 * older and newer user space both work, and handlers copy their answer
 * back through rv_ucmd_respond().
 */
#include "rv.h"
#include "rv_conn.h"
#include "rv_wire.h"
#include "rv_write.h"

#include <linux/compat.h>
#include <linux/fs.h>
#include <linux/log2.h>
#include <linux/nsproxy.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <rdma/ib_cache.h>

/* Bounds the zero-tail scan of a struct from newer user space. */
#define RV_UCMD_MAX_SIZE 4096

/* Write back the kernel's answer, never more than the caller provided. */
int rv_ucmd_respond(const struct rv_ucmd *ucmd, const void *cmd,
		    size_t cmd_len)
{
	if (copy_to_user(ucmd->ubuffer, cmd, min_t(size_t, ucmd->user_size,
						   cmd_len)))
		return -EFAULT;
	return 0;
}

/*
 * The part of rv_file_lock_dev() after rf->lock is taken; on error it is
 * released.
 */
static int rv_file_enter_dev(struct rv_file *rf, bool need_device)
{
	int ret;

	ret = rv_file_check_owner(rf);
	if (ret)
		goto out_unlock;
	ret = rv_job_enter(rf->job, need_device);
	if (ret == -ENODEV) {
		rv_device_leave(rf->job->dev, ret);
		goto out_unlock;
	}
	rf->dev_idx = ret;
	/* Handed to rv_file_unlock_dev() through @rf->dev_idx. */
	__release(&rf->job->dev->srcu);
	return 0;

out_unlock:
	mutex_unlock(&rf->lock);
	return ret;
}

/**
 * rv_file_lock_dev - begin a command that uses the file's job and device
 * @rf: the file
 * @need_device: fail with -ENODEV once the device is removed (commands
 *	that create device objects or post work); dropping references still
 *	works after removal
 *
 * Takes rf->lock, checks the caller owns the attached file, and enters
 * the device's read section (rv_device_enter()) so the PD, MRs and QPs
 * stay put; @rf->dev_idx says which.  On success the caller ends with
 * rv_file_unlock_dev().
 */
int rv_file_lock_dev(struct rv_file *rf, bool need_device)
{
	mutex_lock(&rf->lock);
	return rv_file_enter_dev(rf, need_device);
}

/*
 * rv_file_lock_dev() for callers that must not sleep on rf->lock (an
 * io_uring issue with IO_URING_F_NONBLOCK: REG_MEM may hold the lock for
 * as long as user space takes to serve a page fault).  -EAGAIN, and
 * nothing held, while another command has it; otherwise
 * rv_file_lock_dev()'s answer.
 */
int rv_file_trylock_dev(struct rv_file *rf, bool need_device)
{
	if (!mutex_trylock(&rf->lock))
		return -EAGAIN;
	return rv_file_enter_dev(rf, need_device);
}

void rv_file_unlock_dev(struct rv_file *rf)
{
	__acquire(&rf->job->dev->srcu);	/* from rv_file_lock_dev() */
	rv_device_leave(rf->job->dev, rf->dev_idx);
	mutex_unlock(&rf->lock);
}

static int rv_cmd_query(struct rv_file *rf, const struct rv_ucmd *ucmd,
			void *arg);
static int rv_cmd_attach(struct rv_file *rf, const struct rv_ucmd *ucmd,
			 void *arg);

union rv_ucmd_buffer {
	struct rv_query query;
	struct rv_attach attach;
	struct rv_reg_mem reg_mem;
	struct rv_dereg_mem dereg_mem;
	struct rv_evict evict;
	struct rv_mr_stats mr_stats;
	struct rv_conn_create conn_create;
	struct rv_conn_connect conn_connect;
	struct rv_conn_query conn_query;
	struct rv_conn_destroy conn_destroy;
	struct rv_post_write post_write;
	struct rv_post_writes post_writes;
	struct rv_stats stats;
	struct rv_dump dump;
	struct rv_launcher_job launcher_job;
};

struct rv_ioctl_op {
	unsigned int size;
	unsigned int min_size;
	int (*execute)(struct rv_file *rf, const struct rv_ucmd *ucmd,
		       void *arg);
};

#define RV_IOCTL_OP(_cmd, _fn, _struct, _last)                              \
	[_cmd] = {                                                          \
		.size = sizeof(_struct) +                                   \
			BUILD_BUG_ON_ZERO(sizeof(union rv_ucmd_buffer) <    \
					  sizeof(_struct)),                 \
		.min_size = offsetofend(_struct, _last),                    \
		.execute = _fn,                                             \
	}

static const struct rv_ioctl_op rv_ioctl_ops[] = {
	/* Minimum size 64: the fields from cm_port on were appended. */
	RV_IOCTL_OP(RV_CMD_QUERY, rv_cmd_query, struct rv_query,
		    default_mr_cache_bytes),
	RV_IOCTL_OP(RV_CMD_ATTACH, rv_cmd_attach, struct rv_attach,
		    mr_cache_bytes),
	/* Minimum size 64: rkeys, nr_rkeys and rkey_shift were appended. */
	RV_IOCTL_OP(RV_CMD_REG_MEM, rv_cmd_reg_mem, struct rv_reg_mem,
		    region_length),
	RV_IOCTL_OP(RV_CMD_DEREG_MEM, rv_cmd_dereg_mem, struct rv_dereg_mem,
		    refs),
	RV_IOCTL_OP(RV_CMD_EVICT, rv_cmd_evict, struct rv_evict, freed_bytes),
	/*
	 * Minimum size 112: fast_regs and fast_reg_keys, then
	 * fast_reg_reused, were appended.
	 */
	RV_IOCTL_OP(RV_CMD_MR_STATS, rv_cmd_mr_stats, struct rv_mr_stats,
		    failures),
	RV_IOCTL_OP(RV_CMD_CONN_CREATE, rv_cmd_conn_create,
		    struct rv_conn_create, recv_depth),
	RV_IOCTL_OP(RV_CMD_CONN_CONNECT, rv_cmd_conn_connect,
		    struct rv_conn_connect, timeout_ms),
	/* Minimum size 64: the counters from writes_posted on were appended. */
	RV_IOCTL_OP(RV_CMD_CONN_QUERY, rv_cmd_conn_query,
		    struct rv_conn_query, attempts),
	RV_IOCTL_OP(RV_CMD_CONN_DESTROY, rv_cmd_conn_destroy,
		    struct rv_conn_destroy, handles),
	RV_IOCTL_OP(RV_CMD_POST_WRITE, rv_cmd_post_write, struct rv_post_write,
		    write),
	RV_IOCTL_OP(RV_CMD_POST_WRITES, rv_cmd_post_writes,
		    struct rv_post_writes, error),
	RV_IOCTL_OP(RV_CMD_STATS, rv_cmd_stats, struct rv_stats, rsvd),
	RV_IOCTL_OP(RV_CMD_DUMP, rv_cmd_dump, struct rv_dump, rsvd),
	RV_IOCTL_OP(RV_CMD_LAUNCHER_JOB, rv_cmd_launcher_job,
		    struct rv_launcher_job, job_key),
};

/* The uAPI promises one layout on every ABI; catch accidental changes. */
static_assert(sizeof(struct rv_query) == 96);
static_assert(offsetof(struct rv_query, max_mr_table_entries) == 88);
static_assert(offsetof(struct rv_query, cm_port) == 64);
static_assert(offsetof(struct rv_query, conn_query_flags) == 76);
static_assert(offsetof(struct rv_query, cmd_mask) == 8);
static_assert(offsetof(struct rv_query, attach_flags) == 16);
static_assert(offsetof(struct rv_query, default_ring_entries) == 52);
static_assert(offsetof(struct rv_query, default_mr_cache_bytes) == 56);
static_assert(sizeof(struct rv_attach) == 72);
static_assert(offsetof(struct rv_attach, heartbeat_ms) == 64);
static_assert(offsetof(struct rv_attach, mr_table_entries) == 68);
static_assert(offsetof(struct rv_attach, dev_index) == 8);
static_assert(offsetof(struct rv_attach, job_key_len) == 20);
static_assert(offsetof(struct rv_attach, job_key) == 24);
static_assert(offsetof(struct rv_attach, num_conn) == 40);
static_assert(offsetof(struct rv_attach, slot) == 52);
static_assert(offsetof(struct rv_attach, mr_cache_bytes) == 56);
static_assert(sizeof(struct rv_reg_mem) == 88);
static_assert(offsetof(struct rv_reg_mem, table_gen) == 84);
static_assert(sizeof(struct rv_mr_slot) == 128);
static_assert(offsetof(struct rv_mr_slot, lkeys) == 40);
static_assert(offsetof(struct rv_reg_mem, access) == 24);
static_assert(offsetof(struct rv_reg_mem, iova) == 40);
static_assert(offsetof(struct rv_reg_mem, region_length) == 56);
static_assert(offsetof(struct rv_reg_mem, rkeys) == 64);
static_assert(offsetof(struct rv_reg_mem, rkey_shift) == 76);
static_assert(sizeof(struct rv_dereg_mem) == 16);
static_assert(sizeof(struct rv_evict) == 56);
static_assert(offsetof(struct rv_evict, target_bytes) == 32);
static_assert(offsetof(struct rv_evict, freed_bytes) == 48);
static_assert(sizeof(struct rv_mr_stats) == 144);
static_assert(offsetof(struct rv_mr_stats, fast_regs) == 112);
static_assert(sizeof(struct rv_ring_header) == 24);
static_assert(sizeof(struct rv_ring_header) <= RV_RING_CONSUMER_OFFSET);
static_assert(sizeof(struct rv_event) == 32);
static_assert(offsetof(struct rv_event, wr_id) == 8);
static_assert(offsetof(struct rv_event, generation) == 28);
static_assert(offsetof(struct rv_mr_stats, entries) == 48);
static_assert(offsetof(struct rv_mr_stats, hits) == 64);
static_assert(sizeof(struct rv_conn_create) == 160);
static_assert(offsetof(struct rv_conn_create, handle) == 12);
static_assert(offsetof(struct rv_conn_create, addr) == 16);
static_assert(offsetof(struct rv_conn_create, conn_id) == 144);
static_assert(offsetof(struct rv_conn_create, recv_depth) == 156);
static_assert(sizeof(struct rv_conn_connect) == 16);
static_assert(offsetof(struct rv_conn_connect, timeout_ms) == 12);
static_assert(sizeof(struct rv_conn_query) == 160);
static_assert(offsetof(struct rv_conn_query, qp_errors) == 152);
static_assert(offsetof(struct rv_conn_query, writes_posted) == 64);
static_assert(offsetof(struct rv_conn_query, max_segment) == 140);
static_assert(sizeof(struct rv_write) == 48);
static_assert(offsetof(struct rv_write, conn_handle) == 32);
static_assert(sizeof(struct rv_post_write) == 56);
static_assert(sizeof(struct rv_post_writes) == 32);
static_assert(offsetof(struct rv_post_writes, count) == 16);
static_assert(sizeof(struct rv_stats) == 80);
static_assert(offsetof(struct rv_stats, inflight) == 72);
static_assert(sizeof(struct rv_dump) == 40);
static_assert(sizeof(struct rv_dump_job) == 128);
/* The limits were appended at 48. */
static_assert(sizeof(struct rv_launcher_job) == 64);
static_assert(offsetof(struct rv_launcher_job, max_procs) == 48);
static_assert(sizeof(struct rv_dump_qp) == 16);
static_assert(sizeof(struct rv_dump_device) == 80);
static_assert(sizeof(struct rv_dump_conn) == 416);
static_assert(offsetof(struct rv_dump_conn, writes_posted) == 72);
static_assert(sizeof(struct rv_dump_proc) == 112);
static_assert(offsetof(struct rv_conn_query, state) == 16);
static_assert(offsetof(struct rv_conn_query, generation) == 32);
static_assert(offsetof(struct rv_conn_query, conn_id) == 40);
static_assert(offsetof(struct rv_conn_query, attempts) == 56);
static_assert(sizeof(struct rv_conn_destroy) == 16);
static_assert(offsetof(struct rv_conn_destroy, handles) == 12);
/* The listener and the requests carry no more than this. */
static_assert(sizeof(struct rv_cm_req_pdata) == 56);
static_assert(sizeof(struct rv_cm_rep_pdata) == 48);
static_assert(sizeof(struct rv_auth_msg) == 100);
static_assert(sizeof(struct rv_cm_rej_pdata) == 8);

static int rv_cmd_query(struct rv_file *rf, const struct rv_ucmd *ucmd,
			void *arg)
{
	struct rv_query *cmd = arg;
	unsigned int i;

	if (cmd->flags)
		return -EINVAL;

	cmd->cmd_mask = 0;
	for (i = 0; i < ARRAY_SIZE(rv_ioctl_ops); i++)
		if (rv_ioctl_ops[i].execute)
			cmd->cmd_mask |= BIT_ULL(i);
	cmd->attach_flags = 0;
	cmd->max_conn_per_node = RV_MAX_CONN_PER_NODE;
	cmd->max_slot_bits = RV_MAX_SLOT_BITS;
	cmd->min_slot_bits = RV_MIN_SLOT_BITS;
	cmd->max_ring_entries = RV_MAX_RING_ENTRIES;
	cmd->min_ring_entries = RV_MIN_RING_ENTRIES;
	cmd->max_job_key_len = RV_JOB_KEY_MAX;
	cmd->default_num_conn = rv_default_num_conn;
	cmd->default_slot_bits = rv_default_slot_bits;
	cmd->default_ring_entries = rv_default_ring_entries;
	cmd->default_mr_cache_bytes = rv_default_mr_cache_bytes;
	cmd->cm_port = rv_cm_port;
	cmd->conn_wqe_budget = rv_conn_wqe_budget;
	cmd->conn_timeout_ms = rv_conn_timeout_ms;
	cmd->conn_query_flags = RV_CONN_QUERY_F_WAIT;
	cmd->default_heartbeat_ms = rv_default_heartbeat_ms;
	cmd->slot_quarantine_ms = rv_slot_quarantine_ms;
	cmd->max_mr_table_entries = RV_MAX_MR_TABLE_ENTRIES;
	cmd->default_mr_table_entries = RV_DEFAULT_MR_TABLE_ENTRIES;
	return rv_ucmd_respond(ucmd, cmd, sizeof(*cmd));
}

/* Validate ATTACH's own fields and apply the module defaults. */
static int rv_attach_check(struct rv_attach *cmd)
{
	if (cmd->flags)
		return -EINVAL;
	if (!cmd->job_key_len || cmd->job_key_len > RV_JOB_KEY_MAX ||
	    memchr_inv(cmd->job_key + cmd->job_key_len, 0,
		       RV_JOB_KEY_MAX - cmd->job_key_len))
		return -EINVAL;

	if (!cmd->num_conn)
		cmd->num_conn = rv_default_num_conn;
	if (cmd->num_conn > RV_MAX_CONN_PER_NODE)
		return -EINVAL;

	if (!cmd->slot_bits)
		cmd->slot_bits = rv_default_slot_bits;
	if (cmd->slot_bits < RV_MIN_SLOT_BITS ||
	    cmd->slot_bits > RV_MAX_SLOT_BITS)
		return -EINVAL;

	if (!cmd->ring_entries)
		cmd->ring_entries = rv_default_ring_entries;
	if (!is_power_of_2(cmd->ring_entries) ||
	    cmd->ring_entries < RV_MIN_RING_ENTRIES ||
	    cmd->ring_entries > RV_MAX_RING_ENTRIES)
		return -EINVAL;

	if (!cmd->mr_cache_bytes)
		cmd->mr_cache_bytes = rv_default_mr_cache_bytes;
	if (cmd->mr_cache_bytes > rv_max_mr_cache_bytes)
		return -EINVAL;

	if (!cmd->mr_table_entries)
		cmd->mr_table_entries = RV_DEFAULT_MR_TABLE_ENTRIES;
	if (!is_power_of_2(cmd->mr_table_entries) ||
	    cmd->mr_table_entries < RV_MIN_MR_TABLE_ENTRIES ||
	    cmd->mr_table_entries > RV_MAX_MR_TABLE_ENTRIES)
		return -EINVAL;
	if (!cmd->heartbeat_ms)
		cmd->heartbeat_ms = rv_default_heartbeat_ms;
	if (cmd->heartbeat_ms != RV_HEARTBEAT_OFF &&
	    (cmd->heartbeat_ms < RV_MIN_HEARTBEAT_MS ||
	     cmd->heartbeat_ms > RV_MAX_HEARTBEAT_MS))
		return -EINVAL;
	return 0;
}

/*
 * The device must be the caller's to use, the port RoCE, the GID index
 * valid; caller holds a device reference.  In the device's read section:
 * removal clears dev->ibdev.
 */
static int rv_attach_check_port(struct rv_device *dev,
				const struct rv_attach *cmd)
{
	const struct ib_gid_attr *gid_attr;
	int ret = 0, idx;

	idx = rv_device_enter(dev, true);
	if (idx < 0) {
		ret = idx;
		goto out_unlock;
	}
	/*
	 * In exclusive netns mode a device belongs to one namespace; to any
	 * other it must look absent, as it does to their verbs and netlink.
	 */
	if (!rdma_dev_access_netns(dev->ibdev, current->nsproxy->net_ns)) {
		ret = -ENODEV;
		goto out_unlock;
	}
	if (!rdma_is_port_valid(dev->ibdev, cmd->port_num)) {
		ret = -EINVAL;
		goto out_unlock;
	}
	/*
	 * RoCE only: a job's address is its GID as an IP address, which an
	 * IB GID is not (IPoIB's address differs, and the GID has no netdev
	 * to scope or bind it), so an IB job could never connect.
	 */
	if (!rdma_protocol_roce(dev->ibdev, cmd->port_num)) {
		ret = -EPROTONOSUPPORT;
		goto out_unlock;
	}
	gid_attr = rdma_get_gid_attr(dev->ibdev, cmd->port_num,
				     cmd->gid_index);
	if (IS_ERR(gid_attr)) {
		ret = -EINVAL;
		goto out_unlock;
	}
	rdma_put_gid_attr(gid_attr);
out_unlock:
	rv_device_leave(dev, idx);
	return ret;
}

static int rv_cmd_attach(struct rv_file *rf, const struct rv_ucmd *ucmd,
			 void *arg)
{
	struct rv_attach *cmd = arg;
	struct rv_job_params params = {};
	struct rv_device *dev;
	struct rv_mr_table *table;
	struct rv_ring *ring;
	int ret;

	ret = rv_attach_check(cmd);
	if (ret)
		return ret;

	mutex_lock(&rf->lock);
	if (rf->job) {
		ret = -EALREADY;
		goto out_unlock;
	}

	dev = rv_device_get_by_index(cmd->dev_index);
	if (!dev) {
		ret = -ENODEV;
		goto out_unlock;
	}
	ret = rv_attach_check_port(dev, cmd);
	if (ret)
		goto out_put_dev;

	/* The job holds its own reference (rv_job_create()). */
	params.net = current->nsproxy->net_ns;
	params.uid = current_uid();
	params.charge_uid = rv_uid_accountable(current_cred());
	params.port_num = cmd->port_num;
	params.key_len = cmd->job_key_len;
	memcpy(params.key, cmd->job_key, sizeof(params.key));
	params.gid_index = cmd->gid_index;
	params.num_conn = cmd->num_conn;
	params.slot_bits = cmd->slot_bits;
	params.heartbeat_ms = cmd->heartbeat_ms;
	/* A launcher's job: only from its cgroup (sets launcher_id). */
	ret = rv_launcher_attach_check(&params);
	if (ret)
		goto out_put_dev;

	ring = rv_ring_alloc(cmd->ring_entries, current->mm);
	if (IS_ERR(ring)) {
		ret = PTR_ERR(ring);
		goto out_put_dev;
	}
	table = rv_mr_table_alloc(cmd->mr_table_entries, current->mm);
	if (IS_ERR(table)) {
		ret = PTR_ERR(table);
		goto out_free_ring;
	}

	ret = rv_job_attach(rf, dev, &params);
	if (ret)
		goto out_free_table;

	rf->ring_entries = cmd->ring_entries;
	rf->mr_cache_bytes = cmd->mr_cache_bytes;
	cmd->slot = rf->slot;

	/* A caller that cannot learn its slot must not keep it. */
	ret = rv_ucmd_respond(ucmd, cmd, sizeof(*cmd));
	if (ret) {
		/* Nobody learned the slot: it needs no quarantine. */
		rv_job_detach(rf, false);
		goto out_free_table;
	}
	mmgrab(current->mm);
	rf->mm = current->mm;
	rf->pid = get_task_pid(current, PIDTYPE_TGID);
	rv_mr_cache_start(&rf->mr_cache, rf->job, rf->mr_cache_bytes, table);
	/*
	 * Publishes the ring (and the MR table) to mmap and poll, which do
	 * not take rf->lock.
	 */
	smp_store_release(&rf->ring, ring);
	goto out_put_dev;

out_free_table:
	rv_mr_table_free(table);
out_free_ring:
	rv_ring_free(ring);

out_put_dev:
	rv_device_put(dev);
out_unlock:
	mutex_unlock(&rf->lock);
	return ret;
}

static long rv_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	struct rv_file *rf = filp->private_data;
	union rv_ucmd_buffer buf;
	const struct rv_ioctl_op *op;
	struct rv_ucmd ucmd = {
		.ubuffer = (void __user *)arg,
	};
	unsigned int nr = _IOC_NR(cmd);
	int ret;

	/* Sizes travel in the struct, so the number must be a bare _IO(). */
	if (cmd != _IO(RV_IOCTL_TYPE, nr) || nr >= ARRAY_SIZE(rv_ioctl_ops))
		return -ENOTTY;
	op = &rv_ioctl_ops[nr];
	if (!op->execute)
		return -ENOTTY;

	if (get_user(ucmd.user_size, (u32 __user *)ucmd.ubuffer))
		return -EFAULT;
	if (ucmd.user_size < op->min_size)
		return -EINVAL;
	if (ucmd.user_size > RV_UCMD_MAX_SIZE)
		return -E2BIG;

	ret = copy_struct_from_user(&buf, op->size, ucmd.ubuffer,
				    ucmd.user_size);
	if (ret)
		return ret;

	return op->execute(rf, &ucmd, &buf);
}

static int rv_open(struct inode *inode, struct file *filp)
{
	struct rv_file *rf;

	rf = kzalloc(sizeof(*rf), GFP_KERNEL_ACCOUNT);
	if (!rf)
		return -ENOMEM;
	rf->stats = alloc_percpu_gfp(struct rv_io_stats, GFP_KERNEL_ACCOUNT);
	if (!rf->stats) {
		kfree(rf);
		return -ENOMEM;
	}
	mutex_init(&rf->lock);
	rv_mr_cache_init(&rf->mr_cache);
	rv_conn_file_init(rf);
	rv_write_file_init(rf);
	filp->private_data = rf;
	return nonseekable_open(inode, filp);
}

static int rv_release(struct inode *inode, struct file *filp)
{
	struct rv_file *rf = filp->private_data;

	mutex_lock(&rf->lock);
	/* Completions of our writes use the file, its ring and its MRs. */
	rv_write_file_quiesce(rf);
	/* Handles first: a connection never outlives its job. */
	rv_conn_file_release(rf);
	/* MRs live in the job's PD: free them before leaving the job. */
	rv_mr_cache_teardown(&rf->mr_cache);
	rv_job_detach(rf, true);
	/* The receive path may still hold the file it found in its slot. */
	synchronize_rcu();
	/* No mapping is left (each holds the file), so no user either. */
	rv_ring_free(rf->ring);
	rv_mr_table_free(rf->mr_cache.table);
	if (rf->mm)
		mmdrop(rf->mm);
	put_pid(rf->pid);
	mutex_unlock(&rf->lock);
	mutex_destroy(&rf->lock);
	free_percpu(rf->stats);
	kfree(rf);
	return 0;
}

/* Maps the event ring or the MR table; see <rdma/rv_user_ioctls.h>. */
static int rv_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct rv_file *rf = filp->private_data;
	/* Not rf->lock: mmap_lock is held, and REG_MEM nests them the other way. */
	struct rv_ring *ring = smp_load_acquire(&rf->ring);

	if (!ring)
		return -ENOTCONN;
	if (current->mm != ring->mm)
		return -EPERM;
	switch (vma->vm_pgoff) {
	case RV_MR_TABLE_MMAP_OFFSET >> PAGE_SHIFT:
	case RV_MR_HOLDS_MMAP_OFFSET >> PAGE_SHIFT:
		/* Set before the ring was published. */
		return rv_mr_table_mmap(rf->mr_cache.table, vma);
	default:
		return rv_ring_mmap(ring, vma);
	}
}

/* EPOLLIN while events are pending; EPOLLERR before ATTACH. */
static __poll_t rv_poll(struct file *filp, poll_table *wait)
{
	struct rv_file *rf = filp->private_data;
	struct rv_ring *ring;

	/* Pairs with ATTACH's release store of the ring. */
	ring = smp_load_acquire(&rf->ring);
	if (!ring)
		return EPOLLERR;
	return rv_ring_poll(ring, filp, wait);
}

const struct file_operations rv_fops = {
	.owner = THIS_MODULE,
	.open = rv_open,
	.release = rv_release,
	.unlocked_ioctl = rv_ioctl,
	.mmap = rv_mmap,
	.poll = rv_poll,
	.compat_ioctl = compat_ptr_ioctl,
	.uring_cmd = rv_uring_cmd,
};
