// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv_fi_rndv.c - which path a message takes (rv's counters: no write for
 * an eager message, a pipelined rendezvous), the rendezvous bounded by
 * the rv event ring (rv_fi_test -R), the fallback when that ring
 * overflows anyway (rv_fi_test -O) and writes refused by rv's full send
 * queues (rv_fi_test -B).
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

/*
 * Run under an rv loaded with conn_wqe_budget=16 and FI_RV_SQ_RETRY_US
 * set long (-B; vm/fabric.sh: 100 ms): a burst of rendezvous each way
 * that rv's send queues cannot take at once, so rv refuses writes
 * (EAGAIN).  The sender must not hammer it: a refused write is retried
 * once a write of ours completed or FI_RV_SQ_RETRY_US later, so the
 * refusals rv counts (at most two per attempt: a partial batch, then the
 * single write behind it; a write posted may leave the queue full for
 * the next) are bounded by the completions, the writes and the time.
 * Retrying on every progress call (the provider before) made one refusal
 * per pending message per call.  No refusal at all means the burst
 * proves nothing: it fails.
 */
#define NBURST		16
#define BURST_LEN	(1ul << 20)

static bool burst_ok(size_t i, const struct fi_cq_tagged_entry *e, void *arg)
{
	return e->len == BURST_LEN &&
	       check(rbuf + i * BURST_LEN, BURST_LEN, *(uint64_t *)arg + i) < 0;
}

