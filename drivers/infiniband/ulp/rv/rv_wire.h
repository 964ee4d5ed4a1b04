/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rv: what two rv instances exchange when they connect a QP, in rdma_cm's
 * private data: the request, the accept and the reject, and the ports a
 * request may come from.  Both ends must agree on every byte of it; the
 * tags the request and accept carry are described in rv_auth.h.
 */
#ifndef RV_WIRE_H
#define RV_WIRE_H

#include <linux/types.h>
#include <rdma/rv_user_ioctls.h>

#include "rv_auth.h"

/*
 * Ports below this are privileged for rdma_cm: cma_use_port() lets only
 * CAP_NET_BIND_SERVICE bind them (its PROT_SOCK, whatever
 * net.ipv4.ip_unprivileged_port_start says).  rv listens on one and its
 * clients send from one, so a peer's request from such a port comes from
 * its kernel (rv), not from a user (see "Security model" in rv(7)).
 */
#define RV_CM_PRIV_PORT_END	1024

/* Private data magic: "RVCM". */
#define RV_CM_MAGIC	0x5256434dU
/* 2: authenticated requests and accepts (rv_auth.h). */
#define RV_CM_VERSION	2

/* struct rv_cm_req_pdata.flags */
#define RV_CM_F_AUTH		0x01	/* the request and accept carry tags */
#define RV_CM_F_LAUNCHER	0x02	/* the client's job is a launcher's */

/**
 * struct rv_cm_req_pdata - private data of a connection request
 * @magic: RV_CM_MAGIC
 * @version: RV_CM_VERSION; a server refuses other versions
 * @qp_index: which QP of the connection, < @num_conn
 * @num_conn: the client job's num_conn; must equal the server job's
 * @key_len: bytes used in @key, 1..RV_JOB_KEY_MAX
 * @flags: RV_CM_F_*; RV_CM_F_AUTH unless both nodes run without a
 *	cluster key (insecure_no_cluster_key)
 * @uid: the job's uid in the initial user namespace
 * @key: the job key; bytes past @key_len are 0
 * @time_ns: the client's CLOCK_REALTIME, for the server's replay check
 * @nonce: the client's nonce (struct rv_auth_msg.nonce_c)
 * @tag: the first bytes of the request's tag (RV_AUTH_LABEL_REQ): lets
 *	the server refuse a node without the key before it creates a QP;
 *	the proof that counts comes with the QP's first message
 *
 * All multi-byte fields are big endian.  56 bytes: all that rdma_cm
 * leaves for private data in an IB CM REQ.
 */
struct rv_cm_req_pdata {
	__be32 magic;
	__be16 version;
	__be16 qp_index;
	__be16 num_conn;
	u8 key_len;
	u8 flags;
	__be32 uid;
	u8 key[RV_JOB_KEY_MAX];
	__be64 time_ns;
	u8 nonce[RV_AUTH_NONCE_LEN];
	u8 tag[RV_AUTH_REQ_TAG_LEN];
};

/**
 * struct rv_cm_rep_pdata - private data of an accept
 * @magic: RV_CM_MAGIC
 * @version: RV_CM_VERSION
 * @qp_index: the request's QP index, echoed
 * @nonce: the server's nonce (struct rv_auth_msg.nonce_s)
 * @tag: the accept's tag (RV_AUTH_LABEL_REP); zero when the request
 *	was not authenticated
 */
struct rv_cm_rep_pdata {
	__be32 magic;
	__be16 version;
	__be16 qp_index;
	u8 nonce[RV_AUTH_NONCE_LEN];
	u8 tag[RV_AUTH_TAG_LEN];
};

/* Reject reasons on the wire (struct rv_cm_rej_pdata.reason). */
enum {
	RV_CM_REJ_NO_CONN = 1,		/* retryable: no matching connection */
	RV_CM_REJ_BUSY = 2,		/* retryable: the QP is in use */
	RV_CM_REJ_NO_RESOURCES = 3,	/* retryable: QP creation failed */
	RV_CM_REJ_BAD_REQUEST = 4,	/* fatal: invalid private data */
	RV_CM_REJ_MISMATCH = 5,		/* fatal: num_conn differs */
	RV_CM_REJ_UNPRIVILEGED = 6,	/* fatal: source port >= 1024 */
	RV_CM_REJ_AUTH = 7,		/* retryable: the tag did not check */
	RV_CM_REJ_REPLAY = 8,		/* retryable: an old request */
	RV_CM_REJ_PATH = 9,		/* retryable: path is not the source */
	RV_CM_REJ_MAX = RV_CM_REJ_PATH,
};

/**
 * struct rv_cm_rej_pdata - private data of a reject
 * @magic: RV_CM_MAGIC
 * @version: the server's RV_CM_VERSION
 * @reason: RV_CM_REJ_*
 */
struct rv_cm_rej_pdata {
	__be32 magic;
	__be16 version;
	__be16 reason;
};

#endif /* RV_WIRE_H */
