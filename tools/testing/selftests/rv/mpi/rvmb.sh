# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
#
# rvmb.sh - rv_mpi_bench's standard run and reading its output, for the
# groups that run it (vm/mpi.sh, vm/slurm.sh); sourced after vm/tap.sh.

# 1 B..16 MiB in steps of 4, every size streamed (one message at 4 and
# 16 MiB), ping-pong up to 1 MiB: about 90 MiB over the link, well under a
# minute at TCG's ~15 MB/s, a few minutes on a host busy with other VMs.
BENCH_ARGS=${MPI_BENCH_ARGS:--m 1 -M 16M -f 4 -w 16 -b 1M -l 128K -x 1M -n 8 -W 0}
# Fixed here, so that the byte check knows which messages rv carries.
export FI_RV_RNDV_THRESHOLD=${FI_RV_RNDV_THRESHOLD:-16384}
BENCH=$RV_REPO/tools/testing/selftests/rv/mpi/rv_mpi_bench
RVSTAT=$RV_REPO/tools/rvstat/rvstat
# RV_FI_DIR: another build of the provider (e.g. a copy that a rebuild in
# a shared tree cannot pull away mid-run).
FI_DIR=${RV_FI_DIR:-$RV_REPO/lib/librv-fi}

# rvmb_bytes THRESHOLD < OUTPUT: "ABOVE AT", the bytes of the "rvmb"
# lines whose message size is above THRESHOLD (rendezvous, which rv
# carries: "more bytes than the threshold", fi_rv(7)) and equal
# to it (counted as either by callers, to be lenient).
rvmb_bytes() {
	awk -v t="$1" '/^rvmb / {
		s = b = 0
		for (i = 2; i <= NF; i++) {
			split($i, kv, "=")
			if (kv[1] == "size") s = kv[2]
			if (kv[1] == "bytes") b = kv[2]
		}
		if (s + 0 > t + 0) a += b; else if (s + 0 == t + 0) e += b
	} END { printf "%d %d\n", a, e }'
}
