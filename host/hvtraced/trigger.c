// SPDX-License-Identifier: MIT
/*
 * hvtraced: causality trigger runs (hvtrace daemon trigger).
 *
 * A tool asks for COUNT triggers on a remote with a connected agent; the
 * daemon enables the agent's D_TRIGGER_EVENT user event, then sends one
 * TRIGGER at a time and stamps it with the host clock right before the
 * bytes leave and when the acknowledgement arrives: the writer's event
 * (its timestamp in the acknowledgement) happened inside that window, so
 * the records let a tool check the clock model against causality.  A
 * trigger that is not acknowledged within D_TRIGGER_TIMEOUT_MS ends the
 * run; so do a lost session, the remote going away, or an error.  The
 * reply carries every record taken, and the event is disabled again.  One
 * run per remote at a time.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"

static uint64_t trig_token_seq;

static void trig_finish(struct remote *r, int status)
{
	struct trig_run *t = r->trig;
	struct hvtrace_ue_error err;
	struct hvt_msg m;
	uint8_t *buf = NULL;
	uint32_t i;

	r->trig = NULL;
	hvtrace_ue_set_enabled(r->reg, D_TRIGGER_EVENT, HVT_UE_USED_OTHER, false,
			   &err);
	remote_apply_changes(r);
	if (t->tool) {
		buf = malloc((size_t)t->done * HVT_TRIGGER_REC_SIZE + 1);
		memset(&m, 0, sizeof(m));
		m.type = HVT_MSG_TRIGGER_RUN;
		m.flags = HVT_PF_REPLY;
		m.req = t->tool_req;
		m.chan = r->id;
		m.u.trigger_run_reply.status = buf ? status : -ENOMEM;
		if (buf) {
			for (i = 0; i < t->done; i++) {
				size_t off = (size_t)i * HVT_TRIGGER_REC_SIZE;

				hvt_msg_put_trigger(buf + off, &t->recs[i]);
			}
			m.u.trigger_run_reply.recs.ptr = buf;
			m.u.trigger_run_reply.recs.count = t->done;
		}
		conn_send(t->tool, &m);
	}
	free(buf);
	free(t->recs);
	free(t);
}

static void trig_send(struct remote *r)
{
	struct trig_run *t = r->trig;
	struct hvt_trigger_rec *rec = &t->recs[t->done];
	struct hvt_msg m;

	memset(rec, 0, sizeof(*rec));
	/* Unique across remotes and runs: the remote id, then a count. */
	rec->token = ((uint64_t)r->id << 48) |
		     (++trig_token_seq & 0xffffffffffffull);
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_TRIGGER;
	m.req = remote_next_req(r);
	m.u.trigger.token = rec->token;
	m.u.trigger.host_ns = d_now_ns();
	t->req = m.req;
	t->deadline_ms = d_now_ms() + D_TRIGGER_TIMEOUT_MS;
	if (conn_send(r->conn, &m)) {
		trig_finish(r, -ENOBUFS);
		return;
	}
	/* Before the bytes leave, so before the agent can act on them. */
	rec->host_before = d_now_ns();
	conn_flush(r->conn);
}

void trigger_answer(struct remote *r, const struct hvt_msg *m,
		    uint64_t recv_ns)
{
	struct trig_run *t = r->trig;
	struct hvt_trigger_rec *rec = &t->recs[t->done];

	/* When the acknowledgement arrived: after the event was written. */
	rec->host_after = recv_ns;
	t->req = 0;
	if (m->type == HVT_MSG_ERROR) {
		rec->status = m->u.result.status;
	} else if (m->u.trigger_ack.token != rec->token) {
		rec->status = -EPROTO;
	} else {
		rec->writer_ts = m->u.trigger_ack.writer_ts;
		rec->cpu = m->u.trigger_ack.cpu;
		rec->status = m->u.trigger_ack.status;
	}
	t->done++;
	if (t->done == t->count) {
		trig_finish(r, 0);
		return;
	}
	trig_send(r);
}

int trigger_start(struct remote *r, struct conn *tool, uint32_t req,
		  uint32_t count, char *msg, size_t msgsize)
{
	struct hvtrace_ue_error err = { 0 };
	struct trig_run *t;
	int ret;

	if (r->trig) {
		snprintf(msg, msgsize, "a trigger run is in progress on '%s'",
			 r->name);
		return -EBUSY;
	}
	if (!r->conn || r->state != HVT_REMOTE_CONNECTED || !r->area) {
		snprintf(msg, msgsize, "the agent of '%s' is not connected",
			 r->name);
		return -ENOTCONN;
	}
	if (!r->tracing_on) {
		snprintf(msg, msgsize, "tracing is off on '%s'", r->name);
		return -ENODATA;
	}
	ret = hvtrace_ue_set_enabled(r->reg, D_TRIGGER_EVENT, HVT_UE_USED_OTHER,
				 true, &err);
	remote_apply_changes(r);
	if (ret) {
		snprintf(msg, msgsize, "the agent has not registered its "
				       "'%s' event: %s",
			 D_TRIGGER_EVENT, err.msg);
		return ret;
	}
	t = calloc(1, sizeof(*t));
	if (t)
		t->recs = calloc(count, sizeof(*t->recs));
	if (!t || !t->recs) {
		free(t);
		snprintf(msg, msgsize, "out of memory");
		return -ENOMEM;
	}
	t->tool = tool;
	t->tool_req = req;
	t->count = count;
	r->trig = t;
	trig_send(r);
	return 0;
}

void trigger_tool_gone(struct conn *tool)
{
	struct remote *r;

	for (r = D->remotes; r; r = r->next)
		if (r->trig && r->trig->tool == tool)
			r->trig->tool = NULL;
}


void trigger_cancel(struct remote *r, int status)
{
	if (r->trig)
		trig_finish(r, status);
}

void trigger_tick(struct remote *r, uint64_t now, uint64_t *next)
{
	struct trig_run *t = r->trig;

	if (!t || !t->req)
		return;
	if (now >= t->deadline_ms) {
		t->recs[t->done].status = -ETIMEDOUT;
		t->recs[t->done].host_after = d_now_ns();
		t->done++;
		trig_finish(r, -ETIMEDOUT);
	} else {
		d_due(next, t->deadline_ms);
	}
}
