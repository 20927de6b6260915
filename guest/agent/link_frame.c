// SPDX-License-Identifier: MIT
/*
 * hvtrace-agent: the frames the host sends on the control channel.
 *
 * One job: dispatch each frame from the host (HELLO, BYE, replies to
 * the clients' requests, PING, TRIGGER, ...) to what it answers or
 * asks for, and reply with an error to what the agent cannot serve.
 * The transport, the session and the pending requests are in link.c.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace/abi.h>

#include "agent.h"

/* --- frames from the host ------------------------------------------------- */

static void link_reply_error(struct agent *ag, const struct hvt_frame *f,
			     int status, const char *text)
{
	struct hvt_msg r;

	memset(&r, 0, sizeof(r));
	r.type = HVT_MSG_ERROR;
	r.flags = HVT_PF_REPLY;
	r.req = f->req;
	r.chan = f->chan;
	r.u.result.status = status;
	r.u.result.text.ptr = text;
	r.u.result.text.len = (uint32_t)strnlen(text, HVT_PROTO_TEXT_MAX);
	link_push(ag, &r);
}

static void link_answer(struct agent *ag, struct pending *p,
			const struct hvt_msg *m)
{
	struct client *c = p->chan ? client_by_chan(ag, p->chan) : NULL;
	struct hvt_msg r;
	int st = m->u.result.status;

	if (p->type == HVT_MSG_KFORMATS) {
		kformats_answer(ag, m);
		return;
	}
	if (m->type == HVT_MSG_REGISTER && !st) {
		if (p->chan == 0) {
			ag->trig_pending = false;
			if (hvtg_event_bind(ag->w, &ag->trig_ev, m->u.result.id,
					    m->u.result.bit) == 0) {
				ag->trig_bound = true;
				ag->trig_id = m->u.result.id;
				ag->trig_bit = m->u.result.bit;
			}
		} else if (p->replay) {
			size_t i;

			for (i = 0; c && i < c->nr_regs; i++) {
				if (c->regs[i].id != p->msg.u.reg.want_id ||
				    (c->regs[i].id == m->u.result.id &&
				     c->regs[i].bit == m->u.result.bit))
					continue;
				agent_log("the host rebound '%s' from id %u "
					  "bit %u to id %u bit %u: client %u "
					  "(pid %d) must re-register it",
					  c->regs[i].def, c->regs[i].id,
					  c->regs[i].bit, m->u.result.id,
					  m->u.result.bit, c->chan,
					  (int)c->pid);
				/* What the host holds now: the next replay
				 * must name this binding. */
				c->regs[i].id = m->u.result.id;
				c->regs[i].bit = m->u.result.bit;
				break;
			}
		} else if (c) {
			client_record_reg(c, p->def, m->u.result.id,
					  m->u.result.bit);
		}
	} else if (m->type == HVT_MSG_REGISTER && p->chan == 0) {
		ag->trig_pending = false;
		agent_log("the host refused the agent's trigger event: %.*s",
			  (int)m->u.result.text.len, m->u.result.text.ptr);
	} else if (p->replay && st) {
		agent_log("the host refused a replayed registration of client "
			  "%u: %.*s",
			  p->chan, (int)m->u.result.text.len,
			  m->u.result.text.ptr);
	}
	if (m->type == HVT_MSG_UNREGISTER && !st && c)
		client_forget_reg(c, p->msg.u.unreg.id);
	if (!p->client_req || !c)
		return;
	r = *m;
	r.req = p->client_req;
	r.chan = 0;
	client_reply(ag, p->chan, &r);
}

static void link_ping(struct agent *ag, const struct hvt_msg *m)
{
	struct hvt_msg r;

	memset(&r, 0, sizeof(r));
	r.type = HVT_MSG_PING;
	r.flags = HVT_PF_REPLY;
	r.req = m->req;
	r.u.pong.seq = m->u.ping.seq;
	r.u.pong.host_ns = m->u.ping.host_ns;
	r.u.pong.clock_id = ag->info.clock_id;
	r.u.pong.writer_rx = ag->link.rx_clock;
	/* As late as possible: link_push() sends right after. */
	r.u.pong.writer_tx = agent_clock_read(ag->info.clock_id);
	if (r.u.pong.writer_tx < r.u.pong.writer_rx)
		r.u.pong.writer_tx = r.u.pong.writer_rx;
	link_push(ag, &r);
}

