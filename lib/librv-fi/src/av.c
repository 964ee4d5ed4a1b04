// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Address vectors.  FI_AV_MAP and FI_AV_TABLE are the same table here: an
 * fi_addr_t is the entry's index, handed out in insertion order (what
 * FI_AV_TABLE promises; FI_AV_MAP allows any value).  Removed entries are
 * not reused, so a stale fi_addr_t never names another peer.
 *
 * Two address formats come in, whatever the fi_info's addr_format says:
 * the provider's own (struct rvfi_addr, what fi_getname gives, which an
 * in-band or out-of-band exchange carries) and FI_SOCKADDR_IN (what
 * fi_getinfo's node/service give with FI_SOCKADDR_IN).  Their first two
 * bytes tell them apart: rvfi_addr's version and length (2, 24) can never
 * be an AF_INET sa_family in either byte order.  A sockaddr_in makes a
 * bare address (rvfi.h): enough to reach a published endpoint, which
 * answers with its full address in its own HELLO.
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rvfi.h"

int rvfi_addr_from_sin(struct rvfi_addr *a, const struct sockaddr_in *sin)
{
	memset(a, 0, sizeof(*a));
	a->version = RVFI_ADDR_VERSION;
	a->len = sizeof(*a);
	a->ip = sin->sin_addr.s_addr;
	a->port = sin->sin_port;
	return 0;
}

/*
 * Reads one address of either format from the @avail bytes at @buf
 * (SIZE_MAX: fi_av_insert's, whose size the format implies): *@len is
 * the bytes it takes, *@is_sin which it was.  -FI_EINVAL: neither (an
 * unknown layout, another family) or more than @avail.
 */
int rvfi_addr_parse(const void *buf, size_t avail, struct rvfi_addr *a,
		    size_t *len, bool *is_sin)
{
	const uint8_t *b = buf;
	struct sockaddr_in sin;

	if (avail < sizeof(sin))
		return -FI_EINVAL;
	if (b[0] == RVFI_ADDR_VERSION && b[1] == sizeof(*a)) {
		if (avail < sizeof(*a))
			return -FI_EINVAL;
		memcpy(a, buf, sizeof(*a));
		*len = sizeof(*a);
		*is_sin = false;
		return 0;
	}
	memcpy(&sin, buf, sizeof(sin));
	if (sin.sin_family != AF_INET)
		return -FI_EINVAL;
	rvfi_addr_from_sin(a, &sin);
	*len = sizeof(sin);
	*is_sin = true;
	return 0;
}

/* An exact entry first; else a bare one with the same node and port. */
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
	for (i = 0; i < av->count; i++) {
		if (av->tab[i].used && rvfi_addr_match(&av->tab[i].addr, a)) {
			*out = i;
			return 0;
		}
	}
	return -FI_ENOENT;
}

/*
 * Inserts @count addresses (av_insert() checked its arguments); @bad, if
 * not NULL, gets a mark for each one rejected.  Returns how many were
 * inserted.
 */
static int av_insert_now(struct rvfi_av *av, const void *addr, size_t count,
			 fi_addr_t *fi_addr, uint64_t flags, void *context,
			 bool *bad)
{
	const uint8_t *a = addr;
	int done = 0;
	size_t i;

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
		struct rvfi_av_entry *e = &av->tab[av->count];
		size_t len;
		bool ok;

		/*
		 * Another layout (an older provider's) is not misread, and
		 * is skipped at the size its first byte suggests.
		 */
		ok = !rvfi_addr_parse(a, SIZE_MAX, &e->addr, &len, &e->sin);
		if (!ok)	/* a zeroed or foreign sockaddr, we guess */
			len = a[0] == RVFI_ADDR_VERSION ?
			      sizeof(struct rvfi_addr) :
			      sizeof(struct sockaddr_in);
		if (!ok || !rvfi_addr_valid(&e->addr) || !e->addr.ip) {
			if (fi_addr)
				fi_addr[i] = FI_ADDR_NOTAVAIL;
			if (bad)
				bad[i] = true;
			if (flags & FI_SYNC_ERR)
				((int *)context)[i] = FI_EINVAL;
			a += len;
			continue;
		}
		if (flags & FI_SYNC_ERR)
			((int *)context)[i] = 0;
		a += len;
		e->used = true;
		if (fi_addr)
			fi_addr[i] = av->count;
		av->count++;
		done++;
	}
	av->gen++;
	pthread_mutex_unlock(&av->dom->lock);
	return done;
}

/*
 * FI_EVENT: the insert is done at once all the same; its outcome goes to
 * the bound EQ as one error entry per rejected address (data = its index),
 * then FI_AV_COMPLETE with the number inserted, as fi_av(3) orders them.
 */
