# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
#
# tap.sh - kselftest-style TAP output and multi-node helpers for test
# scripts run in the rv VMs.  Source it:
#
#	. "$RV_REPO/tools/testing/selftests/rv/vm/tap.sh"
#	tap_begin
#	tap_run  rxe-active  grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state
#	tap_skip rv-loaded   "rv.ko not built"
#	tap_end              # prints the plan; returns 1 if anything failed
#
# Lines look like kselftest's ("ok N name", "not ok N name",
# "ok N name # SKIP reason"); run_tests.sh re-emits them as
# <group>/node<i>/<name>.

TAP_N=0
TAP_FAILED=0

tap_begin() {
	echo "TAP version 13"
}

tap_diag() {
	local l
	for l in "$@"; do
		echo "# $l"
	done
}

tap_ok() {
	TAP_N=$((TAP_N + 1))
	echo "ok $TAP_N $1"
}

# tap_fail NAME [REASON]
tap_fail() {
	TAP_N=$((TAP_N + 1))
	TAP_FAILED=$((TAP_FAILED + 1))
	[[ -n ${2:-} ]] && tap_diag "$1: $2"
	echo "not ok $TAP_N $1"
}

# tap_skip NAME REASON
tap_skip() {
	TAP_N=$((TAP_N + 1))
	echo "ok $TAP_N $1 # SKIP $2"
}

# tap_run NAME CMD...: one result from CMD's exit status; CMD's output is
# shown as diagnostics (always: it is the evidence of what was checked).
tap_run() {
	local name=$1 out rc=0
	shift
	out=$("$@" 2>&1) || rc=$?
	# shellcheck disable=SC2001
	[[ -z $out ]] || sed 's/^/# /' <<<"$out"
	if [[ $rc -eq 0 ]]; then
		tap_ok "$name"
	else
		tap_fail "$name" "exit status $rc: $*"
	fi
}

# tap_check NAME CMD...: one result from CMD's exit status, CMD run in
# this shell (unlike tap_run's, its variables stay set); its output is
# shown as diagnostics.
tap_check() {
	local name=$1 log rc=0
	shift
	log=$(mktemp) || { tap_fail "$name" "mktemp failed"; return; }
	"$@" >"$log" 2>&1 || rc=$?
	sed '/^#/!s/^/# /' "$log"
	rm -f "$log"
	if [[ $rc -eq 0 ]]; then
		tap_ok "$name"
	else
		tap_fail "$name" "exit status $rc: $*"
	fi
}

# tap_skip_all REASON: a plan of no test, skipped; exits with kselftest's
# skip status (4).
tap_skip_all() {
	tap_begin
	echo "1..0 # SKIP $1"
	exit 4
}

# tap_checks [PREFIX]: the kselftest TAP of a test program (or of several
# processes sharing its stdout) on stdin, as results of this script,
# numbered on: "ok N NAME", "not ok N NAME" and kselftest's skip
# "ok N # SKIP NAME: WHY" become results named PREFIX-NAME (NAME without
# a prefix); "#" lines stay diagnostics, anything else becomes one.  Sets
# TAP_CHECKS to the number of results read, so that a program that ran no
# check can be failed.  Read from a redirection, not a pipe: the counters
# must survive in this shell.
tap_checks() {
	local prefix=${1:+$1-} line
	local re='^(ok|not ok) [0-9]+ (.*)$'
	TAP_CHECKS=0
	while IFS= read -r line; do
		if [[ ! $line =~ $re ]]; then
			case $line in
			"#"*) echo "$line" ;;
			*) echo "# $line" ;;
			esac
			continue
		fi
		TAP_CHECKS=$((TAP_CHECKS + 1))
		line=${BASH_REMATCH[2]}
		if [[ ${BASH_REMATCH[1]} == "not ok" ]]; then
			tap_fail "$prefix$line"	# its "# NAME: WHY" came before
		elif [[ $line == "# SKIP "* ]]; then
			line=${line#\# SKIP }
			tap_skip "$prefix${line%%: *}" "${line#*: }"
		else
			tap_ok "$prefix$line"
		fi
	done
}

# tap_end: trailing plan; status 1 if any test failed.
tap_end() {
	echo "1..$TAP_N"
	[[ $TAP_FAILED -eq 0 ]]
}

# ---- multi-node helpers -----------------------------------------------------

