# SPDX-License-Identifier: MIT
#
# tests/man/: the manual pages in docs/man render without warnings, cover
# every public function and CLI verb, and their example programs build
# against this tree and run (check_man.sh says what exactly).  Needs the
# binaries and libraries of 'make all'.

ifneq ($(CONFIG_HVT_HOST)$(CONFIG_HVT_GUEST),)
$(eval $(call add-test,man/pages,HVT_SRCTREE=$(srctree) HVT_OBJTREE=$(objtree) HVT_MAN_HOST=$(CONFIG_HVT_HOST) HVT_MAN_GUEST=$(CONFIG_HVT_GUEST) bash $(srctree)/tests/man/check_man.sh))
endif

# The options of every installed program and hvtrace verb: the code, the
# --help text and the manual page list the same ones (options.sh).
ifeq ($(CONFIG_HVT_HOST),y)
$(eval $(call add-test,man/options,HVT_SRCTREE=$(srctree) HVT_OBJTREE=$(objtree) bash $(srctree)/tests/man/options.sh))
endif
