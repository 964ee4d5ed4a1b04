/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * librv: user-space library for rv, the RDMA rendezvous module (/dev/rv).
 *
 * Conventions (the liburing ones):
 *
 * - Every call that can fail returns a negative errno value on failure and
 *   0 or a non-negative result on success.  errno is not part of the API:
 *   it may be clobbered, and must not be read to learn why a call failed.
 * - A struct rv is one open file of /dev/rv.  It may be shared between
 *   threads for calls that do not change it (rv_fd(), rv_query(), rv_slot()
 *   once attached); rv_attach() and rv_close() need the caller to
 *   serialise them against every other call on the same struct rv.
 * - The argument structs are the kernel's (<rdma/rv_user_ioctls.h>); the
 *   library fills in their @size and, for commands without input, @flags.
 */
#ifndef LIBRV_H
#define LIBRV_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <rdma/rv_user_ioctls.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One open file of /dev/rv; opaque. */
struct rv;

/**
 * rv_open() - open /dev/rv
 * @rvp: on success, the new handle
 * @flags: must be 0
 *
 * The file is opened O_RDWR | O_CLOEXEC.  It is not attached to anything
 * yet: see rv_attach().
 *
 * Return: 0, or
 *  -EINVAL   @rvp is NULL or @flags is not 0
 *  -ENOMEM   out of memory
 *  -ENOENT   /dev/rv does not exist (the rv module is not loaded)
 *  any other negative errno of open(2) on /dev/rv (-EACCES, -EMFILE, ...)
 */
int rv_open(struct rv **rvp, unsigned int flags);

/**
 * rv_close() - close the file and free the handle
 * @rv: handle from rv_open(), or NULL (then nothing is done)
 *
 * Closing detaches the file from its job and frees its slot, once no
 * other reference to the file (a dup(2) of rv_fd(), a child that inherited
 * it) remains.
 */
void rv_close(struct rv *rv);

/**
 * rv_fd() - the file descriptor behind a handle
 * @rv: handle from rv_open()
 *
 * For poll(2), mmap(2) and ioctls the library does not wrap.  The
 * descriptor stays owned by @rv: do not close it.
 *
 * Return: the file descriptor (never negative).
 */
int rv_fd(const struct rv *rv);

/**
 * rv_query() - what the running rv supports
 * @rv: handle from rv_open()
 * @q: filled in on success
 *
 * Sets @q->size to sizeof(*@q) and @q->flags to 0; every other field is an
 * output.  Needs no attach.
 *
 * Return: 0, or
 *  -EINVAL   @q is NULL
 *  -EFAULT   @q is not accessible
 *  -ENOTTY   the file is not an rv device
 *  other negative errno values as documented in <rdma/rv_user_ioctls.h>
 */
int rv_query(struct rv *rv, struct rv_query *q);

/**
 * rv_attach() - join (or create) a job on a device port
 * @rv: handle from rv_open(), not attached yet
 * @a: the request; see struct rv_attach
 *
 * Sets @a->size to sizeof(*@a); the caller fills in every other input
 * field (@flags, @dev_index, @port_num, @gid_index, @job_key_len,
 * @job_key, and @num_conn, @slot_bits, @ring_entries, @mr_cache_bytes,
 * @heartbeat_ms or 0 for the module defaults).  Zero the struct first so
 * that fields added by later versions of the header read as "not used".
 * On success the kernel writes back @slot and the values in effect for
 * @num_conn, @slot_bits, @ring_entries, @mr_cache_bytes and
 * @heartbeat_ms, and the slot is remembered for
 * rv_slot().  rv_device_index() turns a device name into @dev_index.
 *
 * The event ring is mapped too (see rv_poll_events()).  If that fails the
 * call fails with mmap(2)'s error, but the file stays attached (an ATTACH
 * cannot be undone): close it with rv_close().
 *
 * Return: the slot index (>= 0), or
 *  -EINVAL    @a is NULL, @flags has an unknown bit, @port_num or
 *             @gid_index is not valid on the device, @job_key_len is 0 or
 *             above RV_JOB_KEY_MAX, a key byte past @job_key_len is not 0,
 *             @num_conn, @slot_bits or @ring_entries is out of range
 *  -ENODEV    no RDMA device has @dev_index, or it is being removed
 *  -EALREADY  this file is already attached
 *  -EBUSY     the job exists with another @num_conn, @slot_bits,
 *             @gid_index or @heartbeat_ms
 *  -ENOSPC    every slot of the job is taken
 *  -EFAULT    @a is not accessible
 *  -ENOMEM    out of kernel memory, or the event ring would exceed
 *             RLIMIT_MEMLOCK (one budget with the pages the process's
 *             registrations pin)
 *  -EDQUOT    the job is new and the caller's uid already holds the
 *             module's max_jobs_per_uid jobs
 */
