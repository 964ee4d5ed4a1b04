// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The MR table (rv(7), "MR table"): registration-cache hits and releases
 * without a system call, and what a hook-based user-space cache gets
 * wrong: every way a registered range can change under the process, each
 * followed by a lookup that must miss and a write from the old
 * registration that must fail.  Also the table's mappings under hostile
 * use, holds against eviction, and a race of hits, invalidations and
 * evictions on two CPUs.
 *
 * Built statically (a hook-based cache cannot see the unmaps of a static
 * program).  Needs /dev/rv and an RDMA device with an IPv4 GID
 * ($RV_IBDEV); writes go to a connection that is never connected, whose
 * post checks the registration before it fails with EPIPE.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "kselftest_harness.h"
#include "rv_test_util.h"

#define KiB (1024UL)
#define MiB (1024UL * 1024)
#define U64(p) ((uint64_t)(uintptr_t)(p))
#define ACC_LW RV_ACCESS_LOCAL_WRITE
#define ACC_RW RV_ACCESS_REMOTE_WRITE

/* An errno no path of librv's hit returns: the seccomp filter's answer. */
#define IOCTL_DENIED EHWPOISON

struct file {
	struct rv *rv;
	int conn;		/* a connection handle, never connected */
	uint32_t entries;	/* MR table slots */
};

static int file_open(struct file *f, uint64_t cache_bytes)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rv_attach a;
	int idx, gid, ret;

	idx = rv_device_index(rv_test_ibdev());
	gid = rv_ipv4_gid(rv_test_ibdev(), RV_TEST_PORT, -1, NULL);
	if (idx < 0 || gid < 0)
		return -ENODEV;
	ret = rv_open(&f->rv, 0);
	if (ret)
		return ret;
	rv_attach_init(&a, (uint32_t)idx, 8);
	a.gid_index = gid;
	a.mr_cache_bytes = cache_bytes;
	a.ring_entries = RV_MIN_RING_ENTRIES;
	ret = rv_attach(f->rv, &a);
	if (ret < 0)
		goto out_close;
	f->entries = a.mr_table_entries;
	/* TEST-NET-1: never reached; the handle exists, IDLE. */
	sin.sin_addr.s_addr = htonl(0xc0000201);
	ret = rv_conn_create(f->rv, (struct sockaddr *)&sin, sizeof(sin),
			     NULL);
	if (ret < 0)
		goto out_close;
	f->conn = ret;
	return 0;

out_close:
	rv_close(f->rv);
	return ret;
}

/* POST_WRITE of @len bytes from registration @handle at @p: the errno. */
static int post_from(const struct file *f, unsigned int handle,
		     const void *p, size_t len)
{
	struct rv_write w = {
		.wr_id = 1,
		.local_addr = U64(p),
		.length = len,
		.conn_handle = (uint32_t)f->conn,
		.mr_handle = handle,
	};

	return rv_post_write(f->rv, &w);
}

static struct rv_mr_stats kstats(const struct file *f)
{
	struct rv_mr_stats s;

	if (rv_mr_stats(f->rv, &s))
		memset(&s, 0xff, sizeof(s));
	return s;
}

static struct rv_mr_table_stats tstats(const struct file *f)
{
	struct rv_mr_table_stats s;

	if (rv_mr_table_stats(f->rv, &s))
		memset(&s, 0xff, sizeof(s));
	return s;
}

