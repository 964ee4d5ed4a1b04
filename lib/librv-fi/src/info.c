// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fi_getinfo: what the provider offers, filtered by the application's
 * hints.  One fi_info per usable RDMA device would be possible; the
 * provider offers the one it would attach to (FI_RV_DEVICE, else the first
 * device with a RoCE v2 GID carrying an IPv4 address), which is what a
 * job wants anyway: every rank on the same device and port.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rvfi.h"

#define RVFI_PRIMARY_CAPS	(FI_MSG | FI_TAGGED | FI_SEND | FI_RECV)
#define RVFI_SECONDARY_CAPS	(FI_SOURCE | FI_DIRECTED_RECV | \
				 FI_MULTI_RECV | FI_LOCAL_COMM | \
				 FI_REMOTE_COMM)
/* What fi_getinfo(3) lets tx_attr and rx_attr carry of our caps. */
#define RVFI_TX_CAPS		(FI_MSG | FI_TAGGED | FI_SEND)
#define RVFI_RX_CAPS		(FI_MSG | FI_TAGGED | FI_RECV | FI_SOURCE | \
				 FI_DIRECTED_RECV | FI_MULTI_RECV)
#define RVFI_CAPS		(RVFI_PRIMARY_CAPS | RVFI_SECONDARY_CAPS)

/* The first RoCE v2 GID of port 1 that carries an IPv4 address. */
static int ipv4_gid(const char *dev, uint32_t *ip)
{
	struct in_addr addr;
	int gid = rv_ipv4_gid(dev, 1, -1, &addr);

	if (gid >= 0)
		*ip = addr.s_addr;
	return gid;
}

/*
 * Finds the device to use: @want if not NULL, else FI_RV_DEVICE, else the
 * first device (in name order) that has a usable GID.  Returns 0 and
 * fills in the name, GID index and IPv4 address, or -FI_ENODATA.
 */
int rvfi_find_device(const char *want, char *name, size_t len, int *gid,
		     uint32_t *ip)
{
	struct dirent **ents;
	int n, i, ret = -FI_ENODATA;

	if (!want && rvfi_env.device[0])
		want = rvfi_env.device;
	if (want) {
		*gid = ipv4_gid(want, ip);
		if (*gid < 0)
			return -FI_ENODATA;
		snprintf(name, len, "%s", want);
		return 0;
	}
	n = scandir("/sys/class/infiniband", &ents, NULL, alphasort);
	if (n < 0)
		return -FI_ENODATA;
	for (i = 0; i < n; i++) {
		if (ret && ents[i]->d_name[0] != '.') {
			*gid = ipv4_gid(ents[i]->d_name, ip);
			if (*gid >= 0) {
				snprintf(name, len, "%s", ents[i]->d_name);
				ret = 0;
			}
		}
		free(ents[i]);
	}
	free(ents);
	return ret;
}

/* Old (pre-1.5) applications speak FI_MR_BASIC / FI_MR_SCALABLE. */
static int pick_mr_mode(uint32_t version, int hint)
{
	if (FI_VERSION_LT(version, FI_VERSION(1, 5)))
		return hint == FI_MR_BASIC ? FI_MR_BASIC : FI_MR_SCALABLE;
	/* The provider needs none of the FI_MR_* duties from the app. */
	return 0;
}

