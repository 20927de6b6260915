# SPDX-License-Identifier: MIT
#
# tests/tracedat/: hvtrace record and hvtrace report checked against the
# real trace-cmd and KernelShark (docs/tracedat.md says what each test
# checks).  tdat_writer is the scripted area writer the tests drive.

ifneq ($(LIBHVTRACE),)

TDAT_DIR := $(objtree)/tests/tracedat
TDAT_WRITER := $(TDAT_DIR)/tdat_writer

$(TDAT_DIR)/%.o: EXTRA_CFLAGS += $(TEST_CFLAGS)

$(TDAT_WRITER): $(TDAT_DIR)/tdat_writer.o $(LIBHVTCORE)
	$(call link,$<,$(LIBHVTCORE) -pthread)

TEST_PROGS += $(TDAT_WRITER)

# x_close: closes KernelShark's window the way a window manager does, so
# it saves its session (ks_check.sh, run by t_kernelshark.sh and
# qemu/record-guest-kernel); needs libX11 (libx11-dev).
X11_LIBS := $(shell pkg-config --libs x11 2>/dev/null)
ifneq ($(X11_LIBS),)
$(TDAT_DIR)/x_close: $(TDAT_DIR)/x_close.o
	$(call link,$<,$(X11_LIBS))
TEST_PROGS += $(TDAT_DIR)/x_close
endif

# Every test gets the build's paths through the environment.
TDAT_ENV := HVT_OBJTREE=$(objtree) HVT_SRCTREE=$(srctree)
TDAT_TESTS := $(sort $(notdir $(basename $(wildcard $(srctree)/tests/tracedat/t_*.sh))))
$(foreach t,$(TDAT_TESTS),$(eval $(call add-test,tracedat/$(t:t_%=%),$(TDAT_ENV) $(srctree)/tests/tracedat/$(t).sh)))

endif
