// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv's rdma_cm listeners, the connection module parameters, and setup and
 * teardown of the connection machinery (work queue, debugfs).
 */
#include "rv.h"
#include "rv_cm.h"
#include "rv_conn.h"
#include "rv_wire.h"

#include <linux/debugfs.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/module.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <net/net_namespace.h>

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

/**
 * struct rv_cm_listener - rv's rdma_cm listeners in one network namespace
 * @list: in rv_cm_listeners
 * @net: the namespace (a reference)
 * @users: the jobs of @net, plus one for init_net's from load to unload
 * @ids: the IPv4 and (if IPv6 works) IPv6 wildcard listeners on cm_port
 *
 * rdma_cm hands a request to the listener of the namespace of the netdev
 * it arrived on, so each namespace that has jobs needs its own; one that
 * has none needs none (it has no connection to accept).  Listening in
 * every namespace (register_pernet_subsys()) would be no simpler: a
 * cm_id holds a reference on its namespace, which would never exit.
 * @list and @users are protected by rv_cm_listen_lock.
 */
struct rv_cm_listener {
	struct list_head list;
	struct net *net;
	unsigned int users;
	struct rdma_cm_id *ids[2];
};

/*
 * Protects rv_cm_listeners and every listener's users count, and is held
 * across a listener's creation and destruction: a namespace never has two
 * (the second could not bind cm_port).  Taken with no rv lock held but
 * rv_file.lock (see rv_conn.h); destroying a listener waits for its
 * request handlers, which never take it.
 */
static DEFINE_MUTEX(rv_cm_listen_lock);
static LIST_HEAD(rv_cm_listeners);

/* init_net's listener, held from rv_cm_init() to rv_cm_exit(). */
static struct rv_cm_listener *rv_cm_init_listener;

/* Runs every QP's work: attempts, retries, timeouts, id destruction. */
struct workqueue_struct *rv_cm_wq;

static struct dentry *rv_debugfs;

#define RV_CM_BACKLOG	128

static struct rdma_cm_id *rv_cm_listen_one(struct net *net,
					   sa_family_t family)
{
	struct sockaddr_storage ss = { .ss_family = family };
	struct rdma_cm_id *id;
	int ret;

	if (family == AF_INET)
		((struct sockaddr_in *)&ss)->sin_port = htons(rv_cm_port);
	else
		((struct sockaddr_in6 *)&ss)->sin6_port = htons(rv_cm_port);

	id = rdma_create_id(net, rv_cm_handler, NULL, RDMA_PS_TCP, IB_QPT_RC);
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

/*
 * Listen on cm_port in @l's namespace, so that no user can take the port
 * first and receive the requests meant for rv.  One wildcard listener per
 * address family serves every device and job, present and future:
 * rdma_cm keeps wildcard listeners on its listen_any_list and starts
 * listening on each device it adds later (cma_add_one()), and device
 * removal takes only that device's part.  A failed IPv6 listener (IPv6
 * disabled) only loses IPv6.
 */
static int rv_cm_listen(struct rv_cm_listener *l)
{
	struct rdma_cm_id *id;

	id = rv_cm_listen_one(l->net, AF_INET);
	if (IS_ERR(id)) {
		pr_err("cannot listen on cm_port %u: %ld\n", rv_cm_port,
		       PTR_ERR(id));
		return PTR_ERR(id);
	}
	l->ids[0] = id;
	id = rv_cm_listen_one(l->net, AF_INET6);
	if (IS_ERR(id))
		pr_info("no IPv6 listener on port %u: %ld\n", rv_cm_port,
			PTR_ERR(id));
	else
		l->ids[1] = id;
	return 0;
}

struct rv_cm_listen_work {
	struct work_struct work;
	struct rv_cm_listener *l;
	int ret;
};

static void rv_cm_listen_work_fn(struct work_struct *work)
{
	struct rv_cm_listen_work *lw =
		container_of(work, struct rv_cm_listen_work, work);

	lw->ret = rv_cm_listen(lw->l);
}

static void rv_cm_unlisten(struct rv_cm_listener *l)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(l->ids); i++) {
		if (l->ids[i])
			rdma_destroy_id(l->ids[i]);
		l->ids[i] = NULL;
	}
}

