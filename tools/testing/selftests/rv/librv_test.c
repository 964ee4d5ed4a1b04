// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * librv API tests.  Linked against the shared librv (rpath into the tree),
 * so they also prove the exported symbol set.  The argument-checking tests
 * need neither /dev/rv nor an RDMA device and run on the build host
 * (make run_host), also under valgrind (make valgrind); the rest SKIP
 * there.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <ifaddrs.h>
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

/* /dev/rv and $RV_IBDEV's index in @idx, or SKIP. */
#define NEED_DEV(idx) do {						\
	NEED_RV();							\
	(idx) = rv_device_index(rv_test_ibdev());			\
	if ((idx) < 0)							\
		SKIP(return, "RDMA device %s: %s", rv_test_ibdev(),	\
		     strerror(-(idx)));					\
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

TEST(ipv4_gid_bad_args)
{
	struct in_addr ip = { .s_addr = 0x01020304 };	/* must stay untouched */

	EXPECT_EQ(-EINVAL, rv_ipv4_gid(NULL, 1, -1, &ip));
	EXPECT_EQ(-EINVAL, rv_ipv4_gid("", 1, -1, &ip));
	EXPECT_EQ(-EINVAL, rv_ipv4_gid("../rxe0", 1, -1, &ip));
	EXPECT_EQ(-EINVAL, rv_ipv4_gid("..", 1, -1, &ip));
	EXPECT_EQ(-EINVAL, rv_ipv4_gid(rv_test_ibdev(), 0, -1, &ip));
	EXPECT_EQ(-EINVAL, rv_ipv4_gid(rv_test_ibdev(), 1, -2, &ip));
	EXPECT_EQ(0x01020304U, ip.s_addr);
	EXPECT_EQ(-ENODEV, rv_ipv4_gid("rv_no_such_device", 1, -1, &ip));
	EXPECT_EQ(0x01020304U, ip.s_addr);
}

/* Whether @ip is the address of one of this node's interfaces. */
static bool is_local_ipv4(struct in_addr ip)
{
	struct ifaddrs *ifs, *i;
	bool found = false;

	if (getifaddrs(&ifs))
		return false;
	for (i = ifs; i; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr ==
		    ip.s_addr)
			found = true;
	freeifaddrs(ifs);
	return found;
}

/*
 * $RV_IBDEV's RoCE v2 GID of an IPv4 address is one of the node's own
 * addresses and says "RoCE v2" in sysfs; asking for that entry gives the
 * same answer; entry 0 (RoCE's link-local GID), an entry past the table
 * and a port the device lacks do not.
 */
TEST(ipv4_gid_known)
{
	const char *name = rv_test_ibdev();
	struct in_addr ip = { 0 }, again = { 0 };
	char path[256], type[32] = "";
	int gid;
	FILE *f;

	gid = rv_ipv4_gid(name, 1, -1, &ip);
	if (gid == -ENODEV)
		SKIP(return, "no RDMA device %s", name);
	ASSERT_LE(0, gid) TH_LOG("rv_ipv4_gid(%s): %s", name, strerror(-gid));
	EXPECT_TRUE(is_local_ipv4(ip)) TH_LOG("%s is no local address",
					      inet_ntoa(ip));
	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/1/gid_attrs/types/%d",
		 name, gid);
	f = fopen(path, "r");
	ASSERT_TRUE(f != NULL);
	EXPECT_TRUE(fgets(type, sizeof(type), f) != NULL);
	fclose(f);
	EXPECT_EQ(0, strncmp(type, "RoCE v2\n", 8));

	EXPECT_EQ(gid, rv_ipv4_gid(name, 1, gid, &again));
	EXPECT_EQ(ip.s_addr, again.s_addr);
	EXPECT_EQ(gid, rv_ipv4_gid(name, 1, gid, NULL));
	if (gid != 0)
		EXPECT_EQ(-ENOENT, rv_ipv4_gid(name, 1, 0, &again));
	EXPECT_EQ(-ENOENT, rv_ipv4_gid(name, 1, 100000, &again));
	EXPECT_EQ(-ENODEV, rv_ipv4_gid(name, 2, -1, &again));
	EXPECT_EQ(ip.s_addr, again.s_addr);
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
	struct rv_query q;
	int idx;

	NEED_DEV(idx);

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

	/*
	 * rv_close detaches: the freed slot 0 is in quarantine (EAGAIN, rv2
	 * stays unattached), or rv2 gets it at once without one
	 */
	rv_close(rv0);
	ASSERT_EQ(0, rv_query(rv1, &q));
	if (q.slot_quarantine_ms) {
		EXPECT_EQ(-EAGAIN, rv_attach(rv2, &a));
		EXPECT_EQ(-ENOTCONN, rv_slot(rv2));
	} else {
		EXPECT_EQ(0, rv_attach(rv2, &a));
		EXPECT_EQ(0, rv_slot(rv2));
	}

	rv_close(rv1);
	rv_close(rv2);
}

