// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv_mpi_bench - MPI point-to-point latency and streaming bandwidth between
 * ranks on different nodes, every received byte verified.
 *
 * Written to exercise an MPI stack whose large messages go over rv (Open
 * MPI, pml cm + mtl ofi + the libfabric "rv" provider) and to compare it with
 * other transports on the same link.  Plain MPI-1 point-to-point only, so it
 * runs over anything.
 *
 * Pairing: rank pairs are scheduled in rounds with the circle method (every
 * pair of ranks meets in exactly one of n-1 rounds, n/2 pairs a round).
 * Pairs whose ranks share a node are skipped unless -A is given: the point
 * is traffic between nodes.  With 2 ranks that is one pair, one round; with
 * 2 ranks on each of 2 nodes it is 4 cross-node pairs in 2 rounds of 2
 * concurrent pairs, so every rank talks to both ranks of the other node (on
 * rv all of them share the same QPs).  -1 runs the first round only.
 *
 * For every size of a round, each pair runs:
 *   latency    ping-pong: the lower rank sends, the higher rank receives
 *              and sends the same buffer back; the lower rank checks the
 *              echo, the higher rank checks what it received after replying
 *              (so its check overlaps the other side's).  Reported: half the
 *              round trip, average and minimum, in us.
 *   bandwidth  the lower rank streams windows of -w nonblocking sends; the
 *              higher rank posts as many receives, answers each complete
 *              window with a small ack, then checks it.  The sender's clock
 *              runs from posting a window to the ack, so its own filling is
 *              not counted (the receiver's check overlaps that filling).
 *              Reported in MB/s = 10^6 bytes/s.
 *
 * Every message carries a pattern that depends on the sending rank, a
 * message sequence number (per pair, size and phase) and the offset, so a
 * misplaced, stale, duplicated or truncated message is caught, not only a
 * flipped bit.  Any mismatch is reported (first few in detail) and the
 * program exits with status 1 on every rank.
 *
 * Iteration counts are sized by bytes (-b, -B) so that large messages run
 * a few times and small ones up to -n times: a run stays short on slow
 * links (QEMU TCG moves ~15-20 MB/s).
 *
 * Output (rank 0): a table per round, and one machine-readable line per
 * pair and size:
 *   rvmb round=R pair=A-B size=S lat_iters=N lat_us=X lat_min_us=Y \
 *        bw_msgs=M bw_mbs=Z bytes=B
 * (B: payload bytes the pair moved at that size, both ways, warm-up too)
 * plus "rvmb-sum round=R size=S pairs=P bw_mbs=..." (the pairs' sum) and a
 * last line "rvmb-result ranks=N pairs=P verified_bytes=V errors=E PASS|FAIL".
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TAG_DATA 11
#define TAG_ACK 12
#define TAG_PING 13
#define TAG_PONG 14
#define MAX_SIZES 64
#define MAX_REPORTED_ERRORS 5

struct opts {
	size_t min_size, max_size;
	unsigned int factor;		/* size step: x2, x4, ... */
	unsigned int window;		/* max messages in flight, bw */
	unsigned int max_iters;		/* cap on latency iterations / bw msgs */
	size_t lat_bytes;		/* per size, one direction, latency */
	size_t bw_bytes;		/* per size, bandwidth */
	unsigned int warmup;		/* untimed iterations, latency */
	int intra_node;			/* -A: also pairs within a node */
	int first_round_only;		/* -1 */
	int corrupt;			/* -X: checker self-test */
	unsigned int hold;		/* -H: seconds before MPI_Finalize */
	int no_lat, no_bw;
	size_t lat_max;			/* -x: latency only up to this size */
};

/* One pair's results for one size; gathered on rank 0. */
struct result {
	int32_t active, peer;		/* reported by the lower rank */
	int32_t lat_iters, bw_msgs;
	uint64_t bytes;			/* payload both ways, warm-up too */
	double lat_us, lat_min_us, bw_mbs;
};

static int rank, nranks;
static uint64_t errors, verified_bytes;

/* ---- data pattern -------------------------------------------------------- */

/* splitmix64's finaliser: neighbouring (rank, seq) give unrelated seeds. */
static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static uint64_t msg_seed(int src, uint64_t seq, size_t size)
{
	return mix64(((uint64_t)src << 48) ^ (seq << 8) ^ mix64(size));
}

/*
 * Word i of a message is seed + i * odd constant: one add per 8 bytes,
 * cheap enough for TCG, and different at every offset, so data landing at
 * the wrong offset is caught.  A tail shorter than 8 bytes takes the low
 * bytes of the next word.
 */
#define PAT_STEP 0xd1342543de82ef95ULL

static void fill(unsigned char *buf, size_t len, uint64_t seed)
{
	size_t i, words = len / 8;
	uint64_t v = seed;

	for (i = 0; i < words; i++, v += PAT_STEP)
		memcpy(buf + i * 8, &v, 8);
	for (i = words * 8; i < len; i++)
		buf[i] = (unsigned char)(v >> (8 * (i % 8)));
}

/* Returns the number of wrong bytes; reports the first one. */
static uint64_t check(const unsigned char *buf, size_t len, uint64_t seed,
		      int src, uint64_t seq, const char *what)
{
	size_t i, b, words = len / 8, first = SIZE_MAX;
	uint64_t v = seed, w, bad = 0;
	unsigned char want = 0, got = 0;

	for (i = 0; i < words; i++, v += PAT_STEP) {
		memcpy(&w, buf + i * 8, 8);
		if (w == v)
			continue;
		for (b = 0; b < 8; b++) {
			if ((unsigned char)(w >> (8 * b)) ==
			    (unsigned char)(v >> (8 * b)))
				continue;
			if (first == SIZE_MAX) {
				first = i * 8 + b;
				want = (unsigned char)(v >> (8 * b));
				got = (unsigned char)(w >> (8 * b));
			}
			bad++;
		}
	}
	for (i = words * 8; i < len; i++) {
		unsigned char e = (unsigned char)(v >> (8 * (i % 8)));

		if (buf[i] == e)
			continue;
		if (first == SIZE_MAX) {
			first = i;
			want = e;
			got = buf[i];
		}
		bad++;
	}
	verified_bytes += len;
	if (bad) {
		if (errors < MAX_REPORTED_ERRORS)
			fprintf(stderr,
				"rank %d: %s from rank %d, size %zu, seq %" PRIu64
				": %" PRIu64 " bad bytes, first at offset %zu: 0x%02x, expected 0x%02x\n",
				rank, what, src, len, seq, bad, first, got,
				want);
		errors += bad;
	}
	return bad;
}

/* ---- options ------------------------------------------------------------ */

static size_t parse_size(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		goto bad;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	}
	if (*end == 0)
		return (size_t)v;
bad:
	if (rank == 0)
		fprintf(stderr, "rv_mpi_bench: bad size '%s'\n", s);
	MPI_Abort(MPI_COMM_WORLD, 2);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rv_mpi_bench [options]\n"
		"  -m SIZE   smallest message (default 1)\n"
		"  -M SIZE   largest message (default 16M)\n"
		"  -f N      size step factor (default 4)\n"
		"  -w N      bandwidth window, messages in flight (default 32)\n"
		"  -b BYTES  bandwidth bytes per size (default 32M)\n"
		"  -l BYTES  latency bytes per size and direction (default 4M)\n"
		"  -n N      at most N latency iterations / bandwidth messages\n"
		"            per size (default 200)\n"
		"  -W N      untimed latency warm-up iterations (default 2)\n"
		"  -L        no latency test    -B  no bandwidth test\n"
		"  -x SIZE   latency test only up to SIZE (a short run)\n"
		"  -A        also pair ranks on the same node\n"
		"  -1        first round of pairs only\n"
		"  -X        corrupt one byte of the last message of each\n"
		"            bandwidth phase after filling it (the check must\n"
		"            catch it: exit status 1)\n"
		"  -H SECS   wait SECS after the last message before MPI_Finalize,\n"
		"            so a monitor (rvstat) sees the job's final counters\n"
		"Sizes take K, M, G suffixes (2^10...).  Every received byte is\n"
		"verified; exit status 1 on any mismatch.\n");
}

static void parse_opts(int argc, char **argv, struct opts *o)
{
	int c;

	*o = (struct opts){ .min_size = 1, .max_size = 16 << 20, .factor = 4,
			    .window = 32, .max_iters = 200,
			    .lat_bytes = 4 << 20, .bw_bytes = 32 << 20,
			    .warmup = 2, .lat_max = SIZE_MAX };
	while ((c = getopt(argc, argv, "m:M:f:w:b:l:n:W:x:LBA1XH:h")) != -1) {
		switch (c) {
		case 'm': o->min_size = parse_size(optarg); break;
		case 'M': o->max_size = parse_size(optarg); break;
		case 'f': o->factor = (unsigned int)parse_size(optarg); break;
		case 'w': o->window = (unsigned int)parse_size(optarg); break;
		case 'b': o->bw_bytes = parse_size(optarg); break;
		case 'l': o->lat_bytes = parse_size(optarg); break;
		case 'n': o->max_iters = (unsigned int)parse_size(optarg); break;
		case 'W': o->warmup = (unsigned int)parse_size(optarg); break;
		case 'L': o->no_lat = 1; break;
		case 'x': o->lat_max = parse_size(optarg); break;
		case 'B': o->no_bw = 1; break;
		case 'A': o->intra_node = 1; break;
		case '1': o->first_round_only = 1; break;
		case 'X': o->corrupt = 1; break;
		case 'H': o->hold = (unsigned int)parse_size(optarg); break;
		case 'h':
			if (rank == 0)
				usage(stdout);
			MPI_Finalize();
			exit(0);
		default:
			if (rank == 0)
				usage(stderr);
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
	}
	if (o->min_size < 1 || o->max_size < o->min_size ||
	    o->max_size > (size_t)INT_MAX || o->factor < 2 ||
	    o->window < 1 || o->max_iters < 1) {
		if (rank == 0)
			fprintf(stderr, "rv_mpi_bench: bad options (sizes 1..2G-1, factor >= 2, window and -n >= 1)\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
}

/* ---- iteration counts --------------------------------------------------- */

static unsigned int clamp_count(size_t budget, size_t size, unsigned int max)
{
	size_t n = budget / size;

	if (n < 1)
		n = 1;
	return n > max ? max : (unsigned int)n;
}

static unsigned int bw_msgs(const struct opts *o, size_t size)
{
	/*
	 * At least two full windows' worth for small messages is pointless
	 * to force: the byte budget decides, the cap (-n, x window/8 so
	 * small messages stream long enough to fill the pipe) bounds it.
	 */
	unsigned int cap = o->max_iters * (o->window > 8 ? o->window / 8 : 1);

	return clamp_count(o->bw_bytes, size, cap);
}

static unsigned int bw_window(const struct opts *o, size_t size)
{
	unsigned int n = bw_msgs(o, size);

	return n < o->window ? n : o->window;
}

/* ---- the two tests ------------------------------------------------------ */

/*
 * Ping-pong between me and peer; the lower rank leads.  Sequence numbers:
 * iteration i of the latency phase is seq i (the leader is the only source).
 */
static void run_lat(const struct opts *o, int peer, size_t size,
		    unsigned char *buf, struct result *r)
{
	unsigned int iters = clamp_count(o->lat_bytes, size, o->max_iters);
	unsigned int i, total = iters + o->warmup;
	int lead = rank < peer;
	double t, sum = 0, min = 1e30;

	for (i = 0; i < total; i++) {
		uint64_t seq = i;
		int src = lead ? rank : peer;
		uint64_t seed = msg_seed(src, seq, size);

		if (lead) {
			fill(buf, size, seed);
			t = MPI_Wtime();
			MPI_Send(buf, (int)size, MPI_BYTE, peer, TAG_PING,
				 MPI_COMM_WORLD);
			MPI_Recv(buf, (int)size, MPI_BYTE, peer, TAG_PONG,
				 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			t = MPI_Wtime() - t;
			/* The echo must be exactly what was sent. */
			check(buf, size, seed, src, seq, "echo");
			if (i >= o->warmup) {
				sum += t;
				if (t < min)
					min = t;
			}
		} else {
			MPI_Recv(buf, (int)size, MPI_BYTE, peer, TAG_PING,
				 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(buf, (int)size, MPI_BYTE, peer, TAG_PONG,
				 MPI_COMM_WORLD);
			check(buf, size, seed, src, seq, "ping");
		}
	}
	if (lead) {
		r->lat_iters = (int32_t)iters;
		r->lat_us = sum / iters / 2 * 1e6;
		r->lat_min_us = min / 2 * 1e6;
		r->bytes += 2ULL * total * size;
	}
}

/*
 * Streaming from the lower rank to the higher one.  Message k of the
 * phase has seq k + 2^32 (apart from the latency phase's).
 */
static void run_bw(const struct opts *o, int peer, size_t size,
		   unsigned char *buf, MPI_Request *reqs, struct result *r)
{
	unsigned int msgs = bw_msgs(o, size), win = bw_window(o, size);
	unsigned int done = 0, k, n;
	int send = rank < peer, src = send ? rank : peer;
	double t, busy = 0;
	char ack = 0;

	while (done < msgs) {
		n = msgs - done < win ? msgs - done : win;
		if (send) {
			for (k = 0; k < n; k++)
				fill(buf + k * size, size,
				     msg_seed(src, (1ULL << 32) + done + k,
					      size));
			/* Self-test: a wrong byte the receiver must see. */
			if (o->corrupt && done + n == msgs)
				buf[(n - 1) * size + size / 2] ^= 0x5a;
			t = MPI_Wtime();
			for (k = 0; k < n; k++)
				MPI_Isend(buf + k * size, (int)size, MPI_BYTE,
					  peer, TAG_DATA, MPI_COMM_WORLD,
					  &reqs[k]);
			MPI_Waitall((int)n, reqs, MPI_STATUSES_IGNORE);
			MPI_Recv(&ack, 1, MPI_BYTE, peer, TAG_ACK,
				 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			busy += MPI_Wtime() - t;
		} else {
			/*
			 * Receives match sends in order (same source, tag and
			 * communicator), so buffer k holds message done + k.
			 */
			for (k = 0; k < n; k++)
				MPI_Irecv(buf + k * size, (int)size, MPI_BYTE,
					  peer, TAG_DATA, MPI_COMM_WORLD,
					  &reqs[k]);
			MPI_Waitall((int)n, reqs, MPI_STATUSES_IGNORE);
			MPI_Send(&ack, 1, MPI_BYTE, peer, TAG_ACK,
				 MPI_COMM_WORLD);
			for (k = 0; k < n; k++)
				check(buf + k * size, size,
				      msg_seed(src, (1ULL << 32) + done + k,
					       size),
				      src, (1ULL << 32) + done + k, "data");
		}
		done += n;
	}
	if (send) {
		r->bw_msgs = (int32_t)msgs;
		r->bw_mbs = busy > 0 ? (double)msgs * size / busy / 1e6 : 0;
		r->bytes += (uint64_t)msgs * size;
	}
}

/* ---- pairing ------------------------------------------------------------ */

/*
 * Partner of rank r in round k of the circle method over n' = n rounded up
 * to even: position n'-1 stays, the others rotate.  Returns -1 for a bye.
 */
static int partner(int r, int k, int n)
{
	int m = n + (n & 1), p;

	if (r == m - 1)
		p = k;
	else if ((2 * k - r + 2 * (m - 1)) % (m - 1) == r)
		p = m - 1;
	else
		p = (2 * k - r + 2 * (m - 1)) % (m - 1);
	return p >= n ? -1 : p;
}

int main(int argc, char **argv)
{
	struct opts o;
	size_t sizes[MAX_SIZES], s, bufsize = 0;
	int nsizes = 0, i, round, rounds, *node, pairs_total = 0;
	unsigned char *buf;
	MPI_Request *reqs;
	MPI_Comm local;
	int lrank, my_node, namelen, *local_rank;
	char name[MPI_MAX_PROCESSOR_NAME] = "", *names;
	struct result *all = NULL;
	uint64_t sums[2], tot[2];
	double t0 = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	parse_opts(argc, argv, &o);

	for (s = o.min_size; s <= o.max_size && nsizes < MAX_SIZES;
	     s *= o.factor) {
		size_t need = (o.no_bw ? 1 : bw_window(&o, s)) * s;

		sizes[nsizes++] = s;
		if (need > bufsize)
			bufsize = need;
		if (s > (size_t)INT_MAX / o.factor)
			break;
	}
	buf = malloc(bufsize);
	reqs = calloc(o.window, sizeof(*reqs));
	node = calloc(nranks, sizeof(*node));
	local_rank = calloc(nranks, sizeof(*local_rank));
	if (!buf || !reqs || !node || !local_rank) {
		fprintf(stderr, "rank %d: cannot allocate %zu bytes\n", rank,
			bufsize);
		MPI_Abort(MPI_COMM_WORLD, 3);
	}
	/* Touch it now: page faults are not what is measured. */
	memset(buf, 0, bufsize);

	/* Node of every rank: the lowest world rank sharing its memory. */
	MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank,
			    MPI_INFO_NULL, &local);
	MPI_Comm_rank(local, &lrank);
	my_node = rank;
	MPI_Allreduce(MPI_IN_PLACE, &my_node, 1, MPI_INT, MPI_MIN, local);
	MPI_Allgather(&my_node, 1, MPI_INT, node, 1, MPI_INT, MPI_COMM_WORLD);
	MPI_Get_processor_name(name, &namelen);
	names = rank == 0 ? calloc(nranks, sizeof(name)) : NULL;
	if (rank == 0 && !names)
		MPI_Abort(MPI_COMM_WORLD, 3);
	MPI_Gather(name, sizeof(name), MPI_CHAR, names, sizeof(name), MPI_CHAR,
		   0, MPI_COMM_WORLD);
	MPI_Allgather(&lrank, 1, MPI_INT, local_rank, 1, MPI_INT,
		      MPI_COMM_WORLD);
	for (i = 0; rank == 0 && i < nranks; i++)
		printf("rank %d on %s (node of rank %d, local rank %d)\n", i,
		       names + i * sizeof(name), node[i], local_rank[i]);
	free(names);

	if (rank == 0) {
		all = calloc(nranks, sizeof(*all));
		if (!all)
			MPI_Abort(MPI_COMM_WORLD, 3);
		printf("rv_mpi_bench: %d ranks, sizes %zu..%zu x%u, window %u, bw %zu B/size, lat %zu B/size, cap %u%s%s\n",
		       nranks, o.min_size, o.max_size, o.factor, o.window,
		       o.bw_bytes, o.lat_bytes, o.max_iters,
		       o.intra_node ? ", intra-node pairs too" : "",
		       o.first_round_only ? ", first round only" : "");
		t0 = MPI_Wtime();
	}

	rounds = nranks < 2 ? 0 : nranks - 1 + (nranks & 1);
	for (round = 0; round < rounds; round++) {
		int peer = partner(rank, round, nranks), npairs = 0, r;

		if (peer >= 0 && !o.intra_node && node[peer] == node[rank])
			peer = -1;
		/* How many pairs are active: everyone computes the same. */
		for (r = 0; r < nranks; r++) {
			int p = partner(r, round, nranks);

			if (p > r && (o.intra_node || node[p] != node[r]))
				npairs++;
		}
		if (!npairs)
			continue;
		if (o.first_round_only && pairs_total)
			break;
		pairs_total += npairs;
		if (rank == 0) {
			printf("\nround %d: %d pair%s:", round, npairs,
			       npairs > 1 ? "s" : "");
			for (r = 0; r < nranks; r++) {
				int p = partner(r, round, nranks);

				if (p > r && (o.intra_node || node[p] != node[r]))
					printf(" %d-%d", r, p);
			}
			printf("\n%10s %6s %10s %10s %7s %10s %10s\n", "size",
			       "iters", "lat_us", "min_us", "msgs", "MB/s",
			       "sum MB/s");
			fflush(stdout);
		}
		for (i = 0; i < nsizes; i++) {
			struct result res = { 0 };

			s = sizes[i];
			/* Pairs of a round run each size at the same time. */
			MPI_Barrier(MPI_COMM_WORLD);
			if (peer >= 0) {
				if (!o.no_lat && s <= o.lat_max)
					run_lat(&o, peer, s, buf, &res);
				if (!o.no_bw)
					run_bw(&o, peer, s, buf, reqs, &res);
				res.active = rank < peer;
				res.peer = peer;
			}
			MPI_Gather(&res, sizeof(res), MPI_BYTE, all,
				   sizeof(res), MPI_BYTE, 0, MPI_COMM_WORLD);
			if (rank == 0) {
				double sum = 0;
				int first = 1;

				for (r = 0; r < nranks; r++)
					if (all[r].active)
						sum += all[r].bw_mbs;
				for (r = 0; r < nranks; r++) {
					struct result *x = &all[r];

					if (!x->active)
						continue;
					if (x->lat_iters)
						printf("%10zu %6d %10.2f %10.2f",
						       s, x->lat_iters, x->lat_us,
						       x->lat_min_us);
					else
						printf("%10zu %6s %10s %10s", s,
						       "-", "-", "-");
					printf(" %7d %10.2f", x->bw_msgs,
					       x->bw_mbs);
					if (first)
						printf(" %10.2f", sum);
					else
						printf(" %10s", "");
					printf("   %d-%d\n", r, x->peer);
					first = 0;
				}
				for (r = 0; r < nranks; r++) {
					struct result *x = &all[r];

					if (!x->active)
						continue;
					printf("rvmb round=%d pair=%d-%d size=%zu lat_iters=%d lat_us=%.3f lat_min_us=%.3f bw_msgs=%d bw_mbs=%.3f bytes=%" PRIu64 "\n",
					       round, r, x->peer, s,
					       x->lat_iters, x->lat_us,
					       x->lat_min_us, x->bw_msgs,
					       x->bw_mbs, x->bytes);
				}
				printf("rvmb-sum round=%d size=%zu pairs=%d bw_mbs=%.3f\n",
				       round, s, npairs, sum);
				fflush(stdout);
			}
		}
	}

	sums[0] = errors;
	sums[1] = verified_bytes;
	MPI_Reduce(sums, tot, 2, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
	/* Every rank learns the verdict, so every rank exits with it. */
	MPI_Bcast(tot, 2, MPI_UINT64_T, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		printf("\nrvmb-result ranks=%d pairs=%d verified_bytes=%" PRIu64
		       " errors=%" PRIu64 " seconds=%.1f %s\n",
		       nranks, pairs_total, tot[1], tot[0], MPI_Wtime() - t0,
		       tot[0] || !pairs_total ? "FAIL" : "PASS");
		fflush(stdout);
	}
	if (o.hold) {
		if (rank == 0) {
			printf("rvmb-hold %u\n", o.hold);
			fflush(stdout);
		}
		sleep(o.hold);
		MPI_Barrier(MPI_COMM_WORLD);
	}
	free(all);
	free(node);
	free(local_rank);
	free(reqs);
	free(buf);
	MPI_Comm_free(&local);
	MPI_Finalize();
	return tot[0] || !pairs_total ? 1 : 0;
}
