/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rv: the data path (rv_write.c): posting RDMA WRITE with immediate on a
 * connection's QPs, their completions, and the routing of what arrives.
 */
#ifndef RV_WRITE_H
#define RV_WRITE_H

#include <linux/atomic.h>
#include <linux/types.h>

struct rv_conn;
struct rv_conn_qp;
struct rv_file;
struct rv_ibqp;
struct rv_ucmd;
struct rv_write;

/* How an arrived write with immediate was routed (trace_rv_recv()). */
enum rv_recv_result {
	RV_RECV_DELIVERED,
	RV_RECV_NO_SLOT,
	RV_RECV_RING_FULL,
};

/* rv_write.c */
void rv_write_file_init(struct rv_file *rf);
void rv_write_file_quiesce(struct rv_file *rf);
void rv_write_conn_publish(struct rv_conn *conn);
u32 rv_write_conn_inflight(struct rv_conn *conn);

/*
 * CONN_QUERY and DUMP report the same data path counters in two uAPI
 * records whose fields share their names: one list keeps them in step.
 */
#define rv_conn_read_counters(dst, conn)				\
do {									\
	typeof(dst) __d = (dst);					\
	struct rv_conn *__c = (conn);					\
	struct rv_io_stats __s;						\
									\
	rv_stats_sum(__c->stats, &__s);					\
	__d->writes_posted = __s.writes_posted;				\
	__d->bytes_posted = __s.bytes_posted;				\
	__d->writes_completed = __s.writes_completed;			\
	__d->writes_failed = __s.writes_failed;				\
	__d->recvs = __s.recvs;						\
	__d->bytes_received = __s.bytes_received;			\
	__d->drops_no_slot = atomic64_read(&__c->drops_no_slot);	\
	__d->drops_ring_full = atomic64_read(&__c->drops_ring_full);	\
	__d->recv_errors = atomic64_read(&__c->recv_errors);		\
	__d->heartbeats = atomic64_read(&__c->heartbeats);		\
	__d->qp_errors = atomic64_read(&__c->qp_errors);		\
	__d->inflight = rv_write_conn_inflight(__c);			\
} while (0)

void rv_write_qp_init(struct rv_conn_qp *qp);
int rv_write_ibqp_init(struct rv_ibqp *iq);
void rv_write_ibqp_free(struct rv_ibqp *iq);
void rv_write_qp_flush(struct rv_ibqp *iq);
bool rv_write_qp_busy_for(struct rv_conn_qp *qp, const struct rv_file *rf);
int rv_write_post_one(struct rv_file *rf, const struct rv_write *w);
int rv_cmd_post_write(struct rv_file *rf, const struct rv_ucmd *ucmd,
		      void *arg);
int rv_cmd_post_writes(struct rv_file *rf, const struct rv_ucmd *ucmd,
		       void *arg);
struct io_uring_cmd;
/* rv_uring.c */
int rv_uring_cmd(struct io_uring_cmd *ioucmd, unsigned int issue_flags);

int rv_cmd_stats(struct rv_file *rf, const struct rv_ucmd *ucmd, void *arg);

#endif /* RV_WRITE_H */
