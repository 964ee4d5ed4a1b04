// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv_fuzz - throw random and half-valid ioctls, ring scribbles, munmaps,
 * forks and re-opens at /dev/rv, optionally with a live connection to a
 * peer node running the same program.
 *
 *   rv_fuzz [-s SEED] [-n ITERATIONS] [-p PEER_IPV4 [-l]] [-d IBDEV]
 *
 * With a peer, a TCP control socket (-l: this side listens) carries each
 * side's landing buffer (address, rkey, slot) so that many writes are
 * valid, and a final "done" so that neither closes while the other still
 * writes.
 *
 * The kernel must answer every call with success or a documented errno,
 * never crash, leak or hang (the VM harness fails the run on any kernel
 * report, and module unload afterwards proves nothing is left), and every
 * write it accepted must end with exactly one SEND event.  The same seed
 * replays the same sequence of calls (the kernel's answers may differ
 * with timing).  TAP output.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rv/librv.h>
#include "rv_test_util.h"

#define NBUF		4
#define BUF_BYTES	(1U << 20)
#define MAX_HANDLES	8
#define CTL_PORT	18599

/*
 * What a node tells its peer over the control socket: where writes may
 * land.  Sent at setup and after every re-open; @slot UINT32_MAX says
 * "done, about to close".
 */
struct landing {
	uint64_t addr;
	uint32_t rkey;
	uint32_t slot;
};

static uint64_t rng_state;

/* xorshift64*: small, seedable, good enough to pick cases. */
static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

static uint64_t rnd_below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

struct fuzz {
	struct rv *rv;
	uint32_t table_entries;		/* MR table slots, from ATTACH */
	const char *ibdev;
	int gid_index;
	bool have_peer;
	struct sockaddr_in peer;
	uint32_t conn;			/* connection handle, 0 if none */
	uint8_t *buf[NBUF];
	uint32_t mr[MAX_HANDLES];	/* registration handles held */
	uint32_t rkey[MAX_HANDLES];
	unsigned int nmr;
	uint64_t accepted;		/* writes the kernel took */
	uint64_t send_events;
	uint64_t calls, errors;
	uint64_t post_errno[160];	/* POST_WRITE answers by errno */
	unsigned int bad;		/* undocumented answers */
	int ctl;			/* control socket to the peer, or -1 */
	uint8_t *land;			/* where the peer's writes land */
	struct landing peer_land;	/* where ours may land, if known */
	bool peer_done;
	unsigned int slot_bits;
};

/* Every errno some rv command documents. */
static bool errno_documented(int e)
{
	switch (e) {
	case EINVAL: case EFAULT: case ENOTTY: case E2BIG: case ENOMEM:
	case ENOTCONN: case EPERM: case ENOENT: case ENODEV: case EALREADY:
	case EBUSY: case ENOSPC: case EAGAIN: case EPIPE: case ERANGE:
	case ESTALE: case EMSGSIZE: case EAFNOSUPPORT: case EADDRINUSE:
	case EADDRNOTAVAIL: case EINTR: case EOVERFLOW: case EOPNOTSUPP:
	case EDQUOT:
		return true;
	default:
		return false;
	}
}

static void check(struct fuzz *f, const char *what, int ret)
{
	f->calls++;
	if (ret >= 0)
		return;
	f->errors++;
	if (!errno_documented(-ret) && f->bad++ < 20)
		printf("# %s: undocumented error %d (%s)\n", what, ret,
		       strerror(-ret));
}

/* An address of each interesting kind. */
static uint64_t rnd_addr(struct fuzz *f)
{
	static uint8_t *hole;

	if (!hole) {
		hole = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			    -1, 0);
		if (hole == MAP_FAILED)
			hole = NULL;
	}
	switch (rnd_below(7)) {
	case 0: return 0;
	case 1: return 0xffff888000000000ULL + rnd_below(1 << 20);
	case 2: return (uintptr_t)hole;
	case 3: return rnd();
	case 4: return UINT64_MAX - rnd_below(4096);
	default:
		return (uintptr_t)f->buf[rnd_below(NBUF)] +
		       rnd_below(BUF_BYTES);
	}
}

