// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv_rel_test - one process of a job streaming verified RDMA writes to a
 * peer process on the other node while vm/reliability.sh breaks things
 * (SIGKILL, device removal, link down, peer module unload).
 *
 *   rv_rel_test -D DIR -k KEY -N NODE -I IDX [-p PEER_IDX] [-P PEER_NODE] -m MODE
 *               [-x sr|s|r] [-n MSGS] [-s SIZE] [-t CONN_TIMEOUT_MS]
 *               [-E ENODEV|EPIPE] [-w SLOT] [-S WRITES] [-R] [-T SECONDS] IP0 IP1 [IP2]
 *
 * The process attaches to job KEY, connects to node PEER_NODE (default:
 * the other one of two; IPi is node i's address) and exchanges with
 * process PEER_IDX (default IDX) there: it writes MSGS
 * messages of SIZE bytes into the peer's receive buffer (-x s) and
 * receives as many from it (-x r); both by default.  Message i lands at
 * offset i * SIZE; the bytes are a keyed pattern of their position, so
 * a byte landing anywhere else is caught.  Every RECV is checked on
 * arrival and the whole buffer at the end.  Processes meet through files
 * in DIR (the run's shared output directory): "<KEY>.info.<node>.<idx>"
 * (slot, iova, rkey, seed), "<KEY>.streaming.<node>.<idx>" (a tenth of
 * the stream has completed: the script may strike now),
 * "<KEY>.done.<node>.<idx>" and "<KEY>.stop" (sinks end).
 *
 * Every posted write carries wr_id = attempt << 32 | message, and must end
 * with exactly one SEND event of that attempt: an event for a write not in
 * flight, or one missing at the end, is a failure.  A write that failed is
 * posted again (attempt + 1), the way a middleware re-sends what the
 * generation change told it about.
 *
 * Modes:
 *  clean    no write may fail, the generation must not change, rv_stats
 *           and the MR cache figures must match what was done (the
 *           survivors of a SIGKILL next door); -w SLOT: ATTACH must not
 *           give this slot, a killed process's (freed slots are reused
 *           last, and not before their quarantine ends)
 *  recover  writes may fail (link down); they are re-sent until every
 *           message completed; the generation must advance, some post
 *           must have got EAGAIN while the connection reconnected; prints
 *           the recovery time
 *  -R       (clean, recover) the stream goes round again (same data,
 *           same places) until <KEY>.stop exists; in clean mode every
 *           message must arrive exactly once per round
 *  fail     the stream runs in rounds until a post fails with -E's errno
 *           (or CONN_QUERY says ERROR): then no write may stay without its
 *           SEND event, at least one must have failed, the ring and
 *           rv_stats stay readable and agree, and the connection is in
 *           ERROR (DEVICE_REMOVED for ENODEV) with a reason
 *  victim   like fail, send only, never ends by itself: the script kills it
 *  sink     receive only, every arrival checked, until <KEY>.stop
 *
 * Output: kselftest TAP results (rv_check()) and "#" diagnostics, which
 * reliability.sh makes its own.  Exit status 0 when every check passed, 1
 * otherwise, 4 without rv or a device.  Every wait is bounded by -T.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "rv_test_util.h"

#define POST_BATCH	32
#define EV_BATCH	256
#define MAX_MSGS	(1U << 20)

enum { ST_TODO, ST_INFLIGHT, ST_DONE };

static const char *dir, *key, *mode = "clean", *xfer = "sr";
static int node = -1, idx = -1, peer_node = -1, peer_idx = -1, want_slot = -1;
static uint32_t nmsgs = 200, msg_size = 65536, conn_timeout_ms = 60000;
static int expect_errno, timeout_s = 180;
static uint32_t streaming_at;	/* completions before the marker */
static bool repeat;		/* recover -R: rounds until <KEY>.stop */
#define MAX_NODES	3
static struct in_addr ips[MAX_NODES];
static int nnodes;

static struct rv *rv;
static unsigned int slot_bits;
static int slot, conn, failures, checks;
static uint64_t deadline;

/* sender */
static uint8_t *sbuf, *sstate, *sfailed;	/* sfailed: to be re-sent */
static uint32_t *sattempt;
static uint32_t scan, ndone, inflight;
static uint64_t peer_iova, peer_seed;
static uint32_t peer_rkey, peer_slot;
/* The receiver's keys, one per key chunk of 1 << peer_shift bytes. */
static uint32_t peer_keys[RV_MAX_REG_KEYS], peer_nkeys;
static unsigned int peer_shift;
/* Room for the keys of the victim's remote-read send buffer (unused). */
static uint32_t peer_keys_spare[RV_MAX_REG_KEYS];
static int smr;
/* receiver */
static uint8_t *rbuf;
static uint32_t *seen;
static uint32_t nseen;
static uint64_t my_seed;
/* what happened */
static uint64_t posted, ok_events, err_events, resent, dups, eagain,
	eagain_recon, rounds, recv_events, other_gen;
static uint64_t gen0, t_first_err, t_back, t_start;
static int fault_errno;
static struct rv_conn_query q_done;	/* when this stream was done */
static uint32_t inflight_at_fault;

#define diag(fmt, ...) rv_out("# %s.n%d.i%d: " fmt, key, node, idx, ##__VA_ARGS__)

/* Named <mode>.n<node>.i<idx>.<name> so TAP names are unique per run. */
static bool __attribute__((format(printf, 3, 4)))
check(bool ok, const char *name, const char *fmt, ...)
{
	char full[256];
	va_list ap;

	checks++;
	failures += !ok;
	snprintf(full, sizeof(full), "%s.n%d.i%d.%s", mode, node, idx, name);
	va_start(ap, fmt);
	rv_vcheck(ok, full, fmt, ap);
	va_end(ap);
	return ok;
}

static bool is(const char *m)
{
	return !strcmp(mode, m);
}

static bool sending(void)
{
	return strchr(xfer, 's');
}

static bool receiving(void)
{
	return strchr(xfer, 'r');
}

/* ---- files in the shared directory ------------------------------------ */

/*
 * DIR/KEY.<what>.<nd>.<ix>, the file of process @ix of node @nd, or
 * DIR/KEY.<what> (@ix < 0); waits end at the deadline.
 */
static struct rv_share share(const char *what, int nd, int ix, char *name,
			     size_t n)
{
	if (ix < 0)
		snprintf(name, n, "%s", what);
	else
		snprintf(name, n, "%s.%d.%d", what, nd, ix);
	return (struct rv_share){ .dir = dir, .key = key,
				  .deadline_ms = deadline };
}

/* Whole or not at all (rename): the other node polls for it. */
static bool fetch(const char *what, int nd, int ix, char *buf, size_t n);

/* The receiver's keys (its "keys" file), after its info. */
static bool fetch_keys(void)
{
	char *kt = malloc(RV_KEYS_TEXT_BYTES(peer_nkeys));

	if (!kt || !fetch("keys", peer_node, peer_idx, kt,
			  RV_KEYS_TEXT_BYTES(peer_nkeys)))
		return check(false, "peer-keys", "node%d idx %d: none",
			     peer_node, peer_idx);
	if (!rv_keys_parse(kt, peer_keys, peer_nkeys))
		return check(false, "peer-keys", "not %u keys", peer_nkeys);
	free(kt);
	return true;
}

/* The key of remote address @raddr of the peer's buffer. */
static uint32_t rkey_of(uint64_t raddr)
{
	return peer_keys[rv_rkey_index(peer_iova, raddr, peer_shift)];
}

static void publish(const char *what, const char *text)
{
	char name[128];
	struct rv_share s = share(what, node, idx, name, sizeof(name));
	int ret = rv_share_publish(&s, name, text);

	if (ret) {
		diag("publish %s.%s: %s", key, name, strerror(-ret));
		exit(1);
	}
}

static bool exists(const char *what, int nd, int ix)
{
	char name[128];
	struct rv_share s = share(what, nd, ix, name, sizeof(name));

	return rv_share_exists(&s, name);
}

static bool fetch(const char *what, int nd, int ix, char *buf, size_t n)
{
	char name[128];
	struct rv_share s = share(what, nd, ix, name, sizeof(name));

	return rv_share_fetch(&s, name, buf, n);
}

/* ---- setup ------------------------------------------------------------- */

static void *map_buf(uint64_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		diag("mmap %" PRIu64 ": %s", len, strerror(errno));
		exit(1);
	}
	return p;
}

