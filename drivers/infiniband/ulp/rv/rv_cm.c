// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Connection management with rdma_cm: validation of incoming requests,
 * the client's attempts and retries, and the counters shown in
 * /sys/kernel/debug/rv/cm_stats.  The listener is in rv_cm_listen.c, the
 * QPs' creation, destruction and replacement in rv_qp.c, the module
 * parameters, workqueue and debugfs in rv_main.c.
 *
 * For a node pair the node with the lower address is the client of every
 * QP of the connection: both sides know both addresses, so they agree
 * without talking.  The client's QP work creates an rdma_cm id, resolves
 * address and route, creates the QP, posts the receives and sends a
 * request carrying struct rv_cm_req_pdata; the server's listener accepts
 * it only from a privileged source port (rv_cm_src_privileged()), whose
 * path leads back to the address it claims (rv_cm_path_is_source()), with
 * a tag under the cluster key (rv_auth.h), and only for an existing
 * connection of the same job (uid, key, device, port) to the requesting
 * address whose QP of that index is free.  A QP carries nothing until
 * both sides proved the key on it (rv_cm_client_established(),
 * rv_cm_proof_done()).
 */
#include "rv.h"
#include "rv_cm.h"
#include "rv_conn.h"
#include "rv_qp.h"
#include "rv_wire.h"
#include "rv_write.h"
#include "rv_conn_trace.h"

#include <crypto/algapi.h>
#include <linux/netdevice.h>
#include <linux/random.h>
#include <linux/seq_file.h>
#include <linux/timekeeping.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_cm.h>

/* Address and route resolution time limit of one attempt. */
#define RV_CM_RESOLVE_MS	2000
/*
 * A client attempt with no answer after this long is abandoned and
 * retried: a request sent while the link was down can stay lost for the
 * CM's whole MAD retry budget (a minute), long after the link is back.
 */
#define RV_CM_ATTEMPT_MS	5000
/* Pause between a client's failed attempt and the next. */
#define RV_CM_RETRY_MS		250
/*
 * A client's source ports: privileged (the server refuses others), so the
 * bind needs CAP_NET_BIND_SERVICE and runs in rv_cm_wq's kworkers, never
 * in a user's ioctl.  Every rv id binds with reuseaddr, which rdma_cm's
 * cma_check_port() lets share a port with any other reuseaddr id, so all
 * of rv's QPs, to any number of peers, fit in these ports; they are
 * spread over the range only to keep each port's bind list short (binding
 * walks it).  A port someone holds without reuseaddr (EADDRINUSE, or
 * EADDRNOTAVAIL for a wildcard holder such as rv's own listener) is
 * skipped: the next one down is tried, RV_CM_SRC_PORT_TRIES at most.
 * EADDRNOTAVAIL also means the local address is gone (as for a failed
 * resolution, the attempt is then retried).
 */
#define RV_CM_SRC_PORT_MIN	960
#define RV_CM_SRC_PORT_TRIES	8

/* Incoming requests, for /sys/kernel/debug/rv/cm_stats. */
static struct {
	atomic64_t requests;
	atomic64_t accepted;
	atomic64_t rejected;
	atomic64_t rej[RV_CM_REJ_MAX + 1];
	atomic64_t auth_bad_reply;
	atomic64_t auth_bad_proof;
} rv_cm_stats;

static const char * const rv_cm_rej_names[] = {
	[RV_CM_REJ_NO_CONN] = "no_conn",
	[RV_CM_REJ_BUSY] = "busy",
	[RV_CM_REJ_NO_RESOURCES] = "no_resources",
	[RV_CM_REJ_BAD_REQUEST] = "bad_request",
	[RV_CM_REJ_MISMATCH] = "mismatch",
	[RV_CM_REJ_UNPRIVILEGED] = "unprivileged",
	[RV_CM_REJ_AUTH] = "auth",
	[RV_CM_REJ_REPLAY] = "replay",
	[RV_CM_REJ_PATH] = "path",
};

/* Queue the QP's work after @delay jiffies; caller holds conn->lock. */
void rv_cm_kick(struct rv_conn_qp *qp, unsigned long delay)
{
	lockdep_assert_held(&qp->conn->lock);
	if (!qp->conn->dead)
		mod_delayed_work(rv_cm_wq, &qp->work, delay);
}

/*
 * Server: the client's proof, the QP's first message, arrived (softirq).
 * Only a SEND of exactly the expected proof makes the QP usable: anything
 * else (a write, another length, another proof) fails it, and the
 * receives behind it are not routed (rv_ibqp.authed stays false).
 */
static void rv_cm_proof_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rv_ibqp *iq = container_of(wc->wr_cqe, struct rv_ibqp,
					  proof_cqe);
	struct rv_conn_qp *qp = iq->slot;

	WRITE_ONCE(qp->last_activity, jiffies);
	if (wc->status != IB_WC_SUCCESS) {
		if (wc->status == IB_WC_WR_FLUSH_ERR)
			rv_qp_flushed(qp);
		else
			rv_qp_fault(qp, iq->ibqp,
				    ib_wc_status_msg(wc->status));
		return;
	}
	ib_dma_sync_single_for_cpu(cq->device, iq->proof_dma,
				   RV_AUTH_TAG_LEN, DMA_BIDIRECTIONAL);
	if (wc->opcode != IB_WC_RECV || (wc->wc_flags & IB_WC_WITH_IMM) ||
	    wc->byte_len != RV_AUTH_TAG_LEN ||
	    crypto_memneq(iq->proof, iq->expect, RV_AUTH_TAG_LEN)) {
		atomic64_inc(&rv_cm_stats.auth_bad_proof);
		rv_qp_fault(qp, iq->ibqp, "no valid proof of the cluster key");
		return;
	}
	WRITE_ONCE(iq->authed, true);
	queue_work(rv_cm_wq, &qp->auth_work);
}

