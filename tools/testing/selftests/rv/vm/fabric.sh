#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# fabric.sh - the libfabric provider "rv" (lib/librv-fi) between two VMs,
# as TAP.  Node 0 is the server, node 1 the client (it connects to node
# 0's eth0 address):
#
#   fi_info -p rv           the provider loads and lists an FI_EP_RDM info
#   rv_fi_test              the provider's own tests (tagged matching,
#                           directed receive, FI_SOURCE, CQ data,
#                           unexpected messages, eager and rendezvous
#                           sizes 0 B..16 MiB verified, truncation,
#                           cancel, many messages in flight, rv counters,
#                           a hostile raw-TCP peer refused, two endpoints
#                           of one node); node 0 then checks that its
#                           provider logged the refusals (FI_WARN)
#   rv_fi_test -R           a 64-entry event ring bounds the rendezvous
#   rv_fi_test -O           the same ring overflowing (bound switched off):
#                           every completion still comes, once
#   rv_fi_test -B           a burst that rv's send queues cannot take (rv
#                           reloaded with conn_wqe_budget=16): the provider
#                           backs off from refused writes
#   fi_pingpong -p rv -e rdm  msg and tagged, the default sizes, then
#                           1 MiB and 4 MiB (rendezvous) with data checks
#
# Every run is bounded by timeout(1); a client racing its server retries
# with rv_retry.

set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"

: "${RV_NODE:?run me with rv-vm}" "${RV_NODES:?}" "${RV_IBDEV:?}" "${RV_OUT:?}"
FT=$RV_REPO/lib/librv-fi/tests/rv_fi_test
shared=$(dirname "$RV_OUT")/fabric-rdv
mkdir -p "$shared"
export FI_PROVIDER_PATH=$RV_REPO/lib/librv-fi
export FI_RV_DEVICE=$RV_IBDEV
server_ip=$(rv_node_ip 0)

barrier() {
	rv_barrier "$shared" "$@"
}

tap_begin
[[ $RV_NODES -eq 2 ]] || { tap_fail fabric "needs 2 nodes"; tap_end; exit; }
if [[ ! -f $FI_PROVIDER_PATH/librv-fi.so ]]; then
	tap_fail fabric "lib/librv-fi/librv-fi.so not built (make -C lib/librv-fi)"
	tap_end
	exit
fi

# ---- fi_info ----------------------------------------------------------------
out=$(timeout 60 fi_info -p rv 2>&1)
rc=$?
# shellcheck disable=SC2001
sed 's/^/# /' <<<"$out" | head -30
if [[ $rc -eq 0 ]] && grep -Eq '^provider: rv$' <<<"$out" &&
	grep -q 'FI_EP_RDM' <<<"$out"; then
	tap_ok fi-info
else
	tap_fail fi-info "exit $rc, no rv FI_EP_RDM entry"
fi

# ---- rv_fi_test ---------------------------------------------------------------
# fitest EXIT_CHECK [ENV=VALUE...] -- ARGS...: one rv_fi_test run between
# the two nodes (node 0 the server); its TAP results become ours, named
# fitest-<name>, its diagnostics pass; sets $out, $rc and $n (results).
fitest() {
	local check=$1 env=() line
	shift
	while [[ $1 != -- ]]; do
		env+=("$1")
		shift
	done
	shift
	barrier "start-$check" || true
	if [[ $RV_NODE -eq 0 ]]; then
		args=(-s "$@")
	else
		args=(-c "$server_ip" "$@")
	fi
	rc=0
	out=$(env FI_LOG_LEVEL=warn "${env[@]}" timeout 900 "$FT" "${args[@]}" 2>&1) || rc=$?
	n=0
	while IFS= read -r line; do
		case $line in
		"ok "*)
			tap_ok "fitest-$(cut -d' ' -f3- <<<"$line")"
			n=$((n + 1))
			;;
		"not ok "*)
			tap_fail "fitest-$(cut -d' ' -f4- <<<"$line")"
			n=$((n + 1))
			;;
		"#"* | "Bail out!"*)
			echo "# ${line###}"
			;;
		esac
	done <<<"$out"
}

