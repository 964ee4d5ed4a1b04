// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv_fi_hostile.c - a hostile peer: raw TCP to the live endpoint, with
 * what the provider must refuse.
 */
#include "rv_fi_test.h"

#define HOSTILE_MS	10000	/* a refusal closes the connection before */
#define KEPT_MS		1500	/* an accepted connection stays this long */

/* A raw TCP connection to A's endpoint, from our RDMA address. */
static int raw_connect(void)
{
	struct rvfi_addr to = name_addr(peer_name), me = name_addr(self_name);
	struct sockaddr_in src = { .sin_family = AF_INET,
				   .sin_addr.s_addr = me.ip };
	struct sockaddr_in dst = { .sin_family = AF_INET,
				   .sin_addr.s_addr = to.ip,
				   .sin_port = to.port };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		die("socket", errno);
	if (bind(fd, (struct sockaddr *)&src, sizeof(src)) ||
	    connect(fd, (struct sockaddr *)&dst, sizeof(dst)))
		die("raw connect", errno);
	return fd;
}

static void raw_bytes(int fd, const void *p, size_t n)
{
	size_t off = 0;

	while (off < n) {
		ssize_t r = send(fd, (const char *)p + off, n - off,
				 MSG_NOSIGNAL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return;	/* closed already: raw_closed() sees it */
		off += r;
	}
}

/* One frame: @h (host order) and @plen bytes of @payload, if any. */
static void raw_frame(int fd, const struct rvfi_hdr *h, const void *payload,
		      size_t plen)
{
	struct rvfi_hdr w = *h;
	char buf[sizeof(w) + 256];

	if (plen > 256)
		die("raw frame", EINVAL);
	w.token = htole32(h->token);
	w.len = htole64(h->len);
	w.nkeys = htole32(h->nkeys);
	memcpy(buf, &w, sizeof(w));
	if (plen)
		memcpy(buf + sizeof(w), payload, plen);
	raw_bytes(fd, buf, sizeof(w) + plen);
}

static void raw_hello(int fd, const struct rvfi_hello *m, size_t len)
{
	struct rvfi_hdr h = { .op = RVFI_OP_HELLO, .len = len };

	raw_frame(fd, &h, m, len);
}

/*
 * Waits up to @ms for the other end to close @fd: 1 closed without a
 * byte written to us, 0 still open, -1 it wrote something (a reply).
 */
static int raw_closed(int fd, int ms)
{
	uint64_t deadline = now_ms() + ms;

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN | POLLRDHUP };
		int64_t left = deadline - now_ms();
		ssize_t r;
		char c;

		if (left <= 0)
			return 0;
		if (poll(&pfd, 1, left) <= 0)
			continue;
		r = recv(fd, &c, 1, MSG_DONTWAIT);
		if (r > 0)
			return -1;
		if (r == 0 || (errno != EAGAIN && errno != EINTR))
			return 1;
	}
}

static void expect(int fd, int ms, int want, const char *name)
{
	int got = raw_closed(fd, ms);

	result(got == want, name, "%s", got == 1 ? "closed" :
	       got ? "the endpoint replied" : "still open");
}

/*
 * A HELLO from a made-up endpoint of our node (not our real one, so that
 * nothing it sends can be taken for our endpoint's), for A's endpoint.
 */
static struct rvfi_hello forged_hello(void)
{
	struct rvfi_hello m;

	m.from = name_addr(self_name);
	m.from.port = htons(1);
	m.from.nonce ^= 0x5a5a5a5a5a5a5a5aull;
	m.to_nonce = name_addr(peer_name).nonce;
	return m;
}

/*
 * B, speaking raw TCP to A's live endpoint, sends what the provider must
 * refuse: each connection is closed without a reply (and logged by A,
 * which fabric.sh checks), no claimed length is allocated (a 512 MiB
 * frame header alone must close the connection), and a valid HELLO is
 * not refused.  A meanwhile only progresses; afterwards both endpoints
 * still carry eager and rendezvous messages both ways.
 */
