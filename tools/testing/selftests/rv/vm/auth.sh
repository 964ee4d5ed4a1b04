#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# auth.sh - two nodes: the cluster key (rv(7), "Security model").  "lo" is
# the node whose address is lower (the client of the pair), "hi" the other.
#
#   key-*:      root reads the key's fingerprint, the same on both nodes
#               (rv-vm gives the run one key), never the key; uid 65534
#               cannot read the parameter at all; a malformed key is
#               refused (EINVAL) and the fingerprint stays.
#   same-key:   a job connects.
#   other-key:  hi reloads rv with another key: lo's connection ends in
#               AUTH within its timeout, and hi counts the refused
#               requests (rejected_auth).
#   no-key:     hi reloads rv without a key: CONN_CREATE there is ENOKEY;
#               lo's connection ends in AUTH.
#   insecure:   both reload rv without a key but with
#               insecure_no_cluster_key=1: the opt-out connects,
#               unauthenticated.
# Then rv is reloaded with the run's parameters on both nodes.

set -uo pipefail
# shellcheck source=tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"

: "${RV_NODE:?run me with rv-vm}" "${RV_NODES:?}" "${RV_IBDEV:?}" "${RV_OUT:?}"
me=$RV_NODE
CT=$RV_REPO/tools/testing/selftests/rv/rv_conn_test
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
param=/sys/module/rv/parameters/cluster_key
shared=$(dirname "$RV_OUT")/auth-barriers
mkdir -p "$shared"

barrier() {
	rv_barrier "$shared" "$@"
}

tap_begin

if [[ ! -x $CT || ! -d /sys/module/rv || -z ${RV_CLUSTER_KEY:-} ]]; then
	tap_skip auth "rv_conn_test not built, rv not loaded or no cluster key"
	tap_end
	exit 0
fi

mine=$(rv_node_ip "$me")
peer=$(rv_node_ip $((1 - me)))
role=$(rv_pair_role)
tap_diag "node$me $mine is $role; peer $peer"

stat_of() {
	awk -v k="$1" '$1 == k { print $2 }' /sys/kernel/debug/rv/cm_stats
}

# The run's parameters without the key: what the reloads below start from.
no_key_args=()
for a in ${RV_KO_ARGS:-}; do
	[[ $a == cluster_key=* ]] || no_key_args+=("$a")
done

# reload PARAM...: rv with the run's other parameters and these.
reload() {
	rmmod rv && insmod "$RV_KO" "${no_key_args[@]}" "$@"
}

# ---- the key is never shown ------------------------------------------------
fp=$(cat "$param")
echo "$fp" >"$shared/fp.$role"
tap_run key-fingerprint-shown test "${#fp}" -eq 16
tap_run key-not-shown test "$fp" != "$RV_CLUSTER_KEY"
tap_run key-unreadable-by-users sh -c "! ${NOBODY[*]} cat $param 2>/dev/null"
tap_run key-malformed-refused sh -c "! echo xyz >$param 2>/dev/null"
tap_run key-short-refused sh -c "! echo 00112233 >$param 2>/dev/null"
tap_run key-unchanged-after-refusal test "$(cat "$param")" = "$fp"
barrier fingerprints || true
tap_run key-same-fingerprint-both-nodes \
	test "$(cat "$shared/fp.lo" 2>/dev/null)" = "$(cat "$shared/fp.hi" 2>/dev/null)"

# ---- same key: connected ---------------------------------------------------
barrier same-start || true
tap_run same-key-connects "$CT" -k same -t 20000 -1 "$peer"
barrier same-done 60 || true

# ---- another key on hi ----------------------------------------------------
other=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
if [[ $role == hi ]]; then
	tap_run other-key-reload reload "cluster_key=$other"
	a0=$(stat_of rejected_auth)
fi
barrier other-ready 60 || true
if [[ $role == lo ]]; then
	tap_run other-key-refused "$CT" -k other -t 4000 -e auth -1 "$peer"
else
	"$CT" -k other -t 12000 -e timeout -1 "$peer" >"$RV_OUT/other.out" 2>&1
	sed 's/^/# /' "$RV_OUT/other.out"
	a1=$(stat_of rejected_auth)
	tap_diag "hi: rejected_auth +$((a1 - a0))"
	tap_run other-key-counted test $((a1 - a0)) -ge 1
fi
barrier other-done 60 || true

# ---- no key on hi ------------------------------------------------------
if [[ $role == hi ]]; then
	tap_run no-key-reload reload
	tap_run no-key-none-shown test "$(cat "$param")" = none
	out=$("$CT" -k nokey -t 1000 -1 "$peer" 2>&1)
	sed 's/^/# /' <<<"$out"
	tap_run no-key-create-enokey grep -q ' err -126 ' <<<"$out"
fi
barrier nokey-ready 60 || true
if [[ $role == lo ]]; then
	tap_run no-key-refused "$CT" -k nokey -t 4000 -e auth -1 "$peer"
fi
barrier nokey-done 60 || true

# ---- both without a key, insecure opt-out --------------------------------
tap_run insecure-reload reload insecure_no_cluster_key=1
barrier insecure-ready 60 || true
tap_run insecure-connects "$CT" -k insecure -t 20000 -1 "$peer"
barrier insecure-done 60 || true

tap_run reload-run-params rv_reload
tap_end
