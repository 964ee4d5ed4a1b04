// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The per-file MR cache.
 *
 * Middleware registers the same buffers over and over; a hit here costs a
 * tree lookup instead of pinning pages and programming the device.
 *
 * Registration pins the pages (charged to the caller's RLIMIT_MEMLOCK)
 * outside the device's read section, since faulting them in may wait on
 * user space for as long as it likes, then DMA-maps them for the device
 * in it, and keeps each page's DMA address.  A write's source is posted
 * as SGEs over those addresses with the PD's local DMA lkey, which every
 * RC driver supports.  Remote access
 * adds fast-registration MRs over the same addresses (rv_frwr.c), iova
 * == the user address.  One MR maps at most the device's (and the module
 * parameter frwr_max_pages's) page-list limit, so the address space is cut
 * into aligned key chunks of that many pages rounded down to a power of
 * two, and a registration gets one MR, and one rkey, per chunk it touches:
 * a peer finds the key of a remote address by shifting it.  Nothing
 * depends on udata or on a driver's reg_user_mr (which irdma and hns do
 * not support for kernel callers, see Documentation/rv/drivers.rst).
 *
 * A miss is on the critical path of every new buffer, so it allocates
 * once (the entry with its DMA addresses and MR slots) and takes MRs from
 * the file's pool: a freed entry's MRs are invalidated (IB_WR_LOCAL_INV,
 * completed before its pages are unpinned) and kept for the next misses,
 * which map and register them again under a new key byte.
 *
 * Every byte must be mapped with read access (and write access when the
 * device may write), checked before anything is pinned.  ib_umem_get()
 * on 6.1 pinned read-only registrations with FOLL_FORCE, which ignores a
 * VMA's protection; rv's own pins never force, and GUP then refuses the
 * same ranges, later.
 *
 * Lookup: an interval tree of the CACHED entries, O(log n + k) for k
 * entries overlapping the request; the first one that contains the request
 * with exactly the requested remote access and at least the requested
 * local access is a hit.  A registration never grants peers access its
 * caller did not ask for: a send buffer inside a cached receive buffer
 * gets an entry of its own, without rkeys, so two entries of the same
 * range may be cached side by side.  Extra local write grants nothing
 * to anyone but the caller.
 *
 * Coherence: each entry has an mmu_interval_notifier over its range.  When
 * the mapping changes the entry leaves the tree at once, so no later
 * lookup can return it.  An event that only clears page table entries may
 * leave a pinned page where it was (reclaim, a THP split, KSM): the entry
 * stays, suspect, and its next lookup or write compares the pages mapped
 * now with the pinned ones before using it (rv_mr_revalidate()).
 * Deregistration (which may sleep and must not run under mmap_lock) is
 * left to a work item, or to the last user of an entry that was in use.
 * Pinned pages stay pinned, so the device never touches a page the
 * process no longer owns; a new registration of the same address pins
 * whatever is mapped there then.
 */
#include "rv.h"
#include "rv_trace.h"

#include <linux/delay.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#define RV_ACCESS_REMOTE (RV_ACCESS_REMOTE_WRITE | RV_ACCESS_REMOTE_READ)
#define RV_ACCESS_ALL (RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE)

/* Registrations of a range that keeps changing under us give up then. */
#define RV_MR_REG_TRIES 3

static bool rv_mr_in_use(const struct rv_mr_entry *e)
{
	return e->user_refs || e->io_refs;
}

/* The caller holds cache->lock for all the accounting helpers below. */
static void rv_mr_account_use(struct rv_mr_cache *cache,
			      const struct rv_mr_entry *e, bool used)
{
	struct rv_mr_stats *s = &cache->stats;

	if (used) {
		s->in_use_entries++;
		s->in_use_bytes += e->length;
		s->max_in_use_entries = max(s->max_in_use_entries,
					    s->in_use_entries);
		s->max_in_use_bytes = max(s->max_in_use_bytes,
					  s->in_use_bytes);
	} else {
		s->in_use_entries--;
		s->in_use_bytes -= e->length;
	}
}

/*
 * Take @e out of the cache: out of the tree and the LRU, no longer
 * counted, DEAD, and onto @to for freeing.  @e must be unused.
 */
static void rv_mr_kill(struct rv_mr_cache *cache, struct rv_mr_entry *e,
		       struct list_head *to)
{
	if (e->state == RV_MR_CACHED)
		interval_tree_remove(&e->it, &cache->tree);
	rv_mr_table_release(cache->table, e);
	e->state = RV_MR_DEAD;
	cache->stats.entries--;
	cache->stats.bytes -= e->length;
	/* A CACHED entry is on the LRU, a STALE one on no list or @held. */
	list_move_tail(&e->lru, to);
}

/*
 * @e has just lost its last kernel reference: back on the LRU if CACHED;
 * a STALE one waits on @held while user space holds it through the MR
 * table, else moves to @to.  Returns whether it moved to @to.
 */
static bool rv_mr_unused(struct rv_mr_cache *cache, struct rv_mr_entry *e,
			 struct list_head *to)
{
	rv_mr_account_use(cache, e, false);
	if (e->state == RV_MR_CACHED) {
		list_add(&e->lru, &cache->lru);
		return false;
	}
	if (rv_mr_table_held(cache->table, e)) {
		list_add(&e->lru, &cache->held);
		return false;
	}
	rv_mr_kill(cache, e, to);
	return true;
}

/*
 * Move the STALE entries user space no longer holds onto @victims.
 * Caller holds cache->lock.  A hold is dropped without a system call, so
 * the commands that free or count (REG_MEM's miss, DEREG_MEM, EVICT,
 * MR_STATS) look for them.
 */
static void rv_mr_reap_held(struct rv_mr_cache *cache,
			    struct list_head *victims)
{
	struct rv_mr_entry *e, *tmp;

	list_for_each_entry_safe(e, tmp, &cache->held, lru)
		if (!rv_mr_table_held(cache->table, e))
			rv_mr_kill(cache, e, victims);
}

/* Off the LRU (or @held) while the kernel holds a reference. */
static void rv_mr_mark_used(struct rv_mr_cache *cache, struct rv_mr_entry *e)
{
	if (!rv_mr_in_use(e)) {
		list_del_init(&e->lru);
		rv_mr_account_use(cache, e, true);
	}
}

static void rv_mr_get_user(struct rv_mr_cache *cache, struct rv_mr_entry *e)
{
	rv_mr_mark_used(cache, e);
	e->user_refs++;
}

/* A write's; the user holds @e by a reference or through the MR table. */
static void rv_mr_get_io_ref(struct rv_mr_cache *cache, struct rv_mr_entry *e)
{
	rv_mr_mark_used(cache, e);
	e->io_refs++;
}

/* Drop a user reference; an unused STALE entry moves to @to. */
static void rv_mr_put_user(struct rv_mr_cache *cache, struct rv_mr_entry *e,
			   struct list_head *to)
{
	e->user_refs--;
	if (!rv_mr_in_use(e))
		rv_mr_unused(cache, e, to);
}

/*
 * A fast-registration MR for @pages pages: from the pool (returns 1),
 * else a new one (0), or an error.
 */
static int rv_mr_get_frmr(struct rv_mr_cache *cache, u32 pages,
			  struct rv_frmr *frmr)
{
	u32 i;

	spin_lock_bh(&cache->lock);
	for (i = 0; i < cache->pool_len; i++) {
		if (cache->pool[i].max_pages < pages)
			continue;
		*frmr = cache->pool[i];
		cache->pool[i] = cache->pool[--cache->pool_len];
		spin_unlock_bh(&cache->lock);
		return 1;
	}
	spin_unlock_bh(&cache->lock);
	return rv_frwr_alloc_mr(cache->job, pages, frmr);
}

/*
 * Make the keys of @frmrs unusable: invalidated into the pool while it
 * has room, deregistered otherwise.  MRs not @registered (or whose
 * registration failed) are in an unknown state: deregistered.  The
 * caller is in the device's read section and does not hold @cache->lock.
 */
