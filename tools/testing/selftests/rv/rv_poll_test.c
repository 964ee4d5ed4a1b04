// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv_poll_test - poll() wakeups under a long stream of events (2 nodes).
 *
 *   rv_poll_test -N NODE [-n EVENTS] [-T SECONDS] [-k END_SECONDS] [-b BATCH]
 *                [-c CONSUMERS] PEER_IP
 *
 * Node 0 posts EVENTS zero-byte writes with immediate to node 1 from one
 * thread, at most INFLIGHT at a time, while another thread sleeps in
 * rv_wait_events() (poll()) until their SEND events arrive and consumes
 * them; on node 1 a thread waits the same way for the RECV events.  The
 * consumers sleep whenever their ring is empty, so each of the EVENTS
 * events can race a poll() going to sleep: a wait that times out
 * (WAIT_MS) with events pending is a missed wakeup.
 *
 * -b: the consumers take at most BATCH events per rv_poll_events() (1 to
 * 64, default 64).  With -b 1 a consumer goes back to poll() after
 * every event, so the posts that race a consumer taking the last event
 * and going to sleep are as many as possible.  Prints kselftest TAP
 * results and a "poll" summary; exit status 0 when
 * every check passed, 4 (kselftest skip) without a device.
 *
 * -c: CONSUMERS threads (1 to 4, default 1) take events from the one ring
 * at once, each sleeping in poll() when it finds it empty: every event
 * must still reach exactly one of them (librv's claim of the consumer
 * index).
 *
 * -k (node 0): node 1 is killed mid-stream, so the stream cannot finish.
 * Once a post fails, or the time is up, every write posted must still
 * end in exactly one SEND event, an error status being a valid end,
 * within END_SECONDS: the writes of a QP torn down under them (its
 * drain timed out, say) must not stay pending while the connection
 * lives.  Checks "ended" and "no-missed-wakeup" only.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rv_test_util.h"

#define INFLIGHT	256
#define WAIT_MS		5000
#define BATCH		64

static struct rv *rv;
static uint32_t handle;
static uint64_t events = 1000000;
static uint64_t deadline_ms;
static int failures;
static uint64_t end_seconds;	/* -k: the peer is killed mid-stream */
static unsigned int batch = BATCH;	/* -b: events per rv_poll_events() */
static unsigned int consumers = 1;	/* -c: threads reaping the ring */

#define MAX_CONSUMERS	4
/* The counters below are shared by the consumer threads. */
#define ADD(field, n) __atomic_add_fetch(&(field), (n), __ATOMIC_RELAXED)
#define LOAD(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)

/* What the consumers saw (updated with ADD()). */
static struct {
	uint8_t *seen;		/* one byte per event: wr_id or imm */
	uint64_t consumed;
	uint64_t dups;
	uint64_t bad;		/* wrong kind, error status, out of range */
	uint64_t errors;	/* -k: writes that ended with an error */
	uint64_t waits;		/* rv_wait_events() calls */
	uint64_t missed;	/* waits that timed out with events pending */
	uint64_t timeouts;	/* waits that timed out with nothing pending */
	bool late;		/* ran past the deadline */
} C;

/* Producer's flow control: posted - consumed stays under INFLIGHT. */
static pthread_mutex_t flow_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t flow_cond = PTHREAD_COND_INITIALIZER;
static uint64_t flow_consumed;
static bool flow_stop;		/* the consumer gave up */
static uint64_t flow_target;	/* events the consumer waits for */
static uint64_t flow_end_ms;	/* -k: when the posted writes must have ended */

/* One TAP result; what was seen is said whether it passed or not. */
static void check(bool ok, const char *name, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (ok)
		rv_out("# %s: %s", name, why);
	rv_check(ok, name, "%s", why);
	failures += !ok;
}

static void account(const struct rv_event *ev, uint32_t kind)
{
	uint64_t id = kind == RV_EVENT_SEND ? ev->wr_id : ev->imm;

	if (end_seconds && ev->kind == kind && ev->status && id < events)
		ADD(C.errors, 1);
	else if (ev->kind != kind || ev->status || id >= events) {
		ADD(C.bad, 1);
		return;
	}
	if (__atomic_fetch_add(&C.seen[id], 1, __ATOMIC_RELAXED))
		ADD(C.dups, 1);
}

/* pthread_cond_wait() for at most @ms; false when the time ran out. */
static bool cond_wait_ms(pthread_cond_t *cond, pthread_mutex_t *lock,
			 unsigned int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return pthread_cond_timedwait(cond, lock, &ts) != ETIMEDOUT;
}

