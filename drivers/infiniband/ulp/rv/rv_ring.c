// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The event ring: completions for one process, in memory it maps, read
 * without a system call.
 *
 * The producer index lives in the kernel (the header's copy is for user
 * space to read); the consumer index is the only thing read back from the
 * mapping and is checked before use, so whatever a process writes into its
 * ring can only hurt that process's own events.
 */
#include "rv.h"

#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/vmalloc.h>

/**
 * rv_ring_alloc - allocate a ring and charge it to @mm's RLIMIT_MEMLOCK
 *	budget, the one the MR cache's pins use too (rv_pin_charge())
 * @entries: a power of two, already validated by ATTACH
 * @mm: the attaching process (current->mm); the caller keeps it alive
 *	(mmgrab) until rv_ring_free()
 *
 * Return: the ring, ERR_PTR(-ENOMEM) when out of memory or over
 * RLIMIT_MEMLOCK.
 */
struct rv_ring *rv_ring_alloc(u32 entries, struct mm_struct *mm)
{
	struct rv_ring *ring;
	int ret;

	ring = kzalloc(sizeof(*ring), GFP_KERNEL_ACCOUNT);
	if (!ring)
		return ERR_PTR(-ENOMEM);
	spin_lock_init(&ring->lock);
	init_waitqueue_head(&ring->wait);
	ring->entries = entries;
	ring->size = RV_RING_MMAP_SIZE(entries);
	ring->charged_pages = PAGE_ALIGN(ring->size) >> PAGE_SHIFT;

	ret = rv_pin_charge(mm, ring->charged_pages);
	if (ret)
		goto out_free_ring;
	ring->mm = mm;

	/*
	 * Zeroed and page-aligned.  The size is the caller's choice (up to
	 * 32 MiB): a failure is an errno for it, not a warning in the log,
	 * and over its memory cgroup's limit not a reason for the OOM
	 * killer (__GFP_RETRY_MAYFAIL).
	 */
	ring->area = __vmalloc(ring->size,
			       GFP_KERNEL_ACCOUNT | __GFP_ZERO | __GFP_NOWARN |
			       __GFP_RETRY_MAYFAIL);
	if (!ring->area) {
		ret = -ENOMEM;
		goto out_uncharge;
	}
	ring->hdr = ring->area;
	ring->consumer = ring->area + RV_RING_CONSUMER_OFFSET;
	ring->events = ring->area + RV_RING_EVENTS_OFFSET;
	ring->hdr->entries = entries;
	ring->hdr->entry_size = sizeof(struct rv_event);
	ring->hdr->events_offset = RV_RING_EVENTS_OFFSET;
	return ring;

out_uncharge:
	rv_pin_uncharge(mm, ring->charged_pages);
out_free_ring:
	kfree(ring);
	return ERR_PTR(ret);
}

/* Once no mapping is left: the file is being released. */
void rv_ring_free(struct rv_ring *ring)
{
	if (!ring)
		return;
	/* The mm is still allocated: the file's mmgrab(), or ATTACH's caller. */
	rv_pin_uncharge(ring->mm, ring->charged_pages);
	vfree(ring->area);
	kfree(ring);
}

/*
 * Events the ring holds per the consumer index user space wrote, or
 * more than @entries if that index cannot be right.  Caller holds
 * ring->lock.  The acquire pairs with the consumer's release store: the
 * slots it gave back are no longer being read.
 */
static u32 rv_ring_used(const struct rv_ring *ring)
{
	/* Pairs with the consumer's release store of the index. */
	u32 consumer = smp_load_acquire(ring->consumer);

	return ring->producer - consumer;
}

/**
 * rv_ring_post - deliver one event
 * @ring: the destination
 * @ev: the event
 *
 * Wakes the ring's waiters only for the event that makes the ring
 * non-empty: a reader sleeps only after seeing it empty (rv_ring_poll()),
 * so the first event posted after that wakes it, and the events that
 * follow, while it has not yet consumed the first one, find it awake.
 * Lost wakeups are ruled out by two store-then-load pairs, each with a
 * full barrier on both sides: the poster stores the producer index and
 * then reads the consumer index and the wait queue, the reader stores the
 * consumer index (release, in user space, before it calls poll) and its
 * wait queue entry, and then reads the producer index.  Either the
 * reader sees the new event, or the poster sees the ring holding only
 * this event and the reader queued.  A consumer index the process
 * scribbled over only costs it wakeups of its own.
 *
 * Any context.  Return: false if the ring was full (or its consumer index
 * bogus) and the event was dropped and counted.
 */
bool rv_ring_post(struct rv_ring *ring, const struct rv_event *ev)
{
	unsigned long flags;
	bool wake = false;
	u32 used;

	spin_lock_irqsave(&ring->lock, flags);
	if (rv_ring_used(ring) >= ring->entries) {
		ring->overflows++;
		WRITE_ONCE(ring->hdr->overflows, ring->overflows);
		spin_unlock_irqrestore(&ring->lock, flags);
		return false;
	}
	ring->events[ring->producer & (ring->entries - 1)] = *ev;
	ring->producer++;
	/* The event is visible before the index that publishes it. */
	smp_store_release(&ring->hdr->producer, ring->producer);
	/*
	 * Read the consumer index only after publishing: pairs with the
	 * barrier in rv_ring_poll() between the reader's stores and its read
	 * of the producer index (see above).  Other events still pending
	 * (2..entries) mean the post that made the ring non-empty woke it.
	 */
	smp_mb();
	used = ring->producer - READ_ONCE(*ring->consumer);
	wake = used < 2 || used > ring->entries;
	spin_unlock_irqrestore(&ring->lock, flags);
	/* wq_has_sleeper()'s barrier pairs with the one in rv_ring_poll(). */
	if (wake && wq_has_sleeper(&ring->wait))
		wake_up_interruptible(&ring->wait);
	return true;
}

int rv_ring_mmap(struct rv_ring *ring, struct vm_area_struct *vma)
{
	unsigned long off;
	int ret;

	if (vma->vm_pgoff ||
	    vma_pages(vma) != PAGE_ALIGN(ring->size) >> PAGE_SHIFT ||
	    !(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	/* Not inherited by fork: the child is not the ring's process. */
	vm_flags_set(vma, VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP);
	for (off = 0; off < vma->vm_end - vma->vm_start; off += PAGE_SIZE) {
		ret = vm_insert_page(vma, vma->vm_start + off,
				     vmalloc_to_page(ring->area + off));
		if (ret)
			return ret;
	}
	return 0;
}

__poll_t rv_ring_poll(struct rv_ring *ring, struct file *filp,
		      poll_table *wait)
{
	u32 consumer;

	poll_wait(filp, &ring->wait, wait);
	/*
	 * Queued, and the consumer index stored, before the producer is
	 * read, or a post in between would see no sleeper (or other events
	 * pending) while this sees no event, and poll() would sleep with an
	 * event pending.  Pairs with the barriers in rv_ring_post().
	 */
	smp_mb();
	consumer = READ_ONCE(*ring->consumer);
	return READ_ONCE(ring->producer) != consumer ?
	       EPOLLIN | EPOLLRDNORM : 0;
}