/* Server: post the proof's receive, before any other receive. */
int rv_cm_post_proof_recv(struct rv_ibqp *iq, struct ib_pd *pd)
{
	struct ib_sge sge = {
		.addr = iq->proof_dma,
		.length = RV_AUTH_TAG_LEN,
		.lkey = pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_cqe = &iq->proof_cqe,
		.sg_list = &sge,
		.num_sge = 1,
	};

	iq->proof_cqe.done = rv_cm_proof_done;
	return ib_post_recv(iq->ibqp, &wr, NULL);
}

/*
 * Client: send the proof, the QP's first work request, in the send queue
 * entry of the heartbeat (it completes like one; none is in flight on a
 * new QP and none is posted before the QP is CONNECTED).  Caller holds
 * conn->lock.
 */
static int rv_cm_send_proof(struct rv_conn_qp *qp, struct rv_ibqp *iq)
{
	struct ib_sge sge = {
		.addr = iq->proof_dma,
		.length = RV_AUTH_TAG_LEN,
		.lkey = qp->conn->job->pd->local_dma_lkey,
	};
	struct ib_send_wr wr = {
		.wr_cqe = &qp->hb_cqe,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IB_WR_SEND,
		.send_flags = IB_SEND_SIGNALED,
	};
	int ret;

	ib_dma_sync_single_for_device(iq->cq->device, iq->proof_dma,
				      RV_AUTH_TAG_LEN, DMA_BIDIRECTIONAL);
	spin_lock_bh(&qp->sq_lock);
	qp->hb_inflight = true;
	qp->hb_iq = iq;
	spin_unlock_bh(&qp->sq_lock);
	ret = ib_post_send(iq->ibqp, &wr, NULL);
	if (ret) {
		spin_lock_bh(&qp->sq_lock);
		qp->hb_inflight = false;
		spin_unlock_bh(&qp->sq_lock);
	}
	return ret;
}

/*
 * What a handshake's tags bind (struct rv_auth_msg), from its request and
 * the two ends' addresses; the server's nonce and QP number come later.
 */
static void rv_cm_hs_from_req(struct rv_auth_msg *m,
			      const struct rv_cm_req_pdata *req,
			      const struct sockaddr_storage *client,
			      const struct sockaddr_storage *server,
			      u32 client_qpn)
{
	memset(m, 0, sizeof(*m));
	m->version = RV_CM_VERSION;
	m->flags = req->flags;
	m->qp_index = req->qp_index;
	m->num_conn = req->num_conn;
	m->key_len = req->key_len;
	m->uid = req->uid;
	memcpy(m->key, req->key, sizeof(m->key));
	rv_auth_addr(m->client_addr, client);
	rv_auth_addr(m->server_addr, server);
	m->time_ns = req->time_ns;
	memcpy(m->nonce_c, req->nonce, sizeof(m->nonce_c));
	m->client_qpn = cpu_to_be32(client_qpn);
}

static bool rv_cm_reason_fatal(u32 reason)
{
	return reason == RV_CONN_REASON_BAD_REQUEST ||
	       reason == RV_CONN_REASON_MISMATCH ||
	       reason == RV_CONN_REASON_BAD_REPLY;
}

/*
 * The QP's current id failed (or lost its connection): park it for the
 * work to destroy and decide what comes next.  Caller holds conn->lock and
 * @id is qp->cm_id.
 */
void rv_cm_fail(struct rv_conn_qp *qp, struct rdma_cm_id *id, u32 reason)
{
	struct rv_conn *conn = qp->conn;
	unsigned long delay = 0, now = jiffies;

	/* At most one parked id: a new one needs the work to have run. */
	qp->cm_id = NULL;
	qp->dead_id = id;
	qp->reason = reason;
	if (qp->state == RV_QP_CONNECTED && conn->started)
		conn->deadline = now + conn->timeout;	/* time to reconnect */

	if (!conn->client) {
		qp->state = RV_QP_IDLE;		/* wait for a new request */
	} else if (rv_cm_reason_fatal(reason)) {
		qp->state = RV_QP_FAILED;
	} else {
		qp->state = RV_QP_RETRY;
		if (time_before(now, conn->deadline))
			delay = min(msecs_to_jiffies(RV_CM_RETRY_MS),
				    conn->deadline - now);
	}
	rv_cm_kick(qp, delay);
	rv_conn_update_state(conn);
}

/*
 * Send the request of @id, whose QP exists; with a cluster key, tagged
 * (the handshake's inputs are kept in qp->hs for the accept's check).
 * Caller holds conn->lock; qp->auth was decided when the QP was created.
 */