static void rv_mr_put_frmrs(struct rv_mr_cache *cache, struct rv_frmr *frmrs,
			    u32 nr_mrs, bool registered)
{
	u32 room, valid = 0, i;

	if (registered) {
		spin_lock_bh(&cache->lock);
		/* A closing file deregisters its pool right after. */
		room = cache->closing ? 0 : RV_MR_POOL_MRS - cache->pool_len;
		spin_unlock_bh(&cache->lock);
		if (room)
			valid = rv_frwr_invalidate(cache->job, frmrs,
						   min(nr_mrs, room));
	}
	spin_lock_bh(&cache->lock);
	for (i = 0; i < valid && cache->pool_len < RV_MR_POOL_MRS; i++)
		cache->pool[cache->pool_len++] = frmrs[i];
	spin_unlock_bh(&cache->lock);
	for (; i < nr_mrs; i++)
		ib_dereg_mr(frmrs[i].mr);
}

/* Deregister the pool's MRs: in the device's read section, or its removal. */
static void rv_mr_pool_drain(struct rv_mr_cache *cache)
{
	struct ib_mr *mr;

	for (;;) {
		spin_lock_bh(&cache->lock);
		if (!cache->pool_len) {
			spin_unlock_bh(&cache->lock);
			return;
		}
		mr = cache->pool[--cache->pool_len].mr;
		spin_unlock_bh(&cache->lock);
		ib_dereg_mr(mr);
	}
}

/* Undo rv_mr_pin(); the pages are dirtied if the device could write them. */
static void rv_mr_unpin(struct rv_mr_entry *e)
{
	struct scatterlist *sg;
	unsigned int i;

	if (!e->pinned)
		return;
	for_each_sgtable_sg(&e->pages.sgt, sg, i)
		unpin_user_page_range_dirty_lock(sg_page(sg),
						 sg->length >> PAGE_SHIFT,
						 e->access &
						 RV_ACCESS_LOCAL_WRITE);
	sg_free_append_table(&e->pages);
	rv_pin_uncharge(e->notifier.mm, e->npages);
	rv_job_pin_uncharge(e->cache->job, e->npages);
	e->pinned = false;
}

/*
 * Pin @e's pages, charged to the process's pinned_vm against
 * RLIMIT_MEMLOCK as ib_umem_get() does (rv_pin_charge(): the budget the
 * event ring shares) and to the job's launcher limit
 * (rv_job_pin_charge()), with Linux 6.12's flags on every
 * kernel (write only for writable access; 6.1's umem also forced
 * read-only pins to write, breaking copy-on-write).  Outside the device's
 * read section: faulting the pages in may wait on user space (a
 * userfaultfd or FUSE backing) for as long as it likes, and no other
 * user of the device, nor its removal, may wait for that.  @max_seg is
 * the device's DMA segment limit.
 */
static int rv_mr_pin(struct rv_mr_entry *e, unsigned int max_seg)
{
	unsigned int gup = FOLL_LONGTERM;
	struct mm_struct *mm = e->notifier.mm;
	u64 addr = e->it.start & PAGE_MASK;
	u32 left = e->npages;
	struct page **list;
	int ret = 0;
	long n;

	if (e->access & RV_ACCESS_LOCAL_WRITE)
		gup |= FOLL_WRITE;
	ret = rv_pin_charge(mm, e->npages);
	if (ret)
		return ret;
	ret = rv_job_pin_charge(e->cache->job, e->npages);
	if (ret)
		goto out_uncharge_mm;
	list = (struct page **)__get_free_page(GFP_KERNEL);
	if (!list) {
		ret = -ENOMEM;
		goto out_uncharge;
	}
	memset(&e->pages, 0, sizeof(e->pages));
	while (left) {
		n = pin_user_pages_fast(addr, min_t(u32, left, PAGE_SIZE /
							sizeof(*list)),
					gup, list);
		if (n <= 0) {
			ret = n ?: -EFAULT;
			break;
		}
		ret = sg_alloc_append_table_from_pages(&e->pages, list, n, 0,
						       n << PAGE_SHIFT, max_seg,
						       left - n,
						       GFP_KERNEL_ACCOUNT);
		if (ret) {
			unpin_user_pages(list, n);
			break;
		}
		addr += n << PAGE_SHIFT;
		left -= n;
		/* Gigabytes of present pages pin without sleeping. */
		cond_resched();
	}
	free_page((unsigned long)list);
	e->pinned = true;
	if (!ret)
		return 0;
	/* What was pinned before the failure, and the charge. */
	rv_mr_unpin(e);
	return ret;

out_uncharge:
	rv_job_pin_uncharge(e->cache->job, e->npages);
out_uncharge_mm:
	rv_pin_uncharge(mm, e->npages);
	return ret;
}

/*
 * DMA-map @e's pinned pages, keeping each page's DMA address so that a
 * write finds its SGEs without walking a scatterlist.  In the device's
 * read section.
 */
static int rv_mr_dma_map(struct rv_mr_entry *e, struct ib_device *ibdev)
{
	struct scatterlist *sg;
	dma_addr_t dma, end;
	unsigned int j;
	u32 i = 0;
	int ret;

	ret = ib_dma_map_sgtable_attrs(ibdev, &e->pages.sgt,
				       DMA_BIDIRECTIONAL, 0);
	if (ret)
		return ret;
	/*
	 * Whole pages, the first one holding @e->it.start: exactly
	 * @e->npages of them (a plain loop: no call per page).
	 */
	for_each_sgtable_dma_sg(&e->pages.sgt, sg, j) {
		dma = sg_dma_address(sg);
		end = dma + sg_dma_len(sg);
		for (; dma < end && i < e->npages; dma += PAGE_SIZE)
			e->dma[i++] = dma;
	}
	if (WARN_ON_ONCE(i != e->npages)) {
		ib_dma_unmap_sgtable_attrs(ibdev, &e->pages.sgt,
					   DMA_BIDIRECTIONAL, 0);
		return -EFAULT;
	}
	e->mapped = true;
	return 0;
}

static void rv_mr_dma_unmap(struct rv_mr_entry *e, struct ib_device *ibdev)
{
	if (!e->mapped)
		return;
	ib_dma_unmap_sgtable_attrs(ibdev, &e->pages.sgt, DMA_BIDIRECTIONAL, 0);
	e->mapped = false;
}

/*
 * Undo rv_mr_map(): the device forgets the pages, the rkeys first.  The
 * caller owns @e (NEW or DEAD) and is in the device's read section, or
 * comes after its removal, which left nothing registered or mapped.  The
 * pages stay pinned (rv_mr_unpin()).
 */
static void rv_mr_unmap(struct rv_mr_entry *e)
{
	if (e->nr_frmrs)
		rv_mr_put_frmrs(e->cache, e->frmrs, e->nr_frmrs, true);
	e->nr_frmrs = 0;
	e->nr_reused = 0;
	if (e->mapped)
		rv_mr_dma_unmap(e, e->cache->job->pd->device);
}

/*
 * Freeing DEAD entries is two steps.  Their device part (MRs, DMA
 * mapping) goes in the device's read section: rv_mr_unmap_list().  Their
 * memory part (pins, notifier, the entry) goes after the section:
 * rv_mr_release_list().  Unpinning dirties pages under their page lock,
 * which a FUSE daemon can hold, and removing a notifier waits for the
 * mm's invalidations in progress, which another thread can keep going:
 * neither may hold up the device's removal.
 */

/*
 * The device part.  The caller owns the entries on @list and is in the
 * device's read section, or came after its removal, which left nothing
 * registered or mapped.
 */
static void rv_mr_unmap_list(struct list_head *list)
{
	struct rv_mr_entry *e;

	list_for_each_entry(e, list, lru)
		rv_mr_unmap(e);
}

/*
 * The memory part, for entries rv_mr_unmap_list() has been through.  The
 * caller is outside the device's read section and holds no cache->lock.
 */
static void rv_mr_release_list(struct rv_mr_cache *cache,
			       struct list_head *list)
{
	struct rv_mr_entry *e, *tmp;

	list_for_each_entry_safe(e, tmp, list, lru) {
		list_del(&e->lru);
		trace_rv_mr_free(e);
		rv_mr_unpin(e);
		/* Waits for an invalidation of this range still running. */
		mmu_interval_notifier_remove(&e->notifier);
		spin_lock_bh(&cache->lock);
		xa_erase(&cache->handles, e->handle);
		spin_unlock_bh(&cache->lock);
		kvfree(e);
	}
}

/* Free DEAD entries; the caller is outside the device's read section. */
static void rv_mr_free_victims(struct rv_mr_cache *cache,
			       struct list_head *victims)
{
	struct rv_device *dev = cache->job->dev;
	int idx;

