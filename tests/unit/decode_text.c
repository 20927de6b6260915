// SPDX-License-Identifier: MIT
/*
 * Decoding and trace_pipe text, checked against expectations computed
 * here from the kernel's documented rules (kernel/trace/trace_output.c),
 * not from the code under test:
 *
 *   - header_page/header_event text equals what tracefs prints (the live
 *     /sys/kernel/tracing files when this host's sub-buffers are 4 KiB,
 *     else the 6.x text from the reference notes);
 *   - selftest lines: "%16s-%-7d [%03d] FLAGS %5llu.%06llu: selftest:
 *     id=%llu", comm lookup (<idle>, <...>, <XXX>, 15-character cut),
 *     ns2usecs() rounding, every latency flag character;
 *   - lost-events lines, unknown ids, short records;
 *   - hostile or conflicting formats are refused, the same one twice is
 *     accepted, and hypervisor events load for hypervisor areas.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hvtrace.h>
#include <hvtrace/hyp_events.h>

#include "hvt_test.h"

static const char kernel_header_page_4k[] =
	"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
	"\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
	"\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
	"\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";

static const char kernel_header_event[] =
	"# compressed entry header\n"
	"\ttype_len    :    5 bits\n"
	"\ttime_delta  :   27 bits\n"
	"\tarray       :   32 bits\n"
	"\n"
	"\tpadding     : type == 29\n"
	"\ttime_extend : type == 30\n"
	"\ttime_stamp : type == 31\n"
	"\tdata max type_len  == 28\n";

static char *slurp(const char *path)
{
	static char buf[8192];
	ssize_t n;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return NULL;
	buf[n] = '\0';
	return buf;
}

static void test_headers(void)
{
	char buf[1024], *live;

	t_assert(hvtrace_header_page_text(4096, buf, sizeof(buf)) > 0);
	t_assert(!strcmp(buf, kernel_header_page_4k));
	t_assert(hvtrace_header_event_text(buf, sizeof(buf)) > 0);
	t_assert(!strcmp(buf, kernel_header_event));
	t_assert(hvtrace_header_page_text(65536, buf, sizeof(buf)) > 0);
	t_assert(strstr(buf, "\tfield: char data;\toffset:16;\tsize:65520;"));

	/* The live kernel, when its sub-buffers are 4 KiB like ours. */
	live = slurp("/sys/kernel/tracing/buffer_subbuf_size_kb");
	if (live && atoi(live) == 4) {
		live = slurp("/sys/kernel/tracing/events/header_page");
		if (live) {
			hvtrace_header_page_text(4096, buf, sizeof(buf));
			t_assert(!strcmp(buf, live));
		}
	}
	live = slurp("/sys/kernel/tracing/events/header_event");
	if (live) {
		hvtrace_header_event_text(buf, sizeof(buf));
		t_assert(!strcmp(buf, live));
	}
}

/* The kernel's latency flags, spelled out case by case. */
static void kernel_flags(uint8_t f, uint8_t pc, char out[6])
{
	int irqs_off = f & 0x01, lazy = f & 0x02, nr = f & 0x04;
	int hard = f & 0x08, soft = f & 0x10, pr = f & 0x20;
	int nmi = f & 0x40, bh = f & 0x80;

	if (irqs_off && bh)
		out[0] = 'D';
	else if (irqs_off)
		out[0] = 'd';
	else if (bh)
		out[0] = 'b';
	else
		out[0] = '.';
	if (nr && lazy && pr)
		out[1] = 'B';
	else if (nr && pr && !lazy)
		out[1] = 'N';
	else if (lazy && pr && !nr)
		out[1] = 'L';
	else if (nr && lazy && !pr)
		out[1] = 'b';
	else if (nr && !lazy && !pr)
		out[1] = 'n';
	else if (pr && !nr && !lazy)
		out[1] = 'p';
	else if (lazy && !nr && !pr)
		out[1] = 'l';
	else
		out[1] = '.';
	if (nmi && hard)
		out[2] = 'Z';
	else if (nmi)
		out[2] = 'z';
	else if (hard && soft)
		out[2] = 'H';
	else if (hard)
		out[2] = 'h';
	else if (soft)
		out[2] = 's';
	else
		out[2] = '.';
	snprintf(&out[3], 2, "%s", (pc & 0xf) ? "" : ".");
	if (pc & 0xf)
		snprintf(&out[3], 2, "%x", pc & 0xf);
	if (pc & 0xf0)
		snprintf(&out[4], 2, "%x", pc >> 4);
	else
		out[4] = '.';
	out[5] = '\0';
}

