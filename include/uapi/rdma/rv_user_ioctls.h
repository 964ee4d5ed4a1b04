/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * rv: a rendezvous module for RDMA middleware.
 *
 * /dev/rv gives the processes of one job on a node a shared pool of
 * kernel-owned RC QPs per remote node, a per-process MR cache and an
 * event ring.  This header is the whole user/kernel contract.
 *
 * Conventions, shared by every command:
 *
 * - The ioctl number carries no size.  Each argument struct starts with
 *   "__u32 size; __u32 flags;".  User space sets @size to sizeof() of the
 *   struct it was compiled with.  The kernel accepts any @size from the
 *   command's minimum (the struct as first released) upwards: fields past
 *   the caller's @size read as zero, and bytes past the kernel's struct must
 *   be zero.  Output fields are written back only up to min(@size, kernel
 *   size).
 * - Unknown bits in @flags are rejected.
 * - A command's minimum @size is the size of its struct as first
 *   released: 64 for rv_query, rv_attach and rv_conn_query (each says
 *   which fields were appended), the current size for every other.
 * - Addresses are __aligned_u64, objects are named by small integer
 *   handles; no kernel pointer is ever returned.
 * - The layout is identical for i386, x32 and x86-64 (no implicit
 *   padding), so the same ioctl works for 32-bit callers unchanged.
 *
 * Errors common to all commands:
 *
 *  ENOTTY  unknown command
 *  EFAULT  the argument pointer (or a pointer inside it) is not accessible
 *  EINVAL  @size below the command's minimum, an unknown @flags bit, or a
 *          field out of range (each command lists its fields)
 *  E2BIG   @size larger than the kernel's struct and the extra bytes are
 *          not all zero (a newer feature this kernel does not know), or
 *          @size above 4096
 *  ENOMEM  out of kernel memory
 *
 * Errors common to every command that needs ATTACH first:
 *
 *  ENOTCONN  this file is not attached
 *  EPERM     the caller's address space (mm) is not the one of the process
 *            that attached: a forked child or a process the file was passed
 *            to cannot use it
 */
#ifndef _UAPI_RDMA_RV_USER_IOCTLS_H
#define _UAPI_RDMA_RV_USER_IOCTLS_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define RV_IOCTL_TYPE 0xC5

enum {
	RV_CMD_QUERY = 0x00,
	RV_CMD_ATTACH = 0x01,
	RV_CMD_REG_MEM = 0x02,
	RV_CMD_DEREG_MEM = 0x03,
	RV_CMD_EVICT = 0x04,
	RV_CMD_MR_STATS = 0x05,
	RV_CMD_CONN_CREATE = 0x06,
	RV_CMD_CONN_CONNECT = 0x07,
	RV_CMD_CONN_QUERY = 0x08,
	RV_CMD_CONN_DESTROY = 0x09,
	RV_CMD_POST_WRITE = 0x0a,
	RV_CMD_POST_WRITES = 0x0b,
	RV_CMD_STATS = 0x0c,
	RV_CMD_DUMP = 0x0d,
	RV_CMD_LAUNCHER_JOB = 0x0e,
};

/* Limits, also reported by RV_IOCTL_QUERY. */
#define RV_JOB_KEY_MAX		16
#define RV_MAX_CONN_PER_NODE	16
#define RV_MIN_SLOT_BITS	1
#define RV_MAX_SLOT_BITS	16
#define RV_MIN_RING_ENTRIES	64
#define RV_MAX_RING_ENTRIES	(1U << 20)
#define RV_MIN_HEARTBEAT_MS	50
#define RV_MAX_HEARTBEAT_MS	600000
/* Longest slot quarantine (module parameter slot_quarantine_ms), 10 min. */
#define RV_SLOT_QUARANTINE_MAX_MS	600000
/* ATTACH's @heartbeat_ms value that turns heartbeats off for the job. */
#define RV_HEARTBEAT_OFF	0xffffffffU

/**
 * struct rv_query - what this rv supports
 * @size: sizeof(struct rv_query)
 * @flags: must be 0
 * @cmd_mask: out: bit N set when command number N (RV_CMD_*) is supported
 * @attach_flags: out: RV_ATTACH_F_* bits this kernel accepts
 * @max_conn_per_node: out: most RC QPs per remote node (num_conn)
 * @max_slot_bits: out: most immediate bits that may name a slot
 * @min_slot_bits: out: fewest immediate bits that may name a slot
 * @max_ring_entries: out: largest event ring (entries)
 * @min_ring_entries: out: smallest event ring (entries)
 * @max_job_key_len: out: longest job key in bytes
 * @default_num_conn: out: num_conn used when ATTACH passes 0
 * @default_slot_bits: out: slot_bits used when ATTACH passes 0
 * @default_ring_entries: out: ring_entries used when ATTACH passes 0
 * @default_mr_cache_bytes: out: MR cache limit used when ATTACH passes 0
 * @cm_port: out: port rv's rdma_cm listener uses (module parameter cm_port,
 *	a privileged port: 1..1023)
 * @conn_wqe_budget: out: send (and receive) queue entries per remote node,
 *	split between a connection's QPs (module parameter conn_wqe_budget)
 * @conn_timeout_ms: out: establishment timeout CONN_CONNECT uses when it
 *	passes 0 (module parameter conn_timeout_ms)
 * @conn_query_flags: out: RV_CONN_QUERY_F_* bits this kernel accepts
 * @default_heartbeat_ms: out: heartbeat interval used when ATTACH passes
 *	0 (module parameter heartbeat_ms), or RV_HEARTBEAT_OFF
 * @slot_quarantine_ms: out: how long a slot stays out of use after its
 *	process detached (module parameter slot_quarantine_ms; see "Slot
 *	reuse" at ATTACH); 0: reused at once (kernels before this field
 *	reported 0 here, and reused slots at once)
 *
 * Needs no ATTACH.  Minimum @size: 64 (up to @default_mr_cache_bytes, the
 * first release); the fields from @cm_port on were appended later.
 * Errors: only the common ones.
 */
struct rv_query {
	__u32 size;
	__u32 flags;
	__aligned_u64 cmd_mask;
	__u32 attach_flags;
	__u32 max_conn_per_node;
	__u32 max_slot_bits;
	__u32 min_slot_bits;
	__u32 max_ring_entries;
	__u32 min_ring_entries;
	__u32 max_job_key_len;
	__u32 default_num_conn;
	__u32 default_slot_bits;
	__u32 default_ring_entries;
	__aligned_u64 default_mr_cache_bytes;
	__u32 cm_port;
	__u32 conn_wqe_budget;
	__u32 conn_timeout_ms;
	__u32 conn_query_flags;
	__u32 default_heartbeat_ms;
	__u32 slot_quarantine_ms;
};

#define RV_IOCTL_QUERY _IO(RV_IOCTL_TYPE, RV_CMD_QUERY)

