// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The MR table: registration-cache hits without a system call.
 *
 * A cache hit through REG_MEM costs a system call, most of its price.
 * User-space caches avoid it but learn of unmaps through hooks that miss
 * some; here the kernel's cache, behind its MMU notifiers, stays the
 * only judge of what is cached, and user space only reads its verdicts.
 *
 * Each cached registration REG_MEM was asked to hold through the table
 * gets a slot, read-only in the process: its range, keys and an odd
 * generation.  The kernel makes the generation even before anything of
 * the registration goes (an invalidation, an eviction, device removal),
 * so a process that reads the generation it was told finds its keys
 * still good.  Holds are counts in a second, writable mapping: a process
 * adds one, reads the generation again, and owns the registration while
 * it is unchanged; the kernel evicts nothing held.  Both sides store
 * (the count, the generation) then load (the generation, the count) with
 * a full barrier between: one of them sees the other, so no hold is
 * taken on a registration being evicted, and no held one is evicted.
 *
 * The kernel never trusts the mapping: a hold is only a reason to keep
 * the process's own registration cached (within its MR cache limit and
 * RLIMIT_MEMLOCK, charged at registration as always); a write still finds
 * its registration by handle under the cache's lock and fails on a stale
 * one; nothing here is ever dereferenced from what user space wrote.
 */
#include "rv.h"

#include <linux/bitmap.h>
#include <linux/mm.h>
#include <linux/vmalloc.h>

/**
 * rv_mr_table_alloc - a table of @entries slots charged to @mm
 * @entries: a power of two, validated by ATTACH
 * @mm: the attaching process; kept alive by the file until
 *	rv_mr_table_free()
 *
 * Return: the table, ERR_PTR(-ENOMEM) when out of memory or over
 * RLIMIT_MEMLOCK.
 */
struct rv_mr_table *rv_mr_table_alloc(u32 entries, struct mm_struct *mm)
{
	struct rv_mr_table *t;
	int ret = -ENOMEM;

	t = kzalloc(sizeof(*t), GFP_KERNEL_ACCOUNT);
	if (!t)
		return ERR_PTR(-ENOMEM);
	t->entries = entries;
	t->slots_size = PAGE_ALIGN(RV_MR_TABLE_MMAP_SIZE(entries));
	t->holds_size = PAGE_ALIGN(RV_MR_HOLDS_MMAP_SIZE(entries));
	t->charged_pages = (t->slots_size + t->holds_size) >> PAGE_SHIFT;
	ret = rv_pin_charge(mm, t->charged_pages);
	if (ret)
		goto out_free_table;
	t->mm = mm;

	ret = -ENOMEM;
	t->used = bitmap_zalloc(entries, GFP_KERNEL_ACCOUNT);
	if (!t->used)
		goto out_uncharge;
	t->slots = rv_shared_area_alloc(t->slots_size);
	if (!t->slots)
		goto out_free_used;
	t->holds = rv_shared_area_alloc(t->holds_size);
	if (!t->holds)
		goto out_free_slots;
	return t;

out_free_slots:
	vfree(t->slots);
out_free_used:
	bitmap_free(t->used);
out_uncharge:
	rv_pin_uncharge(mm, t->charged_pages);
out_free_table:
	kfree(t);
	return ERR_PTR(ret);
}

/* Once no mapping is left: the file is being released. */
void rv_mr_table_free(struct rv_mr_table *t)
{
	if (!t)
		return;
	rv_pin_uncharge(t->mm, t->charged_pages);
	vfree(t->holds);
	vfree(t->slots);
	bitmap_free(t->used);
	kfree(t);
}

/**
 * rv_mr_table_mmap - map the slots (read-only) or the holds
 * @t: the file's table
 * @vma: at RV_MR_TABLE_MMAP_OFFSET or RV_MR_HOLDS_MMAP_OFFSET, shared
 *
 * Return: 0, -EACCES (the slots asked for with write access), -EINVAL
 * (not shared, or not the whole area).
 */
int rv_mr_table_mmap(struct rv_mr_table *t, struct vm_area_struct *vma)
{
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (vma->vm_pgoff == RV_MR_HOLDS_MMAP_OFFSET >> PAGE_SHIFT)
		return rv_shared_area_mmap(vma, t->holds, t->holds_size);
	if (vma->vm_flags & VM_WRITE)
		return -EACCES;
	/* Nor later through mprotect(). */
	vm_flags_clear(vma, VM_MAYWRITE);
	return rv_shared_area_mmap(vma, t->slots, t->slots_size);
}