/* Argument checks that need no kernel, and the calls against an rv. */
TEST(conn_calls)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rv_conn_create c;
	struct rv_conn_query q;
	struct rv_attach a;
	struct rv *rv;
	int idx, gid, h;

	NEED_RV();
	ASSERT_EQ(0, rv_open(&rv, 0));
	EXPECT_EQ(-EINVAL, rv_conn_create(rv, NULL, sizeof(sin), NULL));
	EXPECT_EQ(-EINVAL, rv_conn_create(rv, (struct sockaddr *)&sin,
					  RV_CONN_ADDR_MAX + 1, NULL));
	EXPECT_EQ(-EINVAL, rv_conn_query(rv, 1, NULL));
	EXPECT_EQ(-EINVAL, rv_conn_wait(rv, 1, RV_CONN_TIMEOUT_MAX_MS + 1,
					NULL));
	/* not attached yet */
	sin.sin_addr.s_addr = htonl(0xc0000201);
	EXPECT_EQ(-ENOTCONN, rv_conn_create(rv, (struct sockaddr *)&sin,
					    sizeof(sin), NULL));
	EXPECT_EQ(-ENOTCONN, rv_conn_connect(rv, 1, 0));
	EXPECT_EQ(-ENOTCONN, rv_conn_query(rv, 1, &q));
	EXPECT_EQ(-ENOTCONN, rv_conn_wait(rv, 1, 0, NULL));
	EXPECT_EQ(-ENOTCONN, rv_conn_destroy(rv, 1));

	idx = rv_device_index(rv_test_ibdev());
	gid = rv_ipv4_gid(rv_test_ibdev(), RV_TEST_PORT, -1, NULL);
	if (idx < 0 || gid < 0) {
		rv_close(rv);
		SKIP(return, "RDMA device %s with an IPv4 GID needed",
		     rv_test_ibdev());
	}
	rv_attach_init(&a, idx, 8);
	a.gid_index = gid;
	ASSERT_EQ(0, rv_attach(rv, &a));
	h = rv_conn_create(rv, (struct sockaddr *)&sin, sizeof(sin), &c);
	ASSERT_LT(0, h);
	EXPECT_EQ(h, c.handle);
	EXPECT_EQ(a.num_conn, c.num_conn);
	EXPECT_EQ(0, rv_conn_query(rv, h, &q));
	EXPECT_EQ(RV_CONN_STATE_IDLE, q.state);
	EXPECT_EQ(-ETIMEDOUT, rv_conn_wait(rv, h, 50, &q));
	EXPECT_EQ(0, rv_conn_connect(rv, h, 500));
	EXPECT_EQ(RV_CONN_STATE_ERROR, rv_conn_wait(rv, h, 20000, &q));
	EXPECT_EQ(RV_CONN_REASON_UNREACHABLE, q.reason);
	EXPECT_EQ(0, rv_conn_destroy(rv, h));
	EXPECT_EQ(-ENOENT, rv_conn_destroy(rv, h));
	EXPECT_EQ(-ENOENT, rv_conn_connect(rv, h, 0));
	rv_close(rv);
}