int rv_attach(struct rv *rv, struct rv_attach *a);

/**
 * rv_slot() - this file's slot in its job
 * @rv: handle from rv_open()
 *
 * Return: the slot rv_attach() got (>= 0), or -ENOTCONN if @rv has not
 * been attached successfully.
 */
int rv_slot(const struct rv *rv);

/**
 * rv_device_index() - kernel index of an RDMA device, by name
 * @ibdev_name: the device's name, as "rdma dev" or ibv_devices print it
 *
 * Asks the kernel over an RDMA netlink socket (RDMA_NLDEV_CMD_GET).  The
 * index, unlike the name, survives renames; it is what
 * struct rv_attach.dev_index wants.
 *
 * Return: the index (>= 0), or
 *  -EINVAL      @ibdev_name is NULL or empty
 *  -ENODEV      no RDMA device has that name
 *  -EPROTO      the kernel's reply was malformed
 *  -ETIMEDOUT   the kernel did not answer in time
 *  -EOVERFLOW   the index does not fit in an int
 *  other negative errno values of socket(2), sendto(2) and recv(2), e.g.
 *  -EPROTONOSUPPORT when the kernel has no RDMA netlink (ib_core not
 *  loaded)
 */
int rv_device_index(const char *ibdev_name);

/**
 * rv_ipv4_gid() - the GID of a port that carries an IPv4 address
 * @ibdev_name: the device's name, as "rdma dev" or ibv_devices print it
 * @port_num: the port, from 1
 * @gid_index: that GID entry, or -1 for the first RoCE v2 entry with an
 *	IPv4 address
 * @addr: if not NULL, the entry's IPv4 address (network byte order)
 *
 * rv's connections take the job's GID as their source address, so a job
 * reached over IPv4 needs a GID that carries the node's IPv4 address (for
 * RoCE, an IPv4-mapped GID).  The result is what struct
 * rv_attach.gid_index wants.  Reads the port's GID table from sysfs.
 *
 * Return: the GID index (>= 0), or
 *  -EINVAL  @ibdev_name is NULL, empty or not a plain name, @port_num is
 *           0, or @gid_index is below -1
 *  -ENODEV  no RDMA device has that name, or it has no such port
 *  -ENOENT  entry @gid_index carries no IPv4 address, or (with -1) no RoCE
 *           v2 entry of the port does
 */
int rv_ipv4_gid(const char *ibdev_name, unsigned int port_num, int gid_index,
		struct in_addr *addr);

