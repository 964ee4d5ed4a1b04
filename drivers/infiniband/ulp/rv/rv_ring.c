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

	ring->area = rv_shared_area_alloc(ring->size);
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
 * Any context.  Return: false if the ring was full (or its consumer index
 * bogus) and the event was dropped and counted.
 */
bool rv_ring_post(struct rv_ring *ring, const struct rv_event *ev)
{
	unsigned long flags;
	bool posted = false;

	spin_lock_irqsave(&ring->lock, flags);
	if (rv_ring_used(ring) >= ring->entries) {
		ring->overflows++;
		WRITE_ONCE(ring->hdr->overflows, ring->overflows);
		goto out_unlock;
	}
	ring->events[ring->producer & (ring->entries - 1)] = *ev;
	ring->producer++;
	/* The event is visible before the index that publishes it. */
	smp_store_release(&ring->hdr->producer, ring->producer);
	posted = true;
out_unlock:
	spin_unlock_irqrestore(&ring->lock, flags);
	/* wq_has_sleeper()'s barrier pairs with the one in rv_ring_poll(). */
	if (posted && wq_has_sleeper(&ring->wait))
		wake_up_interruptible(&ring->wait);
	return posted;
}

/*
 * Memory the kernel shares with one process through mmap (the ring, the
 * MR table): zeroed and page-aligned.  Its size is the caller's choice:
 * a failure is an errno for it, not a warning in the log, and over its
 * memory cgroup's limit not a reason for the OOM killer
 * (__GFP_RETRY_MAYFAIL).
 */
void *rv_shared_area_alloc(size_t size)
{
	return __vmalloc(size, GFP_KERNEL_ACCOUNT | __GFP_ZERO | __GFP_NOWARN |
			 __GFP_RETRY_MAYFAIL);
}

/**
 * rv_shared_area_mmap - map all of an rv_shared_area_alloc() area
 * @vma: the mapping, of exactly @size bytes (else -EINVAL)
 * @area: the area
 * @size: its bytes, page aligned
 *
 * Not inherited by fork: the child is not the area's process.
 */
int rv_shared_area_mmap(struct vm_area_struct *vma, void *area, size_t size)
{
	unsigned long off;
	int ret;

	if (vma_pages(vma) != size >> PAGE_SHIFT)
		return -EINVAL;
	vm_flags_set(vma, VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP);
	for (off = 0; off < size; off += PAGE_SIZE) {
		ret = vm_insert_page(vma, vma->vm_start + off,
				     vmalloc_to_page(area + off));
		if (ret)
			return ret;
	}
	return 0;
}

int rv_ring_mmap(struct rv_ring *ring, struct vm_area_struct *vma)
{
	if (vma->vm_pgoff || !(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	return rv_shared_area_mmap(vma, ring->area, PAGE_ALIGN(ring->size));
}

__poll_t rv_ring_poll(struct rv_ring *ring, struct file *filp,
		      poll_table *wait)
{
	u32 consumer;

	poll_wait(filp, &ring->wait, wait);
	/*
	 * Queued before the producer is read, or a post in between would
	 * see no sleeper while this sees no event, and poll() would sleep
	 * with an event pending.  Pairs with wq_has_sleeper() in
	 * rv_ring_post().
	 */
	smp_mb();
	consumer = READ_ONCE(*ring->consumer);
	return READ_ONCE(ring->producer) != consumer ?
	       EPOLLIN | EPOLLRDNORM : 0;
}
