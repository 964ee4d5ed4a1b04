#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# install_test.sh - "make install DESTDIR=<stage> PREFIX=/usr" puts every
# file where README.md and rv(7) say, and a program builds, links and runs
# against the staged copy alone (pkg-config with a sysroot), shared and
# static.  TAP; run from the repo root after "make all".  Needs no RDMA
# device: the program accepts a missing /dev/rv.
#
# shellcheck disable=SC2317	# the check functions are run through tap_check()

set -uo pipefail

# shellcheck source=vm/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/vm/tap.sh"

stage=$(mktemp -d)
trap 'rm -rf "$stage" "$stage.dkms"' EXIT
T=tools/testing/selftests/rv

# The module directory is the kernel version the module was built for:
# vermagic must name the directory it landed in.
module_in_place() {
	local ko vermagic
	ko=$(find "$stage/lib/modules" -path '*/updates/rv.ko') || return 1
	[[ $(wc -l <<<"$ko") -eq 1 && -f $ko ]] || { echo "rv.ko: '$ko'"; return 1; }
	vermagic=$(modinfo -F vermagic "$ko") || return 1
	[[ $ko == "$stage/lib/modules/${vermagic%% *}/updates/rv.ko" ]] ||
		{ echo "$ko does not match vermagic $vermagic"; return 1; }
	# DESTDIR set: depmod must not have run (it would index the stage).
	! compgen -G "$stage/lib/modules/*/modules.dep" >/dev/null
}

udev_rule() {
	grep -Eq '^KERNEL=="rv", SUBSYSTEM=="misc", MODE="0666"$' \
		"$stage/lib/udev/rules.d/60-rv.rules"
}

# Every librv page in the tree and rv(7) are installed, and render.
man_pages() {
	local m
	for m in lib/librv/man/*.3; do
		[[ -f $stage/usr/share/man/man3/${m##*/} ]] || { echo "no ${m##*/}"; return 1; }
	done
	[[ -f $stage/usr/share/man/man7/rv.7 ]] || { echo "no rv.7"; return 1; }
	MANWIDTH=80 man -l "$stage/usr/share/man/man7/rv.7" | grep -q 'RV_IOCTL_POST_WRITE'
}

library() {
	local l=$stage/usr/lib
	[[ -f $l/librv.so.$version_want && -f $l/librv.a && -f $stage/usr/include/rv/librv.h &&
	   -f $stage/usr/include/rdma/rv_user_ioctls.h ]] || return 1
	[[ $(readlink "$l/librv.so.1") == librv.so.$version_want &&
	   $(readlink "$l/librv.so") == librv.so.1 ]] || { echo "bad links"; return 1; }
	readelf -d "$l/librv.so.$version_want" | grep -q 'Library soname: \[librv.so.1\]' ||
		{ echo "soname"; return 1; }
	# Versioned exports: the 1.0 to 1.5 nodes.  Read whole first:
	# "objdump | grep -q" fails under pipefail when grep stops early.
	local syms
	syms=$(objdump -T "$l/librv.so.$version_want") || return 1
	grep -q 'LIBRV_1.0 *rv_open$' <<<"$syms" &&
		grep -q 'LIBRV_1.1 *rv_post_write$' <<<"$syms" &&
		grep -q 'LIBRV_1.2 *rv_ipv4_gid$' <<<"$syms" &&
		grep -q 'LIBRV_1.3 *rv_reg_mem_keys$' <<<"$syms" &&
		grep -q 'LIBRV_1.4 *rv_dump_open$' <<<"$syms" &&
		grep -q 'LIBRV_1.5 *rv_mr_table_stats$' <<<"$syms" &&
		grep -q 'LIBRV_1.5 *rv_uring_open$' <<<"$syms"
}

# pkg-config sees only the stage: PKG_CONFIG_LIBDIR replaces the default
# search path, the sysroot prefixes -I/-L with the stage.
pc() {
	PKG_CONFIG_SYSROOT_DIR=$stage PKG_CONFIG_LIBDIR=$stage/usr/lib/pkgconfig \
		PKG_CONFIG_PATH='' pkg-config "$@" librv
}

# The one version librv, its .pc file and the DKMS package carry.
version_want=$(sed -n 's/^VERSION *:= *//p' lib/librv/Makefile)

pc_file() {
	local version cflags libs
	# read trims the blank pkg-config leaves at the end of a line.
	read -r version <<<"$(pc --modversion)"
	read -r cflags <<<"$(pc --cflags)"
	read -r libs <<<"$(pc --libs)"
	if grep -qx 'prefix=/usr' "$stage/usr/lib/pkgconfig/librv.pc" &&
	   [[ $version == "$version_want" && $cflags == "-I$stage/usr/include" &&
	      $libs == "-L$stage/usr/lib -lrv" ]]; then
		return 0
	fi
	cat "$stage/usr/lib/pkgconfig/librv.pc"
	echo "got: '$version' '$cflags' '$libs'"
	return 1
}

build_shared() {
	# shellcheck disable=SC2046	# pkg-config's words are the flags
	gcc -std=c11 -Wall -Wextra -Werror -o "$stage/smoke" "$T/install_smoke.c" \
		$(pc --cflags --libs)
}

