#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# build-debug-kernel.sh - build (once) the rv debug kernel for the test VMs.
#
# Usage: build-debug-kernel.sh [-f] [-q] [-k SERIES] [-s SANITIZER]
#
#   -f   rebuild even when the cache already holds this kernel
#   -q   only print the cache directory (build if needed, log to a file)
#   -k   kernel series: 6.1 (default) or 6.12
#   -s   kasan (default) or kcsan: KCSAN instead of KASAN (the two
#        exclude each other), debug-kernel-kcsan.config on top
#
# Builds Linux SERIES from Debian's linux-source-SERIES tarball with
# "make tinyconfig" + debug-kernel.config (next to this script): the few
# drivers the VMs need built in, plus KASAN, lockdep, kmemleak, fault
# injection and UBSAN.  The debug-kernel-SERIES-*.patch files next to it
# are applied first: fixes for driver bugs of that series that the
# sanitizers would report in every run (each says why; 6.12 needs none).
# The result is cached outside the repo, keyed by the series, the
# fragment, the patches, the source package and the compiler:
#
#   ${RV_DEBUG_KERNEL_CACHE:-/var/cache/rv-debug-kernel}/<key>/
#     bzImage          the kernel (rv-vm --kernel / run_tests.sh -k)
#     linux/           source + object tree: KDIR for out-of-tree rv.ko
#     modroot/lib/modules/<release>/   modules.dep/.builtin (--modules)
#     release          uname -r of the kernel
#     stamp            written last; its presence means "complete"
#
# The last line on stdout is the cache directory.  The build runs under
# nice -n 19 with -j${RV_DEBUG_KERNEL_JOBS:-2}: other engineers run
# CPU-heavy VM tests on the same machine.
#
# Env: RV_DEBUG_KERNEL_CACHE, RV_DEBUG_KERNEL_JOBS, LINUX_SRC_TAR (the
# tarball of the series).

set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
fragment=$here/debug-kernel.config
series=6.1
cache=${RV_DEBUG_KERNEL_CACHE:-/var/cache/rv-debug-kernel}
jobs=${RV_DEBUG_KERNEL_JOBS:-2}
# Bump when the build recipe below changes in a way the key cannot see.
recipe=1

usage() {
	sed -n '4,11s/^# \{0,1\}//p' "$0"
	exit "${1:-2}"
}

die() {
	echo "build-debug-kernel: $*" >&2
	exit 1
}

