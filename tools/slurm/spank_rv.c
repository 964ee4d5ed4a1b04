// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * spank_rv - a Slurm SPANK plugin that makes every Slurm job step an rv
 * "launcher job" (RV_IOCTL_LAUNCHER_JOB, <rdma/rv_user_ioctls.h>).
 *
 * plugstack.conf:   required /usr/local/lib/slurm/spank_rv.so [LIMIT=N...]
 *
 * LIMITs, each rv job of a step on a node (RV_IOCTL_LAUNCHER_JOB; EDQUOT
 * beyond): max_procs=N processes attached, max_conns=N connections,
 * max_pinned=N bytes pinned by registrations (suffix K, M or G: KiB, MiB,
 * GiB); none by default.
 *
 * In slurmstepd (remote context), for every normal step (not the batch,
 * interactive or extern step):
 *
 *   slurm_spank_user_init       FI_RV_JOB_KEY=s<jobid>.<stepid> in the
 *                               tasks' environment (the rv provider's job
 *                               key), launcher id (jobid << 32) | stepid
 *   slurm_spank_task_post_fork  (root, in slurmstepd, for each local task
 *                               once it is forked and in the step's
 *                               cgroup, before any task may exec): the
 *                               first call binds the task's uid and the key
 *                               to the step's cgroup v2 directory; later
 *                               calls see it is done (one slurmstepd per
 *                               node and step, calls in sequence)
 *   slurm_spank_exit            (root, in slurmstepd, however the tasks
 *                               ended) destroys the binding: rv tears the
 *                               step's connections down
 *
 * and in the job epilog (slurm_spank_job_epilog, root, every node of the
 * job) destroys any binding of the job a slurmstepd left behind (killed
 * with SIGKILL, say): each binding is recorded in RUN_DIR while it exists.
 *
 * No /dev/rv, or an rv without RV_IOCTL_LAUNCHER_JOB (ENOTTY): logged, and
 * the step runs without a binding.  Any other failure to bind fails the
 * callback: a "required" plugin then fails the step, an "optional" one
 * only logs it (spank(8)).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include <rdma/rv_user_ioctls.h>

SPANK_PLUGIN(rv, 1);

#define RV_DEV		"/dev/rv"
#define KEY_ENV		"FI_RV_JOB_KEY"
/* One file per live binding: "<jobid>.<stepid>", holding "<launcher_id>
 * <uid> <key>" (root only; /run is per boot, as rv's bindings). */
#define RUN_DIR		"/run/spank_rv"
#define PFX		"spank_rv: "

/* This slurmstepd's step (remote context). */
static struct {
	int active;		/* a normal step: key and launcher_id valid */
	uint32_t jobid, stepid;
	uid_t uid;
	uint64_t launcher_id;
	char key[RV_JOB_KEY_MAX + 1];
	int bound;		/* the binding exists (we made it) */
	int tried;		/* post_fork did its work (bound or not) */
} st;

/*
 * The step's key, at most RV_JOB_KEY_MAX bytes: "s<jobid>.<stepid>" in
 * decimal (fits for job ids of up to 8 digits, Slurm's MaxJobId being at
 * most 67043328, and step ids below 10^6); else, e.g. a federated job id,
 * "t<jobid>.<stepid>" in base 36 (at most 1 + 7 + 1 + 7 bytes).
 */
static void b36(char *s, uint32_t v)
{
	char t[8];
	int n = 0;

	do {
		t[n++] = "0123456789abcdefghijklmnopqrstuvwxyz"[v % 36];
		v /= 36;
	} while (v);
	while (n)
		*s++ = t[--n];
	*s = 0;
}

static void make_key(char *key, uint32_t jobid, uint32_t stepid)
{
	char buf[32], a[8], b[8];

	snprintf(buf, sizeof(buf), "s%" PRIu32 ".%" PRIu32, jobid, stepid);
	if (strlen(buf) > RV_JOB_KEY_MAX) {
		b36(a, jobid);
		b36(b, stepid);
		snprintf(buf, sizeof(buf), "t%s.%s", a, b);
	}
	snprintf(key, RV_JOB_KEY_MAX + 1, "%s", buf);
}

