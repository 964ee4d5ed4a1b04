// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv_storm_test - a storm of remote-access registrations that each evict
 * a large one, for a device removal to land in (vm/storm.sh).
 *
 *   rv_storm_test [-t THREADS] [-m MIB] [-s SECONDS]
 *
 * Each thread attaches its own file with an MR cache of MIB MiB and
 * registers, for remote write, two buffers of that size in turn, dropping
 * each reference at once: every registration evicts the other buffer's,
 * so REG_MEM spends most of its time unpinning a victim after it left the
 * device's read section, the window in which a removal used to clear the
 * device's ib_device under it (issue 39, item 1).  The main thread prints
 * "storming" once every thread has made two registrations, then waits for
 * the threads: each must end with ENODEV (the removal vm/storm.sh makes),
 * and a second call right after must say ENODEV too.  A thread still
 * registering after SECONDS fails the run ("no removal").
 *
 * Prints kselftest TAP results; exit status 0 when all passed, 4
 * (kselftest skip) without a device.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rv_test_util.h"

#define MAX_THREADS	8
#define MAX_KEYS	1024

struct stormer {
	pthread_t tid;
	int id;
	struct rv *rv;
	char *buf[2];
	atomic_uint regs;
	struct rv_mr_stats early;	/* after 4 registrations */
	int early_ret;
	int end;		/* the errno the storm ended with */
	int again;		/* the next call's */
};

static unsigned int nthreads = 2, mib = 32, seconds = 120;
static atomic_bool stop;

/* Returns 0, or the exit status to leave with (4: no device). */
static int attach(struct stormer *s)
{
	struct rv_attach a;
	int idx, gid, ret;

	ret = rv_test_open(&s->rv, &idx, &gid);
	if (ret)
		return ret;
	rv_attach_init(&a, idx, strlen("storm"));
	memcpy(a.job_key, "storm", strlen("storm"));
	a.gid_index = gid;
	a.mr_cache_bytes = (uint64_t)mib << 20;
	ret = rv_attach(s->rv, &a);
	if (ret < 0) {
		rv_out("attach: %s", strerror(-ret));
		return ret == -ENODEV ? 4 : 1;
	}
	return 0;
}

static int reg_drop(struct stormer *s, char *buf)
{
	static __thread uint32_t rkeys[MAX_KEYS];
	size_t len = (size_t)mib << 20;
	int h, ret;

	h = rv_reg_mem_keys(s->rv, buf, len, RV_ACCESS_REMOTE_WRITE, NULL,
			    rkeys, MAX_KEYS);
	if (h < 0)
		return h;
	ret = rv_dereg_mem(s->rv, h);
	return ret < 0 ? ret : 0;
}

static void *storm(void *arg)
{
	struct stormer *s = arg;
	int ret = 0, i;

	for (i = 0; !atomic_load(&stop); i ^= 1) {
		ret = reg_drop(s, s->buf[i]);
		if (ret)
			break;
		if (atomic_fetch_add(&s->regs, 1) + 1 == 4)
			s->early_ret = rv_mr_stats(s->rv, &s->early);
	}
	s->end = ret;
	s->again = ret ? reg_drop(s, s->buf[i ^ 1]) : 0;
	return NULL;
}

static bool all_storming(struct stormer *st)
{
	unsigned int i;

	for (i = 0; i < nthreads; i++)
		if (atomic_load(&st[i].regs) < 2 && !st[i].end)
			return false;
	return true;
}

int main(int argc, char **argv)
{
	struct stormer st[MAX_THREADS] = { 0 };
	size_t len;
	unsigned int i, b;
	uint64_t t0, limit;
	int c, ret;

	while ((c = getopt(argc, argv, "t:m:s:")) != -1) {
		switch (c) {
		case 't': nthreads = atoi(optarg); break;
		case 'm': mib = atoi(optarg); break;
		case 's': seconds = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-t THREADS] [-m MIB] [-s SECONDS]\n",
				argv[0]);
			return 2;
		}
	}
	if (!nthreads || nthreads > MAX_THREADS || !mib || mib > 1024)
		return 2;
	len = (size_t)mib << 20;
	setvbuf(stdout, NULL, _IOLBF, 0);

	for (i = 0; i < nthreads; i++) {
		st[i].id = i;
		ret = attach(&st[i]);
		if (ret)
			return ret;
		for (b = 0; b < 2; b++) {
			st[i].buf[b] = mmap(NULL, len, PROT_READ | PROT_WRITE,
					    MAP_PRIVATE | MAP_ANONYMOUS |
					    MAP_POPULATE, -1, 0);
			if (st[i].buf[b] == MAP_FAILED) {
				rv_out("mmap %zu bytes: %s", len,
				       strerror(errno));
				return 1;
			}
		}
	}
	for (i = 0; i < nthreads; i++)
		pthread_create(&st[i].tid, NULL, storm, &st[i]);

	t0 = rv_now_ms();
	limit = seconds * 1000ULL;
	while (!all_storming(st) && rv_now_ms() - t0 < limit)
		usleep(10000);
	rv_out("storming");
	while (rv_now_ms() - t0 < limit) {
		for (i = 0; i < nthreads && st[i].end; i++)
			;
		if (i == nthreads)
			break;
		usleep(10000);
	}
	atomic_store(&stop, true);
	for (i = 0; i < nthreads; i++)
		pthread_join(st[i].tid, NULL);

	for (i = 0; i < nthreads; i++) {
		char name[32];

		/* Each registration a miss that evicts the other buffer's. */
		snprintf(name, sizeof(name), "thread%u-evicting", i);
		rv_check(atomic_load(&st[i].regs) >= 4 && !st[i].early_ret &&
		      st[i].early.misses == 4 && st[i].early.evict_pressure == 3,
		      name, "after %u registrations: %s, %llu misses, %llu evicted",
		      atomic_load(&st[i].regs), strerror(-st[i].early_ret),
		      (unsigned long long)st[i].early.misses,
		      (unsigned long long)st[i].early.evict_pressure);
		snprintf(name, sizeof(name), "thread%u-enodev", i);
		rv_check(st[i].end == -ENODEV && st[i].again == -ENODEV, name,
		      "%u registrations of %u MiB, then %s, then %s",
		      atomic_load(&st[i].regs), mib,
		      st[i].end ? strerror(-st[i].end) : "no removal",
		      st[i].again ? strerror(-st[i].again) : "success");
		rv_out("thread %u: %u registrations of %u MiB before the removal",
		       i, atomic_load(&st[i].regs), mib);
		rv_close(st[i].rv);
	}
	return rv_check_failures() ? 1 : 0;
}
