/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rvfi: the libfabric provider "rv" (librv-fi.so), internal header.
 *
 * Object model: fabric -> domain -> {endpoint, CQ, AV, EQ}.  One mutex per
 * domain (struct rvfi_domain.lock) protects every object of the domain and
 * every queue hanging off them; progress is domain-wide (all endpoints'
 * sockets and rv event rings), driven from CQ reads and from the data
 * calls.  That makes FI_THREAD_SAFE true at the cost of one lock, which is
 * fine for the consumers this provider is for (MPI's MTL serialises its
 * calls anyway).
 *
 * No call sleeps or waits for the network under that lock, with one
 * exception avoided on purpose: closing an endpoint's rv file, which
 * waits for its writes in flight, runs after the endpoint left the
 * domain, without the lock (ep_close()).
 *
 * Wire: small messages and the rendezvous control messages go over one
 * TCP connection per direction between two endpoints (see tcp.c); large
 * messages over rv's RDMA WRITE with immediate (see rndv.c).
 */
#ifndef RVFI_H
#define RVFI_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include <rv/librv.h>

#define RVFI_NAME		"rv"
#define RVFI_PROV_VERSION	FI_VERSION(1, 0)
#define RVFI_FI_VERSION		FI_VERSION(1, 17)
#define RVFI_IOV_LIMIT		1
#define RVFI_INJECT_SIZE	1024
#define RVFI_QUEUE_SIZE		4096
#define RVFI_MAX_MSG_SIZE	((size_t)RV_MAX_WRITE_BYTES)
#define RVFI_CQ_DATA_SIZE	8
#define RVFI_DEF_THRESHOLD	16384
/*
 * The largest EAGER frame a receiver accepts, whatever the sender's
 * threshold: larger messages, to any peer, take the rendezvous, whose data
 * is bounded by the receive it matched.  The threshold is clamped to it.
 */
#define RVFI_MAX_EAGER		((size_t)1 << 20)
#define RVFI_ADDR_VERSION	2
/* FI_OPT_MIN_MULTI_RECV's default: an inject-sized message still fits. */
#define RVFI_MIN_MULTI_RECV	RVFI_INJECT_SIZE
/*
 * Large messages to another node: the sender registers its buffer in
 * windows of about RVFI_REG_WINDOW bytes (the next one while the writes of
 * the current one fly) and writes it in pieces of 1 << wshift bytes, the
 * receiver's choice (CTS @data) between RVFI_WSHIFT_MIN and
 * RVFI_WSHIFT_MAX, so that one message spreads over the connection's QPs.
 */
#define RVFI_REG_WINDOW		((size_t)4 << 20)
#define RVFI_WSHIFT_MIN		16
#define RVFI_WSHIFT_MAX		20
/*
 * Event ring entries kept free of any reservation: a write that completed
 * in error may still have landed, and its RECV then comes for a receive
 * that already released its reservation (completed over TCP).
 */
#define RVFI_RING_SLACK		8
/* FI_RV_SQ_RETRY_US: default and largest */
#define RVFI_SQ_RETRY_US	200
#define RVFI_SQ_RETRY_US_MAX	1000000

extern struct fi_provider rvfi_prov;

#define RVFI_WARN(...)	FI_WARN(&rvfi_prov, FI_LOG_CORE, __VA_ARGS__)
#define RVFI_INFO(...)	FI_INFO(&rvfi_prov, FI_LOG_CORE, __VA_ARGS__)
#define RVFI_DBG(...)	FI_DBG(&rvfi_prov, FI_LOG_CORE, __VA_ARGS__)

/* fabric.h brings container_of() */

/* ---- a minimal intrusive list -------------------------------------------- */

struct rvfi_list {
	struct rvfi_list *next, *prev;
};

static inline void rvfi_list_init(struct rvfi_list *h)
{
	h->next = h->prev = h;
}

static inline bool rvfi_list_empty(const struct rvfi_list *h)
{
	return h->next == h;
}

static inline void rvfi_list_add_tail(struct rvfi_list *h, struct rvfi_list *n)
{
	n->prev = h->prev;
	n->next = h;
	h->prev->next = n;
	h->prev = n;
}

