// SPDX-License-Identifier: MIT
/*
 * hvtraced: remotes -- one per writer the daemon owns -- and what every
 * remote has, whatever reaches it.
 *
 * A remote is a trace area (attached with HVTRACE_OPEN_CONTROL: this daemon
 * is its single owner and consumer), a user_events registry, the record of
 * which agent client holds which event, and the comms of its processes.
 * How the daemon reaches the writer is its transport, behind struct
 * remote_ops, with the transport's own state in r->priv:
 *
 *   socket   a local agent on the daemon's socket (remote_socket.c)
 *   chardev  a guest's agent through QEMU's chardev socket (chardev.c)
 *   area     a writer with no agent at all: a hypervisor or a loopback
 *            writer, reached through the area's control page
 *            (area_remote.c)
 *
 * This file is the bottom of the remote layers: it calls the connection
 * layer (to tell the agent of enable-bit and tracing changes) and nothing
 * above it.  The agent role (agent.c) runs agent sessions, remote_life.c
 * ties a remote's timers and teardown together.
 *
 * Registry owners are the agent's client channels (owner = chan + 1; the
 * agent itself is chan 0).  The daemon remembers which owner holds which
 * event ("held"), so that a replayed registration of a reference it still
 * holds is a no-op, and so that it can drop every reference of an agent
 * that restarted or of a local agent whose process is gone.
 *
 * Nothing an agent sends is trusted: names, definitions and counts are
 * validated by the codec and the registry; the area is validated by
 * libhvtrace; enable bits are written from the registry's state, never
 * read back from the shared page.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"

struct remote *remote_by_id(uint32_t id)
{
	struct remote *r;

	for (r = D->remotes; r; r = r->next)
		if (r->id == id)
			return r;
	return NULL;
}

struct remote *remote_by_name(const char *name)
{
	struct remote *r;

	for (r = D->remotes; r; r = r->next)
		if (!strcmp(r->name, name))
			return r;
	return NULL;
}


/* --- enable bits ---------------------------------------------------------- */

/* Called by the registry with its lock held: only record the change. */
static void remote_enable_hook(void *arg, uint32_t bit, bool on)
{
	struct remote *r = arg;

	if (r->nr_chg == r->cap_chg) {
		size_t cap = r->cap_chg ? r->cap_chg * 2 : 16;
		void *n = realloc(r->chg, cap * sizeof(*r->chg));

		if (!n)
			return;	/* the snapshot below still catches it */
		r->chg = n;
		r->cap_chg = cap;
	}
	r->chg[r->nr_chg].bit = bit;
	r->chg[r->nr_chg].on = on;
	r->nr_chg++;
}

struct find_bit {
	uint32_t bit;
	uint32_t id;
};

static int find_bit_cb(const struct hvtrace_ue_event_info *info, void *arg)
{
	struct find_bit *fb = arg;

	if (info->bit != fb->bit)
		return 0;
	fb->id = info->id;
	return 1;
}

/* Write the registry's whole bitmap into the control page. */
static void remote_write_bitmap(struct remote *r)
{
	uint64_t words[HVT_ABI_MAX_EVENTS / 64];
	unsigned int bit;
	int n;

	if (!r->area)
		return;
	memset(words, 0, sizeof(words));
	n = hvtrace_ue_enable_snapshot(r->reg, words, HVT_ABI_MAX_EVENTS / 64,
				   NULL);
	for (bit = 0; bit < HVT_ABI_MAX_EVENTS; bit++)
		if ((int)(bit / 64) < n)
			hvtrace_area_set_event(r->area, bit,
					       (words[bit / 64] >> (bit % 64)) &
						       1);
	hvtrace_area_set_tracing(r->area, r->tracing_on);
}

void remote_apply_changes(struct remote *r)
{
	size_t i;

	for (i = 0; i < r->nr_chg; i++) {
		struct find_bit fb = { r->chg[i].bit, 0 };
		struct hvt_msg m;

		if (r->area)
			hvtrace_area_set_event(r->area, r->chg[i].bit,
					       r->chg[i].on);
		if (!r->conn || r->state != HVT_REMOTE_CONNECTED)
			continue;
		hvtrace_ue_foreach(r->reg, find_bit_cb, &fb);
		memset(&m, 0, sizeof(m));
		m.type = HVT_MSG_EVENT_STATE;
		m.u.event_state.id = fb.id;
		m.u.event_state.bit = r->chg[i].bit;
		m.u.event_state.enabled = r->chg[i].on;
		conn_send(r->conn, &m);
	}
	r->nr_chg = 0;
}