void t_sq_full_backoff(void)
{
	static struct fi_cq_tagged_entry sctx[NBURST], rctx[NBURST];
	uint64_t mine = server ? 0x9100 : 0x9200;
	uint64_t theirs = server ? 0x9200 : 0x9100;
	const char *retry_env = getenv("FI_RV_SQ_RETRY_US");
	uint64_t retry_us = retry_env ? strtoull(retry_env, NULL, 0) : 0;
	uint64_t t0, us, bound, refused, done, posted;
	struct rv_dump_proc a, b;
	bool ok = true;
	size_t i;
	struct reap r = {
		.what = "burst", .rctx = rctx, .n = NBURST,
		.recv_ok = burst_ok, .arg = &theirs,
	};

	for (i = 0; i < NBURST; i++)
		ok &= !trecv(rbuf + i * BURST_LEN, BURST_LEN, peer,
			     theirs + i, 0, &rctx[i]);
	for (i = 0; i < NBURST; i++)
		fill(sbuf + i * BURST_LEN, BURST_LEN, mine + i);
	sync_peer();
	ok &= rv_self_record(&a);
	t0 = now_ms();
	for (i = 0; i < NBURST; i++)
		ok &= !tsend(sbuf + i * BURST_LEN, BURST_LEN, mine + i,
			     &sctx[i]);
	ok &= reap(&r, WAIT_MS);
	us = (now_ms() - t0 + 1) * 1000;
	ok &= rv_self_record(&b);
	refused = b.posts_eagain - a.posts_eagain;
	done = b.writes_completed - a.writes_completed;
	posted = b.writes_posted - a.writes_posted;
	if (!retry_us)
		retry_us = RVFI_SQ_RETRY_US;
	bound = 2 * (done + posted + us / retry_us + 1);
	result(ok && r.nsend == NBURST && r.nrecv == NBURST, "sq-burst-both-ways",
	       "%zu of %d sends, %zu receives", r.nsend, NBURST, r.nrecv);
	result(refused && refused <= bound, "sq-full-backoff",
	       "%llu posts refused (bound %llu: %llu writes posted, %llu completed, %llu ms, retry %llu us); 0: the burst never filled rv's queues",
	       (unsigned long long)refused, (unsigned long long)bound,
	       (unsigned long long)posted, (unsigned long long)done,
	       (unsigned long long)(us / 1000),
	       (unsigned long long)retry_us);
	diag("burst of %d x %lu bytes each way: %llu posts refused (bound %llu), %llu writes posted, %llu ms",
	     NBURST, BURST_LEN, (unsigned long long)refused,
	     (unsigned long long)bound, (unsigned long long)posted,
	     (unsigned long long)(us / 1000));
	sync_peer();
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

/* The NRING messages each way of t_ring() and t_ring_overflow(). */
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

/*
 * Run with FI_RV_RING_ENTRIES=64 and FI_RV_TEST_RING_UNBOUNDED=1 (-O):
 * the provider no longer bounds its writes and CTSs by the ring, so the
 * traffic of t_ring() overflows it for real.  The overflow fallback
 * (ring_overflowed()) must then complete every send and receive exactly
 * once, successfully or with FI_EIO / -EOVERFLOW, never hang, and leave
 * an endpoint whose rendezvous still works (over TCP).
 *
 * The ring only overflows if events pile up faster than progress reaps
 * them: until it has, this side pauses its provider calls (OVF_PAUSE_MS
 * at a time, as a busy application would) while the peer's writes land.
 */
#define OVF_PAUSE_MS	300
#define OVF_PAUSES	40
#define OVF_GRACE_MS	1000

static uint64_t ring_overflows_now(void)
{
	struct rv_dump_proc sum;

	rv_self_record(&sum);
	return sum.ring_overflows;
}

/* One direction's completions in t_ring_overflow(). */
struct ovf_tally {
	uint8_t done[NRING];		/* completions of operation i */
	size_t n, nerr;			/* operations completed, in error */
	size_t twice, odd;		/* again; foreign or wrong error */
};

/*
 * Reads at most one completion of @cq, whose operations' contexts are
 * @ctx, into @t.  True only for the first, successful completion of an
 * operation: @e and @i (its index) tell which.
 */
static bool ovf_take(struct fid_cq *cq, struct fi_cq_tagged_entry *ctx,
		     struct ovf_tally *t, const char *what,
		     struct fi_cq_tagged_entry *e, size_t *i)
{
	struct fi_cq_err_entry err;
	ssize_t n = fi_cq_read(cq, e, 1);
	bool failed = n == -FI_EAVAIL;
	uintptr_t d;
	void *c;

	memset(&err, 0, sizeof(err));
	if (failed && fi_cq_readerr(cq, &err, 0) == 1)
		c = err.op_context;
	else if (n == 1)
		c = e->op_context;
	else
		return false;
	d = (uintptr_t)c - (uintptr_t)ctx;
	*i = d / sizeof(*ctx);
	if (d % sizeof(*ctx) || *i >= NRING) {
		diag("%s completion of a foreign context", what);
		t->odd++;
		return false;
	}
	if (failed && (err.err != FI_EIO || err.prov_errno != -EOVERFLOW)) {
		diag("%s %zu: error %d (prov %d), want FI_EIO (-EOVERFLOW)",
		     what, *i, err.err, err.prov_errno);
		t->odd++;
	}
	if (t->done[*i]++) {
		diag("%s %zu completed again", what, *i);
		t->twice++;
		return false;
	}
	t->n++;
	if (failed)
		t->nerr++;
	return !failed;
}

/* The one extra message each way once the ring has overflowed. */
static bool ovf_after(uint64_t tag_mine, uint64_t tag_theirs)
{
	size_t len = (1ul << 20) + 100;
	struct fi_cq_tagged_entry se, re;
	struct fi_cq_err_entry err;
	int sret = -1, rret = -1;

	memset(rbuf, 0, len + 16);
	fill(sbuf, len, tag_mine);
	if (trecv(rbuf, len, peer, tag_theirs, 0, &re))
		return false;
	sync_peer();
	if (!tsend(sbuf, len, tag_mine, &se))
		sret = wait_comp(txcq, &se, NULL, &err);
	if (sret != 1)
		diag("send after overflow: %d (err %d prov %d)", sret,
		     sret ? 0 : err.err, sret ? 0 : err.prov_errno);
	rret = wait_comp(rxcq, &re, NULL, &err);
	if (rret != 1)
		diag("recv after overflow: %d (err %d prov %d)", rret,
		     rret ? 0 : err.err, rret ? 0 : err.prov_errno);
	if (rret == 1 && (re.len != len || check(rbuf, len, tag_theirs) >= 0)) {
		diag("recv after overflow: len %zu, bad byte %ld", re.len,
		     check(rbuf, len, tag_theirs));
		rret = 0;
	}
	return sret == 1 && rret == 1;
}

/*
 * How many receives the (empty) receive CQ takes before -FI_EAGAIN: all
 * RVFI_QUEUE_SIZE unless failed ops still hold a reservation.  They are
 * cancelled and their completions read.
 */
static size_t ovf_cq_room(void)
{
	struct fi_cq_tagged_entry *c = calloc(RVFI_QUEUE_SIZE + 1, sizeof(*c));
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	size_t n = 0, i, got = 0;
	ssize_t r;
	uint64_t t0;

	if (!c)
		die("calloc", ENOMEM);
	while (n <= RVFI_QUEUE_SIZE &&
	       !fi_trecv(ep, rbuf, 64, NULL, peer, 0xc0000 + n, 0, &c[n]))
		n++;
	for (i = 0; i < n; i++)
		fi_cancel(&ep->fid, &c[i]);
	for (t0 = now_ms(); got < n && now_ms() - t0 < WAIT_MS;) {
		r = fi_cq_read(rxcq, &e, 1);
		if (r == 1 || (r == -FI_EAVAIL &&
			       fi_cq_readerr(rxcq, &err, 0) == 1))
			got++;
	}
	if (got != n)
		diag("%zu of %zu cancelled receives completed", got, n);
	free(c);
	return n;
}

void t_ring_overflow(void)
{
	static struct ring_msgs m;
	static struct ovf_tally tx, rx;
	size_t i, nsend, nrecv, bad = 0, pauses = 0;
	uint64_t ov0, ov = 0, failed = 0, w0, r0, w1, r1;
	struct fi_cq_tagged_entry e;
	uint32_t entries = 0;
	uint64_t t0, tp;
	bool ok, seen = false;

	ring_map(&m, server ? 0x7000 : 0x8000, server ? 0x8000 : 0x7000);
	sync_peer();
	ov0 = ring_overflows_now();
	ok = ring_post(&m);
	if (!ok)
		diag("a post failed");
	/* Bounded: a message the fallback forgot ends here, not in a hang. */
	t0 = tp = now_ms();
	while ((tx.n < NRING || rx.n < NRING) && now_ms() - t0 < WAIT_MS) {
		ovf_take(txcq, m.sctx, &tx, "send", &e, &i);
		if (ovf_take(rxcq, m.rctx, &rx, "recv", &e, &i) &&
		    !ring_ok(i, &e, &m) && bad++ < 4)
			diag("message %zu bad: len %zu", i, e.len);
		/* No provider call for a while: the ring fills. */
		if (!seen && now_ms() - tp >= 50 && pauses < OVF_PAUSES &&
		    !(seen = ring_overflows_now() != ov0)) {
			usleep(OVF_PAUSE_MS * 1000);
			pauses++;
			tp = now_ms();
		}
	}
	nsend = tx.n;
	nrecv = rx.n;
	diag("%zu of %d sends (%zu errors), %zu of %d receives (%zu errors) in %llu ms, %zu pauses",
	     nsend, NRING, tx.nerr, nrecv, NRING, rx.nerr,
	     (unsigned long long)(now_ms() - t0), pauses);
	/* Anything more is a completion reported twice (or a stray). */
	for (t0 = now_ms(); now_ms() - t0 < OVF_GRACE_MS;) {
		ovf_take(txcq, m.sctx, &tx, "send", &e, &i);
		ovf_take(rxcq, m.rctx, &rx, "recv", &e, &i);
	}
	if (!rv_ring(&entries, &ov, &failed))
		entries = 0;
	result(entries == 64 && ov > ov0, "ring-overflow-seen",
	       "ring %u entries (want 64), %llu overflows (want > %llu): FI_RV_TEST_RING_UNBOUNDED=1 and FI_RV_RING_ENTRIES=64 set?",
	       entries, (unsigned long long)ov, (unsigned long long)ov0);
	/*
	 * At least one error: an event lost means a message that waited for
	 * it, which must have failed rather than stay silent.
	 */
	result(ok && nsend == NRING && nrecv == NRING && !tx.twice &&
	       !rx.twice && !tx.odd && !rx.odd &&
	       (ov == ov0 || tx.nerr + rx.nerr > 0),
	       "ring-overflow-fails-loudly",
	       "%zu of %d sends, %zu of %d receives in %d ms, %zu twice, %zu odd, %zu errors, %llu overflows",
	       nsend, NRING, nrecv, NRING, WAIT_MS, tx.twice + rx.twice,
	       tx.odd + rx.odd, tx.nerr + rx.nerr,
	       (unsigned long long)(ov - ov0));
	result(!bad, "ring-overflow-data-intact",
	       "%zu of %zu successful receives bad", bad, nrecv - rx.nerr);
	diag("ring of %u entries: %llu overflows, %zu send and %zu receive errors, %llu writes failed",
	     entries, (unsigned long long)(ov - ov0), tx.nerr, rx.nerr,
	     (unsigned long long)failed);
	/*
	 * The endpoint still works, its rendezvous data over TCP: this side
	 * posts no rv write for its message.
	 */
	sync_peer();
	if (!rv_counters(&w0, &r0))
		w0 = r0 = 0;
	ok = ovf_after(m.mine + NRING, m.theirs + NRING);
	sync_peer();
	if (!rv_counters(&w1, &r1))
		w1 = r1 = 0;
	result(ok && w1 == w0, "ring-overflow-then-works",
	       "one more rendezvous each way: %s, rv writes %llu -> %llu (want none: over TCP)",
	       ok ? "completed" : "failed", (unsigned long long)w0,
	       (unsigned long long)w1);
	/* The failed ops gave their CQ reservations back. */
	i = ovf_cq_room();
	result(i == RVFI_QUEUE_SIZE, "ring-overflow-cq-room",
	       "the receive CQ took %zu receives (want %d; %zu receives failed)",
	       i, RVFI_QUEUE_SIZE, rx.nerr);
	ring_unmap(&m);
	sync_peer();
}