/*
 * The immediate helpers are pure arithmetic: every slot_bits, with the
 * boundary slots and user bits.  The expected values are built bit by bit
 * here rather than with the helpers' own shifts, so a wrong shift or mask
 * in librv.h cannot cancel out.
 */
TEST(imm_round_trip)
{
	static const uint32_t users[] = {
		0, 1, 0x5a5a5a5a, 0xa5a5a5a5, 0x7fffffff, 0x80000000,
		0xfffffffe, 0xffffffff,
	};
	unsigned int b, i, j, k;

	for (b = RV_MIN_SLOT_BITS; b <= RV_MAX_SLOT_BITS; b++) {
		uint32_t nslots = 1U << b;
		uint32_t slots[] = { 0, 1, nslots / 2 - (nslots > 2),
				     nslots / 2, nslots - 2, nslots - 1 };
		uint32_t user_mask = 0;

		for (k = 0; k < 32 - b; k++)
			user_mask |= 1U << k;
		for (i = 0; i < ARRAY_SIZE(slots); i++) {
			for (j = 0; j < ARRAY_SIZE(users); j++) {
				uint32_t slot = slots[i], user = users[j];
				uint32_t imm = rv_imm(b, slot, user), want = 0;

				for (k = 0; k < 32; k++) {
					uint32_t bit = k < 32 - b ?
						(user >> k) & 1 :
						(slot >> (k - (32 - b))) & 1;

					want |= bit << k;
				}
				ASSERT_EQ(want, imm)
					TH_LOG("slot_bits %u slot %u user 0x%x",
					       b, slot, user);
				ASSERT_EQ(slot, rv_imm_slot(b, imm));
				ASSERT_EQ(user & user_mask,
					  rv_imm_user(b, imm));
			}
		}
		/* The last slot with every user bit set fills all 32. */
		EXPECT_EQ(0xffffffffU, rv_imm(b, nslots - 1, UINT32_MAX));
		/* Documented: a slot past the job's wraps, bits above drop. */
		EXPECT_EQ(rv_imm(b, 1, 7), rv_imm(b, nslots + 1, 7));
		/* User bits never leak into the slot. */
		EXPECT_EQ(0, rv_imm_slot(b, rv_imm(b, 0, UINT32_MAX)));
	}
}

static void write_init(struct rv_write *w, uint32_t conn, uint32_t imm)
{
	memset(w, 0, sizeof(*w));
	w->wr_id = 0x1234;
	w->conn_handle = conn;
	w->imm = imm;
}

/*
 * Before ATTACH: a NULL argument is refused by librv itself (the kernel
 * would have answered ENOTCONN, so -EINVAL here shows no ioctl was made),
 * and everything else gets the kernel's ENOTCONN.
 */
TEST(write_calls_unattached)
{
	struct rv_write w[2];
	struct rv_stats st;
	struct rv *rv;

	NEED_RV();
	ASSERT_EQ(0, rv_open(&rv, 0));
	EXPECT_EQ(-EINVAL, rv_post_write(rv, NULL));
	EXPECT_EQ(-EINVAL, rv_post_writes(rv, NULL, 1));
	EXPECT_EQ(-EINVAL, rv_post_writes(rv, NULL, RV_MAX_POST_WRITES + 1));
	EXPECT_EQ(-EINVAL, rv_stats(rv, NULL));
	/* Nothing to post: 0 without asking the kernel (it says EINVAL). */
	EXPECT_EQ(0, rv_post_writes(rv, NULL, 0));
	EXPECT_EQ(0, rv_post_writes(rv, w, 0));
	EXPECT_EQ(-ENOTCONN, rv_slot_bits(rv));

	write_init(&w[0], 1, 0);
	write_init(&w[1], 1, 0);
	EXPECT_EQ(-ENOTCONN, rv_post_write(rv, &w[0]));
	EXPECT_EQ(-ENOTCONN, rv_post_writes(rv, w, 2));
	memset(&st, 0xff, sizeof(st));
	EXPECT_EQ(-ENOTCONN, rv_stats(rv, &st));
	rv_close(rv);
}

