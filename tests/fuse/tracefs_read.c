// SPDX-License-Identifier: MIT
/*
 * Read a remote of an hvtrace mount with libtracefs alone, as any tool
 * that reads a tracefs instance would: the event formats with
 * tracefs_local_events(), the records with tracefs_iterate_raw_events()
 * (per_cpu/cpuN/trace_pipe_raw, libtraceevent's kbuffer).  It links
 * nothing of hvtrace.
 *
 *   tracefs_read DIR NAME [--api remote|instance] [--no-loss]
 *                [--seq SYS:EVENT:FIELD] [--expect SYS:EVENT:CPU=N]...
 *                [--expect-id SYS:EVENT=ID]... [--cpus N]
 *
 *   --api remote     tracefs_instance_alloc(DIR/remotes/NAME, NULL)
 *   --api instance   tracefs_instance_alloc(DIR, NAME) (instances/NAME)
 *   --seq            FIELD of SYS:EVENT counts 0, 1, 2 ... on every CPU
 *   --expect         exactly N records of SYS:EVENT on CPU (CPU '*':
 *                    on each of the first --cpus CPUs)
 *   --expect-id      the event's id (common_type) is ID
 *   --no-loss        no record may report missed events
 *   --seq-loss       with --seq: a record after missed events may jump
 *                    by exactly the count missed (an unknown count: any
 *                    jump forward)
 *   --total N        with --seq: on every CPU the last FIELD is N - 1
 *                    (every record written is either read or counted
 *                    missed); with --unique: the values are 0..N-1
 *   --unique SYS:EVENT:FIELD  FIELD takes every value 0..N-1 exactly once
 *                    over all CPUs (a writer that moves between CPUs)
 *   --dump SYS:EVENT:FIELD  print "dump CPU VALUE" for every record of
 *                    SYS:EVENT (FIELD as libtraceevent prints it, a
 *                    string without its trailing newline)
 *
 * Prints "cpu C SYS:EVENT N" per CPU and event; exits 0 when every
 * expectation holds, 1 otherwise.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event-parse.h>
#include <tracefs.h>

#define MAX_CPUS  64
#define MAX_KINDS 32
#define MAX_RULES 32

struct kind {
	char sys[64], ev[128];
	unsigned long long count[MAX_CPUS];
};

struct rule {
	char sys[64], ev[128];
	int cpu; /* -1: each */
	unsigned long long n;
};

static struct kind kinds[MAX_KINDS];
static unsigned int nr_kinds;
static struct rule rules[MAX_RULES];
static unsigned int nr_rules;
static char seq_sys[64], seq_ev[128], seq_field[64];
static unsigned long long seq_next[MAX_CPUS];
static int no_loss, seq_loss, failed;
static long long seq_total = -1;
static unsigned long long seq_missed[MAX_CPUS];
static char uq_sys[64], uq_ev[128], uq_field[64];
static unsigned char *uq_seen;
static unsigned long long uq_count;
static unsigned long long missed_records, total;
static char dump_sys[64], dump_ev[128], dump_field[64];