static int av_insert_event(struct rvfi_av *av, const void *addr,
			   size_t count, fi_addr_t *fi_addr, uint64_t flags,
			   void *context)
{
	struct fi_eq_entry done = { .fid = &av->av.fid, .context = context };
	bool *bad = NULL;
	size_t i;
	int ret;

	if (flags & FI_SYNC_ERR)
		return -FI_EINVAL;
	if (!av->eq)
		return -FI_ENOEQ;
	if (count) {
		bad = calloc(count, sizeof(*bad));
		if (!bad)
			return -FI_ENOMEM;
	}
	ret = av_insert_now(av, addr, count, fi_addr, flags, context, bad);
	if (ret < 0) {
		free(bad);
		return ret;
	}
	for (i = 0; i < count; i++) {
		struct fi_eq_err_entry err = {
			.fid = &av->av.fid, .context = context, .data = i,
			.err = FI_EINVAL, .prov_errno = -FI_EINVAL,
		};

		if (bad[i])
			rvfi_eq_report(av->eq, FI_AV_COMPLETE, &err,
				       sizeof(err), true);
	}
	free(bad);
	done.data = (uint64_t)ret;
	rvfi_eq_report(av->eq, FI_AV_COMPLETE, &done, sizeof(done), false);
	return 0;
}

static int av_insert(struct fid_av *fid, const void *addr, size_t count,
		     fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	struct rvfi_av *av = container_of(fid, struct rvfi_av, av);

	if (flags & ~(uint64_t)(FI_MORE | FI_SYNC_ERR))
		return -FI_EINVAL;
	if (count && !addr)
		return -FI_EINVAL;
	if (av->event)
		return av_insert_event(av, addr, count, fi_addr, flags,
				       context);
	return av_insert_now(av, addr, count, fi_addr, flags, context, NULL);
}

/* node/service as fi_getinfo takes them: one bare address. */
static int av_insertsvc(struct fid_av *av, const char *node,
			const char *service, fi_addr_t *fi_addr,
			uint64_t flags, void *context)
{
	struct addrinfo h = { .ai_family = AF_INET,
			      .ai_socktype = SOCK_STREAM };
	struct sockaddr_in sin;
	struct addrinfo *ai;

	if (!node || !service || (flags & FI_SYNC_ERR))
		return -FI_EINVAL;
	if (getaddrinfo(node, service, &h, &ai))
		return -FI_EINVAL;
	memcpy(&sin, ai->ai_addr, sizeof(sin));
	freeaddrinfo(ai);
	return av_insert(av, &sin, 1, fi_addr, flags, context);
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
		/* In the format it came in. */
		const struct rvfi_av_entry *e = &av->tab[fi_addr];
		struct sockaddr_in sin = { .sin_family = AF_INET,
					   .sin_port = e->addr.port };
		const void *src = &e->addr;
		size_t n = sizeof(e->addr);

		if (e->sin) {
			sin.sin_addr.s_addr = e->addr.ip;
			src = &sin;
			n = sizeof(sin);
		}
		memcpy(addr, src, *addrlen < n ? *addrlen : n);
		if (*addrlen < n)
			ret = -FI_ETOOSMALL;
		*addrlen = n;
	}
	pthread_mutex_unlock(&av->dom->lock);
	return ret;
}

static const char *av_straddr(struct fid_av *av, const void *addr, char *buf,
			      size_t *len)
{
	struct rvfi_addr parsed;
	const struct rvfi_addr *a = &parsed;
	char ip[INET_ADDRSTRLEN], s[128];
	size_t alen;
	bool is_sin;
	int n;

	(void)av;
	memset(&parsed, 0, sizeof(parsed));
	if (rvfi_addr_parse(addr, SIZE_MAX, &parsed, &alen, &is_sin))
		memcpy(&parsed, addr, 2);
	inet_ntop(AF_INET, &a->ip, ip, sizeof(ip));
	if (rvfi_addr_bare(a) && rvfi_addr_valid(a))
		n = snprintf(s, sizeof(s), "rv://%s:%u", ip, ntohs(a->port));
	else if (!rvfi_addr_valid(a))
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
	if (av->eq)
		rvfi_eq_put(av->eq);
	free(av->tab);
	free(av);
	return 0;
}

/* An AV opened with FI_EVENT reports its inserts to one EQ. */
static int av_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct rvfi_av *av = container_of(fid, struct rvfi_av, av.fid);

	if (!bfid || bfid->fclass != FI_CLASS_EQ || flags)
		return -FI_EINVAL;
	if (!av->event)
		return -FI_ENOSYS;
	if (av->eq)
		return -FI_EBUSY;
	av->eq = container_of(bfid, struct fid_eq, fid);
	rvfi_eq_get(av->eq);
	return 0;
}

static struct fi_ops av_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = av_close,
	.bind = av_bind,
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
	av = calloc(1, sizeof(*av));
	if (!av)
		return -FI_ENOMEM;
	av->dom = dom;
	av->type = attr->type == FI_AV_UNSPEC ? FI_AV_MAP : attr->type;
	av->event = attr->flags & FI_EVENT;
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
