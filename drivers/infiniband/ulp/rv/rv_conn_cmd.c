// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The CONN_* commands: validate the user's arguments, map per-file handles
 * to connections (rv_conn.c) and report their state.
 */
#include "rv.h"
#include "rv_cm.h"
#include "rv_conn.h"
#include "rv_wire.h"
#include "rv_write.h"

#include <linux/inet.h>
#include <net/ipv6.h>

/*
 * Validate CONN_CREATE's address; the port defaults to cm_port.  A port a
 * user can listen on (>= RV_CM_PRIV_PORT_END) is refused: rv listens only
 * on a privileged one, so whoever answers there is not rv.
 */
static int rv_conn_parse_addr(const struct rv_conn_create *cmd,
			      struct sockaddr_storage *ss)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	sa_family_t family;

	if (cmd->addr_len < sizeof(family) ||
	    cmd->addr_len > RV_CONN_ADDR_MAX ||
	    memchr_inv(cmd->addr + cmd->addr_len, 0,
		       RV_CONN_ADDR_MAX - cmd->addr_len))
		return -EINVAL;
	memcpy(&family, cmd->addr, sizeof(family));

	memset(ss, 0, sizeof(*ss));
	switch (family) {
	case AF_INET:
		if (cmd->addr_len != sizeof(*sin))
			return -EINVAL;
		memcpy(sin, cmd->addr, sizeof(*sin));
		if (ipv4_is_zeronet(sin->sin_addr.s_addr) ||
		    ipv4_is_multicast(sin->sin_addr.s_addr) ||
		    ipv4_is_lbcast(sin->sin_addr.s_addr))
			return -EINVAL;
		if (!sin->sin_port)
			sin->sin_port = htons(rv_cm_port);
		if (ntohs(sin->sin_port) >= RV_CM_PRIV_PORT_END)
			return -EINVAL;
		return 0;
	case AF_INET6:
		if (cmd->addr_len != sizeof(*sin6))
			return -EINVAL;
		memcpy(sin6, cmd->addr, sizeof(*sin6));
		if (ipv6_addr_any(&sin6->sin6_addr) ||
		    ipv6_addr_is_multicast(&sin6->sin6_addr))
			return -EINVAL;
		if (!sin6->sin6_port)
			sin6->sin6_port = htons(rv_cm_port);
		if (ntohs(sin6->sin6_port) >= RV_CM_PRIV_PORT_END)
			return -EINVAL;
		return 0;
	default:
		return -EAFNOSUPPORT;
	}
}

/* Look up a handle of @rf; rf->lock held. */
/*
 * Take rf->lock and find this file's connection @handle, for the attaching
 * process.  On error the lock is not held.
 */
static struct rv_conn *rv_conn_lock_lookup(struct rv_file *rf, u32 handle)
{
	struct rv_conn *conn;
	int ret;

	mutex_lock(&rf->lock);
	ret = rv_file_check_owner(rf);
	if (ret)
		goto out_unlock;
	conn = handle ? xa_load(&rf->conns, handle) : NULL;
	if (conn)
		return conn;
	ret = -ENOENT;
out_unlock:
	mutex_unlock(&rf->lock);
	return ERR_PTR(ret);
}

int rv_cmd_conn_create(struct rv_file *rf, const struct rv_ucmd *ucmd,
		       void *arg)
{
	struct rv_conn_create *cmd = arg;
	struct sockaddr_storage remote;
	struct rv_conn *conn;
	u32 handle;
	int ret;

	if (cmd->flags)
		return -EINVAL;
	ret = rv_conn_parse_addr(cmd, &remote);
	if (ret)
		return ret;
	/* No peer could prove itself: say so now, not at the timeout. */
	if (!rv_auth_have_key() && !rv_auth_insecure)
		return -ENOKEY;

	mutex_lock(&rf->lock);
	ret = rv_file_check_owner(rf);
	if (ret)
		goto out_unlock;

	conn = rv_conn_get(rf->job, &remote);
	if (IS_ERR(conn)) {
		ret = PTR_ERR(conn);
		goto out_unlock;
	}
	ret = xa_alloc(&rf->conns, &handle, conn,
		       XA_LIMIT(1, RV_CONN_MAX_HANDLES), GFP_KERNEL);
	if (ret) {
		if (ret == -EBUSY)
			ret = -ENOSPC;
		goto out_put;
	}

	cmd->handle = handle;
	cmd->conn_id = conn->id;
	cmd->num_conn = conn->num_conn;
	cmd->send_depth = conn->depth;
	cmd->recv_depth = conn->depth;
	/* A caller that cannot learn its handle must not keep it. */
	ret = rv_ucmd_respond(ucmd, cmd, sizeof(*cmd));
	if (ret) {
		xa_erase(&rf->conns, handle);
		goto out_put;
	}
	mutex_unlock(&rf->lock);
	return 0;

out_put:
	rv_conn_put_handle(conn);
out_unlock:
	mutex_unlock(&rf->lock);
	return ret;
}

