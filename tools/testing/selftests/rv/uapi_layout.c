// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Layout table of every struct in <rdma/rv_user_ioctls.h>: size and
 * alignment of each struct, offset and size of each field.
 *
 * uapi_layout.sh builds this for x86-64, i386 and x32 and compares the
 * tables.  Each build carries its table twice: run, the program prints
 * it; compiled with -S, the same lines appear in the assembly as
 * "@@LAYOUT ..." strings, so an ABI whose binaries this host cannot run
 * (x32 without CONFIG_X86_X32_ABI) is still checked.
 *
 * The static_asserts make a field missing from the list below a build
 * error: with the fields listed in declaration order, their sizes adding
 * up to the struct's size means no field was left out and there is no
 * padding anywhere.
 */
#include <assert.h>
#include <stddef.h>
#include <stdio.h>

#include <rdma/rv_user_ioctls.h>

#define RV_QUERY_FIELDS(F)				\
	F(rv_query, size)				\
	F(rv_query, flags)				\
	F(rv_query, cmd_mask)				\
	F(rv_query, attach_flags)			\
	F(rv_query, max_conn_per_node)			\
	F(rv_query, max_slot_bits)			\
	F(rv_query, min_slot_bits)			\
	F(rv_query, max_ring_entries)			\
	F(rv_query, min_ring_entries)			\
	F(rv_query, max_job_key_len)			\
	F(rv_query, default_num_conn)			\
	F(rv_query, default_slot_bits)			\
	F(rv_query, default_ring_entries)		\
	F(rv_query, default_mr_cache_bytes)		\
	F(rv_query, cm_port)				\
	F(rv_query, conn_wqe_budget)			\
	F(rv_query, conn_timeout_ms)			\
	F(rv_query, conn_query_flags)			\
	F(rv_query, default_heartbeat_ms)		\
	F(rv_query, slot_quarantine_ms)			\
	F(rv_query, max_mr_table_entries)		\
	F(rv_query, default_mr_table_entries)

#define RV_ATTACH_FIELDS(F)				\
	F(rv_attach, size)				\
	F(rv_attach, flags)				\
	F(rv_attach, dev_index)				\
	F(rv_attach, port_num)				\
	F(rv_attach, gid_index)				\
	F(rv_attach, job_key_len)			\
	F(rv_attach, job_key)				\
	F(rv_attach, num_conn)				\
	F(rv_attach, slot_bits)				\
	F(rv_attach, ring_entries)			\
	F(rv_attach, slot)				\
	F(rv_attach, mr_cache_bytes)			\
	F(rv_attach, heartbeat_ms)			\
	F(rv_attach, mr_table_entries)

#define RV_REG_MEM_FIELDS(F)				\
	F(rv_reg_mem, size)				\
	F(rv_reg_mem, flags)				\
	F(rv_reg_mem, addr)				\
	F(rv_reg_mem, length)				\
	F(rv_reg_mem, access)				\
	F(rv_reg_mem, handle)				\
	F(rv_reg_mem, lkey)				\
	F(rv_reg_mem, rkey)				\
	F(rv_reg_mem, iova)				\
	F(rv_reg_mem, region_addr)			\
	F(rv_reg_mem, region_length)			\
	F(rv_reg_mem, rkeys)				\
	F(rv_reg_mem, nr_rkeys)				\
	F(rv_reg_mem, rkey_shift)			\
	F(rv_reg_mem, table_slot)			\
	F(rv_reg_mem, table_gen)

#define RV_MR_SLOT_FIELDS(F)				\
	F(rv_mr_slot, gen)				\
	F(rv_mr_slot, handle)				\
	F(rv_mr_slot, addr)				\
	F(rv_mr_slot, length)				\
	F(rv_mr_slot, access)				\
	F(rv_mr_slot, rkey_shift)			\
	F(rv_mr_slot, nr_keys)				\
	F(rv_mr_slot, rsvd)				\
	F(rv_mr_slot, lkeys)				\
	F(rv_mr_slot, rkeys)

#define RV_DEREG_MEM_FIELDS(F)				\
	F(rv_dereg_mem, size)				\
	F(rv_dereg_mem, flags)				\
	F(rv_dereg_mem, handle)				\
	F(rv_dereg_mem, refs)

#define RV_EVICT_FIELDS(F)				\
	F(rv_evict, size)				\
	F(rv_evict, flags)				\
	F(rv_evict, mode)				\
	F(rv_evict, access)				\
	F(rv_evict, addr)				\
	F(rv_evict, length)				\
	F(rv_evict, target_bytes)			\
	F(rv_evict, target_entries)			\
	F(rv_evict, freed_entries)			\
	F(rv_evict, freed_bytes)

