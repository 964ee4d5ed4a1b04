#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# memcg.sh - one node: what a process makes rv allocate is charged to its
# memory cgroup.  The event ring is the large allocation whose size the
# caller picks (ATTACH's ring_entries, up to 2^20 entries: 32 MiB of
# vmalloc): in a cgroup with memory.max 8M such an ATTACH must fail with
# ENOMEM (and kill nobody), a small ring must still attach there, and in
# a cgroup without that limit the ring must show in memory.current while
# it exists and leave it when the file is closed.  SKIP without cgroup2's
# memory controller (the debug kernel has none).

set -uo pipefail
# shellcheck source=tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"

: "${RV_NODE:?run me with rv-vm}" "${RV_IBDEV:?}" "${RV_OUT:?}"
T=$RV_REPO/tools/testing/selftests/rv
HOLD=$T/rv_hold
ROOT=/sys/fs/cgroup
CG=$ROOT/rv-memcg
BIG=1048576			# RV_MAX_RING_ENTRIES: 32 MiB + 128 bytes
SMALL=64			# RV_MIN_RING_ENTRIES: one page
MIB=1048576
FIFO=/dev/shm/rv-memcg-hold.in	# a FIFO: tmpfs, not the 9p output
OUT=$RV_OUT/memcg-hold.out

tap_begin

if ! grep -q "^[^ ]* $ROOT cgroup2 " /proc/mounts; then
	mount -t cgroup2 none "$ROOT" 2>/dev/null
fi
if ! grep -qw memory "$ROOT/cgroup.controllers" 2>/dev/null; then
	tap_skip memcg "no cgroup2 memory controller on $(uname -r)"
	tap_end
	exit 0
fi
tap_run memcg-setup bash -c "echo +memory >$ROOT/cgroup.subtree_control &&
	{ [[ -d $CG ]] || mkdir $CG; } && echo max >$CG/memory.max"

current() {
	cat "$CG/memory.current"
}

oom_kills() {
	sed -n 's/^oom_kill //p' "$CG/memory.events"
}

ready() {
	grep -q '^ready' "$OUT"
}

gone() {
	! kill -0 "$1" 2>/dev/null
}

# in_cgroup CMD...: CMD in $CG (the shell moves itself, then execs).
in_cgroup() {
	bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG" "$@"
}

# hold_start ENTRIES: rv_hold attached with a ring of ENTRIES in $CG,
# holding the file until hold_stop.  Fails unless it says "ready".
hold_start() {
	rm -f "$FIFO" "$OUT"
	mkfifo "$FIFO"
	in_cgroup "$HOLD" -a -r "$1" <"$FIFO" >"$OUT" 2>&1 &
	hold_pid=$!
	exec 9>"$FIFO"
	rv_wait_until 30 ready && return 0
	tap_diag "rv_hold -r $1: $(tr '\n' ' ' <"$OUT")"
	hold_stop
	return 1
}

# hold_stop: EOF on rv_hold's stdin: it closes the file and exits.
hold_stop() {
	exec 9>&-
	if ! rv_wait_until 30 gone "$hold_pid"; then
		kill -KILL "$hold_pid"
		tap_diag "rv_hold did not exit"
	fi
	wait "$hold_pid"
}

# The helper's page cache goes to the cgroup that reads it first: here.
"$HOLD" </dev/null >/dev/null 2>&1

# Without a limit: the ring is in memory.current exactly while it exists.
base=$(current)
if hold_start "$SMALL"; then
	small=$(current)
	hold_stop
	if hold_start "$BIG"; then
		big=$(current)
		hold_stop
		rise=$((big - small))
		tap_diag "memory.current: empty $base, ring of $SMALL entries $small, of $BIG entries $big (+$((rise / 1024)) KiB)"
		# 32 MiB of ring pages; the charge batching of memcg is 256 KiB.
		if ((rise >= 31 * MIB)); then
			tap_ok ring-charged
		else
			tap_fail ring-charged "the 32 MiB ring added $rise bytes"
		fi
		after_close() {
			after=$(current)
			((after <= base + MIB))
		}
		if rv_wait_until 10 after_close; then
			tap_ok ring-uncharged-at-close
		else
			tap_fail ring-uncharged-at-close "memory.current $after after close, $base before"
		fi
	else
		tap_fail ring-charged "no ring of $BIG entries without a limit"
		tap_skip ring-uncharged-at-close "nothing charged"
	fi
else
	tap_fail ring-charged "no ring of $SMALL entries without a limit"
	tap_skip ring-uncharged-at-close "nothing charged"
fi

# With memory.max 8M: a small ring attaches, a 32 MiB one is ENOMEM.
echo 8M >"$CG/memory.max"
if hold_start "$SMALL"; then
	hold_stop
	tap_run small-ring-under-limit test $? -eq 0
else
	tap_fail small-ring-under-limit "no ring of $SMALL entries under 8M"
fi
kills=$(oom_kills)
in_cgroup "$HOLD" -a -r "$BIG" </dev/null >"$OUT" 2>&1
rc=$?
sed 's/^/# /' "$OUT"
if ((rc == 1)) && grep -q 'rv_attach: Cannot allocate memory' "$OUT"; then
	tap_ok ring-over-limit-enomem
else
	tap_fail ring-over-limit-enomem "rv_hold -r $BIG under memory.max 8M: status $rc, expected ENOMEM"
fi
if [[ $(oom_kills) == "$kills" ]]; then
	tap_ok ring-over-limit-no-oom-kill
else
	tap_fail ring-over-limit-no-oom-kill "oom_kill $kills -> $(oom_kills)"
fi
tap_diag "memory.events: $(tr '\n' ' ' <"$CG/memory.events")"

rm -f "$FIFO"
rmdir "$CG"
tap_run rmmod timeout 60 rmmod rv
tap_run reload rv_insmod
tap_end
