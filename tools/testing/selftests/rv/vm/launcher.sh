#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# launcher.sh - two nodes: jobs made by a launcher (RV_IOCTL_LAUNCHER_JOB,
# rv_launcher), as Slurm's plugin makes them, without Slurm.  On each node
# root makes a cgroup for the job and binds uid 65534 and a key to it:
#
#   bound:        a process of 65534 inside the cgroup attaches and
#                 connects to the same launcher job on the other node;
#                 rvstat shows the job's launcher id
#   outside:      the same uid and key outside the cgroup: ATTACH EPERM
#   admin-only:   uid 65534 cannot bind (EPERM); a second binding of the
#                 same uid and key, or of the same id, is EEXIST
#   other-id:     the server node bound to another launcher id: the
#                 client's connection ends in AUTH (tags bind the id)
#   unbound:      a client started by hand against a bound server: AUTH
#   destroy:      unbinding while connected ends the job, its processes
#                 frozen (cgroup.freeze: stuck, as far as rv can tell), one
#                 of them holding a remote-write registration: no QP of rv
#                 (connections' and the registration QP) and no MR of rv is left
#                 while they are frozen; thawed, the connection reports
#                 JOB_ENDED, a new REG_MEM is ENODEV, dropping the held
#                 registration and closing still work, and a new ATTACH
#                 with the key is EPERM while the old processes hold the
#                 job
#   limits:       a binding's max_procs, max_conns and max_pinned_bytes:
#                 the attach, connection and registration beyond them are
#                 EDQUOT; a registration over the pinned limit evicts the
#                 process's unused entries first
#   only:         launcher_jobs_only=1: a hand-started ATTACH is EPERM
#
# "lo" is the node whose address is lower (the client of the pair).

set -uo pipefail
# shellcheck source=tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"

: "${RV_NODE:?run me with rv-vm}" "${RV_NODES:?}" "${RV_IBDEV:?}" "${RV_OUT:?}"
T=$RV_REPO/tools/testing/selftests/rv
CT=$T/rv_conn_test
L=$T/rv_launcher
HOLD=$T/rv_hold
RVSTAT=$RV_REPO/tools/rvstat/rvstat
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
CG=/sys/fs/cgroup
shared=$(dirname "$RV_OUT")/launcher-barriers
mkdir -p "$shared"

barrier() {
	rv_barrier "$shared" "$@"
}

tap_begin

if [[ ! -x $L || ! -d /sys/module/rv ]]; then
	tap_skip launcher "rv_launcher not built or rv not loaded"
	tap_end
	exit 0
fi
if ! grep -q "^[^ ]* $CG cgroup2 " /proc/mounts; then
	mount -t cgroup2 none "$CG" 2>/dev/null
fi
if ! grep -q "^[^ ]* $CG cgroup2 " /proc/mounts; then
	tap_skip launcher "no cgroup2 on $(uname -r)"
	tap_end
	exit 0
fi

peer=$(rv_node_ip $((1 - RV_NODE)))
role=$(rv_pair_role)
ID=0x4200000001
KEY=L42.1
job=$CG/rv-launcher-test
mkdir -p "$job"

# in_job CMD...: CMD as uid 65534 inside the job's cgroup.
in_job() {
	sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$job" \
		"${NOBODY[@]}" "$@"
}

# rv_qps: the RC QPs of rv's connections on this node (created through
# rdma_cm, so listed as "[rdma_cm]"'s: nothing else in the VMs creates
# kernel RC QPs through it); rv_all_qps: those and rv's own (the
# registration QP, connected to itself); rv_mrs: rv's MRs.
rv_qps() {
	rdma res show qp 2>/dev/null | grep ' type RC ' | grep -c 'comm \[rdma_cm\]'
}
rv_all_qps() {
	rdma res show qp 2>/dev/null | grep ' type RC ' | grep -c 'comm \[\(rdma_cm\|rv\)\]'
}
rv_mrs() {
	rdma res show mr 2>/dev/null | grep -c 'comm \[rv\]'
}

