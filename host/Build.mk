# SPDX-License-Identifier: MIT
#
# host/: the host libraries, split by job, and the programs built on them.
#
#   library               sources                         public header
#   libhvtrace            host/lib, userevents, hypevents hvtrace.h (includes
#     (the core: areas, rings, page reader, decoding,    hvtrace-ring.h,
#      text, event catalogs, page packing, user events)  hvtrace-events.h,
#                                                        hvtrace-loopback.h),
#                                                        hvtrace-userevents.h
#   libhvtrace-tracedat   host/tracedat                   hvtrace-tracedat.h
#   libhvtrace-daemon     host/proto (hvtraced client)    hvtrace-daemon.h
#   libhvtrace-fuse       host/fuse (hvtrace mount)       hvtrace-fuse.h
#
# Dependencies point down only: tracedat -> daemon -> core, fuse -> daemon
# -> core; the core links neither FUSE nor any other host library
# (tests/foundation/layering checks it).  A library's private headers
# are its own (host/lib/hvtrace-local.h, host/tracedat/tracedat-local.h,
# host/fuse/fuse-local.h, host/userevents/userevents-local.h);
# the libraries above the core reach it through host/include and the one
# internal header host/lib/internal/hvtrace-internal.h (never installed),
# never host/lib's private headers; programs see host/include only.
# Every library is built static and shared, with a symbol map
# (host/<lib>.map) and a pkg-config file (host/<name>.pc.in).
#
#   host/cli/        the hvtrace command; one cmd_*.c per verb
#   host/hvtraced/   the host daemon

ifeq ($(CONFIG_HVT_HOST),y)

# Every library sees the public headers and the core's internal header
# (host/lib/internal: the HVTRACE_PRIVATE functions); only the core sees
# host/lib itself, so an upper library that includes one of the core's
# private headers does not compile.
HOST_LIB_CFLAGS := -fPIC -fvisibility=hidden -I$(srctree)/host/include \
	-I$(srctree)/host/lib/internal $(TRACEEVENT_CFLAGS) -DHVT_BUILD_LIB
HOST_PROG_CFLAGS := -I$(srctree)/host/include $(TRACEEVENT_CFLAGS)