static int rv_cm_send_request(struct rv_conn_qp *qp, struct rdma_cm_id *id)
{
	struct rv_conn *conn = qp->conn;
	const struct rv_job_params *p = &conn->job->params;
	struct rv_cm_req_pdata req = {
		.magic = cpu_to_be32(RV_CM_MAGIC),
		.version = cpu_to_be16(RV_CM_VERSION),
		.qp_index = cpu_to_be16(qp->index),
		.num_conn = cpu_to_be16(conn->num_conn),
		.key_len = p->key_len,
		.flags = (qp->auth ? RV_CM_F_AUTH : 0) |
			 (p->launcher_id ? RV_CM_F_LAUNCHER : 0),
		.uid = cpu_to_be32(from_kuid(&init_user_ns, p->uid)),
		.time_ns = cpu_to_be64(ktime_get_real_ns()),
	};
	u8 tag[RV_AUTH_TAG_LEN];
	int ret;

	struct rdma_conn_param param = {
		.private_data = &req,
		.private_data_len = sizeof(req),
		.retry_count = RV_CM_RETRY_COUNT,
		.rnr_retry_count = 7,
	};

	memcpy(req.key, p->key, sizeof(req.key));
	get_random_bytes(req.nonce, sizeof(req.nonce));
	rv_cm_hs_from_req(&qp->hs, &req, &conn->local, &conn->remote,
			  id->qp->qp_num);
	qp->hs.launcher_id = cpu_to_be64(p->launcher_id);
	if (qp->auth) {
		ret = rv_auth_tag(RV_AUTH_LABEL_REQ, &qp->hs, tag);
		if (ret)
			return ret;
		memcpy(req.tag, tag, sizeof(req.tag));
	}
	rdma_set_ack_timeout(id, rv_ack_timeout);
	return rdma_connect_locked(id, &param);
}

/* The reason a client reports for a reject. */
static u32 rv_cm_rej_reason(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	const struct rv_cm_rej_pdata *rej;
	u8 len = 0;

	rej = rdma_consumer_reject_data(id, ev, &len);
	if (!rej)
		return ev->status == IB_CM_REJ_INVALID_SERVICE_ID ?
		       RV_CONN_REASON_NO_LISTENER : RV_CONN_REASON_UNREACHABLE;
	/*
	 * Not rv's reject: ib_cm sends a consumer-defined REJ without data
	 * of its own when a request dies in rdma_cm's or ib_cm's hands on
	 * the remote (seen while both ends replaced QPs in quick
	 * succession).  Not fatal: try again.
	 */
	if (len < sizeof(*rej) || rej->magic != cpu_to_be32(RV_CM_MAGIC))
		return RV_CONN_REASON_UNREACHABLE;
	switch (be16_to_cpu(rej->reason)) {
	case RV_CM_REJ_NO_CONN:
		return RV_CONN_REASON_NO_CONN;
	case RV_CM_REJ_BUSY:
		return RV_CONN_REASON_BUSY;
	case RV_CM_REJ_NO_RESOURCES:
		return RV_CONN_REASON_NO_RESOURCES;
	case RV_CM_REJ_BAD_REQUEST:
	/* Only a peer whose port is not privileged: not rv. */
	case RV_CM_REJ_UNPRIVILEGED:
		return RV_CONN_REASON_BAD_REQUEST;
	case RV_CM_REJ_MISMATCH:
		return RV_CONN_REASON_MISMATCH;
	case RV_CM_REJ_AUTH:
	case RV_CM_REJ_REPLAY:
	case RV_CM_REJ_PATH:
		return RV_CONN_REASON_AUTH;
	default:
		return RV_CONN_REASON_BAD_REPLY;
	}
}

/*
 * Client: the accept arrived (ESTABLISHED).  Check it, then, when
 * authenticated, its tag, and send the QP's proof: only then may the QP
 * carry anything.  Return: 0 or the RV_CONN_REASON_* to fail with.
 * Caller holds conn->lock.
 */
static u32 rv_cm_client_established(struct rv_conn_qp *qp,
				    struct rdma_cm_id *id,
				    const struct rdma_cm_event *ev)
{
	const struct rv_cm_rep_pdata *rep = ev->param.conn.private_data;
	struct rv_ibqp *iq = id->qp->qp_context;
	u8 tag[RV_AUTH_TAG_LEN];

	if (!rep || ev->param.conn.private_data_len < sizeof(*rep) ||
	    rep->magic != cpu_to_be32(RV_CM_MAGIC) ||
	    be16_to_cpu(rep->version) != RV_CM_VERSION ||
	    be16_to_cpu(rep->qp_index) != qp->index)
		return RV_CONN_REASON_BAD_REPLY;
	if (!qp->auth)
		return RV_CONN_REASON_NONE;
	memcpy(qp->hs.nonce_s, rep->nonce, sizeof(qp->hs.nonce_s));
	qp->hs.server_qpn = cpu_to_be32(ev->param.conn.qp_num);
	if (rv_auth_tag(RV_AUTH_LABEL_REP, &qp->hs, tag) ||
	    crypto_memneq(tag, rep->tag, sizeof(tag))) {
		atomic64_inc(&rv_cm_stats.auth_bad_reply);
		return RV_CONN_REASON_AUTH;
	}
	if (rv_auth_tag(RV_AUTH_LABEL_FIN, &qp->hs, iq->proof))
		return RV_CONN_REASON_AUTH;
	/* Before the proof goes: the server's writes may follow it at once. */
	WRITE_ONCE(iq->authed, true);
	if (rv_cm_send_proof(qp, iq))
		return RV_CONN_REASON_NO_RESOURCES;
	return RV_CONN_REASON_NONE;
}

/* Server: whether the current QP's client proved the key. */
static bool rv_cm_server_proved(const struct rv_conn_qp *qp)
{
	const struct rv_ibqp *iq;

	if (!qp->cm_id || !qp->cm_id->qp)
		return false;
	iq = qp->cm_id->qp->qp_context;
	return READ_ONCE(iq->authed);
}

/*
 * Server: an authenticated QP is connected once the CM established it and
 * its proof arrived, in either order.  Caller holds conn->lock.
 */
static void rv_cm_server_connected(struct rv_conn_qp *qp)
{
	if (qp->state != RV_QP_CONNECTING || !qp->established ||
	    !rv_cm_server_proved(qp))
		return;
	qp->state = RV_QP_CONNECTED;
	qp->reason = RV_CONN_REASON_NONE;
	rv_conn_update_state(qp->conn);
}