	if (list_empty(victims))
		return;
	idx = rv_job_enter(cache->job, false);
	rv_mr_unmap_list(victims);
	rv_device_leave(dev, idx);
	rv_mr_release_list(cache, victims);
}

static void rv_mr_free_work(struct work_struct *work)
{
	struct rv_mr_cache *cache = container_of(work, struct rv_mr_cache,
						 free_work);
	LIST_HEAD(list);

	spin_lock_bh(&cache->lock);
	list_splice_init(&cache->dead, &list);
	spin_unlock_bh(&cache->lock);
	rv_mr_free_victims(cache, &list);
}

/*
 * Pinned pages stay mapped at the same address through these events (a
 * pinned anonymous page is copied for the child at fork rather than
 * write-protected and shared), so the registration is still right.
 */
static void rv_mr_retire(struct rv_mr_cache *cache, struct rv_mr_entry *e);

static bool rv_mr_event_keeps_pages(enum mmu_notifier_event event)
{
	return event == MMU_NOTIFY_PROTECTION_VMA ||
	       event == MMU_NOTIFY_PROTECTION_PAGE ||
	       event == MMU_NOTIFY_SOFT_DIRTY;
}

/*
 * These clear page table entries for reasons that may back off from a
 * pinned page or put the same page back: reclaim and migration (which
 * cannot free or move it), a THP split, KSM (which does not merge it).
 * MADV_DONTNEED and MADV_FREE clear them too, for good: only looking at
 * the page tables afterwards tells them apart.
 */
static bool rv_mr_event_may_keep_pages(enum mmu_notifier_event event)
{
	return event == MMU_NOTIFY_CLEAR || event == MMU_NOTIFY_MIGRATE;
}

/* Pages compared per get_user_pages_fast_only() call. */
#define RV_MR_CHECK_BATCH 32
/* Looks at a suspect entry before it is taken as changed (~1 ms). */
#define RV_MR_CHECK_TRIES 10

/*
 * Whether every page of @e is mapped at its address now, without
 * faulting (current->mm is the entry's).  A page not present counts as
 * changed: after a real discard it would be a new one.
 */
static bool rv_mr_pages_in_place(const struct rv_mr_entry *e)
{
	struct page *now[RV_MR_CHECK_BATCH];
	u64 addr = e->it.start & PAGE_MASK;
	struct sg_page_iter it;
	int n = 0, i = 0, got;
	bool same = true;

	for_each_sgtable_page(&e->pages.sgt, &it, 0) {
		if (i == n) {
			n = min_t(u64, RV_MR_CHECK_BATCH,
				  e->npages - ((addr - (e->it.start &
							PAGE_MASK)) >>
					       PAGE_SHIFT));
			got = get_user_pages_fast_only(addr, n, 0, now);
			for (i = 0; i < max(got, 0); i++)
				put_page(now[i]);
			if (got != n)
				return false;
			addr += (u64)n << PAGE_SHIFT;
			i = 0;
		}
		/* Compared after the put: only the address is looked at. */
		if (now[i++] != sg_page_iter_page(&it))
			same = false;
	}
	return same;
}

/*
 * Settle a suspect entry the caller holds a reference to: keep it when
 * its pages are where they were (no invalidation ran since the look),
 * else retire it.  May sleep (waits for an invalidation in progress);
 * current->mm is the entry's.  Returns whether @e may still be used.
 */
static bool rv_mr_revalidate(struct rv_mr_cache *cache, struct rv_mr_entry *e)
{
	unsigned long seq;
	int tries = 0;
	bool same;

	for (;;) {
		seq = mmu_interval_read_begin(&e->notifier);
		same = rv_mr_pages_in_place(e);
		spin_lock_bh(&cache->lock);
		if (e->state != RV_MR_CACHED || !e->suspect)
			break;
		if (same && !mmu_interval_read_retry(&e->notifier, seq)) {
			e->suspect = false;
			cache->stats.invalidations_spurious++;
			break;
		}
		if (++tries == RV_MR_CHECK_TRIES) {
			trace_rv_mr_invalidate(e);
			cache->stats.invalidations++;
			rv_mr_retire(cache, e);
			break;
		}
		spin_unlock_bh(&cache->lock);
		/*
		 * Another event, or a page not present: work that backs off
		 * (a migration that fails on a pinned page) puts the entry
		 * back after its event has ended.  Look again shortly.
		 */
		usleep_range(50, 100);
	}
	same = e->state == RV_MR_CACHED;
	spin_unlock_bh(&cache->lock);
	return same;
}

/*
 * A CACHED entry must never be found again: out of the tree and the MR
 * table; an unused one goes to the work item to be freed, one in use
 * waits (STALE) for its last reference, one only user space holds waits
 * on @held.  Caller holds cache->lock.
 */
static void rv_mr_retire(struct rv_mr_cache *cache, struct rv_mr_entry *e)
{
	bool held = rv_mr_table_retract(cache->table, e);

	if (rv_mr_in_use(e) || held) {
		interval_tree_remove(&e->it, &cache->tree);
		e->state = RV_MR_STALE;
		if (!rv_mr_in_use(e))
			list_move(&e->lru, &cache->held);
		return;
	}
	rv_mr_kill(cache, e, &cache->dead);
	if (!cache->closing)
		queue_work(system_unbound_wq, &cache->free_work);
}

static bool rv_mr_invalidate(struct mmu_interval_notifier *mni,
			     const struct mmu_notifier_range *range,
			     unsigned long cur_seq)
{
	struct rv_mr_entry *e = container_of(mni, struct rv_mr_entry,
					     notifier);
	struct rv_mr_cache *cache = e->cache;

	spin_lock_bh(&cache->lock);
	/* Also makes a registration of a NEW entry start over. */
	mmu_interval_set_seq(mni, cur_seq);
	if (e->state != RV_MR_CACHED || rv_mr_event_keeps_pages(range->event))
		goto out_unlock;
	/* Out of the table: user space asks the kernel, which looks. */
	if (rv_mr_event_may_keep_pages(range->event)) {
		e->suspect = true;
		rv_mr_table_retract(cache->table, e);
		goto out_unlock;
	}

	trace_rv_mr_invalidate(e);
	cache->stats.invalidations++;
	rv_mr_retire(cache, e);
out_unlock:
	spin_unlock_bh(&cache->lock);
	return true;
}

static const struct mmu_interval_notifier_ops rv_mr_notifier_ops = {
	.invalidate = rv_mr_invalidate,
};

void rv_mr_cache_init(struct rv_mr_cache *cache)
{
	spin_lock_init(&cache->lock);
	cache->tree = RB_ROOT_CACHED;
	INIT_LIST_HEAD(&cache->lru);
	INIT_LIST_HEAD(&cache->held);
	INIT_LIST_HEAD(&cache->dead);
	/*
	 * Its lock nests in @lock, which softirq completions take: taken
	 * with bottom halves off (and dropped so around an allocation).
	 */
	xa_init_flags(&cache->handles,
		      XA_FLAGS_ALLOC1 | XA_FLAGS_ACCOUNT | XA_FLAGS_LOCK_BH);
	INIT_WORK(&cache->free_work, rv_mr_free_work);
}

/* At ATTACH, under rf->lock: the cache may be used from now on. */
void rv_mr_cache_start(struct rv_mr_cache *cache, struct rv_job *job,
		       u64 limit, struct rv_mr_table *table)
{
	cache->job = job;
	cache->table = table;
	cache->stats.limit_bytes = limit;
}

/**
 * rv_mr_cache_teardown - free every entry of a closing file
 * @cache: the cache; its file is being released (rf->lock held, no ioctl
 *	can run) and is still attached
 *
 * Entries still referenced by the user go too: nobody can name them any
 * more.  Safe to call twice and on a file that never attached.
 */
