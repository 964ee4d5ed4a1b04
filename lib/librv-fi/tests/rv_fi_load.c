// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv_fi_load.c - every size both ways, many messages in flight, and
 * FI_THREAD_SAFE with posting threads.
 */
#include <pthread.h>

#include "rv_fi_test.h"

#define NINFLIGHT	100

/* Every size both ways, pre-posted receives, all bytes checked. */
void t_sizes(void)
{
	static const size_t sizes[] = {
		0, 1, 7, 64, 1000, 1024, 4096, 16383, 16384, 16385, 65536,
		100000, 1 << 20, (4 << 20) + 3, 8 << 20, 16 << 20,
	};
	size_t i, dir;

	for (dir = 0; dir < 2; dir++) {
		bool sending = server == (dir == 1);
		bool ok = true;

		sync_peer();
		for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			struct fi_cq_tagged_entry e;
			struct fi_cq_err_entry err;
			uint64_t seed = 1000 + i + dir * 100;
			int ret;

			if (sending) {
				fill(sbuf, sizes[i], seed);
				ret = send_wait(sbuf, sizes[i], seed);
				if (ret) {
					ok = false;
					diag("send %zu: %s", sizes[i],
					     fi_strerror(-ret));
				}
				continue;
			}
			memset(rbuf, 0xee, sizes[i] + 16 < BIG ? sizes[i] + 16 : BIG);
			ret = trecv(rbuf, sizes[i], peer, seed, 0, &e);
			if (!ret)
				ret = wait_comp(rxcq, &e, NULL, &err);
			if (ret != 1 || e.len != sizes[i] ||
			    check(rbuf, sizes[i], seed) >= 0 ||
			    (sizes[i] + 1 < BIG && (uint8_t)rbuf[sizes[i]] != 0xee)) {
				ok = false;
				diag("recv %zu: ret %d len %zu bad byte %ld",
				     sizes[i], ret, ret == 1 ? e.len : 0,
				     check(rbuf, sizes[i], seed));
			}
		}
		result(ok, dir ? "sizes-a-to-b" : "sizes-b-to-a",
		       "a size failed");
	}
}

/* Mostly eager, every 7th a rendezvous; each in its slot of the buffer. */
#define INFLIGHT_SLOT	((BIG / NINFLIGHT) & ~4095ul)

static size_t inflight_len(size_t i)
{
	return i % 7 ? 512 + i : INFLIGHT_SLOT - 64;
}

static bool inflight_ok(size_t i, const struct fi_cq_tagged_entry *e,
			void *arg)
{
	uint64_t theirs = *(const uint64_t *)arg;

	return e->tag == theirs + i &&
	       check(rbuf + i * INFLIGHT_SLOT, e->len, theirs + i) < 0 &&
	       e->len == inflight_len(i);
}

/*
 * Many messages in flight both ways at once: each side pre-posts its
 * receives, then sends all of its messages, then reaps everything.
 */
void t_inflight(void)
{
	static struct fi_cq_tagged_entry sctx[NINFLIGHT], rctx[NINFLIGHT];
	size_t slot = INFLIGHT_SLOT, i;
	bool ok = true;
	uint64_t mine = server ? 0x1000 : 0x2000;
	uint64_t theirs = server ? 0x2000 : 0x1000;
	struct reap r = {
		.what = "in-flight", .rctx = rctx, .n = NINFLIGHT,
		.recv_ok = inflight_ok, .arg = &theirs,
	};

	for (i = 0; i < NINFLIGHT; i++) {
		memset(rbuf + i * slot, 0, inflight_len(i));
		ok &= !trecv(rbuf + i * slot, slot, peer, theirs + i, 0,
			     &rctx[i]);
	}
	sync_peer();
	for (i = 0; i < NINFLIGHT; i++) {
		fill(sbuf + i * slot, inflight_len(i), mine + i);
		ok &= !tsend(sbuf + i * slot, inflight_len(i), mine + i,
			     &sctx[i]);
	}
	ok &= reap(&r, WAIT_MS);
	result(ok && r.nsend == NINFLIGHT && r.nrecv == NINFLIGHT,
	       "inflight-both-ways", "%zu of %d sends, %zu receives",
	       r.nsend, NINFLIGHT, r.nrecv);
	sync_peer();
}

/*
 * FI_THREAD_SAFE: one thread posts this side's receives while another
 * posts its sends and this one reaps both CQs, on both nodes at once;
 * every tenth message takes the rendezvous path.
 */
#define NTHR		200
#define TSLOT		65536ul

struct poster {
	bool recv;
	int ret;
};

static struct fi_cq_tagged_entry thr_sctx[NTHR], thr_rctx[NTHR];

static size_t thr_len(size_t i)
{
	return i % 10 == 9 ? 40000 + i : 100 + i;
}

static void *poster(void *arg)
{
	struct poster *p = arg;
	uint64_t mine = server ? 0x3000 : 0x4000;
	uint64_t theirs = server ? 0x4000 : 0x3000;
	size_t i;

	for (i = 0; i < NTHR && !p->ret; i++) {
		if (p->recv) {
			p->ret = trecv(rbuf + i * TSLOT, TSLOT, peer, theirs + i,
				       0, &thr_rctx[i]);
		} else {
			fill(sbuf + i * TSLOT, thr_len(i), mine + i);
			p->ret = tsend(sbuf + i * TSLOT, thr_len(i), mine + i,
				       &thr_sctx[i]);
		}
	}
	return NULL;
}

void t_threads(void)
{
	struct poster pr = { .recv = true }, ps = { .recv = false };
	uint64_t theirs = server ? 0x4000 : 0x3000, t0;
	size_t nsend = 0, nrecv = 0, i;
	struct fi_cq_err_entry err;
	pthread_t tr, ts;
	bool ok = true;

	memset(rbuf, 0, NTHR * TSLOT);
	sync_peer();
	if (pthread_create(&tr, NULL, poster, &pr) ||
	    pthread_create(&ts, NULL, poster, &ps))
		die("pthread_create", errno);
	t0 = now_ms();
	while ((nsend < NTHR || nrecv < NTHR) && now_ms() - t0 < WAIT_MS) {
		struct fi_cq_tagged_entry e;

		if (fi_cq_read(txcq, &e, 1) == 1) {
			nsend++;
		} else if (fi_cq_readerr(txcq, &err, 0) == 1) {
			ok = false;
			nsend++;
		}
		if (fi_cq_read(rxcq, &e, 1) == 1) {
			i = (struct fi_cq_tagged_entry *)e.op_context - thr_rctx;
			if (i >= NTHR || e.tag != theirs + i ||
			    e.len != thr_len(i) ||
			    check(rbuf + i * TSLOT, e.len, theirs + i) >= 0) {
				ok = false;
				diag("threads: message %zu bad", i);
			}
			nrecv++;
		} else if (fi_cq_readerr(rxcq, &err, 0) == 1) {
			ok = false;
			nrecv++;
		}
	}
	pthread_join(tr, NULL);
	pthread_join(ts, NULL);
	result(ok && !pr.ret && !ps.ret && nsend == NTHR && nrecv == NTHR,
	       "threads", "post %d/%d, %zu sends, %zu receives of %d",
	       pr.ret, ps.ret, nsend, nrecv, NTHR);
	sync_peer();
}
