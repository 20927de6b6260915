// SPDX-License-Identifier: MIT
/*
 * trace.dat writer -> reader round trip: a file with four buffers of
 * different CPU counts and page sizes (one empty), ties across buffers,
 * TIME_EXTENDs, records over 112 bytes and a __data_loc string, losses of
 * known and unknown size.  The reader must give back every event in time
 * order (ties: buffer, then CPU), byte for byte, with the losses before
 * the right events; libtraceevent must decode the fields from the formats
 * saved in the file; the printed line must carry the saved comm.
 *
 * The same with each layout of the writer's rooms (gen.h): none, every
 * buffer in its rooms, and some in rooms while one outgrew them; the
 * layout is checked in the file (what section follows the file header,
 * and the outgrown rooms' "unused room" section).
 *
 *   tracedat_roundtrip [--keep PATH [--rooms N]]
 *          also leave the file with rooms N (0 none, 1 all, 2 some) at
 *          PATH (the trace-cmd comparison in tests/tracedat uses it)
 */
#include <stdlib.h>
#include <unistd.h>

#include <event-parse.h>

#include "../tracedat/gen.h"

static struct gen g;
static const struct gen_event *order[GEN_MAX_EVENTS];

/* Is @s (with its NUL) in the file at @path? */
static bool file_has(const char *path, const char *s)
{
	size_t n, k = strlen(s) + 1, i;
	FILE *f = fopen(path, "rb");
	bool found = false;
	char *buf;
	long len;

	t_assert(f && !fseek(f, 0, SEEK_END) && (len = ftell(f)) > 0);
	buf = malloc((size_t)len);
	t_assert(buf && !fseek(f, 0, SEEK_SET));
	n = fread(buf, 1, (size_t)len, f);
	fclose(f);
	for (i = 0; i + k <= n && !found; i++)
		found = !memcmp(buf + i, s, k);
	free(buf);
	return found;
}

/* The layout @rooms gave: the section after the file header, and the
 * outgrown rooms' section when some buffer outgrew its rooms. */
static void check_layout(const char *path, enum gen_rooms rooms)
{
	uint8_t id[2];
	FILE *f = fopen(path, "rb");

	t_assert(f);
	t_assert(!fseek(f, 32, SEEK_SET) && fread(id, 1, 2, f) == 2);
	fclose(f);
	/* 16 HEADER_INFO first without rooms, 3 BUFFER with. */
	t_eq(id[0] | id[1] << 8, rooms == GEN_ROOMS_NONE ? 16 : 3);
	t_eq(file_has(path, "unused room"), rooms == GEN_ROOMS_SOME);
}