static inline void rvfi_list_del(struct rvfi_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = n;
}

#define rvfi_list_for_each_safe(pos, tmp, head) \
	for (pos = (head)->next, tmp = pos->next; pos != (head); \
	     pos = tmp, tmp = pos->next)

/* ---- the endpoint address (fi_getname) ----------------------------------- */

/*
 * What a peer needs to reach an endpoint: the node's IPv4 address (rv's
 * connection and the TCP socket), the endpoint's TCP port and rv slot, and
 * a per-endpoint identity (pid and a random nonce) so that a restarted
 * process on the same port is a different endpoint.  The nonce is also
 * the endpoint's admission ticket: a connection's HELLO must carry it (see
 * tcp.c), so only those the application gave the address to can send to
 * the endpoint.  Multi-byte fields are big-endian: the address is opaque
 * bytes to the application and may be exchanged between hosts.  @version
 * and @len (the struct's size) are checked wherever an address comes in
 * (fi_av_insert, HELLO): another layout is refused, not misread.
 */
struct rvfi_addr {
	uint8_t version;	/* RVFI_ADDR_VERSION */
	uint8_t len;		/* sizeof(struct rvfi_addr) */
	uint16_t port;
	uint32_t ip;
	uint32_t slot;
	uint32_t pid;
	uint64_t nonce;		/* getrandom(2) */
};

static inline bool rvfi_addr_valid(const struct rvfi_addr *a)
{
	return a->version == RVFI_ADDR_VERSION && a->len == sizeof(*a);
}

static inline bool rvfi_addr_eq(const struct rvfi_addr *a,
				const struct rvfi_addr *b)
{
	return a->ip == b->ip && a->port == b->port && a->pid == b->pid &&
	       a->nonce == b->nonce;
}

/*
 * A bare address names a node and a TCP port only: made from a
 * sockaddr_in (fi_getinfo's node/service, fi_av_insert of FI_SOCKADDR_IN)
 * it has no slot, pid or nonce.  An endpoint's own nonce is never 0, so 0
 * marks it.  Its HELLO carries to_nonce 0, which only a published
 * endpoint (bound to a port the application chose, see tcp.c) admits.
 */
static inline bool rvfi_addr_bare(const struct rvfi_addr *a)
{
	return !a->nonce;
}

/* @a and @b name the same endpoint, as far as the barer one tells. */
static inline bool rvfi_addr_match(const struct rvfi_addr *a,
				   const struct rvfi_addr *b)
{
	if (rvfi_addr_bare(a) || rvfi_addr_bare(b))
		return a->ip == b->ip && a->port == b->port;
	return rvfi_addr_eq(a, b);
}

int rvfi_addr_from_sin(struct rvfi_addr *a, const struct sockaddr_in *sin);
int rvfi_addr_parse(const void *buf, size_t avail, struct rvfi_addr *a,
		    size_t *len, bool *is_sin);

/* ---- fabric, domain ------------------------------------------------------ */

struct rvfi_fabric {
	struct fid_fabric fab;
	int refs;		/* open domains and EQs */
};

/* Provider-wide settings, read once from the environment. */
struct rvfi_env {
	size_t rndv_threshold;
	uint32_t num_conn;
	uint32_t ring_entries;		/* 0: the module's default */
	char job_key[RV_JOB_KEY_MAX + 1];
	char device[64];
	/* FI_RV_CLOSE_DELAY_MS: test hook, see ep_close() */
	unsigned int close_delay_ms;
	/* FI_RV_TEST_RING_UNBOUNDED: test hook, see ep_attach() */
	bool test_ring_unbounded;
	/* FI_RV_STATS: time the rendezvous, print at endpoint close */
	bool stats;
	/* FI_RV_YIELD: an empty fi_cq_read() yields the CPU (opt-in) */
	bool yield;
	/* FI_RV_SQ_RETRY_US: see struct rvfi_node.refused_us */
	unsigned int sq_retry_us;
};

extern struct rvfi_env rvfi_env;