/**
 * rv_reg_mem() - register a buffer through the file's MR cache
 * @rv: handle from rv_open(), attached
 * @addr: start of the buffer
 * @length: bytes, at least 1
 * @access: RV_ACCESS_* bits (REMOTE_WRITE implies LOCAL_WRITE)
 * @out: if not NULL, the kernel's answer up to @region_length (the fields
 *	of librv 1.2): @lkey, @rkey, @iova (what a peer uses with @rkey for
 *	@addr) and the cached region that covers the buffer
 *
 * A buffer inside a cached registration with at least @access is a hit
 * and costs no pinning.  Each successful call takes one reference that
 * rv_dereg_mem() drops; the registration stays cached after that.  Any
 * size up to the cache limit is one registration.  A remote-access buffer
 * that spans several key chunks needs rv_reg_mem_keys().
 *
 * Return: the handle (> 0), or
 *  -EINVAL    @length is 0, the range wraps, or @access has unknown bits
 *  -EFAULT    part of the range is not mapped
 *  -ENOMEM    pinning would exceed RLIMIT_MEMLOCK, or out of memory
 *  -ENOSPC    the buffer does not fit under the cache limit even with every
 *             unused registration evicted
 *  -EAGAIN    the mapping kept changing while it was being registered
 *  -EOVERFLOW remote access spanning more than one key chunk
 *  -E2BIG     remote access needing more than RV_MAX_REG_KEYS keys
 *  -ENOTCONN  @rv is not attached
 *  -EPERM     called from another process than the one that attached
 *  -ENODEV    the device was removed
 */
int rv_reg_mem(struct rv *rv, const void *addr, size_t length,
	       unsigned int access, struct rv_reg_mem *out);

/**
 * rv_reg_mem_keys() - rv_reg_mem() with every remote key of the buffer
 * @rv: handle from rv_open(), attached
 * @addr: start of the buffer
 * @length: bytes, at least 1
 * @access: RV_ACCESS_* bits
 * @out: if not NULL, the kernel's whole answer, @nr_rkeys and @rkey_shift
 *	included (also on -EOVERFLOW)
 * @rkeys: room for @nr_rkeys keys, or NULL
 * @nr_rkeys: entries of @rkeys
 *
 * A peer writes remote address r of the buffer with
 * @rkeys[rv_rkey_index(@out->iova, r, @out->rkey_shift)], at most
 * rv_rkey_span(r, @out->rkey_shift) bytes per write.
 *
 * Return: as rv_reg_mem(); -EOVERFLOW when @rkeys is too short (no
 * reference is taken; @out->nr_rkeys says how many keys it needs).
 */
int rv_reg_mem_keys(struct rv *rv, const void *addr, size_t length,
		    unsigned int access, struct rv_reg_mem *out,
		    uint32_t *rkeys, uint32_t nr_rkeys);

/* Index of the key covering remote address @raddr of a registration. */
static inline uint32_t rv_rkey_index(uint64_t iova, uint64_t raddr,
				     unsigned int rkey_shift)
{
	return (uint32_t)((raddr >> rkey_shift) - (iova >> rkey_shift));
}

/* Bytes from @raddr to the end of its key chunk: the most a write there
 * may carry. */
static inline uint64_t rv_rkey_span(uint64_t raddr, unsigned int rkey_shift)
{
	return (1ULL << rkey_shift) - (raddr & ((1ULL << rkey_shift) - 1));
}

/**
 * rv_dereg_mem() - drop a reference taken by rv_reg_mem()
 * @rv: handle from rv_open(), attached
 * @handle: from rv_reg_mem() on @rv
 *
 * Return: the references @rv still holds on the registration (>= 0), or
 *  -ENOENT    @rv has no registration @handle (never issued, evicted, or
 *             issued by another file)
 *  -EINVAL    the registration holds no reference (dropped twice)
 *  -ENOTCONN, -EPERM as for rv_reg_mem()
 */
int rv_dereg_mem(struct rv *rv, unsigned int handle);

/**
 * rv_evict() - free unused cached registrations
 * @rv: handle from rv_open(), attached
 * @e: @mode and its inputs (see struct rv_evict); @size is set here and
 *	@freed_entries, @freed_bytes are outputs
 *
 * Return: 0, or
 *  -EINVAL    @e is NULL, or a field is wrong for @mode
 *  -ENOENT    RV_EVICT_EXACT: no such registration
 *  -EBUSY     RV_EVICT_EXACT: it is in use
 *  -ENOTCONN, -EPERM as for rv_reg_mem()
 */
