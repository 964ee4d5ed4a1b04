// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv module entry: every module parameter and its validation, the
 * workqueue of the connections' work, debugfs, the /dev/rv misc device and
 * the ib_client.
 */
#include "rv.h"
#include "rv_auth.h"
#include "rv_cm.h"
#include "rv_conn.h"
#include "rv_wire.h"

#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/log2.h>
#include <linux/math64.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/sizes.h>
#include <linux/module.h>
#include <linux/seq_file.h>
#include <linux/time64.h>

/*
 * Defaults for ATTACH fields passed as 0.  Read-only after load so that the
 * range checks below stay true for the module's lifetime.
 */
unsigned int rv_default_num_conn = 4;
module_param_named(num_conn, rv_default_num_conn, uint, 0444);
MODULE_PARM_DESC(num_conn, "Default RC QPs per remote node for a job (1..16, default 4)");

unsigned int rv_default_slot_bits = 6;
module_param_named(slot_bits, rv_default_slot_bits, uint, 0444);
MODULE_PARM_DESC(slot_bits, "Default immediate bits naming a process slot (1..16, default 6)");

unsigned int rv_default_ring_entries = 4096;
module_param_named(ring_entries, rv_default_ring_entries, uint, 0444);
MODULE_PARM_DESC(ring_entries, "Default event ring entries per process (power of two, 64..1048576, default 4096)");

unsigned long rv_default_mr_cache_bytes = 256UL << 20;
module_param_named(mr_cache_bytes, rv_default_mr_cache_bytes, ulong, 0444);
MODULE_PARM_DESC(mr_cache_bytes, "Default MR cache limit per process in bytes (non-zero, default 256 MiB)");

/*
 * The largest mr_cache_bytes ATTACH accepts.  The cache keeps unused
 * registrations pinned up to its limit, and with RLIMIT_MEMLOCK unlimited
 * (usual on HPC nodes) that limit is all that bounds them: the site's
 * cap.  64 GiB, 256 times the default, is more than one rank's share of
 * most nodes' memory, so a middleware sizing its cache by the node is not
 * refused.
 */
unsigned long long rv_max_mr_cache_bytes = 64ULL << 30;
module_param_named(max_mr_cache_bytes, rv_max_mr_cache_bytes, ullong, 0444);
MODULE_PARM_DESC(max_mr_cache_bytes, "Largest MR cache limit ATTACH accepts, in bytes (at least mr_cache_bytes, default 64 GiB)");

unsigned int rv_default_heartbeat_ms = 1000;
module_param_named(heartbeat_ms, rv_default_heartbeat_ms, uint, 0444);
MODULE_PARM_DESC(heartbeat_ms, "Idle time before a QP sends a heartbeat, when ATTACH passes 0 (50..600000, 4294967295 = off, default 1000)");

/*
 * Heartbeat passes (one connection's look at its QPs) per second on the
 * node: with more connections armed than this many times 1000 /
 * heartbeat_ms, every connection's interval stretches so that a user
 * cannot buy CPU time on rv's shared workqueue with connections.  Read at
 * each pass, so a write takes effect within one interval.
 */
unsigned int rv_heartbeat_budget = 10000;
module_param_named(heartbeat_budget, rv_heartbeat_budget, uint, 0644);
MODULE_PARM_DESC(heartbeat_budget, "Heartbeat passes per second on the node; intervals stretch beyond it (0 = no budget, default 10000)");

#if IS_ENABLED(CONFIG_INFINIBAND_RV_DEBUG_WINDOWS)
/*
 * Testing only: rv_debug_window() sleeps this long where a call has left
 * the device's read section and a removal may run before its next step,
 * so that a test can land the removal there (tools/testing/selftests/rv,
 * the storm group).  Capped at a second per window.
 */
static unsigned int rv_debug_window_ms;
module_param_named(debug_window_ms, rv_debug_window_ms, uint, 0644);
MODULE_PARM_DESC(debug_window_ms, "Testing only: sleep this long in known race windows (0: off, at most 1000)");