# It must resolve librv from the stage, not from the tree or the system.
run_shared() {
	local where
	where=$(LD_LIBRARY_PATH=$stage/usr/lib ldd "$stage/smoke" | grep 'librv\.so')
	echo "$where"
	[[ $where == *"=> $stage/usr/lib/librv.so.1 "* ]] || return 1
	LD_LIBRARY_PATH=$stage/usr/lib "$stage/smoke"
}

build_run_static() {
	# shellcheck disable=SC2046
	gcc -std=c11 -Wall -Wextra -Werror -o "$stage/smoke-static" \
		"$T/install_smoke.c" $(pc --cflags) "$stage/usr/lib/librv.a" &&
		! ldd "$stage/smoke-static" | grep -q librv &&
		"$stage/smoke-static"
}

# The tree install-dkms stages builds by itself with dkms.conf's MAKE[0]
# (dkms sets kernelver and kernel_source_dir, then sources the file), so
# "dkms build" works wherever the headers of a kernel are installed.
dkms_tree() {
	local d=$stage/usr/src/rv-$version_want ko kernelver kernel_source_dir
	local -a MAKE BUILT_MODULE_LOCATION
	local PACKAGE_VERSION
	make -s install-dkms DESTDIR="$stage" || return 1
	ko=$(find "$stage/lib/modules" -path '*/updates/rv.ko' -print -quit)
	kernelver=$(modinfo -F vermagic "$ko") || return 1
	kernelver=${kernelver%% *}
	# shellcheck disable=SC2034	# read by MAKE[0] through eval
	kernel_source_dir=/lib/modules/$kernelver/build
	# shellcheck disable=SC1091	# generated into the stage
	. "$d/dkms.conf" || return 1
	[[ $PACKAGE_VERSION == "$version_want" ]] ||
		{ echo "dkms.conf: $PACKAGE_VERSION, librv: $version_want"; return 1; }
	(cd "$d" && eval "nice -n 10 ${MAKE[0]}") || return 1
	modinfo "$d/${BUILT_MODULE_LOCATION[0]}rv.ko" | grep -E '^(name|vermagic):'
}

# "dkms install" proper, for both supported kernels at once, kept out of
# the system's trees (--sourcetree, --dkmstree, --installtree; dkms still
# reruns depmod on each kernel's /lib/modules, which indexes nothing of
# rv).  Every kernel must end up with an rv.ko whose vermagic names it;
# "dkms remove" must then take them all away again.
dkms_both_kernels() {
	local tree=$stage.dkms k ko series
	local -a kvers=() kopts=() opts
	command -v dkms >/dev/null || { echo "no dkms (make setup installs it)"; return 1; }
	for series in 6.1 6.12; do
		k=$(find /lib/modules -mindepth 2 -maxdepth 2 -name build \
			-path "/lib/modules/$series.*-amd64/*" | sort -V | tail -n 1)
		[[ -n $k ]] || { echo "no $series headers (make setup)"; return 1; }
		k=${k%/build}
		kvers+=("${k##*/}")
		kopts+=(-k "${k##*/}")
	done
	opts=(--sourcetree "$tree/src" --dkmstree "$tree/var"
	      --installtree "$tree/modules")
	mkdir -p "$tree/var" || return 1
	make -s install-dkms DESTDIR="$tree" DKMS_SRCDIR=/src || return 1
	for k in "${kvers[@]}"; do
		mkdir -p "$tree/modules/$k" || return 1
	done
	dkms add "${opts[@]}" "rv/$version_want" || return 1
	nice -n 10 dkms install "${opts[@]}" "rv/$version_want" "${kopts[@]}" ||
		return 1
	for k in "${kvers[@]}"; do
		ko=$(find "$tree/modules/$k/updates/dkms" -name 'rv.ko*' -print -quit)
		[[ -n $ko ]] || { echo "$k: no rv.ko installed"; return 1; }
		[[ $(modinfo -F vermagic "$ko") == "$k "* ]] ||
			{ echo "$ko: vermagic $(modinfo -F vermagic "$ko")"; return 1; }
		dkms status "${opts[@]}" "rv/$version_want" -k "$k" |
			grep -q ": installed$" || { echo "$k: dkms status says otherwise"; return 1; }
		echo "$k: $ko"
	done
	dkms remove "${opts[@]}" "rv/$version_want" --all || return 1
	ko=$(find "$tree/modules" -name 'rv.ko*')
	[[ -z $ko ]] || { echo "left after dkms remove: $ko"; return 1; }
}

uninstall_all() {
	make -s uninstall DESTDIR="$stage" PREFIX=/usr || return 1
	local left
	left=$(find "$stage" \( -type f -o -type l \) ! -name 'smoke*' ! -path '*/usr/src/*')
	[[ -z $left ]] || { echo "left behind:"; echo "$left"; return 1; }
}

tap_begin
tap_check install make -s install DESTDIR="$stage" PREFIX=/usr
tap_check install-module module_in_place
tap_check install-udev-rule udev_rule
tap_check install-man-pages man_pages
tap_check install-library library
tap_check install-pkg-config pc_file
tap_check install-build-shared build_shared
tap_check install-run-shared run_shared
tap_check install-build-run-static build_run_static
tap_check install-dkms-tree-builds dkms_tree
tap_check dkms-install-both-kernels dkms_both_kernels
tap_check uninstall uninstall_all
tap_end
