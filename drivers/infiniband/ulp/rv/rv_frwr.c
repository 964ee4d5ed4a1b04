// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Fast registration (FRWR) of remote-access registrations.
 *
 * A peer's RDMA WRITE needs an rkey.  Every RC driver gives one through
 * fast registration: ib_alloc_mr(IB_MR_TYPE_MEM_REG), ib_map_mr_sg() over
 * DMA addresses, and an IB_WR_REG_MR work request posted on a QP of the
 * MR's PD; once it completes the MR is valid PD-wide, so the job's data
 * QPs take writes into it.  The work request is local, but it needs a QP
 * in RTS: each job has one more RC QP for that, connected to itself and
 * never sending a packet (the job's connections come and go, a
 * registration must not wait for one).  It is created at the first
 * remote-access registration and destroyed with the job's PD.
 *
 * Registrations are serialised per job and waited for, at most
 * RV_FRWR_TIMEOUT_MS; after an error or a timeout the QP is destroyed
 * before the caller may deregister its MR (so the device is done with the
 * work request) and a new one is built by the next registration.
 *
 * An MR whose registration leaves the cache may be invalidated with an
 * IB_WR_LOCAL_INV on the same QP, waited for before its pages are
 * unpinned, and registered again later (the file's pool, rv_mr.c).
 */
#include "rv.h"

#include <linux/bottom_half.h>
#include <linux/etherdevice.h>
#include <linux/log2.h>
#include <linux/slab.h>
#include <rdma/ib_cache.h>

/*
 * Longest wait for a registration's completion (microseconds on a healthy
 * device).  Device removal may wait for this once per queued registration.
 */
#define RV_FRWR_TIMEOUT_MS	2000

static void rv_frwr_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rv_frwr_qp *f = container_of(wc->wr_cqe, struct rv_frwr_qp,
					    cqe);

	WRITE_ONCE(f->status, wc->status);
	complete(&f->done);
}

/* The QP's own address, for a connection to itself. */
static int rv_frwr_self_av(struct rv_job *job, struct rdma_ah_attr *ah)
{
	struct ib_device *ibdev = job->dev->ibdev;
	u32 port = job->params.port_num;
	const struct ib_gid_attr *sgid;
	struct ib_port_attr port_attr;
	struct net_device *ndev;
	union ib_gid gid;
	int ret;

	ah->type = rdma_ah_find_type(ibdev, port);
	rdma_ah_set_port_num(ah, port);
	if (ah->type == RDMA_AH_ATTR_TYPE_IB) {
		ret = ib_query_port(ibdev, port, &port_attr);
		if (ret)
			return ret;
		rdma_ah_set_dlid(ah, port_attr.lid);
		return 0;
	}

	sgid = rdma_get_gid_attr(ibdev, port, job->params.gid_index);
	if (IS_ERR(sgid))
		return PTR_ERR(sgid);
	gid = sgid->gid;
	rdma_ah_set_grh(ah, &gid, 0, job->params.gid_index, 1, 0);
	/* Kernel users resolve the MAC themselves: ours. */
	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(sgid);
	if (IS_ERR(ndev))
		ret = PTR_ERR(ndev);
	else
		ether_addr_copy(ah->roce.dmac, ndev->dev_addr);
	rcu_read_unlock();
	rdma_put_gid_attr(sgid);
	return IS_ERR(ndev) ? ret : 0;
}

/* RESET -> INIT -> RTR (to itself) -> RTS. */
static int rv_frwr_connect_self(struct rv_job *job, struct ib_qp *qp)
{
	struct ib_qp_attr attr = {
		.qp_state = IB_QPS_INIT,
		.port_num = job->params.port_num,
	};
	int ret;

	ret = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	if (ret)
		return ret;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTR;
	attr.path_mtu = IB_MTU_1024;
	attr.dest_qp_num = qp->qp_num;
	attr.max_dest_rd_atomic = 1;
	attr.min_rnr_timer = 12;
	ret = rv_frwr_self_av(job, &attr.ah_attr);
	if (ret)
		return ret;
	ret = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
			   IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			   IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (ret)
		return ret;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTS;
	attr.timeout = 14;
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;
	attr.max_rd_atomic = 1;
	return ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_TIMEOUT |
			    IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_SQ_PSN |
			    IB_QP_MAX_QP_RD_ATOMIC);
}

