// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Registration-cache hits without a system call, through rv's MR table
 * (rv(7), "MR table").
 *
 * The kernel's cache stays the judge: it posts each registration it was
 * asked to hold through the table into a read-only slot with an odd
 * generation, and makes the generation even before anything of the
 * registration goes.  Here, a request seen before (same address, length
 * and access) names its slot and the generation it had; a hit is that
 * generation still there after this process added a hold to the slot's
 * count.  Anything else (the slot retracted, a request never seen) goes to
 * the kernel, which answers as always and tells the slot it used.
 *
 * rv_dereg_mem() drops a hold by subtracting it, again without a system
 * call: once a registration has a slot the kernel only ever gives holds
 * on it, so a handle found in the small open-addressing map from handle
 * to slot is dropped there, any other with DEREG_MEM.
 *
 * Neither a hit nor a release takes a lock: the hints are read under a
 * sequence count, the map with atomic loads (a miss looks again under
 * the mutex that serialises their writers), and the kernel's side is
 * reached only through atomics on the mapping: one atomic add per hit,
 * one subtraction per release.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <rv/librv.h>
#include "librv_internal.h"

/* Bumped in every child of fork(): the table is not mapped there. */
static unsigned int rv_fork_generation;
static pthread_once_t rv_atfork_once = PTHREAD_ONCE_INIT;

static void rv_atfork_child(void)
{
	rv_fork_generation++;
}

static void rv_atfork_register(void)
{
	pthread_atfork(NULL, NULL, rv_atfork_child);
}

/*
 * A request seen before and the slot the kernel answered it with, under
 * a sequence count: odd while rv_mr_table_learn() rewrites it, so that a
 * lookup, which takes no lock, never uses a torn copy.
 */
struct rv_mr_hint {
	uint32_t seq;
	uint32_t access;
	uint64_t addr;
	uint64_t length;
	uint32_t slot;
	uint32_t gen;			/* the slot's then: 0 when empty */
};

struct rv_mr_table {
	const struct rv_mr_slot *slots;
	size_t slots_len;
	uint32_t *holds;
	size_t holds_len;
	uint32_t entries;
	unsigned int fork_generation;
	/* Serialises the writers of @hints, @owner and @by_handle. */
	pthread_mutex_t lock;
	/* The handle whose holds each slot counts here, 0: none. */
	uint32_t *owner;		/* @entries */
	struct rv_mr_hint *hints;	/* @entries, by request hash */
	uint32_t *by_handle;		/* 2 x @entries: slot + 1, or 0 */
	uint32_t handle_mask;
	/* Counted without a lock: exact unless threads race. */
	uint64_t hits, misses, releases;
};

/* Fibonacci hashing: the multiplier is 2^64 divided by the golden ratio. */
static uint32_t rv_hash(uint64_t v, uint32_t mask)
{
	return (uint32_t)((v * 0x9e3779b97f4a7c15ULL) >> 32) & mask;
}

static uint32_t rv_hint_index(const struct rv_mr_table *t, uint64_t addr,
			      uint64_t length, uint32_t access)
{
	return rv_hash(addr ^ (length << 20) ^ access, t->entries - 1);
}

#define LOAD(p) __atomic_load_n(p, __ATOMIC_RELAXED)
#define STORE(p, v) __atomic_store_n(p, v, __ATOMIC_RELAXED)

/* A statistic: a lost update when threads race beats a locked add. */
static void rv_count(uint64_t *c)
{
	STORE(c, LOAD(c) + 1);
}

/* The table when this process may use it, NULL otherwise. */
static struct rv_mr_table *rv_table(const struct rv *rv)
{
	struct rv_mr_table *t = rv->mr_table;

	return t && t->fork_generation == rv_fork_generation ? t : NULL;
}

bool rv_mr_table_active(const struct rv *rv)
{
	return rv_table(rv);
}

