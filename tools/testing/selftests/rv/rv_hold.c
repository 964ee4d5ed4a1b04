// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv_hold: helper for rv_module_test.sh and vm/memcg.sh.  Opens /dev/rv,
 * with -a also attaches it to a fresh job on $RV_IBDEV port 1 (with -r N,
 * a ring of N entries), with -m (with -a) also registers two 1 MiB
 * buffers and keeps one in use, prints "ready <slot>" and keeps the file
 * until its stdin reaches EOF; then drops the MR reference (which must
 * work even after device removal).  -i INDEX attaches to that device
 * index instead of looking $RV_IBDEV up (netlink hides a device from a
 * namespace that may not use it; the kernel must refuse it too).  Exit status 0 when all of that
 * worked, 1 (with a message on stderr) otherwise.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rv_test_util.h"

int main(int argc, char **argv)
{
	bool do_attach = false, do_mr = false;
	int ret, slot = -1, held = 0, opt, dev_index = -1;
	uint32_t ring_entries = 0;
	struct rv *rv;
	char *buf;
	char c;

	while ((opt = getopt(argc, argv, "ai:mr:")) != -1) {
		switch (opt) {
		case 'a':
			do_attach = true;
			break;
		case 'i':
			dev_index = atoi(optarg);
			break;
		case 'm':
			do_mr = true;
			break;
		case 'r':
			ring_entries = strtoul(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr, "usage: rv_hold [-a [-i INDEX] [-m] [-r ENTRIES]]\n");
			return 1;
		}
	}
	do_mr = do_mr && do_attach;

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
		rv_attach_init(&a, ret, RV_JOB_KEY_MAX);
		a.ring_entries = ring_entries;
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
		if (ret > 0)
			ret = rv_dereg_mem(rv, ret);
		if (!ret)
			ret = held = rv_reg_mem(rv, buf + (1 << 20), 1 << 20,
						RV_ACCESS_LOCAL_WRITE, NULL);
		if (ret < 0) {
			fprintf(stderr, "rv_hold: MR: %s\n", strerror(-ret));
			goto out_close;
		}
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
	if (held) {
		ret = rv_dereg_mem(rv, held);
		if (ret)
			fprintf(stderr, "rv_hold: rv_dereg_mem: %s\n",
				strerror(-ret));
	}
out_close:
	rv_close(rv);
	return ret < 0 ? 1 : 0;
}
