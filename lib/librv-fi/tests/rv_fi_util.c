// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv_fi_util.c - what rv_fi_test's cases share (declared in rv_fi_util.h):
 * TAP output, the control connection to the other node, the libfabric
 * objects, data patterns, bounded completion waits, send and receive
 * helpers and rv's counters of this process.
 */
#include "rv_fi_util.h"

bool server;
int ctl = -1;
int tap_n, tap_failed;

struct fi_info *info;
struct fid_fabric *fabric;
struct fid_domain *domain;
struct fid_av *av;
struct fid_cq *txcq, *rxcq;
struct fid_ep *ep;
fi_addr_t peer, fake;		/* fake: an address nobody uses */
char *sbuf, *rbuf;
size_t threshold = 16384;
char self_name[64], peer_name[64];	/* fi_getname()s */
size_t name_len;

/* ---- TAP ----------------------------------------------------------------- */

void diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

/* One result; @why (printf format) explains a failure. */
bool result(bool ok, const char *name, const char *why, ...)
{
	va_list ap;

	tap_n++;
	if (!ok) {
		tap_failed++;
		printf("# %s: ", name);
		va_start(ap, why);
		vprintf(why, ap);
		va_end(ap);
		printf("\n");
	}
	printf("%sok %d %s\n", ok ? "" : "not ", tap_n, name);
	return ok;
}

void die(const char *what, long err)
{
	printf("# %s: %s\nBail out! %s\n", what,
	       err < 0 ? fi_strerror(-err) : strerror(err), what);
	exit(1);
}

uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ull + ts.tv_nsec / 1000000;
}

/* ---- control connection -------------------------------------------------- */

