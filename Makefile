# SPDX-License-Identifier: MIT
#
# hvtrace top-level Makefile.
#
#   make [O=DIR] [V=1] [CROSS_COMPILE=PREFIX] [TARGET...]
#
#   all (default)     build everything the configuration enables
#   defconfig         configure from configs/defconfig (NAME_defconfig: another)
#   menuconfig        edit the configuration (kconfig-mconf)
#   olddefconfig      update .config, new options at their defaults
#   savedefconfig     write a minimal defconfig to $(O)/defconfig
#   check             build with -Werror and run every test (unit, sanitizer
#                     build, freestanding link check, end-to-end)
#   bench             run the benchmarks (prints BENCH lines)
#   demo              install what is missing and run the demo
#   check-repeat      TESTS=REGEX [N=20] [LOAD=2]: those tests N times each
#   check-fresh       the README's two commands in a fresh Debian 12 root
#   fuzz-run          run every fuzz target FUZZ_RUN_SECONDS (300) each
#   install           install to $(DESTDIR)$(PREFIX)
#   deps              install missing Debian packages
#   clean, distclean
#
# Each folder contributes a Build.mk fragment; objects go to $(O) mirroring
# the source tree.

MAKEFLAGS += --no-builtin-rules --no-builtin-variables
.SUFFIXES:
.DEFAULT_GOAL := all

srctree := $(CURDIR)
O ?= build
objtree := $(abspath $(O))
export srctree objtree

PREFIX ?= /usr/local
DESTDIR ?=

ifeq ($(V),1)
Q :=
quiet = @:
else
Q := @
quiet = @printf '  %-8s %s\n'
endif

CROSS_COMPILE ?=
CC := $(CROSS_COMPILE)gcc
AR := $(CROSS_COMPILE)ar
NM := $(CROSS_COMPILE)nm
LD := $(CROSS_COMPILE)ld
CLANG ?= clang
PKG_CONFIG ?= pkg-config

# --- configuration (kconfig-frontends) ---------------------------------

KCONFIG_CONFIG := $(objtree)/.config
AUTOHEADER := $(objtree)/include/generated/autoconf.h
AUTOCONF := $(objtree)/include/config/auto.conf
KCONF_ENV := srctree=$(srctree) KCONFIG_CONFIG=$(KCONFIG_CONFIG)
DEFCONFIG ?= defconfig

config-targets := defconfig %_defconfig menuconfig nconfig olddefconfig \
	oldconfig savedefconfig
.PHONY: defconfig menuconfig nconfig olddefconfig oldconfig savedefconfig

$(objtree)/.dir:
	$(Q)mkdir -p $(objtree)/include/config $(objtree)/include/generated
	$(Q)touch $@

defconfig: $(objtree)/.dir
	$(quiet) KCONFIG configs/$(DEFCONFIG)
	$(Q)$(KCONF_ENV) kconfig-conf --defconfig=$(srctree)/configs/$(DEFCONFIG) $(srctree)/Kconfig >/dev/null

%_defconfig: $(objtree)/.dir
	@test -f $(srctree)/configs/$@ || { echo "error: no configs/$@; see ls configs/" >&2; exit 1; }
	$(quiet) KCONFIG configs/$@
	$(Q)$(KCONF_ENV) kconfig-conf --defconfig=$(srctree)/configs/$@ $(srctree)/Kconfig >/dev/null

menuconfig: $(objtree)/.dir
	$(Q)$(KCONF_ENV) kconfig-mconf $(srctree)/Kconfig

nconfig: $(objtree)/.dir
	$(Q)$(KCONF_ENV) kconfig-nconf $(srctree)/Kconfig

olddefconfig: $(objtree)/.dir
	$(Q)$(KCONF_ENV) kconfig-conf --olddefconfig $(srctree)/Kconfig

oldconfig: $(objtree)/.dir
	$(Q)$(KCONF_ENV) kconfig-conf --oldconfig $(srctree)/Kconfig

savedefconfig: $(objtree)/.dir
	$(Q)$(KCONF_ENV) kconfig-conf --savedefconfig=$(objtree)/defconfig $(srctree)/Kconfig
	@echo "wrote $(objtree)/defconfig"

# A build without a .config starts from configs/defconfig.
$(KCONFIG_CONFIG): | $(objtree)/.dir
	@echo "  (no $(O)/.config: using configs/$(DEFCONFIG); run make menuconfig to change)"
	$(Q)$(KCONF_ENV) kconfig-conf --defconfig=$(srctree)/configs/$(DEFCONFIG) $(srctree)/Kconfig >/dev/null