/* plugstack.conf's limits for every binding. */
static struct {
	uint32_t max_procs, max_conns;
	uint64_t max_pinned;
} limits;

/* "N", "NK", "NM" or "NG" (1024-based); 0 or -1. */
static int parse_size(const char *s, uint64_t *v)
{
	unsigned int shift = 0;
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -1;
	switch (*end) {
	case 'K': shift = 10; end++; break;
	case 'M': shift = 20; end++; break;
	case 'G': shift = 30; end++; break;
	default: break;
	}
	if (*end || *v > (UINT64_MAX >> shift))
		return -1;
	*v <<= shift;
	return 0;
}

static int check_args(int ac, char **av)
{
	uint64_t v;
	int i;

	for (i = 0; i < ac; i++) {
		const char *eq = strchr(av[i], '=');
		size_t len = eq ? (size_t)(eq - av[i]) : strlen(av[i]);

		if (!eq || parse_size(eq + 1, &v))
			goto bad;
		if (len == 9 && !strncmp(av[i], "max_procs", len) &&
		    v <= UINT32_MAX)
			limits.max_procs = v;
		else if (len == 9 && !strncmp(av[i], "max_conns", len) &&
			 v <= UINT32_MAX)
			limits.max_conns = v;
		else if (len == 10 && !strncmp(av[i], "max_pinned", len))
			limits.max_pinned = v;
		else
			goto bad;
	}
	return 0;
bad:
	slurm_error(PFX "bad argument \"%s\" in plugstack.conf (max_procs=N, max_conns=N, max_pinned=N[KMG])",
		    av[i]);
	return -1;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	(void)sp;
	return check_args(ac, av);
}

/* Fills st for a normal step; 0 (nothing to do) for the others. */
static int step_init(spank_t sp)
{
	spank_err_t e;

	if (st.active)
		return 1;
	e = spank_get_item(sp, S_JOB_ID, &st.jobid);
	if (e == ESPANK_SUCCESS)
		e = spank_get_item(sp, S_JOB_STEPID, &st.stepid);
	if (e == ESPANK_SUCCESS)
		e = spank_get_item(sp, S_JOB_UID, &st.uid);
	if (e != ESPANK_SUCCESS) {
		slurm_error(PFX "no job id, step id or uid: %s",
			    spank_strerror(e));
		return -1;
	}
	/*
	 * Only steps launched by srun (or by mpirun through srun) run tasks
	 * on several nodes.  The batch step (SLURM_BATCH_SCRIPT) and the
	 * interactive one run a script or shell on the first node only: a
	 * binding there could never connect anywhere (every handshake binds
	 * the launcher id, which no other node has), and the MPI ranks they
	 * start run in steps of their own, bound here.  The extern step
	 * (SLURM_EXTERN_CONT) holds processes adopted from outside Slurm.
	 */
	if (st.stepid > SLURM_MAX_NORMAL_STEP_ID)
		return 0;
	st.launcher_id = ((uint64_t)st.jobid << 32) | st.stepid;
	make_key(st.key, st.jobid, st.stepid);
	st.active = 1;
	return 1;
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	spank_err_t e;
	int r;

	(void)ac;
	(void)av;
	if (!spank_remote(sp))
		return 0;
	r = step_init(sp);
	if (r <= 0)
		return r;
	e = spank_setenv(sp, KEY_ENV, st.key, 1);
	if (e != ESPANK_SUCCESS) {
		slurm_error(PFX "step %" PRIu32 ".%" PRIu32 ": cannot set %s=%s: %s",
			    st.jobid, st.stepid, KEY_ENV, st.key,
			    spank_strerror(e));
		return -1;
	}
	slurm_verbose(PFX "step %" PRIu32 ".%" PRIu32 ": %s=%s launcher_id %#" PRIx64,
		      st.jobid, st.stepid, KEY_ENV, st.key, st.launcher_id);
	return 0;
}