static int round_trip(int argc, char **argv, enum gen_rooms rooms)
{
	struct hvtrace_tracedat_file *f;
	struct hvtrace_tracedat_event ev;
	struct tep_handle *tep;
	char path[] = "/tmp/hvt-tdat-rt-XXXXXX";
	unsigned int i = 0, lost_known = 0, lost_unknown = 0;
	char *line = NULL;
	size_t len = 0;
	FILE *mem;
	int fd, ret;

	fd = mkstemp(path);
	t_assert(fd >= 0);
	close(fd);
	gen_file_rooms(&g, path, rooms);
	gen_sorted(&g, order);
	check_layout(path, rooms);

	t_ok(hvtrace_tracedat_open(path, &f));
	t_eq(hvtrace_tracedat_version(f), 7);
	t_eq(hvtrace_tracedat_nr_buffers(f), 4);
	t_assert(!strcmp(hvtrace_tracedat_buffer_name(f, 0), ""));
	t_assert(!strcmp(hvtrace_tracedat_buffer_name(f, 1), "wide"));
	t_assert(!strcmp(hvtrace_tracedat_buffer_name(f, 2), "single"));
	t_assert(!strcmp(hvtrace_tracedat_buffer_name(f, 3), "empty"));
	t_eq(hvtrace_tracedat_buffer_cpus(f, 0), 2);
	t_eq(hvtrace_tracedat_buffer_cpus(f, 1), 3);
	t_eq(hvtrace_tracedat_buffer_cpus(f, 2), 1);
	t_eq(hvtrace_tracedat_buffer_cpus(f, 3), 2);
	t_assert(!strcmp(hvtrace_tracedat_buffer_clock(f, 1), "mono"));
	tep = hvtrace_tracedat_tep(f);
	t_assert(tep);

	while ((ret = hvtrace_tracedat_next(f, &ev)) > 0) {
		const struct gen_event *w;
		struct tep_record rec = {0};
		struct tep_event *e;
		unsigned long long v;

		t_assert(i < g.nr);
		w = order[i];
		if (ev.buffer != w->buffer || ev.cpu != w->cpu ||
		    ev.ts != w->ts)
			t_fail("event %u: got buffer %u cpu %u ts %llu, "
			       "expected "
			       "buffer %u cpu %u ts %llu",
			       i, ev.buffer, ev.cpu, (unsigned long long)ev.ts,
			       w->buffer, w->cpu, (unsigned long long)w->ts);
		t_eq(ev.missed, w->missed);
		if (ev.missed > 0)
			lost_known += (unsigned int)ev.missed;
		if (ev.missed < 0)
			lost_unknown++;
		t_eq(ev.size, w->size);
		t_memeq(ev.data, w->data, w->size);

		/* libtraceevent decodes it with the saved formats. */
		rec.ts = ev.ts;
		rec.size = (int)ev.size;
		rec.data = (void *)ev.data;
		rec.cpu = (int)ev.cpu;
		e = tep_find_event_by_record(tep, &rec);
		t_assert(e && !strcmp(e->system, "tdt"));
		if (e->id == GEN_ID_SMALL) {
			uint64_t b;

			memcpy(&b, w->data + 16, 8);
			t_ok(tep_get_field_val(NULL, e, "b", &rec, &v, 1));
			t_equ(v, b);
		} else if (e->id == GEN_ID_BIG) {
			int l;
			const char *s =
				tep_get_field_raw(NULL, e, "buf", &rec, &l, 1);

			t_assert(s && l == 200 && !strncmp(s, "big-", 4));
		}
		i++;
	}
	t_ok(ret);
	t_eq(i, g.nr);
	t_eq(lost_known, 17 + 5);
	t_eq(lost_unknown, 1);
	t_eq(hvtrace_tracedat_errors(f), 0);
	hvtrace_tracedat_close(f);

	/* Printed like trace-cmd, with the comm and the decoded string. */
	t_ok(hvtrace_tracedat_open(path, &f));
	mem = open_memstream(&line, &len);
	t_assert(mem);
	for (i = 0; (ret = hvtrace_tracedat_next(f, &ev)) > 0; i++) {
		uint16_t id;

		memcpy(&id, ev.data, 2);
		if (id == GEN_ID_STR && ev.buffer == 2 && !ev.missed) {
			hvtrace_tracedat_print_event(f, &ev, mem);
			break;
		}
	}
	fclose(mem);
	hvtrace_tracedat_close(f);
	t_assert(line);
	printf("printed: %s", line);
	t_assert(strstr(line, "single: "));
	t_assert(strstr(line, GEN_COMM "-4242"));
	t_assert(strstr(line, " str: "));
	t_assert(strstr(line, "msg 200000"));
	free(line);

	if (argc >= 3 && !strcmp(argv[1], "--keep")) {
		if (rename(path, argv[2]))
			t_fail("cannot move the file to %s", argv[2]);
	} else {
		unlink(path);
	}
	printf("rooms %d: %u events, %u + %u lost, in the order and with the "
	       "bytes written\n",
	       (int)rooms, g.nr, lost_known, lost_unknown);
	return 0;
}

int main(int argc, char **argv)
{
	int rooms;

	if (argc >= 3 && !strcmp(argv[1], "--keep")) {
		rooms = argc == 5 && !strcmp(argv[3], "--rooms")
				? atoi(argv[4])
				: GEN_ROOMS_NONE;
		t_assert(rooms >= GEN_ROOMS_NONE && rooms <= GEN_ROOMS_SOME);
		return round_trip(argc, argv, (enum gen_rooms)rooms);
	}
	for (rooms = GEN_ROOMS_NONE; rooms <= GEN_ROOMS_SOME; rooms++)
		round_trip(argc, argv, (enum gen_rooms)rooms);
	return 0;
}