# rv_pair_role: "lo" on the node of a 2-node run whose address is the
# lower (the client of the pair's connections), "hi" on the other.
rv_pair_role() {
	local mine peer
	mine=$(rv_node_ip "$RV_NODE")
	peer=$(rv_node_ip $((1 - RV_NODE)))
	if [[ $(printf '%s\n%s\n' "$mine" "$peer" | sort -V | head -n1) == "$mine" ]]; then
		echo lo
	else
		echo hi
	fi
}

# rv_conn_test's status files (one "peer ..." line per connection, then
# "result ok|fail"), shared by the connection groups.

# rv_status_wait FILE...: until every status file has its result; bounded.
rv_status_wait() {
	local f
	for f in "$@"; do
		rv_wait_until 150 grep -qs '^result' "$f"
	done
}

# rv_status_ok FILE...: print them; every one says "result ok".
rv_status_ok() {
	local f rc=0
	for f in "$@"; do
		sed 's/^/  /' "$f" 2>/dev/null || echo "  $f missing"
		grep -qx 'result ok' "$f" 2>/dev/null || rc=1
	done
	return $rc
}

# rv_status_refresh FILE...: have each holder (the pid in its file)
# query its connections again and rewrite the file; wait for them.
rv_status_refresh() {
	local f pid
	for f in "$@"; do
		pid=$(awk '/^peer/ { print $4; exit }' "$f" 2>/dev/null)
		[[ -n $pid ]] || return 1
		rm -f "$f"
		kill -USR1 "$pid"
	done
	rv_status_wait "$@"
}

# rv_stop_all PID...: SIGTERM each, then reap them.
rv_stop_all() {
	local p
	for p in "$@"; do
		kill "$p" 2>/dev/null
	done
	for p in "$@"; do
		wait "$p" 2>/dev/null
	done
}

# Background rv_hold processes (caps.sh, launcher.sh), by NAME; each
# one's output is $RV_OUT/hold-NAME.out.
declare -A rv_hold_pid rv_hold_fd

rv_hold_ready() {
	grep -q '^ready' "$RV_OUT/hold-$1.out"
}

rv_gone() {
	! kill -0 "$1" 2>/dev/null
}

# rv_link_delete SECONDS: "rdma link delete $RV_IBDEV" in the background
# (a removal waiting on calls in the kernel cannot be killed: the test
# only watches it), at most SECONDS (scaled).  Sets rv_rm_pid, rv_rm_rc
# (its status, or "timeout") and rv_rm_ms (how long it was watched).
rv_link_delete() {
	local t0
	t0=$(date +%s%N)
	rdma link delete "$RV_IBDEV" &
	rv_rm_pid=$!
	if rv_wait_until "$1" rv_gone "$rv_rm_pid"; then
		wait "$rv_rm_pid"
		rv_rm_rc=$?
	else
		rv_rm_rc=timeout
	fi
	rv_rm_ms=$((($(date +%s%N) - t0) / 1000000))
}

# rv_hold_start NAME CMD...: CMD (an rv_hold) in the background, holding
# what it made until rv_hold_stop NAME closes its stdin.  Fails unless
# it says "ready" within 120 s.
rv_hold_start() {
	local name=$1 fifo=/dev/shm/rv-hold-$1.in fd
	shift
	rm -f "$fifo" "$RV_OUT/hold-$name.out"
	mkfifo "$fifo"
	"$@" <"$fifo" >"$RV_OUT/hold-$name.out" 2>&1 &
	rv_hold_pid[$name]=$!
	exec {fd}>"$fifo"
	rv_hold_fd[$name]=$fd
	rm -f "$fifo"
	rv_wait_until 120 rv_hold_ready "$name" && return 0
	tap_diag "$name: $(tr '\n' ' ' <"$RV_OUT/hold-$name.out")"
	rv_hold_stop "$name"
	return 1
}

# rv_hold_stop NAME [SIGNAL]: EOF on its stdin (or SIGNAL first), then
# wait; returns the holder's exit status.
rv_hold_stop() {
	local pid=${rv_hold_pid[$1]} fd=${rv_hold_fd[$1]}
	[[ -n ${2:-} ]] && kill "-$2" "$pid"
	exec {fd}>&-
	if ! rv_wait_until 60 rv_gone "$pid"; then
		kill -KILL "$pid"
		tap_diag "$1: rv_hold did not exit"
	fi
	wait "$pid" 2>/dev/null
}

# rv_held NAME WHAT: the "WHAT ..." line of a holder's output.
rv_held() {
	grep "^$2 " "$RV_OUT/hold-$1.out"
}

# rv_insmod [PARAM=VALUE...]: rv.ko with the run's parameters (rv-vm
# --rv-args), then these.
# shellcheck disable=SC2120 # arguments are optional
rv_insmod() {
	# shellcheck disable=SC2086 # RV_KO_ARGS: blank-separated parameters
	insmod "$RV_KO" ${RV_KO_ARGS:-} "$@"
}

