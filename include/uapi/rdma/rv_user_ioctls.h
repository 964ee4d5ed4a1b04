/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * rv: a rendezvous module for RDMA middleware (/dev/rv).
 *
 * This header is the user/kernel ABI; rv(7) describes the semantics, the
 * module parameters and what each errno means.
 *
 * Every command is ioctl(fd, RV_IOCTL_<NAME>, &arg): the number carries no
 * size, and each struct starts with "__u32 size; __u32 flags;".  @size is
 * sizeof() of the caller's struct, at least the command's minimum (the
 * struct as first released: 64 for rv_query, rv_attach, rv_reg_mem and
 * rv_conn_query, 112 for rv_mr_stats, 48 for rv_launcher_job, the current
 * size for every other); fields past @size read as zero, bytes past the
 * kernel's struct must be zero, outputs are written up to min(@size,
 * kernel size).  Unknown @flags bits are rejected.  Fields marked "in" are
 * read, "out" written back; "0: default" means the module parameter of
 * the same name.  The layout is the same on i386, x32 and x86-64.
 *
 * Errors of every command: ENOTTY, EFAULT, EINVAL, E2BIG, ENOMEM.  Each
 * struct's "Errors:" line adds the command's own (ENOTCONN: not attached;
 * EPERM: not the attaching process, for the commands that check it).
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
#define RV_MIN_MR_TABLE_ENTRIES		64
#define RV_MAX_MR_TABLE_ENTRIES		65536
#define RV_DEFAULT_MR_TABLE_ENTRIES	512

/*
 * struct rv_query - what this rv supports; every field but the header is
 * out.  The default_* fields and those from @cm_port on are the module
 * parameters of the same name; @slot_quarantine_ms reads 0 on kernels
 * without it.  Needs no ATTACH.  Errors: the common ones only.
 */
struct rv_query {
	__u32 size;
	__u32 flags;				/* 0 */
	__aligned_u64 cmd_mask;			/* bit N: RV_CMD_* N exists */
	__u32 attach_flags;			/* RV_ATTACH_F_* accepted */
	__u32 max_conn_per_node;
	__u32 max_slot_bits;
	__u32 min_slot_bits;
	__u32 max_ring_entries;
	__u32 min_ring_entries;
	__u32 max_job_key_len;			/* bytes */
	__u32 default_num_conn;
	__u32 default_slot_bits;
	__u32 default_ring_entries;
	__aligned_u64 default_mr_cache_bytes;
	__u32 cm_port;
	__u32 conn_wqe_budget;
	__u32 conn_timeout_ms;
	__u32 conn_query_flags;			/* RV_CONN_QUERY_F_* accepted */
	__u32 default_heartbeat_ms;
	__u32 slot_quarantine_ms;
	__u32 max_mr_table_entries;		/* 0: no MR table */
	__u32 default_mr_table_entries;
};

#define RV_IOCTL_QUERY _IO(RV_IOCTL_TYPE, RV_CMD_QUERY)

/*
 * struct rv_attach - bind this file to a device port and a job.  The
 * in/out fields take 0 for the default and return the value in effect;
 * @gid_index, @num_conn, @slot_bits and @heartbeat_ms are job-wide and
 * must match an existing job's.  @mr_cache_bytes is at most
 * max_mr_cache_bytes; @heartbeat_ms is RV_MIN_HEARTBEAT_MS..
 * RV_MAX_HEARTBEAT_MS or RV_HEARTBEAT_OFF; @mr_table_entries a power of
 * two, RV_MIN_MR_TABLE_ENTRIES..RV_MAX_MR_TABLE_ENTRIES (0: the default).
 *
 * Errors: EINVAL, ENODEV, EPROTONOSUPPORT, EALREADY, EBUSY, ENOSPC,
 * EAGAIN, ENOMEM, EDQUOT, EADDRINUSE, EPERM.
 */
struct rv_attach {
	__u32 size;
	__u32 flags;				/* 0 */
	__u32 dev_index;			/* in: RDMA device index */
	__u32 port_num;				/* in: from 1 */
	__u32 gid_index;			/* in: the job's source GID */
	__u32 job_key_len;			/* in: 1..RV_JOB_KEY_MAX */
	__u8 job_key[RV_JOB_KEY_MAX];		/* in: zero past job_key_len */
	__u32 num_conn;				/* in/out: QPs per node */
	__u32 slot_bits;			/* in/out: slot bits of imm */
	__u32 ring_entries;			/* in/out: power of two */
	__u32 slot;				/* out: this file's slot */
	__aligned_u64 mr_cache_bytes;		/* in/out: MR cache limit */
	__u32 heartbeat_ms;			/* in/out: QP idle time, ms */
	__u32 mr_table_entries;			/* in/out: MR table slots */
};

