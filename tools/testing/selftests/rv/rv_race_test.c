// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv_race_test - races between a posting thread and whatever tears its
 * resources down, on guests with two vCPUs (vm/race.sh, 2 nodes).
 *
 *   rv_race_test -N 1 -k KEY -d DIR [-T SECONDS] PEER_IP     (target)
 *   rv_race_test -N 0 -k KEY -d DIR [-r ROUNDS] PEER_IP      (racer)
 *
 * The target attaches, registers a remote-write buffer, connects to the
 * racer's node, publishes "iova rkey slot" in DIR/target and counts the
 * RECV events of the racer's writes until DIR/done appears, checking that
 * no write arrives twice (every immediate is unique).
 *
 * The racer keeps one file of the job open (so the job and its
 * connection outlive the rounds) and, each round, opens a second file
 * that attaches, takes a handle to the connection, registers a source
 * buffer and starts two threads: a poster, posting 64 KiB writes to the
 * target as fast as the send queues take them, and a reaper, consuming
 * the ring's events on another CPU than the completions that produce
 * them.  The main thread waits a few milliseconds, then, by round:
 *
 *   close     closes the file's descriptor under the threads
 *   munmap    unmaps the source buffer (its registration goes stale)
 *   dereg     drops the registration and evicts the cache
 *   destroy   destroys the file's connection handle
 *
 * then lets the poster run on for a moment and stops it.  Every post
 * must succeed or fail with an errno that says what happened (EAGAIN,
 * EBADF, ESTALE, ENOENT); with the file still open every write posted
 * must end in exactly one SEND event and nothing stay in flight.
 * Whatever the kernel gets wrong under these races (a use after free, a
 * lock order, a lost completion) shows in its log (run_tests.sh scans
 * it) or in these checks.
 *
 * Prints kselftest TAP results; exit status 0 when all passed, 4
 * (kselftest skip) without a device.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rv_test_util.h"

#define WRITE_BYTES	(64 << 10)
#define SRC_BYTES	(1 << 20)
#define DST_BYTES	(1 << 20)
#define ROUND_BITS	8		/* immediate: round << SEQ_BITS | seq */
#define SEQ_BITS	16
#define EV_BATCH	64

enum action { ACT_CLOSE, ACT_MUNMAP, ACT_DEREG, ACT_DESTROY, ACT_NR };
static const char *const action_name[ACT_NR] = {
	"close", "munmap", "dereg", "destroy",
};

static const char *key, *dir;
static int node = -1;
static unsigned int rounds = 16, target_secs = 600;
static struct sockaddr_in peer = { .sin_family = AF_INET };

static void path_of(char *p, size_t n, const char *name)
{
	snprintf(p, n, "%s/%s", dir, name);
}

static bool exists(const char *name)
{
	char p[512];

	path_of(p, sizeof(p), name);
	return !access(p, F_OK);
}

static void publish(const char *name, const char *text)
{
	char p[512], tmp[520];
	FILE *f;

	path_of(p, sizeof(p), name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", p);
	f = fopen(tmp, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) || rename(tmp, p))
		rv_out("publish %s: %s", name, strerror(errno));
}

/* Attach @rv to the job and connect it to the peer; the handle or -errno. */
static int join(struct rv **rvp, uint32_t *handle)
{
	struct rv_conn_query q;
	struct rv_attach a;
	int ret, idx, gid;

	ret = rv_test_open(rvp, &idx, &gid);
	if (ret)
		return ret == 4 ? -ENODEV : -EIO;
	rv_attach_init(&a, idx, strlen(key));
	memcpy(a.job_key, key, a.job_key_len);
	a.gid_index = gid;
	ret = rv_attach(*rvp, &a);
	if (ret < 0)
		goto out_close;
	ret = rv_conn_create(*rvp, (struct sockaddr *)&peer, sizeof(peer),
			     NULL);
	if (ret < 0)
		goto out_close;
	*handle = ret;
	ret = rv_conn_connect(*rvp, *handle, 60000);
	if (!ret)
		ret = rv_conn_wait(*rvp, *handle, 70000, &q);
	if (ret == RV_CONN_STATE_CONNECTED)
		return 0;
	if (ret >= 0)
		ret = -ENOTCONN;
out_close:
	rv_close(*rvp);
	*rvp = NULL;
	return ret;
}

