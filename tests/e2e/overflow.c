// SPDX-License-Identifier: MIT
/*
 * Overflow in producer-consumer mode, seen through the CLI.
 *
 * The guest has a small area (1 MiB: 2 CPU buffers of a few dozen
 * sub-buffers).  Its workload (ue_seq, thread t pinned to CPU t) writes
 * 12000 events per thread while nobody reads (hvtraced reads a ring only
 * for a subscriber), so the rings fill and the writers drop, counting
 * each drop.  Then "hvtrace stream NAME" starts reading -- reading
 * resumes -- and the workload writes 2000 more per thread:
 *
 *   - the text output holds exactly the events the guest committed, each
 *     once, per thread in order: seqs 0..c-1 (until the ring was full)
 *     and 12000..13999 (after reading resumed);
 *   - the losses show as the kernel's "CPU:N [LOST n EVENTS]" lines, one
 *     per CPU, right before that CPU's first event after the gap, with n
 *     exactly the drops the guest's writers counted on that CPU;
 *   - hvtraced's counters agree: read + lost == written, lost == drops;
 *     the stream's summary says the same.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e.h"

#define THREADS 2
#define PHASE1	12000
#define PHASE2	2000

static char out_path[300], err_path[300];

/* hvt_seq lines in the stream's output so far. */
static unsigned long count_lines(void)
{
	char line[1024];
	unsigned long n = 0;
	FILE *f = fopen(out_path, "r");

	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, " hvt_seq: "))
			n++;
	if (f)
		fclose(f);
	return n;
}

static pid_t start_stream(const char *name)
{
	char bin[700];
	pid_t pid;

	snprintf(bin, sizeof(bin), "%s/bin/hvtrace", h_objtree);
	pid = fork();
	if (pid < 0)
		t_fail("fork: %s", strerror(errno));
	if (!pid) {
		int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(o, 1);
		dup2(e, 2);
		execl(bin, bin, "stream", name, "--socket", h_dsock,
		      "--summary", (char *)NULL);
		_exit(127);
	}
	return pid;
}

