#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# run-demo.sh [rv_rendezvous size options] - the main job in one command:
# build what is needed, boot two QEMU VMs with Soft-RoCE and rv loaded, run
# the rendezvous demo (rv_rendezvous.c) between them, and print what each
# node reported: bytes and bandwidth per message size, verification, rv's
# counters.  Default: 64 MiB in each of 1..16 MiB messages.  Exit status 0
# when both nodes passed every check of vm/demo.sh.
#
#   examples/run-demo.sh                    # from the repo root
#   examples/run-demo.sh -t 16M -m 4M -M 8M # smaller run

set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

make -s module librv
make -s -C examples
out=build/vm/demo
rm -rf "$out"
rc=0
nice -n 10 tools/testing/selftests/rv/vm/rv-vm run --nodes 2 --timeout 900 \
	--out "$out" -- tools/testing/selftests/rv/vm/demo.sh "$@" >/dev/null || rc=$?
for i in 0 1; do
	echo "== node$i ($([[ $i -eq 0 ]] && echo receiver || echo sender)) =="
	# The demo's own lines, without the TAP framing.
	sed -n 's/^# //p' "$out/node$i.out"
	grep -E '^not ok' "$out/node$i.out" || true
done
if [[ $rc -eq 0 ]]; then
	echo "demo: PASS (outputs in $out)"
else
	echo "demo: FAIL, rv-vm exit status $rc (outputs in $out)"
fi
exit "$rc"