/*
 * The cgroup v2 directory of the step: the unified ("0::") line of
 * /proc/<pid>/cgroup, cut after its "step_<stepid>" component, under the
 * cgroup2 mount.  -1 with errno (ENOENT: no such component).
 */
static int cgroup2_mount(char *mnt, size_t len)
{
	char line[4096];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int found = 0;

	if (!f)
		return -1;
	/* "id parent maj:min root mountpoint opts [tags] - fstype src opts" */
	while (!found && fgets(line, sizeof(line), f)) {
		char root[1024], mp[1024];
		char *sep = strstr(line, " - ");

		if (!sep || strncmp(sep + 3, "cgroup2 ", 8))
			continue;
		if (sscanf(line, "%*s %*s %*s %1023s %1023s", root, mp) != 2)
			continue;
		/* The mount of the whole hierarchy (not a namespace's). */
		if (strcmp(root, "/"))
			continue;
		snprintf(mnt, len, "%s", mp);
		found = 1;
	}
	fclose(f);
	if (!found)
		errno = ENOENT;
	return found ? 0 : -1;
}

static int step_cgroup_path(pid_t pid, char *path, size_t len)
{
	char fn[64], line[4096], comp[32], mnt[1024];
	char *p = NULL, *end;
	size_t cl;
	FILE *f;

	snprintf(fn, sizeof(fn), "/proc/%ld/cgroup", (long)pid);
	f = fopen(fn, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "0::", 3)) {
			p = line + 3;
			break;
		}
	}
	fclose(f);
	if (!p) {
		errno = ENOENT;	/* cgroup v1 only */
		return -1;
	}
	p[strcspn(p, "\n")] = 0;
	snprintf(comp, sizeof(comp), "/step_%" PRIu32, st.stepid);
	cl = strlen(comp);
	for (end = strstr(p, comp); end; end = strstr(end + 1, comp))
		if (end[cl] == '/' || end[cl] == 0)
			break;
	if (!end) {
		errno = ENOENT;
		return -1;
	}
	end[cl] = 0;
	if (cgroup2_mount(mnt, sizeof(mnt)))
		return -1;
	if ((size_t)snprintf(path, len, "%s%s", strcmp(mnt, "/") ? mnt : "", p) >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/* RV_IOCTL_LAUNCHER_JOB on @fd; 0 or -1 with errno. */
static int launcher_job(int fd, uint32_t flags, uint64_t id, uid_t uid,
			const char *key, int cgfd)
{
	struct rv_launcher_job lj;

	memset(&lj, 0, sizeof(lj));
	lj.size = sizeof(lj);
	lj.flags = flags;
	lj.launcher_id = id;
	lj.uid = uid;
	lj.cgroup_fd = cgfd;
	lj.job_key_len = strlen(key);
	memcpy(lj.job_key, key, lj.job_key_len);
	lj.max_procs = limits.max_procs;
	lj.max_conns = limits.max_conns;
	lj.max_pinned_bytes = limits.max_pinned;
	return ioctl(fd, RV_IOCTL_LAUNCHER_JOB, &lj);
}

static void state_name(char *fn, size_t len, uint32_t jobid, uint32_t stepid)
{
	snprintf(fn, len, RUN_DIR "/%" PRIu32 ".%" PRIu32, jobid, stepid);
}

static int state_write(void)
{
	char fn[128], tmp[160];
	FILE *f;

	if (mkdir(RUN_DIR, 0700) && errno != EEXIST)
		return -1;
	state_name(fn, sizeof(fn), st.jobid, st.stepid);
	snprintf(tmp, sizeof(tmp), "%s.tmp", fn);
	f = fopen(tmp, "we");
	if (!f)
		return -1;
	fprintf(f, "%" PRIu64 " %lu %s\n", st.launcher_id,
		(unsigned long)st.uid, st.key);
	if (fclose(f) || rename(tmp, fn)) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

static void state_remove(uint32_t jobid, uint32_t stepid)
{
	char fn[128];

	state_name(fn, sizeof(fn), jobid, stepid);
	unlink(fn);
}

/* Opens /dev/rv; 1 if there is none (rv not loaded: nothing to do). */
static int rv_open(int *fd)
{
	*fd = open(RV_DEV, O_RDWR | O_CLOEXEC);
	if (*fd >= 0)
		return 0;
	if (errno == ENOENT || errno == ENODEV || errno == ENXIO)
		return 1;
	return -1;
}

static int bind_step(spank_t sp)
{
	char path[4096];
	pid_t pid = 0;
	int fd, cgfd, r, retried = 0;

	r = rv_open(&fd);
	if (r) {
		if (r > 0)
			slurm_info(PFX "step %" PRIu32 ".%" PRIu32 ": no %s, running without an rv binding",
				   st.jobid, st.stepid, RV_DEV);
		else
			slurm_error(PFX "step %" PRIu32 ".%" PRIu32 ": open %s: %m",
				    st.jobid, st.stepid, RV_DEV);
		return r > 0 ? 0 : -1;
	}
	/* The task's own cgroup (it is in it by now), else slurmstepd's. */
	if (spank_get_item(sp, S_TASK_PID, &pid) != ESPANK_SUCCESS ||
	    step_cgroup_path(pid, path, sizeof(path))) {
		if (step_cgroup_path(getpid(), path, sizeof(path))) {
			slurm_error(PFX "step %" PRIu32 ".%" PRIu32 ": no cgroup v2 directory step_%" PRIu32 " for task pid %ld or slurmstepd: %m",
				    st.jobid, st.stepid, st.stepid, (long)pid);
			close(fd);
			return -1;
		}
	}
	cgfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cgfd < 0) {
		slurm_error(PFX "step %" PRIu32 ".%" PRIu32 ": open %s: %m",
			    st.jobid, st.stepid, path);
		close(fd);
		return -1;
	}
	/* Recorded first, so that a slurmstepd killed after the ioctl leaves
	 * the epilog something to destroy. */
	if (state_write())
		slurm_error(PFX "step %" PRIu32 ".%" PRIu32 ": cannot record the binding in %s: %m (the epilog cannot clean it up)",
			    st.jobid, st.stepid, RUN_DIR);
again:
	r = launcher_job(fd, 0, st.launcher_id, st.uid, st.key, cgfd);
	if (r && errno == EEXIST && !retried) {
		/*
		 * Slurm runs a job's step once per node (a requeued job's
		 * runs follow its epilog): a binding of the same launcher
		 * id, uid and key is a leftover the epilog could not
		 * destroy.  Anything else is not ours: destroy fails.
		 */
		retried = 1;
		if (!launcher_job(fd, RV_LAUNCHER_JOB_F_DESTROY, st.launcher_id,
				  st.uid, st.key, -1)) {
			slurm_info(PFX "step %" PRIu32 ".%" PRIu32 ": destroyed a leftover binding of key %s",
				   st.jobid, st.stepid, st.key);
			goto again;
		}
		errno = EEXIST;
	}
	if (r) {
		int err = errno;

		state_remove(st.jobid, st.stepid);
		close(cgfd);
		close(fd);
		errno = err;
		if (err == ENOTTY) {
			slurm_error(PFX "step %" PRIu32 ".%" PRIu32 ": %s does not support RV_IOCTL_LAUNCHER_JOB (ENOTTY: rv.ko older than launcher bindings): key %s is not bound, the step runs without a binding",
				    st.jobid, st.stepid, RV_DEV, st.key);
			return 0;
		}
		slurm_error(PFX "step %" PRIu32 ".%" PRIu32 ": RV_IOCTL_LAUNCHER_JOB create (launcher_id %#" PRIx64 ", uid %lu, key %s, cgroup %s) failed: %m%s",
			    st.jobid, st.stepid, st.launcher_id,
			    (unsigned long)st.uid, st.key, path,
			    err == EPERM && geteuid() ? " (not root)" : "");
		return -1;
	}
	close(cgfd);
	close(fd);
	st.bound = 1;
	slurm_info(PFX "step %" PRIu32 ".%" PRIu32 ": bound uid %lu key %s to %s, launcher_id %#" PRIx64,
		   st.jobid, st.stepid, (unsigned long)st.uid, st.key, path,
		   st.launcher_id);
	return 0;
}

/*
 * Root, in slurmstepd, once per local task after its fork, in task order,
 * before any task is let exec: the first call makes the binding.
 */
int slurm_spank_task_post_fork(spank_t sp, int ac, char **av)
{
	int r;

	(void)ac;
	(void)av;
	if (!spank_remote(sp))
		return 0;
	r = step_init(sp);
	if (r <= 0 || st.tried)
		return r < 0 ? -1 : 0;
	st.tried = 1;
	return bind_step(sp);
}

static int destroy(uint64_t id, uid_t uid, const char *key, const char *who)
{
	int fd, r;

	r = rv_open(&fd);
	if (r)
		return r > 0 ? 0 : -1;
	r = launcher_job(fd, RV_LAUNCHER_JOB_F_DESTROY, id, uid, key, -1);
	if (r && errno != ENOENT) {
		slurm_error(PFX "%s: RV_IOCTL_LAUNCHER_JOB destroy (launcher_id %#" PRIx64 ", uid %lu, key %s) failed: %m",
			    who, id, (unsigned long)uid, key);
		close(fd);
		return -1;
	}
	slurm_info(PFX "%s: %s binding of key %s, launcher_id %#" PRIx64,
		   who, r ? "no" : "destroyed the", key, id);
	close(fd);
	return 0;
}

/* Root, in slurmstepd, once the step's tasks are gone, however they ended. */
int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	char who[64];
	int r;

	(void)ac;
	(void)av;
	if (!spank_remote(sp) || !st.bound)
		return 0;
	snprintf(who, sizeof(who), "step %" PRIu32 ".%" PRIu32 " exit",
		 st.jobid, st.stepid);
	r = destroy(st.launcher_id, st.uid, st.key, who);
	if (!r) {
		st.bound = 0;
		state_remove(st.jobid, st.stepid);
	}
	return r;
}