if [[ -x $FT ]]; then
	fitest fitest --
	if [[ $rc -eq 0 && $n -ge 15 ]]; then
		tap_ok "fitest-exit"
	else
		tap_fail "fitest-exit" "exit status $rc, $n results"
	fi
	# Node 1 played the hostile peer against node 0's endpoint.
	if [[ $RV_NODE -eq 0 ]]; then
		grep -E '(HELLO|frame) from .* refused' <<<"$out" |
			head -8 | sed 's/^/# /'
		if grep -q 'HELLO from .* refused (wrong nonce;' <<<"$out" &&
			grep -q 'frame from .* refused (EAGER above' <<<"$out"; then
			tap_ok "fitest-refusals-logged"
		else
			tap_fail "fitest-refusals-logged" "no FI_WARN for the refused HELLO and frame"
		fi
	fi
else
	tap_fail fitest "$FT not built (make -C lib/librv-fi)"
fi

# The rendezvous bounded by the rv event ring: a 64-entry ring, 160 large
# messages each way at once (rv_fi_test -R, its own port).
if [[ -x $FT ]]; then
	fitest fitest-ring FI_RV_RING_ENTRIES=64 -- -p 18572 -R
	if [[ $rc -eq 0 && $n -eq 2 ]]; then
		tap_ok "fitest-ring-exit"
	else
		tap_fail "fitest-ring-exit" "exit status $rc, $n results"
	fi
fi

# The fallback when that ring overflows anyway: the same traffic with the
# provider's bound switched off (tests only), so the 64-entry ring
# overflows for real (rv_fi_test -O); the provider must say so (FI_WARN).
if [[ -x $FT ]]; then
	fitest fitest-ovf FI_RV_RING_ENTRIES=64 FI_RV_TEST_RING_UNBOUNDED=1 \
		-- -p 18578 -O
	if [[ $rc -eq 0 && $n -eq 5 ]]; then
		tap_ok "fitest-ovf-exit"
	else
		tap_fail "fitest-ovf-exit" "exit status $rc, $n results"
	fi
	grep 'rv event ring overflowed' <<<"$out" | head -2 | sed 's/^/# /'
	if grep -q 'rv event ring overflowed' <<<"$out"; then
		tap_ok "fitest-ovf-warned"
	else
		tap_fail "fitest-ovf-warned" "no FI_WARN for the ring overflow"
	fi
fi

# Writes rv refuses (EAGAIN) because its send queues are full: rv reloaded
# with the smallest conn_wqe_budget, a burst of 1 MiB rendezvous each way
# (rv_fi_test -B); the provider must back off, not retry on every call
# (a long FI_RV_SQ_RETRY_US, so that the bound on refusals is tight).
if [[ -x $FT ]]; then
	barrier before-small-budget || true
	if tap_run reload-small-budget rv_reload conn_wqe_budget=16; then
		tap_diag "conn_wqe_budget=$(cat /sys/module/rv/parameters/conn_wqe_budget)"
		fitest fitest-sqfull FI_RV_SQ_RETRY_US=100000 -- -p 18579 -B
		if [[ $rc -eq 0 && $n -eq 2 ]]; then
			tap_ok "fitest-sqfull-exit"
		else
			tap_fail "fitest-sqfull-exit" "exit status $rc, $n results"
		fi
	fi
	barrier before-budget-restore || true
	grep -qw '^rv' /proc/modules && rmmod rv
	tap_run reload-default-budget rv_insmod
fi

# ---- fi_pingpong ----------------------------------------------------------------
# pingpong NAME ARGS...: one server/client run; the server on node 0.
pingpong() {
	local name=$1 out rc=0
	shift
	barrier "pp-$name" || true
	if [[ $RV_NODE -eq 0 ]]; then
		out=$(timeout 300 fi_pingpong -p rv -e rdm "$@" 2>&1) || rc=$?
	else
		# The server may still be starting: retry a refused connect.
		sleep 1
		out=$(rv_retry 10 3 timeout 300 fi_pingpong -p rv -e rdm "$@" \
			"$server_ip" 2>&1) || rc=$?
	fi
	# shellcheck disable=SC2001
	sed 's/^/# /' <<<"$out" | tail -25
	if [[ $rc -eq 0 ]] && grep -Eq '^[[:space:]]*[0-9]+[kmg]?[[:space:]]+[0-9]+' <<<"$out"; then
		tap_ok "pingpong-$name"
	else
		tap_fail "pingpong-$name" "exit status $rc"
	fi
}

pingpong msg -I 10
pingpong tagged -m tagged -I 10
pingpong rndv-1m -S 1048576 -I 5 -c
pingpong rndv-4m-tagged -m tagged -S 4194304 -I 3 -c

tap_end