void rv_debug_window(void)
{
	unsigned int ms = READ_ONCE(rv_debug_window_ms);

	if (ms)
		msleep(min(ms, 1000U));
}
#endif

/*
 * Pages one fast-registration MR may map, below the device's own limit:
 * it sets the key chunk (rounded down to a power of two), and tests set it
 * low so that registrations span many chunks on rxe.  No range to check:
 * any value is a cap.
 */
unsigned int rv_frwr_max_pages_param;
module_param_named(frwr_max_pages, rv_frwr_max_pages_param, uint, 0444);
MODULE_PARM_DESC(frwr_max_pages, "Most pages one fast-registration MR maps (0 = the device's limit, default 0)");

/*
 * Per-uid caps (rv_caps.c), EDQUOT beyond.  0, the default, sizes them
 * from the node's memory at load, and the parameter then shows the value
 * in use.  A connection's QPs and CQs cost at least 0.5 MiB of kernel
 * memory on rxe with the default conn_wqe_budget, which is split between
 * the QPs whatever num_conn is (534 kB each, measured in a 768 MB guest
 * when CONN_CREATE made the CQs, before any QP; they now come with the
 * QPs, at CONN_CONNECT or an incoming request, and an idle connection is
 * about 4 kB), little of it charged to any memory cgroup.  One connection
 * per 4 MiB of RAM lets a uid's connections take about an eighth of the
 * node: 176 in that guest (706 MiB of RAM to its kernel, which 1400 would
 * exhaust), and 16384 on a 64 GiB node, more than one job over every node
 * of the largest clusters needs (one connection per remote node).  A job
 * (a PD, and a fast-registration QP and CQ once it registers remote
 * memory) costs less than a connection, and a node runs a few per user and
 * device port: one per 8 MiB (88 in that guest, 8192 with 64 GiB).  At
 * least 64 of each.
 */
unsigned int rv_max_jobs_per_uid;
module_param_named(max_jobs_per_uid, rv_max_jobs_per_uid, uint, 0444);
MODULE_PARM_DESC(max_jobs_per_uid, "Most jobs one uid may hold (0 = one per 8 MiB of RAM, at least 64: the default)");

unsigned int rv_max_conns_per_uid;
module_param_named(max_conns_per_uid, rv_max_conns_per_uid, uint, 0444);
MODULE_PARM_DESC(max_conns_per_uid, "Most connections one uid's jobs may hold (0 = one per 4 MiB of RAM, at least 64: the default)");

/* One object per @bytes of RAM, at least 64. */
static unsigned int rv_cap_from_ram(unsigned long bytes)
{
	u64 ram = (u64)totalram_pages() << PAGE_SHIFT;

	return clamp_t(u64, div64_u64(ram, bytes), 64, U32_MAX);
}

/*
 * How long a slot stays out of use after its process detached, so that
 * writes aimed at that process which are still on their way are dropped
 * (drops_no_slot) rather than delivered to the next process given the
 * slot.  A write that has not arrived is retransmitted by its RC QP until
 * the QP gives up: RV_CM_RETRY_COUNT + 1 = 7 tries of 4.096 us *
 * 2^ack_timeout, 0.94 s at the default ack_timeout (15), 3.8 s at 17,
 * 7.5 s at 18; rv never re-sends a failed write on a new QP (a re-send is
 * a new post by the middleware).  10 s covers that at ack_timeout up to
 * 18 on every node.  0 turns the quarantine off.
 */
unsigned int rv_slot_quarantine_ms = 10000;
module_param_named(slot_quarantine_ms, rv_slot_quarantine_ms, uint, 0444);
MODULE_PARM_DESC(slot_quarantine_ms, "Time a freed process slot is kept unused, in ms (0..600000, 0 = reuse at once, default 10000)");

