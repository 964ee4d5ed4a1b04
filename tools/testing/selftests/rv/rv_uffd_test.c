// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv_uffd_test - rv calls that wait on user space must not hold up the
 * device for anyone else (vm/uffd.sh drives it).
 *
 *   rv_uffd_test hold     attaches two files, then blocks a thread of each
 *                         in rv on memory a userfaultfd serves and never
 *                         fills: one in REG_MEM of a remote-access buffer
 *                         whose rkeys array is there (rv writes the keys
 *                         to it), one in POST_WRITES whose array of
 *                         writes is there.  Prints "blocked" once both
 *                         are (and still are 1 s later), then waits for
 *                         SIGUSR1 or SIGTERM, closes the userfaultfd (the
 *                         faults fail, the calls return), prints each
 *                         call's result and exits 0 if both returned.
 *   rv_uffd_test probe    another process's calls: open, ATTACH, REG_MEM
 *                         of an ordinary buffer, MR_STATS, close; prints
 *                         "probe ok" or "probe ENODEV" (the device is
 *                         gone: its calls must say so at once), exit 0.
 *   rv_uffd_test probe-later
 *                         the same, but attaches first, prints "attached"
 *                         and makes its calls on SIGUSR1.
 *
 * Exit status 4 (kselftest skip) without a device or userfaultfd.
 *
 * (The registered buffer itself is ordinary memory: on Linux 6.1 a
 * long-term pin does not wait for a userfaultfd, it fails with EFAULT.)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rv_test_util.h"

#define REGION	(64 * 1024)

static struct rv *rv, *rv2;
static char *region;		/* two halves, both served by the uffd */
static volatile int reg_ret = 1, post_ret = 1;	/* 1: still inside */

static int attach(struct rv **rvp, const char *key)
{
	struct rv_attach a;
	int idx, gid, ret;

	idx = rv_device_index(rv_test_ibdev());
	gid = rv_ipv4_gid(rv_test_ibdev(), RV_TEST_PORT, -1, NULL);
	if (idx < 0 || gid < 0)
		return -ENODEV;
	ret = rv_open(rvp, 0);
	if (ret)
		return ret;
	rv_attach_init(&a, idx, strlen(key));
	memcpy(a.job_key, key, strlen(key));
	a.gid_index = gid;
	ret = rv_attach(*rvp, &a);
	return ret < 0 ? ret : 0;	/* else the slot */
}

static void *reg_thread(void *arg)
{
	static char buf[8192] __attribute__((aligned(4096)));

	/* rv writes the buffer's key into the unfilled half: it faults. */
	reg_ret = rv_reg_mem_keys(rv, buf, sizeof(buf),
				  RV_ACCESS_REMOTE_WRITE, NULL,
				  (uint32_t *)region, 1);
	return NULL;
}

static void *post_thread(void *arg)
{
	/* The array itself is in the unfilled half: the copy faults. */
	post_ret = rv_post_writes(rv2,
				  (struct rv_write *)(region + REGION / 2), 4);
	return NULL;
}

static int uffd_open(void)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = {
		.range = { .start = (unsigned long)region, .len = REGION },
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};
	int fd = syscall(__NR_userfaultfd, O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (ioctl(fd, UFFDIO_API, &api) || ioctl(fd, UFFDIO_REGISTER, &reg)) {
		close(fd);
		return -errno;
	}
	return fd;
}

static int hold(void)
{
	pthread_t reg, post;
	sigset_t set;
	int uffd, ret, sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);

	ret = attach(&rv, "uffdhold");
	if (!ret)
		ret = attach(&rv2, "uffdhold");
	if (ret) {
		fprintf(stderr, "attach: %s\n", strerror(-ret));
		return ret == -ENODEV || ret == -ENOENT ? 4 : 1;
	}
	region = mmap(NULL, REGION, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (region == MAP_FAILED)
		return 1;
	uffd = uffd_open();
	if (uffd < 0) {
		fprintf(stderr, "userfaultfd: %s\n", strerror(-uffd));
		return 4;
	}
	pthread_create(&reg, NULL, reg_thread, NULL);
	pthread_create(&post, NULL, post_thread, NULL);
	sleep(1);
	if (reg_ret != 1 || post_ret != 1) {
		printf("not blocked: REG_MEM %d POST_WRITES %d\n", reg_ret,
		       post_ret);
		return 1;
	}
	printf("blocked\n");
	fflush(stdout);
	sigwait(&set, &sig);
	/* Closing the uffd fails the faults: the calls come back. */
	close(uffd);
	pthread_join(reg, NULL);
	pthread_join(post, NULL);
	printf("released: REG_MEM %d (%s) POST_WRITES %d (%s)\n", reg_ret,
	       strerror(reg_ret < 0 ? -reg_ret : 0), post_ret,
	       strerror(post_ret < 0 ? -post_ret : 0));
	rv_close(rv);
	rv_close(rv2);
	return 0;
}

static int probe(bool later)
{
	static char buf[8192] __attribute__((aligned(4096)));
	struct rv_mr_stats s;
	sigset_t set;
	int ret, h, sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	ret = attach(&rv, later ? "uffdlater" : "uffdprobe");
	if (!ret && later) {
		printf("attached\n");
		fflush(stdout);
		sigwait(&set, &sig);
	}
	if (ret == -ENODEV) {
		printf("probe ENODEV\n");
		return 0;
	}
	if (ret) {
		fprintf(stderr, "attach: %s\n", strerror(-ret));
		return 1;
	}
	h = rv_reg_mem(rv, buf, sizeof(buf), RV_ACCESS_LOCAL_WRITE, NULL);
	ret = h < 0 ? h : rv_mr_stats(rv, &s);
	rv_close(rv);
	if (ret == -ENODEV) {
		printf("probe ENODEV\n");
		return 0;
	}
	if (ret < 0) {
		fprintf(stderr, "probe: %s\n", strerror(-ret));
		return 1;
	}
	printf("probe ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "hold"))
		return hold();
	if (argc == 2 && !strcmp(argv[1], "probe"))
		return probe(false);
	if (argc == 2 && !strcmp(argv[1], "probe-later"))
		return probe(true);
	fprintf(stderr, "usage: rv_uffd_test hold|probe|probe-later\n");
	return 2;
}