static void *map_at(void *addr, size_t len, int extra)
{
	void *p = mmap(addr, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | extra, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	madvise(p, len, MADV_NOHUGEPAGE);
	memset(p, 0x5a, len);
	return p;
}

FIXTURE(table) {
	struct file f;
	char *buf;
	size_t len;
};

FIXTURE_SETUP(table)
{
	int ret;

	if (access(RV_DEV_PATH, F_OK))
		SKIP(return, RV_DEV_PATH " missing: rv module not loaded");
	ret = file_open(&self->f, 64 * MiB);
	if (ret == -ENODEV)
		SKIP(return, "no RDMA device %s with an IPv4 GID",
		     rv_test_ibdev());
	ASSERT_EQ(0, ret);
	ASSERT_EQ(RV_DEFAULT_MR_TABLE_ENTRIES, self->f.entries);
	ASSERT_EQ(RV_DEFAULT_MR_TABLE_ENTRIES, tstats(&self->f).entries);
	self->len = 1 * MiB;
	self->buf = map_at(NULL, self->len, 0);
	ASSERT_NE(NULL, self->buf);
}

FIXTURE_TEARDOWN(table)
{
	if (self->buf)
		munmap(self->buf, self->len);
	rv_close(self->f.rv);
}

struct no_ioctl_run {
	struct file *f;
	char *buf;
	int filter, hit, release, miss;
};

static void *no_ioctl_thread(void *arg)
{
	struct no_ioctl_run *r = arg;

	/* This thread only: ioctl(2) fails with IOCTL_DENIED. */
	r->filter = rv_deny_syscall(__NR_ioctl, IOCTL_DENIED);
	if (r->filter)
		return NULL;
	r->hit = rv_reg_mem(r->f->rv, r->buf, 64 * KiB, ACC_LW, NULL);
	r->release = r->hit > 0 ? rv_dereg_mem(r->f->rv, r->hit) : -1;
	/* Never registered: only the kernel can answer, and may not. */
	r->miss = rv_reg_mem(r->f->rv, r->buf + 128 * KiB, 4 * KiB, ACC_LW,
			     NULL);
	return NULL;
}

/* The second registration of a buffer and its release: no system call. */
TEST_F(table, hit_without_ioctl)
{
	struct no_ioctl_run r = { .f = &self->f, .buf = self->buf };
	struct rv_reg_mem r1, r2;
	struct rv_mr_table_stats t;
	struct rv_mr_stats s;
	pthread_t th;
	int h1, h2;

	h1 = rv_reg_mem(self->f.rv, self->buf, 64 * KiB, ACC_LW, &r1);
	ASSERT_GT(h1, 0);
	EXPECT_EQ(0, rv_dereg_mem(self->f.rv, h1));
	h2 = rv_reg_mem(self->f.rv, self->buf, 64 * KiB, ACC_LW, &r2);
	EXPECT_EQ(h1, h2);
	EXPECT_EQ(r1.region_addr, r2.region_addr);
	EXPECT_EQ(r1.region_length, r2.region_length);
	EXPECT_EQ(U64(self->buf), r2.iova);
	EXPECT_EQ(0, rv_dereg_mem(self->f.rv, h2));

	s = kstats(&self->f);
	EXPECT_EQ(1, s.misses);
	EXPECT_EQ(0, s.hits);
	EXPECT_EQ(1, s.entries);
	t = tstats(&self->f);
	EXPECT_EQ(1, t.hits);
	EXPECT_EQ(2, t.releases);
	EXPECT_EQ(1, t.live);
	EXPECT_EQ(0, t.held);

	ASSERT_EQ(0, pthread_create(&th, NULL, no_ioctl_thread, &r));
	ASSERT_EQ(0, pthread_join(th, NULL));
	ASSERT_EQ(0, r.filter);
	EXPECT_EQ(h1, r.hit);
	EXPECT_EQ(0, r.release);
	/* The filter works: a miss needs the ioctl, and it was refused. */
	EXPECT_EQ(-IOCTL_DENIED, r.miss);
	EXPECT_EQ(1, kstats(&self->f).misses);
}

/* A hit answers exactly as REG_MEM does: keys, chunks, sub-ranges. */
TEST_F(table, remote_keys_as_kernel)
{
	static uint32_t k1[RV_MAX_REG_KEYS], k2[RV_MAX_REG_KEYS];
	struct rv_reg_mem r1, r2;
	char *sub = self->buf + 4096 + 100;
	int h1, h2;

	h1 = rv_reg_mem_keys(self->f.rv, self->buf, self->len, ACC_RW, &r1,
			     k1, RV_MAX_REG_KEYS);
	ASSERT_GT(h1, 0);
	if (!r1.table_gen)
		SKIP(return, "%u key chunks: more than a slot holds",
		     r1.nr_rkeys);
	h2 = rv_reg_mem_keys(self->f.rv, self->buf, self->len, ACC_RW, &r2,
			     k2, RV_MAX_REG_KEYS);
	ASSERT_EQ(h1, h2);
	EXPECT_EQ(1, tstats(&self->f).hits);
	EXPECT_EQ(r1.lkey, r2.lkey);
	EXPECT_EQ(r1.rkey, r2.rkey);
	EXPECT_EQ(r1.rkey_shift, r2.rkey_shift);
	EXPECT_EQ(r1.nr_rkeys, r2.nr_rkeys);
	EXPECT_EQ(0, memcmp(k1, k2, r1.nr_rkeys * sizeof(k1[0])));
	EXPECT_EQ(r1.table_slot, r2.table_slot);
	EXPECT_EQ(r1.table_gen, r2.table_gen);

	/* A sub-range: first from the kernel (a hit there), then here. */
	h1 = rv_reg_mem_keys(self->f.rv, sub, 200 * KiB, ACC_RW, &r1, k1,
			     RV_MAX_REG_KEYS);
	EXPECT_EQ(h2, h1);
	EXPECT_EQ(1, kstats(&self->f).hits);
	h1 = rv_reg_mem_keys(self->f.rv, sub, 200 * KiB, ACC_RW, &r2, k2,
			     RV_MAX_REG_KEYS);
	EXPECT_EQ(h2, h1);
	EXPECT_EQ(2, tstats(&self->f).hits);
	EXPECT_EQ(r1.rkey, r2.rkey);
	EXPECT_EQ(r1.lkey, r2.lkey);
	EXPECT_EQ(r1.nr_rkeys, r2.nr_rkeys);
	EXPECT_EQ(0, memcmp(k1, k2, r1.nr_rkeys * sizeof(k1[0])));
	EXPECT_EQ(U64(sub), r2.iova);
	/* Four holds: all dropped without the kernel. */
	EXPECT_EQ(3, rv_dereg_mem(self->f.rv, h2));
	EXPECT_EQ(2, rv_dereg_mem(self->f.rv, h2));
	EXPECT_EQ(1, rv_dereg_mem(self->f.rv, h2));
	EXPECT_EQ(0, rv_dereg_mem(self->f.rv, h2));
	EXPECT_EQ(4, tstats(&self->f).releases);
}

/* The ways a registered range changes (see change_range()). */
enum change {
	CH_MUNMAP,
	CH_RAW_MUNMAP,
	CH_MREMAP_MOVE,
	CH_MREMAP_SHRINK,
	CH_MADV_DONTNEED,
	CH_MAP_FIXED,
	CH_SHMDT,
	CH_BRK,
	CH_COUNT
};

static const char *const change_name[CH_COUNT] = {
	"munmap", "syscall(SYS_munmap)", "mremap move", "mremap shrink",
	"madvise(MADV_DONTNEED)", "mmap(MAP_FIXED) over it", "shmdt",
	"brk shrink",
};

/* Memory of @len bytes the change @c can apply to. */
static char *range_for(enum change c, size_t len, int *shmid)
{
	char *p, *top;

	switch (c) {
	case CH_SHMDT:
		*shmid = shmget(IPC_PRIVATE, len, IPC_CREAT | 0600);
		if (*shmid < 0)
			return NULL;
		p = shmat(*shmid, NULL, 0);
		/* Destroyed once detached. */
		shmctl(*shmid, IPC_RMID, NULL);
		if (p == (void *)-1)
			return NULL;
		memset(p, 1, len);
		return p;
	case CH_BRK:
		top = sbrk(0);
		if (sbrk((intptr_t)((-(uintptr_t)top) & 4095)) == (void *)-1)
			return NULL;
		p = sbrk((intptr_t)len);
		if (p == (void *)-1)
			return NULL;
		memset(p, 3, len);
		return p;
	default:
		return map_at(NULL, len, 0);
	}
}

/*
 * Change [@p, @p + @len) as @c says, then make the whole range mapped
 * again, with other pages; returns whether it worked.
 */
static bool change_range(enum change c, char *p, size_t len)
{
	char *q;

	switch (c) {
	case CH_MUNMAP:
		return !munmap(p, len) &&
		       map_at(p, len, MAP_FIXED_NOREPLACE) == p;
	case CH_RAW_MUNMAP:
		return !syscall(SYS_munmap, p, len) &&
		       map_at(p, len, MAP_FIXED_NOREPLACE) == p;
	case CH_MREMAP_MOVE:
		q = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
		if (q == MAP_FAILED ||
		    mremap(p, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, q) != q)
			return false;
		munmap(q, len);
		return map_at(p, len, MAP_FIXED_NOREPLACE) == p;
	case CH_MREMAP_SHRINK:
		return mremap(p, len, len / 2, 0) == p &&
		       map_at(p + len / 2, len / 2, MAP_FIXED_NOREPLACE) ==
		       p + len / 2;
	case CH_MADV_DONTNEED:
		return !madvise(p + len - 4096, 4096, MADV_DONTNEED);
	case CH_MAP_FIXED:
		return map_at(p, len, MAP_FIXED) == p;
	case CH_SHMDT:
		return !shmdt(p) && map_at(p, len, MAP_FIXED_NOREPLACE) == p;
	case CH_BRK:
		/* Shrink by half, grow back: new pages at the same place. */
		return sbrk(-(intptr_t)(len / 2)) != (void *)-1 &&
		       sbrk((intptr_t)(len / 2)) == p + len / 2;
	default:
		return false;
	}
}

static void release_range(enum change c, char *p, size_t len)
{
	if (c == CH_BRK)
		sbrk(-(intptr_t)len);
	else
		munmap(p, len);
}

/*
 * For every change: a registration cached in the table, one hold kept
 * and one released; after the change the same request misses (the
 * kernel registers the new pages), writes from the old handle fail
 * (ESTALE while held, ENOENT once released) and the old pins go.
 */
TEST_F(table, changes_miss)
{
	const size_t len = 256 * KiB;
	long pin_before = rv_proc_status_kb("VmPin");
	enum change c;

	for (c = 0; c < CH_COUNT; c++) {
		struct rv_mr_table_stats t0;
		struct rv_mr_stats s0;
		int shmid = -1, h, h2;
		char *p;

		TH_LOG("%s", change_name[c]);
		p = range_for(c, len, &shmid);
		ASSERT_NE(NULL, p);
		h = rv_reg_mem(self->f.rv, p, len, ACC_LW, NULL);
		ASSERT_GT(h, 0);
		ASSERT_EQ(0, rv_dereg_mem(self->f.rv, h));
		/* Held through the table, no system call. */
		t0 = tstats(&self->f);
		ASSERT_EQ(h, rv_reg_mem(self->f.rv, p, len, ACC_LW, NULL));
		ASSERT_EQ(t0.hits + 1, tstats(&self->f).hits);
		EXPECT_EQ(-EPIPE, post_from(&self->f, h, p, len));
		s0 = kstats(&self->f);

		ASSERT_TRUE(change_range(c, p, len));
		/* The same request: a miss, the new pages, a new handle. */
		t0 = tstats(&self->f);
		h2 = rv_reg_mem(self->f.rv, p, len, ACC_LW, NULL);
		ASSERT_GT(h2, 0);
		EXPECT_NE(h, h2);
		/* (MADV_DONTNEED's event is only judged on the next use.) */
		EXPECT_EQ(s0.invalidations + 1, kstats(&self->f).invalidations);
		EXPECT_EQ(t0.hits, tstats(&self->f).hits);
		EXPECT_EQ(s0.misses + 1, kstats(&self->f).misses);
		EXPECT_EQ(-EPIPE, post_from(&self->f, h2, p, len));
		/* The old registration: held, stale. */
		EXPECT_EQ(-ESTALE, post_from(&self->f, h, p, len));
		EXPECT_EQ(0, rv_dereg_mem(self->f.rv, h));
		/* MR_STATS frees what nobody holds any more. */
		kstats(&self->f);
		EXPECT_EQ(-ENOENT, post_from(&self->f, h, p, len));
		EXPECT_EQ(0, rv_dereg_mem(self->f.rv, h2));
		release_range(c, p, len);
	}
	kstats(&self->f);
	/* Every old registration unpinned (the work item may lag). */
	for (c = 0; c < 500 && rv_proc_status_kb("VmPin") != pin_before; c++)
		usleep(10000);
	EXPECT_EQ(pin_before, rv_proc_status_kb("VmPin"));
}

/* mprotect() keeps the pinned pages: the table keeps the registration. */
TEST_F(table, mprotect_storm_keeps)
{
	int h, i;

	h = rv_reg_mem(self->f.rv, self->buf, self->len, ACC_LW, NULL);
	ASSERT_GT(h, 0);
	for (i = 0; i < 1000; i++) {
		ASSERT_EQ(0, mprotect(self->buf, self->len,
				      i & 1 ? PROT_READ | PROT_WRITE :
					      PROT_READ));
		EXPECT_EQ(h, rv_reg_mem(self->f.rv, self->buf, self->len,
					ACC_LW, NULL));
		EXPECT_EQ(1, rv_dereg_mem(self->f.rv, h));
	}
	EXPECT_EQ(0, kstats(&self->f).invalidations);
	EXPECT_EQ(1000, tstats(&self->f).hits);
	EXPECT_EQ(-EPIPE, post_from(&self->f, h, self->buf, self->len));
}

/* A (the) huge page of @p, or false: THP off, or none given. */
static bool huge_page_at(const char *p)
{
	char line[256], *end;
	unsigned long lo, hi;
	bool in = false;
	long kb = 0;
	FILE *f;

	f = fopen("/proc/self/smaps", "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		lo = strtoul(line, &end, 16);
		if (*end == '-') {
			hi = strtoul(end + 1, NULL, 16);
			in = lo <= (uintptr_t)p && (uintptr_t)p < hi;
		} else if (in && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1) {
			break;
		}
	}
	fclose(f);
	return kb >= 2048;
}

/*
 * Events that clear page table entries but leave pinned pages where they
 * are keep the registration (held ones too): a THP split and MADV_FREE.
 */
TEST_F(table, spurious_events_keep)
{
	char *raw, *p;
	struct rv_mr_stats s0, s1;
	int h;

	raw = mmap(NULL, 4 * MiB, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, raw);
	p = (char *)(((uintptr_t)raw + 2 * MiB - 1) & ~(2 * MiB - 1));
	ASSERT_EQ(0, madvise(p, 2 * MiB, MADV_HUGEPAGE));
	memset(p, 1, 2 * MiB);
	if (!huge_page_at(p)) {
		munmap(raw, 4 * MiB);
		SKIP(return, "no transparent huge page (THP disabled?)");
	}

	h = rv_reg_mem(self->f.rv, p, 1 * MiB, ACC_LW, NULL);
	ASSERT_GT(h, 0);
	s0 = kstats(&self->f);
	/* Splits the huge page's mapping: an event over all 2 MiB. */
	ASSERT_EQ(0, mprotect(p + 2 * MiB - 4096, 4096, PROT_READ));
	EXPECT_FALSE(huge_page_at(p));
	/* Held, checked at the post, kept. */
	EXPECT_EQ(-EPIPE, post_from(&self->f, h, p, 1 * MiB));
	s1 = kstats(&self->f);
	EXPECT_EQ(s0.invalidations, s1.invalidations);
	EXPECT_EQ(s0.invalidations_spurious + 1, s1.invalidations_spurious);
	/* Out of the table until the kernel was asked once more. */
	EXPECT_EQ(h, rv_reg_mem(self->f.rv, p, 1 * MiB, ACC_LW, NULL));
	EXPECT_EQ(s0.hits + 1, kstats(&self->f).hits);
	EXPECT_EQ(h, rv_reg_mem(self->f.rv, p, 1 * MiB, ACC_LW, NULL));
	EXPECT_EQ(s0.hits + 1, kstats(&self->f).hits);
	EXPECT_EQ(2, rv_dereg_mem(self->f.rv, h));

	/* MADV_FREE cannot free a pinned page: it stays, and so does h. */
	ASSERT_EQ(0, madvise(p, 64 * KiB, MADV_FREE));
	memset(p, 2, 64 * KiB);
	EXPECT_EQ(h, rv_reg_mem(self->f.rv, p, 1 * MiB, ACC_LW, NULL));
	s1 = kstats(&self->f);
	EXPECT_EQ(s0.invalidations, s1.invalidations);
	EXPECT_EQ(s0.invalidations_spurious + 2, s1.invalidations_spurious);
	EXPECT_EQ(-EPIPE, post_from(&self->f, h, p, 1 * MiB));
	EXPECT_EQ(2, rv_dereg_mem(self->f.rv, h));
	EXPECT_EQ(1, rv_dereg_mem(self->f.rv, h));
	EXPECT_EQ(0, rv_dereg_mem(self->f.rv, h));
	munmap(raw, 4 * MiB);
}

/* After fork: the child cannot use the table, the parent still can. */
TEST_F(table, fork_parent_and_child)
{
	int h, status;
	pid_t pid;

	h = rv_reg_mem(self->f.rv, self->buf, self->len, ACC_LW, NULL);
	ASSERT_GT(h, 0);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct rv_mr_table_stats t;
		int bad = 0;

		/* Not mapped here: librv must not touch it. */
		bad |= rv_reg_mem(self->f.rv, self->buf, self->len, ACC_LW,
				  NULL) != -EPERM;
		bad |= (rv_dereg_mem(self->f.rv, h) != -EPERM) << 1;
		bad |= (rv_mr_table_stats(self->f.rv, &t) || t.entries) << 2;
		/* The child's own copy of the buffer changes nothing. */
		memset(self->buf, 7, self->len);
		_exit(bad);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* Pinned pages stay the parent's through fork: still a hit. */
	memset(self->buf, 9, self->len);
	EXPECT_EQ(h, rv_reg_mem(self->f.rv, self->buf, self->len, ACC_LW,
				NULL));
	EXPECT_EQ(1, tstats(&self->f).hits);
	EXPECT_EQ(0, kstats(&self->f).invalidations);
	EXPECT_EQ(-EPIPE, post_from(&self->f, h, self->buf, self->len));
	EXPECT_EQ(1, rv_dereg_mem(self->f.rv, h));
	EXPECT_EQ(0, rv_dereg_mem(self->f.rv, h));
}

/*
 * Under the cache limit, eviction takes the least recently used
 * registration nobody holds; with everything held a miss fails.
 */
TEST(eviction_spares_holds)
{
	struct rv_evict e = { .mode = RV_EVICT_EXACT, .access = ACC_LW,
			      .length = 1 * MiB };
	struct file f;
	char *b[5];
	int h[5], i, ret;

	if (access(RV_DEV_PATH, F_OK))
		SKIP(return, RV_DEV_PATH " missing: rv module not loaded");
	ret = file_open(&f, 4 * MiB);
	if (ret == -ENODEV)
		SKIP(return, "no RDMA device %s", rv_test_ibdev());
	ASSERT_EQ(0, ret);
	for (i = 0; i < 5; i++) {
		b[i] = map_at(NULL, 1 * MiB, 0);
		ASSERT_NE(NULL, b[i]);
	}
	/* b0 registered first (least recently used) and held. */
	for (i = 0; i < 4; i++) {
		h[i] = rv_reg_mem(f.rv, b[i], 1 * MiB, ACC_LW, NULL);
		ASSERT_GT(h[i], 0);
		if (i)
			ASSERT_EQ(0, rv_dereg_mem(f.rv, h[i]));
	}
	h[4] = rv_reg_mem(f.rv, b[4], 1 * MiB, ACC_LW, NULL);
	ASSERT_GT(h[4], 0);
	/* b1 went, not b0. */
	EXPECT_EQ(-EPIPE, post_from(&f, h[0], b[0], 1 * MiB));
	EXPECT_EQ(-ENOENT, post_from(&f, h[1], b[1], 1 * MiB));
	EXPECT_EQ(1, kstats(&f).evict_pressure);
	/* Hold all four: no room for b1 again. */
	for (i = 2; i < 4; i++)
		EXPECT_EQ(h[i], rv_reg_mem(f.rv, b[i], 1 * MiB, ACC_LW, NULL));
	EXPECT_EQ(-ENOSPC, rv_reg_mem(f.rv, b[1], 1 * MiB, ACC_LW, NULL));
	/* EVICT too leaves held ones alone. */
	e.addr = U64(b[0]);
	EXPECT_EQ(-EBUSY, rv_evict(f.rv, &e));
	/* One released: it makes the room. */
	EXPECT_EQ(0, rv_dereg_mem(f.rv, h[0]));
	h[1] = rv_reg_mem(f.rv, b[1], 1 * MiB, ACC_LW, NULL);
	EXPECT_GT(h[1], 0);
	EXPECT_EQ(-ENOENT, post_from(&f, h[0], b[0], 1 * MiB));
	rv_close(f.rv);
	for (i = 0; i < 5; i++)
		munmap(b[i], 1 * MiB);
}

/* The mappings: read-only slots, shared holds, only for the owner. */
TEST_F(table, hostile_mappings)
{
	size_t tlen = RV_MR_TABLE_MMAP_SIZE(self->f.entries);
	size_t hlen = RV_MR_HOLDS_MMAP_SIZE(self->f.entries);
	int fd = rv_fd(self->f.rv), status;
	struct rv *fresh;
	char *t;
	pid_t pid;

	errno = 0;
	EXPECT_EQ(MAP_FAILED, mmap(NULL, tlen, PROT_READ | PROT_WRITE,
				   MAP_SHARED, fd, RV_MR_TABLE_MMAP_OFFSET));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, tlen, PROT_READ, MAP_PRIVATE, fd,
				   RV_MR_TABLE_MMAP_OFFSET));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, hlen, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE, fd, RV_MR_HOLDS_MMAP_OFFSET));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, tlen + 4096, PROT_READ, MAP_SHARED,
				   fd, RV_MR_TABLE_MMAP_OFFSET));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd,
				   RV_MR_TABLE_MMAP_OFFSET + 4096));
	EXPECT_EQ(EINVAL, errno);

	t = mmap(NULL, tlen, PROT_READ, MAP_SHARED, fd,
		 RV_MR_TABLE_MMAP_OFFSET);
	ASSERT_NE(MAP_FAILED, t);
	EXPECT_EQ(-1, mprotect(t, tlen, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	/* Another process may not map it at all. */
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		char *again = mmap(NULL, tlen, PROT_READ, MAP_SHARED, fd,
				   RV_MR_TABLE_MMAP_OFFSET);

		_exit(again == MAP_FAILED && errno == EPERM ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	munmap(t, tlen);

	/* Before ATTACH there is nothing to map. */
	ASSERT_EQ(0, rv_open(&fresh, 0));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, tlen, PROT_READ, MAP_SHARED,
				   rv_fd(fresh), RV_MR_TABLE_MMAP_OFFSET));
	EXPECT_EQ(ENOTCONN, errno);
	rv_close(fresh);
}

