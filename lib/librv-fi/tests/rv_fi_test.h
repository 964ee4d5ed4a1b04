/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rv_fi_test.h - rv_fi_test's cases, by file.  Each runs on both nodes
 * (A the server, B the client), in main()'s order, and reports its own
 * TAP results; the names are those fabric.sh reports as fitest-NAME.
 */
#ifndef RV_FI_TEST_H
#define RV_FI_TEST_H

#include "rv_fi_util.h"
/* The wire layout (address, frame header, HELLO) for the hostile peer. */
#include "../src/rvfi.h"

/* rv_fi_tagged.c */
void t_tagged_ignore(void);
void t_data_source(void);
void t_directed_cancel(void);
void t_unexpected(void);
void t_truncation(void);

/* rv_fi_load.c */
void t_sizes(void);
void t_inflight(void);
void t_threads(void);

/* rv_fi_rndv.c */
void t_rv_counters(void);
void t_ring(void);		/* rv_fi_test -R only */
void t_ring_overflow(void);	/* rv_fi_test -O only */
void t_sq_full_backoff(void);	/* rv_fi_test -B only */

/* rv_fi_peek.c */
void t_misc(void);
void t_peek_discard(void);

/* rv_fi_hostile.c */
void t_hostile(void);

/* rv_fi_endpoints.c */
void t_local(void);
void t_close_nonblocking(void);

/* rv_fi_addr.c: runs t_multi_recv() on its published endpoint */
struct rvfi_addr name_addr(const char *name);
extern struct fid_ep *pub_ep;	/* A's, with FI_MULTI_RECV */
extern struct fid_cq *pub_cq;
void t_addressing(void);

/* rv_fi_multi_recv.c */
void t_multi_recv(fi_addr_t bare);
void t_multi_recv_cq_full(void);

/* rv_fi_levels.c */
void t_complete_levels(void);
void t_levels_info(void);

/* rv_fi_cq.c */
void t_cq_limits(void);

#endif /* RV_FI_TEST_H */
