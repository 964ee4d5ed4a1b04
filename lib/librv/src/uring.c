// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Writes through io_uring (rv_uring_open(3)): each write is one
 * RV_URING_CMD_POST_WRITE in a 128-byte SQE, so a stream of them costs one
 * io_uring_enter() per batch, or none while an SQPOLL thread is awake.
 *
 * Successful posts leave no CQE (IOSQE_CQE_SKIP_SUCCESS): their end is the
 * RV_EVENT_SEND in rv's event ring as for rv_post_write(), and the CQ only
 * carries the posts that failed, for rv_uring_reap().  The rv file is a
 * registered ("fixed") file of the ring, so no submission looks it up.
 */
/* liburing.h needs AT_FDCWD and friends from <fcntl.h>. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <liburing.h>

#include <rv/librv.h>
#include "librv_internal.h"

/* How long an idle SQPOLL thread spins before it sleeps, in ms. */
#define RV_URING_SQ_IDLE_MS	1000

struct rv_uring {
	struct io_uring ring;
	unsigned int flags;
};

/*
 * Prepare an RV_URING_CMD_POST_WRITE of @cmd in @sqe: the rv file is the
 * ring's fixed file 0.
 */
static void rv_uring_prep(struct io_uring_sqe *sqe,
			  const struct rv_uring_post_write *cmd,
			  uint64_t user_data)
{
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, 0, NULL, 0, 0);
	sqe->flags |= IOSQE_FIXED_FILE;
	sqe->cmd_op = RV_URING_CMD_POST_WRITE;
	sqe->__pad1 = 0;
	memcpy(sqe->cmd, cmd, sizeof(*cmd));
	io_uring_sqe_set_data64(sqe, user_data);
}

/*
 * Whether this rv takes the command: a post with invalid flags must come
 * back EINVAL (before any check of the file), not EOPNOTSUPP (no
 * uring_cmd, or an rv without RV_URING_CMD_POST_WRITE).  The one wait of
 * the library's io_uring path, bounded by the kernel's answer to a
 * command that is refused synchronously.
 */
static int rv_uring_probe(struct rv_uring *u)
{
	struct rv_uring_post_write cmd = { .flags = ~0u };
	struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
	struct io_uring_cqe *cqe;
	int ret;

	if (!sqe)
		return -ENOMEM;
	rv_uring_prep(sqe, &cmd, 0);
	ret = io_uring_submit_and_wait(&u->ring, 1);
	if (ret < 0)
		return ret;
	ret = io_uring_wait_cqe(&u->ring, &cqe);
	if (ret < 0)
		return ret;
	ret = cqe->res;
	io_uring_cqe_seen(&u->ring, cqe);
	return ret == -EINVAL ? 0 : ret == -EOPNOTSUPP ? ret : -EPROTO;
}

/* io_uring refused by the kernel or a policy: say "use the ioctls". */
static int rv_uring_unavailable(int err)
{
	switch (err) {
	case -ENOSYS:		/* no CONFIG_IO_URING, or seccomp */
	case -EPERM:		/* kernel.io_uring_disabled, seccomp */
	case -EACCES:		/* an LSM */
	case -EOPNOTSUPP:	/* rv without the command */
		return -EOPNOTSUPP;
	default:
		return err;
	}
}

int rv_uring_open(struct rv *rv, unsigned int entries, unsigned int flags,
		  struct rv_uring **up)
{
	struct io_uring_params p = { .flags = IORING_SETUP_SQE128 };
	struct rv_uring *u;
	int ret;

	if (!rv || !up || !entries || entries > RV_URING_MAX_ENTRIES ||
	    (flags & ~RV_URING_SQPOLL))
		return -EINVAL;
	*up = NULL;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->flags = flags;
	if (flags & RV_URING_SQPOLL) {
		p.flags |= IORING_SETUP_SQPOLL;
		p.sq_thread_idle = RV_URING_SQ_IDLE_MS;
	}
	ret = io_uring_queue_init_params(entries, &u->ring, &p);
	if (ret < 0)
		goto out_free;
	ret = io_uring_register_files(&u->ring, &rv->fd, 1);
	if (ret < 0)
		goto out_exit;
	ret = rv_uring_probe(u);
	if (ret < 0)
		goto out_exit;
	*up = u;
	return 0;

out_exit:
	io_uring_queue_exit(&u->ring);
out_free:
	free(u);
	return rv_uring_unavailable(ret);
}

int rv_uring_post_write(struct rv_uring *u, const struct rv_write *w)
{
	struct rv_uring_post_write cmd = { .flags = 0 };
	struct io_uring_sqe *sqe;

	if (!u || !w)
		return -EINVAL;
	sqe = io_uring_get_sqe(&u->ring);
	if (!sqe)
		return -EAGAIN;	/* the SQ is full: rv_uring_submit() */
	cmd.write = *w;
	rv_uring_prep(sqe, &cmd, w->wr_id);
	sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
	return 0;
}

int rv_uring_submit(struct rv_uring *u)
{
	int ret;

	if (!u)
		return -EINVAL;
	/* With SQPOLL a system call only if the thread went to sleep. */
	do {
		ret = io_uring_submit(&u->ring);
	} while (ret == -EINTR);
	return ret;
}

int rv_uring_reap(struct rv_uring *u, struct rv_uring_error *errs,
		  unsigned int max)
{
	struct io_uring_cqe *cqe;
	unsigned int n = 0;

	if (!u || (!errs && max))
		return -EINVAL;
	if (max > INT32_MAX)
		max = INT32_MAX;
	/* Peeking reads the mapped CQ: no system call. */
	while (n < max && io_uring_peek_cqe(&u->ring, &cqe) == 0) {
		errs[n].wr_id = io_uring_cqe_get_data64(cqe);
		errs[n].error = cqe->res < 0 ? -cqe->res : 0;
		io_uring_cqe_seen(&u->ring, cqe);
		n++;
	}
	return (int)n;
}

int rv_uring_fd(const struct rv_uring *u)
{
	return u ? u->ring.ring_fd : -EINVAL;
}

void rv_uring_close(struct rv_uring *u)
{
	if (!u)
		return;
	io_uring_queue_exit(&u->ring);
	free(u);
}