/**
 * struct rv_attach - bind this open file to a device port and a job
 * @size: sizeof(struct rv_attach)
 * @flags: must be 0 (no RV_ATTACH_F_* flag is defined yet)
 * @dev_index: in: the RDMA device's kernel index (the number "rdma dev"
 *	prints, ibv_get_device_index()); unlike the name it survives renames
 * @port_num: in: the port on that device, from 1
 * @gid_index: in: local GID table index giving the source address the
 *	job's connections will use
 * @job_key_len: in: bytes used in @job_key, 1..RV_JOB_KEY_MAX
 * @job_key: in: the job's key; bytes past @job_key_len must be 0
 * @num_conn: in/out: RC QPs per remote node for the job, 1..
 *	RV_MAX_CONN_PER_NODE, 0 for the module default; on return the value
 *	in effect
 * @slot_bits: in/out: high bits of a write's immediate naming the
 *	destination process slot, RV_MIN_SLOT_BITS..RV_MAX_SLOT_BITS, 0 for
 *	the default; the job has 2^@slot_bits slots; on return the value in
 *	effect
 * @ring_entries: in/out: this process's event ring size, a power of two in
 *	RV_MIN_RING_ENTRIES..RV_MAX_RING_ENTRIES, 0 for the default; on
 *	return the value in effect
 * @slot: out: this process's slot index in the job (see "Slot reuse")
 * @mr_cache_bytes: in/out: this process's MR cache limit in bytes, at
 *	most the module parameter max_mr_cache_bytes (64 GiB by default),
 *	0 for the module default; on return the value in effect
 * @heartbeat_ms: in/out: job-wide: each QP of the job's connections that
 *	saw no completion for this long sends a zero-length RDMA WRITE, so a
 *	dead path is noticed (and the QP replaced) even when no traffic
 *	flows, in both directions; RV_MIN_HEARTBEAT_MS..RV_MAX_HEARTBEAT_MS,
 *	RV_HEARTBEAT_OFF, or 0 for the module default; on return the value
 *	in effect
 * @rsvd: must be 0
 *
 * The fields from @heartbeat_ms on were appended: the minimum @size is 64.
 *
 * All files of one uid that attach with the same job key to the same
 * device and port form one job; the first creates it.  @num_conn,
 * @slot_bits and @gid_index are job-wide; @ring_entries and
 * @mr_cache_bytes are per process.  Closing the file detaches; the job
 * and its connections end with its last process.
 *
 * Slot reuse.  A process's slot goes, when it closes the file, into
 * quarantine for slot_quarantine_ms (RV_IOCTL_QUERY's
 * @slot_quarantine_ms; 10 s by default): no ATTACH gets it meanwhile, and
 * a write naming it that arrives meanwhile is dropped and counted in the
 * connection's @drops_no_slot, as for a slot nobody ever held.  Slots are
 * also handed out next-fit (the lowest free slot above the last one given,
 * wrapping to 0), so a freed slot is the last to be given again.
 * Guaranteed: a write that arrives on this node within slot_quarantine_ms
 * of its destination's close is never delivered to another process; nor
 * is a write posted to an earlier job of the same key delivered to a
 * later one (the earlier job's QPs are gone with it).  Not guaranteed:
 * a write that arrives after the quarantine, which reaches whoever holds
 * the slot then.  The default outlasts the time an RC QP retransmits a
 * write before it fails (7 tries of 4.096 us * 2^ack_timeout: 0.94 s at
 * rv's default ack_timeout 15, 7.5 s at 18), and rv never re-sends a
 * failed write; a sender that posts later, not knowing that its peer
 * left, is the middleware's to prevent (it learns of the departure by
 * its own means).
 *
 * Errors:
 *  EINVAL     @port_num not a port of the device, @gid_index not a valid
 *             GID entry, @job_key_len or a size out of range, non-zero key
 *             bytes past @job_key_len, @ring_entries not a power of two,
 *             @mr_cache_bytes above max_mr_cache_bytes, @rsvd not 0
 *  ENODEV     no RDMA device has @dev_index, or it is being removed, or
 *             the caller's network namespace may not use it (netns
 *             exclusive mode, "rdma system set netns exclusive")
 *  EPROTONOSUPPORT  the port is not RoCE (native InfiniBand, OPA): a job's
 *             address is its GID as an IP address, which only RoCE has
 *  EALREADY   this file is already attached
 *  EBUSY      the job exists with a different @num_conn, @slot_bits,
 *             @gid_index or @heartbeat_ms (after defaults are applied)
 *  ENOSPC     every slot of the job is taken by an attached process
 *  EAGAIN     every slot not taken is in quarantine (a process of the job
 *             closed less than slot_quarantine_ms ago): retry later
 *  ENOMEM     out of memory, or the event ring would exceed the caller's
 *             RLIMIT_MEMLOCK (one budget with its MR cache's pins: both
 *             count in the process's VmPin) or its memory cgroup's limit
 *  EDQUOT     the job does not exist yet and the caller's uid (its real
 *             uid, the job's owner) already holds max_jobs_per_uid jobs
 *             (a module parameter; root is not exempt); joining an
 *             existing job is not refused, unless it has its launcher's
 *             max_procs processes attached (RV_IOCTL_LAUNCHER_JOB)
 *  EADDRINUSE rv has no listener in the caller's network namespace yet
 *             and cannot bind cm_port there: something else holds it
 *  EPERM      the launcher bound the caller's uid and @job_key to a job
 *             (RV_IOCTL_LAUNCHER_JOB) and the caller is not in that job's
 *             cgroup, or that job ended; or the module parameter
 *             launcher_jobs_only is set and no launcher bound them
 */
struct rv_attach {
	__u32 size;
	__u32 flags;
	__u32 dev_index;
	__u32 port_num;
	__u32 gid_index;
	__u32 job_key_len;
	__u8 job_key[RV_JOB_KEY_MAX];
	__u32 num_conn;
	__u32 slot_bits;
	__u32 ring_entries;
	__u32 slot;
	__aligned_u64 mr_cache_bytes;
	__u32 heartbeat_ms;
	__u32 rsvd;
};

#define RV_IOCTL_ATTACH _IO(RV_IOCTL_TYPE, RV_CMD_ATTACH)

/*
 * Memory registration.  Each attached file has its own MR cache: a
 * registration stays cached after the caller drops it, until the cache
 * needs the room (least recently used first), the caller evicts it, or the
 * memory behind it changes (munmap, mremap, madvise(MADV_DONTNEED or
 * MADV_FREE), brk shrink, exit).  A cached registration is never handed
 * out once its memory has changed.
 */

/* Access a registration grants; REMOTE_WRITE implies LOCAL_WRITE. */
#define RV_ACCESS_LOCAL_WRITE	(1U << 0)
#define RV_ACCESS_REMOTE_WRITE	(1U << 1)
#define RV_ACCESS_REMOTE_READ	(1U << 2)

/* Most rkeys one registration may need (REG_MEM fails with E2BIG above). */
#define RV_MAX_REG_KEYS		4096

