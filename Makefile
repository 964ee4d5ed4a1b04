# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# rv: top-level build.  On a fresh Debian bookworm machine:
#   make setup    install every dependency from Debian's packages, build all
#   make check    run the whole test suite (host checks + QEMU/rxe VMs)
# See README.md for the rest.

SHELL := /bin/bash

# Debian's 6.1 kernel the VMs boot and the module builds against.  Not the
# running kernel: this host may run anything.  KERNEL=6.12 picks bookworm's
# 6.12 LTS instead (make module KERNEL=6.12, make lint KERNEL=6.12): the
# newest headers that linux-headers-6.12-amd64 depends on, else the newest
# installed linux-headers-6.12.*-amd64.  Differences between the two stay
# in $(RV_DIR)/rv_compat.h.
DEFAULT_KERNEL := 6.1
# Lint also covers these when their headers are installed.
OTHER_KERNELS := 6.12
KERNEL ?= $(DEFAULT_KERNEL)
meta_kver = $(shell dpkg-query -W -f='$${Depends}' $(1) 2>/dev/null | \
	  sed -n 's/.*linux-headers-\([0-9][^ ,]*\).*/\1/p')
glob_kver = $(shell ls -d /usr/src/linux-headers-$(1).*-amd64 2>/dev/null | \
	  grep -Ev -- '-(cloud|rt)-amd64$$' | sort -V | tail -n 1 | \
	  sed 's|.*/linux-headers-||')
kver = $(or $(call meta_kver,linux-headers-$(1)-amd64),$(call glob_kver,$(1)))
ifeq ($(KERNEL),$(DEFAULT_KERNEL))
KVER ?= $(call meta_kver,linux-headers-amd64)
else
KVER ?= $(call kver,$(KERNEL))
endif
KDIR ?= /usr/src/linux-headers-$(KVER)
KERNEL_IMAGE ?= /boot/vmlinuz-$(KVER)