#define RV_MR_STATS_FIELDS(F)				\
	F(rv_mr_stats, size)				\
	F(rv_mr_stats, flags)				\
	F(rv_mr_stats, limit_bytes)			\
	F(rv_mr_stats, bytes)				\
	F(rv_mr_stats, in_use_bytes)			\
	F(rv_mr_stats, max_bytes)			\
	F(rv_mr_stats, max_in_use_bytes)		\
	F(rv_mr_stats, entries)				\
	F(rv_mr_stats, in_use_entries)			\
	F(rv_mr_stats, max_entries)			\
	F(rv_mr_stats, max_in_use_entries)		\
	F(rv_mr_stats, hits)				\
	F(rv_mr_stats, misses)				\
	F(rv_mr_stats, evict_pressure)			\
	F(rv_mr_stats, evict_request)			\
	F(rv_mr_stats, invalidations)			\
	F(rv_mr_stats, failures)			\
	F(rv_mr_stats, fast_regs)			\
	F(rv_mr_stats, fast_reg_keys)			\
	F(rv_mr_stats, fast_reg_reused)		\
	F(rv_mr_stats, invalidations_spurious)

#define RV_RING_HEADER_FIELDS(F)			\
	F(rv_ring_header, producer)			\
	F(rv_ring_header, entries)			\
	F(rv_ring_header, entry_size)			\
	F(rv_ring_header, events_offset)		\
	F(rv_ring_header, overflows)

#define RV_EVENT_FIELDS(F)				\
	F(rv_event, kind)				\
	F(rv_event, status)				\
	F(rv_event, wr_id)				\
	F(rv_event, imm)				\
	F(rv_event, bytes)				\
	F(rv_event, conn_id)				\
	F(rv_event, generation)

#define RV_CONN_CREATE_FIELDS(F)			\
	F(rv_conn_create, size)				\
	F(rv_conn_create, flags)			\
	F(rv_conn_create, addr_len)			\
	F(rv_conn_create, handle)			\
	F(rv_conn_create, addr)				\
	F(rv_conn_create, conn_id)			\
	F(rv_conn_create, num_conn)			\
	F(rv_conn_create, send_depth)			\
	F(rv_conn_create, recv_depth)

#define RV_CONN_CONNECT_FIELDS(F)			\
	F(rv_conn_connect, size)			\
	F(rv_conn_connect, flags)			\
	F(rv_conn_connect, handle)			\
	F(rv_conn_connect, timeout_ms)

#define RV_CONN_QUERY_FIELDS(F)				\
	F(rv_conn_query, size)				\
	F(rv_conn_query, flags)				\
	F(rv_conn_query, handle)			\
	F(rv_conn_query, timeout_ms)			\
	F(rv_conn_query, state)				\
	F(rv_conn_query, reason)			\
	F(rv_conn_query, num_conn)			\
	F(rv_conn_query, connected)			\
	F(rv_conn_query, generation)			\
	F(rv_conn_query, conn_id)			\
	F(rv_conn_query, role)				\
	F(rv_conn_query, handles)			\
	F(rv_conn_query, rejects)			\
	F(rv_conn_query, attempts)			\
	F(rv_conn_query, writes_posted)			\
	F(rv_conn_query, bytes_posted)			\
	F(rv_conn_query, writes_completed)		\
	F(rv_conn_query, writes_failed)			\
	F(rv_conn_query, recvs)				\
	F(rv_conn_query, bytes_received)		\
	F(rv_conn_query, drops_no_slot)			\
	F(rv_conn_query, drops_ring_full)		\
	F(rv_conn_query, recv_errors)			\
	F(rv_conn_query, inflight)			\
	F(rv_conn_query, max_segment)			\
	F(rv_conn_query, heartbeats)			\
	F(rv_conn_query, qp_errors)

#define RV_CONN_DESTROY_FIELDS(F)			\
	F(rv_conn_destroy, size)			\
	F(rv_conn_destroy, flags)			\
	F(rv_conn_destroy, handle)			\
	F(rv_conn_destroy, handles)

#define RV_WRITE_FIELDS(F)				\
	F(rv_write, wr_id)				\
	F(rv_write, local_addr)				\
	F(rv_write, remote_addr)			\
	F(rv_write, length)				\
	F(rv_write, conn_handle)			\
	F(rv_write, mr_handle)				\
	F(rv_write, rkey)				\
	F(rv_write, imm)

/* @write is a struct rv_write: its own entry covers the inner layout. */
#define RV_POST_WRITE_FIELDS(F)				\
	F(rv_post_write, size)				\
	F(rv_post_write, flags)				\
	F(rv_post_write, write)

/* The io_uring command: @write likewise. */
#define RV_URING_POST_WRITE_FIELDS(F)			\
	F(rv_uring_post_write, flags)			\
	F(rv_uring_post_write, rsvd)			\
	F(rv_uring_post_write, write)