static void rv_cm_auth_work(struct work_struct *work)
{
	struct rv_conn_qp *qp = container_of(work, struct rv_conn_qp,
					     auth_work);

	mutex_lock(&qp->conn->lock);
	if (!qp->conn->dead)
		rv_cm_server_connected(qp);
	mutex_unlock(&qp->conn->lock);
}

/* Events of a QP's own ids (client attempts and accepted requests). */
static void rv_cm_qp_event(struct rv_conn_qp *qp, struct rdma_cm_id *id,
			   struct rdma_cm_event *ev)
{
	struct rv_conn *conn = qp->conn;
	int ret;

	trace_rv_cm_event(conn->job->id, conn->id, qp->index, ev->event,
			  ev->status);
	mutex_lock(&conn->lock);
	/* Ids already parked or taken by teardown are someone else's. */
	if (conn->dead || qp->cm_id != id)
		goto out_unlock;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		ret = rdma_resolve_route(id, RV_CM_RESOLVE_MS);
		if (ret)
			rv_cm_fail(qp, id, RV_CONN_REASON_UNREACHABLE);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		qp->auth = rv_auth_have_key();
		if (!qp->auth && !rv_auth_insecure) {
			rv_cm_fail(qp, id, RV_CONN_REASON_AUTH);
			break;
		}
		ret = rv_qp_create(qp, id);
		if (ret) {
			rv_cm_fail(qp, id, RV_CONN_REASON_NO_RESOURCES);
			break;
		}
		conn->attempts++;
		ret = rv_cm_send_request(qp, id);
		if (ret)
			rv_cm_fail(qp, id, RV_CONN_REASON_UNREACHABLE);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (conn->client) {
			u32 reason = rv_cm_client_established(qp, id, ev);

			if (reason) {
				rv_cm_fail(qp, id, reason);
				break;
			}
		} else if (qp->auth) {
			/* The proof may have come first, or not at all. */
			qp->established = true;
			qp->attempt_start = jiffies;
			rv_cm_kick(qp, msecs_to_jiffies(RV_CM_ATTEMPT_MS));
			rv_cm_server_connected(qp);
			break;
		}
		qp->state = RV_QP_CONNECTED;
		qp->reason = RV_CONN_REASON_NONE;
		rv_conn_update_state(conn);
		break;
	case RDMA_CM_EVENT_REJECTED:
		if (conn->client)
			conn->rejects++;
		rv_cm_fail(qp, id, rv_cm_rej_reason(id, ev));
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		rv_cm_fail(qp, id, RV_CONN_REASON_UNREACHABLE);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		rv_cm_fail(qp, id, RV_CONN_REASON_DISCONNECTED);
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		/* rv's ib_client removes its ids first; just in case. */
		rv_cm_fail(qp, id, RV_CONN_REASON_DEVICE_REMOVED);
		break;
	default:
		break;
	}
out_unlock:
	mutex_unlock(&conn->lock);
}

/* Private data checks that need no connection: RV_CM_REJ_* or 0. */
static int rv_cm_check_req(const struct rv_cm_req_pdata *req, u8 len)
{
	if (!req || len < sizeof(*req) ||
	    req->magic != cpu_to_be32(RV_CM_MAGIC) ||
	    be16_to_cpu(req->version) != RV_CM_VERSION ||
	    (req->flags & ~(RV_CM_F_AUTH | RV_CM_F_LAUNCHER)) ||
	    !req->key_len || req->key_len > RV_JOB_KEY_MAX ||
	    memchr_inv(req->key + req->key_len, 0,
		       RV_JOB_KEY_MAX - req->key_len) ||
	    !req->num_conn ||
	    be16_to_cpu(req->num_conn) > RV_MAX_CONN_PER_NODE ||
	    be16_to_cpu(req->qp_index) >= be16_to_cpu(req->num_conn))
		return RV_CM_REJ_BAD_REQUEST;
	return 0;
}

/*
 * The connection a request is for: same network namespace, device and
 * port, same uid and key, between the same two addresses.  Caller holds rv_conn_list_lock.
 */
static struct rv_conn *rv_cm_find_conn(struct rdma_cm_id *id,
				       const struct rv_cm_req_pdata *req)
{
	kuid_t uid = make_kuid(&init_user_ns, be32_to_cpu(req->uid));
	struct rv_conn *conn;

	if (!uid_valid(uid))
		return NULL;
	list_for_each_entry(conn, &rv_conns, list) {
		const struct rv_job *job = conn->job;

		/* A request reaches the listener of its netdev's netns. */
		if (net_eq(job->params.net, id->route.addr.dev_addr.net) &&
		    job->dev->index == id->device->index &&
		    job->params.port_num == id->port_num &&
		    uid_eq(job->params.uid, uid) &&
		    job->params.key_len == req->key_len &&
		    !memcmp(job->params.key, req->key, req->key_len) &&
		    rv_conn_addr_match(conn,
				       (struct sockaddr *)&id->route.addr.src_addr,
				       (struct sockaddr *)&id->route.addr.dst_addr))
			return conn;
	}
	return NULL;
}

/*
 * The request's tag, and its time against this node's clock: RV_CM_REJ_*
 * or 0.  Without a cluster key only an untagged request passes, and only
 * when the administrator allowed that (insecure_no_cluster_key).
 */