/**
 * rv_cm_listener_get - a reference on the listeners of @net
 * @net: the namespace of the job that will hold the reference
 *
 * Creates them if @net has none.  Binding cm_port, a privileged port,
 * needs CAP_NET_BIND_SERVICE of current (capable(), 6.1 and 6.12): so
 * rv_cm_wq's worker, with full capabilities, binds, never the process
 * that attaches.  Caller holds no rv lock but
 * rv_file.lock.
 *
 * Return: the listener, or ERR_PTR(-EADDRINUSE) if cm_port is taken in
 * @net, or another rdma_cm error (-ENOMEM).
 */
struct rv_cm_listener *rv_cm_listener_get(struct net *net)
{
	struct rv_cm_listen_work lw;
	struct rv_cm_listener *l;

	mutex_lock(&rv_cm_listen_lock);
	list_for_each_entry(l, &rv_cm_listeners, list) {
		if (net_eq(l->net, net)) {
			l->users++;
			goto out_unlock;
		}
	}
	l = kzalloc(sizeof(*l), GFP_KERNEL);
	if (!l) {
		l = ERR_PTR(-ENOMEM);
		goto out_unlock;
	}
	l->net = get_net(net);
	l->users = 1;
	lw.l = l;
	INIT_WORK_ONSTACK(&lw.work, rv_cm_listen_work_fn);
	queue_work(rv_cm_wq, &lw.work);
	/* Bounded: binding and listening do not wait for the network. */
	flush_work(&lw.work);
	destroy_work_on_stack(&lw.work);
	if (lw.ret) {
		put_net(l->net);
		kfree(l);
		l = ERR_PTR(lw.ret);
		goto out_unlock;
	}
	list_add(&l->list, &rv_cm_listeners);
out_unlock:
	mutex_unlock(&rv_cm_listen_lock);
	return l;
}

/* The namespaces rv listens in, for cm_stats. */
unsigned int rv_cm_listen_netns(void)
{
	struct rv_cm_listener *l;
	unsigned int n = 0;

	mutex_lock(&rv_cm_listen_lock);
	list_for_each_entry(l, &rv_cm_listeners, list)
		n++;
	mutex_unlock(&rv_cm_listen_lock);
	return n;
}

/**
 * rv_cm_listener_put - drop a reference from rv_cm_listener_get()
 * @l: the listener; the last reference stops listening in its namespace
 *
 * Waits for its running request handlers: the caller holds no rv lock but
 * rv_file.lock.
 */
void rv_cm_listener_put(struct rv_cm_listener *l)
{
	mutex_lock(&rv_cm_listen_lock);
	if (!--l->users) {
		list_del(&l->list);
		rv_cm_unlisten(l);
		put_net(l->net);
		kfree(l);
	}
	mutex_unlock(&rv_cm_listen_lock);
}

DEFINE_SHOW_ATTRIBUTE(rv_cm_stats);

int rv_cm_init(void)
{
	int ret;

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

	/* The listener's handler uses it: it exists first. */
	rv_cm_wq = alloc_workqueue("rv_cm", 0, 0);
	if (!rv_cm_wq)
		return -ENOMEM;
	rv_cm_init_listener = rv_cm_listener_get(&init_net);
	if (IS_ERR(rv_cm_init_listener)) {
		ret = PTR_ERR(rv_cm_init_listener);
		goto out_destroy_wq;
	}
	rv_debugfs = debugfs_create_dir("rv", NULL);
	debugfs_create_file("cm_stats", 0444, rv_debugfs, NULL,
			    &rv_cm_stats_fops);
	return 0;

out_destroy_wq:
	destroy_workqueue(rv_cm_wq);
	return ret;
}

/*
 * Module unload: no file is open, so no job, no connection and no
 * listener but init_net's is left.
 */
void rv_cm_exit(void)
{
	rv_cm_listener_put(rv_cm_init_listener);
	WARN_ON(!list_empty(&rv_cm_listeners));
	debugfs_remove_recursive(rv_debugfs);
	destroy_workqueue(rv_cm_wq);
}
