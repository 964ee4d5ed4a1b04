// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv_launcher - bind or unbind a launcher job, as a launcher's privileged
 * part does (RV_IOCTL_LAUNCHER_JOB; tools/slurm/spank_rv.c for Slurm).
 *
 *   rv_launcher create -i ID -u UID -k KEY -c CGROUP_DIR [-P MAX_PROCS]
 *                      [-C MAX_CONNS] [-M MAX_PINNED_BYTES] [-E ERRNO]
 *   rv_launcher destroy -i ID -u UID -k KEY [-E ERRNO]
 *
 * ID in any base strtoull() takes.  Prints "ok" or "failed: errno E
 * (text)".  Exit status 0 when the command succeeded (with -E: when it
 * failed with errno ERRNO), 1 otherwise, 2 for usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <rdma/rv_user_ioctls.h>

int main(int argc, char **argv)
{
	struct rv_launcher_job lj = {
		.size = sizeof(lj),
		.cgroup_fd = -1,
	};
	const char *key = NULL, *cgroup = NULL;
	int c, fd, ret, err, expect = -1;

	if (argc < 2)
		return 2;
	if (!strcmp(argv[1], "destroy"))
		lj.flags = RV_LAUNCHER_JOB_F_DESTROY;
	else if (strcmp(argv[1], "create"))
		return 2;
	optind = 2;
	while ((c = getopt(argc, argv, "i:u:k:c:E:P:C:M:")) != -1) {
		switch (c) {
		case 'i': lj.launcher_id = strtoull(optarg, NULL, 0); break;
		case 'u': lj.uid = strtoul(optarg, NULL, 0); break;
		case 'k': key = optarg; break;
		case 'c': cgroup = optarg; break;
		case 'E': expect = atoi(optarg); break;
		case 'P': lj.max_procs = strtoul(optarg, NULL, 0); break;
		case 'C': lj.max_conns = strtoul(optarg, NULL, 0); break;
		case 'M': lj.max_pinned_bytes = strtoull(optarg, NULL, 0); break;
		default: return 2;
		}
	}
	if (!key || strlen(key) > sizeof(lj.job_key) ||
	    (!lj.flags && !cgroup)) {
		fprintf(stderr, "usage: see the comment at the top of %s\n",
			__FILE__);
		return 2;
	}
	lj.job_key_len = strlen(key);
	memcpy(lj.job_key, key, lj.job_key_len);
	if (cgroup) {
		lj.cgroup_fd = open(cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (lj.cgroup_fd < 0) {
			perror(cgroup);
			return 1;
		}
	}
	fd = open("/dev/rv", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		perror("/dev/rv");
		return 1;
	}
	ret = ioctl(fd, RV_IOCTL_LAUNCHER_JOB, &lj);
	err = ret ? errno : 0;
	if (ret)
		printf("failed: errno %d (%s)\n", err, strerror(err));
	else
		printf("ok\n");
	close(fd);
	if (expect >= 0)
		return err == expect ? 0 : 1;
	return ret ? 1 : 0;
}
