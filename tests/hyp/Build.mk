# SPDX-License-Identifier: MIT
#
# tests/hyp/: the EL2 rig's end-to-end tests (QEMU TCG), their driver and
# the writer benchmark.
#
#   hvt-hyp-test          the tests' driver (check, enable-test,
#                         garbage-test, causality): reads the rig's area
#                         through libhvtrace and checks what the payload
#                         must have written
#   hvt-hyp-bench-native  the EL2 writer benchmark's native twin
#   *.sh                  the tests and the benchmark script
#
# Each test boots the image (hyp/) and exits 77 when qemu-system-aarch64
# is missing.  What a user runs is 'hvtrace hyp' and 'hvtrace stream'.

ifeq ($(CONFIG_HVT_HYP),y)
HYP_T := $(srctree)/tests/hyp

# The driver reads through libhvtrace's public API (so it needs the host
# library: CONFIG_HVT_HOST).
ifeq ($(CONFIG_HVT_HOST),y)
HYP_TEST_TOOL := $(objtree)/tests/hyp/hvt-hyp-test
HYP_TEST_SRCS := $(filter-out %/bench_native.c %/bench_native_loop.c,$(wildcard $(HYP_T)/*.c))
HYP_TEST_OBJS := $(patsubst $(srctree)/%.c,$(objtree)/%.o,$(HYP_TEST_SRCS))

$(HYP_TEST_OBJS): EXTRA_CFLAGS += -I$(srctree)/hyp/include \
	-I$(srctree)/host/include $(TRACEEVENT_CFLAGS)

$(HYP_TEST_TOOL): $(HYP_TEST_OBJS) $(LIBHVTRACE) $(LIBHVTCORE)
	$(call link,$(HYP_TEST_OBJS),$(LIBHVTRACE) $(LIBHVTCORE) $(HOST_EXT_LIBS))
TEST_PROGS += $(HYP_TEST_TOOL)
endif

# The benchmark's native twin: the same loop and emit code, and the same
# freestanding core object (x86_64 flavour), timed natively.
HYP_BENCH_NATIVE := $(objtree)/tests/hyp/hvt-hyp-bench-native
HYP_BENCH_LOOP := $(objtree)/tests/hyp/bench_native_loop.o
$(HYP_BENCH_LOOP): $(HYP_T)/bench_native_loop.c $(AUTOHEADER)
	@mkdir -p $(@D)
	$(quiet) CC-FS $(patsubst $(objtree)/%,%,$@)
	$(Q)$(FS_CC_x86_64) $(FS_CFLAGS) $(FS_CFLAGS_x86_64) \
		-I$(srctree)/hyp/include -I$(objtree)/include -MMD -MP -c -o $@ $<
$(objtree)/tests/hyp/bench_native.o: EXTRA_CFLAGS += -I$(srctree)/hyp/include
$(HYP_BENCH_NATIVE): $(objtree)/tests/hyp/bench_native.o $(HYP_BENCH_LOOP) $(objtree)/freestanding/x86_64/hvtcore.o
	@mkdir -p $(@D)
	$(quiet) LD $(patsubst $(objtree)/%,%,$@)
	$(Q)$(CC) $(LDFLAGS) -no-pie -o $@ $^
BENCH_PROGS += $(HYP_BENCH_NATIVE)

# The end-to-end tests need the driver and the CLI, so the host library.
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
$(eval $(call add-test,hyp/run-hyp,$(HYP_T)/run-hyp.sh $(objtree) $(srctree) all))
$(eval $(call add-test,hyp/run-hyp-events,$(HYP_T)/run-hyp.sh $(objtree) $(srctree) events))
endif
ifeq ($(CONFIG_HVT_HOST),y)
$(eval $(call add-bench,hyp/writer,$(HYP_T)/bench.sh $(objtree) $(srctree)))
endif

endif
