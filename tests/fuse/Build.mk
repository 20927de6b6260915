# SPDX-License-Identifier: MIT
#
# tests/fuse/: the tracefs-style view (hvtrace mount) end to end, with
# plain shell tools and with libtracefs (tracefs_read, which links only
# Debian's libtracefs and libtraceevent), against a private hvtraced,
# loopback writers and, with CONFIG_HVT_HYP, the EL2 hypervisor rig.
# The area-only remotes of hvtraced (stream, stat, events, record by
# name) are tested here too.

ifeq ($(CONFIG_HVT_HOST)$(CONFIG_HVT_HOST_FUSE),yy)

FUSE_READ := $(objtree)/tests/fuse/tracefs_read
$(objtree)/tests/fuse/tracefs_read.o: EXTRA_CFLAGS += $(TRACEFS_CFLAGS) \
	$(TRACEEVENT_CFLAGS)
$(FUSE_READ): $(objtree)/tests/fuse/tracefs_read.o
	$(call link,$<,$(TRACEFS_LIBS) $(TRACEEVENT_LIBS))
TEST_PROGS += $(FUSE_READ)

FUSE_TEST_ENV := HVTRACE=$(HVTRACE_BIN) HVTRACED=$(HVTRACED_BIN) \
	TRACEFS_READ=$(FUSE_READ) HVT_OBJTREE=$(objtree)
FUSE_TESTS := $(patsubst $(srctree)/tests/fuse/%.sh,%,\
	$(filter-out $(srctree)/tests/fuse/lib.sh,\
	$(wildcard $(srctree)/tests/fuse/*.sh)))
# The hypervisor tests need the EL2 image; the guest test, the QEMU rig
# and the guest side (agent, workloads).
ifneq ($(CONFIG_HVT_HYP),y)
FUSE_TESTS := $(filter-out hyp_%,$(FUSE_TESTS))
endif
ifneq ($(CONFIG_HVT_TEST_QEMU)$(CONFIG_HVT_GUEST),yy)
FUSE_TESTS := $(filter-out guest guest_kernel,$(FUSE_TESTS))
endif
ifneq ($(CONFIG_HVT_GUEST),y)
FUSE_TESTS := $(filter-out userevents,$(FUSE_TESTS))
endif
$(foreach t,$(FUSE_TESTS),$(eval $(call add-test,fuse/$(t),$(FUSE_TEST_ENV) \
	bash $(srctree)/tests/fuse/$(t).sh)))

endif
