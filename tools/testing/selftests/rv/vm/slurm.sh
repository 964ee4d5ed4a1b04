#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# slurm.sh - a Slurm cluster in the VMs running the Open MPI job of mpi.sh
# over the rv provider, launched by srun and by sbatch, as TAP (2 nodes or
# more).
#
# Debian's Slurm 22.05 and MUNGE, all state on tmpfs (the guests see the
# host's root read-only):
#   munged     every node, with a key made for this run (node 0 writes it
#              into the run's shared directory), its socket at the default
#              /run/munge/munge.socket.2
#   slurmctld  node 0; slurmd on every node; one slurm.conf for all, made
#              by node 0 from every node's "slurmd -C", bind-mounted over
#              /etc/slurm (so every client, the job's own srun included,
#              finds it) with a cgroup.conf; /etc/hosts likewise gets the
#              nodes' names
#   cgroups    cgroup v2 (proctrack/cgroup + task/cgroup, cgroup/v2 with
#              IgnoreSystemd=yes: there is no systemd in the guests, so
#              slurmd makes its system.slice/slurmstepd.scope itself)
#   PMI        PMIx (--mpi=pmix): Debian's Open MPI 4.1 has only PMIx
#              clients (pmix ext3x against libpmix2, PMIx 4.2) and no
#              s1/s2 PMI-1/PMI-2 component, so Slurm's mpi/pmi2 would leave
#              every rank a singleton; Slurm's mpi/pmix_v4 uses the same
#              libpmix2
#
# Then node 0, as uid 65534 (RLIMIT_MEMLOCK unlimited, which Slurm's
# default PropagateResourceLimits=ALL hands to the tasks: rv pins the
# provider's buffers), runs mpi/rv_mpi_bench with mpi.sh's arguments over
# the rv provider (pml cm, mtl ofi, FI_PROVIDER_PATH, FI_RV_RNDV_THRESHOLD
# as in mpi.sh), 2 ranks per node (-O: the guests have one vCPU):
#   srun -N2 -n4 --mpi=pmix        slurm-srun-run, slurm-srun-verified
#   sbatch (a script running srun) slurm-sbatch-submit, -done (state
#                                  COMPLETED, exit 0:0, bounded wait),
#                                  slurm-sbatch-verified (its output file),
#                                  slurm-cgroup-v2 (a step's tasks on every
#                                  node in their job's cgroup)
# and every node checks from rvstat samples, per job (the rv job key is
# the hashed PMIX_NAMESPACE, one per Slurm step):
#   rv-<phase>-one-job   one rv job of uid 65534 with 2 slots
#   rv-<phase>-writes    rv writes completed, at most 10% failed
#   rv-<phase>-bytes     (node 0, all nodes' counters) the bytes rv posted
#                        ~= those of the messages above the threshold
#
# The SPANK plugin tools/slurm/spank_rv.so is loaded as "required" by
# plugstack.conf: each step's tasks get FI_RV_JOB_KEY=s<jobid>.<stepid>
# (the rv job key above), and each step on each node is an rv launcher job
# (RV_IOCTL_LAUNCHER_JOB, launcher id jobid << 32 | stepid) from its first
# task's fork to its slurmstepd's exit (or the job's epilog):
#   slurm-spank-built       the plugin is built (else no plugstack.conf)
#   slurm-spank-loaded      (every node) its log line for the srun step
#   slurm-spank-key         the sbatch job's step 0 saw FI_RV_JOB_KEY
#                           s<jobid>.0 on every node
# and, only with an rv whose QUERY has RV_CMD_LAUNCHER_JOB (else SKIP):
#   rv-<phase>-launcher-id  (every node) rvstat showed the step's rv job
#                           bound to launcher id jobid << 32 | stepid
#   slurm-spank-eperm       while the srun step runs, a process of its uid
#                           outside its cgroup (rv_conn_test -k <its key>)
#                           is refused with EPERM
#   slurm-<phase>-clean     (every node) once the step ended: no rv job of
#                           its key, no RC QP in "rdma res show qp"
#                           (rv's cm_stats are printed); phases srun,
#                           sbatch, scancel (a running srun job
#                           cancelled) and kill9 (node 0's slurmstepd of a
#                           running step killed with SIGKILL, then the
#                           job cancelled: the plugin's job epilog
#                           destroys the binding)
#   (the scancel and kill9 phases run only with such an rv, or with
#   SLURM_LAUNCHER_PHASES=1; a clean check that finds leftovers on an rv
#   without it is a SKIP)
#
# Environment: MPI_BENCH_ARGS, MPI_TIMEOUT (per job, default 420 s),
# RV_FI_DIR, SLURM_TEST_UID (default 65534), as in mpi.sh;
# SLURM_LAUNCHER_PHASES.