/**
 * struct rv_reg_mem - register [@addr, @addr + @length) or find it cached
 * @size: sizeof(struct rv_reg_mem)
 * @flags: must be 0
 * @addr: in: start of the buffer in the caller's address space
 * @length: in: bytes, at least 1
 * @access: in: RV_ACCESS_* bits
 * @handle: out: names the registration in DEREG_MEM and later commands;
 *	handles are per file and a hit returns the handle of the cached entry
 * @lkey: out: local key of @rkey's MR with remote access, else 0 (rv's
 *	writes name their source by @handle, never by key)
 * @rkey: out: remote key a peer uses to write into (or read) the chunk
 *	holding @addr (the only chunk when @nr_rkeys is 1); 0 without
 *	RV_ACCESS_REMOTE_WRITE or RV_ACCESS_REMOTE_READ in @access
 * @iova: out: the address a peer uses with @rkey for the byte at @addr
 *	(offsets from @addr carry over unchanged)
 * @region_addr: out: start of the cached region that covers the request
 * @region_length: out: length of that region
 * @rkeys: in: user pointer to an array of @nr_rkeys __u32, or 0
 * @nr_rkeys: in: entries @rkeys holds; out: the keys the request needs
 *	(0 without remote access in @access), written to
 *	@rkeys[0..@nr_rkeys - 1]
 * @rkey_shift: out: log2 of the bytes of a key chunk; 0 without remote
 *	access
 *
 * Remote keys.  The device maps a limited number of pages per MR, so rv
 * cuts the address space into chunks of 1 << @rkey_shift bytes, aligned
 * to their size (2 MiB on rxe, bnxt_re, hns and erdma with 4 KiB pages,
 * 1 GiB on irdma; the module parameter frwr_max_pages lowers it), and
 * gives a remote-access registration one key per chunk it touches.  The
 * key of remote address @r (with @iova <= @r < @iova + @length) is
 * @rkeys[(@r >> @rkey_shift) - (@iova >> @rkey_shift)], and one RDMA
 * operation must stay within one chunk: split a write where
 * (@r >> @rkey_shift) changes.  A request inside one chunk needs no
 * array: @rkey is its key.
 *
 * A request that lies inside a cached region registered with the same
 * remote access bits (RV_ACCESS_REMOTE_WRITE, RV_ACCESS_REMOTE_READ) as
 * @access and at least its local write is a hit; the entry gains one
 * reference.  A registration never grants peers access the caller did
 * not ask for: a local-only request inside a cached remote-access region
 * is a miss and gets a registration of its own, without keys (the same
 * pages are then pinned, and counted against the cache limit, twice).
 * Otherwise the pages are
 * pinned (charged to RLIMIT_MEMLOCK) and mapped for the job's device; with
 * remote access they are registered in the job's kernel PD by fast
 * registration, each key covering exactly its chunk's part of
 * [@addr, @addr + @length).  Every byte
 * must be mapped readable by the caller, and writable when @access has
 * RV_ACCESS_LOCAL_WRITE or RV_ACCESS_REMOTE_WRITE; a later mprotect()
 * does not change what was pinned.
 * When the cache would exceed its limit (ATTACH's @mr_cache_bytes), unused
 * entries are evicted, least recently used first.  One registration may be
 * as large as the limit; no splitting is needed.
 *
 * Errors:
 *  EINVAL   @length 0, @addr + @length wraps, unknown @access bits
 *  EFAULT   part of the range is not mapped, or mapped without the
 *           access above (PROT_NONE, read-only for a writable request)
 *  ENOMEM   pinning would exceed RLIMIT_MEMLOCK, counting the process's
 *           event rings too (also when it is 0 and the
 *           caller lacks CAP_IPC_LOCK), out of memory, or (remote access)
 *           the device could not give the job's registration QP
 *  ENOSPC   the request cannot fit under the cache limit even after
 *           evicting every unused entry
 *  EDQUOT   pinning would exceed the job's max_pinned_bytes (its
 *           launcher's limit, RV_IOCTL_LAUNCHER_JOB) even after evicting
 *           the caller's unused entries
 *  ENODEV   the device was removed, or the launcher ended the job
 *  EAGAIN   the range kept changing while it was being registered
 *  EIO      the device failed the fast registration
 *  ETIMEDOUT the device did not complete it within 2 s
 *  EOVERFLOW the request needs more keys than @nr_rkeys (always for a
 *           caller built before @rkeys existed): @nr_rkeys says how many,
 *           @handle is 0, no reference is held and the registration stays
 *           cached, so a retry with a larger array is a hit
 *  E2BIG    remote access needing more than RV_MAX_REG_KEYS keys
 *  EOPNOTSUPP remote access on a device without fast registration
 *  EINVAL   also: @nr_rkeys not 0 with @rkeys 0
 *  EFAULT   also: @rkeys not writable
 */
struct rv_reg_mem {
	__u32 size;
	__u32 flags;
	__aligned_u64 addr;
	__aligned_u64 length;
	__u32 access;
	__u32 handle;
	__u32 lkey;
	__u32 rkey;
	__aligned_u64 iova;
	__aligned_u64 region_addr;
	__aligned_u64 region_length;
	__aligned_u64 rkeys;
	__u32 nr_rkeys;
	__u32 rkey_shift;
};

#define RV_IOCTL_REG_MEM _IO(RV_IOCTL_TYPE, RV_CMD_REG_MEM)

/**
 * struct rv_dereg_mem - drop one reference taken by REG_MEM
 * @size: sizeof(struct rv_dereg_mem)
 * @flags: must be 0
 * @handle: in: from REG_MEM on this file
 * @refs: out: REG_MEM references to the registration still held after
 *	this one is dropped
 *
 * The registration stays cached.  Works after the device is removed.
 * Errors:
 *  ENOENT   no registration of this file has @handle (never issued, freed,
 *           or issued by another file)
 *  EINVAL   the registration holds no reference of the caller (a second
 *           DEREG_MEM for one REG_MEM)
 */
struct rv_dereg_mem {
	__u32 size;
	__u32 flags;
	__u32 handle;
	__u32 refs;
};

#define RV_IOCTL_DEREG_MEM _IO(RV_IOCTL_TYPE, RV_CMD_DEREG_MEM)

/* How EVICT chooses what to free (struct rv_evict.mode). */
#define RV_EVICT_EXACT	0	/* the entry of exactly @addr, @length, @access */
#define RV_EVICT_RANGE	1	/* every unused entry overlapping @addr/@length */
#define RV_EVICT_AMOUNT	2	/* LRU first until @target_bytes/@target_entries */

/**
 * struct rv_evict - free unused cached registrations
 * @size: sizeof(struct rv_evict)
 * @flags: must be 0
 * @mode: in: RV_EVICT_*
 * @access: in: EXACT: the entry's access as given to REG_MEM; else 0
 * @addr: in: EXACT, RANGE: start of the range; AMOUNT: 0
 * @length: in: EXACT, RANGE: bytes, at least 1; AMOUNT: 0
 * @target_bytes: in: AMOUNT: stop once this many bytes are freed; else 0
 * @target_entries: in: AMOUNT: and this many entries; else 0
 * @freed_entries: out: entries freed
 * @freed_bytes: out: bytes freed
 *
 * Entries in use (a REG_MEM reference or I/O in flight) are never freed.
 * AMOUNT frees until both targets are met or no unused entry is left.
 *
 * Errors:
 *  EINVAL   unknown @mode, a field the mode does not use is not 0, @length
 *           0 or wrapping for EXACT and RANGE, both targets 0 for AMOUNT
 *  ENOENT   EXACT: no such entry
 *  EBUSY    EXACT: the entry is in use
 */
struct rv_evict {
	__u32 size;
	__u32 flags;
	__u32 mode;
	__u32 access;
	__aligned_u64 addr;
	__aligned_u64 length;
	__aligned_u64 target_bytes;
	__u32 target_entries;
	__u32 freed_entries;
	__aligned_u64 freed_bytes;
};

#define RV_IOCTL_EVICT _IO(RV_IOCTL_TYPE, RV_CMD_EVICT)