static int on_record(struct tep_event *event, struct tep_record *record,
		     int cpu, void *ctx)
{
	unsigned int i;

	if (cpu < 0 || cpu >= MAX_CPUS) {
		printf("FAIL: record on CPU %d\n", cpu);
		failed = 1;
		return 1;
	}
	total++;
	if (record->missed_events) {
		missed_records++;
		if (no_loss) {
			printf("FAIL: cpu %d: %lld events missed before a "
			       "record\n",
			       cpu, (long long)record->missed_events);
			failed = 1;
		}
	}
	for (i = 0; i < nr_kinds; i++)
		if (!strcmp(kinds[i].sys, event->system) &&
		    !strcmp(kinds[i].ev, event->name))
			break;
	if (i == nr_kinds && nr_kinds < MAX_KINDS) {
		snprintf(kinds[i].sys, sizeof(kinds[i].sys), "%s",
			 event->system);
		snprintf(kinds[i].ev, sizeof(kinds[i].ev), "%s", event->name);
		nr_kinds++;
	}
	if (i < MAX_KINDS)
		kinds[i].count[cpu]++;
	if (dump_sys[0] && !strcmp(dump_sys, event->system) &&
	    !strcmp(dump_ev, event->name)) {
		struct tep_format_field *f = tep_find_field(event, dump_field);
		struct trace_seq sq;

		if (!f) {
			printf("FAIL: %s:%s has no field %s\n", dump_sys,
			       dump_ev, dump_field);
			failed = 1;
			return 1;
		}
		trace_seq_init(&sq);
		tep_print_field(&sq, record->data, f);
		trace_seq_terminate(&sq);
		while (sq.len && sq.buffer[sq.len - 1] == '\n')
			sq.buffer[--sq.len] = '\0';
		printf("dump %d %s\n", cpu, sq.buffer);
		trace_seq_destroy(&sq);
	}
	if (uq_sys[0] && !strcmp(uq_sys, event->system) &&
	    !strcmp(uq_ev, event->name)) {
		struct tep_format_field *f = tep_find_field(event, uq_field);
		unsigned long long val;

		if (!f || tep_read_number_field(f, record->data, &val) ||
		    seq_total < 0 || val >= (unsigned long long)seq_total ||
		    uq_seen[val]) {
			printf("FAIL: %s:%s %s out of range or twice\n", uq_sys,
			       uq_ev, uq_field);
			failed = 1;
			return 1;
		}
		uq_seen[val] = 1;
		uq_count++;
	}
	if (seq_sys[0] && !strcmp(seq_sys, event->system) &&
	    !strcmp(seq_ev, event->name)) {
		struct tep_format_field *f = tep_find_field(event, seq_field);
		unsigned long long val;

		if (!f || tep_read_number_field(f, record->data, &val)) {
			printf("FAIL: %s:%s has no field %s\n", seq_sys, seq_ev,
			       seq_field);
			failed = 1;
			return 1;
		}
		if (seq_loss && record->missed_events > 0) {
			seq_missed[cpu] +=
				(unsigned long long)record->missed_events;
			seq_next[cpu] +=
				(unsigned long long)record->missed_events;
		} else if (seq_loss && record->missed_events < 0 &&
			   val >= seq_next[cpu]) {
			seq_next[cpu] = val;
		}
		if (val != seq_next[cpu]) {
			printf("FAIL: cpu %d: %s %llu, expected %llu\n", cpu,
			       seq_field, val, seq_next[cpu]);
			failed = 1;
			return 1;
		}
		seq_next[cpu]++;
	}
	return 0;
}

static int split_event(const char *s, char *sys, size_t sl, char *ev, size_t el,
		       const char **rest)
{
	const char *c1 = strchr(s, ':'), *c2;

	if (!c1)
		return -1;
	c2 = strpbrk(c1 + 1, ":=");
	if (!c2)
		c2 = c1 + 1 + strlen(c1 + 1);
	snprintf(sys, sl, "%.*s", (int)(c1 - s), s);
	snprintf(ev, el, "%.*s", (int)(c2 - c1 - 1), c1 + 1);
	*rest = *c2 ? c2 + 1 : c2;
	return 0;
}