struct rvfi_domain {
	struct fid_domain dom;
	struct rvfi_fabric *fab;
	/* Protects the domain and every object opened from it. */
	pthread_mutex_t lock;
	int refs;			/* open EPs, CQs, AVs, MRs */
	char name[64];			/* RDMA device */
	int dev_index;
	int gid_index;
	uint32_t ip;			/* the GID's IPv4, network order */
	int epfd;			/* epoll set: every socket, rv fds */
	struct rvfi_list eps;
	enum fi_threading threading;
	uint64_t mr_keys;
	/* FI_RM_DISABLED asked for: no CQ throttling, overruns reported */
	bool rm_disabled;
};

/* ---- AV ------------------------------------------------------------------ */

struct rvfi_av_entry {
	struct rvfi_addr addr;
	bool used;
	bool sin;	/* inserted as a sockaddr_in: fi_av_lookup gives one */
};

struct rvfi_av {
	struct fid_av av;
	struct rvfi_domain *dom;
	enum fi_av_type type;
	struct rvfi_av_entry *tab;
	size_t count, cap;
	uint64_t gen;		/* bumped on every insert and remove */
	int refs;		/* bound endpoints */
	bool event;		/* FI_EVENT: inserts reported to @eq */
	struct fid_eq *eq;	/* bound EQ (a reference), or NULL */
};

int rvfi_av_find(struct rvfi_av *av, const struct rvfi_addr *a,
		 fi_addr_t *out);

/* ---- CQ ------------------------------------------------------------------ */

struct rvfi_cqe {
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
};

struct rvfi_cq_err {
	struct rvfi_list link;
	struct fi_cq_err_entry e;
};

/*
 * A CQ holds at most @size entries, successes (@ring) and errors (@errs)
 * together.  Under FI_RM_ENABLED every operation that may complete on the
 * CQ reserves an entry when it is posted (@reserved), and a post that
 * finds no entry free fails with -FI_EAGAIN: a completion always has its
 * place.  Under FI_RM_DISABLED nothing is reserved; a completion that
 * finds the CQ full puts it in the overrun state (@overrun, @lost): the
 * entries already there are still read, then fi_cq_read answers
 * -FI_EOVERRUN, as fi_cq(3) says.  The domain lock protects all of it.
 */
struct rvfi_cq {
	struct fid_cq cq;
	struct rvfi_domain *dom;
	enum fi_cq_format format;
	struct rvfi_cqe *ring;	/* @size entries, allocated at open */
	size_t head, count, size;
	size_t reserved;	/* posted operations' entries */
	struct rvfi_list errs;
	size_t nerr;
	bool overrun;
	uint64_t lost;		/* completions that found the CQ full */
	bool signaled;
	int refs;		/* bound endpoints */
};

#define RVFI_CQ_MAX_SIZE	((size_t)1 << 20)

struct rvfi_op;

int rvfi_op_reserve(struct rvfi_op *op, struct rvfi_cq *cq);
void rvfi_op_unreserve(struct rvfi_op *op);
void rvfi_cq_push(struct rvfi_cq *cq, void *ctx, uint64_t flags, size_t len,
		  void *buf, uint64_t data, uint64_t tag, fi_addr_t src);
void rvfi_cq_push_err(struct rvfi_cq *cq, void *ctx, uint64_t flags,
		      size_t len, void *buf, uint64_t data, uint64_t tag,
		      size_t olen, int err, int prov_errno, fi_addr_t src);

/* ---- wire ---------------------------------------------------------------- */

enum rvfi_wire_op {
	RVFI_OP_HELLO = 1,	/* payload: struct rvfi_hello */
	RVFI_OP_EAGER,		/* a whole message, payload = data */
	RVFI_OP_RTS,		/* a large message is waiting: tag, len, id */
	RVFI_OP_CTS,		/* receiver ready: where to write, token */
	RVFI_OP_RDATA,		/* a rendezvous' data over TCP (no rv path) */
	RVFI_OP_ACK,		/* receiver to sender: msg_id got there */
};

