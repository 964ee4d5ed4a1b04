// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv_rendezvous - a rendezvous transfer between two nodes, done the way an
 * MPI or libfabric provider would do it with rv:
 *
 *   control (TCP socket)              bulk data (rv)
 *   sender: RTS {tag, size}  ------>
 *                                     receiver: rv_reg_mem_keys(buf,
 *                                                 REMOTE_WRITE)
 *           <------  CTS {tag, iova, rkey, slot, nkeys, shift}, keys
 *   sender: rv_reg_mem(src), rv_post_write(imm = slot | tag) per key ====>
 *   sender: reaps RV_EVENT_SEND each  receiver: reaps RV_EVENT_RECV(tag)
 *                                               per key, checks the data
 *
 * rv gives a buffer with remote access one key per aligned chunk of
 * 1 << shift bytes it touches (2 MiB on rxe), and a write must stay in one
 * chunk: the sender writes chunk by chunk (rv stripes the writes over the
 * connection's QPs), the receiver counts one RECV per key.
 *
 * The receiver runs with -s and waits for the sender's TCP connection; the
 * sender runs with -c <receiver's host>.  Before the transfer the two
 * exchange their RDMA addresses (the IPv4 address of the GID each
 * attached with) and slots over the socket, and both create and connect
 * the job's rv connection to the other.
 *
 * For each message size from -m to -M (doubling), -t bytes are sent in
 * messages of that size.  The sender fills each message with a pattern
 * derived from its tag; the receiver poisons its buffer before each CTS and
 * verifies every byte after the RECV event, so stale or misplaced data
 * fails.  Both print a line per size; the receiver's bandwidth is from its
 * first CTS to its last RECV, control messages included.  Exit status: 0
 * when every message arrived intact, 1 on a failure, 2 on a usage error.
 *
 * One message is in flight at a time, which keeps the example short; a
 * middleware pipelines RTS/CTS for several messages and posts several
 * writes (rv_post_writes()).  The MR cache makes the repeated rv_reg_mem()
 * of the same buffers cheap: after the first message of each size they are
 * hits.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rv/librv.h>

#define DEMO_MAGIC	0x52564450u	/* "RVDP" */
#define DEMO_VERSION	2
#define DEFAULT_PORT	"18551"
#define DEFAULT_KEY	"rv-demo"
#define MSG_HELLO	1
#define MSG_RTS		2
#define MSG_CTS		3
#define MSG_DONE	4
/* Bounds each wait for an event, so a lost write ends the run. */
#define EVENT_TIMEOUT_MS	60000

/*
 * The control message: one fixed-size, big-endian struct for every kind,
 * so a reader never has to parse lengths.
 */
struct ctl {
	uint32_t magic;
	uint16_t version;
	uint16_t kind;
	uint32_t tag;
	uint32_t slot;		/* HELLO, CTS: the slot of whoever sends it */
	uint32_t addr;		/* HELLO: RDMA IPv4 address */
	uint32_t rkey;		/* CTS: the key of iova's chunk */
	uint32_t nkeys;		/* CTS: keys; above 1 they follow (__be32) */
	uint32_t rkey_shift;	/* CTS: log2 of a key chunk's bytes */
	uint64_t size;		/* HELLO: largest message; RTS: message bytes;
				 * DONE: bytes sent, or verified
				 */
	uint64_t iova;		/* CTS */
};

static struct {
	const char *ibdev;
	int gid_index;
	const char *port;
	const char *key;
	const char *peer;	/* sender: the receiver's host */
	uint64_t total;
	uint64_t min_size;
	uint64_t max_size;
	bool quiet;
} opt = {
	.gid_index = -1,
	.port = DEFAULT_PORT,
	.key = DEFAULT_KEY,
	.total = 64ull << 20,
	.min_size = 1ull << 20,
	.max_size = 16ull << 20,
};

static struct rv *rv;
static int sock = -1;
static uint32_t conn;		/* rv connection handle */
static uint32_t max_segment;	/* longest single write of the port */

static void die(const char *what, int err)
{
	fprintf(stderr, "rv_rendezvous: %s: %s\n", what, strerror(err));
	exit(1);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- control channel --------------------------------------------------- */

static void send_all(const void *buf, size_t left)
{
	const char *p = buf;

	while (left) {
		ssize_t n = send(sock, p, left, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("send", errno);
		p += n;
		left -= n;
	}
}

static void ctl_send_keys(uint16_t kind, uint32_t tag, uint32_t slot,
			  uint32_t addr, const struct rv_reg_mem *reg,
			  const uint32_t *keys, uint64_t size)
{
	struct ctl m = {
		.magic = htobe32(DEMO_MAGIC), .version = htobe16(DEMO_VERSION),
		.kind = htobe16(kind), .tag = htobe32(tag),
		.slot = htobe32(slot), .addr = addr, .size = htobe64(size),
	};
	uint32_t i, be;

	if (reg) {
		m.rkey = htobe32(reg->rkey);
		m.nkeys = htobe32(reg->nr_rkeys);
		m.rkey_shift = htobe32(reg->rkey_shift);
		m.iova = htobe64(reg->iova);
	}
	send_all(&m, sizeof(m));
	for (i = 0; reg && reg->nr_rkeys > 1 && i < reg->nr_rkeys; i++) {
		be = htobe32(keys[i]);
		send_all(&be, sizeof(be));
	}
}

static void ctl_send(uint16_t kind, uint32_t tag, uint32_t slot,
		     uint32_t addr, uint64_t size)
{
	ctl_send_keys(kind, tag, slot, addr, NULL, NULL, size);
}

static void recv_all(void *buf, size_t left)
{
	char *p = buf;

	while (left) {
		ssize_t n = recv(sock, p, left, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("recv", errno);
		if (n == 0)
			die("control connection", ECONNRESET);
		p += n;
		left -= n;
	}
}

/*
 * Receives one message and checks it is of @kind, or RTS or DONE when
 * @kind is 0 (what a receiver expects next), and of @tag when not ~0.
 */
static struct ctl ctl_recv(uint16_t kind, uint32_t tag)
{
	struct ctl m;

	recv_all(&m, sizeof(m));
	m.magic = be32toh(m.magic);
	m.version = be16toh(m.version);
	m.kind = be16toh(m.kind);
	m.tag = be32toh(m.tag);
	m.slot = be32toh(m.slot);
	m.rkey = be32toh(m.rkey);
	m.nkeys = be32toh(m.nkeys);
	m.rkey_shift = be32toh(m.rkey_shift);
	m.size = be64toh(m.size);
	m.iova = be64toh(m.iova);
	if (m.magic != DEMO_MAGIC || m.version != DEMO_VERSION ||
	    (kind ? m.kind != kind : m.kind != MSG_RTS && m.kind != MSG_DONE) ||
	    (tag != ~0u && m.tag != tag)) {
		fprintf(stderr,
			"rv_rendezvous: unexpected control message kind %u tag %u (wanted %u/%u)\n",
			m.kind, m.tag, kind, tag);
		exit(1);
	}
	return m;
}

static void ctl_connect(bool server)
{
	struct addrinfo hints = {
		.ai_family = AF_INET, .ai_socktype = SOCK_STREAM,
		.ai_flags = server ? AI_PASSIVE : 0,
	};
	struct addrinfo *ai;
	int one = 1, fd, ret, i;

	ret = getaddrinfo(server ? NULL : opt.peer, opt.port, &hints, &ai);
	if (ret) {
		fprintf(stderr, "rv_rendezvous: %s: %s\n",
			server ? "port" : opt.peer, gai_strerror(ret));
		exit(1);
	}
	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket", errno);
	if (server) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 1))
			die("bind/listen", errno);
		sock = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
		if (sock < 0)
			die("accept", errno);
		close(fd);
	} else {
		/* The receiver may start later: retry for up to a minute. */
		for (i = 0; connect(fd, ai->ai_addr, ai->ai_addrlen); i++) {
			if (i == 600 || (errno != ECONNREFUSED &&
					 errno != EHOSTUNREACH && errno != EINTR))
				die("connect", errno);
			usleep(100000);
		}
		sock = fd;
	}
	freeaddrinfo(ai);
	/* RTS and CTS are small and latency-bound: no Nagle delay. */
	setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* ---- rv set-up ---------------------------------------------------------- */

/* The first RDMA device in sysfs, when -d is not given. */
static const char *first_ibdev(void)
{
	static char name[256];
	DIR *d = opendir("/sys/class/infiniband");
	struct dirent *e;

	while (d && (e = readdir(d))) {
		if (e->d_name[0] != '.') {
			snprintf(name, sizeof(name), "%s", e->d_name);
			closedir(d);
			return name;
		}
	}
	if (d)
		closedir(d);
	return NULL;
}

/* Opens /dev/rv and attaches to the demo's job; returns the RDMA address. */
static uint32_t rv_setup(void)
{
	struct rv_attach at;
	struct in_addr ip;
	uint32_t addr;
	int idx, gid, ret;

	if (!opt.ibdev)
		opt.ibdev = first_ibdev();
	if (!opt.ibdev)
		die("no RDMA device in /sys/class/infiniband", ENODEV);
	/*
	 * rv's connections use the job's GID as their IP source address, so
	 * the demo needs a GID carrying an IPv4 address: with -g that entry,
	 * otherwise the first RoCE v2 one.
	 */
	gid = rv_ipv4_gid(opt.ibdev, 1, opt.gid_index, &ip);
	if (gid < 0) {
		fprintf(stderr, "rv_rendezvous: %s port 1 has no %s GID with an IPv4 address: %s\n",
			opt.ibdev, opt.gid_index < 0 ? "RoCE v2" : "such",
			strerror(-gid));
		exit(1);
	}
	addr = ip.s_addr;
	ret = rv_open(&rv, 0);
	if (ret)
		die("rv_open (is rv loaded?)", -ret);
	idx = rv_device_index(opt.ibdev);
	if (idx < 0)
		die(opt.ibdev, -idx);

	memset(&at, 0, sizeof(at));
	at.dev_index = idx;
	at.port_num = 1;
	at.gid_index = gid;
	at.job_key_len = strlen(opt.key);
	if (at.job_key_len < 1 || at.job_key_len > RV_JOB_KEY_MAX)
		die("job key length", EINVAL);
	memcpy(at.job_key, opt.key, at.job_key_len);
	ret = rv_attach(rv, &at);
	if (ret < 0)
		die("rv_attach", -ret);
	if (!opt.quiet) {
		char a[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, &addr, a, sizeof(a));
		printf("attached: %s gid %d (%s), job \"%s\", slot %d, %u QPs per node\n",
		       opt.ibdev, gid, a, opt.key, ret, at.num_conn);
	}
	return addr;
}

/* Both sides create the job's connection to the other and wait for it. */
static void rv_connect(uint32_t peer_addr)
{
	struct sockaddr_in sin = {
		.sin_family = AF_INET, .sin_addr.s_addr = peer_addr,
	};
	struct rv_conn_query q;
	int h, ret;

	h = rv_conn_create(rv, (struct sockaddr *)&sin, sizeof(sin), NULL);
	if (h < 0)
		die("rv_conn_create", -h);
	conn = h;
	ret = rv_conn_connect(rv, conn, 0);
	if (ret)
		die("rv_conn_connect", -ret);
	ret = rv_conn_wait(rv, conn, 90000, &q);
	if (ret < 0)
		die("rv_conn_wait", -ret);
	if (ret != RV_CONN_STATE_CONNECTED) {
		fprintf(stderr, "rv_rendezvous: connection failed, reason %u\n",
			q.reason);
		exit(1);
	}
	max_segment = q.max_segment;
	if (!opt.quiet)
		printf("connected: %u QPs, %s, generation %llu, max segment %u\n",
		       q.connected,
		       q.role == RV_CONN_ROLE_CLIENT ? "client" : "server",
		       (unsigned long long)q.generation, q.max_segment);
}

/*
 * Waits for the next event and checks it is of @kind; returns it.  A
 * middleware would dispatch every event it reaps; the demo has exactly one
 * in flight, so anything else is a failure.
 */
static struct rv_event next_event(uint32_t kind)
{
	struct rv_event ev;
	double deadline = now() + EVENT_TIMEOUT_MS / 1000.0;
	int n;

	for (;;) {
		n = rv_poll_events(rv, &ev, 1);
		if (n < 0)
			die("rv_poll_events", -n);
		if (n == 1)
			break;
		if (now() > deadline)
			die("waiting for an event", ETIMEDOUT);
		n = rv_wait_events(rv, 1000);
		if (n < 0 && n != -EINTR)
			die("rv_wait_events", -n);
	}
	if (ev.kind != kind) {
		fprintf(stderr, "rv_rendezvous: event kind %u, wanted %u\n",
			ev.kind, kind);
		exit(1);
	}
	return ev;
}

/* ---- the data ------------------------------------------------------------ */

/* Word i of message @tag; differs between messages and within one. */
static inline uint64_t pattern(uint32_t tag, uint64_t i)
{
	return ((uint64_t)tag << 40) ^ (i * 0x9e3779b97f4a7c15ull);
}

static void fill(uint64_t *p, uint64_t bytes, uint32_t tag)
{
	uint64_t i;

	for (i = 0; i < bytes / 8; i++)
		p[i] = pattern(tag, i);
}

/* Returns the index of the first wrong word, or UINT64_MAX. */
static uint64_t verify(const uint64_t *p, uint64_t bytes, uint32_t tag)
{
	uint64_t i;

	for (i = 0; i < bytes / 8; i++)
		if (p[i] != pattern(tag, i))
			return i;
	return UINT64_MAX;
}

static void *alloc_buf(uint64_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	if (p == MAP_FAILED)
		die("mmap", errno);
	return p;
}

static void print_stats(const char *who)
{
	struct rv_mr_stats ms;
	struct rv_stats s;

	if (rv_stats(rv, &s) || rv_mr_stats(rv, &ms))
		return;
	printf("%s stats: writes %llu posted, %llu completed, %llu failed, %llu EAGAIN; recvs %llu (%llu bytes); ring overflows %llu; MR cache %llu hits, %llu misses\n",
	       who, (unsigned long long)s.writes_posted,
	       (unsigned long long)s.writes_completed,
	       (unsigned long long)s.writes_failed,
	       (unsigned long long)s.posts_eagain,
	       (unsigned long long)s.recvs,
	       (unsigned long long)s.bytes_received,
	       (unsigned long long)s.ring_overflows,
	       (unsigned long long)ms.hits, (unsigned long long)ms.misses);
}

/* The receiver's keys: CTS's rkey alone, or the array after it. */
static uint32_t *cts_keys;

static bool recv_keys(const struct ctl *cts)
{
	static uint32_t nkeys;
	uint32_t i;

	if (!cts->nkeys || cts->nkeys > RV_MAX_REG_KEYS ||
	    cts->rkey_shift < 12 || cts->rkey_shift > 40) {
		fprintf(stderr, "rv_rendezvous: CTS with %u keys, shift %u\n",
			cts->nkeys, cts->rkey_shift);
		return false;
	}
	if (cts->nkeys > nkeys) {
		free(cts_keys);
		nkeys = cts->nkeys;
		cts_keys = malloc(nkeys * sizeof(*cts_keys));
		if (!cts_keys)
			die("malloc", ENOMEM);
	}
	cts_keys[0] = cts->rkey;
	if (cts->nkeys == 1)
		return true;
	recv_all(cts_keys, cts->nkeys * sizeof(*cts_keys));
	for (i = 0; i < cts->nkeys; i++)
		cts_keys[i] = be32toh(cts_keys[i]);
	return true;
}

/*
 * One write per key chunk of the destination, all with the tag: a write
 * must stay within one key.  rv stripes them over the connection's QPs.
 */
static int post_chunks(const struct ctl *cts, const uint64_t *src,
		       uint64_t size, int mr, uint32_t tag,
		       uint32_t slot_bits)
{
	uint64_t off = 0, len;
	struct rv_write w;
	int ret;

	while (off < size) {
		len = rv_rkey_span(cts->iova + off, cts->rkey_shift);
		if (len > size - off)
			len = size - off;
		memset(&w, 0, sizeof(w));
		w.wr_id = tag;
		w.local_addr = (uintptr_t)src + off;
		w.remote_addr = cts->iova + off;
		w.length = len;
		w.conn_handle = conn;
		w.mr_handle = mr;
		w.rkey = cts_keys[rv_rkey_index(cts->iova, w.remote_addr,
						cts->rkey_shift)];
		w.imm = rv_imm(slot_bits, cts->slot, tag);
		while ((ret = rv_post_write(rv, &w)) == -EAGAIN)
			rv_wait_events(rv, 100);
		if (ret)
			return ret;
		off += len;
	}
	return 0;
}

/*
 * The sender: one RTS per message, then the writes into the buffer the
 * CTS names, with the receiver's slot and the tag in the immediate.
 */
static int run_sender(uint32_t my_addr)
{
	uint64_t *src = alloc_buf(opt.max_size);
	uint32_t tag = 0, slot_bits = rv_slot_bits(rv);
	uint64_t size, sent_total = 0, writes = 0, msgs = 0;
	struct ctl hello;
	int ret;

	ctl_send(MSG_HELLO, 0, rv_slot(rv), my_addr, opt.max_size);
	hello = ctl_recv(MSG_HELLO, ~0u);
	rv_connect(hello.addr);

	for (size = opt.min_size; size <= opt.max_size; size *= 2) {
		uint64_t count = opt.total / size, m;
		double t0 = now(), dt;

		for (m = 0; m < count; m++, tag++) {
			struct rv_event ev;
			struct ctl cts;
			uint32_t k;
			int mr;

			ctl_send(MSG_RTS, tag, 0, 0, size);
			/* Filling and registering overlap the peer's work. */
			fill(src, size, tag);
			mr = rv_reg_mem(rv, src, size, 0, NULL);
			if (mr < 0)
				die("rv_reg_mem (source)", -mr);
			cts = ctl_recv(MSG_CTS, tag);
			if (!recv_keys(&cts))
				return 1;

			writes += cts.nkeys;
			msgs++;
			ret = post_chunks(&cts, src, size, mr, tag, slot_bits);
			if (ret)
				die("rv_post_write", -ret);
			for (k = 0; k < cts.nkeys; k++) {
				ev = next_event(RV_EVENT_SEND);
				if (ev.status || ev.wr_id != tag) {
					fprintf(stderr, "rv_rendezvous: write %u completed with status %u (wr_id %llu)\n",
						tag, ev.status,
						(unsigned long long)ev.wr_id);
					return 1;
				}
			}
			ret = rv_dereg_mem(rv, mr);
			if (ret < 0)
				die("rv_dereg_mem", -ret);
		}
		dt = now() - t0;
		sent_total += count * size;
		printf("sent %4llu x %8llu bytes = %llu bytes in %.2f s, %.1f MB/s\n",
		       (unsigned long long)count, (unsigned long long)size,
		       (unsigned long long)(count * size), dt,
		       count * size / dt / 1e6);
	}
	ctl_send(MSG_DONE, tag, 0, 0, sent_total);
	hello = ctl_recv(MSG_DONE, tag);
	print_stats("sender");
	if (hello.size != sent_total) {
		printf("FAIL: receiver verified %llu of %llu bytes\n",
		       (unsigned long long)hello.size,
		       (unsigned long long)sent_total);
		return 1;
	}
	printf("sender: %llu writes for %llu messages (one per key chunk of the receiver's buffer)\n",
	       (unsigned long long)writes, (unsigned long long)msgs);
	printf("sender: %llu bytes sent, receiver verified all of them\n",
	       (unsigned long long)sent_total);
	return 0;
}

/*
 * The receiver: for each RTS, poison the buffer, register it for remote
 * writes (a cache hit after the first time), answer with a CTS, wait for
 * the RECV event carrying the tag and verify every byte.
 */
static void print_received(uint64_t count, uint64_t size, uint64_t bad,
			   double t0)
{
	double dt = now() - t0;

	printf("received %4llu x %8llu bytes = %llu bytes in %.2f s, %.1f MB/s, ",
	       (unsigned long long)count, (unsigned long long)size,
	       (unsigned long long)(count * size), dt, count * size / dt / 1e6);
	if (bad)
		printf("%llu messages CORRUPT\n", (unsigned long long)bad);
	else
		printf("verified\n");
}

static int run_receiver(uint32_t my_addr)
{
	static uint32_t keys[RV_MAX_REG_KEYS];
	uint32_t slot_bits = rv_slot_bits(rv), tag = 0;
	uint64_t verified = 0, bad_msgs = 0, size = 0, count = 0, max, bad0 = 0;
	uint64_t recvs = 0, msgs = 0;
	uint64_t *dst;
	double t0 = 0;
	struct ctl m;

	/* The sender's HELLO says how large the buffer must be. */
	m = ctl_recv(MSG_HELLO, ~0u);
	max = m.size;
	if (!max || max > RV_MAX_WRITE_BYTES || max % 8) {
		fprintf(stderr, "rv_rendezvous: HELLO with largest message %llu\n",
			(unsigned long long)max);
		return 1;
	}
	dst = alloc_buf(max);
	ctl_send(MSG_HELLO, 0, rv_slot(rv), my_addr, 0);
	rv_connect(m.addr);

	for (;;) {
		struct rv_reg_mem reg;
		struct rv_event ev;
		uint64_t bad, want_bytes;
		uint32_t k;
		int mr, ret;

		m = ctl_recv(0, tag);
		if (m.kind == MSG_DONE)
			break;
		if (m.size == 0 || m.size > max || m.size % 8) {
			fprintf(stderr, "rv_rendezvous: RTS for %llu bytes\n",
				(unsigned long long)m.size);
			return 1;
		}
		if (m.size != size) {
			if (count)
				print_received(count, size, bad_msgs - bad0, t0);
			size = m.size;
			count = 0;
			bad0 = bad_msgs;
			t0 = now();
		}
		/* Poison the ends so a write that never lands is caught. */
		dst[0] = ~pattern(tag, 0);
		dst[size / 8 - 1] = ~pattern(tag, size / 8 - 1);
		mr = rv_reg_mem_keys(rv, dst, size, RV_ACCESS_REMOTE_WRITE,
				     &reg, keys, RV_MAX_REG_KEYS);
		if (mr < 0)
			die("rv_reg_mem_keys (destination)", -mr);
		ctl_send_keys(MSG_CTS, tag, rv_slot(rv), 0, &reg, keys, size);

		/*
		 * One write per key, each RECV after its data has landed, in
		 * any order (the writes go over several QPs).  RECV's bytes
		 * are those of a write's last work request: 1 up to a piece
		 * of max_segment (rv splits by pages too), within a chunk.
		 */
		want_bytes = size < max_segment ? size : max_segment;
		if (want_bytes > 1ull << reg.rkey_shift)
			want_bytes = 1ull << reg.rkey_shift;
		recvs += reg.nr_rkeys;
		msgs++;
		for (k = 0; k < reg.nr_rkeys; k++) {
			ev = next_event(RV_EVENT_RECV);
			if (rv_imm_slot(slot_bits, ev.imm) !=
			    (uint32_t)rv_slot(rv) ||
			    rv_imm_user(slot_bits, ev.imm) !=
			    (tag & (UINT32_MAX >> slot_bits)) || !ev.bytes ||
			    ev.bytes > want_bytes) {
				fprintf(stderr, "rv_rendezvous: RECV imm 0x%x bytes %u, wanted tag %u bytes 1..%llu\n",
					ev.imm, ev.bytes, tag,
					(unsigned long long)want_bytes);
				return 1;
			}
		}
		bad = verify(dst, size, tag);
		if (bad != UINT64_MAX) {
			bad_msgs++;
			fprintf(stderr, "rv_rendezvous: message %u: word %llu is 0x%llx, wanted 0x%llx\n",
				tag, (unsigned long long)bad,
				(unsigned long long)dst[bad],
				(unsigned long long)pattern(tag, bad));
		} else {
			verified += size;
		}
		ret = rv_dereg_mem(rv, mr);
		if (ret < 0)
			die("rv_dereg_mem", -ret);
		count++;
		tag++;
	}
	if (count)
		print_received(count, size, bad_msgs - bad0, t0);
	ctl_send(MSG_DONE, tag, 0, 0, verified);
	print_stats("receiver");
	if (bad_msgs || verified != m.size) {
		printf("FAIL: %llu of %llu bytes verified, %llu bad messages\n",
		       (unsigned long long)verified,
		       (unsigned long long)m.size,
		       (unsigned long long)bad_msgs);
		return 1;
	}
	printf("receiver: %llu RECVs for %llu messages (one per key chunk)\n",
	       (unsigned long long)recvs, (unsigned long long)msgs);
	printf("receiver: %llu bytes received and verified\n",
	       (unsigned long long)verified);
	return 0;
}

static uint64_t parse_size(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);

	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	}
	if (*end || !v) {
		fprintf(stderr, "rv_rendezvous: bad size '%s'\n", s);
		exit(2);
	}
	return v;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: rv_rendezvous -s [options]          receiver\n"
		"       rv_rendezvous -c HOST [options]     sender\n"
		"  -d IBDEV   RDMA device (default: the first one)\n"
		"  -g INDEX   GID index with an IPv4 address (default: first RoCE v2)\n"
		"  -p PORT    TCP port of the control connection (default %s)\n"
		"  -k KEY     rv job key, same on both sides (default %s)\n"
		"  -t BYTES   bytes per message size (default 64M)\n"
		"  -m BYTES   smallest message (default 1M)\n"
		"  -M BYTES   largest message (default 16M); sizes double from -m\n"
		"  -q         no set-up messages\n"
		"  -h         this text\n",
		DEFAULT_PORT, DEFAULT_KEY);
	exit(2);
}