#define RV_IOCTL_ATTACH _IO(RV_IOCTL_TYPE, RV_CMD_ATTACH)

/* struct rv_reg_mem.access; REMOTE_WRITE implies LOCAL_WRITE. */
#define RV_ACCESS_LOCAL_WRITE	(1U << 0)
#define RV_ACCESS_REMOTE_WRITE	(1U << 1)
#define RV_ACCESS_REMOTE_READ	(1U << 2)

/* Most rkeys one registration may need (REG_MEM fails with E2BIG above). */
#define RV_MAX_REG_KEYS		4096

/*
 * struct rv_reg_mem.flags: take the reference as a hold of its MR table
 * slot (released by user space, see struct rv_mr_slot) when it has one.
 */
#define RV_REG_MEM_F_TABLE_HOLD	(1U << 0)

/*
 * struct rv_reg_mem - register [@addr, @addr + @length) or find it in the
 * file's MR cache.  With remote access the registration has one key per
 * aligned chunk of 1 << @rkey_shift bytes it touches: remote address r
 * uses @rkeys[(r >> @rkey_shift) - (@iova >> @rkey_shift)], and one RDMA
 * operation stays within one chunk.  @rkey (the key of @addr's chunk),
 * @lkey and @rkey_shift are 0 without remote access.  @table_gen is the
 * generation of the registration's MR table slot @table_slot (even: not
 * posted now), 0 when it has none and the reference is an ordinary one.
 * A registration's references are all holds or all ordinary ones.
 *
 * Errors: EINVAL, EFAULT, ENOMEM, ENOSPC, EDQUOT, ENODEV, EAGAIN, EIO,
 * ETIMEDOUT, EOVERFLOW, E2BIG, EOPNOTSUPP, ENOTCONN, EPERM.
 */
struct rv_reg_mem {
	__u32 size;
	__u32 flags;				/* RV_REG_MEM_F_* */
	__aligned_u64 addr;			/* in */
	__aligned_u64 length;			/* in: bytes, not 0 */
	__u32 access;				/* in: RV_ACCESS_* */
	__u32 handle;				/* out: not 0 */
	__u32 lkey;				/* out */
	__u32 rkey;				/* out */
	__aligned_u64 iova;			/* out: address peers use */
	__aligned_u64 region_addr;		/* out: the cached region */
	__aligned_u64 region_length;		/* out */
	__aligned_u64 rkeys;			/* in: __u32 array, or 0 */
	__u32 nr_rkeys;				/* in: room; out: keys needed */
	__u32 rkey_shift;			/* out: log2 of a key chunk */
	__u32 table_slot;			/* out */
	__u32 table_gen;			/* out: 0: no hold */
};

#define RV_IOCTL_REG_MEM _IO(RV_IOCTL_TYPE, RV_CMD_REG_MEM)

/* struct rv_dereg_mem - drop one REG_MEM reference.
 * Errors: ENOENT, EINVAL, ENOTCONN, EPERM.
 */
struct rv_dereg_mem {
	__u32 size;
	__u32 flags;				/* 0 */
	__u32 handle;				/* in: from REG_MEM */
	__u32 refs;				/* out: references left */
};

#define RV_IOCTL_DEREG_MEM _IO(RV_IOCTL_TYPE, RV_CMD_DEREG_MEM)

/* How EVICT chooses what to free (struct rv_evict.mode). */
#define RV_EVICT_EXACT	0	/* the entry of exactly @addr, @length, @access */
#define RV_EVICT_RANGE	1	/* every unused entry overlapping @addr/@length */
#define RV_EVICT_AMOUNT	2	/* LRU first until @target_bytes/@target_entries */

/*
 * struct rv_evict - free unused cached registrations.  EXACT uses @access,
 * @addr and @length; RANGE @addr and @length; AMOUNT the targets (at least
 * one not 0).  Fields the mode does not use must be 0.
 *
 * Errors: EINVAL, ENOENT, EBUSY, ENOTCONN, EPERM.
 */