int rv_evict(struct rv *rv, struct rv_evict *e);

/**
 * rv_mr_stats() - the file's MR cache figures
 * @rv: handle from rv_open(), attached
 * @s: filled in on success (see struct rv_mr_stats)
 *
 * Any process holding the file may read them.
 *
 * Return: 0, or -EINVAL if @s is NULL, -ENOTCONN if @rv is not attached.
 */
int rv_mr_stats(struct rv *rv, struct rv_mr_stats *s);

/**
 * rv_poll_events() - take events from the file's event ring
 * @rv: handle from rv_open(), attached
 * @events: where to copy them
 * @max: room in @events
 *
 * Never blocks and makes no system call.  One consumer per ring: calls on
 * the same @rv must be serialised by the caller.
 *
 * Return: the number of events copied (0 if none is pending), or
 *  -ENOTCONN  @rv is not attached
 *  -EINVAL    @events is NULL and @max is not 0
 */
int rv_poll_events(struct rv *rv, struct rv_event *events, unsigned int max);

/**
 * rv_wait_events() - sleep until events are pending
 * @rv: handle from rv_open(), attached
 * @timeout_ms: at most this long; -1 waits without a time limit, 0 checks
 *
 * poll(2) on the file: the kernel wakes it when an event is written.
 *
 * Return: 1 if events are pending, 0 on timeout, or
 *  -ENOTCONN  @rv is not attached
 *  -EINTR     a signal arrived
 *  -EIO       the file reports an error
 */
int rv_wait_events(struct rv *rv, int timeout_ms);

/**
 * rv_ring_overflows() - events the kernel dropped because the ring was full
 * @rv: handle from rv_open()
 *
 * Return: the count since attach (0 before).
 */
uint64_t rv_ring_overflows(const struct rv *rv);

/**
 * rv_conn_create() - a handle to the job's connection to a remote node
 * @rv: handle from rv_open(), attached
 * @addr: the remote node: a struct sockaddr_in or sockaddr_in6 whose
 *	family matches the job's GID; port 0 means rv's cm_port, others
 *	must be below 1024
 * @addrlen: sizeof(struct sockaddr_in) or sizeof(struct sockaddr_in6)
 * @c: NULL, or filled in with the kernel's answer (@conn_id, @num_conn,
 *	@send_depth, @recv_depth, @handle)
 *
 * The first process of the job to name a node creates the connection
 * (num_conn kernel RC QPs); the others get a handle to the same one.
 *
 * Return: the handle (> 0), or
 *  -EINVAL        @addr NULL, @addrlen wrong for the family or above
 *                 RV_CONN_ADDR_MAX, a wildcard/multicast/broadcast address,
 *                 this node's own address, a family that differs from
 *                 the job's GID's, or a port of 1024 or above
 *  -EAFNOSUPPORT  neither AF_INET nor AF_INET6
 *  -ENOTCONN      @rv is not attached
 *  -EPERM         used from another process than the one that attached
 *  -ENODEV        the device was removed
 *  -ENOSPC        the file already holds 65535 connection handles (the
 *                 most one file may have)
 *  -EADDRNOTAVAIL the job's GID entry no longer exists
 *  -ENOMEM        out of kernel memory
 *  -EDQUOT        the connection is new and the jobs of the caller's uid
 *                 already hold the module's max_conns_per_uid connections
 *  -ENOKEY        rv has no cluster key (see rv(7), "Security model")
 */
int rv_conn_create(struct rv *rv, const struct sockaddr *addr,
		   socklen_t addrlen, struct rv_conn_create *c);

