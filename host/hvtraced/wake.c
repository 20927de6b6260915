// SPDX-License-Identifier: MIT
/*
 * hvtraced: armed wakeups for guests with an agent (docs/design.md,
 * "Waking the reader"), so that an idle remote costs no polling and a
 * new event does not wait for the next poll.
 *
 *   POLL     read every poll interval (fanout.c), as without wakeups, but
 *            at least every D_WAKE_SETTLE_US after a round that found
 *            pages; a round that finds no page on any wanted CPU of the
 *            remote, D_WAKE_QUIET_US or more after the last page came,
 *            arms them (hvtrace_area_wake_arm(), step A2) and asks the
 *            agent for a BARRIER (A3)
 *   BARRIER  the agent runs membarrier() in the guest; its answer leads
 *            to the check (hvtrace_area_wake_pending(), A4): committed
 *            meanwhile?  POLL.  Otherwise
 *   ASLEEP   nothing polls the remote (a backstop of --wake-backstop-ms
 *            aside); a doorbell, rung when a writer crossed the
 *            watermark, makes it POLL again at once: the eventfd of the
 *            guest's ivshmem doorbell (bell.c), or the agent's DOORBELL
 *
 * A doorbell that finds the remote in POLL (one for an arming already
 * answered, or a guest ringing for nothing) is counted and does nothing
 * else, and the ivshmem eventfd is not watched again until the next
 * arming: a guest that rings without end costs at most one wakeup per
 * arming, and arming waits for D_WAKE_QUIET_US without pages or
 * doorbells.
 *
 * An agent that answers BARRIER with an error (an older agent, a writer
 * that cannot take the barrier, a kernel without the command) is never
 * asked again in its session: its remote stays POLL.  Areas without an
 * agent (a hypervisor, loopback writers) always POLL, with the adaptive
 * interval of fanout.c.  Answers to an older BARRIER are ignored: they
 * do not cover the newer arming.
 */
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"

static bool wake_capable(const struct remote *r)
{
	/* A guest kernel's ring beside the area rings no doorbell: such a
	 * remote is polled. */
	return D->wakeups && r->conn && r->area &&
	       r->state == HVT_REMOTE_CONNECTED && !r->wake.refused &&
	       r->info.nr_cpus <= 64 && r->nr_cpus == r->info.nr_cpus;
}

void wake_reset(struct remote *r)
{
	r->wake.state = WAKE_POLL;
	r->wake.req = 0;
	r->wake.refused = false;
}

/*
 * Watch the remote's ivshmem doorbell again (bell.c), for the arming that
 * follows.  Rings that came while it was not watched were for an older
 * arming: cleared first, before A2, so that none of them wakes this one
 * early; a ring for this arming can only come after A2.
 */
static void wake_watch_bell(struct remote *r)
{
	struct conn *b = r->wake.bell;
	struct pollfd p;
	uint64_t n;

	if (!b || b->dead)
		return;
	p.fd = b->fd;
	p.events = POLLIN;
	if (poll(&p, 1, 0) == 1 && (p.revents & POLLIN))
		(void)!read(b->fd, &n, sizeof(n));
	b->paused = false;
	conn_update_events(b);
}

/* Arm every CPU that is read and ask for the barrier. */
static void wake_arm(struct remote *r, uint64_t cpus)
{
	struct hvt_msg m;
	uint32_t cpu;

	wake_watch_bell(r);
	for (cpu = 0; cpu < r->info.nr_cpus; cpu++)
		if ((cpus >> cpu) & 1 &&
		    hvtrace_area_wake_arm(r->area, (int)cpu, D->wake_mark))
			return; /* not the owner: keep polling */
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_BARRIER;
	m.req = remote_next_req(r);
	if (conn_send(r->conn, &m))
		return;
	conn_flush(r->conn);
	r->wake.req = m.req;
	r->wake.cpus = cpus;
	r->wake.state = WAKE_BARRIER;
	r->wake.armings++;
}

