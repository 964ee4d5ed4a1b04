#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# bench-rndv-syscalls.sh - system calls per rendezvous message of the rv
# provider, with librv's MR table (the default) and without it
# (RV_MR_TABLE=0), next to verbs;ofi_rxm, in one boot of 2 VMs.
#
# Usage: bench-rndv-syscalls.sh [rv-vm options...]  (host; make all fabtests)
#
# Each configuration runs fabtests' fi_rdm_tagged_pingpong -S $BENCH_SC_SIZE
# (default 262144: above the rendezvous threshold, so every message is an
# RTS, a CTS and an rv write) under "strace -f -c" twice, with
# $BENCH_SC_ITERS_LO and $BENCH_SC_ITERS_HI iterations (default 20 and
# 220); the difference divided by the extra iterations is the cost of one
# iteration (one message each way) without the setup.  Counted: ioctl(2)
# (rv's commands, and rxe's none: its doorbell is a write(2)) and all
# system calls.  strace slows everything down, and the counts do not
# depend on speed.  Prints per node and configuration both per
# iteration, and the verdict of issue 37: rv's ioctls per iteration with
# the table at most 1 (the sender's POST_WRITES; both registrations and
# their releases are table hits).
#
# Inside a VM (RV_NODE set by rv-vm) the script plays its node's part.

set -uo pipefail

SIZE=${BENCH_SC_SIZE:-262144}
LO=${BENCH_SC_ITERS_LO:-20}
HI=${BENCH_SC_ITERS_HI:-220}
CONFIGS="table ioctl rxm"

# calls FILE NAME: strace -c's call count of NAME ("total" for all).
calls() {
	awk -v n="$2" '$NF == n { print ($4 ~ /^[0-9]+$/) ? $4 : $3; f = 1 }
		       END { if (!f) print 0 }' "$1"
}

guest() {
	# shellcheck source-path=SCRIPTDIR source=../vm/tap.sh
	. "$(dirname "${BASH_SOURCE[0]}")/../vm/tap.sh"
	local ftbin=$RV_REPO/build/fabtests/install/bin shared server_ip
	local port=47900 cfg iters prov rc=0 f
	local -A n
	shared=$(dirname "$RV_OUT")/bench-rndv-syscalls
	mkdir -p "$shared"
	server_ip=$(rv_node_ip 0)
	export FI_RV_DEVICE=$RV_IBDEV FI_UNIVERSE_SIZE=16
	for cfg in $CONFIGS; do
		for iters in "$LO" "$HI"; do
			local -a envs=(FI_PROVIDER_PATH="$RV_REPO/lib/librv-fi")
			prov=rv
			[[ $cfg == ioctl ]] && envs+=(RV_MR_TABLE=0)
			[[ $cfg == rxm ]] && prov="verbs;ofi_rxm" envs=()
			port=$((port + 1))
			rv_barrier "$shared" "run$port" 120 || rc=1
			[[ $RV_NODE -eq 1 ]] && sleep 1
			f=/tmp/bsc.$cfg.$iters
			local -a cmd=(env "${envs[@]}" strace -f -qq -c -o "$f"
				timeout 600 "$ftbin/fi_rdm_tagged_pingpong"
				-p "$prov" -E="$port" -S "$SIZE" -I "$iters")
			[[ $RV_NODE -eq 1 ]] && cmd+=("$server_ip")
			(cd /tmp && "${cmd[@]}" >/tmp/bsc.out 2>&1) ||
				{ rc=1; sed 's/^/#   /' /tmp/bsc.out; }
			n[$cfg.$iters.ioctl]=$(calls "$f" ioctl)
			n[$cfg.$iters.total]=$(calls "$f" total)
		done
		awk -v node="$RV_NODE" -v cfg="$cfg" -v d=$((HI - LO)) \
		    -v il="${n[$cfg.$LO.ioctl]}" -v ih="${n[$cfg.$HI.ioctl]}" \
		    -v tl="${n[$cfg.$LO.total]}" -v th="${n[$cfg.$HI.total]}" \
		    'BEGIN { printf "bsc node=%d cfg=%s ioctl=%.2f all=%.2f\n",
			     node, cfg, (ih - il) / d, (th - tl) / d }'
	done
	rv_barrier "$shared" end 300 || rc=1
	return $rc
}

if [[ -n ${RV_NODE:-} ]]; then
	guest
	exit
fi

# ---- host ----
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../../../.." && pwd)
if [[ ! -x $repo/build/fabtests/install/bin/fi_rdm_tagged_pingpong ]]; then
	echo "bench-rndv-syscalls.sh: fabtests not built (make fabtests)" >&2
	exit 1
fi
out=${BENCH_OUT:-$repo/build/vm/bench-rndv-syscalls/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
q=$(printf '%q ' "BENCH_SC_SIZE=$SIZE" "BENCH_SC_ITERS_LO=$LO" \
	"BENCH_SC_ITERS_HI=$HI")
rc=0
"$here/../vm/rv-vm" run --nodes 2 --timeout 3600 --out "$out/vm" "$@" \
	-- "$q $here/bench-rndv-syscalls.sh" || rc=$?
echo "system calls per iteration of fi_rdm_tagged_pingpong -S $SIZE (one message each way), from strace -c over $((HI - LO)) extra iterations"
echo "node 0 serves, node 1 starts; table: rv provider with librv's MR table; ioctl: RV_MR_TABLE=0; rxm: verbs;ofi_rxm"
cat "$out"/vm/node*.out | awk '/^bsc / {
	for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
	printf "node %s %-6s ioctl %6.2f  all %7.2f\n", v["node"], v["cfg"], v["ioctl"], v["all"]
	if (v["cfg"] == "table") { if (v["ioctl"] > worst) worst = v["ioctl"]; seen = 1 }
} END {
	if (!seen) { print "no figures"; exit 1 }
	printf "goal rv ioctls per iteration with the MR table <= 1 on each side: %s (worst %.2f)\n",
	       worst <= 1 ? "met" : "NOT met", worst
}' || rc=1
echo "output in $out"
exit $rc