# silentoldconfig writes include/config/ and include/generated/ in the cwd.
# Options that are new since the .config was written take their defaults
# (olddefconfig) instead of stopping a non-interactive build with a prompt.
$(AUTOHEADER) $(AUTOCONF): $(KCONFIG_CONFIG) $(shell find $(srctree) -name Kconfig -not -path '$(objtree)/*' 2>/dev/null)
	$(quiet) KCONFIG include/generated/autoconf.h
	$(Q)cd $(objtree) && $(KCONF_ENV) kconfig-conf --olddefconfig $(srctree)/Kconfig >/dev/null
	$(Q)cd $(objtree) && $(KCONF_ENV) kconfig-conf --silentoldconfig $(srctree)/Kconfig
	$(Q)touch $(AUTOHEADER) $(AUTOCONF)

# demo, check, bench and check-fresh install the Debian packages first and
# then do their work in a sub-make, so the configuration is read (and
# kconfig-conf run) only once the tools are there.
no-config-goals := $(config-targets) clean distclean deps help demo check \
	bench check-fresh check-repeat
ifeq ($(filter $(no-config-goals),$(MAKECMDGOALS)),)
-include $(AUTOCONF)
endif

# --- flags --------------------------------------------------------------

WERROR ?= 1
OPT ?= -O2
WARNINGS := -Wall -Wextra -Wundef -Wshadow -Wstrict-prototypes \
	-Wmissing-prototypes -Wno-unused-parameter -Wno-sign-compare \
	-Wformat=2 -Wno-format-nonliteral
ifeq ($(WERROR),1)
WARNINGS += -Werror
endif

HVT_VERSION := 0.1.0
CPPFLAGS := -I$(srctree)/shared/include -I$(objtree)/include -D_GNU_SOURCE \
	-DHVT_VERSION=\"$(HVT_VERSION)\"
CFLAGS := -std=gnu11 $(OPT) -g -fno-strict-aliasing -pthread $(WARNINGS)
LDFLAGS := -pthread
LDLIBS :=

ifeq ($(SANITIZE),1)
CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=undefined
LDFLAGS += -fsanitize=address,undefined
endif

TRACEEVENT_CFLAGS := $(shell $(PKG_CONFIG) --cflags libtraceevent 2>/dev/null)
TRACEEVENT_LIBS := $(shell $(PKG_CONFIG) --libs libtraceevent 2>/dev/null || echo -ltraceevent)
TRACEFS_CFLAGS := $(shell $(PKG_CONFIG) --cflags libtracefs 2>/dev/null)
TRACEFS_LIBS := $(shell $(PKG_CONFIG) --libs libtracefs 2>/dev/null || echo -ltracefs)
FUSE_CFLAGS := $(shell $(PKG_CONFIG) --cflags fuse3 2>/dev/null)
FUSE_LIBS := $(shell $(PKG_CONFIG) --libs fuse3 2>/dev/null || echo -lfuse3)

# --- generic rules ------------------------------------------------------

