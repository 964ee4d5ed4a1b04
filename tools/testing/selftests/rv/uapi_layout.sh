#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Host-side check that <rdma/rv_user_ioctls.h> has the same layout on
# x86-64, i386 and x32 (TAP output).  For each ABI, uapi_layout.c is
# compiled to assembly (the table as "@@LAYOUT" strings: works even when
# this host cannot run the ABI's binaries) and, where the host can, built
# and run; the run's table must equal the compiled one and every ABI's
# table must equal x86-64's.
#
# usage: uapi_layout.sh [UAPI_INCLUDE_DIR]   (env: CC, OUTPUT)

set -u
here=$(cd "$(dirname "$0")" && pwd)
uapi=${1:-$here/../../../../include/uapi}
CC=${CC:-gcc}
out=$(mktemp -d "${OUTPUT:-${TMPDIR:-/tmp}}/rv_layout.XXXXXX") || exit 1
trap 'rm -rf "$out"' EXIT

abis="m64 m32 mx32"
# shellcheck source=vm/tap.sh
. "$here/vm/tap.sh"

diag() {
	"$@" 2>&1 | sed 's/^/# /'
	return "${PIPESTATUS[0]}"
}

cflags="-std=gnu11 -O0 -Wall -Wextra -Werror -I$uapi"

tap_begin
for abi in $abis; do
	if diag $CC $cflags -$abi -DLAYOUT_ASM -S -o "$out/$abi.s" \
		"$here/uapi_layout.c"; then
		grep -o '@@LAYOUT[^"]*' "$out/$abi.s" > "$out/$abi.asm.txt"
		if [ -s "$out/$abi.asm.txt" ]; then
			tap_ok "layout compile -$abi"
		else
			tap_fail "layout compile -$abi (no table in assembly)"
		fi
	else
		tap_fail "layout compile -$abi"
		: > "$out/$abi.asm.txt"
	fi

	# Running needs the ABI's libc and kernel support (x32 rarely has it).
	if ! $CC $cflags -$abi -o "$out/$abi.bin" "$here/uapi_layout.c" \
		2> "$out/$abi.ld.err"; then
		tap_skip "layout run -$abi" "cannot link for -$abi: $(head -c 120 "$out/$abi.ld.err" | tr '\n' ' ')"
	elif ! "$out/$abi.bin" > "$out/$abi.run.txt" 2>/dev/null; then
		tap_skip "layout run -$abi" "this host cannot run -$abi binaries; compile-time table used"
	elif cmp -s "$out/$abi.run.txt" "$out/$abi.asm.txt"; then
		tap_ok "layout run -$abi matches compile-time table"
	else
		tap_fail "layout run -$abi matches compile-time table"
		diag diff "$out/$abi.asm.txt" "$out/$abi.run.txt"
	fi
done

# One result per struct and ABI pair, so a failure names the struct.
structs=$(grep -o '^@@LAYOUT [a-z_0-9]* size' "$out/m64.asm.txt" | awk '{print $2}')
for abi in m32 mx32; do
	for s in $structs; do
		grep -E "^@@LAYOUT $s[ .]" "$out/m64.asm.txt" > "$out/ref.$s"
		grep -E "^@@LAYOUT $s[ .]" "$out/$abi.asm.txt" > "$out/$abi.$s"
		if [ -s "$out/ref.$s" ] && cmp -s "$out/ref.$s" "$out/$abi.$s"; then
			tap_ok "layout struct $s -$abi == -m64 ($(wc -l < "$out/ref.$s") entries)"
		else
			tap_fail "layout struct $s -$abi == -m64"
			diag diff "$out/ref.$s" "$out/$abi.$s"
		fi
	done
done
[ -n "$structs" ] || tap_fail "layout: no structs found in the -m64 table"

tap_end
