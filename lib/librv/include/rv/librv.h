/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * librv: user-space library for rv, the RDMA rendezvous module (/dev/rv).
 *
 * Each function has a man page of its name (rv_open(3) for the
 * conventions); rv(7) describes the module.  Calls that can fail return a
 * negative errno value, never set errno for the caller, and return 0 or a
 * non-negative result on success.  The argument structs are the kernel's
 * (<rdma/rv_user_ioctls.h>); the library fills in their @size.
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

/* Open /dev/rv into *@rvp; @flags must be 0. */
int rv_open(struct rv **rvp, unsigned int flags);

/* Close the file (detaching it once unreferenced) and free @rv. */
void rv_close(struct rv *rv);

/* The file descriptor behind @rv, still owned by @rv. */
int rv_fd(const struct rv *rv);

/* RV_IOCTL_QUERY: what the running rv supports, into @q. */
int rv_query(struct rv *rv, struct rv_query *q);

/* RV_IOCTL_ATTACH and map the event ring; returns the slot. */
int rv_attach(struct rv *rv, struct rv_attach *a);

/* The slot rv_attach() got, or -ENOTCONN. */
int rv_slot(const struct rv *rv);

/* Kernel index of the RDMA device named @ibdev_name (rdma netlink). */
int rv_device_index(const char *ibdev_name);

/* GID index of a port entry carrying an IPv4 address (-1: first RoCE v2). */
int rv_ipv4_gid(const char *ibdev_name, unsigned int port_num, int gid_index,
		struct in_addr *addr);

/* RV_IOCTL_REG_MEM, one key chunk; returns the handle. */
int rv_reg_mem(struct rv *rv, const void *addr, size_t length,
	       unsigned int access, struct rv_reg_mem *out);

/* RV_IOCTL_REG_MEM with every remote key into @rkeys; returns the handle. */
int rv_reg_mem_keys(struct rv *rv, const void *addr, size_t length,
		    unsigned int access, struct rv_reg_mem *out,
		    uint32_t *rkeys, uint32_t nr_rkeys);

/* Index in @rkeys of the key covering remote address @raddr. */
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

/* RV_IOCTL_DEREG_MEM: drop one reference; returns the references left. */
int rv_dereg_mem(struct rv *rv, unsigned int handle);

/* RV_IOCTL_EVICT: free unused cached registrations as @e->mode says. */
int rv_evict(struct rv *rv, struct rv_evict *e);

/* RV_IOCTL_MR_STATS: the file's MR cache figures, into @s. */
int rv_mr_stats(struct rv *rv, struct rv_mr_stats *s);

/* What the MR table saved this process (rv_mr_table_stats(3)). */
struct rv_mr_table_stats {
	uint64_t hits;		/* registrations found without a system call */
	uint64_t misses;	/* lookups that asked the kernel */
	uint64_t releases;	/* holds dropped without a system call */
	uint32_t entries;	/* slots; 0: no table in use */
	uint32_t live;		/* slots describing a registration now */
	uint32_t held;		/* holds this process has */
	uint32_t rsvd;
};

/* The MR table's figures for @rv, into @s; zeroes without a table. */
int rv_mr_table_stats(struct rv *rv, struct rv_mr_table_stats *s);

/* Copy up to @max pending events; no system call; thread-safe. */
int rv_poll_events(struct rv *rv, struct rv_event *events, unsigned int max);

/* Sleep until events are pending, at most @timeout_ms (-1: no limit). */
int rv_wait_events(struct rv *rv, int timeout_ms);

/* Events the kernel dropped because the ring was full. */
uint64_t rv_ring_overflows(const struct rv *rv);

/* RV_IOCTL_CONN_CREATE: a handle to the job's connection to @addr. */
int rv_conn_create(struct rv *rv, const struct sockaddr *addr,
		   socklen_t addrlen, struct rv_conn_create *c);

/* RV_IOCTL_CONN_CONNECT: start establishing; returns at once. */
int rv_conn_connect(struct rv *rv, uint32_t handle, uint32_t timeout_ms);

/* RV_IOCTL_CONN_QUERY without waiting, into @q. */
int rv_conn_query(struct rv *rv, uint32_t handle, struct rv_conn_query *q);

/* Wait until connected or failed; returns RV_CONN_STATE_*. */
int rv_conn_wait(struct rv *rv, uint32_t handle, uint32_t timeout_ms,
		 struct rv_conn_query *q);

/* RV_IOCTL_CONN_DESTROY: drop a handle; returns the handles left. */
int rv_conn_destroy(struct rv *rv, uint32_t handle);

/* The job's slot_bits, or -ENOTCONN. */
int rv_slot_bits(const struct rv *rv);

/* Immediate naming remote @slot (top @slot_bits bits) and carrying @user. */
static inline uint32_t rv_imm(unsigned int slot_bits, uint32_t slot,
			      uint32_t user)
{
	uint32_t user_mask = UINT32_MAX >> slot_bits;

	return (slot << (32 - slot_bits)) | (user & user_mask);
}

/* The destination slot an immediate names. */
static inline uint32_t rv_imm_slot(unsigned int slot_bits, uint32_t imm)
{
	return imm >> (32 - slot_bits);
}

/* The middleware's bits of an immediate. */
static inline uint32_t rv_imm_user(unsigned int slot_bits, uint32_t imm)
{
	return imm & (UINT32_MAX >> slot_bits);
}

/* RV_IOCTL_POST_WRITE: one RDMA WRITE with immediate; never blocks. */
int rv_post_write(struct rv *rv, const struct rv_write *w);

/* RV_IOCTL_POST_WRITES: @count writes in order; returns how many posted. */
int rv_post_writes(struct rv *rv, const struct rv_write *w,
		   unsigned int count);

/* RV_IOCTL_STATS: the file's data path figures, into @s. */
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

/* Writes through io_uring (rv_uring_open(3)): RV_URING_CMD_POST_WRITE in
 * 128-byte SQEs; -EOPNOTSUPP from rv_uring_open() means use the ioctls. */
#define RV_URING_SQPOLL		1u	/* a kernel thread takes the SQEs */
#define RV_URING_MAX_ENTRIES	32768	/* SQ entries at most */
struct rv_uring;
/* A post the kernel refused: its write's wr_id and positive errno. */
struct rv_uring_error {
	uint64_t wr_id;
	int error;
};
int rv_uring_open(struct rv *rv, unsigned int entries, unsigned int flags,
		  struct rv_uring **up);
int rv_uring_post_write(struct rv_uring *u, const struct rv_write *w);
int rv_uring_submit(struct rv_uring *u);
int rv_uring_reap(struct rv_uring *u, struct rv_uring_error *errs,
		  unsigned int max);
int rv_uring_fd(const struct rv_uring *u);
void rv_uring_close(struct rv_uring *u);

#ifdef __cplusplus
}
#endif

#endif /* LIBRV_H */
