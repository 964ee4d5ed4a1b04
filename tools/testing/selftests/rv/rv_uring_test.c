// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv_uring_test - writes through io_uring (RV_URING_CMD_POST_WRITE) between
 * two nodes, run by vm/uring.sh on both:
 *
 *   node 1 (target) registers a buffer for remote writes, publishes its
 *   address, key and slot, and checks what arrives: every write of every
 *   phase exactly once (by its immediate), the data of each phase's region
 *   (a pattern only the sender's source holds), and nothing of the hostile
 *   commands;
 *
 *   node 0 (sender) first tries the hostile commands (a ring without
 *   SQE128, an unknown cmd_op, nonzero flags or rsvd, a file not attached,
 *   the file sent to another process that made its own ring): each must
 *   fail with its errno and post nothing.  Then it streams N writes with
 *   the ioctl, through io_uring without SQPOLL (one submit per batch) and
 *   with SQPOLL, counting its own system calls in the steady state with a
 *   perf counter on raw_syscalls:sys_enter; then 64 KiB writes through
 *   SQPOLL with no bound on those in flight, whose posts beyond the
 *   connection's credits come back EAGAIN in CQEs and are posted again;
 *   finally io_uring is disabled
 *   (kernel.io_uring_disabled where it exists, then a seccomp filter on
 *   io_uring_setup): rv_uring_open() must say EOPNOTSUPP and the ioctl
 *   path still carry a verified stream.
 *
 * Usage: rv_uring_test -D DIR -k KEY -N NODE [-n WRITES] [-T SECONDS] IP0 IP1
 * TAP on stdout (rv_check()); exit 0, 1 on a failed check, 4 to skip.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <getopt.h>
#include <linux/perf_event.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <arpa/inet.h>

#include <liburing.h>

#include "rv_test_util.h"

/* ioctl, uring, uring+SQPOLL, fallback, uring+SQPOLL beyond the credits */
#define PHASES		5
#define PH_HOSTILE	15	/* the tag of writes that must never land */
#define CHUNK		4096
#define CHUNKS		64	/* a phase's region: 256 KiB */
#define REGION		((uint64_t)CHUNK * CHUNKS)
#define SLOT_BITS	6
#define SEQ_BITS	20
#define WINDOW		48	/* writes in flight at most */
#define BATCH		16	/* writes per io_uring_submit() */
#define WARMUP		256	/* writes before the system calls count */

static const char *const phase_name[PHASES] = {
	"ioctl", "uring", "sqpoll", "fallback", "eagain"
};

static const char *dir, *key;
static int node = -1, timeout_s = 240;
static unsigned int nwrites = 3000;
static struct in_addr ips[2];
static uint64_t deadline_ms;

static struct rv *rv;
static uint32_t conn_handle;

static struct rv_share share(void)
{
	return (struct rv_share){ .dir = dir, .key = key,
				  .deadline_ms = deadline_ms };
}

static bool expired(void)
{
	return rv_now_ms() >= deadline_ms;
}

static uint64_t phase_seed(int p)
{
	return 0x7572696e67ULL * 1000 + (uint64_t)p;
}

static uint32_t user_bits(int p, uint32_t seq)
{
	return ((uint32_t)p << SEQ_BITS) | (seq & ((1u << SEQ_BITS) - 1));
}

/* ---- set-up (both nodes) -------------------------------------------- */

static int attach(void)
{
	struct rv_attach a;
	int idx, gid, ret;

	ret = rv_test_open(&rv, &idx, &gid);
	if (ret)
		return ret;
	rv_attach_job(&a, idx, gid, key);
	a.slot_bits = SLOT_BITS;
	ret = rv_attach(rv, &a);
	if (!rv_check(ret >= 0, "attach", "rv_attach: %s", strerror(-ret)))
		return 1;
	return 0;
}

static bool connect_peer(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rv_conn_query q;
	int h, ret;

	sin.sin_addr = ips[!node];
	h = rv_conn_create(rv, (struct sockaddr *)&sin, sizeof(sin), NULL);
	if (!rv_check(h > 0, "conn-create", "%s", strerror(-h)))
		return false;
	conn_handle = (uint32_t)h;
	ret = rv_conn_connect(rv, conn_handle, 60000);
	if (!rv_check(!ret, "conn-connect", "%s", strerror(-ret)))
		return false;
	ret = rv_conn_wait(rv, conn_handle, (uint32_t)rv_scaled_ms(90000), &q);
	return rv_check(ret == RV_CONN_STATE_CONNECTED, "connected",
			"state %d reason %u", ret, q.reason);
}

/* ---- the target (node 1) --------------------------------------------- */

/* Phase @p's writes all arrived once and its region holds the pattern. */
static void judge(int p, const uint8_t *buf, const unsigned int *got,
		  const unsigned int *want)
{
	char name[64];

	snprintf(name, sizeof(name), "recv-%s", phase_name[p]);
	rv_check(got[p] == want[p], name, "%u of %u writes arrived", got[p],
		 want[p]);
	snprintf(name, sizeof(name), "data-%s", phase_name[p]);
	rv_check(want[p] == 0 ||
		 rv_pat_check(buf + p * REGION, 0, REGION, phase_seed(p)) < 0,
		 name, "region %d does not hold the sender's pattern", p);
}

static int target(void)
{
	struct rv_share s = share();
	uint8_t *seen[PHASES + 1];
	unsigned int got[PHASES] = { 0 }, want[PHASES] = { 0 };
	unsigned int dup = 0, stray = 0, hostile = 0;
	bool known[PHASES] = { false };
	struct rv_reg_mem r;
	struct rv_event ev[64];
	char text[128], name[64];
	uint32_t rkey;
	uint8_t *buf;
	int h, p, i, n;

	buf = rv_map_aligned(PHASES * REGION, 2 << 20);
	if (!rv_check(buf != NULL, "target-map", "mmap failed"))
		return 1;
	h = rv_reg_mem_keys(rv, buf, PHASES * REGION, RV_ACCESS_REMOTE_WRITE,
			    &r, &rkey, 1);
	if (!rv_check(h > 0, "target-reg", "rv_reg_mem_keys: %s", strerror(-h)))
		return 1;
	snprintf(text, sizeof(text), "%llx %x %d\n",
		 (unsigned long long)r.iova, rkey, rv_slot(rv));
	if (rv_share_publish(&s, "target", text))
		return 1;
	if (!connect_peer())
		return 1;
	for (p = 0; p < PHASES; p++)
		seen[p] = calloc(nwrites, 1);

	/*
	 * Reap all along (a ring holds fewer events than a long phase has
	 * writes); judge each phase, in order, once the sender said how
	 * many it posted and that many arrived.
	 */
	p = 0;
	while (p < PHASES && !expired()) {
		n = rv_poll_events(rv, ev, 64);
		for (i = 0; i < n; i++) {
			uint32_t u = rv_imm_user(SLOT_BITS, ev[i].imm);
			uint32_t ph = u >> SEQ_BITS;
			uint32_t seq = u & ((1u << SEQ_BITS) - 1);

			if (ev[i].kind != RV_EVENT_RECV)
				continue;
			if (ph == PH_HOSTILE)
				hostile++;
			else if (ph >= PHASES || seq >= nwrites)
				stray++;
			else if (seen[ph][seq]++)
				dup++;
			else
				got[ph]++;
		}
		if (n <= 0)
			rv_wait_events(rv, 50);
		snprintf(name, sizeof(name), "posted.%d", p);
		if (!known[p] && rv_share_exists(&s, name) &&
		    rv_share_fetch(&s, name, text, sizeof(text))) {
			want[p] = (unsigned int)strtoul(text, NULL, 10);
			known[p] = true;
		}
		if (known[p] && got[p] >= want[p])
			judge(p++, buf, got, want);
	}
	for (; p < PHASES; p++) {
		rv_check(false, phase_name[p], "timed out: %s, %u of %u arrived",
			 known[p] ? "count known" : "no count from the sender",
			 got[p], want[p]);
	}
	rv_check(!dup && !stray, "recv-once", "%u twice, %u unknown", dup,
		 stray);
	rv_check(!hostile, "recv-no-hostile",
		 "%u writes of refused commands arrived", hostile);
	rv_share_publish(&s, "target-done", "x\n");
	return rv_check_failures() ? 1 : 0;
}

/* ---- counting system calls ------------------------------------------- */

static int sys_fd = -1;
/* System calls of an empty window (the disabling ioctl's own entry). */
static long long sys_base;
/* System calls per clock read: 0 with the vDSO's clock, else 1. */
static double sys_per_clock;
static volatile uint64_t clock_sink;

static int tracepoint_id(void)
{
	static const char *const paths[] = {
		"/sys/kernel/tracing/events/raw_syscalls/sys_enter/id",
		"/sys/kernel/debug/tracing/events/raw_syscalls/sys_enter/id",
	};
	char line[32];
	unsigned int i;
	FILE *f;

	for (i = 0; i < 2; i++) {
		f = fopen(paths[i], "r");
		if (!f)
			continue;
		if (fgets(line, sizeof(line), f)) {
			fclose(f);
			return atoi(line);
		}
		fclose(f);
	}
	return -1;
}

/*
 * A counter of this thread's system call entries: the kernel counts
 * them, the program makes none to count.
 */
static bool sys_counter_open(void)
{
	struct perf_event_attr a = {
		.type = PERF_TYPE_TRACEPOINT,
		.size = sizeof(a),
		.disabled = 1,
		.exclude_kernel = 0,
	};
	int id = tracepoint_id();

	if (id < 0)
		return false;
	a.config = (uint64_t)id;
	sys_fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	return sys_fd >= 0;
}

static void sys_start(void)
{
	ioctl(sys_fd, PERF_EVENT_IOC_RESET, 0);
	ioctl(sys_fd, PERF_EVENT_IOC_ENABLE, 0);
}

static long long sys_stop(void)
{
	long long v = 0;

	ioctl(sys_fd, PERF_EVENT_IOC_DISABLE, 0);
	if (read(sys_fd, &v, sizeof(v)) != sizeof(v))
		return -1;
	return v - sys_base;
}

/* ---- the sender (node 0) -------------------------------------------- */

struct target_info {
	uint64_t iova;
	uint32_t rkey;
	int slot;
};

static struct target_info tgt;
static uint8_t *src;
static uint32_t src_mr;

/*
 * Write @seq of phase @p: 4 KiB, but 64 KiB in the eagain phase, whose
 * writes must be posted faster than rxe moves them.
 */
static void make_write(struct rv_write *w, int p, uint32_t seq)
{
	uint64_t len = p == 4 ? 16 * CHUNK : CHUNK;
	uint64_t off = (seq % (REGION / len)) * len;
	/*
	 * A hostile command carries a write that would post (region 0):
	 * only the check under test may stop it.
	 */
	uint64_t region = p == PH_HOSTILE ? 0 : (uint64_t)p * REGION;

	memset(w, 0, sizeof(*w));
	w->wr_id = ((uint64_t)p << 32) | seq;
	w->local_addr = (uintptr_t)(src + region + off);
	w->length = len;
	w->conn_handle = conn_handle;
	w->mr_handle = src_mr;
	w->remote_addr = tgt.iova + region + off;
	w->rkey = tgt.rkey;
	w->imm = rv_imm(SLOT_BITS, (uint32_t)tgt.slot, user_bits(p, seq));
}

/* One SQE128 command on @ring for file @fd; the CQE's res. */
static int raw_cmd(struct io_uring *ring, int fd, uint32_t op,
		   const void *cmd, size_t len)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct io_uring_cqe *cqe;
	int ret;

	if (!sqe)
		return -ENOSPC;
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, fd, NULL, 0, 0);
	sqe->cmd_op = op;
	sqe->__pad1 = 0;
	memcpy(sqe->cmd, cmd, len);
	ret = io_uring_submit_and_wait(ring, 1);
	if (ret < 0)
		return ret;
	ret = io_uring_wait_cqe(ring, &cqe);
	if (ret < 0)
		return ret;
	ret = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return ret;
}