/* ---- target ------------------------------------------------------------- */

static int target(void)
{
	uint8_t *seen = calloc(1, 1u << (ROUND_BITS + SEQ_BITS - 3));
	uint64_t recvs = 0, dups = 0, bad = 0, until;
	struct rv_event ev[EV_BATCH];
	struct rv_reg_mem r;
	uint32_t handle;
	char text[128];
	struct rv *rv;
	void *buf;
	int ret, n, i;

	ret = join(&rv, &handle);
	if (ret == -ENODEV)
		return 4;
	rv_check(!ret, "target-connected", "%s", strerror(-ret));
	if (ret || !seen)
		return 1;
	buf = rv_map_aligned(DST_BYTES, 2 << 20);
	ret = buf ? rv_reg_mem(rv, buf, DST_BYTES, RV_ACCESS_REMOTE_WRITE,
			       &r) : -ENOMEM;
	rv_check(ret > 0, "target-registered", "%s", strerror(-ret));
	if (ret <= 0)
		return 1;
	snprintf(text, sizeof(text), "%llu %u %d\n",
		 (unsigned long long)r.iova, r.rkey, rv_slot(rv));
	publish("target", text);

	until = rv_now_ms() + target_secs * 1000ULL;
	while (!exists("done") && rv_now_ms() < until) {
		n = rv_poll_events(rv, ev, EV_BATCH);
		if (n <= 0) {
			rv_wait_events(rv, 200);
			continue;
		}
		for (i = 0; i < n; i++) {
			uint32_t id;

			if (ev[i].kind != RV_EVENT_RECV || ev[i].status) {
				bad++;
				continue;
			}
			recvs++;
			id = rv_imm_user(rv_slot_bits(rv), ev[i].imm) &
			     ((1u << (ROUND_BITS + SEQ_BITS)) - 1);
			if (seen[id / 8] & (1u << (id % 8)))
				dups++;
			seen[id / 8] |= 1u << (id % 8);
		}
	}
	rv_out("race target: %llu RECV events, %llu twice, %llu other",
	       (unsigned long long)recvs, (unsigned long long)dups,
	       (unsigned long long)bad);
	rv_check(exists("done"), "target-racer-done", "no DIR/done within %u s",
	      target_secs);
	rv_check(recvs > 0, "target-received", "no RECV event");
	rv_check(!dups, "target-each-write-once", "%llu immediates twice",
	      (unsigned long long)dups);
	rv_check(!bad, "target-no-other-event", "%llu other events",
	      (unsigned long long)bad);
	rv_close(rv);
	return rv_check_failures() ? 1 : 0;
}

/* ---- racer -------------------------------------------------------------- */

struct round {
	struct rv *rv;
	uint32_t handle;
	int mr;
	uint8_t *src;
	uint64_t iova;
	uint32_t rkey, imm_base;
	atomic_bool stop;
	atomic_bool closed;
	atomic_uint_fast64_t posted;	/* writes the kernel took */
	atomic_uint_fast64_t ended;	/* SEND events */
	uint64_t eagain;
	int last_err;			/* the post error that stopped it */
	uint64_t bad_events;		/* SENDs of another round, twice */
	uint8_t sent[1u << SEQ_BITS];	/* SEND events per wr_id */
};

