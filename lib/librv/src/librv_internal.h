/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the library's sources share; not installed. */
#ifndef LIBRV_INTERNAL_H
#define LIBRV_INTERNAL_H

struct rv {
	int fd;
	/* Slot from the last successful rv_attach(), -1 before that. */
	int slot;
};

int rv_ioctl(const struct rv *rv, unsigned long cmd, void *arg);

#endif /* LIBRV_INTERNAL_H */
