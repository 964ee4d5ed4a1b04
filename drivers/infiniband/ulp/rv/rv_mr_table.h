/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rv: the MR table, the part of a file's MR cache mapped into its process
 * so that librv finds registrations and holds them without a system call.
 * Included by rv_mr.h.
 */
#ifndef RV_MR_TABLE_H
#define RV_MR_TABLE_H

#include <linux/atomic.h>
#include <linux/types.h>
#include <rdma/rv_user_ioctls.h>

struct mm_struct;
struct vm_area_struct;
struct rv_mr_entry;

/**
 * struct rv_mr_table - the kernel's side of a file's MR table
 * @slots: mapped read-only: only the kernel writes them, so a slot's
 *	@gen read back here is the kernel's own
 * @holds: mapped read-write: user space adds and drops its holds, the
 *	kernel reads them to decide what it may evict and adds the holds
 *	REG_MEM takes; whatever a process writes there only changes which
 *	of its own registrations stay cached
 * @used: a bit per slot given to an entry, until the entry is freed
 * @entries: slots, a power of two
 * @next: where the search for a free slot starts
 * @slots_size: bytes of @slots (page aligned)
 * @holds_size: bytes of @holds (page aligned)
 * @charged_pages: pages of both charged to @mm's pinned_vm
 * @mm: the process charged (the file's mmgrab()ed mm)
 *
 * @used, @next and the slots' contents are protected by the cache's lock
 * (rv_mr_cache.lock); the rest is constant.
 */
struct rv_mr_table {
	struct rv_mr_slot *slots;
	atomic_t *holds;
	unsigned long *used;
	u32 entries;
	u32 next;
	size_t slots_size;
	size_t holds_size;
	unsigned long charged_pages;
	struct mm_struct *mm;
};

struct rv_mr_table *rv_mr_table_alloc(u32 entries, struct mm_struct *mm);
void rv_mr_table_free(struct rv_mr_table *t);
int rv_mr_table_mmap(struct rv_mr_table *t, struct vm_area_struct *vma);

bool rv_mr_table_post(struct rv_mr_table *t, struct rv_mr_entry *e);
bool rv_mr_table_retract(struct rv_mr_table *t, struct rv_mr_entry *e);
bool rv_mr_table_retract_unheld(struct rv_mr_table *t, struct rv_mr_entry *e);
void rv_mr_table_release(struct rv_mr_table *t, struct rv_mr_entry *e);
bool rv_mr_table_held(const struct rv_mr_table *t,
		      const struct rv_mr_entry *e);
void rv_mr_table_hold(struct rv_mr_table *t, const struct rv_mr_entry *e);
void rv_mr_table_unhold(struct rv_mr_table *t, const struct rv_mr_entry *e);

#endif /* RV_MR_TABLE_H */