#define RV_POST_WRITES_FIELDS(F)			\
	F(rv_post_writes, size)				\
	F(rv_post_writes, flags)			\
	F(rv_post_writes, writes)			\
	F(rv_post_writes, count)			\
	F(rv_post_writes, entry_size)			\
	F(rv_post_writes, posted)			\
	F(rv_post_writes, error)

#define RV_STATS_FIELDS(F)				\
	F(rv_stats, size)				\
	F(rv_stats, flags)				\
	F(rv_stats, writes_posted)			\
	F(rv_stats, bytes_posted)			\
	F(rv_stats, writes_completed)			\
	F(rv_stats, writes_failed)			\
	F(rv_stats, posts_eagain)			\
	F(rv_stats, recvs)				\
	F(rv_stats, bytes_received)			\
	F(rv_stats, ring_overflows)			\
	F(rv_stats, inflight)				\
	F(rv_stats, rsvd)

#define RV_DUMP_FIELDS(F)		       \
	F(rv_dump, size) \
	F(rv_dump, flags) \
	F(rv_dump, kind) \
	F(rv_dump, record_size) \
	F(rv_dump, buf) \
	F(rv_dump, buf_len) \
	F(rv_dump, count) \
	F(rv_dump, total) \
	F(rv_dump, rsvd)

#define RV_DUMP_DEVICE_FIELDS(F)		\
	F(rv_dump_device, dev_index) \
	F(rv_dump_device, jobs) \
	F(rv_dump_device, removed) \
	F(rv_dump_device, rsvd) \
	F(rv_dump_device, name)

#define RV_DUMP_JOB_FIELDS(F)		   \
	F(rv_dump_job, job_id) \
	F(rv_dump_job, dev_index) \
	F(rv_dump_job, port_num) \
	F(rv_dump_job, uid) \
	F(rv_dump_job, num_conn) \
	F(rv_dump_job, slot_bits) \
	F(rv_dump_job, slots_used) \
	F(rv_dump_job, conns) \
	F(rv_dump_job, heartbeat_ms) \
	F(rv_dump_job, key_len) \
	F(rv_dump_job, key) \
	F(rv_dump_job, dev_name) \
	F(rv_dump_job, launcher_id)

#define RV_LAUNCHER_JOB_FIELDS(F)	\
	F(rv_launcher_job, size) \
	F(rv_launcher_job, flags) \
	F(rv_launcher_job, launcher_id) \
	F(rv_launcher_job, uid) \
	F(rv_launcher_job, cgroup_fd) \
	F(rv_launcher_job, job_key_len) \
	F(rv_launcher_job, rsvd) \
	F(rv_launcher_job, job_key) \
	F(rv_launcher_job, max_procs) \
	F(rv_launcher_job, max_conns) \
	F(rv_launcher_job, max_pinned_bytes)

#define RV_DUMP_QP_FIELDS(F)		    \
	F(rv_dump_qp, state) \
	F(rv_dump_qp, send_free) \
	F(rv_dump_qp, idle_ms) \
	F(rv_dump_qp, qp_num)

#define RV_DUMP_CONN_FIELDS(F)		  \
	F(rv_dump_conn, conn_id) \
	F(rv_dump_conn, job_id) \
	F(rv_dump_conn, state) \
	F(rv_dump_conn, reason) \
	F(rv_dump_conn, role) \
	F(rv_dump_conn, num_conn) \
	F(rv_dump_conn, connected) \
	F(rv_dump_conn, handles) \
	F(rv_dump_conn, generation) \
	F(rv_dump_conn, family) \
	F(rv_dump_conn, remote_port) \
	F(rv_dump_conn, inflight) \
	F(rv_dump_conn, remote_addr) \
	F(rv_dump_conn, max_segment) \
	F(rv_dump_conn, rsvd) \
	F(rv_dump_conn, writes_posted) \
	F(rv_dump_conn, bytes_posted) \
	F(rv_dump_conn, writes_completed) \
	F(rv_dump_conn, writes_failed) \
	F(rv_dump_conn, recvs) \
	F(rv_dump_conn, bytes_received) \
	F(rv_dump_conn, drops_no_slot) \
	F(rv_dump_conn, drops_ring_full) \
	F(rv_dump_conn, recv_errors) \
	F(rv_dump_conn, heartbeats) \
	F(rv_dump_conn, qp_errors) \
	F(rv_dump_conn, qp)