int main(int argc, char **argv)
{
	bool server = false;
	uint32_t addr;
	int c;

	while ((c = getopt(argc, argv, "sc:d:g:p:k:t:m:M:qh")) != -1) {
		switch (c) {
		case 's': server = true; break;
		case 'c': opt.peer = optarg; break;
		case 'd': opt.ibdev = optarg; break;
		case 'g': opt.gid_index = atoi(optarg); break;
		case 'p': opt.port = optarg; break;
		case 'k': opt.key = optarg; break;
		case 't': opt.total = parse_size(optarg); break;
		case 'm': opt.min_size = parse_size(optarg); break;
		case 'M': opt.max_size = parse_size(optarg); break;
		case 'q': opt.quiet = true; break;
		default: usage();
		}
	}
	if (optind != argc || server == !!opt.peer ||
	    opt.min_size > opt.max_size || opt.min_size % 8 ||
	    opt.total < opt.max_size)
		usage();
	/* Sizes double from -m: -M must be -m times a power of two. */
	if (opt.max_size % opt.min_size ||
	    (opt.max_size / opt.min_size) & (opt.max_size / opt.min_size - 1) ||
	    opt.max_size > RV_MAX_WRITE_BYTES)
		usage();

	setvbuf(stdout, NULL, _IOLBF, 0);
	addr = rv_setup();
	ctl_connect(server);
	c = server ? run_receiver(addr) : run_sender(addr);
	rv_close(rv);
	close(sock);
	return c;
}
