// SPDX-License-Identifier: MIT
/*
 * hvtraced restarts under a running guest workload; the workload's events
 * keep flowing with the same ids.
 *
 * The guest first registers and drops an event (hvt_pad), so that the
 * workload's hvt_seq gets an id a fresh registry would not hand out first
 * (ids are not reused): after the restart the agent replays hvt_seq's
 * registration with the binding its running writers hold, and the new
 * daemon's registry must honour it (hvt_ue_register_at()), or the writers
 * would keep writing records under an id that means something else (or
 * nothing) to the host.
 *
 *   - before: hvt_seq enabled, events arrive (id I, bit B);
 *   - hvtraced is stopped (SIGTERM) and a new one started; the guest is
 *     attached again; the agent replays;
 *   - the new registry has hvt_seq with id I and bit B; enabling it there
 *     reaches the running writers (bit B on the control page);
 *   - events arrive again, decoded under id I with every field right,
 *     numbered after the ones before (the workload never stopped); the
 *     new daemon reads on from the consumer position the old one
 *     published, which moves a sub-buffer at a time, so at most the part
 *     of the sub-buffer the old daemon was reading comes again; neither
 *     the agent nor the daemon reports a rebound registration.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "../../host/userevents/userevents.h"

#define THREADS 2
#define RATE	300
#define SECONDS 120

static void enable_get(struct e_guest *g, uint32_t *id, uint32_t *bit)
{
	struct hvt_m_result res;
	struct hvt_msg m;
	char text[512];
	int ret;

	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_ENABLE;
	m.chan = g->remote;
	m.u.arg.arg = 1;
	m.u.arg.s.ptr = "hvt_seq";
	m.u.arg.s.len = 7;
	ret = hvt_dclient_result(e_dc, &m, &res, text, sizeof(text));
	if (ret)
		t_fail("enable hvt_seq: %s", text);
	*id = res.id;
	*bit = res.bit;
}

static bool file_has(const char *path, const char *needle)
{
	char line[1024];
	bool found = false;
	FILE *f = fopen(path, "r");

	while (f && !found && fgets(line, sizeof(line), f))
		found = strstr(line, needle) != NULL;
	if (f)
		fclose(f);
	return found;
}

int main(void)
{
	static struct e_seq s1, s2;
	struct hvt_remote_rec rec;
	struct e_guest g;
	char run[256], log[300];
	uint32_t id1, bit1, id2, bit2, t, q, last[THREADS], first, again;
	uint32_t min_again = UINT32_MAX;

	e_init(NULL);
	snprintf(run, sizeof(run),
		 "ue_writer --def 'hvt_pad u32 x' && ue_seq --threads %d "
		 "--duration %d --rate %d --hold",
		 THREADS, SECONDS, RATE);
	e_guest_start(&g, "rs", run, NULL);
	e_wait_event(&g, "hvt_seq", 60000);
	enable_get(&g, &id1, &bit1);
	/* hvt_pad took the id after the agent's trigger event. */
	if (id1 == HVT_UE_ID_BASE + 1)
		t_fail("hvt_seq got id %u: the scenario needs a gap", id1);
	printf("before: hvt_seq is id %u, bit %u\n", id1, bit1);
	e_seq_init(&s1, &g, THREADS, SECONDS * RATE + 1000);
	t_eq(s1.id, (int)id1);
	e_seq_collect(&s1, 20000, 300);
	if (s1.n < 300)
		t_fail("only %llu events before the restart",
		       (unsigned long long)s1.n);
	e_drain(&g, e_seq_dispatch, NULL);
	for (t = 0; t < THREADS; t++) {
		last[t] = 0;
		for (q = 0; q < s1.max_seq; q++)
			if (s1.seen[t][q])
				last[t] = q;
	}
	e_seq_free(&s1);

	/* Restart hvtraced under the running workload. */
	e_daemon_restart(NULL);
	e_guest_attach(&g);
	e_wait_event(&g, "hvt_seq", 30000);
	enable_get(&g, &id2, &bit2);
	printf("after: hvt_seq is id %u, bit %u\n", id2, bit2);
	if (id2 != id1 || bit2 != bit1)
		t_fail("the replay got id %u bit %u; the running writers hold "
		       "id %u bit %u",
		       id2, bit2, id1, bit1);
	e_remote(&g, &rec);
	e_seq_init(&s2, &g, THREADS, SECONDS * RATE + 1000);
	t_eq(s2.id, (int)id1);
	e_seq_collect(&s2, 20000, 600);
	if (s2.n < 600)
		t_fail("only %llu events after the restart",
		       (unsigned long long)s2.n);
	for (t = 0; t < THREADS; t++) {
		for (first = 0, q = last[t] + 1; q < s2.max_seq; q++)
			if (s2.seen[t][q]) {
				first = q;
				break;
			}
		if (!first)
			t_fail("thread %u: no event after seq %u since the "
			       "restart",
			       t, last[t]);
		/* The new daemon starts at the consumer position the old
		 * one published, which moves a sub-buffer at a time: what
		 * the old one had read of the sub-buffer it was in comes
		 * again, and nothing older. */
		again = 0;
		for (q = 0; q <= last[t]; q++)
			if (s2.seen[t][q]) {
				again++;
				min_again = q < min_again ? q : min_again;
			}
		printf("thread %u: last seq before the restart %u, events "
		       "from seq %u after it; %u delivered again (from seq "
		       "%u)\n",
		       t, last[t], first, again, again ? min_again : 0);
		/* A contiguous tail that fits one sub-buffer (a record here
		 * is over 40 bytes). */
		if (again && (again != last[t] - min_again + 1 ||
			      again > rec.subbuf_size / 40))
			t_fail("thread %u: %u events from seq %u delivered "
			       "again: more than the sub-buffer being read",
			       t, again, min_again);
		min_again = UINT32_MAX;
	}
	if (file_has(g.console, "must re-register"))
		t_fail("the agent says a client must re-register");
	snprintf(log, sizeof(log), "%s/hvtraced.log", h_dir);
	if (file_has(log, "but got id"))
		t_fail("the new hvtraced could not honour a replayed binding");
	printf("restart: %llu events before, %llu after, same id %u and bit "
	       "%u\n",
	       (unsigned long long)s1.n, (unsigned long long)s2.n, id1, bit1);
	e_seq_free(&s2);
	e_guest_stop(&g);
	h_pass();
	return 0;
}
