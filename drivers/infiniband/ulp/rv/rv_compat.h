/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rv: the one place where kernel versions differ.  rv builds against
 * Debian's 6.1 and 6.12 LTS kernels; the .c files use 6.12's API, and what
 * 6.1 lacks is defined here, each under one version check.  Included by
 * rv.h.
 */
#ifndef RV_COMPAT_H
#define RV_COMPAT_H

#include <linux/mm.h>
#include <linux/version.h>

#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 3, 0)
/*
 * 6.3 made vm_flags read-only behind setters that also write-lock the VMA
 * for per-VMA locking; before that, mmap_lock held for writing (as it is
 * in ->mmap) was all a change needed.
 */
static inline void vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
	/* Not mmap_assert_write_locked(): 6.1 does not export its dump_mm(). */
	lockdep_assert_held_write(&vma->vm_mm->mmap_lock);
	vma->vm_flags |= flags;
}

static inline void vm_flags_clear(struct vm_area_struct *vma,
				  vm_flags_t flags)
{
	lockdep_assert_held_write(&vma->vm_mm->mmap_lock);
	vma->vm_flags &= ~flags;
}
#endif

/*
 * A driver's io_uring command API: 6.7 moved it to <linux/io_uring/cmd.h>,
 * and 6.6 replaced struct io_uring_cmd's pointer to the command's bytes
 * (@cmd) with one to the whole SQE (@sqe, read through
 * io_uring_sqe_cmd()).  Either way the bytes may be the SQ ring user
 * space still writes to: rv_uring.c copies them once.
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 7, 0)
#include <linux/io_uring.h>
#else
#include <linux/io_uring/cmd.h>
#endif

static inline const void *rv_uring_cmd_bytes(const struct io_uring_cmd *ioucmd)
{
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 6, 0)
	return ioucmd->cmd;
#else
	return io_uring_sqe_cmd(ioucmd->sqe);
#endif
}

#endif /* RV_COMPAT_H */
