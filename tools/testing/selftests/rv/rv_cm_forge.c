// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv_cm_forge - send one hand-made connection request to rv's listener
 * from user space (librdmacm) and report how it was answered; or try to
 * listen on rv's port.
 *
 *   rv_cm_forge -r REMOTE_IP -P PORT -k KEY [-b SRC_PORT] [-u UID]
 *               [-n NUM_CONN] [-i QP_INDEX] [-m MAGIC] [-v VERSION]
 *               [-l PDATA_LEN] [-H HOLD_MS] [-x EXPECTED_REJECT]
 *               [-E EXPECTED_ERRNO] [-K CLUSTER_KEY_HEX] [-A FLAGS]
 *               [-T TIME_OFFSET_S] [-F bad|write]
 *   rv_cm_forge -L -P PORT[,PORT...] [-H HOLD_MS] [-E EXPECTED_ERRNO]
 *
 * The private data follows rv's wire format (struct rv_cm_req_pdata in
 * drivers/infiniband/ulp/rv/rv_wire.h, version 2): every field may be
 * forged.  With -K (root's copy of the cluster key) the request's tag is
 * computed as rv's (rv_auth.h), over the request as sent; without it the
 * tag is random, as a forger without the key must send it.  -A sets the
 * flags byte (default 1, tagged), -T shifts the request's time by that
 * many seconds (a stale request).  -F, once established: instead of the
 * proof rv's server waits for as the QP's first message, send 32 random
 * bytes (bad) or a zero-length write with immediate (write), then keep the
 * connection HOLD_MS; the server must fail the QP (auth_bad_proof).
 * -b binds the request's source port first (below 1024 only with
 * CAP_NET_BIND_SERVICE: rdma_cm's rule, which rv's server relies on).
 * Prints "rejected status S reason R" (R is rv's RV_CM_REJ_* from the
 * reject's private data, 0 if none), "established", or with -H "accepted,
 * holding": the request carries a QP number but no QP is created, so
 * nothing answers the accept; the server's QP stays connecting (no RTU)
 * for HOLD_MS, then the id is destroyed (ib_cm rejects the accept).
 * Exit status 0 when the request was rejected with reason
 * EXPECTED_REJECT (any reason when -x is not given; -x 0: when it was
 * accepted), 1 otherwise (the other outcome, timeout, error).
 *
 * -L binds each PORT (64 at most) on the IPv4 wildcard and listens, and
 * prints "listening" (then keeps the ports HOLD_MS) or "bind PORT failed:
 * errno E (text)" / "listen PORT failed: ...".
 *
 * With -E, exit status 0 when a bind or listen failed with errno
 * EXPECTED_ERRNO, 1 otherwise (it succeeded, or failed otherwise).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <rdma/rdma_cma.h>
#include <sys/random.h>
#include <time.h>

/* rv's request private data, version 2; all big endian. */
struct req_pdata {
	uint32_t magic;
	uint16_t version;
	uint16_t qp_index;
	uint16_t num_conn;
	uint8_t key_len;
	uint8_t flags;
	uint32_t uid;
	uint8_t key[16];
	uint64_t time_ns;
	uint8_t nonce[8];
	uint8_t tag[8];
};

/* What rv's tags bind (struct rv_auth_msg), packed, big endian. */
struct auth_msg {
	uint8_t version;
	uint8_t flags;
	uint16_t qp_index;
	uint16_t num_conn;
	uint8_t key_len;
	uint8_t rsvd;
	uint32_t uid;
	uint8_t key[16];
	uint8_t client_addr[16];
	uint8_t server_addr[16];
	uint64_t time_ns;
	uint8_t nonce_c[8];
	uint8_t nonce_s[8];
	uint32_t client_qpn;
	uint32_t server_qpn;
	uint64_t launcher_id;
} __attribute__((packed));

/* @sin as 16 bytes, IPv4-mapped. */
static void mapped(uint8_t out[16], const struct sockaddr_in *sin)
{
	memset(out, 0, 16);
	out[10] = out[11] = 0xff;
	memcpy(out + 12, &sin->sin_addr, 4);
}

/* The request's tag under @key (HMAC-SHA256 over "rv2 req" and @m). */
static int req_tag(const uint8_t *key, size_t key_len,
		   const struct auth_msg *m, uint8_t out[8])
{
	static const char label[] = "rv2 req";
	unsigned char buf[sizeof(label) - 1 + sizeof(*m)], md[32];
	unsigned int md_len = sizeof(md);

	memcpy(buf, label, sizeof(label) - 1);
	memcpy(buf + sizeof(label) - 1, m, sizeof(*m));
	if (!HMAC(EVP_sha256(), key, (int)key_len, buf, sizeof(buf), md,
		  &md_len))
		return -1;
	memcpy(out, md, 8);
	return 0;
}

static int parse_hex(const char *hex, uint8_t *out, size_t max)
{
	size_t n = strlen(hex), i;

	if (n % 2 || n / 2 > max)
		return -1;
	for (i = 0; i < n / 2; i++)
		if (sscanf(hex + 2 * i, "%2hhx", &out[i]) != 1)
			return -1;
	return (int)(n / 2);
}

/* -F: what to send first on the established QP instead of a proof. */
static int send_instead_of_proof(struct rdma_cm_id *id, struct ibv_cq *cq,
				 bool write)
{
	static uint8_t buf[32];
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = sizeof(buf) };
	struct ibv_send_wr wr = {
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_wc wc;
	struct ibv_mr *mr;
	int i, n = 0;

	mr = ibv_reg_mr(id->qp->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	if (!mr || getrandom(buf, sizeof(buf), 0) != sizeof(buf))
		return -1;
	sge.lkey = mr->lkey;
	if (write) {
		wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		wr.num_sge = 0;
		wr.imm_data = htonl(0x1234);
	}
	if (ibv_post_send(id->qp, &wr, &bad))
		return -1;
	for (i = 0; i < 200 && !n; i++) {
		n = ibv_poll_cq(cq, 1, &wc);
		if (!n)
			usleep(10000);
	}
	printf("sent %s instead of the proof: %s\n", write ? "a write" : "32 bytes",
	       n == 1 ? ibv_wc_status_str(wc.status) : "no completion");
	ibv_dereg_mr(mr);
	return 0;
}

static uint64_t htobe64_(uint64_t v)
{
	return ((uint64_t)htonl(v & 0xffffffff) << 32) | htonl(v >> 32);
}

struct rej_pdata {
	uint32_t magic;
	uint16_t version;
	uint16_t reason;
};

static struct rdma_event_channel *ch;
static int expect_errno = -1;

/*
 * -b's bind returned @ret: the exit status, or -1 to go on (it succeeded
 * and no failure was expected).
 */
static int failed(const char *what, int ret)
{
	int err = ret ? errno : 0;

	if (ret)
		printf("%s failed: errno %d (%s)\n", what, err, strerror(err));
	else
		printf("%s succeeded\n", what);
	if (expect_errno < 0)
		return ret ? 1 : -1;
	return err == expect_errno ? 0 : 1;
}

#define MAX_PORTS	64

/* -L: listen on the IPv4 wildcard, on each of @n @ports. */
static int listen_mode(const int *ports, int n, int hold_ms)
{
	struct rdma_cm_id *ids[MAX_PORTS];
	int ret = 0, err = 0, i, bound = 0;
	const char *what = "bind";

	ch = rdma_create_event_channel();
	if (!ch)
		return 1;
	for (i = 0; i < n && !ret; i++) {
		struct sockaddr_in sin = { .sin_family = AF_INET,
					   .sin_port = htons(ports[i]) };

		if (rdma_create_id(ch, &ids[i], NULL, RDMA_PS_TCP)) {
			perror("rdma_create_id");
			return 1;
		}
		bound++;
		what = "bind";
		ret = rdma_bind_addr(ids[i], (struct sockaddr *)&sin);
		if (!ret) {
			what = "listen";
			ret = rdma_listen(ids[i], 1);
		}
		if (ret) {
			err = errno;
			printf("%s %d failed: errno %d (%s)\n", what, ports[i],
			       err, strerror(err));
		}
	}
	if (!ret) {
		printf("listening\n");
		fflush(stdout);
		usleep(hold_ms * 1000);
	}
	for (i = 0; i < bound; i++)
		rdma_destroy_id(ids[i]);
	rdma_destroy_event_channel(ch);
	if (expect_errno < 0)
		return ret ? 1 : 0;
	return ret && err == expect_errno ? 0 : 1;
}

/* Next event, which must be @want; 10 s at most. */
static int get_event(enum rdma_cm_event_type want, struct rdma_cm_event **evp)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };

	if (poll(&pfd, 1, 10000) != 1) {
		fprintf(stderr, "no CM event within 10 s (waiting for %s)\n",
			rdma_event_str(want));
		return -1;
	}
	if (rdma_get_cm_event(ch, evp)) {
		perror("rdma_get_cm_event");
		return -1;
	}
	if ((*evp)->event != want) {
		if ((*evp)->event != RDMA_CM_EVENT_REJECTED &&
		    (*evp)->event != RDMA_CM_EVENT_ESTABLISHED &&
		    (*evp)->event != RDMA_CM_EVENT_CONNECT_RESPONSE)
			fprintf(stderr, "got %s (status %d), wanted %s\n",
				rdma_event_str((*evp)->event),
				(*evp)->status, rdma_event_str(want));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct req_pdata req = {
		.magic = htonl(0x5256434d),
		.version = htons(2),
		.num_conn = htons(4),
		.flags = 1,
		.uid = htonl(getuid()),
	};
	uint8_t ckey[64];
	int ckey_len = 0;
	long time_offset = 0;
	const char *proof_mode = NULL;
	struct timespec now;
	struct rdma_conn_param param = { .retry_count = 7 };
	struct ibv_qp_init_attr qpa = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct sockaddr_in dst = { .sin_family = AF_INET };
	struct sockaddr_in src = { .sin_family = AF_INET };
	const char *remote = NULL, *key = NULL;
	int c, expect = -1, rc = 1, port = -1, len = sizeof(req);
	int ports[MAX_PORTS], nports = 0;
	char *tok, *save;
	int src_port = 0, hold_ms = 0;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct ibv_cq *cq = NULL;
	bool listen = false;

	while ((c = getopt(argc, argv, "r:P:k:b:u:n:i:m:v:l:H:x:E:LK:A:T:F:")) != -1) {
		switch (c) {
		case 'r': remote = optarg; break;
		case 'P':
			for (tok = strtok_r(optarg, ",", &save);
			     tok && nports < MAX_PORTS;
			     tok = strtok_r(NULL, ",", &save))
				ports[nports++] = atoi(tok);
			port = nports ? ports[0] : -1;
			break;
		case 'b': src_port = atoi(optarg); break;
		case 'H': hold_ms = atoi(optarg); break;
		case 'E': expect_errno = atoi(optarg); break;
		case 'L': listen = true; break;
		case 'k': key = optarg; break;
		case 'u': req.uid = htonl(strtoul(optarg, NULL, 0)); break;
		case 'n': req.num_conn = htons(atoi(optarg)); break;
		case 'i': req.qp_index = htons(atoi(optarg)); break;
		case 'm': req.magic = htonl(strtoul(optarg, NULL, 0)); break;
		case 'v': req.version = htons(atoi(optarg)); break;
		case 'l': len = atoi(optarg); break;
		case 'x': expect = atoi(optarg); break;
		case 'K':
			ckey_len = parse_hex(optarg, ckey, sizeof(ckey));
			if (ckey_len < 16)
				return 2;
			break;
		case 'A': req.flags = strtoul(optarg, NULL, 0); break;
		case 'T': time_offset = strtol(optarg, NULL, 0); break;
		case 'F': proof_mode = optarg; break;
		default: return 2;
		}
	}
	if (listen && port > 0 && port < 65536 && hold_ms >= 0)
		return listen_mode(ports, nports, hold_ms);
	if (!remote || !key || strlen(key) > sizeof(req.key) ||
	    len < 0 || len > 56 || port <= 0 || port > 65535 ||
	    src_port < 0 || src_port > 65535 || hold_ms < 0 ||
	    inet_pton(AF_INET, remote, &dst.sin_addr) != 1) {
		fprintf(stderr, "usage: see the comment at the top of %s\n",
			__FILE__);
		return 2;
	}
	dst.sin_port = htons(port);
	req.key_len = strlen(key);
	memcpy(req.key, key, req.key_len);

	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP)) {
		perror("rdma_create_id");
		return 1;
	}
	if (src_port) {
		src.sin_port = htons(src_port);
		rc = failed("bind", rdma_bind_addr(id, (struct sockaddr *)&src));
		if (rc >= 0)
			return rc;
		rc = 1;
	}
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000) ||
	    get_event(RDMA_CM_EVENT_ADDR_RESOLVED, &ev))
		return 1;
	rdma_ack_cm_event(ev);
	if (rdma_resolve_route(id, 2000) ||
	    get_event(RDMA_CM_EVENT_ROUTE_RESOLVED, &ev))
		return 1;
	rdma_ack_cm_event(ev);

	if (hold_ms && !proof_mode) {
		/* No QP: librdmacm leaves the RTU to rdma_establish(). */
		param.qp_num = 0x4242;
	} else {
		cq = ibv_create_cq(id->verbs, 8, NULL, NULL, 0);
		qpa.send_cq = cq;
		qpa.recv_cq = cq;
		if (!cq || rdma_create_qp(id, NULL, &qpa)) {
			perror("create qp");
			return 1;
		}
	}
	clock_gettime(CLOCK_REALTIME, &now);
	req.time_ns = htobe64_((uint64_t)(now.tv_sec + time_offset) *
			       1000000000ull + now.tv_nsec);
	if (getrandom(req.nonce, sizeof(req.nonce), 0) != sizeof(req.nonce) ||
	    getrandom(req.tag, sizeof(req.tag), 0) != sizeof(req.tag))
		return 1;
	if (ckey_len) {
		struct auth_msg m = {
			.version = 2,
			.flags = req.flags,
			.qp_index = req.qp_index,
			.num_conn = req.num_conn,
			.key_len = req.key_len,
			.uid = req.uid,
			.time_ns = req.time_ns,
			.client_qpn = htonl(id->qp ? id->qp->qp_num :
					    param.qp_num),
		};

		memcpy(m.key, req.key, sizeof(m.key));
		memcpy(m.nonce_c, req.nonce, sizeof(m.nonce_c));
		mapped(m.client_addr,
		       (struct sockaddr_in *)rdma_get_local_addr(id));
		mapped(m.server_addr, &dst);
		if (req_tag(ckey, ckey_len, &m, req.tag))
			return 1;
	}
	param.private_data = &req;
	param.private_data_len = len;
	if (rdma_connect(id, &param)) {
		perror("rdma_connect");
		return 1;
	}
	if (get_event(RDMA_CM_EVENT_REJECTED, &ev) < 0)
		return 1;
	if (ev->event == RDMA_CM_EVENT_REJECTED) {
		const struct rej_pdata *rej = ev->param.conn.private_data;
		int reason = 0;

		if (rej && ev->param.conn.private_data_len >= sizeof(*rej) &&
		    ntohl(rej->magic) == 0x5256434d)
			reason = ntohs(rej->reason);
		printf("rejected status %d reason %d\n", ev->status, reason);
		rc = expect < 0 || (expect && expect == reason) ? 0 : 1;
	} else if (ev->event == RDMA_CM_EVENT_CONNECT_RESPONSE) {
		printf("accepted, holding %d ms\n", hold_ms);
		fflush(stdout);
		usleep(hold_ms * 1000);
		rc = expect == 0 ? 0 : 1;
	} else {
		printf("%s\n", rdma_event_str(ev->event));
		if (ev->event == RDMA_CM_EVENT_ESTABLISHED)
			rc = expect == 0 ? 0 : 1;
		if (ev->event == RDMA_CM_EVENT_ESTABLISHED && proof_mode) {
			if (send_instead_of_proof(id, cq,
						  !strcmp(proof_mode, "write")))
				rc = 1;
			fflush(stdout);
			usleep(hold_ms * 1000);
		}
	}
	rdma_ack_cm_event(ev);
	if (cq) {
		rdma_destroy_qp(id);
		ibv_destroy_cq(cq);
	}
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	return rc;
}