void rv_mr_cache_teardown(struct rv_mr_cache *cache)
{
	struct rv_device *dev;
	struct rv_mr_entry *e;
	unsigned long index;
	LIST_HEAD(list);
	int idx;

	if (!cache->job)
		return;
	dev = cache->job->dev;

	spin_lock_bh(&cache->lock);
	cache->closing = true;
	spin_unlock_bh(&cache->lock);
	/* Its entries are on cache->dead, freed below. */
	cancel_work_sync(&cache->free_work);

	idx = rv_job_enter(cache->job, false);
	spin_lock_bh(&cache->lock);
	xa_for_each(&cache->handles, index, e) {
		if (e->state == RV_MR_DEAD)
			continue;
		if (rv_mr_in_use(e))
			rv_mr_account_use(cache, e, false);
		e->user_refs = 0;
		e->io_refs = 0;
		rv_mr_kill(cache, e, &list);
	}
	list_splice_init(&cache->dead, &list);
	spin_unlock_bh(&cache->lock);
	rv_mr_unmap_list(&list);
	rv_mr_pool_drain(cache);
	rv_device_leave(dev, idx);
	rv_mr_release_list(cache, &list);
	kvfree(cache->sgl);
	cache->sgl = NULL;
	cache->sgl_len = 0;

	WARN_ON(!xa_empty(&cache->handles));
	xa_destroy(&cache->handles);
	cache->job = NULL;
}

/**
 * rv_mr_cache_release_ib - deregister every MR before the device goes
 * @cache: a cache of a file of a job on the device
 *
 * Called by device removal, or rv_job_end(), once no read section of the
 * device that could use the cache is left.
 * Entries leave the tree (lookups would hand out a dead key); their MRs
 * and DMA mappings go now, their pins stay with them until they are
 * freed (unpinning may wait on user space; the pages are the process's,
 * not the device's).  Used entries stay until their handles are dropped,
 * unused ones are freed by the work item.
 *
 * Entries are looked up under cache->lock, which their freeing takes to
 * erase them: a NEW entry is its registering task's, which frees it
 * without a read section when it finds -ENODEV, and so is a DEAD one
 * with nothing of the device left (being freed after its section).
 * Every other entry waits, mapped, for a freer that cannot start before
 * removal is done (rv_job_enter() waits for it), so it can be used
 * after cache->lock is dropped.
 */
void rv_mr_cache_release_ib(struct rv_mr_cache *cache)
{
	unsigned long index = 0;
	struct rv_mr_entry *e;
	struct rv_frmr *frmrs;
	u32 nr_frmrs, i;

	spin_lock_bh(&cache->lock);
	for (; (e = xa_find(&cache->handles, &index, ULONG_MAX, XA_PRESENT));
	     index++) {
		if (e->state == RV_MR_NEW || (!e->nr_frmrs && !e->mapped))
			continue;
		frmrs = e->frmrs;
		nr_frmrs = e->nr_frmrs;
		e->nr_frmrs = 0;
		if (e->state == RV_MR_CACHED)
			rv_mr_retire(cache, e);
		spin_unlock_bh(&cache->lock);
		/* Writes read ->dma only in read sections, and none is left. */
		for (i = 0; i < nr_frmrs; i++)
			ib_dereg_mr(frmrs[i].mr);
		/* An entry means an attached cache: job and PD are set. */
		rv_mr_dma_unmap(e, cache->job->pd->device);
		spin_lock_bh(&cache->lock);
	}
	spin_unlock_bh(&cache->lock);
	rv_mr_pool_drain(cache);
}

/**
 * rv_mr_get_io - a write's reference on a registration the user holds
 * @cache: the posting file's cache
 * @handle: REG_MEM's handle
 * @addr: start of the data, inside the registration
 * @length: bytes, at least 1
 *
 * Caller is in the device's read section (the pages stay mapped); may sleep,
 * to revalidate a suspect registration.
 * Returns the entry, or ERR_PTR(-ENOENT) (no such handle held by the
 * user), ERR_PTR(-ESTALE) (memory changed, or the device's MR is gone),
 * ERR_PTR(-ERANGE) (not inside the registration).
 */
struct rv_mr_entry *rv_mr_get_io(struct rv_mr_cache *cache, u32 handle,
				 u64 addr, u64 length)
{
	bool suspect = false;
	struct rv_mr_entry *e;

	spin_lock_bh(&cache->lock);
	e = handle ? xa_load(&cache->handles, handle) : NULL;
	if (!e || (e->state != RV_MR_CACHED && e->state != RV_MR_STALE) ||
	    (!e->user_refs && !rv_mr_table_held(cache->table, e)))
		e = ERR_PTR(-ENOENT);
	else if (e->state == RV_MR_STALE || !e->mapped)
		e = ERR_PTR(-ESTALE);
	else if (addr < e->it.start || addr - e->it.start > e->length ||
		 length > e->length - (addr - e->it.start))
		e = ERR_PTR(-ERANGE);
	else
		rv_mr_get_io_ref(cache, e);
	if (!IS_ERR(e))
		suspect = e->suspect;
	spin_unlock_bh(&cache->lock);
	if (suspect && !rv_mr_revalidate(cache, e)) {
		rv_mr_put_io(e);
		e = ERR_PTR(-ESTALE);
	}
	return e;
}

void rv_mr_sge_start(struct rv_mr_sge_iter *it, const struct rv_mr_entry *e,
		     u32 local_dma_lkey, u64 addr, u64 length)
{
	it->e = e;
	it->lkey = local_dma_lkey;
	it->pos = addr;
	it->left = length;
}

/**
 * rv_mr_sge_next - the SGEs of a write's next work request
 * @it: the walk, from rv_mr_sge_start()
 * @sge: out: at most @max_sge SGEs
 * @max_sge: SGEs a work request may carry, at least 1
 * @max_bytes: bytes a work request may carry, at least 1
 * @bytes: out: bytes in @sge
 *
 * An SGE per run of DMA-contiguous pages.  The caller is in the device's
 * read section (->dma stays mapped).  Returns the SGEs filled, 0 once
 * the walk is over.
 */
u32 rv_mr_sge_next(struct rv_mr_sge_iter *it, struct ib_sge *sge,
		   u32 max_sge, u32 max_bytes, u32 *bytes)
{
	const struct rv_mr_entry *e = it->e;
	u64 first_page = e->it.start & PAGE_MASK;
	u32 n = 0, total = 0;

	while (it->left && total < max_bytes) {
		u32 off = offset_in_page(it->pos);
		u32 len = min_t(u64, it->left, max_bytes - total);
		u64 addr;

		len = min_t(u32, len, PAGE_SIZE - off);
		addr = e->dma[(it->pos - first_page) >> PAGE_SHIFT] + off;
		if (n && sge[n - 1].addr + sge[n - 1].length == addr) {
			sge[n - 1].length += len;
		} else {
			if (n == max_sge)
				break;
			sge[n].addr = addr;
			sge[n].length = len;
			sge[n].lkey = it->lkey;
			n++;
		}
		total += len;
		it->pos += len;
		it->left -= len;
	}
	*bytes = total;
	return n;
}

/*
 * Drop a write's reference, from its completion (softirq: no sleep)
 * or a failed post: an unused STALE entry goes to the work item, which
 * deregisters and unpins it in process context.
 */
void rv_mr_put_io(struct rv_mr_entry *e)
{
	struct rv_mr_cache *cache = e->cache;

	spin_lock_bh(&cache->lock);
	e->io_refs--;
	if (!rv_mr_in_use(e) && rv_mr_unused(cache, e, &cache->dead) &&
	    !cache->closing)
		queue_work(system_unbound_wq, &cache->free_work);
	spin_unlock_bh(&cache->lock);
}

/*
 * An entry serves a request only with the same remote access: its rkeys
 * would let peers into memory the caller registered for local use.
 */
static bool rv_mr_access_serves(u32 entry, u32 request)
{
	return (entry & RV_ACCESS_REMOTE) == (request & RV_ACCESS_REMOTE) &&
	       (entry & request) == request;
}

/* Caller holds cache->lock. */
static struct rv_mr_entry *rv_mr_lookup(struct rv_mr_cache *cache, u64 addr,
					u64 last, u32 access)
{
	struct interval_tree_node *node;
	struct rv_mr_entry *e;

	for (node = interval_tree_iter_first(&cache->tree, addr, last); node;
	     node = interval_tree_iter_next(node, addr, last)) {
		e = container_of(node, struct rv_mr_entry, it);
		if (e->it.start <= addr && e->it.last >= last &&
		    rv_mr_access_serves(e->access, access))
			return e;
	}
	return NULL;
}

/*
 * Evict unused entries, least recently used first, onto @victims until
 * @bytes are freed or none is left.  Caller holds cache->lock.  Returns
 * the bytes freed.
 */
