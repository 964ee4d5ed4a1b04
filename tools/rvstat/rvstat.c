// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rvstat - show rv's devices, jobs, connections and processes on this node.
 *
 *   rvstat [-j|--json] [-w SECONDS [-n COUNT]]
 *
 * Reads librv's DUMP snapshots on a read-only open of /dev/rv: a user sees the jobs
 * of their own uid, a process with CAP_SYS_ADMIN sees all.  Plain text by
 * default, one JSON object per refresh with --json.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rv_user_ioctls.h>
#include <rv/librv.h>

/* One snapshot: the four kinds, read one after the other. */
struct snapshot {
	struct rv_dump_iter *devices, *jobs, *conns, *procs;
};

#define EACH(it, type, var) \
	for (const type *var; ((var) = rv_dump_next(it));)

static void addr_str(const struct rv_dump_conn *c, char *s, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";

	inet_ntop(c->family == AF_INET6 ? AF_INET6 : AF_INET, c->remote_addr,
		  a, sizeof(a));
	snprintf(s, len, c->family == AF_INET6 ? "[%s]:%u" : "%s:%u", a,
		 c->remote_port);
}

/*
 * The job's launcher id (RV_IOCTL_LAUNCHER_JOB), or false when the kernel's
 * records end before it (a kernel older than the field).
 */
static bool launcher_id(struct rv_dump_iter *jobs, const struct rv_dump_job *j,
			uint64_t *id)
{
	if (rv_dump_record_size(jobs) <
	    offsetof(struct rv_dump_job, launcher_id) + sizeof(j->launcher_id))
		return false;
	*id = j->launcher_id;
	return true;
}

static void key_str(const struct rv_dump_job *j, char *s, size_t len)
{
	size_t n = 0;
	uint32_t i;

	for (i = 0; i < j->key_len && i < RV_JOB_KEY_MAX && n + 3 < len; i++)
		n += snprintf(s + n, len - n, "%02x", j->key[i]);
	s[n] = 0;
}

static void print_text(const struct snapshot *sn)
{
	char a[64], k[2 * RV_JOB_KEY_MAX + 1];
	uint32_t q;

	printf("Devices\n  %-5s %-16s %-8s %s\n", "index", "name", "state",
	       "jobs");
	EACH(sn->devices, struct rv_dump_device, d) {

		printf("  %-5u %-16s %-8s %u\n", d->dev_index,
		       d->name[0] ? d->name : "-",
		       d->removed ? "removed" : "active", d->jobs);
	}
	printf("\nJobs\n  %-4s %-10s %-4s %-6s %-32s %-5s %-9s %-6s %-5s %-12s %s\n",
	       "job", "device", "port", "uid", "key", "slots", "num_conn",
	       "conns", "bits", "heartbeat_ms", "launcher_id");
	EACH(sn->jobs, struct rv_dump_job, j) {
		uint64_t lid;

		key_str(j, k, sizeof(k));
		printf("  %-4u %-10s %-4u %-6u %-32s %-5u %-9u %-6u %-5u ",
		       j->job_id, j->dev_name[0] ? j->dev_name : "-",
		       j->port_num, j->uid, k, j->slots_used, j->num_conn,
		       j->conns, j->slot_bits);
		if (j->heartbeat_ms == RV_HEARTBEAT_OFF)
			printf("%-12s ", "off");
		else
			printf("%-12u ", j->heartbeat_ms);
		/* Slurm's is job id << 32 | step id: shown as both. */
		if (!launcher_id(sn->jobs, j, &lid))
			printf("-\n");
		else if (!lid)
			printf("0\n");
		else
			printf("%#" PRIx64 " (%" PRIu64 ".%" PRIu64 ")\n", lid,
			       lid >> 32, lid & 0xffffffffu);
	}
	printf("\nConnections\n");
	EACH(sn->conns, struct rv_dump_conn, c) {

		addr_str(c, a, sizeof(a));
		printf("  conn %u job %u remote %s %s %s (%s) generation %" PRIu64
		       " qps %u/%u handles %u inflight %u\n",
		       c->conn_id, c->job_id, a,
		       c->role == RV_CONN_ROLE_CLIENT ? "client" : "server",
		       rv_conn_state_str(c->state), rv_conn_reason_str(c->reason),
		       (uint64_t)c->generation, c->connected, c->num_conn,
		       c->handles, c->inflight);
		printf("    writes %" PRIu64 " (%" PRIu64 " B) completed %" PRIu64
		       " failed %" PRIu64 "; recvs %" PRIu64 " (%" PRIu64
		       " B) drops no_slot %" PRIu64 " ring_full %" PRIu64
		       " recv_errors %" PRIu64 "; heartbeats %" PRIu64
		       " qp_errors %" PRIu64 "\n",
		       (uint64_t)c->writes_posted, (uint64_t)c->bytes_posted,
		       (uint64_t)c->writes_completed,
		       (uint64_t)c->writes_failed, (uint64_t)c->recvs,
		       (uint64_t)c->bytes_received,
		       (uint64_t)c->drops_no_slot,
		       (uint64_t)c->drops_ring_full,
		       (uint64_t)c->recv_errors, (uint64_t)c->heartbeats,
		       (uint64_t)c->qp_errors);
		for (q = 0; q < c->num_conn && q < RV_MAX_CONN_PER_NODE; q++)
			printf("    qp %-2u %-10s qpn %-6u send_free %-5u idle %u ms\n",
			       q, rv_qp_state_str(c->qp[q].state),
			       c->qp[q].qp_num, c->qp[q].send_free,
			       c->qp[q].idle_ms);
	}
	printf("\nProcesses\n  %-4s %-5s %-7s %-8s %-9s %-10s %-10s %-9s %-9s %-8s %-9s %s\n",
	       "job", "slot", "pid", "inflight", "writes", "completed",
	       "failed", "eagain", "recvs", "ring", "overflows",
	       "mr entries/MiB/hits/misses");
	EACH(sn->procs, struct rv_dump_proc, p) {

		printf("  %-4u %-5u %-7u %-8u %-9" PRIu64 " %-10" PRIu64
		       " %-10" PRIu64 " %-9" PRIu64 " %-9" PRIu64
		       " %-8u %-9" PRIu64 " %u/%.1f/%" PRIu64 "/%" PRIu64 "\n",
		       p->job_id, p->slot, p->pid, p->inflight,
		       (uint64_t)p->writes_posted,
		       (uint64_t)p->writes_completed,
		       (uint64_t)p->writes_failed, (uint64_t)p->posts_eagain,
		       (uint64_t)p->recvs, p->ring_entries,
		       (uint64_t)p->ring_overflows, p->mr_entries,
		       p->mr_bytes / 1048576.0, (uint64_t)p->mr_hits,
		       (uint64_t)p->mr_misses);
	}
}

