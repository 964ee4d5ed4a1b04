// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * librv's ring consumer against a producer that behaves as rv's does,
 * on the build host: the ring lives in a memfd that librv maps exactly as
 * it maps /dev/rv's (rv_ring_map_attached()), and a thread plays the
 * kernel.  Several threads then call rv_poll_events() on one struct rv at
 * once: every event must reach exactly one of them, in runs of
 * consecutive events, and the consumer index must never move back.
 *
 * The VM's poll group runs the same on a real ring, but a race there needs
 * two vCPUs inside a few instructions at once; here a quarter of a million
 * events on the host's own cores find it within a second.  Needs neither /dev/rv nor
 * an RDMA device.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include <rv/librv.h>
#include "../../../../lib/librv/src/librv_internal.h"

#define ENTRIES		64	/* small: the producer laps the ring often */
#define EVENTS		(1u << 18)
#define MAX_THREADS	4
#define TIME_LIMIT_S	25	/* under the harness's 30 s */

struct ring_run {
	struct rv rv;
	void *kernel_map;		/* the producer's own mapping */
	uint8_t *seen;			/* per event: how many consumers got it */
	uint32_t consumed;		/* events taken, all consumers */
	uint32_t dups;
	uint32_t gaps;			/* a batch that was not consecutive */
	uint32_t backwards;		/* the consumer index moved back */
	time_t deadline;
	unsigned int batch;
	int timed_out;
};

static uint32_t load_acquire(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/* What rv_ring_post() does in the kernel: never overwrite an unconsumed slot. */
static void *producer(void *arg)
{
	struct ring_run *r = arg;
	struct rv_ring_header *hdr = r->kernel_map;
	uint32_t *consumer = (uint32_t *)((char *)r->kernel_map +
					  RV_RING_CONSUMER_OFFSET);
	struct rv_event *events = (struct rv_event *)((char *)r->kernel_map +
						      RV_RING_EVENTS_OFFSET);
	uint32_t prod = 0, last_cons = 0, cons;

	while (prod < EVENTS) {
		cons = load_acquire(consumer);
		if ((int32_t)(cons - last_cons) < 0)
			__atomic_add_fetch(&r->backwards, 1, __ATOMIC_RELAXED);
		last_cons = cons;
		if (prod - cons >= ENTRIES) {
			if (time(NULL) > r->deadline ||
			    __atomic_load_n(&r->dups, __ATOMIC_RELAXED)) {
				r->timed_out = time(NULL) > r->deadline;
				break;
			}
			sched_yield();
			continue;
		}
		events[prod & (ENTRIES - 1)] = (struct rv_event){
			.kind = RV_EVENT_RECV, .imm = prod, .wr_id = prod,
		};
		__atomic_store_n(&hdr->producer, ++prod, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	struct ring_run *r = arg;
	struct rv_event ev[16];
	int n, i;

	while (__atomic_load_n(&r->consumed, __ATOMIC_RELAXED) < EVENTS &&
	       !__atomic_load_n(&r->dups, __ATOMIC_RELAXED)) {
		if (time(NULL) > r->deadline) {
			r->timed_out = 1;
			break;
		}
		n = rv_poll_events(&r->rv, ev, r->batch);
		if (n <= 0) {
			/* The host may have fewer free cores than threads. */
			sched_yield();
			continue;
		}
		for (i = 0; i < n; i++) {
			if (ev[i].imm >= EVENTS ||
			    __atomic_fetch_add(&r->seen[ev[i].imm], 1,
					       __ATOMIC_RELAXED))
				__atomic_add_fetch(&r->dups, 1,
						   __ATOMIC_RELAXED);
			if (i && ev[i].imm != ev[i - 1].imm + 1)
				__atomic_add_fetch(&r->gaps, 1,
						   __ATOMIC_RELAXED);
		}
		__atomic_add_fetch(&r->consumed, (uint32_t)n,
				   __ATOMIC_RELAXED);
	}
	return NULL;
}

FIXTURE(ring)
{
	struct ring_run r;
	size_t len;
};

FIXTURE_SETUP(ring)
{
	struct rv_ring_header *hdr;

	memset(&self->r, 0, sizeof(self->r));
	self->len = RV_RING_MMAP_SIZE(ENTRIES);
	self->r.rv.fd = memfd_create("rv-ring", MFD_CLOEXEC);
	self->r.rv.slot = -1;
	ASSERT_LE(0, self->r.rv.fd);
	ASSERT_EQ(0, ftruncate(self->r.rv.fd, (off_t)self->len));
	self->r.kernel_map = mmap(NULL, self->len, PROT_READ | PROT_WRITE,
				  MAP_SHARED, self->r.rv.fd, 0);
	ASSERT_NE(MAP_FAILED, self->r.kernel_map);
	hdr = self->r.kernel_map;
	hdr->entries = ENTRIES;
	hdr->entry_size = sizeof(struct rv_event);
	hdr->events_offset = RV_RING_EVENTS_OFFSET;
	ASSERT_EQ(0, rv_ring_map_attached(&self->r.rv, ENTRIES));
	self->r.seen = calloc(EVENTS, 1);
	ASSERT_NE(NULL, self->r.seen);
	self->r.deadline = time(NULL) + TIME_LIMIT_S;
}

FIXTURE_TEARDOWN(ring)
{
	rv_ring_unmap(&self->r.rv);
	if (self->r.kernel_map && self->r.kernel_map != MAP_FAILED)
		munmap(self->r.kernel_map, self->len);
	if (self->r.rv.fd >= 0)
		close(self->r.rv.fd);
	free(self->r.seen);
}

FIXTURE_VARIANT(ring)
{
	unsigned int consumers;
	unsigned int batch;
};

FIXTURE_VARIANT_ADD(ring, one_consumer)
{
	.consumers = 1, .batch = 16,
};

FIXTURE_VARIANT_ADD(ring, two_consumers)
{
	.consumers = 2, .batch = 16,
};

FIXTURE_VARIANT_ADD(ring, two_consumers_one_each)
{
	.consumers = 2, .batch = 1,
};

FIXTURE_VARIANT_ADD(ring, four_consumers)
{
	.consumers = 4, .batch = 4,
};

TEST_F(ring, each_event_once)
{
	pthread_t prod, cons[MAX_THREADS];
	uint32_t i, missing = 0;
	unsigned int t;

	self->r.batch = variant->batch;
	ASSERT_EQ(0, pthread_create(&prod, NULL, producer, &self->r));
	for (t = 0; t < variant->consumers; t++)
		ASSERT_EQ(0, pthread_create(&cons[t], NULL, consumer,
					    &self->r));
	for (t = 0; t < variant->consumers; t++)
		pthread_join(cons[t], NULL);
	pthread_join(prod, NULL);

	for (i = 0; i < EVENTS; i++)
		missing += !self->r.seen[i];
	TH_LOG("%u consumers, up to %u per call: %u events taken, %u twice, %u missing, %u runs not consecutive, index moved back %u times",
	       variant->consumers, variant->batch, self->r.consumed,
	       self->r.dups, missing, self->r.gaps, self->r.backwards);
	EXPECT_EQ(0, self->r.timed_out);
	EXPECT_EQ(0, self->r.dups);
	EXPECT_EQ(0, missing);
	EXPECT_EQ(0, self->r.gaps);
	EXPECT_EQ(0, self->r.backwards);
	EXPECT_EQ(EVENTS, self->r.consumed);
	/* Every slot handed back: the index is where the producer's is. */
	EXPECT_EQ(EVENTS, load_acquire(self->r.rv.ring.consumer));
}

TEST_HARNESS_MAIN