set -uo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source-path=SCRIPTDIR source=tap.sh
. "$here/tap.sh"
# Launching is what is tested here, not the link: a quarter of mpi.sh's
# bytes (1 B..4 MiB), still well above the rendezvous threshold.
: "${MPI_BENCH_ARGS:=-m 1 -M 4M -f 4 -w 16 -b 256K -l 128K -x 1M -n 8 -W 0}"
# shellcheck source=../mpi/rvmb.sh
. "$here/../mpi/rvmb.sh"

: "${RV_NODE:?run me with rv-vm}" "${RV_NODES:?}" "${RV_IBDEV:?}" "${RV_OUT:?}"
PPN=2
NP=$((PPN * RV_NODES))
MPI_TIMEOUT=${MPI_TIMEOUT:-420}
TUID=${SLURM_TEST_UID:-65534}
shared=$(dirname "$RV_OUT")/slurm-shared
S=/run/slurm-rv		# this node's Slurm state, configuration and logs
JOBDIR=/tmp/rvslurm	# the job's working directory (uid TUID), every node
SPANK=$RV_REPO/tools/slurm/spank_rv.so
CT=$RV_REPO/tools/testing/selftests/rv/rv_conn_test
mkdir -p "$shared"

# The ranks' locked memory (rv's pinned buffers): srun and sbatch pass
# their limits on to the tasks, and slurmd can only grant what it has.
ulimit -l unlimited

pids=()
stop_daemons() {
	rv_stop_all "${pids[@]}"
	pids=()
}

