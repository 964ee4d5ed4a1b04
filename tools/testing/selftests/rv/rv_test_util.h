/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Helpers shared by the rv selftests.  Header-only so that every test
 * binary stays a single translation unit plus librv.
 */
#ifndef RV_TEST_UTIL_H
#define RV_TEST_UTIL_H

#include <errno.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/capability.h>

#include <rdma/rv_user_ioctls.h>
#include <rv/librv.h>

#define RV_DEV_PATH		"/dev/rv"
#define RV_DEFAULT_IBDEV	"rxe0"
#define RV_TEST_PORT		1

#ifndef offsetofend
#define offsetofend(type, member) \
	(offsetof(type, member) + sizeof(((type *)0)->member))
#endif

/*
 * Smallest @size each command accepts: per <rdma/rv_user_ioctls.h>, the
 * size of the struct as first released, which for every struct of this
 * header is its current size.  When a field is appended, these stay at the
 * old size (offsetofend() of the last field of the first release).
 */
#define RV_QUERY_MIN_SIZE \
	offsetofend(struct rv_query, default_mr_cache_bytes)
#define RV_ATTACH_MIN_SIZE \
	offsetofend(struct rv_attach, mr_cache_bytes)
#define RV_CONN_QUERY_MIN_SIZE \
	offsetofend(struct rv_conn_query, attempts)
/* Sizes above this are refused with E2BIG whatever the bytes are. */
#define RV_MAX_ARG_SIZE		4096

/* The RDMA device the tests use: $RV_IBDEV, by default rxe0. */
static inline const char *rv_test_ibdev(void)
{
	const char *name = getenv("RV_IBDEV");

	return name && *name ? name : RV_DEFAULT_IBDEV;
}

/* ioctl() as 0/positive or -errno, so EXPECT_EQ(-EINVAL, ...) reads well. */
static inline int rv_ioc(int fd, unsigned long cmd, void *arg)
{
	int ret = ioctl(fd, cmd, arg);

	return ret < 0 ? -errno : ret;
}

/*
 * A job key nobody else uses: random bytes, so that tests (and runs of
 * the suite on nodes sharing nothing but the kernel) never join each
 * other's jobs.
 */
static inline void rv_random_key(uint8_t *key, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = getrandom(key + done, len - done, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			abort();	/* getrandom() cannot fail otherwise */
		}
		done += (size_t)n;
	}
}

/*
 * A valid ATTACH request for a fresh random job with module defaults;
 * tests then break the one field they are about.
 */
static inline void rv_attach_init(struct rv_attach *a, uint32_t dev_index,
				  uint32_t key_len)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->dev_index = dev_index;
	a->port_num = RV_TEST_PORT;
	a->gid_index = 0;
	a->job_key_len = key_len;
	rv_random_key(a->job_key, key_len);
}

/*
 * The first RoCE v2 GID of port 1 of @ibdev that holds an IPv4 address
 * (what connections need as the job's source address).  Returns its index
 * and stores the address, or returns -1.
 */
static inline int rv_test_ipv4_gid(const char *ibdev, struct in_addr *addr)
{
	char path[256], buf[128];
	unsigned int a, b, c, d;
	int i;
	FILE *f;

	for (i = 0; i < 256; i++) {
		bool ok;

		snprintf(path, sizeof(path),
			 "/sys/class/infiniband/%s/ports/%d/gids/%d", ibdev,
			 RV_TEST_PORT, i);
		f = fopen(path, "r");
		if (!f)
			continue;
		ok = fgets(buf, sizeof(buf), f) &&
		     sscanf(buf, "0000:0000:0000:0000:0000:ffff:%2x%2x:%2x%2x",
			    &a, &b, &c, &d) == 4;
		fclose(f);
		if (!ok)
			continue;
		snprintf(path, sizeof(path),
			 "/sys/class/infiniband/%s/ports/%d/gid_attrs/types/%d",
			 ibdev, RV_TEST_PORT, i);
		f = fopen(path, "r");
		ok = f && fgets(buf, sizeof(buf), f) &&
		     !strncmp(buf, "RoCE v2", 7);
		if (f)
			fclose(f);
		if (!ok)
			continue;
		if (addr)
			addr->s_addr = htonl(a << 24 | b << 16 | c << 8 | d);
		return i;
	}
	return -1;
}

/* A "Key:  N kB" line of /proc/self/status (VmPin, VmLck...), or -1. */
static inline long rv_proc_status_kb(const char *key)
{
	char line[256], name[64];
	long kb = -1, v;
	FILE *f;

	f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63[^:]: %ld kB", name, &v) == 2 &&
		    !strcmp(name, key)) {
			kb = v;
			break;
		}
	fclose(f);
	return kb;
}

