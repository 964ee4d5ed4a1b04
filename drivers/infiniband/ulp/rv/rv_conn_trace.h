/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Tracepoints of rv's connections, in the same "rv" system as rv_trace.h
 * ("trace-cmd record -e rv" takes them too).  Arguments are plain numbers
 * so that this header needs no rv structure.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM rv
/*
 * rv_trace.c instantiates rv_trace.h's events of the same system too: a
 * name of its own for this header's copy of the system's name string.
 */
#undef TRACE_SYSTEM_VAR
#define TRACE_SYSTEM_VAR rv_conn

#if !defined(_TRACE_RV_CONN_H) || defined(TRACE_HEADER_MULTI_READ)
#define _TRACE_RV_CONN_H

#include <linux/tracepoint.h>
#include <rdma/ib_cm.h>
#include <rdma/rdma_cm.h>
#include <rdma/rv_user_ioctls.h>
#include <trace/misc/rdma.h>

#include "rv_write.h"

#define rv_show_conn_state(s)					\
	__print_symbolic(s,					\
			 { RV_CONN_STATE_IDLE, "IDLE" },	\
			 { RV_CONN_STATE_CONNECTING, "CONNECTING" }, \
			 { RV_CONN_STATE_CONNECTED, "CONNECTED" }, \
			 { RV_CONN_STATE_ERROR, "ERROR" })

/* A connection changed state (rv_conn_update_state()). */
TRACE_EVENT(rv_conn_state,
	    TP_PROTO(u32 job, u32 conn, u32 state, u32 reason, u64 generation,
		     u32 connected),
	    TP_ARGS(job, conn, state, reason, generation, connected),
	    TP_STRUCT__entry(__field(u32, job)
			     __field(u32, conn)
			     __field(u32, state)
			     __field(u32, reason)
			     __field(u64, generation)
			     __field(u32, connected)),
	    TP_fast_assign(__entry->job = job;
			   __entry->conn = conn;
			   __entry->state = state;
			   __entry->reason = reason;
			   __entry->generation = generation;
			   __entry->connected = connected;),
	    TP_printk("job %u conn %u %s reason %u generation %llu connected %u",
		      __entry->job, __entry->conn,
		      rv_show_conn_state(__entry->state), __entry->reason,
		      __entry->generation, __entry->connected)
);

/* An rdma_cm event on one of a connection's QP ids (enum rdma_cm_event_type). */
TRACE_EVENT(rv_cm_event,
	    TP_PROTO(u32 job, u32 conn, u32 qp, int event, int status),
	    TP_ARGS(job, conn, qp, event, status),
	    TP_STRUCT__entry(__field(u32, job)
			     __field(u32, conn)
			     __field(u32, qp)
			     __field(int, event)
			     __field(int, status)),
	    TP_fast_assign(__entry->job = job;
			   __entry->conn = conn;
			   __entry->qp = qp;
			   __entry->event = event;
			   __entry->status = status;),
	    TP_printk("job %u conn %u qp %u event %s status %d",
		      __entry->job, __entry->conn, __entry->qp,
		      rdma_show_cm_event(__entry->event), __entry->status)
);

/* A connection request on the listener: 0 accepted, else RV_CM_REJ_*. */
TRACE_EVENT(rv_cm_request,
	    TP_PROTO(u32 dev, u32 port, int reject),
	    TP_ARGS(dev, port, reject),
	    TP_STRUCT__entry(__field(u32, dev)
			     __field(u32, port)
			     __field(int, reject)),
	    TP_fast_assign(__entry->dev = dev;
			   __entry->port = port;
			   __entry->reject = reject;),
	    TP_printk("device %u port %u %s %d", __entry->dev, __entry->port,
		      __entry->reject ? "rejected" : "accepted", __entry->reject)
);

/*
 * A write posted (status 0, @segs work requests) or completed (its SEND
 * event's status, enum ib_wc_status; @overflow when the ring was full).
 */
