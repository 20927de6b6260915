# SPDX-License-Identifier: MIT
#
# guest/: what runs inside a traced guest (or any local writer process).
#
#   guest/lib/        libhvtrace-guest: open the area, check the enable
#                     bit, write into the per-CPU ring (rseq executor in
#                     rseq_<arch>.S: x86_64 and aarch64)
#   guest/agent/      hvtrace-agent: owns the area mapping, hands it to
#                     clients, forwards registrations to the host
#   guest/workloads/  demo and test workloads, one program per file

ifeq ($(CONFIG_HVT_GUEST),y)

GUEST_LDFLAGS :=
ifeq ($(CONFIG_HVT_GUEST_STATIC),y)
ifneq ($(SANITIZE),1)
GUEST_LDFLAGS += -static
endif
endif
GUEST_CFLAGS := -I$(srctree)/guest/include -I$(srctree)/guest/lib

GUEST_LIB_SRCS := $(wildcard $(srctree)/guest/lib/*.c $(srctree)/guest/lib/*.S)
GUEST_LIB_OBJS := $(patsubst $(srctree)/%,$(objtree)/%.o,$(basename $(GUEST_LIB_SRCS)))
GUEST_LIB_OBJS := $(patsubst %.o.o,%.o,$(GUEST_LIB_OBJS))
LIBHVTGUEST := $(objtree)/lib/libhvtrace-guest.a
$(GUEST_LIB_OBJS): EXTRA_CFLAGS += $(GUEST_CFLAGS)

ifneq ($(GUEST_LIB_SRCS),)
$(LIBHVTGUEST): $(GUEST_LIB_OBJS) $(CORE_OBJS) $(UTIL_OBJS)
	$(call archive,$^)
PROGS += $(LIBHVTGUEST)
# Self-contained: the archive carries the writer core and the hosted
# helpers (common/) it needs.
INSTALL_LIB += $(LIBHVTGUEST)
INSTALL_HDR += $(srctree)/guest/include/hvtrace-guest.h
endif

AGENT_SRCS := $(wildcard $(srctree)/guest/agent/*.c)
ifneq ($(AGENT_SRCS),)
AGENT_OBJS := $(patsubst $(srctree)/%.c,$(objtree)/%.o,$(AGENT_SRCS))
AGENT_BIN := $(objtree)/bin/hvtrace-agent
$(AGENT_OBJS): EXTRA_CFLAGS += $(GUEST_CFLAGS)
$(AGENT_BIN): $(AGENT_OBJS) $(LIBHVTGUEST) $(LIBHVTCORE)
	$(call link,$(GUEST_LDFLAGS) $(AGENT_OBJS),$(LIBHVTGUEST) $(LIBHVTCORE))
PROGS += $(AGENT_BIN)
# Installed too: the agent also serves local writers next to hvtraced.
INSTALL_BIN += $(AGENT_BIN)
endif

WORKLOAD_SRCS := $(wildcard $(srctree)/guest/workloads/*.c)
WORKLOAD_BINS := $(patsubst $(srctree)/guest/workloads/%.c,$(objtree)/guest/workloads/%,$(WORKLOAD_SRCS))
$(objtree)/guest/workloads/%.o: EXTRA_CFLAGS += $(GUEST_CFLAGS)
$(objtree)/guest/workloads/%: $(objtree)/guest/workloads/%.o $(LIBHVTGUEST) $(LIBHVTCORE)
	$(call link,$(GUEST_LDFLAGS) $<,$(LIBHVTGUEST) $(LIBHVTCORE))
PROGS += $(WORKLOAD_BINS)

endif

-include $(wildcard $(srctree)/guest/*/Build.mk)