static int setup(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rv_conn_query q;
	struct rv_reg_mem rm;
	struct rv_attach a;
	char text[256];
	uint64_t len = (uint64_t)nmsgs * msg_size;
	unsigned long long iova, seed;
	int di, gid, ret;

	ret = rv_test_open(&rv, &di, &gid);
	if (ret)
		return ret;
	rv_attach_job(&a, di, gid, key);
	ret = rv_attach(rv, &a);
	if (!check(ret >= 0, "attach", "rv_attach: %s", strerror(-ret)))
		return 1;
	slot = ret;
	slot_bits = a.slot_bits;
	if (want_slot >= 0)
		check(slot != want_slot, "slot-not-reused",
		      "got slot %d, the one freed by the kill", slot);

	rv_random_key((uint8_t *)&my_seed, sizeof(my_seed));
	iova = 0;
	memset(&rm, 0, sizeof(rm));
	if (receiving()) {
		static uint32_t keys[RV_MAX_REG_KEYS];
		char *kt = malloc(RV_KEYS_TEXT_BYTES(RV_MAX_REG_KEYS));

		/*
		 * Aligned to a power-of-two message size, no message crosses
		 * a key chunk (a larger power of two): one write, one key.
		 */
		rbuf = (msg_size & (msg_size - 1)) ? map_buf(len) :
		       rv_map_aligned(len, msg_size);
		if (!check(rbuf && kt, "map-recv", "%s", strerror(errno)))
			return 1;
		seen = calloc(nmsgs, sizeof(*seen));
		ret = rv_reg_mem_keys(rv, rbuf, len, RV_ACCESS_REMOTE_WRITE,
				      &rm, keys, RV_MAX_REG_KEYS);
		if (!check(ret > 0, "reg-recv", "rv_reg_mem_keys: %s",
			   strerror(-ret)))
			return 1;
		iova = rm.iova;
		rv_keys_text(kt, keys, rm.nr_rkeys);
		publish("keys", kt);
		free(kt);
	}
	snprintf(text, sizeof(text),
		 "slot %d iova %llx rkey %x seed %llx pid %d shift %u keys %u\n",
		 slot, iova, rm.rkey, (unsigned long long)my_seed,
		 (int)getpid(), rm.rkey_shift, rm.nr_rkeys);
	publish("info", text);

	sin.sin_addr = ips[peer_node];
	conn = rv_conn_create(rv, (struct sockaddr *)&sin, sizeof(sin), NULL);
	if (!check(conn > 0, "conn-create", "%s", strerror(-conn)))
		return 1;
	ret = rv_conn_connect(rv, conn, conn_timeout_ms);
	if (!check(!ret, "conn-connect", "%s", strerror(-ret)))
		return 1;
	ret = rv_conn_wait(rv, conn, 90000, &q);
	if (!check(ret == RV_CONN_STATE_CONNECTED, "connected",
		   "state %d reason %u", ret, q.reason))
		return 1;
	gen0 = q.generation;

	if (sending()) {
		if (!fetch("info", peer_node, peer_idx, text, sizeof(text)) ||
		    sscanf(text, "slot %u iova %llx rkey %x seed %llx pid %*d shift %u keys %u",
			   &peer_slot, &iova, &peer_rkey, &seed, &peer_shift,
			   &peer_nkeys) != 6 ||
		    !peer_nkeys || peer_nkeys > RV_MAX_REG_KEYS ||
		    peer_shift < 12 || peer_shift > 40)
			return check(false, "peer-info", "node%d idx %d: none",
				     peer_node, peer_idx), 1;
		if (!fetch_keys())
			return 1;
		peer_iova = iova;
		peer_seed = seed;
		sbuf = map_buf(len);
		rv_pat_fill(sbuf, len, peer_seed);
		sstate = calloc(nmsgs, 1);
		sfailed = calloc(nmsgs, 1);
		sattempt = calloc(nmsgs, sizeof(*sattempt));
		/*
		 * A local-only registration is pinned pages, no kernel MR:
		 * the victim's also grants remote read, so that the MR the
		 * script sees go with its file (rdma res show mr) is there
		 * (one MR per key chunk it spans).
		 */
		smr = rv_reg_mem_keys(rv, sbuf, len, is("victim") ?
				      RV_ACCESS_LOCAL_WRITE |
				      RV_ACCESS_REMOTE_READ :
				      RV_ACCESS_LOCAL_WRITE, &rm,
				      peer_keys_spare, RV_MAX_REG_KEYS);
		if (!check(smr > 0, "reg-send", "rv_reg_mem: %s", strerror(-smr)))
			return 1;
		/* The script counts the kernel MRs that go with the file. */
		snprintf(text, sizeof(text), "mrs %u\n", rm.nr_rkeys);
		publish("mrs", text);
	}
	return 0;
}

