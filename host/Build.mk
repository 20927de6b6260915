# SPDX-License-Identifier: MIT
#
# host/: libhvtrace (the read-only host reader and everything built on it)
# and the hvtrace CLI.
#
#   host/include/hvtrace.h   public API (installed); hvtrace-tracedat.h:
#                            trace.dat files
#   host/lib/                area attach, per-CPU reader, kernel mmap
#                            backend, decoding, text output
#   host/userevents/         user_events grammar, formats, registry
#   host/<component>/        further library components (globbed below)
#   host/cli/                the hvtrace command; one cmd_*.c per verb
#   host/hvtraced/           the host daemon

ifeq ($(CONFIG_HVT_HOST),y)

HOST_LIB_DIRS := lib userevents hypevents proto tracedat
ifeq ($(CONFIG_HVT_HOST_FUSE),y)
HOST_LIB_DIRS += fuse
endif
LIBHVTRACE_SRCS := $(foreach d,$(HOST_LIB_DIRS),$(wildcard $(srctree)/host/$(d)/*.c))
LIBHVTRACE_OBJS := $(patsubst $(srctree)/%.c,$(objtree)/%.o,$(LIBHVTRACE_SRCS))
LIBHVTRACE := $(objtree)/lib/libhvtrace.a
LIBHVTRACE_SO := $(objtree)/lib/libhvtrace.so.1
HOST_EXT_LIBS := $(TRACEEVENT_LIBS) $(TRACEFS_LIBS) $(FUSE_LIBS) -lm
HOST_CFLAGS := -fPIC -fvisibility=hidden -I$(srctree)/host/include \
	-I$(srctree)/host/lib $(TRACEEVENT_CFLAGS) $(TRACEFS_CFLAGS) $(FUSE_CFLAGS) \
	-DHVT_BUILD_LIB

$(LIBHVTRACE_OBJS): EXTRA_CFLAGS += $(HOST_CFLAGS)
$(objtree)/host/fuse/%.o: EXTRA_CFLAGS += -DFUSE_USE_VERSION=35

$(LIBHVTRACE): $(LIBHVTRACE_OBJS) $(CORE_OBJS)
	$(call archive,$^)

$(LIBHVTRACE_SO): $(LIBHVTRACE_OBJS) $(CORE_OBJS)
	@mkdir -p $(@D)
	$(quiet) LD $(patsubst $(objtree)/%,%,$@)
	$(Q)$(CC) $(LDFLAGS) -shared -Wl,-soname,libhvtrace.so.1 -o $@ $^ $(HOST_EXT_LIBS)
	$(Q)ln -sf libhvtrace.so.1 $(objtree)/lib/libhvtrace.so

# The CLI: host/cli/*.c; verbs register themselves (see host/cli/cli.h).
CLI_SRCS := $(wildcard $(srctree)/host/cli/*.c)
CLI_OBJS := $(patsubst $(srctree)/%.c,$(objtree)/%.o,$(CLI_SRCS))
HVTRACE_BIN := $(objtree)/bin/hvtrace
$(CLI_OBJS): EXTRA_CFLAGS += -I$(srctree)/host/include -I$(srctree)/host/cli \
	-I$(srctree)/host/lib $(TRACEEVENT_CFLAGS)

$(HVTRACE_BIN): $(CLI_OBJS) $(LIBHVTRACE) $(LIBHVTCORE)
	$(call link,$(CLI_OBJS),$(LIBHVTRACE) $(LIBHVTCORE) $(HOST_EXT_LIBS))

# The daemon.
HVTRACED_SRCS := $(wildcard $(srctree)/host/hvtraced/*.c)
ifneq ($(HVTRACED_SRCS),)
HVTRACED_OBJS := $(patsubst $(srctree)/%.c,$(objtree)/%.o,$(HVTRACED_SRCS))
HVTRACED_BIN := $(objtree)/bin/hvtraced
$(HVTRACED_OBJS): EXTRA_CFLAGS += -I$(srctree)/host/include -I$(srctree)/host/lib $(TRACEEVENT_CFLAGS)
$(HVTRACED_BIN): $(HVTRACED_OBJS) $(LIBHVTRACE) $(LIBHVTCORE)
	$(call link,$(HVTRACED_OBJS),$(LIBHVTRACE) $(LIBHVTCORE) $(HOST_EXT_LIBS))
PROGS += $(HVTRACED_BIN)
INSTALL_BIN += $(HVTRACED_BIN)
endif

PROGS += $(LIBHVTRACE) $(LIBHVTRACE_SO) $(HVTRACE_BIN)
INSTALL_BIN += $(HVTRACE_BIN)
INSTALL_LIB += $(LIBHVTRACE) $(LIBHVTRACE_SO)
INSTALL_HDR += $(srctree)/host/include/hvtrace.h \
	$(srctree)/host/include/hvtrace-tracedat.h

endif

-include $(wildcard $(srctree)/host/*/Build.mk)