static uint64_t rnd_len(void)
{
	switch (rnd_below(6)) {
	case 0: return 0;
	case 1: return rnd();
	case 2: return 1 + rnd_below(64);
	case 3: return RV_MAX_WRITE_BYTES + rnd_below(2);
	default: return rnd_below(BUF_BYTES);
	}
}

static uint32_t rnd_handle(const struct fuzz *f, bool conn)
{
	switch (rnd_below(4)) {
	case 0: return (uint32_t)rnd();
	case 1: return 0;
	default:
		if (conn)
			return f->conn;
		return f->nmr ? f->mr[rnd_below(f->nmr)] : 1;
	}
}

/* A raw command with random number, size and bytes. */
static void op_raw(struct fuzz *f)
{
	uint8_t arg[512];
	unsigned int nr = rnd_below(20), i;
	uint32_t size = rnd_below(4) ? rnd_below(sizeof(arg)) :
			(uint32_t)rnd();
	void *p = arg;
	int ret;

	for (i = 0; i < sizeof(arg); i++)
		arg[i] = rnd_below(3) ? 0 : (uint8_t)rnd();
	memcpy(arg, &size, sizeof(size));
	if (!rnd_below(8))
		p = (void *)(uintptr_t)rnd_addr(f);
	ret = ioctl(rv_fd(f->rv), _IO(RV_IOCTL_TYPE, nr), p);
	check(f, "raw ioctl", ret < 0 ? -errno : ret);
}

static void fill_write(struct fuzz *f, struct rv_write *w)
{
	bool valid = rnd_below(4);

	memset(w, 0, sizeof(*w));
	w->wr_id = rnd();
	w->conn_handle = valid ? f->conn : rnd_handle(f, true);
	w->imm = (uint32_t)rnd();
	if (valid && f->nmr) {
		uint32_t off = rnd_below(BUF_BYTES);

		w->mr_handle = f->mr[rnd_below(f->nmr)];
		w->local_addr = (uintptr_t)f->buf[0] + off;
		w->length = rnd_below(BUF_BYTES - off + 1);
		/* Mostly into the peer's landing buffer, in bounds. */
		if (f->peer_land.rkey && rnd_below(4)) {
			w->rkey = f->peer_land.rkey;
			w->remote_addr = f->peer_land.addr +
					 rnd_below(BUF_BYTES - w->length + 1);
			w->imm = rv_imm(f->slot_bits, f->peer_land.slot,
					w->imm);
		} else {
			w->rkey = f->rkey[rnd_below(f->nmr)];
			w->remote_addr = (uintptr_t)f->buf[0] +
					 rnd_below(BUF_BYTES);
		}
		if (!w->length)
			w->mr_handle = 0;
		return;
	}
	w->mr_handle = rnd_handle(f, false);
	w->local_addr = rnd_addr(f);
	w->length = rnd_len();
	w->remote_addr = rnd_addr(f);
	w->rkey = (uint32_t)rnd();
}

static void op_post(struct fuzz *f)
{
	struct rv_write w[8];
	unsigned int n = rnd_below(2) ? 1 : 1 + rnd_below(8), i;
	int ret;

	for (i = 0; i < n; i++)
		fill_write(f, &w[i]);
	if (n == 1) {
		ret = rv_post_write(f->rv, &w[0]);
		check(f, "post_write", ret);
		if (ret <= 0 && -ret < 160)
			f->post_errno[-ret]++;
		if (!ret)
			f->accepted++;
		/* A middleware restarts a connection that gave up. */
		if (ret == -EPIPE && f->conn)
			check(f, "conn_connect",
			      rv_conn_connect(f->rv, f->conn, 60000));
		return;
	}
	if (!rnd_below(6)) {
		struct rv_post_writes cmd = {
			.size = sizeof(cmd),
			.writes = rnd_addr(f),
			.count = (uint32_t)rnd_below(RV_MAX_POST_WRITES + 2),
			.entry_size = rnd_below(2) ? sizeof(struct rv_write) :
				      (uint32_t)rnd_below(128),
		};

		/* Mostly garbage: what the kernel took is counted below. */
		ret = ioctl(rv_fd(f->rv), RV_IOCTL_POST_WRITES, &cmd);
		check(f, "post_writes raw", ret < 0 ? -errno : ret);
		if (!ret)
			f->accepted += cmd.posted;
		return;
	}
	ret = rv_post_writes(f->rv, w, n);
	check(f, "post_writes", ret);
	if (ret > 0)
		f->accepted += ret;
}