/*
 * rv_uring_*(): bad arguments are librv's EINVAL; on a file not attached
 * the ring opens (its probe needs no ATTACH), a write queued and
 * submitted comes back from rv_uring_reap() as the kernel's ENOTCONN
 * with its wr_id; a full SQ is EAGAIN.
 */
TEST(uring_calls)
{
	struct rv_uring_error e[4];
	struct rv_uring *u = (void *)1;
	struct rv_write w;
	struct rv *rv;
	int i, n = 0;

	NEED_RV();
	ASSERT_EQ(0, rv_open(&rv, 0));
	EXPECT_EQ(-EINVAL, rv_uring_open(NULL, 8, 0, &u));
	EXPECT_EQ(-EINVAL, rv_uring_open(rv, 8, 0, NULL));
	EXPECT_EQ(-EINVAL, rv_uring_open(rv, 0, 0, &u));
	EXPECT_EQ(-EINVAL, rv_uring_open(rv, RV_URING_MAX_ENTRIES + 1, 0, &u));
	EXPECT_EQ(-EINVAL, rv_uring_open(rv, 8, ~RV_URING_SQPOLL, &u));
	EXPECT_EQ(-EINVAL, rv_uring_post_write(NULL, &w));
	EXPECT_EQ(-EINVAL, rv_uring_submit(NULL));
	EXPECT_EQ(-EINVAL, rv_uring_reap(NULL, e, 4));
	EXPECT_EQ(-EINVAL, rv_uring_fd(NULL));
	rv_uring_close(NULL);

	u = NULL;
	ASSERT_EQ(0, rv_uring_open(rv, 8, 0, &u));
	ASSERT_NE(NULL, u);
	EXPECT_LE(0, rv_uring_fd(u));
	EXPECT_EQ(-EINVAL, rv_uring_post_write(u, NULL));
	EXPECT_EQ(-EINVAL, rv_uring_reap(u, NULL, 1));
	EXPECT_EQ(0, rv_uring_reap(u, e, 4));
	write_init(&w, 1, 0);
	w.wr_id = 0x1234;
	EXPECT_EQ(0, rv_uring_post_write(u, &w));
	EXPECT_EQ(1, rv_uring_submit(u));
	/* Completed at issue: the CQE is there once submit returns. */
	for (i = 0; i < 100 && !n; i++) {
		n = rv_uring_reap(u, e, 4);
		if (!n)
			usleep(10000);
	}
	ASSERT_EQ(1, n);
	EXPECT_EQ(0x1234, e[0].wr_id);
	EXPECT_EQ(ENOTCONN, e[0].error);
	/* The SQ fills: EAGAIN without a system call, not an overwrite. */
	for (i = 0; i < 8; i++)
		EXPECT_EQ(0, rv_uring_post_write(u, &w));
	EXPECT_EQ(-EAGAIN, rv_uring_post_write(u, &w));
	rv_uring_close(u);
	rv_close(rv);
}

/* rv_slot_bits() reports what ATTACH settled on, default included. */
TEST(slot_bits)
{
	static const uint32_t want[] = { 0, RV_MIN_SLOT_BITS, 7,
					 RV_MAX_SLOT_BITS };
	struct rv_query q;
	struct rv_attach a;
	struct rv *rv;
	unsigned int i;
	int idx;

	NEED_DEV(idx);
	for (i = 0; i < ARRAY_SIZE(want); i++) {
		ASSERT_EQ(0, rv_open(&rv, 0));
		ASSERT_EQ(0, rv_query(rv, &q));
		rv_attach_init(&a, idx, 8);
		a.slot_bits = want[i];
		ASSERT_LE(0, rv_attach(rv, &a));
		EXPECT_EQ(want[i] ? want[i] : q.default_slot_bits,
			  rv_slot_bits(rv));
		EXPECT_EQ(a.slot_bits, rv_slot_bits(rv));
		rv_close(rv);
	}
}

