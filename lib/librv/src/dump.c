// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Reading rv's state for tools: names of the connection states and reasons,
 * and an iterator over one DUMP snapshot.
 *
 * DUMP copies fixed-size records into a caller's buffer and says how many
 * there were; a record only ever grows at its end.  The iterator grows its
 * buffer until the whole snapshot fits, and hands out each record padded
 * with zeroes to the size this library was built with, so that a caller
 * never reads past a shorter record of an older kernel.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <rv/librv.h>
#include "librv_internal.h"

#define RV_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const char *const rv_conn_state_names[] = {
	[RV_CONN_STATE_IDLE] = "idle",
	[RV_CONN_STATE_CONNECTING] = "connecting",
	[RV_CONN_STATE_CONNECTED] = "connected",
	[RV_CONN_STATE_ERROR] = "error",
};

static const char *const rv_conn_reason_names[] = {
	[RV_CONN_REASON_NONE] = "none",
	[RV_CONN_REASON_UNREACHABLE] = "unreachable",
	[RV_CONN_REASON_NO_LISTENER] = "no_listener",
	[RV_CONN_REASON_NO_CONN] = "no_conn",
	[RV_CONN_REASON_BUSY] = "busy",
	[RV_CONN_REASON_BAD_REQUEST] = "bad_request",
	[RV_CONN_REASON_MISMATCH] = "mismatch",
	[RV_CONN_REASON_BAD_REPLY] = "bad_reply",
	[RV_CONN_REASON_TIMEOUT] = "timeout",
	[RV_CONN_REASON_DEVICE_REMOVED] = "device_removed",
	[RV_CONN_REASON_DISCONNECTED] = "disconnected",
	[RV_CONN_REASON_NO_RESOURCES] = "no_resources",
	[RV_CONN_REASON_QP_ERROR] = "qp_error",
	[RV_CONN_REASON_AUTH] = "auth",
	[RV_CONN_REASON_JOB_ENDED] = "job_ended",
};

/* struct rv_dump_qp.state has numbers only (see its kernel-doc). */
static const char *const rv_qp_state_names[] = {
	"idle", "connecting", "retrying", "connected", "failed",
};

static const char *rv_name(const char *const *names, size_t n, uint32_t v)
{
	return v < n && names[v] ? names[v] : "unknown";
}

const char *rv_conn_state_str(uint32_t state)
{
	return rv_name(rv_conn_state_names, RV_ARRAY_SIZE(rv_conn_state_names),
		       state);
}

const char *rv_conn_reason_str(uint32_t reason)
{
	return rv_name(rv_conn_reason_names,
		       RV_ARRAY_SIZE(rv_conn_reason_names), reason);
}

const char *rv_qp_state_str(uint32_t state)
{
	return rv_name(rv_qp_state_names, RV_ARRAY_SIZE(rv_qp_state_names),
		       state);
}

struct rv_dump_iter {
	char *records;		/* the snapshot as the kernel wrote it */
	uint32_t count;
	uint32_t total;
	uint32_t record_size;	/* the kernel's */
	uint32_t next;
	size_t rec_len;		/* bytes handed out per record */
	char *rec;		/* the current record, zero-padded to rec_len */
};

static size_t rv_dump_struct_size(uint32_t kind)
{
	switch (kind) {
	case RV_DUMP_JOBS:
		return sizeof(struct rv_dump_job);
	case RV_DUMP_CONNS:
		return sizeof(struct rv_dump_conn);
	case RV_DUMP_PROCS:
		return sizeof(struct rv_dump_proc);
	case RV_DUMP_DEVICES:
		return sizeof(struct rv_dump_device);
	default:
		return 0;
	}
}

/* One DUMP into a buffer grown until the snapshot fits (or hits the cap). */
static int rv_dump_fill(int fd, uint32_t kind, size_t struct_size,
			struct rv_dump_iter *it)
{
	size_t len = 64 * struct_size;

	for (;;) {
		struct rv_dump cmd = { .size = sizeof(cmd), .kind = kind };
		char *buf;

		/* The kernel caps buf_len's use; a u32 is all it takes. */
		if (len > UINT32_MAX)
			len = UINT32_MAX;
		buf = calloc(1, len);
		if (!buf)
			return -ENOMEM;
		cmd.buf = (uintptr_t)buf;
		cmd.buf_len = (uint32_t)len;
		if (ioctl(fd, RV_IOCTL_DUMP, &cmd)) {
			int err = -errno;

			free(buf);
			return err;
		}
		/* No size to grow by: the kernel's answer makes no sense. */
		if ((cmd.count || cmd.total) && cmd.record_size == 0) {
			free(buf);
			return -EPROTO;
		}
		if (cmd.count >= cmd.total || cmd.count >= RV_DUMP_MAX_RECORDS ||
		    len == UINT32_MAX) {
			it->records = buf;
			it->count = cmd.count;
			it->total = cmd.total;
			it->record_size = cmd.record_size;
			return 0;
		}
		free(buf);
		/* Room for a few more than now: records come and go meanwhile. */
		len = ((size_t)cmd.total + 16) * cmd.record_size;
	}
}

int rv_dump_open(int rv_fd, uint32_t kind, struct rv_dump_iter **itp)
{
	size_t struct_size = rv_dump_struct_size(kind);
	struct rv_dump_iter *it;
	int fd = rv_fd, ret;

	if (!itp || !struct_size)
		return -EINVAL;
	*itp = NULL;
	it = calloc(1, sizeof(*it));
	if (!it)
		return -ENOMEM;
	if (rv_fd < 0) {
		fd = open("/dev/rv", O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			ret = -errno;
			goto err_free;
		}
	}
	ret = rv_dump_fill(fd, kind, struct_size, it);
	if (rv_fd < 0)
		close(fd);
	if (ret)
		goto err_free;
	it->rec_len = struct_size > it->record_size ? struct_size :
						      it->record_size;
	it->rec = calloc(1, it->rec_len);
	if (!it->rec) {
		ret = -ENOMEM;
		goto err_records;
	}
	*itp = it;
	return 0;

err_records:
	free(it->records);
err_free:
	free(it);
	return ret;
}

const void *rv_dump_next(struct rv_dump_iter *it)
{
	if (!it || it->next >= it->count)
		return NULL;
	memset(it->rec, 0, it->rec_len);
	memcpy(it->rec, it->records + (size_t)it->next * it->record_size,
	       it->record_size);
	it->next++;
	return it->rec;
}

uint32_t rv_dump_count(const struct rv_dump_iter *it)
{
	return it ? it->count : 0;
}

uint32_t rv_dump_total(const struct rv_dump_iter *it)
{
	return it ? it->total : 0;
}

uint32_t rv_dump_record_size(const struct rv_dump_iter *it)
{
	return it ? it->record_size : 0;
}

void rv_dump_close(struct rv_dump_iter *it)
{
	if (!it)
		return;
	free(it->rec);
	free(it->records);
	free(it);
}
