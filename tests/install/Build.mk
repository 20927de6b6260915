# SPDX-License-Identifier: MIT
$(eval $(call add-test,install/pkgconfig,HVT_SRCTREE=$(srctree) HVT_OBJTREE=$(objtree) $(srctree)/tests/install/install_pkgconfig.sh))