/*
 * A privileged port (see RV_CM_PRIV_PORT_END), the highest one.  The
 * number only has to be free in rdma_cm's own port space on the node: on
 * IB and RoCE it travels in the CM's private data, never as a TCP or UDP
 * port on the wire (RoCE v2 is UDP 4791), so IANA's assignments of
 * system ports do not apply, and no rdma_cm service uses system ports
 * (NFS/RDMA 20049, iSER 3260, NVMe-oF 4420, SMB Direct 5445, RDS 18634).
 * rv's clients send from the ports just below it (RV_CM_SRC_PORT_MIN).
 */
unsigned int rv_cm_port = 1023;
module_param_named(cm_port, rv_cm_port, uint, 0444);
MODULE_PARM_DESC(cm_port, "Privileged port of rv's rdma_cm listener and default remote port (1..1023, default 1023)");

unsigned int rv_conn_wqe_budget = 1024;
module_param_named(conn_wqe_budget, rv_conn_wqe_budget, uint, 0444);
MODULE_PARM_DESC(conn_wqe_budget, "Send and receive queue entries per remote node, split between its QPs (16..16384, default 1024)");

unsigned int rv_conn_timeout_ms = 30000;
module_param_named(conn_timeout_ms, rv_conn_timeout_ms, uint, 0444);
MODULE_PARM_DESC(conn_timeout_ms, "Default connection establishment timeout in ms (1..3600000, default 30000)");

/*
 * rdma_cm's RoCE default (18: about 1 s, 2 s with the margin) makes every
 * packet lost at the end of a burst cost seconds; 15 (about 134 ms) keeps
 * a lossy link moving, and its 7 tries (RV_CM_RETRY_COUNT) still ride out
 * a second of congestion before a write fails.
 */
unsigned int rv_ack_timeout = 15;
module_param_named(ack_timeout, rv_ack_timeout, uint, 0444);
MODULE_PARM_DESC(ack_timeout, "QP local ACK timeout exponent: 4.096 us * 2^n (8..31, default 15)");

/*
 * How long a QP's teardown waits for the flush of its work requests before
 * it destroys the QP anyway.  Tests set 0 (never wait) to act as a device
 * that withholds its flush completions.
 */
unsigned int rv_drain_timeout_ms = 5000;
module_param_named(drain_timeout_ms, rv_drain_timeout_ms, uint, 0444);
MODULE_PARM_DESC(drain_timeout_ms, "Longest wait for a QP's flushed work requests before it is destroyed, per queue, in ms (0..60000, 0 = none (tests), default 5000)");

/*
 * Longest wait at close for the file's writes on healthy QPs before the
 * QPs carrying them are broken, which the job's other processes see as
 * failed writes.  A write may queue behind a full send queue of other
 * processes' batches: milliseconds on a NIC, seconds on a slow software
 * device (a debug kernel's rxe), which is why it can be raised.
 */
unsigned int rv_quiesce_ms = 10000;
module_param_named(quiesce_ms, rv_quiesce_ms, uint, 0444);
MODULE_PARM_DESC(quiesce_ms, "Longest wait at close for a process's writes before the QPs carrying them are broken, in ms (1000..600000, default 10000)");

bool rv_auth_insecure;
module_param_named(insecure_no_cluster_key, rv_auth_insecure, bool, 0444);
MODULE_PARM_DESC(insecure_no_cluster_key, "Connect without a cluster key, unauthenticated: unsafe on a fabric shared with other users (default N)");

/* 0600: no user may set the key or read even its fingerprint here. */
module_param_cb(cluster_key, &rv_auth_key_ops, NULL, 0600);
MODULE_PARM_DESC(cluster_key, "Secret key shared by the cluster's nodes, 32..128 hex digits; reads give its fingerprint");

bool rv_launcher_only;
module_param_named(launcher_jobs_only, rv_launcher_only, bool, 0644);
MODULE_PARM_DESC(launcher_jobs_only, "Refuse ATTACH for a uid and job key no launcher bound (default N)");