struct selftest_rec {
	uint16_t type;
	uint8_t flags;
	uint8_t pc;
	int32_t pid;
	uint64_t id;
};

static void check_line(struct hvtrace_decoder *d, int cpu, uint8_t flags,
		       uint8_t pc, int32_t pid, uint64_t id, uint64_t ts,
		       const char *comm)
{
	struct selftest_rec sr = { HVTRACE_EVENT_SELFTEST_ID, flags, pc, pid,
				   id };
	struct hvtrace_record rec = {
		.ts = ts, .host_ns = ts, .data = &sr, .size = sizeof(sr),
		.cpu = cpu,
	};
	char got[256], want[256], fl[6];
	unsigned long long us = ts / 1000 + (ts % 1000 >= 500);
	int n;

	kernel_flags(flags, pc, fl);
	snprintf(want, sizeof(want),
		 "%16s-%-7d [%03d] %s %5llu.%06llu: selftest: id=%llu\n", comm,
		 (int)pid, cpu, fl, us / 1000000, us % 1000000,
		 (unsigned long long)id);
	n = hvtrace_decoder_format(d, &rec, ts, 0, got, sizeof(got));
	t_eq(n, strlen(want));
	if (strcmp(got, want))
		t_fail("line differs:\n got  '%s'\n want '%s'", got, want);
}

static void test_lines(void)
{
	struct hvtrace_decoder *d;
	const char *sys, *name;
	unsigned int f;

	t_ok(hvtrace_decoder_new(4096, &d));
	t_ok(hvtrace_decoder_add_builtin(d, HVT_WRITER_LOOPBACK));
	t_ok(hvtrace_decoder_event_name(d, HVTRACE_EVENT_SELFTEST_ID, &sys,
					&name));
	t_assert(!strcmp(sys, "hvtrace") && !strcmp(name, "selftest"));

	t_ok(hvtrace_decoder_set_comm(d, 4242, "hvt-lb/0"));
	t_ok(hvtrace_decoder_set_comm(d, 77, "a-very-long-command-name"));
	t_assert(!strcmp(hvtrace_decoder_comm(d, 77), "a-very-long-com"));
	t_assert(!hvtrace_decoder_comm(d, 78));
	t_eq(hvtrace_decoder_set_comm(d, 0, "x"), -EINVAL);

	check_line(d, 0, 0, 0, 4242, 0, 1000000000ULL, "hvt-lb/0");
	check_line(d, 1, 0, 0, 4243, 12345678901234ULL, 1999999500ULL,
		   "<...>");
	check_line(d, 2, 0, 0, 0, 7, 1234567ULL, "<idle>");
	check_line(d, 3, 0, 0, -5, 7, 499ULL, "<XXX>");
	check_line(d, 63, 0, 0, 77, 1, 98765432123456789ULL,
		   "a-very-long-com");
	check_line(d, 1000, 0, 0, 1234567, 9, 5ULL, "<...>");
	/* Every flag combination and a few preempt counts. */
	for (f = 0; f < 256; f++)
		check_line(d, 1, (uint8_t)f, (uint8_t)(f * 37), 4242, f,
			   1000 * f + 123456, "hvt-lb/0");

	/* Many pids: the comm table grows and keeps them all. */
	for (f = 1; f < 3000; f++) {
		char c[16];

		snprintf(c, sizeof(c), "task%u", f);
		t_ok(hvtrace_decoder_set_comm(d, (int)(f * 7919), c));
	}
	for (f = 1; f < 3000; f++) {
		char c[16];

		snprintf(c, sizeof(c), "task%u", f);
		t_assert(!strcmp(hvtrace_decoder_comm(d, (int)(f * 7919)), c));
	}
	hvtrace_decoder_free(d);
}