/* ---- the stream -------------------------------------------------------- */

static void conn_state(struct rv_conn_query *q)
{
	int ret = rv_conn_query(rv, conn, q);

	if (ret) {
		check(false, "conn-query", "%s", strerror(-ret));
		exit(1);
	}
}

static void on_event(const struct rv_event *e)
{
	if (e->kind == RV_EVENT_SEND) {
		uint32_t i = (uint32_t)e->wr_id, att = e->wr_id >> 32;

		if (!sending() || i >= nmsgs || sstate[i] != ST_INFLIGHT ||
		    att != sattempt[i]) {
			check(false, "send-event-once",
			      "wr_id %llx status %u: not in flight",
			      (unsigned long long)e->wr_id, e->status);
			exit(1);
		}
		inflight--;
		if (e->status) {
			err_events++;
			if (!t_first_err)
				t_first_err = rv_now_ms();
			sstate[i] = ST_TODO;
			sfailed[i] = 1;
			if (i < scan)
				scan = i;
			return;
		}
		ok_events++;
		/* checked once at the end: a reconnect changes them all */
		if (e->generation != gen0 && !other_gen++ && is("clean"))
			diag("wr %u completed in generation %u, started in %llu",
			     i, e->generation, (unsigned long long)gen0);
		sstate[i] = ST_DONE;
		ndone++;
	} else if (e->kind == RV_EVENT_RECV) {
		uint32_t i = rv_imm_user(slot_bits, e->imm);
		int64_t bad;

		recv_events++;
		if (!receiving() || i >= nmsgs || e->bytes != msg_size ||
		    rv_imm_slot(slot_bits, e->imm) != (uint32_t)slot) {
			check(false, "recv-event", "imm %x bytes %u: unexpected",
			      e->imm, e->bytes);
			exit(1);
		}
		/* a failed write may have landed (then twice), or a new round */
		if (seen[i]++)
			dups++;
		else
			nseen++;
		bad = rv_pat_check(rbuf, (uint64_t)i * msg_size, msg_size, my_seed);
		if (bad >= 0) {
			check(false, "recv-data", "message %u: byte %lld wrong on arrival",
			      i, (long long)(bad - (int64_t)i * msg_size));
			exit(1);
		}
	} else {
		check(false, "event-kind", "kind %u", e->kind);
		exit(1);
	}
}

