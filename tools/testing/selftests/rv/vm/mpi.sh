#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# mpi.sh [PROVIDER] - Open MPI between the VMs over a libfabric provider,
# as TAP (2 nodes or more).
#
# PROVIDER: "rv" (default: the rv provider, lib/librv-fi/librv-fi.so via
# FI_PROVIDER_PATH) or a built-in one such as "tcp;ofi_rxm" or
# "verbs;ofi_rxm".  Every node starts an sshd (mpi/launch.sh); node 0 runs
# mpirun with MPI_PPN ranks on every node (default 2) through pml cm + mtl
# ofi restricted to PROVIDER, running mpi/rv_mpi_bench: all cross-node rank
# pairs, streaming sizes 1 B..16 MiB (x4) and ping-pong up to 1 MiB, every
# byte verified.  The others wait for node 0 to finish (bounded).
#
# While the job runs, each node samples "rvstat --json" and
# "rdma -j res show qp" every second.  With PROVIDER rv the results check
# what rv is for, on every node:
#   rv-one-job        one job, with MPI_PPN processes (slots)
#   rv-qps-shared     one connection per remote node, num_conn QPs each:
#                     QPs = num_conn * (nodes - 1), not per rank pair
#   rv-writes         rv writes completed > 0; failed ones (a QP lost under
#                     load, re-sent by the provider over TCP) at most 10%
# and on node 0, over all nodes' counters:
#   rv-bytes          bytes rv carried ~= the bytes of the messages above
#                     the rendezvous threshold (FI_RV_RNDV_THRESHOLD)
# Other providers: the sampled RC QP counts are only reported.
#
# Environment: MPI_PPN, MPI_BENCH_ARGS (rv_mpi_bench options; the default
# keeps the test short, see below), MPI_TIMEOUT
# (mpirun's limit, default 420 s), MPI_EXTRA_ARGS (more mpirun options,
# e.g. "--mca mtl_base_verbose 100"), FI_RV_RNDV_THRESHOLD and
# FI_LOG_LEVEL (passed on to the ranks), RV_FI_DIR (the provider's
# directory, default lib/librv-fi).

set -uo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source-path=SCRIPTDIR source=tap.sh
. "$here/tap.sh"
# shellcheck source-path=SCRIPTDIR source=../mpi/launch.sh
. "$here/../mpi/launch.sh"
# shellcheck source=../mpi/rvmb.sh
. "$here/../mpi/rvmb.sh"

