// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv_hold: helper for rv_module_test.sh, vm/memcg.sh and vm/caps.sh.
 * Opens /dev/rv, with -a also attaches it to a fresh job on $RV_IBDEV
 * port 1 (with -r N, a ring of N entries; with -g, on the port's IPv4
 * RoCE v2 GID, which connections need), with -m (with -a) also registers
 * two 1 MiB buffers and keeps one in use, prints "ready <slot>" and keeps
 * the file until its stdin reaches EOF; then drops the MR reference
 * (which must work even after device removal).  -k KEY attaches with that
 * job key instead of a random one; -w keeps the remote-write MiB instead
 * of the local one; -R, after EOF, tries one more REG_MEM and prints
 * "reg_mem <errno name or 0>" (vm/launcher.sh: ENODEV once the launcher
 * ended the job).  -i INDEX attaches to
 * that device index instead of looking $RV_IBDEV up (netlink hides a
 * device from a namespace that may not use it; the kernel must refuse it
 * too).  Exit status 0 when all of that worked, 1 (with a message on
 * stderr) otherwise.
 *
 * The per-uid caps (vm/caps.sh):
 *  -c N  (with -a -g) creates connections to N distinct addresses (0:
 *        until refused) and prints "conns <created> <errno name or 0>"
 *  -j N  also opens N more files (0: until refused), each attached to a
 *        job of its own (a ring of -r entries), and prints
 *        "jobs <attached> <errno name or 0>"
 * Both hold what they made until EOF like the rest; a refusal is not a
 * failure of rv_hold (the caller checks the count and errno).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rv_test_util.h"

/* "EDQUOT" rather than a sentence: the scripts compare it. */
static const char *err_name(int err)
{
	const char *name = err ? strerrorname_np(err) : "0";

	return name ?: "unknown";
}

/*
 * Connections from @rv to 10.128.0.1, 10.128.0.2, ... until @max (0: no
 * limit) or a refusal; prints "conns N ERR".  Handles stay with @rv.
 */
static void make_conns(struct rv *rv, unsigned long max)
{
	unsigned long n = 0;
	int err = 0;

	while (!max || n < max) {
		struct sockaddr_in sin = {
			.sin_family = AF_INET,
			.sin_addr.s_addr = htonl(0x0a800001U + n),
		};
		int ret = rv_conn_create(rv, (struct sockaddr *)&sin,
					 sizeof(sin), NULL);

		if (ret < 0) {
			err = -ret;
			break;
		}
		n++;
	}
	printf("conns %lu %s\n", n, err_name(err));
}

/*
 * Files attached to jobs of their own until @max (0: no limit) or a
 * refusal; prints "jobs N ERR".  The files stay open in *@files.
 */
static void make_jobs(int dev_index, uint32_t ring_entries,
		      unsigned long max, struct rv ***files,
		      unsigned long *nfiles)
{
	unsigned long n = 0, room = 0;
	struct rv **f = NULL;
	int err = 0;

	while (!max || n < max) {
		struct rv_attach a;
		struct rv *rv;
		int ret;

		if (n == room) {
			struct rv **more;

			room = room ? 2 * room : 64;
			more = realloc(f, room * sizeof(*f));
			if (!more) {
				err = ENOMEM;
				break;
			}
			f = more;
		}
		ret = rv_open(&rv, 0);
		if (ret) {
			err = -ret;
			break;
		}
		rv_attach_init(&a, dev_index, RV_JOB_KEY_MAX);
		a.ring_entries = ring_entries;
		/* Files that register nothing: the smallest MR table. */
		a.mr_table_entries = RV_MIN_MR_TABLE_ENTRIES;
		ret = rv_attach(rv, &a);
		if (ret < 0) {
			rv_close(rv);
			err = -ret;
			break;
		}
		f[n++] = rv;
	}
	printf("jobs %lu %s\n", n, err_name(err));
	*files = f;
	*nfiles = n;
}