/**
 * rv_conn_connect() - start establishing a connection
 * @rv: handle from rv_open(), attached
 * @handle: from rv_conn_create() on @rv
 * @timeout_ms: establishment timeout, 0 for the module default, at most
 *	RV_CONN_TIMEOUT_MAX_MS
 *
 * Idempotent; returns at once.  See rv_conn_wait().
 *
 * Return: 0, or -EINVAL (@timeout_ms too large), -ENOENT (no such handle),
 * -ENODEV (device removed), -ENOTCONN, -EPERM.
 */
int rv_conn_connect(struct rv *rv, uint32_t handle, uint32_t timeout_ms);

/**
 * rv_conn_query() - a connection's state, without waiting
 * @rv: handle from rv_open(), attached
 * @handle: from rv_conn_create() on @rv
 * @q: filled in on success
 *
 * Return: 0, or -EINVAL (@q NULL), -ENOENT, -ENOTCONN, -EPERM.
 */
int rv_conn_query(struct rv *rv, uint32_t handle, struct rv_conn_query *q);

/**
 * rv_conn_wait() - wait until a connection is connected or failed
 * @rv: handle from rv_open(), attached
 * @handle: from rv_conn_create() on @rv
 * @timeout_ms: longest wait in milliseconds, at most
 *	RV_CONN_TIMEOUT_MAX_MS
 * @q: NULL, or filled in with the last answer
 *
 * Sleeps in the kernel (no polling); a signal does not shorten or lengthen
 * the wait.
 *
 * Return: RV_CONN_STATE_CONNECTED or RV_CONN_STATE_ERROR, or
 *  -ETIMEDOUT  neither happened within @timeout_ms
 *  -EINVAL     @timeout_ms above RV_CONN_TIMEOUT_MAX_MS
 *  -ENOENT, -ENOTCONN, -EPERM as for rv_conn_query()
 */
int rv_conn_wait(struct rv *rv, uint32_t handle, uint32_t timeout_ms,
		 struct rv_conn_query *q);

/**
 * rv_conn_destroy() - drop a connection handle
 * @rv: handle from rv_open(), attached
 * @handle: from rv_conn_create() on @rv; invalid afterwards
 *
 * The last handle on the node (of any process of the job) disconnects the
 * connection and destroys its QPs.  Closing the file drops all handles.
 *
 * Return: the handles left on the connection on this node (>= 0), or
 * -ENOENT, -ENOTCONN, -EPERM.
 */
int rv_conn_destroy(struct rv *rv, uint32_t handle);

/**
 * rv_slot_bits() - the job's slot_bits
 * @rv: handle from rv_open()
 *
 * Return: the immediate bits that name a slot in this file's job (as
 * rv_attach() reported them), or -ENOTCONN if @rv is not attached.
 */
int rv_slot_bits(const struct rv *rv);

/**
 * rv_imm() - build a write's immediate
 * @slot_bits: the job's slot_bits (rv_slot_bits()), 1..RV_MAX_SLOT_BITS
 * @slot: the destination process's slot on the remote node, below
 *	2^@slot_bits (only its low @slot_bits bits are kept: a larger value
 *	names another slot)
 * @user: the middleware's bits; only the low 32 - @slot_bits are kept
 *
 * Return: @slot in the top @slot_bits bits, @user below.  rv_imm_slot()
 * and rv_imm_user() take it apart again.
 */
static inline uint32_t rv_imm(unsigned int slot_bits, uint32_t slot,
			      uint32_t user)
{
	uint32_t user_mask = UINT32_MAX >> slot_bits;

	return (slot << (32 - slot_bits)) | (user & user_mask);
}

/**
 * rv_imm_slot() - the destination slot an immediate names
 * @slot_bits: the job's slot_bits, 1..RV_MAX_SLOT_BITS
 * @imm: an immediate, e.g. struct rv_event.imm
 */
static inline uint32_t rv_imm_slot(unsigned int slot_bits, uint32_t imm)
{
	return imm >> (32 - slot_bits);
}

/**
 * rv_imm_user() - the middleware's bits of an immediate
 * @slot_bits: the job's slot_bits, 1..RV_MAX_SLOT_BITS
 * @imm: an immediate, e.g. struct rv_event.imm
 */