: "${RV_NODE:?run me with rv-vm}" "${RV_NODES:?}" "${RV_IBDEV:?}" "${RV_OUT:?}"
PROV=${1:-rv}
PPN=${MPI_PPN:-2}
MPI_TIMEOUT=${MPI_TIMEOUT:-420}
shared=$(dirname "$RV_OUT")/mpi-shared
tag=${PROV//[^a-z0-9]/_}

tap_begin
if [[ ! -x $BENCH ]]; then
	tap_fail mpi-built "$BENCH not built (make -C tools/testing/selftests/rv/mpi)"
	tap_end
	exit
fi
if [[ $PROV == rv && ! -f $FI_DIR/librv-fi.so ]]; then
	tap_fail mpi-rv-provider "$FI_DIR/librv-fi.so not built"
	tap_end
	exit
fi
# 2 VMs on 2 host cores under TCG, 2 ranks each plus mpirun's daemons: a
# guest stalls for up to a second or so, longer than the 7 transport
# tries of rv's default ack_timeout (15, ~134 ms each) ride out, and rxe
# fails the QP (RETRY_EXC_ERR; rv replaces it, the provider re-sends the
# message over TCP: seen 10 times in a 2-minute run on a busy host).
# Like write.sh's a2a, reload rv with 17 (~537 ms); the ranks' own QPs of
# verbs;ofi_rxm get even more from rdma_cm on RoCE (19: packet lifetime
# 18 + 1).  A longer one of the run's (the debug kernel's 18) stays.
if [[ $PROV == rv && -c /dev/rv ]]; then
	ack=$(rv_ack_timeout_at_least 17)
	if rv_reload "$ack"; then
		tap_ok mpi-rv-ack-timeout
	else
		tap_fail mpi-rv-ack-timeout "cannot reload rv with $ack"
	fi
fi
if [[ $PROV == rv && ! -c /dev/rv ]]; then
	# The provider would answer fi_getinfo with -FI_ENODATA and Open
	# MPI would only say "PML cm cannot be selected".
	tap_fail mpi-rv-loaded "no /dev/rv: rv.ko not loaded"
	tap_end
	exit
fi
tap_diag "provider $PROV, $PPN ranks per node, $RV_NODES nodes: rv_mpi_bench $BENCH_ARGS"

tap_diag "$(date +%T) ssh setup"
if mpi_setup "$shared"; then
	tap_ok mpi-ssh-setup
	tap_diag "$(date +%T) sshd up"
else
	tap_fail mpi-ssh-setup "see $RV_OUT/sshd.log"
	# Let the others stop waiting at once.
	[[ $RV_NODE -eq 0 ]] && mpi_done
	mpi_teardown
	tap_end
	exit
fi

# Samplers: one JSON document per line and second.  rvstat is only useful
# with rv, but costs little; the QP list tells every provider's story.
"$RVSTAT" --json -w 1 >"$RV_OUT/rvstat.$tag.jsonl" 2>&1 &
rvstat_pid=$!
(
	while :; do
		rdma -j res show qp 2>/dev/null || echo '[]'
		sleep 1
	done
) >"$RV_OUT/qps.$tag.jsonl" &
qps_pid=$!

if [[ $RV_NODE -eq 0 ]]; then
	mca=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "$PROV"
	     --mca btl self)
	# ofi_rxm sizes its MSG provider's CQ in proportion to
	# FI_UNIVERSE_SIZE (default 256 peers): more entries than rxe's
	# largest CQ (32767), and verbs;ofi_rxm fails in fi_endpoint
	# ("Unable to create verbs CQ"; 32 was measured to work).  The
	# job's size is what it needs.
	export FI_UNIVERSE_SIZE=$((PPN * RV_NODES < 16 ? 16 : PPN * RV_NODES))
	envs=(-x FI_UNIVERSE_SIZE)
	if [[ $PROV == rv ]]; then
		export FI_PROVIDER_PATH=$FI_DIR
		envs+=(-x FI_PROVIDER_PATH)
	fi
	# What libfabric offers here for PROVIDER (evidence when mtl ofi
	# finds nothing): fi_info's first provider/endpoint lines.
	tap_diag "fi_info -p '$PROV' -t FI_EP_RDM:"
	timeout 60 fi_info -p "$PROV" -t FI_EP_RDM 2>&1 |
		grep -E 'provider:|fabric:|domain:|FI_EP|fi_getinfo' | head -n 8 |
		sed 's/^/#   /'
	envs+=(-x FI_RV_RNDV_THRESHOLD)
	[[ -n ${FI_LOG_LEVEL:-} ]] && envs+=(-x FI_LOG_LEVEL)
	rc=0
	# -H 3: the ranks stay 3 s after the last message, so the samplers
	# see the job's final counters.
	# shellcheck disable=SC2086 # BENCH_ARGS: options, split on blanks
	out=$(mpi_run "mpi.$tag" "$MPI_TIMEOUT" -np $((PPN * RV_NODES)) \
		--host "$(mpi_hosts "$PPN")" --map-by node "${mca[@]}" \
		"${envs[@]}" ${MPI_EXTRA_ARGS:-} "$BENCH" $BENCH_ARGS -H 3) ||
		rc=$?
	mpi_done
	tap_diag "$(date +%T) mpirun done"
	# shellcheck disable=SC2001
	sed 's/^/# /' <<<"$out"
	if [[ $rc -eq 0 ]]; then
		tap_ok "mpi-$tag-run"
	else
		tap_fail "mpi-$tag-run" "mpirun exit status $rc$( ((rc == 124)) && echo ' (timeout)')"
	fi
	if grep -Eq '^rvmb-result .* errors=0 .*PASS$' <<<"$out"; then
		tap_ok "mpi-$tag-verified"
	else
		tap_fail "mpi-$tag-verified" "no rvmb-result ... PASS line"
	fi
else
	if mpi_wait_done $((MPI_TIMEOUT + 120)); then
		tap_ok mpi-node0-done
	else
		tap_fail mpi-node0-done "node 0 never finished"
	fi
fi
kill "$rvstat_pid" "$qps_pid" 2>/dev/null
wait "$rvstat_pid" "$qps_pid" 2>/dev/null

# This node's view of the run, from the samples, as "key value" lines:
# qps_rc_max (RC QPs of rdma res, GSI and registration QPs excluded),
# qps_reg_max (RC QPs connected to themselves), and the largest value
# over the rvstat samples that had the job of: jobs, slots, conns, qps
# (sum of the connections' num_conn), num_conn, writes_completed,
# writes_failed, bytes_posted (what rv sent from this node),
# bytes_received (rv counts the last segment of a split write only).
summary=$RV_OUT/mpi.$tag.summary
python3 - "$RV_OUT/rvstat.$tag.jsonl" "$RV_OUT/qps.$tag.jsonl" >"$summary" <<'EOF'
import json, sys

def docs(path):
    for line in open(path, errors="replace"):
        line = line.strip()
        if line.startswith("{") or line.startswith("["):
            try:
                yield json.loads(line)
            except ValueError:
                pass

# A job's registration QP (fast registration of remote-access MRs) is
# connected to itself: counted apart from the connections' QPs.
qmax = regmax = 0
for d in docs(sys.argv[2]):
    rc = [q for q in d if isinstance(q, dict) and q.get("type") == "RC"]
    reg = sum(1 for q in rc if q.get("rqpn") == q.get("lqpn"))
    qmax = max(qmax, len(rc) - reg)
    regmax = max(regmax, reg)
