// SPDX-License-Identifier: MIT
/*
 * Task names from the ring itself: a pid that the decoder's table
 * (saved_cmdlines) does not name is named by the ring's own sched
 * records, as of each record in the order they are printed; the ring's
 * newest name wins over the table's; "<...>" stays for a pid nothing
 * names.
 *
 * 1. A real Debian 6.12 guest's ring (tests/fuzz/corpus/kring_parse/
 *    real-612-128k) with that guest's own sched_switch (id 310) and
 *    ftrace:print (id 5) formats (tests/fuzz/corpus/kmap/
 *    guest-612-formats), both CPUs merged in time order.  The expected
 *    "comm-pid" prefix of every line comes from a model kept here: the
 *    prev_comm/prev_pid and next_comm/next_pid printed on the sched_switch
 *    lines seen so far (that line's own included), else the table, else
 *    "<...>".  The ring holds a rename: pid 298 runs as "init" (forked by
 *    init) and, after its exec, switches out as "sh", and pids 1 and 270
 *    write records before any sched_switch names them.  Run once without
 *    a table and once with stale table names (set again every 100
 *    records, as a stream's reload of saved_cmdlines does).
 *
 * 2. Hand-made records under 6.12 formats: sched_switch (its exec
 *    rename), sched_wakeup, sched_process_fork (parent and child),
 *    task_rename; sched_process_wait (its comm is the waiter's) and a
 *    comm/pid event outside sched/task name nobody; an older record does
 *    not undo a newer name; hostile fields (16 bytes without a NUL,
 *    control characters, pids 0, negative, above 4194304, a record cut
 *    before its pid, an empty comm).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace.h>

#include "hvt_test.h"
#include "hvt_src.h"
#include "kfmt_common.h"

/* The format text "name: @name" .. the end of its print fmt line. */
static void add_format_from(struct hvtrace_decoder *d, const char *blob,
			    size_t len, const char *system, const char *name)
{
	size_t n;
	const char *s = t_format_in(blob, len, name, &n);

	t_ok(hvtrace_decoder_add_format(d, system, s, n));
}

/* --- the model ------------------------------------------------------------ */

#define MODEL_MAX 4096

static struct {
	int pid;
	char comm[16];
} model[MODEL_MAX];
static unsigned int model_nr;

static void model_set(int pid, const char *comm, size_t len)
{
	unsigned int i;

	if (len > 15)
		len = 15;
	for (i = 0; i < model_nr && model[i].pid != pid; i++)
		;
	if (i == model_nr) {
		t_assert(model_nr < MODEL_MAX);
		model_nr++;
	}
	model[i].pid = pid;
	memcpy(model[i].comm, comm, len);
	model[i].comm[len] = '\0';
}

static const char *model_get(int pid)
{
	unsigned int i;

	for (i = 0; i < model_nr; i++)
		if (model[i].pid == pid)
			return model[i].comm;
	return NULL;
}

/* "KEY=VALUE " of a printed sched_switch line: the model learns VALUE of
 * KEY_comm for the pid of KEY_pid. */
static void model_learn(const char *line, const char *key)
{
	char ck[32], pk[32];
	const char *c, *p;

	snprintf(ck, sizeof(ck), " %s_comm=", key);
	snprintf(pk, sizeof(pk), " %s_pid=", key);
	c = strstr(line, ck);
	p = strstr(line, pk);
	t_assert(c && p && p > c);
	c += strlen(ck);
	if (atoi(p + strlen(pk)) > 0)
		model_set(atoi(p + strlen(pk)), c, (size_t)(p - c));
}

/* --- 1. the real ring ----------------------------------------------------- */

struct table_name {
	int pid;
	const char *comm;
};

static const struct table_name stale[] = {
	{ 1, "init-table" },	/* before its first sched_switch */
	{ 270, "cat-table" },	/* idem */
	{ 298, "stale-298" },	/* the table never beats the ring */
	{ 19, "rcu-table" },
};