static u64 rv_mr_evict_lru(struct rv_mr_cache *cache, u64 bytes,
			   struct list_head *victims)
{
	u32 left = cache->stats.entries;
	struct rv_mr_entry *e;
	u64 freed = 0;

	/* Each entry once: held ones go back to the head. */
	while (freed < bytes && !list_empty(&cache->lru) && left--) {
		e = list_last_entry(&cache->lru, struct rv_mr_entry, lru);
		if (!rv_mr_table_retract_unheld(cache->table, e)) {
			list_move(&e->lru, &cache->lru);
			continue;
		}
		trace_rv_mr_evict(e);
		cache->stats.evict_pressure++;
		freed += e->length;
		rv_mr_kill(cache, e, victims);
	}
	return freed;
}

/*
 * Make room for @length more bytes under the limit, evicting onto
 * @victims.  Caller holds cache->lock.
 */
static int rv_mr_make_room(struct rv_mr_cache *cache, u64 length,
			   struct list_head *victims)
{
	struct rv_mr_stats *s = &cache->stats;

	if (length > s->limit_bytes ||
	    s->in_use_bytes > s->limit_bytes - length)
		return -ENOSPC;
	if (s->bytes > s->limit_bytes - length)
		rv_mr_evict_lru(cache, s->bytes - (s->limit_bytes - length),
				victims);
	/* What is left is in use, held through the MR table, or STALE. */
	if (s->bytes > s->limit_bytes - length)
		return -ENOSPC;
	return 0;
}

/*
 * Pinning is also bounded by RLIMIT_MEMLOCK, which the cache's own unused
 * entries may be using up: evict at least @length bytes of them, LRU
 * first.  Caller is not in the device's read section and does not hold
 * cache->lock.  Returns whether anything was freed.
 */
static bool rv_mr_reclaim(struct rv_mr_cache *cache, u64 length)
{
	LIST_HEAD(victims);
	u64 freed;

	spin_lock_bh(&cache->lock);
	freed = rv_mr_evict_lru(cache, length, &victims);
	spin_unlock_bh(&cache->lock);
	rv_mr_free_victims(cache, &victims);
	return freed;
}

static int rv_mr_ib_access(u32 access)
{
	int ib_access = 0;

	if (access & RV_ACCESS_LOCAL_WRITE)
		ib_access |= IB_ACCESS_LOCAL_WRITE;
	if (access & RV_ACCESS_REMOTE_WRITE)
		ib_access |= IB_ACCESS_REMOTE_WRITE;
	if (access & RV_ACCESS_REMOTE_READ)
		ib_access |= IB_ACCESS_REMOTE_READ;
	return ib_access;
}

/**
 * rv_mr_count_wrs - work requests rv_mr_sge_next() will cut a write into
 * @e: the registration, held by the write
 * @addr: start of the write, inside @e
 * @length: its bytes, at least 1
 * @max_sge: SGEs a work request may carry
 * @max_bytes: bytes a work request may carry
 *
 * Without a walk when the answer is plain: pages no more than @max_sge fit
 * one.  Otherwise the walk itself, so that the count always equals what
 * posting cuts.
 */
u32 rv_mr_count_wrs(const struct rv_mr_entry *e, u64 addr, u64 length,
		    u32 max_sge, u32 max_bytes)
{
	u64 pages = ((addr + length - 1) >> PAGE_SHIFT) - (addr >> PAGE_SHIFT) + 1;
	struct ib_sge sge[RV_MAX_SEND_SGE];
	struct rv_mr_sge_iter it;
	u32 wrs = 0, bytes;

	if (pages <= max_sge && length <= max_bytes)
		return 1;
	rv_mr_sge_start(&it, e, 0, addr, length);
	while (rv_mr_sge_next(&it, sge, max_sge, max_bytes, &bytes))
		wrs++;
	return wrs;
}

/*
 * Refuse ranges the caller could not access itself (a PROT_NONE guard page,
 * write access to a read-only mapping).  An mprotect() after REG_MEM
 * leaves the pinned pages registered, as with any verbs MR.
 */
static int rv_mr_check_vmas(u64 addr, u64 length, bool writable)
{
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;
	u64 end = addr + length;
	int ret = 0;

	mmap_read_lock(mm);
	while (addr < end) {
		vma = vma_lookup(mm, addr);
		if (!vma || !(vma->vm_flags & VM_READ) ||
		    (writable && !(vma->vm_flags & VM_WRITE))) {
			ret = -EFAULT;
			break;
		}
		addr = vma->vm_end;
	}
	mmap_read_unlock(mm);
	return ret;
}

/* Blocks of 1 << @shift bytes (pages, key chunks) [start, last] spans. */
static u32 rv_mr_nr_blocks(u64 start, u64 last, u8 shift)
{
	return (last >> shift) - (start >> shift) + 1;
}

/* Chunk @i of @e's keys: the part [*start, *last] of @e it covers. */
static void rv_mr_key_chunk(const struct rv_mr_entry *e, u32 i, u64 *start,
			    u64 *last)
{
	u64 base = ((e->it.start >> e->key_shift) + i) << e->key_shift;

	*start = max(base, e->it.start);
	*last = min(base + BIT_ULL(e->key_shift) - 1, e->it.last);
}

/*
 * Fill @sgl with pages [@first, @first + @npages) of @e as DMA-contiguous
 * runs (of at most 1 GiB: sg_dma_len() is 32 bits) and return how many
 * entries that took.  Only those entries are initialised.
 */
static u32 rv_mr_chunk_sgl(const struct rv_mr_entry *e, u32 first,
			   u32 npages, struct scatterlist *sgl)
{
	const dma_addr_t *dma = &e->dma[first];
	struct scatterlist *sg = sgl;
	u32 i;

	memset(sg, 0, sizeof(*sg));
	sg_dma_address(sg) = dma[0];
	sg_dma_len(sg) = PAGE_SIZE;
	for (i = 1; i < npages; i++) {
		if (dma[i] == sg_dma_address(sg) + sg_dma_len(sg) &&
		    sg_dma_len(sg) < SZ_1G) {
			sg_dma_len(sg) += PAGE_SIZE;
			continue;
		}
		sg++;
		memset(sg, 0, sizeof(*sg));
		sg_dma_address(sg) = dma[i];
		sg_dma_len(sg) = PAGE_SIZE;
	}
	sg_mark_end(sg);
	return sg - sgl + 1;
}

/*
 * A fast-registration MR over the pinned pages of [start, last], part of
 * @e: exactly those bytes, iova == the user address.  Mapped through @sgl
 * (room for a chunk's pages), not yet registered: 1 if the MR came from
 * the pool, 0 if new, or an error (nothing left in @frmr).
 */
static int rv_mr_frwr_chunk(const struct rv_mr_entry *e, u64 start, u64 last,
			    struct scatterlist *sgl, struct rv_frmr *frmr)
{
	u32 first = (start >> PAGE_SHIFT) - (e->it.start >> PAGE_SHIFT);
	u32 npages = rv_mr_nr_blocks(start, last, PAGE_SHIFT);
	unsigned int sg_offset = offset_in_page(start);
	int reused, n;
	u32 nents;

	nents = rv_mr_chunk_sgl(e, first, npages, sgl);
	/* A peer may not write past the chunk into its last page. */
	sg_dma_len(&sgl[nents - 1]) -= PAGE_SIZE - 1 - offset_in_page(last);

	reused = rv_mr_get_frmr(e->cache, npages, frmr);
	if (reused < 0)
		return reused;
	/*
	 * PAGE_SIZE pages even where a run would fit a larger page: a
	 * driver may ignore the page size (vmw_pvrdma registers every MR
	 * with PAGE_SHIFT), which would misplace the data silently.
	 */
	n = ib_map_mr_sg(frmr->mr, sgl, nents, &sg_offset, PAGE_SIZE);
	if (n != nents) {
		rv_mr_put_frmrs(e->cache, frmr, 1, false);
		return n < 0 ? n : -EINVAL;
	}
	frmr->mr->iova = start;
	return reused;
}

/*
 * The cache's scratch scatterlist with room for @ents entries; a larger
 * one than RV_MR_SGL_KEEP entries is not kept (the caller frees it).
 */
#define RV_MR_SGL_KEEP	512

