# SPDX-License-Identifier: MIT
#
# common/: small hosted helpers that both guest and host programs need
# (parsing "16M" and octal modes, preparing and connecting UNIX sockets),
# and a few of the host's alone that a library and hvtraced both link
# (kfset.c: the formats folder reader of an attach by pid).
# Linux user space only, so not shared/ (which holds what crosses contexts:
# the ABI and the freestanding core).  guest/ and host/ may use it; it uses
# neither.  Header: common/include/hvt_util.h.
#
# libhvtutil.a is internal (not installed).  libhvtrace-guest.a and
# libhvtrace-tracedat (the recorder's reader threads) carry its objects, as
# the guest library carries the writer core, so the installed archives
# stay self-contained; position-independent for the shared object.

UTIL_SRCS := $(patsubst $(srctree)/%,%,$(wildcard $(srctree)/common/*.c))
UTIL_OBJS := $(UTIL_SRCS:%.c=$(objtree)/%.o)
LIBHVTUTIL := $(objtree)/lib/libhvtutil.a
CPPFLAGS += -I$(srctree)/common/include
$(UTIL_OBJS): EXTRA_CFLAGS += -fPIC -pthread

$(LIBHVTUTIL): $(UTIL_OBJS)
	$(call archive,$^)
PROGS += $(LIBHVTUTIL)