static int check_hints(const struct fi_info *h,
		       const char *dev)
{
	if (!h)
		return 0;
	if (h->caps & ~RVFI_CAPS)
		return -FI_ENODATA;
	/* h->mode: what the app can do; the provider requires none. */
	/* Ours (struct rvfi_addr, as UNSPEC), or IPv4 sockaddrs. */
	if (h->addr_format != FI_FORMAT_UNSPEC &&
	    h->addr_format != FI_SOCKADDR && h->addr_format != FI_SOCKADDR_IN)
		return -FI_ENODATA;
	if (h->ep_attr) {
		if (h->ep_attr->type != FI_EP_UNSPEC &&
		    h->ep_attr->type != FI_EP_RDM)
			return -FI_ENODATA;
		if (h->ep_attr->max_msg_size > RVFI_MAX_MSG_SIZE)
			return -FI_ENODATA;
		if (h->ep_attr->tx_ctx_cnt > 1 || h->ep_attr->rx_ctx_cnt > 1)
			return -FI_ENODATA;
		if (h->ep_attr->protocol != FI_PROTO_UNSPEC)
			return -FI_ENODATA;
	}
	if (h->fabric_attr) {
		if (h->fabric_attr->name &&
		    strcmp(h->fabric_attr->name, RVFI_NAME))
			return -FI_ENODATA;
		if (h->fabric_attr->prov_name &&
		    strcasecmp(h->fabric_attr->prov_name, RVFI_NAME))
			return -FI_ENODATA;
	}
	if (h->domain_attr) {
		const struct fi_domain_attr *d = h->domain_attr;

		if (d->name && strcmp(d->name, dev))
			return -FI_ENODATA;
		/* FI_SHARED_AV and the like are not offered. */
		if (d->caps & ~(uint64_t)(FI_LOCAL_COMM | FI_REMOTE_COMM))
			return -FI_ENODATA;
		if (d->control_progress == FI_PROGRESS_AUTO ||
		    d->data_progress == FI_PROGRESS_AUTO)
			return -FI_ENODATA;
		if (d->av_type != FI_AV_UNSPEC && d->av_type != FI_AV_MAP &&
		    d->av_type != FI_AV_TABLE)
			return -FI_ENODATA;
		if (d->cq_data_size > RVFI_CQ_DATA_SIZE)
			return -FI_ENODATA;
	}
	if (h->tx_attr) {
		if (h->tx_attr->msg_order & ~(uint64_t)FI_ORDER_SAS)
			return -FI_ENODATA;
		/* Completion levels: all but FI_COMMIT_COMPLETE (msg.c). */
		if (h->tx_attr->op_flags & FI_COMMIT_COMPLETE)
			return -FI_ENODATA;
		if (h->tx_attr->inject_size > RVFI_INJECT_SIZE)
			return -FI_ENODATA;
		if (h->tx_attr->iov_limit > RVFI_IOV_LIMIT)
			return -FI_ENODATA;
		if (h->tx_attr->size > RVFI_QUEUE_SIZE)
			return -FI_ENODATA;
	}
	if (h->rx_attr) {
		if (h->rx_attr->msg_order & ~(uint64_t)FI_ORDER_SAS)
			return -FI_ENODATA;
		if (h->rx_attr->iov_limit > RVFI_IOV_LIMIT)
			return -FI_ENODATA;
		if (h->rx_attr->size > RVFI_QUEUE_SIZE)
			return -FI_ENODATA;
		if (h->rx_attr->total_buffered_recv > 0)
			return -FI_ENODATA;
	}
	return 0;
}

static uint64_t pick_caps(const struct fi_info *h)
{
	uint64_t want = h ? h->caps : 0;
	uint64_t caps;

	if (!(want & RVFI_PRIMARY_CAPS))
		want |= FI_MSG | FI_TAGGED;
	caps = want & RVFI_PRIMARY_CAPS;
	/* FI_SEND/FI_RECV unsaid means both. */
	if (!(caps & (FI_SEND | FI_RECV)))
		caps |= FI_SEND | FI_RECV;
	/* Secondary caps that cost nothing; DIRECTED_RECV only if asked. */
	caps |= FI_SOURCE | FI_LOCAL_COMM | FI_REMOTE_COMM;
	if (!h || (want & FI_DIRECTED_RECV))
		caps |= FI_DIRECTED_RECV;
	if (!h || (want & FI_MULTI_RECV))
		caps |= FI_MULTI_RECV;
	return caps;
}

/*
 * node/service to an IPv4 sockaddr: a name or a number each (getaddrinfo),
 * node NULL being INADDR_ANY for a source and loopback for a destination.
 */
static int resolve(const char *node, const char *service, bool source,
		   struct sockaddr_in *sin)
{
	struct addrinfo h = { .ai_family = AF_INET,
			      .ai_socktype = SOCK_STREAM,
			      .ai_flags = source ? AI_PASSIVE : 0 };
	struct addrinfo *ai;

	if (getaddrinfo(node, service, &h, &ai))
		return -FI_ENODATA;
	memcpy(sin, ai->ai_addr, sizeof(*sin));
	freeaddrinfo(ai);
	return 0;
}

/* An address from the hints, in either format we take. */
static int hint_addr(const void *addr, size_t len, struct sockaddr_in *sin)
{
	struct rvfi_addr a;
	size_t n;
	bool is_sin;

	if (!addr)
		return 0;
	if (rvfi_addr_parse(addr, len, &a, &n, &is_sin))
		return -FI_ENODATA;
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = a.ip;
	sin->sin_port = a.port;
	return 0;
}

