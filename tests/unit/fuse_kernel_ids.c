// SPDX-License-Identifier: MIT
/*
 * The guest kernel's events in the tracefs-style view (host/fuse/kmap.c,
 * view.c), without a mount: a remote with a user event of id 32768 gets a
 * guest kernel whose formats (a folder laid out like tracefs) name
 * ftrace/print with id 5 and sched/s1 with id 32768, the user event's.
 *
 *   - ids: print keeps 5, s1 is served as 0x7fff (the highest free id
 *     below 0x8000), the user event keeps 32768; the served format says
 *     "ID: 32767"; enable states from the instance's list;
 *   - a hostile guest page (a record of a type no format names, one
 *     shorter than the common header) loses exactly those two records,
 *     reported as the loss before the next record;
 *   - trace_pipe_raw of CPU 0 gives the guest kernel's records and the
 *     user events of the same CPU merged by time, each once, the
 *     kernel's with their served ids and their payload untouched;
 *   - a second user event that takes id 5 moves print elsewhere;
 *   - 3000 pages of random types and scribbled bytes on CPU 1: each one
 *     is taken or skipped as a loss, never a crash; what comes out of
 *     trace_pipe_raw walks cleanly, carries only served ids, and is
 *     exactly the records that were kept;
 *   - without a kernel ring again (a new run), its events go;
 *   - the text of `trace` decodes the kernel's records with the guest's
 *     formats (print's buffer) and names pid 7 from its saved_cmdlines.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hvtrace/config.h>

#include "hvt_test.h"

#if !IS_ENABLED(CONFIG_HVT_HOST_FUSE)
int main(void)
{
	t_skip("this build has no FUSE view (CONFIG_HVT_HOST_FUSE)");
}
#else
#include <hvtrace-daemon.h>
#include <hvtrace-events.h>

#include "../../host/fuse/fuse-local.h"
#include "../../host/fuse/kmap.h"
#include "kfmt_common.h"

static const char print_fmt[] =
	"name: print\nID: 5\nformat:\n" KFMT_COMMON
	"\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n"
	"\tfield:char buf[];\toffset:16;\tsize:0;\tsigned:1;\n\n"
	"print fmt: \"%s\", REC->buf\n";
static const char s1_fmt[] = "name: s1\nID: 32768\nformat:\n" KFMT_COMMON
			     "\tfield:int v;\toffset:8;\tsize:4;\tsigned:1;\n\n"
			     "print fmt: \"v=%d\", REC->v\n";
static const char ue_fmt[] =
	"name: ue\nID: %u\nformat:\n" KFMT_COMMON
	"\tfield:u32 seq;\toffset:8;\tsize:4;\tsigned:0;\n\n"
	"print fmt: \"seq=%%u\", REC->seq\n";

static char dir[64];
static uint64_t rng = 0x2545f4914f6cdd1dULL;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void put(const char *rel, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	f = fopen(path, "w");
	t_assert(f);
	fputs(text, f);
	fclose(f);
}

static void mk(const char *rel)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	t_assert(!mkdir(path, 0700));
}

static const struct fz_src_ops no_ops;

static struct fz_event *user_events(unsigned int n, const uint32_t *ids)
{
	struct fz_event *ev = calloc(n, sizeof(*ev));
	unsigned int i;

	t_assert(ev);
	for (i = 0; i < n; i++) {
		snprintf(ev[i].system, sizeof(ev[i].system), "user_events");
		snprintf(ev[i].name, sizeof(ev[i].name), i ? "ue%u" : "ue", i);
		ev[i].id = ids[i];
		ev[i].bit = (int)i;
		ev[i].enabled = true;
		t_assert(asprintf(&ev[i].format, ue_fmt, ids[i]) > 0);
	}
	return ev;
}

static const struct fz_event *find(struct fz_remote *r, const char *sys,
				   const char *name)
{
	const struct fz_event *e = fz_event_find(r, sys, name);

	t_assert(e);
	return e;
}

struct pages {
	uint8_t page[4096];
	uint32_t size;
	int n;
};

static int emit(void *ctx, const uint8_t *page, uint32_t size)
{
	struct pages *p = ctx;

	memcpy(p->page, page, size);
	memset(p->page + size, 0, sizeof(p->page) - size);
	p->size = size;
	p->n++;
	return 0;
}

/* One sub-buffer of @n records: type, timestamp, payload length. */
static void page_of(struct pages *out, const uint16_t *type, const uint64_t *ts,
		    const uint32_t *len, unsigned int n)
{
	struct hvtrace_pack pk;
	uint8_t rec[64];
	unsigned int i;

	out->n = 0;
	t_ok(hvtrace_pack_init(&pk, 4096, emit, out));
	for (i = 0; i < n; i++) {
		memset(rec, 0, sizeof(rec));
		memcpy(rec, &type[i], 2);
		rec[4] = 7; /* pid 7 */
		if (len[i] >= 16)
			snprintf((char *)rec + 16, len[i] - 16, "m%u", i);
		else if (len[i] >= 12)
			memcpy(rec + 8, &i, 4);
		t_ok(hvtrace_pack_add_event(&pk, ts[i], rec, len[i]));
	}
	t_ok(hvtrace_pack_flush(&pk));
	hvtrace_pack_fini(&pk);
	t_eq(out->n, 1);
}