int rv_mr_table_map_attached(struct rv *rv, uint32_t entries)
{
	struct rv_mr_table *t;
	const char *env;
	void *p;
	int ret = -ENOMEM;

	/* No table (an older rv), or the user wants the ioctls only. */
	env = getenv("RV_MR_TABLE");
	if (!entries || (env && !strcmp(env, "0")))
		return 0;
	pthread_once(&rv_atfork_once, rv_atfork_register);
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->entries = entries;
	t->fork_generation = rv_fork_generation;
	t->handle_mask = 2 * entries - 1;
	t->owner = calloc(entries, sizeof(*t->owner));
	t->hints = calloc(entries, sizeof(*t->hints));
	t->by_handle = calloc(2 * (size_t)entries, sizeof(*t->by_handle));
	if (!t->owner || !t->hints || !t->by_handle)
		goto out_free;
	pthread_mutex_init(&t->lock, NULL);

	t->slots_len = RV_MR_TABLE_MMAP_SIZE(entries);
	p = mmap(NULL, t->slots_len, PROT_READ, MAP_SHARED, rv->fd,
		 RV_MR_TABLE_MMAP_OFFSET);
	if (p == MAP_FAILED)
		goto out_errno;
	t->slots = p;
	t->holds_len = RV_MR_HOLDS_MMAP_SIZE(entries);
	p = mmap(NULL, t->holds_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		 rv->fd, RV_MR_HOLDS_MMAP_OFFSET);
	if (p == MAP_FAILED)
		goto out_unmap_slots;
	t->holds = p;
	rv->mr_table = t;
	return 0;

out_unmap_slots:
	ret = -errno;
	munmap((void *)t->slots, t->slots_len);
	goto out_destroy;
out_errno:
	ret = -errno;
out_destroy:
	pthread_mutex_destroy(&t->lock);
out_free:
	free(t->by_handle);
	free(t->hints);
	free(t->owner);
	free(t);
	return ret;
}

void rv_mr_table_unmap(struct rv *rv)
{
	struct rv_mr_table *t = rv->mr_table;

	if (!t)
		return;
	/* In a child of fork() there is nothing mapped to unmap. */
	if (t->fork_generation == rv_fork_generation) {
		munmap(t->holds, t->holds_len);
		munmap((void *)t->slots, t->slots_len);
	}
	pthread_mutex_destroy(&t->lock);
	free(t->by_handle);
	free(t->hints);
	free(t->owner);
	free(t);
	rv->mr_table = NULL;
}

/*
 * Slot of @handle in the map, or -1.  Lock-free readers may miss an
 * entry a writer is moving; they then look again under t->lock.
 */
static int rv_handle_find(const struct rv_mr_table *t, uint32_t handle)
{
	uint32_t i = rv_hash(handle, t->handle_mask), n, v;

	for (n = 0; n <= t->handle_mask; n++, i = (i + 1) & t->handle_mask) {
		v = LOAD(&t->by_handle[i]);
		if (!v)
			break;
		if (LOAD(&t->owner[v - 1]) == handle)
			return (int)v - 1;
	}
	return -1;
}

/*
 * Forget the map's entry for the handle of @slot (linear probing:
 * later entries of the run move back into the hole).  Under t->lock.
 */
static void rv_handle_forget(struct rv_mr_table *t, uint32_t slot)
{
	uint32_t i = rv_hash(t->owner[slot], t->handle_mask);
	uint32_t j, home;

	while (t->by_handle[i] != slot + 1) {
		if (!t->by_handle[i])
			return;
		i = (i + 1) & t->handle_mask;
	}
	for (j = i;;) {
		STORE(&t->by_handle[i], 0);
		for (;;) {
			j = (j + 1) & t->handle_mask;
			if (!t->by_handle[j])
				return;
			home = rv_hash(t->owner[t->by_handle[j] - 1],
				       t->handle_mask);
			/* Moves back unless its home is cyclically in (i, j]. */
			if (i <= j ? (home <= i || home > j) :
				     (home <= i && home > j))
				break;
		}
		STORE(&t->by_handle[i], t->by_handle[j]);
		i = j;
	}
}