/*
 * Drop CAP_IPC_LOCK from the effective set, so that RLIMIT_MEMLOCK
 * applies to this (root) process too.  0 or -errno.
 */
static inline int rv_drop_cap_ipc_lock(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	data[CAP_IPC_LOCK / 32].effective &= ~(1U << (CAP_IPC_LOCK % 32));
	if (syscall(SYS_capset, &hdr, data))
		return -errno;
	return 0;
}

/*
 * splitmix64's finaliser: the test patterns' words, a function of a seed
 * and the position.
 */
static inline uint64_t rv_mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/*
 * Anonymous read-write memory at an address aligned to @align (a power of
 * two): a remote-access buffer of at most @align bytes there needs one key
 * when key chunks are at least @align.  NULL on failure; the slack around
 * it is unmapped.
 */
static inline void *rv_map_aligned(size_t len, size_t align)
{
	char *p = mmap(NULL, len + align, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uintptr_t start;

	if (p == MAP_FAILED)
		return NULL;
	start = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
	if (start > (uintptr_t)p)
		munmap(p, start - (uintptr_t)p);
	munmap((char *)start + len, (uintptr_t)p + align - start);
	return (void *)start;
}

/*
 * A registration's remote keys travel between the test's nodes as text,
 * one hex key a line: RV_KEYS_TEXT_BYTES(n) holds @n of them.
 */
#define RV_KEYS_TEXT_BYTES(n)	((size_t)(n) * 9 + 2)

static inline void rv_keys_text(char *buf, const uint32_t *keys, uint32_t n)
{
	size_t o = 0;
	uint32_t i;

	buf[0] = 0;
	for (i = 0; i < n; i++)
		o += sprintf(buf + o, "%x\n", keys[i]);
}

/* @n keys from rv_keys_text()'s text at @text; false if malformed. */
static inline bool rv_keys_parse(const char *text, uint32_t *keys,
				 uint32_t n)
{
	char *end;
	uint32_t i;

	for (i = 0; text && i < n; i++) {
		keys[i] = (uint32_t)strtoul(text, &end, 16);
		if (end == text || *end != '\n')
			return false;
		text = end + 1;
	}
	return text != NULL;
}

/* CLOCK_MONOTONIC in milliseconds. */
/*
 * Open /dev/rv for a program that attaches to $RV_IBDEV port 1 with the
 * port's first IPv4 RoCE v2 GID: stores the device index and GID index.
 * Returns 0, or the exit status to leave with (4, kselftest's skip, when
 * the device, the GID or rv is missing; 1 otherwise), having said why.
 */
static inline int rv_test_open(struct rv **rvp, int *dev_index, int *gid)
{
	int ret;

	*dev_index = rv_device_index(rv_test_ibdev());
	*gid = rv_test_ipv4_gid(rv_test_ibdev(), NULL);
	if (*dev_index < 0 || *gid < 0) {
		fprintf(stderr, "no device %s or no IPv4 RoCE v2 GID\n",
			rv_test_ibdev());
		return 4;
	}
	ret = rv_open(rvp, 0);
	if (ret) {
		fprintf(stderr, "rv_open: %s\n", strerror(-ret));
		return ret == -ENOENT ? 4 : 1;
	}
	return 0;
}

static inline uint64_t rv_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * One line on stdout with one write(2): the processes of a node share the
 * script's pipe, and their lines must not interleave.
 */
static inline void __attribute__((format(printf, 1, 2)))
rv_out(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	if (write(1, line, n) < 0)
		_exit(1);
}

/*
 * @ms scaled by $RV_TIME_SCALE (rv-vm --time-scale: 3 on the debug
 * kernels, whose guests run several times slower), for a program's own
 * bounded waits.
 */
static inline uint64_t rv_scaled_ms(uint64_t ms)
{
	const char *s = getenv("RV_TIME_SCALE");
	unsigned long k = s ? strtoul(s, NULL, 10) : 1;

	return ms * (k ? k : 1);
}

/* Failed rv_check()s of this program. */
static int rv_check_fails __attribute__((unused));

/*
 * One "check PASS|FAIL name[: why]" line, which vm/tap.sh's tap_checks
 * turns into a TAP result.
 */
static inline void __attribute__((format(printf, 3, 4)))
rv_check(bool ok, const char *name, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	if (ok) {
		rv_out("check PASS %s", name);
		return;
	}
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	rv_out("check FAIL %s: %s", name, why);
	rv_check_fails++;
}

#endif /* RV_TEST_UTIL_H */
