/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rv: the per-file MR cache.  Included by rv.h, whose struct rv_file holds
 * one; it needs nothing of rv.h but the names of the structures its
 * functions take (declared below), so the two do not include each other.
 */
#ifndef RV_MR_H
#define RV_MR_H

#include <linux/interval_tree.h>
#include <linux/mmu_notifier.h>
#include <linux/scatterlist.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <rdma/rv_user_ioctls.h>

#include "rv_mr_table.h"

struct ib_mr;
struct ib_sge;
struct rv_job;
struct rv_file;
struct rv_ucmd;

/**
 * struct rv_frmr - a fast-registration MR (rv_frwr.c)
 * @mr: from ib_alloc_mr(IB_MR_TYPE_MEM_REG) in the job's PD
 * @max_pages: pages it was allocated to map
 * @lkey: @mr's lkey as registered, readable without the device
 * @rkey: @mr's rkey as registered, likewise
 */
struct rv_frmr {
	struct ib_mr *mr;
	u32 max_pages;
	u32 lkey;
	u32 rkey;
};

/*
 * Invalidated MRs a file keeps for its next registrations, so that a
 * cache miss maps and registers MRs instead of also allocating them.
 */
#define RV_MR_POOL_MRS	32

/*
 * Life of a cache entry:
 *
 *   NEW     being registered; in @handles only, invisible to lookups
 *   CACHED  registered and in the interval tree; on the LRU when unused
 *   STALE   its memory changed while in use: out of the tree, waiting for
 *           its last reference, or (on @held) for user space to drop its
 *           holds through the MR table
 *   DEAD    unused and leaving: on @dead (or a caller's private list)
 *           until it is deregistered and freed
 */
enum rv_mr_state {
	RV_MR_NEW,
	RV_MR_CACHED,
	RV_MR_STALE,
	RV_MR_DEAD,
};

/**
 * struct rv_mr_entry - one cached registration
 * @it: [start, last] in the cache's interval tree while CACHED
 * @notifier: invalidates the entry when its memory changes
 * @cache: the cache it belongs to
 * @pages: the pinned pages as a scatterlist, charged to the process's
 *	pinned_vm; pinned outside the device's read section (faulting them
 *	in may wait on user space), DMA-mapped in it
 * @pinned: @pages holds the pins (and the charge)
 * @mapped: @pages is DMA-mapped for the device and @dma filled; cleared
 *	by device removal
 * @npages: entries in @dma, pages in @pages
 * @frmrs: room for a remote-access registration's fast-registration MRs
 *	over @pages, one per key chunk (rv_mr_key_chunk()), after @dma in
 *	the entry's allocation; NULL without remote access
 * @nr_frmrs: MRs in @frmrs; 0 for local-only registrations, and once
 *	deregistered
 * @nr_reused: of @frmrs, MRs that came from the cache's pool
 * @key_shift: log2 of the bytes of address space one key chunk covers
 * @lru: on @cache->lru (CACHED and unused), @cache->held (STALE, held
 *	only through the MR table) or a free list (DEAD)
 * @length: bytes registered
 * @handle: id in @cache->handles
 * @access: RV_ACCESS_* granted, REMOTE_WRITE implying LOCAL_WRITE
 * @state: see enum rv_mr_state
 * @user_refs: REG_MEM references not yet dropped by DEREG_MEM
 * @io_refs: references of I/O in flight
 * @suspect: an MMU notifier event that may have left the pages where they
 *	were (reclaim backing off from a pinned page, a THP split, KSM):
 *	out of the MR table until rv_mr_revalidate() compares the pages
 *	mapped now with the pinned ones
 * @has_slot: @slot of the file's MR table is the entry's, until it is
 *	killed (its holds count while it has it)
 * @slot: see @has_slot
 * @slot_gen: the slot's generation while the entry is in the table (odd),
 *	else 0
 * @no_table: never to have a slot: REG_MEM gave it ordinary references
 *	when it could not post it
 * @dma: DMA address of each page of @pages, from the page holding
 *	@it.start
 *
 * Everything but @notifier, @length, @handle, @access, @npages,
 * @key_shift and @frmrs (constant after creation) is protected by
 * @cache->lock, except @pages, @pinned and @mapped: they change only
 * while the entry is NEW or DEAD (by the one task that owns it then), or
 * at device removal (when no read section is left); a write reads
 * @mapped in one.
 */
struct rv_mr_entry {
	struct interval_tree_node it;
	struct mmu_interval_notifier notifier;
	struct rv_mr_cache *cache;
	struct sg_append_table pages;
	bool pinned;
	bool mapped;
	u32 npages;
	struct rv_frmr *frmrs;
	u32 nr_frmrs;
	u32 nr_reused;
	u8 key_shift;
	struct list_head lru;
	u64 length;
	u32 handle;
	u32 access;
	enum rv_mr_state state;
	u32 user_refs;
	u32 io_refs;
	bool suspect;
	bool has_slot;
	bool no_table;
	u32 slot;
	u32 slot_gen;
	dma_addr_t dma[];
};