/* A store through the read-only mapping faults in the owner itself. */
TEST_F(table, slots_read_only)
{
	size_t tlen = RV_MR_TABLE_MMAP_SIZE(self->f.entries);
	int status;
	pid_t pid;

	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct file f;
		uint32_t *t;

		/* The child's own file, so that the mapping is allowed. */
		if (file_open(&f, 16 * MiB))
			_exit(2);
		t = mmap(NULL, tlen, PROT_READ, MAP_SHARED, rv_fd(f.rv),
			 RV_MR_TABLE_MMAP_OFFSET);
		if (t == MAP_FAILED)
			_exit(3);
		t[0] = 1;
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
}

/*
 * Scribbled hold counts only change which of the process's own
 * registrations stay cached: another file's are not affected, and the
 * kernel still refuses a write from a registration it evicted.
 */
TEST(holds_scribbled)
{
	struct file f, other;
	uint32_t *holds;
	char *b[3];
	size_t hlen;
	int h[3], i, ret;

	if (access(RV_DEV_PATH, F_OK))
		SKIP(return, RV_DEV_PATH " missing: rv module not loaded");
	ret = file_open(&f, 2 * MiB);
	if (ret == -ENODEV)
		SKIP(return, "no RDMA device %s", rv_test_ibdev());
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, file_open(&other, 2 * MiB));
	hlen = RV_MR_HOLDS_MMAP_SIZE(f.entries);
	holds = mmap(NULL, hlen, PROT_READ | PROT_WRITE, MAP_SHARED,
		     rv_fd(f.rv), RV_MR_HOLDS_MMAP_OFFSET);
	ASSERT_NE(MAP_FAILED, holds);
	for (i = 0; i < 3; i++) {
		b[i] = map_at(NULL, 1 * MiB, 0);
		ASSERT_NE(NULL, b[i]);
	}
	h[0] = rv_reg_mem(f.rv, b[0], 1 * MiB, ACC_LW, NULL);
	ASSERT_GT(h[0], 0);
	h[1] = rv_reg_mem(f.rv, b[1], 1 * MiB, ACC_LW, NULL);
	ASSERT_GT(h[1], 0);
	ASSERT_EQ(0, rv_dereg_mem(f.rv, h[0]));
	ASSERT_EQ(0, rv_dereg_mem(f.rv, h[1]));

	/* Everything "held": nothing can be evicted for b2. */
	memset(holds, 0xff, hlen);
	EXPECT_EQ(-ENOSPC, rv_reg_mem(f.rv, b[2], 1 * MiB, ACC_LW, NULL));
	/* Another file of the same process is not affected. */
	h[2] = rv_reg_mem(other.rv, b[2], 1 * MiB, ACC_LW, NULL);
	EXPECT_GT(h[2], 0);
	EXPECT_EQ(0, rv_dereg_mem(other.rv, h[2]));

	/* Everything "released", b0 still held by librv: evicted anyway. */
	EXPECT_EQ(h[0], rv_reg_mem(f.rv, b[0], 1 * MiB, ACC_LW, NULL));
	memset(holds, 0, hlen);
	h[2] = rv_reg_mem(f.rv, b[2], 1 * MiB, ACC_LW, NULL);
	EXPECT_GT(h[2], 0);
	/* The kernel checks the handle, not the hold count. */
	EXPECT_EQ(-ENOENT, post_from(&f, h[0], b[0], 1 * MiB));
	EXPECT_EQ(-EPIPE, post_from(&f, h[2], b[2], 1 * MiB));
	munmap(holds, hlen);
	rv_close(other.rv);
	rv_close(f.rv);
	for (i = 0; i < 3; i++)
		munmap(b[i], 1 * MiB);
}

