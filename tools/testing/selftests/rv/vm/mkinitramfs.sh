#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# mkinitramfs.sh - build the tiny initramfs the rv test VMs boot with.
#
# Usage: mkinitramfs.sh [-m MODDIR] KVER OUT
#
#   KVER    kernel release the modules belong to (uname -r of the guest)
#   OUT     output file (gzip'ed newc cpio)
#   MODDIR  modules directory of that kernel (default /lib/modules/KVER);
#           lets a debug kernel built elsewhere be used.
#
# The initramfs holds only a static busybox, the modules needed to reach
# the host's root file system over virtio-9p (with their modules.dep
# closure, in load order) and init.sh as /init.  Nothing else: the guest's
# real user space is the host's root, mounted read-only by /init.
#
# Depends on: busybox-static, cpio, gzip (xz-utils/zstd only for
# compressed modules).  The closure is read from modules.dep directly.

set -euo pipefail

usage() {
	sed -n '4,17s/^# \{0,1\}//p' "$0"
	exit "${1:-2}"
}

moddir=
while getopts "m:h" opt; do
	case $opt in
	m) moddir=$OPTARG ;;
	h) usage 0 ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[[ $# -eq 2 ]] || usage
kver=$1
out=$2
moddir=${moddir:-/lib/modules/$kver}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
busybox=${BUSYBOX:-/bin/busybox}

[[ -r $moddir/modules.dep ]] || {
	echo "mkinitramfs: $moddir/modules.dep not found" >&2
	exit 1
}
# A dynamically linked busybox would need the host's libc inside the
# initramfs; insist on the static one from busybox-static.
# (ldd fails on a static binary.)
if [[ ! -x $busybox ]] || ldd "$busybox" >/dev/null 2>&1; then
	echo "mkinitramfs: $busybox missing or not static (apt-get install busybox-static)" >&2
	exit 1
fi

# Modules /init loads, by name.  virtio_pci reaches the PCI transport of the
# 9p and net devices; 9p needs netfs/fscache (resolved through modules.dep).
# virtio_net is loaded later from the host root by guest-init.sh.
wanted=(virtio_pci 9pnet_virtio 9p)

# Emit the modules.dep closure of "$1", dependencies first, no duplicates.
# modules.dep lines are "path: dep1 dep2 ..." with deps already listed in
# the order modprobe loads them reversed (dep1 depends on dep2...), so a
# module's own deps are loaded last-to-first before it.
declare -A seen=()
closure=()
add_closure() {
	local name=$1 line path deps i
	line=$(grep -E "(^|/)${name//_/[_-]}\.ko(\.[gx]z|\.zst)?:" "$moddir/modules.dep" || true)
	if [[ -z $line ]]; then
		# Built into this kernel (e.g. a debug kernel with =y): nothing to load.
		if grep -qE "/${name//_/[_-]}\.ko" "$moddir/modules.builtin" 2>/dev/null; then
			return 0
		fi
		echo "mkinitramfs: module $name neither in modules.dep nor builtin" >&2
		exit 1
	fi
	path=${line%%:*}
	read -r -a deps <<<"${line#*:}"
	for ((i = ${#deps[@]} - 1; i >= 0; i--)); do
		add_dep_path "${deps[i]}"
	done
	add_dep_path "$path"
}
add_dep_path() {
	[[ -n ${seen[$1]:-} ]] && return 0
	seen[$1]=1
	closure+=("$1")
}
for m in "${wanted[@]}"; do
	add_closure "$m"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/rv-initramfs.XXXXXX")
trap 'rm -rf "$work"' EXIT

mkdir -p "$work"/{bin,dev,proc,sys,newroot,lib/modules}
cp "$busybox" "$work/bin/busybox"
# Only the applets init.sh uses; busybox resolves them through argv[0].
for a in sh mount umount mkdir insmod switch_root sleep cat echo poweroff \
	 grep sed ls dmesg; do
	ln -s busybox "$work/bin/$a"
done
: >"$work/lib/modules/load.order"
for p in "${closure[@]}"; do
	f=$moddir/$p
	base=$(basename "$p")
	case $base in
	*.ko) cp "$f" "$work/lib/modules/$base" ;;
	*.ko.xz) xz -dc "$f" >"$work/lib/modules/${base%.xz}"; base=${base%.xz} ;;
	*.ko.gz) gzip -dc "$f" >"$work/lib/modules/${base%.gz}"; base=${base%.gz} ;;
	*.ko.zst) zstd -qdc "$f" >"$work/lib/modules/${base%.zst}"; base=${base%.zst} ;;
	esac
	echo "$base" >>"$work/lib/modules/load.order"
done
install -m 0755 "$here/init.sh" "$work/init"

# No dev/console node here (building needs no root): /init mounts
# devtmpfs first and then reopens its stdio on /dev/console.
mkdir -p "$(dirname "$out")"
(cd "$work" && find . -mindepth 1 -printf '%P\n' | LC_ALL=C sort |
	cpio --quiet -o -H newc -R 0:0) | gzip -1 >"$out.tmp"
mv "$out.tmp" "$out"
echo "mkinitramfs: $out (${#closure[@]} modules: ${closure[*]##*/})"