/*
 * The child of the another-process case: makes its own SQE128 ring,
 * receives the parent's attached file over @sock and posts a valid write
 * on it.  Exits with the CQE's -res, 253 if it was not negative, 250-252
 * if the child could not try.
 */
static void hostile_child(int sock, const struct rv_uring_post_write *cmd)
{
	char cbuf[CMSG_SPACE(sizeof(int))], b;
	struct iovec iov = { .iov_base = &b, .iov_len = 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	struct io_uring ring;
	struct cmsghdr *c;
	int fd, ret;

	if (io_uring_queue_init(8, &ring, IORING_SETUP_SQE128))
		_exit(250);
	if (recvmsg(sock, &m, 0) != 1)
		_exit(251);
	c = CMSG_FIRSTHDR(&m);
	if (!c || c->cmsg_type != SCM_RIGHTS)
		_exit(252);
	memcpy(&fd, CMSG_DATA(c), sizeof(fd));
	ret = raw_cmd(&ring, fd, RV_URING_CMD_POST_WRITE, cmd, sizeof(*cmd));
	_exit(ret < 0 && ret > -250 ? -ret : 253);
}

static int other_process(const struct rv_uring_post_write *cmd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 }, b = 'x';
	struct iovec iov = { .iov_base = &b, .iov_len = 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	int sv[2], status, fd = rv_fd(rv);
	struct cmsghdr *c;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		close(sv[0]);
		hostile_child(sv[1], cmd);
	}
	close(sv[1]);
	c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(fd));
	if (sendmsg(sv[0], &m, 0) != 1)
		return -errno;
	close(sv[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -ECHILD;
	/* 253: the child's command succeeded (posted). */
	return WEXITSTATUS(status) == 253 ? 0 : -WEXITSTATUS(status);
}

/* The hostile commands: each its errno, none posts anything. */
static void hostile(void)
{
	struct rv_uring_post_write cmd = { 0 }, bad;
	struct rv_stats before, after;
	struct io_uring r64, r128;
	struct rv_event ev[4];
	struct rv *fresh;
	int ret;

	make_write(&cmd.write, PH_HOSTILE, 0);
	rv_stats(rv, &before);
	if (!rv_check(!io_uring_queue_init(8, &r64, 0) &&
		      !io_uring_queue_init(8, &r128, IORING_SETUP_SQE128),
		      "hostile-rings", "io_uring_queue_init failed"))
		return;

	/* The cmd area of a 64-byte SQE is 16 bytes: the rest is the next. */
	ret = raw_cmd(&r64, rv_fd(rv), RV_URING_CMD_POST_WRITE, &cmd, 16);
	rv_check(ret == -EINVAL, "hostile-no-sqe128", "res %d, want %d", ret,
		 -EINVAL);
	ret = raw_cmd(&r128, rv_fd(rv), RV_URING_CMD_POST_WRITE + 1, &cmd,
		      sizeof(cmd));
	rv_check(ret == -EOPNOTSUPP, "hostile-bad-cmd-op", "res %d, want %d",
		 ret, -EOPNOTSUPP);
	ret = raw_cmd(&r128, rv_fd(rv), 0, &cmd, sizeof(cmd));
	rv_check(ret == -EOPNOTSUPP, "hostile-cmd-op-0", "res %d, want %d",
		 ret, -EOPNOTSUPP);
	bad = cmd;
	bad.flags = 1;
	ret = raw_cmd(&r128, rv_fd(rv), RV_URING_CMD_POST_WRITE, &bad,
		      sizeof(bad));
	rv_check(ret == -EINVAL, "hostile-flags", "res %d, want %d", ret,
		 -EINVAL);
	bad = cmd;
	bad.rsvd = 1;
	ret = raw_cmd(&r128, rv_fd(rv), RV_URING_CMD_POST_WRITE, &bad,
		      sizeof(bad));
	rv_check(ret == -EINVAL, "hostile-rsvd", "res %d, want %d", ret,
		 -EINVAL);
	if (!rv_open(&fresh, 0)) {
		ret = raw_cmd(&r128, rv_fd(fresh), RV_URING_CMD_POST_WRITE,
			      &cmd, sizeof(cmd));
		rv_check(ret == -ENOTCONN, "hostile-before-attach",
			 "res %d, want %d", ret, -ENOTCONN);
		rv_close(fresh);
	}
	ret = other_process(&cmd);
	rv_check(ret == -EPERM, "hostile-other-process", "res %d, want %d",
		 ret, -EPERM);
	io_uring_queue_exit(&r64);
	io_uring_queue_exit(&r128);

	/* Nothing posted: no counter moved, no event came. */
	usleep(200000);
	rv_stats(rv, &after);
	ret = rv_poll_events(rv, ev, 4);
	rv_check(after.writes_posted == before.writes_posted && ret == 0,
		 "hostile-nothing-posted", "writes_posted %llu -> %llu, %d events",
		 (unsigned long long)before.writes_posted,
		 (unsigned long long)after.writes_posted, ret);
}

/* The stream of one phase, its state between calls. */
struct stream {
	int phase;
	struct rv_uring *u;	/* NULL: the ioctl */
	uint32_t next;		/* the next new sequence number */
	uint32_t inflight;	/* posted or queued, not yet ended or refused */
	uint32_t done;		/* SEND events */
	uint32_t failed;	/* SEND events with an error */
	uint32_t reposts;	/* EAGAIN answers, posted again */
	uint32_t queued;	/* in SQEs not yet submitted */
	uint32_t submits;	/* rv_uring_submit() calls */
	uint32_t window;	/* writes in flight at most */
	uint32_t nretry;	/* refused sequence numbers to post again */
	uint32_t *retry;
	uint8_t *ended;
};

/* Reap SEND events and failed posts; no system call. */
static bool reap(struct stream *st)
{
	struct rv_uring_error errs[64];
	struct rv_event ev[64];
	int n, i;

	n = rv_poll_events(rv, ev, 64);
	for (i = 0; i < n; i++) {
		uint32_t seq = (uint32_t)ev[i].wr_id;

		if (ev[i].kind != RV_EVENT_SEND)
			continue;
		if ((ev[i].wr_id >> 32) != (uint64_t)st->phase ||
		    seq >= nwrites || st->ended[seq]++) {
			rv_check(false, "send-once", "wr_id %llx",
				 (unsigned long long)ev[i].wr_id);
			return false;
		}
		st->done++;
		st->inflight--;
		if (ev[i].status)
			st->failed++;
	}
	if (!st->u)
		return true;
	n = rv_uring_reap(st->u, errs, 64);
	for (i = 0; i < n; i++) {
		if (errs[i].error != EAGAIN) {
			rv_check(false, "uring-post", "wr_id %llx: %s",
				 (unsigned long long)errs[i].wr_id,
				 strerror(errs[i].error));
			return false;
		}
		/* Not posted (no credit yet): post it again. */
		st->reposts++;
		st->inflight--;
		st->retry[st->nretry++] = (uint32_t)errs[i].wr_id;
	}
	return true;
}

static void submit(struct stream *st)
{
	rv_uring_submit(st->u);
	st->submits++;
	st->queued = 0;
}

/*
 * Post writes up to sequence number @until keeping at most WINDOW in
 * flight, and wait for all of them.  System calls in here: the ioctls,
 * or one io_uring_enter() per BATCH (none with SQPOLL), and a clock read
 * every 2^16 polls (counted in *@clocks).
 */
static bool pump(struct stream *st, uint32_t until, unsigned int *clocks)
{
	unsigned int spins = 0;
	struct rv_write w;
	uint32_t seq;
	int ret;

	while (st->done < until) {
		while (st->inflight < st->window &&
		       (st->nretry || st->next < until)) {
			seq = st->nretry ? st->retry[st->nretry - 1] : st->next;
			make_write(&w, st->phase, seq);
			if (!st->u) {
				ret = rv_post_write(rv, &w);
				if (ret == -EAGAIN)
					break;
				/* A check per write would be a write(2) each. */
				if (ret)
					return rv_check(false, "ioctl-post", "%s",
							strerror(-ret));
			} else {
				ret = rv_uring_post_write(st->u, &w);
				if (ret == -EAGAIN)
					break;
				st->queued++;
			}
			if (st->nretry)
				st->nretry--;
			else
				st->next++;
			st->inflight++;
			if (st->u && st->queued == BATCH)
				submit(st);
		}
		/*
		 * A partial batch only when the writes already submitted run
		 * low: the batches stay near BATCH, the link busy.
		 */
		if (st->u && st->queued && st->inflight - st->queued < BATCH)
			submit(st);
		if (!reap(st))
			return false;
		if (++spins % 65536 == 0) {
			(*clocks)++;
			if (expired())
				return rv_check(false, phase_name[st->phase],
						"timed out at %u of %u", st->done,
						until);
		}
	}
	return true;
}

/* A phase: WARMUP writes, then the rest with their system calls counted. */
static void run_phase(int p, unsigned int uring_flags, bool use_uring)
{
	struct stream st = { .phase = p, .window = WINDOW };
	struct rv_share s = share();
	unsigned int clocks = 0;
	long long sys;
	char name[64], text[32];
	double per;
	int ret;

	st.ended = calloc(nwrites, 1);
	st.retry = calloc(nwrites, sizeof(*st.retry));
	/* All at once: more than the connection's credits, EAGAIN answers. */
	if (p == 4)
		st.window = nwrites;
	if (use_uring) {
		ret = rv_uring_open(rv, 256, uring_flags, &st.u);
		snprintf(name, sizeof(name), "%s-open", phase_name[p]);
		if (!rv_check(!ret, name, "rv_uring_open: %s", strerror(-ret)))
			goto out;
	}
	if (!pump(&st, WARMUP, &clocks))
		goto out;
	clocks = 0;
	st.submits = 0;
	sys_start();
	ret = pump(&st, nwrites, &clocks);
	sys = sys_stop();
	if (!ret)
		goto out;
	/* A clock read is a system call where the clock has no vDSO. */
	sys -= (long long)(clocks * sys_per_clock + 0.5);
	per = (double)sys / (nwrites - WARMUP);
	rv_out("# %s: %u writes, %u reposts, %lld system calls in the last %u: %.3f per write; %u submits (%.1f writes each), %.3f system calls per submit\n",
	       phase_name[p], nwrites, st.reposts, sys, nwrites - WARMUP, per,
	       st.submits,
	       st.submits ? (double)(nwrites - WARMUP) / st.submits : 0.0,
	       st.submits ? (double)sys / st.submits : 0.0);
	snprintf(name, sizeof(name), "%s-completed", phase_name[p]);
	rv_check(st.done == nwrites && !st.failed, name,
		 "%u events for %u writes (%u reposts), %u failed", st.done,
		 nwrites, st.reposts, st.failed);
	snprintf(name, sizeof(name), "%s-syscalls", phase_name[p]);
	if (p == 4)
		rv_check(st.reposts > 0, "eagain-reposts",
			 "no post refused with %u writes in flight at once",
			 nwrites);
	else if (!use_uring)	/* the measurement sees the ioctls */
		rv_check(per >= 0.99 && per <= 1.1, name,
			 "%.3f system calls per ioctl write", per);
	else if (!(uring_flags & RV_URING_SQPOLL))
		rv_check(sys <= st.submits && sys >= st.submits * 9 / 10 &&
			 st.submits < (nwrites - WARMUP) / 4, name,
			 "%lld system calls for %u batches", sys, st.submits);
	else
		rv_check(sys == 0, name, "%lld system calls with SQPOLL", sys);
out:
	snprintf(name, sizeof(name), "posted.%d", p);
	snprintf(text, sizeof(text), "%u\n", st.done);
	rv_share_publish(&s, name, text);
	rv_uring_close(st.u);
	free(st.retry);
	free(st.ended);
}

static int write_sysctl(const char *path, const char *v)
{
	int fd = open(path, O_WRONLY), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, v, strlen(v)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static void disabled(void)
{
	static const char sysctl[] = "/proc/sys/kernel/io_uring_disabled";
	struct rv_uring *u = NULL;
	int ret;

	if (!access(sysctl, W_OK)) {
		ret = write_sysctl(sysctl, "2");
		if (rv_check(!ret, "disabled-sysctl-set", "%s", strerror(-ret))) {
			ret = rv_uring_open(rv, 8, 0, &u);
			rv_check(ret == -EOPNOTSUPP && !u, "disabled-sysctl",
				 "rv_uring_open: %d, want %d", ret, -EOPNOTSUPP);
			rv_uring_close(u);
			u = NULL;
			write_sysctl(sysctl, "0");
		}
	} else {
		rv_check_skip("disabled-sysctl", "no %s (before 6.6)", sysctl);
	}
	/* io_uring_setup() EPERM, as a container's seccomp profile. */
	ret = rv_deny_syscall(__NR_io_uring_setup, EPERM);
	if (!rv_check(!ret, "seccomp", "%s", strerror(-ret)))
		return;
	ret = rv_uring_open(rv, 8, 0, &u);
	rv_check(ret == -EOPNOTSUPP && !u, "disabled-seccomp",
		 "rv_uring_open: %d, want %d", ret, -EOPNOTSUPP);
	rv_uring_close(u);
	/* The ioctls still carry a verified stream. */
	run_phase(3, 0, false);
}

static int sender(void)
{
	struct rv_share s = share();
	char text[128];
	unsigned long long iova;
	int mr, p;

	if (!rv_share_fetch(&s, "target", text, sizeof(text)) ||
	    sscanf(text, "%llx %x %d", &iova, &tgt.rkey, &tgt.slot) != 3) {
		rv_check(false, "target-info", "nothing from the target");
		return 1;
	}
	tgt.iova = iova;
	src = rv_map_aligned(PHASES * REGION, 2 << 20);
	if (!rv_check(src != NULL, "source-map", "mmap failed"))
		return 1;
	for (p = 0; p < PHASES; p++)
		rv_pat_fill(src + p * REGION, REGION, phase_seed(p));
	mr = rv_reg_mem(rv, src, PHASES * REGION, 0, NULL);
	if (!rv_check(mr > 0, "source-reg", "rv_reg_mem: %s", strerror(-mr)))
		return 1;
	src_mr = (uint32_t)mr;
	if (!connect_peer())
		return 1;
	if (!rv_check(sys_counter_open(), "syscall-counter",
		      "perf_event_open(raw_syscalls:sys_enter): %s",
		      strerror(errno)))
		return 1;
	sys_start();
	sys_base = 0;
	sys_base = sys_stop();
	sys_start();
	for (p = 0; p < 100; p++)
		clock_sink = rv_now_ms();
	sys_per_clock = sys_stop() / 100.0;
	rv_out("# an empty window counts %lld system calls, a clock read %.2f\n",
	       sys_base, sys_per_clock);

	hostile();
	run_phase(0, 0, false);
	run_phase(1, 0, true);
	run_phase(2, RV_URING_SQPOLL, true);
	/* EAGAIN completed by the command, not retried by io_uring. */
	run_phase(4, RV_URING_SQPOLL, true);
	disabled();
	/* The target takes the last events before the connection goes. */
	rv_share_fetch(&s, "target-done", text, sizeof(text));
	return rv_check_failures() ? 1 : 0;
}

int main(int argc, char **argv)
{
	int opt, ret;

	while ((opt = getopt(argc, argv, "D:k:N:n:T:")) != -1) {
		switch (opt) {
		case 'D': dir = optarg; break;
		case 'k': key = optarg; break;
		case 'N': node = atoi(optarg); break;
		case 'n': nwrites = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'T': timeout_s = atoi(optarg); break;
		default: return 2;
		}
	}
	if (!dir || !key || node < 0 || node > 1 || argc - optind != 2 ||
	    nwrites <= WARMUP || nwrites >= 1u << SEQ_BITS ||
	    !inet_aton(argv[optind], &ips[0]) ||
	    !inet_aton(argv[optind + 1], &ips[1])) {
		fprintf(stderr, "usage: %s -D DIR -k KEY -N 0|1 [-n WRITES] [-T S] IP0 IP1\n",
			argv[0]);
		return 2;
	}
	deadline_ms = rv_now_ms() + (uint64_t)timeout_s * 1000;
	setvbuf(stdout, NULL, _IONBF, 0);
	ret = attach();
	if (ret)
		return ret;
	ret = node ? target() : sender();
	rv_close(rv);
	return ret;
}
