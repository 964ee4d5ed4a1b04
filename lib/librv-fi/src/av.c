// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Address vectors.  FI_AV_MAP and FI_AV_TABLE are the same table here: an
 * fi_addr_t is the entry's index, handed out in insertion order (what
 * FI_AV_TABLE promises; FI_AV_MAP allows any value).  Removed entries are
 * not reused, so a stale fi_addr_t never names another peer.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rvfi.h"

int rvfi_av_find(struct rvfi_av *av, const struct rvfi_addr *a,
		 fi_addr_t *out)
{
	size_t i;

	for (i = 0; i < av->count; i++) {
		if (av->tab[i].used && rvfi_addr_eq(&av->tab[i].addr, a)) {
			*out = i;
			return 0;
		}
	}
	return -FI_ENOENT;
}

static int av_insert(struct fid_av *fid, const void *addr, size_t count,
		     fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	struct rvfi_av *av = container_of(fid, struct rvfi_av, av);
	const struct rvfi_addr *a = addr;
	int done = 0;
	size_t i;

	(void)context;
	if (flags & ~(uint64_t)FI_MORE)
		return -FI_EINVAL;
	if (count && !addr)
		return -FI_EINVAL;
	pthread_mutex_lock(&av->dom->lock);
	if (av->count + count > av->cap) {
		size_t cap = av->cap ? av->cap : 64;
		struct rvfi_av_entry *t;

		while (cap < av->count + count)
			cap *= 2;
		t = realloc(av->tab, cap * sizeof(*t));
		if (!t) {
			pthread_mutex_unlock(&av->dom->lock);
			return -FI_ENOMEM;
		}
		av->tab = t;
		av->cap = cap;
	}
	for (i = 0; i < count; i++) {
		/* Another layout (an older provider's) is not misread. */
		if (!rvfi_addr_valid(&a[i])) {
			if (fi_addr)
				fi_addr[i] = FI_ADDR_NOTAVAIL;
			continue;
		}
		av->tab[av->count].addr = a[i];
		av->tab[av->count].used = true;
		if (fi_addr)
			fi_addr[i] = av->count;
		av->count++;
		done++;
	}
	av->gen++;
	pthread_mutex_unlock(&av->dom->lock);
	return done;
}

static int av_insertsvc(struct fid_av *av, const char *node,
			const char *service, fi_addr_t *fi_addr,
			uint64_t flags, void *context)
{
	(void)av; (void)node; (void)service; (void)fi_addr; (void)flags;
	(void)context;
	return -FI_ENOSYS;
}

static int av_insertsym(struct fid_av *av, const char *node, size_t nodecnt,
			const char *service, size_t svccnt,
			fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	(void)av; (void)node; (void)nodecnt; (void)service; (void)svccnt;
	(void)fi_addr; (void)flags; (void)context;
	return -FI_ENOSYS;
}

static int av_remove(struct fid_av *fid, fi_addr_t *fi_addr, size_t count,
		     uint64_t flags)
{
	struct rvfi_av *av = container_of(fid, struct rvfi_av, av);
	int ret = 0;
	size_t i;

	if (flags)
		return -FI_EINVAL;
	pthread_mutex_lock(&av->dom->lock);
	for (i = 0; i < count; i++) {
		if (fi_addr[i] >= av->count || !av->tab[fi_addr[i]].used)
			ret = -FI_EINVAL;
		else
			av->tab[fi_addr[i]].used = false;
	}
	av->gen++;
	pthread_mutex_unlock(&av->dom->lock);
	return ret;
}