/* Under t->lock; @slot's owner is set. */
static void rv_handle_add(struct rv_mr_table *t, uint32_t slot)
{
	uint32_t i = rv_hash(t->owner[slot], t->handle_mask);

	/* At most @entries of 2 x @entries are used: there is a hole. */
	while (t->by_handle[i])
		i = (i + 1) & t->handle_mask;
	STORE(&t->by_handle[i], slot + 1);
}

/*
 * Fill @out as REG_MEM would have for [@addr, @addr + @length) from the
 * slot this process holds, with the keys into @rkeys.  False when
 * @rkeys is too short: the kernel then says how many are needed.
 */
static bool rv_mr_table_answer(const struct rv_mr_slot *s, uint32_t slot,
			       uint64_t addr, uint64_t length,
			       unsigned int access, struct rv_reg_mem *out,
			       uint32_t *rkeys, uint32_t nr_rkeys)
{
	uint32_t first = 0, nr_keys = 0, i;

	if (s->nr_keys) {
		first = (uint32_t)((addr >> s->rkey_shift) -
				   (s->addr >> s->rkey_shift));
		nr_keys = (uint32_t)(((addr + length - 1) >> s->rkey_shift) -
				     (addr >> s->rkey_shift)) + 1;
		/* REG_MEM's EOVERFLOW: one key is given without room. */
		if (nr_keys > nr_rkeys && nr_keys > 1)
			return false;
		for (i = 0; rkeys && i < nr_keys && i < nr_rkeys; i++)
			rkeys[i] = s->rkeys[first + i];
	}
	if (!out)
		return true;
	/* Every field, as REG_MEM writes them (no memset: this is hot). */
	*out = (struct rv_reg_mem){
		.size = sizeof(*out),
		.flags = RV_REG_MEM_F_TABLE_HOLD,
		.addr = addr,
		.length = length,
		.access = access,
		.handle = s->handle,
		.lkey = nr_keys ? s->lkeys[first] : 0,
		.rkey = nr_keys ? s->rkeys[first] : 0,
		.iova = addr,
		.region_addr = s->addr,
		.region_length = s->length,
		.rkeys = (uintptr_t)rkeys,
		.nr_rkeys = nr_keys,
		.rkey_shift = nr_keys ? s->rkey_shift : 0,
		.table_slot = slot,
		.table_gen = s->gen,
	};
	return true;
}

int rv_mr_table_lookup(struct rv *rv, uint64_t addr, uint64_t length,
		       unsigned int access, struct rv_reg_mem *out,
		       uint32_t *rkeys, uint32_t nr_rkeys)
{
	struct rv_mr_table *t = rv_table(rv);
	const struct rv_mr_slot *s;
	struct rv_mr_hint *h;
	uint32_t seq, slot, gen;
	bool same;

	if (!t)
		return 0;
	/* As the kernel sees it: remote write implies local write. */
	if (access & RV_ACCESS_REMOTE_WRITE)
		access |= RV_ACCESS_LOCAL_WRITE;
	h = &t->hints[rv_hint_index(t, addr, length, access)];
	seq = __atomic_load_n(&h->seq, __ATOMIC_ACQUIRE);
	same = LOAD(&h->addr) == addr && LOAD(&h->length) == length &&
	       LOAD(&h->access) == access;
	slot = LOAD(&h->slot);
	gen = LOAD(&h->gen);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if ((seq & 1) || !same || !gen ||
	    LOAD(&h->seq) != seq || slot >= t->entries)
		goto out_miss;
	s = &t->slots[slot];
	/* The very registration that answered this request before. */
	if (__atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) != gen)
		goto out_miss;
	/*
	 * The kernel makes the generation even, then reads the count; we
	 * add to the count, then read the generation: with a full barrier
	 * on each side, one of us sees the other.
	 */
	__atomic_fetch_add(&t->holds[slot], 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&s->gen, __ATOMIC_SEQ_CST) != gen ||
	    !rv_mr_table_answer(s, slot, addr, length, access, out, rkeys,
				nr_rkeys)) {
		__atomic_fetch_sub(&t->holds[slot], 1, __ATOMIC_RELEASE);
		goto out_miss;
	}
	rv_count(&t->hits);
	return (int)s->handle;

