# SPDX-License-Identifier: MIT
#
# tests/golden/: files captured from real systems, and the script tests
# that compare hvtrace's output with them.

ifeq ($(CONFIG_HVT_HOST),y)
$(eval $(call add-test,golden/userevents-cli,$(srctree)/tests/golden/userevents/cli_format.sh $(HVTRACE_BIN)))
endif