static struct scatterlist *rv_mr_sgl(struct rv_mr_cache *cache, u32 ents)
{
	struct scatterlist *sgl;

	if (ents <= cache->sgl_len)
		return cache->sgl;
	sgl = kvmalloc_array(ents, sizeof(*sgl),
			     GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL);
	if (!sgl || ents > RV_MR_SGL_KEEP)
		return sgl;
	kvfree(cache->sgl);
	cache->sgl = sgl;
	cache->sgl_len = ents;
	return sgl;
}

/*
 * Give a pinned remote-access registration its rkeys, one MR per key
 * chunk, registered together.  On error nothing is left in @e.
 */
static int rv_mr_frwr(struct rv_mr_entry *e, struct rv_job *job, u32 nr_keys)
{
	u32 max_pages = min_t(u64, e->npages,
			      BIT_ULL(e->key_shift - PAGE_SHIFT));
	struct scatterlist *sgl;
	u64 start, last;
	u32 nr = 0;
	int ret = 0;

	/* One scatterlist for every chunk: the MRs keep no pointer to it. */
	sgl = rv_mr_sgl(e->cache, max_pages);
	if (!sgl)
		return -ENOMEM;
	for (; nr < nr_keys; nr++) {
		rv_mr_key_chunk(e, nr, &start, &last);
		ret = rv_mr_frwr_chunk(e, start, last, sgl, &e->frmrs[nr]);
		if (ret < 0)
			break;
		e->nr_reused += ret;
		ret = 0;
	}
	if (sgl != e->cache->sgl)
		kvfree(sgl);
	if (!ret)
		ret = rv_frwr_register(job, e->frmrs, nr_keys,
				       rv_mr_ib_access(e->access));
	if (!ret) {
		/* For REG_MEM's answer, which does not use the device. */
		for (nr = 0; nr < nr_keys; nr++) {
			e->frmrs[nr].lkey = e->frmrs[nr].mr->lkey;
			e->frmrs[nr].rkey = e->frmrs[nr].mr->rkey;
		}
		e->nr_frmrs = nr_keys;
		return 0;
	}
	rv_mr_put_frmrs(e->cache, e->frmrs, nr, false);
	e->nr_reused = 0;
	return ret;
}

/*
 * The rkeys a registration needs: 0 without remote access, or an error
 * when the device cannot give them (checked before anything is pinned).
 */
static int rv_mr_nr_keys(const struct rv_mr_entry *e)
{
	u32 nr_keys;

	if (!(e->access & RV_ACCESS_REMOTE))
		return 0;
	if (!e->key_shift)
		return -EOPNOTSUPP;
	nr_keys = rv_mr_nr_blocks(e->it.start, e->it.last, e->key_shift);
	return nr_keys > RV_MAX_REG_KEYS ? -E2BIG : nr_keys;
}

/*
 * Map @e's pinned pages for the device and register its @nr_keys rkeys:
 * see the top of this file.  In the device's read section.
 */
static int rv_mr_map(struct rv_mr_entry *e, struct rv_job *job, u32 nr_keys)
{
	int ret;

	ret = rv_mr_dma_map(e, job->pd->device);
	if (ret || !nr_keys)
		return ret;
	ret = rv_mr_frwr(e, job, nr_keys);
	if (ret)
		rv_mr_unmap(e);
	return ret;
}

/*
 * A NEW entry for [addr, addr + length), with room for the DMA address of
 * each page and (remote access) for an MR per key chunk, in one
 * allocation.  No room for MRs when the device has no fast registration
 * (key_shift 0) or the keys would be too many: rv_mr_nr_keys() refuses
 * both.
 */
static struct rv_mr_entry *rv_mr_alloc(struct rv_mr_cache *cache, u64 addr,
				       u64 length, u32 access, u8 key_shift)
{
	u64 last = addr + length - 1;
	u32 nr_keys = 0, npages;
	struct rv_mr_entry *e;
	size_t size;

	if ((last >> PAGE_SHIFT) - (addr >> PAGE_SHIFT) >= U32_MAX)
		return NULL;
	npages = rv_mr_nr_blocks(addr, last, PAGE_SHIFT);
	size = struct_size(e, dma, npages);
	if (access & RV_ACCESS_REMOTE) {
		if (key_shift)
			nr_keys = rv_mr_nr_blocks(addr, last, key_shift);
		if (nr_keys > RV_MAX_REG_KEYS)
			nr_keys = 0;
		size = size_add(size, array_size(nr_keys,
						 sizeof(struct rv_frmr)));
	}
	/*
	 * Only the entry itself needs zeroes: the arrays are filled first.
	 * Their size is the caller's (a page's worth per 2 MiB registered):
	 * failing is an errno for it, not a reason for the OOM killer.
	 */
	e = kvmalloc(size, GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL);
	if (!e)
		return NULL;
	memset(e, 0, sizeof(*e));
	e->cache = cache;
	e->it.start = addr;
	e->it.last = last;
	e->length = length;
	e->access = access;
	e->state = RV_MR_NEW;
	e->npages = npages;
	e->key_shift = key_shift;
	if (nr_keys)
		e->frmrs = (struct rv_frmr *)&e->dma[npages];
	INIT_LIST_HEAD(&e->lru);
	return e;
}

/*
 * Map and register a NEW entry's pinned pages and cache it with one user
 * reference, in one read section of the device, unless its memory changed
 * since @seq.  Returns 0 (cached), -EAGAIN (changed: unmapped and
 * unpinned, to be pinned again) or another error (unpinned).
 */
static int rv_mr_publish(struct rv_mr_entry *e, u32 nr_keys,
			 unsigned long seq)
{
	struct rv_mr_cache *cache = e->cache;
	struct rv_device *dev = cache->job->dev;
	struct rv_mr_stats *s = &cache->stats;
	int idx, ret;

	idx = rv_job_enter(cache->job, true);
	ret = idx < 0 ? idx : rv_mr_map(e, cache->job, nr_keys);
	if (ret)
		goto out_leave;

	spin_lock_bh(&cache->lock);
	if (mmu_interval_read_retry(&e->notifier, seq)) {
		spin_unlock_bh(&cache->lock);
		rv_mr_unmap(e);
		ret = -EAGAIN;
		goto out_leave;
	}
	e->state = RV_MR_CACHED;
	interval_tree_insert(&e->it, &cache->tree);
	s->entries++;
	s->bytes += e->length;
	s->max_entries = max(s->max_entries, s->entries);
	s->max_bytes = max(s->max_bytes, s->bytes);
	s->misses++;
	if (e->nr_frmrs) {
		s->fast_regs++;
		s->fast_reg_keys += e->nr_frmrs;
		s->fast_reg_reused += e->nr_reused;
	}
	rv_mr_get_user(cache, e);
	trace_rv_mr_insert(e);
	spin_unlock_bh(&cache->lock);

out_leave:
	rv_device_leave(dev, idx);
	if (ret)
		rv_mr_unpin(e);
	return ret;
}

/*
 * Register [addr, addr + length) for the current process and cache it
 * with one user reference.  Caller holds rf->lock (so registrations of a
 * file are serialised and the room made stays free) and is not in the
 * device's read section: the pages are pinned outside it, then mapped and
 * registered in it.
 */
