// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv uAPI tests: the /dev/rv ioctls driven directly, as a program built
 * against <rdma/rv_user_ioctls.h> would, without librv in the way (librv
 * is only used to turn $RV_IBDEV into a device index).
 *
 * Needs /dev/rv (the rv module) and, for ATTACH, an RDMA device named by
 * $RV_IBDEV (default rxe0) with port 1 and GID index 0 valid.  Without
 * them the tests SKIP; they never pass vacuously.
 *
 * Built for the native ABI and, as rv_uapi_test_32, for i386 so that the
 * same tests cover the compat ioctl path.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "rv_test_util.h"

/* Room for any size a sweep uses, and a sentinel for "not written". */
#define SWEEP_BUF_SIZE	256
#define SENTINEL	0xa5

#define NPROCS		8
#define NOBODY_UID	65534

static int rv_open_raw(void)
{
	return open(RV_DEV_PATH, O_RDWR | O_CLOEXEC);
}

FIXTURE(uapi)
{
	int fd;			/* open /dev/rv, -1 when missing */
	int dev_index;		/* index of $RV_IBDEV, or -errno */
	struct rv_query q;	/* full QUERY answer */
};

FIXTURE_SETUP(uapi)
{
	self->fd = rv_open_raw();
	if (self->fd < 0 && errno == ENOENT)
		SKIP(return, RV_DEV_PATH " missing: rv module not loaded");
	ASSERT_LE(0, self->fd) TH_LOG("open " RV_DEV_PATH ": %s",
				       strerror(errno));

	memset(&self->q, 0, sizeof(self->q));
	self->q.size = sizeof(self->q);
	ASSERT_EQ(0, rv_ioc(self->fd, RV_IOCTL_QUERY, &self->q));

	self->dev_index = rv_device_index(rv_test_ibdev());
}

FIXTURE_TEARDOWN(uapi)
{
	if (self->fd >= 0)
		close(self->fd);
}

/*
 * SKIP() in FIXTURE_SETUP does not stop the test body in this harness, so
 * every test states what it needs first.
 */
#define NEED_RV() do {						\
	if (_metadata->skip)					\
		return;						\
} while (0)

#define NEED_DEV() do {						\
	NEED_RV();						\
	if (self->dev_index < 0)				\
		SKIP(return, "RDMA device %s: %s", rv_test_ibdev(), \
		     strerror(-self->dev_index));		\
} while (0)

/* ATTACH on a new file; returns the fd (attached or not) and the result. */
static int attach_new(struct rv_attach *a, int *ret)
{
	int fd = rv_open_raw();

	if (fd < 0) {
		*ret = -errno;
		return -1;
	}
	*ret = rv_ioc(fd, RV_IOCTL_ATTACH, a);
	return fd;
}

static bool is_pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

TEST_F(uapi, open_close)
{
	int fds[64];
	struct stat st;
	size_t i;

	NEED_RV();
	/* misc device, usable by everybody: isolation is by uid in ATTACH */
	ASSERT_EQ(0, stat(RV_DEV_PATH, &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	EXPECT_EQ(0666, st.st_mode & 07777);

	for (i = 0; i < ARRAY_SIZE(fds); i++) {
		fds[i] = rv_open_raw();
		ASSERT_LE(0, fds[i]);
	}
	for (i = 0; i < ARRAY_SIZE(fds); i++)
		EXPECT_EQ(0, close(fds[i]));

	/* O_RDONLY must open too: the file has no write(2) semantics */
	fds[0] = open(RV_DEV_PATH, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fds[0]);
	close(fds[0]);
}

TEST_F(uapi, query)
{
	const struct rv_query *q = &self->q;
	struct rv_query q2 = { .size = sizeof(q2) };
	int fd;

	NEED_RV();
	/* Known answer for this tree: update when a command is added. */
	EXPECT_EQ((1ULL << RV_CMD_QUERY) | (1ULL << RV_CMD_ATTACH) |
		  (1ULL << RV_CMD_REG_MEM) | (1ULL << RV_CMD_DEREG_MEM) |
		  (1ULL << RV_CMD_EVICT) | (1ULL << RV_CMD_MR_STATS) |
		  (1ULL << RV_CMD_CONN_CREATE) |
		  (1ULL << RV_CMD_CONN_CONNECT) |
		  (1ULL << RV_CMD_CONN_QUERY) |
		  (1ULL << RV_CMD_CONN_DESTROY) |
		  (1ULL << RV_CMD_POST_WRITE) |
		  (1ULL << RV_CMD_POST_WRITES) |
		  (1ULL << RV_CMD_STATS) |
		  (1ULL << RV_CMD_DUMP) |
		  (1ULL << RV_CMD_LAUNCHER_JOB),
		  q->cmd_mask);
	EXPECT_EQ(0, q->attach_flags);
	EXPECT_EQ(RV_MAX_CONN_PER_NODE, q->max_conn_per_node);
	EXPECT_EQ(RV_MAX_SLOT_BITS, q->max_slot_bits);
	EXPECT_EQ(RV_MIN_SLOT_BITS, q->min_slot_bits);
	EXPECT_EQ(RV_MAX_RING_ENTRIES, q->max_ring_entries);
	EXPECT_EQ(RV_MIN_RING_ENTRIES, q->min_ring_entries);
	EXPECT_EQ(RV_JOB_KEY_MAX, q->max_job_key_len);

	/* Defaults must be values ATTACH itself would accept. */
	EXPECT_LE(1, q->default_num_conn);
	EXPECT_GE(q->max_conn_per_node, q->default_num_conn);
	EXPECT_LE(q->min_slot_bits, q->default_slot_bits);
	EXPECT_GE(q->max_slot_bits, q->default_slot_bits);
	EXPECT_TRUE(is_pow2(q->default_ring_entries));
	EXPECT_LE(q->min_ring_entries, q->default_ring_entries);
	EXPECT_GE(q->max_ring_entries, q->default_ring_entries);
	EXPECT_LT(0, q->default_mr_cache_bytes);
	/* Connection parameters, in the ranges the module enforces. */
	EXPECT_LE(1, q->cm_port);
	EXPECT_GE(1023, q->cm_port);	/* privileged: see rv(7) */
	EXPECT_LE(RV_MAX_CONN_PER_NODE, q->conn_wqe_budget);
	EXPECT_GE(16384, q->conn_wqe_budget);
	EXPECT_LE(1, q->conn_timeout_ms);
	EXPECT_GE(RV_CONN_TIMEOUT_MAX_MS, q->conn_timeout_ms);
	EXPECT_EQ(RV_CONN_QUERY_F_WAIT, q->conn_query_flags);
	EXPECT_GE(RV_SLOT_QUARANTINE_MAX_MS, q->slot_quarantine_ms);

	/* The answer does not depend on the file or on being repeated. */
	fd = rv_open_raw();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, rv_ioc(fd, RV_IOCTL_QUERY, &q2));
	EXPECT_EQ(0, memcmp(q, &q2, sizeof(q2)));
	close(fd);
}

/*
 * LAUNCHER_JOB's argument checks, as root; any other caller gets EPERM
 * whatever it passes (uapi-nobody runs this as uid 65534).
 */
TEST_F(uapi, launcher_job_args)
{
	struct rv_launcher_job lj;
	int devnull, want_perm = geteuid() != 0;

	NEED_RV();
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	ASSERT_GE(devnull, 0);
#define LJ_RESET() do {							\
		memset(&lj, 0, sizeof(lj));				\
		lj.size = sizeof(lj);					\
		lj.launcher_id = 0x1234;				\
		lj.uid = 65534;						\
		lj.job_key_len = 3;					\
		memcpy(lj.job_key, "ljt", 3);				\
		lj.cgroup_fd = -1;					\
	} while (0)
#define LJ_EXPECT(err) EXPECT_EQ(want_perm ? -EPERM : (err),		\
			      rv_ioc(self->fd, RV_IOCTL_LAUNCHER_JOB, &lj))
	LJ_RESET();
	lj.flags = 2;
	LJ_EXPECT(-EINVAL);
	LJ_RESET();
	lj.launcher_id = 0;
	LJ_EXPECT(-EINVAL);
	LJ_RESET();
	lj.job_key_len = 0;
	LJ_EXPECT(-EINVAL);
	LJ_RESET();
	lj.job_key_len = RV_JOB_KEY_MAX + 1;
	LJ_EXPECT(-EINVAL);
	LJ_RESET();
	lj.job_key[5] = 1;	/* past job_key_len */
	LJ_EXPECT(-EINVAL);
	LJ_RESET();
	lj.rsvd = 1;
	LJ_EXPECT(-EINVAL);
	LJ_RESET();
	lj.uid = (__u32)-1;	/* never mapped */
	LJ_EXPECT(-EINVAL);
	LJ_RESET();		/* cgroup_fd -1 */
	LJ_EXPECT(-EBADF);
	LJ_RESET();
	lj.cgroup_fd = devnull;	/* a file, not a cgroup directory */
	LJ_EXPECT(-EBADF);
	LJ_RESET();
	lj.flags = RV_LAUNCHER_JOB_F_DESTROY;
	LJ_EXPECT(-ENOENT);
#undef LJ_EXPECT
#undef LJ_RESET
	close(devnull);
}

/* Every command number is either in cmd_mask or answers ENOTTY. */
TEST_F(uapi, cmd_mask_matches_dispatch)
{
	/* size 0 is below every command's minimum: EINVAL, nothing done */
	uint8_t buf[RV_MAX_ARG_SIZE] = { 0 };
	unsigned int nr;

	NEED_RV();
	for (nr = 0; nr < 64; nr++) {
		int ret = rv_ioc(self->fd, _IO(RV_IOCTL_TYPE, nr), buf);

		if (self->q.cmd_mask & (1ULL << nr)) {
			EXPECT_EQ(-EINVAL, ret) TH_LOG("nr 0x%x", nr);
		} else {
			EXPECT_EQ(-ENOTTY, ret) TH_LOG("nr 0x%x", nr);
		}
	}
}

