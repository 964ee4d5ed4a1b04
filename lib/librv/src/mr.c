// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The MR cache commands: thin wrappers that fill in the size/flags header,
 * after the MR table (mr_table.c) for registrations and their release.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>

#include <rv/librv.h>
#include "librv_internal.h"

int rv_reg_mem_keys(struct rv *rv, const void *addr, size_t length,
		    unsigned int access, struct rv_reg_mem *out,
		    uint32_t *rkeys, uint32_t nr_rkeys)
{
	struct rv_reg_mem cmd;
	int ret;

	if (!rkeys)
		nr_rkeys = 0;
	ret = rv_mr_table_lookup(rv, (uintptr_t)addr, length, access, out,
				 rkeys, nr_rkeys);
	if (ret)
		return ret;

	memset(&cmd, 0, sizeof(cmd));
	cmd.size = sizeof(cmd);
	cmd.flags = rv_mr_table_active(rv) ? RV_REG_MEM_F_TABLE_HOLD : 0;
	cmd.addr = (uintptr_t)addr;
	cmd.length = length;
	cmd.access = access;
	cmd.rkeys = (uintptr_t)rkeys;
	cmd.nr_rkeys = nr_rkeys;
	ret = rv_ioctl(rv, RV_IOCTL_REG_MEM, &cmd);
	if (!ret)
		rv_mr_table_learn(rv, &cmd, access);
	/* EOVERFLOW still says how many keys are needed. */
	if (out && (!ret || ret == -EOVERFLOW))
		*out = cmd;
	if (ret)
		return ret;
	/* Handles are 1..INT_MAX. */
	return (int)cmd.handle;
}

int rv_reg_mem(struct rv *rv, const void *addr, size_t length,
	       unsigned int access, struct rv_reg_mem *out)
{
	struct rv_reg_mem cmd;
	int ret;

	ret = rv_reg_mem_keys(rv, addr, length, access, &cmd, NULL, 0);
	/* Callers built against librv 1.2 have the struct up to here. */
	if (out && ret > 0)
		memcpy(out, &cmd, offsetof(struct rv_reg_mem, rkeys));
	return ret;
}

int rv_dereg_mem(struct rv *rv, unsigned int handle)
{
	struct rv_dereg_mem cmd;
	int ret;

	ret = rv_mr_table_release(rv, handle);
	if (ret != -ENOENT)
		return ret;
	memset(&cmd, 0, sizeof(cmd));
	cmd.size = sizeof(cmd);
	cmd.handle = handle;
	ret = rv_ioctl(rv, RV_IOCTL_DEREG_MEM, &cmd);
	/* At most one reference per successful call: refs fits an int. */
	return ret ? ret : (int)cmd.refs;
}

int rv_evict(struct rv *rv, struct rv_evict *e)
{
	if (!e)
		return -EINVAL;
	e->size = sizeof(*e);
	e->freed_entries = 0;
	e->freed_bytes = 0;
	return rv_ioctl(rv, RV_IOCTL_EVICT, e);
}

int rv_mr_stats(struct rv *rv, struct rv_mr_stats *s)
{
	if (!s)
		return -EINVAL;
	memset(s, 0, sizeof(*s));
	s->size = sizeof(*s);
	return rv_ioctl(rv, RV_IOCTL_MR_STATS, s);
}