BUILD := $(CURDIR)/build
RV_DIR := drivers/infiniband/ulp/rv
RV_SRCS = $(RV_DIR)/Makefile $(RV_DIR)/Kconfig \
	$(filter-out %.mod.c,$(wildcard $(RV_DIR)/*.[ch]))
# The default kernel's rv.ko is built in place; another kernel's in a copy
# of the sources under build/ (an external module cannot put its objects
# elsewhere before 6.13), so that the two never share objects.
ifeq ($(KERNEL),$(DEFAULT_KERNEL))
RV_OBJ_DIR := $(CURDIR)/$(RV_DIR)
LINT_LOG_DIR := $(BUILD)
else
RV_OBJ_DIR := $(BUILD)/kernel-$(KERNEL)/rv
LINT_LOG_DIR := $(BUILD)/kernel-$(KERNEL)
endif
RV_KO := $(RV_OBJ_DIR)/rv.ko
SELFTESTS := tools/testing/selftests/rv
LIBRV := lib/librv

# Third-party files taken from Debian's linux-source-6.1 at build time.
LINUX_SRC_TAR ?= /usr/src/linux-source-6.1.tar.xz
LINUX_SRC := $(BUILD)/linux-source-6.1
KSFT_DIR := $(LINUX_SRC)/tools/testing/selftests
CHECKPATCH := $(LINUX_SRC)/scripts/checkpatch.pl
LINUX_SRC_FILES := \
	linux-source-6.1/tools/testing/selftests/kselftest_harness.h \
	linux-source-6.1/tools/testing/selftests/kselftest.h \
	linux-source-6.1/scripts/checkpatch.pl \
	linux-source-6.1/scripts/spelling.txt \
	linux-source-6.1/scripts/const_structs.checkpatch

DEBIAN_PACKAGES := \
	build-essential gcc-multilib pkg-config kmod xz-utils bc flex bison \
	libelf-dev sparse linux-image-amd64 linux-headers-amd64 \
	linux-image-6.12-amd64 linux-headers-6.12-amd64 \
	linux-source-6.1 linux-source-6.12 dkms \
	busybox-static cpio iproute2 \
	rdma-core ibverbs-utils rdmacm-utils perftest iputils-ping groff-base \
	librdmacm-dev libibverbs-dev trace-cmd libssl-dev \
	man-db util-linux gnuplot-nox \
	libfabric-dev libfabric-bin openmpi-bin libopenmpi-dev liburing-dev \
	openssh-server openssh-client autoconf automake libtool \
	slurm-wlm munge libpmix-dev libslurm-dev

KBUILD_ARGS := -C $(KDIR) M=$(RV_OBJ_DIR) CONFIG_INFINIBAND_RV=m \
	KCFLAGS=-I$(CURDIR)/include/uapi

.PHONY: all setup packages module module-src module-clean librv selftests \
	examples check lint lint-w1 lint-sparse checkpatch clean debug-kernel fabtests \
	debug-module $(addprefix lint-kernel-,$(OTHER_KERNELS)) \
	check-debug install uninstall install-dkms check-man rvstat spank-rv librv-fi \
	bench-write bench-uring lockstat-write

# The VMs' initramfs is built (and cached per kernel) by rv-vm on first use.
all: module librv selftests examples rvstat spank-rv librv-fi

setup: packages
	$(MAKE) all
	$(MAKE) fabtests

# QEMU comes from bookworm-backports (10.0): bookworm's 7.2 corrupts a
# 6.12 guest's RFLAGS under TCG now and then (Documentation/rv/kernels.rst).
# The source is added for that one package: backports are never picked
# unless asked for (-t).
BACKPORTS_LIST := /etc/apt/sources.list.d/rv-bookworm-backports.sources
BACKPORTS_PACKAGES := qemu-system-x86

packages:
	test -e $(BACKPORTS_LIST) || printf '%s\n' 'Types: deb' \
		'URIs: http://deb.debian.org/debian' \
		'Suites: bookworm-backports' 'Components: main' \
		'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg' \
		>$(BACKPORTS_LIST)
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
		$(DEBIAN_PACKAGES)
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
		-t bookworm-backports $(BACKPORTS_PACKAGES)

$(CHECKPATCH) $(KSFT_DIR)/kselftest_harness.h: $(LINUX_SRC_TAR)
	mkdir -p $(BUILD)
	tar -xJf $(LINUX_SRC_TAR) -C $(BUILD) $(LINUX_SRC_FILES)
	touch $(CHECKPATCH) $(KSFT_DIR)/kselftest_harness.h

module: module-src
	$(MAKE) $(KBUILD_ARGS) modules

# Copies the sources for a kernel other than the default (cp -p: kbuild
# rebuilds only what changed).
module-src:
	@test -d $(KDIR) || { echo "no kernel headers at $(KDIR): run make setup" >&2; exit 1; }
ifneq ($(KERNEL),$(DEFAULT_KERNEL))
	@mkdir -p $(RV_OBJ_DIR)
	@cp -p $(RV_SRCS) $(RV_OBJ_DIR)/
endif

module-clean:
	$(if $(wildcard $(RV_OBJ_DIR)),$(MAKE) $(KBUILD_ARGS) clean)

librv:
	$(MAKE) -C $(LIBRV)

selftests: librv $(KSFT_DIR)/kselftest_harness.h
	$(MAKE) -C $(SELFTESTS) KSFT_DIR=$(KSFT_DIR)
	$(MAKE) -C $(SELFTESTS)/mpi

# The libfabric provider "rv" (librv-fi.so) and its test rv_fi_test.
librv-fi: librv
	$(MAKE) -C lib/librv-fi

# libfabric's fabtests (the "fabtests" test group) from the tarball in
# ../shared/thirdparty (never copied into the repo), built under
# build/fabtests/ against Debian's libfabric-dev: unpacked, autogen.sh,
# configure, make -j2 install into build/fabtests/install.  Rebuilt only when
# the tarball is newer than the stamp; about 2 min on 2 shared cores.
THIRDPARTY ?= $(CURDIR)/../shared/thirdparty
FABTESTS_TAR ?= $(THIRDPARTY)/fabtests-v1.17.0.tar.xz
FABTESTS_DIR := $(BUILD)/fabtests
FABTESTS_STAMP := $(FABTESTS_DIR)/install/.built
fabtests: $(FABTESTS_STAMP)

$(FABTESTS_STAMP): $(FABTESTS_TAR)
	@test -r /usr/include/rdma/fabric.h || { echo "fabtests: no libfabric-dev: run make setup" >&2; exit 1; }
	@command -v autoreconf libtoolize >/dev/null || { echo "fabtests: no autoconf/automake/libtool: run make setup" >&2; exit 1; }
	@echo "  FABTESTS $(FABTESTS_TAR) -> $(FABTESTS_DIR)"
	@set -euo pipefail; rm -rf $(FABTESTS_DIR); mkdir -p $(FABTESTS_DIR)/obj; \
	log=$(FABTESTS_DIR)/build.log; \
	tar -xJf $< -C $(FABTESTS_DIR); \
	src=$$(echo $(FABTESTS_DIR)/fabtests-*/fabtests); \
	{ (cd $$src && ./autogen.sh) && \
	  (cd $(FABTESTS_DIR)/obj && $$src/configure -q --with-libfabric=/usr \
		--prefix=$(FABTESTS_DIR)/install) && \
	  $(MAKE) -s -C $(FABTESTS_DIR)/obj -j2 install; } >$$log 2>&1 || \
		{ tail -30 $$log >&2; echo "fabtests: build failed, see $$log" >&2; exit 1; }
	@touch $@

# rv_rendezvous, the demo the "demo" test group runs between two VMs.
examples: librv
	$(MAKE) -C examples

rvstat: librv
	$(MAKE) -C tools/rvstat

# spank_rv.so, the Slurm SPANK plugin binding each step to an rv launcher
# job (Documentation/rv/admin-guide.rst, Slurm); needs libslurm-dev.
spank-rv:
	$(MAKE) -C tools/slurm

# GROUPS="uapi mr": only these groups of vm/tests.list (default: all), e.g.
# the subset CI runs on the second kernel (make check KERNEL=6.12 GROUPS=...).
# Another kernel's results go to build/vm/tests-<KERNEL>/, so that a run on
# it leaves the default kernel's where they are.
GROUPS ?=
ifeq ($(KERNEL),$(DEFAULT_KERNEL))
CHECK_OUT := $(BUILD)/vm/tests
else
CHECK_OUT := $(BUILD)/vm/tests-$(KERNEL)
endif
# A plain "make check" (the default kernel, no GROUPS) then runs
# SECOND_GROUPS on SECOND_KERNEL, the other supported LTS kernel, whose
# image and headers make setup installs: CI exercises both.  Their results
# are named "6.12/<group>/..."; the last line sums both runs.  The
# subset is what touches the kernel differently: the provider (fabric,
# fabtests) only adds user space over the same uAPI, which demo covers.
SECOND_KERNEL := 6.12
SECOND_GROUPS := uapi mr mr-table ring conn-pair write-pair uring fuzz demo forge
ifeq ($(KERNEL)$(GROUPS),$(DEFAULT_KERNEL))
SECOND_KVER := $(call kver,$(SECOND_KERNEL))
endif
SECOND_RUN = ::: -p $(SECOND_KERNEL)/ -k /boot/vmlinuz-$(SECOND_KVER) \
	-o $(BUILD)/vm/tests-$(SECOND_KERNEL) $(addprefix -g ,$(SECOND_GROUPS)) \
	-- --rv-ko $(BUILD)/kernel-$(SECOND_KERNEL)/rv/rv.ko
check: all fabtests
	@test -r $(KERNEL_IMAGE) || { echo "no kernel image $(KERNEL_IMAGE): run make setup" >&2; exit 1; }
ifneq ($(SECOND_KVER),)
	@test -r /boot/vmlinuz-$(SECOND_KVER) || { echo "no kernel image /boot/vmlinuz-$(SECOND_KVER): run make setup" >&2; exit 1; }
	$(MAKE) -s KERNEL=$(SECOND_KERNEL) KVER=$(SECOND_KVER) \
		KDIR=/usr/src/linux-headers-$(SECOND_KVER) module
endif
	$(SELFTESTS)/run_kernels.sh -k $(KERNEL_IMAGE) -o $(CHECK_OUT) \
		$(addprefix -g ,$(GROUPS)) -- --rv-ko $(RV_KO) \
		$(if $(SECOND_KVER),$(SECOND_RUN))

# The data-path benchmark (Documentation/rv/performance.rst): not a test, so
# not in tests.list.  BENCH_* variables pass through the environment;
# BENCH_ARGS goes to rv-vm (e.g. --rv-ko of another build).
BENCH_ARGS ?=
bench-write: all
	@test -r $(KERNEL_IMAGE) || { echo "no kernel image $(KERNEL_IMAGE): run make setup" >&2; exit 1; }
	$(SELFTESTS)/bench/bench-write.sh --kernel $(KERNEL_IMAGE) --rv-ko $(RV_KO) $(BENCH_ARGS)

# System calls per write: ioctl, io_uring, io_uring with SQPOLL
# (bench/bench-uring.sh; BENCH_URING_WRITES per way).  Not a test.
bench-uring: all
	@test -r $(KERNEL_IMAGE) || { echo "no kernel image $(KERNEL_IMAGE): run make setup" >&2; exit 1; }
	$(SELFTESTS)/bench/bench-uring.sh --kernel $(KERNEL_IMAGE) --rv-ko $(RV_KO) $(BENCH_ARGS)

# Lock statistics of the post path (Documentation/rv/performance.rst): two VMs of
# the debug kernel (CONFIG_LOCK_STAT) booted as check-debug boots them, P
# senders of one job; fails if a lock the job's processes share is taken
# per write.  LOCKSTAT_* variables pass through the environment.
# Heartbeats off: each takes the connection's lock once per heartbeat_ms
# whatever the writes, which would count the window's length, not the
# post path (the first run, with them: 70 acquisitions in 154 s).
lockstat-write: debug-module librv selftests
	@set -euo pipefail; \
	dk=$$($(DEBUG_KERNEL_SH) -q); \
	$(SELFTESTS)/bench/lockstat-write.sh --kernel $$dk/bzImage \
		--modules $$dk/modroot/lib/modules/$$(cat $$dk/release) \
		--rv-ko $(DEBUG_RV_DIR)/rv.ko --mem $(RV_DEBUG_VM_MEM) \
		--rv-args "$(RV_DEBUG_RV_ARGS) heartbeat_ms=4294967295" \
		--append "$(RV_DEBUG_APPEND)" \
		--time-scale $(RV_DEBUG_TIME_SCALE)

# ---- Installation ----------------------------------------------------------
# "make install" puts the module where modprobe finds it before an in-kernel
# rv (updates/), the uAPI header and librv under $(PREFIX), man pages for
# librv (man3) and the module (rv(7)), and the udev rule for /dev/rv.  Paths
# the kernel or udev read (/lib/modules, /lib/udev) do not move with
# PREFIX; DESTDIR stages everything, and then depmod is left to whoever
# installs the staged tree (it would otherwise index the host's modules).
PREFIX ?= /usr/local
DESTDIR ?=
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
MODDIR ?= /lib/modules/$(KVER)/updates
UDEVRULESDIR ?= /lib/udev/rules.d
DKMS_SRCDIR ?= /usr/src
INSTALL ?= install
# One version for librv, the DKMS package and its /usr/src directory.
RV_VERSION := $(shell sed -n 's/^VERSION *:= *//p' $(LIBRV)/Makefile 2>/dev/null)
LIBRV_DIRS := PREFIX=$(PREFIX) LIBDIR=$(LIBDIR) INCLUDEDIR=$(INCLUDEDIR) \
	MANDIR=$(MANDIR) DESTDIR=$(DESTDIR)

# The SPANK plugin goes to $(PREFIX)/lib/slurm (SPANK_PLUGINDIR), named by
# its full path in plugstack.conf.
SPANK_PLUGINDIR ?= $(PREFIX)/lib/slurm

install: module librv rvstat spank-rv librv-fi
	$(INSTALL) -d $(DESTDIR)$(MODDIR) $(DESTDIR)$(UDEVRULESDIR) \
		$(DESTDIR)$(MANDIR)/man7
	$(INSTALL) -m 644 $(RV_KO) $(DESTDIR)$(MODDIR)/rv.ko
	$(INSTALL) -m 644 packaging/60-rv.rules $(DESTDIR)$(UDEVRULESDIR)/60-rv.rules
	$(INSTALL) -m 644 man/rv.7 $(DESTDIR)$(MANDIR)/man7/rv.7
	$(MAKE) -C $(LIBRV) $(LIBRV_DIRS) install
	$(MAKE) -C tools/rvstat PREFIX=$(PREFIX) MANDIR=$(MANDIR) \
		DESTDIR=$(DESTDIR) install
	$(MAKE) -C tools/slurm SPANK_PLUGINDIR=$(SPANK_PLUGINDIR) DESTDIR=$(DESTDIR) \
		install
	$(MAKE) -C lib/librv-fi PREFIX=$(PREFIX) MANDIR=$(MANDIR) DESTDIR=$(DESTDIR) \
		install
	$(if $(DESTDIR),,depmod -a $(KVER))

uninstall:
	rm -f $(DESTDIR)$(MODDIR)/rv.ko $(DESTDIR)$(UDEVRULESDIR)/60-rv.rules \
		$(DESTDIR)$(MANDIR)/man7/rv.7
	$(MAKE) -C $(LIBRV) $(LIBRV_DIRS) uninstall
	$(MAKE) -C tools/rvstat PREFIX=$(PREFIX) MANDIR=$(MANDIR) \
		DESTDIR=$(DESTDIR) uninstall
	$(MAKE) -C tools/slurm SPANK_PLUGINDIR=$(SPANK_PLUGINDIR) DESTDIR=$(DESTDIR) \
		uninstall
	$(MAKE) -C lib/librv-fi PREFIX=$(PREFIX) MANDIR=$(MANDIR) DESTDIR=$(DESTDIR) \
		uninstall
	$(if $(DESTDIR),,depmod -a $(KVER))

# The sources dkms.conf builds, in their in-tree layout, under
# $(DESTDIR)$(DKMS_SRCDIR)/rv-$(RV_VERSION); then "dkms add rv/$(RV_VERSION)".
DKMS_DIR = $(DESTDIR)$(DKMS_SRCDIR)/rv-$(RV_VERSION)
install-dkms:
	@grep -qx 'PACKAGE_VERSION="$(RV_VERSION)"' dkms.conf || \
		{ echo "dkms.conf: PACKAGE_VERSION is not $(RV_VERSION)" >&2; exit 1; }
	$(INSTALL) -d $(DKMS_DIR)/$(RV_DIR) $(DKMS_DIR)/include/uapi/rdma
	$(INSTALL) -m 644 Makefile Kconfig dkms.conf $(DKMS_DIR)/
	$(INSTALL) -m 644 $(RV_DIR)/Makefile $(RV_DIR)/Kconfig \
		$(filter-out %.mod.c,$(wildcard $(RV_DIR)/*.[ch])) $(DKMS_DIR)/$(RV_DIR)/
	$(INSTALL) -m 644 include/uapi/rdma/rv_user_ioctls.h \
		$(DKMS_DIR)/include/uapi/rdma/

# groff -ww on rv(7) (and mandoc -T lint when installed), then librv's pages,
# then check_man.py: the module parameters, the uAPI header's errnos and
# librv's errnos against rv(7) and the librv pages (see the script).
check-man:
	@for m in man/rv.7 tools/rvstat/rvstat.8 lib/librv-fi/man/fi_rv.7; do \
		out=$$(LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -z $$m 2>&1); \
		if [ -n "$$out" ]; then echo "$$m: $$out"; exit 1; fi; \
	done
	@if command -v mandoc >/dev/null; then mandoc -T lint -W warning man/rv.7 tools/rvstat/rvstat.8 lib/librv-fi/man/fi_rv.7; fi
	$(MAKE) -s -C $(LIBRV) check-man
	python3 $(SELFTESTS)/check_man.py $(CURDIR)

# ---- Debug kernel: KASAN, lockdep, kmemleak, fault injection, UBSAN -------
# Built from linux-source-$(KERNEL) by build-debug-kernel.sh and cached
# outside the repo ($RV_DEBUG_KERNEL_CACHE, default /var/cache/rv-debug-kernel);
# the first build takes a while, later calls only print the cache directory.
# Not part of "check": CI does not build it.  KERNEL=6.12 builds and tests
# the 6.12 one (make check-debug KERNEL=6.12).
# DEBUG_SANITIZER=kcsan: the data-race detector instead of KASAN (its own
# kernel, rv.ko and output directory), for the groups whose guests have two
# vCPUs (make check-debug KERNEL=6.12 DEBUG_SANITIZER=kcsan
# DEBUG_GROUPS="$(SMP_GROUPS)").
DEBUG_SANITIZER ?= kasan
SMP_GROUPS := $(shell awk '/^[a-z]/ && $$2 ~ /x[2-9]/ { print $$1 }' \
	$(SELFTESTS)/vm/tests.list)
DEBUG_KERNEL_SH := $(CURDIR)/$(SELFTESTS)/debug-kernel/build-debug-kernel.sh -k $(KERNEL) \
	-s $(DEBUG_SANITIZER)
# rv.ko for the debug kernel, built from a copy of the sources so that it
# never mixes objects with the normal rv.ko built in place by "module".
ifeq ($(KERNEL),$(DEFAULT_KERNEL))
DEBUG_SUFFIX :=
else
DEBUG_SUFFIX := -$(KERNEL)
endif
ifeq ($(DEBUG_SANITIZER),kcsan)
DEBUG_SUFFIX := $(DEBUG_SUFFIX)-kcsan
endif
DEBUG_RV_DIR := $(BUILD)/debug-rv$(DEBUG_SUFFIX)
# The debug kernel under TCG is several times slower than Debian's: each
# group gets a longer timeout and the VMs more memory (KASAN's shadow,
# kmemleak and lockdep metadata).  Both can be overridden from the
# environment, as can DEBUG_GROUPS (default: every group of tests.list
# that boots a VM; the host group does not depend on the kernel).
RV_DEBUG_TIMEOUT ?= 2400
RV_DEBUG_VM_MEM ?= 1536
# KASAN and lockdep slow the guests down enough that 6 transport retries
# of about 134 ms (ack_timeout 15) run out: about 1 s each.  At its
# ~0.2 MB/s a killed process's writes can wait behind a full send queue of
# the survivors' batches longer than quiesce_ms's 10 s (rel-kill: 24
# failures at 10 s, none at 40 s), so close waits a minute there.
RV_DEBUG_RV_ARGS ?= ack_timeout=18 quiesce_ms=60000
# Extra kernel arguments for the debug guests.  Under QEMU 7.2 they had
# pci=noacpi (each ACPI interrupt link took about 23 s to enable there);
# under QEMU 10.0 a guest with it never got through its init (no output
# in 7 minutes, QEMU idle), and without it reaches its first command in
# about 40 s.
RV_DEBUG_APPEND ?=
# The tests' own time budgets (rv_rel_test -T, barriers, bounded waits)
# are sized for Debian's kernel; under KASAN the guests run their traffic
# and their scripts several times slower (rel-kill's processes ran out of
# their 200 s before the script around them had done its steps).
RV_DEBUG_TIME_SCALE ?= 3
DEBUG_GROUPS ?= $(shell awk '/^[a-z]/ && $$2 > 0 { print $$1 }' \
	$(SELFTESTS)/vm/tests.list)

debug-kernel:
	$(DEBUG_KERNEL_SH)

# debug-kernel first: a first build shows its progress (later: one line).
debug-module: debug-kernel
	@set -euo pipefail; \
	dk=$$($(DEBUG_KERNEL_SH) -q); \
	mkdir -p $(DEBUG_RV_DIR); \
	cp -p $(RV_SRCS) $(DEBUG_RV_DIR)/; \
	$(MAKE) -C $$dk/linux M=$(DEBUG_RV_DIR) CONFIG_INFINIBAND_RV=m \
		CONFIG_INFINIBAND_RV_DEBUG_WINDOWS=y \
		KCFLAGS=-I$(CURDIR)/include/uapi modules

# Every group on the debug kernel; each VM ends its run with a kmemleak scan
# (guest-init.sh), and any KASAN/lockdep/UBSAN/kmemleak line fails it.
check-debug: debug-module librv selftests fabtests
	@set -euo pipefail; \
	dk=$$($(DEBUG_KERNEL_SH) -q); \
	$(SELFTESTS)/run_tests.sh -k $$dk/bzImage \
		-m $$dk/modroot/lib/modules/$$(cat $$dk/release) \
		-t $(RV_DEBUG_TIMEOUT) -o $(BUILD)/vm/tests-debug$(DEBUG_SUFFIX) \
		$(addprefix -g ,$(DEBUG_GROUPS)) -- \
		--rv-ko $(DEBUG_RV_DIR)/rv.ko --mem $(RV_DEBUG_VM_MEM) \
		--rv-args "$(RV_DEBUG_RV_ARGS)" --append "$(RV_DEBUG_APPEND)" \
		--time-scale $(RV_DEBUG_TIME_SCALE)

# Warning-free with W=1, sparse-clean and checkpatch --strict clean: on
# KERNEL and, when KERNEL is the default, on each of OTHER_KERNELS whose
# headers are installed (a note names those without).
ifeq ($(KERNEL),$(DEFAULT_KERNEL))
LINT_KERNELS := $(foreach k,$(OTHER_KERNELS),$(if $(call kver,$(k)),$(k)))
LINT_MISSING := $(filter-out $(LINT_KERNELS),$(OTHER_KERNELS))
endif
lint: lint-w1 lint-sparse checkpatch $(addprefix lint-kernel-,$(LINT_KERNELS))
	$(if $(LINT_MISSING),@echo "lint: $(LINT_MISSING) not linted: no headers installed")

# mkdir first: if tee cannot write the log, grep finds no warning in it.
lint-w1: module-src
	@mkdir -p $(LINT_LOG_DIR)
	$(MAKE) $(KBUILD_ARGS) clean
	$(MAKE) $(KBUILD_ARGS) W=1 modules 2>&1 | tee $(LINT_LOG_DIR)/lint-w1.log
	! grep -E 'warning:|error:' $(LINT_LOG_DIR)/lint-w1.log

lint-sparse: module-src
	@mkdir -p $(LINT_LOG_DIR)
	$(MAKE) $(KBUILD_ARGS) clean
	$(MAKE) $(KBUILD_ARGS) C=1 modules 2>&1 | tee $(LINT_LOG_DIR)/lint-sparse.log
	! grep -E 'warning:|error:' $(LINT_LOG_DIR)/lint-sparse.log

# After the default kernel's lint, so that make -j does not interleave the
# two.  KVER and KDIR are set again: a value given on the command line for
# the default kernel would otherwise reach this make too.
$(addprefix lint-kernel-,$(OTHER_KERNELS)): lint-kernel-%: lint-w1 lint-sparse
	$(MAKE) KERNEL=$* KVER=$(call kver,$*) \
		KDIR=/usr/src/linux-headers-$(call kver,$*) lint-w1 lint-sparse

# Trace headers follow the TRACE_EVENT() layout of include/trace/events/
# (open-ended lines, aligned macro arguments), which --strict flags; those
# two checks alone are waived for rv_trace.h.  rv_compat.h is the one file
# allowed to test LINUX_VERSION_CODE (checkpatch also reads it as a
# constant on the left of a comparison): everywhere else it stays flagged.
CHECKPATCH_ARGS := --strict --no-tree --terse --show-types
checkpatch: $(CHECKPATCH)
	$(CHECKPATCH) $(CHECKPATCH_ARGS) -f $(filter-out %/rv_trace.h \
		%/rv_compat.h %.mod.c, $(wildcard $(RV_DIR)/rv*.[ch])) \
		include/uapi/rdma/rv_user_ioctls.h
	$(CHECKPATCH) $(CHECKPATCH_ARGS) \
		--ignore OPEN_ENDED_LINE,PARENTHESIS_ALIGNMENT -f $(RV_DIR)/rv_trace.h
	$(CHECKPATCH) $(CHECKPATCH_ARGS) \
		--ignore LINUX_VERSION_CODE,CONSTANT_COMPARISON -f $(RV_DIR)/rv_compat.h

clean:
	-$(MAKE) $(KBUILD_ARGS) clean
	-$(MAKE) -C $(LIBRV) clean
	-$(MAKE) -C $(SELFTESTS) clean
	-$(MAKE) -C $(SELFTESTS)/mpi clean
	-$(MAKE) -C examples clean
	-$(MAKE) -C tools/rvstat clean
	-$(MAKE) -C tools/slurm clean
	rm -rf $(BUILD)