static int reap(int wait_ms)
{
	struct rv_event ev[EV_BATCH];
	int n, i;

	n = rv_poll_events(rv, ev, EV_BATCH);
	if (n == 0 && wait_ms) {
		rv_wait_events(rv, wait_ms);
		n = rv_poll_events(rv, ev, EV_BATCH);
	}
	if (n < 0) {
		check(false, "ring-readable", "rv_poll_events: %s", strerror(-n));
		exit(1);
	}
	for (i = 0; i < n; i++)
		on_event(&ev[i]);
	return n;
}

/* Post what is to be (re)sent; returns 0 or the post's -errno. */
static int post_some(void)
{
	struct rv_write w[POST_BATCH];
	uint32_t at[POST_BATCH], i, n = 0;
	int ret;

	while (scan < nmsgs && sstate[scan] != ST_TODO)
		scan++;
	for (i = scan; i < nmsgs && n < POST_BATCH; i++) {
		if (sstate[i] != ST_TODO)
			continue;
		memset(&w[n], 0, sizeof(w[n]));
		w[n].conn_handle = conn;
		w[n].mr_handle = smr;
		w[n].local_addr = (uintptr_t)(sbuf + (uint64_t)i * msg_size);
		w[n].length = msg_size;
		w[n].remote_addr = peer_iova + (uint64_t)i * msg_size;
		w[n].rkey = rkey_of(w[n].remote_addr);
		w[n].imm = rv_imm(slot_bits, peer_slot, i);
		w[n].wr_id = (uint64_t)(sattempt[i] + 1) << 32 | i;
		at[n++] = i;
	}
	if (!n)
		return 0;
	ret = rv_post_writes(rv, w, n);
	if (ret < 0)
		return ret;
	for (i = 0; i < (uint32_t)ret; i++) {
		/* a new round is not a re-send; a post after a failure is */
		resent += sfailed[at[i]];
		sfailed[at[i]] = 0;
		sattempt[at[i]]++;
		sstate[at[i]] = ST_INFLIGHT;
		inflight++;
		posted++;
	}
	return 0;
}

static bool send_done(void)
{
	return !sending() || ndone == nmsgs;
}

static bool recv_done(void)
{
	return !receiving() || nseen == nmsgs;
}

/*
 * Recovery bookkeeping: the outage starts at the first failed write or
 * the first EAGAIN of a reconnecting connection, ends when CONN_QUERY
 * shows it CONNECTED with a newer generation.
 */
static void watch_recovery(void)
{
	struct rv_conn_query q;

	if (!t_first_err || t_back)
		return;
	conn_state(&q);
	if (q.state == RV_CONN_STATE_CONNECTED && q.generation > gen0)
		t_back = rv_now_ms();
}

/* <KEY>.stop exists; looked up at most every 200 ms (it is on 9p). */
static bool stop_seen(void)
{
	static uint64_t next;
	static bool seen_stop;

	if (!seen_stop && rv_now_ms() >= next) {
		seen_stop = exists("stop", 0, -1);
		next = rv_now_ms() + 200;
	}
	return seen_stop;
}