void ctl_write(const void *p, size_t n)
{
	while (n) {
		ssize_t w = send(ctl, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("control send", errno);
		p = (const char *)p + w;
		n -= w;
	}
}

/*
 * Reads @n bytes.  With @progress, drives the provider's progress
 * meanwhile (a zero-count CQ read progresses without taking completions):
 * the peer may need our CTS or our reads to finish what it does before it
 * answers.  Without, no provider call at all (sync_peer_stopped()).
 */
static void ctl_read_how(void *p, size_t n, bool progress)
{
	uint64_t deadline = now_ms() + 10 * WAIT_MS;

	while (n) {
		struct pollfd pfd = { .fd = ctl, .events = POLLIN };
		ssize_t r;

		if (progress) {
			fi_cq_read(txcq, NULL, 0);
			fi_cq_read(rxcq, NULL, 0);
		}
		if (poll(&pfd, 1, 5) <= 0) {
			if (now_ms() > deadline)
				die("control connection timed out", ETIMEDOUT);
			continue;
		}
		r = recv(ctl, p, n, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			die("control recv", r ? errno : ECONNRESET);
		p = (char *)p + r;
		n -= r;
	}
}

void ctl_read(void *p, size_t n)
{
	ctl_read_how(p, n, true);
}

/*
 * Both sides are here.  It progresses while it waits: whatever the peer
 * sent may be read (and acknowledged) before it returns, even after the
 * peer's byte came.
 */
void sync_peer(void)
{
	char c = 's';

	ctl_write(&c, 1);
	ctl_read(&c, 1);
}

/*
 * sync_peer() for a side that must be seen stopped by the peer: no
 * provider call, so nothing the peer sends is read (or acknowledged)
 * until a later provider call.
 */
void sync_peer_stopped(void)
{
	char c = 's';

	ctl_write(&c, 1);
	ctl_read_how(&c, 1, false);
}

void ctl_connect(const char *host, const char *port)
{
	struct addrinfo hints = {
		.ai_family = AF_INET, .ai_socktype = SOCK_STREAM,
		.ai_flags = host ? 0 : AI_PASSIVE,
	};
	struct addrinfo *ai;
	int one = 1, fd, i;

	if (getaddrinfo(host, port, &hints, &ai))
		die("getaddrinfo", EINVAL);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket", errno);
	if (!host) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 1))
			die("bind", errno);
		ctl = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
		if (ctl < 0)
			die("accept", errno);
		close(fd);
	} else {
		for (i = 0; connect(fd, ai->ai_addr, ai->ai_addrlen); i++) {
			if (i == 600)
				die("connect", errno);
			usleep(100000);
		}
		ctl = fd;
	}
	freeaddrinfo(ai);
	setsockopt(ctl, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* ---- libfabric set-up ---------------------------------------------------- */

void setup(void)
{
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED,
				  .wait_obj = FI_WAIT_NONE };
	struct fi_av_attr ava = { .type = FI_AV_TABLE };
	struct fi_info *hints = fi_allocinfo();
	char name[64], pname[64], fname[64];
	size_t len = sizeof(name);
	uint32_t plen;
	int ret;

	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED | FI_DIRECTED_RECV | FI_SOURCE;
	hints->mode = FI_CONTEXT;
	hints->domain_attr->mr_mode = 0;
	hints->domain_attr->threading = FI_THREAD_SAFE;
	hints->domain_attr->cq_data_size = 8;
	hints->fabric_attr->prov_name = strdup("rv");
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	if (ret)
		die("fi_getinfo", ret);
	diag("provider %s, domain %s, inject_size %zu, max_msg_size %zu",
	     info->fabric_attr->prov_name, info->domain_attr->name,
	     info->tx_attr->inject_size, info->ep_attr->max_msg_size);
	if ((ret = fi_fabric(info->fabric_attr, &fabric, NULL)) ||
	    (ret = fi_domain(fabric, info, &domain, NULL)) ||
	    (ret = fi_av_open(domain, &ava, &av, NULL)) ||
	    (ret = fi_cq_open(domain, &cqa, &txcq, NULL)) ||
	    (ret = fi_cq_open(domain, &cqa, &rxcq, NULL)) ||
	    (ret = fi_endpoint(domain, info, &ep, NULL)) ||
	    (ret = fi_ep_bind(ep, &av->fid, 0)) ||
	    (ret = fi_ep_bind(ep, &txcq->fid, FI_TRANSMIT)) ||
	    (ret = fi_ep_bind(ep, &rxcq->fid, FI_RECV)) ||
	    (ret = fi_enable(ep)))
		die("libfabric set-up", ret);
	ret = fi_getname(&ep->fid, name, &len);
	if (ret)
		die("fi_getname", ret);
	plen = len;
	ctl_write(&plen, sizeof(plen));
	ctl_write(name, len);
	ctl_read(&plen, sizeof(plen));
	if (plen != len)
		die("peer name length", EPROTO);
	ctl_read(pname, plen);
	memcpy(self_name, name, len);
	memcpy(peer_name, pname, plen);
	name_len = len;
	/* A made-up peer first: the real one gets fi_addr 1, not 0. */
	memcpy(fname, pname, plen);
	fname[plen - 1] ^= 0x5a;
	if (fi_av_insert(av, fname, 1, &fake, 0, NULL) != 1 ||
	    fi_av_insert(av, pname, 1, &peer, 0, NULL) != 1)
		die("fi_av_insert", EINVAL);
	len = sizeof(fname);
	fi_av_straddr(av, pname, fname, &len);
	diag("%s: peer %s is fi_addr %llu", server ? "server" : "client",
	     fname, (unsigned long long)peer);
	sbuf = mmap(NULL, BIG, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	rbuf = mmap(NULL, BIG, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sbuf == MAP_FAILED || rbuf == MAP_FAILED)
		die("mmap", errno);
	if (getenv("FI_RV_RNDV_THRESHOLD"))
		threshold = strtoull(getenv("FI_RV_RNDV_THRESHOLD"), NULL, 0);
}

/* ---- helpers ------------------------------------------------------------- */

static uint8_t pat(uint64_t seed, size_t i)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + (i / 8) * 0xbf58476d1ce4e5b9ull;

	x ^= x >> 29;
	return (uint8_t)(x >> (8 * (i % 8)));
}

void fill(char *p, size_t len, uint64_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = pat(seed, i);
}

/* Index of the first wrong byte, or -1. */
long check(const char *p, size_t len, uint64_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		if ((uint8_t)p[i] != pat(seed, i))
			return i;
	return -1;
}

/*
 * Waits for one completion on @cq.  Returns 1 with @e (and @src) filled,
 * or 0 with @err filled for an error completion, or -FI_ETIMEDOUT.
 */
int wait_comp(struct fid_cq *cq, struct fi_cq_tagged_entry *e,
	      fi_addr_t *src, struct fi_cq_err_entry *err)
{
	uint64_t deadline = now_ms() + WAIT_MS;
	fi_addr_t dummy;
	ssize_t n;

	for (;;) {
		n = fi_cq_readfrom(cq, e, 1, src ? src : &dummy);
		if (n == 1)
			return 1;
		if (n == -FI_EAVAIL) {
			memset(err, 0, sizeof(*err));
			if (fi_cq_readerr(cq, err, 0) == 1)
				return 0;
		} else if (n != -FI_EAGAIN) {
			return n;
		}
		if (now_ms() > deadline)
			return -FI_ETIMEDOUT;
	}
}

int tsend(const void *buf, size_t len, uint64_t tag, void *ctx)
{
	return POST(fi_tsend(ep, buf, len, NULL, peer, tag, ctx));
}

