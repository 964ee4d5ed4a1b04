// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv_failnth - fail the 1st, 2nd, ... Nth memory allocation of each rv
 * command until the command succeeds, with the kernel's per-task fault
 * injection (/proc/thread-self/fail-nth, failslab and fail_page_alloc).
 *
 * Every injected failure must give a documented errno (or be absorbed:
 * success), leave the file usable (QUERY, and MR_STATS once attached), and
 * let the same command succeed when retried without a fault; leaks show
 * as kmemleak reports, which the VM harness turns into failures.  Needs a
 * kernel with CONFIG_FAULT_INJECTION, CONFIG_FAILSLAB and
 * CONFIG_FAIL_PAGE_ALLOC (the debug kernel); SKIP elsewhere.  TAP output,
 * one test per command, with the number of allocation sites it went
 * through.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rv/librv.h>
#include "rv_test_util.h"

/* More than any rv command allocates; reaching it is a failure. */
#define MAX_SITES	400
#define BUF_BYTES	(1U << 20)

struct state {
	int fd;
	uint32_t mr;
	uint32_t conn;
	void *ring;
	size_t ring_len;
};

static const char *ibdev;
static int gid_index, dev_index;
static uint8_t *buf;
static int failnth_fd = -1;

static int raw(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

static int do_attach(struct state *s)
{
	struct rv_attach a;

	rv_attach_init(&a, dev_index, 8);
	a.gid_index = gid_index;
	a.ring_entries = 256;
	return raw(s->fd, RV_IOCTL_ATTACH, &a);
}

static int do_open(struct state *s)
{
	s->fd = open("/dev/rv", O_RDWR | O_CLOEXEC);
	return s->fd < 0 ? -errno : 0;
}

static int do_reg_mem(struct state *s)
{
	struct rv_reg_mem r = { .size = sizeof(r), .addr = (uintptr_t)buf,
				.length = BUF_BYTES,
				.access = RV_ACCESS_REMOTE_WRITE };
	int ret = raw(s->fd, RV_IOCTL_REG_MEM, &r);

	if (!ret)
		s->mr = r.handle;
	return ret;
}

static int do_dereg_mem(struct state *s)
{
	struct rv_dereg_mem d = { .size = sizeof(d), .handle = s->mr };

	return raw(s->fd, RV_IOCTL_DEREG_MEM, &d);
}

static int do_evict(struct state *s)
{
	struct rv_evict e = { .size = sizeof(e), .mode = RV_EVICT_AMOUNT,
			      .target_entries = 16 };

	return raw(s->fd, RV_IOCTL_EVICT, &e);
}

static int do_conn_create(struct state *s)
{
	struct rv_conn_create c = { .size = sizeof(c) };
	struct sockaddr_in sin = { .sin_family = AF_INET };
	int ret;

	/* Nobody there: creating needs no peer. */
	inet_pton(AF_INET, "10.77.0.250", &sin.sin_addr);
	c.addr_len = sizeof(sin);
	memcpy(c.addr, &sin, sizeof(sin));
	ret = raw(s->fd, RV_IOCTL_CONN_CREATE, &c);
	if (!ret)
		s->conn = c.handle;
	return ret;
}

static int do_conn_connect(struct state *s)
{
	struct rv_conn_connect c = { .size = sizeof(c), .handle = s->conn,
				     .timeout_ms = 100 };

	return raw(s->fd, RV_IOCTL_CONN_CONNECT, &c);
}

static int do_conn_destroy(struct state *s)
{
	struct rv_conn_destroy d = { .size = sizeof(d), .handle = s->conn };

	return raw(s->fd, RV_IOCTL_CONN_DESTROY, &d);
}

static int do_post_write(struct state *s)
{
	struct rv_post_write p = { .size = sizeof(p) };

	/* Not connected: must fail cleanly (EPIPE or EAGAIN), nothing held. */
	p.write.conn_handle = s->conn;
	p.write.mr_handle = s->mr;
	p.write.local_addr = (uintptr_t)buf;
	p.write.length = 4096;
	return raw(s->fd, RV_IOCTL_POST_WRITE, &p);
}

static int do_stats(struct state *s)
{
	struct rv_stats st = { .size = sizeof(st) };
	struct rv_mr_stats ms = { .size = sizeof(ms) };

	return raw(s->fd, RV_IOCTL_STATS, &st) ?:
	       raw(s->fd, RV_IOCTL_MR_STATS, &ms);
}

static int do_mmap(struct state *s)
{
	s->ring_len = RV_RING_MMAP_SIZE(256);
	s->ring = mmap(NULL, s->ring_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		       s->fd, 0);
	if (s->ring == MAP_FAILED) {
		s->ring = NULL;
		return -errno;
	}
	return 0;
}

enum need { OPENED = 1, ATTACHED = 2, REGISTERED = 4, CONNECTED = 8 };

struct op {
	const char *name;
	unsigned int need;
	int (*run)(struct state *s);
	/* errnos it may give (under allocation failure, or here), 0-ended */
	int errs[4];
};

#define OP(n, nd, fn, ...) \
	{ .name = n, .need = nd, .run = fn, .errs = { __VA_ARGS__ } }

static const struct op ops[] = {
	OP("open", 0, do_open, ENOMEM),
	OP("attach", OPENED, do_attach, ENOMEM),
	OP("mmap", OPENED | ATTACHED, do_mmap, ENOMEM, EAGAIN),
	OP("reg_mem", OPENED | ATTACHED, do_reg_mem, ENOMEM, EAGAIN),
	OP("dereg_mem", OPENED | ATTACHED | REGISTERED, do_dereg_mem, ENOMEM),
	OP("evict", OPENED | ATTACHED | REGISTERED, do_evict, ENOMEM),
	OP("conn_create", OPENED | ATTACHED, do_conn_create, ENOMEM,
	   EADDRINUSE, EADDRNOTAVAIL),
	OP("conn_connect", OPENED | ATTACHED | CONNECTED, do_conn_connect,
	   ENOMEM),
	/* Not connected: EPIPE (or EAGAIN) even without a fault. */
	OP("post_write", OPENED | ATTACHED | REGISTERED | CONNECTED,
	   do_post_write, ENOMEM, EAGAIN, EPIPE),
	OP("conn_destroy", OPENED | ATTACHED | CONNECTED, do_conn_destroy,
	   ENOMEM),
	OP("stats", OPENED | ATTACHED, do_stats, ENOMEM),
};

static int setup(struct state *s, unsigned int need)
{
	memset(s, 0, sizeof(*s));
	s->fd = -1;
	if ((need & OPENED) && do_open(s))
		return -1;
	if ((need & ATTACHED) && do_attach(s))
		return -1;
	if ((need & REGISTERED) && do_reg_mem(s))
		return -1;
	if ((need & CONNECTED) && do_conn_create(s))
		return -1;
	return 0;
}

static void teardown(struct state *s)
{
	if (s->ring)
		munmap(s->ring, s->ring_len);
	if (s->fd >= 0)
		close(s->fd);
}

static void failnth_set(unsigned int n)
{
	char b[16];
	int len = snprintf(b, sizeof(b), "%u", n);

	if (pwrite(failnth_fd, b, len, 0) != len)
		perror("fail-nth");
}

/* 0: the fault was injected; > 0: the command never got that far. */
static int failnth_get(void)
{
	char b[16] = "";

	if (pread(failnth_fd, b, sizeof(b) - 1, 0) <= 0)
		return -1;
	return atoi(b);
}

static bool errno_ok(const struct op *op, int ret)
{
	unsigned int i;

	if (ret == 0)
		return true;
	for (i = 0; i < 4 && op->errs[i]; i++)
		if (ret == -op->errs[i])
			return true;
	return false;
}

/* The file still answers, and the command works without a fault. */
static bool still_usable(const struct op *op, struct state *s, int ret)
{
	struct rv_query q = { .size = sizeof(q) };
	int again;

	if (s->fd < 0)		/* open itself failed */
		return do_open(s) == 0;
	if (raw(s->fd, RV_IOCTL_QUERY, &q))
		return false;
	if (ret)
		again = op->run(s);
	else
		again = 0;
	return errno_ok(op, again) && again != -ENOMEM;
}

static int run_op(const struct op *op, int test)
{
	unsigned int n, injected = 0;
	char why[160] = "";
	struct state s;
	int ret;

	for (n = 1; n <= MAX_SITES; n++) {
		if (setup(&s, op->need)) {
			snprintf(why, sizeof(why), "setup failed: %s",
				 strerror(errno));
			teardown(&s);
			break;
		}
		failnth_set(n);
		ret = op->run(&s);
		if (failnth_get() != 0) {
			/* Ran to the end without reaching the nth site. */
			failnth_set(0);
			if (!errno_ok(op, ret) || ret == -ENOMEM)
				snprintf(why, sizeof(why),
					 "fails without a fault: %s",
					 strerror(-ret));
			teardown(&s);
			break;
		}
		failnth_set(0);
		injected++;
		if (!errno_ok(op, ret))
			snprintf(why, sizeof(why), "site %u: undocumented %s",
				 n, strerror(-ret));
		else if (!still_usable(op, &s, ret))
			snprintf(why, sizeof(why),
				 "site %u: unusable after %s", n,
				 strerror(-ret));
		teardown(&s);
		if (why[0])
			break;
	}
	if (n > MAX_SITES)
		snprintf(why, sizeof(why), "more than %u sites", MAX_SITES);
	if (why[0]) {
		printf("# %s: %s\n", op->name, why);
		printf("not ok %d failnth.%s\n", test, op->name);
		return 1;
	}
	printf("ok %d failnth.%s # %u allocation sites failed one by one\n",
	       test, op->name, injected);
	return 0;
}

/* Make fail-nth reach every allocation, sleeping ones included. */
static int configure(void)
{
	static const char *const knobs[][2] = {
		{ "/sys/kernel/debug/failslab/ignore-gfp-wait", "N" },
		{ "/sys/kernel/debug/failslab/verbose", "0" },
		{ "/sys/kernel/debug/fail_page_alloc/ignore-gfp-wait", "N" },
		{ "/sys/kernel/debug/fail_page_alloc/ignore-gfp-highmem", "N" },
		{ "/sys/kernel/debug/fail_page_alloc/min-order", "0" },
		{ "/sys/kernel/debug/fail_page_alloc/verbose", "0" },
	};
	unsigned int i;

	for (i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
		int fd = open(knobs[i][0], O_WRONLY);

		if (fd < 0)
			return -1;
		if (write(fd, knobs[i][1], strlen(knobs[i][1])) < 0) {
			close(fd);
			return -1;
		}
		close(fd);
	}
	return 0;
}

int main(void)
{
	unsigned int i, n = sizeof(ops) / sizeof(ops[0]);
	int failed = 0;

	printf("TAP version 13\n1..%u\n", n);
	ibdev = getenv("RV_IBDEV");
	failnth_fd = open("/proc/thread-self/fail-nth", O_RDWR);
	if (failnth_fd < 0 || configure() || !ibdev ||
	    access("/dev/rv", F_OK)) {
		for (i = 0; i < n; i++)
			printf("ok %u failnth.%s # SKIP no fail-nth (needs CONFIG_FAULT_INJECTION, FAILSLAB, FAIL_PAGE_ALLOC), /dev/rv or RV_IBDEV\n",
			       i + 1, ops[i].name);
		return 4;
	}
	dev_index = rv_device_index(ibdev);
	gid_index = rv_ipv4_gid(ibdev, RV_TEST_PORT, -1, NULL);
	/* Aligned: inside one remote key chunk (at least 1 MiB). */
	buf = rv_map_aligned(BUF_BYTES, BUF_BYTES);
	if (buf)
		memset(buf, 0, BUF_BYTES);
	if (dev_index < 0 || gid_index < 0 || !buf) {
		printf("# no device, IPv4 GID or buffer\n");
		return 1;
	}
	for (i = 0; i < n; i++)
		failed |= run_op(&ops[i], i + 1);
	return failed;
}