# $(call host-lib,VAR,NAME,DIRS,EXTRA_CFLAGS,SHARED_LIBS)
#   VAR:   make variable prefix (LIBHVT_CORE ...)
#   NAME:  library name (hvtrace, hvtrace-tracedat, ...): lib$(NAME).a,
#          lib$(NAME).so.1 linked with host/lib$(NAME).map
#   DIRS:  host/ folders whose *.c it holds
#   SHARED_LIBS: what the shared object links
define host-lib
$(1)_SRCS := $$(foreach d,$(3),$$(wildcard $$(srctree)/host/$$(d)/*.c))
$(1)_OBJS := $$(patsubst $$(srctree)/%.c,$$(objtree)/%.o,$$($(1)_SRCS))
$(1) := $$(objtree)/lib/lib$(2).a
$(1)_SO := $$(objtree)/lib/lib$(2).so.1
$$($(1)_OBJS): EXTRA_CFLAGS += $$(HOST_LIB_CFLAGS) $(4)
$$($(1)): $$($(1)_OBJS)
	$$(call archive,$$^)
$$($(1)_SO): $$($(1)_OBJS) $$(srctree)/host/lib$(2).map $(filter %.a %.so.1,$(5))
	@mkdir -p $$(@D)
	$$(quiet) LD $$(patsubst $$(objtree)/%,%,$$@)
	$$(Q)$$(CC) $$(LDFLAGS) -shared -Wl,-soname,lib$(2).so.1 \
		-Wl,--version-script=$$(srctree)/host/lib$(2).map -Wl,--no-undefined \
		-o $$@ $$($(1)_OBJS) $(5)
	$$(Q)ln -sf lib$(2).so.1 $$(objtree)/lib/lib$(2).so
PROGS += $$($(1)) $$($(1)_SO)
INSTALL_LIB += $$($(1)) $$($(1)_SO)
INSTALL_PC += $$(srctree)/host/$(2).pc.in
endef

# The core; host/lib/internal/hvtrace-internal.h declares its shared
# object's private symbols (the HVTRACE_PRIVATE node of its map) that the
# other libraries call.
$(eval $(call host-lib,LIBHVT_CORE,hvtrace,lib userevents hypevents,\
	-I$(srctree)/host/lib $(TRACEFS_CFLAGS),\
	$(LIBHVTCORE) $(TRACEEVENT_LIBS) $(TRACEFS_LIBS) -pthread))
# The installed static core carries the writer core and area container
# of shared/ (libhvtcore.a is not installed), as the shared object links
# them in: a static link with 'pkg-config --static hvtrace' needs nothing
# more.
$(LIBHVT_CORE): $(CORE_OBJS)
# The daemon client (the page feed and daemon source of <hvtrace-daemon.h>
# among it) declares no visibility: default, limited by the map.
$(eval $(call host-lib,LIBHVT_DAEMON,hvtrace-daemon,proto,-fvisibility=default,\
	$(LIBHVTCORE) $(LIBHVTUTIL) $(objtree)/lib/libhvtrace.so.1 -pthread))
# It reads a guest's formats folder for an attach with common/'s format
# set reader (hvt_util_kfset_read(), dvmpid.c): the archive carries
# common/ too.
$(LIBHVT_DAEMON): $(UTIL_OBJS)
$(eval $(call host-lib,LIBHVT_TRACEDAT,hvtrace-tracedat,tracedat,,\
	$(LIBHVTCORE) $(LIBHVTUTIL) $(objtree)/lib/libhvtrace-daemon.so.1 \
	$(objtree)/lib/libhvtrace.so.1 $(TRACEEVENT_LIBS) -pthread))
# Its reader threads are common/'s worker pool: the archive carries it.
$(LIBHVT_TRACEDAT): $(UTIL_OBJS)
ifeq ($(CONFIG_HVT_HOST_FUSE),y)
$(eval $(call host-lib,LIBHVT_FUSE,hvtrace-fuse,fuse,\
	$(FUSE_CFLAGS) -DFUSE_USE_VERSION=35,\
	$(LIBHVTCORE) $(objtree)/lib/libhvtrace-daemon.so.1 \
	$(objtree)/lib/libhvtrace.so.1 $(FUSE_LIBS) -pthread))
endif

# The core archive alone (tests/foundation/layering reads it), and every
# host archive in link order, for the tests and tools that use them all.
LIBHVTRACE_CORE := $(LIBHVT_CORE)
LIBHVTRACE := $(LIBHVT_FUSE) $(LIBHVT_TRACEDAT) $(LIBHVT_DAEMON) $(LIBHVT_CORE)
HOST_EXT_LIBS := $(TRACEEVENT_LIBS) $(TRACEFS_LIBS) \
	$(if $(LIBHVT_FUSE),$(FUSE_LIBS)) -lm

# The CLI: host/cli/*.c; verbs register themselves (see host/cli/cli.h).
CLI_SRCS := $(wildcard $(srctree)/host/cli/*.c)
CLI_OBJS := $(patsubst $(srctree)/%.c,$(objtree)/%.o,$(CLI_SRCS))
HVTRACE_BIN := $(objtree)/bin/hvtrace
CLI_LIBS := $(LIBHVT_FUSE) $(LIBHVT_TRACEDAT) $(LIBHVT_DAEMON) $(LIBHVT_CORE) \
	$(LIBHVTCORE) $(LIBHVTUTIL)
$(CLI_OBJS): EXTRA_CFLAGS += $(HOST_PROG_CFLAGS) -I$(srctree)/host/cli
$(HVTRACE_BIN): $(CLI_OBJS) $(CLI_LIBS)
	$(call link,$(CLI_OBJS),$(CLI_LIBS) $(HOST_EXT_LIBS))

# The daemon.
HVTRACED_SRCS := $(wildcard $(srctree)/host/hvtraced/*.c)
ifneq ($(HVTRACED_SRCS),)
HVTRACED_OBJS := $(patsubst $(srctree)/%.c,$(objtree)/%.o,$(HVTRACED_SRCS))
HVTRACED_BIN := $(objtree)/bin/hvtraced
HVTRACED_LIBS := $(LIBHVT_CORE) $(LIBHVTCORE) $(LIBHVTUTIL)
$(HVTRACED_OBJS): EXTRA_CFLAGS += $(HOST_PROG_CFLAGS) -I$(srctree)/host/lib/internal
$(HVTRACED_BIN): $(HVTRACED_OBJS) $(HVTRACED_LIBS)
	$(call link,$(HVTRACED_OBJS),$(HVTRACED_LIBS) $(TRACEEVENT_LIBS) $(TRACEFS_LIBS))
PROGS += $(HVTRACED_BIN)
INSTALL_BIN += $(HVTRACED_BIN)
endif

# The rig's doorbell server (one per guest, run by the launcher).
IVSHMEM_SRCS := $(wildcard $(srctree)/host/ivshmem/*.c)
IVSHMEM_OBJS := $(patsubst $(srctree)/%.c,$(objtree)/%.o,$(IVSHMEM_SRCS))
IVSHMEM_BIN := $(objtree)/bin/hvtrace-ivshmem
$(IVSHMEM_OBJS): EXTRA_CFLAGS += $(HOST_PROG_CFLAGS)
$(IVSHMEM_BIN): $(IVSHMEM_OBJS) $(LIBHVTUTIL)
	$(call link,$(IVSHMEM_OBJS),$(LIBHVTUTIL))
PROGS += $(IVSHMEM_BIN)
INSTALL_BIN += $(IVSHMEM_BIN)

PROGS += $(HVTRACE_BIN)
INSTALL_BIN += $(HVTRACE_BIN)
INSTALL_HDR += $(filter-out $(if $(LIBHVT_FUSE),,%/hvtrace-fuse.h),\
	$(wildcard $(srctree)/host/include/hvtrace*.h))

endif

-include $(wildcard $(srctree)/host/*/Build.mk)