fatal() {
	tap_fail "$1" "$2"
	[[ $RV_NODE -eq 0 ]] && touch "$shared/slurm-done"
	stop_daemons
	for f in "$S"/log/*; do
		[[ -f $f ]] && cp "$f" "$RV_OUT/" 2>/dev/null
	done
	tap_end
	exit
}

tap_begin
[[ -x $BENCH ]] || fatal slurm-built "$BENCH not built (make -C tools/testing/selftests/rv/mpi)"
[[ -f $FI_DIR/librv-fi.so ]] || fatal slurm-rv-provider "$FI_DIR/librv-fi.so not built"
for b in munged slurmctld slurmd srun sbatch sinfo; do
	command -v "$b" >/dev/null ||
		fatal slurm-installed "no $b: make packages (slurm-wlm, munge)"
done
[[ -c /dev/rv ]] || fatal slurm-rv-loaded "no /dev/rv: rv.ko not loaded"
# As mpi.sh: 2 ranks per guest on 2 host cores stall longer than 7 tries
# of the default ack_timeout.
ack=$(rv_ack_timeout_at_least 17)
if rv_reload "$ack"; then
	tap_ok slurm-rv-ack-timeout
else
	tap_fail slurm-rv-ack-timeout "cannot reload rv with $ack"
fi

# LJ=1: this rv has RV_IOCTL_LAUNCHER_JOB (QUERY's cmd_mask bit 0x0e).
rv_launcher_supported() {
	python3 - <<'EOF'
import fcntl, os, struct, sys
fd = os.open("/dev/rv", os.O_RDWR)
q = bytearray(struct.pack("<II", 64, 0) + bytes(56))  # struct rv_query, 64 B
fcntl.ioctl(fd, 0xC500, q)                            # RV_IOCTL_QUERY
sys.exit(0 if (struct.unpack_from("<Q", q, 8)[0] >> 0x0e) & 1 else 1)
EOF
}
LJ=0
rv_launcher_supported && LJ=1
LJ_WHY="rv without RV_IOCTL_LAUNCHER_JOB (QUERY cmd_mask bit 0x0e clear)"
tap_diag "rv launcher jobs (RV_IOCTL_LAUNCHER_JOB): $( ((LJ)) && echo supported || echo "not supported")"

# ---- the node's configuration ----------------------------------------------

mkdir -p "$S"/{etc,state,spool,log} /run/munge /run/munge-key "$JOBDIR"
chmod 755 "$S" "$S/spool" /run/munge
chmod 700 /run/munge-key
chown "$TUID:$TUID" "$JOBDIR" 2>/dev/null || chown "$TUID" "$JOBDIR"

# Names: slurmd finds its NodeName by the short host name (node<i>), and
# srun and the daemons resolve each other's names.
{
	echo "127.0.0.1 localhost"
	for ((n = 0; n < RV_NODES; n++)); do
		echo "$(rv_node_ip "$n") node$n"
	done
} >"$S/hosts"
mount --bind "$S/hosts" /etc/hosts || fatal slurm-setup "bind mount /etc/hosts"
mount --bind "$S/etc" /etc/slurm || fatal slurm-setup "bind mount /etc/slurm"

# The SPANK plugin, required: slurmd, slurmstepd, srun and sbatch load it.
# Its limits are the steps' needs exactly (PPN processes per node, a
# connection per other node): a limit one too strict fails the MPI steps.
if [[ -f $SPANK ]]; then
	echo "required $SPANK max_procs=$PPN max_conns=$((RV_NODES - 1)) max_pinned=1G" \
		>"$S/etc/plugstack.conf"
	tap_ok slurm-spank-built
else
	: >"$S/etc/plugstack.conf"
	tap_fail slurm-spank-built "$SPANK not built (make -C tools/slurm)"
fi

# cgroup v2: the guests do not mount it (memcg.sh does this too).
CG=/sys/fs/cgroup
grep -q "^[^ ]* $CG cgroup2 " /proc/mounts || mount -t cgroup2 none "$CG"
if grep -q "^[^ ]* $CG cgroup2 " /proc/mounts; then
	# What slurmd wants delegated down to system.slice/slurmstepd.scope
	# (it also enables them itself, but complains first).
	mkdir -p "$CG/system.slice"
	for d in "$CG" "$CG/system.slice"; do
		for c in cpuset cpu memory pids; do
			echo "+$c" >"$d/cgroup.subtree_control" 2>/dev/null
		done
	done
	tap_diag "cgroup2: $(cat "$CG/cgroup.subtree_control")"
else
	fatal slurm-cgroup2 "cannot mount cgroup2 on $CG"
fi

# This node's hardware as slurmd sees it, for node 0's NodeName lines.
line=$(slurmd -C | head -n 1)
[[ $line == NodeName=* ]] || fatal slurm-setup "slurmd -C: $line"
line=$(sed -E 's/^NodeName=[^ ]+ //' <<<"$(slurmd -C | head -n 1)")
echo "NodeName=node$RV_NODE NodeAddr=$(rv_node_ip "$RV_NODE") $line" \
	>"$shared/nodeconf.node$RV_NODE.tmp" &&
	mv "$shared/nodeconf.node$RV_NODE.tmp" "$shared/nodeconf.node$RV_NODE"
tap_diag "node$RV_NODE: $(cat "$shared/nodeconf.node$RV_NODE")"

if [[ $RV_NODE -eq 0 ]]; then
	for ((n = 0; n < RV_NODES; n++)); do
		rv_wait_until 120 test -e "$shared/nodeconf.node$n" ||
			fatal slurm-conf "no slurmd -C from node $n"
	done
	# A key of this run only (munged wants 32 bytes at least).
	dd if=/dev/urandom of="$shared/munge.key" bs=1024 count=1 2>/dev/null
	cat >"$shared/cgroup.conf" <<-EOF
	CgroupPlugin=cgroup/v2
	IgnoreSystemd=yes
	ConstrainCores=yes
	ConstrainRAMSpace=no
	ConstrainDevices=no
	EOF
	# Generous timeouts: TCG guests on a busy host.  -O (overcommit)
	# in the jobs: the guests have one CPU for 2 ranks.
	{
		cat <<-EOF
		ClusterName=rvtest
		SlurmctldHost=node0($(rv_node_ip 0))
		SlurmUser=root
		SlurmdUser=root
		AuthType=auth/munge
		CryptoType=crypto/munge
		MpiDefault=pmix
		ProctrackType=proctrack/cgroup
		TaskPlugin=task/cgroup
		PropagateResourceLimits=ALL
		StateSaveLocation=$S/state
		SlurmdSpoolDir=$S/spool
		SlurmctldPidFile=$S/slurmctld.pid
		SlurmdPidFile=$S/slurmd.pid
		SlurmctldLogFile=$S/log/slurmctld.log
		SlurmdLogFile=$S/log/slurmd.log
		SlurmctldDebug=verbose
		SlurmdDebug=verbose
		SchedulerType=sched/backfill
		SelectType=select/cons_tres
		SelectTypeParameters=CR_Core
		ReturnToService=2
		SlurmctldTimeout=300
		SlurmdTimeout=300
		MessageTimeout=60
		BatchStartTimeout=120
		KillWait=10
		InactiveLimit=0
		MinJobAge=600
		JobAcctGatherType=jobacct_gather/none
		PlugStackConfig=/etc/slurm/plugstack.conf
		AccountingStorageType=accounting_storage/none
		EOF
		cat "$shared"/nodeconf.node*
		echo "PartitionName=rv Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
	} >"$shared/slurm.conf.tmp" && mv "$shared/slurm.conf.tmp" "$shared/slurm.conf"
	sed 's/^/#   /' "$shared/slurm.conf"
fi
rv_wait_until 120 test -e "$shared/slurm.conf" ||
	fatal slurm-conf "no slurm.conf from node 0"
if ! { cp "$shared/slurm.conf" "$shared/cgroup.conf" "$S/etc/" &&
	install -m 400 "$shared/munge.key" /run/munge-key/munge.key; }; then
	fatal slurm-conf "cannot copy the configuration"
fi
tap_ok slurm-conf

# ---- daemons ---------------------------------------------------------------

munged -F --key-file=/run/munge-key/munge.key \
	--seed-file=/run/munge-key/munged.seed \
	--log-file="$S/log/munged.log" >>"$S/log/munged.log" 2>&1 &
pids+=($!)
if rv_wait_until 30 test -S /run/munge/munge.socket.2 &&
   munge -n | unmunge >/dev/null; then
	tap_ok slurm-munged
else
	fatal slurm-munged "munged did not come up: $(tail -n 5 "$S/log/munged.log")"
fi

if [[ $RV_NODE -eq 0 ]]; then
	slurmctld -D -i >>"$S/log/slurmctld.out" 2>&1 &
	pids+=($!)
	if rv_wait_until 60 scontrol ping >/dev/null 2>&1; then
		tap_ok slurm-slurmctld
	else
		fatal slurm-slurmctld "$(tail -n 20 "$S/log/slurmctld.log" "$S/log/slurmctld.out" 2>&1)"
	fi
	touch "$shared/slurmctld-up"
fi
rv_wait_until 120 test -e "$shared/slurmctld-up" ||
	fatal slurm-slurmctld-up "node 0's slurmctld never came up"
slurmd -D >>"$S/log/slurmd.out" 2>&1 &
slurmd_pid=$!
pids+=("$slurmd_pid")
sleep 3
if kill -0 "$slurmd_pid" 2>/dev/null; then
	tap_ok slurm-slurmd
else
	fatal slurm-slurmd "slurmd exited: $(tail -n 20 "$S/log/slurmd.log" "$S/log/slurmd.out" 2>&1)"
fi

# rvstat samples for the whole run (root sees every uid's jobs).
"$RVSTAT" --json -w 1 >"$RV_OUT/rvstat.slurm.jsonl" 2>&1 &
rvstat_pid=$!

# ---- the jobs (node 0) -------------------------------------------------------

# as_user CMD...: CMD as uid TUID in JOBDIR with the job's environment.
as_user() {
	(cd "$JOBDIR" && setpriv --reuid="$TUID" --regid="$TUID" --clear-groups \
		env HOME="$JOBDIR" TMPDIR=/tmp SLURM_CONF=/etc/slurm/slurm.conf \
		FI_PROVIDER_PATH="$FI_DIR" FI_RV_RNDV_THRESHOLD="$FI_RV_RNDV_THRESHOLD" \
		FI_UNIVERSE_SIZE=16 \
		OMPI_MCA_pml=cm OMPI_MCA_mtl=ofi OMPI_MCA_mtl_ofi_provider_include=rv \
		OMPI_MCA_btl=self OMPI_MCA_mpi_yield_when_idle=1 \
		"$@")
}

# verified OUT NAME: mpi.sh's check of rv_mpi_bench's output.
verified() {
	if grep -Eq '^rvmb-result .* errors=0 .*PASS$' "$1"; then
		tap_ok "slurm-$2-verified"
	else
		tap_fail "slurm-$2-verified" "no rvmb-result ... PASS line in $1"
	fi
}

# ---- the SPANK plugin's bindings (spank_rv.so) --------------------------------

# key_hex KEY: KEY as rvstat prints it.
key_hex() {
	printf '%s' "$1" | od -An -tx1 | tr -d ' \n'
}

# job_id NAME PID: the id of our job NAME, while PID (its srun) runs.
job_id() {
	local j i
	for ((i = 0; i < 300; i++)); do
		j=$(squeue -h -n "$1" -o %i 2>/dev/null | head -n 1)
		[[ $j =~ ^[0-9]+$ ]] && { echo "$j"; return 0; }
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.5
	done
	return 1
}

# rv_job_seen KEY [MIN_CONNS]: this node's rvstat has an rv job of KEY
# (with at least MIN_CONNS connections).
rv_job_seen() {
	"$RVSTAT" --json 2>/dev/null | python3 -c '
import json, sys
try:
    d = json.loads(sys.stdin.readline())
except ValueError:
    sys.exit(1)
sys.exit(0 if any(j["key"] == sys.argv[1] and j["conns"] >= int(sys.argv[2])
                  for j in d.get("jobs", [])) else 1)' "$(key_hex "$1")" "${2:-0}"
}

# wait_rv_job KEY MIN_CONNS PID SECONDS: until the step's rv job is seen on
# this node, while PID (its srun) runs.
wait_rv_job() {
	local end=$((SECONDS + $(rv_secs "$4")))
	while ((SECONDS < end)); do
		rv_job_seen "$1" "$2" && return 0
		kill -0 "$3" 2>/dev/null || return 1
		sleep 1
	done
	return 1
}

# eperm_probe JOBID SRUN_PID: while step JOBID.0 runs (its rv job is up on
# this node), a process of its uid outside its cgroup ATTACHes with its key.
eperm_probe() {
	local key=s$1.0 out rc=0
	if [[ -z $1 ]] || ! wait_rv_job "$key" 0 "$2" "$MPI_TIMEOUT"; then
		tap_fail slurm-spank-eperm "the srun step's rv job ($key) was never seen"
		return
	fi
	out=$(timeout 60 setpriv --reuid="$TUID" --regid="$TUID" --clear-groups \
		"$CT" -k "$key" -t 2000 -1 "$(rv_node_ip 1)" 2>&1) || rc=$?
	tap_diag "outside the step, uid $TUID, key $key: rv_conn_test exit $rc: $out"
	if ((rc == 1)) && [[ $out == *"rv_attach: Operation not permitted"* ]]; then
		tap_ok slurm-spank-eperm
	else
		tap_fail slurm-spank-eperm "want rv_attach: Operation not permitted"
	fi
}

# rv_leftovers KEY: "<rv jobs of KEY> <RC QPs>" on this node.
rv_leftovers() {
	local jobs qps
	jobs=$("$RVSTAT" --json 2>/dev/null | grep -o "\"key\":\"$(key_hex "$1")\"" | wc -l)
	qps=$(rdma -j res show qp 2>/dev/null | python3 -c '
import json, sys
try:
    d = json.load(sys.stdin)
except ValueError:
    d = []
print(sum(1 for q in d if isinstance(q, dict) and q.get("type") == "RC"))')
	echo "$jobs $qps"
}

# clean_check NAME KEY: nothing of step KEY left on this node (60 s grace:
# a killed step's processes may take a while to go).
clean_check() {
	local name=$1 key=$2 left end
	end=$((SECONDS + $(rv_secs 60)))
	while :; do
		left=$(rv_leftovers "$key")
		[[ $left == "0 0" ]] && break
		((SECONDS < end)) || break
		sleep 1
	done
	tap_diag "node$RV_NODE after $name (key $key): rv jobs of the key, RC QPs: $left; rv cm_stats:"
	sed 's/^/#   /' /sys/kernel/debug/rv/cm_stats 2>/dev/null
	if [[ $left == "0 0" ]]; then
		tap_ok "slurm-$name-clean"
		return
	fi
	"$RVSTAT" 2>&1 | sed 's/^/#   /'
	rdma res show qp 2>&1 | sed 's/^/#   /'
	if ((LJ)); then
		tap_fail "slurm-$name-clean" "rv job or QPs left"
	else
		tap_skip "slurm-$name-clean" "leftovers, but $LJ_WHY"
	fi
}

# clean_request NAME KEY (node 0): every node runs clean_check NAME KEY;
# returns when all did (node i > 0 in clean_serve).
clean_request() {
	local n
	echo "$2" >"$shared/clean.$1.tmp" && mv "$shared/clean.$1.tmp" "$shared/clean.$1.req"
	clean_check "$1" "$2"
	for ((n = 1; n < RV_NODES; n++)); do
		rv_wait_until 180 test -e "$shared/clean.$1.done.node$n" ||
			tap_diag "node$n did not check after $1"
	done
}

# clean_serve (node i > 0): the checks node 0 asked for and we did not do.
clean_serve() {
	local r name
	for r in "$shared"/clean.*.req; do
		[[ -e $r ]] || continue
		name=${r##*/clean.}
		name=${name%.req}
		[[ -e $shared/clean.$name.done.node$RV_NODE ]] && continue
		clean_check "$name" "$(cat "$r")"
		touch "$shared/clean.$name.done.node$RV_NODE"
	done
}