uint64_t wake_after_poll(uint64_t poll_us)
{
	bool all_asleep = true, any = false, settle = false;
	uint64_t now_us = d_now_us();
	struct remote *r;

	for (r = D->remotes; r; r = r->next) {
		if (!r->wake.want)
			continue; /* nobody reads it: no timer for it */
		any = true;
		/* Pages this round: data flows, poll again (every --poll-us,
		 * at most D_WAKE_SETTLE_US for a remote that can sleep) and
		 * arm after a round that finds none.  Arming after every
		 * drained round instead would hang each batch on a doorbell
		 * from the guest, whose agent a busy guest may not run for
		 * milliseconds while its writers fill the ring. */
		if (r->wake.found || r->wake.more)
			r->wake.data_us = now_us;
		/* Quiet for less than D_WAKE_QUIET_US: a doorbell relayed by
		 * the guest's agent would come later than the next poll (a
		 * TCG guest wakes one of its processes in 0.4 ms at the
		 * median, 3.5 ms at p99: BENCH e2e_guest_wake_*), and a
		 * flood that pauses for a moment would wait for it while
		 * its writers fill the ring.  Sparser events sleep. */
		if (r->wake.found || r->wake.more || !wake_capable(r) ||
		    now_us - r->wake.data_us < D_WAKE_QUIET_US) {
			settle |= wake_capable(r);
			r->wake.state = WAKE_POLL;
			all_asleep = false;
			continue;
		}
		if (r->wake.state == WAKE_POLL)
			wake_arm(r, r->wake.want);
		if (r->wake.state == WAKE_POLL)
			all_asleep = false;
	}
	if (any && all_asleep)
		return (uint64_t)D->wake_backstop_ms * 1000;
	return settle && poll_us > D_WAKE_SETTLE_US ? D_WAKE_SETTLE_US
						    : poll_us;
}

void wake_answer(struct remote *r, const struct hvt_msg *m)
{
	uint32_t cpu;

	if (m->req != r->wake.req)
		return; /* an older arming's: a newer one is out */
	r->wake.req = 0;
	if (m->type == HVT_MSG_ERROR || m->u.result.status) {
		d_log("remote '%s': the agent refuses wakeups (%.*s): its "
		      "rings are polled",
		      r->name, (int)m->u.result.text.len,
		      m->u.result.text.ptr ? m->u.result.text.ptr : "");
		r->wake.refused = true;
		r->wake.state = WAKE_POLL;
		D->next_poll_us = 0;
		return;
	}
	r->wake.barriers++;
	if (r->wake.state != WAKE_BARRIER)
		return; /* a doorbell came first */
	for (cpu = 0; cpu < r->info.nr_cpus; cpu++)
		if ((r->wake.cpus >> cpu) & 1 &&
		    hvtrace_area_wake_pending(r->area, (int)cpu) > 0) {
			/* A4: committed while the barrier ran. */
			r->wake.state = WAKE_POLL;
			D->next_poll_us = 0;
			return;
		}
	r->wake.state = WAKE_ASLEEP;
	r->wake.sleeps++;
}

void wake_doorbell(struct remote *r)
{
	r->wake.doorbells++;
	if (r->wake.state == WAKE_POLL) {
		/*
		 * Polled anyway: a doorbell of an arming already answered
		 * (or a guest ringing for nothing).  It forces no read, so
		 * that a guest that rings without end cannot make the
		 * daemon spin, and the ivshmem doorbell goes unwatched until
		 * the next arming.
		 */
		r->wake.stale++;
		if (r->wake.bell && !r->wake.bell->paused) {
			r->wake.bell->paused = true;
			conn_update_events(r->wake.bell);
		}
		return;
	}
	r->wake.state = WAKE_POLL;
	/* As data for the quiet rule: a remote is armed again only
	 * D_WAKE_QUIET_US after a doorbell too, so a guest that rings for
	 * nothing gets at most one arming (one BARRIER) per
	 * D_WAKE_QUIET_US; a real doorbell brings pages anyway. */
	r->wake.data_us = d_now_us();
	D->next_poll_us = 0; /* read now */
}
