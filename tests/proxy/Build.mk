# SPDX-License-Identifier: MIT
#
# tests/proxy/: the user-event proxy on one machine -- hvtraced, agents
# with /dev/shm areas, the test workloads -- over UNIX sockets.  Each
# tests/proxy/NAME.c (harness.c aside) is one test, proxy/NAME.

ifeq ($(CONFIG_HVT_HOST)$(CONFIG_HVT_GUEST),yy)
ifneq ($(LIBHVTCLIENT),)

PROXY_SRCS := $(filter-out %/harness.c,$(wildcard $(srctree)/tests/proxy/*.c))
# vm boots a QEMU guest: only with CONFIG_HVT_TEST_QEMU.
ifneq ($(CONFIG_HVT_TEST_QEMU),y)
PROXY_SRCS := $(filter-out %/vm.c,$(PROXY_SRCS))
endif
PROXY_NAMES := $(notdir $(PROXY_SRCS:.c=))
PROXY_PROGS := $(addprefix $(objtree)/tests/proxy/,$(PROXY_NAMES))
PROXY_HARNESS := $(objtree)/tests/proxy/harness.o
PROXY_LIBS := $(LIBHVTCLIENT) $(LIBHVTRACE) $(LIBHVTGUEST) $(LIBHVTCORE)

$(objtree)/tests/proxy/%.o: EXTRA_CFLAGS += $(TEST_CFLAGS) \
	-I$(srctree)/guest/client -I$(srctree)/host/proto \
	-DHVT_SRCTREE=\"$(srctree)\"
# The guest test boots the rig's image with this build's agent.
ifeq ($(CONFIG_HVT_TEST_QEMU),y)
$(objtree)/tests/proxy/vm: $(GUEST_IMAGE)
endif

$(PROXY_PROGS): $(objtree)/tests/proxy/%: $(objtree)/tests/proxy/%.o \
		$(PROXY_HARNESS) $(PROXY_LIBS)
	$(call link,$< $(PROXY_HARNESS),$(PROXY_LIBS) $(TRACEEVENT_LIBS) \
		$(TRACEFS_LIBS) $(FUSE_LIBS) -lm)

TEST_PROGS += $(PROXY_PROGS)
$(foreach n,$(PROXY_NAMES),$(eval $(call add-test,proxy/$(n),$(objtree)/tests/proxy/$(n))))

endif
endif
