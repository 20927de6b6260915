# SPDX-License-Identifier: MIT
#
# tests/readerbench/: the reader benchmark -- our sub-buffer record
# iterator against libtraceevent's kbuffer on the same pages, plus the
# area mmap-view path and text output; and the recorder on a pre-filled
# area with 1 and 2 reader threads (make bench).

ifeq ($(CONFIG_HVT_HOST),y)
READERBENCH := $(objtree)/tests/readerbench/reader_bench

$(objtree)/tests/readerbench/%.o: EXTRA_CFLAGS += $(TEST_CFLAGS)

$(READERBENCH): $(objtree)/tests/readerbench/reader_bench.o $(LIBHVTRACE) $(LIBHVTCORE)
	$(call link,$<,$(LIBHVTRACE) $(LIBHVTCORE) $(HOST_EXT_LIBS))

BENCH_PROGS += $(READERBENCH)
$(eval $(call add-bench,reader,$(READERBENCH)))

RECORDBENCH := $(objtree)/tests/readerbench/record_bench
$(RECORDBENCH): $(objtree)/tests/readerbench/record_bench.o $(LIBHVTRACE) $(LIBHVTCORE)
	$(call link,$<,$(LIBHVTRACE) $(LIBHVTCORE) $(HOST_EXT_LIBS))

BENCH_PROGS += $(RECORDBENCH)
$(eval $(call add-bench,record,$(RECORDBENCH)))
endif
