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

# Every test gets the build's paths through the environment.
TDAT_ENV := HVT_OBJTREE=$(objtree) HVT_SRCTREE=$(srctree)
TDAT_TESTS := $(sort $(notdir $(basename $(wildcard $(srctree)/tests/tracedat/t_*.sh))))
$(foreach t,$(TDAT_TESTS),$(eval $(call add-test,tracedat/$(t:t_%=%),$(TDAT_ENV) $(srctree)/tests/tracedat/$(t).sh)))

endif