/* This node's addresses (ours, any, loopback) all mean the device's. */
static bool local_ip(uint32_t ip, uint32_t dev_ip)
{
	return ip == dev_ip || ip == htonl(INADDR_ANY) ||
	       (ntohl(ip) >> 24) == IN_LOOPBACKNET;
}

static int set_addr(void **out, size_t *outlen, uint32_t format,
		    const struct sockaddr_in *sin)
{
	if (format == FI_SOCKADDR_IN) {
		*out = malloc(sizeof(*sin));
		if (!*out)
			return -FI_ENOMEM;
		memcpy(*out, sin, sizeof(*sin));
		*outlen = sizeof(*sin);
	} else {
		struct rvfi_addr *a = calloc(1, sizeof(*a));

		if (!a)
			return -FI_ENOMEM;
		rvfi_addr_from_sin(a, sin);
		*out = a;
		*outlen = sizeof(*a);
	}
	return 0;
}

/*
 * fi_getinfo(3)'s addressing: with FI_SOURCE node/service name the source,
 * else the destination, and the source is then the one the route takes,
 * which for rv is always the device's address.  The hints' src_addr and
 * dest_addr are taken where node/service say nothing.  A source that is
 * not this node's device address is FI_ENODATA: endpoints only bind there.
 */
static int fill_addrs(struct fi_info *fi, const char *node,
		      const char *service, uint64_t flags,
		      const struct fi_info *hints, uint32_t dev_ip)
{
	struct sockaddr_in src = { .sin_family = AF_INET }, dst;
	bool have_dst = false;
	int ret;

	src.sin_addr.s_addr = dev_ip;
	if (hints) {
		ret = hint_addr(hints->src_addr, hints->src_addrlen, &src);
		if (ret)
			return ret;
		if (hints->dest_addr) {
			ret = hint_addr(hints->dest_addr, hints->dest_addrlen,
					&dst);
			if (ret)
				return ret;
			have_dst = true;
		}
	}
	if ((flags & FI_SOURCE) && (node || service)) {
		ret = resolve(node, service, true, &src);
		if (ret)
			return ret;
	} else if (!(flags & FI_SOURCE) && (node || service)) {
		ret = resolve(node, service, false, &dst);
		if (ret)
			return ret;
		have_dst = true;
	}
	if (!local_ip(src.sin_addr.s_addr, dev_ip))
		return -FI_ENODATA;
	src.sin_addr.s_addr = dev_ip;
	if (have_dst && local_ip(dst.sin_addr.s_addr, dev_ip))
		dst.sin_addr.s_addr = dev_ip;
	ret = set_addr(&fi->src_addr, &fi->src_addrlen, fi->addr_format, &src);
	if (!ret && have_dst)
		ret = set_addr(&fi->dest_addr, &fi->dest_addrlen,
			       fi->addr_format, &dst);
	return ret;
}

int rvfi_getinfo(uint32_t version, const char *node, const char *service,
		 uint64_t flags, const struct fi_info *hints,
		 struct fi_info **info)
{
	const struct fi_domain_attr *hd = hints ? hints->domain_attr : NULL;
	char dev[64];
	uint32_t ip;
	int gid, ret;
	struct fi_info *fi;

	*info = NULL;
	/* FI_ADDR_STR nodes ("fi_...://") are not ours to parse. */
	if (node && strstr(node, "://"))
		return -FI_ENODATA;
	if (access("/dev/rv", F_OK))
		return -FI_ENODATA;
	ret = rvfi_find_device(hd && hd->name ? hd->name : NULL, dev,
			       sizeof(dev), &gid, &ip);
	if (ret)
		return ret;
	ret = check_hints(hints, dev);
	if (ret)
		return ret;

	fi = fi_allocinfo();
	if (!fi)
		return -FI_ENOMEM;
	fi->caps = pick_caps(hints);
	fi->mode = 0;
	fi->addr_format = hints && (hints->addr_format == FI_SOCKADDR ||
				    hints->addr_format == FI_SOCKADDR_IN) ?
			  FI_SOCKADDR_IN : FI_FORMAT_UNSPEC;
	ret = fill_addrs(fi, node, service, flags, hints, ip);
	if (ret) {
		fi_freeinfo(fi);
		return ret;
	}

