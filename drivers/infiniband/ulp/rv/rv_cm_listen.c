// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv's rdma_cm listener, the connection module parameters, and setup and
 * teardown of the connection machinery (work queue, debugfs).
 */
#include "rv.h"
#include "rv_conn.h"

#include <linux/debugfs.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/module.h>
#include <linux/seq_file.h>

unsigned int rv_cm_port = 18550;
module_param_named(cm_port, rv_cm_port, uint, 0444);
MODULE_PARM_DESC(cm_port, "Port of rv's rdma_cm listener and default remote port (1..65535, default 18550)");

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

/* Protects rv_cm_listen_ids; held only to create or destroy them. */
static DEFINE_MUTEX(rv_cm_listen_lock);
static struct rdma_cm_id *rv_cm_listen_ids[2];

/* Runs every QP's work: attempts, retries, timeouts, id destruction. */
struct workqueue_struct *rv_cm_wq;

static struct dentry *rv_debugfs;

#define RV_CM_BACKLOG	128

static struct rdma_cm_id *rv_cm_listen_one(sa_family_t family)
{
	struct sockaddr_storage ss = { .ss_family = family };
	struct rdma_cm_id *id;
	int ret;

	if (family == AF_INET)
		((struct sockaddr_in *)&ss)->sin_port = htons(rv_cm_port);
	else
		((struct sockaddr_in6 *)&ss)->sin6_port = htons(rv_cm_port);

	id = rdma_create_id(&init_net, rv_cm_handler, NULL, RDMA_PS_TCP,
			    IB_QPT_RC);
	if (IS_ERR(id))
		return id;
	/* Lets the IPv4 and the IPv6 wildcard share the port. */
	ret = rdma_set_afonly(id, 1);
	if (ret)
		goto out_destroy_id;
	ret = rdma_bind_addr(id, (struct sockaddr *)&ss);
	if (ret)
		goto out_destroy_id;
	ret = rdma_listen(id, RV_CM_BACKLOG);
	if (ret)
		goto out_destroy_id;
	return id;

out_destroy_id:
	rdma_destroy_id(id);
	return ERR_PTR(ret);
}

/**
 * rv_cm_listen - make sure rv listens on cm_port
 *
 * One wildcard listener per address family serves every device and job;
 * created by the first CONN_CREATE, destroyed at module unload.  A failed
 * IPv6 listener (IPv6 disabled) only loses IPv6.
 *
 * Return: 0, -ENOMEM, or -EADDRINUSE when the IPv4 listener cannot be
 * set up on cm_port.
 */
int rv_cm_listen(void)
{
	struct rdma_cm_id *id;
	int ret = 0;

	mutex_lock(&rv_cm_listen_lock);
	if (rv_cm_listen_ids[0])
		goto out_unlock;
	id = rv_cm_listen_one(AF_INET);
	if (IS_ERR(id)) {
		ret = PTR_ERR(id);
		pr_info("cannot listen on port %u: %d\n", rv_cm_port, ret);
		/* The uAPI promises EADDRINUSE for "cannot bind cm_port". */
		if (ret != -ENOMEM)
			ret = -EADDRINUSE;
		goto out_unlock;
	}
	rv_cm_listen_ids[0] = id;
	id = rv_cm_listen_one(AF_INET6);
	if (IS_ERR(id))
		pr_info("no IPv6 listener on port %u: %ld\n", rv_cm_port,
			PTR_ERR(id));
	else
		rv_cm_listen_ids[1] = id;
out_unlock:
	mutex_unlock(&rv_cm_listen_lock);
	return ret;
}

DEFINE_SHOW_ATTRIBUTE(rv_cm_stats);

int rv_cm_init(void)
{
	if (!rv_cm_port || rv_cm_port > 65535) {
		pr_err("cm_port=%u out of range 1..65535\n", rv_cm_port);
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

	rv_cm_wq = alloc_workqueue("rv_cm", 0, 0);
	if (!rv_cm_wq)
		return -ENOMEM;
	rv_debugfs = debugfs_create_dir("rv", NULL);
	debugfs_create_file("cm_stats", 0444, rv_debugfs, NULL,
			    &rv_cm_stats_fops);
	return 0;
}

/* Module unload: no file is open, so no connection is left. */
void rv_cm_exit(void)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(rv_cm_listen_ids); i++) {
		if (rv_cm_listen_ids[i])
			rdma_destroy_id(rv_cm_listen_ids[i]);
		rv_cm_listen_ids[i] = NULL;
	}
	debugfs_remove_recursive(rv_debugfs);
	destroy_workqueue(rv_cm_wq);
}