/**
 * struct rv_mr_stats - this file's MR cache figures
 * @size: sizeof(struct rv_mr_stats)
 * @flags: must be 0
 * @limit_bytes: out: the cache limit in bytes
 * @bytes: out: bytes registered by cached entries (pinned)
 * @in_use_bytes: out: of those, bytes of entries in use
 * @max_bytes: out: high-water mark of @bytes
 * @max_in_use_bytes: out: high-water mark of @in_use_bytes
 * @entries: out: cached entries
 * @in_use_entries: out: of those, entries in use
 * @max_entries: out: high-water mark of @entries
 * @max_in_use_entries: out: high-water mark of @in_use_entries
 * @hits: out: REG_MEM answered from the cache
 * @misses: out: REG_MEM that registered a new entry
 * @evict_pressure: out: entries evicted to make room under the limit
 * @evict_request: out: entries freed by EVICT
 * @invalidations: out: entries invalidated because their memory changed
 * @failures: out: REG_MEM that failed to register (pin or MR errors,
 *	ENOSPC)
 * @fast_regs: out: of @misses, registrations with remote access given a
 *	fast-registration MR
 * @fast_reg_keys: out: the fast-registration MRs @fast_regs made, one
 *	per key (more than @fast_regs when registrations span key chunks)
 * @fast_reg_reused: out: of @fast_reg_keys, MRs taken from the file's
 *	pool of invalidated MRs (freed registrations leave their MRs there,
 *	invalidated, up to 32) instead of newly allocated
 *
 * Entries invalidated while in use still count in @entries and @bytes
 * (their pages stay pinned) until their last reference is dropped.
 */
struct rv_mr_stats {
	__u32 size;
	__u32 flags;
	__aligned_u64 limit_bytes;
	__aligned_u64 bytes;
	__aligned_u64 in_use_bytes;
	__aligned_u64 max_bytes;
	__aligned_u64 max_in_use_bytes;
	__u32 entries;
	__u32 in_use_entries;
	__u32 max_entries;
	__u32 max_in_use_entries;
	__aligned_u64 hits;
	__aligned_u64 misses;
	__aligned_u64 evict_pressure;
	__aligned_u64 evict_request;
	__aligned_u64 invalidations;
	__aligned_u64 failures;
	__aligned_u64 fast_regs;
	__aligned_u64 fast_reg_keys;
	__aligned_u64 fast_reg_reused;
};

#define RV_IOCTL_MR_STATS _IO(RV_IOCTL_TYPE, RV_CMD_MR_STATS)

/*
 * The event ring.  After ATTACH, mmap(2) of the file at offset 0 and
 * length RV_RING_MMAP_SIZE(ring_entries) (PROT_READ | PROT_WRITE,
 * MAP_SHARED) maps this process's event ring:
 *
 *   0                         struct rv_ring_header (the kernel writes it)
 *   RV_RING_CONSUMER_OFFSET   __u32 consumer index (user space writes it)
 *   RV_RING_EVENTS_OFFSET     ring_entries struct rv_event
 *
 * Both indices are free-running __u32 counters; events[i & (entries - 1)]
 * holds event i.  Events are pending while consumer != producer.  The
 * consumer loads @producer with acquire semantics, reads the events up to
 * it, then stores the new consumer index with release semantics.
 *
 * The kernel never trusts the mapping: it keeps its own producer index,
 * reads only the consumer index, and treats a consumer index more than
 * ring_entries behind its producer (or ahead of it) like a full ring.  An
 * event that finds the ring full is dropped and counted in @overflows, so
 * a consumer can tell it lost events.  poll(2) and epoll report EPOLLIN
 * while events are pending.  The ring's pages are charged to the
 * attaching process's RLIMIT_MEMLOCK at ATTACH, in the same budget as the
 * pages REG_MEM pins (the process's pinned_vm, VmPin).
 *
 * mmap errors: ENOTCONN (not attached), EPERM (not the attaching
 * process), EINVAL (offset not 0, length not the ring's, or a private
 * mapping).
 */
#define RV_RING_CONSUMER_OFFSET	64
#define RV_RING_EVENTS_OFFSET	128

/**
 * struct rv_ring_header - the kernel's half of the ring's first page
 * @producer: index of the next event the kernel will write
 * @entries: events in the ring (ATTACH's @ring_entries), a power of two
 * @entry_size: sizeof(struct rv_event)
 * @events_offset: RV_RING_EVENTS_OFFSET
 * @overflows: events dropped because the ring was full
 */
struct rv_ring_header {
	__u32 producer;
	__u32 entries;
	__u32 entry_size;
	__u32 events_offset;
	__aligned_u64 overflows;
};

/* struct rv_event.kind */
#define RV_EVENT_SEND	1	/* a write this process posted completed */
#define RV_EVENT_RECV	2	/* a write with immediate arrived for it */

/**
 * struct rv_event - one completion
 * @kind: RV_EVENT_*
 * @status: SEND: the work completion status (enum ib_uverbs_wc_status
 *	values, 0 for success); RECV: always 0
 * @wr_id: SEND: the caller's wr_id; RECV: 0
 * @imm: RECV: the immediate data, as sent; SEND: 0
 * @bytes: SEND: the write's @length; RECV: bytes of the write's last
 *	work request: all of a write of at most 4 KiB, otherwise 1 up to
 *	its last @max_segment (CONN_QUERY) piece, depending on how the
 *	sender's pages split it (see POST_WRITE)
 * @conn_id: the connection's node-wide id (CONN_CREATE's @conn_id)
 * @generation: SEND: the connection's generation when the write was
 *	posted (a write of an older generation than the current one that
 *	ended with an error may need sending again; an error does not say
 *	that nothing arrived: the data and its RECV event may have, its
 *	acknowledgment lost, so a receiver must tolerate a write twice);
 *	RECV: this node's generation of the connection when
 *	the write arrived, informational only: the first writes after a
 *	(re)connect can arrive before this node has seen the connection
 *	established and carry the previous generation, so receivers must not
 *	drop events by generation
 */
struct rv_event {
	__u32 kind;
	__u32 status;
	__aligned_u64 wr_id;
	__u32 imm;
	__u32 bytes;
	__u32 conn_id;
	__u32 generation;
};

#define RV_RING_MMAP_SIZE(entries) \
	(RV_RING_EVENTS_OFFSET + (__u64)(entries) * sizeof(struct rv_event))

/*
 * Connections.  For one job (one uid, job key, device, port and network
 * namespace: that of the process that created the job) every
 * process on this node reaches a given remote node through the same
 * num_conn kernel RC QPs: the first CONN_CREATE for a remote address
 * creates the job's connection to it, later ones (from any process of the
 * job) get a handle to the same connection.  rdma_cm establishes it: for
 * each node pair the node with the lower address is the client (it sends
 * the connection requests) for every QP, the other is the server (its
 * listener on the module's cm_port accepts them).  Both sides may create
 * and connect in any order; the client retries until its timeout.  Peers
 * are rv instances, vouched for by their kernel: requests come from and go
 * to privileged ports only (see "Security model" in rv(7)).  Addresses are
 * those of the job's network namespace: the client resolves the remote
 * address and binds the local one (the job's GID as an IP address) there,
 * and a request reaches only the jobs of the namespace of the netdev it
 * arrived on (in a namespace without the job's address, CONNECT fails with
 * reason UNREACHABLE).
 *
 * Handles are per file, small integers from 1; closing the file drops
 * them.  A connection lives while any handle of any process holds it.
 */