static void expect_stats_zero(struct __test_metadata *_metadata,
			      const struct rv_stats *st)
{
	EXPECT_EQ(sizeof(*st), st->size);
	EXPECT_EQ(0, st->flags);
	EXPECT_EQ(0, st->writes_posted);
	EXPECT_EQ(0, st->bytes_posted);
	EXPECT_EQ(0, st->writes_completed);
	EXPECT_EQ(0, st->writes_failed);
	EXPECT_EQ(0, st->posts_eagain);
	EXPECT_EQ(0, st->recvs);
	EXPECT_EQ(0, st->bytes_received);
	EXPECT_EQ(0, st->ring_overflows);
	EXPECT_EQ(0, st->inflight);
	EXPECT_EQ(0, st->rsvd);
}

/*
 * After ATTACH, on one node: writes to a connection handle the file does
 * not have, to a connection that was never connected, and batches that
 * fail at their first write post nothing, and the figures stay at 0.  A
 * forked child may read the figures but not post.
 */
TEST(write_calls_attached)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rv_write w[RV_MAX_POST_WRITES + 2];
	struct rv_conn_query cq;
	struct rv_stats st;
	struct rv_attach a;
	struct rv *rv;
	unsigned int i;
	int idx, gid, h, status;
	pid_t pid;

	NEED_RV();
	idx = rv_device_index(rv_test_ibdev());
	gid = rv_ipv4_gid(rv_test_ibdev(), RV_TEST_PORT, -1, NULL);
	if (idx < 0 || gid < 0)
		SKIP(return, "RDMA device %s with an IPv4 GID needed",
		     rv_test_ibdev());
	ASSERT_EQ(0, rv_open(&rv, 0));
	rv_attach_init(&a, idx, 8);
	a.gid_index = gid;
	ASSERT_EQ(0, rv_attach(rv, &a));

	memset(&st, 0xff, sizeof(st));	/* rv_stats sets size and flags */
	ASSERT_EQ(0, rv_stats(rv, &st));
	expect_stats_zero(_metadata, &st);
	EXPECT_EQ(-EINVAL, rv_stats(rv, NULL));
	EXPECT_EQ(-EINVAL, rv_post_write(rv, NULL));
	EXPECT_EQ(0, rv_post_writes(rv, w, 0));

	/* No connection handle 1 (nor any other) on this file yet. */
	for (i = 0; i < ARRAY_SIZE(w); i++)
		write_init(&w[i], 1, rv_imm(a.slot_bits, 0, i));
	EXPECT_EQ(-ENOENT, rv_post_write(rv, &w[0]));
	w[0].conn_handle = 65536;	/* above any handle CONN_CREATE gives */
	EXPECT_EQ(-ENOENT, rv_post_write(rv, &w[0]));
	w[0].conn_handle = 0;
	EXPECT_EQ(-ENOENT, rv_post_write(rv, &w[0]));
	w[0].conn_handle = 1;
	EXPECT_EQ(-ENOENT, rv_post_writes(rv, w, 1));
	/* Longer than one ioctl's worth: the first chunk's error is it. */
	EXPECT_EQ(-ENOENT, rv_post_writes(rv, w, ARRAY_SIZE(w)));

	/* A connection that exists but was never connected: IDLE. */
	sin.sin_addr.s_addr = htonl(0xc0000201);	/* TEST-NET-1 */
	h = rv_conn_create(rv, (struct sockaddr *)&sin, sizeof(sin), NULL);
	ASSERT_LT(0, h);
	for (i = 0; i < ARRAY_SIZE(w); i++)
		w[i].conn_handle = h;
	EXPECT_EQ(-EPIPE, rv_post_write(rv, &w[0]));
	EXPECT_EQ(-EPIPE, rv_post_writes(rv, w, 2));
	/* An immediate-only write names no registration. */
	w[0].mr_handle = 1;
	EXPECT_EQ(-EINVAL, rv_post_write(rv, &w[0]));
	w[0].mr_handle = 0;
	ASSERT_EQ(0, rv_conn_query(rv, h, &cq));
	EXPECT_EQ(0, cq.writes_posted);
	EXPECT_EQ(0, cq.inflight);

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct rv_stats cst;

		/* Reading is allowed to any holder of the file; posting not. */
		_exit(rv_stats(rv, &cst) == 0 &&
		      rv_post_write(rv, &w[0]) == -EPERM &&
		      rv_post_writes(rv, w, 2) == -EPERM ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	/* Nothing above was posted, nor refused for full queues. */
	ASSERT_EQ(0, rv_stats(rv, &st));
	expect_stats_zero(_metadata, &st);

	EXPECT_EQ(0, rv_conn_destroy(rv, h));
	EXPECT_EQ(-ENOENT, rv_post_write(rv, &w[0]));
	rv_close(rv);
}

