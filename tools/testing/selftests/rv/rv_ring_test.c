// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Event ring tests: the mapping's rules and layout, poll(), the
 * RLIMIT_MEMLOCK charge (one budget with the MR pins), and that a process can only map its own ring and
 * only harm its own.  Events themselves come with the data path.  Needs
 * /dev/rv and an RDMA device ($RV_IBDEV).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "rv_test_util.h"

#define ENTRIES 256

static int raw_attach(int fd, uint32_t entries)
{
	struct rv_attach a;
	int idx = rv_device_index(rv_test_ibdev());

	if (idx < 0)
		return idx;
	rv_attach_init(&a, (uint32_t)idx, 8);
	a.ring_entries = entries;
	a.mr_table_entries = RV_MIN_MR_TABLE_ENTRIES;
	return rv_ioc(fd, RV_IOCTL_ATTACH, &a);
}

static void *map_ring(int fd, size_t len, int flags, off_t off)
{
	return mmap(NULL, len, PROT_READ | PROT_WRITE, flags, fd, off);
}

FIXTURE(ring) {
	int fd;
	size_t len;
};

FIXTURE_SETUP(ring)
{
	int ret;

	self->fd = -1;
	if (access(RV_DEV_PATH, F_OK))
		SKIP(return, RV_DEV_PATH " missing: rv module not loaded");
	self->fd = open(RV_DEV_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	self->len = RV_RING_MMAP_SIZE(ENTRIES);
	/* Before ATTACH there is no ring. */
	ASSERT_EQ(MAP_FAILED, map_ring(self->fd, self->len, MAP_SHARED, 0));
	ASSERT_EQ(ENOTCONN, errno);
	ret = raw_attach(self->fd, ENTRIES);
	if (ret == -ENODEV)
		SKIP(return, "no RDMA device %s", rv_test_ibdev());
	ASSERT_EQ(0, ret);
}

FIXTURE_TEARDOWN(ring)
{
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F(ring, layout)
{
	const struct rv_ring_header *hdr;
	struct pollfd pfd = { .fd = self->fd, .events = POLLIN };
	void *p;

	p = map_ring(self->fd, self->len, MAP_SHARED, 0);
	ASSERT_NE(MAP_FAILED, p);
	hdr = p;
	EXPECT_EQ(ENTRIES, hdr->entries);
	EXPECT_EQ(sizeof(struct rv_event), hdr->entry_size);
	EXPECT_EQ(RV_RING_EVENTS_OFFSET, hdr->events_offset);
	EXPECT_EQ(0, hdr->producer);
	EXPECT_EQ(0, hdr->overflows);
	EXPECT_EQ(0, *(uint32_t *)((char *)p + RV_RING_CONSUMER_OFFSET));
	/* Nothing pending: poll times out. */
	EXPECT_EQ(0, poll(&pfd, 1, 20));
	/* The whole mapping is writable (the consumer index lives in it). */
	memset((char *)p + RV_RING_EVENTS_OFFSET, 0, ENTRIES * 32);
	EXPECT_EQ(0, munmap(p, self->len));
}

TEST_F(ring, bad_mappings)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t rounded = (self->len + page - 1) / page * page;

	/* Another length, another offset, or a private mapping. */
	EXPECT_EQ(MAP_FAILED, map_ring(self->fd, rounded + page, MAP_SHARED,
				       0));
	EXPECT_EQ(EINVAL, errno);
	if (rounded > (size_t)page) {
		EXPECT_EQ(MAP_FAILED, map_ring(self->fd, page, MAP_SHARED, 0));
		EXPECT_EQ(EINVAL, errno);
	}
	EXPECT_EQ(MAP_FAILED, map_ring(self->fd, self->len, MAP_SHARED,
				       page));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, map_ring(self->fd, self->len, MAP_PRIVATE, 0));
	EXPECT_EQ(EINVAL, errno);
	/* The page-rounded length is the same mapping. */
	EXPECT_NE(MAP_FAILED, map_ring(self->fd, rounded, MAP_SHARED, 0));
}

/* A forked child gets neither the parent's mapping nor a mapping of its own. */
TEST_F(ring, fork_child)
{
	volatile const struct rv_ring_header *hdr;
	int status;
	pid_t pid;

	hdr = map_ring(self->fd, self->len, MAP_SHARED, 0);
	ASSERT_NE(MAP_FAILED, hdr);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		void *p = map_ring(self->fd, self->len, MAP_SHARED, 0);

		if (p != MAP_FAILED || errno != EPERM)
			_exit(1);
		/* Not inherited: this faults. */
		(void)hdr->entries;
		_exit(2);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	EXPECT_EQ(SIGSEGV, WTERMSIG(status));
	EXPECT_EQ(ENTRIES, hdr->entries);
}

