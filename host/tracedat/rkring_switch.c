// SPDX-License-Identifier: MIT
/*
 * libhvtrace: the comms and pids a guest kernel's sched_switch records
 * name, for the pid table of a trace.dat (record_rkring.c).
 *
 * The guest's sched_switch format (text from the guest: hostile) says
 * where prev_comm, prev_pid, next_comm and next_pid are; each record is
 * then read at those offsets, every field checked against the record's
 * length.  Nothing else of the record is trusted: a comm is at most its
 * 16 bytes, cut at the first NUL.
 */
#include <stdlib.h>
#include <string.h>

#include "tracedat-local.h"

/* "field:TYPE NAME[...];\toffset:N;\tsize:M;" lines of @text: the offset
 * of field @name into *@off when its size is @size. */
static bool sw_field(const char *text, const char *name, uint32_t size,
		     uint32_t *off)
{
	const char *l = text;
	size_t n = strlen(name);

	while (l && *l) {
		const char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) : strlen(l);
		const char *f = memmem(l, len, "field:", 6);
		const char *o = memmem(l, len, "offset:", 7);
		const char *z = memmem(l, len, "size:", 5);
		const char *p =
			f ? memchr(f, ';', (size_t)(l + len - f)) : NULL;

		/* The declaration ends with the name, then array brackets. */
		while (p && p > f && p[-1] == ']')
			p = memrchr(f, '[', (size_t)(p - f));
		if (p && o && z && o > p && z > p && (size_t)(p - f) > n + 6 &&
		    !memcmp(p - n, name, n) &&
		    (p[-(long)n - 1] == ' ' || p[-(long)n - 1] == '*')) {
			unsigned long v = strtoul(o + 7, NULL, 10);
			unsigned long sz = strtoul(z + 5, NULL, 10);

			if (v >= 0xffff || sz != size)
				return false;
			*off = (uint32_t)v;
			return true;
		}
		l = e ? e + 1 : NULL;
	}
	return false;
}

bool hvt_tdat_switch_learn(struct hvt_tdat_switch *sw, const char *text)
{
	struct hvt_tdat_switch v = {0};

	if (!sw_field(text, "prev_comm", HVT_TDAT_COMM_LEN, &v.prev_comm) ||
	    !sw_field(text, "prev_pid", 4, &v.prev_pid) ||
	    !sw_field(text, "next_comm", HVT_TDAT_COMM_LEN, &v.next_comm) ||
	    !sw_field(text, "next_pid", 4, &v.next_pid))
		return false;
	v.known = true;
	*sw = v;
	return true;
}

static int sw_one(const uint8_t *rec, uint32_t len, uint32_t comm_off,
		  uint32_t pid_off, hvt_tdat_switch_fn fn, void *arg)
{
	char comm[HVT_TDAT_COMM_LEN];
	int32_t pid;
	size_t n;

	if ((uint64_t)comm_off + HVT_TDAT_COMM_LEN > len ||
	    (uint64_t)pid_off + 4 > len)
		return 0;
	memcpy(&pid, rec + pid_off, 4);
	memcpy(comm, rec + comm_off, HVT_TDAT_COMM_LEN);
	n = strnlen(comm, HVT_TDAT_COMM_LEN - 1);
	comm[n] = '\0';
	if (pid <= 0 || !n)
		return 0;
	return fn(arg, pid, comm);
}

int hvt_tdat_switch_comms(const struct hvt_tdat_switch *sw, const uint8_t *rec,
			  uint32_t len, hvt_tdat_switch_fn fn, void *arg)
{
	int ret;

	if (!sw->known)
		return 0;
	ret = sw_one(rec, len, sw->prev_comm, sw->prev_pid, fn, arg);
	if (!ret)
		ret = sw_one(rec, len, sw->next_comm, sw->next_pid, fn, arg);
	return ret;
}