out_miss:
	rv_count(&t->misses);
	return 0;
}

void rv_mr_table_learn(struct rv *rv, const struct rv_reg_mem *cmd,
		       unsigned int access)
{
	struct rv_mr_table *t = rv_table(rv);
	struct rv_mr_hint *h;
	uint32_t slot;

	if (!t || !cmd->table_gen || cmd->table_slot >= t->entries)
		return;
	if (access & RV_ACCESS_REMOTE_WRITE)
		access |= RV_ACCESS_LOCAL_WRITE;
	slot = cmd->table_slot;
	pthread_mutex_lock(&t->lock);
	/*
	 * A slot goes to another registration only once nobody holds it;
	 * the same registration (handles are not reused) keeps its entry.
	 */
	if (t->owner[slot] != cmd->handle) {
		if (t->owner[slot])
			rv_handle_forget(t, slot);
		STORE(&t->owner[slot], cmd->handle);
		rv_handle_add(t, slot);
	}
	/* Even: held, but not posted now; nothing to find it by. */
	if (cmd->table_gen & 1) {
		h = &t->hints[rv_hint_index(t, cmd->addr, cmd->length,
					    access)];
		STORE(&h->seq, h->seq + 1);
		__atomic_thread_fence(__ATOMIC_RELEASE);
		STORE(&h->addr, cmd->addr);
		STORE(&h->length, cmd->length);
		STORE(&h->access, access);
		STORE(&h->slot, slot);
		STORE(&h->gen, cmd->table_gen);
		__atomic_store_n(&h->seq, h->seq + 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&t->lock);
}

int rv_mr_table_release(struct rv *rv, unsigned int handle)
{
	struct rv_mr_table *t = rv_table(rv);
	uint32_t old;
	int slot;

	if (!t || !handle)
		return -ENOENT;
	slot = rv_handle_find(t, handle);
	if (slot < 0) {
		/* Maybe moved by a writer as we looked: look again, locked. */
		pthread_mutex_lock(&t->lock);
		slot = rv_handle_find(t, handle);
		pthread_mutex_unlock(&t->lock);
		if (slot < 0)
			return -ENOENT;
	}
	/*
	 * A registration's references are all holds once it has a slot
	 * (the kernel never mixes them).  Our use of it ends before the
	 * hold does; a count at 0 is a release too many (DEREG_MEM's
	 * EINVAL), not a reason to wrap it.
	 */
	old = LOAD(&t->holds[slot]);
	do {
		if (!old)
			return -EINVAL;
	} while (!__atomic_compare_exchange_n(&t->holds[slot], &old, old - 1,
					      false, __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
	rv_count(&t->releases);
	return (int)((old - 1) & INT32_MAX);
}

int rv_mr_table_stats(struct rv *rv, struct rv_mr_table_stats *st)
{
	struct rv_mr_table *t;
	uint32_t i;

	if (!rv || !st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	t = rv_table(rv);
	if (!t)
		return 0;
	st->entries = t->entries;
	st->hits = LOAD(&t->hits);
	st->misses = LOAD(&t->misses);
	st->releases = LOAD(&t->releases);
	for (i = 0; i < t->entries; i++) {
		if (__atomic_load_n(&t->slots[i].gen, __ATOMIC_RELAXED) & 1)
			st->live++;
		st->held += __atomic_load_n(&t->holds[i], __ATOMIC_RELAXED);
	}
	return 0;
}