/* Returns false when the stream ended on a fault (fail modes). */
static bool run(void)
{
	bool streaming = false;
	int ret, n;

	while (!(send_done() && recv_done()) || is("victim") || is("sink") ||
	       is("fail") || (repeat && !stop_seen())) {
		if (rv_now_ms() > deadline) {
			struct rv_conn_query q;
			struct rv_stats st;

			check(false, is("fail") ? "fault-reached" : "complete",
			      "deadline: sent %u/%u (in flight %u) received %u/%u",
			      ndone, nmsgs, inflight, nseen, nmsgs);
			/* what a kernel bug report needs */
			conn_state(&q);
			if (rv_stats(rv, &st))
				memset(&st, 0, sizeof(st));
			diag("conn: state %u reason %u connected %u/%u generation %llu (was %llu) attempts %llu rejects %u inflight %u posted %llu completed %llu failed %llu; file: inflight %u failed %llu eagain %llu; outage at %lld ms, back at %lld ms",
			     q.state, q.reason, q.connected, q.num_conn,
			     (unsigned long long)q.generation,
			     (unsigned long long)gen0,
			     (unsigned long long)q.attempts, q.rejects,
			     q.inflight, (unsigned long long)q.writes_posted,
			     (unsigned long long)q.writes_completed,
			     (unsigned long long)q.writes_failed, st.inflight,
			     (unsigned long long)st.writes_failed,
			     (unsigned long long)st.posts_eagain,
			     t_first_err ? (long long)(t_first_err - t_start) : -1LL,
			     t_back ? (long long)(t_back - t_start) : -1LL);
			return false;
		}
		if (is("sink") && stop_seen())
			return true;
		/*
		 * The fail modes go round again: traffic until the fault;
		 * recover with -R until <KEY>.stop (the outage must find
		 * traffic however fast the link is).
		 */
		if (sending() && ndone == nmsgs &&
		    (is("fail") || is("victim") || (repeat && !stop_seen()))) {
			memset(sstate, ST_TODO, nmsgs);
			scan = 0;
			ndone = 0;
			rounds++;
		}
		ret = sending() ? post_some() : 0;
		if (ret == -EAGAIN) {
			struct rv_conn_query q;

			eagain++;
			conn_state(&q);
			if (q.state == RV_CONN_STATE_CONNECTING) {
				eagain_recon++;
				if (!t_first_err)
					t_first_err = rv_now_ms();
			}
		} else if (ret == -EPIPE && is("recover")) {
			struct rv_conn_query q;

			conn_state(&q);
			check(false, "no-give-up",
			      "EPIPE: connection gave up (state %u reason %u) within its %u ms",
			      q.state, q.reason, conn_timeout_ms);
			/* as a middleware would: restart it */
			rv_conn_connect(rv, conn, conn_timeout_ms);
		} else if (ret < 0) {
			fault_errno = -ret;
			inflight_at_fault = inflight;
			return false;
		}
		n = reap(ret == -EAGAIN || !sending() ||
			 (send_done() && !recv_done()) ? 50 : 0);
		(void)n;
		if (is("recover"))
			watch_recovery();
		if (!streaming && (is("sink") ? nseen > 0 :
				   ndone + rounds * nmsgs >= streaming_at)) {
			streaming = true;
			publish("streaming", "x\n");
		}
	}
	return true;
}

/* Messages that arrived fewer than @want times. */
static uint32_t recv_short(uint32_t want)
{
	uint32_t i, n = 0;

	for (i = 0; i < nmsgs; i++)
		n += seen[i] < want;
	return n;
}

/*
 * Keep reaping until the peer has finished writing to us (bounded); in
 * clean mode every message must then arrive once per round the peer sent.
 */
static void linger(void)
{
	unsigned long long peer_rounds = 0;
	char text[64];
	uint32_t i, more = 0;

	/*
	 * The connection as our stream ends: once "done" is out, the peer
	 * node's processes may all exit, and the connection with them.
	 */
	conn_state(&q_done);
	snprintf(text, sizeof(text), "rounds %llu\n", (unsigned long long)rounds);
	publish("done", text);
	if (!receiving())
		return;
	while (!exists("done", peer_node, peer_idx)) {
		if (rv_now_ms() > deadline) {
			check(false, "peer-done", "node%d idx %d never finished",
			      peer_node, peer_idx);
			return;
		}
		reap(50);
	}
	/*
	 * The peer's writes have all completed, so their RECV events are in
	 * the ring or on their way: take them before the counters are
	 * compared with rv_stats.
	 */
	while (reap(200) > 0 && rv_now_ms() < deadline)
		;
	if (!is("clean"))
		return;
	if (!fetch("done", peer_node, peer_idx, text, sizeof(text)) ||
	    sscanf(text, "rounds %llu", &peer_rounds) != 1) {
		check(false, "peer-rounds", "no round count in the done file");
		return;
	}
	/* the peer's last completions may overtake our receive events */
	while (recv_short(peer_rounds + 1) && rv_now_ms() < deadline)
		reap(50);
	for (i = 0; i < nmsgs; i++)
		more += seen[i] > peer_rounds + 1;
	check(!recv_short(peer_rounds + 1) && !more, "recv-once-per-round",
	      "%u messages arrived fewer, %u more than %llu times",
	      recv_short(peer_rounds + 1), more, peer_rounds + 1);
}