/**
 * struct rv_mr_cache - the MR cache of one file
 * @lock: protects @tree, @lru, @held, @dead, @closing, @stats, @pool,
 *	@table's slots and the entries' mutable fields; a spinlock because
 *	the MMU notifier takes it from contexts that cannot sleep.  Stores to @handles happen
 *	under it too, so a lookup under @lock sees a consistent entry.
 *	Write completions take it (rv_mr_put_io()) and may run in softirq
 *	context: process context takes it with spin_lock_bh().
 * @tree: CACHED entries by address range
 * @lru: CACHED entries nobody uses, most recently used first (user space
 *	may hold some through @table: eviction skips those)
 * @held: STALE entries only user space holds, through @table; freed once
 *	it drops them (rv_mr_reap_held())
 * @dead: entries invalidated by the notifier, for @free_work to free
 * @handles: handle -> entry for every entry not yet freed
 * @free_work: deregisters @dead outside the notifier (and mmap_lock)
 * @closing: the file is closing; @free_work must not be queued again
 * @sgl: scratch scatterlist of @sgl_len entries for the MRs of a
 *	registration; registrations of a file are serialised by rv_file.lock
 * @job: the file's job, set at ATTACH; an entry's mapping and
 *	registration, and their undoing, run in its device's read section,
 *	so device removal sees each entry's MRs and mapping either in
 *	@handles or gone; pinning and unpinning run outside it
 * @table: the MR table, set at ATTACH; NULL before
 * @stats: the figures MR_STATS reports (size and flags unused)
 * @pool: fast-registration MRs of freed entries, invalidated by a
 *	completed IB_WR_LOCAL_INV and ready to be mapped again; @pool_len
 *	of them
 *
 * In the lock order (rv.h): rv_file.lock -> (device read section) ->
 * @lock -> @handles' lock.  Send completions take @lock in softirq
 * (rv_mr_put_io()), so everyone takes it with spin_lock_bh().
 * The MMU notifier takes only @lock (it runs under mmap_lock and other
 * mm locks, so nothing that can wait on those may be held with @lock).
 */
struct rv_mr_cache {
	spinlock_t lock; /* see above */
	struct rb_root_cached tree;
	struct list_head lru;
	struct list_head held;
	struct list_head dead;
	struct xarray handles;
	u32 next_handle;
	struct work_struct free_work;
	bool closing;
	struct scatterlist *sgl;
	u32 sgl_len;
	struct rv_job *job;
	struct rv_mr_table *table;
	struct rv_mr_stats stats;
	u32 pool_len;
	struct rv_frmr pool[RV_MR_POOL_MRS];
};

void rv_mr_cache_init(struct rv_mr_cache *cache);
void rv_mr_cache_start(struct rv_mr_cache *cache, struct rv_job *job,
		       u64 limit, struct rv_mr_table *table);
void rv_mr_cache_teardown(struct rv_mr_cache *cache);
void rv_mr_cache_release_ib(struct rv_mr_cache *cache);

struct rv_mr_entry *rv_mr_get_io(struct rv_mr_cache *cache, u32 handle,
				 u64 addr, u64 length);
void rv_mr_put_io(struct rv_mr_entry *e);

/*
 * SGEs a write's work request carries at most: a write from a registration
 * of scattered pages takes an SGE per DMA-contiguous run; more SGEs mean
 * fewer work requests, but a bigger send queue entry on most devices.
 */
#define RV_MAX_SEND_SGE 16

/**
 * struct rv_mr_sge_iter - walks a write's source as work request SGEs
 * @e: the registration, held by the write (rv_mr_get_io())
 * @lkey: key of the SGEs: the PD's local DMA lkey
 * @pos: next byte, as a user address
 * @left: bytes not yet handed out
 */
struct rv_mr_sge_iter {
	const struct rv_mr_entry *e;
	u32 lkey;
	u64 pos;
	u64 left;
};

void rv_mr_sge_start(struct rv_mr_sge_iter *it, const struct rv_mr_entry *e,
		     u32 local_dma_lkey, u64 addr, u64 length);
u32 rv_mr_sge_next(struct rv_mr_sge_iter *it, struct ib_sge *sge,
		   u32 max_sge, u32 max_bytes, u32 *bytes);
u32 rv_mr_count_wrs(const struct rv_mr_entry *e, u64 addr, u64 length,
		    u32 max_sge, u32 max_bytes);

int rv_cmd_reg_mem(struct rv_file *rf, const struct rv_ucmd *ucmd, void *arg);
int rv_cmd_dereg_mem(struct rv_file *rf, const struct rv_ucmd *ucmd,
		     void *arg);
int rv_cmd_evict(struct rv_file *rf, const struct rv_ucmd *ucmd, void *arg);
int rv_cmd_mr_stats(struct rv_file *rf, const struct rv_ucmd *ucmd,
		    void *arg);

#endif /* RV_MR_H */