TEST_F(uapi, unknown_commands)
{
	/* A well-formed argument, so only the number can be wrong. */
	union {
		struct rv_query q;
		uint8_t raw[RV_MAX_ARG_SIZE];
	} arg;
	const unsigned long other[] = {
		/* right type and nr, but with direction/size bits */
		_IOWR(RV_IOCTL_TYPE, RV_CMD_QUERY, struct rv_query),
		_IOR(RV_IOCTL_TYPE, RV_CMD_QUERY, struct rv_query),
		_IOW(RV_IOCTL_TYPE, RV_CMD_ATTACH, struct rv_attach),
		_IO(RV_IOCTL_TYPE, 0x7f),
		_IO(RV_IOCTL_TYPE, 0xff),
		/* another type with rv's command numbers */
		_IO(RV_IOCTL_TYPE - 1, RV_CMD_QUERY),
		_IO(RV_IOCTL_TYPE + 1, RV_CMD_ATTACH),
		_IO(0x1b, RV_CMD_QUERY),	/* RDMA_VERBS_IOCTL's type */
		_IOWR(0x1b, 1, struct rv_query),
	};
	unsigned int nr;
	size_t i;

	NEED_RV();
	memset(&arg, 0, sizeof(arg));
	arg.q.size = sizeof(arg.q);

	for (nr = 0x02; nr <= 0x1f; nr++) {
		if (self->q.cmd_mask & (1ULL << nr))
			continue;
		EXPECT_EQ(-ENOTTY,
			  rv_ioc(self->fd, _IO(RV_IOCTL_TYPE, nr), &arg))
			TH_LOG("nr 0x%x", nr);
	}
	for (i = 0; i < ARRAY_SIZE(other); i++) {
		EXPECT_EQ(-ENOTTY, rv_ioc(self->fd, other[i], &arg))
			TH_LOG("cmd 0x%lx", other[i]);
	}

	/* and the file still works */
	EXPECT_EQ(0, rv_ioc(self->fd, RV_IOCTL_QUERY, &arg));
}

/*
 * QUERY at every size from 0 to past the struct: below the minimum is
 * EINVAL; otherwise exactly the bytes up to the caller's size are written
 * and they match the full answer; past the kernel's struct, zero bytes are
 * accepted and a non-zero byte is E2BIG.
 */
TEST_F(uapi, query_size_sweep)
{
	const size_t ksize = sizeof(struct rv_query);
	uint8_t buf[SWEEP_BUF_SIZE] __attribute__((aligned(8)));
	uint32_t size;

	NEED_RV();
	for (size = 0; size <= ksize + 16; size++) {
		struct rv_query *q = (struct rv_query *)buf;
		size_t i;
		int ret;

		/* Bytes the kernel may read are zero, the rest sentinel. */
		memset(buf, SENTINEL, sizeof(buf));
		memset(buf, 0, size);
		q->size = size;
		ret = rv_ioc(self->fd, RV_IOCTL_QUERY, buf);

		if (size < RV_QUERY_MIN_SIZE) {
			EXPECT_EQ(-EINVAL, ret) TH_LOG("size %u", size);
			continue;
		}
		ASSERT_EQ(0, ret) TH_LOG("size %u", size);
		for (i = offsetofend(struct rv_query, flags); i < sizeof(buf);
		     i++) {
			uint8_t want = SENTINEL;

			if (i < size)
				want = i < ksize ?
					((const uint8_t *)&self->q)[i] : 0;
			if (buf[i] != want) {
				EXPECT_EQ(want, buf[i])
					TH_LOG("size %u byte %zu", size, i);
				break;
			}
		}

		if (size > ksize) {
			/* A newer caller's field this kernel cannot honour. */
			memset(buf, 0, size);
			q->size = size;
			buf[size - 1] = 1;
			EXPECT_EQ(-E2BIG, rv_ioc(self->fd, RV_IOCTL_QUERY, buf))
				TH_LOG("size %u", size);
		}
	}
}

/* The upper bound on @size: up to 4096 with a zero tail, E2BIG above. */
TEST_F(uapi, query_size_limit)
{
	const size_t len = 2 * RV_MAX_ARG_SIZE;
	struct rv_query *q;
	uint8_t *buf;

	NEED_RV();
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(buf != MAP_FAILED);
	q = (struct rv_query *)buf;

	q->size = RV_MAX_ARG_SIZE;
	EXPECT_EQ(0, rv_ioc(self->fd, RV_IOCTL_QUERY, q));
	EXPECT_EQ(self->q.cmd_mask, q->cmd_mask);

	memset(buf, 0, len);
	q->size = RV_MAX_ARG_SIZE + 1;
	EXPECT_EQ(-E2BIG, rv_ioc(self->fd, RV_IOCTL_QUERY, q));
	q->size = UINT32_MAX;
	EXPECT_EQ(-E2BIG, rv_ioc(self->fd, RV_IOCTL_QUERY, q));
	munmap(buf, len);
}

TEST_F(uapi, query_flags)
{
	unsigned int bit;

	NEED_RV();
	for (bit = 0; bit < 32; bit++) {
		struct rv_query q = { .size = sizeof(q), .flags = 1U << bit };

		EXPECT_EQ(-EINVAL, rv_ioc(self->fd, RV_IOCTL_QUERY, &q))
			TH_LOG("flag bit %u", bit);
		/* rejected before anything is written */
		EXPECT_EQ(0, q.cmd_mask);
	}
}

/*
 * Inaccessible arguments: NULL, a kernel address, an unmapped page, a
 * struct running off the end of its mapping, and (for QUERY's output) a
 * read-only page.
 */
static void check_efault(struct __test_metadata *_metadata, int fd,
			 unsigned long cmd, size_t size, bool check_ro)
{
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *map;
	uint32_t *tail;

	EXPECT_EQ(-EFAULT, rv_ioc(fd, cmd, NULL));
	EXPECT_EQ(-EFAULT, rv_ioc(fd, cmd, (void *)(uintptr_t)-4096L));

	map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(map != MAP_FAILED);
	ASSERT_EQ(0, mprotect(map + page, page, PROT_NONE));

	EXPECT_EQ(-EFAULT, rv_ioc(fd, cmd, map + page));

	/* size and flags readable, the rest of the struct is not */
	tail = (uint32_t *)(map + page - 2 * sizeof(uint32_t));
	tail[0] = size;
	tail[1] = 0;
	EXPECT_EQ(-EFAULT, rv_ioc(fd, cmd, tail));

	if (check_ro) {
		memset(map, 0, page);
		*(uint32_t *)map = size;
		ASSERT_EQ(0, mprotect(map, page, PROT_READ));
		EXPECT_EQ(-EFAULT, rv_ioc(fd, cmd, map));
	}
	munmap(map, 2 * page);
}

TEST_F(uapi, query_efault)
{
	NEED_RV();
	check_efault(_metadata, self->fd, RV_IOCTL_QUERY,
		     sizeof(struct rv_query), true);
	/* the file is unharmed */
	EXPECT_EQ(0, rv_ioc(self->fd, RV_IOCTL_QUERY, &self->q));
}

TEST_F(uapi, attach_efault)
{
	struct rv_attach a;

	NEED_DEV();
	check_efault(_metadata, self->fd, RV_IOCTL_ATTACH,
		     sizeof(struct rv_attach), false);
	/* none of that attached the file */
	rv_attach_init(&a, self->dev_index, 8);
	EXPECT_EQ(0, rv_ioc(self->fd, RV_IOCTL_ATTACH, &a));
}

/*
 * ATTACH at every size, each on a new file (a successful ATTACH binds the
 * file for good).  All sizes use one key: closing each file must free the
 * slot, so every success gets slot 0.
 */
TEST_F(uapi, attach_size_sweep)
{
	const size_t ksize = sizeof(struct rv_attach);
	uint8_t buf[SWEEP_BUF_SIZE] __attribute__((aligned(8)));
	struct rv_attach tmpl;
	uint32_t size;

	NEED_DEV();
	rv_attach_init(&tmpl, self->dev_index, RV_JOB_KEY_MAX);

	for (size = 0; size <= ksize + 16; size++) {
		struct rv_attach *a = (struct rv_attach *)buf;
		size_t i;
		int fd, ret;

		memset(buf, SENTINEL, sizeof(buf));
		memset(buf, 0, size);
		memcpy(buf, &tmpl, size < ksize ? size : ksize);
		/* too short to hold a->size itself: a bare u32 at offset 0 */
		a->size = size;
		fd = attach_new(a, &ret);
		ASSERT_LE(0, fd);

		if (size < RV_ATTACH_MIN_SIZE) {
			EXPECT_EQ(-EINVAL, ret) TH_LOG("size %u", size);
			/* and the file is still unattached */
			memcpy(buf, &tmpl, ksize);
			EXPECT_EQ(0, rv_ioc(fd, RV_IOCTL_ATTACH, a))
				TH_LOG("size %u", size);
			close(fd);
			continue;
		}
		EXPECT_EQ(0, ret) TH_LOG("size %u", size);
		EXPECT_EQ(0, a->slot) TH_LOG("size %u", size);
		EXPECT_EQ(self->q.default_num_conn, a->num_conn);
		EXPECT_EQ(self->q.default_slot_bits, a->slot_bits);
		EXPECT_EQ(self->q.default_ring_entries, a->ring_entries);
		if (size >= ksize) {
			EXPECT_EQ(self->q.default_mr_cache_bytes,
				  a->mr_cache_bytes);
		}
		/* nothing written past the caller's size, or past ksize */
		for (i = size; i < sizeof(buf); i++) {
			if (buf[i] != SENTINEL) {
				EXPECT_EQ(SENTINEL, buf[i])
					TH_LOG("size %u byte %zu", size, i);
				break;
			}
		}
		for (i = ksize; i < size; i++) {
			if (buf[i]) {
				EXPECT_EQ(0, buf[i])
					TH_LOG("size %u byte %zu", size, i);
				break;
			}
		}
		close(fd);

		if (size > ksize) {
			memset(buf, 0, size);
			memcpy(buf, &tmpl, ksize);
			a->size = size;
			buf[size - 1] = 1;
			fd = attach_new(a, &ret);
			ASSERT_LE(0, fd);
			EXPECT_EQ(-E2BIG, ret) TH_LOG("size %u", size);
			close(fd);
		}
	}
}