static struct rv_mr_entry *rv_mr_insert(struct rv_mr_cache *cache, u64 addr,
					u64 length, u32 access)
{
	struct rv_job *job = cache->job;
	struct rv_device *dev = job->dev;
	bool reclaimed = false;
	struct rv_mr_entry *e;
	unsigned int max_seg;
	unsigned long seq;
	u8 key_shift;
	LIST_HEAD(victims);
	int tries, nr_keys;
	int ret, idx;

	idx = rv_job_enter(job, true);
	if (idx < 0) {
		rv_device_leave(dev, idx);
		return ERR_PTR(idx);
	}
	/* The device's attributes are read here: it may go once we leave. */
	max_seg = ib_dma_max_seg_size(job->pd->device);
	key_shift = access & RV_ACCESS_REMOTE ? rv_frwr_key_shift(job) : 0;
	spin_lock_bh(&cache->lock);
	/*
	 * Entries the MMU notifier killed go now rather than in the work
	 * item: their pins and MRs come back before this miss pins more
	 * (an munmap() then a registration of new memory reuses the MRs).
	 */
	list_splice_init(&cache->dead, &victims);
	rv_mr_reap_held(cache, &victims);
	ret = rv_mr_make_room(cache, length, &victims);
	spin_unlock_bh(&cache->lock);
	rv_mr_unmap_list(&victims);
	rv_device_leave(dev, idx);
	rv_mr_release_list(cache, &victims);
	/* Outside the section: a removal may clear dev->ibdev from here. */
	rv_debug_window();
	if (ret)
		goto out_count;

	e = rv_mr_alloc(cache, addr, length, access, key_shift);
	if (!e) {
		ret = -ENOMEM;
		goto out_count;
	}
	nr_keys = rv_mr_nr_keys(e);
	if (nr_keys < 0) {
		ret = nr_keys;
		goto out_free;
	}

	ret = xa_alloc_cyclic_bh(&cache->handles, &e->handle, e,
				 XA_LIMIT(1, INT_MAX), &cache->next_handle,
				 GFP_KERNEL);
	if (ret < 0)
		goto out_free;

	ret = mmu_interval_notifier_insert(&e->notifier, current->mm, addr,
					   length, &rv_mr_notifier_ops);
	if (ret)
		goto out_erase;

	for (tries = 0; tries < RV_MR_REG_TRIES; tries++) {
		seq = mmu_interval_read_begin(&e->notifier);
		/* After read_begin: an mprotect() from now on means retry. */
		ret = rv_mr_check_vmas(addr, length,
				       access & RV_ACCESS_LOCAL_WRITE);
		if (ret)
			goto out_remove;
		ret = rv_mr_pin(e, max_seg);
		if (!ret)
			ret = rv_mr_publish(e, nr_keys, seq);
		if (!ret)
			return e;
		if (ret == -EAGAIN)
			continue;
		/*
		 * RLIMIT_MEMLOCK, or the job's limit, may be full of our
		 * unused entries.
		 */
		if ((ret == -ENOMEM || ret == -EDQUOT) && !reclaimed &&
		    rv_mr_reclaim(cache, length)) {
			reclaimed = true;
			continue;
		}
		goto out_remove;
	}
	ret = -EAGAIN;

out_remove:
	mmu_interval_notifier_remove(&e->notifier);
out_erase:
	spin_lock_bh(&cache->lock);
	xa_erase(&cache->handles, e->handle);
	spin_unlock_bh(&cache->lock);
out_free:
	kvfree(e);
out_count:
	spin_lock_bh(&cache->lock);
	cache->stats.failures++;
	spin_unlock_bh(&cache->lock);
	return ERR_PTR(ret);
}

/* A range [addr, addr + length) that is not empty and does not wrap. */
static bool rv_mr_range_ok(u64 addr, u64 length)
{
	return length && addr + length > addr;
}

/*
 * Tell the caller the keys of the chunks its request touches, the first
 * in @rkey.  A request without remote access gets none: the lookup never
 * gives it an entry that has some, and the check below keeps a key from
 * leaking should that change.  The keys are the values recorded at
 * registration (the caller holds a reference to @e, not the device:
 * copying to user space may fault on memory user space serves).
 * -EOVERFLOW when @rkeys is too short.
 */
static int rv_mr_give_keys(const struct rv_mr_entry *e, struct rv_reg_mem *cmd)
{
	u32 __user *ukeys = u64_to_user_ptr(cmd->rkeys);
	u32 first, nr_keys, i;

	cmd->lkey = 0;
	cmd->rkey = 0;
	cmd->rkey_shift = 0;
	/* 0 once device removal deregistered them. */
	if (!READ_ONCE(e->nr_frmrs) || !(cmd->access & RV_ACCESS_REMOTE)) {
		cmd->nr_rkeys = 0;
		return 0;
	}
	first = (cmd->addr >> e->key_shift) - (e->it.start >> e->key_shift);
	nr_keys = rv_mr_nr_blocks(cmd->addr, cmd->addr + cmd->length - 1,
				  e->key_shift);
	cmd->lkey = e->frmrs[first].lkey;
	cmd->rkey = e->frmrs[first].rkey;
	cmd->rkey_shift = e->key_shift;
	if (nr_keys > cmd->nr_rkeys) {
		cmd->nr_rkeys = nr_keys;
		return nr_keys > 1 ? -EOVERFLOW : 0;
	}
	cmd->nr_rkeys = nr_keys;
	for (i = 0; i < nr_keys; i++)
		if (put_user(e->frmrs[first + i].rkey, &ukeys[i]))
			return -EFAULT;
	return 0;
}

/*
 * Turn the caller's reference on @e into a hold of its MR table slot,
 * posting it there first if it is not yet.  A registration that never got
 * a slot (more keys than a slot has, or a full table) keeps ordinary
 * references for good, and one that has a slot only ever gets holds,
 * posted or not (suspect, or STALE since the lookup): user space tells
 * the two kinds apart by handle.  Returns whether it took a hold, with
 * @cmd's table fields set (@table_gen even when not posted).
 */
static bool rv_mr_hold_in_table(struct rv_mr_cache *cache,
				struct rv_mr_entry *e, struct rv_reg_mem *cmd)
{
	struct rv_mr_table *t = cache->table;
	bool held = false;

	if (!t)
		return false;
	spin_lock_bh(&cache->lock);
	if (e->has_slot) {
		/* Back in the table once checked (a no-op if it is). */
		if (e->state == RV_MR_CACHED && !e->suspect)
			rv_mr_table_post(t, e);
	} else if (!e->no_table &&
		   (e->state != RV_MR_CACHED || e->suspect ||
		    !rv_mr_table_post(t, e))) {
		e->no_table = true;
	}
	if (e->has_slot) {
		rv_mr_table_hold(t, e);
		/* Held now: not freed, whatever its state. */
		rv_mr_put_user(cache, e, NULL);
		cmd->table_slot = e->slot;
		/* Never 0: the slot was posted once. */
		cmd->table_gen = e->slot_gen ?: READ_ONCE(t->slots[e->slot].gen);
		held = true;
	}
	spin_unlock_bh(&cache->lock);
	return held;
}

/* Drop what REG_MEM took when the caller cannot learn of it. */
static void rv_mr_reg_undo(struct rv_mr_cache *cache, struct rv_mr_entry *e,
			   bool held)
{
	LIST_HEAD(victims);

	spin_lock_bh(&cache->lock);
	if (held)
		rv_mr_table_unhold(cache->table, e);
	else
		rv_mr_put_user(cache, e, &victims);
	spin_unlock_bh(&cache->lock);
	rv_mr_free_victims(cache, &victims);
}

int rv_cmd_reg_mem(struct rv_file *rf, const struct rv_ucmd *ucmd, void *arg)
{
	struct rv_mr_cache *cache = &rf->mr_cache;
	struct rv_reg_mem *cmd = arg;
	struct rv_mr_entry *e;
	struct rv_device *dev;
	bool held = false, suspect;
	int ret, keys_ret, idx;
	u32 access;

	if ((cmd->flags & ~RV_REG_MEM_F_TABLE_HOLD) ||
	    (cmd->access & ~RV_ACCESS_ALL) ||
	    !rv_mr_range_ok(cmd->addr, cmd->length) ||
	    (cmd->nr_rkeys && !cmd->rkeys))
		return -EINVAL;
	/* A hold the caller could not learn of could never be dropped. */
	if ((cmd->flags & RV_REG_MEM_F_TABLE_HOLD) &&
	    ucmd->user_size < offsetofend(struct rv_reg_mem, table_gen))
		return -EINVAL;
	access = cmd->access;
	/* Verbs require local write for remote write. */
	if (access & RV_ACCESS_REMOTE_WRITE)
		access |= RV_ACCESS_LOCAL_WRITE;

	/*
	 * Not in the device's read section throughout: a miss pins pages
	 * and the answer goes to user memory, either of which may wait on
	 * user space.  rf->lock serialises the file's commands.
	 */
	mutex_lock(&rf->lock);
	ret = rv_file_check_owner(rf);
	if (ret)
		goto out_unlock;
	dev = rf->job->dev;
	/* Each suspect found and not kept leaves the tree: this ends. */
	for (;;) {
		idx = rv_job_enter(rf->job, true);
		if (idx < 0) {
			rv_device_leave(dev, idx);
			ret = idx;
			goto out_unlock;
		}
		spin_lock_bh(&cache->lock);
		e = rv_mr_lookup(cache, cmd->addr, cmd->addr + cmd->length - 1,
				 access);
		if (e)
			rv_mr_get_user(cache, e);
		suspect = e && e->suspect;
		spin_unlock_bh(&cache->lock);
		rv_device_leave(dev, idx);
		if (!suspect || rv_mr_revalidate(cache, e))
			break;
		rv_mr_reg_undo(cache, e, false);
	}
	if (e) {
		spin_lock_bh(&cache->lock);
		cache->stats.hits++;
		trace_rv_mr_hit(e);
		spin_unlock_bh(&cache->lock);
	}

	if (!e) {
		e = rv_mr_insert(cache, cmd->addr, cmd->length, access);
		if (IS_ERR(e)) {
			ret = PTR_ERR(e);
			goto out_unlock;
		}
	}

	keys_ret = rv_mr_give_keys(e, cmd);
	cmd->handle = keys_ret ? 0 : e->handle;
	cmd->iova = cmd->addr;
	cmd->region_addr = e->it.start;
	cmd->region_length = e->length;
	cmd->table_slot = 0;
	cmd->table_gen = 0;
	if (!keys_ret && (cmd->flags & RV_REG_MEM_F_TABLE_HOLD))
		held = rv_mr_hold_in_table(cache, e, cmd);
	ret = rv_ucmd_respond(ucmd, cmd, sizeof(*cmd)) ?: keys_ret;
	/*
	 * The caller never learnt the handle: take the reference back (the
	 * registration stays cached for the caller's retry).
	 */
	if (ret)
		rv_mr_reg_undo(cache, e, held);
out_unlock:
	mutex_unlock(&rf->lock);
	return ret;
}