int remote_set_tracing(struct remote *r, bool on)
{
	struct hvt_msg m;

	r->tracing_on = on;
	if (r->area)
		hvtrace_area_set_tracing(r->area, on);
	if (r->conn && r->state == HVT_REMOTE_CONNECTED) {
		memset(&m, 0, sizeof(m));
		m.type = HVT_MSG_TRACING;
		m.u.tracing.op = on ? HVT_TRACING_ON : HVT_TRACING_OFF;
		conn_send(r->conn, &m);
	}
	return 0;
}

/* --- references held by the agent's clients ------------------------------- */

/* Give the registry back every reference @owner holds on event @id. */
static void held_unregister(void *arg, uint64_t owner, uint32_t id)
{
	struct remote *r = arg;

	hvtrace_ue_unregister_owner_id(r->reg, owner, id);
}

int remote_held_drop_owner(struct remote *r, uint64_t owner)
{
	unsigned int n = held_take_owner(&r->held, owner, held_unregister, r);

	remote_apply_changes(r);
	return n > INT32_MAX ? INT32_MAX : (int)n;
}

void remote_held_drop_all(struct remote *r)
{
	held_take_all(&r->held, held_unregister, r);
	remote_apply_changes(r);
}

/* --- comms ---------------------------------------------------------------- */

void remote_cmdline_set(struct remote *r, uint32_t pid, const char *comm,
			size_t len)
{
	struct cmdline *c = &r->cmdlines[pid % D_CMDLINE_SLOTS];

	if (!pid)
		return;
	if (len > sizeof(c->comm) - 1)
		len = sizeof(c->comm) - 1;
	c->pid = pid;
	memcpy(c->comm, comm, len);
	c->comm[len] = '\0';
}

/* --- life cycle ----------------------------------------------------------- */

int remote_new(const char *name, const struct remote_ops *ops, void *priv,
	       struct remote **out)
{
	struct remote *r, **pp;
	int ret;

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	ret = hvtrace_ue_registry_create(NULL, &r->reg);
	if (ret) {
		free(r);
		return ret;
	}
	hvtrace_ue_set_enable_hook(r->reg, remote_enable_hook, r);
	r->id = ++D->next_remote_id;
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->ops = ops;
	r->priv = priv;
	r->state = HVT_REMOTE_WAITING;
	r->tracing_on = true;
	r->agent.next_req = 1;
	kf_init(&r->kf);
	for (pp = &D->remotes; *pp; pp = &(*pp)->next)
		;
	*pp = r;
	*out = r;
	state_changed();
	return 0;
}


/*
 * Make @a the remote's area (taking it over: closed on failure).
 * Subscribers keep their subscriptions; the new area's readers start at
 * its oldest data, and the clock model starts over.
 */
int remote_set_area(struct remote *r, struct hvtrace_area *a)
{
	struct hvtrace_area_info info;
	uint8_t *page;

	hvtrace_area_get_info(a, &info);
	page = realloc(r->page, info.subbuf_size);
	if (!page) {
		hvtrace_area_close(a);
		return -ENOMEM;
	}
	r->page = page;
	hvtrace_area_close(r->area);
	r->area = a;
	r->info = info;
	r->sync_samples = 0;
	r->raw_nr = 0;
	r->raw_next = 0;
	return 0;
}

/* Attach the area at @path (a path, or /proc/self/fd/N) of an agent's
 * remote, with the registry's enable bits. */
int remote_open_area(struct remote *r, const char *path, char *msg,
		     size_t msgsize)
{
	struct hvtrace_area *a;
	int ret;

	ret = hvtrace_area_open(path, 0, 0,
				HVTRACE_OPEN_CONTROL | HVTRACE_OPEN_RESUME, &a);
	if (ret) {
		snprintf(msg, msgsize, "%s", hvtrace_last_error());
		return ret;
	}
	ret = remote_set_area(r, a);
	if (ret) {
		snprintf(msg, msgsize, "out of memory");
		return ret;
	}
	remote_write_bitmap(r);
	d_log("remote '%s': area %s: %u CPUs x %u sub-buffers of %u bytes, "
	      "generation %llu",
	      r->name, path, r->info.nr_cpus, r->info.nr_subbufs,
	      r->info.subbuf_size, (unsigned long long)r->info.generation);
	return 0;
}

/* The next request number of the daemon's own requests to the agent
 * (never 0, which marks "none outstanding"). */
uint32_t remote_next_req(struct remote *r)
{
	uint32_t req = r->agent.next_req++;

	if (!req)
		req = r->agent.next_req++;
	return req;
}