/* Scribbling on one's own ring leaves another process's ring alone. */
TEST_F(ring, scribble_is_local)
{
	struct pollfd pfd[2] = {
		{ .fd = self->fd, .events = POLLIN },
		{ .events = POLLIN },
	};
	char *p, *q;

	pfd[1].fd = open(RV_DEV_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, pfd[1].fd);
	ASSERT_EQ(0, raw_attach(pfd[1].fd, ENTRIES));
	p = map_ring(self->fd, self->len, MAP_SHARED, 0);
	q = map_ring(pfd[1].fd, self->len, MAP_SHARED, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_NE(MAP_FAILED, q);

	memset(p, 0xff, self->len);
	/* A bogus consumer index makes only this ring look busy. */
	EXPECT_EQ(1, poll(&pfd[0], 1, 0));
	EXPECT_EQ(0, poll(&pfd[1], 1, 0));
	EXPECT_EQ(ENTRIES, ((struct rv_ring_header *)q)->entries);
	EXPECT_EQ(0, *(uint32_t *)(q + RV_RING_CONSUMER_OFFSET));
	/* Restored, it is quiet again: the kernel kept its own index. */
	*(uint32_t *)(p + RV_RING_CONSUMER_OFFSET) = 0;
	EXPECT_EQ(0, poll(&pfd[0], 1, 0));
	close(pfd[1].fd);
}

TEST(poll_before_attach)
{
	struct pollfd pfd = { .events = POLLIN };

	if (access(RV_DEV_PATH, F_OK))
		SKIP(return, RV_DEV_PATH " missing: rv module not loaded");
	pfd.fd = open(RV_DEV_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, pfd.fd);
	EXPECT_EQ(1, poll(&pfd, 1, 0));
	EXPECT_TRUE(pfd.revents & POLLERR);
	close(pfd.fd);
}

/*
 * The ring is charged to RLIMIT_MEMLOCK, in VmPin (pinned_vm) like the MR
 * cache's pins, and uncharged at close.
 */
TEST(memlock_charge)
{
	struct rlimit rl = { 256 * 1024, 256 * 1024 };
	long before, pages;
	int fd, ret;

	if (access(RV_DEV_PATH, F_OK))
		SKIP(return, RV_DEV_PATH " missing: rv module not loaded");
	ASSERT_EQ(0, rv_drop_cap_ipc_lock());
	ASSERT_EQ(0, setrlimit(RLIMIT_MEMLOCK, &rl));
	before = rv_proc_status_kb("VmPin");
	ASSERT_LE(0, before);

	fd = open(RV_DEV_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	/* 32 MiB of ring: over the limit, and nothing is left attached. */
	ret = raw_attach(fd, RV_MAX_RING_ENTRIES);
	if (ret == -ENODEV)
		SKIP(return, "no RDMA device");
	EXPECT_EQ(-ENOMEM, ret);
	EXPECT_EQ(before, rv_proc_status_kb("VmPin"));
	EXPECT_EQ(MAP_FAILED, map_ring(fd, 4096, MAP_SHARED, 0));
	EXPECT_EQ(ENOTCONN, errno);

	/* 4096 entries (128 KiB + header) fit. */
	ASSERT_EQ(0, raw_attach(fd, 4096));
	pages = (RV_RING_MMAP_SIZE(4096) + 4095) / 4096;
	EXPECT_EQ(before + pages * 4 + RV_TEST_MIN_TABLE_KB,
		  rv_proc_status_kb("VmPin"));
	close(fd);
	EXPECT_EQ(before, rv_proc_status_kb("VmPin"));
}

/*
 * One RLIMIT_MEMLOCK budget for the ring and the MR pins, as an
 * unprivileged user (uid 65534, no capability): with a 4 MiB limit a ring
 * of 65536 entries (2 MiB + 128 bytes: 513 pages, and 3 of the smallest MR
 * table) fits alone, a 3 MiB
 * registration (768 pages) fits alone, both together do not: REG_MEM
 * after the big ring, and ATTACH of a big ring after the registration,
 * are ENOMEM, and closing the file that held the budget frees it.
 */
TEST(memlock_shared_with_mr)
{
	struct rlimit rl = { 4 << 20, 4 << 20 };
	const size_t mr_len = 3 << 20;
	struct rv_attach a;
	struct rv *big, *small, *other;
	long pin_kb;
	int idx, h;
	char *buf;

	if (access(RV_DEV_PATH, F_OK))
		SKIP(return, RV_DEV_PATH " missing: rv module not loaded");
	idx = rv_device_index(rv_test_ibdev());
	if (idx < 0)
		SKIP(return, "no RDMA device");
	buf = mmap(NULL, mr_len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, buf);
	memset(buf, 1, mr_len);
	ASSERT_EQ(0, setrlimit(RLIMIT_MEMLOCK, &rl));
	/* The harness forked this test: the uid change ends with it. */
	if (geteuid() == 0) {
		ASSERT_EQ(0, setresgid(65534, 65534, 65534));
		ASSERT_EQ(0, setgroups(0, NULL));
		ASSERT_EQ(0, setresuid(65534, 65534, 65534));
	}
	pin_kb = rv_proc_status_kb("VmPin");
	ASSERT_EQ(0, pin_kb);

	/* The big ring alone fits; a registration on top of it does not. */
	ASSERT_EQ(0, rv_open(&big, 0));
	rv_attach_init(&a, (uint32_t)idx, 8);
	a.ring_entries = 65536;
	a.mr_table_entries = RV_MIN_MR_TABLE_ENTRIES;
	ASSERT_LE(0, rv_attach(big, &a));
	EXPECT_EQ(513 * 4 + RV_TEST_MIN_TABLE_KB, rv_proc_status_kb("VmPin"));
	EXPECT_EQ(-ENOMEM, rv_reg_mem(big, buf, mr_len,
				      RV_ACCESS_LOCAL_WRITE, NULL));
	EXPECT_EQ(513 * 4 + RV_TEST_MIN_TABLE_KB, rv_proc_status_kb("VmPin"));
	rv_close(big);
	EXPECT_EQ(0, rv_proc_status_kb("VmPin"));

	/* The registration fits with a one-page ring... */
	ASSERT_EQ(0, rv_open(&small, 0));
	rv_attach_init(&a, (uint32_t)idx, 8);
	a.ring_entries = RV_MIN_RING_ENTRIES;
	a.mr_table_entries = RV_MIN_MR_TABLE_ENTRIES;
	ASSERT_LE(0, rv_attach(small, &a));
	h = rv_reg_mem(small, buf, mr_len, RV_ACCESS_LOCAL_WRITE, NULL);
	ASSERT_GT(h, 0);
	EXPECT_EQ(4 + RV_TEST_MIN_TABLE_KB + 768 * 4, rv_proc_status_kb("VmPin"));

	/* ...and then leaves no room for the big ring of another file. */
	ASSERT_EQ(0, rv_open(&other, 0));
	rv_attach_init(&a, (uint32_t)idx, 8);
	a.ring_entries = 65536;
	a.mr_table_entries = RV_MIN_MR_TABLE_ENTRIES;
	EXPECT_EQ(-ENOMEM, rv_attach(other, &a));
	EXPECT_EQ(4 + RV_TEST_MIN_TABLE_KB + 768 * 4, rv_proc_status_kb("VmPin"));

	/* Closing the file with the pins frees the budget for it. */
	EXPECT_EQ(0, rv_dereg_mem(small, h));
	rv_close(small);
	EXPECT_EQ(0, rv_proc_status_kb("VmPin"));
	rv_attach_init(&a, (uint32_t)idx, 8);
	a.ring_entries = 65536;
	a.mr_table_entries = RV_MIN_MR_TABLE_ENTRIES;
	EXPECT_LE(0, rv_attach(other, &a));
	EXPECT_EQ(513 * 4 + RV_TEST_MIN_TABLE_KB, rv_proc_status_kb("VmPin"));
	rv_close(other);
	munmap(buf, mr_len);
}

TEST(librv_ring)
{
	struct rv_event ev[4];
	struct rv_attach a;
	struct rv *rv;
	int idx;

	if (access(RV_DEV_PATH, F_OK))
		SKIP(return, RV_DEV_PATH " missing: rv module not loaded");
	ASSERT_EQ(0, rv_open(&rv, 0));
	EXPECT_EQ(-ENOTCONN, rv_poll_events(rv, ev, 4));
	EXPECT_EQ(-ENOTCONN, rv_wait_events(rv, 0));
	EXPECT_EQ(0, rv_ring_overflows(rv));
	idx = rv_device_index(rv_test_ibdev());
	if (idx < 0)
		SKIP(rv_close(rv); return, "no RDMA device");
	rv_attach_init(&a, (uint32_t)idx, 4);
	ASSERT_LE(0, rv_attach(rv, &a));
	EXPECT_EQ(0, rv_poll_events(rv, ev, 4));
	EXPECT_EQ(-EINVAL, rv_poll_events(rv, NULL, 4));
	EXPECT_EQ(0, rv_poll_events(rv, NULL, 0));
	EXPECT_EQ(0, rv_wait_events(rv, 20));
	EXPECT_EQ(0, rv_ring_overflows(rv));
	rv_close(rv);
}

TEST_HARNESS_MAIN
