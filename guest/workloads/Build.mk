# SPDX-License-Identifier: MIT
#
# guest/workloads/: demo and test workloads.  They register their events
# through the agent, so they link libhvtrace-client before
# libhvtrace-guest (explicit rules: they replace guest/Build.mk's pattern
# rule for these programs).

ifeq ($(CONFIG_HVT_GUEST),y)
ifneq ($(LIBHVTCLIENT),)

$(objtree)/guest/workloads/%.o: EXTRA_CFLAGS += $(CLIENT_CFLAGS)

define workload-link
$(1): $(1).o $$(LIBHVTCLIENT) $$(LIBHVTGUEST) $$(LIBHVTCORE)
	$$(call link,$$(GUEST_LDFLAGS) $$<,$$(LIBHVTCLIENT) $$(LIBHVTGUEST) $$(LIBHVTCORE))
endef
$(foreach w,$(WORKLOAD_BINS),$(eval $(call workload-link,$(w))))

endif
endif
