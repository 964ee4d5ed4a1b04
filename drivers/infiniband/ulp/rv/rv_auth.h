/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rv: the cluster key and the tags that authenticate rv instances to each
 * other when they connect a job's QPs (see "Security model" in rv(7)).
 *
 * Every node of a cluster holds the same secret key, given to rv by root
 * through the write-only module parameter cluster_key.  A QP is used
 * only after a three-message exchange over two fresh nonces:
 *
 *   REQ  client -> server  nonce_c, time, tag_req  (truncated, CM private data)
 *   REP  server -> client  nonce_s, tag_rep        (CM private data)
 *   FIN  client -> server  proof                   (the QP's first SEND)
 *
 * Each tag is HMAC-SHA256 under the cluster key over a label and struct
 * rv_auth_msg, which binds the job (uid, key and launcher job), the QP
 * (index, both QP numbers), both addresses, the time and both nonces.  The server
 * publishes its QP only once the proof, which depends on its own nonce,
 * arrived as the QP's first message; the client only once the REP's tag
 * checked.  A request older than the server's newest accepted one for
 * that QP, or further than RV_AUTH_MAX_SKEW_NS from the server's clock,
 * is a replay.
 */
#ifndef RV_AUTH_H
#define RV_AUTH_H

#include "rv.h"

#include <linux/moduleparam.h>
#include <linux/seq_file.h>
#include <linux/socket.h>
#include <linux/types.h>
#include <crypto/sha2.h>

#define RV_AUTH_TAG_LEN		SHA256_DIGEST_SIZE
#define RV_AUTH_REQ_TAG_LEN	8
#define RV_AUTH_NONCE_LEN	8
/* As MUNGE's default credential lifetime: node clocks must agree this well. */
#define RV_AUTH_MAX_SKEW_NS	(300ULL * NSEC_PER_SEC)

/* Domain separation of the three tags. */
#define RV_AUTH_LABEL_REQ	"rv2 req"
#define RV_AUTH_LABEL_REP	"rv2 rep"
#define RV_AUTH_LABEL_FIN	"rv2 fin"

/**
 * struct rv_auth_msg - what every tag of a QP's handshake binds
 * @version: RV_CM_VERSION
 * @flags: the request's RV_CM_F_* flags
 * @qp_index: the QP's index in its connection
 * @num_conn: the client job's num_conn
 * @key_len: bytes of @key used
 * @rsvd: 0
 * @uid: the job's uid in the initial user namespace
 * @key: the job key, zero padded
 * @client_addr: the client's address, IPv6 or IPv4-mapped
 * @server_addr: the server's address, the same way
 * @time_ns: the client's CLOCK_REALTIME when it sent the request
 * @nonce_c: the client's nonce
 * @nonce_s: the server's nonce; 0 in the request's tag
 * @client_qpn: the client's QP number
 * @server_qpn: the server's QP number; 0 in the request's tag
 * @launcher_id: the launcher job both jobs belong to (rv_launcher.c), 0
 *	for jobs without a launcher: a launcher's job connects only to the
 *	same launcher job on another node
 *
 * All multi-byte fields big endian: the layout is part of the wire
 * protocol (both ends compute it).
 */
struct rv_auth_msg {
	u8 version;
	u8 flags;
	__be16 qp_index;
	__be16 num_conn;
	u8 key_len;
	u8 rsvd;
	__be32 uid;
	u8 key[RV_JOB_KEY_MAX];
	u8 client_addr[16];
	u8 server_addr[16];
	__be64 time_ns;
	u8 nonce_c[RV_AUTH_NONCE_LEN];
	u8 nonce_s[RV_AUTH_NONCE_LEN];
	__be32 client_qpn;
	__be32 server_qpn;
	__be64 launcher_id;
} __packed;

/* Module parameters (rv_main.c); cluster_key's handlers are in rv_auth.c. */
extern bool rv_auth_insecure;
extern const struct kernel_param_ops rv_auth_key_ops;

bool rv_auth_have_key(void);
int rv_auth_tag(const char *label, const struct rv_auth_msg *m,
		u8 tag[RV_AUTH_TAG_LEN]);
void rv_auth_addr(u8 out[16], const struct sockaddr_storage *ss);
void rv_auth_show(struct seq_file *s);
void rv_auth_exit(void);

#endif /* RV_AUTH_H */