static void flow_update(uint64_t consumed, bool stop)
{
	pthread_mutex_lock(&flow_lock);
	/* Consumers report in any order: keep the largest count. */
	if (consumed > flow_consumed)
		flow_consumed = consumed;
	flow_stop |= stop;
	pthread_cond_signal(&flow_cond);
	pthread_mutex_unlock(&flow_lock);
}

static uint64_t target(void)
{
	uint64_t t;

	pthread_mutex_lock(&flow_lock);
	t = flow_target;
	pthread_mutex_unlock(&flow_lock);
	return t;
}

/*
 * When the consumer gives up.  With -k, not before the producer has
 * stopped (it stops by deadline_ms at the latest), then END_SECONDS later.
 */
static uint64_t consumer_deadline(void)
{
	uint64_t t = deadline_ms;

	if (end_seconds) {
		pthread_mutex_lock(&flow_lock);
		t = flow_end_ms;
		pthread_mutex_unlock(&flow_lock);
	}
	return t;
}

/* -k: the producer stopped after @posted writes; wait for their ends. */
static void set_target(uint64_t posted)
{
	pthread_mutex_lock(&flow_lock);
	flow_target = posted;
	flow_end_ms = rv_now_ms() + end_seconds * 1000;
	pthread_mutex_unlock(&flow_lock);
}

static void *consumer(void *arg)
{
	uint32_t kind = (uintptr_t)arg;
	struct rv_event ev[BATCH];
	uint64_t consumed = 0;
	int n = 0, i;

	while (LOAD(C.consumed) < target()) {
		n = rv_poll_events(rv, ev, batch);
		if (!n) {
			if (rv_now_ms() > consumer_deadline()) {
				__atomic_store_n(&C.late, true,
						 __ATOMIC_RELAXED);
				break;
			}
			ADD(C.waits, 1);
			n = rv_wait_events(rv, WAIT_MS);
			if (n > 0)
				continue;
			if (n < 0)
				break;
			/* Slept its whole time: was anything there? */
			n = rv_poll_events(rv, ev, batch);
			if (!n) {
				ADD(C.timeouts, 1);
				continue;
			}
			if (n > 0)
				ADD(C.missed, 1);
		}
		if (n < 0)
			break;
		for (i = 0; i < n; i++)
			account(&ev[i], kind);
		consumed = ADD(C.consumed, (uint64_t)n);
		flow_update(consumed, false);
	}
	if (n < 0)
		ADD(C.bad, 1);
	/* Frees a producer waiting for room, whatever happened. */
	flow_update(LOAD(C.consumed), true);
	return NULL;
}

/*
 * Node 0: EVENTS writes, each ending in a SEND event here and a RECV
 * there.  *@posted: how many were posted.
 */
static int produce(uint64_t *eagain, uint64_t *posted)
{
	struct rv_write w = { .conn_handle = handle };
	uint64_t i;
	int ret;

	bool stop;

	for (i = 0; i < events; i++) {
		pthread_mutex_lock(&flow_lock);
		while (!flow_stop && i - flow_consumed >= INFLIGHT)
			if (!cond_wait_ms(&flow_cond, &flow_lock, 1000) &&
			    rv_now_ms() > deadline_ms) {
				/* Writes that never end (-k) block us here. */
				pthread_mutex_unlock(&flow_lock);
				return -ETIMEDOUT;
			}
		stop = flow_stop;
		pthread_mutex_unlock(&flow_lock);
		if (stop)
			return -ECANCELED;
		w.wr_id = i;
		w.imm = i;	/* slot 0 of node 1: top bits 0 */
		while ((ret = rv_post_write(rv, &w)) == -EAGAIN) {
			++*eagain;
			if (rv_now_ms() > deadline_ms)
				return -ETIMEDOUT;
			sched_yield();
		}
		if (ret)
			return ret;
		++*posted;
	}
	return 0;
}

static int connect_peer(const char *peer_ip)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rv_conn_query q;
	int ret;

	if (inet_pton(AF_INET, peer_ip, &sin.sin_addr) != 1)
		return -EINVAL;
	ret = rv_conn_create(rv, (struct sockaddr *)&sin, sizeof(sin), NULL);
	if (ret < 0)
		return ret;
	handle = ret;
	ret = rv_conn_connect(rv, handle, 60000);
	if (ret)
		return ret;
	ret = rv_conn_wait(rv, handle, 70000, &q);
	if (ret < 0)
		return ret;
	return q.state == RV_CONN_STATE_CONNECTED ? 0 : -ECONNREFUSED;
}

