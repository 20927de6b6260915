# SPDX-License-Identifier: MIT
#
# hyp/: the EL2 rig's image, and nothing else.
#
#   hyp/el2/       the bare-metal aarch64 image (boots at EL2 on QEMU virt),
#                  linked with the unchanged freestanding writer core
#   hyp/include/   the hypercall ABI and benchmark loop (the image and the
#                  test drivers); the memory map the host reads too is
#                  shared/include/hvtrace/hyp_layout.h
#
# The host side is 'hvtrace hyp' (host/cli/cmd_hyp.c); the test drivers,
# the end-to-end tests and the benchmark are in tests/hyp/.
#
# Output: $(O)/hyp/hvtrace-el2.elf.

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

$(HYP_LDS): $(srctree)/hyp/hyp.lds.S $(srctree)/shared/include/hvtrace/hyp_layout.h
	@mkdir -p $(@D)
	$(quiet) LDS $(patsubst $(objtree)/%,%,$@)
	$(Q)$(HYP_CC) -E -P -x c -D__ASSEMBLY__ -I$(srctree)/hyp/include -I$(srctree)/shared/include -o $@ $<

$(HYP_ELF): $(HYP_OBJS) $(HYP_CORE) $(HYP_LDS)
	$(quiet) LD-EL2 $(patsubst $(objtree)/%,%,$@)
	$(Q)$(HYP_CC) -nostdlib -static -Wl,--build-id=none -Wl,-T,$(HYP_LDS) \
		-o $@ $(HYP_OBJS) $(HYP_CORE)

PROGS += $(HYP_ELF)
.PHONY: hyp
hyp: $(HYP_ELF)

endif