/* The uAPI's checks of what asks for a table or a hold. */
TEST_F(table, uapi_checks)
{
	struct rv_reg_mem cmd;
	struct rv_query q;
	struct rv_attach a;
	struct rv *fresh;
	int fd = rv_fd(self->f.rv), idx;
	static const uint32_t bad_entries[] = {
		3, RV_MIN_MR_TABLE_ENTRIES / 2, RV_MAX_MR_TABLE_ENTRIES * 2,
		RV_MIN_MR_TABLE_ENTRIES + 1, UINT32_MAX,
	};
	unsigned int i;

	ASSERT_EQ(0, rv_query(self->f.rv, &q));
	EXPECT_EQ(RV_MAX_MR_TABLE_ENTRIES, q.max_mr_table_entries);
	EXPECT_EQ(RV_DEFAULT_MR_TABLE_ENTRIES, q.default_mr_table_entries);

	idx = rv_device_index(rv_test_ibdev());
	for (i = 0; i < sizeof(bad_entries) / sizeof(bad_entries[0]); i++) {
		ASSERT_EQ(0, rv_open(&fresh, 0));
		rv_attach_init(&a, (uint32_t)idx, 8);
		a.mr_table_entries = bad_entries[i];
		EXPECT_EQ(-EINVAL, rv_attach(fresh, &a));
		rv_close(fresh);
	}
	ASSERT_EQ(0, rv_open(&fresh, 0));
	rv_attach_init(&a, (uint32_t)idx, 8);
	a.mr_table_entries = RV_MIN_MR_TABLE_ENTRIES;
	EXPECT_LE(0, rv_attach(fresh, &a));
	EXPECT_EQ(RV_MIN_MR_TABLE_ENTRIES, a.mr_table_entries);
	rv_close(fresh);

	memset(&cmd, 0, sizeof(cmd));
	cmd.addr = U64(self->buf);
	cmd.length = 4096;
	cmd.access = ACC_LW;
	cmd.flags = RV_REG_MEM_F_TABLE_HOLD;
	/* Too short to learn of the hold. */
	cmd.size = offsetof(struct rv_reg_mem, table_slot);
	EXPECT_EQ(-EINVAL, rv_ioc(fd, RV_IOCTL_REG_MEM, &cmd));
	cmd.size = sizeof(cmd);
	cmd.flags = RV_REG_MEM_F_TABLE_HOLD << 1;
	EXPECT_EQ(-EINVAL, rv_ioc(fd, RV_IOCTL_REG_MEM, &cmd));
	/* Without the flag: an ordinary reference, no slot. */
	cmd.flags = 0;
	ASSERT_EQ(0, rv_ioc(fd, RV_IOCTL_REG_MEM, &cmd));
	EXPECT_EQ(0, cmd.table_gen);
	EXPECT_EQ(0, tstats(&self->f).live);
	cmd.flags = RV_REG_MEM_F_TABLE_HOLD;
	ASSERT_EQ(0, rv_ioc(fd, RV_IOCTL_REG_MEM, &cmd));
	EXPECT_EQ(1, cmd.table_gen & 1);
	EXPECT_EQ(1, tstats(&self->f).live);
}