static void *poster(void *arg)
{
	struct round *r = arg;
	struct rv_write w = {
		.conn_handle = r->handle,
		.mr_handle = r->mr,
		.local_addr = (uintptr_t)r->src,
		.length = WRITE_BYTES,
		.rkey = r->rkey,
	};
	uint64_t seq = 0;
	int ret;

	while (!atomic_load(&r->stop) && seq < (1u << SEQ_BITS)) {
		w.wr_id = seq;
		w.imm = r->imm_base | (uint32_t)seq;
		w.remote_addr = r->iova + (seq % (DST_BYTES / WRITE_BYTES)) *
					  WRITE_BYTES;
		ret = rv_post_write(r->rv, &w);
		if (!ret) {
			atomic_fetch_add(&r->posted, 1);
			seq++;
			continue;
		}
		if (ret == -EAGAIN) {
			r->eagain++;
			sched_yield();
			continue;
		}
		r->last_err = -ret;
		break;
	}
	return NULL;
}

static void *reaper(void *arg)
{
	struct round *r = arg;
	struct rv_event ev[EV_BATCH];
	int n, i;

	while (!atomic_load(&r->closed)) {
		n = rv_poll_events(r->rv, ev, EV_BATCH);
		if (n == 0) {
			if (atomic_load(&r->stop) &&
			    atomic_load(&r->ended) >= atomic_load(&r->posted))
				break;
			/* EBADF once the descriptor is closed under us. */
			if (rv_wait_events(r->rv, 100) < 0 &&
			    atomic_load(&r->closed))
				break;
			continue;
		}
		/*
		 * A write's event may come before its poster counted it:
		 * each wr_id (its sequence number) must come once.
		 */
		for (i = 0; i < n; i++) {
			if (ev[i].kind == RV_EVENT_SEND &&
			    ev[i].wr_id < (1u << SEQ_BITS) &&
			    !r->sent[ev[i].wr_id]++)
				atomic_fetch_add(&r->ended, 1);
			else
				r->bad_events++;
		}
	}
	return NULL;
}

/* The errnos a post may meet after @a, besides EAGAIN. */
static bool expected_err(enum action a, int err)
{
	switch (a) {
	case ACT_CLOSE:
		return err == EBADF;
	case ACT_MUNMAP:
		return err == ESTALE;
	case ACT_DEREG:
	case ACT_DESTROY:
		return err == ENOENT;
	default:
		return false;
	}
}

