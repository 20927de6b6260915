// SPDX-License-Identifier: MIT
/*
 * Exact delivery from a guest: producer-consumer mode, 4 threads x 20000
 * numbered events (guest/workloads/ue_seq), every thread moved to the
 * other vCPU every 997 events so that its events are spread over both
 * CPU buffers and only their timestamps order them.  hvtraced reads the
 * guest's area while the workload writes; this test decodes every record
 * with libtraceevent from the formats hvtraced generated and checks:
 *
 *   - every (thread, seq) arrives exactly once, none that was not written;
 *   - per thread, in order: by ring position on each CPU, and by time
 *     across CPUs;
 *   - every field (val, the __rel_loc tag) is right;
 *   - both CPUs carried events, and every thread wrote on both;
 *   - no loss anywhere: no page with lost events, nothing dropped for this
 *     subscriber, hvtraced's reader counts read + lost == written with
 *     lost == 0 on every CPU, and the guest's own count of committed
 *     writes equals what arrived.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"

#define THREADS 4
#define COUNT	20000

int main(void)
{
	static struct e_seq s;
	struct hvt_m_stats st[8];
	struct e_guest g;
	unsigned long long written = 0, read = 0, lost = 0;
	unsigned int n, cpu, t;
	const char *done;
	char run[256];

	e_init(NULL);
	snprintf(run, sizeof(run),
		 "ue_seq --threads %d --count %d --migrate 997 --hold", THREADS,
		 COUNT);
	e_guest_start(&g, "exact", run, NULL);
	e_wait_event(&g, "hvt_seq", 60000);
	e_seq_init(&s, &g, THREADS, COUNT);
	e_enable(&g, "hvt_seq", true);
	done = e_seq_until_done(&s, &g, 80000);
	printf("guest: done %s\n", done);
	if (e_kv(done, "wrote") != (unsigned long long)THREADS * COUNT ||
	    e_kv(done, "dropped") || e_kv(done, "failed"))
		t_fail("the guest did not commit every write: %s", done);

	e_seq_check_exact(&s, COUNT);
	t_equ(s.lost, 0);
	t_equ(s.dropped, 0);
	if (!s.per_cpu[0] || !s.per_cpu[1])
		t_fail("events on CPU 0: %llu, CPU 1: %llu: both must carry "
		       "some",
		       (unsigned long long)s.per_cpu[0],
		       (unsigned long long)s.per_cpu[1]);
	for (t = 0; t < THREADS; t++) {
		unsigned int on[2] = {0, 0};
		uint32_t q;

		for (q = 0; q < COUNT; q++)
			on[s.cpu[t][q] & 1]++;
		if (!on[0] || !on[1])
			t_fail("thread %u wrote only on one CPU (%u/%u)", t,
			       on[0], on[1]);
	}
	n = e_stats(&g, st, 8);
	for (cpu = 0; cpu < n; cpu++) {
		uint64_t *v = st[cpu].v;

		printf("cpu %u: written %llu read %llu lost %llu errors %llu\n",
		       cpu, (unsigned long long)v[E_ST_WRITTEN],
		       (unsigned long long)v[E_ST_READ],
		       (unsigned long long)v[E_ST_LOST],
		       (unsigned long long)v[E_ST_ERRORS]);
		if (v[E_ST_READ] + v[E_ST_LOST] != v[E_ST_WRITTEN])
			t_fail("cpu %u: read %llu + lost %llu != written %llu",
			       cpu, (unsigned long long)v[E_ST_READ],
			       (unsigned long long)v[E_ST_LOST],
			       (unsigned long long)v[E_ST_WRITTEN]);
		if (v[E_ST_LOST] || v[E_ST_ERRORS])
			t_fail("cpu %u: %llu lost, %llu errors", cpu,
			       (unsigned long long)v[E_ST_LOST],
			       (unsigned long long)v[E_ST_ERRORS]);
		if (v[E_ST_READ] != s.per_cpu[cpu])
			t_fail("cpu %u: hvtraced read %llu, this test got %llu",
			       cpu, (unsigned long long)v[E_ST_READ],
			       (unsigned long long)s.per_cpu[cpu]);
		written += v[E_ST_WRITTEN];
		read += v[E_ST_READ];
		lost += v[E_ST_LOST];
	}
	if (written != (unsigned long long)THREADS * COUNT)
		t_fail("hvtraced counted %llu written, the guest %d", written,
		       THREADS * COUNT);
	printf("exact: %llu events from %d threads over %u CPUs (%llu on CPU "
	       "0, %llu on CPU 1) in %llu pages; read %llu + lost %llu == "
	       "written %llu\n",
	       (unsigned long long)s.n, THREADS, n,
	       (unsigned long long)s.per_cpu[0],
	       (unsigned long long)s.per_cpu[1], (unsigned long long)s.pages,
	       read, lost, written);
	e_seq_free(&s);
	e_guest_stop(&g);
	h_pass();
	return 0;
}
