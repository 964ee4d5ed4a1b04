// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The provider's entry point, its settings from the environment, the
 * fabric object and a minimal EQ (RDM endpoints report nothing through an
 * EQ, but fi_pingpong opens one unconditionally).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rvfi.h"

struct rvfi_env rvfi_env;

static void rvfi_cleanup(void)
{
}

struct fi_provider rvfi_prov = {
	.name = RVFI_NAME,
	.version = RVFI_PROV_VERSION,
	.fi_version = RVFI_FI_VERSION,
	.getinfo = rvfi_getinfo,
	.fabric = rvfi_fabric_open,
	.cleanup = rvfi_cleanup,
};

/* FNV-1a: spreads a launcher's job id over the 16 key bytes rv takes. */
static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	return h;
}

/*
 * The rv job key: every process of one job must find the same one, so
 * that they share the node's connections.  An explicit FI_RV_JOB_KEY wins;
 * otherwise the launcher's job id (Open MPI, PMIx, Slurm), hashed; else a
 * fixed key (all of the uid's processes then form one rv job, which is
 * still correct, only less isolated).
 */
static void job_key_init(void)
{
	static const char *const vars[] = {
		"OMPI_MCA_orte_ess_jobid", "PMIX_NAMESPACE", "SLURM_JOB_ID",
	};
	const char *v = getenv("FI_RV_JOB_KEY");
	size_t i;

	if (v && *v && strlen(v) <= RV_JOB_KEY_MAX) {
		snprintf(rvfi_env.job_key, sizeof(rvfi_env.job_key), "%s", v);
		return;
	}
	for (i = 0; !(v && *v) && i < sizeof(vars) / sizeof(vars[0]); i++)
		v = getenv(vars[i]);
	if (v && *v)
		snprintf(rvfi_env.job_key, sizeof(rvfi_env.job_key),
			 "fi%014llx",
			 (unsigned long long)(fnv1a(v) & 0xffffffffffffffull));
	else
		snprintf(rvfi_env.job_key, sizeof(rvfi_env.job_key), "rvfi");
}

void rvfi_env_init(void)
{
	const char *v;

	rvfi_env.rndv_threshold = RVFI_DEF_THRESHOLD;
	v = getenv("FI_RV_RNDV_THRESHOLD");
	if (v && *v)
		rvfi_env.rndv_threshold = strtoull(v, NULL, 0);
	/* Receivers refuse larger EAGER frames. */
	if (rvfi_env.rndv_threshold > RVFI_MAX_EAGER) {
		RVFI_WARN("FI_RV_RNDV_THRESHOLD %zu above %zu: using %zu\n",
			  rvfi_env.rndv_threshold, RVFI_MAX_EAGER,
			  RVFI_MAX_EAGER);
		rvfi_env.rndv_threshold = RVFI_MAX_EAGER;
	}
	v = getenv("FI_RV_NUM_CONN");
	if (v && *v)
		rvfi_env.num_conn = strtoul(v, NULL, 0);
	v = getenv("FI_RV_RING_ENTRIES");
	if (v && *v)
		rvfi_env.ring_entries = strtoul(v, NULL, 0);
	/* rv_attach() would refuse it: keep the module's default. */
	if (rvfi_env.ring_entries &&
	    (rvfi_env.ring_entries < RV_MIN_RING_ENTRIES ||
	     rvfi_env.ring_entries > RV_MAX_RING_ENTRIES ||
	     (rvfi_env.ring_entries & (rvfi_env.ring_entries - 1)))) {
		RVFI_WARN("FI_RV_RING_ENTRIES %u is not a power of two in %u..%u: using rv's default\n",
			  rvfi_env.ring_entries, RV_MIN_RING_ENTRIES,
			  RV_MAX_RING_ENTRIES);
		rvfi_env.ring_entries = 0;
	}
	v = getenv("FI_RV_DEVICE");
	if (v && *v)
		snprintf(rvfi_env.device, sizeof(rvfi_env.device), "%s", v);
	v = getenv("FI_RV_YIELD");
	rvfi_env.yield = v && *v && strcmp(v, "0");
	rvfi_env.sq_retry_us = RVFI_SQ_RETRY_US;
	v = getenv("FI_RV_SQ_RETRY_US");
	if (v && *v) {
		unsigned long us = strtoul(v, NULL, 0);

		if (us >= 1 && us <= RVFI_SQ_RETRY_US_MAX)
			rvfi_env.sq_retry_us = (unsigned int)us;
		else
			RVFI_WARN("FI_RV_SQ_RETRY_US %s not in 1..%u: using %u\n",
				  v, RVFI_SQ_RETRY_US_MAX, RVFI_SQ_RETRY_US);
	}
	v = getenv("FI_RV_STATS");
	rvfi_env.stats = v && *v && strcmp(v, "0");
	/* Tests only: bounded, a typo cannot hang a close for long. */
	v = getenv("FI_RV_CLOSE_DELAY_MS");
	if (v && *v) {
		unsigned long ms = strtoul(v, NULL, 0);

		rvfi_env.close_delay_ms = ms > 10000 ? 10000 : ms;
	}
	/*
	 * Tests only: lets the event ring overflow, to exercise
	 * ring_overflowed().  Loud, as no application should run with it.
	 */
	v = getenv("FI_RV_TEST_RING_UNBOUNDED");
	rvfi_env.test_ring_unbounded = v && *v && strcmp(v, "0");
	if (rvfi_env.test_ring_unbounded)
		RVFI_WARN("FI_RV_TEST_RING_UNBOUNDED: rendezvous not bounded by the event ring (tests only): completions may fail with -EOVERFLOW\n");
	job_key_init();
}

