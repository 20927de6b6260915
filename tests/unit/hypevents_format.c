// SPDX-License-Identifier: MIT
/*
 * The hypervisor events, declared once in <hvtrace/hyp_events.h>, seen
 * from both sides:
 *
 *  - every generated events/hypervisor/<name>/format text parses with the
 *    real libtraceevent, and the fields it finds (offset, size, sign) are
 *    those of the record structs the writer fills;
 *  - records written by the generated writer-side emit functions (built
 *    natively here, with the same writer core the EL2 image links) come
 *    out of libtraceevent's kbuffer with the timestamps the clock hook gave
 *    and print, through tep_print_event(), as the expected text;
 *  - a disabled event writes nothing; the table lookups agree.
 */
#include <stdlib.h>
#include <string.h>

#include <event-parse.h>
#include <kbuffer.h>
#include <trace-seq.h>

#define HVT_HYP_WRITER
#include <hvtrace/hyp_events.h>
#include <hvtrace/ring_buffer.h>

#include "hvt_test.h"

/* The platform hooks of the emit functions, for this test. */
static struct hvt_rb_cpu test_cb;
static uint64_t test_clock;

static inline struct hvt_rb_cpu *hvt_hyp_writer_cpu(void)
{
	return &test_cb;
}

static inline uint64_t hvt_hyp_writer_clock(void)
{
	return test_clock;
}

static void check_formats(struct tep_handle *tep)
{
	static const char *const common[] = { "common_type", "common_flags",
					      "common_preempt_count",
					      "common_pid" };
	unsigned int i, f;

	t_eq(hvt_hypevents_count(), HVT_HYP_NR_EVENTS);
	t_assert(hvt_hypevents_count() >= 4);
	for (i = 0; i < hvt_hypevents_count(); i++) {
		const struct hvt_hypevent *e = hvt_hypevents_get(i);
		struct tep_event *ev;
		enum tep_errno err;
		char want[64];

		t_assert(e);
		t_eq(e->index, i);
		t_eq(e->id, HVT_HYP_ID_BASE + i);
		t_assert(!strcmp(e->system, "hypervisor"));
		snprintf(want, sizeof(want), "%u\n", e->id);
		t_assert(!strcmp(e->id_text, want));
		/* Kernel format-file layout, line by line. */
		snprintf(want, sizeof(want), "name: %s\nID: %u\nformat:\n",
			 e->name, e->id);
		if (strncmp(e->format, want, strlen(want)))
			t_fail("format of %s does not start with '%s':\n%s",
			       e->name, want, e->format);
		t_assert(strstr(e->format,
				"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"));
		t_assert(strstr(e->format,
				"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"));
		t_assert(strstr(e->format, "\nprint fmt: \""));

		err = tep_parse_event(tep, e->format, strlen(e->format),
				      e->system);
		if (err) {
			char msg[128];

			tep_strerror(tep, err, msg, sizeof(msg));
			t_fail("libtraceevent rejects %s: %s\n%s", e->name, msg,
			       e->format);
		}
		ev = tep_find_event(tep, (int)e->id);
		t_assert(ev);
		t_assert(!strcmp(ev->name, e->name));
		t_assert(!strcmp(ev->system, "hypervisor"));
		for (f = 0; f < 4; f++)
			t_assert(tep_find_common_field(ev, common[f]));
		t_assert(e->nr_fields >= 1);
		for (f = 0; f < e->nr_fields; f++) {
			const struct hvt_hypevent_field *fl = &e->fields[f];
			struct tep_format_field *tf;

			tf = tep_find_field(ev, fl->name);
			if (!tf)
				t_fail("libtraceevent finds no field %s in %s",
				       fl->name, e->name);
			t_eq(tf->offset, fl->offset);
			t_eq(tf->size, fl->size);
			t_eq(!!(tf->flags & TEP_FIELD_IS_SIGNED),
			     fl->is_signed);
			t_assert(fl->offset + fl->size <= e->rec_size);
		}
		t_assert(hvt_hypevents_by_id(e->id) == e);
		t_assert(hvt_hypevents_by_name(e->name) == e);
	}
	t_assert(!hvt_hypevents_get(HVT_HYP_NR_EVENTS));
	t_assert(!hvt_hypevents_by_id(HVT_HYP_ID_BASE - 1));
	t_assert(!hvt_hypevents_by_id(HVT_HYP_ID_BASE + HVT_HYP_NR_EVENTS));
	t_assert(!hvt_hypevents_by_name("no_such_event"));
	t_assert(!hvt_hypevents_by_name(NULL));

	/* Spot checks against the declaration itself. */
	t_eq(hvt_hypevents_by_name("selftest")->rec_size, 16);
	t_assert(strstr(hvt_hypevents_by_name("selftest")->format,
			"\tfield:u64 id;\toffset:8;\tsize:8;\tsigned:0;\n"));
	t_assert(strstr(hvt_hypevents_by_name("selftest")->format,
			"print fmt: \"id=%llu\", REC->id\n"));
	t_assert(strstr(hvt_hypevents_by_name("host_hcall")->format,
			"\tfield:s64 ret;\toffset:40;\tsize:8;\tsigned:1;\n"));
}

struct expect {
	uint64_t ts;
	const char *text;
};