/* Largest remote address (a struct sockaddr_*) CONN_CREATE takes. */
#define RV_CONN_ADDR_MAX	128
/* Longest establishment timeout CONN_CONNECT and CONN_QUERY take (1 h). */
#define RV_CONN_TIMEOUT_MAX_MS	3600000

/* struct rv_conn_query.state */
#define RV_CONN_STATE_IDLE		0	/* created, CONNECT not issued */
#define RV_CONN_STATE_CONNECTING	1	/* not every QP connected yet */
#define RV_CONN_STATE_CONNECTED		2	/* all num_conn QPs connected */
#define RV_CONN_STATE_ERROR		3	/* gave up; @reason says why */

/*
 * struct rv_conn_query.reason: why the connection is in ERROR (or, while
 * CONNECTING again, why it last lost or failed a QP).  The client retries
 * the retryable ones (UNREACHABLE, NO_LISTENER, NO_CONN, BUSY,
 * NO_RESOURCES, DISCONNECTED, QP_ERROR, AUTH) until its timeout; the
 * others end the attempt at once.
 */
#define RV_CONN_REASON_NONE		0
/* address/route resolution failed, no answer from the remote by the
 * deadline, or a reject that is not rv's
 */
#define RV_CONN_REASON_UNREACHABLE	1
/* the remote CM rejected: no rv listens on that port */
#define RV_CONN_REASON_NO_LISTENER	2
/* the remote rv has no job (uid, key, device) with a connection to us */
#define RV_CONN_REASON_NO_CONN		3
/* the remote QP of that index is still connected or being torn down */
#define RV_CONN_REASON_BUSY		4
/* the remote rv refused the request's private data */
#define RV_CONN_REASON_BAD_REQUEST	5
/* the remote job has another num_conn */
#define RV_CONN_REASON_MISMATCH		6
/* the remote's accept carried invalid private data, or its reject an
 * unknown reason
 */
#define RV_CONN_REASON_BAD_REPLY	7
/* server: no request for a QP came before the timeout */
#define RV_CONN_REASON_TIMEOUT		8
/* the RDMA device went away */
#define RV_CONN_REASON_DEVICE_REMOVED	9
/* the remote disconnected */
#define RV_CONN_REASON_DISCONNECTED	10
/* a QP could not be created (here or remotely) */
#define RV_CONN_REASON_NO_RESOURCES	11
/* a work request completed in error (e.g. a bad rkey) or the QP reported
 * a fatal event: the QP was replaced
 */
#define RV_CONN_REASON_QP_ERROR		12
/* the two nodes could not prove the same cluster key to each other (one
 * has another key or none, or their clocks differ by more than 300 s),
 * or the remote saw a replayed request or a path not leading back to us
 */
#define RV_CONN_REASON_AUTH		13
/* the launcher ended the job (RV_IOCTL_LAUNCHER_JOB destroy) */
#define RV_CONN_REASON_JOB_ENDED	14

/* struct rv_conn_query.role */
#define RV_CONN_ROLE_CLIENT	1
#define RV_CONN_ROLE_SERVER	2

/**
 * struct rv_conn_create - get a handle to the job's connection to a node
 * @size: sizeof(struct rv_conn_create)
 * @flags: must be 0
 * @addr_len: in: bytes of @addr used: sizeof(struct sockaddr_in) for
 *	AF_INET, sizeof(struct sockaddr_in6) for AF_INET6
 * @handle: out: names the connection in the other CONN_* commands of this
 *	file; never 0
 * @addr: in: the remote node as a struct sockaddr_in or sockaddr_in6 (its
 *	address on the RDMA network, as rdma_cm resolves it); a port of 0
 *	means the module's cm_port, others must be privileged (below 1024:
 *	rv listens on no other); bytes past @addr_len must be 0
 * @conn_id: out: names the connection node-wide; every process of the job
 *	that creates a connection to the same address gets the same @conn_id
 * @num_conn: out: RC QPs of the connection (the job's num_conn)
 * @send_depth: out: send queue depth of each QP
 * @recv_depth: out: receive queue depth of each QP (receives are posted
 *	for RDMA WRITE with immediate)
 *
 * The source address is the job's GID (ATTACH's @gid_index), so the
 * family of @addr must be the one of that GID.  The module parameter
 * conn_wqe_budget is split between the QPs: each gets budget / num_conn
 * send and as many receive entries.  AF_IB is not supported.
 *
 * Errors:
 *  EINVAL        @addr_len does not match the family; a byte past
 *                @addr_len is not 0; the address is a wildcard, multicast
 *                or broadcast address, or the job's own address; its
 *                family differs from the job's GID's; the port is 1024
 *                or above
 *  EAFNOSUPPORT  the family is neither AF_INET nor AF_INET6
 *  ENODEV        the device was removed
 *  ENOSPC        the file already holds 65535 connection handles
 *  EADDRNOTAVAIL the job's GID entry no longer exists (its address went
 *                away)
 *  EDQUOT        the job has no connection to @addr yet and the jobs of
 *                its uid already hold max_conns_per_uid connections (a
 *                module parameter; root is not exempt), or the job
 *                its launcher's max_conns (RV_IOCTL_LAUNCHER_JOB); a
 *                handle to an existing connection is not refused
 *  ENOKEY        root has not set the cluster key (module parameter
 *                cluster_key) and insecure_no_cluster_key is not set
 */
struct rv_conn_create {
	__u32 size;
	__u32 flags;
	__u32 addr_len;
	__u32 handle;
	__u8 addr[RV_CONN_ADDR_MAX];
	__u32 conn_id;
	__u32 num_conn;
	__u32 send_depth;
	__u32 recv_depth;
};

#define RV_IOCTL_CONN_CREATE _IO(RV_IOCTL_TYPE, RV_CMD_CONN_CREATE)

/**
 * struct rv_conn_connect - start establishing a connection
 * @size: sizeof(struct rv_conn_connect)
 * @flags: must be 0
 * @handle: in: from CONN_CREATE on this file
 * @timeout_ms: in: give up (state ERROR) when not every QP is connected
 *	after this many milliseconds, 1..RV_CONN_TIMEOUT_MAX_MS, or 0 for the
 *	module's conn_timeout_ms
 *
 * Idempotent: while the connection is CONNECTING or CONNECTED nothing
 * happens.  From IDLE or ERROR it (re)starts establishment with a fresh
 * timeout.  Returns at once; CONN_QUERY waits.
 *
 * Errors:
 *  EINVAL  @timeout_ms above RV_CONN_TIMEOUT_MAX_MS
 *  ENOENT  this file has no connection @handle
 *  ENODEV  the device was removed
 */
struct rv_conn_connect {
	__u32 size;
	__u32 flags;
	__u32 handle;
	__u32 timeout_ms;
};

#define RV_IOCTL_CONN_CONNECT _IO(RV_IOCTL_TYPE, RV_CMD_CONN_CONNECT)

/* CONN_QUERY waits until CONNECTED or ERROR, at most @timeout_ms. */
#define RV_CONN_QUERY_F_WAIT	(1U << 0)

