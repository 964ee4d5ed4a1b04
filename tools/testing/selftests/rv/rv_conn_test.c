// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv_conn_test - one process of a job that connects to remote nodes, for
 * the multi-node connection tests (vm/conn.sh drives many of them).
 *
 *   rv_conn_test -k KEY [-n NUM_CONN] [-d DELAY_MS] [-t TIMEOUT_MS]
 *                [-e EXPECT] [-s STATUS_FILE] [-1] PEER...
 *   rv_conn_test -k KEY [-n NUM_CONN] -S MS PEER
 *   rv_conn_test -k KEY [-n NUM_CONN] -0 [-s STATUS_FILE] PEER...
 *
 * -0: create the connections but never connect them; their state is
 * expected to stay "idle".  -H MS: the job's heartbeat_ms (ATTACH; any
 * of the forms).
 *
 * -S: a storm of connection creation: for MS milliseconds, create a
 * connection to PEER and destroy it again, never connecting; prints
 * "storm N" (the number of create/destroy pairs) and exits 0, or 1 on
 * the first failed call.
 *
 * Attaches to $RV_IBDEV port 1 with the port's first RoCE v2 IPv4 GID and
 * job key KEY, sleeps DELAY_MS, creates and connects a connection to each
 * PEER (a.b.c.d or a.b.c.d:port) with TIMEOUT_MS, waits for each to settle
 * (at most TIMEOUT_MS + 10 s), and writes one line per peer to
 * STATUS_FILE (atomically, via rename; stdout without -s) followed by "result ok" or
 * "result fail".  EXPECT is "connected" (default) or the name of the
 * error reason expected (e.g. "unreachable").  Exit status 0 when every
 * peer met EXPECT, 1 otherwise, 4 (kselftest skip) without a device.
 *
 * Without -1 the process then stays: SIGUSR1 re-queries every connection
 * and rewrites STATUS_FILE, SIGTERM or SIGINT exits (closing the file,
 * which drops its handles).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rv_test_util.h"

#define MAX_PEERS 8

struct peer {
	const char *arg;
	struct sockaddr_in sin;
	int handle;
	int ret;		/* last librv error, 0 if none */
	uint64_t ms;		/* time from connect to settled */
	struct rv_conn_query q;
};

static struct peer peers[MAX_PEERS];
static int npeers;
static const char *status_file;
static const char *expect = "connected";

static int parse_peer(struct peer *p, const char *arg)
{
	char ip[64];
	const char *colon = strchr(arg, ':');
	size_t len = colon ? (size_t)(colon - arg) : strlen(arg);

	if (len >= sizeof(ip))
		return -1;
	memcpy(ip, arg, len);
	ip[len] = 0;
	p->arg = arg;
	p->sin.sin_family = AF_INET;
	p->sin.sin_port = htons(colon ? atoi(colon + 1) : 0);
	return inet_pton(AF_INET, ip, &p->sin.sin_addr) == 1 ? 0 : -1;
}

static bool peer_ok(const struct peer *p)
{
	if (p->ret)
		return false;
	if (!strcmp(expect, "connected"))
		return p->q.state == RV_CONN_STATE_CONNECTED &&
		       p->q.connected == p->q.num_conn;
	if (!strcmp(expect, "idle"))
		return p->q.state == RV_CONN_STATE_IDLE;
	return p->q.state == RV_CONN_STATE_ERROR &&
	       !strcmp(expect, rv_conn_reason_str(p->q.reason));
}

static int write_status(void)
{
	char tmp[4096];
	bool ok = true;
	FILE *f;
	int i;

	if (status_file) {
		snprintf(tmp, sizeof(tmp), "%s.tmp", status_file);
		f = fopen(tmp, "w");
	} else {
		f = stdout;
	}
	if (!f)
		return -1;
	for (i = 0; i < npeers; i++) {
		const struct peer *p = &peers[i];

		fprintf(f, "peer %s pid %d err %d conn_id %u state %s reason %s generation %llu connected %u/%u role %s handles %u attempts %llu rejects %u ms %llu\n",
			p->arg, getpid(), p->ret, p->q.conn_id,
			rv_conn_state_str(p->q.state),
			rv_conn_reason_str(p->q.reason),
			(unsigned long long)p->q.generation, p->q.connected,
			p->q.num_conn,
			p->q.role == RV_CONN_ROLE_CLIENT ? "client" : "server",
			p->q.handles, (unsigned long long)p->q.attempts,
			p->q.rejects, (unsigned long long)p->ms);
		ok = ok && peer_ok(p);
	}
	fprintf(f, "result %s\n", ok ? "ok" : "fail");
	if (!status_file) {
		fflush(f);
		return ok ? 0 : 1;
	}
	fclose(f);
	rename(tmp, status_file);
	return ok ? 0 : 1;
}

