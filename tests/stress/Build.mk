# SPDX-License-Identifier: MIT
#
# tests/stress/: oversubscribed writer stress tests for libhvtrace-guest
# (many threads and processes per CPU, random SIGKILLs, a concurrent
# reader through the host library), linked like the unit tests.  A static
# copy of the guest API unit test checks the library (glibc's and its own
# rseq registration) in a static binary, as the guest initramfs runs it.

ifeq ($(CONFIG_HVT_GUEST),y)
ifneq ($(SANITIZE),1)

STRESS_NAMES := $(notdir $(basename $(wildcard $(srctree)/tests/stress/guest_stress_*.c))) \
	wake_stress
STRESS_PROGS := $(addprefix $(objtree)/tests/stress/,$(STRESS_NAMES))
STRESS_LIBS := $(TEST_LIBS)

$(objtree)/tests/stress/%.o: EXTRA_CFLAGS += $(TEST_CFLAGS)

$(STRESS_PROGS): $(objtree)/tests/stress/%: $(objtree)/tests/stress/%.o $(STRESS_LIBS)
	$(call link,$<,$(STRESS_LIBS) $(TRACEEVENT_LIBS) $(TRACEFS_LIBS) $(FUSE_LIBS) -lm)

# The API unit test, linked statically.
$(objtree)/tests/stress/guest_api_static: $(objtree)/tests/unit/guest_api.o $(LIBHVTGUEST) $(LIBHVTCORE)
	$(call link,-static $<,$(LIBHVTGUEST) $(LIBHVTCORE))

TEST_PROGS += $(STRESS_PROGS) $(objtree)/tests/stress/guest_api_static
$(eval $(call add-test,stress/guest_api_static,$(objtree)/tests/stress/guest_api_static))
$(foreach n,$(STRESS_NAMES),$(eval $(call add-test,stress/$(n),$(objtree)/tests/stress/$(n))))

# The aarch64 executor, cross-built and run under qemu-aarch64 (user-mode
# emulation has no rseq, so only the executor's checks and copies are
# exercised, through tests/unit/guest_exec_functional.c).
GUEST_A64 := $(objtree)/tests/stress/guest_exec_functional.aarch64
ifneq ($(shell command -v $(FS_CC_aarch64) 2>/dev/null),)
$(GUEST_A64): $(srctree)/tests/unit/guest_exec_functional.c $(GUEST_LIB_SRCS) $(addprefix $(srctree)/,$(UTIL_SRCS)) \
		$(srctree)/shared/ring_buffer.c $(srctree)/shared/ring_wake.c \
		$(srctree)/shared/trace_area.c $(AUTOHEADER)
	@mkdir -p $(@D)
	$(quiet) CC-A64 $(patsubst $(objtree)/%,%,$@)
	$(Q)$(FS_CC_aarch64) $(CPPFLAGS) $(CFLAGS) $(TEST_CFLAGS) -static -o $@ \
		$(filter %.c %.S,$^)
TEST_PROGS += $(GUEST_A64)
endif
$(eval $(call add-test,stress/guest_exec_aarch64,$(srctree)/tests/stress/run-aarch64.sh $(GUEST_A64)))

endif
endif