static int rv_check_params(void)
{
	if (!rv_max_jobs_per_uid)
		rv_max_jobs_per_uid = rv_cap_from_ram(SZ_8M);
	if (!rv_max_conns_per_uid)
		rv_max_conns_per_uid = rv_cap_from_ram(SZ_4M);

	if (!rv_default_num_conn ||
	    rv_default_num_conn > RV_MAX_CONN_PER_NODE) {
		pr_err("num_conn=%u out of range 1..%u\n", rv_default_num_conn,
		       RV_MAX_CONN_PER_NODE);
		return -EINVAL;
	}
	if (rv_default_slot_bits < RV_MIN_SLOT_BITS ||
	    rv_default_slot_bits > RV_MAX_SLOT_BITS) {
		pr_err("slot_bits=%u out of range %u..%u\n",
		       rv_default_slot_bits, RV_MIN_SLOT_BITS,
		       RV_MAX_SLOT_BITS);
		return -EINVAL;
	}
	if (!is_power_of_2(rv_default_ring_entries) ||
	    rv_default_ring_entries < RV_MIN_RING_ENTRIES ||
	    rv_default_ring_entries > RV_MAX_RING_ENTRIES) {
		pr_err("ring_entries=%u is not a power of two in %u..%u\n",
		       rv_default_ring_entries, RV_MIN_RING_ENTRIES,
		       RV_MAX_RING_ENTRIES);
		return -EINVAL;
	}
	if (rv_default_heartbeat_ms != RV_HEARTBEAT_OFF &&
	    (rv_default_heartbeat_ms < RV_MIN_HEARTBEAT_MS ||
	     rv_default_heartbeat_ms > RV_MAX_HEARTBEAT_MS)) {
		pr_err("heartbeat_ms=%u out of range %u..%u\n",
		       rv_default_heartbeat_ms, RV_MIN_HEARTBEAT_MS,
		       RV_MAX_HEARTBEAT_MS);
		return -EINVAL;
	}
	if (rv_slot_quarantine_ms > RV_SLOT_QUARANTINE_MAX_MS) {
		pr_err("slot_quarantine_ms=%u out of range 0..%u\n",
		       rv_slot_quarantine_ms, RV_SLOT_QUARANTINE_MAX_MS);
		return -EINVAL;
	}
	if (rv_quiesce_ms < RV_QUIESCE_MIN_MS ||
	    rv_quiesce_ms > RV_QUIESCE_MAX_MS) {
		pr_err("quiesce_ms=%u out of range %u..%u\n", rv_quiesce_ms,
		       RV_QUIESCE_MIN_MS, RV_QUIESCE_MAX_MS);
		return -EINVAL;
	}
	if (!rv_default_mr_cache_bytes) {
		pr_err("mr_cache_bytes must not be 0\n");
		return -EINVAL;
	}
	if (rv_default_mr_cache_bytes > rv_max_mr_cache_bytes) {
		pr_err("mr_cache_bytes=%lu above max_mr_cache_bytes=%llu\n",
		       rv_default_mr_cache_bytes, rv_max_mr_cache_bytes);
		return -EINVAL;
	}
	/*
	 * No opt-out: a port a user can bind lets any user of the fabric
	 * pose as rv (see "Security model" in rv(7)).
	 */
	if (!rv_cm_port || rv_cm_port >= RV_CM_PRIV_PORT_END) {
		pr_err("cm_port=%u is not a privileged port (1..%u): any user could take it\n",
		       rv_cm_port, RV_CM_PRIV_PORT_END - 1);
		return -EINVAL;
	}
	if (rv_conn_wqe_budget < RV_MAX_CONN_PER_NODE || rv_conn_wqe_budget > 16384) {
		pr_err("conn_wqe_budget=%u out of range 16..16384\n",
		       rv_conn_wqe_budget);
		return -EINVAL;
	}
	if (!rv_conn_timeout_ms ||
	    rv_conn_timeout_ms > RV_CONN_TIMEOUT_MAX_MS) {
		pr_err("conn_timeout_ms=%u out of range 1..%u\n",
		       rv_conn_timeout_ms, RV_CONN_TIMEOUT_MAX_MS);
		return -EINVAL;
	}

	if (rv_ack_timeout < 8 || rv_ack_timeout > 31) {
		pr_err("ack_timeout=%u out of range 8..31\n", rv_ack_timeout);
		return -EINVAL;
	}

	if (rv_drain_timeout_ms > RV_DRAIN_TIMEOUT_MAX_MS) {
		pr_err("drain_timeout_ms=%u out of range 0..%u\n",
		       rv_drain_timeout_ms, RV_DRAIN_TIMEOUT_MAX_MS);
		return -EINVAL;
	}
	return 0;
}