print("qps_rc_max", qmax)
print("qps_reg_max", regmax)
# Maxima over the samples: the counters only grow while the job lives,
# and the first and last samples catch processes attaching or leaving.
best = {}
for d in docs(sys.argv[1]):
    if not isinstance(d, dict) or not d.get("jobs"):
        continue
    jobs, conns = d["jobs"], d["connections"]
    v = {
        "jobs": len(jobs),
        "slots": sum(j["slots_used"] for j in jobs),
        "num_conn": max(j["num_conn"] for j in jobs),
        "conns": len(conns),
        "remotes": len({c["remote"].rsplit(":", 1)[0] for c in conns}),
        "qps": sum(c["num_conn"] for c in conns),
        "qps_connected": sum(c["connected"] for c in conns),
        "generation": max([c["generation"] for c in conns] or [0]),
    }
    for k in ("writes_completed", "writes_failed", "bytes_posted",
              "bytes_received", "recvs", "drops_no_slot", "drops_ring_full"):
        v[k] = sum(c[k] for c in conns)
    for k, x in v.items():
        best[k] = max(best.get(k, 0), x)
print("rv_samples", 1 if best else 0)
for k, x in best.items():
    print(k, x)
EOF
tap_diag "node$RV_NODE, $PROV, $(date +%T):"
sed 's/^/# /' "$summary"
cp "$summary" "$shared/summary.$tag.node$RV_NODE.tmp" &&
	mv "$shared/summary.$tag.node$RV_NODE.tmp" "$shared/summary.$tag.node$RV_NODE"

# val KEY [FILE]: a summary value, 0 when absent.
val() {
	awk -v k="$1" '$1 == k { print $2; f = 1 } END { if (!f) print 0 }' \
		"${2:-$summary}"
}

if [[ $PROV == rv ]]; then
	if [[ $(val rv_samples) -eq 1 && $(val jobs) -eq 1 && $(val slots) -eq $PPN ]]; then
		tap_ok rv-one-job
	else
		tap_fail rv-one-job "want 1 job with $PPN slots"
	fi
	nc=$(val num_conn)
	want=$((nc * (RV_NODES - 1)))
	# rdma's list is the independent witness: no QP per rank pair.  A
	# QP that rv replaced (generation > 1) may briefly be listed next
	# to its successor.
	nrc=$(val qps_rc_max)
	if [[ $nc -gt 0 && $(val remotes) -eq $((RV_NODES - 1)) &&
	      $(val conns) -eq $((RV_NODES - 1)) && $(val qps) -eq $want ]] &&
	   ((nrc == want || (nrc > want && nrc <= 2 * want && $(val generation) > 1))) &&
	   (($(val qps_reg_max) <= 1)); then
		tap_ok rv-qps-shared
	else
		tap_fail rv-qps-shared "want $((RV_NODES - 1)) connection(s), $want QPs (num_conn $nc x $((RV_NODES - 1))) for $((PPN * PPN * (RV_NODES - 1))) cross-node rank pairs, and at most the job's registration QP besides; rvstat: $(val conns) connection(s), $(val qps) QPs; rdma: $nrc RC QPs, $(val qps_reg_max) connected to themselves"
	fi
	# A write may fail when rxe gives up on a QP (transport retry
	# counter exceeded: seen under TCG on a loaded host); rv replaces
	# the QP and the provider re-sends that message over TCP, so the
	# data is still verified.  Such failures are shown, and tolerated
	# as long as they are rare: most writes must complete on rv.
	wc=$(val writes_completed) wf=$(val writes_failed)
	if ((wf > 0)); then
		tap_diag "$wf rv write(s) failed; rv's kernel log:"
		dmesg | grep -E ' rv: ' | tail -n 20 | sed 's/^/#   /'
	fi
	if ((wc > 0 && wf * 10 <= wc)); then
		tap_ok rv-writes
	else
		tap_fail rv-writes "writes completed $wc, failed $wf"
	fi
	if [[ $RV_NODE -eq 0 ]]; then
		# Every node's summary, then: the bytes of the messages above
		# the threshold (the program's "bytes=" per pair and size) vs
		# what rv posted on all nodes.
		total=0 ok=1
		for ((n = 0; n < RV_NODES; n++)); do
			f=$shared/summary.$tag.node$n
			_mpi_wait_file "$f" 120 || { ok=0; continue; }
			total=$((total + $(val bytes_posted "$f")))
		done
		thr=$FI_RV_RNDV_THRESHOLD
		# Above: rendezvous ("larger than a threshold", fi_rv(7));
		# at: counted as either, to be lenient.
		read -r above at < <(rvmb_bytes "$thr" <<<"$out")
		tap_diag "rv bytes posted, all nodes: $total; messages above the threshold ($thr): $above, at it: $at"
		if ((ok && above > 0 && total * 100 >= above * 95 &&
		     total <= (above + at) * 105 / 100 + 1048576)); then
			tap_ok rv-bytes
		else
			tap_fail rv-bytes "rv carried $total bytes, expected $above..$((above + at))"
		fi
	fi
fi

rv_barrier "$shared" "checked-$tag" 120 || true
mpi_teardown
tap_end
