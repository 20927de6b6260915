# SPDX-License-Identifier: MIT
#
# tests/: one small program per behaviour (exit 0 pass, 1 fail, 77 skip),
# run by tests/run.sh.  Unit tests are also rebuilt and re-run under
# ASan+UBSan by make check.

TEST_CPPFLAGS := -I$(srctree)/tests/include

# Unit tests: tests/unit/NAME.c -> $(objtree)/tests/unit/NAME
UNIT_SRCS := $(wildcard $(srctree)/tests/unit/*.c)
UNIT_NAMES := $(notdir $(UNIT_SRCS:.c=))
UNIT_PROGS := $(addprefix $(objtree)/tests/unit/,$(UNIT_NAMES))

# Every test links the libraries the configuration builds; archives only
# pull in what a test uses.
TEST_LIBS := $(if $(LIBHVTRACE),$(LIBHVTRACE)) $(if $(GUEST_LIB_SRCS),$(LIBHVTGUEST)) $(LIBHVTCORE)
TEST_CFLAGS := $(TEST_CPPFLAGS) -I$(srctree)/host/include -I$(srctree)/host/lib \
	-I$(srctree)/host/lib/internal -I$(srctree)/guest/include -I$(srctree)/guest/lib \
	$(TRACEEVENT_CFLAGS) $(TRACEFS_CFLAGS)

$(objtree)/tests/unit/%.o: EXTRA_CFLAGS += $(TEST_CFLAGS)

$(objtree)/tests/unit/%: $(objtree)/tests/unit/%.o $(TEST_LIBS)
	$(call link,$<,$(TEST_LIBS) $(TRACEEVENT_LIBS) $(TRACEFS_LIBS) $(FUSE_LIBS) -lm)

TEST_PROGS += $(UNIT_PROGS)
$(foreach n,$(UNIT_NAMES),$(eval $(call add-test,unit/$(n),$(objtree)/tests/unit/$(n))))

# The sanitizer pass re-runs the unit tests from $(O)/asan.
ifneq ($(SANITIZE),1)
ASAN_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
$(foreach n,$(UNIT_NAMES),$(eval $(call add-test,asan/unit/$(n),$(ASAN_ENV) $(objtree)/asan/tests/unit/$(n))))
endif

.PHONY: asan-tests
asan-tests: $(UNIT_PROGS)
	@:

-include $(wildcard $(srctree)/tests/*/Build.mk)