static void op_mr(struct fuzz *f)
{
	struct rv_reg_mem out;
	int ret;

	switch (rnd_below(4)) {
	case 0:
		if (f->nmr == MAX_HANDLES)
			break;
		ret = rv_reg_mem(f->rv, f->buf[0], BUF_BYTES,
				 RV_ACCESS_REMOTE_WRITE, &out);
		check(f, "reg_mem", ret);
		if (ret > 0) {
			f->mr[f->nmr] = ret;
			f->rkey[f->nmr++] = out.rkey;
		}
		break;
	case 1:
		if (!f->nmr)
			break;
		ret = rv_dereg_mem(f->rv, f->mr[--f->nmr]);
		check(f, "dereg_mem", ret);
		break;
	case 2:
		ret = rv_reg_mem(f->rv, (void *)(uintptr_t)rnd_addr(f),
				 rnd_len(), (uint32_t)rnd_below(16), NULL);
		check(f, "reg_mem random", ret);
		if (ret > 0)
			check(f, "dereg_mem random", rv_dereg_mem(f->rv, ret));
		break;
	default: {
		struct rv_evict e = { .mode = RV_EVICT_AMOUNT,
				      .target_entries = 1 + rnd_below(4) };

		check(f, "evict", rv_evict(f->rv, &e));
		break;
	}
	}
}

/* Replace a buffer's pages under its registrations (and under writes). */
static void op_remap(struct fuzz *f)
{
	unsigned int i = rnd_below(NBUF);
	void *p;

	/* Registrations of buf[0] go stale: drop them, as a user would. */
	if (!i)
		while (f->nmr)
			check(f, "dereg_mem stale",
			      rv_dereg_mem(f->rv, f->mr[--f->nmr]));
	p = mmap(f->buf[i], BUF_BYTES, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	if (p == MAP_FAILED)
		f->bad++;
}

/*
 * The MR table's mappings: the slots with bad offsets, lengths and
 * write access (refused), the hold counts scribbled (then put back, so
 * that registrations a peer writes to stay held).
 */
static void op_table(struct fuzz *f)
{
	size_t tlen = RV_MR_TABLE_MMAP_SIZE(f->table_entries);
	size_t hlen = RV_MR_HOLDS_MMAP_SIZE(f->table_entries);
	uint32_t *holds, saved, i;
	void *p;

	if (!f->table_entries)
		return;

	p = mmap(NULL, rnd_below(2) ? tlen : 4096 * (1 + rnd_below(64)),
		 rnd_below(2) ? PROT_READ : PROT_READ | PROT_WRITE,
		 rnd_below(4) ? MAP_SHARED : MAP_PRIVATE, rv_fd(f->rv),
		 RV_MR_TABLE_MMAP_OFFSET + 4096 * rnd_below(2));
	f->calls++;
	if (p != MAP_FAILED) {
		/* Only a read-only whole mapping may succeed, and stay so. */
		if (mprotect(p, 4096, PROT_READ | PROT_WRITE) == 0)
			f->bad++;
		munmap(p, tlen);
	}
	holds = mmap(NULL, hlen, PROT_READ | PROT_WRITE, MAP_SHARED,
		     rv_fd(f->rv), RV_MR_HOLDS_MMAP_OFFSET);
	if (holds == MAP_FAILED) {
		printf("# mapping the MR table's holds failed: %s\n",
		       strerror(errno));
		f->bad++;
		return;
	}
	i = (uint32_t)rnd_below(f->table_entries);
	saved = __atomic_load_n(&holds[i], __ATOMIC_RELAXED);
	__atomic_store_n(&holds[i], (uint32_t)rnd(), __ATOMIC_RELEASE);
	usleep(rnd_below(2000));
	__atomic_store_n(&holds[i], saved, __ATOMIC_RELEASE);
	munmap(holds, hlen);
}

/*
 * Scribble on the parts of the ring the kernel must not trust: the header
 * fields librv does not read, and the consumer index, set ahead of the
 * producer (the kernel must see a full ring and count what it drops) and
 * then put back.
 */
static void op_scribble(struct fuzz *f)
{
	size_t len = RV_RING_MMAP_SIZE(RV_MIN_RING_ENTRIES * 4);
	uint32_t *cons, saved, prod;
	uint8_t *base;

	base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
		    rv_fd(f->rv), 0);
	if (base == MAP_FAILED) {
		printf("# second mapping of the ring failed: %s\n",
		       strerror(errno));
		f->bad++;
		return;
	}
	if (rnd_below(2)) {
		cons = (uint32_t *)(base + RV_RING_CONSUMER_OFFSET);
		saved = __atomic_load_n(cons, __ATOMIC_RELAXED);
		prod = __atomic_load_n((uint32_t *)base, __ATOMIC_ACQUIRE);
		__atomic_store_n(cons, prod + 1 + (uint32_t)rnd_below(1U << 30),
				 __ATOMIC_RELEASE);
		usleep(rnd_below(2000));
		__atomic_store_n(cons, saved, __ATOMIC_RELEASE);
	} else {
		/* Not @producer (0..3) nor @overflows (16..23). */
		unsigned int off = 4 + rnd_below(12);

		if (rnd_below(2))
			off = 24 + rnd_below(RV_RING_CONSUMER_OFFSET - 24);
		base[off] = (uint8_t)rnd();
	}
	munmap(base, len);
}