DECLARE_EVENT_CLASS(rv_write_class,
		    TP_PROTO(u32 job, u32 conn, u32 qp, u32 slot, u64 wr_id,
			     u32 bytes, u32 segs, u32 status, bool overflow),
		    TP_ARGS(job, conn, qp, slot, wr_id, bytes, segs, status,
			    overflow),
		    TP_STRUCT__entry(__field(u32, job)
				     __field(u32, conn)
				     __field(u32, qp)
				     __field(u32, slot)
				     __field(u64, wr_id)
				     __field(u32, bytes)
				     __field(u32, segs)
				     __field(u32, status)
				     __field(bool, overflow)),
		    TP_fast_assign(__entry->job = job;
				   __entry->conn = conn;
				   __entry->qp = qp;
				   __entry->slot = slot;
				   __entry->wr_id = wr_id;
				   __entry->bytes = bytes;
				   __entry->segs = segs;
				   __entry->status = status;
				   __entry->overflow = overflow;),
		    TP_printk("job %u conn %u qp %u slot %u wr_id %llu bytes %u segs %u status %s%s",
			      __entry->job, __entry->conn, __entry->qp,
			      __entry->slot, __entry->wr_id, __entry->bytes,
			      __entry->segs,
			      rdma_show_wc_status(__entry->status),
			      __entry->overflow ? " ring overflow" : "")
);

#define DEFINE_RV_WRITE_EVENT(name)					\
	DEFINE_EVENT(rv_write_class, rv_write_##name,			\
		TP_PROTO(u32 job, u32 conn, u32 qp, u32 slot, u64 wr_id, \
			 u32 bytes, u32 segs, u32 status, bool overflow), \
		TP_ARGS(job, conn, qp, slot, wr_id, bytes, segs, status, \
			overflow))

DEFINE_RV_WRITE_EVENT(post);
DEFINE_RV_WRITE_EVENT(done);

/* A heartbeat sent on a QP idle for @idle_ms. */
TRACE_EVENT(rv_heartbeat,
	    TP_PROTO(u32 job, u32 conn, u32 qp, u32 idle_ms),
	    TP_ARGS(job, conn, qp, idle_ms),
	    TP_STRUCT__entry(__field(u32, job)
			     __field(u32, conn)
			     __field(u32, qp)
			     __field(u32, idle_ms)),
	    TP_fast_assign(__entry->job = job;
			   __entry->conn = conn;
			   __entry->qp = qp;
			   __entry->idle_ms = idle_ms;),
	    TP_printk("job %u conn %u qp %u idle %u ms", __entry->job,
		      __entry->conn, __entry->qp, __entry->idle_ms)
);

/* How an arrived write with immediate was routed (enum rv_recv_result). */
TRACE_DEFINE_ENUM(RV_RECV_DELIVERED);
TRACE_DEFINE_ENUM(RV_RECV_NO_SLOT);
TRACE_DEFINE_ENUM(RV_RECV_RING_FULL);

#define rv_show_recv_result(r)					\
	__print_symbolic(r,					\
			 { RV_RECV_DELIVERED, "delivered" },	\
			 { RV_RECV_NO_SLOT, "dropped: no slot" }, \
			 { RV_RECV_RING_FULL, "dropped: ring full" })

TRACE_EVENT(rv_recv,
	    TP_PROTO(u32 job, u32 conn, u32 slot, u32 imm, u32 bytes,
		     int result),
	    TP_ARGS(job, conn, slot, imm, bytes, result),
	    TP_STRUCT__entry(__field(u32, job)
			     __field(u32, conn)
			     __field(u32, slot)
			     __field(u32, imm)
			     __field(u32, bytes)
			     __field(int, result)),
	    TP_fast_assign(__entry->job = job;
			   __entry->conn = conn;
			   __entry->slot = slot;
			   __entry->imm = imm;
			   __entry->bytes = bytes;
			   __entry->result = result;),
	    TP_printk("job %u conn %u slot %u imm 0x%x bytes %u %s",
		      __entry->job, __entry->conn, __entry->slot,
		      __entry->imm, __entry->bytes,
		      rv_show_recv_result(__entry->result))
);

#endif /* _TRACE_RV_CONN_H */

#undef TRACE_INCLUDE_PATH
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_PATH .
#define TRACE_INCLUDE_FILE rv_conn_trace

#include <trace/define_trace.h>
