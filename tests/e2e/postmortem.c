// SPDX-License-Identifier: MIT
/*
 * Post-mortem: QEMU is killed (SIGKILL) while the guest's workload writes,
 * and the host then reads every event the guest committed from the area
 * file, which the rig keeps (--keep-area).
 *
 * The workload (ue_seq, two threads pinned to the two vCPUs, 2000 events
 * a second each) prints its per-thread count of committed writes every
 * 200 ms on the console: lower bounds of what must be in the area.
 * Nobody reads while it runs (nothing is subscribed: hvtraced leaves the
 * rings alone), so the whole run is in the area when QEMU dies.  Then:
 *
 *   - hvtraced, still holding the dead guest's area, delivers every event
 *     (subscribe + DRAIN): per thread exactly seqs 0..K-1, each once, in
 *     order, K at least the last count the guest printed; nothing lost,
 *     read + lost == written on every CPU;
 *   - the kept area file itself, opened afresh with libhvtrace (read-only,
 *     no daemon), holds the same number of hvt_seq records per CPU.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hvtrace.h>

#include "e2e.h"

#define THREADS 2

static int qemu_pid(const struct e_guest *g)
{
	char path[400], buf[32];
	FILE *f;

	snprintf(path, sizeof(path), "%s/run/%s/qemu.pid", h_dir, g->name);
	f = fopen(path, "r");
	if (!f || !fgets(buf, sizeof(buf), f))
		t_fail("no %s", path);
	fclose(f);
	return atoi(buf);
}

/* hvt_seq records per CPU in the area file, read with libhvtrace alone. */
static void count_file(const char *path, int id, uint64_t *per_cpu,
		       unsigned int ncpu)
{
	struct hvtrace_area *a;
	struct hvtrace_area_info info;
	static uint8_t page[65536];
	unsigned int cpu;
	int ret;

	ret = hvtrace_area_open(path, 0, 0, 0, &a);
	if (ret)
		t_fail("%s: %s", path, hvtrace_last_error());
	hvtrace_area_get_info(a, &info);
	t_eq(info.nr_cpus, ncpu);
	for (cpu = 0; cpu < ncpu; cpu++) {
		struct hvtrace_page_info pi;
		int k;

		per_cpu[cpu] = 0;
		/* Bounded: the ring has nr_subbufs pages. */
		for (k = 0; k <= (int)info.nr_subbufs + 1; k++) {
			struct hvtrace_subbuf_iter it;
			struct hvtrace_record rec;

			ret = hvtrace_cpu_read_page(a, (int)cpu, page,
						    sizeof(page), &pi);
			if (ret <= 0)
				break;
			if (pi.lost_events)
				t_fail("%s: cpu %u: %llu events lost", path,
				       cpu, (unsigned long long)pi.lost_events);
			t_ok(hvtrace_subbuf_iter_init(&it, page, sizeof(page),
						      (int)cpu));
			while (hvtrace_subbuf_next(&it, &rec) == 1) {
				uint16_t type;

				memcpy(&type, rec.data, 2);
				if (type == id)
					per_cpu[cpu]++;
			}
		}
		if (ret < 0)
			t_fail("%s: cpu %u: %s", path, cpu,
			       hvtrace_last_error());
	}
	hvtrace_area_close(a);
}

