// SPDX-License-Identifier: MIT
/*
 * hvtraced: remotes -- one per writer the daemon owns -- and what every
 * remote has, whatever reaches it.
 *
 * A remote is a trace area (attached with HVTRACE_OPEN_CONTROL: this daemon
 * is its single owner and consumer), a user_events registry, the record of
 * which agent client holds which event, and the comms of its processes.
 * How the daemon reaches the writer is its transport, behind struct
 * remote_ops; each transport's struct embeds the struct remote (a socket
 * or chardev remote's through struct agent_remote, what an agent session
 * adds):
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

/*
 * One entry per slot pid % D_CMDLINE_SLOTS, as a plain array of that many
 * would hold them, but grown with use: below D_CMDLINE_SLOTS entries the
 * table is open addressing (linear probing) over the slot numbers, at most
 * three quarters full; at D_CMDLINE_SLOTS it is that plain array, indexed
 * by slot.  So what an agent sends costs at most the plain array.
 */
static uint32_t cmdline_slot(uint32_t pid)
{
	return pid % D_CMDLINE_SLOTS;
}

/* Where slot @slot is, or the free entry it would take. */
static struct cmdline *cmdline_find(const struct cmdline_table *t,
				    uint32_t slot)
{
	uint32_t i;

	if (t->cap == D_CMDLINE_SLOTS)
		return &t->v[slot];
	/* The product's top bits: slots alike in their low bits (pids
	 * 256 apart) spread as well as the others. */
	for (i = (slot * 0x9e3779b1u) >> (32 - __builtin_ctz(t->cap));;
	     i = (i + 1) & (t->cap - 1))
		if (!t->v[i].pid || cmdline_slot(t->v[i].pid) == slot)
			return &t->v[i];
}

static int cmdline_grow(struct cmdline_table *t)
{
	struct cmdline_table n = *t;
	uint32_t i;

	n.cap = t->cap ? t->cap * 2 : D_CMDLINE_MIN;
	if (n.cap > D_CMDLINE_SLOTS)
		n.cap = D_CMDLINE_SLOTS;
	n.v = calloc(n.cap, sizeof(*n.v));
	if (!n.v)
		return -ENOMEM;
	for (i = 0; i < t->cap; i++)
		if (t->v[i].pid)
			*cmdline_find(&n, cmdline_slot(t->v[i].pid)) = t->v[i];
	free(t->v);
	*t = n;
	return 0;
}

void remote_cmdline_set(struct remote *r, uint32_t pid, const char *comm,
			size_t len)
{
	struct cmdline_table *t = &r->cmdlines;
	struct cmdline *c;

	if (!pid)
		return;
	/* A new slot in a table three quarters full: grow it first. */
	if (t->cap < D_CMDLINE_SLOTS &&
	    (t->nr + 1) * 4 > t->cap * 3 &&
	    (!t->cap || !cmdline_find(t, cmdline_slot(pid))->pid) &&
	    cmdline_grow(t))
		return;	/* out of memory: the comm is not kept */
	c = cmdline_find(t, cmdline_slot(pid));
	if (!c->pid)
		t->nr++;
	else if (c->pid != pid)
		t->replaced++;
	if (len > sizeof(c->comm) - 1)
		len = sizeof(c->comm) - 1;
	c->pid = pid;
	memcpy(c->comm, comm, len);
	c->comm[len] = '\0';
}

static int cmdline_cmp(const void *a, const void *b)
{
	uint32_t x = cmdline_slot(((const struct cmdline *)a)->pid);
	uint32_t y = cmdline_slot(((const struct cmdline *)b)->pid);

	return x < y ? -1 : x > y;
}

