// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The data path: RDMA WRITE with immediate over the job's connections,
 * and the file's data path figures.
 */
#include <errno.h>
#include <string.h>

#include <rv/librv.h>
#include "librv_internal.h"

int rv_post_write(struct rv *rv, const struct rv_write *w)
{
	struct rv_post_write cmd = { .size = sizeof(cmd) };

	if (!w)
		return -EINVAL;
	cmd.write = *w;
	return rv_ioctl(rv, RV_IOCTL_POST_WRITE, &cmd);
}

int rv_post_writes(struct rv *rv, const struct rv_write *w,
		   unsigned int count)
{
	struct rv_post_writes cmd;
	unsigned int done = 0, chunk;
	int ret;

	if (!w && count)
		return -EINVAL;
	/* The count of writes posted is the return value. */
	if (count > INT32_MAX)
		count = INT32_MAX;
	while (done < count) {
		chunk = count - done;
		if (chunk > RV_MAX_POST_WRITES)
			chunk = RV_MAX_POST_WRITES;
		memset(&cmd, 0, sizeof(cmd));
		cmd.size = sizeof(cmd);
		cmd.writes = (uintptr_t)(w + done);
		cmd.count = chunk;
		cmd.entry_size = sizeof(*w);
		ret = rv_ioctl(rv, RV_IOCTL_POST_WRITES, &cmd);
		if (ret)
			return done ? (int)done : ret;
		done += cmd.posted;
		if (cmd.posted < chunk)
			break;
	}
	return (int)done;
}

int rv_stats(struct rv *rv, struct rv_stats *s)
{
	if (!s)
		return -EINVAL;
	memset(s, 0, sizeof(*s));
	s->size = sizeof(*s);
	return rv_ioctl(rv, RV_IOCTL_STATS, s);
}