static void link_trigger(struct agent *ag, const struct hvt_msg *m)
{
	uint64_t token = m->u.trigger.token;
	struct hvt_msg r;
	int ret, cpu;

	memset(&r, 0, sizeof(r));
	r.type = HVT_MSG_TRIGGER;
	r.flags = HVT_PF_REPLY;
	r.req = m->req;
	r.u.trigger_ack.token = token;
	r.u.trigger_ack.writer_ts = agent_clock_read(ag->info.clock_id);
	ret = ag->trig_bound ? hvtg_write(&ag->trig_ev, &token, sizeof(token)) :
			       -ENOENT;
	cpu = sched_getcpu();
	r.u.trigger_ack.cpu = cpu >= 0 && cpu < (int)HVT_ABI_MAX_CPUS ?
				      (uint32_t)cpu : 0;
	r.u.trigger_ack.status = ret < 0 && ret >= -HVT_PROTO_MAX_STATUS ?
					 ret : (ret ? -EIO : 0);
	link_push(ag, &r);
}

void link_frame(struct agent *ag, const struct hvt_frame *f)
{
	struct link *l = &ag->link;
	const char *why = NULL;
	struct pending *p;
	struct hvt_msg m;
	int ret;

	l->frames_in++;
	ret = hvt_msg_decode(f, &m, &why);
	if (ret) {
		l->errors++;
		agent_dbg("bad frame from the host: %s",
			  why ? why : "malformed");
		if (!(f->flags & HVT_PF_REPLY))
			link_reply_error(ag, f, ret, why ? why : "malformed");
		return;
	}
	if (m.type == HVT_MSG_HELLO) {
		bool same;

		if (m.u.hello.role != HVT_ROLE_HOST) {
			l->errors++;
			return;
		}
		if (!(m.flags & HVT_PF_REPLY) &&
		    (m.u.hello.min_version > HVT_PROTO_VERSION ||
		     m.u.hello.max_version < HVT_PROTO_MIN_VERSION)) {
			link_reply_error(ag, f, -EPROTONOSUPPORT,
					 "this agent speaks protocol "
					 "version 1");
			return;
		}
		if ((m.flags & HVT_PF_REPLY) && m.u.hello.status) {
			agent_log("the host refused this agent: %.*s",
				  (int)m.u.hello.text.len, m.u.hello.text.ptr);
			/* Try again later, not every HELLO retry period. */
			l->hello_ms = agent_now_ms() + 8000;
			return;
		}
		if (!(m.flags & HVT_PF_REPLY))
			link_hello(ag, &m);
		/*
		 * A host session is (pid, generation).  The same one saying
		 * HELLO again is a repeat (a guest port delivers HELLOs that
		 * waited while the agent was not there); another one is a
		 * host that started over and may have lost what was in
		 * flight: tell it everything again.
		 */
		same = l->replayed && m.u.hello.pid == l->host_pid &&
		       m.u.hello.generation == l->host_session;
		if (l->replayed && !same) {
			link_fail_inflight(ag, "the host restarted its "
					       "session; retry");
			l->replayed = false;
		}
		l->host_pid = m.u.hello.pid;
		l->host_session = m.u.hello.generation;
		l->host_caps = m.u.hello.caps;
		l->up = true;
		if (!l->replayed)
			link_replay(ag);
		return;
	}
	if (m.flags & HVT_PF_REPLY) {
		p = pending_by_req(ag, m.req);
		if (!p)
			return;	/* late or unknown: nothing waits for it */
		pending_unlink(ag, p);
		if (m.type != p->type && m.type != HVT_MSG_ERROR) {
			l->errors++;
			pending_fail(ag, p, -EPROTO,
				     "the host answered with another message "
				     "type");
		} else {
			link_answer(ag, p, &m);
		}
		pending_free(p);
		return;
	}
	switch (m.type) {
	case HVT_MSG_PING:
		link_ping(ag, &m);
		/* A host that posted a request first wants the rest of
		 * this round through shared memory. */
		shmsync_serve(ag);
		break;
	case HVT_MSG_TRIGGER:
		link_trigger(ag, &m);
		break;
	case HVT_MSG_BARRIER:
		bell_barrier(ag, &m);
		break;
	case HVT_MSG_EVENT_STATE:
		clients_notice(ag, &m);
		break;
	case HVT_MSG_KEVENT:
		kevents_request(ag, &m);
		break;
	case HVT_MSG_TRACING:
		agent_dbg("host: tracing %s",
			  m.u.tracing.op == HVT_TRACING_ON ? "on" : "off");
		break;
	case HVT_MSG_BYE:
		agent_log("the host said goodbye: %.*s",
			  (int)m.u.bye.text.len, m.u.bye.text.ptr);
		link_down(ag, "host ended the session",
			  l->kind == LINK_SOCKET);
		break;
	default:
		l->errors++;
		link_reply_error(ag, f, -EOPNOTSUPP,
				 "the agent does not take this message from "
				 "the host");
		break;
	}
}