static const char *errno_name(int e)
{
	return e == ENODEV ? "ENODEV" : e == EPIPE ? "EPIPE" :
	       e == EAGAIN ? "EAGAIN" : strerror(e);
}

/* After the fault: every write gets its event, nothing else works. */
static void after_fault(void)
{
	struct rv_conn_query q;
	struct rv_write w;
	struct rv_stats s;
	uint64_t until = rv_now_ms() + 30000;
	int ret, queued;

	diag("fault: post %s with %u writes in flight, after %llu rounds",
	     errno_name(fault_errno), inflight_at_fault,
	     (unsigned long long)rounds);
	check(fault_errno == expect_errno, "post-errno", "%s, expected %s",
	      errno_name(fault_errno), errno_name(expect_errno));
	while (inflight && rv_now_ms() < until)
		reap(100);
	check(!inflight && posted == ok_events + err_events, "all-accounted",
	      "posted %llu = %llu ok + %llu failed? %u still in flight after 30 s",
	      (unsigned long long)posted, (unsigned long long)ok_events,
	      (unsigned long long)err_events, inflight);
	/*
	 * Whether this process had writes in flight when the QPs failed is
	 * timing (another process's writes may fail them first); the
	 * script checks error events of a node's processes together, on
	 * the nodes where they must occur.
	 */
	/*
	 * RECV events of the peer's writes that landed before the fault may
	 * still be queued: a process with nothing in flight did not reap
	 * above.  on_event() checks them as usual (and fails any SEND event
	 * now: nothing is in flight).  After them the ring, still there,
	 * stays empty: nothing more may come.
	 */
	queued = 0;
	until = rv_now_ms() + 5000;
	while (rv_now_ms() < until && (ret = reap(0)) > 0)
		queued += ret;
	if (queued)
		diag("reaped %d events queued before the fault", queued);
	ret = reap(200);
	check(ret == 0, "ring-quiet", "%d events after all were accounted", ret);
	ret = rv_stats(rv, &s);
	if (check(!ret, "stats-readable", "rv_stats: %s", strerror(-ret)))
		check(s.writes_posted == posted &&
		      s.writes_completed == ok_events &&
		      s.writes_failed == err_events && s.inflight == 0,
		      "stats-accounted",
		      "posted %llu/%llu completed %llu/%llu failed %llu/%llu inflight %u",
		      (unsigned long long)s.writes_posted,
		      (unsigned long long)posted,
		      (unsigned long long)s.writes_completed,
		      (unsigned long long)ok_events,
		      (unsigned long long)s.writes_failed,
		      (unsigned long long)err_events, s.inflight);
	/* posting again fails the same way: no write slips through */
	memset(&w, 0, sizeof(w));
	w.conn_handle = conn;
	w.mr_handle = smr;
	w.local_addr = (uintptr_t)sbuf;
	w.length = msg_size;
	w.remote_addr = peer_iova;
	w.rkey = rkey_of(peer_iova);
	w.imm = rv_imm(slot_bits, peer_slot, 0);
	ret = rv_post_write(rv, &w);
	check(ret == -expect_errno, "post-again", "%s, expected %s",
	      ret ? errno_name(-ret) : "posted", errno_name(expect_errno));
	ret = rv_conn_query(rv, conn, &q);
	if (check(!ret, "conn-query-after", "%s", strerror(-ret)))
		check(q.state == RV_CONN_STATE_ERROR &&
		      (expect_errno == ENODEV ?
		       q.reason == RV_CONN_REASON_DEVICE_REMOVED :
		       q.reason != RV_CONN_REASON_NONE) && q.inflight == 0,
		      "conn-error", "state %u reason %u inflight %u", q.state,
		      q.reason, q.inflight);
	diag("conn: state %u reason %u generation %llu attempts %llu; writes %llu posted, %llu ok, %llu failed",
	     q.state, q.reason, (unsigned long long)q.generation,
	     (unsigned long long)q.attempts, (unsigned long long)posted,
	     (unsigned long long)ok_events, (unsigned long long)err_events);
}

