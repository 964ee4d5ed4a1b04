/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the library's sources share; not installed. */
#ifndef LIBRV_INTERNAL_H
#define LIBRV_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <rdma/rv_user_ioctls.h>

/* The event ring as mapped by rv_attach(). */
struct rv_ring_map {
	void *base;			/* NULL before rv_attach() */
	size_t len;
	const struct rv_ring_header *hdr;
	uint32_t *consumer;
	const struct rv_event *events;
	uint32_t mask;
};

struct rv {
	int fd;
	/* Slot from the last successful rv_attach(), -1 before that. */
	int slot;
	/* The job's slot_bits from that rv_attach(), 0 before. */
	unsigned int slot_bits;
	struct rv_ring_map ring;
};

int rv_ring_map_attached(struct rv *rv, uint32_t entries);
void rv_ring_unmap(struct rv *rv);

int rv_ioctl(const struct rv *rv, unsigned long cmd, void *arg);

#endif /* LIBRV_INTERNAL_H */