char *remote_cmdline_text(const struct remote *r)
{
	const struct cmdline_table *t = &r->cmdlines;
	struct cmdline *v = NULL;
	size_t n = 0, len = 0, i;
	char *text;

	/* 32 bytes a line: "4294967295 " and a comm of 15, with room */
	text = malloc((size_t)t->nr * 32 + 1);
	if (!text)
		return NULL;
	text[0] = '\0';
	if (t->nr) {
		v = malloc((size_t)t->nr * sizeof(*v));
		if (!v) {
			free(text);
			return NULL;
		}
		for (i = 0; i < t->cap; i++)
			if (t->v[i].pid && n < t->nr)
				v[n++] = t->v[i];
		/* In slot order, as the plain array lists them. */
		qsort(v, n, sizeof(*v), cmdline_cmp);
	}
	for (i = 0; i < n; i++)
		len += (size_t)snprintf(text + len, (size_t)t->nr * 32 + 1 - len,
					"%u %s\n", v[i].pid, v[i].comm);
	free(v);
	return text;
}

size_t remote_cmdline_bytes(const struct remote *r)
{
	return (size_t)r->cmdlines.cap * sizeof(struct cmdline);
}

/* --- the guest kernel's formats -------------------------------------------- */

int remote_set_kf_dir(struct remote *r, const char *dir)
{
	char *d = NULL;

	if (dir && !(d = strdup(dir)))
		return -ENOMEM;
	free(r->kf_dir);
	r->kf_dir = d;
	return 0;
}

bool remote_kf_active(const struct remote *r)
{
	const struct agent_remote *ar = agent_remote_c(r);

	return ar && ar->kf && ar->kf->active;
}

/* --- life cycle ----------------------------------------------------------- */

int remote_add(struct remote *r, const char *name,
	       const struct remote_ops *ops)
{
	struct remote **pp;
	int ret;

	ret = hvtrace_ue_registry_create(NULL, &r->reg);
	if (ret)
		return ret;
	hvtrace_ue_set_enable_hook(r->reg, remote_enable_hook, r);
	r->id = ++D->next_remote_id;
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->ops = ops;
	r->state = HVT_REMOTE_WAITING;
	r->tracing_on = true;
	r->next_req = 1;
	for (pp = &D->remotes; *pp; pp = &(*pp)->next)
		;
	*pp = r;
	state_changed();
	return 0;
}

void remote_release(struct remote *r)
{
	free(r->cmdlines.v);
	r->cmdlines.v = NULL;
	r->cmdlines.cap = r->cmdlines.nr = 0;
	free(r->kf_dir);
	r->kf_dir = NULL;
}


/*
 * Make @a the remote's area (taking it over: closed on failure).
 * Subscribers keep their subscriptions; the new area's readers start at
 * its oldest data, and the clock model starts over.
 */
int remote_set_area(struct remote *r, struct hvtrace_area *a)
{
	struct hvtrace_area_info info;
	int ret;

	hvtrace_area_get_info(a, &info);
	ret = page_source_area(r, a, &info);
	if (ret) {
		hvtrace_area_close(a);
		return ret;
	}
	hvtrace_area_close(r->area);
	r->area = a;
	r->info = info;
	r->sync_samples = 0;
	r->raw_nr = 0;
	r->raw_next = 0;
	memset(&r->shm, 0, sizeof(r->shm));	/* a new area: try it again */
	return 0;
}

void remote_close_area(struct remote *r)
{
	page_source_area_drop(r);
	hvtrace_area_close(r->area);
	r->area = NULL;
}

/* Attach the area at @path (a path, or /proc/self/fd/N) of an agent's
 * remote, with the registry's enable bits. */
int remote_open_area(struct remote *r, const char *path, char *msg,
		     size_t msgsize)
{
	struct hvtrace_area *a;
	int ret;

	ret = hvtrace_area_open(path, 0, 0,
				HVTRACE_OPEN_CONTROL | HVTRACE_OPEN_RESUME |
					HVTRACE_OPEN_POST_LATER,
				&a);
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
	uint32_t req = r->next_req++;

	if (!req)
		req = r->next_req++;
	return req;
}