int main(int argc, char **argv)
{
	bool do_attach = false, do_mr = false, ipv4_gid = false;
	bool hold_remote = false, reg_after = false;
	const char *key = NULL;
	long conns = -1, jobs = -1;
	int ret, slot = -1, held = 0, opt, dev_index = -1;
	unsigned long nfiles = 0, i;
	uint32_t ring_entries = 0;
	struct rv **files = NULL;
	struct rv *rv;
	char *buf = NULL;
	char c;

	while ((opt = getopt(argc, argv, "ac:gi:j:k:mr:wR")) != -1) {
		switch (opt) {
		case 'a':
			do_attach = true;
			break;
		case 'c':
			conns = strtol(optarg, NULL, 0);
			break;
		case 'g':
			ipv4_gid = true;
			break;
		case 'i':
			dev_index = atoi(optarg);
			break;
		case 'j':
			jobs = strtol(optarg, NULL, 0);
			break;
		case 'k':
			key = optarg;
			break;
		case 'm':
			do_mr = true;
			break;
		case 'w':
			hold_remote = true;
			break;
		case 'R':
			reg_after = true;
			break;
		case 'r':
			ring_entries = strtoul(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr, "usage: rv_hold [-a [-i INDEX] [-k KEY] [-g [-c N]] [-m [-w] [-R]] [-r ENTRIES]] [-j N]\n");
			return 1;
		}
	}
	do_mr = do_mr && do_attach;
	if (key && strlen(key) > RV_JOB_KEY_MAX) {
		fprintf(stderr, "rv_hold: -k: at most %d bytes\n",
			RV_JOB_KEY_MAX);
		return 1;
	}
	if (conns >= 0 && !(do_attach && ipv4_gid)) {
		fprintf(stderr, "rv_hold: -c needs -a -g\n");
		return 1;
	}

	ret = rv_open(&rv, 0);
	if (ret) {
		fprintf(stderr, "rv_hold: rv_open: %s\n", strerror(-ret));
		return 1;
	}
	if (do_attach) {
		struct rv_attach a;

		ret = dev_index >= 0 ? dev_index :
				       rv_device_index(rv_test_ibdev());
		if (ret < 0) {
			fprintf(stderr, "rv_hold: device %s: %s\n",
				rv_test_ibdev(), strerror(-ret));
			goto out_close;
		}
		dev_index = ret;
		rv_attach_init(&a, ret, RV_JOB_KEY_MAX);
		if (key) {
			memset(a.job_key, 0, sizeof(a.job_key));
			a.job_key_len = strlen(key);
			memcpy(a.job_key, key, a.job_key_len);
		}
		a.ring_entries = ring_entries;
		a.mr_table_entries = RV_MIN_MR_TABLE_ENTRIES;
		if (ipv4_gid) {
			ret = rv_ipv4_gid(rv_test_ibdev(), RV_TEST_PORT, -1, NULL);
			if (ret < 0) {
				fprintf(stderr, "rv_hold: no IPv4 RoCE v2 GID on %s\n",
					rv_test_ibdev());
				ret = -ENOENT;
				goto out_close;
			}
			a.gid_index = ret;
		}
		ret = rv_attach(rv, &a);
		if (ret < 0) {
			fprintf(stderr, "rv_hold: rv_attach: %s\n",
				strerror(-ret));
			goto out_close;
		}
		slot = ret;
	}
	if (do_mr) {
		/* Aligned: the remote-access MiB takes one key on rxe. */
		buf = rv_map_aligned(2 << 20, 2 << 20);
		if (!buf) {
			ret = -errno;
			fprintf(stderr, "rv_hold: mmap: %s\n", strerror(-ret));
			goto out_close;
		}
		memset(buf, 1, 2 << 20);
		ret = rv_reg_mem(rv, buf, 1 << 20, RV_ACCESS_REMOTE_WRITE,
				 NULL);
		if (ret > 0 && hold_remote)
			held = ret;
		else if (ret > 0)
			ret = rv_dereg_mem(rv, ret);
		if (!ret)
			ret = held = rv_reg_mem(rv, buf + (1 << 20), 1 << 20,
						RV_ACCESS_LOCAL_WRITE, NULL);
		if (ret < 0) {
			fprintf(stderr, "rv_hold: MR: %s\n", strerror(-ret));
			goto out_close;
		}
	}
	if (conns >= 0)
		make_conns(rv, conns);
	if (jobs >= 0) {
		if (dev_index < 0)
			dev_index = rv_device_index(rv_test_ibdev());
		if (dev_index < 0) {
			ret = dev_index;
			fprintf(stderr, "rv_hold: device %s: %s\n",
				rv_test_ibdev(), strerror(-ret));
			goto out_close;
		}
		make_jobs(dev_index, ring_entries, jobs, &files, &nfiles);
	}
	printf("ready %d\n", slot);
	fflush(stdout);

	for (;;) {
		ssize_t n = read(STDIN_FILENO, &c, 1);

		if (n > 0 || (n < 0 && errno == EINTR))
			continue;
		break;
	}
	ret = 0;
	if (reg_after && do_mr) {
		int r = rv_reg_mem(rv, buf + (1 << 20), 1 << 20,
				   RV_ACCESS_LOCAL_WRITE, NULL);

		printf("reg_mem %s\n", err_name(r < 0 ? -r : 0));
		if (r > 0)
			rv_dereg_mem(rv, r);
	}
	if (held) {
		ret = rv_dereg_mem(rv, held);
		if (ret)
			fprintf(stderr, "rv_hold: rv_dereg_mem: %s\n",
				strerror(-ret));
	}
out_close:
	for (i = 0; i < nfiles; i++)
		rv_close(files[i]);
	free(files);
	rv_close(rv);
	return ret < 0 ? 1 : 0;
}
