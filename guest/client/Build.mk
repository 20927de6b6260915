# SPDX-License-Identifier: MIT
#
# guest/client/: libhvtrace-client, the application side of the agent's
# socket (register user events through the agent; bind libhvtrace-guest
# handles to the ids and enable bits the host assigns).

ifeq ($(CONFIG_HVT_GUEST),y)
ifneq ($(GUEST_LIB_SRCS),)

CLIENT_SRCS := $(wildcard $(srctree)/guest/client/*.c)
CLIENT_OBJS := $(patsubst $(srctree)/%.c,$(objtree)/%.o,$(CLIENT_SRCS))
LIBHVTCLIENT := $(objtree)/lib/libhvtrace-client.a
CLIENT_CFLAGS := -I$(srctree)/guest/client
$(CLIENT_OBJS): EXTRA_CFLAGS += $(GUEST_CFLAGS) $(CLIENT_CFLAGS)

$(LIBHVTCLIENT): $(CLIENT_OBJS)
	$(call archive,$^)

PROGS += $(LIBHVTCLIENT)
INSTALL_LIB += $(LIBHVTCLIENT)
INSTALL_HDR += $(srctree)/guest/client/hvtrace-client.h

endif
endif