/* Caller holds f->lock and is in the device's read section. */
static int rv_frwr_qp_create(struct rv_job *job, struct rv_frwr_qp *f)
{
	struct ib_device *ibdev = job->dev->ibdev;
	struct ib_qp_init_attr init = {
		.cap = {
			.max_send_wr = RV_FRWR_SQ_DEPTH,
			.max_recv_wr = 1,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.qp_type = IB_QPT_RC,
	};
	int ret;

	f->cq = ib_alloc_cq(ibdev, f, RV_FRWR_SQ_DEPTH + 1, 0,
			    IB_POLL_SOFTIRQ);
	if (IS_ERR(f->cq)) {
		ret = PTR_ERR(f->cq);
		goto out_clear;
	}
	init.send_cq = f->cq;
	init.recv_cq = f->cq;
	f->qp = ib_create_qp(job->pd, &init);
	if (IS_ERR(f->qp)) {
		ret = PTR_ERR(f->qp);
		goto out_free_cq;
	}
	ret = rv_frwr_connect_self(job, f->qp);
	if (ret)
		goto out_destroy_qp;
	return 0;

out_destroy_qp:
	ib_destroy_qp(f->qp);
out_free_cq:
	ib_free_cq(f->cq);
out_clear:
	f->qp = NULL;
	f->cq = NULL;
	return ret;
}

/*
 * Caller holds f->lock (or is the job's last user) and is in the device's
 * read section, or is its removal.
 */
static void rv_frwr_qp_destroy(struct rv_frwr_qp *f)
{
	if (!f->qp)
		return;
	ib_destroy_qp(f->qp);
	ib_free_cq(f->cq);
	f->qp = NULL;
	f->cq = NULL;
}

void rv_frwr_init(struct rv_frwr_qp *f)
{
	mutex_init(&f->lock);
	init_completion(&f->done);
	f->cqe.done = rv_frwr_done;
}

/**
 * rv_frwr_release - destroy the job's registration QP
 * @job: the job, its ib resources being released (before its PD)
 *
 * Caller is in the device's read section or is its removal; safe to call
 * twice.
 */
void rv_frwr_release(struct rv_job *job)
{
	mutex_lock(&job->frwr.lock);
	rv_frwr_qp_destroy(&job->frwr);
	mutex_unlock(&job->frwr.lock);
}

/**
 * rv_frwr_key_shift - log2 of the bytes one key chunk of the job covers
 * @job: the job; its device is not removed
 *
 * A chunk is the most pages one fast-registration MR maps (the device's
 * limit, capped by the module parameter frwr_max_pages) rounded down to a
 * power of two, so a chunk aligned in the address space always fits one
 * MR.  0 when the device has no fast registration.
 */
u8 rv_frwr_key_shift(const struct rv_job *job)
{
	const struct ib_device_attr *attrs = &job->dev->ibdev->attrs;
	u32 pages = attrs->max_fast_reg_page_list_len;

	if (!(attrs->device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS) ||
	    !pages)
		return 0;
	if (rv_frwr_max_pages_param)
		pages = min(pages, rv_frwr_max_pages_param);
	return PAGE_SHIFT + ilog2(pages);
}

/*
 * Post a chain of work requests whose last is signaled and wait for it.
 * Caller holds f->lock; the QP exists.  A post error returns at once,
 * with *@refused (if given) set when the device took none of the chain.
 */
static int rv_frwr_post_wait(struct rv_job *job, struct rv_frwr_qp *f,
			     const struct ib_send_wr *chain, const char *what,
			     bool *refused)
{
	const struct ib_send_wr *bad = NULL;
	int ret;

	reinit_completion(&f->done);
	/*
	 * 6.1's rxe runs the work request and its completion in tasklets.
	 * Raised with bottom halves off, they run at local_bh_enable() in
	 * this context rather than in ksoftirqd after a context switch, so
	 * the wait below rarely sleeps.  Nothing for hardware, whose
	 * completion comes with an interrupt, nor for 6.12's rxe, which
	 * runs them in an unbound workqueue: there the wait sleeps.
	 */
	local_bh_disable();
	ret = ib_post_send(f->qp, chain, &bad);
	local_bh_enable();
	if (refused)
		*refused = ret && bad == chain;
	if (ret)
		return ret;
	if (!wait_for_completion_timeout(&f->done,
					 msecs_to_jiffies(RV_FRWR_TIMEOUT_MS))) {
		pr_warn_ratelimited("job%u: %s timed out\n", job->id, what);
		return -ETIMEDOUT;
	}
	/* Success only from the last: a failure flushes those after it. */
	if (READ_ONCE(f->status) != IB_WC_SUCCESS) {
		pr_warn_ratelimited("job%u: %s failed: %s\n", job->id, what,
				    ib_wc_status_msg(READ_ONCE(f->status)));
		return -EIO;
	}
	return 0;
}

/* Post @n (at most RV_FRWR_SQ_DEPTH) registrations as one chain; wait. */
static int rv_frwr_reg_batch(struct rv_job *job, struct rv_frwr_qp *f,
			     struct rv_frmr *frmrs, u32 n, int ib_access)
{
	struct ib_reg_wr *wrs = f->wrs.reg;
	struct ib_mr *mr;
	u32 i;

	memset(wrs, 0, n * sizeof(*wrs));
	for (i = 0; i < n; i++) {
		mr = frmrs[i].mr;
		/* An unsignaled one that fails completes too: same cqe. */
		wrs[i].wr.wr_cqe = &f->cqe;
		wrs[i].wr.opcode = IB_WR_REG_MR;
		wrs[i].wr.next = i + 1 < n ? &wrs[i + 1].wr : NULL;
		/* Per MR: its last key comes back after 256 of its own. */
		ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));
		wrs[i].mr = mr;
		wrs[i].key = mr->rkey;
		wrs[i].access = ib_access;
	}
	wrs[n - 1].wr.send_flags = IB_SEND_SIGNALED;
	return rv_frwr_post_wait(job, f, &wrs[0].wr, "fast registration",
				 NULL);
}