# Per-object extra flags: set EXTRA_CFLAGS as a target-specific variable.
$(objtree)/%.o: $(srctree)/%.c $(AUTOHEADER)
	@mkdir -p $(@D)
	$(quiet) CC $(patsubst $(objtree)/%,%,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(EXTRA_CFLAGS) -MMD -MP -c -o $@ $<

$(objtree)/%.o: $(srctree)/%.S $(AUTOHEADER)
	@mkdir -p $(@D)
	$(quiet) AS $(patsubst $(objtree)/%,%,$@)
	$(Q)$(CC) $(CPPFLAGS) $(EXTRA_CFLAGS) -MMD -MP -c -o $@ $<

# Link a program: $(call link,OBJS,LIBS)
define link
	@mkdir -p $(@D)
	$(quiet) LD $(patsubst $(objtree)/%,%,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $(1) $(2)
endef

# Register a test: $(eval $(call add-test,NAME,COMMAND)).  COMMAND runs
# under bash from the source tree; exit 0 pass, 77 skip, else fail.
define add-test
TEST_NAMES += $(1)
TEST_CMD_$(subst /,_,$(1)) := $(2)
endef

# Register a benchmark: $(eval $(call add-bench,NAME,COMMAND)).  COMMAND
# prints "BENCH <name> <value> <unit>" lines (and whatever context it likes).
define add-bench
BENCH_NAMES += $(1)
BENCH_CMD_$(subst /,_,$(1)) := $(2)
endef

define newline


endef

define archive
	@mkdir -p $(@D)
	$(quiet) AR $(patsubst $(objtree)/%,%,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $(1)
endef

# Components append to these.
PROGS :=		# built by 'all'
TEST_PROGS :=		# built by 'tests'
TEST_NAMES :=		# tests run by 'check', in order; see add-test
BENCH_NAMES :=		# benchmarks run by 'bench'; see add-bench
BENCH_PROGS :=
INSTALL_BIN :=
INSTALL_LIB :=
INSTALL_HDR :=
INSTALL_PC :=		# pkg-config templates (NAME.pc.in)
INSTALL_LIBEXEC :=	# helper programs of hvtrace, in libexec/hvtrace
CHECK_DEPS :=

include $(srctree)/shared/Build.mk
include $(srctree)/common/Build.mk
include $(srctree)/host/Build.mk
include $(srctree)/guest/Build.mk
include $(srctree)/hyp/Build.mk
include $(srctree)/qemu-scripts/Build.mk
include $(srctree)/tests/Build.mk

-include $(shell find $(objtree) -name '*.d' -not -path '$(objtree)/asan/*' 2>/dev/null)

# --- top-level targets --------------------------------------------------

.PHONY: all tests check check-run bench demo install deps clean distclean help

all: $(PROGS)

tests: all $(TEST_PROGS)

# The test list: one "name|command" per line, read by tests/run.sh.
$(objtree)/tests.list: FORCE
	@mkdir -p $(@D)
	$(file >$@,$(foreach n,$(TEST_NAMES),$(n)|$(TEST_CMD_$(subst /,_,$(n)))$(newline)))

# make check: deps, a -Werror build, a sanitizer build of the unit tests,
# then every test in one run of the runner.
.PHONY: check-build
check-build: tests $(CHECK_DEPS)
	@:

check: deps
	$(Q)$(MAKE) --no-print-directory WERROR=1 check-build
ifneq ($(SANITIZE),1)
	$(Q)$(MAKE) --no-print-directory O=$(O)/asan SANITIZE=1 WERROR=1 \
		DEFCONFIG=$(DEFCONFIG) asan-tests
endif
	$(Q)$(MAKE) --no-print-directory check-run

check-run: $(objtree)/tests.list
	$(Q)HVT_OBJTREE=$(objtree) HVT_SRCTREE=$(srctree) \
		$(srctree)/tests/run.sh $(objtree)/tests.list

# make check-repeat TESTS=REGEX [N=20] [LOAD=2]: the chosen tests, N runs
# each, with LOAD busy loops beside them (tests/run.sh, docs/testing.md).
N ?= 20
LOAD ?= 0
check-repeat: deps
	$(if $(TESTS),,$(error check-repeat needs TESTS=REGEX, the tests to repeat (e.g. TESTS='^qemu/kernel-ring$$')))
	$(Q)$(MAKE) --no-print-directory WERROR=1 check-build
	$(Q)$(MAKE) --no-print-directory check-repeat-run

.PHONY: check-repeat check-repeat-run
check-repeat-run: $(objtree)/tests.list
	$(Q)HVT_OBJTREE=$(objtree) HVT_SRCTREE=$(srctree) \
		HVT_TEST_REPEAT=$(N) HVT_TEST_LOAD=$(LOAD) \
		$(srctree)/tests/run.sh $(objtree)/tests.list '$(TESTS)'

$(objtree)/bench.list: FORCE
	@mkdir -p $(@D)
	$(file >$@,$(foreach n,$(BENCH_NAMES),$(n)|$(BENCH_CMD_$(subst /,_,$(n)))$(newline)))

bench: deps
	$(Q)$(MAKE) --no-print-directory bench-build
	$(Q)$(MAKE) --no-print-directory bench-run

.PHONY: bench-build
bench-build: all $(BENCH_PROGS)
	@:

.PHONY: bench-run
bench-run: $(objtree)/bench.list
	$(Q)HVT_OBJTREE=$(objtree) HVT_SRCTREE=$(srctree) \
		$(srctree)/scripts/bench.sh $(objtree)/bench.list

demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)HVT_OBJTREE=$(objtree) HVT_SRCTREE=$(srctree) $(srctree)/scripts/demo.sh

deps:
	$(Q)$(srctree)/scripts/install-deps.sh

# The README's two commands in a fresh Debian 12 root (debootstrap), run
# on a clone of the committed tree; see docs/testing.md.
.PHONY: check-fresh
check-fresh: deps
	$(Q)$(srctree)/scripts/check-fresh.sh $(srctree)

install: all
	$(Q)HVT_OBJTREE=$(objtree) HVT_SRCTREE=$(srctree) DESTDIR="$(DESTDIR)" \
		PREFIX="$(PREFIX)" INSTALL_BIN="$(INSTALL_BIN)" \
		INSTALL_LIB="$(INSTALL_LIB)" INSTALL_HDR="$(INSTALL_HDR)" \
		INSTALL_PC="$(INSTALL_PC)" INSTALL_LIBEXEC="$(INSTALL_LIBEXEC)" \
		$(srctree)/scripts/install.sh

clean:
	$(Q)rm -rf $(filter-out $(objtree)/.config $(objtree)/include,$(wildcard $(objtree)/*))

distclean:
	$(Q)rm -rf $(objtree)

help:
	@sed -n '3,22p' $(srctree)/Makefile | sed 's/^# \{0,1\}//'

.SECONDARY:
FORCE:
.PHONY: FORCE
