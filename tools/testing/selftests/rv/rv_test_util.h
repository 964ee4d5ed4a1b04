/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The rv selftests' library (rv_test_util.c), compiled once into
 * librvtest.a (and librvtest_32.a for the -m32 programs) and linked into
 * every test program: the device and job set-up, the monotonic clock, the
 * data patterns, the files through which the processes of a multi-node
 * test meet, and the checks of the programs that vm/ scripts run, as
 * kselftest TAP results.
 */
#ifndef RV_TEST_UTIL_H
#define RV_TEST_UTIL_H

#include <errno.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <stdbool.h>
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
const char *rv_test_ibdev(void);

/* ioctl() as 0/positive or -errno, so EXPECT_EQ(-EINVAL, ...) reads well. */
int rv_ioc(int fd, unsigned long cmd, void *arg);

/*
 * A job key nobody else uses: random bytes, so that tests (and runs of
 * the suite on nodes sharing nothing but the kernel) never join each
 * other's jobs.
 */
void rv_random_key(uint8_t *key, size_t len);

/*
 * A valid ATTACH request for a fresh random job with module defaults;
 * tests then break the one field they are about.
 */
void rv_attach_init(struct rv_attach *a, uint32_t dev_index, uint32_t key_len);

/*
 * An ATTACH request (for librv's rv_attach()) for job @key, a string the
 * processes of a multi-node test share, on port RV_TEST_PORT of device
 * @dev_index with GID @gid; module defaults otherwise.
 */
void rv_attach_job(struct rv_attach *a, int dev_index, int gid,
		   const char *key);

/*
 * Open /dev/rv for a program that attaches to $RV_IBDEV port 1 with the
 * port's first IPv4 RoCE v2 GID: stores the device index and GID index.
 * Returns 0, or the exit status to leave with (4, kselftest's skip, when
 * the device, the GID or rv is missing; 1 otherwise), having said why.
 */
int rv_test_open(struct rv **rvp, int *dev_index, int *gid);

/* A "Key:  N kB" line of /proc/self/status (VmPin, VmLck...), or -1. */
long rv_proc_status_kb(const char *key);

/*
 * Drop CAP_IPC_LOCK from the effective set, so that RLIMIT_MEMLOCK
 * applies to this (root) process too.  0 or -errno.
 */
int rv_drop_cap_ipc_lock(void);

/*
 * Anonymous read-write memory at an address aligned to @align (a power of
 * two): a remote-access buffer of at most @align bytes there needs one key
 * when key chunks are at least @align.  NULL on failure; the slack around
 * it is unmapped.
 */
void *rv_map_aligned(size_t len, size_t align);

/*
 * Make system call @nr fail with @err in the calling thread (and the
 * threads and processes it starts later), every other call proceed: a
 * seccomp filter, after no_new_privs.  0 or -errno.
 */
int rv_deny_syscall(int nr, int err);

/*
 * KiB of VmPin the smallest MR table charges (its slots and a page of
 * hold counts): tests that count VmPin attach with it.
 */
#define RV_TEST_MIN_TABLE_KB \
	(RV_MR_TABLE_MMAP_SIZE(RV_MIN_MR_TABLE_ENTRIES) / 1024 + 4)

/* ---- time ---------------------------------------------------------------- */

/* CLOCK_MONOTONIC in nanoseconds and in milliseconds. */
uint64_t rv_now_ns(void);
uint64_t rv_now_ms(void);

/*
 * @ms scaled by $RV_TIME_SCALE (rv-vm --time-scale: 3 on the debug
 * kernels, whose guests run several times slower), for a program's own
 * bounded waits.
 */
uint64_t rv_scaled_ms(uint64_t ms);

/* ---- data patterns ------------------------------------------------------ */

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
 * A region's pattern: its bytes are the words rv_mix64(@seed + word index),
 * a function of their position in the region, so that a byte landing
 * anywhere else is caught.  rv_pat_fill() writes the first @len bytes of
 * the region at @base; rv_pat_check() returns the first offset of
 * [@off, @off + @len) that differs from the pattern, or -1.
 */
void rv_pat_fill(uint8_t *base, uint64_t len, uint64_t seed);
int64_t rv_pat_check(const uint8_t *base, uint64_t off, uint64_t len,
		     uint64_t seed);

/* ---- the files through which a multi-node test's processes meet ------ */

/*
 * A test's processes on all nodes meet through files in @dir, a directory
 * every node shares (the run's output directory), each named
 * "<key>.<name>".  Waits for a file end at @deadline_ms (rv_now_ms()).
 */
struct rv_share {
	const char *dir;
	const char *key;
	uint64_t deadline_ms;
};

/* The path of file @name. */
void rv_share_path(const struct rv_share *s, char *path, size_t n,
		   const char *name);

/*
 * Publish @text as file @name, whole or not at all (other nodes poll for
 * it): 0 or -errno.
 */
int rv_share_publish(const struct rv_share *s, const char *name,
		     const char *text);

/*
 * Wait for file @name until the deadline, then read at most @n - 1 bytes
 * of it into @buf, NUL-terminated; false if it did not appear in time.
 */
bool rv_share_fetch(const struct rv_share *s, const char *name, char *buf,
		    size_t n);

/* Whether file @name exists now. */
bool rv_share_exists(const struct rv_share *s, const char *name);

/*
 * A registration's remote keys travel between the test's nodes as text,
 * one hex key a line: RV_KEYS_TEXT_BYTES(n) holds @n of them.
 */
#define RV_KEYS_TEXT_BYTES(n)	((size_t)(n) * 9 + 2)

void rv_keys_text(char *buf, const uint32_t *keys, uint32_t n);

/* @n keys from rv_keys_text()'s text at @text; false if malformed. */
bool rv_keys_parse(const char *text, uint32_t *keys, uint32_t n);

/* ---- output and checks ------------------------------------------------- */

/*
 * One line on stdout with one write(2): the processes of a node share the
 * script's pipe, and their lines must not interleave.
 */
void rv_out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * The checks of the programs that vm/ scripts run (several processes and
 * threads sharing one stdout): each is one kselftest TAP result, "ok N
 * name" or, after a "# name: why" line, "not ok N name", written with one
 * write(2); vm/tap.sh's tap_checks makes them results of the script.
 * Returns @ok.
 */
bool rv_check(bool ok, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
bool rv_vcheck(bool ok, const char *name, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

/* A check this device or configuration leaves nothing to check for. */
void rv_check_skip(const char *name, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The failed checks of this process. */
unsigned int rv_check_failures(void);

#endif /* RV_TEST_UTIL_H */