TEST_F(uapi, attach_flags)
{
	struct rv_attach a;
	unsigned int bit;

	NEED_DEV();
	for (bit = 0; bit < 32; bit++) {
		rv_attach_init(&a, self->dev_index, 8);
		a.flags = 1U << bit;
		EXPECT_EQ(-EINVAL, rv_ioc(self->fd, RV_IOCTL_ATTACH, &a))
			TH_LOG("flag bit %u", bit);
	}
}

/* One ATTACH with one field broken; the file must stay unattached. */
#define EXPECT_ATTACH_ERR(err, field, value) do {			\
	struct rv_attach _a;						\
									\
	rv_attach_init(&_a, self->dev_index, 8);			\
	_a.field = (value);						\
	EXPECT_EQ(err, rv_ioc(self->fd, RV_IOCTL_ATTACH, &_a))		\
		TH_LOG(#field " = %s", #value);				\
} while (0)

/* A valid ATTACH on a new file with one field set; returns the fd. */
static int attach_ok(struct __test_metadata *_metadata, struct rv_attach *a)
{
	int fd, ret;

	fd = attach_new(a, &ret);
	EXPECT_EQ(0, ret);
	return fd;
}

TEST_F(uapi, attach_bad_device)
{
	NEED_DEV();
	EXPECT_ATTACH_ERR(-ENODEV, dev_index, 0xfffffff0U);
	EXPECT_ATTACH_ERR(-ENODEV, dev_index, UINT32_MAX);
	EXPECT_ATTACH_ERR(-ENODEV, dev_index, (uint32_t)self->dev_index + 1000);
}

TEST_F(uapi, attach_bad_port)
{
	NEED_DEV();
	EXPECT_ATTACH_ERR(-EINVAL, port_num, 0);
	EXPECT_ATTACH_ERR(-EINVAL, port_num, 99);
	EXPECT_ATTACH_ERR(-EINVAL, port_num, 256);
	EXPECT_ATTACH_ERR(-EINVAL, port_num, UINT32_MAX);
}

TEST_F(uapi, attach_bad_gid_index)
{
	NEED_DEV();
	EXPECT_ATTACH_ERR(-EINVAL, gid_index, 1U << 20);
	EXPECT_ATTACH_ERR(-EINVAL, gid_index, 0x7fffffffU);
	EXPECT_ATTACH_ERR(-EINVAL, gid_index, UINT32_MAX);
}

TEST_F(uapi, attach_bad_key_len)
{
	NEED_DEV();
	EXPECT_ATTACH_ERR(-EINVAL, job_key_len, 0);
	EXPECT_ATTACH_ERR(-EINVAL, job_key_len, RV_JOB_KEY_MAX + 1);
	EXPECT_ATTACH_ERR(-EINVAL, job_key_len, UINT32_MAX);
}

TEST_F(uapi, attach_key_garbage)
{
	struct rv_attach a;
	unsigned int len, pos;

	NEED_DEV();
	for (len = 1; len < RV_JOB_KEY_MAX; len++) {
		for (pos = len; pos < RV_JOB_KEY_MAX; pos++) {
			rv_attach_init(&a, self->dev_index, len);
			a.job_key[pos] = 0x80;
			EXPECT_EQ(-EINVAL, rv_ioc(self->fd, RV_IOCTL_ATTACH, &a))
				TH_LOG("key_len %u, byte %u set", len, pos);
		}
	}
}

TEST_F(uapi, attach_bad_num_conn)
{
	NEED_DEV();
	EXPECT_ATTACH_ERR(-EINVAL, num_conn, RV_MAX_CONN_PER_NODE + 1);
	EXPECT_ATTACH_ERR(-EINVAL, num_conn, UINT32_MAX);
}

TEST_F(uapi, attach_bad_slot_bits)
{
	NEED_DEV();
	EXPECT_ATTACH_ERR(-EINVAL, slot_bits, RV_MAX_SLOT_BITS + 1);
	EXPECT_ATTACH_ERR(-EINVAL, slot_bits, 32);
	EXPECT_ATTACH_ERR(-EINVAL, slot_bits, UINT32_MAX);
}

TEST_F(uapi, attach_bad_ring_entries)
{
	NEED_DEV();
	EXPECT_ATTACH_ERR(-EINVAL, ring_entries, 100);
	EXPECT_ATTACH_ERR(-EINVAL, ring_entries, RV_MIN_RING_ENTRIES + 1);
	EXPECT_ATTACH_ERR(-EINVAL, ring_entries, RV_MIN_RING_ENTRIES / 2);
	EXPECT_ATTACH_ERR(-EINVAL, ring_entries, 1);
	EXPECT_ATTACH_ERR(-EINVAL, ring_entries, RV_MAX_RING_ENTRIES * 2);
	EXPECT_ATTACH_ERR(-EINVAL, ring_entries, RV_MAX_RING_ENTRIES - 1);
	EXPECT_ATTACH_ERR(-EINVAL, ring_entries, 0x80000000U);
}

/* The module parameter max_mr_cache_bytes, 0 when it cannot be read. */
static uint64_t max_mr_cache_bytes(void)
{
	FILE *f = fopen("/sys/module/rv/parameters/max_mr_cache_bytes", "r");
	unsigned long long v = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%llu", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

/*
 * mr_cache_bytes is capped by the module's max_mr_cache_bytes: a byte
 * more is EINVAL, the cap itself is accepted and in effect (it is only a
 * limit: nothing is allocated for it).
 */
TEST_F(uapi, attach_mr_cache_bytes_cap)
{
	uint64_t cap = max_mr_cache_bytes();
	struct rv_mr_stats s;
	struct rv_attach a;
	int fd;

	NEED_DEV();
	ASSERT_NE(0, cap) TH_LOG("no /sys/module/rv/parameters/max_mr_cache_bytes");
	ASSERT_LE(self->q.default_mr_cache_bytes, cap);
	if (cap < UINT64_MAX)
		EXPECT_ATTACH_ERR(-EINVAL, mr_cache_bytes, cap + 1);
	if (cap < UINT64_MAX - (1ULL << 40))
		EXPECT_ATTACH_ERR(-EINVAL, mr_cache_bytes, cap + (1ULL << 40));
	EXPECT_ATTACH_ERR(-EINVAL, mr_cache_bytes, UINT64_MAX);

	rv_attach_init(&a, self->dev_index, 8);
	a.mr_cache_bytes = cap;
	fd = attach_ok(_metadata, &a);
	ASSERT_LE(0, fd);
	EXPECT_EQ(cap, a.mr_cache_bytes);
	memset(&s, 0, sizeof(s));
	s.size = sizeof(s);
	EXPECT_EQ(0, rv_ioc(fd, RV_IOCTL_MR_STATS, &s));
	EXPECT_EQ(cap, s.limit_bytes);
	close(fd);
}

/* Every boundary value that is in range is accepted and echoed back. */
/* Whether a ring of @entries fits the caller's RLIMIT_MEMLOCK. */
static bool ring_fits_memlock(uint32_t entries)
{
	struct rlimit rl;

	if (geteuid() == 0 || getrlimit(RLIMIT_MEMLOCK, &rl) ||
	    rl.rlim_cur == RLIM_INFINITY)
		return true;
	/* With room for the other rings this process holds. */
	return RV_RING_MMAP_SIZE(entries) + (1 << 20) <= rl.rlim_cur;
}

TEST_F(uapi, attach_limits_accepted)
{
	static const struct {
		uint32_t num_conn, slot_bits, ring_entries, key_len;
	} ok[] = {
		{ 1, RV_MIN_SLOT_BITS, RV_MIN_RING_ENTRIES, 1 },
		{ RV_MAX_CONN_PER_NODE, RV_MAX_SLOT_BITS, RV_MAX_RING_ENTRIES,
		  RV_JOB_KEY_MAX },
		{ 2, 8, 4096, 8 },
	};
	size_t i;

	NEED_DEV();
	for (i = 0; i < ARRAY_SIZE(ok); i++) {
		struct rv_attach a;
		int fd;

		rv_attach_init(&a, self->dev_index, ok[i].key_len);
		a.num_conn = ok[i].num_conn;
		a.slot_bits = ok[i].slot_bits;
		a.ring_entries = ok[i].ring_entries;
		a.mr_cache_bytes = 1 << 20;
		/* The ring is charged to RLIMIT_MEMLOCK unless root. */
		if (!ring_fits_memlock(a.ring_entries)) {
			int ret;

			fd = attach_new(&a, &ret);
			EXPECT_EQ(-ENOMEM, ret) TH_LOG("case %zu", i);
			if (fd >= 0)
				close(fd);
			continue;
		}
		fd = attach_ok(_metadata, &a);
		ASSERT_LE(0, fd);
		EXPECT_EQ(ok[i].num_conn, a.num_conn) TH_LOG("case %zu", i);
		EXPECT_EQ(ok[i].slot_bits, a.slot_bits) TH_LOG("case %zu", i);
		EXPECT_EQ(ok[i].ring_entries, a.ring_entries);
		EXPECT_EQ(1 << 20, a.mr_cache_bytes);
		EXPECT_EQ(0, a.slot);
		close(fd);
	}
}

TEST_F(uapi, attach_defaults)
{
	struct rv_attach a;

	NEED_DEV();
	rv_attach_init(&a, self->dev_index, 8);
	a.slot = 0xdead;	/* output only: must be overwritten */
	ASSERT_EQ(0, rv_ioc(self->fd, RV_IOCTL_ATTACH, &a));
	EXPECT_EQ(0, a.slot);
	EXPECT_EQ(self->q.default_num_conn, a.num_conn);
	EXPECT_EQ(self->q.default_slot_bits, a.slot_bits);
	EXPECT_EQ(self->q.default_ring_entries, a.ring_entries);
	EXPECT_EQ(self->q.default_mr_cache_bytes, a.mr_cache_bytes);
	/* inputs are not rewritten */
	EXPECT_EQ(sizeof(a), a.size);
	EXPECT_EQ(0, a.flags);
	EXPECT_EQ((uint32_t)self->dev_index, a.dev_index);
	EXPECT_EQ(RV_TEST_PORT, a.port_num);
	EXPECT_EQ(8, a.job_key_len);
}

TEST_F(uapi, attach_twice)
{
	struct rv_attach a, b;
	int fd, ret;

	NEED_DEV();
	rv_attach_init(&a, self->dev_index, 8);
	ASSERT_EQ(0, rv_ioc(self->fd, RV_IOCTL_ATTACH, &a));
	/* the same job again, and another job: both refused */
	EXPECT_EQ(-EALREADY, rv_ioc(self->fd, RV_IOCTL_ATTACH, &a));
	rv_attach_init(&b, self->dev_index, 8);
	EXPECT_EQ(-EALREADY, rv_ioc(self->fd, RV_IOCTL_ATTACH, &b));
	/* the refused ATTACH took no slot: a new file gets slot 1 */
	fd = attach_new(&a, &ret);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, ret);
	EXPECT_EQ(1, a.slot);
	close(fd);
}

