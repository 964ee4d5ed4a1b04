// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv_fi_addr.c - addressing: fi_getinfo's node, service and FI_SOURCE,
 * and in-band address exchange with a published endpoint.
 */
#include "rv_fi_test.h"

#define PUB_PORT	"18573"

/* The provider's address inside an endpoint name (fi_getname()). */
struct rvfi_addr name_addr(const char *name)
{
	struct rvfi_addr a;

	memcpy(&a, name, sizeof(a));
	return a;
}

static void ip_str(const char *name, char *buf)
{
	struct rvfi_addr a = name_addr(name);

	inet_ntop(AF_INET, &a.ip, buf, INET_ADDRSTRLEN);
}

/*
 * fi_getinfo's node/service: with FI_SOURCE they are the source (our own
 * node), else the destination; FI_SOCKADDR_IN or the provider's format;
 * formats and sources the provider cannot take are FI_ENODATA.  Each node
 * checks on its own.
 */
static void t_getinfo_addr(void)
{
	char me[INET_ADDRSTRLEN], him[INET_ADDRSTRLEN];
	struct fi_info *h, *fi = NULL;
	const struct sockaddr_in *sin;
	const struct rvfi_addr *ra;
	struct rvfi_addr self = name_addr(self_name);
	int ret;

	sync_peer();
	ip_str(self_name, me);
	ip_str(peer_name, him);

	h = addr_hints(FI_SOCKADDR_IN, FI_MSG);
	ret = fi_getinfo(FI_VERSION(1, 17), me, "18574", FI_SOURCE, h, &fi);
	sin = fi ? fi->src_addr : NULL;
	result(!ret && fi->addr_format == FI_SOCKADDR_IN &&
	       fi->src_addrlen == sizeof(*sin) && sin &&
	       sin->sin_family == AF_INET && sin->sin_port == htons(18574) &&
	       sin->sin_addr.s_addr == self.ip && !fi->dest_addr,
	       "getinfo-source-sockaddr-in", "ret %d format %u srclen %zu",
	       ret, fi ? fi->addr_format : 0, fi ? fi->src_addrlen : 0);
	fi_freeinfo(fi);
	fi = NULL;

	ret = fi_getinfo(FI_VERSION(1, 17), him, "18575", 0, h, &fi);
	sin = fi ? fi->dest_addr : NULL;
	result(!ret && fi->dest_addrlen == sizeof(*sin) && sin &&
	       sin->sin_port == htons(18575) &&
	       sin->sin_addr.s_addr == name_addr(peer_name).ip &&
	       fi->src_addrlen == sizeof(*sin),
	       "getinfo-dest-sockaddr-in", "ret %d destlen %zu", ret,
	       fi ? fi->dest_addrlen : 0);
	fi_freeinfo(fi);
	fi = NULL;
	fi_freeinfo(h);

	/* The provider's format: a bare address (no nonce). */
	h = addr_hints(FI_FORMAT_UNSPEC, FI_MSG);
	ret = fi_getinfo(FI_VERSION(1, 17), him, "18575", 0, h, &fi);
	ra = fi ? fi->dest_addr : NULL;
	result(!ret && fi->dest_addrlen == sizeof(*ra) && ra &&
	       rvfi_addr_valid(ra) && rvfi_addr_bare(ra) &&
	       ra->port == htons(18575) &&
	       ra->ip == name_addr(peer_name).ip && fi->src_addr,
	       "getinfo-dest-provider", "ret %d destlen %zu", ret,
	       fi ? fi->dest_addrlen : 0);
	fi_freeinfo(fi);
	fi = NULL;
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, "18576", FI_SOURCE, h, &fi);
	ra = fi ? fi->src_addr : NULL;
	result(!ret && ra && fi->src_addrlen == sizeof(*ra) &&
	       ra->port == htons(18576) && ra->ip == self.ip &&
	       !fi->dest_addr, "getinfo-service-only-source", "ret %d", ret);
	fi_freeinfo(fi);
	fi = NULL;
	/* Another node's address is no source of ours. */
	ret = fi_getinfo(FI_VERSION(1, 17), him, NULL, FI_SOURCE, h, &fi);
	result(ret == -FI_ENODATA, "getinfo-foreign-source-enodata",
	       "ret %d", ret);
	fi_freeinfo(fi);
	fi = NULL;
	fi_freeinfo(h);

	h = addr_hints(FI_SOCKADDR_IN6, FI_MSG);
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &fi);
	fi_freeinfo(h);
	fi_freeinfo(fi);
	fi = NULL;
	h = addr_hints(FI_ADDR_STR, FI_MSG);
	result(ret == -FI_ENODATA &&
	       fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &fi) ==
	       -FI_ENODATA, "getinfo-bad-format-enodata", "ret %d", ret);
	fi_freeinfo(h);
	fi_freeinfo(fi);
}

/* A's second endpoint, published on PUB_PORT, with FI_MULTI_RECV. */
struct fid_ep *pub_ep;
static struct fid_av *pub_av;
struct fid_cq *pub_cq;
static struct fi_info *pub_info;