# ---- binding ---------------------------------------------------------------
tap_run admin-only "${NOBODY[@]}" "$L" create -i "$ID" -u 65534 -k "$KEY" -c "$job" -E 1
tap_run bind "$L" create -i "$ID" -u 65534 -k "$KEY" -c "$job"
tap_run bind-twice-eexist "$L" create -i "$ID" -u 65534 -k "$KEY" -c "$job" -E 17
tap_run bind-same-id-eexist "$L" create -i "$ID" -u 65534 -k other -c "$job" -E 17
tap_run unbind-unknown-enoent "$L" destroy -i 0x99 -u 65534 -k "$KEY" -E 2

# ---- outside the cgroup ------------------------------------------------------
out=$("${NOBODY[@]}" "$CT" -k "$KEY" -t 1000 -1 "$peer" 2>&1)
sed 's/^/# /' <<<"$out"
tap_run outside-cgroup-eperm grep -q 'rv_attach: Operation not permitted' <<<"$out"

# ---- bound on both nodes: connected ------------------------------------------
barrier bound || true
# Written by uid 65534: on the guest's tmpfs.
st=/tmp/launcher-bound.status
in_job "$CT" -k "$KEY" -t 30000 -s "$st" "$peer" 2>"$RV_OUT/bound.err" &
holder=$!
rv_status_wait "$st"
tap_run bound-connects rv_status_ok "$st"
"$RVSTAT" >"$RV_OUT/rvstat.bound" 2>&1
sed 's/^/# /' "$RV_OUT/rvstat.bound"
tap_run rvstat-shows-launcher grep -qF " $ID (" "$RV_OUT/rvstat.bound"
barrier bound-checked 60 || true

# ---- destroy while connected, the job frozen -------------------------------------
rv_hold_start held in_job "$HOLD" -a -g -k "$KEY" -m -w -R
tap_run held-remote-registration rv_hold_ready held
q0=$(rv_qps) m0=$(rv_mrs) a0=$(rv_all_qps)
tap_diag "before the destroy: rv RC QPs $q0 (all $a0), rv MRs $m0"
rdma res show mr 2>/dev/null | sed 's/^/#   /'
tap_run job-has-qps test "$q0" -gt 0
tap_run job-has-mrs test "$m0" -gt 0
echo 1 >"$job/cgroup.freeze"
tap_run job-frozen rv_wait_until 10 grep -q '^frozen 1' "$job/cgroup.events"
tap_run destroy "$L" destroy -i "$ID" -u 65534 -k "$KEY"
tap_diag "after the destroy, frozen: rv RC QPs $(rv_qps) (all $(rv_all_qps)), rv MRs $(rv_mrs)"
tap_run destroy-frees-qps test "$(rv_qps)" -eq 0
tap_run destroy-frees-registration-qp test "$(rv_all_qps)" -eq 0
tap_run destroy-frees-mrs test "$(rv_mrs)" -eq 0
echo 0 >"$job/cgroup.freeze"
rv_status_refresh "$st"
sed 's/^/# /' "$st"
tap_run destroy-ends-connection grep -q 'state error reason job_ended' "$st"
rv_hold_stop held
tap_run held-process-closes-cleanly test $? -eq 0
sed 's/^/# /' "$RV_OUT/hold-held.out"
tap_run ended-job-reg-mem-enodev test "$(rv_held held reg_mem)" = "reg_mem ENODEV"
out=$(in_job "$CT" -k "$KEY" -t 1000 -1 "$peer" 2>&1)
tap_run ended-job-attach-eperm grep -q 'rv_attach: Operation not permitted' <<<"$out"
kill "$holder"
wait "$holder" 2>/dev/null
barrier destroyed 60 || true