/**
 * struct rv_conn_query - state of a connection, optionally after a wait
 * @size: sizeof(struct rv_conn_query)
 * @flags: 0 or RV_CONN_QUERY_F_WAIT
 * @handle: in: from CONN_CREATE on this file
 * @timeout_ms: in: with RV_CONN_QUERY_F_WAIT, the longest wait,
 *	0..RV_CONN_TIMEOUT_MAX_MS; must be 0 without it
 * @state: out: RV_CONN_STATE_*
 * @reason: out: RV_CONN_REASON_*; NONE while CONNECTED
 * @num_conn: out: RC QPs of the connection
 * @connected: out: how many of them are connected now
 * @generation: out: advances each time the connection becomes CONNECTED
 *	(first connect and every reconnect); 0 until then
 * @conn_id: out: as returned by CONN_CREATE
 * @role: out: RV_CONN_ROLE_CLIENT or RV_CONN_ROLE_SERVER for this node
 * @handles: out: handles on the connection on this node (all processes)
 * @rejects: out: client: connection requests the remote refused
 * @attempts: out: client: connection requests sent (all QPs, retries
 *	included)
 * @writes_posted: out: writes posted on the connection (all processes)
 * @bytes_posted: out: their bytes
 * @writes_completed: out: writes that completed successfully
 * @writes_failed: out: writes that completed with an error status
 * @recvs: out: writes with immediate that arrived and were delivered to
 *	a process's ring
 * @bytes_received: out: their bytes
 * @drops_no_slot: out: arrived writes whose immediate named a slot with no
 *	attached process (never held, in quarantine after its process left,
 *	or one whose ATTACH has not returned yet): dropped
 * @drops_ring_full: out: arrived writes dropped because the destination
 *	process's ring was full (also counted in its ring's @overflows)
 * @recv_errors: out: receive completions with an error status other than
 *	a flush (the QP broke)
 * @inflight: out: writes posted and not completed yet
 * @max_segment: out: the longest single RDMA WRITE the device takes
 *	(the port's maximum message size); longer writes are split
 * @heartbeats: out: heartbeats sent on the connection's QPs
 * @qp_errors: out: QPs replaced after an error completion (a write's or
 *	a heartbeat's) or a fatal QP event
 *
 * The fields from @writes_posted on were appended: the minimum @size is 64.
 *
 * The wait ends early when the connection is CONNECTED or in ERROR (or a
 * signal arrives); when @timeout_ms passes first the current state is
 * returned with success.  The wait holds no lock: other commands on the
 * file proceed.
 *
 * Errors:
 *  EINVAL  an unknown @flags bit, @timeout_ms without RV_CONN_QUERY_F_WAIT
 *          or above RV_CONN_TIMEOUT_MAX_MS
 *  ENOENT  this file has no connection @handle
 *  EINTR   a signal interrupted the wait
 */
struct rv_conn_query {
	__u32 size;
	__u32 flags;
	__u32 handle;
	__u32 timeout_ms;
	__u32 state;
	__u32 reason;
	__u32 num_conn;
	__u32 connected;
	__aligned_u64 generation;
	__u32 conn_id;
	__u32 role;
	__u32 handles;
	__u32 rejects;
	__aligned_u64 attempts;
	__aligned_u64 writes_posted;
	__aligned_u64 bytes_posted;
	__aligned_u64 writes_completed;
	__aligned_u64 writes_failed;
	__aligned_u64 recvs;
	__aligned_u64 bytes_received;
	__aligned_u64 drops_no_slot;
	__aligned_u64 drops_ring_full;
	__aligned_u64 recv_errors;
	__u32 inflight;
	__u32 max_segment;
	__aligned_u64 heartbeats;
	__aligned_u64 qp_errors;
};

#define RV_IOCTL_CONN_QUERY _IO(RV_IOCTL_TYPE, RV_CMD_CONN_QUERY)

/**
 * struct rv_conn_destroy - drop one connection handle of this file
 * @size: sizeof(struct rv_conn_destroy)
 * @flags: must be 0
 * @handle: in: from CONN_CREATE on this file; invalid afterwards
 * @handles: out: handles left on the connection on this node; at 0 the
 *	connection was disconnected and its QPs destroyed
 *
 * Errors:
 *  ENOENT  this file has no connection @handle
 */
struct rv_conn_destroy {
	__u32 size;
	__u32 flags;
	__u32 handle;
	__u32 handles;
};

#define RV_IOCTL_CONN_DESTROY _IO(RV_IOCTL_TYPE, RV_CMD_CONN_DESTROY)

/*
 * The data path.  POST_WRITE posts one RDMA WRITE with immediate on a
 * connection: @length bytes from a registration of this file (REG_MEM's
 * handle, any access) to @remote_addr under the remote registration's
 * @rkey, carrying the 32-bit @imm.  On the remote node the write's
 * receive completion goes to the process whose slot is the top
 * @slot_bits bits of @imm (the job's ATTACH @slot_bits); the other bits
 * are the middleware's.  A slot with no process, or in quarantine
 * after its process left (see ATTACH), counts in the remote connection's
 * @drops_no_slot and the event is dropped, never delivered elsewhere.
 *
 * rv stripes writes over the connection's QPs, each with as many writes
 * in flight as its send queue holds (CONN_CREATE's @send_depth); when
 * every QP is full the post fails with EAGAIN and nothing is queued: reap
 * SEND events and post again.  A write is posted as work requests on one
 * QP, each taking a send queue entry: each carries at most the
 * connection's @max_segment (CONN_QUERY) bytes and at most the device's
 * SGE limit (16 at most) of physically contiguous runs of the source's
 * pages, so a write from scattered 4 KiB pages takes one work request per
 * 16 pages or so.  Only the last carries the immediate, so the receiver
 * sees one RECV event, after all the data has landed, whose @bytes are
 * those of the last work request.
 *
 * Each write ends with exactly one RV_EVENT_SEND in the posting
 * process's ring, carrying @wr_id and the status; an error status (a bad
 * @rkey, a remote range outside the remote registration, a broken
 * connection) says the data may not have been written.  Until then the
 * write holds its registration (a deregistered or invalidated one is
 * freed after the write) and its connection.  Closing the file waits for
 * its writes in flight.
 */

/* Longest write (1 GiB); longer ones fail with EMSGSIZE. */
#define RV_MAX_WRITE_BYTES	(1U << 30)
/* Most writes one POST_WRITES takes. */
#define RV_MAX_POST_WRITES	1024

/**
 * struct rv_write - one RDMA WRITE with immediate
 * @wr_id: the caller's, returned in the write's RV_EVENT_SEND
 * @local_addr: start of the data in this process, inside the registration
 *	@mr_handle
 * @remote_addr: where to write it in the remote process (the remote
 *	REG_MEM's @iova for its @addr, plus the offset)
 * @length: bytes, 0..RV_MAX_WRITE_BYTES; 0 sends just the immediate
 * @conn_handle: connection handle from CONN_CREATE on this file
 * @mr_handle: registration handle from REG_MEM on this file; must be 0
 *	when @length is 0
 * @rkey: the remote registration's rkey
 * @imm: the immediate: destination slot in the top slot_bits, the rest
 *	passed through
 */
struct rv_write {
	__aligned_u64 wr_id;
	__aligned_u64 local_addr;
	__aligned_u64 remote_addr;
	__aligned_u64 length;
	__u32 conn_handle;
	__u32 mr_handle;
	__u32 rkey;
	__u32 imm;
};