static inline uint32_t rv_imm_user(unsigned int slot_bits, uint32_t imm)
{
	return imm & (UINT32_MAX >> slot_bits);
}

/**
 * rv_post_write() - post one RDMA WRITE with immediate
 * @rv: handle from rv_open(), attached
 * @w: the write (see struct rv_write): @conn_handle from rv_conn_create(),
 *	@mr_handle from rv_reg_mem() covering [@local_addr, +@length), the
 *	remote @remote_addr and @rkey, @imm (rv_imm()) and @wr_id
 *
 * Never blocks.  The write completes with one RV_EVENT_SEND carrying
 * @wr_id in the ring (rv_poll_events()); the remote process named by
 * @imm gets one RV_EVENT_RECV.
 *
 * Return: 0, or
 *  -EINVAL    @w is NULL, @mr_handle not 0 with @length 0, the range wraps
 *  -ENOENT    no such connection or registration handle on @rv
 *  -ERANGE    the local range is not inside the registration
 *  -ESTALE    the registration's memory changed: register again
 *  -EMSGSIZE  @length above RV_MAX_WRITE_BYTES or too many segments
 *  -EAGAIN    every send queue is full or the connection is reconnecting:
 *             reap events and retry
 *  -EPIPE     the connection is not connected (IDLE or ERROR)
 *  -ENODEV    the device was removed
 *  -ENOTCONN, -EPERM as for rv_reg_mem()
 */
int rv_post_write(struct rv *rv, const struct rv_write *w);

/**
 * rv_post_writes() - post several writes with as few system calls as
 * possible
 * @rv: handle from rv_open(), attached
 * @w: @count writes
 * @count: how many; more than RV_MAX_POST_WRITES take several calls
 *
 * Posts in order and stops at the first write that fails; one ioctl per
 * RV_MAX_POST_WRITES writes.
 *
 * Return: the number of writes posted (those from @w[0] on; fewer than
 * @count when one failed, e.g. with -EAGAIN: post the rest, from
 * @w[returned], later; the errno of the write that stopped the batch is
 * not reported, a call for the rest reports it if it still fails), or,
 * when not even the first could be posted, its negative errno as for
 * rv_post_write(), or -EINVAL when @w is NULL and @count is not 0.  0 when
 * @count is 0, without a system call (whether @rv is attached or not).
 */
int rv_post_writes(struct rv *rv, const struct rv_write *w,
		   unsigned int count);

/**
 * rv_stats() - this file's data path figures
 * @rv: handle from rv_open(), attached
 * @s: filled in on success (see struct rv_stats)
 *
 * Return: 0, or -EINVAL if @s is NULL, -ENOTCONN if @rv is not attached.
 */
int rv_stats(struct rv *rv, struct rv_stats *s);

/* Names for logs and tools, as ibv_wc_status_str(): never NULL, "unknown"
 * for a value this library does not know.  rv_conn_state_str(3). */
const char *rv_conn_state_str(uint32_t state);
const char *rv_conn_reason_str(uint32_t reason);
/* struct rv_dump_qp's @state. */
const char *rv_qp_state_str(uint32_t state);

/* One DUMP snapshot of one kind (RV_DUMP_*), record by record, from any open
 * file of /dev/rv (read-only will do), or -1: rv_dump_open(3). */
struct rv_dump_iter;
int rv_dump_open(int rv_fd, uint32_t kind, struct rv_dump_iter **itp);
const void *rv_dump_next(struct rv_dump_iter *it);
uint32_t rv_dump_count(const struct rv_dump_iter *it);
uint32_t rv_dump_total(const struct rv_dump_iter *it);
uint32_t rv_dump_record_size(const struct rv_dump_iter *it);
void rv_dump_close(struct rv_dump_iter *it);

#ifdef __cplusplus
}
#endif

#endif /* LIBRV_H */
