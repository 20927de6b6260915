// SPDX-License-Identifier: MIT
/*
 * hvtraced restarts under a running guest workload, in both ring modes;
 * the workload's events keep flowing with the same ids, and every event
 * is delivered exactly once across the restart.
 *
 * The guest first registers and drops an event (hvt_pad), so that the
 * workload's hvt_seq gets an id a fresh registry would not hand out first
 * (ids are not reused): after the restart the agent replays hvt_seq's
 * registration with the binding its running writers hold, and the new
 * daemon's registry must honour it (hvtrace_ue_register_at()), or the writers
 * would keep writing records under an id that means something else (or
 * nothing) to the host.
 *
 *   - before: hvt_seq enabled, events arrive (id I, bit B);
 *   - hvtraced is stopped (SIGTERM) and a new one started; it attaches
 *     the guest again by itself (from its state file, and says so in its
 *     log); the agent replays;
 *   - the new registry has hvt_seq with id I and bit B; enabling it there
 *     reaches the running writers (bit B on the control page);
 *   - events arrive again, decoded under id I with every field right; the
 *     new daemon resumes from the read positions the old one posted in
 *     the control page (struct hvt_ctrl_pos), so no event comes twice,
 *     and once the workload is done, the events read before and after
 *     plus the losses reported equal what the workload wrote (read + lost
 *     == written); neither the agent nor the daemon reports a rebound
 *     registration.
 *
 * Consume mode first, then the same with the guest's area in overwrite
 * mode (where the old daemon never posted a consumer position).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "e2e.h"
#include "../../host/userevents/userevents-local.h"

#define THREADS 2
#define RATE	300
#define SECONDS 25

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
	ret = hvtrace_daemon_call_result(e_dc, &m, &res, text, sizeof(text));
	if (ret)
		t_fail("enable hvt_seq: %s", text);
	*id = res.id;
	*bit = res.bit;
}

/* The new daemon attached the guest by itself: wait for the session. */
static void wait_connected(struct e_guest *g)
{
	struct hvt_remote_rec rec;
	int k;

	for (k = 0; k < 3000; k++) {
		if (!hvtrace_daemon_find_remote(e_dc, g->name, &rec) &&
		    rec.state == HVT_REMOTE_CONNECTED && rec.nr_cpus) {
			g->remote = rec.id;	/* the new daemon's id */
			return;
		}
		usleep(10000);
	}
	t_fail("the restarted hvtraced did not attach guest %s again",
	       g->name);
}