/**
 * struct rv_post_write - post one write
 * @size: sizeof(struct rv_post_write)
 * @flags: must be 0
 * @write: in: the write
 *
 * Never blocks.  Errors (nothing was posted):
 *  EINVAL    @mr_handle not 0 with @length 0; the local range wraps
 *  ENOENT    this file has no connection @conn_handle, or no registration
 *            @mr_handle
 *  ERANGE    [@local_addr, @local_addr + @length) is not inside the
 *            registration
 *  ESTALE    the registration's memory changed since REG_MEM (munmap, ...)
 *            or its device went away: register again
 *  EMSGSIZE  @length above RV_MAX_WRITE_BYTES, or it needs more work
 *            requests than a QP's send queue holds: a write of pages
 *            that are not physically contiguous takes one per SGE limit
 *            (the device's max_send_sge, at most 16) pages: such a write
 *            can be at most @send_depth x that limit x 4 KiB (16 MiB at
 *            the defaults on rxe)
 *  EAGAIN    every QP's send queue is full, or the connection is
 *            (re)connecting: reap events and retry
 *  EPIPE     the connection is IDLE (never connected: CONN_CONNECT) or in
 *            ERROR
 *  ENODEV    the device was removed
 */
struct rv_post_write {
	__u32 size;
	__u32 flags;
	struct rv_write write;
};

#define RV_IOCTL_POST_WRITE _IO(RV_IOCTL_TYPE, RV_CMD_POST_WRITE)

/**
 * struct rv_post_writes - post several writes in one call
 * @size: sizeof(struct rv_post_writes)
 * @flags: must be 0
 * @writes: in: user address of @count struct rv_write
 * @count: in: writes to post, 1..RV_MAX_POST_WRITES
 * @entry_size: in: sizeof(struct rv_write)
 * @posted: out: writes posted, in order from the first
 * @error: out: when @posted < @count, the positive errno (as for
 *	POST_WRITE) that stopped the write at index @posted; else 0
 *
 * Writes are posted in order until one fails.  If the first fails the
 * call fails with its errno; otherwise it succeeds and reports @posted
 * and @error.  The array is copied once; consecutive writes that go to
 * one QP are posted as one chain of work requests.
 *
 * Errors: EINVAL (@count or @entry_size out of range), EFAULT (@writes
 * not readable, or the argument not writable: checked before anything
 * is posted, so EFAULT means no write of the call was posted unless the
 * caller made the argument unwritable during the call), and those of
 * POST_WRITE for the first write.
 */
struct rv_post_writes {
	__u32 size;
	__u32 flags;
	__aligned_u64 writes;
	__u32 count;
	__u32 entry_size;
	__u32 posted;
	__u32 error;
};

#define RV_IOCTL_POST_WRITES _IO(RV_IOCTL_TYPE, RV_CMD_POST_WRITES)

/**
 * struct rv_stats - this process's (file's) data path figures
 * @size: sizeof(struct rv_stats)
 * @flags: must be 0
 * @writes_posted: out: writes posted (POST_WRITE and POST_WRITES)
 * @bytes_posted: out: their bytes
 * @writes_completed: out: SEND events with success status
 * @writes_failed: out: SEND events with an error status
 * @posts_eagain: out: posts refused with EAGAIN (queues full or
 *	reconnecting)
 * @recvs: out: RECV events delivered to this file's ring
 * @bytes_received: out: their bytes
 * @ring_overflows: out: events dropped because this ring was full (the
 *	ring header's @overflows)
 * @inflight: out: writes posted and not completed yet
 * @rsvd: 0
 *
 * Any process holding the file may read them.  Errors: ENOTCONN (not
 * attached).
 */
struct rv_stats {
	__u32 size;
	__u32 flags;
	__aligned_u64 writes_posted;
	__aligned_u64 bytes_posted;
	__aligned_u64 writes_completed;
	__aligned_u64 writes_failed;
	__aligned_u64 posts_eagain;
	__aligned_u64 recvs;
	__aligned_u64 bytes_received;
	__aligned_u64 ring_overflows;
	__u32 inflight;
	__u32 rsvd;
};

#define RV_IOCTL_STATS _IO(RV_IOCTL_TYPE, RV_CMD_STATS)

/*
 * The node's state, for tools such as rvstat.  DUMP needs no ATTACH (a
 * read-only open of /dev/rv will do) and shows what the caller may see: a
 * process with CAP_SYS_ADMIN sees every job, others only the jobs of their
 * own uid (and those jobs' connections and processes).  Each kind has a
 * fixed record; records only ever grow at their end (@record_size says how
 * big this kernel's are).
 */
#define RV_DUMP_JOBS	1	/* struct rv_dump_job per job */
#define RV_DUMP_CONNS	2	/* struct rv_dump_conn per connection */
#define RV_DUMP_PROCS	3	/* struct rv_dump_proc per attached file */
#define RV_DUMP_DEVICES	4	/* struct rv_dump_device per RDMA device */

/* Most records one DUMP returns. */
#define RV_DUMP_MAX_RECORDS	4096

/**
 * struct rv_dump - copy records of one kind to a user buffer
 * @size: sizeof(struct rv_dump)
 * @flags: must be 0
 * @kind: in: RV_DUMP_*
 * @record_size: out: bytes of each record
 * @buf: in: user address of the buffer
 * @buf_len: in: its size in bytes
 * @count: out: records written, at most @buf_len / @record_size and
 *	RV_DUMP_MAX_RECORDS
 * @total: out: records there were to see; when above @count, call again
 *	with a larger buffer
 * @rsvd: must be 0
 *
 * A snapshot: each record is consistent in itself, not across records.
 * Errors: EINVAL (@kind unknown, @rsvd), EFAULT (@buf not writable).
 */
struct rv_dump {
	__u32 size;
	__u32 flags;
	__u32 kind;
	__u32 record_size;
	__aligned_u64 buf;
	__u32 buf_len;
	__u32 count;
	__u32 total;
	__u32 rsvd;
};

#define RV_IOCTL_DUMP _IO(RV_IOCTL_TYPE, RV_CMD_DUMP)

/* Longest RDMA device name in a dump (the kernel's IB_DEVICE_NAME_MAX). */
#define RV_DUMP_DEV_NAME_MAX	64

/**
 * struct rv_dump_device - an RDMA device rv tracks (every caller sees all)
 * @dev_index: the device's index
 * @jobs: jobs on it the caller may see
 * @removed: 1 once the device went away (jobs may still hold it)
 * @rsvd: 0
 * @name: its name, NUL-terminated ("" once removed)
 */
struct rv_dump_device {
	__u32 dev_index;
	__u32 jobs;
	__u32 removed;
	__u32 rsvd;
	char name[RV_DUMP_DEV_NAME_MAX];
};

/**
 * struct rv_dump_job - one job
 * @job_id: small number naming the job in dumps, traces and logs
 * @dev_index: the device's index
 * @port_num: the port
 * @uid: the job's uid (in the caller's user namespace)
 * @num_conn: RC QPs per remote node
 * @slot_bits: immediate bits naming a slot
 * @slots_used: processes attached
 * @conns: connections of the job
 * @heartbeat_ms: heartbeat interval, or RV_HEARTBEAT_OFF
 * @key_len: bytes of @key
 * @key: the job key
 * @dev_name: the device's name, NUL-terminated ("" once removed)
 * @launcher_id: the launcher's job the job is bound to
 *	(RV_IOCTL_LAUNCHER_JOB), 0 for a job started without a launcher
 */
struct rv_dump_job {
	__u32 job_id;
	__u32 dev_index;
	__u32 port_num;
	__u32 uid;
	__u32 num_conn;
	__u32 slot_bits;
	__u32 slots_used;
	__u32 conns;
	__u32 heartbeat_ms;
	__u32 key_len;
	__u8 key[RV_JOB_KEY_MAX];
	char dev_name[RV_DUMP_DEV_NAME_MAX];
	__aligned_u64 launcher_id;
};