# ---- another launcher id on the server; a hand-started client ----------------
ID2=0x4200000002
KEY2=L42.2
if [[ $role == hi ]]; then
	tap_run bind-other-id "$L" create -i 0x4300000002 -u 65534 -k "$KEY2" -c "$job"
else
	tap_run bind-id2 "$L" create -i "$ID2" -u 65534 -k "$KEY2" -c "$job"
fi
barrier other-bound 60 || true
if [[ $role == lo ]]; then
	tap_run other-id-refused in_job "$CT" -k "$KEY2" -t 4000 -e auth -1 "$peer"
	tap_run unbind-id2 "$L" destroy -i "$ID2" -u 65534 -k "$KEY2"
else
	in_job "$CT" -k "$KEY2" -t 12000 -e timeout -1 "$peer" >"$RV_OUT/other.out" 2>&1
	sed 's/^/# /' "$RV_OUT/other.out"
fi
barrier other-done 60 || true
if [[ $role == lo ]]; then
	# No binding here now: a hand-started client of the same key.
	tap_run unbound-client-refused "${NOBODY[@]}" "$CT" -k "$KEY2" -t 4000 -e auth -1 "$peer"
else
	in_job "$CT" -k "$KEY2" -t 12000 -e timeout -1 "$peer" >"$RV_OUT/unbound.out" 2>&1
	sed 's/^/# /' "$RV_OUT/unbound.out"
	tap_run unbind-other-id "$L" destroy -i 0x4300000002 -u 65534 -k "$KEY2"
fi
barrier unbound-done 60 || true

# ---- limits ------------------------------------------------------------------------
# Per node: no connection here is connected, so the peer plays no part.
ID3=0x4200000003
KEY3=L42.3
tap_run bind-limits "$L" create -i "$ID3" -u 65534 -k "$KEY3" -c "$job" -P 2 -C 3 -M $((1 << 20))
# Registers 1 MiB, drops it (cached, unused), registers another: only by
# evicting the first does it stay under the 1 MiB pinned.
if rv_hold_start lim1 in_job "$HOLD" -a -g -k "$KEY3" -m -c 0; then
	tap_run limit-conns-edquot test "$(rv_held lim1 conns)" = "conns 3 EDQUOT"
	tap_run limit-pinned-evicts-unused rv_hold_ready lim1
	rv_hold_start lim2 in_job "$HOLD" -a -g -k "$KEY3"
	tap_run limit-procs-second-attaches rv_hold_ready lim2
	out=$(in_job "$HOLD" -a -g -k "$KEY3" </dev/null 2>&1)
	sed 's/^/# /' <<<"$out"
	tap_run limit-procs-edquot grep -q 'rv_attach: Disk quota exceeded' <<<"$out"
	rv_hold_stop lim2
	rv_hold_stop lim1
else
	tap_fail limit-conns-edquot "the first holder did not start"
fi
tap_run unbind-limits "$L" destroy -i "$ID3" -u 65534 -k "$KEY3"
tap_run bind-pinned-limit "$L" create -i "$ID3" -u 65534 -k "$KEY3" -c "$job" -M $((512 << 10))
out=$(in_job "$HOLD" -a -g -k "$KEY3" -m </dev/null 2>&1)
sed 's/^/# /' <<<"$out"
tap_run limit-pinned-edquot grep -q 'rv_hold: MR: Disk quota exceeded' <<<"$out"
tap_run unbind-pinned-limit "$L" destroy -i "$ID3" -u 65534 -k "$KEY3"

# ---- launcher_jobs_only ---------------------------------------------------------
echo 1 >/sys/module/rv/parameters/launcher_jobs_only
out=$("${NOBODY[@]}" "$CT" -k hand -t 1000 -1 "$peer" 2>&1)
tap_run only-launcher-jobs-eperm grep -q 'rv_attach: Operation not permitted' <<<"$out"
echo 0 >/sys/module/rv/parameters/launcher_jobs_only
rmdir "$job" 2>/dev/null
tap_end
