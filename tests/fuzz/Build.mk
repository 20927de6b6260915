# SPDX-License-Identifier: MIT
#
# libFuzzer targets (clang).  A target is tests/fuzz/NAME_fuzz.c plus
# tests/fuzz/NAME.srcs listing, one per line, the project sources it
# exercises (relative to the source tree); those are rebuilt with coverage
# instrumentation.  Its seed corpus lives in tests/fuzz/corpus/NAME/.
# make check runs each target for FUZZ_SECONDS from that corpus (new inputs
# go to a scratch directory, never into the repository).  make fuzz-run runs
# every target, one after another, for FUZZ_RUN_SECONDS each (default 300),
# and fails on the first finding's reproducer path it prints.

FUZZ_SECONDS ?= 10
FUZZ_TARGETS := $(patsubst $(srctree)/tests/fuzz/%_fuzz.c,%,$(wildcard $(srctree)/tests/fuzz/*_fuzz.c))
FUZZ_CFLAGS := -std=gnu11 -g -O1 -fno-omit-frame-pointer -D_GNU_SOURCE \
	-fsanitize=fuzzer-no-link,address,undefined \
	-I$(srctree)/shared/include -I$(objtree)/include -I$(srctree)/host/include \
	-I$(srctree)/host/lib -I$(srctree)/host/lib/internal -I$(srctree)/host/proto \
	-I$(srctree)/guest/include -I$(srctree)/guest/lib \
	-I$(srctree)/tests/include -DHVT_VERSION=\"$(HVT_VERSION)\" \
	$(TRACEEVENT_CFLAGS)

# Objects for fuzzing: $(objtree)/fuzz/<path>.o
$(objtree)/fuzz/%.o: $(srctree)/%.c $(AUTOHEADER)
	@mkdir -p $(@D)
	$(quiet) CC-FUZZ $*.c
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -MMD -MP -c -o $@ $<

define fuzz-target
FUZZ_SRCS_$(1) := $$(shell grep -v '^\#' $$(srctree)/tests/fuzz/$(1).srcs 2>/dev/null)
$$(objtree)/tests/fuzz/$(1): $$(objtree)/fuzz/tests/fuzz/$(1)_fuzz.o $$(patsubst %.c,$$(objtree)/fuzz/%.o,$$(FUZZ_SRCS_$(1))) $$(srctree)/tests/fuzz/$(1).srcs
	@mkdir -p $$(@D)
	$$(quiet) LD-FUZZ $(1)
	$$(Q)$$(CLANG) -fsanitize=fuzzer,address,undefined -o $$@ $$(filter %.o,$$^) $$(TRACEEVENT_LIBS) -lm -pthread
FUZZ_PROGS += $$(objtree)/tests/fuzz/$(1)
$$(eval $$(call add-test,fuzz/$(1),$$(srctree)/scripts/run-fuzz.sh $$(objtree)/tests/fuzz/$(1) $$(srctree)/tests/fuzz/corpus/$(1) $$(FUZZ_SECONDS)))
endef

ifneq ($(SANITIZE),1)
$(foreach t,$(FUZZ_TARGETS),$(eval $(call fuzz-target,$(t))))
CHECK_DEPS += $(FUZZ_PROGS)
endif

.PHONY: fuzz fuzz-run
fuzz: $(FUZZ_PROGS)

FUZZ_RUN_SECONDS ?= 300
fuzz-run: $(FUZZ_PROGS)
	$(Q)$(srctree)/scripts/run-fuzz.sh --all $(objtree)/tests/fuzz \
		$(srctree)/tests/fuzz/corpus $(FUZZ_RUN_SECONDS) $(FUZZ_TARGETS)