struct rv_evict {
	__u32 size;
	__u32 flags;				/* 0 */
	__u32 mode;				/* in: RV_EVICT_* */
	__u32 access;				/* in: as given to REG_MEM */
	__aligned_u64 addr;			/* in */
	__aligned_u64 length;			/* in: bytes, not 0 */
	__aligned_u64 target_bytes;		/* in */
	__u32 target_entries;			/* in */
	__u32 freed_entries;			/* out */
	__aligned_u64 freed_bytes;		/* out */
};

#define RV_IOCTL_EVICT _IO(RV_IOCTL_TYPE, RV_CMD_EVICT)

/*
 * struct rv_mr_stats - this file's MR cache figures, all out: bytes and
 * entries cached and in use, their high-water marks, and event counts.
 * Errors: ENOTCONN.
 */
struct rv_mr_stats {
	__u32 size;
	__u32 flags;				/* 0 */
	__aligned_u64 limit_bytes;		/* the cache limit */
	__aligned_u64 bytes;			/* pinned by cached entries */
	__aligned_u64 in_use_bytes;
	__aligned_u64 max_bytes;
	__aligned_u64 max_in_use_bytes;
	__u32 entries;
	__u32 in_use_entries;
	__u32 max_entries;
	__u32 max_in_use_entries;
	__aligned_u64 hits;			/* REG_MEM found in the cache */
	__aligned_u64 misses;			/* REG_MEM that registered */
	__aligned_u64 evict_pressure;		/* evicted to make room */
	__aligned_u64 evict_request;		/* freed by EVICT */
	__aligned_u64 invalidations;		/* their memory changed */
	__aligned_u64 failures;			/* REG_MEM failed */
	__aligned_u64 fast_regs;		/* misses with remote access */
	__aligned_u64 fast_reg_keys;		/* their MRs, one per key */
	__aligned_u64 fast_reg_reused;		/* of those, from the pool */
	__aligned_u64 invalidations_spurious;	/* pages found unmoved */
};

#define RV_IOCTL_MR_STATS _IO(RV_IOCTL_TYPE, RV_CMD_MR_STATS)

/*
 * The event ring: after ATTACH, mmap(2) of the file at offset 0, length
 * RV_RING_MMAP_SIZE(ring_entries), PROT_READ | PROT_WRITE, MAP_SHARED:
 *
 *   0                         struct rv_ring_header (the kernel writes it)
 *   RV_RING_CONSUMER_OFFSET   __u32 consumer index (user space writes it)
 *   RV_RING_EVENTS_OFFSET     ring_entries struct rv_event
 *
 * Indices are free-running; events[i & (entries - 1)] holds event i.
 * mmap errors: ENOTCONN, EPERM, EINVAL.
 */
#define RV_RING_CONSUMER_OFFSET	64
#define RV_RING_EVENTS_OFFSET	128

struct rv_ring_header {
	__u32 producer;				/* next event to be written */
	__u32 entries;				/* a power of two */
	__u32 entry_size;			/* sizeof(struct rv_event) */
	__u32 events_offset;			/* RV_RING_EVENTS_OFFSET */
	__aligned_u64 overflows;		/* events dropped: ring full */
};

/* struct rv_event.kind */
#define RV_EVENT_SEND	1	/* a write this process posted completed */
#define RV_EVENT_RECV	2	/* a write with immediate arrived for it */

/*
 * struct rv_event - one completion.  SEND: @status (enum
 * ib_uverbs_wc_status, 0: success), @wr_id, @bytes (the write's length)
 * and the @generation the write was posted in.  RECV: @imm, @bytes of the
 * write's last work request, and an informational @generation.
 */
struct rv_event {
	__u32 kind;				/* RV_EVENT_* */
	__u32 status;
	__aligned_u64 wr_id;
	__u32 imm;
	__u32 bytes;
	__u32 conn_id;				/* node-wide connection id */
	__u32 generation;
};

#define RV_RING_MMAP_SIZE(entries) \
	(RV_RING_EVENTS_OFFSET + (__u64)(entries) * sizeof(struct rv_event))