/* A failed ATTACH leaves no trace: the file can attach afterwards. */
TEST_F(uapi, attach_after_failure)
{
	struct rv_attach a;

	NEED_DEV();
	rv_attach_init(&a, self->dev_index, 8);
	a.ring_entries = 100;
	ASSERT_EQ(-EINVAL, rv_ioc(self->fd, RV_IOCTL_ATTACH, &a));
	a.ring_entries = 0;
	a.dev_index = 0xfffffff0U;
	ASSERT_EQ(-ENODEV, rv_ioc(self->fd, RV_IOCTL_ATTACH, &a));
	a.dev_index = self->dev_index;
	EXPECT_EQ(0, rv_ioc(self->fd, RV_IOCTL_ATTACH, &a));
	EXPECT_EQ(0, a.slot);
}

static int read_full(int fd, void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = read(fd, (char *)buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

/*
 * Child of the fork tests: attach @a on a new file, report the result (slot
 * or -errno) on @report_fd, then hold the attachment until @barrier_fd
 * reaches EOF.
 */
static void __attribute__((noreturn))
child_attach_and_hold(struct rv_attach *a, int report_fd, int barrier_fd)
{
	int32_t res;
	char c;
	int fd, ret;

	fd = attach_new(a, &ret);
	res = ret ? ret : (int32_t)a->slot;
	if (write(report_fd, &res, sizeof(res)) != sizeof(res))
		_exit(2);
	while (read(barrier_fd, &c, 1) < 0 && errno == EINTR)
		;
	if (fd >= 0)
		close(fd);
	_exit(0);
}

/* NPROCS processes attach one job at the same time: distinct slots. */
TEST_F(uapi, fork_distinct_slots)
{
	int report[2], barrier[2], status, i;
	pid_t pids[NPROCS];
	unsigned int seen = 0;
	struct rv_attach a;

	NEED_DEV();
	rv_attach_init(&a, self->dev_index, 8);
	a.slot_bits = 4;
	ASSERT_EQ(0, pipe2(report, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(barrier, O_CLOEXEC));

	for (i = 0; i < NPROCS; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (pids[i] == 0) {
			close(report[0]);
			close(barrier[1]);	/* else EOF never comes */
			child_attach_and_hold(&a, report[1], barrier[0]);
		}
	}
	close(report[1]);
	close(barrier[0]);

	/* All NPROCS are attached at once when the last report arrives. */
	for (i = 0; i < NPROCS; i++) {
		int32_t res;

		ASSERT_EQ(0, read_full(report[0], &res, sizeof(res)));
		EXPECT_LE(0, res) TH_LOG("child attach: %s", strerror(-res));
		if (res < 0 || res >= 32)
			continue;
		EXPECT_FALSE(seen & (1U << res)) TH_LOG("slot %d twice", res);
		seen |= 1U << res;
	}
	/* a new job hands out 0 first, then next-fit: exactly 0..NPROCS-1 */
	EXPECT_EQ((1U << NPROCS) - 1, seen);

	close(barrier[1]);
	for (i = 0; i < NPROCS; i++) {
		ASSERT_EQ(pids[i], waitpid(pids[i], &status, 0));
		EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	}
	close(report[0]);

	/* all detached: the job ended, a new one starts at slot 0 */
	EXPECT_EQ(0, rv_ioc(self->fd, RV_IOCTL_ATTACH, &a));
	EXPECT_EQ(0, a.slot);
}

/* slot_bits 1: two slots; a third ATTACH is ENOSPC while both are held. */
TEST_F(uapi, slot_exhaustion)
{
	struct rv_attach a;
	int fd0, fd1, fd2, ret;

	NEED_DEV();
	rv_attach_init(&a, self->dev_index, 8);
	a.slot_bits = 1;

	fd0 = attach_ok(_metadata, &a);
	ASSERT_LE(0, fd0);
	EXPECT_EQ(0, a.slot);
	fd1 = attach_ok(_metadata, &a);
	ASSERT_LE(0, fd1);
	EXPECT_EQ(1, a.slot);

	fd2 = attach_new(&a, &ret);
	ASSERT_LE(0, fd2);
	EXPECT_EQ(-ENOSPC, ret);
	/* still ENOSPC on the same file: the failure consumed nothing */
	EXPECT_EQ(-ENOSPC, rv_ioc(fd2, RV_IOCTL_ATTACH, &a));

	/*
	 * free slot 0: in quarantine, so the next ATTACH (same file that
	 * failed) is EAGAIN, or gets it at once without one (slot_reuse
	 * below waits the quarantine out)
	 */
	close(fd0);
	ret = rv_ioc(fd2, RV_IOCTL_ATTACH, &a);
	if (self->q.slot_quarantine_ms) {
		EXPECT_EQ(-EAGAIN, ret);
	} else {
		EXPECT_EQ(0, ret);
		EXPECT_EQ(0, a.slot);
	}

	close(fd1);
	close(fd2);
}

/*
 * Slot reuse (rv(7)): a freed slot stays in quarantine for the QUERY's
 * slot_quarantine_ms, and slots are handed out next-fit.  Two jobs side
 * by side, so that one wait serves both: job X (2 slots) for ENOSPC
 * against EAGAIN, job Y (4 slots) for the order of reuse.
 */
TEST_F_TIMEOUT(uapi, slot_reuse, 60)
{
	uint32_t qms = self->q.slot_quarantine_ms;
	int x[3], y[7], ret, i;
	struct rv_attach ax, ay;
	uint64_t t0;

	NEED_DEV();
	if (qms > 20000)
		SKIP(return, "slot_quarantine_ms %u: too long to wait for", qms);
	rv_attach_init(&ax, self->dev_index, 7);
	ax.slot_bits = 1;
	rv_attach_init(&ay, self->dev_index, 6);
	ay.slot_bits = 2;

	/* X: both slots taken, ENOSPC; one freed: EAGAIN while it waits */
	x[0] = attach_ok(_metadata, &ax);
	ASSERT_LE(0, x[0]);
	EXPECT_EQ(0, ax.slot);
	x[1] = attach_ok(_metadata, &ax);
	ASSERT_LE(0, x[1]);
	EXPECT_EQ(1, ax.slot);
	x[2] = attach_new(&ax, &ret);
	ASSERT_LE(0, x[2]);
	EXPECT_EQ(-ENOSPC, ret);
	close(x[0]);
	t0 = rv_now_ms();
	ret = rv_ioc(x[2], RV_IOCTL_ATTACH, &ax);
	/* a machine this slow cannot tell a quarantine from its end */
	if (qms)
		ASSERT_GT(t0 + qms / 2, rv_now_ms());
	EXPECT_EQ(qms ? -EAGAIN : 0, ret);
	/* a refused ATTACH leaves the file free and takes nothing */
	if (qms)
		EXPECT_EQ(-EAGAIN, rv_ioc(x[2], RV_IOCTL_ATTACH, &ax));

	/* Y: 0 and 1 taken, 1 freed: next-fit gives 2, not 1 */
	y[0] = attach_ok(_metadata, &ay);
	ASSERT_LE(0, y[0]);
	EXPECT_EQ(0, ay.slot);
	y[1] = attach_ok(_metadata, &ay);
	ASSERT_LE(0, y[1]);
	EXPECT_EQ(1, ay.slot);
	close(y[1]);
	y[2] = attach_ok(_metadata, &ay);
	ASSERT_LE(0, y[2]);
	EXPECT_EQ(2, ay.slot);
	close(y[2]);

	/* both quarantines over */
	if (qms) {
		/* from the first close: the quarantines began after it */
		while (rv_now_ms() < t0 + qms + 300)
			usleep(50000);
		ax.slot = 0xdead;
		EXPECT_EQ(0, rv_ioc(x[2], RV_IOCTL_ATTACH, &ax));
		EXPECT_EQ(0, ax.slot);
	}
	/* every slot of X taken, none in quarantine: ENOSPC again */
	i = attach_new(&ax, &ret);
	ASSERT_LE(0, i);
	EXPECT_EQ(-ENOSPC, ret);
	close(i);

	/*
	 * Y: 1 and 2 are free again, but the search starts after the last
	 * slot given (2): 3, then it wraps to 1 and 2, then the job is full.
	 */
	y[3] = attach_ok(_metadata, &ay);
	ASSERT_LE(0, y[3]);
	EXPECT_EQ(3, ay.slot);
	y[4] = attach_ok(_metadata, &ay);
	ASSERT_LE(0, y[4]);
	EXPECT_EQ(1, ay.slot);
	y[5] = attach_ok(_metadata, &ay);
	ASSERT_LE(0, y[5]);
	EXPECT_EQ(2, ay.slot);
	y[6] = attach_new(&ay, &ret);
	ASSERT_LE(0, y[6]);
	EXPECT_EQ(-ENOSPC, ret);

	for (i = 1; i < 3; i++)
		close(x[i]);
	close(y[0]);
	for (i = 3; i < 7; i++)
		close(y[i]);
}

/* The slot belongs to the open file, not the descriptor: dup keeps it. */
TEST_F(uapi, slot_held_by_file_not_fd)
{
	struct rv_attach a;
	int fd0, dupfd, fd1, ret;

	NEED_DEV();
	rv_attach_init(&a, self->dev_index, 8);
	a.slot_bits = 1;
	fd0 = attach_ok(_metadata, &a);
	ASSERT_LE(0, fd0);
	fd1 = attach_ok(_metadata, &a);
	ASSERT_LE(0, fd1);
	dupfd = fcntl(fd0, F_DUPFD_CLOEXEC, 0);
	ASSERT_LE(0, dupfd);
	close(fd0);

	fd0 = attach_new(&a, &ret);
	ASSERT_LE(0, fd0);
	EXPECT_EQ(-ENOSPC, ret);

	/* the last descriptor gone, so is the file: slot 0 is freed */
	close(dupfd);
	ret = rv_ioc(fd0, RV_IOCTL_ATTACH, &a);
	if (self->q.slot_quarantine_ms) {
		EXPECT_EQ(-EAGAIN, ret);	/* freed, in quarantine */
	} else {
		EXPECT_EQ(0, ret);
		EXPECT_EQ(0, a.slot);
	}
	close(fd0);
	close(fd1);
}

/* Job-wide parameters must match, after defaults are applied. */
TEST_F(uapi, job_config_mismatch)
{
	struct rv_attach a, b;
	int fd0, fd1, ret;

	NEED_DEV();
	rv_attach_init(&a, self->dev_index, 8);
	fd0 = attach_ok(_metadata, &a);	/* defaults */
	ASSERT_LE(0, fd0);

	b = a;
	b.num_conn = self->q.default_num_conn % RV_MAX_CONN_PER_NODE + 1;
	b.slot_bits = 0;
	b.ring_entries = 0;
	b.mr_cache_bytes = 0;
	EXPECT_EQ(-EBUSY, rv_ioc(self->fd, RV_IOCTL_ATTACH, &b));

	b.num_conn = 0;
	b.slot_bits = self->q.default_slot_bits % RV_MAX_SLOT_BITS + 1;
	EXPECT_EQ(-EBUSY, rv_ioc(self->fd, RV_IOCTL_ATTACH, &b));

	/* defaults spelled out are the same configuration */
	b.num_conn = self->q.default_num_conn;
	b.slot_bits = self->q.default_slot_bits;
	fd1 = attach_new(&b, &ret);
	ASSERT_LE(0, fd1);
	EXPECT_EQ(0, ret);
	/* the EBUSY attempts took no slot */
	EXPECT_EQ(1, b.slot);

	/* per-process parameters may differ */
	b.num_conn = 0;
	b.slot_bits = 0;
	b.ring_entries = RV_MIN_RING_ENTRIES;
	b.mr_cache_bytes = 4096;
	EXPECT_EQ(0, rv_ioc(self->fd, RV_IOCTL_ATTACH, &b));
	EXPECT_EQ(2, b.slot);
	EXPECT_EQ(RV_MIN_RING_ENTRIES, b.ring_entries);

	close(fd1);
	close(fd0);
}

/*
 * gid_index is job-wide too.  Needs a second valid GID entry (rxe has one
 * per IP address of its netdev); without one the check is skipped.
 */
TEST_F(uapi, job_gid_mismatch)
{
	struct rv_attach a, b;
	int fd0, fd1, ret;

	NEED_DEV();
	rv_attach_init(&a, self->dev_index, 8);
	a.gid_index = 1;
	fd1 = attach_new(&a, &ret);
	ASSERT_LE(0, fd1);
	if (ret == -EINVAL) {
		close(fd1);
		SKIP(return, "%s has no GID index 1", rv_test_ibdev());
	}
	ASSERT_EQ(0, ret);
	/* same job key, GID 0: the job exists with GID 1 */
	b = a;
	b.gid_index = 0;
	fd0 = attach_new(&b, &ret);
	ASSERT_LE(0, fd0);
	EXPECT_EQ(-EBUSY, ret);
	close(fd0);
	close(fd1);
}

/*
 * Same key bytes, different length: a different job.  With slot_bits 1
 * the first job is full, yet the second accepts another configuration at
 * slot 0.  The key bytes are identical over all 16 bytes (zero past the
 * shorter length), so only job_key_len tells the two apart.
 */
TEST_F(uapi, key_len_is_identity)
{
	struct rv_attach a, b;
	int fd0, fd1, fd2;

	NEED_DEV();
	rv_attach_init(&a, self->dev_index, 8);
	a.slot_bits = 1;
	a.num_conn = 1;
	fd0 = attach_ok(_metadata, &a);
	ASSERT_LE(0, fd0);
	fd1 = attach_ok(_metadata, &a);
	ASSERT_LE(0, fd1);

	b = a;
	b.job_key_len = 9;	/* key[8] is already 0 */
	b.num_conn = 2;
	fd2 = attach_ok(_metadata, &b);
	ASSERT_LE(0, fd2);
	EXPECT_EQ(0, b.slot);
	EXPECT_EQ(2, b.num_conn);
	close(fd2);

	/* a prefix of the key is another job as well */
	b = a;
	b.job_key_len = 4;
	memset(b.job_key + 4, 0, RV_JOB_KEY_MAX - 4);
	b.num_conn = 3;
	fd2 = attach_ok(_metadata, &b);
	ASSERT_LE(0, fd2);
	EXPECT_EQ(0, b.slot);
	close(fd2);

	/* and one differing byte is another job */
	b = a;
	b.job_key[7] ^= 0x01;
	b.num_conn = 3;
	fd2 = attach_ok(_metadata, &b);
	ASSERT_LE(0, fd2);
	EXPECT_EQ(0, b.slot);
	close(fd2);

	close(fd1);
	close(fd0);
}

/*
 * Another uid with the same key gets its own job: root fills both slots
 * of a slot_bits 1 job, and a child running as nobody still attaches to
 * slot 0 with a num_conn that would be EBUSY in root's job.
 */
TEST_F(uapi, uid_isolation)
{
	int report[2], barrier[2], fd0, fd1, fd2, ret, status;
	struct rv_attach a;
	int32_t res[2];
	pid_t pid;

	NEED_DEV();
	if (geteuid() != 0)
		SKIP(return, "needs root to change uid");

	rv_attach_init(&a, self->dev_index, 8);
	a.slot_bits = 1;
	a.num_conn = 1;
	fd0 = attach_ok(_metadata, &a);
	ASSERT_LE(0, fd0);
	fd1 = attach_ok(_metadata, &a);
	ASSERT_LE(0, fd1);

	ASSERT_EQ(0, pipe2(report, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(barrier, O_CLOEXEC));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int32_t r;
		char c;
		int f0, f1;

		close(report[0]);
		close(barrier[1]);
		/* drop root's open files first: they hold root's slots */
		close(fd0);
		close(fd1);
		close(self->fd);
		if (setgroups(0, NULL) || setgid(NOBODY_UID) ||
		    setuid(NOBODY_UID))
			_exit(3);
		a.num_conn = 2;
		f0 = attach_new(&a, &ret);
		r = ret ? ret : (int32_t)a.slot;
		if (write(report[1], &r, sizeof(r)) != sizeof(r))
			_exit(2);
		/* nobody's job has a second slot; root's had none left */
		f1 = attach_new(&a, &ret);
		r = ret ? ret : (int32_t)a.slot;
		if (write(report[1], &r, sizeof(r)) != sizeof(r))
			_exit(2);
		while (read(barrier[0], &c, 1) < 0 && errno == EINTR)
			;
		close(f0);
		close(f1);
		_exit(0);
	}
	close(report[1]);
	close(barrier[0]);

	ASSERT_EQ(0, read_full(report[0], res, sizeof(res)))
		TH_LOG("child failed to change uid");
	EXPECT_EQ(0, res[0]) TH_LOG("nobody's attach: %d", res[0]);
	EXPECT_EQ(1, res[1]) TH_LOG("nobody's 2nd attach: %d", res[1]);

	/* root's job is still full while nobody holds its own slots */
	a.num_conn = 1;
	fd2 = attach_new(&a, &ret);
	ASSERT_LE(0, fd2);
	EXPECT_EQ(-ENOSPC, ret);
	close(fd2);
	close(barrier[1]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	close(report[0]);
	close(fd1);
	close(fd0);
}

/* ---- connections ------------------------------------------------------- */

/* TEST-NET-1: never a node here; creating a connection sends nothing. */
#define NOWHERE_IP	0xc0000201	/* 192.0.2.1 */

static void sin_init(struct sockaddr_in *sin, uint32_t host_ip)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(host_ip);
}

static void conn_create_init(struct rv_conn_create *c, const void *addr,
			     uint32_t len)
{
	memset(c, 0, sizeof(*c));
	c->size = sizeof(*c);
	c->addr_len = len;
	memcpy(c->addr, addr, len);
}

/*
 * A new file attached to job @key (random when NULL) with the IPv4 GID;
 * SKIPs the test without one.  Returns the fd, or -1 after SKIP.
 */
static int conn_attach(struct __test_metadata *_metadata, int dev_index,
		       const uint8_t *key, struct in_addr *local)
{
	struct rv_attach a;
	int gid, fd, ret;

	gid = rv_ipv4_gid(rv_test_ibdev(), RV_TEST_PORT, -1, local);
	if (gid < 0)
		return -1;
	rv_attach_init(&a, dev_index, 8);
	if (key)
		memcpy(a.job_key, key, 8);
	a.gid_index = gid;
	fd = attach_new(&a, &ret);
	EXPECT_EQ(0, ret);
	return fd;
}

#define NEED_IPV4_GID(fd) do {						\
	if ((fd) < 0)							\
		SKIP(return, "%s has no IPv4 RoCE v2 GID", rv_test_ibdev()); \
} while (0)

/* CONN_CREATE to @host_ip; returns the handle or -errno. */
static int conn_create(int fd, uint32_t host_ip, struct rv_conn_create *out)
{
	struct rv_conn_create c;
	struct sockaddr_in sin;
	int ret;

	sin_init(&sin, host_ip);
	conn_create_init(&c, &sin, sizeof(sin));
	ret = rv_ioc(fd, RV_IOCTL_CONN_CREATE, &c);
	if (out)
		*out = c;
	return ret ? ret : (int)c.handle;
}

static int conn_query(int fd, uint32_t handle, uint32_t flags,
		      uint32_t timeout_ms, struct rv_conn_query *q)
{
	memset(q, 0, sizeof(*q));
	q->size = sizeof(*q);
	q->handle = handle;
	q->flags = flags;
	q->timeout_ms = timeout_ms;
	return rv_ioc(fd, RV_IOCTL_CONN_QUERY, q);
}

static int conn_simple(int fd, unsigned long cmd, uint32_t handle,
		       uint32_t flags)
{
	struct rv_conn_destroy d = {
		.size = sizeof(d), .flags = flags, .handle = handle,
	};
	struct rv_conn_connect c = {
		.size = sizeof(c), .flags = flags, .handle = handle,
	};

	return rv_ioc(fd, cmd, cmd == RV_IOCTL_CONN_CONNECT ?
		      (void *)&c : (void *)&d);
}

TEST_F(uapi, conn_need_attach)
{
	struct rv_conn_query q;

	NEED_RV();
	EXPECT_EQ(-ENOTCONN, conn_create(self->fd, NOWHERE_IP, NULL));
	EXPECT_EQ(-ENOTCONN, conn_simple(self->fd, RV_IOCTL_CONN_CONNECT, 1, 0));
	EXPECT_EQ(-ENOTCONN, conn_query(self->fd, 1, 0, 0, &q));
	EXPECT_EQ(-ENOTCONN, conn_simple(self->fd, RV_IOCTL_CONN_DESTROY, 1, 0));
}

TEST_F(uapi, conn_flags_and_sizes)
{
	uint8_t buf[sizeof(struct rv_conn_query) + 8]
		__attribute__((aligned(8)));
	struct rv_conn_query *bq = (struct rv_conn_query *)buf;
	struct rv_conn_create c;
	struct rv_conn_query q;
	struct sockaddr_in sin;
	unsigned int bit;
	int fd, h;

	NEED_DEV();
	fd = conn_attach(_metadata, self->dev_index, NULL, NULL);
	NEED_IPV4_GID(fd);
	h = conn_create(fd, NOWHERE_IP, NULL);
	ASSERT_LT(0, h);

	sin_init(&sin, NOWHERE_IP);
	for (bit = 0; bit < 32; bit++) {
		conn_create_init(&c, &sin, sizeof(sin));
		c.flags = 1U << bit;
		EXPECT_EQ(-EINVAL, rv_ioc(fd, RV_IOCTL_CONN_CREATE, &c));
		EXPECT_EQ(-EINVAL, conn_simple(fd, RV_IOCTL_CONN_CONNECT, h,
					       1U << bit));
		EXPECT_EQ(-EINVAL, conn_simple(fd, RV_IOCTL_CONN_DESTROY, h,
					       1U << bit));
		if ((1U << bit) != RV_CONN_QUERY_F_WAIT) {
			EXPECT_EQ(-EINVAL, conn_query(fd, h, 1U << bit, 0, &q));
		}
	}
	/* Too small, and a newer struct's unknown tail. */
	conn_create_init(&c, &sin, sizeof(sin));
	c.size = sizeof(c) - 4;
	EXPECT_EQ(-EINVAL, rv_ioc(fd, RV_IOCTL_CONN_CREATE, &c));
	memset(buf, 0, sizeof(buf));
	bq->size = sizeof(buf);
	bq->handle = h;
	EXPECT_EQ(0, rv_ioc(fd, RV_IOCTL_CONN_QUERY, bq));
	buf[sizeof(buf) - 1] = 1;
	EXPECT_EQ(-E2BIG, rv_ioc(fd, RV_IOCTL_CONN_QUERY, bq));
	/*
	 * The data path counters were appended: the first release's 64
	 * bytes are still accepted, and nothing past them is written back.
	 */
	memset(buf, SENTINEL, sizeof(buf));
	bq->size = RV_CONN_QUERY_MIN_SIZE - 1;
	bq->flags = 0;
	bq->handle = h;
	bq->timeout_ms = 0;
	EXPECT_EQ(-EINVAL, rv_ioc(fd, RV_IOCTL_CONN_QUERY, bq));
	bq->size = RV_CONN_QUERY_MIN_SIZE;
	EXPECT_EQ(0, rv_ioc(fd, RV_IOCTL_CONN_QUERY, bq));
	EXPECT_EQ(RV_CONN_STATE_IDLE, bq->state);
	EXPECT_EQ(SENTINEL, buf[RV_CONN_QUERY_MIN_SIZE]);
	EXPECT_EQ(SENTINEL, buf[sizeof(struct rv_conn_query) - 1]);
	/* The handle still works after all the refusals. */
	EXPECT_EQ(0, conn_query(fd, h, 0, 0, &q));
	EXPECT_EQ(RV_CONN_STATE_IDLE, q.state);
	close(fd);
}

TEST_F(uapi, conn_bad_handles)
{
	struct rv_conn_query q;
	int fd, fd2, h;

	NEED_DEV();
	fd = conn_attach(_metadata, self->dev_index, NULL, NULL);
	NEED_IPV4_GID(fd);
	fd2 = conn_attach(_metadata, self->dev_index, NULL, NULL);
	ASSERT_LE(0, fd2);
	h = conn_create(fd, NOWHERE_IP, NULL);
	ASSERT_LT(0, h);

	EXPECT_EQ(-ENOENT, conn_simple(fd, RV_IOCTL_CONN_CONNECT, 0, 0));
	EXPECT_EQ(-ENOENT, conn_simple(fd, RV_IOCTL_CONN_CONNECT, h + 1, 0));
	EXPECT_EQ(-ENOENT, conn_query(fd, 0, 0, 0, &q));
	EXPECT_EQ(-ENOENT, conn_query(fd, UINT32_MAX, 0, 0, &q));
	EXPECT_EQ(-ENOENT, conn_simple(fd, RV_IOCTL_CONN_DESTROY, 0, 0));
	/* Handles are per file. */
	EXPECT_EQ(-ENOENT, conn_query(fd2, h, 0, 0, &q));
	EXPECT_EQ(-ENOENT, conn_simple(fd2, RV_IOCTL_CONN_DESTROY, h, 0));
	/* Destroyed once, gone. */
	EXPECT_EQ(0, conn_simple(fd, RV_IOCTL_CONN_DESTROY, h, 0));
	EXPECT_EQ(-ENOENT, conn_simple(fd, RV_IOCTL_CONN_DESTROY, h, 0));
	EXPECT_EQ(-ENOENT, conn_query(fd, h, 0, 0, &q));
	close(fd);
	close(fd2);
}

TEST_F(uapi, conn_bad_addr)
{
	struct rv_conn_create c;
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in sin;
	struct in_addr local;
	uint16_t fam;
	int fd;

	NEED_DEV();
	fd = conn_attach(_metadata, self->dev_index, NULL, &local);
	NEED_IPV4_GID(fd);

	/* Families other than AF_INET/AF_INET6, AF_IB (27) included. */
	for (fam = 0; fam < 64; fam++) {
		if (fam == AF_INET || fam == AF_INET6)
			continue;
		sin_init(&sin, NOWHERE_IP);
		sin.sin_family = fam;
		conn_create_init(&c, &sin, sizeof(sin));
		EXPECT_EQ(-EAFNOSUPPORT, rv_ioc(fd, RV_IOCTL_CONN_CREATE, &c))
			TH_LOG("family %u", fam);
	}
	sin_init(&sin, NOWHERE_IP);
	/* Lengths: too short to hold a family, wrong for it, too long. */
	conn_create_init(&c, &sin, sizeof(sin));
	c.addr_len = 1;
	EXPECT_EQ(-EINVAL, rv_ioc(fd, RV_IOCTL_CONN_CREATE, &c));
	c.addr_len = sizeof(sin) - 1;
	EXPECT_EQ(-EINVAL, rv_ioc(fd, RV_IOCTL_CONN_CREATE, &c));
	c.addr_len = sizeof(sin) + 1;
	EXPECT_EQ(-EINVAL, rv_ioc(fd, RV_IOCTL_CONN_CREATE, &c));
	c.addr_len = RV_CONN_ADDR_MAX + 1;
	EXPECT_EQ(-EINVAL, rv_ioc(fd, RV_IOCTL_CONN_CREATE, &c));
	/* Garbage past addr_len. */
	conn_create_init(&c, &sin, sizeof(sin));
	c.addr[RV_CONN_ADDR_MAX - 1] = 1;
	EXPECT_EQ(-EINVAL, rv_ioc(fd, RV_IOCTL_CONN_CREATE, &c));
	/* Wildcard, multicast, broadcast, this node's own address. */
	EXPECT_EQ(-EINVAL, conn_create(fd, 0, NULL));
	EXPECT_EQ(-EINVAL, conn_create(fd, 0xe0000001, NULL));
	EXPECT_EQ(-EINVAL, conn_create(fd, 0xffffffff, NULL));
	EXPECT_EQ(-EINVAL, conn_create(fd, ntohl(local.s_addr), NULL));
	/* Ports a user can listen on are not rv's (1024 and up); 1023 is. */
	sin_init(&sin, NOWHERE_IP);
	sin.sin_port = htons(1024);
	conn_create_init(&c, &sin, sizeof(sin));
	EXPECT_EQ(-EINVAL, rv_ioc(fd, RV_IOCTL_CONN_CREATE, &c));
	sin.sin_port = htons(65535);
	conn_create_init(&c, &sin, sizeof(sin));
	EXPECT_EQ(-EINVAL, rv_ioc(fd, RV_IOCTL_CONN_CREATE, &c));
	sin.sin_port = htons(1023);
	conn_create_init(&c, &sin, sizeof(sin));
	EXPECT_EQ(0, rv_ioc(fd, RV_IOCTL_CONN_CREATE, &c));
	EXPECT_LT(0, c.handle);
	/* IPv6 for a job whose GID is IPv4. */
	sin6.sin6_addr.s6_addr[15] = 1;
	sin6.sin6_addr.s6_addr[0] = 0x20;
	conn_create_init(&c, &sin6, sizeof(sin6));
	EXPECT_EQ(-EINVAL, rv_ioc(fd, RV_IOCTL_CONN_CREATE, &c));
	close(fd);
}

/* Files of one job share one connection per address; other jobs do not. */
TEST_F(uapi, conn_shared_by_job)
{
	struct rv_conn_destroy d = { .size = sizeof(d) };
	struct rv_conn_create c1, c2, c3, c4;
	struct rv_conn_query q;
	uint8_t key[8];
	int fd1, fd2, fd3, h1, h2, h3, h4;

	NEED_DEV();
	rv_random_key(key, sizeof(key));
	fd1 = conn_attach(_metadata, self->dev_index, key, NULL);
	NEED_IPV4_GID(fd1);
	fd2 = conn_attach(_metadata, self->dev_index, key, NULL);
	fd3 = conn_attach(_metadata, self->dev_index, NULL, NULL);
	ASSERT_LE(0, fd2);
	ASSERT_LE(0, fd3);

	h1 = conn_create(fd1, NOWHERE_IP, &c1);
	h2 = conn_create(fd2, NOWHERE_IP, &c2);
	h3 = conn_create(fd3, NOWHERE_IP, &c3);
	h4 = conn_create(fd1, NOWHERE_IP + 1, &c4);
	ASSERT_LT(0, h1);
	ASSERT_LT(0, h2);
	ASSERT_LT(0, h3);
	ASSERT_LT(0, h4);
	EXPECT_EQ(c1.conn_id, c2.conn_id);
	EXPECT_NE(c1.conn_id, c3.conn_id);
	EXPECT_NE(c1.conn_id, c4.conn_id);
	EXPECT_EQ(self->q.default_num_conn, c1.num_conn);
	EXPECT_EQ(self->q.conn_wqe_budget / c1.num_conn, c1.send_depth);
	EXPECT_EQ(c1.send_depth, c1.recv_depth);

	ASSERT_EQ(0, conn_query(fd2, h2, 0, 0, &q));
	EXPECT_EQ(RV_CONN_STATE_IDLE, q.state);
	EXPECT_EQ(RV_CONN_REASON_NONE, q.reason);
	EXPECT_EQ(c1.conn_id, q.conn_id);
	EXPECT_EQ(2, q.handles);
	EXPECT_EQ(0, q.connected);
	EXPECT_EQ(0, q.generation);
	EXPECT_EQ(0, q.attempts);
	EXPECT_EQ(c1.num_conn, q.num_conn);
	EXPECT_TRUE(q.role == RV_CONN_ROLE_CLIENT ||
		    q.role == RV_CONN_ROLE_SERVER);

	/* The last handle of any file ends it; the others keep it. */
	d.handle = h1;
	EXPECT_EQ(0, rv_ioc(fd1, RV_IOCTL_CONN_DESTROY, &d));
	EXPECT_EQ(1, d.handles);
	ASSERT_EQ(0, conn_query(fd2, h2, 0, 0, &q));
	EXPECT_EQ(1, q.handles);
	/* Closing a file drops its handles (h4 here). */
	close(fd1);
	d.handle = h2;
	EXPECT_EQ(0, rv_ioc(fd2, RV_IOCTL_CONN_DESTROY, &d));
	EXPECT_EQ(0, d.handles);
	close(fd2);
	close(fd3);
}

/* The wait is bounded by timeout_ms and is not a busy loop. */
TEST_F(uapi, conn_query_wait)
{
	uint64_t t0;
	struct rv_conn_query q;
	long ms;
	int fd, h;

	NEED_DEV();
	fd = conn_attach(_metadata, self->dev_index, NULL, NULL);
	NEED_IPV4_GID(fd);
	h = conn_create(fd, NOWHERE_IP, NULL);
	ASSERT_LT(0, h);

	EXPECT_EQ(-EINVAL, conn_query(fd, h, 0, 100, &q));
	EXPECT_EQ(-EINVAL, conn_query(fd, h, RV_CONN_QUERY_F_WAIT,
				      RV_CONN_TIMEOUT_MAX_MS + 1, &q));
	EXPECT_EQ(0, conn_query(fd, h, RV_CONN_QUERY_F_WAIT, 0, &q));

	t0 = rv_now_ms();
	EXPECT_EQ(0, conn_query(fd, h, RV_CONN_QUERY_F_WAIT, 300, &q));
	ms = (long)(rv_now_ms() - t0);
	EXPECT_EQ(RV_CONN_STATE_IDLE, q.state);
	EXPECT_LE(280, ms);
	EXPECT_GE(5000, ms);
	close(fd);
}

/* Nobody at the address: ERROR with a reason, within the timeout. */
TEST_F(uapi, conn_unreachable)
{
	struct rv_conn_connect c = { .size = sizeof(c) };
	uint64_t t0;
	struct rv_conn_query q;
	long ms;
	int fd, h;

	NEED_DEV();
	fd = conn_attach(_metadata, self->dev_index, NULL, NULL);
	NEED_IPV4_GID(fd);
	h = conn_create(fd, NOWHERE_IP, NULL);
	ASSERT_LT(0, h);

	c.handle = h;
	c.timeout_ms = RV_CONN_TIMEOUT_MAX_MS + 1;
	EXPECT_EQ(-EINVAL, rv_ioc(fd, RV_IOCTL_CONN_CONNECT, &c));
	c.timeout_ms = 1500;
	t0 = rv_now_ms();
	ASSERT_EQ(0, rv_ioc(fd, RV_IOCTL_CONN_CONNECT, &c));
	/* Idempotent while connecting. */
	EXPECT_EQ(0, rv_ioc(fd, RV_IOCTL_CONN_CONNECT, &c));
	EXPECT_EQ(0, conn_query(fd, h, RV_CONN_QUERY_F_WAIT, 20000, &q));
	ms = (long)(rv_now_ms() - t0);
	EXPECT_EQ(RV_CONN_STATE_ERROR, q.state);
	EXPECT_EQ(RV_CONN_REASON_UNREACHABLE, q.reason);
	EXPECT_EQ(0, q.connected);
	EXPECT_GE(10000, ms);
	TH_LOG("error after %ld ms, %llu attempts", ms,
	       (unsigned long long)q.attempts);
	/* From ERROR, CONNECT starts again. */
	c.timeout_ms = 200;
	EXPECT_EQ(0, rv_ioc(fd, RV_IOCTL_CONN_CONNECT, &c));
	EXPECT_EQ(0, conn_query(fd, h, 0, 0, &q));
	EXPECT_EQ(RV_CONN_STATE_CONNECTING, q.state);
	EXPECT_EQ(0, conn_query(fd, h, RV_CONN_QUERY_F_WAIT, 20000, &q));
	EXPECT_EQ(RV_CONN_STATE_ERROR, q.state);
	close(fd);
}

/* A forked child cannot use its parent's attached file. */
TEST_F(uapi, conn_fork_eperm)
{
	pid_t pid;
	int fd, h, status;

	NEED_DEV();
	fd = conn_attach(_metadata, self->dev_index, NULL, NULL);
	NEED_IPV4_GID(fd);
	h = conn_create(fd, NOWHERE_IP, NULL);
	ASSERT_LT(0, h);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct rv_conn_query q;

		_exit(conn_create(fd, NOWHERE_IP, NULL) == -EPERM &&
		      conn_query(fd, h, 0, 0, &q) == -EPERM &&
		      conn_simple(fd, RV_IOCTL_CONN_DESTROY, h, 0) == -EPERM ?
		      0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(fd);
}

/* ---- data path: argument checks that need no remote node ----------------- */

static int post_write(int fd, const struct rv_write *w, uint32_t flags)
{
	struct rv_post_write p = { .size = sizeof(p), .flags = flags };

	p.write = *w;
	return rv_ioc(fd, RV_IOCTL_POST_WRITE, &p);
}

static int post_writes(int fd, const void *writes, uint32_t count,
		       uint32_t entry_size, uint32_t flags,
		       struct rv_post_writes *out)
{
	struct rv_post_writes p = {
		.size = sizeof(p), .flags = flags,
		.writes = (uintptr_t)writes, .count = count,
		.entry_size = entry_size,
	};
	int ret = rv_ioc(fd, RV_IOCTL_POST_WRITES, &p);

	if (out)
		*out = p;
	return ret;
}

static int get_stats(int fd, struct rv_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	return rv_ioc(fd, RV_IOCTL_STATS, st);
}

/* A zero-length write (just the immediate) on @handle: valid but for state. */
static void imm_write(struct rv_write *w, uint32_t handle)
{
	memset(w, 0, sizeof(*w));
	w->wr_id = 0x1122334455667788ULL;
	w->conn_handle = handle;
	w->imm = 0x12345678;
}

/* An attached file with gid 0 (no connection needed); -1 and SKIP if none. */
static int plain_attach(struct __test_metadata *_metadata, int dev_index)
{
	struct rv_attach a;
	int fd, ret;

	rv_attach_init(&a, dev_index, 8);
	fd = attach_new(&a, &ret);
	EXPECT_EQ(0, ret);
	if (ret) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

TEST_F(uapi, data_need_attach)
{
	struct rv_write w[1];
	struct rv_stats st;

	NEED_RV();
	imm_write(&w[0], 1);
	EXPECT_EQ(-ENOTCONN, post_write(self->fd, &w[0], 0));
	EXPECT_EQ(-ENOTCONN, post_writes(self->fd, w, 1, sizeof(w[0]), 0,
					 NULL));
	EXPECT_EQ(-ENOTCONN, get_stats(self->fd, &st));
}

/* Flags, sizes and unknown handles; nothing is ever posted. */
TEST_F(uapi, post_write_args)
{
	uint8_t buf[sizeof(struct rv_post_write) + 8]
		__attribute__((aligned(8)));
	struct rv_post_write *bp = (struct rv_post_write *)buf;
	struct rv_write w;
	struct rv_stats st;
	unsigned int bit;
	int fd, fd2, h;

	NEED_DEV();
	fd = conn_attach(_metadata, self->dev_index, NULL, NULL);
	NEED_IPV4_GID(fd);
	fd2 = conn_attach(_metadata, self->dev_index, NULL, NULL);
	ASSERT_LE(0, fd2);
	h = conn_create(fd, NOWHERE_IP, NULL);
	ASSERT_LT(0, h);

	imm_write(&w, h);
	for (bit = 0; bit < 32; bit++)
		EXPECT_EQ(-EINVAL, post_write(fd, &w, 1U << bit))
			TH_LOG("flag bit %u", bit);
	/* Too small; a newer struct's tail, zero (known state) or not. */
	memset(buf, 0, sizeof(buf));
	bp->write = w;
	bp->size = sizeof(*bp) - 4;
	EXPECT_EQ(-EINVAL, rv_ioc(fd, RV_IOCTL_POST_WRITE, bp));
	bp->size = sizeof(buf);
	buf[sizeof(buf) - 1] = 1;
	EXPECT_EQ(-E2BIG, rv_ioc(fd, RV_IOCTL_POST_WRITE, bp));
	buf[sizeof(buf) - 1] = 0;
	/* The connection was never connected: EPIPE, nothing queued. */
	EXPECT_EQ(-EPIPE, rv_ioc(fd, RV_IOCTL_POST_WRITE, bp));
	EXPECT_EQ(-EPIPE, post_write(fd, &w, 0));

	/* Unknown connection handles, including another file's. */
	w.conn_handle = 0;
	EXPECT_EQ(-ENOENT, post_write(fd, &w, 0));
	w.conn_handle = h + 1;
	EXPECT_EQ(-ENOENT, post_write(fd, &w, 0));
	w.conn_handle = UINT32_MAX;
	EXPECT_EQ(-ENOENT, post_write(fd, &w, 0));
	w.conn_handle = h;
	EXPECT_EQ(-ENOENT, post_write(fd2, &w, 0));

	/* Refused posts are not posts. */
	ASSERT_EQ(0, get_stats(fd, &st));
	EXPECT_EQ(0, st.writes_posted);
	EXPECT_EQ(0, st.bytes_posted);
	EXPECT_EQ(0, st.inflight);
	EXPECT_EQ(0, st.posts_eagain);
	close(fd2);
	close(fd);
}

TEST_F(uapi, post_writes_args)
{
	struct rv_write w[2];
	struct rv_post_writes out;
	struct rv_stats st;
	unsigned int bit;
	long page = sysconf(_SC_PAGESIZE);
	void *none;
	int fd, h;

	NEED_DEV();
	fd = conn_attach(_metadata, self->dev_index, NULL, NULL);
	NEED_IPV4_GID(fd);
	h = conn_create(fd, NOWHERE_IP, NULL);
	ASSERT_LT(0, h);
	imm_write(&w[0], h);
	imm_write(&w[1], h);

	for (bit = 0; bit < 32; bit++)
		EXPECT_EQ(-EINVAL, post_writes(fd, w, 1, sizeof(w[0]),
					       1U << bit, NULL))
			TH_LOG("flag bit %u", bit);
	/* count 0 and count above the limit */
	EXPECT_EQ(-EINVAL, post_writes(fd, w, 0, sizeof(w[0]), 0, NULL));
	EXPECT_EQ(-EINVAL, post_writes(fd, w, RV_MAX_POST_WRITES + 1,
				       sizeof(w[0]), 0, NULL));
	EXPECT_EQ(-EINVAL, post_writes(fd, w, UINT32_MAX, sizeof(w[0]), 0,
				       NULL));
	/* entry_size must be exactly this header's struct rv_write */
	EXPECT_EQ(-EINVAL, post_writes(fd, w, 1, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, post_writes(fd, w, 1, sizeof(w[0]) - 8, 0, NULL));
	EXPECT_EQ(-EINVAL, post_writes(fd, w, 1, sizeof(w[0]) + 8, 0, NULL));
	EXPECT_EQ(-EINVAL, post_writes(fd, w, 1, sizeof(w[0]) + 1, 0, NULL));

	/* The array is unreadable: EFAULT, not a crash nor a partial post. */
	none = mmap(NULL, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(none != MAP_FAILED);
	EXPECT_EQ(-EFAULT, post_writes(fd, NULL, 1, sizeof(w[0]), 0, NULL));
	EXPECT_EQ(-EFAULT, post_writes(fd, none, 1, sizeof(w[0]), 0, NULL));
	EXPECT_EQ(0, munmap(none, page));
	EXPECT_EQ(-EFAULT, post_writes(fd, none, 1, sizeof(w[0]), 0, NULL));

	/* The first write fails: the call fails with its errno. */
	w[0].conn_handle = h + 1;
	EXPECT_EQ(-ENOENT, post_writes(fd, w, 2, sizeof(w[0]), 0, &out));
	w[0].conn_handle = h;
	EXPECT_EQ(-EPIPE, post_writes(fd, w, 2, sizeof(w[0]), 0, &out));

	ASSERT_EQ(0, get_stats(fd, &st));
	EXPECT_EQ(0, st.writes_posted);
	EXPECT_EQ(0, st.inflight);
	close(fd);
}

/* Fresh counters are zero, in STATS and in CONN_QUERY. */
/* DUMP needs no attach; bad kinds and reserved fields are refused. */
TEST_F(uapi, dump_args)
{
	struct rv_dump_job jobs[4];
	struct rv_dump d;
	int fd;

	NEED_DEV();
	fd = open("/dev/rv", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	memset(&d, 0, sizeof(d));
	d.size = sizeof(d);
	d.kind = 0;
	EXPECT_EQ(-EINVAL, rv_ioc(fd, RV_IOCTL_DUMP, &d));
	d.kind = RV_DUMP_DEVICES + 1;
	EXPECT_EQ(-EINVAL, rv_ioc(fd, RV_IOCTL_DUMP, &d));
	d.kind = RV_DUMP_JOBS;
	d.rsvd = 1;
	EXPECT_EQ(-EINVAL, rv_ioc(fd, RV_IOCTL_DUMP, &d));
	d.rsvd = 0;
	/* No room: nothing written, the total still counted. */
	EXPECT_EQ(0, rv_ioc(fd, RV_IOCTL_DUMP, &d));
	EXPECT_EQ(0, d.count);
	EXPECT_EQ(sizeof(struct rv_dump_job), d.record_size);
	memset(&d, 0, sizeof(d));
	d.size = sizeof(d);
	d.kind = RV_DUMP_DEVICES;
	d.buf = 4096;	/* unmapped */
	d.buf_len = sizeof(jobs);
	EXPECT_EQ(-EFAULT, rv_ioc(fd, RV_IOCTL_DUMP, &d));
	d.buf = (uintptr_t)jobs;
	d.count = 0;
	d.total = 0;
	EXPECT_EQ(0, rv_ioc(fd, RV_IOCTL_DUMP, &d));
	EXPECT_LE(1, d.count);	/* at least the device under test */
	close(fd);
}

TEST_F(uapi, stats_zero_after_attach)
{
	uint8_t buf[sizeof(struct rv_stats) + 8] __attribute__((aligned(8)));
	struct rv_stats *bs = (struct rv_stats *)buf;
	struct rv_conn_query q;
	struct rv_stats st;
	unsigned int bit;
	int fd, h;

	NEED_DEV();
	fd = conn_attach(_metadata, self->dev_index, NULL, NULL);
	NEED_IPV4_GID(fd);

	memset(&st, 0xff, sizeof(st));
	ASSERT_EQ(0, get_stats(fd, &st));
	EXPECT_EQ(sizeof(st), st.size);
	EXPECT_EQ(0, st.writes_posted);
	EXPECT_EQ(0, st.bytes_posted);
	EXPECT_EQ(0, st.writes_completed);
	EXPECT_EQ(0, st.writes_failed);
	EXPECT_EQ(0, st.posts_eagain);
	EXPECT_EQ(0, st.recvs);
	EXPECT_EQ(0, st.bytes_received);
	EXPECT_EQ(0, st.ring_overflows);
	EXPECT_EQ(0, st.inflight);
	EXPECT_EQ(0, st.rsvd);

	for (bit = 0; bit < 32; bit++) {
		memset(&st, 0, sizeof(st));
		st.size = sizeof(st);
		st.flags = 1U << bit;
		EXPECT_EQ(-EINVAL, rv_ioc(fd, RV_IOCTL_STATS, &st));
	}
	memset(buf, 0, sizeof(buf));
	bs->size = sizeof(*bs) - 8;
	EXPECT_EQ(-EINVAL, rv_ioc(fd, RV_IOCTL_STATS, bs));
	bs->size = sizeof(buf);
	EXPECT_EQ(0, rv_ioc(fd, RV_IOCTL_STATS, bs));
	buf[sizeof(buf) - 1] = 1;
	EXPECT_EQ(-E2BIG, rv_ioc(fd, RV_IOCTL_STATS, bs));

	h = conn_create(fd, NOWHERE_IP, NULL);
	ASSERT_LT(0, h);
	ASSERT_EQ(0, conn_query(fd, h, 0, 0, &q));
	EXPECT_EQ(0, q.writes_posted);
	EXPECT_EQ(0, q.bytes_posted);
	EXPECT_EQ(0, q.writes_completed);
	EXPECT_EQ(0, q.writes_failed);
	EXPECT_EQ(0, q.recvs);
	EXPECT_EQ(0, q.bytes_received);
	EXPECT_EQ(0, q.drops_no_slot);
	EXPECT_EQ(0, q.drops_ring_full);
	EXPECT_EQ(0, q.recv_errors);
	EXPECT_EQ(0, q.inflight);
	TH_LOG("max_segment before connecting: %u", q.max_segment);
	close(fd);
}

/*
 * A forked child may read the stats of the file it inherited (documented)
 * but not post on it.
 */
TEST_F(uapi, data_fork)
{
	pid_t pid;
	int fd, status;

	NEED_DEV();
	fd = plain_attach(_metadata, self->dev_index);
	ASSERT_LE(0, fd);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct rv_write w[1];
		struct rv_stats st;

		imm_write(&w[0], 1);
		_exit(post_write(fd, &w[0], 0) == -EPERM &&
		      post_writes(fd, w, 1, sizeof(w[0]), 0, NULL) == -EPERM &&
		      get_stats(fd, &st) == 0 && st.writes_posted == 0 ?
		      0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(fd);
}

TEST_HARNESS_MAIN
