# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
#
# launch.sh - Open MPI across the rv test VMs (vm/rv-vm), sourced by
# vm/mpi.sh and bench/bench-mpi.sh after vm/tap.sh.
#
# mpirun on node 0 starts its remote daemons (orted) over ssh, so every
# node runs its own sshd.  The guests see the host's root file system
# read-only, so nothing of /etc/ssh is used: each node writes host keys, a
# server configuration and the authorized key into /run/rvssh (tmpfs) and
# starts /usr/sbin/sshd -f on it; node 0 makes a client key and an ssh
# configuration (no host key checking: the host keys are new every boot)
# and mpirun uses it through plm_rsh_args "-F ...".  Node 0's public key
# reaches the others through the run's shared output directory.
#
#	mpi_setup SHARED_DIR          every node; SHARED_DIR on the shared 9p dir
#	mpi_run NAME SECONDS ARGS...  node 0: mpirun ARGS (hosts, common MCA
#	                              options added), output in $RV_OUT/NAME.out
#	mpi_done / mpi_wait_done S    node 0 tells the others it is finished;
#	                              they wait for it (at most S seconds)
#	mpi_teardown                  every node: stop its sshd
#
# Everything is bounded: key exchange and barriers by their timeouts, the
# MPI jobs by timeout(1) around mpirun.

MPI_SSH=/run/rvssh
MPI_SHARED=
MPI_SSHD_PID=

# _mpi_wait_file FILE SECONDS: wait until FILE exists.
_mpi_wait_file() {
	local f=$1 limit=$2 i
	for ((i = 0; i < limit * 5; i++)); do
		[[ -e $f ]] && return 0
		sleep 0.2
	done
	return 1
}

mpi_setup() {
	MPI_SHARED=$1
	mkdir -p "$MPI_SHARED" "$MPI_SSH" /run/sshd /root/.ssh || return 1
	chmod 700 "$MPI_SSH" /root/.ssh
	# sshd insists on a root-owned, not group/world-writable privsep dir.
	chmod 755 /run/sshd

	if [[ $RV_NODE -eq 0 ]]; then
		ssh-keygen -q -t ed25519 -N '' -C "rv-mpi@node0" \
			-f "$MPI_SSH/id_ed25519" || return 1
		# Written under another name, then renamed: the others must
		# never read half a key.
		cp "$MPI_SSH/id_ed25519.pub" "$MPI_SHARED/id.pub.tmp" &&
			mv "$MPI_SHARED/id.pub.tmp" "$MPI_SHARED/id.pub" ||
			return 1
		cat >"$MPI_SSH/ssh_config" <<EOF
Host *
	User root
	IdentityFile $MPI_SSH/id_ed25519
	IdentitiesOnly yes
	StrictHostKeyChecking no
	UserKnownHostsFile /dev/null
	LogLevel ERROR
	BatchMode yes
	ConnectTimeout 20
	ServerAliveInterval 15
EOF
	fi
	if ! _mpi_wait_file "$MPI_SHARED/id.pub" 120; then
		tap_diag "mpi_setup: node 0's key never came"
		return 1
	fi
	cp "$MPI_SHARED/id.pub" "$MPI_SSH/authorized_keys" || return 1
	ssh-keygen -q -t ed25519 -N '' -f "$MPI_SSH/host_ed25519" || return 1
	# UsePAM no: PAM would want a writable /etc and a login session;
	# root's password field is "*" (not locked), so public-key login
	# works without it.  StrictModes no: the key's directory chain
	# includes 9p and tmpfs mounts whose modes sshd need not judge.
	cat >"$MPI_SSH/sshd_config" <<EOF
ListenAddress $(rv_node_ip "$RV_NODE")
Port 22
HostKey $MPI_SSH/host_ed25519
PidFile $MPI_SSH/sshd.pid
AuthorizedKeysFile $MPI_SSH/authorized_keys
PermitRootLogin yes
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PrintMotd no
PrintLastLog no
UseDNS no
MaxStartups 64
LogLevel ERROR
AcceptEnv FI_* RV_* OMPI_*
EOF
	# -D -e: in the foreground of this job, logging to its stderr, so it
	# can be stopped by pid and its complaints land in the node's output.
	/usr/sbin/sshd -D -e -f "$MPI_SSH/sshd_config" \
		2>>"$RV_OUT/sshd.log" &
	MPI_SSHD_PID=$!
	# Wait until it listens (bounded): ss may not be there, use the
	# pid file sshd writes once its socket is bound.
	if ! _mpi_wait_file "$MPI_SSH/sshd.pid" 30; then
		tap_diag "mpi_setup: sshd did not start" \
			"$(cat "$RV_OUT/sshd.log" 2>/dev/null)"
		return 1
	fi
	rv_barrier "$MPI_SHARED" sshd-up 180 || return 1
	if [[ $RV_NODE -eq 0 ]]; then
		local n
		for ((n = 1; n < RV_NODES; n++)); do
			if ! rv_retry 10 2 ssh -F "$MPI_SSH/ssh_config" \
				"$(rv_node_ip "$n")" true; then
				tap_diag "mpi_setup: ssh to node $n fails"
				return 1
			fi
		done
	fi
	return 0
}

# mpi_hosts PPN: --host value, PPN slots on every node, node 0 first.
mpi_hosts() {
	local ppn=$1 n h=
	for ((n = 0; n < RV_NODES; n++)); do
		h+="${h:+,}$(rv_node_ip "$n"):$ppn"
	done
	echo "$h"
}

# mpi_run NAME SECONDS MPIRUN-ARGS...: mpirun with what every run here
# needs, bounded by SECONDS (timeout sends TERM, then KILL 20 s later).
# Output (stdout+stderr) in $RV_OUT/NAME.out and on stdout.
mpi_run() {
	local name=$1 limit=$2 rc=0
	shift 2
	# --allow-run-as-root: the guests run everything as root.
	# oob/btl on eth0: the daemons must not pick lo or a stale address.
	# plm_rsh_no_tree_spawn: node 0 starts every daemon itself (the
	# others have no client key).
	# mpi_yield_when_idle: the VMs have one vCPU each and a rank
	# spinning in opal_progress would hold it for a whole time slice
	# while the other rank of the node (or the provider's thread) has
	# the message it waits for.
	timeout -k 20 "$limit" mpirun --allow-run-as-root \
		--mca mpi_yield_when_idle 1 \
		--mca plm_rsh_agent ssh \
		--mca plm_rsh_args "-F $MPI_SSH/ssh_config" \
		--mca plm_rsh_no_tree_spawn 1 \
		--mca oob_tcp_if_include eth0 \
		--mca btl_tcp_if_include eth0 \
		--mca orte_keep_fqdn_hostnames 1 \
		"$@" >"$RV_OUT/$name.out" 2>&1 || rc=$?
	cat "$RV_OUT/$name.out"
	return $rc
}

mpi_done() {
	touch "$MPI_SHARED/mpi-done"
}

# mpi_wait_done SECONDS: nodes 1..: wait for node 0's mpi_done.
mpi_wait_done() {
	_mpi_wait_file "$MPI_SHARED/mpi-done" "$1"
}

mpi_teardown() {
	if [[ -n $MPI_SSHD_PID ]]; then
		kill "$MPI_SSHD_PID" 2>/dev/null
		wait "$MPI_SSHD_PID" 2>/dev/null
		MPI_SSHD_PID=
	fi
	return 0
}