static void test_real_ring(bool with_table)
{
	static char line[4096];
	char want[64];
	unsigned int n = 0, unnamed = 0, init298 = 0, sh298 = 0, tabled = 0;
	unsigned int i, j;
	struct hvtrace_ring *rings[2];
	struct hvtrace_decoder *d;
	struct hvtrace_record rec;
	struct hvtrace_merge *m;
	struct hvtrace_kring *k;
	char p[4200], *fmts;
	size_t flen;
	int ret;

	fmts = t_src_slurp("tests/fuzz/corpus/kmap/guest-612-formats", &flen);
	t_ok(hvtrace_decoder_new(4096, &d));
	add_format_from(d, fmts, flen, "sched", "sched_switch");
	add_format_from(d, fmts, flen, "ftrace", "print");
	free(fmts);

	snprintf(p, sizeof(p), "%s/tests/fuzz/corpus/kring_parse/real-612-128k",
		 t_srctree());
	t_ok(hvtrace_kring_open(p, 0, &k));
	t_ok(hvtrace_ring_open_kring(k, 0, &rings[0]));
	t_ok(hvtrace_ring_open_kring(k, 1, &rings[1]));
	t_ok(hvtrace_merge_new(rings, 2, 0, &m));

	model_nr = 0;
	while ((ret = hvtrace_merge_next(m, &rec, true)) == 1) {
		const char *c;
		int32_t pid;

		if (with_table && n % 100 == 0)
			for (j = 0; j < sizeof(stale) / sizeof(stale[0]); j++)
				t_ok(hvtrace_decoder_set_comm(d, stale[j].pid,
							      stale[j].comm));
		t_assert(rec.size >= 8);
		memcpy(&pid, (const uint8_t *)rec.data + 4, 4);
		t_ok(hvtrace_decoder_format(d, &rec, rec.ts, 0, line,
					    sizeof(line)));
		if (strstr(line, ": sched_switch: ")) {
			model_learn(line, "prev");
			model_learn(line, "next");
		}
		c = pid == 0 ? "<idle>" : model_get(pid);
		if (!c && with_table) {
			for (j = 0; j < sizeof(stale) / sizeof(stale[0]); j++)
				if (stale[j].pid == pid)
					c = stale[j].comm;
			tabled += c != NULL;
		}
		if (!c) {
			c = "<...>";
			unnamed++;
		}
		snprintf(want, sizeof(want), "%16s-%-7d [", c, pid);
		if (strncmp(line, want, strlen(want)))
			t_fail("record %u: expected the line to start with "
			       "\"%s\", got: %s",
			       n, want, line);
		if (pid == 298 && strstr(line, "hvt-mark")) {
			init298 += !strncmp(line, "            init-298 ", 21);
			sh298 += !strncmp(line, "              sh-298 ", 21);
		}
		n++;
	}
	t_eq(ret, 0);
	/* What the ring holds (see the stream of it): */
	t_assert(n > 2000);
	t_eq(unnamed, with_table ? 0 : 15);	/* pids 1 and 270 */
	if (with_table)
		t_eq(tabled, 15);
	t_assert(init298 > 0 && sh298 > 0);	/* the exec rename */
	t_assert(model_get(298) && !strcmp(model_get(298), "sh"));
	t_assert(hvtrace_decoder_comm(d, 298) &&
		 !strcmp(hvtrace_decoder_comm(d, 298), "sh"));
	/* A table name set after the ring named the pid does not win. */
	t_ok(hvtrace_decoder_set_comm(d, 298, "stale-298"));
	t_assert(!strcmp(hvtrace_decoder_comm(d, 298), "sh"));
	for (i = 0; i < model_nr; i++)
		t_assert(hvtrace_decoder_comm(d, model[i].pid) &&
			 !strcmp(hvtrace_decoder_comm(d, model[i].pid),
				 model[i].comm));

	hvtrace_merge_free(m);
	hvtrace_ring_close(rings[0]);
	hvtrace_ring_close(rings[1]);
	hvtrace_kring_close(k);
	hvtrace_decoder_free(d);
}

/* --- 2. hand-made records ------------------------------------------------- */


#define ID_SWITCH	310
#define ID_WAKEUP	320
#define ID_FORK		321
#define ID_WAIT		322
#define ID_RENAME	323
#define ID_SIGNAL	324
#define ID_MARK		330

static const char f_wakeup[] =
	"name: sched_wakeup\nID: 320\nformat:\n" KFMT_COMMON
	"\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n"
	"\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n"
	"\tfield:int target_cpu;\toffset:32;\tsize:4;\tsigned:1;\n\n"
	"print fmt: \"comm=%s pid=%d prio=%d target_cpu=%03d\", REC->comm, "
	"REC->pid, REC->prio, REC->target_cpu\n";
static const char f_fork[] =
	"name: sched_process_fork\nID: 321\nformat:\n" KFMT_COMMON
	"\tfield:char parent_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t parent_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
	"\tfield:char child_comm[16];\toffset:28;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t child_pid;\toffset:44;\tsize:4;\tsigned:1;\n\n"
	"print fmt: \"comm=%s pid=%d child_comm=%s child_pid=%d\", "
	"REC->parent_comm, REC->parent_pid, REC->child_comm, "
	"REC->child_pid\n";
static const char f_wait[] =
	"name: sched_process_wait\nID: 322\nformat:\n" KFMT_COMMON
	"\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n"
	"\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n\n"
	"print fmt: \"comm=%s pid=%d prio=%d\", REC->comm, REC->pid, "
	"REC->prio\n";
