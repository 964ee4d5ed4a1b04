// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv_fi_rndv.c - which path a message takes (rv's counters: no write for
 * an eager message, a pipelined rendezvous) and the rendezvous bounded by
 * the rv event ring (rv_fi_test -R).
 */
#include "rv_fi_test.h"

/* Small messages never touch rv; large ones are exactly one write each. */
void t_rv_counters(void)
{
	uint64_t w0, r0, w1, r1, w2, r2;
	int i, n = 4;
	bool ok = true;

	sync_peer();
	if (!rv_counters(&w0, &r0)) {
		result(false, "rv-counters", "no rv record for this pid");
		sync_peer();
		return;
	}
	for (i = 0; i < 20; i++) {
		if (!server) {
			fill(sbuf, threshold, i);
			ok &= send_wait(sbuf, threshold, 0x77) == 0;
		} else {
			struct fi_cq_tagged_entry e;
			struct fi_cq_err_entry err;

			ok &= trecv(rbuf, threshold, peer, 0x77, 0, &e) == 0 &&
			      wait_comp(rxcq, &e, NULL, &err) == 1;
		}
	}
	sync_peer();
	rv_counters(&w1, &r1);
	result(ok && w1 == w0 && r1 == r0, "eager-not-over-rv",
	       "writes %llu -> %llu, recvs %llu -> %llu",
	       (unsigned long long)w0, (unsigned long long)w1,
	       (unsigned long long)r0, (unsigned long long)r1);
	for (i = 0; i < n; i++) {
		if (!server) {
			fill(sbuf, threshold + 1, i);
			ok &= send_wait(sbuf, 2 << 20, 0x78) == 0;
		} else {
			struct fi_cq_tagged_entry e;
			struct fi_cq_err_entry err;

			ok &= trecv(rbuf, 2 << 20, peer, 0x78, 0, &e) == 0 &&
			      wait_comp(rxcq, &e, NULL, &err) == 1;
		}
	}
	sync_peer();
	rv_counters(&w2, &r2);
	/*
	 * Pipelined: a 2 MiB message goes in several writes (one per QP of
	 * the connection, 4 by default; at least 2), and each write the
	 * sender posted is one RECV on the receiver.
	 */
	{
		uint64_t mine_w = w2 - w1, mine_r = r2 - r1, peer_w, peer_r;

		ctl_write(&mine_w, sizeof(mine_w));
		ctl_write(&mine_r, sizeof(mine_r));
		ctl_read(&peer_w, sizeof(peer_w));
		ctl_read(&peer_r, sizeof(peer_r));
		if (server)
			result(ok && mine_r >= 2 * (uint64_t)n &&
			       mine_r == peer_w && mine_w == 0,
			       "rndv-over-rv-recvs",
			       "recvs +%llu (want >= %d and the sender's %llu writes), writes +%llu",
			       (unsigned long long)mine_r, 2 * n,
			       (unsigned long long)peer_w,
			       (unsigned long long)mine_w);
		else
			result(ok && mine_w >= 2 * (uint64_t)n &&
			       mine_w == peer_r && mine_r == 0,
			       "rndv-over-rv-writes",
			       "writes +%llu (want >= %d and the receiver's %llu RECVs), recvs +%llu",
			       (unsigned long long)mine_w, 2 * n,
			       (unsigned long long)peer_r,
			       (unsigned long long)mine_r);
	}
	diag("rv counters of this process: %llu writes posted, %llu received",
	     (unsigned long long)w2, (unsigned long long)r2);
}

/* This process's ring size and overflows (rv's record of its file). */
static bool rv_ring(uint32_t *entries, uint64_t *overflows, uint64_t *failed)
{
	struct rv_dump_proc sum;
	bool found = rv_self_record(&sum);

	*entries = sum.ring_entries;
	*overflows = sum.ring_overflows;
	*failed = sum.writes_failed;
	return found;
}

/*
 * Run with FI_RV_RING_ENTRIES=64 (-R): NRING rendezvous messages posted
 * each way at once, every fifth 1 MiB (several writes each), far more
 * writes and RECVs than the ring holds.  Every one must complete with
 * its data, the kernel must report no ring overflow, and the writes one
 * side posted must be the RECVs the other got.
 */
#define NRING		160

static size_t ring_len(size_t i)
{
	return i % 5 == 4 ? (1ul << 20) + 8 * i : (64ul << 10) + 8 * i;
}