static int av_lookup(struct fid_av *fid, fi_addr_t fi_addr, void *addr,
		     size_t *addrlen)
{
	struct rvfi_av *av = container_of(fid, struct rvfi_av, av);
	int ret = 0;

	pthread_mutex_lock(&av->dom->lock);
	if (fi_addr >= av->count || !av->tab[fi_addr].used) {
		ret = -FI_ENOENT;
	} else {
		memcpy(addr, &av->tab[fi_addr].addr,
		       *addrlen < sizeof(struct rvfi_addr) ?
		       *addrlen : sizeof(struct rvfi_addr));
		if (*addrlen < sizeof(struct rvfi_addr))
			ret = -FI_ETOOSMALL;
		*addrlen = sizeof(struct rvfi_addr);
	}
	pthread_mutex_unlock(&av->dom->lock);
	return ret;
}

static const char *av_straddr(struct fid_av *av, const void *addr, char *buf,
			      size_t *len)
{
	const struct rvfi_addr *a = addr;
	char ip[INET_ADDRSTRLEN], s[128];
	int n;

	(void)av;
	inet_ntop(AF_INET, &a->ip, ip, sizeof(ip));
	if (!rvfi_addr_valid(a))
		n = snprintf(s, sizeof(s), "rv://invalid/v%u/len%u",
			     a->version, a->len);
	else
		n = snprintf(s, sizeof(s), "rv://%s:%u/slot%u/pid%u/%016llx",
			     ip, ntohs(a->port), ntohl(a->slot), ntohl(a->pid),
			     (unsigned long long)a->nonce);
	if (buf && *len)
		snprintf(buf, *len, "%s", s);
	*len = n + 1;
	return buf;
}

static int av_set(struct fid_av *av, struct fi_av_set_attr *attr,
		  struct fid_av_set **set, void *context)
{
	(void)av; (void)attr; (void)set; (void)context;
	return -FI_ENOSYS;
}

static struct fi_ops_av av_ops = {
	.size = sizeof(struct fi_ops_av),
	.insert = av_insert,
	.insertsvc = av_insertsvc,
	.insertsym = av_insertsym,
	.remove = av_remove,
	.lookup = av_lookup,
	.straddr = av_straddr,
	.av_set = av_set,
};

static int av_close(struct fid *fid)
{
	struct rvfi_av *av = container_of(fid, struct rvfi_av, av.fid);
	struct rvfi_domain *dom = av->dom;

	pthread_mutex_lock(&dom->lock);
	if (av->refs) {
		pthread_mutex_unlock(&dom->lock);
		return -FI_EBUSY;
	}
	dom->refs--;
	pthread_mutex_unlock(&dom->lock);
	free(av->tab);
	free(av);
	return 0;
}

static struct fi_ops av_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = av_close,
	.bind = rvfi_no_bind,
	.control = rvfi_no_control,
	.ops_open = rvfi_no_ops_open,
	.tostr = rvfi_no_tostr,
	.ops_set = rvfi_no_ops_set,
};

int rvfi_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		 struct fid_av **avp, void *context)
{
	struct rvfi_domain *dom = container_of(domain, struct rvfi_domain, dom);
	struct rvfi_av *av;

	if (!attr)
		return -FI_EINVAL;
	if (attr->type != FI_AV_UNSPEC && attr->type != FI_AV_MAP &&
	    attr->type != FI_AV_TABLE)
		return -FI_EINVAL;
	if (attr->rx_ctx_bits || attr->name || (attr->flags & ~(uint64_t)
						(FI_EVENT | FI_SYMMETRIC)))
		return -FI_ENOSYS;
	if (attr->flags & FI_EVENT)
		return -FI_ENOSYS;
	av = calloc(1, sizeof(*av));
	if (!av)
		return -FI_ENOMEM;
	av->dom = dom;
	av->type = attr->type == FI_AV_UNSPEC ? FI_AV_MAP : attr->type;
	av->av.fid.fclass = FI_CLASS_AV;
	av->av.fid.context = context;
	av->av.fid.ops = &av_fi_ops;
	av->av.ops = &av_ops;
	pthread_mutex_lock(&dom->lock);
	dom->refs++;
	pthread_mutex_unlock(&dom->lock);
	*avp = &av->av;
	return 0;
}
