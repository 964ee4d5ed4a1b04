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
# Environment: MPI_BENCH_ARGS, MPI_TIMEOUT (per job, default 420 s),
# RV_FI_DIR, SLURM_TEST_UID (default 65534), as in mpi.sh.

set -uo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source-path=SCRIPTDIR source=tap.sh
. "$here/tap.sh"
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
		"$BENCH" $BENCH_ARGS -H 3 >"$RV_OUT/srun.out" 2>&1 || rc=$?
	tap_diag "$(date +%T) srun done"
	sed 's/^/# /' "$RV_OUT/srun.out"
	if ((rc == 0)); then
		tap_ok slurm-srun-run
	else
		tap_fail slurm-srun-run "srun exit status $rc$( ((rc == 124)) && echo ' (timeout)')"
	fi
	verified "$RV_OUT/srun.out" srun

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
	srun -N $RV_NODES -n $RV_NODES -m cyclic bash -c 'echo "rvslurm-cgroup \$(hostname) \$(cat /proc/self/cgroup)"'
	srun -m cyclic --mpi=pmix $BENCH $BENCH_ARGS -H 3
	echo "rvslurm srun exit \$?"
	EOF
	chmod 755 "$JOBDIR/job.sh"
	tap_diag "$(date +%T) sbatch"
	jid=$(as_user sbatch --parsable "$JOBDIR/job.sh" 2>&1)
	if [[ $jid =~ ^[0-9]+$ ]]; then
		tap_ok slurm-sbatch-submit
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
	else
		tap_fail slurm-sbatch-submit "$jid"
		tap_fail slurm-sbatch-done "not submitted"
		tap_fail slurm-cgroup-v2 "no batch job"
		: >"$RV_OUT/sbatch.out"
	fi
	touch "$shared/slurm-done"
else
	if rv_wait_until $((2 * MPI_TIMEOUT + 200)) test -e "$shared/slurm-done"; then
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

rv_barrier "$shared" checked 120 || true
[[ $RV_NODE -eq 0 ]] && scontrol shutdown >/dev/null 2>&1
stop_daemons
for f in "$S"/log/*; do
	cp "$f" "$RV_OUT/" 2>/dev/null
done
tap_end
