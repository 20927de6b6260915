# SPDX-License-Identifier: MIT
#
# hyp/: the EL2 rig.
#
#   hyp/el2/       the bare-metal aarch64 image (boots at EL2 on QEMU virt),
#                  linked with the unchanged freestanding writer core
#   hyp/include/   the rig's memory map and hypercall ABI (image + tools)
#   hyp/tools/     host-side programs, built natively: hvt-hyp (control page,
#                  reader, checks, clock) and the native benchmark twin
#   hyp/tests/     end-to-end tests (QEMU TCG) and the benchmark script
#
# Outputs: $(O)/hyp/hvtrace-el2.elf, $(O)/hyp/tools/hvt-hyp.

ifeq ($(CONFIG_HVT_HYP),y)

HYP_CROSS := $(or $(CONFIG_HVT_HYP_CROSS_COMPILE:"%"=%),aarch64-linux-gnu-)
HYP_CC := $(HYP_CROSS)gcc
HYP_ELF := $(objtree)/hyp/hvtrace-el2.elf
HYP_LDS := $(objtree)/hyp/hyp.lds

# The writer core is the freestanding aarch64 object that shared/Build.mk
# builds and link-checks (FS_CFLAGS + FS_CFLAGS_aarch64), linked unchanged.
HYP_CORE := $(objtree)/freestanding/aarch64/hvtcore.o

# The image's own code: the same freestanding flags as the core.
HYP_CFLAGS := $(FS_CFLAGS) $(FS_CFLAGS_aarch64) -I$(srctree)/hyp/include \
	-I$(objtree)/include -fno-tree-loop-distribute-patterns
