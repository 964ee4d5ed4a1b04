// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The event ring: mapped at attach, consumed without system calls.
 *
 * The kernel publishes events with a release store of the producer index;
 * the consumer loads it with acquire, copies the events out and gives the
 * slots back by advancing the consumer index with a compare-and-swap, so
 * that threads polling the same struct rv each get distinct events.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>

#include <rv/librv.h>
#include "librv_internal.h"

int rv_ring_map_attached(struct rv *rv, uint32_t entries)
{
	size_t len = RV_RING_MMAP_SIZE(entries);
	void *base;

	base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, rv->fd, 0);
	if (base == MAP_FAILED)
		return -errno;
	rv->ring.base = base;
	rv->ring.len = len;
	rv->ring.hdr = base;
	rv->ring.consumer = (uint32_t *)((char *)base +
					 RV_RING_CONSUMER_OFFSET);
	rv->ring.events = (const struct rv_event *)((char *)base +
						    RV_RING_EVENTS_OFFSET);
	rv->ring.mask = entries - 1;
	return 0;
}

void rv_ring_unmap(struct rv *rv)
{
	if (rv->ring.base)
		munmap(rv->ring.base, rv->ring.len);
	memset(&rv->ring, 0, sizeof(rv->ring));
}

int rv_poll_events(struct rv *rv, struct rv_event *events, unsigned int max)
{
	const struct rv_ring_map *r = &rv->ring;
	uint32_t prod, cons, n, i;

	if (!r->base)
		return -ENOTCONN;
	if (!events && max)
		return -EINVAL;
	cons = __atomic_load_n(r->consumer, __ATOMIC_ACQUIRE);
	do {
		prod = __atomic_load_n(&r->hdr->producer, __ATOMIC_ACQUIRE);
		n = prod - cons;
		if (n > max)
			n = max;
		/* max is an int's worth at most: the count fits the return. */
		if (n > INT32_MAX)
			n = INT32_MAX;
		if (!n)
			return 0;
		/*
		 * Copy first, claim after: the kernel reuses a slot only once
		 * the consumer index has passed it, so the copy is intact if
		 * the index still reads @cons.  When another thread claimed
		 * first, the CAS fails, reloads @cons and this copy is dropped.
		 */
		for (i = 0; i < n; i++)
			events[i] = r->events[(cons + i) & r->mask];
	} while (!__atomic_compare_exchange_n(r->consumer, &cons, cons + n,
					      false, __ATOMIC_RELEASE,
					      __ATOMIC_ACQUIRE));
	return (int)n;
}

int rv_wait_events(struct rv *rv, int timeout_ms)
{
	struct pollfd pfd = { .fd = rv->fd, .events = POLLIN };
	int ret;

	if (!rv->ring.base)
		return -ENOTCONN;
	ret = poll(&pfd, 1, timeout_ms);
	if (ret < 0)
		return -errno;
	if (ret && (pfd.revents & (POLLERR | POLLNVAL)))
		return -EIO;
	return ret;
}

uint64_t rv_ring_overflows(const struct rv *rv)
{
	if (!rv->ring.base)
		return 0;
	return __atomic_load_n(&rv->ring.hdr->overflows, __ATOMIC_RELAXED);
}