# rv_reload [PARAM=VALUE...]: unload rv and load it again with these
# parameters, e.g. a longer ack_timeout (no rv file may be open: callers
# with peers reload at a barrier).
rv_reload() {
	rmmod rv && rv_insmod "$@"
}

# rv_ack_timeout_at_least N: "ack_timeout=M" for rv_insmod, M the larger
# of N and the run's own ack_timeout in $RV_KO_ARGS (the debug kernel's
# 18): a test that needs a longer timeout must not shorten the run's.
rv_ack_timeout_at_least() {
	local want=$1 a
	for a in ${RV_KO_ARGS:-}; do
		if [[ $a =~ ^ack_timeout=([0-9]+)$ ]] &&
			((BASH_REMATCH[1] > want)); then
			want=${BASH_REMATCH[1]}
		fi
	done
	echo "ack_timeout=$want"
}

# rv_ack_timeout_busy: "ack_timeout=M" for 3 guests sharing the host's 2
# cores.  Under TCG such a guest stalls for up to a second or so, longer
# than 7 tries of rv's default (15, about 134 ms each) ride out, and its
# QPs fail with RETRY_EXC_ERR without any fault injected: 17 (about
# 537 ms) rides the stalls out.  A debug-kernel guest ($RV_TIME_SCALE > 1)
# runs several times slower still: 20 (about 4.3 s) there.
rv_ack_timeout_busy() {
	if ((${RV_TIME_SCALE:-1} > 1)); then
		rv_ack_timeout_at_least 20
	else
		rv_ack_timeout_at_least 17
	fi
}

# rv_secs N: N seconds of a test's time budget, scaled by $RV_TIME_SCALE
# (rv-vm --time-scale; the debug kernel runs several times slower).
rv_secs() {
	echo $(($1 * ${RV_TIME_SCALE:-1}))
}

# rv_wait_until SECONDS CMD...: CMD every 0.2 s until it succeeds, for at
# most SECONDS (scaled) of wall-clock time: on a slow guest a round of the
# loop costs far more than its sleep, so rounds are not counted.
rv_wait_until() {
	local end=$((SECONDS + $(rv_secs "$1")))
	shift
	while ((SECONDS < end)); do
		"$@" && return 0
		sleep 0.2
	done
	return 1
}

# rv_barrier DIR NAME [SECONDS]: wait (default at most 120 s, scaled by
# $RV_TIME_SCALE) until every node reached NAME, each marking it with a
# file in DIR, a directory all nodes share (the run's output directory).
rv_barrier() {
	local dir=$1 name=$2 limit=${3:-120}
	touch "$dir/$name.node$RV_NODE"
	rv_wait_until "$limit" rv_barrier_reached "$dir" "$name" && return 0
	tap_diag "barrier $name: timed out after $(rv_secs "$limit")s"
	return 1
}

rv_barrier_reached() {
	[[ $(find "$1" -maxdepth 1 -name "$2.node*" | wc -l) -ge $RV_NODES ]]
}

# rv_node_ip I: IPv4 address of node I.
rv_node_ip() {
	local -a ips
	read -r -a ips <<<"$RV_NODE_IPS"
	echo "${ips[$1]}"
}

# rv_retry TRIES DELAY CMD...: run CMD until it succeeds, at most TRIES
# times, DELAY seconds apart.  For clients racing their server's startup on
# another node (perftest, ibv_*_pingpong and rping do not wait for one).
rv_retry() {
	local tries=$1 delay=$2 i
	shift 2
	for ((i = 1; ; i++)); do
		"$@" && return 0
		[[ $i -ge $tries ]] && return 1
		sleep "$delay"
	done
}

# rv_gid_index [DEV]: index of the RoCE v2 GID of DEV's port 1 that carries
# the node's IPv4 address (what -g of ibv_*_pingpong wants).
rv_gid_index() {
	local dev=${1:-$RV_IBDEV} ip hex g
	ip=$(rv_node_ip "$RV_NODE")
	# shellcheck disable=SC2086	# split the dotted quad into 4 args
	hex=$(printf '%02x%02x:%02x%02x' ${ip//./ })
	for g in /sys/class/infiniband/"$dev"/ports/1/gids/*; do
		if [[ $(<"$g") == "0000:0000:0000:0000:0000:ffff:$hex" ]]; then
			echo "${g##*/}"
			return 0
		fi
	done
	return 1
}