FI_EXT_INI
{
	fi_param_define(&rvfi_prov, "rndv_threshold", FI_PARAM_SIZE_T,
			"Messages above this many bytes take the rendezvous, over rv's RDMA writes to another node (default %d, at most 1 MiB)",
			RVFI_DEF_THRESHOLD);
	fi_param_define(&rvfi_prov, "device", FI_PARAM_STRING,
			"RDMA device (default: the first one)");
	fi_param_define(&rvfi_prov, "job_key", FI_PARAM_STRING,
			"rv job key, at most 16 bytes (default: from the launcher)");
	fi_param_define(&rvfi_prov, "num_conn", FI_PARAM_INT,
			"rv QPs per remote node (default: the module's)");
	fi_param_define(&rvfi_prov, "ring_entries", FI_PARAM_INT,
			"rv event ring entries per endpoint, a power of two (default: the module's)");
	fi_param_define(&rvfi_prov, "sq_retry_us", FI_PARAM_INT,
			"Microseconds before writes rv refused (queues full, or connecting) are retried when none of ours completed since, 1..%d (default %d)",
			RVFI_SQ_RETRY_US_MAX, RVFI_SQ_RETRY_US);
	rvfi_env_init();
	return &rvfi_prov;
}

/* ---- fabric -------------------------------------------------------------- */

static int fabric_close(struct fid *fid)
{
	struct rvfi_fabric *fab = container_of(fid, struct rvfi_fabric, fab.fid);

	if (fab->refs)
		return -FI_EBUSY;
	free(fab);
	return 0;
}

static struct fi_ops fabric_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = fabric_close,
	.bind = rvfi_no_bind,
	.control = rvfi_no_control,
	.ops_open = rvfi_no_ops_open,
	.tostr = rvfi_no_tostr,
	.ops_set = rvfi_no_ops_set,
};

static int no_pep(struct fid_fabric *f, struct fi_info *i,
		  struct fid_pep **p, void *c)
{
	(void)f; (void)i; (void)p; (void)c;
	return -FI_ENOSYS;
}

static int no_wait_open(struct fid_fabric *f, struct fi_wait_attr *a,
			struct fid_wait **w)
{
	(void)f; (void)a; (void)w;
	return -FI_ENOSYS;
}

/* Only EQs have a wait object fi_trywait() knows of. */
static int fabric_trywait(struct fid_fabric *f, struct fid **fids, int count)
{
	int i, ret;

	(void)f;
	for (i = 0; i < count; i++) {
		if (fids[i]->fclass != FI_CLASS_EQ)
			return -FI_ENOSYS;
		ret = rvfi_eq_trywait(container_of(fids[i], struct fid_eq, fid));
		if (ret)
			return ret;
	}
	return FI_SUCCESS;
}

static int domain2(struct fid_fabric *fabric, struct fi_info *info,
		   struct fid_domain **dom, uint64_t flags, void *context)
{
	if (flags)
		return -FI_EINVAL;
	return rvfi_domain_open(fabric, info, dom, context);
}

static struct fi_ops_fabric fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = rvfi_domain_open,
	.passive_ep = no_pep,
	.eq_open = rvfi_eq_open,
	.wait_open = no_wait_open,
	.trywait = fabric_trywait,
	.domain2 = domain2,
};

int rvfi_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		     void *context)
{
	struct rvfi_fabric *fab;

	if (attr && attr->name && strcmp(attr->name, RVFI_NAME))
		return -FI_ENODATA;
	fab = calloc(1, sizeof(*fab));
	if (!fab)
		return -FI_ENOMEM;
	fab->fab.fid.fclass = FI_CLASS_FABRIC;
	fab->fab.fid.context = context;
	fab->fab.fid.ops = &fabric_fi_ops;
	fab->fab.ops = &fabric_ops;
	/* libfabric sets it too; the CQ's error entry size depends on it. */
	fab->fab.api_version = attr && attr->api_version ? attr->api_version :
			       RVFI_FI_VERSION;
	*fabric = &fab->fab;
	return 0;
}
