// SPDX-License-Identifier: MIT
/*
 * hvtraced: the time-sync pings of an agent session.
 *
 * While an agent session is up and the area attached, the daemon sends
 * PINGs: a burst of D_SYNC_BURST rounds when the session comes up, then
 * one round per --sync-interval (every 50 ms during a trigger run, to
 * keep the model fresh).  A round is a chain of D_SYNC_CHAIN pings, each
 * sent as soon as the previous answer arrives; the first of a chain only
 * wakes the agent and is not used.  Each used answer (the agent's clock
 * read at receipt and at sending) becomes one sample for sync.c, with the
 * agent's own processing time taken out of the round trip.  An answer
 * that is late (D_PING_TIMEOUT_MS), on another clock or out of sequence
 * counts as failed.
 *
 * The chain's last PING also wakes the agent for time sync through the
 * area's control page: a request is posted there before it leaves
 * (sync_shm_post()), and its PONG starts the exchanges (sync_shm_round(),
 * sync.c), microseconds wide where a ping is tens.  While those answer,
 * the pings' own samples are not fed (sync_shm_alone()); they are for an
 * agent that does not answer on the page, or has not for 5 s.
 */
#include <string.h>

#include "daemon.h"

void ping_burst(struct remote *r)
{
	r->ping.burst_left = D_SYNC_BURST;
	r->ping.next_ms = d_now_ms();
}

void ping_reset(struct remote *r)
{
	r->ping.req = 0;
	r->ping.idx = 0;
	r->shm.posted = false;
}

static void ping_send(struct remote *r)
{
	struct hvt_msg m;

	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_PING;
	m.req = remote_next_req(r);
	m.u.ping.seq = ++r->ping.seq;
	/* The chain's last PING wakes the agent for shared-memory sync. */
	if (r->ping.idx == D_SYNC_CHAIN - 1)
		sync_shm_post(r);
	m.u.ping.host_ns = d_now_ns();
	if (conn_send(r->conn, &m))
		return;
	r->ping.req = m.req;
	/* The sample's send time: right before the bytes leave. */
	r->ping.sent_ns = d_now_ns();
	conn_flush(r->conn);
}

/*
 * Writer ticks to nanoseconds with the area's nominal rate: only used for
 * the agent's own processing time (microseconds), where ppm do not
 * matter.
 */
static uint64_t ticks_to_ns(const struct remote *r, uint64_t ticks)
{
	if (r->info.clock_id != HVT_CLOCK_COUNTER)
		return ticks;
	if (r->info.clock_freq_hz)
		return (uint64_t)((unsigned __int128)ticks * 1000000000u /
				  r->info.clock_freq_hz);
	if (r->info.clock_shift < 64)
		return (uint64_t)(((unsigned __int128)ticks *
				   r->info.clock_mult) >>
				  r->info.clock_shift);
	return ticks;
}

static void ping_pong(struct remote *r, const struct hvt_msg *m,
		      uint64_t recv_ns)
{
	uint64_t now = d_now_ms(), busy, send, recv;

	r->ping.req = 0;
	if (m->type == HVT_MSG_ERROR || m->u.pong.seq != r->ping.seq ||
	    !r->area || m->u.pong.clock_id != r->info.clock_id ||
	    recv_ns < r->ping.sent_ns) {
		r->sync_bad++;
		goto next;
	}
	/*
	 * NTP's four stamps: the writer read its clock at rx and at tx, both
	 * inside [send, recv] of host time.  Their midpoint pairs with the
	 * midpoint of [send + busy/2, recv - busy/2], where busy is the
	 * agent's time between the two readings: a sample whose window no
	 * longer includes the agent's own processing.
	 */
	busy = ticks_to_ns(r, m->u.pong.writer_tx - m->u.pong.writer_rx);
	if (busy > recv_ns - r->ping.sent_ns) {
		r->sync_bad++;	/* slower than the round trip: bogus */
		goto next;
	}
	/*
	 * The first ping of a round wakes an agent that slept: that leg is
	 * slow (tens of microseconds on a VM whose vCPU halted) while the
	 * answer comes back fast, and the sample's midpoint is skewed by
	 * half the difference.  Pings sent right after an answer find the
	 * agent awake, with legs of the same length: only those are used.
	 */
	if (r->ping.idx == 0)
		goto next;
	/* While shared memory answers, the model comes from it alone. */
	if (sync_shm_alone(r))
		goto next;
	send = r->ping.sent_ns + busy / 2;
	recv = recv_ns - busy / 2;
	sync_sample(r, send,
		    m->u.pong.writer_rx +
			    (m->u.pong.writer_tx - m->u.pong.writer_rx) / 2,
		    recv);
	r->sync_samples++;
	clocks_update(r); /* the refitted model to the subscribers */
next:
	/* The agent spins on the control page once it has answered. */
	if (r->shm.posted) {
		if (m->type == HVT_MSG_PING && m->u.pong.seq == r->ping.seq &&
		    m->u.pong.clock_id == r->info.clock_id)
			sync_shm_round(r, m->u.pong.writer_tx, r->ping.sent_ns,
				       recv_ns);
		else
			r->shm.posted = false;
	}
	if (++r->ping.idx < D_SYNC_CHAIN) {
		r->ping.next_ms = now;	/* the chain goes on at once */
		return;
	}
	r->ping.idx = 0;
	if (r->ping.burst_left) {
		r->ping.burst_left--;
		r->ping.next_ms = now + D_SYNC_BURST_GAP_MS;
	} else {
		r->ping.next_ms = D->sync_interval_ms ?
					  now + D->sync_interval_ms :
					  UINT64_MAX;
	}
	if (r->trig && r->ping.next_ms > now + 50)
		r->ping.next_ms = now + 50;	/* keep the model fresh */
}

void ping_answer(struct remote *r, const struct hvt_msg *m, uint64_t recv_ns)
{
	ping_pong(r, m, recv_ns);
	/* Continue a chain right away, without a trip through the loop. */
	if (r->ping.idx && !r->ping.req && r->conn &&
	    r->state == HVT_REMOTE_CONNECTED && r->area)
		ping_send(r);
}


void ping_tick(struct remote *r, uint64_t now, uint64_t *next)
{
	if (!r->conn || r->state != HVT_REMOTE_CONNECTED || !r->area)
		return;
	if (r->ping.req &&
	    now >= r->ping.sent_ns / 1000000 + D_PING_TIMEOUT_MS) {
		ping_reset(r);
		r->sync_bad++;
	}
	if (!r->ping.req && now >= r->ping.next_ms)
		ping_send(r);
	if (r->ping.req)
		d_due(next, r->ping.sent_ns / 1000000 + D_PING_TIMEOUT_MS);
	else
		d_due(next, r->ping.next_ms);
}
