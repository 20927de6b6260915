# SPDX-License-Identifier: MIT
#
# tests/foundation/: process-level tests of the writer core and the host
# reader (stress across processes), and the fuzz seed generator.  Unit
# tests of the same foundation live in tests/unit/ (golden_*, hostile_*,
# postmortem_*); docs/testing.md describes them all.

ifneq ($(LIBHVTRACE),)

FND_LIBS := $(LIBHVTRACE) $(LIBHVTCORE)

$(objtree)/tests/foundation/%.o: EXTRA_CFLAGS += $(TEST_CFLAGS)

$(objtree)/tests/foundation/stress: $(objtree)/tests/foundation/stress.o $(FND_LIBS)
	$(call link,$<,$(FND_LIBS) $(TRACEEVENT_LIBS) -lm)

# Writes the seed areas of the area_parse fuzz target.
$(objtree)/fuzz-seeds/area_seedgen.o: EXTRA_CFLAGS += $(TEST_CFLAGS)
$(objtree)/fuzz-seeds/area_seedgen.o: $(srctree)/tests/fuzz/area_seedgen.c $(AUTOHEADER)
	@mkdir -p $(@D)
	$(quiet) CC $(patsubst $(objtree)/%,%,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(EXTRA_CFLAGS) -MMD -MP -c -o $@ $<
$(objtree)/tests/fuzz/area_seedgen: $(objtree)/fuzz-seeds/area_seedgen.o $(FND_LIBS)
	$(call link,$<,$(FND_LIBS) -lm)

TEST_PROGS += $(objtree)/tests/foundation/stress $(objtree)/tests/fuzz/area_seedgen

FND_STRESS := $(objtree)/tests/foundation/stress
$(eval $(call add-test,foundation/stress-consume-paced,$(FND_STRESS) consume-paced))
$(eval $(call add-test,foundation/stress-consume-lossy,$(FND_STRESS) consume-lossy))
$(eval $(call add-test,foundation/stress-consume-preempt,$(FND_STRESS) consume-preempt))
$(eval $(call add-test,foundation/stress-overwrite,$(FND_STRESS) overwrite))

endif

# The component layering (includes, the core archive's symbols, the maps).
ifeq ($(CONFIG_HVT_HOST),y)
$(eval $(call add-test,foundation/layering,bash $(srctree)/tests/foundation/layering.sh $(objtree)))
endif
