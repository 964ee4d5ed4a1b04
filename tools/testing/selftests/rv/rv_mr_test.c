// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * MR cache tests: hits and misses, LRU eviction under the byte limit,
 * EVICT, ownership, RLIMIT_MEMLOCK, and coherence with munmap, mremap,
 * madvise, brk and exit.  Needs /dev/rv and an RDMA device ($RV_IBDEV).
 *
 * Pinning is observed through VmPin in /proc/self/status, which is the
 * mm's pinned_vm that ib_umem_get() charges and releases.  The event ring
 * and the MR table are charged there too (one RLIMIT_MEMLOCK budget): the
 * files attach with the smallest of both, and mr_pin_kb() leaves those
 * pages out.
 *
 * These tests are of the kernel's cache through its ioctls: librv's MR
 * table, which answers repeated registrations without them, is off here
 * (RV_MR_TABLE=0); rv_mr_table_test tests it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "rv_test_util.h"

#define KiB (1024UL)
#define MiB (1024UL * 1024)

/* A user address as the uAPI carries it. */
#define U64(p) ((uint64_t)(uintptr_t)(p))

#define ACC_LW RV_ACCESS_LOCAL_WRITE
#define ACC_RW RV_ACCESS_REMOTE_WRITE
#define ACC_RR RV_ACCESS_REMOTE_READ

/*
 * KiB of VmPin that are the rings and MR tables of this process's attached
 * files: a page of ring, two of slots and one of holds each.
 */
#define FILE_PIN_KB (4 + RV_TEST_MIN_TABLE_KB)
static long ring_pin_kb;

__attribute__((constructor)) static void table_off(void)
{
	setenv("RV_MR_TABLE", "0", 1);
}

/* VmPin without the rings: what the MR cache pinned. */
static long mr_pin_kb(void)
{
	long kb = rv_proc_status_kb("VmPin");

	return kb < 0 ? kb : kb - ring_pin_kb;
}

/*
 * Unpinning after an invalidation is deferred to a work item: wait (at
 * most 5 s) for the MR cache's VmPin to reach @kb.  Returns the last
 * value read.
 */
static long wait_vm_pin_kb(long kb)
{
	long now = -1;
	int i;

	for (i = 0; i < 500; i++) {
		now = mr_pin_kb();
		if (now == kb)
			break;
		usleep(10000);
	}
	return now;
}

/*
 * Pages pinned system-wide right now: FOLL_PIN pins taken minus released,
 * from /proc/vmstat (counted in pages, whoever pinned them).  -1 if the
 * counters are missing.
 */
static long pinned_pages_now(void)
{
	long acquired = -1, released = -1, v;
	char line[256], name[64];
	FILE *f;

	f = fopen("/proc/vmstat", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%63s %ld", name, &v) != 2)
			continue;
		if (!strcmp(name, "nr_foll_pin_acquired"))
			acquired = v;
		else if (!strcmp(name, "nr_foll_pin_released"))
			released = v;
	}
	fclose(f);
	return acquired < 0 || released < 0 ? -1 : acquired - released;
}

/*
 * Anonymous memory for a test, 2 MiB aligned between PROT_NONE guards of
 * at least 2 MiB.  On 6.1, changing a mapping's bounds sends an
 * invalidation for the 2 MiB around each new bound, and mappings with the
 * same flags merge: without the guards, mapping, protecting or unmapping
 * one test buffer could invalidate entries of a neighbouring one.  Small
 * pages only, for the same reason (splitting a huge page invalidates all
 * of it).  Unmapping the buffer leaves the guards: test processes are
 * short-lived.
 */