int trecv(void *buf, size_t len, fi_addr_t src, uint64_t tag,
	  uint64_t ignore, void *ctx)
{
	return POST(fi_trecv(ep, buf, len, NULL, src, tag, ignore, ctx));
}

/* Sends and waits for its completion; returns 0 or a negative error. */
int send_wait(const void *buf, size_t len, uint64_t tag)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int ret = tsend(buf, len, tag, &e);

	if (ret)
		return ret;
	ret = wait_comp(txcq, &e, NULL, &err);
	return ret == 1 ? 0 : ret == 0 ? -err.err : ret;
}

/*
 * rv's records of this process's files (DUMP), summed in @sum
 * (ring_entries: the last one's); false if there is none.
 */
bool rv_self_record(struct rv_dump_proc *sum)
{
	struct rv_dump_iter *it;
	bool found = false;

	memset(sum, 0, sizeof(*sum));
	if (rv_dump_open(-1, RV_DUMP_PROCS, &it))
		return false;
	for (const struct rv_dump_proc *r; (r = rv_dump_next(it));) {
		if (r->pid != (uint32_t)getpid())
			continue;
		sum->writes_posted += r->writes_posted;
		sum->writes_failed += r->writes_failed;
		sum->writes_completed += r->writes_completed;
		sum->posts_eagain += r->posts_eagain;
		sum->recvs += r->recvs;
		sum->ring_overflows += r->ring_overflows;
		sum->ring_entries = r->ring_entries;
		found = true;
	}
	rv_dump_close(it);
	return found;
}

/* rv's counters of this process (the provider's attached file). */
bool rv_counters(uint64_t *writes, uint64_t *recvs)
{
	struct rv_dump_proc sum;
	bool found = rv_self_record(&sum);

	*writes = sum.writes_posted;
	*recvs = sum.recvs;
	return found;
}

/* ---- many messages in flight --------------------------------------------- */

/*
 * Reads both CQs until @r->n sends and @r->n receives have completed or
 * @ms passed.  An error entry counts as the completion of its operation
 * and makes the result false; so does a receive that @r->recv_ok refuses
 * (or whose context is not one of @r->rctx).
 */
bool reap(struct reap *r, uint64_t ms)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	uint64_t t0 = now_ms();
	bool ok = true;
	ssize_t n;
	size_t i;

	r->nsend = r->nrecv = r->bad = 0;
	while ((r->nsend < r->n || r->nrecv < r->n) && now_ms() - t0 < ms) {
		n = fi_cq_read(txcq, &e, 1);
		if (n == 1) {
			r->nsend++;
		} else if (n == -FI_EAVAIL &&
			   fi_cq_readerr(txcq, &err, 0) == 1) {
			diag("send error %d (prov %d)", err.err, err.prov_errno);
			ok = false;
			r->nsend++;
		}
		n = fi_cq_read(rxcq, &e, 1);
		if (n == 1) {
			i = (struct fi_cq_tagged_entry *)e.op_context - r->rctx;
			if (i >= r->n || !r->recv_ok(i, &e, r->arg)) {
				if (r->bad++ < 4)
					diag("%s message %zu bad", r->what, i);
				ok = false;
			}
			r->nrecv++;
		} else if (n == -FI_EAVAIL &&
			   fi_cq_readerr(rxcq, &err, 0) == 1) {
			diag("recv error %d (prov %d)", err.err, err.prov_errno);
			ok = false;
			r->nrecv++;
		}
	}
	return ok;
}

/* ---- more send and receive helpers --------------------------------------- */

struct fi_info *addr_hints(uint32_t format, uint64_t caps)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		die("fi_allocinfo", ENOMEM);
	h->ep_attr->type = FI_EP_RDM;
	h->caps = caps;
	h->addr_format = format;
	h->fabric_attr->prov_name = strdup("rv");
	return h;
}

int msend_wait(const void *buf, size_t len, fi_addr_t to)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int ret = POST(fi_send(ep, buf, len, NULL, to, &e));

	if (!ret)
		ret = wait_comp(txcq, &e, NULL, &err);
	return ret == 1 ? 0 : -1;
}

/* A receives @n tags from @t0 on, in any order; true if all came. */
bool recv_tags(uint64_t t0, int n)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	bool ok = true;
	int i;

	for (i = 0; i < n; i++) {
		if (trecv(rbuf, 64, FI_ADDR_UNSPEC, t0 + i, 0, &e) ||
		    wait_comp(rxcq, &e, NULL, &err) != 1 || e.tag != t0 + i) {
			diag("receive of tag %#llx failed",
			     (unsigned long long)(t0 + i));
			ok = false;
		}
	}
	return ok;
}