int rv_cmd_conn_connect(struct rv_file *rf, const struct rv_ucmd *ucmd,
			void *arg)
{
	struct rv_conn_connect *cmd = arg;
	struct rv_conn *conn;
	u32 timeout_ms, i;
	int ret = 0;

	if (cmd->flags || cmd->timeout_ms > RV_CONN_TIMEOUT_MAX_MS)
		return -EINVAL;
	timeout_ms = cmd->timeout_ms ?: rv_conn_timeout_ms;

	conn = rv_conn_lock_lookup(rf, cmd->handle);
	if (IS_ERR(conn))
		return PTR_ERR(conn);

	mutex_lock(&conn->lock);
	if (conn->dead) {
		ret = -ENODEV;
		goto out_unlock_conn;
	}
	/* Idempotent while establishing or established. */
	if (conn->started && conn->state != RV_CONN_STATE_ERROR)
		goto out_unlock_conn;

	conn->started = true;
	conn->timeout = msecs_to_jiffies(timeout_ms);
	conn->deadline = jiffies + conn->timeout;
	for (i = 0; i < conn->num_conn; i++) {
		struct rv_conn_qp *qp = &conn->qps[i];

		if (conn->client) {
			/* The QP's work starts the attempt. */
			if (qp->state == RV_QP_IDLE ||
			    qp->state == RV_QP_FAILED) {
				qp->state = RV_QP_RETRY;
				qp->reason = RV_CONN_REASON_NONE;
			}
			rv_cm_kick(qp, 0);
		} else {
			/* The work times the server side out. */
			if (qp->state == RV_QP_FAILED) {
				qp->state = RV_QP_IDLE;
				qp->reason = RV_CONN_REASON_NONE;
			}
			rv_cm_kick(qp, conn->timeout);
		}
	}
	rv_conn_update_state(conn);

out_unlock_conn:
	mutex_unlock(&conn->lock);
	mutex_unlock(&rf->lock);
	if (!ret)
		ret = rv_ucmd_respond(ucmd, cmd, sizeof(*cmd));
	return ret;
}

int rv_cmd_conn_query(struct rv_file *rf, const struct rv_ucmd *ucmd,
		      void *arg)
{
	struct rv_conn_query *cmd = arg;
	struct rv_conn *conn;
	long left;
	int ret;

	if (cmd->flags & ~RV_CONN_QUERY_F_WAIT)
		return -EINVAL;
	if (cmd->timeout_ms > RV_CONN_TIMEOUT_MAX_MS ||
	    (cmd->timeout_ms && !(cmd->flags & RV_CONN_QUERY_F_WAIT)))
		return -EINVAL;

	conn = rv_conn_lock_lookup(rf, cmd->handle);
	if (IS_ERR(conn))
		return PTR_ERR(conn);
	/* Keeps the connection while waiting without rf->lock. */
	kref_get(&conn->kref);
	mutex_unlock(&rf->lock);

	if (cmd->timeout_ms) {
		unsigned long t = msecs_to_jiffies(cmd->timeout_ms);

		left = wait_event_interruptible_timeout(conn->wait,
							rv_conn_settled(conn),
							t);
		if (left < 0) {
			ret = -EINTR;
			goto out_put;
		}
	}

	mutex_lock(&conn->lock);
	cmd->state = conn->state;
	cmd->reason = conn->reason;
	cmd->num_conn = conn->num_conn;
	cmd->connected = conn->connected;
	cmd->generation = conn->generation;
	cmd->conn_id = conn->id;
	cmd->role = conn->client ? RV_CONN_ROLE_CLIENT : RV_CONN_ROLE_SERVER;
	cmd->handles = conn->handles;
	cmd->rejects = conn->rejects;
	cmd->attempts = conn->attempts;
	mutex_unlock(&conn->lock);
	cmd->max_segment = conn->max_segment;
	rv_conn_read_counters(cmd, conn);
	ret = rv_ucmd_respond(ucmd, cmd, sizeof(*cmd));

out_put:
	rv_conn_put(conn);
	return ret;
}

int rv_cmd_conn_destroy(struct rv_file *rf, const struct rv_ucmd *ucmd,
			void *arg)
{
	struct rv_conn_destroy *cmd = arg;
	struct rv_conn *conn;
	int ret;

	if (cmd->flags)
		return -EINVAL;

	mutex_lock(&rf->lock);
	ret = rv_file_check_owner(rf);
	if (ret)
		goto out_unlock;
	conn = cmd->handle ? xa_erase(&rf->conns, cmd->handle) : NULL;
	if (!conn) {
		ret = -ENOENT;
		goto out_unlock;
	}
	cmd->handles = rv_conn_put_handle(conn);
	mutex_unlock(&rf->lock);
	/* The handle is gone either way; EFAULT only says the answer is lost. */
	return rv_ucmd_respond(ucmd, cmd, sizeof(*cmd));

out_unlock:
	mutex_unlock(&rf->lock);
	return ret;
}
