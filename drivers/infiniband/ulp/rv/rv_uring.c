// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * io_uring commands on /dev/rv (file_operations.uring_cmd): a write
 * posted from an SQE, so that a stream of writes needs no system call
 * per write (IORING_SETUP_SQPOLL: none at all while the ring's thread is
 * awake).
 *
 * The command is issued synchronously: it posts the write through the
 * same rv_write_post_one() as RV_IOCTL_POST_WRITE and its CQE carries the
 * post's result (0 or -errno), never the write's completion, which comes
 * as an RV_EVENT_SEND in the file's event ring as for the ioctl.  So the
 * command has no state of its own once issued, nothing to cancel, and a
 * ring's CQ only fills at the submission rate.
 *
 * Who may post: the attaching process, as for the ioctls
 * (rv_file_check_owner(): current->mm is the attacher's).  io_uring
 * issues a command from the submitting task, from its ring's SQPOLL
 * thread, or from an io-wq worker; the last two are io threads of the
 * ring's creator and share its mm.  So the attaching process's own ring,
 * with or without SQPOLL, may post, and a ring created by any other
 * process (one the fd was passed to, a forked child) gets EPERM.
 */
#include "rv.h"
#include "rv_write.h"

#include <linux/string.h>

/* The cmd area of an SQE128 entry (80 bytes) holds the whole command. */
static_assert(sizeof(struct rv_uring_post_write) == 56);
static_assert(offsetof(struct rv_uring_post_write, write) == 8);
static_assert(sizeof(struct rv_uring_post_write) <= 80);

static int rv_uring_post_write(struct rv_file *rf,
			       struct io_uring_cmd *ioucmd,
			       unsigned int issue_flags)
{
	struct rv_uring_post_write cmd;
	int ret;

	/*
	 * Without SQE128 the cmd area is 16 bytes and the rest would be the
	 * next SQE: refuse before reading past it.
	 */
	if (!(issue_flags & IO_URING_F_SQE128))
		return -EINVAL;
	/* Once: the SQ ring stays writable by user space meanwhile. */
	memcpy(&cmd, rv_uring_cmd_bytes(ioucmd), sizeof(cmd));
	if (cmd.flags || cmd.rsvd)
		return -EINVAL;

	/*
	 * A non-blocking issue (inline submission, the SQPOLL thread) must
	 * not sleep on rf->lock, which REG_MEM may hold for as long as user
	 * space takes to serve a page fault.  Contended, the post fails with
	 * EAGAIN as a full send queue makes it fail: user space posts again.
	 * Not -EAGAIN to io_uring, which would issue the command again from
	 * an io-wq worker: 6.12 (up to at least 6.12.117) copies the SQE
	 * for that but leaves the command reading the SQ ring's slot, which
	 * user space may have filled with another write by then.
	 */
	if (issue_flags & IO_URING_F_NONBLOCK)
		ret = rv_file_trylock_dev(rf, true);
	else
		ret = rv_file_lock_dev(rf, true);
	if (!ret) {
		ret = rv_write_post_one(rf, &cmd.write);
		rv_file_unlock_dev(rf);
	}

	/*
	 * EAGAIN is an answer for user space, not a request to be issued
	 * again: returned as is, io_uring would take it for the latter.
	 * Complete the command with it here instead.
	 */
	if (ret == -EAGAIN) {
		io_uring_cmd_done(ioucmd, ret, 0, issue_flags);
		return -EIOCBQUEUED;
	}
	return ret;
}

/**
 * rv_uring_cmd - file_operations.uring_cmd of /dev/rv
 * @ioucmd: the command
 * @issue_flags: io_uring's IO_URING_F_* for this issue
 *
 * Return: the CQE's res (0 or -errno), or -EIOCBQUEUED once completed
 * with io_uring_cmd_done().  Never -EAGAIN: the command is never issued
 * again, so it holds no state after this call.
 */
int rv_uring_cmd(struct io_uring_cmd *ioucmd, unsigned int issue_flags)
{
	struct rv_file *rf = ioucmd->file->private_data;

	switch (ioucmd->cmd_op) {
	case RV_URING_CMD_POST_WRITE:
		return rv_uring_post_write(rf, ioucmd, issue_flags);
	default:
		return -EOPNOTSUPP;
	}
}