/* Two threads' hits race an invalidating thread and an evicting one. */
struct race {
	struct file *f;
	char *stable[4];	/* never invalidated */
	char *moving[4];	/* munmapped and mapped again */
	atomic_bool stop;
	atomic_int bad;
	atomic_int bad_at[64];
	atomic_long hits;
};

#define RACE_LEN (64 * KiB)

/* Count a wrong answer, and say the first of each kind. */
#define RACE_BAD(r, what, val) do {					\
	if (!atomic_fetch_add(&(r)->bad_at[__LINE__ % 64], 1))		\
		fprintf(stderr, "# race: %s: %d\n", what, (int)(val));	\
	atomic_fetch_add(&(r)->bad, 1);					\
} while (0)

static void *race_hitter(void *arg)
{
	struct race *r = arg;
	unsigned int i = 0;
	int h, err;

	while (!atomic_load(&r->stop)) {
		char *p = r->stable[i % 4];

		h = rv_reg_mem(r->f->rv, p, RACE_LEN, ACC_LW, NULL);
		if (h <= 0) {
			/* Evictions may leave no room for a moment. */
			if (h != -ENOSPC)
				RACE_BAD(r, "stable registration", h);
		} else {
			/* Held: never evicted under us. */
			err = post_from(r->f, h, p, RACE_LEN);
			if (err != -EPIPE)
				RACE_BAD(r, "stable post", err);
			err = rv_dereg_mem(r->f->rv, h);
			if (err < 0)
				RACE_BAD(r, "stable release", err);
		}
		p = r->moving[i % 4];
		h = rv_reg_mem(r->f->rv, p, RACE_LEN, ACC_LW, NULL);
		if (h > 0) {
			err = post_from(r->f, h, p, RACE_LEN);
			if (err != -EPIPE && err != -ESTALE)
				RACE_BAD(r, "moving post", err);
			err = rv_dereg_mem(r->f->rv, h);
			if (err < 0)
				RACE_BAD(r, "moving release", err);
		}
		atomic_fetch_add(&r->hits, 1);
		i++;
	}
	return NULL;
}