int rv_cmd_dereg_mem(struct rv_file *rf, const struct rv_ucmd *ucmd,
		     void *arg)
{
	struct rv_mr_cache *cache = &rf->mr_cache;
	struct rv_dereg_mem *cmd = arg;
	struct rv_mr_entry *e;
	LIST_HEAD(victims);
	int ret;

	if (cmd->flags)
		return -EINVAL;
	ret = rv_file_lock_dev(rf, false);
	if (ret)
		return ret;

	spin_lock_bh(&cache->lock);
	rv_mr_reap_held(cache, &victims);
	e = xa_load(&cache->handles, cmd->handle);
	if (!e || e->state == RV_MR_NEW || e->state == RV_MR_DEAD)
		ret = -ENOENT;
	else if (!e->user_refs)
		ret = -EINVAL;
	else
		rv_mr_put_user(cache, e, &victims);
	if (!ret)
		cmd->refs = e->user_refs;
	spin_unlock_bh(&cache->lock);
	rv_mr_unmap_list(&victims);
	rv_file_unlock_dev(rf);
	rv_mr_release_list(cache, &victims);
	if (ret)
		return ret;
	return rv_ucmd_respond(ucmd, cmd, sizeof(*cmd));
}

static int rv_evict_check(const struct rv_evict *cmd)
{
	if (cmd->flags || cmd->freed_entries || cmd->freed_bytes)
		return -EINVAL;
	switch (cmd->mode) {
	case RV_EVICT_EXACT:
		if (cmd->access & ~RV_ACCESS_ALL)
			return -EINVAL;
		fallthrough;
	case RV_EVICT_RANGE:
		if (cmd->target_bytes || cmd->target_entries ||
		    (cmd->mode == RV_EVICT_RANGE && cmd->access) ||
		    !rv_mr_range_ok(cmd->addr, cmd->length))
			return -EINVAL;
		return 0;
	case RV_EVICT_AMOUNT:
		if (cmd->addr || cmd->length || cmd->access ||
		    (!cmd->target_bytes && !cmd->target_entries))
			return -EINVAL;
		return 0;
	default:
		return -EINVAL;
	}
}

/*
 * Move the unused entries EVICT selects onto @victims; caller holds
 * cache->lock.  Overlapping entries are collected before any leaves the
 * tree, so the tree is not walked while it changes.
 */
static int rv_evict_select(struct rv_mr_cache *cache,
			   const struct rv_evict *cmd,
			   struct list_head *victims)
{
	u64 last = cmd->addr + cmd->length - 1;
	struct interval_tree_node *node;
	struct rv_mr_entry *e, *tmp;
	u64 bytes = 0, entries = 0;
	u32 access = cmd->access;
	bool busy = false;
	LIST_HEAD(chosen);

	if (cmd->mode == RV_EVICT_AMOUNT) {
		u32 left = cache->stats.entries;

		while (!list_empty(&cache->lru) && left-- &&
		       (bytes < cmd->target_bytes ||
			entries < cmd->target_entries)) {
			e = list_last_entry(&cache->lru, struct rv_mr_entry,
					    lru);
			if (!rv_mr_table_retract_unheld(cache->table, e)) {
				list_move(&e->lru, &cache->lru);
				continue;
			}
			bytes += e->length;
			entries++;
			list_move_tail(&e->lru, &chosen);
		}
		goto kill;
	}

	if (access & RV_ACCESS_REMOTE_WRITE)
		access |= RV_ACCESS_LOCAL_WRITE;
	for (node = interval_tree_iter_first(&cache->tree, cmd->addr, last);
	     node; node = interval_tree_iter_next(node, cmd->addr, last)) {
		e = container_of(node, struct rv_mr_entry, it);
		/* Entries of one range may differ in access: EXACT picks one. */
		if (cmd->mode == RV_EVICT_EXACT &&
		    (e->it.start != cmd->addr || e->it.last != last ||
		     e->access != access))
			continue;
		if (rv_mr_in_use(e) ||
		    !rv_mr_table_retract_unheld(cache->table, e)) {
			busy = true;
			continue;
		}
		list_move_tail(&e->lru, &chosen);
	}
	if (cmd->mode == RV_EVICT_EXACT && list_empty(&chosen))
		return busy ? -EBUSY : -ENOENT;

kill:
	list_for_each_entry_safe(e, tmp, &chosen, lru) {
		trace_rv_mr_evict(e);
		cache->stats.evict_request++;
		rv_mr_kill(cache, e, victims);
	}
	return 0;
}

int rv_cmd_evict(struct rv_file *rf, const struct rv_ucmd *ucmd, void *arg)
{
	struct rv_mr_cache *cache = &rf->mr_cache;
	struct rv_evict *cmd = arg;
	struct rv_mr_entry *e;
	LIST_HEAD(victims);
	int ret;

	ret = rv_evict_check(cmd);
	if (ret)
		return ret;
	ret = rv_file_lock_dev(rf, false);
	if (ret)
		return ret;

	spin_lock_bh(&cache->lock);
	ret = rv_evict_select(cache, cmd, &victims);
	list_for_each_entry(e, &victims, lru) {
		cmd->freed_entries++;
		cmd->freed_bytes += e->length;
	}
	/* Freed too, not counted: they were not cached any more. */
	rv_mr_reap_held(cache, &victims);
	spin_unlock_bh(&cache->lock);
	rv_mr_unmap_list(&victims);
	rv_file_unlock_dev(rf);
	rv_mr_release_list(cache, &victims);
	if (ret)
		return ret;
	return rv_ucmd_respond(ucmd, cmd, sizeof(*cmd));
}

int rv_cmd_mr_stats(struct rv_file *rf, const struct rv_ucmd *ucmd,
		    void *arg)
{
	struct rv_mr_cache *cache = &rf->mr_cache;
	struct rv_mr_stats *cmd = arg;
	u32 size = cmd->size;
	LIST_HEAD(victims);

	if (cmd->flags)
		return -EINVAL;
	/* Figures only: any process holding the file may read them. */
	mutex_lock(&rf->lock);
	if (!rf->job) {
		mutex_unlock(&rf->lock);
		return -ENOTCONN;
	}
	spin_lock_bh(&cache->lock);
	/* Figures of what is still cached, not of what waits to go. */
	rv_mr_reap_held(cache, &victims);
	*cmd = cache->stats;
	spin_unlock_bh(&cache->lock);
	rv_mr_free_victims(cache, &victims);
	mutex_unlock(&rf->lock);

	cmd->size = size;
	cmd->flags = 0;
	return rv_ucmd_respond(ucmd, cmd, sizeof(*cmd));
}