/*
 * A quarantine shorter than the time this node's QPs retransmit a write
 * lets late writes reach a slot's next process: say so (ack_timeout is
 * validated by rv_check_params()).
 */
static void rv_check_quarantine(void)
{
	u64 retry_ms = div_u64((u64)(RV_CM_RETRY_COUNT + 1) * 4096 << rv_ack_timeout,
			       NSEC_PER_MSEC);

	if (rv_slot_quarantine_ms && rv_slot_quarantine_ms < retry_ms)
		pr_notice("slot_quarantine_ms=%u is below the %llu ms a write is retried at ack_timeout=%u\n",
			  rv_slot_quarantine_ms, retry_ms, rv_ack_timeout);
}

/* Runs every QP's work: attempts, retries, timeouts, id destruction. */
struct workqueue_struct *rv_cm_wq;

static struct dentry *rv_debugfs;

DEFINE_SHOW_ATTRIBUTE(rv_cm_stats);

/*
 * Any user may open /dev/rv: jobs are isolated by uid and key, and pinned
 * memory is charged to the caller's RLIMIT_MEMLOCK.
 */
static struct miscdevice rv_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "rv",
	.fops = &rv_fops,
	.mode = 0666,
};

static int __init rv_init(void)
{
	int ret;

	ret = rv_check_params();
	if (ret)
		goto out_auth_exit;

	/* The listener's handler uses it: it exists first. */
	rv_cm_wq = alloc_workqueue("rv_cm", 0, 0);
	if (!rv_cm_wq) {
		ret = -ENOMEM;
		goto out_auth_exit;
	}

	ret = rv_conn_init();
	if (ret)
		goto out_destroy_wq;

	rv_debugfs = debugfs_create_dir("rv", NULL);
	debugfs_create_file("cm_stats", 0444, rv_debugfs, NULL,
			    &rv_cm_stats_fops);

	ret = rv_device_init();
	if (ret)
		goto out_conn_exit;

	rv_check_quarantine();

	ret = misc_register(&rv_misc);
	if (ret)
		goto out_device_exit;
	return 0;

out_device_exit:
	rv_device_exit();
out_conn_exit:
	rv_conn_exit();
	debugfs_remove_recursive(rv_debugfs);
out_destroy_wq:
	destroy_workqueue(rv_cm_wq);
out_auth_exit:
	/* The cluster_key parameter was parsed before this ran. */
	rv_auth_exit();
	return ret;
}

/* Runs only when no file is open: each open file pins the module. */
static void __exit rv_exit(void)
{
	misc_deregister(&rv_misc);
	rv_conn_exit();
	debugfs_remove_recursive(rv_debugfs);
	destroy_workqueue(rv_cm_wq);
	rv_device_exit();
	rv_job_exit();
	rv_uid_exit();
	rv_launcher_exit();
	rv_auth_exit();
}

module_init(rv_init);
module_exit(rv_exit);

MODULE_DESCRIPTION("Shared RC connections, MR cache and event ring for RDMA middleware");
MODULE_LICENSE("Dual BSD/GPL");