/* The stream completed: data, counters, generation. */
static void after_stream(const struct rv_mr_stats *m0)
{
	struct rv_conn_query q;
	struct rv_mr_stats m;
	struct rv_stats s;
	int64_t bad;
	int ret;

	if (is("sink")) {
		/* the sender died mid-stream: what arrived must still be right */
		uint32_t i;

		bad = -1;
		for (i = 0; i < nmsgs && bad < 0; i++)
			if (seen[i])
				bad = rv_pat_check(rbuf, (uint64_t)i * msg_size,
						msg_size, my_seed);
		check(bad < 0, "data-final", "byte %lld differs", (long long)bad);
	} else if (receiving()) {
		bad = rv_pat_check(rbuf, 0, (uint64_t)nmsgs * msg_size, my_seed);
		check(bad < 0, "data-final", "byte %lld of %llu differs",
		      (long long)bad, (unsigned long long)nmsgs * msg_size);
	}
	check(posted == ok_events + err_events && !inflight, "all-accounted",
	      "posted %llu, %llu ok + %llu failed, %u in flight",
	      (unsigned long long)posted, (unsigned long long)ok_events,
	      (unsigned long long)err_events, inflight);
	ret = rv_stats(rv, &s);
	if (check(!ret, "stats", "%s", strerror(-ret)))
		check(s.writes_posted == posted &&
		      s.writes_completed == ok_events &&
		      s.writes_failed == err_events && s.inflight == 0 &&
		      s.recvs == recv_events && s.ring_overflows == 0,
		      "stats-accounted",
		      "posted %llu/%llu ok %llu/%llu failed %llu/%llu recvs %llu/%llu overflows %llu inflight %u",
		      (unsigned long long)s.writes_posted,
		      (unsigned long long)posted,
		      (unsigned long long)s.writes_completed,
		      (unsigned long long)ok_events,
		      (unsigned long long)s.writes_failed,
		      (unsigned long long)err_events,
		      (unsigned long long)s.recvs,
		      (unsigned long long)recv_events,
		      (unsigned long long)s.ring_overflows, s.inflight);
	conn_state(&q);
	if (is("clean")) {
		check(!err_events, "no-errors", "%llu writes failed",
		      (unsigned long long)err_events);
		check(!other_gen, "send-generation",
		      "%llu of %llu writes completed in a generation other than %llu",
		      (unsigned long long)other_gen,
		      (unsigned long long)ok_events, (unsigned long long)gen0);
		check(q_done.state == RV_CONN_STATE_CONNECTED &&
		      q_done.generation == gen0, "same-generation",
		      "state %u generation %llu, started %llu", q_done.state,
		      (unsigned long long)q_done.generation,
		      (unsigned long long)gen0);
		/* the neighbours' deaths must not touch this cache */
		ret = rv_mr_stats(rv, &m);
		if (check(!ret, "mr-stats", "%s", strerror(-ret)))
			check(m.entries == m0->entries && m.bytes == m0->bytes &&
			      m.invalidations == m0->invalidations &&
			      m.evict_pressure == m0->evict_pressure &&
			      m.failures == m0->failures,
			      "mr-cache-untouched",
			      "entries %u/%u bytes %llu/%llu invalidations %llu/%llu evictions %llu/%llu",
			      m.entries, m0->entries,
			      (unsigned long long)m.bytes,
			      (unsigned long long)m0->bytes,
			      (unsigned long long)m.invalidations,
			      (unsigned long long)m0->invalidations,
			      (unsigned long long)m.evict_pressure,
			      (unsigned long long)m0->evict_pressure);
	} else if (is("recover")) {
		/*
		 * One outage (link): connected again by the end.  Rounds
		 * through repeated faults (-R, the soak): the stream may end
		 * while the connection is between QPs, never given up.
		 */
		check((q_done.state == RV_CONN_STATE_CONNECTED ||
		       (repeat && q_done.state == RV_CONN_STATE_CONNECTING)) &&
		      q_done.generation > gen0, "generation-advanced",
		      "state %u generation %llu, started %llu", q_done.state,
		      (unsigned long long)q_done.generation,
		      (unsigned long long)gen0);
		if (sending()) {
			/*
			 * Writes in flight when the QPs failed end in error
			 * events and are re-sent; a process with none in
			 * flight at that moment (between two rounds) meets
			 * the outage only as EAGAIN while reconnecting.
			 */
			check((err_events > 0 && resent > 0) ||
			      (err_events == 0 && eagain_recon > 0),
			      "errors-seen",
			      "%llu writes failed, %llu re-sent, %llu EAGAIN while reconnecting: the outage went unnoticed",
			      (unsigned long long)err_events,
			      (unsigned long long)resent,
			      (unsigned long long)eagain_recon);
			check(eagain_recon > 0, "eagain-reconnecting",
			      "no post got EAGAIN while reconnecting (%llu EAGAIN in all)",
			      (unsigned long long)eagain);
		}
		check(t_first_err && t_back, "recovered",
		      "outage start %llu end %llu",
		      (unsigned long long)t_first_err,
		      (unsigned long long)t_back);
		diag("recovery: %llu ms from the first error to CONNECTED generation %llu (was %llu)",
		     (unsigned long long)(t_back - t_first_err),
		     (unsigned long long)q.generation, (unsigned long long)gen0);
	}
	diag("%llu writes posted (%llu re-sent), %llu ok, %llu failed, %llu EAGAIN (%llu reconnecting), %llu recvs (%llu duplicate), %.1f s",
	     (unsigned long long)posted, (unsigned long long)resent,
	     (unsigned long long)ok_events, (unsigned long long)err_events,
	     (unsigned long long)eagain, (unsigned long long)eagain_recon,
	     (unsigned long long)recv_events, (unsigned long long)dups,
	     (rv_now_ms() - t_start) / 1000.0);
}