/* struct rvfi_hdr.flags */
#define RVFI_F_TAGGED	(1u << 0)
#define RVFI_F_DATA	(1u << 1)	/* cq data present */
#define RVFI_F_TCP	(1u << 2)	/* CTS: send the data as RDATA */
/*
 * EAGER, RDATA: the sender waits for an ACK of @msg_id.  Alone
 * (FI_TRANSMIT_COMPLETE) the receiver acks when its provider has read the
 * frame; with RVFI_F_DC (FI_DELIVERY_COMPLETE, EAGER) when a receive
 * matched it or FI_DISCARD dropped it.  An RDATA is acked once copied
 * into its receive, which was matched before its CTS.  ACK frames are
 * the one thing that travels back on a connection, from its acceptor to
 * its connector: it is established already, so an ACK is on the wire
 * at once, also when the receiver closes right after.
 */
#define RVFI_F_ACK	(1u << 3)
#define RVFI_F_DC	(1u << 4)

/*
 * Every frame: this header, then @len payload bytes for HELLO, EAGER and
 * RDATA, and for a CTS with @nkeys above 1 its keys (@nkeys __le32).  Little-endian on the wire.  The sender's identity is not in each
 * frame: the connection's first frame (HELLO) names it.
 */
struct rvfi_hdr {
	uint8_t op;
	uint8_t flags;
	uint16_t rkey_shift;	/* CTS with nkeys > 1: the key chunk's log2 */
	uint32_t token;		/* CTS, RDATA: the receiver's token */
	uint64_t tag;
	uint64_t data;		/* RTS: cq data; CTS: log2 of the write size */
	uint64_t len;		/* payload, or RTS: message, CTS: to write */
	uint64_t msg_id;	/* RTS, CTS: the sender's message id */
	uint64_t raddr;		/* CTS */
	uint32_t rkey;		/* CTS: the key of raddr's chunk */
	uint32_t nkeys;		/* CTS: keys; above 1 they follow as payload */
};

/*
 * A connection's first frame: who sends (@from, whose ip must be the
 * connection's source address) and the nonce of the endpoint it is meant
 * for, which proves the sender was given that endpoint's address.
 */
struct rvfi_hello {
	struct rvfi_addr from;
	uint64_t to_nonce;	/* as in the target's address */
};

/* ---- operations ---------------------------------------------------------- */

enum rvfi_op_kind { RVFI_SEND, RVFI_RECV };

enum rvfi_op_state {
	RVFI_ST_NEW,
	RVFI_ST_WAIT_CTS,	/* send: RTS queued or sent */
	RVFI_ST_WRITE_PENDING,	/* send: rv_post_write said EAGAIN */
	RVFI_ST_WRITING,	/* send: write posted */
	RVFI_ST_WAIT_TOKEN,	/* recv: matched an RTS, no token or ring room */
	RVFI_ST_WAIT_DATA,	/* recv: CTS sent, waiting for the write */
};

struct rvfi_peer;
struct rvfi_ep;

/* One duration statistic (us): count, sum, largest. */
struct rvfi_dur {
	uint64_t n, sum, max;
};

/*
 * Where a rendezvous spends its time (FI_RV_STATS=1; printed to stderr at
 * endpoint close).  Durations are taken only when the variable is set.
 */
struct rvfi_stats {
	uint64_t progress;		/* progress calls that polled this ep */
	struct rvfi_dur in_progress;	/* time inside one progress call */
	uint64_t ring_events;		/* rv events reaped */
	uint64_t post_calls, writes;	/* rv_post_writes() calls, writes */
	uint32_t tx_used_max, rx_used_max;	/* ring entries held, peak */
	struct rvfi_dur reg_tx, reg_rx, dereg;	/* rv_reg_mem*, rv_dereg_mem */
	struct rvfi_dur rts_cts;	/* send: RTS written -> CTS read */
	struct rvfi_dur cts_done;	/* send: CTS read -> last write done */
	struct rvfi_dur match_cts;	/* recv: matched -> CTS sent */
	struct rvfi_dur cts_data;	/* recv: CTS sent -> last RECV */
};