/*
 * Root, at the job's end on every node it ran on (job_script context): the
 * bindings of the job's steps whose slurmstepd did not destroy them.
 */
int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	char pfx[16], fn[300], who[64], line[128], key[RV_JOB_KEY_MAX + 2];
	uint32_t jobid = 0;
	unsigned long uid;
	struct dirent *de;
	uint64_t id;
	int rc = 0;
	DIR *d;

	(void)ac;
	(void)av;
	if (spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS || !jobid) {
		const char *v = getenv("SLURM_JOB_ID");

		jobid = v ? strtoul(v, NULL, 10) : 0;
	}
	if (!jobid)
		return 0;
	d = opendir(RUN_DIR);
	if (!d)
		return 0;
	snprintf(pfx, sizeof(pfx), "%" PRIu32 ".", jobid);
	while ((de = readdir(d))) {
		FILE *f;
		int ok;

		if (strncmp(de->d_name, pfx, strlen(pfx)) ||
		    strstr(de->d_name, ".tmp"))
			continue;
		snprintf(fn, sizeof(fn), RUN_DIR "/%s", de->d_name);
		f = fopen(fn, "re");
		if (!f)
			continue;
		ok = fgets(line, sizeof(line), f) &&
		     sscanf(line, "%" SCNu64 " %lu %17s", &id, &uid, key) == 3 &&
		     strlen(key) <= RV_JOB_KEY_MAX;
		fclose(f);
		if (!ok) {
			slurm_error(PFX "job %" PRIu32 " epilog: bad record %s",
				    jobid, fn);
			unlink(fn);
			continue;
		}
		snprintf(who, sizeof(who), "job %" PRIu32 " epilog (step %s)",
			 jobid, de->d_name + strlen(pfx));
		if (destroy(id, uid, key, who))
			rc = -1;
		else
			unlink(fn);
	}
	closedir(d);
	return rc;
}
