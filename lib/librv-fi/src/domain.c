// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The domain: one RDMA device (its name is the domain name), the lock
 * that serialises everything opened from it, and the epoll set its
 * progress engine waits on.
 *
 * Memory registration: the provider asks for no FI_MR_* duty (mr_mode 0)
 * and registers buffers with rv's MR cache itself when a message takes the
 * rendezvous path.  fi_mr_reg still works, for applications that register
 * anyway: it returns a key-only MR that the data path ignores.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "rvfi.h"

struct rvfi_mr {
	struct fid_mr mr;
	struct rvfi_domain *dom;
};

static int mr_close(struct fid *fid)
{
	struct rvfi_mr *mr = container_of(fid, struct rvfi_mr, mr.fid);

	pthread_mutex_lock(&mr->dom->lock);
	mr->dom->refs--;
	pthread_mutex_unlock(&mr->dom->lock);
	free(mr);
	return 0;
}

static struct fi_ops mr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = mr_close,
	.bind = rvfi_no_bind,
	.control = rvfi_no_control,
	.ops_open = rvfi_no_ops_open,
	.tostr = rvfi_no_tostr,
	.ops_set = rvfi_no_ops_set,
};

static int mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
		      uint64_t flags, struct fid_mr **mrp)
{
	struct rvfi_domain *dom = container_of(fid, struct rvfi_domain, dom.fid);
	struct rvfi_mr *mr;

	if (!attr || !mrp || flags)
		return -FI_EINVAL;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -FI_ENOMEM;
	mr->dom = dom;
	mr->mr.fid.fclass = FI_CLASS_MR;
	mr->mr.fid.context = attr->context;
	mr->mr.fid.ops = &mr_fi_ops;
	mr->mr.mem_desc = NULL;
	pthread_mutex_lock(&dom->lock);
	mr->mr.key = attr->requested_key ? attr->requested_key :
		     ++dom->mr_keys;
	dom->refs++;
	pthread_mutex_unlock(&dom->lock);
	*mrp = &mr->mr;
	return 0;
}

static int mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
		   uint64_t access, uint64_t offset, uint64_t requested_key,
		   uint64_t flags, struct fid_mr **mr, void *context)
{
	struct fi_mr_attr attr = {
		.mr_iov = iov, .iov_count = count, .access = access,
		.offset = offset, .requested_key = requested_key,
		.context = context,
	};

	return mr_regattr(fid, &attr, flags, mr);
}

static int mr_reg(struct fid *fid, const void *buf, size_t len,
		  uint64_t access, uint64_t offset, uint64_t requested_key,
		  uint64_t flags, struct fid_mr **mr, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return mr_regv(fid, &iov, 1, access, offset, requested_key, flags, mr,
		       context);
}

static struct fi_ops_mr mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = mr_reg,
	.regv = mr_regv,
	.regattr = mr_regattr,
};

static int domain_close(struct fid *fid)
{
	struct rvfi_domain *dom = container_of(fid, struct rvfi_domain, dom.fid);

	if (dom->refs)
		return -FI_EBUSY;
	close(dom->epfd);
	pthread_mutex_destroy(&dom->lock);
	dom->fab->refs--;
	free(dom);
	return 0;
}

static struct fi_ops domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = domain_close,
	.bind = rvfi_no_bind,
	.control = rvfi_no_control,
	.ops_open = rvfi_no_ops_open,
	.tostr = rvfi_no_tostr,
	.ops_set = rvfi_no_ops_set,
};

static int no_sep(struct fid_domain *d, struct fi_info *i, struct fid_ep **e,
		  void *c)
{
	(void)d; (void)i; (void)e; (void)c;
	return -FI_ENOSYS;
}

static int no_cntr(struct fid_domain *d, struct fi_cntr_attr *a,
		   struct fid_cntr **c, void *ctx)
{
	(void)d; (void)a; (void)c; (void)ctx;
	return -FI_ENOSYS;
}

static int no_poll(struct fid_domain *d, struct fi_poll_attr *a,
		   struct fid_poll **p)
{
	(void)d; (void)a; (void)p;
	return -FI_ENOSYS;
}

static int no_stx(struct fid_domain *d, struct fi_tx_attr *a,
		  struct fid_stx **s, void *c)
{
	(void)d; (void)a; (void)s; (void)c;
	return -FI_ENOSYS;
}

static int no_srx(struct fid_domain *d, struct fi_rx_attr *a,
		  struct fid_ep **e, void *c)
{
	(void)d; (void)a; (void)e; (void)c;
	return -FI_ENOSYS;
}

static int no_qatomic(struct fid_domain *d, enum fi_datatype t, enum fi_op o,
		      struct fi_atomic_attr *a, uint64_t f)
{
	(void)d; (void)t; (void)o; (void)a; (void)f;
	return -FI_ENOSYS;
}

static int no_qcoll(struct fid_domain *d, enum fi_collective_op c,
		    struct fi_collective_attr *a, uint64_t f)
{
	(void)d; (void)c; (void)a; (void)f;
	return -FI_ENOSYS;
}

static int endpoint2(struct fid_domain *d, struct fi_info *info,
		     struct fid_ep **ep, uint64_t flags, void *context)
{
	if (flags)
		return -FI_EINVAL;
	return rvfi_ep_open(d, info, ep, context);
}

static struct fi_ops_domain domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = rvfi_av_open,
	.cq_open = rvfi_cq_open,
	.endpoint = rvfi_ep_open,
	.scalable_ep = no_sep,
	.cntr_open = no_cntr,
	.poll_open = no_poll,
	.stx_ctx = no_stx,
	.srx_ctx = no_srx,
	.query_atomic = no_qatomic,
	.query_collective = no_qcoll,
	.endpoint2 = endpoint2,
};

int rvfi_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		     struct fid_domain **domp, void *context)
{
	struct rvfi_fabric *fab = container_of(fabric, struct rvfi_fabric, fab);
	const char *want = info && info->domain_attr ? info->domain_attr->name :
			   NULL;
	struct rvfi_domain *dom;
	int ret;

	dom = calloc(1, sizeof(*dom));
	if (!dom)
		return -FI_ENOMEM;
	ret = rvfi_find_device(want, dom->name, sizeof(dom->name),
			       &dom->gid_index, &dom->ip);
	if (ret)
		goto out_free;
	dom->dev_index = rv_device_index(dom->name);
	if (dom->dev_index < 0) {
		RVFI_WARN("rv_device_index(%s): %s\n", dom->name,
			  strerror(-dom->dev_index));
		ret = -FI_ENODEV;
		goto out_free;
	}
	dom->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (dom->epfd < 0) {
		ret = -errno;
		goto out_free;
	}
	ret = pthread_mutex_init(&dom->lock, NULL);
	if (ret) {
		ret = -ret;
		goto out_epfd;
	}
	rvfi_list_init(&dom->eps);
	dom->threading = info && info->domain_attr ?
			 info->domain_attr->threading : FI_THREAD_SAFE;
	dom->rm_disabled = info && info->domain_attr &&
			   info->domain_attr->resource_mgmt == FI_RM_DISABLED;
	dom->fab = fab;
	dom->dom.fid.fclass = FI_CLASS_DOMAIN;
	dom->dom.fid.context = context;
	dom->dom.fid.ops = &domain_fi_ops;
	dom->dom.ops = &domain_ops;
	dom->dom.mr = &mr_ops;
	fab->refs++;
	*domp = &dom->dom;
	return 0;

out_epfd:
	close(dom->epfd);
out_free:
	free(dom);
	return ret;
}