static void usage(void)
{
	fprintf(stderr, "usage: rv_conn_test -k KEY [-n NUM_CONN] [-d DELAY_MS] [-t TIMEOUT_MS] [-e EXPECT] [-s STATUS_FILE] [-1] PEER...\n"
		"       rv_conn_test -k KEY [-n NUM_CONN] -S MS PEER\n"
		"       rv_conn_test -k KEY [-n NUM_CONN] -0 [-s STATUS_FILE] PEER...\n");
	exit(2);
}

static int storm(struct rv *rv, struct peer *p, uint32_t ms)
{
	uint64_t end = rv_now_ms() + ms, n = 0;
	int handle, ret;

	while (rv_now_ms() < end) {
		handle = rv_conn_create(rv, (struct sockaddr *)&p->sin,
					sizeof(p->sin), NULL);
		if (handle < 0) {
			fprintf(stderr, "rv_conn_create: %s\n",
				strerror(-handle));
			return 1;
		}
		ret = rv_conn_destroy(rv, handle);
		if (ret < 0) {
			fprintf(stderr, "rv_conn_destroy: %s\n",
				strerror(-ret));
			return 1;
		}
		n++;
	}
	printf("storm %llu\n", (unsigned long long)n);
	return 0;
}

int main(int argc, char **argv)
{
	uint32_t num_conn = 0, delay_ms = 0, timeout_ms = 20000, storm_ms = 0;
	uint32_t heartbeat_ms = 0;
	const char *key = NULL;
	bool once = false, no_connect = false;
	struct rv_attach a;
	struct rv *rv;
	sigset_t set;
	int c, i, ret, idx, gid, sig, rc;

	while ((c = getopt(argc, argv, "k:n:d:t:e:s:S:H:01")) != -1) {
		switch (c) {
		case 'k': key = optarg; break;
		case 'n': num_conn = atoi(optarg); break;
		case 'd': delay_ms = atoi(optarg); break;
		case 't': timeout_ms = atoi(optarg); break;
		case 'e': expect = optarg; break;
		case 's': status_file = optarg; break;
		case 'S': storm_ms = atoi(optarg); break;
		case 'H': heartbeat_ms = strtoul(optarg, NULL, 0); break;
		case '0': no_connect = true; expect = "idle"; break;
		case '1': once = true; break;
		default: usage();
		}
	}
	if (!key || !*key || strlen(key) > RV_JOB_KEY_MAX || optind >= argc)
		usage();
	for (i = optind; i < argc && npeers < MAX_PEERS; i++)
		if (parse_peer(&peers[npeers++], argv[i]))
			usage();

	/* Signals are taken synchronously by sigwait() below. */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);

	ret = rv_test_open(&rv, &idx, &gid);
	if (ret)
		return ret;
	rv_attach_job(&a, idx, gid, key);
	a.num_conn = num_conn;
	a.heartbeat_ms = heartbeat_ms;
	ret = rv_attach(rv, &a);
	if (ret < 0) {
		fprintf(stderr, "rv_attach: %s\n", strerror(-ret));
		return 1;
	}
	if (storm_ms)
		return storm(rv, &peers[0], storm_ms);
	if (delay_ms)
		usleep(delay_ms * 1000);

	for (i = 0; i < npeers; i++) {
		struct peer *p = &peers[i];

		p->handle = rv_conn_create(rv, (struct sockaddr *)&p->sin,
					   sizeof(p->sin), NULL);
		if (p->handle < 0) {
			p->ret = p->handle;
			continue;
		}
		if (no_connect) {
			p->ret = rv_conn_query(rv, p->handle, &p->q);
			continue;
		}
		p->ret = rv_conn_connect(rv, p->handle, timeout_ms);
		p->ms = rv_now_ms();
	}
	for (i = 0; i < npeers; i++) {
		struct peer *p = &peers[i];

		if (p->ret || no_connect)
			continue;
		ret = rv_conn_wait(rv, p->handle, timeout_ms + 10000, &p->q);
		p->ms = rv_now_ms() - p->ms;
		if (ret < 0 && ret != -ETIMEDOUT)
			p->ret = ret;
	}
	rc = write_status();
	while (!once) {
		if (sigwait(&set, &sig))
			break;
		if (sig != SIGUSR1)
			break;
		for (i = 0; i < npeers; i++)
			if (peers[i].handle > 0)
				peers[i].ret = rv_conn_query(rv,
							     peers[i].handle,
							     &peers[i].q);
		rc = write_status();
	}
	rv_close(rv);
	return rc;
}