static void test_odd_records(void)
{
	struct hvtrace_decoder *d;
	struct hvtrace_record rec = { .ts = 2000, .cpu = 3 };
	uint8_t buf[64];
	char out[256];
	int n;

	t_ok(hvtrace_decoder_new(4096, &d));
	t_ok(hvtrace_decoder_add_builtin(d, HVT_WRITER_LOOPBACK));

	/* An id nobody declared. */
	memset(buf, 0, sizeof(buf));
	buf[0] = 0x34;
	buf[1] = 0x12;
	rec.data = buf;
	rec.size = 16;
	n = hvtrace_decoder_format(d, &rec, 2000, 0, out, sizeof(out));
	t_assert(n > 0);
	t_assert(!strcmp(out, "          <idle>-0       [003] .....     "
			      "0.000002: UNKNOWN id=4660\n"));

	/* A selftest record cut short: decoded from zero padding. */
	buf[0] = HVTRACE_EVENT_SELFTEST_ID & 0xff;
	buf[1] = HVTRACE_EVENT_SELFTEST_ID >> 8;
	rec.size = 8;
	n = hvtrace_decoder_format(d, &rec, 2000, 0, out, sizeof(out));
	t_assert(n > 0);
	t_assert(!strcmp(out, "          <idle>-0       [003] .....     "
			      "0.000002: selftest: id=0\n"));

	/* Shorter than the common fields: not decoded as the event its
	 * first bytes name. */
	rec.size = 4;
	n = hvtrace_decoder_format(d, &rec, 2000, 0, out, sizeof(out));
	t_assert(strstr(out, "UNKNOWN id=57344\n"));

	/* Raw counter timestamps, as the kernel prints non-ns clocks. */
	rec.size = 16;
	n = hvtrace_decoder_format(d, &rec, 123456789, HVTRACE_TEXT_RAW_TS,
				   out, sizeof(out));
	t_assert(!strcmp(out, "          <idle>-0       [003] .....    "
			      "123456789: selftest: id=0\n"));

	/* A buffer too small: cut, length still reported. */
	n = hvtrace_decoder_format(d, &rec, 2000, 0, out, 10);
	t_eq(n, strlen("          <idle>-0       [003] .....     "
		       "0.000002: selftest: id=0\n"));
	t_eq(strlen(out), 9);

	t_eq(hvtrace_format_lost(1, 42, out, sizeof(out)),
	     strlen("CPU:1 [LOST 42 EVENTS]\n"));
	t_assert(!strcmp(out, "CPU:1 [LOST 42 EVENTS]\n"));
	hvtrace_format_lost(12, HVTRACE_LOST_UNKNOWN, out, sizeof(out));
	t_assert(!strcmp(out, "CPU:12 [LOST EVENTS]\n"));
	hvtrace_decoder_free(d);
}

#define FMT_HEAD(name, id)                                                   \
	"name: " name "\nID: " id "\nformat:\n"                              \
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\t"          \
	"signed:0;\n"                                                        \
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\t"          \
	"signed:0;\n"                                                        \
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\t"  \
	"signed:0;\n"                                                        \
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"