void t_hostile(void)
{
	static const size_t sizes[] = { 1000, 1 << 20 };
	struct rvfi_hello m;
	struct rvfi_hdr h;
	size_t i, dir;
	int fd;

	sync_peer();
	if (!server) {
		fd = raw_connect();
		m = forged_hello();
		m.to_nonce ^= 1;
		raw_hello(fd, &m, sizeof(m));
		expect(fd, HOSTILE_MS, 1, "refuse-hello-wrong-nonce");
		close(fd);

		/*
		 * No nonce (0: sent to a bare address), but A's endpoint
		 * is not published (its port was not chosen): refused.
		 */
		fd = raw_connect();
		m = forged_hello();
		m.to_nonce = 0;
		raw_hello(fd, &m, sizeof(m));
		expect(fd, HOSTILE_MS, 1, "refuse-hello-bare-unpublished");
		close(fd);

		/* An address-only HELLO (no target nonce, older layout). */
		fd = raw_connect();
		m = forged_hello();
		m.from.version = 1;
		m.from.len = 0;
		raw_hello(fd, &m, sizeof(m.from));
		expect(fd, HOSTILE_MS, 1, "refuse-hello-no-nonce");
		close(fd);

		/* The right nonce, but claiming to be on A's node. */
		fd = raw_connect();
		m = forged_hello();
		m.from.ip = name_addr(peer_name).ip;
		raw_hello(fd, &m, sizeof(m));
		expect(fd, HOSTILE_MS, 1, "refuse-hello-wrong-source");
		close(fd);

		fd = raw_connect();
		memset(&h, 0, sizeof(h));
		h.op = RVFI_OP_EAGER;
		h.len = 16;
		raw_frame(fd, &h, sbuf, 16);
		expect(fd, HOSTILE_MS, 1, "refuse-no-hello");
		close(fd);

		fd = raw_connect();
		memset(&h, 0, sizeof(h));
		h.op = RVFI_OP_HELLO;
		h.len = 512u << 20;
		raw_frame(fd, &h, NULL, 0);
		expect(fd, HOSTILE_MS, 1, "refuse-hello-oversized");
		close(fd);

		/*
		 * Admitted (its HELLO in two pieces: the header alone must
		 * not be taken for a whole frame); a stale RDATA is
		 * dropped; then too much.
		 */
		fd = raw_connect();
		m = forged_hello();
		memset(&h, 0, sizeof(h));
		h.op = RVFI_OP_HELLO;
		h.len = sizeof(m);
		raw_frame(fd, &h, NULL, 0);
		usleep(200000);
		raw_bytes(fd, &m, sizeof(m));
		expect(fd, KEPT_MS, 0, "accept-hello-valid");
		memset(&h, 0, sizeof(h));
		h.op = RVFI_OP_RDATA;
		h.token = 0x1234;
		h.len = 200;
		raw_frame(fd, &h, sbuf, 200);
		expect(fd, KEPT_MS, 0, "accept-rdata-stale");
		h.op = RVFI_OP_EAGER;
		h.len = 512u << 20;
		raw_frame(fd, &h, NULL, 0);
		expect(fd, HOSTILE_MS, 1, "refuse-eager-oversized");
		close(fd);

		fd = raw_connect();
		raw_hello(fd, &m, sizeof(m));
		memset(&h, 0, sizeof(h));
		h.op = RVFI_OP_RDATA;
		h.token = 0x1234;
		h.len = 2ull << 30;
		raw_frame(fd, &h, NULL, 0);
		expect(fd, HOSTILE_MS, 1, "refuse-rdata-oversized");
		close(fd);
	}
	sync_peer();	/* A progressed all along, in sync_peer() */

	for (dir = 0; dir < 2; dir++) {
		bool sending = server == (dir == 1);
		bool ok = true;

		for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			struct fi_cq_tagged_entry e;
			struct fi_cq_err_entry err;
			uint64_t seed = 4400 + i + dir * 10;
			int ret;

			if (sending) {
				fill(sbuf, sizes[i], seed);
				ok &= send_wait(sbuf, sizes[i], seed) == 0;
				continue;
			}
			ret = trecv(rbuf, sizes[i], peer, seed, 0, &e);
			if (!ret)
				ret = wait_comp(rxcq, &e, NULL, &err);
			if (ret != 1 || e.len != sizes[i] ||
			    check(rbuf, sizes[i], seed) >= 0) {
				ok = false;
				diag("recv %zu after the hostile peer: ret %d",
				     sizes[i], ret);
			}
		}
		result(ok, dir ? "after-hostile-a-to-b" : "after-hostile-b-to-a",
		       "a message failed");
		sync_peer();
	}
}
