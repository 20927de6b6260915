# SPDX-License-Identifier: MIT
#
# shared/: the cross-context ABI headers and the freestanding writer core.
#
# The core is built three ways:
#   - hosted, into libhvtcore.a, for the host library, guest library and tests;
#   - freestanding x86_64 and aarch64 objects, which the link check
#     (scripts/check-freestanding.sh) inspects for undefined symbols.

# Hosted: every shared/*.c (the freestanding check covers ring_buffer.c).
CORE_SRCS := $(patsubst $(srctree)/%,%,$(wildcard $(srctree)/shared/*.c))
CORE_OBJS := $(CORE_SRCS:%.c=$(objtree)/%.o)
LIBHVTCORE := $(objtree)/lib/libhvtcore.a

$(LIBHVTCORE): $(CORE_OBJS)
	$(call archive,$^)

# --- freestanding builds ----------------------------------------------
FS_CFLAGS := -std=gnu11 -O2 -g -ffreestanding -nostdlib -fno-builtin -fno-strict-aliasing \
	-fno-stack-protector -fno-pic -fno-common -fno-asynchronous-unwind-tables \
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

$(objtree)/freestanding/%/ring_buffer.o: $(srctree)/shared/ring_buffer.c $(wildcard $(srctree)/shared/include/hvtrace/*.h)
	@mkdir -p $(@D)
	$(quiet) CC-FS $(patsubst $(objtree)/%,%,$@)
	$(Q)$(FS_CC_$*) $(FS_CFLAGS) $(FS_CFLAGS_$*) -c -o $@ $<

# One relocatable object per arch: what an EL2 image would link.
$(objtree)/freestanding/%/hvtcore.o: $(objtree)/freestanding/%/ring_buffer.o
	$(quiet) LD-R $(patsubst $(objtree)/%,%,$@)
	$(Q)$(FS_LD_$*) -r -o $@ $^

FS_ARCHES := x86_64 aarch64
FS_OBJS := $(foreach a,$(FS_ARCHES),$(objtree)/freestanding/$(a)/hvtcore.o)
CHECK_DEPS += $(FS_OBJS)
$(foreach a,$(FS_ARCHES),$(eval $(call add-test,freestanding-link-$(a),$(srctree)/scripts/check-freestanding.sh $(FS_NM_$(a)) $(objtree)/freestanding/$(a)/hvtcore.o $(srctree)/shared/freestanding-allow.txt)))

.PHONY: freestanding
freestanding: $(FS_OBJS)
