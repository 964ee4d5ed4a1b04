/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rv: connection management with rdma_cm (rv_cm.c) and rv's rdma_cm
 * listeners (rv_cm_listen.c).
 */
#ifndef RV_CM_H
#define RV_CM_H

#include <linux/seq_file.h>
#include <linux/types.h>
#include <net/net_namespace.h>
#include <rdma/rdma_cm.h>

struct rv_cm_listener;
struct rv_conn_qp;
struct rv_ibqp;
struct ib_pd;

/*
 * Transport retries before a QP fails.  7 would mean "forever" on some
 * devices (rxe among them), and a write to a peer that is gone must end
 * with an error; RNR retries stay unlimited (the peer reposts receives).
 */
#define RV_CM_RETRY_COUNT	6

/* rv_cm.c */
int rv_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev);
int rv_cm_stats_show(struct seq_file *s, void *unused);
void rv_cm_qp_init(struct rv_conn_qp *qp);
void rv_cm_kick(struct rv_conn_qp *qp, unsigned long delay);
void rv_cm_fail(struct rv_conn_qp *qp, struct rdma_cm_id *id, u32 reason);
void rv_cm_qp_break(struct rv_conn_qp *qp);
int rv_cm_post_proof_recv(struct rv_ibqp *iq, struct ib_pd *pd);

/* rv_cm_listen.c */
struct rv_cm_listener *rv_cm_listener_get(struct net *net);
void rv_cm_listener_put(struct rv_cm_listener *l);
unsigned int rv_cm_listen_netns(void);
int rv_cm_init(void);
void rv_cm_exit(void);

#endif /* RV_CM_H */
