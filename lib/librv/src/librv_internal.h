/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the library's sources share; not installed. */
#ifndef LIBRV_INTERNAL_H
#define LIBRV_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/rv_user_ioctls.h>

struct rv_mr_table;

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
	/* The MR table's mapping (mr_table.c), NULL without one. */
	struct rv_mr_table *mr_table;
};

int rv_ring_map_attached(struct rv *rv, uint32_t entries);
void rv_ring_unmap(struct rv *rv);

int rv_mr_table_map_attached(struct rv *rv, uint32_t entries);
void rv_mr_table_unmap(struct rv *rv);
bool rv_mr_table_active(const struct rv *rv);
/* A hit's handle (a hold taken, @out filled), or 0: ask the kernel. */
int rv_mr_table_lookup(struct rv *rv, uint64_t addr, uint64_t length,
		       unsigned int access, struct rv_reg_mem *out,
		       uint32_t *rkeys, uint32_t nr_rkeys);
/* Record REG_MEM's answer: a hold, when @cmd->table_gen says so. */
void rv_mr_table_learn(struct rv *rv, const struct rv_reg_mem *cmd,
		       unsigned int access);
/* Drop a hold of @handle: the holds left, or -ENOENT (none: ask the
 * kernel). */
int rv_mr_table_release(struct rv *rv, unsigned int handle);

int rv_ioctl(const struct rv *rv, unsigned long cmd, void *arg);

#endif /* LIBRV_INTERNAL_H */