static int rv_cm_check_auth(const struct rv_auth_msg *hs,
			    const struct rv_cm_req_pdata *req)
{
	u8 tag[RV_AUTH_TAG_LEN];
	s64 age;

	if (!(req->flags & RV_CM_F_AUTH))
		return rv_auth_insecure && !rv_auth_have_key() ?
		       0 : RV_CM_REJ_AUTH;
	if (rv_auth_tag(RV_AUTH_LABEL_REQ, hs, tag) ||
	    crypto_memneq(tag, req->tag, sizeof(req->tag)))
		return RV_CM_REJ_AUTH;
	age = (s64)(ktime_get_real_ns() - be64_to_cpu(req->time_ns));
	if (age > (s64)RV_AUTH_MAX_SKEW_NS || age < -(s64)RV_AUTH_MAX_SKEW_NS)
		return RV_CM_REJ_REPLAY;
	return 0;
}

/*
 * Tag the accept and compute the proof the client must send, for the new
 * QP of @id: the handshake's inputs become @qp's.  Caller holds
 * conn->lock.  Return: 0 or -ENOKEY (the key went away: it cannot).
 */
static int rv_cm_server_tags(struct rv_conn_qp *qp, struct rdma_cm_id *id,
			     const struct rv_auth_msg *hs,
			     struct rv_cm_rep_pdata *rep)
{
	struct rv_ibqp *iq = id->qp->qp_context;
	u8 tag[RV_AUTH_TAG_LEN];
	int ret;

	qp->hs = *hs;
	get_random_bytes(qp->hs.nonce_s, sizeof(qp->hs.nonce_s));
	qp->hs.server_qpn = cpu_to_be32(id->qp->qp_num);
	ret = rv_auth_tag(RV_AUTH_LABEL_REP, &qp->hs, tag) ?:
	      rv_auth_tag(RV_AUTH_LABEL_FIN, &qp->hs, iq->expect);
	if (ret)
		return ret;
	memcpy(rep->nonce, qp->hs.nonce_s, sizeof(rep->nonce));
	memcpy(rep->tag, tag, sizeof(rep->tag));
	return 0;
}

/*
 * Accept @id for its connection or say why not (RV_CM_REJ_*).  A request
 * of a launcher's job is checked here, against the connection's job: its
 * tag binds that job's launcher id.
 */
static int rv_cm_accept(struct rdma_cm_id *id,
			const struct rv_cm_req_pdata *req,
			struct rv_auth_msg *hs)
{
	bool auth = req->flags & RV_CM_F_AUTH;
	u32 index = be16_to_cpu(req->qp_index);
	struct rv_cm_rep_pdata rep = {
		.magic = cpu_to_be32(RV_CM_MAGIC),
		.version = cpu_to_be16(RV_CM_VERSION),
		.qp_index = req->qp_index,
	};
	struct rdma_conn_param param = {
		.private_data = &rep,
		.private_data_len = sizeof(rep),
		.retry_count = RV_CM_RETRY_COUNT,
		.rnr_retry_count = 7,
	};
	struct rv_conn_qp *qp;
	struct rv_conn *conn;
	int rej = 0;

	mutex_lock(&rv_conn_list_lock);
	conn = rv_cm_find_conn(id, req);
	if (!conn) {
		rej = RV_CM_REJ_NO_CONN;
		goto out_unlock_list;
	}
	/* Launcher jobs connect to the same launcher job, others to none. */
	if (!conn->job->params.launcher_id !=
	    !(req->flags & RV_CM_F_LAUNCHER)) {
		rej = RV_CM_REJ_AUTH;
		goto out_unlock_list;
	}
	if (req->flags & RV_CM_F_LAUNCHER) {
		hs->launcher_id = cpu_to_be64(conn->job->params.launcher_id);
		rej = rv_cm_check_auth(hs, req);
		if (rej)
			goto out_unlock_list;
	}
	if (be16_to_cpu(req->num_conn) != conn->num_conn) {
		rej = RV_CM_REJ_MISMATCH;
		goto out_unlock_list;
	}
	/* The lower address is the client: it never accepts. */
	if (conn->client) {
		rej = RV_CM_REJ_BAD_REQUEST;
		goto out_unlock_list;
	}
	qp = &conn->qps[index];

	mutex_lock(&conn->lock);
	/*
	 * Hand over: the connection's release takes conn->lock before it
	 * frees anything, so holding it keeps @conn; the node-wide list is
	 * free for CONN_CREATE, CONN_DESTROY and other requests while the
	 * QP and its CQ are created.
	 */
	mutex_unlock(&rv_conn_list_lock);
	if (conn->dead) {
		rej = RV_CM_REJ_NO_CONN;
		goto out_unlock_conn;
	}
	/*
	 * Before anything the request could disturb: a copy of an accepted
	 * request (or of one older than it) must not park an accept.
	 */
	if (auth && be64_to_cpu(hs->time_ns) <= qp->auth_newest) {
		rej = RV_CM_REJ_REPLAY;
		goto out_unlock_conn;
	}
	if (qp->cm_id || qp->dead_id) {
		/*
		 * Either the client gave up on this QP (its DREQ was lost, or
		 * the QP has not failed on this side yet) or the request is
		 * forged.  Not trusting it, probe the QP with a heartbeat now:
		 * if the client's end is gone, the QP fails within its
		 * transport retries and the client's next attempt finds it
		 * free; a live QP is not disturbed.
		 */
		if (qp->cm_id && qp->state == RV_QP_CONNECTED) {
			rv_qp_probe(qp);
		} else if (qp->cm_id && qp->state == RV_QP_CONNECTING) {
			/*
			 * An accept still waiting for its RTU.  ib_cm answers
			 * a retransmitted REQ itself, so a new request means
			 * the client gave that attempt up (our REP was lost:
			 * seen when a link came back mid-handshake).  Left
			 * alone it answers BUSY until ib_cm's REP retries run
			 * out, for a minute or more.  Park it for the work to
			 * destroy: the client's next attempt is accepted.  A
			 * forged request can only delay a handshake.
			 */
			rv_cm_fail(qp, qp->cm_id, RV_CONN_REASON_NONE);
		}
		rej = RV_CM_REJ_BUSY;
		goto out_unlock_conn;
	}
	qp->auth = auth;
	if (rv_qp_create(qp, id)) {
		rej = RV_CM_REJ_NO_RESOURCES;
		goto out_unlock_conn;
	}
	if (auth) {
		if (rv_cm_server_tags(qp, id, hs, &rep)) {
			rv_qp_free(id);
			rej = RV_CM_REJ_AUTH;
			goto out_unlock_conn;
		}
		qp->auth_newest = be64_to_cpu(hs->time_ns);
	}
	rdma_set_ack_timeout(id, rv_ack_timeout);
	if (rdma_accept(id, &param)) {
		rv_qp_free(id);
		rej = RV_CM_REJ_NO_RESOURCES;
		goto out_unlock_conn;
	}
	id->context = qp;
	qp->cm_id = id;
	qp->state = RV_QP_CONNECTING;
	qp->established = false;
	qp->reason = RV_CONN_REASON_NONE;
	rv_conn_update_state(conn);

out_unlock_conn:
	mutex_unlock(&conn->lock);
	return rej;

out_unlock_list:
	mutex_unlock(&rv_conn_list_lock);
	return rej;
}