/*
 * Post @n (at most RV_FRWR_SQ_DEPTH) invalidations as one chain; wait.
 * *@refused: the device took none of them.
 */
static int rv_frwr_inv_batch(struct rv_job *job, struct rv_frwr_qp *f,
			     struct rv_frmr *frmrs, u32 n, bool *refused)
{
	struct ib_send_wr *wrs = f->wrs.inv;
	u32 i;

	memset(wrs, 0, n * sizeof(*wrs));
	for (i = 0; i < n; i++) {
		wrs[i].wr_cqe = &f->cqe;
		wrs[i].opcode = IB_WR_LOCAL_INV;
		wrs[i].ex.invalidate_rkey = frmrs[i].mr->rkey;
		wrs[i].next = i + 1 < n ? &wrs[i + 1] : NULL;
	}
	wrs[n - 1].send_flags = IB_SEND_SIGNALED;
	return rv_frwr_post_wait(job, f, &wrs[0], "local invalidation",
				 refused);
}

/**
 * rv_frwr_alloc_mr - a fast-registration MR that maps at least @pages
 * @job: the job; its device is not removed
 * @pages: pages to map, at least 1
 * @frmr: filled in
 *
 * Allocates for @pages rounded up to a power of two (at least 16) when
 * the device allows, so that the MR can serve other registrations.
 * Returns 0 or ib_alloc_mr()'s error.
 */
int rv_frwr_alloc_mr(struct rv_job *job, u32 pages, struct rv_frmr *frmr)
{
	u32 dev_max = job->dev->ibdev->attrs.max_fast_reg_page_list_len;

	frmr->max_pages = roundup_pow_of_two(max(pages, 16U));
	if (frmr->max_pages > dev_max)
		frmr->max_pages = pages;
	frmr->mr = ib_alloc_mr(job->pd, IB_MR_TYPE_MEM_REG, frmr->max_pages);
	return PTR_ERR_OR_ZERO(frmr->mr);
}

