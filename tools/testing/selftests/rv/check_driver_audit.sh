#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# check_driver_audit.sh - every RDMA-core symbol rv.ko imports must have a
# row in the "Per symbol" table of Documentation/rv/drivers.rst (TAP).
#
# Why: the audit says, per imported verb, whether its behaviour depends on
# the driver (ib_reg_user_mr() with a NULL udata oopses on irdma).  A new
# import that nobody checked against the eleven drivers is how such a bug
# gets in, so a new import without a row fails here until someone audits it.
# Rows marked "planned" count as listed: the doc may run ahead of the module.
#
# usage: check_driver_audit.sh [RV_KO] [DOC]
#   defaults, relative to the repo root (four levels up from this script):
#   drivers/infiniband/ulp/rv/rv.ko and Documentation/rv/drivers.rst
#
# "RDMA core" is (a) any undefined symbol named ib_*, ibdev_*, ibcm_*,
# iw_*, iwcm_*, rdma_*, roce_* or uverbs_* (with leading underscores
# allowed: __ib_alloc_cq, __rdma_create_kernel_id), never __tracepoint_*,
# __traceiter_* or static-call symbols; plus (b) when the Module.symvers of
# the kernel rv.ko was built for is found, any symbol exported by a module
# under drivers/infiniband/ (ib_core, rdma_cm, ib_uverbs...), whatever its
# name.

set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
ko=${1:-$root/drivers/infiniband/ulp/rv/rv.ko}
doc=${2:-$root/Documentation/rv/drivers.rst}

n=0
failed=0
ok() {
	n=$((n + 1))
	echo "ok $n $1"
}
not_ok() {
	n=$((n + 1))
	failed=1
	echo "not ok $n $1"
}

echo "TAP version 13"

# 1: rv.ko's RDMA-core imports.
imports=""
if [[ ! -r $ko ]]; then
	echo "# $ko: not found (run make module)"
	not_ok rv-ko-imports
else
	undef=$(nm -u "$ko" | awk '$1 == "U" { print $2 }')
	by_name=$(grep -E '^_*(ib|ibdev|ibcm|iw|iwcm|rdma|roce|uverbs)_' <<<"$undef" |
		grep -Ev '^__(tracepoint|traceiter|SCK|SCT)_' || true)
	by_exporter=""
	kver=$(modinfo -F vermagic "$ko" 2>/dev/null | awk '{ print $1 }' || true)
	symvers=""
	for f in ${KDIR:+"$KDIR/Module.symvers"} \
		 ${kver:+"/lib/modules/$kver/build/Module.symvers"} \
		 ${kver:+"/usr/src/linux-headers-$kver/Module.symvers"}; do
		if [[ -r $f ]]; then
			symvers=$f
			break
		fi
	done
	if [[ -n $symvers ]]; then
		# Module.symvers: CRC, symbol, exporting module, export type, ns.
		by_exporter=$(awk -F'\t' '$3 ~ /^drivers\/infiniband\// { print $2 }' \
			"$symvers" | sort -u | comm -12 - <(sort -u <<<"$undef"))
	else
		echo "# no Module.symvers for kernel ${kver:-unknown}: names only"
	fi
	imports=$(printf '%s\n%s\n' "$by_name" "$by_exporter" | sed '/^$/d' | sort -u)
	if [[ -n $imports ]]; then
		echo "# $(wc -l <<<"$imports") RDMA-core imports in ${ko#"$root"/}"
		ok rv-ko-imports
	else
		echo "# $ko: no RDMA-core imports found"
		not_ok rv-ko-imports
	fi
fi

# 2: the doc's symbol rows: the first cell (bare name in double backquotes)
# of each list-table row in the "Per symbol" section, up to the next
# section title.
rows=""
if [[ -r $doc ]]; then
	rows=$(awk '
		/^[=~^-][=~^-][=~^-]+[ \t]*$/ && prev != "" {
			insec = (prev ~ /^Per symbol[ \t]*$/)
		}
		insec && /^[ \t]*\*[ \t]+-[ \t]+``[A-Za-z0-9_]+``[ \t]*$/ {
			s = $0
			sub(/^[^`]*``/, "", s)
			sub(/``.*$/, "", s)
			print s
		}
		{ prev = $0 }' "$doc" | sort -u)
fi
count=$(sed '/^$/d' <<<"$rows" | wc -l)
if ((count >= 10)); then
	echo "# $count symbols in ${doc#"$root"/}"
	ok doc-parses
else
	echo "# ${doc}: $count symbol rows found in \"Per symbol\" (want 10 or more)"
	not_ok doc-parses
fi

# 3: every import has a row.
missing=""
if [[ -n $imports ]]; then
	missing=$(comm -23 <(echo "$imports") <(echo "$rows") | sed '/^$/d')
fi
if [[ -n $imports && -z $missing ]]; then
	ok every-import-audited
else
	while IFS= read -r s; do
		[[ -n $s ]] && echo "# imported but not in the audit: $s"
	done <<<"$missing"
	not_ok every-import-audited
fi

# 4: verbs that depend on the caller being user space never come back.
# ib_reg_user_mr() hands the driver a NULL udata (an oops on irdma, the
# wrong memory on hns); ib_umem/FRWR replace it.
forbidden=$(grep -xE 'ib_reg_user_mr|ib_uverbs_.*' <<<"$imports" || true)
if [[ -n $imports && -z $forbidden ]]; then
	ok no-user-space-verbs
else
	echo "# imports that need a user-space caller: ${forbidden:-no imports read}"
	not_ok no-user-space-verbs
fi

# Rows marked imported that rv.ko no longer imports: a note, not a failure
# (the module may be older or newer than the doc).
if [[ -n $imports && -r $doc ]]; then
	stale=$(awk '
		/^[=~^-][=~^-][=~^-]+[ \t]*$/ && prev != "" {
			insec = (prev ~ /^Per symbol[ \t]*$/)
		}
		insec && /^[ \t]*\*[ \t]+-[ \t]+``[A-Za-z0-9_]+``/ {
			s = $0
			sub(/^[^`]*``/, "", s)
			sub(/``.*$/, "", s)
			sym = s
			want = 1
			prev = $0
			next
		}
		want && /^[ \t]+-[ \t]/ {
			if ($0 ~ /^[ \t]+-[ \t]+imported/)
				print sym
			want = 0
		}
		{ prev = $0 }' "$doc" | sort -u | comm -23 - <(echo "$imports"))
	while IFS= read -r s; do
		[[ -n $s ]] && echo "# marked imported but not imported now: $s"
	done <<<"$stale"
fi

echo "1..$n"
exit "$failed"