/* A slot no entry has and nobody holds, or -1.  Under the cache's lock. */
static int rv_mr_table_find_slot(struct rv_mr_table *t)
{
	u32 i, n;

	for (n = 0; n < t->entries; n++) {
		i = (t->next + n) & (t->entries - 1);
		/* Holds left over from a freed entry: its holder drops them. */
		if (!test_bit(i, t->used) && !atomic_read(&t->holds[i])) {
			t->next = i + 1;
			return i;
		}
	}
	return -1;
}

/**
 * rv_mr_table_post - give a CACHED entry a slot, if it fits one
 * @t: the file's table, or NULL (the file has none)
 * @e: the entry; caller holds its cache's lock
 *
 * Return: whether @e is in the table now (e->slot_gen odd).
 */
bool rv_mr_table_post(struct rv_mr_table *t, struct rv_mr_entry *e)
{
	struct rv_mr_slot *s;
	u32 i, gen;
	int slot;

	if (!t || e->nr_frmrs > RV_MR_SLOT_KEYS || e->slot_gen || e->no_table)
		return !!e->slot_gen;
	/* An entry that lost its keys to device removal is not CACHED. */
	if (!e->has_slot) {
		slot = rv_mr_table_find_slot(t);
		if (slot < 0)
			return false;
		__set_bit(slot, t->used);
		e->slot = slot;
		e->has_slot = true;
	}
	s = &t->slots[e->slot];
	s->handle = e->handle;
	s->addr = e->it.start;
	s->length = e->length;
	s->access = e->access;
	s->rkey_shift = e->nr_frmrs ? e->key_shift : 0;
	s->nr_keys = e->nr_frmrs;
	for (i = 0; i < RV_MR_SLOT_KEYS; i++) {
		s->lkeys[i] = i < e->nr_frmrs ? e->frmrs[i].lkey : 0;
		s->rkeys[i] = i < e->nr_frmrs ? e->frmrs[i].rkey : 0;
	}
	/* Even while the slot was free: the next odd value. */
	gen = s->gen + 1;
	e->slot_gen = gen;
	/* The contents before the generation that vouches for them. */
	smp_store_release(&s->gen, gen);
	return true;
}

/**
 * rv_mr_table_retract - take @e out of the table for good
 * @t: the file's table, or NULL
 * @e: the entry; caller holds its cache's lock
 *
 * Called before anything of @e goes (its keys, its pages).  The slot
 * stays @e's until rv_mr_table_release(), so its holds still count.
 * Return: whether @e is held.
 */
bool rv_mr_table_retract(struct rv_mr_table *t, struct rv_mr_entry *e)
{
	if (!e->slot_gen)
		return rv_mr_table_held(t, e);
	WRITE_ONCE(t->slots[e->slot].gen, e->slot_gen + 1);
	e->slot_gen = 0;
	/* Pairs with the barrier of a holder's atomic add: see above. */
	smp_mb();
	return rv_mr_table_held(t, e);
}

/**
 * rv_mr_table_retract_unheld - retract @e only if nobody holds it
 * @t: the file's table, or NULL
 * @e: the entry; caller holds its cache's lock
 *
 * For eviction.  A held entry keeps its slot and generation, as if never
 * looked at.  Return: whether @e was retracted (or was never posted).
 */
bool rv_mr_table_retract_unheld(struct rv_mr_table *t, struct rv_mr_entry *e)
{
	u32 gen = e->slot_gen;

	if (!rv_mr_table_retract(t, e))
		return true;
	if (gen) {
		e->slot_gen = gen;
		/* Nothing changed: a hold that saw the even value retries. */
		smp_store_release(&t->slots[e->slot].gen, gen);
	}
	return false;
}

/* @e is being freed: its slot may go to another entry.  Under the lock. */
void rv_mr_table_release(struct rv_mr_table *t, struct rv_mr_entry *e)
{
	if (!e->has_slot)
		return;
	if (e->slot_gen)
		rv_mr_table_retract(t, e);
	__clear_bit(e->slot, t->used);
	e->has_slot = false;
}

/* Whether user space holds @e through its slot.  Any context. */
bool rv_mr_table_held(const struct rv_mr_table *t,
		      const struct rv_mr_entry *e)
{
	return e->has_slot && atomic_read(&t->holds[e->slot]);
}

/* REG_MEM's hold on a posted @e, for user space to drop. */
void rv_mr_table_hold(struct rv_mr_table *t, const struct rv_mr_entry *e)
{
	atomic_inc(&t->holds[e->slot]);
}

/* Undo rv_mr_table_hold() when the caller never learnt of it. */
void rv_mr_table_unhold(struct rv_mr_table *t, const struct rv_mr_entry *e)
{
	atomic_dec(&t->holds[e->slot]);
}
