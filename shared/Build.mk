# SPDX-License-Identifier: MIT
#
# shared/: what crosses contexts -- the ABI headers, the writer core
# (ring_buffer.c) and the area container around its rings (trace_area.c), and
# the proxy protocol codec (proto*.c) that the guest agent and the host
# daemon both speak.
#
# Every shared/*.c is built three ways:
#   - hosted, into libhvtcore.a, for the host library, guest programs and
#     tests;
#   - freestanding x86_64 and aarch64 objects, which the link check
#     (scripts/check-freestanding.sh) inspects for undefined symbols: none
#     of them may need libc.

# Hosted: every shared/*.c.
CORE_SRCS := $(patsubst $(srctree)/%,%,$(wildcard $(srctree)/shared/*.c))
CORE_OBJS := $(CORE_SRCS:%.c=$(objtree)/%.o)
LIBHVTCORE := $(objtree)/lib/libhvtcore.a

$(LIBHVTCORE): $(CORE_OBJS)
	$(call archive,$^)

# --- freestanding builds ----------------------------------------------
FS_CFLAGS := -std=gnu11 -O2 -g -ffreestanding -nostdlib -fno-builtin -fno-strict-aliasing \
	-fno-stack-protector -fno-tree-loop-distribute-patterns -fno-pic -fno-common -fno-asynchronous-unwind-tables \
	-Wall -Wextra -Wundef -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wno-unused-parameter -Wno-sign-compare -Werror -I$(srctree)/shared/include
FS_CFLAGS_x86_64 := -m64 -mno-red-zone -mgeneral-regs-only
FS_CFLAGS_aarch64 := -mgeneral-regs-only -mno-outline-atomics -mstrict-align
FS_CC_x86_64 := gcc
FS_CC_aarch64 := $(or $(CONFIG_HVT_HYP_CROSS_COMPILE:"%"=%),aarch64-linux-gnu-)gcc
FS_LD_x86_64 := ld
FS_LD_aarch64 := $(or $(CONFIG_HVT_HYP_CROSS_COMPILE:"%"=%),aarch64-linux-gnu-)ld
FS_NM_x86_64 := nm
FS_NM_aarch64 := $(or $(CONFIG_HVT_HYP_CROSS_COMPILE:"%"=%),aarch64-linux-gnu-)nm

FS_NAMES := $(notdir $(CORE_SRCS:%.c=%))
FS_HDRS := $(wildcard $(srctree)/shared/include/hvtrace/*.h $(srctree)/shared/*.h)

# $(1): arch.  Every shared/*.c, freestanding; then two relocatable
# objects per arch: hvtcore.o, the writer core an EL2 image links, and
# hvtshared.o, all of shared/, which the link check inspects.  hvtcore.o is
# the writer core, its armed wakeups and its area container (ring_buffer.c,
# ring_wake.c, trace_area.c).
define fs-arch
$(FS_NAMES:%=$(objtree)/freestanding/$(1)/%.o): $(objtree)/freestanding/$(1)/%.o: $(srctree)/shared/%.c $(FS_HDRS)
	@mkdir -p $$(@D)
	$$(quiet) CC-FS $$(patsubst $(objtree)/%,%,$$@)
	$$(Q)$$(FS_CC_$(1)) $$(FS_CFLAGS) $$(FS_CFLAGS_$(1)) -c -o $$@ $$<

$(objtree)/freestanding/$(1)/hvtcore.o: $(objtree)/freestanding/$(1)/ring_buffer.o $(objtree)/freestanding/$(1)/ring_wake.o $(objtree)/freestanding/$(1)/trace_area.o
	$$(quiet) LD-R $$(patsubst $(objtree)/%,%,$$@)
	$$(Q)$$(FS_LD_$(1)) -r -o $$@ $$^

$(objtree)/freestanding/$(1)/hvtshared.o: $(FS_NAMES:%=$(objtree)/freestanding/$(1)/%.o)
	$$(quiet) LD-R $$(patsubst $(objtree)/%,%,$$@)
	$$(Q)$$(FS_LD_$(1)) -r -o $$@ $$^
endef

FS_ARCHES := x86_64 aarch64
$(foreach a,$(FS_ARCHES),$(eval $(call fs-arch,$(a))))
FS_OBJS := $(foreach a,$(FS_ARCHES),$(objtree)/freestanding/$(a)/hvtcore.o $(objtree)/freestanding/$(a)/hvtshared.o)
CHECK_DEPS += $(FS_OBJS)
$(foreach a,$(FS_ARCHES),$(eval $(call add-test,freestanding-link-$(a),$(srctree)/scripts/check-freestanding.sh $(FS_NM_$(a)) $(objtree)/freestanding/$(a)/hvtshared.o $(srctree)/shared/freestanding-allow.txt)))

.PHONY: freestanding
freestanding: $(FS_OBJS)