/*
 * Each name is the constant's own suffix in lower case, so a name that
 * drifts from the uAPI, or a constant without a name, fails here.
 */
static void expect_name(struct __test_metadata *_metadata, const char *got,
			const char *macro)
{
	const char *suffix;
	char want[32];
	size_t i;

	/* the prefix is RV_CONN_STATE_ or RV_CONN_REASON_ */
	suffix = strstr(macro, "STATE_") ? strstr(macro, "STATE_") + 6 :
					   strstr(macro, "REASON_") + 7;
	for (i = 0; suffix[i] && i + 1 < sizeof(want); i++)
		want[i] = (char)tolower((unsigned char)suffix[i]);
	want[i] = 0;
	EXPECT_STREQ(want, got);
}

#define EXPECT_STATE_NAME(v) expect_name(_metadata, rv_conn_state_str(v), #v)
#define EXPECT_REASON_NAME(v) expect_name(_metadata, rv_conn_reason_str(v), #v)

TEST(names)
{
	EXPECT_STATE_NAME(RV_CONN_STATE_IDLE);
	EXPECT_STATE_NAME(RV_CONN_STATE_CONNECTING);
	EXPECT_STATE_NAME(RV_CONN_STATE_CONNECTED);
	EXPECT_STATE_NAME(RV_CONN_STATE_ERROR);
	EXPECT_STREQ("unknown", rv_conn_state_str(RV_CONN_STATE_ERROR + 1));
	EXPECT_STREQ("unknown", rv_conn_state_str(UINT32_MAX));

	EXPECT_REASON_NAME(RV_CONN_REASON_NONE);
	EXPECT_REASON_NAME(RV_CONN_REASON_UNREACHABLE);
	EXPECT_REASON_NAME(RV_CONN_REASON_NO_LISTENER);
	EXPECT_REASON_NAME(RV_CONN_REASON_NO_CONN);
	EXPECT_REASON_NAME(RV_CONN_REASON_BUSY);
	EXPECT_REASON_NAME(RV_CONN_REASON_BAD_REQUEST);
	EXPECT_REASON_NAME(RV_CONN_REASON_MISMATCH);
	EXPECT_REASON_NAME(RV_CONN_REASON_BAD_REPLY);
	EXPECT_REASON_NAME(RV_CONN_REASON_TIMEOUT);
	EXPECT_REASON_NAME(RV_CONN_REASON_DEVICE_REMOVED);
	EXPECT_REASON_NAME(RV_CONN_REASON_DISCONNECTED);
	EXPECT_REASON_NAME(RV_CONN_REASON_NO_RESOURCES);
	EXPECT_REASON_NAME(RV_CONN_REASON_QP_ERROR);
	EXPECT_REASON_NAME(RV_CONN_REASON_AUTH);
	EXPECT_REASON_NAME(RV_CONN_REASON_JOB_ENDED);
	EXPECT_STREQ("unknown",
		     rv_conn_reason_str(RV_CONN_REASON_JOB_ENDED + 1));

	/* struct rv_dump_qp's numbered states */
	EXPECT_STREQ("idle", rv_qp_state_str(0));
	EXPECT_STREQ("connecting", rv_qp_state_str(1));
	EXPECT_STREQ("retrying", rv_qp_state_str(2));
	EXPECT_STREQ("connected", rv_qp_state_str(3));
	EXPECT_STREQ("failed", rv_qp_state_str(4));
	EXPECT_STREQ("unknown", rv_qp_state_str(5));
}

