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
 *   released; for every struct in this header that is its current size.
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
 */
#ifndef _UAPI_RDMA_RV_USER_IOCTLS_H
#define _UAPI_RDMA_RV_USER_IOCTLS_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define RV_IOCTL_TYPE 0xC5

enum {
	RV_CMD_QUERY = 0x00,
	RV_CMD_ATTACH = 0x01,
};

/* Limits, also reported by RV_IOCTL_QUERY. */
#define RV_JOB_KEY_MAX		16
#define RV_MAX_CONN_PER_NODE	16
#define RV_MIN_SLOT_BITS	1
#define RV_MAX_SLOT_BITS	16
#define RV_MIN_RING_ENTRIES	64
#define RV_MAX_RING_ENTRIES	(1U << 20)

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
 *
 * Needs no ATTACH.  Errors: only the common ones.
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
 * @slot: out: this process's slot index in the job
 * @mr_cache_bytes: in/out: this process's MR cache limit in bytes, 0 for
 *	the module default; on return the value in effect
 *
 * All files of one uid that attach with the same job key to the same
 * device and port form one job; the first creates it.  @num_conn,
 * @slot_bits and @gid_index are job-wide; @ring_entries and
 * @mr_cache_bytes are per process.  Closing the file detaches.
 *
 * Errors:
 *  EINVAL     @port_num not a port of the device, @gid_index not a valid
 *             GID entry, @job_key_len or a size out of range, non-zero key
 *             bytes past @job_key_len, @ring_entries not a power of two
 *  ENODEV     no RDMA device has @dev_index, or it is being removed
 *  EALREADY   this file is already attached
 *  EBUSY      the job exists with a different @num_conn, @slot_bits or
 *             @gid_index (after defaults are applied)
 *  ENOSPC     every slot of the job is taken
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
};

#define RV_IOCTL_ATTACH _IO(RV_IOCTL_TYPE, RV_CMD_ATTACH)

#endif /* _UAPI_RDMA_RV_USER_IOCTLS_H */