int main(int argc, char **argv)
{
	uint64_t t0, ms, eagain = 0, seconds = 600, i, missing = 0, posted = 0;
	struct rv_attach a;
	pthread_t thr[MAX_CONSUMERS];
	unsigned int t;
	int c, node = -1, idx, gid, ret;

	while ((c = getopt(argc, argv, "N:n:T:k:b:c:")) != -1) {
		switch (c) {
		case 'N': node = atoi(optarg); break;
		case 'k': end_seconds = strtoull(optarg, NULL, 0); break;
		case 'n': events = strtoull(optarg, NULL, 0); break;
		case 'T': seconds = strtoull(optarg, NULL, 0); break;
		case 'b': batch = strtoul(optarg, NULL, 0); break;
		case 'c': consumers = strtoul(optarg, NULL, 0); break;
		default: goto usage;
		}
	}
	if ((node != 0 && node != 1) || optind + 1 != argc || !events ||
	    events >= 1ULL << 26 || (end_seconds && node) || !batch ||
	    batch > BATCH || !consumers || consumers > MAX_CONSUMERS)
		goto usage;

	ret = rv_test_open(&rv, &idx, &gid);
	if (ret)
		return ret;
	rv_attach_init(&a, idx, 4);
	a.gid_index = gid;
	memcpy(a.job_key, "poll", 4);
	ret = rv_attach(rv, &a);
	check(!ret && rv_slot(rv) == 0, "attach", "ret %d slot %d", ret,
	      rv_slot(rv));
	if (ret)
		return 1;
	ret = connect_peer(argv[optind]);
	check(!ret, "connect", "%s", strerror(-ret));
	if (ret)
		return 1;

	C.seen = calloc(events, 1);
	if (!C.seen)
		return 1;
	t0 = rv_now_ms();
	deadline_ms = t0 + seconds * 1000;
	flow_target = events;
	flow_end_ms = UINT64_MAX;
	for (t = 0; t < consumers; t++)
		pthread_create(&thr[t], NULL, consumer,
			       (void *)(uintptr_t)(node ? RV_EVENT_RECV :
						   RV_EVENT_SEND));
	ret = node ? 0 : produce(&eagain, &posted);
	if (end_seconds)
		set_target(posted);
	for (t = 0; t < consumers; t++)
		pthread_join(thr[t], NULL);
	ms = rv_now_ms() - t0;
	for (i = 0; i < (end_seconds ? posted : events); i++)
		missing += !C.seen[i];

	printf("poll node%d: %llu events in %llu ms (up to %u per read, %u consumers), %llu waits in poll(), %llu idle timeouts, %llu EAGAIN\n",
	       node, (unsigned long long)C.consumed, (unsigned long long)ms,
	       batch, consumers,
	       (unsigned long long)C.waits, (unsigned long long)C.timeouts,
	       (unsigned long long)eagain);
	if (end_seconds) {
		/* The stream was cut: only the ends of what was posted count. */
		printf("# stream stopped after %llu writes: %s\n",
		       (unsigned long long)posted, strerror(-ret));
		check(!missing && !C.dups && !C.bad, "ended",
		      "%llu posted, %llu ended (%llu with an error), %llu never ended, %llu twice, %llu wrong, within %llu s",
		      (unsigned long long)posted,
		      (unsigned long long)C.consumed,
		      (unsigned long long)C.errors,
		      (unsigned long long)missing, (unsigned long long)C.dups,
		      (unsigned long long)C.bad,
		      (unsigned long long)end_seconds);
		check(!C.missed, "no-missed-wakeup",
		      "%llu waits timed out with events pending",
		      (unsigned long long)C.missed);
		goto out;
	}
	check(!ret, "posted", "%s", strerror(-ret));
	check(!missing && !C.dups && !C.bad, "events",
	      "%llu missing, %llu twice, %llu wrong", (unsigned long long)missing,
	      (unsigned long long)C.dups, (unsigned long long)C.bad);
	check(!C.missed, "no-missed-wakeup",
	      "%llu waits timed out with events pending",
	      (unsigned long long)C.missed);
	check(!C.late, "in-time", "%llu ms, budget %llu s",
	      (unsigned long long)ms, (unsigned long long)seconds);
	/* Both nodes stay until node 1 has everything: keep the QPs up. */
	if (!node)
		sleep(2);
out:
	rv_close(rv);
	free(C.seen);
	return failures ? 1 : 0;

usage:
	fprintf(stderr, "usage: rv_poll_test -N 0|1 [-n EVENTS] [-T SECONDS] [-k END_SECONDS] [-b BATCH] [-c CONSUMERS] PEER_IP\n");
	return 2;
}