# killed_step MODE (node 0): an srun step of rv_mpi_bench ended while its
# rv connections are up, by "scancel" of its job, or "kill9": SIGKILL to
# node 0's slurmstepd of the step, then scancel (its slurm_spank_exit never
# runs: the job epilog destroys the binding).  Then clean_request.
killed_step() {
	local mode=$1 pid jid spid state i rc
	tap_diag "$(date +%T) $mode: srun -N$RV_NODES -n$NP rv_mpi_bench"
	# shellcheck disable=SC2086 # BENCH_ARGS: options
	as_user timeout -k 10 240 srun -N"$RV_NODES" -n"$NP" \
		-m cyclic -O --mpi=pmix -t 15 -J "rv-$mode" \
		"$BENCH" $BENCH_ARGS -H 3 >"$RV_OUT/$mode.out" 2>&1 &
	pid=$!
	jid=$(job_id "rv-$mode" "$pid")
	if [[ -z $jid ]] || ! wait_rv_job "s$jid.0" 1 "$pid" 180; then
		tap_fail "slurm-$mode-clean" "job ${jid:-?}: no rv job with connections seen"
		[[ -n $jid ]] && scancel "$jid"
		wait "$pid"
		return
	fi
	tap_diag "$(date +%T) $mode: job $jid's rv job s$jid.0 is connected"
	if [[ $mode == kill9 ]]; then
		spid=$(pgrep -f "^slurmstepd: \[$jid\.0\]" | head -n 1)
		tap_diag "SIGKILL to slurmstepd ${spid:-(none found)} of step $jid.0"
		[[ -n $spid ]] && kill -9 "$spid"
		sleep 5
	fi
	scancel "$jid"
	for ((i = 0; i < 120; i++)); do
		state=$(scontrol -o show job "$jid" 2>/dev/null | grep -o 'JobState=[A-Z_]*')
		[[ $state == JobState=RUNNING || $state == JobState=COMPLETING ]] || break
		sleep 1
	done
	rc=0
	wait "$pid" || rc=$?
	tap_diag "$(date +%T) $mode: job $jid $state, srun exit $rc"
	clean_request "$mode" "s$jid.0"
}

