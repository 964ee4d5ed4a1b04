// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Completion queues.  Entries are kept in the widest format (tagged, plus
 * the source address for fi_cq_readfrom) and narrowed to the CQ's format
 * when read.  The CQ holds attr->size entries (RVFI_QUEUE_SIZE if 0);
 * how a full CQ is handled (reservation under FI_RM_ENABLED, the overrun
 * state otherwise) is described at struct rvfi_cq.  Reading drives the
 * domain's progress (FI_PROGRESS_MANUAL).
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rvfi.h"

static size_t entry_size(enum fi_cq_format f)
{
	switch (f) {
	case FI_CQ_FORMAT_MSG: return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA: return sizeof(struct fi_cq_data_entry);
	case FI_CQ_FORMAT_TAGGED: return sizeof(struct fi_cq_tagged_entry);
	default: return sizeof(struct fi_cq_entry);
	}
}

/*
 * Reserves @op's entry in @cq (NULL: none bound, nothing to reserve).
 * -FI_EAGAIN when every entry is taken or promised (FI_RM_ENABLED): the
 * application reads the CQ and posts again.
 */
int rvfi_op_reserve(struct rvfi_op *op, struct rvfi_cq *cq)
{
	if (!cq || cq->dom->rm_disabled)
		return 0;
	if (cq->count + cq->nerr + cq->reserved >= cq->size)
		return -FI_EAGAIN;
	cq->reserved++;
	op->rcq = cq;
	return 0;
}

/* Gives @op's reserved entry back: it is about to be used, or never. */
void rvfi_op_unreserve(struct rvfi_op *op)
{
	if (op->rcq) {
		op->rcq->reserved--;
		op->rcq = NULL;
	}
}

/* Room for one more entry, or the CQ enters the overrun state. */
static bool cq_room(struct rvfi_cq *cq)
{
	if (cq->count + cq->nerr < cq->size)
		return true;
	if (!cq->overrun || !(cq->lost & (cq->lost - 1)))
		RVFI_WARN("CQ overrun (FI_RM_DISABLED): %llu completions lost so far, reported as -FI_EOVERRUN\n",
			  (unsigned long long)cq->lost + 1);
	cq->overrun = true;
	cq->lost++;
	return false;
}

void rvfi_cq_push(struct rvfi_cq *cq, void *ctx, uint64_t flags, size_t len,
		  void *buf, uint64_t data, uint64_t tag, fi_addr_t src)
{
	struct rvfi_cqe *e;

	if (!cq_room(cq))
		return;
	e = &cq->ring[(cq->head + cq->count) % cq->size];
	e->e.op_context = ctx;
	e->e.flags = flags;
	e->e.len = len;
	e->e.buf = buf;
	e->e.data = data;
	e->e.tag = tag;
	e->src = src;
	cq->count++;
}

void rvfi_cq_push_err(struct rvfi_cq *cq, void *ctx, uint64_t flags,
		      size_t len, void *buf, uint64_t data, uint64_t tag,
		      size_t olen, int err, int prov_errno, fi_addr_t src)
{
	struct rvfi_cq_err *ce;

	(void)src;
	if (!cq_room(cq))
		return;
	ce = calloc(1, sizeof(*ce));
	if (!ce) {
		/* Reported like an overrun: fi_cq_read says -FI_EOVERRUN. */
		RVFI_WARN("CQ: out of memory, error completion lost\n");
		cq->overrun = true;
		cq->lost++;
		return;
	}
	ce->e.op_context = ctx;
	ce->e.flags = flags;
	ce->e.len = len;
	ce->e.buf = buf;
	ce->e.data = data;
	ce->e.tag = tag;
	ce->e.olen = olen;
	ce->e.err = err;
	ce->e.prov_errno = prov_errno;
	rvfi_list_add_tail(&cq->errs, &ce->link);
	cq->nerr++;
}

