# SPDX-License-Identifier: MIT
#
# tests/bench/: writer benchmarks (make bench).  Each prints
# "BENCH <name> <value> <unit>" lines for itself and for the peers it is
# compared with, all measured in the same run.

ifeq ($(CONFIG_HVT_GUEST),y)
ifneq ($(SANITIZE),1)

BENCH_LIBS := $(LIBHVTGUEST) $(LIBHVTCORE)
# Every loop (and jump target: GCC enters a rotated loop by a jump) starts
# a 64-byte line, for every peer alike: a loop of a few
# instructions split over two lines runs up to twice as long, so without
# this a figure would move with unrelated code placed before it.
$(objtree)/tests/bench/%.o: EXTRA_CFLAGS += $(TEST_CFLAGS) -falign-loops=64 -falign-jumps=64

$(objtree)/tests/bench/bench_writer $(objtree)/tests/bench/bench_guest: $(objtree)/tests/bench/%: $(objtree)/tests/bench/%.o $(BENCH_LIBS)
	$(call link,$<,$(BENCH_LIBS))

BENCH_PROGS += $(objtree)/tests/bench/bench_writer $(objtree)/tests/bench/bench_guest
$(eval $(call add-bench,writer_core,$(objtree)/tests/bench/bench_writer))
$(eval $(call add-bench,guest_rseq,$(objtree)/tests/bench/bench_guest))

# The LTTng-UST peer, when liblttng-ust-dev is installed.
LTTNG_UST_LIBS := $(shell $(PKG_CONFIG) --libs lttng-ust 2>/dev/null)
ifneq ($(LTTNG_UST_LIBS),)
$(objtree)/tests/bench/lttng_bench.o: EXTRA_CFLAGS += \
	$(shell $(PKG_CONFIG) --cflags lttng-ust) -I$(srctree)/tests/bench \
	-Wno-missing-prototypes -Wno-strict-prototypes -Wno-shadow
$(objtree)/tests/bench/lttng_bench: $(objtree)/tests/bench/lttng_bench.o $(BENCH_LIBS)
	$(call link,$<,$(BENCH_LIBS) $(LTTNG_UST_LIBS))
BENCH_PROGS += $(objtree)/tests/bench/lttng_bench
endif
$(eval $(call add-bench,lttng_ust,$(srctree)/tests/bench/lttng.sh $(objtree)/tests/bench/lttng_bench))

endif
endif

# Reading a remote through hvtraced against its area read directly: the
# stream's CPU per million events (hvtraced's included) and the
# recorder's throughput, on the same pre-filled area.
ifeq ($(CONFIG_HVT_HOST),y)
$(eval $(call add-bench,remote_read,HVT_OBJTREE=$(objtree) $(srctree)/tests/bench/remote_read.sh))
endif