if [[ $RV_NODE -eq 0 ]]; then
	idle=0
	for ((i = 0; i < 60; i++)); do
		n=$(sinfo -h -N -t idle -o '%N' 2>/dev/null | sort -u | wc -l)
		((n == RV_NODES)) && { idle=1; break; }
		sleep 2
	done
	sinfo -N -l 2>&1 | sed 's/^/# /'
	if ((idle)); then
		tap_ok slurm-nodes-idle
	else
		tap_fail slurm-nodes-idle "not all $RV_NODES nodes idle after 120 s"
	fi

	tap_diag "$(date +%T) srun -N$RV_NODES -n$NP --mpi=pmix: rv_mpi_bench $BENCH_ARGS"
	rc=0
	# shellcheck disable=SC2086 # BENCH_ARGS: options
	as_user timeout -k 20 "$MPI_TIMEOUT" srun -N"$RV_NODES" -n"$NP" \
		-m cyclic -O --mpi=pmix -t 15 -J rv-srun \
		"$BENCH" $BENCH_ARGS -H 3 >"$RV_OUT/srun.out" 2>&1 &
	srun_pid=$!
	jid=$(job_id rv-srun "$srun_pid")
	echo "$jid" >"$shared/jid.srun"
	tap_diag "srun job ${jid:-?}: rv job key s$jid.0"
	if ((LJ)); then
		eperm_probe "$jid" "$srun_pid"
	else
		tap_skip slurm-spank-eperm "$LJ_WHY"
	fi
	wait "$srun_pid" || rc=$?
	tap_diag "$(date +%T) srun done"
	sed 's/^/# /' "$RV_OUT/srun.out"
	if ((rc == 0)); then
		tap_ok slurm-srun-run
	else
		tap_fail slurm-srun-run "srun exit status $rc$( ((rc == 124)) && echo ' (timeout)')"
	fi
	verified "$RV_OUT/srun.out" srun
	clean_request srun "s$jid.0"

	cat >"$JOBDIR/job.sh" <<-EOF
	#!/bin/bash
	#SBATCH -J rv-sbatch
	#SBATCH -N $RV_NODES
	#SBATCH -n $NP
	#SBATCH -O
	#SBATCH -t 15
	#SBATCH -o $JOBDIR/sbatch.%j.out
	echo "rvslurm batch on \$(hostname): \$SLURM_JOB_NODELIST, memlock \$(ulimit -l)"
	# Where the tasks live (step 0, one task per node): the cgroup
	# Slurm made for them.
	srun -N $RV_NODES -n $RV_NODES -m cyclic bash -c 'echo "rvslurm-cgroup \$(hostname) \$(cat /proc/self/cgroup)"; echo "rvslurm-key \$(hostname) \$FI_RV_JOB_KEY"'
	srun -m cyclic --mpi=pmix $BENCH $BENCH_ARGS -H 3
	echo "rvslurm srun exit \$?"
	EOF
	chmod 755 "$JOBDIR/job.sh"
	tap_diag "$(date +%T) sbatch"
	jid=$(as_user sbatch --parsable "$JOBDIR/job.sh" 2>&1)
	if [[ $jid =~ ^[0-9]+$ ]]; then
		tap_ok slurm-sbatch-submit
		echo "$jid" >"$shared/jid.sbatch"
		state=
		end=$((SECONDS + MPI_TIMEOUT))
		while ((SECONDS < end)); do
			state=$(scontrol -o show job "$jid" 2>/dev/null |
				grep -o 'JobState=[A-Z_]*')
			case $state in
			JobState=PENDING | JobState=RUNNING | JobState=CONFIGURING | \
			JobState=COMPLETING | "") sleep 2 ;;
			*) break ;;
			esac
		done
		info=$(scontrol -o show job "$jid" 2>&1)
		tap_diag "$(date +%T) job $jid: $(grep -oE '(JobState|ExitCode| NodeList|BatchHost)=[^ ]*' <<<"$info" | tr '\n' ' ')"
		out=$JOBDIR/sbatch.$jid.out
		cp "$out" "$RV_OUT/sbatch.out" 2>/dev/null
		sed 's/^/# /' "$out" 2>/dev/null
		if [[ $info == *JobState=COMPLETED* && $info == *ExitCode=0:0* ]] &&
		   grep -q '^rvslurm srun exit 0$' "$out"; then
			tap_ok slurm-sbatch-done
		else
			[[ $state == JobState=RUNNING ]] && scancel "$jid"
			tap_fail slurm-sbatch-done "job $jid: $state"
		fi
		verified "$out" sbatch
		# cgroup v2 containment: every node's task of step 0 in
		# system.slice/<node>_slurmstepd.scope/job_<id>/step_0/ (22.05 puts the
		# node name first).
		n=$(grep -cE "^rvslurm-cgroup node[0-9]+ 0::/system.slice/([^/]+_)?slurmstepd.scope/job_$jid/step_0/" "$out")
		if ((n == RV_NODES)); then
			tap_ok slurm-cgroup-v2
		else
			tap_fail slurm-cgroup-v2 "$n of $RV_NODES step 0 tasks in job_$jid's cgroup"
		fi
		# The plugin's key in step 0's tasks, on every node.
		n=$(grep -cE "^rvslurm-key node[0-9]+ s$jid\.0$" "$out")
		if ((n == RV_NODES)); then
			tap_ok slurm-spank-key
		else
			tap_fail slurm-spank-key "$n of $RV_NODES step 0 tasks had FI_RV_JOB_KEY=s$jid.0"
		fi
		# Its MPI step is step 1.
		clean_request sbatch "s$jid.1"
	else
		tap_fail slurm-sbatch-submit "$jid"
		tap_fail slurm-sbatch-done "not submitted"
		tap_fail slurm-cgroup-v2 "no batch job"
		tap_fail slurm-spank-key "no batch job"
		: >"$RV_OUT/sbatch.out"
	fi
	if ((LJ)) || [[ ${SLURM_LAUNCHER_PHASES:-} == 1 ]]; then
		killed_step scancel
		killed_step kill9
	else
		tap_skip slurm-scancel-clean "$LJ_WHY"
		tap_skip slurm-kill9-clean "$LJ_WHY"
	fi
	touch "$shared/slurm-done"