static const char f_rename[] =
	"name: task_rename\nID: 323\nformat:\n" KFMT_COMMON
	"\tfield:pid_t pid;\toffset:8;\tsize:4;\tsigned:1;\n"
	"\tfield:char oldcomm[16];\toffset:12;\tsize:16;\tsigned:0;\n"
	"\tfield:char newcomm[16];\toffset:28;\tsize:16;\tsigned:0;\n"
	"\tfield:short oom_score_adj;\toffset:44;\tsize:2;\tsigned:1;\n\n"
	"print fmt: \"pid=%d oldcomm=%s newcomm=%s oom_score_adj=%hd\", "
	"REC->pid, REC->oldcomm, REC->newcomm, REC->oom_score_adj\n";
static const char f_signal[] =
	"name: signal_generate\nID: 324\nformat:\n" KFMT_COMMON
	"\tfield:int sig;\toffset:8;\tsize:4;\tsigned:1;\n"
	"\tfield:char comm[16];\toffset:12;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t pid;\toffset:28;\tsize:4;\tsigned:1;\n\n"
	"print fmt: \"sig=%d comm=%s pid=%d\", REC->sig, REC->comm, "
	"REC->pid\n";
static const char f_mark[] =
	"name: mark\nID: 330\nformat:\n" KFMT_COMMON
	"\tfield:unsigned int seq;\toffset:8;\tsize:4;\tsigned:0;\n\n"
	"print fmt: \"seq=%u\", REC->seq\n";

static struct hvtrace_decoder *hd;
static uint64_t now_ts = 1000;

static uint8_t *rec_new(uint8_t *r, uint16_t id, int32_t common_pid)
{
	memset(r, 0, 64);
	memcpy(r, &id, 2);
	r[2] = 1;	/* irqs off: "d" */
	memcpy(r + 4, &common_pid, 4);
	return r;
}

static void put_comm(uint8_t *r, uint32_t off, const char *comm)
{
	/* 16 bytes: NUL-padded when shorter, none when 16 long. */
	memset(r + off, 0, 16);
	memcpy(r + off, comm, strnlen(comm, 16));
}

static void put_pid(uint8_t *r, uint32_t off, int32_t pid)
{
	memcpy(r + off, &pid, 4);
}

/* Print @r (@size bytes) at time @ts; its line must start with
 * "%16s-%-7d [" of @comm and its pid. */
static void print_expect(const uint8_t *r, uint32_t size, uint64_t ts,
			 const char *comm, int line_no)
{
	struct hvtrace_record rec = { .ts = ts, .data = r, .size = size };
	char line[512], want[64];
	int32_t pid;

	memcpy(&pid, r + 4, 4);
	t_ok(hvtrace_decoder_format(hd, &rec, ts, 0, line, sizeof(line)));
	snprintf(want, sizeof(want), "%16s-%-7d [", comm, pid);
	if (strncmp(line, want, strlen(want)))
		t_fail("(line %d) expected \"%s...\", got: %s", line_no, want,
		       line);
}

#define EXPECT(r, size, comm) print_expect(r, size, now_ts += 10, comm, __LINE__)

/* A mark (seq) written by @pid: its line shows what @pid is called. */
static void mark_expect(int32_t pid, const char *comm, int line_no)
{
	uint8_t r[64];

	rec_new(r, ID_MARK, pid);
	print_expect(r, 12, now_ts += 10, comm, line_no);
}

#define MARK(pid, comm) mark_expect(pid, comm, __LINE__)

static void sw(uint8_t *r, int32_t cpid, const char *prev, int32_t ppid,
	       const char *next, int32_t npid)
{
	rec_new(r, ID_SWITCH, cpid);
	put_comm(r, 8, prev);
	put_pid(r, 24, ppid);
	put_comm(r, 40, next);
	put_pid(r, 56, npid);
}

