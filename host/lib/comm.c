// SPDX-License-Identifier: MIT
/*
 * libhvtrace: a decoder's pid -> comm table, and the names a ring's own
 * records give.
 *
 * Two kinds of names share the table:
 *
 *   table    hvtrace_decoder_set_comm(): a kernel's saved_cmdlines, a
 *            guest's cmdlines sent by its agent, a writer's threads
 *   learned  hvtrace_decoder_learn_comms(): the comm and pid fields of the
 *            ring's own sched records (sched_switch's prev and next, the
 *            wakeups', sched_process_fork's parent and child, ...)
 *
 * The rule: the ring's newest name for a pid, else the table's, else
 * nothing ("<...>").  A learned name replaces the table's name of its pid
 * and the learned name of an older record (by the record's ring time); a
 * table name never replaces a learned one of the same pid (the kernel's
 * saved_cmdlines is a snapshot taken before or after, the ring says what
 * the task was called when it ran).
 *
 * Which fields name a task is looked up once per event id, from its
 * format (libtraceevent's fields), and kept in d->learn_of: the fast
 * path of a record is one byte read for an event that names nobody.
 * Records are hostile: a field is read only when it lies inside the
 * record, a comm is at most 15 characters whatever its 16 bytes hold
 * (cut at the first NUL, control characters shown as '?'), and a pid
 * outside 1..PID_MAX_LIMIT names nothing.
 *
 * Memory is bounded: one entry per slot pid % DEC_COMM_SLOTS (decode.h),
 * the learn table 64 KiB plus DEC_LEARN_EVENTS small entries.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"

#define DEC_LEARN_UNKNOWN	0
#define DEC_LEARN_NONE		1

static uint32_t comm_slot(int pid)
{
	return (uint32_t)pid % DEC_COMM_SLOTS;
}

int hvt_dec_comm_init(struct hvtrace_decoder *d)
{
	d->comm_cap = DEC_COMM_MIN;
	d->comms = calloc(d->comm_cap, sizeof(*d->comms));
	return d->comms ? 0 : -ENOMEM;
}

void hvt_dec_comm_fini(struct hvtrace_decoder *d)
{
	free(d->comms);
	free(d->learn_of);
	free(d->learn_ev);
}

/* Where slot @slot is, or the free entry it would take. */
static struct dec_comm *comm_find(const struct hvtrace_decoder *d,
				  uint32_t slot)
{
	uint32_t i;

	if (d->comm_cap == DEC_COMM_SLOTS)
		return &d->comms[slot];
	/* The product's top bits: slots alike in their low bits spread as
	 * well as the others.  Never full (at most three quarters). */
	for (i = (slot * 0x9e3779b1u) >> (32 - __builtin_ctz(d->comm_cap));;
	     i = (i + 1) & (d->comm_cap - 1))
		if (!d->comms[i].pid || comm_slot(d->comms[i].pid) == slot)
			return &d->comms[i];
}

