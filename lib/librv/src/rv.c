// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The /dev/rv file: open, close, and thin wrappers around its ioctls that
 * fill in the size/flags header and translate errno into return values.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <rv/librv.h>
#include "librv_internal.h"

#define RV_DEV_PATH "/dev/rv"

int rv_open(struct rv **rvp, unsigned int flags)
{
	struct rv *rv;
	int ret;

	if (!rvp || flags)
		return -EINVAL;

	rv = calloc(1, sizeof(*rv));
	if (!rv)
		return -ENOMEM;

	rv->fd = open(RV_DEV_PATH, O_RDWR | O_CLOEXEC);
	if (rv->fd < 0) {
		ret = -errno;
		free(rv);
		return ret;
	}
	rv->slot = -1;
	*rvp = rv;
	return 0;
}

void rv_close(struct rv *rv)
{
	if (!rv)
		return;
	/*
	 * close() of a character device can only fail with EINTR/EIO after
	 * the descriptor is already gone; there is nothing to retry.
	 */
	rv_ring_unmap(rv);
	close(rv->fd);
	free(rv);
}

int rv_fd(const struct rv *rv)
{
	return rv->fd;
}

/* ioctl() returning 0 or -errno; rv's ioctls never return positive. */
int rv_ioctl(const struct rv *rv, unsigned long cmd, void *arg)
{
	int ret;

	do {
		ret = ioctl(rv->fd, cmd, arg);
	} while (ret < 0 && errno == EINTR);
	return ret < 0 ? -errno : 0;
}

int rv_query(struct rv *rv, struct rv_query *q)
{
	if (!q)
		return -EINVAL;
	/* Every field past the header is an output. */
	memset(q, 0, sizeof(*q));
	q->size = sizeof(*q);
	q->flags = 0;
	return rv_ioctl(rv, RV_IOCTL_QUERY, q);
}

int rv_attach(struct rv *rv, struct rv_attach *a)
{
	int ret;

	if (!a)
		return -EINVAL;
	a->size = sizeof(*a);
	ret = rv_ioctl(rv, RV_IOCTL_ATTACH, a);
	if (ret)
		return ret;
	/* slot < 2^RV_MAX_SLOT_BITS, so it always fits an int. */
	rv->slot = (int)a->slot;
	ret = rv_ring_map_attached(rv, a->ring_entries);
	return ret ? ret : rv->slot;
}

int rv_slot(const struct rv *rv)
{
	return rv->slot < 0 ? -ENOTCONN : rv->slot;
}
