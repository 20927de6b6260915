# SPDX-License-Identifier: MIT
$(eval $(call add-test,install/pkgconfig,HVT_SRCTREE=$(srctree) HVT_OBJTREE=$(objtree) $(srctree)/tests/install/install_pkgconfig.sh))
$(eval $(call add-test,install/fresh_offline,HVT_SRCTREE=$(srctree) $(srctree)/tests/install/fresh_offline.sh))