TEST(dump_bad_args)
{
	struct rv_dump_iter *it = (struct rv_dump_iter *)0x1;

	EXPECT_EQ(-EINVAL, rv_dump_open(-1, RV_DUMP_PROCS, NULL));
	EXPECT_EQ(-EINVAL, rv_dump_open(-1, 0, &it));
	EXPECT_EQ(-EINVAL, rv_dump_open(-1, RV_DUMP_DEVICES + 1, &it));
	EXPECT_TRUE(rv_dump_next(NULL) == NULL);
	EXPECT_EQ(0, rv_dump_count(NULL));
	EXPECT_EQ(0, rv_dump_total(NULL));
	EXPECT_EQ(0, rv_dump_record_size(NULL));
	rv_dump_close(NULL);
	if (!have_rv())
		EXPECT_EQ(-ENOENT, rv_dump_open(-1, RV_DUMP_PROCS, &it));
}

/* A job of two files: the snapshot shows both, once, then ends. */
TEST(dump_iter)
{
	struct rv_dump_iter *it;
	const struct rv_dump_proc *p;
	const struct rv_dump_job *j;
	struct rv *rv0, *rv1;
	struct rv_attach a;
	unsigned int mine = 0, slots = 0, jobs = 0;
	int idx;

	NEED_DEV(idx);
	ASSERT_EQ(0, rv_open(&rv0, 0));
	ASSERT_EQ(0, rv_open(&rv1, 0));
	rv_attach_init(&a, idx, 8);
	ASSERT_EQ(0, rv_attach(rv0, &a));
	ASSERT_EQ(1, rv_attach(rv1, &a));

	ASSERT_EQ(0, rv_dump_open(rv_fd(rv0), RV_DUMP_PROCS, &it));
	EXPECT_EQ(rv_dump_total(it), rv_dump_count(it));
	EXPECT_EQ(sizeof(struct rv_dump_proc), rv_dump_record_size(it));
	while ((p = rv_dump_next(it))) {
		if (p->pid != (uint32_t)getpid())
			continue;
		mine++;
		slots |= 1u << p->slot;
	}
	EXPECT_EQ(2, mine);
	EXPECT_EQ(3, slots);
	EXPECT_TRUE(rv_dump_next(it) == NULL);
	rv_dump_close(it);

	/* -1: the library opens /dev/rv read-only for the call */
	ASSERT_EQ(0, rv_dump_open(-1, RV_DUMP_JOBS, &it));
	while ((j = rv_dump_next(it)))
		jobs += j->slots_used == 2 && j->uid == getuid();
	EXPECT_LE(1, jobs);
	rv_dump_close(it);

	ASSERT_EQ(0, rv_dump_open(-1, RV_DUMP_DEVICES, &it));
	EXPECT_LE(1, rv_dump_count(it));
	rv_dump_close(it);

	rv_close(rv0);
	rv_close(rv1);
}

TEST_HARNESS_MAIN