/* Copies out up to @count entries; the caller holds the domain lock. */
static ssize_t cq_take(struct rvfi_cq *cq, void *buf, size_t count,
		       fi_addr_t *src)
{
	size_t esz = entry_size(cq->format), n = 0;
	char *out = buf;

	while (n < count && cq->count) {
		struct rvfi_cqe *e = &cq->ring[cq->head];

		/* The formats are prefixes of the tagged entry. */
		memcpy(out + n * esz, &e->e, esz);
		if (src)
			src[n] = e->src;
		cq->head = (cq->head + 1) % cq->size;
		cq->count--;
		n++;
	}
	if (n)
		return n;
	if (cq->nerr)
		return -FI_EAVAIL;
	/* fi_cq(3): once the valid entries are read, an overrun CQ says so. */
	return cq->overrun ? -FI_EOVERRUN : -FI_EAGAIN;
}

static ssize_t cq_readfrom(struct fid_cq *fid, void *buf, size_t count,
			   fi_addr_t *src)
{
	struct rvfi_cq *cq = container_of(fid, struct rvfi_cq, cq);
	ssize_t ret;

	pthread_mutex_lock(&cq->dom->lock);
	if (!cq->count)
		rvfi_progress(cq->dom);
	ret = cq_take(cq, buf, count, src);
	pthread_mutex_unlock(&cq->dom->lock);
	/*
	 * Nothing yet: the data is moved by the kernel (rxe's tasks, rv's
	 * completions, TCP), on this CPU too.  An application spinning on
	 * fi_cq_read() would take the CPU from that work; yield it.
	 */
	if (ret == -FI_EAGAIN && rvfi_env.yield)
		sched_yield();
	return ret;
}

static ssize_t cq_read(struct fid_cq *fid, void *buf, size_t count)
{
	return cq_readfrom(fid, buf, count, NULL);
}

static ssize_t cq_readerr(struct fid_cq *fid, struct fi_cq_err_entry *buf,
			  uint64_t flags)
{
	struct rvfi_cq *cq = container_of(fid, struct rvfi_cq, cq);
	struct rvfi_cq_err *ce;
	size_t size;

	(void)flags;
	pthread_mutex_lock(&cq->dom->lock);
	if (!cq->nerr) {
		pthread_mutex_unlock(&cq->dom->lock);
		return -FI_EAGAIN;
	}
	ce = container_of(cq->errs.next, struct rvfi_cq_err, link);
	rvfi_list_del(&ce->link);
	cq->nerr--;
	pthread_mutex_unlock(&cq->dom->lock);

	/*
	 * Applications written against API < 1.5 pass the shorter struct
	 * without err_data_size; newer ones may pass an err_data buffer,
	 * which stays untouched (no provider error data).
	 */
	if (FI_VERSION_LT(cq->dom->fab->fab.api_version, FI_VERSION(1, 5))) {
		size = offsetof(struct fi_cq_err_entry, err_data_size);
		ce->e.err_data = NULL;
	} else {
		size = sizeof(*buf);
		ce->e.err_data = buf->err_data_size ? buf->err_data : NULL;
		ce->e.err_data_size = 0;
	}
	memcpy(buf, &ce->e, size);
	free(ce);
	return 1;
}

/*
 * Blocking read: progress, then sleep on the domain's epoll set (sockets
 * and rv event rings) in slices of at most 100 ms, so completions that do
 * not wake a descriptor (a write retried after EAGAIN) are still found.
 */
static ssize_t cq_sreadfrom(struct fid_cq *fid, void *buf, size_t count,
			    fi_addr_t *src, const void *cond, int timeout)
{
	struct rvfi_cq *cq = container_of(fid, struct rvfi_cq, cq);
	uint64_t deadline = timeout < 0 ? 0 : rvfi_now_ms() + timeout;
	ssize_t ret;

	(void)cond;
	for (;;) {
		uint64_t now, left = 100;

		pthread_mutex_lock(&cq->dom->lock);
		rvfi_progress(cq->dom);
		ret = cq_take(cq, buf, count, src);
		if (ret == -FI_EAGAIN && cq->signaled) {
			cq->signaled = false;
			pthread_mutex_unlock(&cq->dom->lock);
			return -FI_EAGAIN;
		}
		pthread_mutex_unlock(&cq->dom->lock);
		if (ret != -FI_EAGAIN)
			return ret;
		if (timeout >= 0) {
			now = rvfi_now_ms();
			if (now >= deadline)
				return -FI_EAGAIN;
			left = deadline - now;
		}
		rvfi_wait(cq->dom, left > 100 ? 100 : (int)left);
	}
}

