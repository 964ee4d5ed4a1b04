/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rv_fi_util.h - what rv_fi_test's cases share, defined in rv_fi_util.c:
 * TAP output, the control connection to the other node, the libfabric
 * objects, data patterns, bounded completion waits, send and receive
 * helpers and rv's counters of this process.
 */
#ifndef RV_FI_UTIL_H
#define RV_FI_UTIL_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <rdma/rv_user_ioctls.h>
#include <rv/librv.h>

#define WAIT_MS		60000
#define BIG		(16u << 20)

extern bool server;
extern int ctl;
extern int tap_n, tap_failed;

extern struct fi_info *info;
extern struct fid_fabric *fabric;
extern struct fid_domain *domain;
extern struct fid_av *av;
extern struct fid_cq *txcq, *rxcq;
extern struct fid_ep *ep;
extern fi_addr_t peer, fake;		/* fake: an address nobody uses */
extern char *sbuf, *rbuf;		/* BIG bytes each */
extern size_t threshold;		/* FI_RV_RNDV_THRESHOLD */
extern char self_name[64], peer_name[64];	/* fi_getname()s */
extern size_t name_len;

/* ---- TAP ----------------------------------------------------------------- */

void diag(const char *fmt, ...);
/* One result; @why (printf format) explains a failure. */
bool result(bool ok, const char *name, const char *why, ...);
void die(const char *what, long err);
uint64_t now_ms(void);

/* ---- control connection -------------------------------------------------- */

void ctl_write(const void *p, size_t n);
/* Reads @n bytes, driving the provider's progress meanwhile. */
void ctl_read(void *p, size_t n);
/* Both sides are here (progressing while it waits). */
void sync_peer(void);
/* sync_peer() without a provider call: the peer sees this side stopped. */
void sync_peer_stopped(void);
void ctl_connect(const char *host, const char *port);

/* ---- libfabric set-up ---------------------------------------------------- */

/* The fabric, domain, AV, CQs and endpoint above; the peer in the AV. */
void setup(void);
/* Hints for the rv provider, FI_EP_RDM, with @format and @caps. */
struct fi_info *addr_hints(uint32_t format, uint64_t caps);

/* ---- helpers ------------------------------------------------------------- */

void fill(char *p, size_t len, uint64_t seed);
/* Index of the first wrong byte, or -1. */
long check(const char *p, size_t len, uint64_t seed);
/* 1 with @e (and @src), 0 with @err (error completion), or -FI_ETIMEDOUT. */
int wait_comp(struct fid_cq *cq, struct fi_cq_tagged_entry *e,
	      fi_addr_t *src, struct fi_cq_err_entry *err);

/* Posts with a retry on -FI_EAGAIN (never expected here). */
#define POST(call) ({ ssize_t __r; \
	while ((__r = (call)) == -FI_EAGAIN) fi_cq_read(txcq, NULL, 0); \
	__r; })

int tsend(const void *buf, size_t len, uint64_t tag, void *ctx);
int trecv(void *buf, size_t len, fi_addr_t src, uint64_t tag,
	  uint64_t ignore, void *ctx);
/* Sends and waits for its completion; returns 0 or a negative error. */
int send_wait(const void *buf, size_t len, uint64_t tag);
/* fi_send to @to and waits for its completion; 0 or -1. */
int msend_wait(const void *buf, size_t len, fi_addr_t to);
/* A receives @n tags from @t0 on, in any order; true if all came. */
bool recv_tags(uint64_t t0, int n);

/* ---- many messages in flight --------------------------------------------- */

/* What reap() waits for and what it found. */
struct reap {
	const char *what;		/* names a bad message in diag() */
	struct fi_cq_tagged_entry *rctx;	/* the receives' contexts */
	size_t n;			/* sends and receives each */
	/* A successful receive of rctx[i]: false if its message is bad. */
	bool (*recv_ok)(size_t i, const struct fi_cq_tagged_entry *e,
			void *arg);
	void *arg;
	size_t nsend, nrecv, bad;	/* completions read, bad messages */
};

/*
 * Reads both CQs until n sends and n receives have completed or @ms
 * passed; true if none was an error entry and none was bad.
 */
bool reap(struct reap *r, uint64_t ms);

/* ---- rv's counters of this process --------------------------------------- */

bool rv_self_record(struct rv_dump_proc *sum);
bool rv_counters(uint64_t *writes, uint64_t *recvs);

#endif /* RV_FI_UTIL_H */