/*
 * Whether the request on @id came from a privileged port of its node,
 * which only that node's kernel (rv) could bind: the requester's port is
 * the child id's destination port.
 */
static bool rv_cm_src_privileged(const struct rdma_cm_id *id)
{
	const struct sockaddr_storage *ss = &id->route.addr.dst_addr;
	u16 port;

	switch (ss->ss_family) {
	case AF_INET:
		port = ntohs(((const struct sockaddr_in *)ss)->sin_port);
		break;
	case AF_INET6:
		port = ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
		break;
	default:
		return false;
	}
	/* Port 0 cannot be bound: only a forged header carries it. */
	return port && port < RV_CM_PRIV_PORT_END;
}

/* Same address, whatever the ports. */
static bool rv_cm_same_host(const struct sockaddr_storage *a,
			    const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return a->ss_family == AF_INET6 &&
	       ipv6_addr_equal(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr);
}

/*
 * On RoCE, whether the request's primary path leads back to the address
 * its rdma_cm header claims: ib_cm sends the accept, and the QP its
 * packets, along that path, so a request claiming a peer's address but
 * naming another GID would have them go to a third host.  (Both come
 * from the request: this only keeps the answers with the claimed host;
 * the tags prove who asked.)  An IB GID is no IP address: nothing to
 * compare there.
 */
static bool rv_cm_path_is_source(const struct rdma_cm_id *id)
{
	struct sockaddr_storage gid_addr = {};

	if (!rdma_protocol_roce(id->device, id->port_num))
		return true;
	if (!id->route.path_rec || !id->route.num_pri_alt_paths)
		return false;
	rdma_gid2ip((struct sockaddr *)&gid_addr, &id->route.path_rec[0].dgid);
	return rv_cm_same_host(&gid_addr, &id->route.addr.dst_addr);
}

/* A connection request on the listener; @id is the new child id. */
static int rv_cm_request(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	const struct rv_cm_req_pdata *req = ev->param.conn.private_data;
	struct rv_cm_rej_pdata rej = {
		.magic = cpu_to_be32(RV_CM_MAGIC),
		.version = cpu_to_be16(RV_CM_VERSION),
	};
	struct rv_auth_msg hs;
	int reason;

	atomic64_inc(&rv_cm_stats.requests);
	/* Before anything else: a user's request says nothing rv trusts. */
	if (!rv_cm_src_privileged(id))
		reason = RV_CM_REJ_UNPRIVILEGED;
	else
		reason = rv_cm_check_req(req, ev->param.conn.private_data_len);
	if (!reason && !rv_cm_path_is_source(id))
		reason = RV_CM_REJ_PATH;
	if (!reason) {
		rv_cm_hs_from_req(&hs, req, &id->route.addr.dst_addr,
				  &id->route.addr.src_addr,
				  ev->param.conn.qp_num);
		/* A launcher job's tag is checked with its job's id. */
		if (!(req->flags & RV_CM_F_LAUNCHER))
			reason = rv_cm_check_auth(&hs, req);
		else if (!(req->flags & RV_CM_F_AUTH))
			reason = RV_CM_REJ_AUTH;
	}
	if (!reason)
		reason = rv_cm_accept(id, req, &hs);
	trace_rv_cm_request(id->device->index, id->port_num, reason);
	if (!reason) {
		atomic64_inc(&rv_cm_stats.accepted);
		return 0;
	}

	atomic64_inc(&rv_cm_stats.rejected);
	atomic64_inc(&rv_cm_stats.rej[reason]);
	pr_debug("request from %pISp rejected: %s\n",
		 &id->route.addr.dst_addr, rv_cm_rej_names[reason]);
	rej.reason = cpu_to_be16(reason);
	rdma_reject(id, &rej, sizeof(rej), IB_CM_REJ_CONSUMER_DEFINED);
	/* Non-zero: rdma_cm destroys the child id. */
	return -ECONNREFUSED;
}

int rv_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct rv_conn_qp *qp = id->context;

	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return rv_cm_request(id, ev);
	/* The listeners have no context; their other events need nothing. */
	if (qp)
		rv_cm_qp_event(qp, id, ev);
	return 0;
}