HYP_OBJS := $(patsubst $(srctree)/%.S,$(objtree)/%.o,$(wildcard $(srctree)/hyp/el2/*.S)) \
	$(patsubst $(srctree)/%.c,$(objtree)/%.o,$(wildcard $(srctree)/hyp/el2/*.c))

$(objtree)/hyp/el2/%.o: $(srctree)/hyp/el2/%.c $(AUTOHEADER)
	@mkdir -p $(@D)
	$(quiet) CC-EL2 $(patsubst $(objtree)/%,%,$@)
	$(Q)$(HYP_CC) $(HYP_CFLAGS) -MMD -MP -c -o $@ $<

$(objtree)/hyp/el2/%.o: $(srctree)/hyp/el2/%.S $(AUTOHEADER)
	@mkdir -p $(@D)
	$(quiet) AS-EL2 $(patsubst $(objtree)/%,%,$@)
	$(Q)$(HYP_CC) $(HYP_CFLAGS) -D__ASSEMBLY__ -MMD -MP -c -o $@ $<

$(HYP_LDS): $(srctree)/hyp/hyp.lds.S $(srctree)/hyp/include/hvt_hyp/layout.h
	@mkdir -p $(@D)
	$(quiet) LDS $(patsubst $(objtree)/%,%,$@)
	$(Q)$(HYP_CC) -E -P -x c -D__ASSEMBLY__ -I$(srctree)/hyp/include -o $@ $<

$(HYP_ELF): $(HYP_OBJS) $(HYP_CORE) $(HYP_LDS)
	$(quiet) LD-EL2 $(patsubst $(objtree)/%,%,$@)
	$(Q)$(HYP_CC) -nostdlib -static -Wl,--build-id=none -Wl,-T,$(HYP_LDS) \
		-o $@ $(HYP_OBJS) $(HYP_CORE)

# --- host-side tools (native) ------------------------------------------

# hvt-hyp reads through libhvtrace's public API (so it needs the host
# library: CONFIG_HVT_HOST) and decodes with libtraceevent.
ifeq ($(CONFIG_HVT_HOST),y)
HYP_TOOL := $(objtree)/hyp/tools/hvt-hyp
HYP_TOOL_SRCS := $(filter-out %/bench_native.c %/bench_native_loop.c,$(wildcard $(srctree)/hyp/tools/*.c))
HYP_TOOL_OBJS := $(patsubst $(srctree)/%.c,$(objtree)/%.o,$(HYP_TOOL_SRCS))

$(HYP_TOOL_OBJS): EXTRA_CFLAGS += -I$(srctree)/hyp/include \
	-I$(srctree)/host/include $(TRACEEVENT_CFLAGS)

$(HYP_TOOL): $(HYP_TOOL_OBJS) $(LIBHVTRACE) $(LIBHVTCORE)
	$(call link,$(HYP_TOOL_OBJS),$(LIBHVTRACE) $(LIBHVTCORE) $(HOST_EXT_LIBS))
PROGS += $(HYP_TOOL)
endif

# The benchmark's native twin: the same loop and emit code, and the same
# freestanding core object (x86_64 flavour), timed natively.
HYP_BENCH_NATIVE := $(objtree)/hyp/tools/hvt-hyp-bench-native
HYP_BENCH_LOOP := $(objtree)/hyp/tools/bench_native_loop.o
$(HYP_BENCH_LOOP): $(srctree)/hyp/tools/bench_native_loop.c $(AUTOHEADER)
	@mkdir -p $(@D)
	$(quiet) CC-FS $(patsubst $(objtree)/%,%,$@)
	$(Q)$(FS_CC_x86_64) $(FS_CFLAGS) $(FS_CFLAGS_x86_64) \
		-I$(srctree)/hyp/include -I$(objtree)/include -MMD -MP -c -o $@ $<
$(objtree)/hyp/tools/bench_native.o: EXTRA_CFLAGS += -I$(srctree)/hyp/include
$(HYP_BENCH_NATIVE): $(objtree)/hyp/tools/bench_native.o $(HYP_BENCH_LOOP) $(objtree)/freestanding/x86_64/hvtcore.o
	@mkdir -p $(@D)
	$(quiet) LD $(patsubst $(objtree)/%,%,$@)
	$(Q)$(CC) $(LDFLAGS) -no-pie -o $@ $^

PROGS += $(HYP_ELF)
BENCH_PROGS += $(HYP_BENCH_NATIVE)

.PHONY: hyp
hyp: $(HYP_ELF) $(HYP_TOOL) $(HYP_BENCH_NATIVE)

# --- tests and benchmark -------------------------------------------------
#
# End-to-end tests boot the image under QEMU TCG (each takes a few seconds;
# a test exits 77 when qemu-system-aarch64 is missing).  They need the
# host tool, so the host library too.
HYP_T := $(srctree)/hyp/tests
ifeq ($(CONFIG_HVT_TEST_QEMU)$(CONFIG_HVT_HOST),yy)
$(eval $(call add-test,hyp/counts,$(HYP_T)/counts.sh $(objtree) $(srctree) 2 20000))
# All the CPUs the configured image brings up (HVT_HYP_NR_CPUS, >= 2).
ifneq ($(filter-out 1 2,$(CONFIG_HVT_HYP_NR_CPUS)),)
$(eval $(call add-test,hyp/counts-$(CONFIG_HVT_HYP_NR_CPUS)cpu,$(HYP_T)/counts.sh $(objtree) $(srctree) $(CONFIG_HVT_HYP_NR_CPUS) 5000))
endif
$(eval $(call add-test,hyp/overwrite,$(HYP_T)/overwrite.sh $(objtree) $(srctree)))
$(eval $(call add-test,hyp/postmortem-poweroff,$(HYP_T)/postmortem.sh $(objtree) $(srctree) poweroff))
$(eval $(call add-test,hyp/postmortem-sigkill,$(HYP_T)/postmortem.sh $(objtree) $(srctree) sigkill))
$(eval $(call add-test,hyp/enable,$(HYP_T)/enable.sh $(objtree) $(srctree)))
$(eval $(call add-test,hyp/garbage,$(HYP_T)/garbage.sh $(objtree) $(srctree) 3))
$(eval $(call add-test,hyp/causality,$(HYP_T)/causality.sh $(objtree) $(srctree) 1000))
$(eval $(call add-test,hyp/bootargs,$(HYP_T)/bootargs.sh $(objtree) $(srctree)))
$(eval $(call add-test,hyp/run-hyp,$(HYP_T)/run-hyp.sh $(objtree) $(srctree) hvt-hyp))
$(eval $(call add-test,hyp/run-hyp-cli,$(HYP_T)/run-hyp.sh $(objtree) $(srctree) hvtrace))
endif
ifeq ($(CONFIG_HVT_HOST),y)
$(eval $(call add-bench,hyp/writer,$(HYP_T)/bench.sh $(objtree) $(srctree)))
endif

endif
