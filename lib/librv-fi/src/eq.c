// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Event queues.  The provider reports nothing connection-related (RDM
 * endpoints), so an EQ carries what the application writes (FI_WRITE)
 * and the FI_AV_COMPLETE events and per-address errors of an AV opened
 * with FI_EVENT.  Entries are kept in order, errors among them: a read
 * that meets an error entry first answers -FI_EAVAIL, as fi_eq(3) says.
 *
 * At most @size entries (fi_eq_attr.size, RVFI_EQ_SIZE if 0): a write to
 * a full EQ fails with -FI_EAGAIN and loses nothing that was queued.  An
 * AV's event that does not fit is dropped and counted in @overruns, and
 * the next read answers -FI_EOVERRUN once: the application learns of it.
 *
 * Wait object: an eventfd (FI_WAIT_FD or FI_WAIT_UNSPEC) readable exactly
 * while the EQ holds an entry; fi_eq_sread() polls it.  FI_WAIT_NONE has
 * none, and its sread is -FI_ENOSYS.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "rvfi.h"

#define RVFI_EQ_SIZE	1024

struct rvfi_eq_ent {
	struct rvfi_list link;
	uint32_t event;
	bool err;
	size_t len;
	union {
		struct fi_eq_err_entry err_entry;
		uint8_t data[sizeof(struct fi_eq_cm_entry) + 256];
	} u;
};

struct rvfi_eq {
	struct fid_eq eq;
	struct rvfi_fabric *fab;
	pthread_mutex_t lock;	/* @entries, @n, @overruns, @fd's level */
	struct rvfi_list entries;
	size_t n, size;
	uint64_t overruns;
	uint64_t flags;		/* fi_eq_attr.flags: FI_WRITE */
	int fd;			/* eventfd, -1 for FI_WAIT_NONE */
	int refs;		/* bound AVs */
};

static struct rvfi_eq *to_eq(struct fid_eq *fid)
{
	return container_of(fid, struct rvfi_eq, eq);
}

/*
 * Called with @eq->lock held after @n or @overruns changed: the eventfd
 * is readable exactly while one of them is not 0.
 */