else
	# Serve node 0's clean checks until it is done.
	done0=0
	end=$((SECONDS + $(rv_secs $((4 * MPI_TIMEOUT + 400)))))
	while ((SECONDS < end)); do
		[[ -e $shared/slurm-done ]] && done0=1
		clean_serve
		((done0)) && break
		sleep 1
	done
	if ((done0)); then
		tap_ok slurm-node0-done
	else
		tap_fail slurm-node0-done "node 0 never finished"
	fi
fi
sleep 2
kill "$rvstat_pid" 2>/dev/null
wait "$rvstat_pid" 2>/dev/null

# ---- rv's view, per rv job (Slurm step) ---------------------------------------

# "<n> key slots writes_completed writes_failed bytes_posted" per rv job
# of uid TUID, in the order they appeared: 1 = srun's, 2 = sbatch's.
summary=$RV_OUT/slurm.summary
python3 - "$RV_OUT/rvstat.slurm.jsonl" "$TUID" >"$summary" <<'EOF'
import json, sys

uid = int(sys.argv[2])
order, best = [], {}
for line in open(sys.argv[1], errors="replace"):
    line = line.strip()
    if not line.startswith("{"):
        continue
    try:
        d = json.loads(line)
    except ValueError:
        continue
    ids = {}
    for j in d.get("jobs", []):
        if j["uid"] != uid:
            continue
        ids[j["job"]] = j["key"]
        if j["key"] not in best:
            order.append(j["key"])
            best[j["key"]] = {}
        b = best[j["key"]]
        b["slots"] = max(b.get("slots", 0), j["slots_used"])
    sums = {}
    for c in d.get("connections", []):
        k = ids.get(c["job"])
        if k is None:
            continue
        s = sums.setdefault(k, {})
        for f in ("writes_completed", "writes_failed", "bytes_posted"):
            s[f] = s.get(f, 0) + c[f]
    for k, s in sums.items():
        for f, x in s.items():
            best[k][f] = max(best[k].get(f, 0), x)
