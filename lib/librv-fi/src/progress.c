// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The progress engine (FI_PROGRESS_MANUAL): called with the domain lock
 * held from CQ reads and the data calls.  One epoll_wait() without a
 * timeout collects the ready sockets of every endpoint of the domain;
 * then every endpoint's rv event ring is drained (no system call) and
 * writes that got EAGAIN are retried (once a write to their node
 * completed or FI_RV_SQ_RETRY_US passed), and messages that waited for
 * CQ room go to their multi-receive buffers.
 */
#include <errno.h>
#include <poll.h>
#include <sys/epoll.h>

#include "rvfi.h"

void rvfi_progress(struct rvfi_domain *dom)
{
	struct epoll_event evs[64];
	struct rvfi_list *pos, *tmp;
	uint64_t t0 = rvfi_stat_now();
	int n, i;

	do {
		n = epoll_wait(dom->epfd, evs, 64, 0);
		for (i = 0; i < n; i++)
			rvfi_tcp_event(evs[i].data.ptr, evs[i].events);
	} while (n == 64);

	rvfi_list_for_each_safe(pos, tmp, &dom->eps) {
		struct rvfi_ep *ep = container_of(pos, struct rvfi_ep, link);

		rvfi_rndv_progress(ep);
		rvfi_multi_retry(ep);
		ep->st.progress++;
		rvfi_stat_add(&ep->st.in_progress, t0);
	}
}

/*
 * Sleeps until a descriptor of the domain is ready or @timeout_ms pass,
 * without the lock.  poll() on the epoll descriptor itself does not
 * consume the (edge-triggered) events: the next progress call gets them.
 */
int rvfi_wait(struct rvfi_domain *dom, int timeout_ms)
{
	struct pollfd pfd = { .fd = dom->epfd, .events = POLLIN };
	int ret = poll(&pfd, 1, timeout_ms);

	return ret < 0 ? -errno : ret;
}