/* The NRING messages each way of t_ring(). */
struct ring_msgs {
	size_t off[NRING + 1];		/* of message i in sb and rb */
	char *sb, *rb;
	uint64_t mine, theirs;		/* tags (and patterns) from */
	struct fi_cq_tagged_entry sctx[NRING], rctx[NRING];
};

/* Maps and fills the buffers (each message on pages of its own). */
static void ring_map(struct ring_msgs *m, uint64_t mine, uint64_t theirs)
{
	size_t i;

	m->mine = mine;
	m->theirs = theirs;
	for (m->off[0] = 0, i = 0; i < NRING; i++)
		m->off[i + 1] = m->off[i] + ((ring_len(i) + 4095) & ~4095ul);
	m->sb = mmap(NULL, m->off[NRING], PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	m->rb = mmap(NULL, m->off[NRING], PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m->sb == MAP_FAILED || m->rb == MAP_FAILED)
		die("mmap", errno);
	for (i = 0; i < NRING; i++)
		fill(m->sb + m->off[i], ring_len(i), mine + i);
}

static void ring_unmap(struct ring_msgs *m)
{
	munmap(m->sb, m->off[NRING]);
	munmap(m->rb, m->off[NRING]);
}

/* Every receive, then (both sides ready) every send; false if one failed. */
static bool ring_post(struct ring_msgs *m)
{
	bool ok = true;
	size_t i;

	for (i = 0; i < NRING; i++)
		ok &= !trecv(m->rb + m->off[i], ring_len(i), peer,
			     m->theirs + i, 0, &m->rctx[i]);
	sync_peer();
	for (i = 0; i < NRING; i++)
		ok &= !tsend(m->sb + m->off[i], ring_len(i), m->mine + i,
			     &m->sctx[i]);
	return ok;
}

/* Message @i arrived whole: its length and every byte. */
static bool ring_ok(size_t i, const struct fi_cq_tagged_entry *e, void *arg)
{
	const struct ring_msgs *m = arg;

	return e->len == ring_len(i) &&
	       check(m->rb + m->off[i], e->len, m->theirs + i) < 0;
}

/*
 * Run with FI_RV_RING_ENTRIES=64 (-R): NRING rendezvous messages posted
 * each way at once, every fifth 1 MiB (several writes each), far more
 * writes and RECVs than the ring holds.  Every one must complete with
 * its data, the kernel must report no ring overflow, and the writes one
 * side posted must be the RECVs the other got.
 */
void t_ring(void)
{
	static struct ring_msgs m;
	struct reap r = {
		.what = "ring", .rctx = m.rctx, .n = NRING,
		.recv_ok = ring_ok, .arg = &m,
	};
	uint64_t w0, r0, w1, r1, ov = 0, failed = 0, peer_r;
	uint32_t entries = 0;
	bool ok;

	ring_map(&m, server ? 0x5000 : 0x6000, server ? 0x6000 : 0x5000);
	sync_peer();
	if (!rv_counters(&w0, &r0))
		w0 = r0 = 0;
	ok = ring_post(&m);
	ok &= reap(&r, 4 * WAIT_MS);
	result(ok && r.nsend == NRING && r.nrecv == NRING,
	       "ring-bound-all-complete",
	       "%zu of %d sends, %zu of %d receives, %zu bad", r.nsend, NRING,
	       r.nrecv, NRING, r.bad);
	sync_peer();
	if (!rv_counters(&w1, &r1))
		w1 = r1 = 0;
	/* The peer's RECVs against our writes. */
	r1 -= r0;
	ctl_write(&r1, sizeof(r1));
	ctl_read(&peer_r, sizeof(peer_r));
	/*
	 * Read before result(): its arguments are evaluated in any order.
	 * A write that failed (a QP lost under load; its message then went
	 * over TCP) may or may not have landed: the peer's RECVs lie between
	 * the writes that succeeded and all the writes.
	 */
	ok = rv_ring(&entries, &ov, &failed);
	result(ok && entries == 64 && ov == 0 && w1 - w0 > NRING &&
	       peer_r + failed >= w1 - w0 && peer_r <= w1 - w0,
	       "ring-bound-no-overflow",
	       "ring %u entries, %llu overflows, %llu writes (%llu failed since attach), peer got %llu RECVs (want > %d)",
	       entries, (unsigned long long)ov,
	       (unsigned long long)(w1 - w0), (unsigned long long)failed,
	       (unsigned long long)peer_r, NRING);
	diag("ring of %u entries: %llu writes posted for %d messages",
	     entries, (unsigned long long)(w1 - w0), NRING);
	ring_unmap(&m);
	sync_peer();
}
