// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * librv API tests.  Linked against the shared librv (rpath into the tree),
 * so they also prove the exported symbol set.  The argument-checking tests
 * need neither /dev/rv nor an RDMA device and run on the build host
 * (make run_host), also under valgrind (make valgrind); the rest SKIP
 * there.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/netlink.h>

#include "kselftest_harness.h"
#include "rv_test_util.h"

static bool have_rv(void)
{
	return access(RV_DEV_PATH, F_OK) == 0;
}

/* Whether this kernel speaks RDMA netlink at all (ib_core loaded). */
static bool have_rdma_netlink(void)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

#define NEED_RV() do {							\
	if (!have_rv())							\
		SKIP(return, RV_DEV_PATH " missing: rv module not loaded"); \
} while (0)

TEST(open_bad_args)
{
	struct rv *rv = (struct rv *)0x1;	/* must stay untouched */
	unsigned int bit;

	for (bit = 0; bit < 32; bit++)
		EXPECT_EQ(-EINVAL, rv_open(&rv, 1U << bit));
	EXPECT_TRUE(rv == (struct rv *)0x1);
	EXPECT_EQ(-EINVAL, rv_open(NULL, 0));
}

TEST(close_null)
{
	rv_close(NULL);
}

TEST(open_without_module)
{
	struct rv *rv = NULL;

	if (have_rv())
		SKIP(return, RV_DEV_PATH " exists");
	EXPECT_EQ(-ENOENT, rv_open(&rv, 0));
	EXPECT_TRUE(rv == NULL);
}

TEST(device_index_bad_args)
{
	EXPECT_EQ(-EINVAL, rv_device_index(NULL));
	EXPECT_EQ(-EINVAL, rv_device_index(""));
}

TEST(device_index_unknown)
{
	char longname[300];

	if (!have_rdma_netlink())
		SKIP(return, "no RDMA netlink: ib_core not loaded");
	EXPECT_EQ(-ENODEV, rv_device_index("rv_no_such_device"));
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	EXPECT_EQ(-ENODEV, rv_device_index(longname));
}

/*
 * The index of $RV_IBDEV matches what "rdma dev" prints, and names that
 * merely share a prefix with it do not resolve.
 */
TEST(device_index_known)
{
	const char *name = rv_test_ibdev();
	char cmd[256], line[512], prefix[64], longer[80];
	int idx, want = -1;
	FILE *p;

	if (!have_rdma_netlink())
		SKIP(return, "no RDMA netlink: ib_core not loaded");
	idx = rv_device_index(name);
	if (idx == -ENODEV)
		SKIP(return, "no RDMA device %s", name);
	ASSERT_LE(0, idx) TH_LOG("rv_device_index(%s): %s", name,
				 strerror(-idx));

	snprintf(cmd, sizeof(cmd), "rdma dev show %s 2>/dev/null", name);
	p = popen(cmd, "r");
	ASSERT_TRUE(p != NULL);
	while (fgets(line, sizeof(line), p)) {
		char dev[64];
		int n;

		/* "2: rxe0: node_type ca ..." */
		if (sscanf(line, "%d: %63[^:]:", &n, dev) == 2 &&
		    !strcmp(dev, name))
			want = n;
	}
	pclose(p);
	if (want < 0)
		SKIP(return, "cannot run \"rdma dev\" to cross-check");
	EXPECT_EQ(want, idx);

	snprintf(prefix, sizeof(prefix), "%.*s", (int)strlen(name) - 1, name);
	if (prefix[0])
		EXPECT_EQ(-ENODEV, rv_device_index(prefix));
	snprintf(longer, sizeof(longer), "%s0", name);
	EXPECT_EQ(-ENODEV, rv_device_index(longer));
}

TEST(fd)
{
	struct rv *rv;
	int fd, flags;

	NEED_RV();
	ASSERT_EQ(0, rv_open(&rv, 0));
	fd = rv_fd(rv);
	ASSERT_LE(0, fd);
	flags = fcntl(fd, F_GETFD);
	EXPECT_TRUE(flags >= 0 && (flags & FD_CLOEXEC));
	flags = fcntl(fd, F_GETFL);
	EXPECT_EQ(O_RDWR, flags & O_ACCMODE);
	rv_close(rv);
	/* rv_close closed it */
	EXPECT_EQ(-1, fcntl(fd, F_GETFD));
	EXPECT_EQ(EBADF, errno);
}

TEST(query)
{
	struct rv_query q;
	struct rv *rv;

	NEED_RV();
	ASSERT_EQ(0, rv_open(&rv, 0));
	/* garbage in: rv_query sets size and flags itself */
	memset(&q, 0xff, sizeof(q));
	EXPECT_EQ(0, rv_query(rv, &q));
	EXPECT_EQ(sizeof(q), q.size);
	EXPECT_TRUE(q.cmd_mask & (1ULL << RV_CMD_ATTACH));
	EXPECT_EQ(RV_JOB_KEY_MAX, q.max_job_key_len);
	EXPECT_EQ(-EINVAL, rv_query(rv, NULL));
	rv_close(rv);
}

TEST(attach_and_slot)
{
	struct rv *rv0, *rv1, *rv2;
	struct rv_attach a;
	int idx;

	NEED_RV();
	idx = rv_device_index(rv_test_ibdev());
	if (idx < 0)
		SKIP(return, "RDMA device %s: %s", rv_test_ibdev(),
		     strerror(-idx));

	ASSERT_EQ(0, rv_open(&rv0, 0));
	ASSERT_EQ(0, rv_open(&rv1, 0));
	ASSERT_EQ(0, rv_open(&rv2, 0));
	EXPECT_EQ(-ENOTCONN, rv_slot(rv0));
	EXPECT_EQ(-EINVAL, rv_attach(rv0, NULL));

	/* a failed attach leaves the handle unattached */
	rv_attach_init(&a, idx, 8);
	a.slot_bits = 1;
	a.job_key_len = 0;
	a.size = 1;		/* rv_attach sets it */
	EXPECT_EQ(-EINVAL, rv_attach(rv0, &a));
	EXPECT_EQ(sizeof(a), a.size);
	EXPECT_EQ(-ENOTCONN, rv_slot(rv0));

	a.job_key_len = 8;
	EXPECT_EQ(0, rv_attach(rv0, &a));
	EXPECT_EQ(0, rv_slot(rv0));
	EXPECT_EQ(1, rv_attach(rv1, &a));
	EXPECT_EQ(1, a.slot);
	EXPECT_EQ(1, rv_slot(rv1));

	/* errors come back as return values, slots stay as they were */
	EXPECT_EQ(-EALREADY, rv_attach(rv0, &a));
	EXPECT_EQ(0, rv_slot(rv0));
	EXPECT_EQ(-ENOSPC, rv_attach(rv2, &a));
	EXPECT_EQ(-ENOTCONN, rv_slot(rv2));

	/* rv_close detaches: rv2 gets the freed slot 0 */
	rv_close(rv0);
	EXPECT_EQ(0, rv_attach(rv2, &a));
	EXPECT_EQ(0, rv_slot(rv2));

	rv_close(rv1);
	rv_close(rv2);
}

TEST_HARNESS_MAIN
