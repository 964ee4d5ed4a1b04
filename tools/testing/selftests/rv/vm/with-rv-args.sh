#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# with-rv-args.sh PARAM=VALUE... -- CMD...: run a test group's command
# with rv reloaded with these parameters added to the run's own
# ($RV_KO_ARGS), which the command's own reloads (tap.sh's rv_reload) keep.
# E.g. frwr_max_pages=16 gives remote-access registrations a key per 64
# KiB, so that rxe's tests see registrations of many keys.
# A failed reload is a TAP failure and the command does not run.

set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"

args=()
while (($#)) && [[ $1 != -- ]]; do
	args+=("$1")
	shift
done
shift
(($#)) || { echo "usage: with-rv-args.sh PARAM=VALUE... -- CMD..." >&2; exit 2; }

export RV_KO_ARGS="${RV_KO_ARGS:-} ${args[*]}"
if ! rv_reload; then
	tap_fail "reload-with-args" "rmmod/insmod rv $RV_KO_ARGS failed"
	exit 1
fi
exec "$@"