static void one_round(unsigned int i, uint64_t iova, uint32_t rkey,
		      uint32_t tslot)
{
	enum action a = i % ACT_NR;
	static struct round r;
	pthread_t pt, rt;
	struct rv_evict e;
	char name[64];
	uint64_t until;
	int ret;

	memset(&r, 0, sizeof(r));
	r.iova = iova;
	r.rkey = rkey;
	snprintf(name, sizeof(name), "r%u-%s", i, action_name[a]);
	ret = join(&r.rv, &r.handle);
	if (ret) {
		rv_check(false, name, "join: %s", strerror(-ret));
		return;
	}
	r.imm_base = rv_imm(rv_slot_bits(r.rv), tslot,
			    (i & ((1u << ROUND_BITS) - 1)) << SEQ_BITS);
	r.src = mmap(NULL, SRC_BYTES, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	r.mr = r.src == MAP_FAILED ? -ENOMEM :
	       rv_reg_mem(r.rv, r.src, SRC_BYTES, 0, NULL);
	if (r.mr <= 0) {
		rv_check(false, name, "source: %s", strerror(-r.mr));
		rv_close(r.rv);
		return;
	}
	pthread_create(&pt, NULL, poster, &r);
	pthread_create(&rt, NULL, reaper, &r);
	usleep(5000 + (rv_mix64(i) % 45) * 1000);

	switch (a) {
	case ACT_CLOSE:
		atomic_store(&r.closed, true);
		close(rv_fd(r.rv));
		break;
	case ACT_MUNMAP:
		munmap(r.src, SRC_BYTES);
		r.src = NULL;
		break;
	case ACT_DEREG:
		rv_dereg_mem(r.rv, r.mr);
		memset(&e, 0, sizeof(e));
		e.size = sizeof(e);
		e.mode = RV_EVICT_AMOUNT;
		e.target_bytes = UINT64_MAX;
		rv_evict(r.rv, &e);
		break;
	case ACT_DESTROY:
		rv_conn_destroy(r.rv, r.handle);
		break;
	default:
		break;
	}
	usleep(20000);
	atomic_store(&r.stop, true);
	pthread_join(pt, NULL);

	if (a != ACT_CLOSE) {
		/* Every write posted ends in one SEND event, bounded. */
		until = rv_now_ms() + rv_scaled_ms(30000);
		while (atomic_load(&r.ended) < atomic_load(&r.posted) &&
		       rv_now_ms() < until)
			usleep(10000);
	}
	atomic_store(&r.closed, true);
	pthread_join(rt, NULL);

	rv_out("race %s: posted %llu, ended %llu, eagain %llu, stopped by %s",
	       name, (unsigned long long)atomic_load(&r.posted),
	       (unsigned long long)atomic_load(&r.ended),
	       (unsigned long long)r.eagain,
	       r.last_err ? strerrorname_np(r.last_err) : "none");
	if (a == ACT_CLOSE) {
		rv_check(!r.last_err || expected_err(a, r.last_err), name,
		      "a post failed with %s", strerrorname_np(r.last_err));
	} else {
		struct rv_stats s;

		ret = rv_stats(r.rv, &s);
		rv_check((!r.last_err || expected_err(a, r.last_err)) &&
		      atomic_load(&r.ended) == atomic_load(&r.posted) &&
		      !r.bad_events && !ret && s.inflight == 0, name,
		      "stopped by %s, %llu posted, %llu SEND events, %llu stray, inflight %u",
		      r.last_err ? strerrorname_np(r.last_err) : "none",
		      (unsigned long long)atomic_load(&r.posted),
		      (unsigned long long)atomic_load(&r.ended),
		      (unsigned long long)r.bad_events, ret ? 0 : s.inflight);
	}
	rv_close(r.rv);
	if (r.src)
		munmap(r.src, SRC_BYTES);
}

static int racer(void)
{
	unsigned long long iova;
	unsigned int rkey, tslot, i;
	struct rv *anchor;
	uint32_t handle;
	char p[512];
	uint64_t until;
	FILE *f = NULL;
	int ret;

	ret = join(&anchor, &handle);
	if (ret == -ENODEV)
		return 4;
	rv_check(!ret, "racer-connected", "%s", strerror(-ret));
	if (ret)
		return 1;
	path_of(p, sizeof(p), "target");
	until = rv_now_ms() + 120000;
	while (!(f = fopen(p, "r")) && rv_now_ms() < until)
		usleep(100000);
	if (!f || fscanf(f, "%llu %u %u", &iova, &rkey, &tslot) != 3) {
		rv_check(false, "racer-target-known", "no %s", p);
		publish("done", "1\n");
		return 1;
	}
	fclose(f);
	for (i = 0; i < rounds; i++)
		one_round(i, iova, rkey, tslot);
	publish("done", "1\n");
	rv_close(anchor);
	return rv_check_failures() ? 1 : 0;
}

int main(int argc, char **argv)
{
	int c;

	while ((c = getopt(argc, argv, "N:k:d:r:T:")) != -1) {
		switch (c) {
		case 'N': node = atoi(optarg); break;
		case 'k': key = optarg; break;
		case 'd': dir = optarg; break;
		case 'r': rounds = strtoul(optarg, NULL, 0); break;
		case 'T': target_secs = strtoul(optarg, NULL, 0); break;
		default: goto usage;
		}
	}
	if ((node != 0 && node != 1) || !key || !*key ||
	    strlen(key) > RV_JOB_KEY_MAX || !dir || optind != argc - 1 ||
	    inet_pton(AF_INET, argv[optind], &peer.sin_addr) != 1 ||
	    rounds > (1u << ROUND_BITS))
		goto usage;
	return node ? target() : racer();
usage:
	fprintf(stderr, "usage: see the comment at the top of %s\n", __FILE__);
	return 2;
}