/*
 * Bind a client id to the connection's local address and a privileged
 * port (see RV_CM_SRC_PORT_MIN).  The first port tried depends on the
 * connection and QP, which spreads the ids over the range.  From the
 * QP's work only: rdma_cm checks the capability of current, a kworker.
 */
static int rv_cm_bind_src(struct rv_conn_qp *qp, struct rdma_cm_id *id)
{
	const u32 nports = RV_CM_PRIV_PORT_END - RV_CM_SRC_PORT_MIN;
	struct rv_conn *conn = qp->conn;
	struct sockaddr_storage src = conn->local;
	u32 i, port;
	int ret;

	ret = rdma_set_reuseaddr(id, 1);
	if (ret)
		return ret;
	port = RV_CM_SRC_PORT_MIN +
	       (conn->id * RV_MAX_CONN_PER_NODE + qp->index) % nports;
	for (i = 0; i < RV_CM_SRC_PORT_TRIES; i++) {
		if (port != rv_cm_port) {
			/* sin_port and sin6_port are at the same offset */
			((struct sockaddr_in *)&src)->sin_port = htons(port);
			ret = rdma_bind_addr(id, (struct sockaddr *)&src);
			if (ret != -EADDRINUSE && ret != -EADDRNOTAVAIL)
				return ret;
		}
		port = port > RV_CM_SRC_PORT_MIN ? port - 1 :
		       RV_CM_PRIV_PORT_END - 1;
	}
	/* Only EADDRINUSE is sure to be about ports. */
	if (ret == -EADDRINUSE)
		pr_warn_ratelimited("job%u conn%u qp%u: %u privileged source ports taken\n",
				    conn->job->id, conn->id, qp->index,
				    RV_CM_SRC_PORT_TRIES);
	return ret;
}

/* A client attempt: a new id, then address resolution.  From the work. */
static void rv_cm_start_attempt(struct rv_conn_qp *qp)
{
	struct rv_conn *conn = qp->conn;
	struct rdma_cm_id *id;
	int ret;

	/* In the job's namespace: its routes and addresses, not the host's. */
	id = rdma_create_id(conn->job->params.net, rv_cm_handler, qp,
			    RDMA_PS_TCP, IB_QPT_RC);
	mutex_lock(&conn->lock);
	if (IS_ERR(id)) {
		if (!conn->dead && qp->state == RV_QP_CONNECTING)
			rv_cm_fail(qp, NULL, RV_CONN_REASON_NO_RESOURCES);
		mutex_unlock(&conn->lock);
		return;
	}
	if (conn->dead || qp->state != RV_QP_CONNECTING) {
		mutex_unlock(&conn->lock);
		rdma_destroy_id(id);
		return;
	}
	qp->cm_id = id;
	qp->attempt_start = jiffies;
	/* Watchdog: the work retries or gives up on the attempt. */
	rv_cm_kick(qp, min(time_after(conn->deadline, jiffies) ?
			   conn->deadline - jiffies : 0,
			   msecs_to_jiffies(RV_CM_ATTEMPT_MS)));
	mutex_unlock(&conn->lock);

	/*
	 * Teardown cancels this work before it takes the id: no race.  A
	 * bound id keeps its source address and port through resolution.
	 */
	ret = rv_cm_bind_src(qp, id);
	if (!ret)
		ret = rdma_resolve_addr(id, NULL,
					(struct sockaddr *)&conn->remote,
					RV_CM_RESOLVE_MS);
	if (ret) {
		mutex_lock(&conn->lock);
		if (!conn->dead && qp->cm_id == id)
			rv_cm_fail(qp, id, ret == -ENOMEM ?
				   RV_CONN_REASON_NO_RESOURCES :
				   RV_CONN_REASON_UNREACHABLE);
		mutex_unlock(&conn->lock);
	}
}

/*
 * Destroying a connected id sends a DREQ.  rxe (6.1) moves the port's GSI
 * QP to the error state for good when it cannot transmit a MAD because
 * the link is down, and the MAD layer never reposts its receives: no
 * rdma_cm message would reach this node again until rxe is re-created.
 * So a failed id's QP is drained and destroyed at once (its writes end
 * with error events) but the id is destroyed, and a new attempt started,
 * only once its port is active.
 */
static bool rv_cm_port_active(struct rdma_cm_id *id)
{
	int ifindex = id->route.addr.dev_addr.bound_dev_if;
	enum ib_port_state state;
	struct net_device *ndev;
	bool up = true;

	/*
	 * The netdev goes down first; rxe's port leaves ACTIVE only when
	 * its notifier has run, after QPs may already have failed.
	 */
	if (ifindex) {
		ndev = dev_get_by_index(id->route.addr.dev_addr.net, ifindex);
		if (ndev) {
			up = netif_running(ndev) && netif_carrier_ok(ndev);
			dev_put(ndev);
		}
	}
	if (!up)
		return false;
	if (!id->device || ib_get_cached_port_state(id->device, id->port_num,
						    &state))
		return true;
	return state == IB_PORT_ACTIVE;
}