	fi->tx_attr->caps = fi->caps & RVFI_TX_CAPS;
	fi->tx_attr->op_flags = hints && hints->tx_attr ?
				hints->tx_attr->op_flags &
				(FI_COMPLETION | FI_INJECT_COMPLETE |
				 FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE) :
				0;
	fi->tx_attr->msg_order = FI_ORDER_SAS;
	fi->tx_attr->comp_order = FI_ORDER_NONE;
	fi->tx_attr->inject_size = RVFI_INJECT_SIZE;
	fi->tx_attr->size = RVFI_QUEUE_SIZE;
	fi->tx_attr->iov_limit = RVFI_IOV_LIMIT;
	fi->tx_attr->rma_iov_limit = 0;

	fi->rx_attr->caps = fi->caps & RVFI_RX_CAPS;
	fi->rx_attr->op_flags = hints && hints->rx_attr ?
				hints->rx_attr->op_flags &
				(FI_COMPLETION | (fi->caps & FI_MULTI_RECV)) :
				0;
	fi->rx_attr->msg_order = FI_ORDER_SAS;
	fi->rx_attr->comp_order = FI_ORDER_NONE;
	fi->rx_attr->total_buffered_recv = 0;
	fi->rx_attr->size = RVFI_QUEUE_SIZE;
	fi->rx_attr->iov_limit = RVFI_IOV_LIMIT;

	fi->ep_attr->type = FI_EP_RDM;
	fi->ep_attr->protocol = FI_PROTO_UNSPEC;
	fi->ep_attr->protocol_version = 1;
	fi->ep_attr->max_msg_size = RVFI_MAX_MSG_SIZE;
	fi->ep_attr->msg_prefix_size = 0;
	fi->ep_attr->max_order_raw_size = 0;
	fi->ep_attr->max_order_war_size = 0;
	fi->ep_attr->max_order_waw_size = 0;
	fi->ep_attr->mem_tag_format = 0xaaaaaaaaaaaaaaaaull; /* generic: all 64 bits */
	fi->ep_attr->tx_ctx_cnt = 1;
	fi->ep_attr->rx_ctx_cnt = 1;

	fi->domain_attr->name = strdup(dev);
	fi->domain_attr->threading = hd && hd->threading ? hd->threading :
				     FI_THREAD_SAFE;
	fi->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	fi->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	/*
	 * FI_RM_ENABLED unless asked otherwise: a domain opened with
	 * FI_RM_DISABLED reports CQ overruns instead of refusing posts.
	 */
	fi->domain_attr->resource_mgmt = hd &&
		hd->resource_mgmt == FI_RM_DISABLED ? FI_RM_DISABLED :
		FI_RM_ENABLED;
	fi->domain_attr->av_type = hd && hd->av_type ? hd->av_type :
				   FI_AV_UNSPEC;
	fi->domain_attr->mr_mode = pick_mr_mode(version, hd ? hd->mr_mode : 0);
	fi->domain_attr->mr_key_size = sizeof(uint64_t);
	fi->domain_attr->cq_data_size = RVFI_CQ_DATA_SIZE;
	fi->domain_attr->cq_cnt = 1024;
	fi->domain_attr->ep_cnt = 1024;
	fi->domain_attr->tx_ctx_cnt = 1024;
	fi->domain_attr->rx_ctx_cnt = 1024;
	fi->domain_attr->max_ep_tx_ctx = 1;
	fi->domain_attr->max_ep_rx_ctx = 1;
	fi->domain_attr->max_ep_stx_ctx = 0;
	fi->domain_attr->max_ep_srx_ctx = 0;
	fi->domain_attr->cntr_cnt = 0;
	fi->domain_attr->mr_iov_limit = 1;
	fi->domain_attr->caps = FI_LOCAL_COMM | FI_REMOTE_COMM;
	fi->domain_attr->mode = 0;
	fi->domain_attr->mr_cnt = 65536;

	fi->fabric_attr->name = strdup(RVFI_NAME);
	/* prov_name stays NULL: libfabric fills it in (set, it appends). */
	fi->fabric_attr->prov_version = RVFI_PROV_VERSION;
	/* The caller's version: fi_cq_readerr() sizes its entry by it. */
	fi->fabric_attr->api_version = version;
	if (!fi->domain_attr->name || !fi->fabric_attr->name) {
		fi_freeinfo(fi);
		return -FI_ENOMEM;
	}
	*info = fi;
	return 0;
}