/*
 * The MR table: after ATTACH, mmap(2) at offset RV_MR_TABLE_MMAP_OFFSET,
 * RV_MR_TABLE_MMAP_SIZE(mr_table_entries) bytes, PROT_READ only,
 * MAP_SHARED: one struct rv_mr_slot per slot, written by the kernel only.
 * At RV_MR_HOLDS_MMAP_OFFSET, RV_MR_HOLDS_MMAP_SIZE(mr_table_entries)
 * bytes, PROT_READ | PROT_WRITE, MAP_SHARED: one __u32 hold count per
 * slot, written by user space, read (never trusted) by the kernel.
 *
 * A slot describes one cached registration while its @gen is odd.  A
 * process that saw @gen == g (from REG_MEM's @table_gen) takes a hold
 * without a system call: atomically add 1 to its count, then read @gen
 * again; still g: the registration is its own until it subtracts 1 (as
 * after REG_MEM with RV_REG_MEM_F_TABLE_HOLD); otherwise subtract 1, it
 * is gone.  The kernel never evicts a held registration; an invalidation
 * (its memory changed) ends it held or not, making @gen even first.  See
 * rv(7), "MR table".  mmap errors: ENOTCONN, EPERM, EINVAL, EACCES.
 */
#define RV_MR_TABLE_MMAP_OFFSET	0x10000000ULL
#define RV_MR_HOLDS_MMAP_OFFSET	0x20000000ULL
/* Keys a slot holds: registrations of more key chunks get no slot. */
#define RV_MR_SLOT_KEYS		11

struct rv_mr_slot {
	__u32 gen;				/* odd: live */
	__u32 handle;				/* REG_MEM's */
	__aligned_u64 addr;			/* the cached region */
	__aligned_u64 length;
	__u32 access;				/* RV_ACCESS_* granted */
	__u32 rkey_shift;			/* REG_MEM's, 0: no keys */
	__u32 nr_keys;				/* key chunks of the region */
	__u32 rsvd;
	__u32 lkeys[RV_MR_SLOT_KEYS];		/* per chunk, from @addr's */
	__u32 rkeys[RV_MR_SLOT_KEYS];
};

#define RV_MR_TABLE_MMAP_SIZE(entries) \
	((__u64)(entries) * sizeof(struct rv_mr_slot))
#define RV_MR_HOLDS_MMAP_SIZE(entries) ((__u64)(entries) * sizeof(__u32))

/* Largest remote address (a struct sockaddr_*) CONN_CREATE takes. */
#define RV_CONN_ADDR_MAX	128
/* Longest establishment timeout CONN_CONNECT and CONN_QUERY take (1 h). */
#define RV_CONN_TIMEOUT_MAX_MS	3600000

/* struct rv_conn_query.state */
#define RV_CONN_STATE_IDLE		0	/* created, CONNECT not issued */
#define RV_CONN_STATE_CONNECTING	1	/* not every QP connected yet */
#define RV_CONN_STATE_CONNECTED		2	/* all num_conn QPs connected */
#define RV_CONN_STATE_ERROR		3	/* gave up; @reason says why */

/* struct rv_conn_query.reason: see rv(7), "Connections". */
#define RV_CONN_REASON_NONE		0
#define RV_CONN_REASON_UNREACHABLE	1
#define RV_CONN_REASON_NO_LISTENER	2
#define RV_CONN_REASON_NO_CONN		3
#define RV_CONN_REASON_BUSY		4
#define RV_CONN_REASON_BAD_REQUEST	5
#define RV_CONN_REASON_MISMATCH		6
#define RV_CONN_REASON_BAD_REPLY	7
#define RV_CONN_REASON_TIMEOUT		8
#define RV_CONN_REASON_DEVICE_REMOVED	9
#define RV_CONN_REASON_DISCONNECTED	10
#define RV_CONN_REASON_NO_RESOURCES	11
#define RV_CONN_REASON_QP_ERROR		12
#define RV_CONN_REASON_AUTH		13
#define RV_CONN_REASON_JOB_ENDED	14

/* struct rv_conn_query.role */
#define RV_CONN_ROLE_CLIENT	1
#define RV_CONN_ROLE_SERVER	2

/*
 * struct rv_conn_create - get a handle to the job's connection to a node.
 * @addr is a struct sockaddr_in or sockaddr_in6 of @addr_len bytes, of
 * the family of the job's GID, zero past @addr_len; port 0 means cm_port,
 * any other must be below 1024.
 *
 * Errors: EINVAL, EAFNOSUPPORT, ENODEV, ENOSPC, EADDRNOTAVAIL, EDQUOT,
 * ENOKEY, ENOTCONN, EPERM.
 */