for i, k in enumerate(order, 1):
    b = best[k]
    print(i, k, b.get("slots", 0), b.get("writes_completed", 0),
          b.get("writes_failed", 0), b.get("bytes_posted", 0))
EOF
tap_diag "node$RV_NODE rv jobs of uid $TUID (n key slots writes_completed writes_failed bytes_posted):"
sed 's/^/#   /' "$summary"
cp "$summary" "$shared/summary.node$RV_NODE.tmp" &&
	mv "$shared/summary.node$RV_NODE.tmp" "$shared/summary.node$RV_NODE"

phase=(- srun sbatch)
for i in 1 2; do
	p=${phase[i]}
	read -r _ _ slots wc wf _ < <(awk -v i="$i" '$1 == i' "$summary")
	if [[ ${slots:-0} -eq $PPN ]] && (($(awk '{ n++ } END { print n + 0 }' "$summary") >= i)); then
		tap_ok "rv-$p-one-job"
	else
		tap_fail "rv-$p-one-job" "want an rv job of uid $TUID with $PPN slots (step $i)"
	fi
	wc=${wc:-0} wf=${wf:-0}
	if ((wc > 0 && wf * 10 <= wc)); then
		tap_ok "rv-$p-writes"
	else
		tap_fail "rv-$p-writes" "writes completed $wc, failed $wf"
	fi
