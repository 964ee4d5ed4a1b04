// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The rv selftests' library: see rv_test_util.h.  Compiled once into
 * librvtest.a (librvtest_32.a for the -m32 programs).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
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
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <stddef.h>

#include "kselftest.h"
#include "rv_test_util.h"

const char *rv_test_ibdev(void)
{
	const char *name = getenv("RV_IBDEV");

	return name && *name ? name : RV_DEFAULT_IBDEV;
}

int rv_ioc(int fd, unsigned long cmd, void *arg)
{
	int ret = ioctl(fd, cmd, arg);

	return ret < 0 ? -errno : ret;
}

void rv_random_key(uint8_t *key, size_t len)
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

void rv_attach_init(struct rv_attach *a, uint32_t dev_index, uint32_t key_len)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->dev_index = dev_index;
	a->port_num = RV_TEST_PORT;
	a->gid_index = 0;
	a->job_key_len = key_len;
	rv_random_key(a->job_key, key_len);
}

void rv_attach_job(struct rv_attach *a, int dev_index, int gid,
		   const char *key)
{
	memset(a, 0, sizeof(*a));
	a->dev_index = dev_index;
	a->port_num = RV_TEST_PORT;
	a->gid_index = gid;
	a->job_key_len = strlen(key);
	memcpy(a->job_key, key, a->job_key_len);
}

int rv_test_open(struct rv **rvp, int *dev_index, int *gid)
{
	int ret;

	*dev_index = rv_device_index(rv_test_ibdev());
	*gid = rv_ipv4_gid(rv_test_ibdev(), RV_TEST_PORT, -1, NULL);
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

long rv_proc_status_kb(const char *key)
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

int rv_drop_cap_ipc_lock(void)
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

void *rv_map_aligned(size_t len, size_t align)
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

/* ---- time ---------------------------------------------------------------- */

uint64_t rv_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t rv_now_ms(void)
{
	return rv_now_ns() / 1000000;
}

uint64_t rv_scaled_ms(uint64_t ms)
{
	const char *s = getenv("RV_TIME_SCALE");
	unsigned long k = s ? strtoul(s, NULL, 10) : 1;

	return ms * (k ? k : 1);
}

/* ---- data patterns ------------------------------------------------------ */

void rv_pat_fill(uint8_t *base, uint64_t len, uint64_t seed)
{
	uint64_t i, w;

	for (i = 0; i < len / 8; i++) {
		w = rv_mix64(seed + i);
		memcpy(base + i * 8, &w, 8);
	}
	for (i = len & ~7ULL; i < len; i++) {
		w = rv_mix64(seed + i / 8);
		base[i] = ((uint8_t *)&w)[i & 7];
	}
}

int64_t rv_pat_check(const uint8_t *base, uint64_t off, uint64_t len,
		     uint64_t seed)
{
	uint64_t o = off, end = off + len, w;

	while (o < end) {
		if (!(o & 7) && end - o >= 8) {
			w = rv_mix64(seed + o / 8);
			if (memcmp(base + o, &w, 8))
				break;
			o += 8;
			continue;
		}
		w = rv_mix64(seed + o / 8);
		if (base[o] != ((uint8_t *)&w)[o & 7])
			return (int64_t)o;
		o++;
	}
	while (o < end) {	/* locate the byte inside the bad word */
		w = rv_mix64(seed + o / 8);
		if (base[o] != ((uint8_t *)&w)[o & 7])
			return (int64_t)o;
		o++;
	}
	return -1;
}

/* ---- the files through which a multi-node test's processes meet ------ */

void rv_share_path(const struct rv_share *s, char *path, size_t n,
		   const char *name)
{
	snprintf(path, n, "%s/%s.%s", s->dir, s->key, name);
}

int rv_share_publish(const struct rv_share *s, const char *name,
		     const char *text)
{
	char path[512], tmp[600];
	FILE *f;

	rv_share_path(s, path, sizeof(path), name);
	snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid());
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	if (fputs(text, f) < 0) {
		fclose(f);
		return -EIO;
	}
	if (fclose(f) || rename(tmp, path))
		return -errno;
	return 0;
}

bool rv_share_fetch(const struct rv_share *s, const char *name, char *buf,
		    size_t n)
{
	char path[512];
	size_t got;
	FILE *f;

	rv_share_path(s, path, sizeof(path), name);
	while (!(f = fopen(path, "r"))) {
		if (rv_now_ms() > s->deadline_ms)
			return false;
		usleep(50000);
	}
	got = fread(buf, 1, n - 1, f);
	fclose(f);
	buf[got] = 0;
	return true;
}

bool rv_share_exists(const struct rv_share *s, const char *name)
{
	char path[512];

	rv_share_path(s, path, sizeof(path), name);
	return !access(path, F_OK);
}

void rv_keys_text(char *buf, const uint32_t *keys, uint32_t n)
{
	size_t o = 0;
	uint32_t i;

	buf[0] = 0;
	for (i = 0; i < n; i++)
		o += sprintf(buf + o, "%x\n", keys[i]);
}

bool rv_keys_parse(const char *text, uint32_t *keys, uint32_t n)
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

/* ---- output and checks ------------------------------------------------- */

void rv_out(const char *fmt, ...)
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
 * kselftest's result functions print with stdio: stdout is held for the
 * result's lines and flushed at once, so that a result is one write(2)
 * (rv_out()'s lines and other processes' results go between results,
 * never into one) and nothing is left in the buffer for fork() to copy.
 */
bool rv_vcheck(bool ok, const char *name, const char *fmt, va_list ap)
{
	char why[512];

	flockfile(stdout);
	if (ok) {
		ksft_test_result_pass("%s\n", name);
	} else {
		vsnprintf(why, sizeof(why), fmt, ap);
		ksft_print_msg("%s: %s\n", name, why);
		ksft_test_result_fail("%s\n", name);
	}
	fflush(stdout);
	funlockfile(stdout);
	return ok;
}

bool rv_check(bool ok, const char *name, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rv_vcheck(ok, name, fmt, ap);
	va_end(ap);
	return ok;
}

void rv_check_skip(const char *name, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	flockfile(stdout);
	/* kselftest's skip: "ok N # SKIP <what>"; the name comes first. */
	ksft_test_result_skip("%s: %s\n", name, why);
	fflush(stdout);
	funlockfile(stdout);
}

unsigned int rv_check_failures(void)
{
	return ksft_get_fail_cnt();
}

int rv_deny_syscall(int nr, int err)
{
	struct sock_filter insns[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned int)nr, 0, 1),
		BPF_STMT(BPF_RET | BPF_K,
			 SECCOMP_RET_ERRNO | ((unsigned int)err & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {
		.len = sizeof(insns) / sizeof(insns[0]),
		.filter = insns,
	};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) ? -errno : 0;
}
