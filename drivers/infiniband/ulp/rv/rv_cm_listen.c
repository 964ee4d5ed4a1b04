// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv's rdma_cm listeners: one per network namespace that has jobs, and
 * init_net's from load to unload.
 */
#include "rv.h"
#include "rv_cm.h"
#include "rv_conn.h"
#include "rv_wire.h"

#include <linux/in.h>
#include <linux/in6.h>
#include <linux/slab.h>
#include <net/net_namespace.h>

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
 * rv_file.lock (see rv.h); destroying a listener waits for its
 * request handlers, which never take it.
 */
static DEFINE_MUTEX(rv_cm_listen_lock);
static LIST_HEAD(rv_cm_listeners);

/* init_net's listener, held from rv_cm_init() to rv_cm_exit(). */
static struct rv_cm_listener *rv_cm_init_listener;

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

int rv_cm_init(void)
{
	rv_cm_init_listener = rv_cm_listener_get(&init_net);
	if (IS_ERR(rv_cm_init_listener))
		return PTR_ERR(rv_cm_init_listener);
	return 0;
}

/*
 * Module unload: no file is open, so no job, no connection and no
 * listener but init_net's is left.
 */
void rv_cm_exit(void)
{
	rv_cm_listener_put(rv_cm_init_listener);
	WARN_ON(!list_empty(&rv_cm_listeners));
}
