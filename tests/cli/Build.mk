# SPDX-License-Identifier: MIT
#
# tests/cli/: end-to-end tests of the hvtrace command (loopback writer,
# stream, stat), one script per behaviour.  They use the built binary.

ifeq ($(CONFIG_HVT_HOST),y)
CLI_TESTS := $(patsubst $(srctree)/tests/cli/%.sh,%,$(filter-out $(srctree)/tests/cli/lib.sh,$(wildcard $(srctree)/tests/cli/*.sh)))
$(foreach t,$(CLI_TESTS),$(eval $(call add-test,cli/$(t),HVTRACE=$(HVTRACE_BIN) bash $(srctree)/tests/cli/$(t).sh)))
endif
