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
#include <time.h>
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
	rv_mr_table_unmap(rv);
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
	rv->slot_bits = a->slot_bits;
	ret = rv_ring_map_attached(rv, a->ring_entries);
	if (!ret)
		ret = rv_mr_table_map_attached(rv, a->mr_table_entries);
	return ret ? ret : rv->slot;
}

int rv_slot(const struct rv *rv)
{
	return rv->slot < 0 ? -ENOTCONN : rv->slot;
}

int rv_slot_bits(const struct rv *rv)
{
	return rv->slot < 0 ? -ENOTCONN : (int)rv->slot_bits;
}

int rv_conn_create(struct rv *rv, const struct sockaddr *addr,
		   socklen_t addrlen, struct rv_conn_create *c)
{
	struct rv_conn_create cmd;
	int ret;

	if (!addr || addrlen > RV_CONN_ADDR_MAX)
		return -EINVAL;
	memset(&cmd, 0, sizeof(cmd));
	cmd.size = sizeof(cmd);
	cmd.addr_len = addrlen;
	memcpy(cmd.addr, addr, addrlen);
	ret = rv_ioctl(rv, RV_IOCTL_CONN_CREATE, &cmd);
	if (ret)
		return ret;
	if (c)
		*c = cmd;
	/* Handles are at most 65535 (the uAPI's CONN_CREATE ENOSPC). */
	return (int)cmd.handle;
}

int rv_conn_connect(struct rv *rv, uint32_t handle, uint32_t timeout_ms)
{
	struct rv_conn_connect cmd = {
		.size = sizeof(cmd),
		.handle = handle,
		.timeout_ms = timeout_ms,
	};

	return rv_ioctl(rv, RV_IOCTL_CONN_CONNECT, &cmd);
}

int rv_conn_query(struct rv *rv, uint32_t handle, struct rv_conn_query *q)
{
	if (!q)
		return -EINVAL;
	memset(q, 0, sizeof(*q));
	q->size = sizeof(*q);
	q->handle = handle;
	return rv_ioctl(rv, RV_IOCTL_CONN_QUERY, q);
}

static uint64_t rv_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int rv_conn_wait(struct rv *rv, uint32_t handle, uint32_t timeout_ms,
		 struct rv_conn_query *q)
{
	uint64_t deadline = rv_now_ms() + timeout_ms, now;
	struct rv_conn_query tmp;
	int ret;

	if (!q)
		q = &tmp;
	if (timeout_ms > RV_CONN_TIMEOUT_MAX_MS)
		return -EINVAL;
	for (;;) {
		now = rv_now_ms();
		memset(q, 0, sizeof(*q));
		q->size = sizeof(*q);
		q->handle = handle;
		q->flags = RV_CONN_QUERY_F_WAIT;
		q->timeout_ms = now < deadline ? (uint32_t)(deadline - now) : 0;
		/* Not rv_ioctl(): after a signal, wait only for what is left. */
		ret = ioctl(rv->fd, RV_IOCTL_CONN_QUERY, q);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0)
			return -errno;
		if (q->state == RV_CONN_STATE_CONNECTED ||
		    q->state == RV_CONN_STATE_ERROR)
			return (int)q->state;
		if (rv_now_ms() >= deadline)
			return -ETIMEDOUT;
	}
}

int rv_conn_destroy(struct rv *rv, uint32_t handle)
{
	struct rv_conn_destroy cmd = {
		.size = sizeof(cmd),
		.handle = handle,
	};
	int ret;

	ret = rv_ioctl(rv, RV_IOCTL_CONN_DESTROY, &cmd);
	return ret ? ret : (int)cmd.handles;
}