static int comm_grow(struct hvtrace_decoder *d)
{
	struct dec_comm *old = d->comms, *nv;
	uint32_t oc = d->comm_cap, nc = oc * 2, i;

	if (nc > DEC_COMM_SLOTS)
		nc = DEC_COMM_SLOTS;
	nv = calloc(nc, sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	d->comms = nv;
	d->comm_cap = nc;
	for (i = 0; i < oc; i++)
		if (old[i].pid)
			*comm_find(d, comm_slot(old[i].pid)) = old[i];
	free(old);
	return 0;
}

/* The entry @pid is to take: its own, a free one, or another pid's of
 * its slot; NULL when the table cannot grow. */
static struct dec_comm *comm_take(struct hvtrace_decoder *d, int pid)
{
	uint32_t slot = comm_slot(pid);

	/* A new slot in a table three quarters full: grow it first. */
	if (d->comm_cap < DEC_COMM_SLOTS &&
	    (d->comm_nr + 1) * 4 > d->comm_cap * 3 &&
	    !comm_find(d, slot)->pid && comm_grow(d))
		return NULL;
	return comm_find(d, slot);
}

/* Name @pid in entry @s with the first 15 bytes of @comm (@len at most),
 * cut at a NUL. */
static void comm_put(struct hvtrace_decoder *d, struct dec_comm *s, int pid,
		     const char *comm, size_t len, bool learned, uint64_t ts)
{
	size_t i;

	if (!s->pid)
		d->comm_nr++;
	else if (s->pid != pid)
		d->comm_replaced++;
	if (s->pid && s->learned)
		d->comm_learned--;
	if (learned)
		d->comm_learned++;
	s->pid = pid;
	s->learned = learned;
	s->ts = ts;
	/* TASK_COMM_LEN is 16: at most 15 characters. */
	for (i = 0; i < len && i < sizeof(s->comm) - 1 && comm[i]; i++)
		s->comm[i] = (unsigned char)comm[i] < 0x20 || comm[i] == 0x7f
				     ? '?'
				     : comm[i];
	s->comm[i] = '\0';
}

HVTRACE_API int hvtrace_decoder_set_comm(struct hvtrace_decoder *d, int pid,
					 const char *comm)
{
	struct dec_comm *s;

	if (!d || !comm || pid <= 0)
		return hvt_err(-EINVAL, "hvtrace_decoder_set_comm: bad "
					"argument (pid %d)",
			       pid);
	s = comm_take(d, pid);
	if (!s)
		return hvt_err(-ENOMEM, "out of memory");
	/* The ring's own name of the pid beats any table's. */
	if (s->pid == pid && s->learned)
		return 0;
	comm_put(d, s, pid, comm, strlen(comm), false, 0);
	return 0;
}

HVTRACE_API const char *hvtrace_decoder_comm(const struct hvtrace_decoder *d,
					     int pid)
{
	const struct dec_comm *s;

	if (!d || pid <= 0)
		return NULL;
	s = comm_find(d, comm_slot(pid));
	return s->pid == pid ? s->comm : NULL;
}

HVTRACE_API int hvtrace_decoder_comm_each(const struct hvtrace_decoder *d,
					  unsigned int flags,
					  hvtrace_comm_fn fn, void *arg)
{
	uint32_t i;
	int ret;

	if (!d || !fn)
		return hvt_err(-EINVAL, "hvtrace_decoder_comm_each: NULL "
					"argument");
	for (i = 0; i < d->comm_cap; i++) {
		const struct dec_comm *s = &d->comms[i];

		if (!s->pid || ((flags & HVTRACE_COMM_LEARNED) && !s->learned))
			continue;
		ret = fn(arg, s->pid, s->comm);
		if (ret)
			return ret;
	}
	return 0;
}

HVTRACE_API int hvtrace_decoder_comm_stats(const struct hvtrace_decoder *d,
					   struct hvtrace_comm_stats *st)
{
	if (!d || !st)
		return hvt_err(-EINVAL, "hvtrace_decoder_comm_stats: NULL "
					"argument");
	memset(st, 0, sizeof(*st));
	st->entries = d->comm_nr;
	st->learned = d->comm_learned;
	st->replaced = d->comm_replaced;
	st->max_entries = DEC_COMM_SLOTS;
	return 0;
}

/* --- names from the ring's records --------------------------------------- */

/* A char[16] comm field and a 4-byte pid field of @ev, both inside the
 * first 64 KiB: their offsets into @l. */
static bool learn_pair(struct tep_event *ev, const char *comm,
		       const char *pid, struct dec_learn *l)
{
	struct tep_format_field *c = tep_find_field(ev, comm);
	struct tep_format_field *p = tep_find_field(ev, pid);

	if (!c || !p || l->n >= DEC_LEARN_PAIRS)
		return false;
	if (!(c->flags & TEP_FIELD_IS_ARRAY) ||
	    (c->flags & (TEP_FIELD_IS_DYNAMIC | TEP_FIELD_IS_RELATIVE |
			 TEP_FIELD_IS_POINTER)) ||
	    c->size != 16 || c->offset < 0 || c->offset > 0xffff - 16)
		return false;
	if ((p->flags & (TEP_FIELD_IS_ARRAY | TEP_FIELD_IS_DYNAMIC |
			 TEP_FIELD_IS_POINTER)) ||
	    p->size != 4 || p->offset < 0 || p->offset > 0xffff - 4)
		return false;
	l->comm[l->n] = (uint16_t)c->offset;
	l->pid[l->n] = (uint16_t)p->offset;
	l->n++;
	return true;
}

/*
 * Which fields of event @id name a task.  Conservative: the scheduler's
 * and the task system's events only, where a comm and a pid of one
 * prefix ("", "prev_", "next_", "parent_", "child_") describe the same
 * task, and task_rename's new name.  Not sched_process_wait: its comm is
 * the waiting task's, its pid the one waited for.
 */
static uint8_t learn_lookup(struct hvtrace_decoder *d, unsigned int id)
{
	static const char *const pre[] = { "", "prev_", "next_", "parent_",
					   "child_" };
	struct tep_event *ev = tep_find_event(d->tep, (int)id);
	struct dec_learn l = { .n = 0 };
	char cn[32], pn[32];
	unsigned int i;

	if (!ev || !ev->system || !ev->name ||
	    (strcmp(ev->system, "sched") && strcmp(ev->system, "task")) ||
	    !strcmp(ev->name, "sched_process_wait"))
		return DEC_LEARN_NONE;
	if (!strcmp(ev->system, "task") && !strcmp(ev->name, "task_rename")) {
		learn_pair(ev, "newcomm", "pid", &l);
	} else {
		for (i = 0; i < sizeof(pre) / sizeof(pre[0]); i++) {
			snprintf(cn, sizeof(cn), "%scomm", pre[i]);
			snprintf(pn, sizeof(pn), "%spid", pre[i]);
			learn_pair(ev, cn, pn, &l);
		}
	}
	if (!l.n || d->learn_nr >= DEC_LEARN_EVENTS)
		return DEC_LEARN_NONE;
	if (!d->learn_ev) {
		d->learn_ev = calloc(DEC_LEARN_EVENTS, sizeof(*d->learn_ev));
		if (!d->learn_ev)
			return DEC_LEARN_UNKNOWN; /* tried again next time */
	}
	d->learn_ev[d->learn_nr] = l;
	return (uint8_t)(2 + d->learn_nr++);
}

void hvt_dec_learn_forget(struct hvtrace_decoder *d, unsigned int id)
{
	if (d->learn_of && id <= 0xffff)
		d->learn_of[id] = DEC_LEARN_UNKNOWN;
}

/* Name the pid at @pid_off with the comm at @comm_off of @rec, if both
 * lie inside it and make sense. */
static int learn_one(struct hvtrace_decoder *d,
		     const struct hvtrace_record *rec, uint32_t comm_off,
		     uint32_t pid_off)
{
	const uint8_t *data = rec->data;
	struct dec_comm *s;
	char comm[16];
	int32_t pid;

	if (comm_off + 16u > rec->size || pid_off + 4u > rec->size)
		return 0;
	memcpy(&pid, data + pid_off, 4);
	memcpy(comm, data + comm_off, 16);
	if (pid <= 0 || pid > DEC_PID_MAX || !comm[0])
		return 0;
	s = comm_take(d, pid);
	if (!s)
		return 0;	/* out of memory: not learned */
	/* An older record's name does not replace a newer one's (a ring's
	 * CPUs read one after the other). */
	if (s->pid == pid && s->learned && rec->ts < s->ts)
		return 0;
	comm_put(d, s, pid, comm, sizeof(comm), true, rec->ts);
	return 1;
}

HVTRACE_API int hvtrace_decoder_learn_comms(struct hvtrace_decoder *d,
					    const struct hvtrace_record *rec)
{
	const struct dec_learn *l;
	uint16_t id;
	uint8_t k;
	int n = 0;
	unsigned int i;

	if (!d || !rec || (rec->size && !rec->data))
		return hvt_err(-EINVAL, "hvtrace_decoder_learn_comms: bad "
					"argument");
	if (rec->size < sizeof(struct hvt_common_fields))
		return 0;
	memcpy(&id, rec->data, 2);	/* common_type */
	if (!d->learn_of) {
		d->learn_of = calloc(65536, 1);
		if (!d->learn_of)
			return 0;
	}
	k = d->learn_of[id];
	if (k == DEC_LEARN_UNKNOWN)
		k = d->learn_of[id] = learn_lookup(d, id);
	if (k < 2)
		return 0;
	l = &d->learn_ev[k - 2];
	for (i = 0; i < l->n; i++)
		n += learn_one(d, rec, l->comm[i], l->pid[i]);
	return n;
}