force=0 quiet=0 sanitizer=kasan
while getopts "fqk:s:h" opt; do
	case $opt in
	f) force=1 ;;
	q) quiet=1 ;;
	k) series=$OPTARG ;;
	s) sanitizer=$OPTARG ;;
	h) usage 0 ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[[ $# -eq 0 ]] || usage

[[ $series =~ ^[0-9]+\.[0-9]+$ ]] || die "bad series -k $series"
[[ $sanitizer == kasan || $sanitizer == kcsan ]] || die "bad -s $sanitizer"
tarball=${LINUX_SRC_TAR:-/usr/src/linux-source-$series.tar.xz}
[[ -r $tarball ]] || die "no $tarball (apt-get install linux-source-$series)"
[[ -r $fragment ]] || die "no $fragment"
[[ $jobs =~ ^[1-9][0-9]*$ ]] || die "bad RV_DEBUG_KERNEL_JOBS=$jobs"

# Cache key: what decides the kernel's bits.  The source package version
# (or, for a tarball from elsewhere, its size and mtime), the fragment, the
# patches and the compiler (out-of-tree modules must be built with the same
# one).
patches=("$here"/debug-kernel-"$series"-*.patch)
# Lines for this series only, applied after the common fragment.
series_fragment=$here/debug-kernel-$series.config
fragments=("$fragment")
[[ -e $series_fragment ]] && fragments+=("$series_fragment")
[[ $sanitizer == kcsan ]] && fragments+=("$here/debug-kernel-kcsan.config")

# The fragments' lines; for KCSAN without the common fragment's KASAN
# ones (the KCSAN fragment disables KASAN).
fragment_text() {
	if [[ $sanitizer == kcsan ]]; then
		cat "${fragments[@]}" | grep -v '^CONFIG_KASAN'
	else
		cat "${fragments[@]}"
	fi
}
[[ -e ${patches[0]} ]] || patches=()
srcver=$(dpkg-query -W -f='${Version}' "linux-source-$series" 2>/dev/null || true)
# 6.1's key predates -k and leaves the series out, so its cache stays valid.
key=$( {
	echo "recipe $recipe"
	[[ $series == 6.1 ]] || echo "series $series"
	echo "source $srcver $(stat -c '%s %Y' "$tarball")"
	gcc --version | head -n1
	fragment_text
	[[ ${#patches[@]} -eq 0 ]] || cat "${patches[@]}"
} | sha1sum | cut -c1-16)
dir=$cache/$key

mkdir -p "$cache"
# One builder per key; a second caller waits and then finds the stamp.
exec 9>"$cache/$key.lock"
flock 9

if [[ $force -eq 0 && -e $dir/stamp ]]; then
	[[ $quiet -eq 1 ]] || echo "build-debug-kernel: cached: $(cat "$dir/stamp")" >&2
	echo "$dir"
	exit 0
fi

# Build in place: kbuild records absolute paths, and out-of-tree modules
# need this very tree, so it cannot be renamed afterwards.  "Complete" is
# the stamp, written last; an interrupted build is redone from scratch.
rm -rf "$dir"
mkdir -p "$dir"
log=$dir/build.log
if [[ $quiet -eq 1 ]]; then
	exec 3>"$log"
else
	exec 3> >(tee "$log" >&2)
fi

# Quiet mode hides the log: show its end when a step fails.
on_exit() {
	local rc=$?
	[[ $rc -eq 0 ]] && return
	tail -n 40 "$log" >&2
	echo "build-debug-kernel: failed, log: $log" >&2
}
trap on_exit EXIT

start=$(date +%s)
echo "build-debug-kernel: building $dir (source $srcver, -j$jobs, nice 19)" >&3

lowprio() {
	nice -n 19 "$@"
}

lowprio tar -xJf "$tarball" -C "$dir"
mv "$dir/linux-source-$series" "$dir/linux"
src=$dir/linux
for p in "${patches[@]}"; do
	echo "build-debug-kernel: applying ${p##*/}" >&3
	patch -d "$src" -p1 --forward --batch <"$p" >&3 2>&1 ||
		die "${p##*/} does not apply"
done
kmake() {
	lowprio make -C "$src" ARCH=x86_64 -j"$jobs" "$@"
}

kmake tinyconfig >&3 2>&1

# Apply the fragment with scripts/config.  Lines are Kconfig syntax:
# CONFIG_X=y|m|n, CONFIG_X=<number>, CONFIG_X="string",
# "# CONFIG_X is not set".
apply=()
while IFS= read -r line; do
	if [[ $line =~ ^#\ (CONFIG_[A-Za-z0-9_]+)\ is\ not\ set$ ]]; then
		apply+=(--disable "${BASH_REMATCH[1]#CONFIG_}")
	elif [[ $line =~ ^(CONFIG_[A-Za-z0-9_]+)=(.*)$ ]]; then
		sym=${BASH_REMATCH[1]#CONFIG_} val=${BASH_REMATCH[2]}
		case $val in
		y) apply+=(--enable "$sym") ;;
		m) apply+=(--module "$sym") ;;
		n) apply+=(--disable "$sym") ;;
		\"*\") val=${val#\"}; apply+=(--set-str "$sym" "${val%\"}") ;;
		*) apply+=(--set-val "$sym" "$val") ;;
		esac
	fi
done < <(fragment_text)
"$src/scripts/config" --file "$src/.config" "${apply[@]}"
# Twice: a symbol whose dependency only became visible in the first pass
# (a choice, say) gets its fragment value in the second.
"$src/scripts/config" --file "$src/.config" "${apply[@]}"
kmake olddefconfig >&3 2>&1

# Fail loudly when Kconfig dropped anything the fragment asks for.  A
# symbol this series no longer defines is only named (6.12 dropped
# BASE_FULL for BASE_SMALL and UBSAN_SANITIZE_ALL, now always on).
grep -rhoE --include='Kconfig*' '^(menu)?config [A-Za-z0-9_]+' "$src" |
	awk '{ print $2 }' | sort -u >"$dir/kconfig-symbols"
defined() {
	grep -qx -- "$1" "$dir/kconfig-symbols"
}
missing=()
while IFS= read -r line; do
	if [[ $line =~ ^#?\ ?(CONFIG_[A-Za-z0-9_]+) ]] &&
		! defined "${BASH_REMATCH[1]#CONFIG_}"; then
		echo "build-debug-kernel: $series has no ${BASH_REMATCH[1]}" >&3
		continue
	fi
	if [[ $line =~ ^#\ (CONFIG_[A-Za-z0-9_]+)\ is\ not\ set$ ]]; then
		grep -qE "^${BASH_REMATCH[1]}=" "$src/.config" && missing+=("$line")
	elif [[ $line =~ ^CONFIG_[A-Za-z0-9_]+=n$ ]]; then
		grep -qE "^${line%=n}=" "$src/.config" && missing+=("$line")
	elif [[ $line =~ ^CONFIG_ ]]; then
		grep -qxF -- "$line" "$src/.config" || missing+=("$line")
	fi
done < <(fragment_text)
if [[ ${#missing[@]} -gt 0 ]]; then
	printf '  %s\n' "${missing[@]}" >&2
	die "the .config lacks ${#missing[@]} fragment line(s) above (unmet dependencies?); see $src/.config"
fi

# bzImage, and "modules" for Module.symvers (needed by out-of-tree modules)
# and modules.builtin (rv-vm's initramfs builder skips built-in modules).
kmake bzImage modules >&3 2>&1
release=$(kmake -s kernelrelease)
rm -rf "$dir/modroot"
kmake INSTALL_MOD_PATH="$dir/modroot" modules_install >&3 2>&1
[[ -r $dir/modroot/lib/modules/$release/modules.builtin ]] ||
	die "modules_install produced no modules.builtin"
cp "$src/arch/x86/boot/bzImage" "$dir/bzImage"
echo "$release" >"$dir/release"

secs=$(($(date +%s) - start))
echo "$release built $(date -u +%FT%TZ) in ${secs}s (-j$jobs)" >"$dir/stamp"
echo "build-debug-kernel: done: $(cat "$dir/stamp")" >&3
echo "$dir"