static void *race_changer(void *arg)
{
	struct race *r = arg;
	unsigned int i = 0;

	while (!atomic_load(&r->stop)) {
		char *p = r->moving[i++ % 4];

		/* Only this thread changes them: the range is ours again. */
		if (munmap(p, RACE_LEN) ||
		    map_at(p, RACE_LEN, MAP_FIXED_NOREPLACE) != p)
			RACE_BAD(r, "remap", errno);
	}
	return NULL;
}

static void *race_evicter(void *arg)
{
	struct race *r = arg;

	while (!atomic_load(&r->stop)) {
		struct rv_evict e = { .mode = RV_EVICT_AMOUNT,
				      .target_entries = 8 };
		int err = rv_evict(r->f->rv, &e);

		if (err)
			RACE_BAD(r, "evict", err);
		kstats(r->f);
	}
	return NULL;
}

TEST_F_TIMEOUT(table, race_hits_changes_evictions, 120)
{
	long pin_before = rv_proc_status_kb("VmPin");
	void *(*fn[4])(void *) = { race_hitter, race_hitter, race_changer,
				   race_evicter };
	const char *secs = getenv("RV_MR_STRESS_SECONDS");
	struct race r = { .f = &self->f };
	pthread_t th[4];
	int i;

	for (i = 0; i < 4; i++) {
		r.stable[i] = map_at(NULL, RACE_LEN, 0);
		r.moving[i] = map_at(NULL, RACE_LEN, 0);
		ASSERT_NE(NULL, r.stable[i]);
		ASSERT_NE(NULL, r.moving[i]);
	}
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, fn[i], &r));
	sleep(secs ? (unsigned int)atoi(secs) : 10);
	atomic_store(&r.stop, true);
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	TH_LOG("%ld rounds, %llu table hits, %llu invalidations", r.hits,
	       (unsigned long long)tstats(&self->f).hits,
	       (unsigned long long)kstats(&self->f).invalidations);
	EXPECT_EQ(0, atomic_load(&r.bad));
	EXPECT_LT(0, r.hits);
	EXPECT_EQ(0, tstats(&self->f).held);
	for (i = 0; i < 4; i++) {
		munmap(r.stable[i], RACE_LEN);
		munmap(r.moving[i], RACE_LEN);
	}
	/* Nothing held, nothing mapped: every pin goes. */
	kstats(&self->f);
	for (i = 0; i < 500 && rv_proc_status_kb("VmPin") != pin_before; i++)
		usleep(10000);
	EXPECT_EQ(pin_before, rv_proc_status_kb("VmPin"));
}

TEST_HARNESS_MAIN