done

if [[ $RV_NODE -eq 0 ]]; then
	for i in 1 2; do
		p=${phase[i]}
		total=0 ok=1
		for ((n = 0; n < RV_NODES; n++)); do
			f=$shared/summary.node$n
			rv_wait_until 120 test -e "$f" || { ok=0; continue; }
			total=$((total + $(awk -v i="$i" '$1 == i { print $6; f = 1 } END { if (!f) print 0 }' "$f")))
		done
		thr=$FI_RV_RNDV_THRESHOLD
		read -r above at < <(rvmb_bytes "$thr" <"$RV_OUT/$p.out")
		tap_diag "$p: rv bytes posted, all nodes: $total; messages above the threshold ($thr): $above, at it: $at"
		if ((ok && above > 0 && total * 100 >= above * 95 &&
		     total <= (above + at) * 105 / 100 + 1048576)); then
			tap_ok "rv-$p-bytes"
		else
			tap_fail "rv-$p-bytes" "rv carried $total bytes, expected $above..$((above + at))"
		fi
	done
fi

# The plugin ran in the srun step's slurmstepd (its log line), and rvstat
# showed each step's rv job bound to its launcher id.
jid_srun=$(cat "$shared/jid.srun" 2>/dev/null)
line=$(grep -h "spank_rv: step $jid_srun\.0: " "$S"/log/slurmd.log 2>/dev/null)
# shellcheck disable=SC2001
sed 's/^/# /' <<<"$line"
if [[ -n $jid_srun && -n $line ]]; then
	tap_ok slurm-spank-loaded
else
	tap_fail slurm-spank-loaded "no spank_rv line for step ${jid_srun:-?}.0 in slurmd.log"
fi
for p in srun sbatch; do
	j=$(cat "$shared/jid.$p" 2>/dev/null)
	st=0
	[[ $p == sbatch ]] && st=1
	if ((!LJ)); then
		tap_skip "rv-$p-launcher-id" "$LJ_WHY"
		continue
	fi
	ids=$(python3 - "$RV_OUT/rvstat.slurm.jsonl" "$(key_hex "s$j.$st")" <<'EOF'
import json, sys
ids = set()
for line in open(sys.argv[1], errors="replace"):
    try:
        d = json.loads(line)
    except ValueError:
        continue
    for j in d.get("jobs", []):
        if j["key"] == sys.argv[2]:
            ids.add(j.get("launcher_id", -1))
print(" ".join(str(i) for i in sorted(ids)))
EOF
)
	want=$(((j << 32) | st))
	tap_diag "node$RV_NODE $p step $j.$st: launcher ids seen ${ids:-none}, want $want"
	if [[ -n $j && $ids == "$want" ]]; then
		tap_ok "rv-$p-launcher-id"
	else
		tap_fail "rv-$p-launcher-id" "launcher ids '${ids:-none}', want $want"
	fi
done

rv_barrier "$shared" checked 120 || true
[[ $RV_NODE -eq 0 ]] && scontrol shutdown >/dev/null 2>&1
stop_daemons
for f in "$S"/log/*; do
	cp "$f" "$RV_OUT/" 2>/dev/null
done
tap_end