#define RV_DUMP_PROC_FIELDS(F)		  \
	F(rv_dump_proc, job_id) \
	F(rv_dump_proc, slot) \
	F(rv_dump_proc, pid) \
	F(rv_dump_proc, ring_entries) \
	F(rv_dump_proc, inflight) \
	F(rv_dump_proc, mr_entries) \
	F(rv_dump_proc, ring_overflows) \
	F(rv_dump_proc, mr_bytes) \
	F(rv_dump_proc, mr_hits) \
	F(rv_dump_proc, mr_misses) \
	F(rv_dump_proc, writes_posted) \
	F(rv_dump_proc, bytes_posted) \
	F(rv_dump_proc, writes_completed) \
	F(rv_dump_proc, writes_failed) \
	F(rv_dump_proc, posts_eagain) \
	F(rv_dump_proc, recvs) \
	F(rv_dump_proc, bytes_received)

#define RV_STRUCTS(S)					\
	S(rv_query, RV_QUERY_FIELDS)			\
	S(rv_attach, RV_ATTACH_FIELDS)			\
	S(rv_reg_mem, RV_REG_MEM_FIELDS)		\
	S(rv_mr_slot, RV_MR_SLOT_FIELDS)		\
	S(rv_dereg_mem, RV_DEREG_MEM_FIELDS)		\
	S(rv_evict, RV_EVICT_FIELDS)			\
	S(rv_mr_stats, RV_MR_STATS_FIELDS)		\
	S(rv_ring_header, RV_RING_HEADER_FIELDS)	\
	S(rv_event, RV_EVENT_FIELDS)			\
	S(rv_conn_create, RV_CONN_CREATE_FIELDS)	\
	S(rv_conn_connect, RV_CONN_CONNECT_FIELDS)	\
	S(rv_conn_query, RV_CONN_QUERY_FIELDS)		\
	S(rv_conn_destroy, RV_CONN_DESTROY_FIELDS)	\
	S(rv_write, RV_WRITE_FIELDS)			\
	S(rv_post_write, RV_POST_WRITE_FIELDS)		\
	S(rv_post_writes, RV_POST_WRITES_FIELDS)	\
	S(rv_stats, RV_STATS_FIELDS)			\
	S(rv_dump, RV_DUMP_FIELDS)			\
	S(rv_dump_device, RV_DUMP_DEVICE_FIELDS)	\
	S(rv_dump_job, RV_DUMP_JOB_FIELDS)		\
	S(rv_dump_qp, RV_DUMP_QP_FIELDS)		\
	S(rv_dump_conn, RV_DUMP_CONN_FIELDS)		\
	S(rv_dump_proc, RV_DUMP_PROC_FIELDS)		\
	S(rv_launcher_job, RV_LAUNCHER_JOB_FIELDS)	\
	S(rv_uring_post_write, RV_URING_POST_WRITE_FIELDS)

#define FSIZE(s, f)	sizeof(((struct s *)0)->f)
#define FEND(s, f)	(offsetof(struct s, f) + FSIZE(s, f))

/* No hole before a field: it starts where the previous one ended. */
#define SUM_SIZE(s, f)	+ FSIZE(s, f)
#define CHECK_STRUCT(s, fields)						\
	static_assert(sizeof(struct s) == 0 fields(SUM_SIZE),		\
		      "struct " #s ": field list incomplete or padding"); \
	static_assert(sizeof(struct s) % 8 == 0,			\
		      "struct " #s ": size not a multiple of 8");
RV_STRUCTS(CHECK_STRUCT)

/*
 * The "i" constraint makes the compiler print each value as a constant
 * into the assembly text; %c0 drops the '$' prefix x86 adds to
 * immediates.  Only ever compiled with -S, never assembled or run.
 */
#define ASM_FIELD(s, f)							\
	__asm__("\n.ascii \"@@LAYOUT " #s "." #f " offset %c0 size %c1\"" \
		: : "i"(offsetof(struct s, f)), "i"(FSIZE(s, f)));
#define ASM_STRUCT(s, fields)						\
	__asm__("\n.ascii \"@@LAYOUT " #s " size %c0 align %c1\""	\
		: : "i"(sizeof(struct s)), "i"(_Alignof(struct s)));	\
	fields(ASM_FIELD)

#define PRINT_FIELD(s, f)						\
	printf("@@LAYOUT " #s "." #f " offset %zu size %zu\n",		\
	       offsetof(struct s, f), FSIZE(s, f));
#define PRINT_STRUCT(s, fields)						\
	printf("@@LAYOUT " #s " size %zu align %zu\n",			\
	       sizeof(struct s), _Alignof(struct s));			\
	fields(PRINT_FIELD)

#ifdef LAYOUT_ASM
void layout_table(void);
void layout_table(void)
{
	RV_STRUCTS(ASM_STRUCT)
}
#else
int main(void)
{
	RV_STRUCTS(PRINT_STRUCT)
	return 0;
}
#endif
