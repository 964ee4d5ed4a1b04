// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv_ipv4_gid(): the GID entry of a port that carries an IPv4 address.
 *
 * rv's connections take the job's GID as their source address and reach
 * peers by IP address, so a process needs the GID index that goes with the
 * node's IPv4 address (for RoCE, an IPv4-mapped GID).  The GID table is
 * read from sysfs, where ib_core publishes it per port: a GID as eight
 * groups of four hex digits, and the entry's type ("IB/RoCE v1",
 * "RoCE v2").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <rv/librv.h>

#define RV_SYSFS_IB "/sys/class/infiniband"
/* ib_core's GID tables are far smaller; this bounds a corrupt sysfs. */
#define RV_GID_TABLE_MAX 4096
/* "0000:0000:0000:0000:0000:ffff:c0a8:0101" */
#define RV_GID_PREFIX_V4MAPPED "0000:0000:0000:0000:0000:ffff:"

/*
 * Reads the first line of @path into @buf without its newline.  Returns
 * its length or -errno (-ENOENT when the file does not exist).
 */
static int rv_read_attr(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	do {
		n = read(fd, buf, len - 1);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n < 0)
		return (int)n;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return (int)strlen(buf);
}

/* The IPv4 address of an IPv4-mapped GID in sysfs notation, or -ENOENT. */
static int rv_gid_to_ipv4(const char *gid, struct in_addr *addr)
{
	size_t prefix = strlen(RV_GID_PREFIX_V4MAPPED);
	unsigned int hi, lo;
	const char *hex;
	char tail;

	if (strncmp(gid, RV_GID_PREFIX_V4MAPPED, prefix))
		return -ENOENT;
	hex = gid + prefix;
	/* Exactly "hhhh:hhhh": sscanf alone would take signs and spaces. */
	if (strlen(hex) != 9 || hex[4] != ':' ||
	    strspn(hex, "0123456789abcdefABCDEF") != 4 ||
	    strspn(hex + 5, "0123456789abcdefABCDEF") != 4 ||
	    sscanf(hex, "%4x:%4x%c", &hi, &lo, &tail) != 2)
		return -ENOENT;
	addr->s_addr = htonl(hi << 16 | lo);
	return 0;
}

/*
 * Entry @index of the port whose sysfs directory is @port_dir: 0 with its
 * address if it carries an IPv4 address (and, if @roce_v2, is a RoCE v2
 * entry), -ENOENT if it does not, -ENXIO past the end of the table.
 */
static int rv_gid_entry(const char *port_dir, unsigned int index,
			bool roce_v2, struct in_addr *addr)
{
	char path[PATH_MAX], buf[128];
	int ret;

	snprintf(path, sizeof(path), "%s/gids/%u", port_dir, index);
	ret = rv_read_attr(path, buf, sizeof(buf));
	if (ret == -ENOENT)
		return -ENXIO;
	/* ib_core answers EINVAL for an entry that is not in use. */
	if (ret < 0 || rv_gid_to_ipv4(buf, addr))
		return -ENOENT;
	if (!roce_v2)
		return 0;
	snprintf(path, sizeof(path), "%s/gid_attrs/types/%u", port_dir, index);
	if (rv_read_attr(path, buf, sizeof(buf)) < 0 || strcmp(buf, "RoCE v2"))
		return -ENOENT;
	return 0;
}

int rv_ipv4_gid(const char *ibdev_name, unsigned int port_num, int gid_index,
		struct in_addr *addr)
{
	char port_dir[PATH_MAX];
	struct in_addr found;
	unsigned int i;
	int ret;

	if (!ibdev_name || !*ibdev_name || strchr(ibdev_name, '/') ||
	    !strcmp(ibdev_name, ".") || !strcmp(ibdev_name, "..") ||
	    !port_num || gid_index < -1)
		return -EINVAL;
	ret = snprintf(port_dir, sizeof(port_dir), RV_SYSFS_IB "/%s/ports/%u",
		       ibdev_name, port_num);
	if (ret < 0 || (size_t)ret >= sizeof(port_dir))
		return -ENODEV;
	if (access(port_dir, F_OK))
		return -ENODEV;

	if (gid_index >= 0) {
		ret = rv_gid_entry(port_dir, (unsigned int)gid_index, false,
				   &found);
		if (ret)
			return -ENOENT;
		if (addr)
			*addr = found;
		return gid_index;
	}
	for (i = 0; i < RV_GID_TABLE_MAX; i++) {
		ret = rv_gid_entry(port_dir, i, true, &found);
		if (ret == -ENXIO)
			break;
		if (!ret) {
			if (addr)
				*addr = found;
			return (int)i;
		}
	}
	return -ENOENT;
}
