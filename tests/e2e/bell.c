// SPDX-License-Identifier: MIT
/*
 * The relay-free doorbell (docs/design.md, "Waking the reader"): a rig
 * guest's ivshmem-doorbell device, served by hvtrace-ivshmem, whose
 * register a guest writer stores to; QEMU signals hvtraced's eventfd.
 *
 * Two guests in turn, each writing COUNT numbered events at RATE per
 * second from one thread (guest/workloads/ue_seq): far enough apart that
 * hvtraced arms a wakeup and sleeps between them, so every event needs a
 * doorbell to be read before the backstop.
 *
 *   - the default guest: doorbells come on the eventfd (wake_bell_rings
 *     grows) and none is relayed by the agent (wake_relayed stays 0);
 *   - a guest started with --no-bell: no eventfd rings, and the agent
 *     relays the doorbells (wake_relayed grows);
 *
 * and in both, every event arrives exactly once, in order, with read +
 * lost == written and nothing lost.  The backstop (--wake-backstop-ms)
 * is long, so events that no doorbell brought would show as a stall of
 * the whole run past its deadline.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"

#define COUNT 60
#define RATE  20

static void run_one(const char *suffix, bool bell)
{
	static struct e_seq s;
	struct hvt_m_stats st[8];
	uint64_t rings, relayed, bells, sleeps;
	const char *extra[] = {"--no-bell", NULL};
	struct e_guest g;
	unsigned int n, cpu;
	const char *done;
	char run[256];

	snprintf(run, sizeof(run),
		 "ue_seq --threads 1 --count %d --rate %d --hold", COUNT, RATE);
	e_guest_start(&g, suffix, run, bell ? NULL : extra);
	e_wait_event(&g, "hvt_seq", 60000);
	e_seq_init(&s, &g, 1, COUNT);
	rings = h_info_u64(e_dc, g.remote, "wake_bell_rings");
	relayed = h_info_u64(e_dc, g.remote, "wake_relayed");
	bells = h_info_u64(e_dc, g.remote, "wake_doorbells");
	sleeps = h_info_u64(e_dc, g.remote, "wake_sleeps");
	e_enable(&g, "hvt_seq", true);
	done = e_seq_until_done(&s, &g, 60000);
	printf("%s: guest: done %s\n", suffix, done);
	if (e_kv(done, "wrote") != COUNT || e_kv(done, "dropped") ||
	    e_kv(done, "failed"))
		t_fail("%s: the guest did not commit every write: %s", suffix,
		       done);
	e_seq_check_exact(&s, COUNT);
	t_equ(s.lost, 0);
	t_equ(s.dropped, 0);
	n = e_stats(&g, st, 8);
	for (cpu = 0; cpu < n; cpu++) {
		uint64_t *v = st[cpu].v;

		if (v[E_ST_READ] + v[E_ST_LOST] != v[E_ST_WRITTEN] ||
		    v[E_ST_LOST])
			t_fail("%s: cpu %u: read %llu + lost %llu, written "
			       "%llu",
			       suffix, cpu, (unsigned long long)v[E_ST_READ],
			       (unsigned long long)v[E_ST_LOST],
			       (unsigned long long)v[E_ST_WRITTEN]);
	}
	rings = h_info_u64(e_dc, g.remote, "wake_bell_rings") - rings;
	relayed = h_info_u64(e_dc, g.remote, "wake_relayed") - relayed;
	bells = h_info_u64(e_dc, g.remote, "wake_doorbells") - bells;
	sleeps = h_info_u64(e_dc, g.remote, "wake_sleeps") - sleeps;
	printf("%s: %d events: %llu sleeps, %llu doorbells: %llu rings on "
	       "the ivshmem doorbell, %llu relayed by the agent\n",
	       suffix, COUNT, (unsigned long long)sleeps,
	       (unsigned long long)bells, (unsigned long long)rings,
	       (unsigned long long)relayed);
	/* Sparse events: the daemon slept and was woken, at the least for
	 * a good part of them. */
	if (sleeps < COUNT / 4 || bells < COUNT / 4)
		t_fail("%s: %llu sleeps and %llu doorbells for %d events "
		       "%d ms apart: the daemon did not sleep on this guest",
		       suffix, (unsigned long long)sleeps,
		       (unsigned long long)bells, COUNT, 1000 / RATE);
	if (bell && (rings < COUNT / 4 || relayed))
		t_fail("%s: %llu rings on the ivshmem doorbell, %llu relayed: "
		       "the guest's writer did not ring the device",
		       suffix, (unsigned long long)rings,
		       (unsigned long long)relayed);
	if (!bell && (rings || relayed < COUNT / 4))
		t_fail("%s: --no-bell, yet %llu rings on an ivshmem doorbell "
		       "and only %llu relayed",
		       suffix, (unsigned long long)rings,
		       (unsigned long long)relayed);
	e_seq_free(&s);
	e_guest_stop(&g);
}

int main(void)
{
	/* A backstop far past the run: only doorbells wake the daemon. */
	e_init("--wake-backstop-ms 600000");
	run_one("bell", true);
	run_one("relay", false);
	h_pass();
	return 0;
}