/**
 * struct rv_dump_qp - one QP of a connection
 * @state: 0 idle, 1 connecting, 2 retrying, 3 connected, 4 failed
 * @send_free: the current QP's send queue entries free for writes, 0 if
 *	none
 * @idle_ms: milliseconds since its last completion (heartbeat age)
 * @qp_num: the current QP's number, 0 if none
 */
struct rv_dump_qp {
	__u32 state;
	__u32 send_free;
	__u32 idle_ms;
	__u32 qp_num;
};

/**
 * struct rv_dump_conn - one connection, with CONN_QUERY's figures
 * @conn_id: as CONN_CREATE returns it
 * @job_id: its job (struct rv_dump_job.job_id)
 * @state: RV_CONN_STATE_*
 * @reason: RV_CONN_REASON_*
 * @role: RV_CONN_ROLE_*
 * @num_conn: QPs
 * @connected: QPs connected
 * @handles: handles held on it (all processes)
 * @generation: as CONN_QUERY
 * @family: AF_INET or AF_INET6 of @remote_addr
 * @remote_port: the remote CM port
 * @remote_addr: the remote node's address (4 bytes for AF_INET)
 * @inflight: writes in flight
 * @max_segment: as CONN_QUERY
 * @writes_posted: .. @qp_errors: as CONN_QUERY
 * @qp: the first @num_conn entries are the QPs
 */
struct rv_dump_conn {
	__u32 conn_id;
	__u32 job_id;
	__u32 state;
	__u32 reason;
	__u32 role;
	__u32 num_conn;
	__u32 connected;
	__u32 handles;
	__aligned_u64 generation;
	__u16 family;
	__u16 remote_port;
	__u32 inflight;
	__u8 remote_addr[16];
	__u32 max_segment;
	__u32 rsvd;
	__aligned_u64 writes_posted;
	__aligned_u64 bytes_posted;
	__aligned_u64 writes_completed;
	__aligned_u64 writes_failed;
	__aligned_u64 recvs;
	__aligned_u64 bytes_received;
	__aligned_u64 drops_no_slot;
	__aligned_u64 drops_ring_full;
	__aligned_u64 recv_errors;
	__aligned_u64 heartbeats;
	__aligned_u64 qp_errors;
	struct rv_dump_qp qp[RV_MAX_CONN_PER_NODE];
};

/**
 * struct rv_dump_proc - one attached file (a process of a job)
 * @job_id: its job
 * @slot: its slot
 * @pid: the attaching process (in the caller's pid namespace; 0 if not
 *	visible there)
 * @ring_entries: its ring's size
 * @inflight: writes in flight
 * @mr_entries: cached registrations
 * @ring_overflows: events its ring dropped
 * @mr_bytes: bytes they pin
 * @mr_hits: REG_MEM hits
 * @mr_misses: REG_MEM misses
 * @writes_posted: .. @bytes_received: as STATS
 */
struct rv_dump_proc {
	__u32 job_id;
	__u32 slot;
	__u32 pid;
	__u32 ring_entries;
	__u32 inflight;
	__u32 mr_entries;
	__aligned_u64 ring_overflows;
	__aligned_u64 mr_bytes;
	__aligned_u64 mr_hits;
	__aligned_u64 mr_misses;
	__aligned_u64 writes_posted;
	__aligned_u64 bytes_posted;
	__aligned_u64 writes_completed;
	__aligned_u64 writes_failed;
	__aligned_u64 posts_eagain;
	__aligned_u64 recvs;
	__aligned_u64 bytes_received;
};

/* struct rv_launcher_job.flags */
#define RV_LAUNCHER_JOB_F_DESTROY	1	/* destroy instead of create */

/**
 * struct rv_launcher_job - a job made by the cluster's launcher (root)
 * @size: sizeof(struct rv_launcher_job)
 * @flags: 0 (create) or RV_LAUNCHER_JOB_F_DESTROY
 * @launcher_id: the launcher's id of the job, not 0 (Slurm: job id << 32
 *	| step id); create: unique among the bindings; destroy: must match
 * @uid: the job's user, in the caller's user namespace
 * @cgroup_fd: create: an open file of the job's cgroup v2 directory;
 *	destroy: ignored
 * @job_key_len: bytes used in @job_key, 1..RV_JOB_KEY_MAX
 * @rsvd: must be 0
 * @job_key: the job key its processes attach with
 * @max_procs: create: most processes attached to the job at once on each
 *	device port (each rv job the binding makes), 0 for no limit; ATTACH
 *	beyond it fails with EDQUOT
 * @max_conns: create: most connections of the job on each device port,
 *	0 for no limit; CONN_CREATE beyond it fails with EDQUOT
 * @max_pinned_bytes: create: most bytes the registrations of the job's
 *	processes on each device port pin (in pages: rounded up), 0 for no
 *	limit; a REG_MEM miss beyond it first evicts the caller's unused
 *	cache entries, then fails with EDQUOT
 *
 * Create binds (@uid, @job_key) and the limits to the launcher's job: from then on only a
 * process of @uid inside the cgroup of @cgroup_fd (or a cgroup below it)
 * may ATTACH with that key (others of @uid: EPERM), the job it creates or
 * joins is shown with @launcher_id in DUMP, and every tag of its
 * connections' handshakes binds @launcher_id, so that only the same
 * launcher job on another node can connect to it.  Destroy removes the
 * binding and ends the job everywhere on the node, as a device removal
 * would, even while its processes are stopped or stuck: its connections
 * are torn down at once (their QPs and CQs freed, reason
 * RV_CONN_REASON_JOB_ENDED), then, once no call of the job is inside the
 * device, its MRs, its registration QP and its protection domain, and
 * cached registrations no process holds are unpinned.  Its processes'
 * later commands fail (EPERM for ATTACH, ENODEV for the others; releasing
 * handles and closing still work); what a process holds itself (the
 * pinned pages of registrations it still holds, its ring, its slot) goes
 * when it drops them, closes the file or exits.  Needs no ATTACH.  The limits were appended:
 * a caller passing the 48 bytes before them sets none.
 *
 * Errors: EPERM (no CAP_SYS_ADMIN in the initial user namespace), EINVAL
 * (flags, @launcher_id 0, key length, @rsvd, a uid not mapped), EBADF
 * (@cgroup_fd is not an open file of a cgroup v2 directory), EOPNOTSUPP
 * (create on a kernel built without cgroups), EEXIST (a
 * binding of this uid and key, or of this @launcher_id, exists), ENOENT
 * (destroy: no such binding), ENOMEM, ENOSPC (the node holds 65536
 * bindings).
 */
struct rv_launcher_job {
	__u32 size;
	__u32 flags;
	__aligned_u64 launcher_id;
	__u32 uid;
	__s32 cgroup_fd;
	__u32 job_key_len;
	__u32 rsvd;
	__u8 job_key[RV_JOB_KEY_MAX];
	__u32 max_procs;
	__u32 max_conns;
	__aligned_u64 max_pinned_bytes;
};

#define RV_IOCTL_LAUNCHER_JOB _IO(RV_IOCTL_TYPE, RV_CMD_LAUNCHER_JOB)

#endif /* _UAPI_RDMA_RV_USER_IOCTLS_H */