struct rvfi_op {
	struct rvfi_list link;
	struct rvfi_ep *ep;
	enum rvfi_op_kind kind;
	enum rvfi_op_state state;
	void *context;
	uint64_t cq_flags;	/* FI_SEND/FI_RECV | FI_MSG/FI_TAGGED ... */
	bool completion;	/* write a success entry */
	struct rvfi_cq *rcq;	/* holds an entry reserved in this CQ */
	uint8_t ack;		/* send: 0, RVFI_F_ACK or RVFI_F_ACK|RVFI_F_DC */
	void *buf;
	size_t len;
	uint64_t tag, ignore;
	uint64_t data;
	bool has_data;
	struct rvfi_peer *peer;	/* send: destination; recv: NULL = any */
	/* rendezvous */
	uint64_t msg_id;
	int mr;			/* rv registration handle, 0 if none */
	uint32_t token;
	size_t xfer;		/* bytes written into the receive buffer */
	size_t olen;		/* recv: bytes dropped by truncation */
	uint64_t raddr;
	uint32_t rkey;
	/* send: the receiver's keys (rkeys[0] == rkey), one write per key */
	uint32_t *rkeys;
	uint32_t nkeys;
	unsigned int rkey_shift;
	size_t posted;		/* send: bytes written or being written */
	/*
	 * send: writes in flight; recv: RECVs due, or while on token_wait
	 * the RECVs it waits for ring room for
	 */
	uint32_t writes;
	bool write_failed;	/* send: a write completed in error */
	unsigned int wshift;	/* log2 of the write size (from the CTS) */
	/* send: the registration windows after @mr (first [0, RVFI_REG_WINDOW)) */
	int *wmrs;
	uint32_t nwmr;
	int cur_mr;		/* send: the handle covering [mr_lo, mr_hi) */
	size_t mr_lo, mr_hi;
	uint32_t rx_reserved;	/* recv: ring entries held for its RECVs */
	bool dead;		/* failed by a ring overflow: on ep->dead */
	fi_addr_t src;		/* recv: FI_SOURCE of the matched message */
	uint64_t src_id;	/* recv: the sender's msg id (for the CTS) */
	struct rvfi_peer *from;	/* recv: who sent the RTS */
	uint32_t src_slot;
	/*
	 * FI_MULTI_RECV.  The posted buffer (the parent) stays in
	 * posted_msg while at least min_multi_recv bytes are left; each
	 * message it matches gets a child op for the bytes at @moff, which
	 * completes like any receive.  The parent is freed once retired and
	 * childless; the last child's completion carries FI_MULTI_RECV.
	 */
	bool multi;		/* a parent */
	bool mretired;		/* parent: out of posted_msg for good */
	size_t moff;		/* parent: bytes handed to children */
	uint32_t mchildren;	/* parent: children not yet freed */
	struct rvfi_op *mparent;	/* child: its buffer's parent */
	/* FI_RV_STATS: send: RTS sent, CTS in; recv: matched, CTS sent (us) */
	uint64_t t_a, t_b;
};

/* A message that arrived before a receive matched it. */
struct rvfi_unexp {
	struct rvfi_list link;
	uint8_t op;		/* RVFI_OP_EAGER or RVFI_OP_RTS */
	uint8_t flags;
	uint64_t tag, data, len, msg_id;
	void *payload;		/* EAGER */
	struct rvfi_peer *from;
};

/* ---- TCP ----------------------------------------------------------------- */

/* Something in the domain's epoll set; the tag says which struct. */
enum rvfi_pollkind { RVFI_PK_LISTEN, RVFI_PK_OUT, RVFI_PK_IN, RVFI_PK_RV };

struct rvfi_pollent {
	enum rvfi_pollkind kind;
	struct rvfi_ep *ep;
};

/* One frame waiting to be written on a peer's outgoing connection. */
struct rvfi_txf {
	struct rvfi_list link;
	struct rvfi_hdr hdr;
	const void *payload;	/* user buffer, or @copy */
	size_t done;		/* bytes of header + payload written */
	struct rvfi_op *op;	/* completed when written (eager send) */
	char copy[];		/* inject, HELLO: the payload, copied */
};

enum rvfi_peer_state {
	RVFI_PEER_IDLE,
	RVFI_PEER_CONNECTING,
	RVFI_PEER_UP,
	RVFI_PEER_FAILED,
};