int main(void)
{
	static const char *const keep[] = {"--keep-area", NULL};
	static struct e_seq s;
	struct hvt_m_stats st[8];
	struct e_guest g;
	uint64_t lower[THREADS] = {0}, file_cpu[2];
	unsigned int progress = 0, t, n, cpu;
	const char *l;
	char run[256];
	uint32_t q;
	int pid, k;

	e_init(NULL);
	snprintf(run, sizeof(run),
		 "ue_seq --threads %d --count 1000000 --rate 2000 "
		 "--progress 200",
		 THREADS);
	e_guest_start(&g, "pm", run, keep);
	e_wait_event(&g, "hvt_seq", 60000);
	e_enable(&g, "hvt_seq", true);
	e_console_line(&g, "ue_seq: enabled", "ue_seq: error", 30000);
	/* Let it write for a while (at least 10 progress reports). */
	while (progress < 10) {
		l = e_console_line(
			&g, "ue_seq: progress wrote=", "ue_seq: error", 30000);
		for (t = 0; t < THREADS; t++) {
			const char *p = l;
			unsigned int k2;

			for (k2 = 0; k2 < t && p; k2++) {
				p = strchr(p, ',');
				if (p)
					p++;
			}
			if (!p)
				t_fail("bad progress line '%s'", l);
			lower[t] = strtoull(p, NULL, 10);
		}
		progress++;
	}
	if (!lower[0] || !lower[1])
		t_fail("the workload reported no progress: %llu, %llu",
		       (unsigned long long)lower[0],
		       (unsigned long long)lower[1]);

	/* Kill QEMU mid-run: no shutdown, nothing flushed. */
	pid = qemu_pid(&g);
	if (kill(pid, SIGKILL))
		t_fail("kill %d: %m", pid);
	for (k = 0; k < 1000 && !kill(pid, 0); k++)
		usleep(10000);
	if (!kill(pid, 0))
		t_fail("QEMU %d survived SIGKILL", pid);
	/* The last report printed before the kill may be newer. */
	while ((l = e_console_line(&g, "ue_seq: progress wrote=", NULL, 0)))
		for (t = 0; t < THREADS; t++) {
			const char *p = l;

			if (t)
				p = strchr(p, ',');
			if (p)
				lower[t] = strtoull(p + (t ? 1 : 0), NULL, 10);
		}
	printf("killed QEMU %d after %u progress reports; the guest had "
	       "committed at least %llu + %llu events\n",
	       pid, progress, (unsigned long long)lower[0],
	       (unsigned long long)lower[1]);
	if (access(g.area, R_OK))
		t_fail("--keep-area: %s is gone", g.area);

	/* hvtraced still holds the dead guest's area: read it all. */
	e_seq_init(&s, &g, THREADS, 1000000);
	e_drain(&g, e_seq_dispatch, NULL);
	e_seq_collect(&s, 500, 0);
	e_drain(&g, e_seq_dispatch, NULL);
	n = e_stats(&g, st, 8);
	for (cpu = 0; cpu < n; cpu++)
		printf("cpu %u: written %llu read %llu lost %llu errors %llu\n",
		       cpu, (unsigned long long)st[cpu].v[E_ST_WRITTEN],
		       (unsigned long long)st[cpu].v[E_ST_READ],
		       (unsigned long long)st[cpu].v[E_ST_LOST],
		       (unsigned long long)st[cpu].v[E_ST_ERRORS]);
	printf("%llu pages, %llu records (%llu of other events)\n",
	       (unsigned long long)s.pages, (unsigned long long)s.n,
	       (unsigned long long)s.other);
	for (t = 0; t < THREADS; t++) {
		uint32_t count = 0;

		while (count < s.max_seq && s.seen[t][count])
			count++;
		for (q = count; q < s.max_seq; q++)
			if (s.seen[t][q])
				t_fail("thread %u: seq %u arrived but seq %u "
				       "did not",
				       t, q, count);
		if (count < lower[t])
			t_fail("thread %u: %u events read, but the guest had "
			       "committed %llu",
			       t, count, (unsigned long long)lower[t]);
		for (q = 1; q < count; q++)
			if (s.ts[t][q] < s.ts[t][q - 1])
				t_fail("thread %u: seq %u older than seq %u", t,
				       q, q - 1);
		printf("thread %u: seqs 0..%u, each once and in order (>= "
		       "%llu reported committed)\n",
		       t, count - 1, (unsigned long long)lower[t]);
	}
	t_equ(s.lost, 0);
	t_eq(n, 2);
	for (cpu = 0; cpu < n; cpu++) {
		uint64_t *v = st[cpu].v;

		if (v[E_ST_READ] + v[E_ST_LOST] != v[E_ST_WRITTEN] ||
		    v[E_ST_LOST])
			t_fail("cpu %u: read %llu lost %llu written %llu", cpu,
			       (unsigned long long)v[E_ST_READ],
			       (unsigned long long)v[E_ST_LOST],
			       (unsigned long long)v[E_ST_WRITTEN]);
		if (v[E_ST_READ] != s.per_cpu[cpu])
			t_fail("cpu %u: hvtraced read %llu, this test got %llu",
			       cpu, (unsigned long long)v[E_ST_READ],
			       (unsigned long long)s.per_cpu[cpu]);
	}

	/* The file alone, read afresh. */
	count_file(g.area, s.id, file_cpu, 2);
	for (cpu = 0; cpu < 2; cpu++)
		if (file_cpu[cpu] != s.per_cpu[cpu])
			t_fail("cpu %u: the kept area file holds %llu hvt_seq "
			       "records, hvtraced delivered %llu",
			       cpu, (unsigned long long)file_cpu[cpu],
			       (unsigned long long)s.per_cpu[cpu]);
	printf("postmortem: %llu events after SIGKILL of QEMU (cpu 0: %llu, "
	       "cpu 1: %llu), the same in the kept area file; nothing lost\n",
	       (unsigned long long)s.n, (unsigned long long)s.per_cpu[0],
	       (unsigned long long)s.per_cpu[1]);
	e_seq_free(&s);
	e_guest_stop(&g);
	if (!access(g.area, F_OK))
		t_fail("%s remains after cleanup --areas", g.area);
	h_pass();
	return 0;
}