struct rv_conn_create {
	__u32 size;
	__u32 flags;				/* 0 */
	__u32 addr_len;				/* in */
	__u32 handle;				/* out: not 0 */
	__u8 addr[RV_CONN_ADDR_MAX];		/* in: the remote node */
	__u32 conn_id;				/* out: node-wide id */
	__u32 num_conn;				/* out: QPs */
	__u32 send_depth;			/* out: per QP */
	__u32 recv_depth;			/* out: per QP */
};

#define RV_IOCTL_CONN_CREATE _IO(RV_IOCTL_TYPE, RV_CMD_CONN_CREATE)

/* struct rv_conn_connect - start establishing a connection.
 * Errors: EINVAL, ENOENT, ENODEV, ENOTCONN, EPERM.
 */
struct rv_conn_connect {
	__u32 size;
	__u32 flags;				/* 0 */
	__u32 handle;				/* in: from CONN_CREATE */
	__u32 timeout_ms;			/* in: 0: conn_timeout_ms */
};

#define RV_IOCTL_CONN_CONNECT _IO(RV_IOCTL_TYPE, RV_CMD_CONN_CONNECT)

/* CONN_QUERY waits until CONNECTED or ERROR, at most @timeout_ms. */
#define RV_CONN_QUERY_F_WAIT	(1U << 0)

/*
 * struct rv_conn_query - a connection's state, optionally after a wait.
 * @timeout_ms (at most RV_CONN_TIMEOUT_MAX_MS) is 0 without
 * RV_CONN_QUERY_F_WAIT.  Every field after it is out; the counters from
 * @writes_posted on count for all processes of the node.
 *
 * Errors: EINVAL, ENOENT, EINTR, ENOTCONN, EPERM.
 */
struct rv_conn_query {
	__u32 size;
	__u32 flags;				/* 0 or RV_CONN_QUERY_F_WAIT */
	__u32 handle;				/* in: from CONN_CREATE */
	__u32 timeout_ms;			/* in */
	__u32 state;				/* RV_CONN_STATE_* */
	__u32 reason;				/* RV_CONN_REASON_* */
	__u32 num_conn;				/* QPs */
	__u32 connected;			/* QPs connected now */
	__aligned_u64 generation;		/* times it became CONNECTED */
	__u32 conn_id;
	__u32 role;				/* RV_CONN_ROLE_* */
	__u32 handles;				/* on this node */
	__u32 rejects;				/* client: requests refused */
	__aligned_u64 attempts;			/* client: requests sent */
	__aligned_u64 writes_posted;
	__aligned_u64 bytes_posted;
	__aligned_u64 writes_completed;		/* with success */
	__aligned_u64 writes_failed;		/* with an error status */
	__aligned_u64 recvs;			/* delivered to a ring */
	__aligned_u64 bytes_received;
	__aligned_u64 drops_no_slot;		/* no process in the slot */
	__aligned_u64 drops_ring_full;
	__aligned_u64 recv_errors;		/* flushes excluded */
	__u32 inflight;				/* writes not completed */
	__u32 max_segment;			/* longest single RDMA WRITE */
	__aligned_u64 heartbeats;		/* sent */
	__aligned_u64 qp_errors;		/* QPs replaced */
};

#define RV_IOCTL_CONN_QUERY _IO(RV_IOCTL_TYPE, RV_CMD_CONN_QUERY)

/* struct rv_conn_destroy - drop one connection handle of this file.
 * Errors: ENOENT, ENOTCONN, EPERM.
 */
struct rv_conn_destroy {
	__u32 size;
	__u32 flags;				/* 0 */
	__u32 handle;				/* in: invalid afterwards */
	__u32 handles;				/* out: left on this node */
};

#define RV_IOCTL_CONN_DESTROY _IO(RV_IOCTL_TYPE, RV_CMD_CONN_DESTROY)

/* Longest write (1 GiB); longer ones fail with EMSGSIZE. */
#define RV_MAX_WRITE_BYTES	(1U << 30)
/* Most writes one POST_WRITES takes. */
#define RV_MAX_POST_WRITES	1024

/*
 * struct rv_write - one RDMA WRITE with immediate of @length bytes
 * (0..RV_MAX_WRITE_BYTES; 0 sends only the immediate, with @mr_handle 0)
 * from registration @mr_handle to @remote_addr under @rkey.
 */
