// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * install_smoke.c - the smallest librv program, built by install_test.sh
 * against a staged "make install" (never against the source tree) to prove
 * that the installed header, uAPI header, pkg-config file and library are
 * enough to build and run a client.
 *
 * Prints the library's answer and exits 0 when it is one a working
 * installation gives: rv_open() succeeds (then rv_query() must too), or it
 * fails with -ENOENT because /dev/rv is absent on this host.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <rv/librv.h>
#include <rdma/rv_user_ioctls.h>

int main(void)
{
	struct rv_query q;
	struct rv *rv;
	int ret;

	ret = rv_open(&rv, 0);
	if (ret == -ENOENT) {
		printf("rv_open: %s (no /dev/rv here)\n", strerror(-ret));
		return 0;
	}
	if (ret) {
		printf("rv_open: %s\n", strerror(-ret));
		return 1;
	}
	memset(&q, 0, sizeof(q));
	ret = rv_query(rv, &q);
	printf("rv_query: %s, cmd_mask 0x%llx\n", ret ? strerror(-ret) : "ok",
	       (unsigned long long)q.cmd_mask);
	rv_close(rv);
	return ret ? 1 : 0;
}
