// SPDX-License-Identifier: MIT
/*
 * A decoder's pid -> comm table as a library API: the names records give
 * (hvtrace_decoder_learn_comms()), the walk of every name or only the
 * learned ones (hvtrace_decoder_comm_each(), what a recording writes
 * into its trace.dat), and its bound: one entry per slot pid % 32768, as
 * the kernel's own map of saved_cmdlines, so a ring naming 100000 pids
 * costs at most 32768 entries, the pids it pushed out counted.
 *   - learn_comms returns how many names a record gave: 2 for a
 *     sched_switch of two tasks, 0 for pid 0, for an event that names
 *     nobody, for a short record;
 *   - a format that arrives after records of its id were seen is used
 *     from then on (the per-id lookup is redone);
 *   - table names and learned names, walked with and without
 *     HVTRACE_COMM_LEARNED; a walk stopped by its callback;
 *   - bad arguments are refused with -EINVAL.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace.h>

#include "hvt_test.h"
#include "kfmt_common.h"


/* sched_switch of 6.12, as the kernel prints it (print fmt shortened). */
static const char f_switch[] =
	"name: sched_switch\nID: 310\nformat:\n" KFMT_COMMON
	"\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
	"\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n"
	"\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n"
	"\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n"
	"\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n\n"
	"print fmt: \"prev_comm=%s prev_pid=%d ==> next_comm=%s "
	"next_pid=%d\", REC->prev_comm, REC->prev_pid, REC->next_comm, "
	"REC->next_pid\n";

static uint8_t rec_buf[64];

static struct hvtrace_record *sw(uint64_t ts, const char *prev, int32_t ppid,
				 const char *next, int32_t npid)
{
	static struct hvtrace_record rec;
	uint16_t id = 310;

	memset(rec_buf, 0, sizeof(rec_buf));
	memcpy(rec_buf, &id, 2);
	memcpy(rec_buf + 8, prev, strnlen(prev, 16));
	memcpy(rec_buf + 24, &ppid, 4);
	memcpy(rec_buf + 40, next, strnlen(next, 16));
	memcpy(rec_buf + 56, &npid, 4);
	memset(&rec, 0, sizeof(rec));
	rec.ts = ts;
	rec.data = rec_buf;
	rec.size = 64;
	return &rec;
}

struct walk {
	unsigned int n, stop_at;
	int pids[8];
	char comms[8][16];
};

static int walk_fn(void *arg, int pid, const char *comm)
{
	struct walk *w = arg;

	if (w->n < 8) {
		w->pids[w->n] = pid;
		snprintf(w->comms[w->n], 16, "%s", comm);
	}
	w->n++;
	return w->stop_at && w->n == w->stop_at ? 42 : 0;
}

static const char *walked(const struct walk *w, int pid)
{
	unsigned int i;

	for (i = 0; i < w->n && i < 8; i++)
		if (w->pids[i] == pid)
			return w->comms[i];
	return NULL;
}