static void json_u64(const char *name, uint64_t v, bool *first)
{
	printf("%s\"%s\":%" PRIu64, *first ? "" : ",", name, v);
	*first = false;
}

static void print_json(const struct snapshot *sn)
{
	char a[64], k[2 * RV_JOB_KEY_MAX + 1];
	uint32_t i, q;
	bool f;

	printf("{\"time\":%ld,\"devices\":[", (long)time(NULL));
	i = 0;
	EACH(sn->devices, struct rv_dump_device, d) {

		printf("%s{\"name\":\"%s\"", i++ ? "," : "", d->name);
		f = false;
		json_u64("index", d->dev_index, &f);
		json_u64("removed", d->removed, &f);
		json_u64("jobs", d->jobs, &f);
		printf("}");
	}
	printf("],\"jobs\":[");
	i = 0;
	EACH(sn->jobs, struct rv_dump_job, j) {
		uint64_t lid;

		key_str(j, k, sizeof(k));
		printf("%s{\"device\":\"%s\",\"key\":\"%s\"", i++ ? "," : "",
		       j->dev_name, k);
		f = false;
		json_u64("job", j->job_id, &f);
		json_u64("dev_index", j->dev_index, &f);
		json_u64("port", j->port_num, &f);
		json_u64("uid", j->uid, &f);
		json_u64("slots_used", j->slots_used, &f);
		json_u64("num_conn", j->num_conn, &f);
		json_u64("slot_bits", j->slot_bits, &f);
		json_u64("conns", j->conns, &f);
		json_u64("heartbeat_ms", j->heartbeat_ms, &f);
		if (launcher_id(sn->jobs, j, &lid))
			json_u64("launcher_id", lid, &f);
		printf("}");
	}
	printf("],\"connections\":[");
	i = 0;
	EACH(sn->conns, struct rv_dump_conn, c) {

		addr_str(c, a, sizeof(a));
		printf("%s{\"remote\":\"%s\",\"state\":\"%s\",\"reason\":\"%s\",\"role\":\"%s\"",
		       i++ ? "," : "", a, rv_conn_state_str(c->state),
		       rv_conn_reason_str(c->reason),
		       c->role == RV_CONN_ROLE_CLIENT ? "client" : "server");
		f = false;
		json_u64("conn", c->conn_id, &f);
		json_u64("job", c->job_id, &f);
		json_u64("generation", c->generation, &f);
		json_u64("num_conn", c->num_conn, &f);
		json_u64("connected", c->connected, &f);
		json_u64("handles", c->handles, &f);
		json_u64("inflight", c->inflight, &f);
		json_u64("max_segment", c->max_segment, &f);
		json_u64("writes_posted", c->writes_posted, &f);
		json_u64("bytes_posted", c->bytes_posted, &f);
		json_u64("writes_completed", c->writes_completed, &f);
		json_u64("writes_failed", c->writes_failed, &f);
		json_u64("recvs", c->recvs, &f);
		json_u64("bytes_received", c->bytes_received, &f);
		json_u64("drops_no_slot", c->drops_no_slot, &f);
		json_u64("drops_ring_full", c->drops_ring_full, &f);
		json_u64("recv_errors", c->recv_errors, &f);
		json_u64("heartbeats", c->heartbeats, &f);
		json_u64("qp_errors", c->qp_errors, &f);
		printf(",\"qps\":[");
		for (q = 0; q < c->num_conn && q < RV_MAX_CONN_PER_NODE; q++) {
			printf("%s{\"state\":\"%s\"", q ? "," : "",
			       rv_qp_state_str(c->qp[q].state));
			f = false;
			json_u64("qp_num", c->qp[q].qp_num, &f);
			json_u64("send_free", c->qp[q].send_free, &f);
			json_u64("idle_ms", c->qp[q].idle_ms, &f);
			printf("}");
		}
		printf("]}");
	}
	printf("],\"processes\":[");
	i = 0;
	EACH(sn->procs, struct rv_dump_proc, p) {

		printf("%s{", i++ ? "," : "");
		f = true;
		json_u64("job", p->job_id, &f);
		json_u64("slot", p->slot, &f);
		json_u64("pid", p->pid, &f);
		json_u64("ring_entries", p->ring_entries, &f);
		json_u64("ring_overflows", p->ring_overflows, &f);
		json_u64("inflight", p->inflight, &f);
		json_u64("writes_posted", p->writes_posted, &f);
		json_u64("bytes_posted", p->bytes_posted, &f);
		json_u64("writes_completed", p->writes_completed, &f);
		json_u64("writes_failed", p->writes_failed, &f);
		json_u64("posts_eagain", p->posts_eagain, &f);
		json_u64("recvs", p->recvs, &f);
		json_u64("bytes_received", p->bytes_received, &f);
		json_u64("mr_entries", p->mr_entries, &f);
		json_u64("mr_bytes", p->mr_bytes, &f);
		json_u64("mr_hits", p->mr_hits, &f);
		json_u64("mr_misses", p->mr_misses, &f);
		printf("}");
	}
	printf("]}\n");
}