struct rv_write {
	__aligned_u64 wr_id;			/* returned in RV_EVENT_SEND */
	__aligned_u64 local_addr;		/* inside @mr_handle */
	__aligned_u64 remote_addr;		/* remote @iova plus offset */
	__aligned_u64 length;
	__u32 conn_handle;			/* from CONN_CREATE */
	__u32 mr_handle;			/* from REG_MEM */
	__u32 rkey;
	__u32 imm;				/* slot in the top slot_bits */
};

/*
 * struct rv_post_write - post one write.
 * Errors: EINVAL, ENOENT, ERANGE, ESTALE, EMSGSIZE, EAGAIN, EPIPE, ENODEV,
 * ENOTCONN, EPERM.
 */
struct rv_post_write {
	__u32 size;
	__u32 flags;				/* 0 */
	struct rv_write write;			/* in */
};

#define RV_IOCTL_POST_WRITE _IO(RV_IOCTL_TYPE, RV_CMD_POST_WRITE)

/*
 * struct rv_post_writes - post @count writes in order, stopping at the
 * first that fails: @posted says how many, @error its positive errno.
 * Errors: EINVAL, EFAULT, ENOTCONN, EPERM, and POST_WRITE's for the first
 * write.
 */
struct rv_post_writes {
	__u32 size;
	__u32 flags;				/* 0 */
	__aligned_u64 writes;			/* in: struct rv_write array */
	__u32 count;				/* in: 1..RV_MAX_POST_WRITES */
	__u32 entry_size;			/* in: sizeof(rv_write) */
	__u32 posted;				/* out */
	__u32 error;				/* out: 0 if all were posted */
};

#define RV_IOCTL_POST_WRITES _IO(RV_IOCTL_TYPE, RV_CMD_POST_WRITES)

/* struct rv_stats - this file's data path figures, all out.
 * Errors: ENOTCONN.
 */
struct rv_stats {
	__u32 size;
	__u32 flags;				/* 0 */
	__aligned_u64 writes_posted;
	__aligned_u64 bytes_posted;
	__aligned_u64 writes_completed;		/* SEND events, success */
	__aligned_u64 writes_failed;		/* SEND events, error status */
	__aligned_u64 posts_eagain;		/* posts refused with EAGAIN */
	__aligned_u64 recvs;			/* RECV events */
	__aligned_u64 bytes_received;
	__aligned_u64 ring_overflows;		/* the ring's @overflows */
	__u32 inflight;				/* writes not completed */
	__u32 rsvd;				/* 0 */
};

#define RV_IOCTL_STATS _IO(RV_IOCTL_TYPE, RV_CMD_STATS)

/* struct rv_dump.kind; records only ever grow at their end. */
#define RV_DUMP_JOBS	1	/* struct rv_dump_job per job */
#define RV_DUMP_CONNS	2	/* struct rv_dump_conn per connection */
#define RV_DUMP_PROCS	3	/* struct rv_dump_proc per attached file */
#define RV_DUMP_DEVICES	4	/* struct rv_dump_device per RDMA device */

/* Most records one DUMP returns. */
#define RV_DUMP_MAX_RECORDS	4096

/*
 * struct rv_dump - copy the records of one kind the caller may see to a
 * buffer: @count records of @record_size bytes (at most @buf_len /
 * @record_size and RV_DUMP_MAX_RECORDS) of @total.  Needs no ATTACH.
 * Errors: EINVAL, EFAULT.
 */
struct rv_dump {
	__u32 size;
	__u32 flags;				/* 0 */
	__u32 kind;				/* in: RV_DUMP_* */
	__u32 record_size;			/* out */
	__aligned_u64 buf;			/* in: user address */
	__u32 buf_len;				/* in: bytes */
	__u32 count;				/* out */
	__u32 total;				/* out */
	__u32 rsvd;				/* 0 */
};

#define RV_IOCTL_DUMP _IO(RV_IOCTL_TYPE, RV_CMD_DUMP)

/* Longest RDMA device name in a dump (the kernel's IB_DEVICE_NAME_MAX). */
#define RV_DUMP_DEV_NAME_MAX	64

/* Names are NUL-terminated, "" once the device was removed. */
struct rv_dump_device {
	__u32 dev_index;
	__u32 jobs;				/* those the caller may see */
	__u32 removed;				/* 1: the device went away */
	__u32 rsvd;
	char name[RV_DUMP_DEV_NAME_MAX];
};