static void op_fork(struct fuzz *f)
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		struct rv_write w;

		/* Not the attaching mm: everything but figures is EPERM. */
		fill_write(f, &w);
		_exit(rv_post_write(f->rv, &w) == -EPERM ? 0 : 1);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid ||
	    !WIFEXITED(status) || WEXITSTATUS(status)) {
		printf("# fork: the child was not refused with EPERM\n");
		f->bad++;
	}
}

static void reap(struct fuzz *f)
{
	struct rv_event ev[64];
	int n, i;

	while ((n = rv_poll_events(f->rv, ev, 64)) > 0)
		for (i = 0; i < n; i++)
			if (ev[i].kind == RV_EVENT_SEND)
				f->send_events++;
}

/* Node 0 of the pair listens, node 1 connects (bounded). */
static int ctl_open(struct fuzz *f, bool listener)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(CTL_PORT) };
	int s, c = -1, one = 1, i;

	s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0)
		return -errno;
	if (listener) {
		struct pollfd p = { .fd = s, .events = POLLIN };

		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(s, (struct sockaddr *)&a, sizeof(a)) || listen(s, 1) ||
		    poll(&p, 1, 120000) != 1) {
			close(s);
			return -ETIMEDOUT;
		}
		c = accept(s, NULL, NULL);
		close(s);
	} else {
		a.sin_addr = f->peer.sin_addr;
		for (i = 0; i < 1200; i++) {
			if (!connect(s, (struct sockaddr *)&a, sizeof(a))) {
				c = s;
				break;
			}
			usleep(100000);
		}
		if (c < 0)
			close(s);
	}
	if (c < 0)
		return -ETIMEDOUT;
	f->ctl = c;
	return 0;
}

static void ctl_send(struct fuzz *f, const struct landing *l)
{
	if (f->ctl >= 0 && send(f->ctl, l, sizeof(*l), MSG_NOSIGNAL) !=
	    sizeof(*l)) {
		printf("# control send failed\n");
		f->bad++;
	}
}