static ssize_t cq_sread(struct fid_cq *fid, void *buf, size_t count,
			const void *cond, int timeout)
{
	return cq_sreadfrom(fid, buf, count, NULL, cond, timeout);
}

static int cq_signal(struct fid_cq *fid)
{
	struct rvfi_cq *cq = container_of(fid, struct rvfi_cq, cq);

	pthread_mutex_lock(&cq->dom->lock);
	cq->signaled = true;
	pthread_mutex_unlock(&cq->dom->lock);
	return 0;
}

static const char *cq_strerror(struct fid_cq *cq, int prov_errno,
			       const void *err_data, char *buf, size_t len)
{
	const char *s = prov_errno > 0 ? strerror(prov_errno) :
			fi_strerror(-prov_errno);

	(void)cq; (void)err_data;
	if (buf && len) {
		snprintf(buf, len, "%s", s);
		return buf;
	}
	return s;
}

static struct fi_ops_cq cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = cq_read,
	.readfrom = cq_readfrom,
	.readerr = cq_readerr,
	.sread = cq_sread,
	.sreadfrom = cq_sreadfrom,
	.signal = cq_signal,
	.strerror = cq_strerror,
};

static int cq_close(struct fid *fid)
{
	struct rvfi_cq *cq = container_of(fid, struct rvfi_cq, cq.fid);
	struct rvfi_domain *dom = cq->dom;
	struct rvfi_list *pos, *tmp;

	pthread_mutex_lock(&dom->lock);
	if (cq->refs) {
		pthread_mutex_unlock(&dom->lock);
		return -FI_EBUSY;
	}
	dom->refs--;
	pthread_mutex_unlock(&dom->lock);
	rvfi_list_for_each_safe(pos, tmp, &cq->errs)
		free(container_of(pos, struct rvfi_cq_err, link));
	free(cq->ring);
	free(cq);
	return 0;
}

static struct fi_ops cq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = cq_close,
	.bind = rvfi_no_bind,
	.control = rvfi_no_control,
	.ops_open = rvfi_no_ops_open,
	.tostr = rvfi_no_tostr,
	.ops_set = rvfi_no_ops_set,
};

int rvfi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		 struct fid_cq **cqp, void *context)
{
	struct rvfi_domain *dom = container_of(domain, struct rvfi_domain, dom);
	struct rvfi_cq *cq;

	if (!attr)
		return -FI_EINVAL;
	switch (attr->format) {
	case FI_CQ_FORMAT_UNSPEC:
	case FI_CQ_FORMAT_CONTEXT:
	case FI_CQ_FORMAT_MSG:
	case FI_CQ_FORMAT_DATA:
	case FI_CQ_FORMAT_TAGGED:
		break;
	default:
		return -FI_ENOSYS;
	}
	/* sread works with any of these: it sleeps on the domain's epoll. */
	if (attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC)
		return -FI_ENOSYS;
	if (attr->flags & ~(uint64_t)FI_AFFINITY)
		return -FI_EINVAL;
	if (attr->size > RVFI_CQ_MAX_SIZE)
		return -FI_EINVAL;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;
	cq->size = attr->size ? attr->size : RVFI_QUEUE_SIZE;
	cq->ring = calloc(cq->size, sizeof(*cq->ring));
	if (!cq->ring) {
		free(cq);
		return -FI_ENOMEM;
	}
	cq->dom = dom;
	cq->format = attr->format == FI_CQ_FORMAT_UNSPEC ?
		     FI_CQ_FORMAT_CONTEXT : attr->format;
	rvfi_list_init(&cq->errs);
	cq->cq.fid.fclass = FI_CLASS_CQ;
	cq->cq.fid.context = context;
	cq->cq.fid.ops = &cq_fi_ops;
	cq->cq.ops = &cq_ops;
	pthread_mutex_lock(&dom->lock);
	dom->refs++;
	pthread_mutex_unlock(&dom->lock);
	*cqp = &cq->cq;
	return 0;
}