int main(void)
{
	static const char *const small[] = {"--area-size", "1M", NULL};
	static uint8_t seen[THREADS][PHASE1 + PHASE2];
	struct hvt_m_stats st[8];
	struct e_guest g;
	unsigned long long dropped[THREADS], wrote_total, dropped_total;
	unsigned long long lost_cpu[THREADS] = {0}, lost_lines = 0, events = 0;
	uint32_t next[THREADS] = {0}, first_after[THREADS];
	bool after_lost[THREADS] = {false, false};
	unsigned int t, n, cpu;
	const char *l;
	char run[256], line[1024];
	uint64_t deadline;
	pid_t stream;
	int st_rc;
	FILE *f;

	e_init(NULL);
	snprintf(out_path, sizeof(out_path), "%s/stream.txt", h_dir);
	snprintf(err_path, sizeof(err_path), "%s/stream-stderr.log", h_dir);
	snprintf(run, sizeof(run),
		 "ue_seq --threads %d --count %d --phase2 %d --hold", THREADS,
		 PHASE1, PHASE2);
	e_guest_start(&g, "ovf", run, small);
	e_wait_event(&g, "hvt_seq", 60000);
	e_enable(&g, "hvt_seq", true);
	l = e_console_line(&g, "ue_seq: phase1 ", "ue_seq: error", 60000);
	printf("guest: phase 1 (nobody reading): %s\n", l);
	if (!e_kv(l, "dropped"))
		t_fail("the ring never filled: %s", l);

	/* Reading resumes: the CLI subscribes and prints. */
	stream = start_stream(g.name);
	deadline = h_now_ns() + 30000000000ull;
	while (count_lines() < e_kv(l, "wrote")) {
		if (h_now_ns() > deadline)
			t_fail("the stream printed %lu of the %llu events of "
			       "phase 1 within 30 s",
			       count_lines(), e_kv(l, "wrote"));
		usleep(100000);
	}
	e_enable(&g, "hvt_seq_go", true);
	l = e_console_line(&g, "ue_seq: done ", "ue_seq: error", 60000);
	printf("guest: done: %s\n", l);
	wrote_total = e_kv(l, "wrote");
	dropped_total = e_kv(l, "dropped");
	t_equ(e_kv(l, "failed"), 0);
	/* Per-thread drops (the "thread T" lines came before "done"). */
	g.con_off = 0;
	for (t = 0; t < THREADS; t++) {
		char key[64];

		snprintf(key, sizeof(key), "ue_seq: thread %u ", t);
		l = e_console_line(&g, key, NULL, 10000);
		dropped[t] = e_kv(l, "dropped");
	}
	deadline = h_now_ns() + 30000000000ull;
	while (count_lines() < wrote_total) {
		if (h_now_ns() > deadline)
			t_fail("the stream printed %lu of %llu events within "
			       "30 s",
			       count_lines(), wrote_total);
		usleep(100000);
	}
	/* Give hvtraced a moment for anything unexpected, then stop. */
	usleep(500000);
	kill(stream, SIGINT);
	if (waitpid(stream, &st_rc, 0) != stream || !WIFEXITED(st_rc) ||
	    WEXITSTATUS(st_rc))
		t_fail("hvtrace stream ended badly (status %d; see %s)", st_rc,
		       err_path);

	/* Parse the text: "... [00C] ....  T: hvt_seq: thread=T seq=S ..."
	 * and "CPU:C [LOST N EVENTS]". */
	f = fopen(out_path, "r");
	if (!f)
		t_fail("%s: %s", out_path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		unsigned long long nl;
		unsigned int th, seq;
		const char *p;
		int c;

		if (sscanf(line, "CPU:%d [LOST %llu EVENTS]", &c, &nl) == 2) {
			if (c < 0 || c >= THREADS)
				t_fail("lost line of CPU %d", c);
			lost_cpu[c] += nl;
			lost_lines++;
			after_lost[c] = true;
			continue;
		}
		p = strstr(line, " hvt_seq: ");
		if (!p)
			t_fail("unexpected line: %s", line);
		if (sscanf(p, " hvt_seq: thread=%u seq=%u", &th, &seq) != 2 ||
		    th >= THREADS || seq >= PHASE1 + PHASE2)
			t_fail("bad event line: %s", line);
		p = strchr(line, '[');
		if (!p || sscanf(p, "[%d]", &c) != 1 || c != (int)th)
			t_fail("thread %u is pinned to CPU %u: %s", th, th,
			       line);
		if (seen[th][seq]++)
			t_fail("thread %u seq %u printed twice", th, seq);
		if (seq < next[th])
			t_fail("thread %u: seq %u after %u", th, seq,
			       next[th] - 1);
		if (after_lost[c]) {
			/* The first event after the gap on this CPU. */
			first_after[c] = seq;
			if (seq != PHASE1)
				t_fail("CPU %d: the event after the lost line "
				       "is seq %u, not the first after the "
				       "gap (%u)",
				       c, seq, PHASE1);
			after_lost[c] = false;
		}
		if (seq != next[th] && seq != PHASE1)
			t_fail("thread %u: seq %u follows %u without a lost "
			       "line",
			       th, seq, next[th] - 1);
		next[th] = seq + 1;
		events++;
	}
	fclose(f);
	if (events != wrote_total)
		t_fail("%llu events printed, the guest committed %llu", events,
		       wrote_total);
	for (t = 0; t < THREADS; t++) {
		if (lost_cpu[t] != dropped[t])
			t_fail("CPU %u: LOST lines say %llu, thread %u dropped "
			       "%llu",
			       t, lost_cpu[t], t, dropped[t]);
		if (next[t] != PHASE1 + PHASE2)
			t_fail("thread %u: last seq %u, expected %u", t,
			       next[t] - 1, PHASE1 + PHASE2 - 1);
		printf("cpu %u: seqs 0..%u, [LOST %llu EVENTS], seqs %u..%u\n",
		       t, PHASE1 - (unsigned int)dropped[t] - 1, lost_cpu[t],
		       first_after[t], next[t] - 1);
	}
	t_equ(lost_lines, THREADS);
	n = e_stats(&g, st, 8);
	for (cpu = 0; cpu < n; cpu++) {
		uint64_t *v = st[cpu].v;

		if (v[E_ST_READ] + v[E_ST_LOST] != v[E_ST_WRITTEN] ||
		    v[E_ST_LOST] != dropped[cpu])
			t_fail("cpu %u: read %llu lost %llu written %llu, "
			       "dropped %llu",
			       cpu, (unsigned long long)v[E_ST_READ],
			       (unsigned long long)v[E_ST_LOST],
			       (unsigned long long)v[E_ST_WRITTEN],
			       dropped[cpu]);
	}
	/* The stream's own summary. */
	f = fopen(err_path, "r");
	{
		bool found = false;
		char want[128];

		snprintf(want, sizeof(want), ": %llu events, %llu lost",
			 wrote_total, dropped_total);
		while (f && fgets(line, sizeof(line), f))
			if (strstr(line, want))
				found = true;
		if (f)
			fclose(f);
		if (!found)
			t_fail("the stream's summary does not say '%s' (see "
			       "%s)",
			       want, err_path);
	}
	printf("overflow: %llu events printed, %llu lost in %llu LOST lines "
	       "(exactly the guest's drops), reading resumed without loss\n",
	       events, dropped_total, lost_lines);
	e_guest_stop(&g);
	h_pass();
	return 0;
}