static void eq_level(struct rvfi_eq *eq)
{
	uint64_t v = 1;

	if (eq->fd < 0)
		return;
	if (eq->n || eq->overruns) {
		if (write(eq->fd, &v, sizeof(v)) != sizeof(v))
			RVFI_WARN("EQ eventfd write: %s\n", strerror(errno));
	} else {
		/* Nonblocking: drains the counter, or finds it empty. */
		if (read(eq->fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
			RVFI_WARN("EQ eventfd read: %s\n", strerror(errno));
	}
}

static int eq_push(struct rvfi_eq *eq, uint32_t event, const void *buf,
		   size_t len, bool err)
{
	struct rvfi_eq_ent *e;

	if (len > sizeof(e->u))
		return -FI_EINVAL;
	pthread_mutex_lock(&eq->lock);
	if (eq->n >= eq->size) {
		pthread_mutex_unlock(&eq->lock);
		return -FI_EAGAIN;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		pthread_mutex_unlock(&eq->lock);
		return -FI_ENOMEM;
	}
	e->event = event;
	e->err = err;
	e->len = len;
	if (len)
		memcpy(&e->u, buf, len);
	rvfi_list_add_tail(&eq->entries, &e->link);
	eq->n++;
	eq_level(eq);
	pthread_mutex_unlock(&eq->lock);
	return 0;
}

void rvfi_eq_report(struct fid_eq *fid, uint32_t event, const void *buf,
		    size_t len, bool err)
{
	struct rvfi_eq *eq = to_eq(fid);

	if (!eq_push(eq, event, buf, len, err))
		return;
	pthread_mutex_lock(&eq->lock);
	eq->overruns++;
	eq_level(eq);
	pthread_mutex_unlock(&eq->lock);
}

void rvfi_eq_get(struct fid_eq *fid)
{
	struct rvfi_eq *eq = to_eq(fid);

	pthread_mutex_lock(&eq->lock);
	eq->refs++;
	pthread_mutex_unlock(&eq->lock);
}

void rvfi_eq_put(struct fid_eq *fid)
{
	struct rvfi_eq *eq = to_eq(fid);

	pthread_mutex_lock(&eq->lock);
	eq->refs--;
	pthread_mutex_unlock(&eq->lock);
}

int rvfi_eq_trywait(struct fid_eq *fid)
{
	struct rvfi_eq *eq = to_eq(fid);
	int ret;

	if (eq->fd < 0)
		return -FI_ENOSYS;
	pthread_mutex_lock(&eq->lock);
	ret = eq->n || eq->overruns ? -FI_EAGAIN : FI_SUCCESS;
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

/* The head entry if it is of kind @err; -FI_EAGAIN, -FI_EAVAIL or 0. */
static int eq_head(struct rvfi_eq *eq, bool err, struct rvfi_eq_ent **out)
{
	struct rvfi_eq_ent *e;

	if (!err && eq->overruns) {
		eq->overruns = 0;
		eq_level(eq);
		return -FI_EOVERRUN;
	}
	if (rvfi_list_empty(&eq->entries))
		return -FI_EAGAIN;
	e = container_of(eq->entries.next, struct rvfi_eq_ent, link);
	if (e->err != err)
		return err ? -FI_EAGAIN : -FI_EAVAIL;
	*out = e;
	return 0;
}

static void eq_pop(struct rvfi_eq *eq, struct rvfi_eq_ent *e)
{
	rvfi_list_del(&e->link);
	eq->n--;
	eq_level(eq);
	free(e);
}

static ssize_t eq_read(struct fid_eq *fid, uint32_t *event, void *buf,
		       size_t len, uint64_t flags)
{
	struct rvfi_eq *eq = to_eq(fid);
	struct rvfi_eq_ent *e;
	ssize_t ret;

	if (flags & ~(uint64_t)FI_PEEK)
		return -FI_EINVAL;
	pthread_mutex_lock(&eq->lock);
	ret = eq_head(eq, false, &e);
	if (!ret && (len < e->len || (e->len && !buf)))
		ret = -FI_ETOOSMALL;
	if (!ret) {
		if (event)
			*event = e->event;
		if (e->len)
			memcpy(buf, &e->u, e->len);
		ret = (ssize_t)e->len;
		if (!(flags & FI_PEEK))
			eq_pop(eq, e);
	}
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

static ssize_t eq_readerr(struct fid_eq *fid, struct fi_eq_err_entry *buf,
			  uint64_t flags)
{
	struct rvfi_eq *eq = to_eq(fid);
	struct rvfi_eq_ent *e;
	ssize_t ret;

	if (!buf || (flags & ~(uint64_t)FI_PEEK))
		return -FI_EINVAL;
	pthread_mutex_lock(&eq->lock);
	ret = eq_head(eq, true, &e);
	if (!ret) {
		/* No error data: the caller's err_data buffer is left alone. */
		buf->fid = e->u.err_entry.fid;
		buf->context = e->u.err_entry.context;
		buf->data = e->u.err_entry.data;
		buf->err = e->u.err_entry.err;
		buf->prov_errno = e->u.err_entry.prov_errno;
		buf->err_data_size = 0;
		ret = sizeof(*buf);
		if (!(flags & FI_PEEK))
			eq_pop(eq, e);
	}
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

static ssize_t eq_write(struct fid_eq *fid, uint32_t event, const void *buf,
			size_t len, uint64_t flags)
{
	struct rvfi_eq *eq = to_eq(fid);
	int ret;

	if (!(eq->flags & FI_WRITE) || flags || (len && !buf))
		return -FI_EINVAL;
	ret = eq_push(eq, event, buf, len, false);
	return ret ? ret : (ssize_t)len;
}

/* timeout < 0 waits for an entry as long as it takes (fi_eq(3)). */
static ssize_t eq_sread(struct fid_eq *fid, uint32_t *event, void *buf,
			size_t len, int timeout, uint64_t flags)
{
	struct rvfi_eq *eq = to_eq(fid);
	int64_t end = timeout < 0 ? 0 : (int64_t)rvfi_now_ms() + timeout;
	struct pollfd p;
	ssize_t ret;

	if (eq->fd < 0)
		return -FI_ENOSYS;
	p.fd = eq->fd;
	p.events = POLLIN;
	for (;;) {
		int left = -1;

		ret = eq_read(fid, event, buf, len, flags);
		if (ret != -FI_EAGAIN)
			return ret;
		if (timeout >= 0) {
			int64_t d = end - (int64_t)rvfi_now_ms();

			if (d <= 0)
				return -FI_EAGAIN;
			left = (int)d;
		}
		if (poll(&p, 1, left) < 0 && errno != EINTR)
			return -errno;
	}
}

static const char *eq_strerror(struct fid_eq *eq, int prov_errno,
			       const void *err_data, char *buf, size_t len)
{
	(void)eq; (void)err_data;
	if (buf && len)
		snprintf(buf, len, "%s", fi_strerror(prov_errno));
	return buf ? buf : fi_strerror(prov_errno);
}

static struct fi_ops_eq eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = eq_read,
	.readerr = eq_readerr,
	.write = eq_write,
	.sread = eq_sread,
	.strerror = eq_strerror,
};

static int eq_close(struct fid *fid)
{
	struct rvfi_eq *eq = container_of(fid, struct rvfi_eq, eq.fid);
	struct rvfi_list *pos, *tmp;

	pthread_mutex_lock(&eq->lock);
	if (eq->refs) {
		pthread_mutex_unlock(&eq->lock);
		return -FI_EBUSY;
	}
	pthread_mutex_unlock(&eq->lock);
	rvfi_list_for_each_safe(pos, tmp, &eq->entries)
		free(container_of(pos, struct rvfi_eq_ent, link));
	if (eq->fd >= 0)
		close(eq->fd);
	pthread_mutex_destroy(&eq->lock);
	eq->fab->refs--;
	free(eq);
	return 0;
}

static int eq_control(struct fid *fid, int command, void *arg)
{
	struct rvfi_eq *eq = container_of(fid, struct rvfi_eq, eq.fid);

	if (command != FI_GETWAIT)
		return -FI_ENOSYS;
	if (eq->fd < 0)
		return -FI_ENODATA;
	if (!arg)
		return -FI_EINVAL;
	*(int *)arg = eq->fd;
	return 0;
}

static struct fi_ops eq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = eq_close,
	.bind = rvfi_no_bind,
	.control = eq_control,
	.ops_open = rvfi_no_ops_open,
	.tostr = rvfi_no_tostr,
	.ops_set = rvfi_no_ops_set,
};

int rvfi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		 struct fid_eq **eqp, void *context)
{
	struct rvfi_fabric *fab = container_of(fabric, struct rvfi_fabric, fab);
	enum fi_wait_obj w = attr ? attr->wait_obj : FI_WAIT_UNSPEC;
	struct rvfi_eq *eq;

	if (!eqp)
		return -FI_EINVAL;
	if (w != FI_WAIT_NONE && w != FI_WAIT_UNSPEC && w != FI_WAIT_FD)
		return -FI_ENOSYS;
	if (attr && (attr->signaling_vector ||
		     (attr->flags & ~(uint64_t)FI_WRITE)))
		return -FI_ENOSYS;
	eq = calloc(1, sizeof(*eq));
	if (!eq)
		return -FI_ENOMEM;
	eq->fd = -1;
	if (w != FI_WAIT_NONE) {
		eq->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (eq->fd < 0) {
			free(eq);
			return -FI_ENOMEM;
		}
	}
	pthread_mutex_init(&eq->lock, NULL);
	rvfi_list_init(&eq->entries);
	eq->size = attr && attr->size ? attr->size : RVFI_EQ_SIZE;
	eq->flags = attr ? attr->flags : 0;
	eq->fab = fab;
	eq->eq.fid.fclass = FI_CLASS_EQ;
	eq->eq.fid.context = context;
	eq->eq.fid.ops = &eq_fi_ops;
	eq->eq.ops = &eq_ops;
	fab->refs++;
	*eqp = &eq->eq;
	return 0;
}