static void open_published(void)
{
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED,
				  .wait_obj = FI_WAIT_NONE };
	struct fi_av_attr ava = { .type = FI_AV_TABLE };
	struct fi_info *h = addr_hints(FI_FORMAT_UNSPEC,
				       FI_MSG | FI_MULTI_RECV | FI_SOURCE);
	int ret;

	ret = fi_getinfo(FI_VERSION(1, 17), NULL, PUB_PORT, FI_SOURCE, h,
			 &pub_info);
	fi_freeinfo(h);
	if (ret)
		die("fi_getinfo(FI_SOURCE)", ret);
	if ((ret = fi_av_open(domain, &ava, &pub_av, NULL)) ||
	    (ret = fi_cq_open(domain, &cqa, &pub_cq, NULL)) ||
	    (ret = fi_endpoint(domain, pub_info, &pub_ep, NULL)) ||
	    (ret = fi_ep_bind(pub_ep, &pub_av->fid, 0)) ||
	    (ret = fi_ep_bind(pub_ep, &pub_cq->fid, FI_TRANSMIT | FI_RECV)) ||
	    (ret = fi_enable(pub_ep)))
		die("published endpoint", ret);
}

static void close_published(void)
{
	fi_close(&pub_ep->fid);
	fi_close(&pub_av->fid);
	fi_close(&pub_cq->fid);
	fi_freeinfo(pub_info);
}

/* B: A's published endpoint, from fi_getinfo(A's node, PUB_PORT). */
static fi_addr_t bare_peer(void)
{
	char him[INET_ADDRSTRLEN];
	struct fi_info *h = addr_hints(FI_SOCKADDR_IN, FI_MSG), *fi = NULL;
	fi_addr_t a = FI_ADDR_NOTAVAIL;
	int ret;

	ip_str(peer_name, him);
	ret = fi_getinfo(FI_VERSION(1, 17), him, PUB_PORT, 0, h, &fi);
	fi_freeinfo(h);
	if (ret || !fi->dest_addr)
		die("fi_getinfo(node, service)", ret ? ret : EINVAL);
	if (fi_av_insert(av, fi->dest_addr, 1, &a, 0, NULL) != 1)
		die("fi_av_insert(sockaddr_in)", EINVAL);
	fi_freeinfo(fi);
	return a;
}

/*
 * In-band addressing as fabtests does it: B knows only A's node and the
 * published port (a bare sockaddr_in address), sends its own fi_getname
 * there; A inserts it and answers; the answer's FI_SOURCE is B's bare
 * fi_addr, and a rendezvous to the bare address (which needs A's slot,
 * learnt from A's HELLO) arrives intact.
 */
static void t_inband(fi_addr_t bare)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t src = FI_ADDR_NOTAVAIL, b = FI_ADDR_NOTAVAIL;
	size_t big = 1 << 20;
	int ret;

	sync_peer();
	if (!server) {
		result(msend_wait(self_name, name_len, bare) == 0,
		       "inband-send-to-bare", "send failed");
		ret = POST(fi_recv(ep, rbuf, 64, NULL, FI_ADDR_UNSPEC, &e));
		if (!ret)
			ret = wait_comp(rxcq, &e, &src, &err);
		result(ret == 1 && e.len == 8 && check(rbuf, 8, 77) < 0 &&
		       src == bare, "inband-reply-source-bare",
		       "ret %d len %zu src %llu bare %llu", ret,
		       ret == 1 ? e.len : 0, (unsigned long long)src,
		       (unsigned long long)bare);
		fill(sbuf, big, 78);
		result(msend_wait(sbuf, big, bare) == 0, "inband-rndv-send",
		       "send failed");
		sync_peer();
		return;
	}
	memset(rbuf, 0, 64);
	ret = POST(fi_recv(pub_ep, rbuf, 64, NULL, FI_ADDR_UNSPEC, &e));
	if (!ret)
		ret = wait_comp(pub_cq, &e, &src, &err);
	if (ret == 1 && e.len == name_len &&
	    fi_av_insert(pub_av, rbuf, 1, &b, 0, NULL) == 1) {
		fill(sbuf, 8, 77);
		ret = POST(fi_send(pub_ep, sbuf, 8, NULL, b, &e));
		if (!ret)
			ret = wait_comp(pub_cq, &e, NULL, &err);
	} else {
		ret = -1;
	}
	result(ret == 1, "inband-exchange", "ret %d", ret);
	memset(rbuf, 0, big);
	ret = POST(fi_recv(pub_ep, rbuf, big, NULL, FI_ADDR_UNSPEC, &e));
	if (!ret)
		ret = wait_comp(pub_cq, &e, &src, &err);
	result(ret == 1 && e.len == big && check(rbuf, big, 78) < 0 &&
	       src == b, "inband-rndv", "ret %d src %llu", ret,
	       (unsigned long long)src);
	sync_peer();
}

void t_addressing(void)
{
	fi_addr_t bare = FI_ADDR_NOTAVAIL;

	t_getinfo_addr();
	if (server)
		open_published();
	sync_peer();
	if (!server)
		bare = bare_peer();
	t_inband(bare);
	t_multi_recv(bare);
	sync_peer();
	if (server)
		close_published();
}
