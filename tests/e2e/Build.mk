# SPDX-License-Identifier: MIT
#
# tests/e2e/: the product's main path end to end -- real QEMU guests (TCG
# unless KVM proved usable) booted from this build's image, hvtraced
# attaching them by name, workloads in the guests writing user events,
# the host reading them.  Each tests/e2e/NAME.c (e2e.c aside) is one test,
# e2e/NAME, registered only with CONFIG_HVT_TEST_QEMU; they reuse the
# proxy tests' harness (a private hvtraced, libtraceevent decoding).
# bench.c is the guest-to-host benchmark (make bench).  The registry's
# preferred binding (register_at.c) needs no guest and always runs.

ifeq ($(CONFIG_HVT_HOST)$(CONFIG_HVT_GUEST),yy)
ifneq ($(LIBHVTCLIENT),)

E2E_LIB := $(objtree)/tests/e2e/e2e.o
E2E_HARNESS := $(objtree)/tests/proxy/harness.o
E2E_LIBS := $(LIBHVTCLIENT) $(LIBHVTRACE) $(LIBHVTGUEST) $(LIBHVTCORE)
E2E_LINK_LIBS := $(E2E_LIBS) $(TRACEEVENT_LIBS) $(TRACEFS_LIBS) $(FUSE_LIBS) -lm

$(objtree)/tests/e2e/%.o: EXTRA_CFLAGS += $(TEST_CFLAGS) \
	-I$(srctree)/guest/client -I$(srctree)/host/proto \
	-I$(srctree)/tests/proxy -DHVT_SRCTREE=\"$(srctree)\"

# Needs no guest: the registry's preferred binding for replays.
$(objtree)/tests/e2e/register_at: $(objtree)/tests/e2e/register_at.o $(E2E_LIBS)
	$(call link,$<,$(E2E_LINK_LIBS))
TEST_PROGS += $(objtree)/tests/e2e/register_at
$(eval $(call add-test,e2e/register_at,$(objtree)/tests/e2e/register_at))

ifeq ($(CONFIG_HVT_TEST_QEMU),y)

E2E_SRCS := $(filter-out %/e2e.c %/bench.c %/register_at.c,$(wildcard $(srctree)/tests/e2e/*.c))
E2E_NAMES := $(notdir $(E2E_SRCS:.c=))
E2E_PROGS := $(addprefix $(objtree)/tests/e2e/,$(E2E_NAMES))
E2E_BENCH := $(objtree)/tests/e2e/bench

# Every test boots this build's guest image.
$(E2E_PROGS) $(E2E_BENCH): $(objtree)/tests/e2e/%: $(objtree)/tests/e2e/%.o \
		$(E2E_LIB) $(E2E_HARNESS) $(E2E_LIBS) $(GUEST_IMAGE)
	$(call link,$< $(E2E_LIB) $(E2E_HARNESS),$(E2E_LINK_LIBS))

TEST_PROGS += $(E2E_PROGS)
$(foreach n,$(E2E_NAMES),$(eval $(call add-test,e2e/$(n),$(objtree)/tests/e2e/$(n))))
# The CLI verbs around a guest (hvtrace guest, list, events, stream).
$(eval $(call add-test,e2e/cli,HVT_OBJTREE=$(objtree) $(srctree)/tests/e2e/cli.sh))

BENCH_PROGS += $(E2E_BENCH) $(GUEST_IMAGE)
$(eval $(call add-bench,e2e/guest,$(E2E_BENCH)))
# A guest's user events against host stamps, 10000 rounds (clock_truth.c).
BENCH_PROGS += $(objtree)/tests/e2e/clock_truth
$(eval $(call add-bench,e2e/clock-truth,HVT_TRUTH_ROUNDS=10000 HVT_TRUTH_BENCH=1 HVT_TRUTH_SHM=1 $(objtree)/tests/e2e/clock_truth))

endif
endif
endif