/* Take the peer's news; with @wait_ms, wait that long for its "done". */
static void ctl_poll(struct fuzz *f, int wait_ms)
{
	struct pollfd p = { .fd = f->ctl, .events = POLLIN };
	struct landing l;

	while (f->ctl >= 0 && !f->peer_done &&
	       poll(&p, 1, wait_ms) == 1) {
		if (recv(f->ctl, &l, sizeof(l), MSG_WAITALL) != sizeof(l)) {
			printf("# control channel closed early\n");
			f->bad++;
			f->peer_done = true;
			break;
		}
		if (l.slot == UINT32_MAX)
			f->peer_done = true;
		else
			f->peer_land = l;
	}
}

/* Register the landing buffer and tell the peer about it. */
static int land_publish(struct fuzz *f)
{
	struct rv_reg_mem out;
	struct landing l;
	int h;

	h = rv_reg_mem(f->rv, f->land, BUF_BYTES, RV_ACCESS_REMOTE_WRITE,
		       &out);
	if (h < 0)
		return h;
	l.addr = out.iova;
	l.rkey = out.rkey;
	l.slot = rv_slot(f->rv);
	ctl_send(f, &l);
	return 0;
}

static int fuzz_attach(struct fuzz *f)
{
	struct rv_attach a;
	int idx, ret;

	idx = rv_device_index(f->ibdev);
	if (idx < 0)
		return idx;
	memset(&a, 0, sizeof(a));
	a.dev_index = idx;
	a.port_num = 1;
	a.gid_index = f->gid_index;
	a.job_key_len = 4;
	memcpy(a.job_key, "fuzz", 4);
	a.num_conn = 2;
	a.ring_entries = RV_MIN_RING_ENTRIES * 4;
	ret = rv_attach(f->rv, &a);
	f->table_entries = a.mr_table_entries;
	if (ret < 0)
		return ret;
	f->slot_bits = a.slot_bits;
	return land_publish(f);
}

static int fuzz_connect(struct fuzz *f)
{
	struct rv_conn_query q;
	int h;

	if (!f->have_peer)
		return 0;
	h = rv_conn_create(f->rv, (struct sockaddr *)&f->peer,
			   sizeof(f->peer), NULL);
	if (h < 0)
		return h;
	f->conn = h;
	rv_conn_connect(f->rv, h, 60000);
	return rv_conn_wait(f->rv, h, 60000, &q) == RV_CONN_STATE_CONNECTED ?
	       0 : -ETIMEDOUT;
}

/* Wait (bounded) until every accepted write has its SEND event. */
static bool drain_sends(struct fuzz *f)
{
	struct rv_stats s;
	int i;

	for (i = 0; i < 600; i++) {
		reap(f);
		if (rv_stats(f->rv, &s) == 0 && !s.inflight)
			break;
		rv_wait_events(f->rv, 100);
	}
	reap(f);
	if (rv_stats(f->rv, &s) || s.inflight) {
		printf("# %u writes never completed\n", s.inflight);
		return false;
	}
	/* Events lost to a full ring are counted, never silent. */
	if (s.writes_posted != f->accepted ||
	    f->send_events + s.ring_overflows < s.writes_completed +
	    s.writes_failed) {
		printf("# accepted %" PRIu64 " posted %llu, SEND events %"
		       PRIu64 " + overflows %llu vs completed %llu + failed %llu\n",
		       f->accepted, (unsigned long long)s.writes_posted,
		       f->send_events, (unsigned long long)s.ring_overflows,
		       (unsigned long long)s.writes_completed,
		       (unsigned long long)s.writes_failed);
		return false;
	}
	return true;
}

static int fuzz_open(struct fuzz *f)
{
	int ret;

	ret = rv_open(&f->rv, 0);
	if (ret)
		return ret;
	ret = fuzz_attach(f);
	if (!ret)
		ret = fuzz_connect(f);
	return ret;
}

/* Close (with writes possibly in flight) and start over. */
static int op_reopen(struct fuzz *f)
{
	bool ok = drain_sends(f);

	rv_close(f->rv);
	f->rv = NULL;
	f->nmr = 0;
	f->conn = 0;
	f->accepted = 0;
	f->send_events = 0;
	if (!ok)
		f->bad++;
	return fuzz_open(f);
}