/*
 * Another endpoint, as this endpoint knows it: its address, the outgoing
 * TCP connection this endpoint sends all its frames to it on (created on
 * the first send), and the rv connection to its node.
 */
struct rvfi_peer {
	struct rvfi_list link;		/* ep->peers */
	struct rvfi_pollent pe;
	struct rvfi_addr addr;
	enum rvfi_peer_state state;
	int fd;
	struct rvfi_list txq;		/* struct rvfi_txf, in order */
	struct rvfi_list rndv_sends;	/* ops waiting for CTS or writing */
	struct rvfi_list ack_wait;	/* sends waiting for an ACK */
	/* an ACK frame being read from @fd (the wire's byte order) */
	char ackin[sizeof(struct rvfi_hdr)];
	size_t ackin_len;
	struct rvfi_node *node;		/* NULL: same node, or not yet */
	bool local;			/* same IPv4 as us: TCP only */
	fi_addr_t src;			/* FI_SOURCE cache ... */
	uint64_t src_gen;		/* ... valid while av->gen is this */
};

/* An rv connection to a remote node (per endpoint: handles are per file). */
struct rvfi_node {
	struct rvfi_list link;
	uint32_t ip;
	uint32_t handle;
	int state;			/* RV_CONN_STATE_* last seen */
	uint64_t last_connect;		/* rvfi_now_ms() of the last CONNECT */
	/*
	 * When rv last refused a write to this node (EAGAIN: its send
	 * queues full, or connecting; EPIPE before the connection is up),
	 * in microseconds; 0 once a write of
	 * ours to it completed since.  The writes waiting for it are retried
	 * then or FI_RV_SQ_RETRY_US later (the QPs are shared with the job's
	 * other processes, whose completions we do not see), not on every
	 * progress call: a refused POST_WRITES is a system call, and its CPU
	 * is what the device's own work needs on a busy node.
	 */
	uint64_t refused_us;
};

/* An accepted TCP connection: frames from one peer to us. */
struct rvfi_rbuf;
struct rvfi_big;

struct rvfi_inconn {
	struct rvfi_list link;
	struct rvfi_pollent pe;
	int fd;
	struct sockaddr_in sin;		/* the connection's source */
	struct rvfi_peer *peer;		/* after HELLO */
	uint64_t skip;			/* payload bytes to discard */
	struct rvfi_hdr hdr;		/* the frame being gathered in @big */
	/* before HELLO: the HELLO frame so far; no @rbuf yet */
	char pre[sizeof(struct rvfi_hdr) + sizeof(struct rvfi_hello)];
	size_t pre_len;
	struct rvfi_rbuf *rbuf;		/* what recv() returned, unparsed */
	/* ACK frames for the peer, wire order, not yet taken by send() */
	char *ackq;
	size_t ackq_len, ackq_cap;
	struct rvfi_big *big;		/* a payload larger than @rbuf */
};

/* ---- endpoint ------------------------------------------------------------ */

struct rvfi_ep {
	struct fid_ep ep;
	struct rvfi_list link;		/* dom->eps */
	struct rvfi_domain *dom;
	struct rvfi_av *av;
	struct rvfi_cq *tx_cq, *rx_cq;
	bool tx_selective, rx_selective;
	uint64_t tx_op_flags, rx_op_flags;
	uint64_t caps;
	bool enabled;
	bool closing;		/* ep_close(): rv_close() frees the MRs */
	size_t min_multi_recv;
	/* An untagged message waits for CQ room (rvfi_multi_retry()). */
	bool multi_stalled;
	/*
	 * Bound to the port of the fi_info's src_addr (a service the
	 * application chose): a well-known address, which admits HELLOs
	 * to a bare address (to_nonce 0) as well as to its full one.
	 */
	bool published;

	struct rv *rv;
	int slot;
	int slot_bits;
	struct rvfi_pollent rv_pe;
	struct rvfi_addr self;

	struct rvfi_pollent listen_pe;
	int listen_fd;
	struct rvfi_list peers;
	struct rvfi_list inconns;
	struct rvfi_list nodes;
	struct rvfi_peer **by_fiaddr;	/* AV index -> peer cache */
	size_t by_fiaddr_cap;
	uint64_t by_fiaddr_gen;

