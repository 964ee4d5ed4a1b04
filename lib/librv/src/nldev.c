// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv_device_index(): find an RDMA device's kernel index by name with an
 * RDMA_NLDEV_CMD_GET dump over NETLINK_RDMA, the same query "rdma dev"
 * makes.  Written without libnl/libmnl so librv has no dependencies; every
 * length in the kernel's reply is checked before it is used.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>

#include <rv/librv.h>

/*
 * A dump reply packs as many device messages into one datagram as fit in
 * the kernel's skb (about a page, or up to 32 KiB); a bigger buffer than
 * any skb the kernel builds means no reply is truncated.
 */
#define RV_NL_BUF_SIZE (64 * 1024)
/* Give up on a kernel that stops answering instead of blocking forever. */
#define RV_NL_TIMEOUT_SEC 5
/* Upper bound on datagrams per dump: far above any real device count. */
#define RV_NL_MAX_RECV 4096

#define RV_NL_TYPE RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET)

struct rv_nl_req {
	struct nlmsghdr nlh;
};

/* Walks the attributes of one device message; 1 if it is @name. */
static int rv_nl_parse_dev(const struct nlmsghdr *nlh, const char *name,
			   size_t name_len, uint32_t *index)
{
	const unsigned char *p = (const unsigned char *)NLMSG_DATA(nlh);
	size_t left = nlh->nlmsg_len - NLMSG_HDRLEN;
	bool have_index = false, match = false;

	/* RDMA netlink has no family header: attributes start right away. */
	while (left >= NLA_HDRLEN) {
		const struct nlattr *nla = (const struct nlattr *)p;
		size_t len = nla->nla_len, step = NLA_ALIGN(len);
		const void *data = p + NLA_HDRLEN;
		size_t dlen;

		if (len < NLA_HDRLEN || len > left)
			return -EPROTO;
		dlen = len - NLA_HDRLEN;

		switch (nla->nla_type & NLA_TYPE_MASK) {
		case RDMA_NLDEV_ATTR_DEV_INDEX:
			if (dlen < sizeof(uint32_t))
				return -EPROTO;
			memcpy(index, data, sizeof(*index));
			have_index = true;
			break;
		case RDMA_NLDEV_ATTR_DEV_NAME:
			/* A NUL-terminated string that must fit in dlen. */
			match = dlen > name_len &&
				!memcmp(data, name, name_len) &&
				((const char *)data)[name_len] == '\0';
			break;
		default:
			break;
		}
		/* The last attribute may lack its alignment padding. */
		if (step >= left)
			break;
		p += step;
		left -= step;
	}
	if (match && !have_index)
		return -EPROTO;
	return match;
}

static int rv_nl_send_dump(int fd, uint32_t seq)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	struct rv_nl_req req = {
		.nlh = {
			.nlmsg_len = NLMSG_LENGTH(0),
			.nlmsg_type = RV_NL_TYPE,
			.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
			.nlmsg_seq = seq,
		},
	};
	ssize_t n;

	do {
		n = sendto(fd, &req, req.nlh.nlmsg_len, 0,
			   (struct sockaddr *)&sa, sizeof(sa));
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n == (ssize_t)req.nlh.nlmsg_len ? 0 : -EIO;
}

/*
 * Reads the dump reply until NLMSG_DONE.  Returns 1 with *index set when
 * @name was seen, 0 if the dump ended without it, or -errno.
 */
static int rv_nl_recv_dump(int fd, uint32_t seq, const char *name,
			   size_t name_len, void *buf, uint32_t *index)
{
	int i;

	for (i = 0; i < RV_NL_MAX_RECV; i++) {
		struct nlmsghdr *nlh;
		struct sockaddr_nl sa;
		struct iovec iov = { .iov_base = buf, .iov_len = RV_NL_BUF_SIZE };
		struct msghdr msg = {
			.msg_name = &sa,
			.msg_namelen = sizeof(sa),
			.msg_iov = &iov,
			.msg_iovlen = 1,
		};
		ssize_t n;
		int left;	/* int: the NLMSG_* macros compute in int */

		do {
			n = recvmsg(fd, &msg, 0);
		} while (n < 0 && errno == EINTR);
		if (n < 0)
			return (errno == EAGAIN || errno == EWOULDBLOCK) ?
				-ETIMEDOUT : -errno;
		if (msg.msg_flags & MSG_TRUNC)
			return -EMSGSIZE;
		/* Only the kernel (port 0) may answer. */
		if (msg.msg_namelen != sizeof(sa) || sa.nl_pid != 0)
			continue;

		left = (int)n;	/* n <= RV_NL_BUF_SIZE */
		for (nlh = buf; NLMSG_OK(nlh, left);
		     nlh = NLMSG_NEXT(nlh, left)) {
			int ret;

			if (nlh->nlmsg_seq != seq)
				continue;
			if (nlh->nlmsg_type == NLMSG_DONE)
				return 0;
			if (nlh->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *err = NLMSG_DATA(nlh);

				if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(*err)))
					return -EPROTO;
				/* error 0 is an ACK, which a dump never ends with. */
				return err->error < 0 ? err->error : -EPROTO;
			}
			if (nlh->nlmsg_type != RV_NL_TYPE)
				continue;
			ret = rv_nl_parse_dev(nlh, name, name_len, index);
			if (ret)
				return ret;
		}
		/*
		 * Bytes NLMSG_OK rejected: a truncated or corrupt message.  (left
		 * goes negative only when the last message lacks its padding.)
		 */
		if (left > 0)
			return -EPROTO;
	}
	return -EPROTO;
}

int rv_device_index(const char *ibdev_name)
{
	const struct timeval tv = { .tv_sec = RV_NL_TIMEOUT_SEC };
	uint32_t seq, index = 0;
	void *buf;
	size_t name_len;
	int fd, ret;

	if (!ibdev_name || !*ibdev_name)
		return -EINVAL;
	name_len = strlen(ibdev_name);

	buf = malloc(RV_NL_BUF_SIZE);
	if (!buf)
		return -ENOMEM;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
	if (fd < 0) {
		ret = -errno;
		goto out_free;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv))) {
		ret = -errno;
		goto out_close;
	}

	/* Any value works; it only tells our reply apart from stale ones. */
	seq = (uint32_t)getpid() ^ (uint32_t)(uintptr_t)buf;
	ret = rv_nl_send_dump(fd, seq);
	if (ret)
		goto out_close;
	ret = rv_nl_recv_dump(fd, seq, ibdev_name, name_len, buf, &index);
	if (ret == 0)
		ret = -ENODEV;
	else if (ret > 0)
		ret = index > INT_MAX ? -EOVERFLOW : (int)index;

out_close:
	close(fd);
out_free:
	free(buf);
	return ret;
}