struct rv_dump_job {
	__u32 job_id;				/* rv's number for the job */
	__u32 dev_index;
	__u32 port_num;
	__u32 uid;				/* in the caller's user ns */
	__u32 num_conn;
	__u32 slot_bits;
	__u32 slots_used;			/* processes attached */
	__u32 conns;
	__u32 heartbeat_ms;			/* or RV_HEARTBEAT_OFF */
	__u32 key_len;
	__u8 key[RV_JOB_KEY_MAX];
	char dev_name[RV_DUMP_DEV_NAME_MAX];
	__aligned_u64 launcher_id;		/* 0: no launcher binding */
};

struct rv_dump_qp {
	/* 0 idle, 1 connecting, 2 retrying, 3 connected, 4 failed */
	__u32 state;
	__u32 send_free;			/* free send entries */
	__u32 idle_ms;				/* since its last completion */
	__u32 qp_num;				/* 0: no QP */
};

/* The fields of struct rv_conn_query of the same names, and the QPs. */
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
	__u16 family;				/* AF_INET or AF_INET6 */
	__u16 remote_port;
	__u32 inflight;
	__u8 remote_addr[16];			/* AF_INET: the first 4 bytes */
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
	struct rv_dump_qp qp[RV_MAX_CONN_PER_NODE];	/* @num_conn used */
};

/* One attached file; the counters as in struct rv_stats. */
struct rv_dump_proc {
	__u32 job_id;
	__u32 slot;
	__u32 pid;				/* caller's pid ns, or 0 */
	__u32 ring_entries;
	__u32 inflight;
	__u32 mr_entries;			/* cached registrations */
	__aligned_u64 ring_overflows;
	__aligned_u64 mr_bytes;			/* pinned by them */
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

/*
 * struct rv_launcher_job - bind (@uid, @job_key) to the cluster
 * launcher's job @launcher_id and the cgroup of @cgroup_fd, or destroy
 * that binding.  The limits count per device port, 0: none.  Needs no
 * ATTACH; needs CAP_SYS_ADMIN in the initial user namespace.
 *
 * Errors: EPERM, EINVAL, EBADF, EOPNOTSUPP, EEXIST, ENOENT, ENOMEM,
 * ENOSPC.
 */
struct rv_launcher_job {
	__u32 size;
	__u32 flags;				/* 0 or RV_LAUNCHER_JOB_F_* */
	__aligned_u64 launcher_id;		/* not 0 */
	__u32 uid;				/* in the caller's user ns */
	__s32 cgroup_fd;			/* create: a cgroup v2 dir */
	__u32 job_key_len;			/* 1..RV_JOB_KEY_MAX */
	__u32 rsvd;				/* 0 */
	__u8 job_key[RV_JOB_KEY_MAX];
	__u32 max_procs;			/* processes attached at once */
	__u32 max_conns;			/* connections */
	__aligned_u64 max_pinned_bytes;		/* pinned by registrations */
};

#define RV_IOCTL_LAUNCHER_JOB _IO(RV_IOCTL_TYPE, RV_CMD_LAUNCHER_JOB)

/*
 * io_uring commands (IORING_OP_URING_CMD on an fd of /dev/rv): the ring
 * must be created with IORING_SETUP_SQE128, the command's struct sits in
 * the SQE's 80-byte cmd area and sqe->cmd_op names it.  The CQE's res is
 * 0 or a negative errno; sqe->user_data comes back in the CQE.  Not on an
 * IORING_SETUP_IOPOLL ring.  rv(7), "io_uring commands".
 *
 * Errors of every command (CQE res): EOPNOTSUPP (unknown cmd_op, or an rv
 * without io_uring commands), EINVAL (a ring without SQE128, nonzero
 * @flags or @rsvd), ENOTCONN, EPERM (not the attaching process: the
 * SQPOLL thread of a ring the attaching process created is that process;
 * a ring of another process is not).
 */

/*
 * struct rv_uring_post_write - post one write, as RV_IOCTL_POST_WRITE
 * does: 0 once posted, its end an RV_EVENT_SEND in the event ring.
 * Errors: POST_WRITE's.
 */
struct rv_uring_post_write {
	__u32 flags;				/* 0 */
	__u32 rsvd;				/* 0 */
	struct rv_write write;			/* in */
};

/* sqe->cmd_op: the number carries the struct's size (56). */
#define RV_URING_CMD_POST_WRITE \
	_IOW(RV_IOCTL_TYPE, 0x80, struct rv_uring_post_write)

#endif /* _UAPI_RDMA_RV_USER_IOCTLS_H */