static void test_formats(void)
{
	static const char good[] =
		FMT_HEAD("probe", "300")
		"\tfield:u32 cookie;\toffset:8;\tsize:4;\tsigned:0;\n"
		"\tfield:__data_loc char[] msg;\toffset:12;\tsize:4;\t"
		"signed:0;\n\n"
		"print fmt: \"cookie=%u msg=%s\", REC->cookie, "
		"__get_str(msg)\n";
	static const char other[] =
		FMT_HEAD("other", "300")
		"\tfield:u32 x;\toffset:8;\tsize:4;\tsigned:0;\n\n"
		"print fmt: \"x=%u\", REC->x\n";
	static const char far[] =
		FMT_HEAD("far", "301")
		"\tfield:u64 x;\toffset:70000;\tsize:8;\tsigned:0;\n\n"
		"print fmt: \"x=%llu\", REC->x\n";
	static const char noid[] = "name: noid\nformat:\n";
	struct hvtrace_decoder *d;
	struct hvtrace_record rec = { .ts = 1000, .cpu = 0 };
	uint8_t buf[64];
	uint32_t loc;
	char out[256];
	const struct hvt_hypevent *hev;
	const char *sys, *name;

	t_ok(hvtrace_decoder_new(4096, &d));
	t_ok(hvtrace_decoder_add_format(d, "probes", good, strlen(good)));
	t_ok(hvtrace_decoder_add_format(d, "probes", good, strlen(good)));
	t_eq(hvtrace_decoder_add_format(d, "probes", other, strlen(other)),
	     -EEXIST);
	t_eq(hvtrace_decoder_add_format(d, "probes", far, strlen(far)),
	     -EINVAL);
	t_assert(strstr(hvtrace_last_error(), "64 KiB"));
	t_eq(hvtrace_decoder_add_format(d, "probes", noid, strlen(noid)),
	     -EINVAL);
	t_eq(hvtrace_decoder_add_format(d, "probes", "garbage", 7), -EINVAL);

	/* A record of the added event, with a __data_loc string. */
	memset(buf, 0, sizeof(buf));
	buf[0] = 300 & 0xff;
	buf[1] = 300 >> 8;
	buf[4] = 9;
	buf[8] = 0xef;
	buf[9] = 0xbe;
	loc = (6u << 16) | 16u;	/* len 6 at offset 16 */
	memcpy(buf + 12, &loc, 4);
	memcpy(buf + 16, "hello", 6);
	rec.data = buf;
	rec.size = 24;
	t_assert(hvtrace_decoder_format(d, &rec, 1000, 0, out, sizeof(out)) >
		 0);
	t_assert(!strcmp(out, "           <...>-9       [000] .....     "
			      "0.000001: probe: cookie=48879 msg=hello\n"));
	/* A hostile __data_loc pointing far outside the record stays
	 * inside the decoder's padded copy. */
	loc = (0xffffu << 16) | 0xfff0u;
	memcpy(buf + 12, &loc, 4);
	t_assert(hvtrace_decoder_format(d, &rec, 1000, 0, out, sizeof(out)) >
		 0);
	hvtrace_decoder_free(d);

	/* A hypervisor area gets the hypervisor's events. */
	t_ok(hvtrace_decoder_new(4096, &d));
	t_ok(hvtrace_decoder_add_builtin(d, HVT_WRITER_HYP));
	hev = hvt_hypevents_get(0);
	t_assert(hev);
	t_ok(hvtrace_decoder_event_name(d, hev->id, &sys, &name));
	t_assert(!strcmp(sys, hev->system) && !strcmp(name, hev->name));
	t_ok(hvtrace_decoder_event_name(d, HVTRACE_EVENT_SELFTEST_ID, &sys,
					&name));
	t_eq(hvtrace_decoder_event_name(d, 12345, &sys, &name), -ENOENT);
	hvtrace_decoder_free(d);

	t_eq(hvtrace_decoder_new(1000, &d), -EINVAL);
}

int main(void)
{
	test_headers();
	test_lines();
	test_odd_records();
	test_formats();
	printf("ok: headers, trace_pipe lines, odd records, formats\n");
	return 0;
}