/**
 * rv_frwr_invalidate - invalidate registered MRs
 * @job: the job, whose PD holds @frmrs
 * @frmrs: made valid by rv_frwr_register()
 * @nr_mrs: entries of @frmrs
 *
 * Posts their IB_WR_LOCAL_INV in chains of RV_FRWR_SQ_DEPTH, each waited
 * for.  Caller is in the device's read section.  Returns how many of
 * the first MRs are invalid now, ready to be mapped and registered
 * again; the caller deregisters the others (after an error the QP is
 * destroyed first, so the device is done with them).
 */
u32 rv_frwr_invalidate(struct rv_job *job, struct rv_frmr *frmrs, u32 nr_mrs)
{
	struct rv_frwr_qp *f = &job->frwr;
	bool refused;
	u32 done, n;
	int ret;

	mutex_lock(&f->lock);
	for (done = 0; f->qp && !f->no_local_inv && done < nr_mrs; done += n) {
		n = min_t(u32, nr_mrs - done, RV_FRWR_SQ_DEPTH);
		ret = rv_frwr_inv_batch(job, f, frmrs + done, n, &refused);
		if (!ret)
			continue;
		/*
		 * Refused at post: hns has no IB_WR_LOCAL_INV.  The job
		 * deregisters from now on (a QP in error refuses too; that
		 * costs the pool, not correctness).
		 */
		if (refused) {
			f->no_local_inv = true;
			pr_info("job%u: device refused local invalidation (%d): freed MRs are deregistered\n",
				job->id, ret);
		}
		rv_frwr_qp_destroy(f);
		break;
	}
	mutex_unlock(&f->lock);
	return done;
}

/**
 * rv_frwr_register - make fast-registration MRs valid
 * @job: the job, whose PD holds @frmrs
 * @frmrs: mapped with ib_map_mr_sg(), not valid
 * @nr_mrs: entries of @frmrs, at least 1
 * @ib_access: IB_ACCESS_* they grant
 *
 * Gives each MR its next key byte (a peer holding a key of one of the
 * MR's last 255 registrations cannot use this one), posts their
 * IB_WR_REG_MR on the job's registration QP in chains of
 * RV_FRWR_SQ_DEPTH and waits for each chain, at most RV_FRWR_TIMEOUT_MS
 * each.  Caller is in the device's read section.  Returns 0, -ENOMEM
 * (no registration QP), -EIO (the device failed a work request),
 * -ETIMEDOUT, or the error of posting.  On error the device is done with
 * the MRs: the caller deregisters them.
 */
int rv_frwr_register(struct rv_job *job, struct rv_frmr *frmrs, u32 nr_mrs,
		     int ib_access)
{
	struct rv_frwr_qp *f = &job->frwr;
	u32 done, n;
	int ret = 0;

	mutex_lock(&f->lock);
	if (!f->qp) {
		ret = rv_frwr_qp_create(job, f);
		if (ret) {
			/*
			 * Whatever the driver said (rxe: ENFILE when its
			 * QP's socket cannot be allocated), the caller sees
			 * a device out of resources.
			 */
			pr_warn_ratelimited("job%u: no registration QP: %d\n",
					    job->id, ret);
			ret = -ENOMEM;
			goto out_unlock;
		}
	}
	for (done = 0; done < nr_mrs; done += n) {
		n = min_t(u32, nr_mrs - done, RV_FRWR_SQ_DEPTH);
		ret = rv_frwr_reg_batch(job, f, frmrs + done, n, ib_access);
		if (ret) {
			/* The QP is in error or stuck: the device must be
			 * done with the MRs before they are deregistered.
			 */
			rv_frwr_qp_destroy(f);
			break;
		}
	}
out_unlock:
	mutex_unlock(&f->lock);
	return ret;
}