static void test_records(void)
{
	uint8_t r[64];
	size_t flen;
	char *fmts, c[16];
	int32_t p;

	fmts = t_src_slurp("tests/fuzz/corpus/kmap/guest-612-formats", &flen);
	t_ok(hvtrace_decoder_new(4096, &hd));
	add_format_from(hd, fmts, flen, "sched", "sched_switch");
	free(fmts);
	t_ok(hvtrace_decoder_add_format(hd, "sched", f_wakeup,
					strlen(f_wakeup)));
	t_ok(hvtrace_decoder_add_format(hd, "sched", f_fork, strlen(f_fork)));
	t_ok(hvtrace_decoder_add_format(hd, "sched", f_wait, strlen(f_wait)));
	t_ok(hvtrace_decoder_add_format(hd, "task", f_rename,
					strlen(f_rename)));
	t_ok(hvtrace_decoder_add_format(hd, "signal", f_signal,
					strlen(f_signal)));
	t_ok(hvtrace_decoder_add_format(hd, "hvt", f_mark, strlen(f_mark)));
	t_ok(hvtrace_decoder_set_comm(hd, 1, "init"));	/* saved_cmdlines */

	/* The demo's case: pid 225 is not in saved_cmdlines. */
	MARK(225, "<...>");
	sw(r, 225, "demo-w1", 225, "init", 1);
	EXPECT(r, 64, "demo-w1");	/* the switch names its own task */
	MARK(225, "demo-w1");
	MARK(1, "init");

	/* exec: the next sched_switch's prev_comm is the new name. */
	sw(r, 225, "demo-exec", 225, "swapper/0", 0);
	EXPECT(r, 64, "demo-exec");
	MARK(225, "demo-exec");
	/* An older record (another CPU, read late) does not undo it. */
	sw(r, 1, "init", 1, "demo-w1", 225);
	print_expect(r, 64, 1, "init", __LINE__);
	MARK(225, "demo-exec");
	/* next_comm names the task switched in. */
	sw(r, 0, "swapper/1", 0, "kworker/1:0", 31);
	EXPECT(r, 64, "<idle>");
	MARK(31, "kworker/1:0");

	/* The ring beats the table, whenever the table is (re)loaded. */
	t_ok(hvtrace_decoder_set_comm(hd, 600, "table-600"));
	MARK(600, "table-600");
	rec_new(r, ID_WAKEUP, 225);
	put_comm(r, 8, "woken");
	put_pid(r, 24, 600);
	EXPECT(r, 36, "demo-exec");
	MARK(600, "woken");
	t_ok(hvtrace_decoder_set_comm(hd, 600, "table-again"));
	MARK(600, "woken");

	/* fork: parent and child. */
	rec_new(r, ID_FORK, 225);
	put_comm(r, 8, "demo-parent");
	put_pid(r, 24, 226);
	put_comm(r, 28, "demo-child");
	put_pid(r, 44, 700);
	EXPECT(r, 48, "demo-exec");
	MARK(226, "demo-parent");
	MARK(700, "demo-child");

	/* task_rename (prctl, exec): the new name. */
	rec_new(r, ID_RENAME, 700);
	put_pid(r, 8, 700);
	put_comm(r, 12, "demo-child");
	put_comm(r, 28, "renamed");
	EXPECT(r, 48, "renamed");
	MARK(700, "renamed");

	/* sched_process_wait: comm is the waiter's, pid the waited for. */
	rec_new(r, ID_WAIT, 225);
	put_comm(r, 8, "demo-exec");
	put_pid(r, 24, 800);
	EXPECT(r, 32, "demo-exec");
	MARK(800, "<...>");
	/* Outside sched and task: not trusted to pair comm and pid. */
	rec_new(r, ID_SIGNAL, 225);
	put_comm(r, 12, "sig-target");
	put_pid(r, 28, 801);
	EXPECT(r, 32, "demo-exec");
	MARK(801, "<...>");
	/* Nothing names 900. */
	MARK(900, "<...>");

	/* Hostile fields. */
	sw(r, 0, "ABCDEFGHIJKLMNOPQRS", 1000, "tab\there\x1b[m", 1001);
	EXPECT(r, 64, "<idle>");
	MARK(1000, "ABCDEFGHIJKLMNO");	/* 16 bytes, no NUL: 15 shown */
	MARK(1001, "tab?here?[m");
	sw(r, 0, "neg", -5, "big", 4194305);
	EXPECT(r, 64, "<idle>");
	MARK(4194305, "<...>");
	MARK(-5, "<XXX>");
	sw(r, 0, "max", 4194304, "", 1002);
	EXPECT(r, 64, "<idle>");
	MARK(4194304, "max");
	MARK(1002, "<...>");		/* an empty comm names nobody */
	rec_new(r, ID_WAKEUP, 0);
	put_comm(r, 8, "cut");
	put_pid(r, 24, 1003);
	EXPECT(r, 24, "<idle>");	/* the pid lies past the record */
	MARK(1003, "<...>");
	/* Many pids: each its own name. */
	for (p = 2000; p < 2600; p++) {
		snprintf(c, sizeof(c), "t%d", p);
		sw(r, 0, "x", 0, c, p);
		EXPECT(r, 64, "<idle>");
	}
	for (p = 2000; p < 2600; p++) {
		snprintf(c, sizeof(c), "t%d", p);
		MARK(p, c);
	}
	MARK(225, "demo-exec");
	hvtrace_decoder_free(hd);
}

int main(void)
{
	test_real_ring(false);
	test_real_ring(true);
	test_records();
	printf("ok: names from the ring's own records\n");
	return 0;
}