static void scenario(const char *suffix, const char *const *extra)
{
	static struct e_seq s1, s2;
	uint8_t *seen1[THREADS];
	uint64_t n1, lost1;
	uint32_t max_seq;
	struct hvt_remote_rec rec;
	struct e_guest g;
	char run[256], log[300], again_line[160];
	const char *done;
	uint32_t id1, bit1, id2, bit2, t, q;
	unsigned long long wrote, dropped, read, lost, twice = 0;

	snprintf(run, sizeof(run),
		 "ue_writer --def 'hvt_pad u32 x' && ue_seq --threads %d "
		 "--duration %d --rate %d",
		 THREADS, SECONDS, RATE);
	e_guest_start(&g, suffix, run, extra);
	e_wait_event(&g, "hvt_seq", 60000);
	enable_get(&g, &id1, &bit1);
	/* hvt_pad took the id after the agent's trigger event. */
	if (id1 == HVT_UE_ID_BASE + 1)
		t_fail("hvt_seq got id %u: the scenario needs a gap", id1);
	printf("%s before: hvt_seq is id %u, bit %u\n", suffix, id1, bit1);
	e_seq_init(&s1, &g, THREADS, SECONDS * RATE + 1000);
	t_eq(s1.id, (int)id1);
	e_seq_collect(&s1, 20000, 300);
	if (s1.n < 300)
		t_fail("only %llu events before the restart",
		       (unsigned long long)s1.n);
	e_drain(&g, e_seq_dispatch, NULL);
	/* Stop hvtraced under the running workload.  It goes on reading
	 * after the drain until it stops, and what it read is past the
	 * position the new one resumes from: s1 takes it all, to the end
	 * of the old daemon's socket. */
	e_daemon_stop(e_seq_dispatch, NULL);
	/* Keep what arrived before: s1 must go before the new daemon's
	 * pages arrive (they would feed every e_seq still set up). */
	for (t = 0; t < THREADS; t++) {
		seen1[t] = malloc(s1.max_seq);
		t_assert(seen1[t]);
		memcpy(seen1[t], s1.seen[t], s1.max_seq);
	}
	n1 = s1.n;
	lost1 = s1.lost;
	max_seq = s1.max_seq;
	e_seq_free(&s1);

	e_daemon_start(NULL);
	wait_connected(&g);
	snprintf(log, sizeof(log), "%s/hvtraced.log", h_dir);
	snprintf(again_line, sizeof(again_line), "attached guest '%s' again",
		 g.name);
	if (!h_file_has(log, again_line))
		t_fail("the new hvtraced does not log '%s'", again_line);
	e_wait_event(&g, "hvt_seq", 30000);
	enable_get(&g, &id2, &bit2);
	printf("%s after: hvt_seq is id %u, bit %u\n", suffix, id2, bit2);
	if (id2 != id1 || bit2 != bit1)
		t_fail("the replay got id %u bit %u; the running writers hold "
		       "id %u bit %u",
		       id2, bit2, id1, bit1);
	e_remote(&g, &rec);
	e_seq_init(&s2, &g, THREADS, SECONDS * RATE + 1000);
	t_eq(s2.id, (int)id1);
	done = e_seq_until_done(&s2, &g, (SECONDS + 60) * 1000);
	wrote = e_kv(done, "wrote");
	dropped = e_kv(done, "dropped");

	/* Exactly once: no seq of any thread arrived twice, before and
	 * after together.  The gaps between the first and the last seq that
	 * arrived are printed (the writers skip seqs while hvt_seq is off
	 * across the restart: one gap each; any other shows where a loss
	 * fell). */
	for (t = 0; t < THREADS; t++) {
		uint32_t first = max_seq, last = 0, from = 0, gaps = 0;

		for (q = 0; q < max_seq; q++) {
			unsigned int k = seen1[t][q] + s2.seen[t][q];

			if (k > 1) {
				if (!twice)
					printf("thread %u seq %u arrived %u "
					       "times\n",
					       t, q, k);
				twice++;
			}
			if (k && first == max_seq)
				first = q;
			if (k)
				last = q;
		}
		for (q = first; q <= last && first < max_seq; q++) {
			bool in = seen1[t][q] + s2.seen[t][q];

			if (!in && (!q || seen1[t][q - 1] + s2.seen[t][q - 1]))
				from = q;
			if (!in && (seen1[t][q + 1] + s2.seen[t][q + 1]) &&
			    gaps++ < 6)
				printf("thread %u: seqs %u-%u did not arrive\n",
				       t, from, q);
		}
		free(seen1[t]);
	}
	read = n1 + s2.n;
	lost = lost1 + s2.lost;
	printf("%s: %llu events before the restart, %llu after, %llu lost, "
	       "%llu delivered twice; the workload wrote %llu (%llu dropped "
	       "in the ring)\n",
	       suffix, (unsigned long long)n1, (unsigned long long)s2.n,
	       lost, twice, wrote, dropped);
	if (twice)
		t_fail("%llu events delivered twice across the restart",
		       twice);
	if (read + lost != wrote + dropped)
		t_fail("read %llu + lost %llu != written %llu", read, lost,
		       wrote + dropped);
	if (h_file_has(g.console, "must re-register"))
		t_fail("the agent says a client must re-register");
	if (h_file_has(log, "but got id"))
		t_fail("the new hvtraced could not honour a replayed binding");
	e_seq_free(&s2);
	e_guest_stop(&g);
}

int main(void)
{
	static const char *const overwrite[] = { "--agent-args",
						 "--mode overwrite", NULL };

	e_init(NULL);
	scenario("rs", NULL);
	scenario("ro", overwrite);
	h_pass();
	return 0;
}