static void rv_cm_work(struct work_struct *work)
{
	struct rv_conn_qp *qp = container_of(to_delayed_work(work),
					     struct rv_conn_qp, work);
	struct rv_conn *conn = qp->conn;
	struct rdma_cm_id *dead = NULL, *stuck = NULL;
	bool expired, start = false, hold = false, unpark = false;

	mutex_lock(&conn->lock);
	if (conn->dead)
		goto out_unlock;
	/*
	 * Left parked until destroyed: a slot has at most one QP besides
	 * the current one, and no new one (accept or attempt) before the
	 * failed one is gone.
	 */
	dead = qp->dead_id;
	expired = conn->started && !time_before(jiffies, conn->deadline);
	if (dead && !rv_cm_port_active(dead))
		hold = true;

	switch (qp->state) {
	case RV_QP_RETRY:
		if (expired) {
			qp->state = RV_QP_FAILED;
			if (!qp->reason)
				qp->reason = RV_CONN_REASON_TIMEOUT;
		} else if (!hold) {
			qp->state = RV_QP_CONNECTING;
			start = true;
		}
		break;
	case RV_QP_CONNECTING:
		if (!conn->client && qp->auth && qp->established &&
		    qp->cm_id && !dead && !expired) {
			unsigned long proof_by = qp->attempt_start +
				msecs_to_jiffies(RV_CM_ATTEMPT_MS);

			if (time_before(jiffies, proof_by)) {
				rv_cm_kick(qp, proof_by - jiffies);
				break;
			}
			/* Established, but no proof came. */
			atomic64_inc(&rv_cm_stats.auth_bad_proof);
			rv_cm_fail(qp, qp->cm_id, RV_CONN_REASON_AUTH);
			break;
		}
		if (!conn->started)
			break;
		if (!expired) {
			unsigned long retry_at = qp->attempt_start +
				msecs_to_jiffies(RV_CM_ATTEMPT_MS);

			if (conn->client && qp->cm_id && !dead &&
			    !time_before(jiffies, retry_at)) {
				/* No answer: park the id, try again. */
				rv_cm_fail(qp, qp->cm_id,
					   RV_CONN_REASON_UNREACHABLE);
				break;
			}
			rv_cm_kick(qp, conn->client &&
				   time_before(retry_at, conn->deadline) ?
				   retry_at - jiffies : conn->deadline - jiffies);
			break;
		}
		/*
		 * An attempt (or accept) still hanging at the deadline: the
		 * remote never answered, unless an earlier attempt got a
		 * better reason.
		 */
		stuck = qp->cm_id;
		qp->cm_id = NULL;
		/*
		 * Parked like any failed id (none is, with an attempt out):
		 * no accept may put a new QP on the slot while this one
		 * drains, or a late fault of it would mark the new one broken.
		 */
		if (!dead) {
			qp->dead_id = stuck;
			unpark = true;
		}
		qp->state = RV_QP_FAILED;
		if (!qp->reason)
			qp->reason = conn->client ? RV_CONN_REASON_UNREACHABLE :
				     RV_CONN_REASON_TIMEOUT;
		break;
	case RV_QP_IDLE:
		if (conn->client || !conn->started)
			break;
		if (expired) {
			/* Still accepts a late request. */
			qp->state = RV_QP_FAILED;
			qp->reason = RV_CONN_REASON_TIMEOUT;
		} else {
			rv_cm_kick(qp, conn->deadline - jiffies);
		}
		break;
	default:
		break;
	}
	/* Look at the port again soon, whatever the state asked for. */
	if (hold)
		rv_cm_kick(qp, msecs_to_jiffies(RV_CM_RETRY_MS));
	rv_conn_update_state(conn);
out_unlock:
	mutex_unlock(&conn->lock);

	if (hold) {
		/*
		 * Its QP goes now (drained: its writes end with errors), its
		 * id once the port is back.  Only this work and the
		 * connection's teardown, which cancels it first, destroy a
		 * parked id or its QP.
		 */
		rv_qp_destroy(dead);
		dead = NULL;
	}
	rv_qp_destroy_id(dead);
	rv_qp_destroy_id(stuck);
	if (dead || unpark) {
		mutex_lock(&conn->lock);
		qp->dead_id = NULL;
		mutex_unlock(&conn->lock);
	}
	if (start)
		rv_cm_start_attempt(qp);
}

void rv_cm_qp_init(struct rv_conn_qp *qp)
{
	INIT_DELAYED_WORK(&qp->work, rv_cm_work);
	INIT_WORK(&qp->fault_work, rv_qp_fault_work);
	INIT_WORK(&qp->auth_work, rv_cm_auth_work);
	rv_write_qp_init(qp);
}

/*
 * Fail @qp's connected id as if the remote had disconnected (its writes
 * are flushed when the work destroys it).  Caller holds conn->lock.
 */
void rv_cm_qp_break(struct rv_conn_qp *qp)
{
	if (qp->conn->dead || !qp->cm_id || qp->dead_id)
		return;
	rv_cm_fail(qp, qp->cm_id, RV_CONN_REASON_DISCONNECTED);
}

int rv_cm_stats_show(struct seq_file *s, void *unused)
{
	int i;

	seq_printf(s, "requests %lld\naccepted %lld\nrejected %lld\n",
		   atomic64_read(&rv_cm_stats.requests),
		   atomic64_read(&rv_cm_stats.accepted),
		   atomic64_read(&rv_cm_stats.rejected));
	for (i = 1; i < ARRAY_SIZE(rv_cm_rej_names); i++)
		seq_printf(s, "rejected_%s %lld\n", rv_cm_rej_names[i],
			   atomic64_read(&rv_cm_stats.rej[i]));
	seq_printf(s, "auth_bad_reply %lld\nauth_bad_proof %lld\n",
		   atomic64_read(&rv_cm_stats.auth_bad_reply),
		   atomic64_read(&rv_cm_stats.auth_bad_proof));
	rv_auth_show(s);
	seq_printf(s, "listen_netns %u\n", rv_cm_listen_netns());
	seq_printf(s, "heartbeat_armed %u\n", rv_qp_hb_armed());
	return 0;
}