int main(void)
{
	struct hvtrace_comm_stats st;
	struct hvtrace_record *rec;
	struct hvtrace_decoder *d;
	struct walk w;
	int32_t p;

	t_ok(hvtrace_decoder_new(4096, &d));
	/* No format for 310 yet: nothing is learned. */
	t_eq(hvtrace_decoder_learn_comms(d, sw(10, "a", 5, "b", 6)), 0);
	t_ok(hvtrace_decoder_add_format(d, "sched", f_switch,
					strlen(f_switch)));
	t_eq(hvtrace_decoder_learn_comms(d, sw(20, "a", 5, "b", 6)), 2);
	t_eq(hvtrace_decoder_learn_comms(d, sw(30, "swapper/0", 0, "b", 6)),
	     1);
	t_eq(hvtrace_decoder_learn_comms(d, sw(40, "", 5, "b", -6)), 0);
	t_assert(!strcmp(hvtrace_decoder_comm(d, 5), "a"));
	t_assert(!strcmp(hvtrace_decoder_comm(d, 6), "b"));
	t_assert(!hvtrace_decoder_comm(d, 0));
	/* Older than the name it has: kept out. */
	t_eq(hvtrace_decoder_learn_comms(d, sw(15, "old", 5, "x", 0)), 0);
	t_assert(!strcmp(hvtrace_decoder_comm(d, 5), "a"));
	t_eq(hvtrace_decoder_learn_comms(d, sw(50, "a2", 5, "x", 0)), 1);
	t_assert(!strcmp(hvtrace_decoder_comm(d, 5), "a2"));

	/* A table name beside them. */
	t_ok(hvtrace_decoder_set_comm(d, 7, "table"));
	t_ok(hvtrace_decoder_set_comm(d, 5, "table"));	/* 5: learned */
	t_assert(!strcmp(hvtrace_decoder_comm(d, 5), "a2"));
	memset(&w, 0, sizeof(w));
	t_eq(hvtrace_decoder_comm_each(d, 0, walk_fn, &w), 0);
	t_eq(w.n, 3);
	t_assert(!strcmp(walked(&w, 5), "a2"));
	t_assert(!strcmp(walked(&w, 6), "b"));
	t_assert(!strcmp(walked(&w, 7), "table"));
	memset(&w, 0, sizeof(w));
	t_eq(hvtrace_decoder_comm_each(d, HVTRACE_COMM_LEARNED, walk_fn, &w),
	     0);
	t_eq(w.n, 2);
	t_assert(walked(&w, 5) && walked(&w, 6) && !walked(&w, 7));
	memset(&w, 0, sizeof(w));
	w.stop_at = 1;
	t_eq(hvtrace_decoder_comm_each(d, 0, walk_fn, &w), 42);
	t_eq(w.n, 1);
	t_ok(hvtrace_decoder_comm_stats(d, &st));
	t_equ(st.entries, 3);
	t_equ(st.learned, 2);
	t_equ(st.replaced, 0);
	t_equ(st.max_entries, 32768);

	/* Bounded: pid 7 + 32768 takes 7's slot, counted; 100000 pids
	 * named by records cost 32768 entries. */
	t_eq(hvtrace_decoder_learn_comms(d, sw(60, "late", 7 + 32768, "", 0)),
	     1);
	t_assert(!hvtrace_decoder_comm(d, 7));
	t_assert(!strcmp(hvtrace_decoder_comm(d, 7 + 32768), "late"));
	t_ok(hvtrace_decoder_comm_stats(d, &st));
	t_equ(st.entries, 3);
	t_equ(st.learned, 3);
	t_equ(st.replaced, 1);
	for (p = 1; p <= 100000; p += 2)
		t_eq(hvtrace_decoder_learn_comms(d, sw(100, "o", p, "e", p + 1)),
		     2);
	t_ok(hvtrace_decoder_comm_stats(d, &st));
	t_equ(st.entries, 32768);
	t_equ(st.learned, 32768);
	t_assert(st.replaced >= 100000 - 32768);
	/* The newest of each slot: 100000 - 32768 * k. */
	t_assert(!strcmp(hvtrace_decoder_comm(d, 100000), "e"));
	t_assert(!strcmp(hvtrace_decoder_comm(d, 99999), "o"));
	t_assert(!hvtrace_decoder_comm(d, 100000 - 32768));
	memset(&w, 0, sizeof(w));
	t_eq(hvtrace_decoder_comm_each(d, HVTRACE_COMM_LEARNED, walk_fn, &w),
	     0);
	t_eq(w.n, 32768);

	/* Bad arguments. */
	t_eq(hvtrace_decoder_learn_comms(NULL, sw(1, "a", 1, "b", 2)),
	     -EINVAL);
	t_eq(hvtrace_decoder_learn_comms(d, NULL), -EINVAL);
	t_eq(hvtrace_decoder_comm_each(d, 0, NULL, NULL), -EINVAL);
	t_eq(hvtrace_decoder_comm_stats(NULL, &st), -EINVAL);
	/* A record too short for its common fields names nobody. */
	rec = sw(200, "short", 9, "", 0);
	rec->size = 4;
	t_eq(hvtrace_decoder_learn_comms(d, rec), 0);
	t_assert(!hvtrace_decoder_comm(d, 9));
	hvtrace_decoder_free(d);
	printf("ok: comm table API, learned names, bound\n");
	return 0;
}