static void *map_anon(size_t len)
{
	const size_t align = 2 * MiB;
	uintptr_t base, p;
	void *r;

	r = mmap(NULL, len + 4 * align, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (r == MAP_FAILED)
		return NULL;
	base = (uintptr_t)r;
	p = (base + 2 * align - 1) / align * align;
	if (mmap((void *)p, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
		return NULL;
	madvise((void *)p, len, MADV_NOHUGEPAGE);
	memset((void *)p, 0xa5, len);
	return (void *)p;
}

/* Open and attach a file with an MR cache limit of @limit bytes. */
static int open_attached(struct rv **rvp, uint64_t limit)
{
	struct rv_attach a;
	int idx, ret;

	ret = rv_open(rvp, 0);
	if (ret)
		return ret;
	idx = rv_device_index(rv_test_ibdev());
	if (idx < 0) {
		rv_close(*rvp);
		return idx;
	}
	rv_attach_init(&a, (uint32_t)idx, 8);
	a.mr_cache_bytes = limit;
	/* One page, inside the tests' RLIMIT_MEMLOCK (see mr_pin_kb()). */
	a.ring_entries = RV_MIN_RING_ENTRIES;
	a.mr_table_entries = RV_MIN_MR_TABLE_ENTRIES;
	ret = rv_attach(*rvp, &a);
	if (ret < 0) {
		rv_close(*rvp);
		return ret;
	}
	ring_pin_kb += FILE_PIN_KB;
	return 0;
}

/* Close a file of open_attached(): its ring's page leaves VmPin. */
static void close_attached(struct rv *rv)
{
	rv_close(rv);
	ring_pin_kb -= FILE_PIN_KB;
}

static struct rv_mr_stats stats_of(struct rv *rv)
{
	struct rv_mr_stats s;

	if (rv_mr_stats(rv, &s))
		memset(&s, 0xff, sizeof(s));
	return s;
}

/*
 * rv_reg_mem() with room for every key: a remote-access buffer here may
 * span key chunks (2 MiB ones on rxe, 64 KiB ones in the mr-frwr16 group).
 */
static int reg_mem(struct rv *rv, const void *addr, size_t length,
		   unsigned int access, struct rv_reg_mem *out)
{
	static __thread uint32_t keys[RV_MAX_REG_KEYS];

	return rv_reg_mem_keys(rv, addr, length, access, out, keys,
			       RV_MAX_REG_KEYS);
}

FIXTURE(mr) {
	struct rv *rv;
	char *buf;
	size_t buf_len;
};

FIXTURE_SETUP(mr)
{
	int ret;

	if (access(RV_DEV_PATH, F_OK))
		SKIP(return, RV_DEV_PATH " missing: rv module not loaded");
	ret = open_attached(&self->rv, 16 * MiB);
	if (ret == -ENODEV)
		SKIP(return, "no RDMA device %s", rv_test_ibdev());
	ASSERT_EQ(0, ret);
	self->buf_len = 4 * MiB;
	self->buf = map_anon(self->buf_len);
	ASSERT_NE(NULL, self->buf);
}

FIXTURE_TEARDOWN(mr)
{
	if (self->buf)
		munmap(self->buf, self->buf_len);
	close_attached(self->rv);
}

TEST_F(mr, hit_and_miss)
{
	struct rv_reg_mem r1, r2;
	struct rv_mr_stats s;
	int h1, h2;

	h1 = reg_mem(self->rv, self->buf, 64 * KiB, ACC_LW, &r1);
	ASSERT_GT(h1, 0);
	EXPECT_EQ((uintptr_t)self->buf, r1.iova);
	EXPECT_EQ((uintptr_t)self->buf, r1.region_addr);
	EXPECT_EQ(64 * KiB, r1.region_length);
	EXPECT_EQ(0, rv_dereg_mem(self->rv, h1));

	h2 = reg_mem(self->rv, self->buf, 64 * KiB, ACC_LW, &r2);
	EXPECT_EQ(h1, h2);
	EXPECT_EQ(r1.lkey, r2.lkey);
	EXPECT_EQ(r1.rkey, r2.rkey);

	s = stats_of(self->rv);
	EXPECT_EQ(1, s.misses);
	EXPECT_EQ(1, s.hits);
	EXPECT_EQ(1, s.entries);
	EXPECT_EQ(64 * KiB, s.bytes);
	EXPECT_EQ(1, s.in_use_entries);
	EXPECT_EQ(64 * KiB, s.in_use_bytes);
	EXPECT_EQ(16 * MiB, s.limit_bytes);
	EXPECT_EQ(0, s.failures);
	EXPECT_EQ(64, mr_pin_kb());

	EXPECT_EQ(0, rv_dereg_mem(self->rv, h2));
	s = stats_of(self->rv);
	EXPECT_EQ(0, s.in_use_entries);
	EXPECT_EQ(1, s.entries);
	EXPECT_EQ(1, s.max_in_use_entries);
}

/* A request inside a cached region is a hit on that region. */
TEST_F(mr, subrange_hit)
{
	struct rv_reg_mem r;
	int h, hs;

	h = reg_mem(self->rv, self->buf, 1 * MiB, ACC_RW, &r);
	ASSERT_GT(h, 0);
	hs = reg_mem(self->rv, self->buf + 4096 + 17, 100 * KiB, ACC_RW,
			&r);
	EXPECT_EQ(h, hs);
	EXPECT_EQ((uintptr_t)self->buf + 4096 + 17, r.iova);
	EXPECT_EQ((uintptr_t)self->buf, r.region_addr);
	EXPECT_EQ(1 * MiB, r.region_length);
	/* Crossing the end of the region is not inside it. */
	hs = reg_mem(self->rv, self->buf + 1 * MiB - 4096, 8192, ACC_RW,
			NULL);
	EXPECT_GT(hs, 0);
	EXPECT_NE(h, hs);
	EXPECT_EQ(1, stats_of(self->rv).hits);
	EXPECT_EQ(2, stats_of(self->rv).misses);
}

/* Access is part of the key: a weaker entry does not serve a stronger one. */
TEST_F(mr, access_distinct)
{
	int hl, hr, hw;

	hl = reg_mem(self->rv, self->buf, 64 * KiB, ACC_LW, NULL);
	hr = reg_mem(self->rv, self->buf, 64 * KiB, ACC_RR, NULL);
	ASSERT_GT(hl, 0);
	ASSERT_GT(hr, 0);
	EXPECT_NE(hl, hr);
	hw = reg_mem(self->rv, self->buf, 64 * KiB, ACC_RW, NULL);
	ASSERT_GT(hw, 0);
	EXPECT_NE(hl, hw);
	EXPECT_NE(hr, hw);
	EXPECT_EQ(3, stats_of(self->rv).misses);
	/* Remote read plus local write: none of the three has both. */
	EXPECT_GT(reg_mem(self->rv, self->buf, 64 * KiB, ACC_RR | ACC_LW,
			     NULL), 0);
	EXPECT_EQ(4, stats_of(self->rv).misses);
	/* No access at all is served by the local entry alone. */
	EXPECT_EQ(hl, reg_mem(self->rv, self->buf, 4 * KiB, 0, NULL));
	EXPECT_EQ(1, stats_of(self->rv).hits);
}

TEST_F(mr, bad_args)
{
	struct rv_reg_mem r;
	int h;

	EXPECT_EQ(-EINVAL, reg_mem(self->rv, self->buf, 0, ACC_LW, NULL));
	EXPECT_EQ(-EINVAL, reg_mem(self->rv, self->buf, 4096, 1U << 3,
				      NULL));
	/* A range that wraps (as a 64-bit address, whatever the ABI). */
	memset(&r, 0, sizeof(r));
	r.size = sizeof(r);
	r.addr = ~0ULL - 4095;
	r.length = 8192;
	EXPECT_EQ(-EINVAL, rv_ioc(rv_fd(self->rv), RV_IOCTL_REG_MEM, &r));
	/* Unmapped memory is not registered and nothing is cached. */
	EXPECT_EQ(-EFAULT, reg_mem(self->rv, (void *)4096, 4096, ACC_LW,
				      NULL));
	/* Unknown flags, through the raw ioctl. */
	memset(&r, 0, sizeof(r));
	r.size = sizeof(r);
	r.flags = RV_REG_MEM_F_TABLE_HOLD << 1;
	r.addr = (uintptr_t)self->buf;
	r.length = 4096;
	EXPECT_EQ(-EINVAL, rv_ioc(rv_fd(self->rv), RV_IOCTL_REG_MEM, &r));
	EXPECT_EQ(0, stats_of(self->rv).entries);
	EXPECT_EQ(1, stats_of(self->rv).failures);

	h = reg_mem(self->rv, self->buf, 4096, ACC_LW, NULL);
	ASSERT_GT(h, 0);
	EXPECT_EQ(0, rv_dereg_mem(self->rv, h));
	EXPECT_EQ(-EINVAL, rv_dereg_mem(self->rv, h));	/* double dereg */
	EXPECT_EQ(-ENOENT, rv_dereg_mem(self->rv, 0));
	EXPECT_EQ(-ENOENT, rv_dereg_mem(self->rv, h + 1000));
	EXPECT_EQ(-ENOENT, rv_dereg_mem(self->rv, ~0U));
}

/* Handles are per file: another file's handle names nothing here. */
TEST_F(mr, foreign_handle)
{
	struct rv *other;
	int h, ho;

	ASSERT_EQ(0, open_attached(&other, 16 * MiB));
	h = reg_mem(self->rv, self->buf, 4096, ACC_LW, NULL);
	ASSERT_GT(h, 0);
	EXPECT_EQ(-ENOENT, rv_dereg_mem(other, h));
	ho = reg_mem(other, self->buf, 4096, ACC_LW, NULL);
	ASSERT_GT(ho, 0);
	EXPECT_EQ(0, rv_dereg_mem(other, ho));
	EXPECT_EQ(-EINVAL, rv_dereg_mem(other, ho));
	/* ...and this file's reference is untouched. */
	EXPECT_EQ(1, stats_of(self->rv).in_use_entries);
	EXPECT_EQ(0, rv_dereg_mem(self->rv, h));
	close_attached(other);
}

TEST(not_attached)
{
	struct rv_mr_stats s;
	struct rv *rv;
	char page[4096];

	if (access(RV_DEV_PATH, F_OK))
		SKIP(return, RV_DEV_PATH " missing: rv module not loaded");
	ASSERT_EQ(0, rv_open(&rv, 0));
	EXPECT_EQ(-ENOTCONN, reg_mem(rv, page, sizeof(page), 0, NULL));
	EXPECT_EQ(-ENOTCONN, rv_dereg_mem(rv, 1));
	EXPECT_EQ(-ENOTCONN, rv_mr_stats(rv, &s));
	rv_close(rv);
}

/* munmap + mmap at the same address: the stale entry is never returned. */
TEST_F(mr, munmap_invalidates)
{
	struct rv_reg_mem r1, r2;
	struct rv_mr_stats s;
	char *p, *q;
	int h1, h2;

	p = map_anon(1 * MiB);
	ASSERT_NE(NULL, p);
	h1 = reg_mem(self->rv, p, 1 * MiB, ACC_RW, &r1);
	ASSERT_GT(h1, 0);
	EXPECT_EQ(1024, mr_pin_kb());
	EXPECT_EQ(0, rv_dereg_mem(self->rv, h1));

	ASSERT_EQ(0, munmap(p, 1 * MiB));
	s = stats_of(self->rv);
	EXPECT_EQ(1, s.invalidations);
	EXPECT_EQ(0, s.entries);
	/* The unused entry is deregistered and its pages unpinned. */
	EXPECT_EQ(0, wait_vm_pin_kb(0));
	EXPECT_EQ(-ENOENT, rv_dereg_mem(self->rv, h1));

	q = mmap(p, 1 * MiB, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	ASSERT_EQ(p, q);
	memset(q, 0x5a, 1 * MiB);
	h2 = reg_mem(self->rv, q, 1 * MiB, ACC_RW, &r2);
	ASSERT_GT(h2, 0);
	EXPECT_NE(h1, h2);
	s = stats_of(self->rv);
	EXPECT_EQ(2, s.misses);
	EXPECT_EQ(0, s.hits);
	EXPECT_EQ(1024, mr_pin_kb());
	munmap(q, 1 * MiB);
	EXPECT_EQ(2, stats_of(self->rv).invalidations);
}

/* An entry in use when unmapped stays pinned until its last DEREG_MEM. */
TEST_F(mr, munmap_in_use)
{
	struct rv_mr_stats s;
	char *p;
	int h1, h2;

	p = map_anon(256 * KiB);
	ASSERT_NE(NULL, p);
	h1 = reg_mem(self->rv, p, 256 * KiB, ACC_LW, NULL);
	ASSERT_GT(h1, 0);
	ASSERT_EQ(0, munmap(p, 256 * KiB));
	s = stats_of(self->rv);
	EXPECT_EQ(1, s.invalidations);
	EXPECT_EQ(1, s.in_use_entries);
	EXPECT_EQ(256, mr_pin_kb());

	/* Same address, new pages: a miss, not the stale entry. */
	ASSERT_EQ(p, mmap(p, 256 * KiB, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			  -1, 0));
	h2 = reg_mem(self->rv, p, 256 * KiB, ACC_LW, NULL);
	ASSERT_GT(h2, 0);
	EXPECT_NE(h1, h2);
	EXPECT_EQ(512, mr_pin_kb());

	EXPECT_EQ(0, rv_dereg_mem(self->rv, h1));
	EXPECT_EQ(256, mr_pin_kb());
	EXPECT_EQ(-ENOENT, rv_dereg_mem(self->rv, h1));
	EXPECT_EQ(1, stats_of(self->rv).entries);
	EXPECT_EQ(0, rv_dereg_mem(self->rv, h2));
	munmap(p, 256 * KiB);
}

TEST_F(mr, mremap_invalidates)
{
	char *p, *q;
	int h;

	p = map_anon(1 * MiB);
	ASSERT_NE(NULL, p);
	h = reg_mem(self->rv, p, 1 * MiB, ACC_LW, NULL);
	ASSERT_GT(h, 0);
	EXPECT_EQ(0, rv_dereg_mem(self->rv, h));
	/* Move it elsewhere: the old range is gone. */
	q = map_anon(2 * MiB);
	ASSERT_NE(NULL, q);
	ASSERT_EQ(q, mremap(p, 1 * MiB, 2 * MiB, MREMAP_MAYMOVE | MREMAP_FIXED,
			    q));
	EXPECT_EQ(1, stats_of(self->rv).invalidations);
	EXPECT_EQ(0, stats_of(self->rv).entries);
	EXPECT_EQ(0, wait_vm_pin_kb(0));
	h = reg_mem(self->rv, q, 1 * MiB, ACC_LW, NULL);
	EXPECT_GT(h, 0);
	EXPECT_EQ(2, stats_of(self->rv).misses);
	munmap(q, 2 * MiB);
}

TEST_F(mr, madvise_invalidates)
{
	char *last = self->buf + 1 * MiB - 4096;
	char *other;
	int h, h2;

	/*
	 * Only the last page: any overlap counts.  MADV_DONTNEED's event is
	 * one that can also leave the pages in place (reclaim backing off
	 * a pinned page): the entry is checked on its next use, and dropped.
	 */
	h = reg_mem(self->rv, self->buf, 1 * MiB, ACC_LW, NULL);
	ASSERT_GT(h, 0);
	EXPECT_EQ(0, rv_dereg_mem(self->rv, h));
	ASSERT_EQ(0, madvise(last, 4096, MADV_DONTNEED));
	memset(self->buf, 1, 1 * MiB);
	EXPECT_EQ(0, stats_of(self->rv).invalidations);
	h2 = reg_mem(self->rv, self->buf, 1 * MiB, ACC_LW, NULL);
	ASSERT_GT(h2, 0);
	EXPECT_NE(h, h2);
	EXPECT_EQ(1, stats_of(self->rv).invalidations);
	EXPECT_EQ(1, stats_of(self->rv).entries);
	EXPECT_EQ(2, stats_of(self->rv).misses);
	EXPECT_EQ(0, rv_dereg_mem(self->rv, h2));

	/* MADV_FREE cannot free a pinned page: it stays mapped, and cached. */
	ASSERT_EQ(0, madvise(last, 4096, MADV_FREE));
	memset(self->buf, 2, 1 * MiB);
	EXPECT_EQ(h2, reg_mem(self->rv, self->buf, 1 * MiB, ACC_LW, NULL));
	EXPECT_EQ(1, stats_of(self->rv).invalidations);
	EXPECT_EQ(1, stats_of(self->rv).invalidations_spurious);
	EXPECT_EQ(2, stats_of(self->rv).misses);
	EXPECT_EQ(0, rv_dereg_mem(self->rv, h2));

	/* An madvise of other memory leaves the entry alone. */
	h = reg_mem(self->rv, self->buf, 1 * MiB, ACC_LW, NULL);
	ASSERT_GT(h, 0);
	other = map_anon(64 * KiB);
	ASSERT_NE(NULL, other);
	ASSERT_EQ(0, madvise(other, 4096, MADV_DONTNEED));
	munmap(other, 64 * KiB);
	EXPECT_EQ(h, reg_mem(self->rv, self->buf, 1 * MiB, ACC_LW, NULL));

	/* mprotect keeps the pinned pages where they are: still a hit. */
	other = map_anon(1 * MiB);
	ASSERT_NE(NULL, other);
	h = reg_mem(self->rv, other, 1 * MiB, ACC_LW, NULL);
	ASSERT_GT(h, 0);
	ASSERT_EQ(0, mprotect(other, 1 * MiB, PROT_READ));
	EXPECT_EQ(h, reg_mem(self->rv, other, 1 * MiB, ACC_LW, NULL));
	/* Unmapped while in use: freed with its last reference. */
	munmap(other, 1 * MiB);
	EXPECT_EQ(1, rv_dereg_mem(self->rv, h));
	EXPECT_EQ(0, rv_dereg_mem(self->rv, h));
	EXPECT_EQ(-ENOENT, rv_dereg_mem(self->rv, h));
}

TEST_F(mr, brk_shrink_invalidates)
{
	char *top, *p;
	int h;

	/* Page-align the break, then grow it by 256 KiB we own. */
	top = sbrk(0);
	ASSERT_NE((void *)-1, sbrk((intptr_t)((-(uintptr_t)top) & 4095)));
	p = sbrk(256 * KiB);
	ASSERT_NE((void *)-1, p);
	memset(p, 3, 256 * KiB);
	h = reg_mem(self->rv, p, 256 * KiB, ACC_LW, NULL);
	ASSERT_GT(h, 0);
	EXPECT_EQ(0, rv_dereg_mem(self->rv, h));
	ASSERT_NE((void *)-1, sbrk(-(intptr_t)(128 * KiB)));
	EXPECT_EQ(1, stats_of(self->rv).invalidations);
	EXPECT_EQ(0, wait_vm_pin_kb(0));
}

/* A forked child shares the file but not the mm: it may not use it. */
TEST_F(mr, fork_child_denied)
{
	int h, status;
	pid_t pid;

	h = reg_mem(self->rv, self->buf, 1 * MiB, ACC_RW, NULL);
	ASSERT_GT(h, 0);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct rv_evict e = { .mode = RV_EVICT_AMOUNT,
				      .target_entries = 100 };
		int bad = 0;

		bad |= reg_mem(self->rv, self->buf, 4096, ACC_LW, NULL) !=
		       -EPERM;
		bad |= (rv_dereg_mem(self->rv, h) != -EPERM) << 1;
		bad |= (rv_evict(self->rv, &e) != -EPERM) << 2;
		_exit(bad);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));

	/* The parent's entry survived the fork and the child's exit. */
	EXPECT_EQ(h, reg_mem(self->rv, self->buf, 1 * MiB, ACC_RW, NULL));
	EXPECT_EQ(0, stats_of(self->rv).invalidations);
	EXPECT_EQ(1, rv_dereg_mem(self->rv, h));
	EXPECT_EQ(0, rv_dereg_mem(self->rv, h));
	EXPECT_EQ(-EINVAL, rv_dereg_mem(self->rv, h));
}

/* LRU eviction under the byte limit: least recently used goes first. */
TEST(lru_order)
{
	struct rv_mr_stats s;
	struct rv *rv;
	char *buf;
	int h[6], i, ret;

	if (access(RV_DEV_PATH, F_OK))
		SKIP(return, RV_DEV_PATH " missing: rv module not loaded");
	ret = open_attached(&rv, 4 * MiB);
	if (ret == -ENODEV)
		SKIP(return, "no RDMA device");
	ASSERT_EQ(0, ret);
	buf = map_anon(6 * MiB);
	ASSERT_NE(NULL, buf);

	/* A B C D fill the cache; use order afterwards: A D C B (B oldest). */
	for (i = 0; i < 4; i++) {
		h[i] = reg_mem(rv, buf + i * MiB, 1 * MiB, ACC_LW, NULL);
		ASSERT_GT(h[i], 0);
	}
	EXPECT_EQ(0, rv_dereg_mem(rv, h[1]));
	EXPECT_EQ(0, rv_dereg_mem(rv, h[2]));
	EXPECT_EQ(0, rv_dereg_mem(rv, h[3]));
	EXPECT_EQ(0, rv_dereg_mem(rv, h[0]));

	/* E needs room: B goes. */
	h[4] = reg_mem(rv, buf + 4 * MiB, 1 * MiB, ACC_LW, NULL);
	ASSERT_GT(h[4], 0);
	s = stats_of(rv);
	EXPECT_EQ(1, s.evict_pressure);
	EXPECT_EQ(4, s.entries);
	EXPECT_EQ(4 * MiB, s.bytes);
	EXPECT_EQ(-ENOENT, rv_dereg_mem(rv, h[1]));
	EXPECT_EQ(-EINVAL, rv_dereg_mem(rv, h[2]));	/* C still cached */

	/* F: C goes next, then (G) D; A, used last, stays. */
	h[5] = reg_mem(rv, buf + 5 * MiB, 1 * MiB, ACC_LW, NULL);
	ASSERT_GT(h[5], 0);
	EXPECT_EQ(-ENOENT, rv_dereg_mem(rv, h[2]));
	EXPECT_GT(reg_mem(rv, buf + 1 * MiB, 1 * MiB, ACC_LW, NULL), 0);
	EXPECT_EQ(-ENOENT, rv_dereg_mem(rv, h[3]));
	EXPECT_EQ(h[0], reg_mem(rv, buf, 1 * MiB, ACC_LW, NULL));
	s = stats_of(rv);
	EXPECT_EQ(3, s.evict_pressure);
	EXPECT_EQ(1, s.hits);
	EXPECT_EQ(4 * MiB, s.max_bytes);

	/* Everything in use (A E F B'): no room, nothing evicted. */
	EXPECT_EQ(-ENOSPC, reg_mem(rv, buf + 3 * MiB, 4096, ACC_LW, NULL));
	EXPECT_EQ(-ENOSPC, reg_mem(rv, buf, 5 * MiB, ACC_LW, NULL));
	s = stats_of(rv);
	EXPECT_EQ(3, s.evict_pressure);
	EXPECT_EQ(4, s.in_use_entries);
	EXPECT_EQ(2, s.failures);
	EXPECT_EQ(4096, mr_pin_kb());

	close_attached(rv);
	/* Closing the file unpins everything. */
	EXPECT_EQ(0, wait_vm_pin_kb(0));
	munmap(buf, 6 * MiB);
}

static int evict(struct rv *rv, uint32_t mode, uint64_t addr, uint64_t len,
		 uint32_t access, uint64_t bytes, uint32_t entries,
		 struct rv_evict *out)
{
	memset(out, 0, sizeof(*out));
	out->mode = mode;
	out->addr = addr;
	out->length = len;
	out->access = access;
	out->target_bytes = bytes;
	out->target_entries = entries;
	return rv_evict(rv, out);
}

TEST_F(mr, evict_modes)
{
	char *b = self->buf;
	struct rv_evict e;
	int h[8], i;

	/* Eight 64 KiB entries, unused, used in order 0..7 (0 oldest). */
	for (i = 0; i < 8; i++) {
		h[i] = reg_mem(self->rv, b + i * 128 * KiB, 64 * KiB,
				  ACC_LW, NULL);
		ASSERT_GT(h[i], 0);
	}
	for (i = 0; i < 8; i++)
		EXPECT_EQ(0, rv_dereg_mem(self->rv, h[i]));

	/* EXACT: range and access must match exactly. */
	EXPECT_EQ(-ENOENT, evict(self->rv, RV_EVICT_EXACT, U64(b), 32 * KiB,
				 ACC_LW, 0, 0, &e));
	EXPECT_EQ(-ENOENT, evict(self->rv, RV_EVICT_EXACT, U64(b), 64 * KiB,
				 ACC_RR, 0, 0, &e));
	ASSERT_EQ(0, evict(self->rv, RV_EVICT_EXACT, U64(b), 64 * KiB, ACC_LW, 0,
			   0, &e));
	EXPECT_EQ(1, e.freed_entries);
	EXPECT_EQ(64 * KiB, e.freed_bytes);
	EXPECT_EQ(-ENOENT, rv_dereg_mem(self->rv, h[0]));

	/* In use: EXACT says EBUSY, RANGE skips it. */
	EXPECT_EQ(h[1], reg_mem(self->rv, b + 128 * KiB, 64 * KiB, ACC_LW,
				   NULL));
	EXPECT_EQ(-EBUSY, evict(self->rv, RV_EVICT_EXACT, U64(b + 128 * KiB),
				64 * KiB, ACC_LW, 0, 0, &e));
	/* RANGE over entries 1..3, touching 3 by one byte. */
	ASSERT_EQ(0, evict(self->rv, RV_EVICT_RANGE, U64(b + 100 * KiB),
			   256 * KiB + 28 * KiB + 1, 0, 0, 0, &e));
	EXPECT_EQ(2, e.freed_entries);
	EXPECT_EQ(128 * KiB, e.freed_bytes);
	EXPECT_EQ(0, rv_dereg_mem(self->rv, h[1]));
	EXPECT_EQ(-ENOENT, rv_dereg_mem(self->rv, h[2]));
	EXPECT_EQ(-ENOENT, rv_dereg_mem(self->rv, h[3]));

	/* AMOUNT: LRU order is 4 5 6 7 1 (4 oldest). */
	ASSERT_EQ(0, evict(self->rv, RV_EVICT_AMOUNT, 0, 0, 0, 0, 2, &e));
	EXPECT_EQ(2, e.freed_entries);
	EXPECT_EQ(-ENOENT, rv_dereg_mem(self->rv, h[4]));
	EXPECT_EQ(-ENOENT, rv_dereg_mem(self->rv, h[5]));
	EXPECT_EQ(-EINVAL, rv_dereg_mem(self->rv, h[6]));
	ASSERT_EQ(0, evict(self->rv, RV_EVICT_AMOUNT, 0, 0, 0, 65 * KiB, 0,
			   &e));
	EXPECT_EQ(2, e.freed_entries);
	EXPECT_EQ(128 * KiB, e.freed_bytes);
	EXPECT_EQ(-EINVAL, rv_dereg_mem(self->rv, h[1]));
	/* More than there is: frees what is left, no error. */
	ASSERT_EQ(0, evict(self->rv, RV_EVICT_AMOUNT, 0, 0, 0, 1ULL << 40,
			   0, &e));
	EXPECT_EQ(1, e.freed_entries);
	EXPECT_EQ(0, stats_of(self->rv).entries);
	EXPECT_EQ(8, stats_of(self->rv).evict_request);
	EXPECT_EQ(0, wait_vm_pin_kb(0));

	/* Fields a mode does not use must be 0. */
	EXPECT_EQ(-EINVAL, evict(self->rv, 3, U64(b), 4096, 0, 0, 0, &e));
	EXPECT_EQ(-EINVAL, evict(self->rv, RV_EVICT_EXACT, U64(b), 0, 0, 0, 0, &e));
	EXPECT_EQ(-EINVAL, evict(self->rv, RV_EVICT_EXACT, U64(b), 4096, 0, 1, 0,
				 &e));
	EXPECT_EQ(-EINVAL, evict(self->rv, RV_EVICT_RANGE, U64(b), 4096, ACC_LW, 0,
				 0, &e));
	EXPECT_EQ(-EINVAL, evict(self->rv, RV_EVICT_RANGE, ~0ULL, 2, 0,
				 0, 0, &e));
	EXPECT_EQ(-EINVAL, evict(self->rv, RV_EVICT_AMOUNT, 0, 0, 0, 0, 0,
				 &e));
	EXPECT_EQ(-EINVAL, evict(self->rv, RV_EVICT_AMOUNT, U64(b), 0, 0, 1, 0,
				 &e));
}

/*
 * A hit never grants peers access the request did not ask for: inside a
 * remote-write entry a local-only request is a miss, gets an entry of its
 * own and no key, whichever came first; the two coexist (pinned and
 * counted twice) and each serves its own requests.  A request with
 * exactly an entry's remote access is still a hit, even with less local
 * access, and EVICT's EXACT mode tells the two apart.
 */
TEST_F(mr, remote_access_exact)
{
	char *a = self->buf, *b = self->buf + 1 * MiB, *c = self->buf + 2 * MiB;
	struct rv_mr_stats s;
	struct rv_reg_mem r;
	struct rv_evict e;
	int hr, hl, hb, h;

	/* Remote first, then local-only requests inside it. */
	hr = reg_mem(self->rv, a, 256 * KiB, ACC_RW, &r);
	ASSERT_GT(hr, 0);
	EXPECT_NE(0, r.rkey);
	EXPECT_LE(1, r.nr_rkeys);
	memset(&r, 0xff, sizeof(r));
	hl = reg_mem(self->rv, a, 256 * KiB, ACC_LW, &r);
	ASSERT_GT(hl, 0);
	EXPECT_NE(hr, hl);
	EXPECT_EQ(0, r.rkey);
	EXPECT_EQ(0, r.lkey);
	EXPECT_EQ(0, r.nr_rkeys);
	EXPECT_EQ(0, r.rkey_shift);
	/* A read-only source inside both: the local entry, no key. */
	memset(&r, 0xff, sizeof(r));
	EXPECT_EQ(hl, reg_mem(self->rv, a + 4096, 4096, 0, &r));
	EXPECT_EQ(0, r.rkey);
	EXPECT_EQ(0, r.nr_rkeys);
	s = stats_of(self->rv);
	EXPECT_EQ(2, s.misses);
	EXPECT_EQ(1, s.hits);
	EXPECT_EQ(1, s.fast_regs);

	/* Local first, then remote: a new entry with keys. */
	hb = reg_mem(self->rv, b, 256 * KiB, ACC_LW, &r);
	ASSERT_GT(hb, 0);
	EXPECT_EQ(0, r.rkey);
	h = reg_mem(self->rv, b, 256 * KiB, ACC_RW, &r);
	ASSERT_GT(h, 0);
	EXPECT_NE(hb, h);
	EXPECT_NE(0, r.rkey);
	EXPECT_LE(1, r.nr_rkeys);
	/* Exactly the entry's access, and the local entry's part of b. */
	memset(&r, 0, sizeof(r));
	EXPECT_EQ(h, reg_mem(self->rv, b + 4096, 4096, ACC_LW | ACC_RW, &r));
	EXPECT_NE(0, r.rkey);
	EXPECT_EQ(1, r.nr_rkeys);
	EXPECT_EQ(hb, reg_mem(self->rv, b, 64 * KiB, ACC_LW, &r));
	EXPECT_EQ(0, r.rkey);
	s = stats_of(self->rv);
	EXPECT_EQ(4, s.misses);
	EXPECT_EQ(3, s.hits);
	EXPECT_EQ(2, s.fast_regs);

	/* Remote read beyond the remote write asked for is refused too. */
	h = reg_mem(self->rv, c, 64 * KiB, ACC_RW | ACC_RR, &r);
	ASSERT_GT(h, 0);
	hb = reg_mem(self->rv, c, 64 * KiB, ACC_RW, &r);
	ASSERT_GT(hb, 0);
	EXPECT_NE(h, hb);
	EXPECT_EQ(h, reg_mem(self->rv, c, 64 * KiB, ACC_LW | ACC_RW | ACC_RR,
			     &r));

	/* Each entry pinned and counted on its own. */
	s = stats_of(self->rv);
	EXPECT_EQ(6, s.entries);
	EXPECT_EQ(2 * 256 * KiB + 2 * 256 * KiB + 2 * 64 * KiB, s.bytes);
	EXPECT_EQ(s.bytes / KiB, mr_pin_kb());

	/* EXACT evicts the local entry of a, the remote one stays. */
	EXPECT_EQ(1, rv_dereg_mem(self->rv, hl));
	EXPECT_EQ(0, rv_dereg_mem(self->rv, hl));
	EXPECT_EQ(0, rv_dereg_mem(self->rv, hr));
	ASSERT_EQ(0, evict(self->rv, RV_EVICT_EXACT, U64(a), 256 * KiB,
			   ACC_LW, 0, 0, &e));
	EXPECT_EQ(1, e.freed_entries);
	EXPECT_EQ(-ENOENT, rv_dereg_mem(self->rv, hl));
	EXPECT_EQ(hr, reg_mem(self->rv, a, 256 * KiB, ACC_RW, &r));
	EXPECT_NE(0, r.rkey);
	EXPECT_EQ(5, stats_of(self->rv).entries);
}

TEST_F(mr, memlock_limit)
{
	struct rlimit rl = { 512 * KiB, 512 * KiB };
	struct rv_mr_stats s;
	int h;

	ASSERT_EQ(0, rv_drop_cap_ipc_lock());
	ASSERT_EQ(0, setrlimit(RLIMIT_MEMLOCK, &rl));
	EXPECT_EQ(-ENOMEM, reg_mem(self->rv, self->buf, 1 * MiB, ACC_LW,
				      NULL));
	s = stats_of(self->rv);
	EXPECT_EQ(0, s.entries);
	EXPECT_EQ(0, s.bytes);
	EXPECT_EQ(1, s.failures);
	EXPECT_EQ(0, mr_pin_kb());

	/* Within the limit it works, and the limit counts what is pinned. */
	h = reg_mem(self->rv, self->buf, 256 * KiB, ACC_LW, NULL);
	ASSERT_GT(h, 0);
	EXPECT_EQ(-ENOMEM, reg_mem(self->rv, self->buf + 1 * MiB,
				      384 * KiB, ACC_LW, NULL));
	EXPECT_EQ(256, mr_pin_kb());
	/* Unused entries give way when the rlimit is what stops pinning. */
	EXPECT_EQ(0, rv_dereg_mem(self->rv, h));
	EXPECT_GT(reg_mem(self->rv, self->buf + 1 * MiB, 384 * KiB, ACC_LW,
			     NULL), 0);
	s = stats_of(self->rv);
	EXPECT_EQ(1, s.evict_pressure);
	EXPECT_EQ(1, s.entries);
	EXPECT_EQ(384, mr_pin_kb());
}

/*
 * RLIMIT_MEMLOCK 0 without CAP_IPC_LOCK: the kernel's pin check answers
 * EPERM, rv's uAPI says ENOMEM like any other rlimit refusal.
 */
TEST_F(mr, memlock_zero)
{
	struct rlimit rl = { 0, 0 };

	ASSERT_EQ(0, rv_drop_cap_ipc_lock());
	ASSERT_EQ(0, setrlimit(RLIMIT_MEMLOCK, &rl));
	EXPECT_EQ(-ENOMEM, reg_mem(self->rv, self->buf, 4096, ACC_LW,
				      NULL));
	EXPECT_EQ(-ENOMEM, reg_mem(self->rv, self->buf, 4096, ACC_RW,
				      NULL));
	EXPECT_EQ(0, stats_of(self->rv).entries);
	EXPECT_EQ(2, stats_of(self->rv).failures);
	EXPECT_EQ(0, mr_pin_kb());
}

/*
 * Memory the caller cannot access is never pinned: a PROT_NONE page
 * anywhere in the range, whatever the access asked for (the kernel's
 * read-only pins are forced), and write access to a read-only mapping.
 */
TEST_F(mr, inaccessible_refused)
{
	static const unsigned int accesses[] = {
		0, ACC_LW, ACC_RW, ACC_RR, ACC_LW | ACC_RR,
	};
	char *guard = self->buf + 1 * MiB;
	char *ro = self->buf + 2 * MiB;
	unsigned int i;
	int h;

	ASSERT_EQ(0, mprotect(guard, 4096, PROT_NONE));
	ASSERT_EQ(0, mprotect(ro, 64 * KiB, PROT_READ));
	for (i = 0; i < sizeof(accesses) / sizeof(accesses[0]); i++) {
		EXPECT_EQ(-EFAULT, reg_mem(self->rv, guard, 4096,
					      accesses[i], NULL));
		/* The guard page in the middle of readable memory. */
		EXPECT_EQ(-EFAULT, reg_mem(self->rv, guard - 8192, 16384,
					      accesses[i], NULL));
	}
	EXPECT_EQ(-EFAULT, reg_mem(self->rv, ro, 4096, ACC_LW, NULL));
	EXPECT_EQ(-EFAULT, reg_mem(self->rv, ro, 4096, ACC_RW, NULL));
	EXPECT_EQ(0, stats_of(self->rv).entries);
	EXPECT_EQ(0, mr_pin_kb());

	/* Read access is what a write's source or REMOTE_READ needs. */
	h = reg_mem(self->rv, ro, 64 * KiB, 0, NULL);
	ASSERT_GT(h, 0);
	EXPECT_EQ(0, rv_dereg_mem(self->rv, h));
	h = reg_mem(self->rv, ro, 64 * KiB, ACC_RR, NULL);
	ASSERT_GT(h, 0);
	EXPECT_EQ(0, rv_dereg_mem(self->rv, h));
	/* The pages around the guard still register. */
	h = reg_mem(self->rv, guard - 8192, 8192, ACC_LW, NULL);
	ASSERT_GT(h, 0);
	EXPECT_EQ(0, rv_dereg_mem(self->rv, h));
	EXPECT_EQ(3, stats_of(self->rv).entries);
}

/* rv's frwr_max_pages parameter, or -1. */
static long frwr_max_pages(void)
{
	FILE *f = fopen("/sys/module/rv/parameters/frwr_max_pages", "r");
	long v = -1;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/* Keys a remote range needs with chunks of 1 << @shift bytes. */
static uint32_t chunks_of(const void *p, size_t len, unsigned int shift)
{
	return (uint32_t)((((uintptr_t)p + len - 1) >> shift) -
			  ((uintptr_t)p >> shift) + 1);
}

/*
 * Remote access always takes fast registration, one MR per key chunk;
 * local-only registrations take none.  The chunk is frwr_max_pages (the
 * mr-frwr16 group) or the device's page-list limit, rounded down to a
 * power of two.
 */
TEST_F(mr, remote_paths)
{
	long cap = frwr_max_pages();
	struct rv_reg_mem r;
	struct rv_mr_stats s;
	uint32_t keys = 0;

	ASSERT_GE(cap, 0);
	ASSERT_GT(reg_mem(self->rv, self->buf, 4096, ACC_LW, &r), 0);
	EXPECT_EQ(0, r.rkey);
	EXPECT_EQ(0, r.nr_rkeys);
	EXPECT_EQ(0, r.rkey_shift);
	ASSERT_GT(reg_mem(self->rv, self->buf + 8192, 4096, ACC_RW, &r), 0);
	EXPECT_NE(0, r.rkey);
	EXPECT_EQ(1, r.nr_rkeys);
	keys += r.nr_rkeys;
	if (cap) {
		unsigned int shift = 12;

		while ((2L << (shift - 12)) <= cap)
			shift++;
		EXPECT_EQ(shift, r.rkey_shift);
	} else {
		/* rxe: 512 pages of 4 KiB. */
		EXPECT_GE(r.rkey_shift, 21);
	}
	/* Ends inside pages. */
	ASSERT_GT(reg_mem(self->rv, self->buf + 16384 + 100, 5000, ACC_RR,
			  &r), 0);
	EXPECT_NE(0, r.rkey);
	EXPECT_EQ(chunks_of(self->buf + 16384 + 100, 5000, r.rkey_shift),
		  r.nr_rkeys);
	keys += r.nr_rkeys;
	/* The whole buffer: a new entry (RW does not cover RR + RW). */
	ASSERT_GT(reg_mem(self->rv, self->buf + 20480, self->buf_len - 20480,
			  ACC_RW | ACC_RR, &r), 0);
	EXPECT_EQ(chunks_of(self->buf + 20480, self->buf_len - 20480,
			    r.rkey_shift), r.nr_rkeys);
	keys += r.nr_rkeys;
	s = stats_of(self->rv);
	EXPECT_EQ(3, s.fast_regs);
	EXPECT_EQ(keys, s.fast_reg_keys);
	EXPECT_EQ(s.misses, s.fast_regs + 1);
	TH_LOG("frwr_max_pages %ld: key chunks of %llu bytes, %u keys for %zu bytes",
	       cap, 1ULL << r.rkey_shift, r.nr_rkeys, self->buf_len - 20480);
}

/*
 * A remote buffer over three key chunks: rv_reg_mem() without an array
 * and rv_reg_mem_keys() with one too short fail with EOVERFLOW, say how
 * many keys it takes and hold nothing; with room, every key is distinct
 * and a request inside one chunk hits with that chunk's key alone.
 */
TEST_F(mr, rkey_chunks)
{
	uint32_t keys[4] = { 0 }, i, j;
	struct rv_reg_mem r;
	unsigned int shift;
	size_t chunk, len;
	char *area, *p;
	int h, hl;

	ASSERT_GT(reg_mem(self->rv, self->buf, 4096, ACC_RW, &r), 0);
	shift = r.rkey_shift;
	ASSERT_GE(shift, 12);
	chunk = (size_t)1 << shift;
	if (chunk > 2 * MiB)
		SKIP(return, "key chunks of %zu bytes: too large here", chunk);
	area = map_anon(4 * chunk);
	ASSERT_NE(NULL, area);
	/* From the middle of a chunk to the middle of the one after next. */
	p = (char *)(((uintptr_t)area + chunk) & ~(uintptr_t)(chunk - 1));
	p += chunk / 2;
	len = 2 * chunk;

	EXPECT_EQ(-EOVERFLOW, rv_reg_mem(self->rv, p, len, ACC_RW, &r));
	memset(&r, 0, sizeof(r));
	EXPECT_EQ(-EOVERFLOW, rv_reg_mem_keys(self->rv, p, len, ACC_RW, &r,
					      keys, 2));
	EXPECT_EQ(3, r.nr_rkeys);
	EXPECT_EQ(0, r.handle);
	EXPECT_EQ(0, keys[0]);
	/* Only the first registration is held. */
	EXPECT_EQ(1, stats_of(self->rv).in_use_entries);

	h = rv_reg_mem_keys(self->rv, p, len, ACC_RW, &r, keys, 4);
	ASSERT_GT(h, 0);
	EXPECT_EQ(3, r.nr_rkeys);
	EXPECT_EQ(shift, r.rkey_shift);
	EXPECT_EQ(keys[0], r.rkey);
	EXPECT_EQ(0, keys[3]);
	for (i = 0; i < 3; i++) {
		EXPECT_NE(0, keys[i]);
		for (j = 0; j < i; j++)
			EXPECT_NE(keys[j], keys[i]);
	}
	/* One miss for the region, the retries were hits on it. */
	EXPECT_EQ(2, stats_of(self->rv).misses);
	EXPECT_EQ(1 + 3, stats_of(self->rv).fast_reg_keys);

	/* Inside the middle chunk: a hit, one key, no array needed. */
	EXPECT_EQ(h, rv_reg_mem(self->rv, p + chunk / 2 + 100, chunk - 200,
				ACC_RW, &r));
	EXPECT_EQ(keys[1], r.rkey);
	/* The last chunk's part: its key, written to the array too. */
	EXPECT_EQ(h, rv_reg_mem_keys(self->rv, p + 3 * chunk / 2, chunk / 2,
				     ACC_RW, &r, keys + 3, 1));
	EXPECT_EQ(1, r.nr_rkeys);
	EXPECT_EQ(keys[2], keys[3]);
	EXPECT_EQ(keys[2], r.rkey);
	/*
	 * A local-only request inside it: its own entry, and no key.  A few
	 * pages across the chunk boundary, not the whole range: the new
	 * entry pins its pages a second time, and the range twice is more
	 * than an unprivileged user's RLIMIT_MEMLOCK allows (mr-i386-nobody).
	 */
	memset(&r, 0xff, sizeof(r));
	hl = rv_reg_mem(self->rv, p + chunk / 2 - 8192, 16384, ACC_LW, &r);
	EXPECT_GT(hl, 0);
	EXPECT_NE(h, hl);
	EXPECT_EQ(0, r.rkey);
	EXPECT_EQ(0, r.lkey);
	EXPECT_EQ(hl, rv_reg_mem_keys(self->rv, p + chunk / 2 - 8192, 16384, 0,
				      &r, keys, 4));
	EXPECT_EQ(0, r.nr_rkeys);
	EXPECT_EQ(0, r.rkey_shift);
	EXPECT_EQ(2, rv_dereg_mem(self->rv, h));
	EXPECT_EQ(1, rv_dereg_mem(self->rv, hl));
	munmap(area, 4 * chunk);
}

/*
 * Freed remote registrations leave their MRs in the file's pool,
 * invalidated, up to 32: the next misses register those again.  A
 * reused MR keeps its index (the key's upper 24 bits) but never its key,
 * so a peer's key of the freed registration matches nothing.
 */
TEST_F(mr, frwr_pool)
{
	uint32_t old_keys[40], new_keys[40];
	struct rv_mr_stats s0, s1;
	struct rv_reg_mem r;
	struct rv_evict e;
	unsigned int same_index = 0;
	int i, h;

	/* 40 single-key registrations of a page each. */
	for (i = 0; i < 40; i++) {
		h = reg_mem(self->rv, self->buf + i * 64 * KiB, 4 * KiB, ACC_RW,
			    &r);
		ASSERT_GT(h, 0) TH_LOG("reg %d: %s", i, strerror(-h));
		ASSERT_EQ(1, r.nr_rkeys);
		old_keys[i] = r.rkey;
		ASSERT_EQ(0, rv_dereg_mem(self->rv, h));
	}
	s0 = stats_of(self->rv);
	/* EVICT frees at once: 32 MRs are pooled, 8 deregistered. */
	ASSERT_EQ(0, evict(self->rv, RV_EVICT_RANGE, U64(self->buf),
			   self->buf_len, 0, 0, 0, &e));
	ASSERT_EQ(40, e.freed_entries);
	for (i = 0; i < 40; i++) {
		h = reg_mem(self->rv, self->buf + i * 64 * KiB, 4 * KiB, ACC_RW,
			    &r);
		ASSERT_GT(h, 0);
		new_keys[i] = r.rkey;
		ASSERT_EQ(0, rv_dereg_mem(self->rv, h));
	}
	s1 = stats_of(self->rv);
	EXPECT_EQ(40, s1.fast_regs - s0.fast_regs);
	EXPECT_EQ(32, s1.fast_reg_reused - s0.fast_reg_reused);
	/* No key of the freed registrations is handed out again. */
	for (i = 0; i < 40; i++) {
		int j;

		for (j = 0; j < 40; j++) {
			EXPECT_NE(old_keys[j], new_keys[i]);
			same_index += old_keys[j] >> 8 == new_keys[i] >> 8;
		}
	}
	EXPECT_GE(same_index, 32);
	/* Close with the pool full: rv_close() must deregister it (kmemleak
	 * and the VM's leak checks see what it forgets).
	 */
	ASSERT_EQ(0, evict(self->rv, RV_EVICT_RANGE, U64(self->buf),
			   self->buf_len, 0, 0, 0, &e));
	EXPECT_EQ(40, e.freed_entries);
}

/*
 * At most RV_MAX_REG_KEYS keys per registration: with one page per key
 * chunk (frwr_max_pages=1, the mr-frwr1 group), RV_MAX_REG_KEYS pages
 * register, one page more is E2BIG and holds nothing.
 */
TEST(max_keys)
{
	size_t len = (size_t)RV_MAX_REG_KEYS * 4096;
	struct rv_reg_mem r;
	struct rv *rv;
	char *buf;
	int h;

	if (frwr_max_pages() != 1)
		SKIP(return, "needs rv loaded with frwr_max_pages=1");
	ASSERT_EQ(0, open_attached(&rv, 64 * MiB));
	buf = map_anon(len + 4096);
	ASSERT_NE(NULL, buf);
	EXPECT_EQ(-E2BIG, reg_mem(rv, buf, len + 4096, ACC_RW, &r));
	EXPECT_EQ(0, stats_of(rv).entries);
	h = reg_mem(rv, buf, len, ACC_RW, &r);
	EXPECT_GT(h, 0);
	EXPECT_EQ(RV_MAX_REG_KEYS, r.nr_rkeys);
	EXPECT_EQ(12, r.rkey_shift);
	close_attached(rv);
	munmap(buf, len + 4096);
}

/* Thousands of register/evict cycles: keys are recycled, nothing fails. */
TEST_F(mr, many_cycles)
{
	struct rv_reg_mem r;
	struct rv_evict e;
	int i, h;

	for (i = 0; i < 3000; i++) {
		char *p = self->buf + (i % 64) * 64 * KiB;

		h = reg_mem(self->rv, p, 4 * KiB + (i % 7) * 4096,
			       i & 1 ? ACC_RW : ACC_LW, &r);
		ASSERT_GT(h, 0) TH_LOG("cycle %d: %s", i, strerror(-h));
		ASSERT_EQ(0, rv_dereg_mem(self->rv, h));
		ASSERT_EQ(0, evict(self->rv, RV_EVICT_RANGE, U64(p), 1, 0, 0, 0,
				   &e));
		ASSERT_EQ(1, e.freed_entries);
	}
	EXPECT_EQ(3000, stats_of(self->rv).misses);
	EXPECT_EQ(0, stats_of(self->rv).failures);
	EXPECT_EQ(0, stats_of(self->rv).entries);
	EXPECT_EQ(0, wait_vm_pin_kb(0));
}

/*
 * Exit with live entries (never deregistered, never closed): every pinned
 * page comes back.  Pins are counted system-wide by /proc/vmstat, so the
 * child's 32 MiB must show up there and go away after it exits.
 */
TEST(exit_releases_pins)
{
	long pages = 32 * MiB / 4096;
	long before, during, after = -1;
	int pfd[2], status, i;
	struct rlimit rl;
	pid_t pid;

	if (access(RV_DEV_PATH, F_OK))
		SKIP(return, RV_DEV_PATH " missing: rv module not loaded");
	before = pinned_pages_now();
	if (before < 0)
		SKIP(return, "no nr_foll_pin_* in /proc/vmstat");
	/* Unprivileged: stay within RLIMIT_MEMLOCK (8 MiB by default). */
	ASSERT_EQ(0, getrlimit(RLIMIT_MEMLOCK, &rl));
	if (geteuid() && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < 2 * pages * 4096)
		pages = rl.rlim_cur / 2 / (1 * MiB) * (1 * MiB) / 4096;
	if (pages < 256)
		SKIP(return, "RLIMIT_MEMLOCK below 2 MiB");
	ASSERT_EQ(0, pipe(pfd));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct rv *rv;
		long now;
		char *p;

		if (open_attached(&rv, 64 * MiB))
			_exit(2);
		p = map_anon(pages * 4096);
		if (!p)
			_exit(3);
		/* Two entries in use and one unused. */
		if (reg_mem(rv, p, pages * 2048, ACC_RW, NULL) <= 0 ||
		    reg_mem(rv, p + pages * 2048, pages * 1024, ACC_LW,
			       NULL) <= 0)
			_exit(4);
		i = reg_mem(rv, p + pages * 3072, pages * 1024, ACC_LW,
			       NULL);
		if (i <= 0 || rv_dereg_mem(rv, i))
			_exit(5);
		now = pinned_pages_now();
		if (write(pfd[1], &now, sizeof(now)) != sizeof(now))
			_exit(6);
		_exit(0);
	}
	close(pfd[1]);
	ASSERT_EQ(sizeof(during), read(pfd[0], &during, sizeof(during)));
	close(pfd[0]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	/* vmstat folds per-CPU deltas lazily: allow a few pages of slack. */
	EXPECT_GE(during - before, pages - pages / 16);

	for (i = 0; i < 50; i++) {
		after = pinned_pages_now();
		if (after <= before)
			break;
		usleep(100000);
	}
	TH_LOG("pinned pages: %ld before, %ld in the child, %ld after it exited",
	       before, during, after);
	EXPECT_LT(after, before + pages / 16);
}

/*
 * Four threads register and deregister ranges of a region while a fifth
 * unmaps and maps them back, for RV_MR_STRESS_SECONDS (default 30).
 * Registration may fail with EFAULT (caught unmapped) or EAGAIN (changed
 * while pinning) only; afterwards nothing stays pinned.
 */
#define STRESS_CHUNKS 16
#define STRESS_CHUNK (64 * KiB)

struct stress {
	struct rv *rv;
	char *base;
	atomic_bool stop;
	atomic_long regs, faults, bad;
	atomic_long bad_errno;
};

static void *stress_reg(void *arg)
{
	struct stress *st = arg;
	unsigned int seed = (unsigned int)(uintptr_t)&seed;

	while (!atomic_load(&st->stop)) {
		unsigned int c = rand_r(&seed) % STRESS_CHUNKS;
		size_t off = (rand_r(&seed) % 16) * 4096;
		size_t len = 4096 * (1 + rand_r(&seed) % 16);
		int h;

		if (off + len > STRESS_CHUNK)
			len = STRESS_CHUNK - off;
		h = reg_mem(st->rv, st->base + c * STRESS_CHUNK + off, len,
			       rand_r(&seed) & 1 ? ACC_RW : ACC_LW, NULL);
		if (h > 0) {
			atomic_fetch_add(&st->regs, 1);
			if (rv_dereg_mem(st->rv, h) < 0) {
				atomic_fetch_add(&st->bad, 1);
				atomic_store(&st->bad_errno, 1000);
			}
		} else if (h == -EFAULT || h == -EAGAIN) {
			atomic_fetch_add(&st->faults, 1);
		} else {
			atomic_fetch_add(&st->bad, 1);
			atomic_store(&st->bad_errno, -h);
		}
	}
	return NULL;
}

static void *stress_unmap(void *arg)
{
	struct stress *st = arg;
	unsigned int seed = 42;

	while (!atomic_load(&st->stop)) {
		char *p = st->base + (rand_r(&seed) % STRESS_CHUNKS) *
				     STRESS_CHUNK;

		if (munmap(p, STRESS_CHUNK) ||
		    mmap(p, STRESS_CHUNK, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != p) {
			atomic_fetch_add(&st->bad, 1);
			atomic_store(&st->bad_errno, errno);
			break;
		}
		memset(p, 7, STRESS_CHUNK);
		usleep(500);
	}
	return NULL;
}

TEST_F_TIMEOUT(mr, register_vs_munmap, 120)
{
	const char *env = getenv("RV_MR_STRESS_SECONDS");
	int seconds = env ? atoi(env) : 30;
	struct stress st = { .rv = self->rv, .base = self->buf };
	pthread_t tid[5];
	struct rv_evict e;
	struct rv_mr_stats s;
	int i;

	ASSERT_GE(self->buf_len, STRESS_CHUNKS * STRESS_CHUNK);
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, pthread_create(&tid[i], NULL, stress_reg, &st));
	ASSERT_EQ(0, pthread_create(&tid[4], NULL, stress_unmap, &st));
	sleep(seconds);
	atomic_store(&st.stop, true);
	for (i = 0; i < 5; i++)
		pthread_join(tid[i], NULL);

	s = stats_of(self->rv);
	TH_LOG("%ld registrations, %ld EFAULT/EAGAIN, %llu hits, %llu misses, %llu invalidations",
	       atomic_load(&st.regs), atomic_load(&st.faults),
	       (unsigned long long)s.hits, (unsigned long long)s.misses,
	       (unsigned long long)s.invalidations);
	EXPECT_EQ(0, atomic_load(&st.bad)) TH_LOG("errno %ld",
						    atomic_load(&st.bad_errno));
	EXPECT_GT(atomic_load(&st.regs), 100);
	EXPECT_GT(s.invalidations, 10);
	EXPECT_EQ(0, s.in_use_entries);

	ASSERT_EQ(0, evict(self->rv, RV_EVICT_AMOUNT, 0, 0, 0, 1ULL << 40,
			   0, &e));
	EXPECT_EQ(0, stats_of(self->rv).entries);
	EXPECT_EQ(0, wait_vm_pin_kb(0));
}

TEST_HARNESS_MAIN