static void usage(FILE *f)
{
	fprintf(f, "usage: rvstat [-j|--json] [-w|--watch SECONDS [-n|--count N]]\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "watch", required_argument, NULL, 'w' },
		{ "count", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool json = false;
	long watch = 0, count = -1, round;
	int fd, opt, ret = 0;

	while ((opt = getopt_long(argc, argv, "jw:n:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'j': json = true; break;
		case 'w': watch = strtol(optarg, NULL, 0); break;
		case 'n': count = strtol(optarg, NULL, 0); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (watch < 0 || (count >= 0 && !watch)) {
		usage(stderr);
		return 2;
	}
	fd = open("/dev/rv", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "rvstat: /dev/rv: %s%s\n", strerror(errno),
			errno == ENOENT ? " (is the rv module loaded?)" : "");
		return 1;
	}
	for (round = 0; count < 0 || round < count; round++) {
		struct snapshot sn = {};

		ret = rv_dump_open(fd, RV_DUMP_DEVICES, &sn.devices) ?:
		      rv_dump_open(fd, RV_DUMP_JOBS, &sn.jobs) ?:
		      rv_dump_open(fd, RV_DUMP_CONNS, &sn.conns) ?:
		      rv_dump_open(fd, RV_DUMP_PROCS, &sn.procs);
		if (ret) {
			fprintf(stderr, "rvstat: RV_IOCTL_DUMP: %s\n",
				strerror(-ret));
		} else if (json) {
			print_json(&sn);
		} else {
			if (watch && isatty(STDOUT_FILENO))
				printf("\033[H\033[2J");
			print_text(&sn);
		}
		rv_dump_close(sn.devices);
		rv_dump_close(sn.jobs);
		rv_dump_close(sn.conns);
		rv_dump_close(sn.procs);
		fflush(stdout);
		if (ret || !watch)
			break;
		if (count < 0 || round + 1 < count)
			sleep(watch);
	}
	close(fd);
	return ret ? 1 : 0;
}