int main(void)
{
	static const struct expect want[] = {
		{ 1000, "hyp_enter ec=0x16 iss=0x0 elr=0x40203b7c" },
		{ 1001, "host_hcall func=0xc6000002 a0=0x1 a1=0x100000002 a2=0xfffffffffffffffe ret=4294967297" },
		{ 1001 + (1ULL << 28),
		  "host_hcall func=0xc600007f a0=0x0 a1=0x0 a2=0x0 ret=-1" },
		{ 1002 + (1ULL << 28), "hyp_exit elr=0x40203b7c" },
		{ 5000000000ULL, "selftest id=18446744073709551615" },
		{ 5000000001ULL,
		  "host_hcall func=0x0 a0=0x0 a1=0x0 a2=0x0 ret=-9223372036854775808" },
	};
	uint32_t nr = 4, size = 4096, n = 0;
	struct hvt_area_params p;
	struct tep_handle *tep;
	struct hvt_control *ctrl;
	struct kbuffer *kb;
	uint8_t *area, *page;
	uint64_t area_size, w, commit;
	unsigned long long ts;
	void *data;

	tep = tep_alloc();
	t_assert(tep);
	tep_set_long_size(tep, 8);
	tep_set_file_bigendian(tep, TEP_LITTLE_ENDIAN);
	tep_set_local_bigendian(tep, TEP_LITTLE_ENDIAN);
	check_formats(tep);

	/* A one-CPU area, formatted by the core as the EL2 image does. */
	area_size = hvt_area_size(1, nr, size);
	area = aligned_alloc(4096, area_size);
	t_assert(area);
	memset(area, 0, area_size);
	memset(&p, 0, sizeof(p));
	p.area_size = area_size;
	p.nr_cpus = 1;
	p.nr_subbufs = nr;
	p.subbuf_size = size;
	p.mode = HVT_MODE_OVERWRITE;
	p.writer_kind = HVT_WRITER_HYP;
	p.clock_id = HVT_CLOCK_COUNTER;
	p.clock_freq_hz = 62500000;
	p.clock_mult = 1U << 31;
	p.clock_shift = 27;
	p.name = "unit";
	t_ok(hvt_area_format(area, &p));
	t_ok(hvt_area_cpu(area, area_size, 0, &test_cb));
	ctrl = (struct hvt_control *)(area + HVT_CONTROL_OFFSET);

	/* Disabled: nothing is written. */
	test_clock = 10;
	t_eq(hvt_hyp_trace_selftest(7), 0);
	t_eq(HVT_WORD_OFFSET(test_cb.meta->write), 0);

	ctrl->enable[0] = HVT_HYP_ENABLE_MASK;
	test_clock = want[0].ts;
	t_ok(hvt_hyp_trace_hyp_enter(0x16, 0, 0x40203b7c));
	test_clock = want[1].ts;
	t_ok(hvt_hyp_trace_host_hcall(0xc6000002, 1, 0x100000002ULL, ~1ULL,
				      4294967297LL));
	test_clock = want[2].ts;	/* needs a TIME_EXTEND */
	t_ok(hvt_hyp_trace_host_hcall(0xc600007f, 0, 0, 0, -1));
	/* hyp_exit disabled: skipped without a trace. */
	ctrl->enable[0] &= ~(1ULL << HVT_HYP_EVENT_hyp_exit);
	test_clock = want[3].ts - 1;
	t_eq(hvt_hyp_trace_hyp_exit(0xdead), 0);
	ctrl->enable[0] |= 1ULL << HVT_HYP_EVENT_hyp_exit;
	test_clock = want[3].ts;
	t_ok(hvt_hyp_trace_hyp_exit(0x40203b7c));
	test_clock = want[4].ts;
	t_ok(hvt_hyp_trace_selftest(~0ULL));
	test_clock = want[5].ts;
	t_ok(hvt_hyp_trace_host_hcall(0, 0, 0, 0, INT64_MIN));
	t_eq(hvt_rb_entries(&test_cb), 6);

	/*
	 * Read the tail page as a host does: bound it by the commit word and
	 * hand a copy to kbuffer.
	 */
	w = test_cb.meta->write;
	t_eq(HVT_WORD_SEQ(w), 0);
	page = malloc(size);
	t_assert(page);
	memcpy(page, test_cb.pages, size);
	commit = HVT_WORD_OFFSET(w);
	memcpy(page + HVT_PAGE_COMMIT_OFF, &commit, 8);
	kb = kbuffer_alloc(KBUFFER_LSIZE_8, KBUFFER_ENDIAN_LITTLE);
	t_assert(kb);
	t_eq(kbuffer_load_subbuffer(kb, page), 0);
	for (data = kbuffer_read_event(kb, &ts); data;
	     data = kbuffer_next_event(kb, &ts)) {
		struct tep_record rec;
		struct trace_seq s;

		if (n >= sizeof(want) / sizeof(want[0]))
			t_fail("more records than were written");
		memset(&rec, 0, sizeof(rec));
		rec.ts = ts;
		rec.data = data;
		rec.size = kbuffer_event_size(kb);
		t_assert(tep_find_event_by_record(tep, &rec));
		trace_seq_init(&s);
		tep_print_event(tep, &s, &rec, "%s %s", TEP_PRINT_NAME,
				TEP_PRINT_INFO);
		trace_seq_terminate(&s);
		if (strcmp(s.buffer, want[n].text))
			t_fail("record %u prints\n  '%s'\nexpected\n  '%s'", n,
			       s.buffer, want[n].text);
		t_equ(ts, want[n].ts);
		trace_seq_destroy(&s);
		n++;
	}
	t_eq(n, sizeof(want) / sizeof(want[0]));

	kbuffer_free(kb);
	free(page);
	free(area);
	tep_free(tep);
	printf("PASS: %u hypervisor events: formats parse, %u records decode\n",
	       hvt_hypevents_count(), n);
	return 0;
}