int main(int argc, char **argv)
{
	struct fuzz f = { .ibdev = getenv("RV_IBDEV"), .ctl = -1 };
	bool listener = false;
	unsigned long iters = 20000, i;
	uint64_t seed = 1;
	int opt, ret, test = 0;
	unsigned int b;

	while ((opt = getopt(argc, argv, "ls:n:p:d:")) != -1) {
		switch (opt) {
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'n': iters = strtoul(optarg, NULL, 0); break;
		case 'p':
			f.have_peer = true;
			f.peer.sin_family = AF_INET;
			if (inet_pton(AF_INET, optarg, &f.peer.sin_addr) != 1)
				return 2;
			break;
		case 'd': f.ibdev = optarg; break;
		case 'l': listener = true; break;
		default:
			fprintf(stderr, "usage: rv_fuzz [-s SEED] [-n ITERS] [-p PEER [-l]] [-d IBDEV]\n");
			return 2;
		}
	}
	rng_state = seed ? seed : 1;
	printf("TAP version 13\n1..3\n# seed %" PRIu64 ", %lu iterations%s\n",
	       seed, iters, f.have_peer ? ", with a peer" : "");
	if (!f.ibdev || access("/dev/rv", F_OK)) {
		printf("ok 1 setup # SKIP no /dev/rv or RV_IBDEV\n");
		printf("ok 2 fuzz # SKIP\nok 3 accounting # SKIP\n");
		return 0;
	}
	f.gid_index = rv_ipv4_gid(f.ibdev, RV_TEST_PORT, -1, NULL);
	for (b = 0; b < NBUF; b++) {
		/* Aligned: one remote key (chunks of at least 1 MiB). */
		f.buf[b] = rv_map_aligned(BUF_BYTES, BUF_BYTES);
		if (!f.buf[b])
			return 1;
		memset(f.buf[b], 0x5a, BUF_BYTES);
	}
	f.land = rv_map_aligned(BUF_BYTES, BUF_BYTES);
	if (!f.land)
		return 1;
	ret = f.have_peer ? ctl_open(&f, listener) : 0;
	if (!ret)
		ret = f.gid_index < 0 ? -EADDRNOTAVAIL : fuzz_open(&f);
	printf("%sok %d setup%s\n", ret ? "not " : "", ++test,
	       ret ? " (attach or connect failed)" : "");
	if (ret)
		return 1;

	for (i = 0; i < iters; i++) {
		switch (rnd_below(100)) {
		case 0 ... 29: op_raw(&f); break;
		case 30 ... 64: op_post(&f); break;
		case 65 ... 79: op_mr(&f); break;
		case 80 ... 84: op_remap(&f); break;
		case 85 ... 87: op_scribble(&f); break;
		case 88 ... 89: op_table(&f); break;
		case 90: op_fork(&f); break;
		case 91:
			if (!rnd_below(20) && op_reopen(&f)) {
				printf("# reopen failed\n");
				f.bad++;
				goto out;
			}
			break;
		default:
			reap(&f);
			ctl_poll(&f, 0);
			break;
		}
	}
out:
	printf("# %" PRIu64 " calls, %" PRIu64 " errors, %" PRIu64
	       " writes accepted\n", f.calls, f.errors, f.accepted);
	for (b = 0; b < 160; b++)
		if (f.post_errno[b])
			printf("# POST_WRITE %s: %" PRIu64 "\n",
			       b ? strerror(b) : "success", f.post_errno[b]);
	printf("%sok %d fuzz\n", f.bad ? "not " : "", ++test);
	ret = f.rv && drain_sends(&f);
	printf("%sok %d accounting\n", ret ? "" : "not ", ++test);
	/* The peer may still write to us: close only when it is done too. */
	if (f.ctl >= 0) {
		struct landing done = { .slot = UINT32_MAX };

		ctl_send(&f, &done);
		ctl_poll(&f, 600000);
		close(f.ctl);
	}
	rv_close(f.rv);
	return f.bad || !ret;
}
