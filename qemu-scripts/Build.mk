# SPDX-License-Identifier: MIT
#
# qemu-scripts/: the QEMU x86_64 guest rig.
#
#   fetch-kernel.sh   Debian 6.12 kernel into a cache (never installed)
#   mkinitramfs.sh    busybox initramfs with /init (guest-init.sh) + files
#   hvtrace-guest     the launcher: start/stop/list/status/wait/cleanup
#   port-send         send a byte on a guest's --port until its console answers
#   probe/            hvt-probe (static, runs in the guest) and
#                     hvt-probe-host (checks the area, drives the protocol)
#   tests/            end-to-end tests of the rig's plumbing
#
# make qemu-probe      builds the two probe programs
# make guest-image     builds $(objtree)/qemu-scripts/guest.cpio.gz with
#                      busybox, hvtrace-agent, the workloads and hvt-probe

QEMU_PROBE := $(objtree)/qemu-scripts/hvt-probe
QEMU_PROBE_HOST := $(objtree)/qemu-scripts/hvt-probe-host
QEMU_PROBE_HDR := $(srctree)/qemu-scripts/probe/hvt-probe.h

# Own flags, not the sanitizer ones: the guest probe links statically.
QEMU_PROBE_CFLAGS := -std=gnu11 -O2 -g -D_GNU_SOURCE $(WARNINGS) \
	-I$(srctree)/qemu-scripts/probe

$(QEMU_PROBE): $(srctree)/qemu-scripts/probe/hvt-probe.c $(QEMU_PROBE_HDR)
	@mkdir -p $(@D)
	$(quiet) CC-LD $(patsubst $(objtree)/%,%,$@)
	$(Q)$(CC) $(QEMU_PROBE_CFLAGS) -static -o $@ $<

$(QEMU_PROBE_HOST): $(srctree)/qemu-scripts/probe/hvt-probe-host.c $(QEMU_PROBE_HDR)
	@mkdir -p $(@D)
	$(quiet) CC-LD $(patsubst $(objtree)/%,%,$@)
	$(Q)$(CC) $(QEMU_PROBE_CFLAGS) -o $@ $<

.PHONY: qemu-probe guest-image
qemu-probe: $(QEMU_PROBE) $(QEMU_PROBE_HOST)

# Everything the guest side builds goes into the default image.
GUEST_IMAGE := $(objtree)/qemu-scripts/guest.cpio.gz
GUEST_IMAGE_FILES := $(QEMU_PROBE) $(AGENT_BIN) $(WORKLOAD_BINS)
$(GUEST_IMAGE): $(GUEST_IMAGE_FILES) $(srctree)/qemu-scripts/mkinitramfs.sh \
		$(srctree)/qemu-scripts/guest-init.sh
	$(quiet) CPIO $(patsubst $(objtree)/%,%,$@)
	$(Q)$(srctree)/qemu-scripts/mkinitramfs.sh -o $@ -- $(GUEST_IMAGE_FILES)
guest-image: $(GUEST_IMAGE)

# 'hvtrace guest' and 'hvtrace stream NAME --guest-kernel' run the launcher
# of the tree they were built from when they find none next to themselves
# (or through $HVT_GUEST_LAUNCHER, $PATH).
# "hvtrace guest" runs the launcher from PREFIX/libexec/hvtrace once
# installed, with the scripts it calls beside it; the guest's programs are
# the installed hvtrace-agent and hvtrace-ivshmem (host/cli/launcher.c).
ifeq ($(CONFIG_HVT_HOST),y)
INSTALL_LIBEXEC += $(addprefix $(srctree)/qemu-scripts/,hvtrace-guest \
	mkinitramfs.sh fetch-kernel.sh guest-init.sh)
endif

$(objtree)/host/cli/launcher.o: EXTRA_CFLAGS += \
	-DHVT_GUEST_LAUNCHER_PATH=\"$(srctree)/qemu-scripts/hvtrace-guest\"

ifeq ($(CONFIG_HVT_TEST_QEMU),y)
TEST_PROGS += $(QEMU_PROBE) $(QEMU_PROBE_HOST)

# Each test boots real guests under TCG; see qemu-scripts/tests/lib.sh.
QEMU_TEST_ENV := HVT_OBJTREE=$(objtree)
QEMU_TESTS := boot-probe two-guests teardown-stop teardown-sigint \
	teardown-kill9 keep-area launcher-refusals kvm-probe kernel-ring \
	kernel-ring-lost boot-retry kernel-ring-vmpid kernel-ring-scribble \
	kernel-ring-exact kernel-ring-clock kformats-log kernel-copy-exact \
	kformats-golden kernel-ring-attach \
	record-guest-kernel kernel-ring-host stream-guest-gone guest-lifecycle \
	ksyms-golden libvirt-domain record-guest-pair ksyms-module \
	kernel-ring-three
$(foreach t,$(QEMU_TESTS),$(eval $(call add-test,qemu/$(t),$(QEMU_TEST_ENV) $(srctree)/qemu-scripts/tests/$(t).sh)))

BENCH_PROGS += $(QEMU_PROBE) $(QEMU_PROBE_HOST)
$(eval $(call add-bench,qemu/boot,$(QEMU_TEST_ENV) $(srctree)/qemu-scripts/tests/bench-boot.sh))
$(eval $(call add-bench,qemu/kernel-ring,$(QEMU_TEST_ENV) $(srctree)/qemu-scripts/tests/bench-kring.sh))
$(eval $(call add-bench,qemu/kernel-ring-drain,$(QEMU_TEST_ENV) $(srctree)/qemu-scripts/tests/bench-kring-drain.sh))
endif