static void usage(void)
{
	fprintf(stderr, "usage: rv_rel_test -D DIR -k KEY -N NODE -I IDX [-p PEER_IDX] -m clean|recover|fail|victim|sink [-x sr|s|r] [-n MSGS] [-s SIZE] [-t CONN_TIMEOUT_MS] [-E ENODEV|EPIPE] [-w SLOT] [-S WRITES] [-R] [-T SECONDS] IP0 IP1 [IP2]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct rv_mr_stats m0;
	int c, ret;

	while ((c = getopt(argc, argv, "D:k:N:I:p:P:m:x:n:s:t:E:w:S:RT:")) != -1) {
		switch (c) {
		case 'D': dir = optarg; break;
		case 'k': key = optarg; break;
		case 'N': node = atoi(optarg); break;
		case 'I': idx = atoi(optarg); break;
		case 'p': peer_idx = atoi(optarg); break;
		case 'P': peer_node = atoi(optarg); break;
		case 'm': mode = optarg; break;
		case 'x': xfer = optarg; break;
		case 'n': nmsgs = strtoul(optarg, NULL, 0); break;
		case 's': msg_size = strtoul(optarg, NULL, 0); break;
		case 't': conn_timeout_ms = strtoul(optarg, NULL, 0); break;
		case 'E':
			expect_errno = !strcmp(optarg, "ENODEV") ? ENODEV :
				       !strcmp(optarg, "EPIPE") ? EPIPE : -1;
			break;
		case 'w': want_slot = atoi(optarg); break;
		case 'R': repeat = true; break;
		case 'S': streaming_at = strtoul(optarg, NULL, 0); break;
		case 'T': timeout_s = atoi(optarg); break;
		default: usage();
		}
	}
	nnodes = argc - optind;
	if (peer_node < 0 && nnodes == 2)
		peer_node = !node;
	if (nnodes < 2 || nnodes > MAX_NODES || !dir || !key || node < 0 ||
	    node >= nnodes || peer_node < 0 || peer_node >= nnodes ||
	    peer_node == node ||
	    idx < 0 || !nmsgs || nmsgs > MAX_MSGS || !msg_size ||
	    msg_size % 8 || strlen(key) > RV_JOB_KEY_MAX || expect_errno < 0)
		usage();
	for (c = 0; c < nnodes; c++)
		if (inet_pton(AF_INET, argv[optind + c], &ips[c]) != 1)
			usage();
	if (peer_idx < 0)
		peer_idx = idx;
	if (!streaming_at)
		streaming_at = nmsgs / 10 + 1;
	if (is("victim"))
		xfer = "s";
	if (is("sink"))
		xfer = "r";
	if (is("fail") != !!expect_errno && !is("victim"))
		usage();
	if (!is("clean") && !is("recover") && !is("fail") && !is("victim") &&
	    !is("sink"))
		usage();

	deadline = rv_now_ms() + (uint64_t)timeout_s * 1000;
	ret = setup();
	if (ret)
		return ret;
	memset(&m0, 0, sizeof(m0));
	ret = rv_mr_stats(rv, &m0);
	if (ret)
		diag("rv_mr_stats: %s", strerror(-ret));
	t_start = rv_now_ms();
	if (run()) {
		if (is("sink"))
			check(nseen > 0, "sink-received", "nothing arrived");
		else
			linger();
		after_stream(&m0);
	} else if (fault_errno) {
		after_fault();
	}
	if (!checks)
		check(false, "ran", "no check ran");
	rv_close(rv);
	return failures ? 1 : 0;
}