int main(int argc, char **argv)
{
	struct tracefs_instance *inst;
	struct tep_handle *tep;
	const char *api = "remote", *rest;
	char dir[4096];
	struct {
		char sys[64], ev[128];
		int id;
	} ids[MAX_RULES];
	unsigned int nr_ids = 0, i, c, cpus = 2;
	int a, ret;

	if (argc < 3) {
		fprintf(stderr, "usage: %s DIR NAME [options]\n", argv[0]);
		return 2;
	}
	for (a = 3; a < argc; a++) {
		if (!strcmp(argv[a], "--api") && a + 1 < argc) {
			api = argv[++a];
		} else if (!strcmp(argv[a], "--no-loss")) {
			no_loss = 1;
		} else if (!strcmp(argv[a], "--seq-loss")) {
			seq_loss = 1;
		} else if (!strcmp(argv[a], "--total") && a + 1 < argc) {
			seq_total = atoll(argv[++a]);
		} else if (!strcmp(argv[a], "--unique") && a + 1 < argc) {
			if (split_event(argv[++a], uq_sys, sizeof(uq_sys),
					uq_ev, sizeof(uq_ev), &rest) ||
			    !*rest)
				return 2;
			snprintf(uq_field, sizeof(uq_field), "%s", rest);
		} else if (!strcmp(argv[a], "--dump") && a + 1 < argc) {
			if (split_event(argv[++a], dump_sys, sizeof(dump_sys),
					dump_ev, sizeof(dump_ev), &rest) ||
			    !*rest)
				return 2;
			snprintf(dump_field, sizeof(dump_field), "%s", rest);
		} else if (!strcmp(argv[a], "--cpus") && a + 1 < argc) {
			cpus = (unsigned int)atoi(argv[++a]);
		} else if (!strcmp(argv[a], "--seq") && a + 1 < argc) {
			if (split_event(argv[++a], seq_sys, sizeof(seq_sys),
					seq_ev, sizeof(seq_ev), &rest) ||
			    !*rest)
				return 2;
			snprintf(seq_field, sizeof(seq_field), "%s", rest);
		} else if (!strcmp(argv[a], "--expect") && a + 1 < argc &&
			   nr_rules < MAX_RULES) {
			struct rule *r = &rules[nr_rules];

			if (split_event(argv[++a], r->sys, sizeof(r->sys),
					r->ev, sizeof(r->ev), &rest) ||
			    !strchr(rest, '='))
				return 2;
			r->cpu = *rest == '*' ? -1 : atoi(rest);
			r->n = strtoull(strchr(rest, '=') + 1, NULL, 10);
			nr_rules++;
		} else if (!strcmp(argv[a], "--expect-id") && a + 1 < argc &&
			   nr_ids < MAX_RULES) {
			if (split_event(argv[++a], ids[nr_ids].sys,
					sizeof(ids[nr_ids].sys), ids[nr_ids].ev,
					sizeof(ids[nr_ids].ev), &rest))
				return 2;
			ids[nr_ids].id = atoi(rest);
			nr_ids++;
		} else {
			fprintf(stderr, "unknown argument %s\n", argv[a]);
			return 2;
		}
	}
	if (uq_sys[0]) {
		if (seq_total <= 0 || seq_total > (1LL << 28))
			return 2;
		uq_seen = calloc((size_t)seq_total, 1);
		if (!uq_seen)
			return 2;
	}
	snprintf(dir, sizeof(dir), "%s/remotes/%s", argv[1], argv[2]);
	tep = tracefs_local_events(dir);
	if (!tep) {
		printf("FAIL: tracefs_local_events(%s): %s\n", dir,
		       strerror(errno));
		return 1;
	}
	for (i = 0; i < nr_ids; i++) {
		struct tep_event *e =
			tep_find_event_by_name(tep, ids[i].sys, ids[i].ev);

		if (!e || e->id != ids[i].id) {
			printf("FAIL: %s:%s: %s id %d, expected %d\n",
			       ids[i].sys, ids[i].ev, e ? "has" : "missing, no",
			       e ? e->id : -1, ids[i].id);
			failed = 1;
		} else {
			printf("format %s:%s id %d\n", ids[i].sys, ids[i].ev,
			       e->id);
		}
	}
	if (!strcmp(api, "instance"))
		inst = tracefs_instance_alloc(argv[1], argv[2]);
	else
		inst = tracefs_instance_alloc(dir, NULL);
	if (!inst) {
		printf("FAIL: tracefs_instance_alloc (%s api): %s\n", api,
		       strerror(errno));
		return 1;
	}
	ret = tracefs_iterate_raw_events(tep, inst, NULL, 0, on_record, NULL);
	if (ret) {
		printf("FAIL: tracefs_iterate_raw_events: %d (%s)\n", ret,
		       strerror(errno));
		failed = 1;
	}
	for (i = 0; i < nr_kinds; i++)
		for (c = 0; c < MAX_CPUS; c++)
			if (kinds[i].count[c])
				printf("cpu %u %s:%s %llu\n", c, kinds[i].sys,
				       kinds[i].ev, kinds[i].count[c]);
	for (i = 0; i < nr_rules; i++) {
		struct rule *r = &rules[i];
		unsigned int k;

		for (c = 0; c < cpus && c < MAX_CPUS; c++) {
			unsigned long long got = 0;

			if (r->cpu >= 0 && (unsigned int)r->cpu != c)
				continue;
			for (k = 0; k < nr_kinds; k++)
				if (!strcmp(kinds[k].sys, r->sys) &&
				    !strcmp(kinds[k].ev, r->ev))
					got = kinds[k].count[c];
			if (got != r->n) {
				printf("FAIL: cpu %u %s:%s: %llu records, "
				       "expected %llu\n",
				       c, r->sys, r->ev, got, r->n);
				failed = 1;
			}
		}
	}
	if (uq_sys[0]) {
		printf("%s:%s: %llu distinct %s of %lld\n", uq_sys, uq_ev,
		       uq_count, uq_field, seq_total);
		if (uq_count != (unsigned long long)seq_total) {
			printf("FAIL: %llu of %lld values read\n", uq_count,
			       seq_total);
			failed = 1;
		}
	}
	if (seq_sys[0])
		for (c = 0; c < cpus && c < MAX_CPUS; c++) {
			printf("cpu %u %s: next %llu, missed %llu\n", c,
			       seq_field, seq_next[c], seq_missed[c]);
			if (seq_total >= 0 &&
			    seq_next[c] != (unsigned long long)seq_total) {
				printf("FAIL: cpu %u: read up to %s %llu, "
				       "expected %lld\n",
				       c, seq_field, seq_next[c], seq_total);
				failed = 1;
			}
		}
	printf("%llu records, %llu after missed events\n", total,
	       missed_records);
	tracefs_instance_free(inst);
	tep_free(tep);
	return failed;
}