struct seen {
	uint16_t type[32];
	uint64_t ts[32];
	uint8_t byte4[32];
	unsigned int n;
	uint64_t lost;
};

static int walk_cb(void *arg, uint64_t ts, const uint8_t *p, uint32_t len)
{
	struct seen *s = arg;

	t_assert(s->n < 32 && len >= 8);
	memcpy(&s->type[s->n], p, 2);
	s->ts[s->n] = ts;
	s->byte4[s->n] = p[4];
	s->n++;
	return 0;
}

int main(void)
{
	static const uint32_t ids1[] = {32768}, ids2[] = {32768, 5};
	/* The guest kernel's page of CPU 0: print, s1, an unknown type, a
	 * record shorter than the common header, print. */
	static const uint16_t kt[] = {5, 32768, 77, 5, 5};
	static const uint64_t kts[] = {100, 300, 350, 360, 500};
	static const uint32_t kl[] = {24, 12, 12, 4, 24};
	/* The remote's user events of CPU 0, in between. */
	static const uint16_t ut[] = {(uint16_t)32768, (uint16_t)32768};
	static const uint64_t uts[] = {200, 400};
	static const uint32_t ul[] = {12, 12};
	static const uint16_t want_type[] = {5, 32768, 0x7fff, 32768, 5};
	static const uint64_t want_ts[] = {100, 200, 300, 400, 500};
	struct fz_view v;
	struct fz_remote *r;
	struct fz_kmap *m;
	struct hvtrace_decoder *dec;
	struct fz_chunk *c;
	struct pages pg;
	struct seen s = {0};
	uint8_t out[4096];
	const struct fz_event *e;
	char *text;
	size_t len;
	uint64_t lost = 0;
	int err, n;
	unsigned int i;

	snprintf(dir, sizeof(dir), "/tmp/hvt-kids.XXXXXX");
	t_assert(mkdtemp(dir));
	mk("events");
	mk("events/ftrace");
	mk("events/ftrace/print");
	mk("events/sched");
	mk("events/sched/s1");
	mk("events/sched/s2");
	n = hvtrace_header_page_text(4096, (char *)out, sizeof(out));
	t_assert(n > 0);
	put("events/header_page", (char *)out);
	put("events/ftrace/print/format", print_fmt);
	put("events/sched/s1/format", s1_fmt);
	/* A format without an ID line: left out. */
	put("events/sched/s2/format", "name: s2\nformat:\n");
	put("printk_formats", "0xffffffff81000000 : \"hello\"\n");
	put("saved_cmdlines", "7 kworker\n");

	fz_view_init(&v);
	pthread_mutex_lock(&v.lock);
	r = fz_remote_add(&v, "g", &no_ops, NULL);
	t_assert(r);
	t_ok(fz_remote_set_geometry(r, 2, 8, 4096, HVT_WRITER_GUEST,
				    HVT_MODE_OVERWRITE, HVT_CLOCK_MONO_NS, 1));
	t_ok(fz_remote_set_events(r, user_events(1, ids1), 1, NULL, NULL));
	m = fz_kmap_new();
	t_assert(m);
	t_ok(fz_kmap_load(m, dir, "sched:s1,ftrace"));
	t_eq(m->nev, 2);
	t_ok(hvtrace_decoder_new_kernel(dir, &dec));
	t_ok(fz_remote_set_kernel(r, m, dec, 2, strdup("p"), strdup("7 k\n")));

	/* Ids: kept where free, renumbered where taken. */
	t_eq(r->nev, 3);
	t_eq(find(r, "user_events", "ue")->id, 32768);
	e = find(r, "ftrace", "print");
	t_assert(e->kernel && e->id == 5 && e->enabled && !e->unknown);
	e = find(r, "sched", "s1");
	t_assert(e->kernel && e->id == 0x7fff && e->enabled);
	t_assert(strstr(e->format, "\nID: 32767\n"));
	t_assert(!strstr(e->format, "32768"));

	/* A hostile page: two records cannot be named. */
	page_of(&pg, kt, kts, kl, 5);
	c = fz_chunk_from_page(pg.page, 4096, 0, r->kmap, &err);
	t_assert(c);
	t_eq(c->n, 3);
	t_equ(c->ev[2].lost, 2); /* before the last print */
	fz_ingest_kernel(r, 0, c);
	page_of(&pg, ut, uts, ul, 2);
	c = fz_chunk_from_page(pg.page, 4096, 0, NULL, &err);
	t_assert(c);
	fz_ingest(r, 0, c);
	t_assert(fz_has_data(r, 0));

	/* The text: the guest's formats decode its records. */
	text = fz_trace_text(r, 0, &len);
	t_assert(text &&
		 strstr(text,
			"kworker-7       [000] .....     0.000000: m0\n") &&
		 strstr(text, "s1: v=1") && strstr(text, "ue: seq=") &&
		 strstr(text, "[LOST 2 EVENTS]"));
	free(text);

	/* Raw pages: merged by time, served ids, the loss where it was. */
	while (fz_take_raw(r, 0, out)) {
		uint64_t l = 0;

		t_assert(hvtrace_daemon_page_walk(out, 4096, &l, walk_cb, &s) >=
			 0);
		lost += l;
	}
	t_eq(s.n, 5);
	for (i = 0; i < s.n; i++) {
		t_eq(s.type[i], want_type[i]);
		t_equ(s.ts[i], want_ts[i]);
		t_eq(s.byte4[i], 7);
	}
	t_equ(lost, 2);
	t_assert(!fz_has_data(r, 0) && !fz_has_data(r, 1));
	t_equ(fz_q(r, 0, true)->read, 3);
	t_equ(fz_q(r, 0, true)->overrun, 2);

	/* A user event that takes 5: print moves, s1 keeps 0x7fff. */
	t_ok(fz_remote_set_events(r, user_events(2, ids2), 2, NULL, NULL));
	t_eq(r->nev, 4);
	t_eq(find(r, "ftrace", "print")->id, 0x7ffe);
	t_eq(find(r, "sched", "s1")->id, 0x7fff);
	t_assert(strstr(find(r, "ftrace", "print")->format, "\nID: 32766\n"));

	/* Hostile pages on CPU 1: random types (some known, some not),
	 * lengths, then random bytes scribbled over the page. */
	for (i = 0; i < 3000; i++) {
		uint16_t ty[8];
		uint64_t tt[8];
		uint32_t tl[8], k, nrec = 1 + rnd() % 8, kept;
		static const uint16_t pick[] = {5, 32768, 77, 0, 0x7fff};

		for (k = 0; k < nrec; k++) {
			ty[k] = pick[rnd() % 5];
			tt[k] = 1000 + i * 10 + k;
			tl[k] = 4 * (1 + rnd() % 12);
		}
		page_of(&pg, ty, tt, tl, nrec);
		for (k = rnd() % 4; k; k--)
			pg.page[rnd() % (pg.size < 4088 ? pg.size + 8 : 4096)] =
				(uint8_t)rnd();
		c = fz_chunk_from_page(pg.page, 4096, 0, r->kmap, &err);
		t_assert(c);
		kept = c->n;
		fz_ingest_kernel(r, 1, c);
		n = 0;
		while (fz_take_raw(r, 1, out)) {
			struct seen s1 = {0};
			uint64_t l = 0;
			uint32_t j;

			t_assert(hvtrace_daemon_page_walk(out, 4096, &l,
							  walk_cb, &s1) >= 0);
			for (j = 0; j < s1.n; j++)
				t_assert(s1.type[j] == 0x7ffe ||
					 s1.type[j] == 0x7fff);
			n += (int)s1.n;
		}
		t_eq(n, (int)kept);
	}

	/* A new run without a kernel ring: the kernel's events go. */
	t_ok(fz_remote_set_kernel(r, NULL, NULL, 0, NULL, NULL));
	t_eq(r->nev, 2);
	t_assert(!fz_event_find(r, "ftrace", "print") && !r->kmap &&
		 !r->knr_cpus);

	/* Not known: no list. */
	m = fz_kmap_new();
	t_ok(fz_kmap_load(m, dir, NULL));
	t_eq(m->ev[0].enabled, -1);
	fz_kmap_free(m);

	fz_remote_remove(r);
	pthread_mutex_unlock(&v.lock);
	fz_view_fini(&v);
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		t_eq(system(cmd), 0);
	}
	printf("PASS: guest kernel ids kept or renumbered, hostile records "
	       "counted lost, pages merged by time\n");
	return 0;
}
#endif