	/* receive side matching */
	struct rvfi_list posted_msg, posted_tagged;
	struct rvfi_list unexp_msg, unexp_tagged;
	/* rendezvous */
	struct rvfi_list write_pending;	/* sends whose write got EAGAIN */
	struct rvfi_list writing;	/* sends with a write posted */
	struct rvfi_list token_wait;	/* recvs waiting for a free token */
	struct rvfi_op **tokens;
	uint32_t ntokens, token_seq, token_user_mask;
	uint64_t next_msg_id;
	uint64_t ring_overflows;	/* last rv_ring_overflows() seen */
	/*
	 * The event ring is never asked to hold more than it has: half of it
	 * is for the SEND events of our writes (@tx_used posted and not yet
	 * reaped), the other half (less RVFI_RING_SLACK) for the RECVs the
	 * CTSs we sent announced (@rx_used).  Halves, so that receives
	 * cannot starve sends (two peers could otherwise wait on each other).
	 */
	uint32_t ring_entries, num_conn;
	uint32_t tx_max, tx_used, rx_max, rx_used;
	bool rv_broken;			/* the ring overflowed: rv not used */
	/* log2 of rv's key chunk as the last registration told, 0 unknown */
	unsigned int rkey_shift;
	bool cts_draining;
	struct rvfi_list dead;		/* ops failed by the overflow */
	uint64_t n_ring_waits;		/* writes/CTSs that waited for room */

	struct rvfi_stats st;		/* FI_RV_STATS */

	/* provider counters, for tests and FI_LOG */
	uint64_t n_eager_tx, n_rndv_tx, n_rdata_tx, n_eager_rx, n_rndv_rx;
	/* connections closed for a bad HELLO or a frame out of bounds */
	uint64_t n_hello_refused, n_frames_refused;
};

/* ep.c */
int rvfi_ep_open(struct fid_domain *domain, struct fi_info *info,
		 struct fid_ep **ep, void *context);
void rvfi_complete_ok(struct rvfi_op *op);
void rvfi_complete_err(struct rvfi_op *op, int err, size_t olen);
struct rvfi_peer *rvfi_peer_get(struct rvfi_ep *ep, const struct rvfi_addr *a);
struct rvfi_peer *rvfi_peer_of(struct rvfi_ep *ep, fi_addr_t addr);
fi_addr_t rvfi_peer_fiaddr(struct rvfi_ep *ep, struct rvfi_peer *p);
void rvfi_op_free(struct rvfi_op *op);

/* msg.c */
extern struct fi_ops_msg rvfi_msg_ops;
extern struct fi_ops_tagged rvfi_tagged_ops;
uint64_t rvfi_multi_flags(const struct rvfi_op *op);
void rvfi_multi_put(struct rvfi_op *op);
void rvfi_multi_retry(struct rvfi_ep *ep);
bool rvfi_multi_hold(struct rvfi_op *op);
void rvfi_deliver(struct rvfi_ep *ep, struct rvfi_peer *from,
		  const struct rvfi_hdr *h, void *payload);
ssize_t rvfi_cancel(struct rvfi_ep *ep, void *context);

/* tcp.c */
int rvfi_tcp_listen(struct rvfi_ep *ep, uint16_t port);
int rvfi_tcp_send(struct rvfi_ep *ep, struct rvfi_peer *p,
		  const struct rvfi_hdr *h, const void *payload, bool copy,
		  struct rvfi_op *op);
void rvfi_tcp_event(struct rvfi_pollent *pe, uint32_t events);
void rvfi_peer_close(struct rvfi_ep *ep, struct rvfi_peer *p);
void rvfi_inconn_close(struct rvfi_ep *ep, struct rvfi_inconn *c);
void rvfi_send_ack(struct rvfi_ep *ep, struct rvfi_peer *to, uint64_t msg_id);

/* rndv.c */
int rvfi_rndv_send(struct rvfi_ep *ep, struct rvfi_op *op);
void rvfi_rndv_matched(struct rvfi_ep *ep, struct rvfi_op *op);
void rvfi_rndv_cts(struct rvfi_ep *ep, struct rvfi_peer *from,
		   const struct rvfi_hdr *h, const void *payload);
