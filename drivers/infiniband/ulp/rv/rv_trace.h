/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Tracepoints of the rv module: "trace-cmd record -e rv" takes them all.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM rv

#if !defined(_TRACE_RV_H) || defined(TRACE_HEADER_MULTI_READ)
#define _TRACE_RV_H

#include <linux/tracepoint.h>
#include <rdma/ib_verbs.h>

struct rv_job;
struct rv_mr_entry;

DECLARE_EVENT_CLASS(rv_device_class,
	TP_PROTO(const struct ib_device *ibdev),
	TP_ARGS(ibdev),
	TP_STRUCT__entry(
		__field(u32, index)
		/*
		 * A fixed array, not __string(): __assign_str() lost its
		 * source argument in 6.10, and these events are rare.
		 */
		__array(char, name, IB_DEVICE_NAME_MAX)
	),
	TP_fast_assign(
		__entry->index = ibdev->index;
		strscpy(__entry->name, dev_name(&ibdev->dev),
			IB_DEVICE_NAME_MAX);
	),
	TP_printk("device %u %s", __entry->index, __entry->name)
);

#define DEFINE_RV_DEVICE_EVENT(name)					\
	DEFINE_EVENT(rv_device_class, rv_device_##name,			\
		TP_PROTO(const struct ib_device *ibdev),		\
		TP_ARGS(ibdev))

DEFINE_RV_DEVICE_EVENT(add);
DEFINE_RV_DEVICE_EVENT(remove);
DEFINE_RV_DEVICE_EVENT(rename);

DECLARE_EVENT_CLASS(rv_job_class,
	TP_PROTO(const struct rv_job *job),
	TP_ARGS(job),
	TP_STRUCT__entry(
		__field(u32, job)
		__field(u32, dev)
		__field(u32, port)
		__field(u32, uid)
		__field(u32, num_conn)
		__field(u32, slot_bits)
	),
	TP_fast_assign(
		__entry->job = job->id;
		__entry->dev = job->dev->index;
		__entry->port = job->params.port_num;
		__entry->uid = from_kuid(&init_user_ns, job->params.uid);
		__entry->num_conn = job->params.num_conn;
		__entry->slot_bits = job->params.slot_bits;
	),
	TP_printk("job %u dev %u port %u uid %u num_conn %u slot_bits %u",
		  __entry->job, __entry->dev, __entry->port, __entry->uid,
		  __entry->num_conn, __entry->slot_bits)
);

#define DEFINE_RV_JOB_EVENT(name)					\
	DEFINE_EVENT(rv_job_class, rv_job_##name,			\
		TP_PROTO(const struct rv_job *job),			\
		TP_ARGS(job))

DEFINE_RV_JOB_EVENT(create);
DEFINE_RV_JOB_EVENT(destroy);

TRACE_EVENT(rv_attach,
	TP_PROTO(const struct rv_job *job, u32 slot, bool created),
	TP_ARGS(job, slot, created),
	TP_STRUCT__entry(
		__field(u32, job)
		__field(u32, slot)
		__field(bool, created)
	),
	TP_fast_assign(
		__entry->job = job->id;
		__entry->slot = slot;
		__entry->created = created;
	),
	TP_printk("job %u slot %u%s", __entry->job, __entry->slot,
		  __entry->created ? " (new job)" : "")
);

TRACE_EVENT(rv_detach,
	TP_PROTO(const struct rv_job *job, u32 slot),
	TP_ARGS(job, slot),
	TP_STRUCT__entry(
		__field(u32, job)
		__field(u32, slot)
	),
	TP_fast_assign(
		__entry->job = job->id;
		__entry->slot = slot;
	),
	TP_printk("job %u slot %u", __entry->job, __entry->slot)
);

/* MR cache: an entry's job, handle, range, access and references. */
DECLARE_EVENT_CLASS(rv_mr_class,
	TP_PROTO(const struct rv_mr_entry *e),
	TP_ARGS(e),
	TP_STRUCT__entry(
		__field(u32, job)
		__field(u32, handle)
		__field(u64, start)
		__field(u64, length)
		__field(u32, access)
		__field(u32, user_refs)
	),
	TP_fast_assign(
		__entry->job = e->cache->job->id;
		__entry->handle = e->handle;
		__entry->start = e->it.start;
		__entry->length = e->length;
		__entry->access = e->access;
		__entry->user_refs = e->user_refs;
	),
	TP_printk("job %u handle %u start 0x%llx length %llu access %s%s%s refs %u",
		  __entry->job, __entry->handle, __entry->start,
		  __entry->length,
		  __entry->access & RV_ACCESS_LOCAL_WRITE ? "L" : "-",
		  __entry->access & RV_ACCESS_REMOTE_WRITE ? "W" : "-",
		  __entry->access & RV_ACCESS_REMOTE_READ ? "R" : "-",
		  __entry->user_refs)
);

#define DEFINE_RV_MR_EVENT(name)					\
	DEFINE_EVENT(rv_mr_class, rv_mr_##name,				\
		TP_PROTO(const struct rv_mr_entry *e),			\
		TP_ARGS(e))

DEFINE_RV_MR_EVENT(insert);
DEFINE_RV_MR_EVENT(hit);
DEFINE_RV_MR_EVENT(evict);
DEFINE_RV_MR_EVENT(invalidate);
DEFINE_RV_MR_EVENT(free);

#endif /* _TRACE_RV_H */

#undef TRACE_INCLUDE_PATH
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_PATH .
#define TRACE_INCLUDE_FILE rv_trace

#include <trace/define_trace.h>
