/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rv: a process's event ring, shared with it through mmap.  Included by
 * rv.h.
 */
#ifndef RV_RING_H
#define RV_RING_H

#include <linux/poll.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <rdma/rv_user_ioctls.h>

struct file;
struct mm_struct;
struct vm_area_struct;

/**
 * struct rv_ring - the kernel's side of an event ring
 * @lock: serialises producers (completion handlers of several CQs may
 *	deliver to one ring at once); taken with interrupts disabled
 * @area: the vmalloc_user() area mapped to user space
 * @hdr: the header at the start of @area
 * @consumer: the consumer index in @area; user space writes it, so it is
 *	only ever read, and checked, never trusted
 * @events: the entries in @area
 * @entries: number of entries, a power of two
 * @producer: the kernel's own producer index; @hdr->producer is a copy
 * @overflows: events dropped; @hdr->overflows is a copy
 * @size: bytes of @area user space maps
 * @charged_pages: pages charged to @mm's pinned_vm (rv_pin_charge())
 * @mm: the process charged (the file's attaching mm, mmgrab()ed by it)
 * @wait: poll() and blocking waits
 *
 * @producer and @overflows are protected by @lock; the rest is constant.
 */
struct rv_ring {
	spinlock_t lock; /* see above */
	void *area;
	struct rv_ring_header *hdr;
	__u32 *consumer;
	struct rv_event *events;
	u32 entries;
	u32 producer;
	u64 overflows;
	size_t size;
	unsigned long charged_pages;
	struct mm_struct *mm;
	wait_queue_head_t wait;
};

struct rv_ring *rv_ring_alloc(u32 entries, struct mm_struct *mm);
void rv_ring_free(struct rv_ring *ring);
bool rv_ring_post(struct rv_ring *ring, const struct rv_event *ev);
int rv_ring_mmap(struct rv_ring *ring, struct vm_area_struct *vma);
void *rv_shared_area_alloc(size_t size);
int rv_shared_area_mmap(struct vm_area_struct *vma, void *area, size_t size);
__poll_t rv_ring_poll(struct rv_ring *ring, struct file *filp,
		      poll_table *wait);

#endif /* RV_RING_H */