void rvfi_rndv_rdata(struct rvfi_ep *ep, struct rvfi_peer *from,
		     const struct rvfi_hdr *h, const void *payload);
int64_t rvfi_rndv_rdata_room(struct rvfi_ep *ep, struct rvfi_peer *from,
			     uint32_t token);
void rvfi_rndv_progress(struct rvfi_ep *ep);
struct rvfi_node *rvfi_node_get(struct rvfi_ep *ep, uint32_t ip);
void rvfi_rndv_cleanup(struct rvfi_ep *ep);
void rvfi_rndv_peer_failed(struct rvfi_ep *ep, struct rvfi_peer *p);
uint64_t rvfi_now_ms(void);
uint64_t rvfi_stat_now(void);
void rvfi_stat_add(struct rvfi_dur *d, uint64_t t0);
void rvfi_stats_print(struct rvfi_ep *ep);

/* progress.c */
void rvfi_progress(struct rvfi_domain *dom);
int rvfi_wait(struct rvfi_domain *dom, int timeout_ms);

/* cq.c, av.c, domain.c, fabric.c, info.c */
int rvfi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		 struct fid_cq **cq, void *context);
int rvfi_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		 struct fid_av **av, void *context);
int rvfi_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		     struct fid_domain **dom, void *context);
int rvfi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		 struct fid_eq **eq, void *context);
/* eq.c: what an AV with FI_EVENT reports; an EQ bound to an AV */
void rvfi_eq_report(struct fid_eq *eq, uint32_t event, const void *buf,
		    size_t len, bool err);
void rvfi_eq_get(struct fid_eq *eq);
void rvfi_eq_put(struct fid_eq *eq);
int rvfi_eq_trywait(struct fid_eq *eq);
int rvfi_getinfo(uint32_t version, const char *node, const char *service,
		 uint64_t flags, const struct fi_info *hints,
		 struct fi_info **info);
int rvfi_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		     void *context);
int rvfi_find_device(const char *want, char *name, size_t len, int *gid,
		     uint32_t *ip);
void rvfi_env_init(void);

/* stubs.c: -FI_ENOSYS for everything not supported */
extern struct fi_ops_rma rvfi_no_rma_ops;
extern struct fi_ops_atomic rvfi_no_atomic_ops;
extern struct fi_ops_collective rvfi_no_coll_ops;
int rvfi_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int rvfi_no_control(struct fid *fid, int command, void *arg);
int rvfi_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
		     void **ops, void *context);
int rvfi_no_tostr(const struct fid *fid, char *buf, size_t len);
int rvfi_no_ops_set(struct fid *fid, const char *name, uint64_t flags,
		    void *ops, void *context);
ssize_t rvfi_no_cancel(fid_t fid, void *context);
int rvfi_no_getopt(fid_t fid, int level, int optname, void *optval,
		   size_t *optlen);
int rvfi_no_setopt(fid_t fid, int level, int optname, const void *optval,
		   size_t optlen);
int rvfi_no_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
		   struct fid_ep **tx_ep, void *context);
int rvfi_no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
		   struct fid_ep **rx_ep, void *context);
ssize_t rvfi_no_rx_size_left(struct fid_ep *ep);
ssize_t rvfi_no_tx_size_left(struct fid_ep *ep);
int rvfi_no_getname(fid_t fid, void *addr, size_t *addrlen);
int rvfi_no_setname(fid_t fid, void *addr, size_t addrlen);
int rvfi_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen);
int rvfi_no_connect(struct fid_ep *ep, const void *addr, const void *param,
		    size_t paramlen);
int rvfi_no_listen(struct fid_pep *pep);
int rvfi_no_accept(struct fid_ep *ep, const void *param, size_t paramlen);
int rvfi_no_reject(struct fid_pep *pep, fid_t handle, const void *param,
		   size_t paramlen);
int rvfi_no_shutdown(struct fid_ep *ep, uint64_t flags);
int rvfi_no_join(struct fid_ep *ep, const void *addr, uint64_t flags,
		 struct fid_mc **mc, void *context);

#endif /* RVFI_H */
