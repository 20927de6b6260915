// SPDX-License-Identifier: MIT
/*
 * The user_events registry: ids and enable bits, references per owner,
 * automatic deletion of unused events, persistent dynamic_events, busy
 * deletes, enable/disable with "Used by" status, the enable bitmap with
 * its generation and hook, limits with their errors, the dynamic_events
 * command forms, and concurrent callers.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace/abi.h>

#include "hvt_test.h"
#include "../../host/userevents/userevents-local.h"

static struct hvtrace_ue_registry *new_reg(unsigned int max, unsigned int base)
{
	struct hvtrace_ue_registry_config cfg = { .max_events = max,
					      .id_base = base };
	struct hvtrace_ue_registry *r;

	t_ok(hvtrace_ue_registry_create(&cfg, &r));
	return r;
}

static void reg_ok(struct hvtrace_ue_registry *r, uint64_t owner,
		   const char *def, struct hvtrace_ue_reg *out)
{
	struct hvtrace_ue_error err;
	int ret = hvtrace_ue_register(r, owner, def, out, &err);

	if (ret)
		t_fail("register \"%s\": %d %s", def, ret, err.msg);
}

static void dyn_ok(struct hvtrace_ue_registry *r, const char *line)
{
	struct hvtrace_ue_error err;
	int ret = hvtrace_ue_dyn_apply(r, line, &err);

	if (ret)
		t_fail("dynamic_events \"%s\": %d %s", line, ret, err.msg);
}

static void dyn_err(struct hvtrace_ue_registry *r, const char *line, int want,
		    const char *msg)
{
	struct hvtrace_ue_error err;
	int ret = hvtrace_ue_dyn_apply(r, line, &err);

	if (ret != want)
		t_fail("dynamic_events \"%s\": %d, expected %d (%s)", line, ret,
		       want, err.msg);
	if (msg && !strstr(err.msg, msg))
		t_fail("dynamic_events \"%s\": message \"%s\" lacks \"%s\"",
		       line, err.msg, msg);
}

static int exists(struct hvtrace_ue_registry *r, const char *name)
{
	struct hvtrace_ue_event_info info;

	return hvtrace_ue_lookup(r, name, &info) == 0;
}

static void test_ids_bits_refs(void)
{
	struct hvtrace_ue_registry *r = new_reg(0, 0);
	struct hvtrace_ue_reg a, b, a2, c;
	struct hvtrace_ue_event_info info;
	struct hvtrace_ue_error err;

	reg_ok(r, 1, "a u32 x", &a);
	t_eq(a.id, HVT_UE_ID_BASE);
	t_eq(a.bit, 0);
	reg_ok(r, 1, "b u64 y", &b);
	t_eq(b.id, HVT_UE_ID_BASE + 1);
	t_eq(b.bit, 1);
	/* Same fields, other spelling, other owner: the same event. */
	reg_ok(r, 2, "a  u32 x;", &a2);
	t_eq(a2.id, a.id);
	t_eq(a2.bit, a.bit);
	reg_ok(r, 1, "a u32 x", &a2);
	t_ok(hvtrace_ue_lookup(r, "a", &info));
	t_eq(info.refs, 3);
	t_eq(info.owners, 2);
	t_assert(!info.persistent && !info.enabled);
	t_ok(hvtrace_ue_lookup_id(r, a.id, &info));
	t_assert(!strcmp(info.name, "a"));
	t_eq(hvtrace_ue_lookup_id(r, 12, &info), -ENOENT);

	/* Other fields under the same name: refused, message says so. */
	t_eq(hvtrace_ue_register(r, 3, "a u32 y", &c, &err), -EADDRINUSE);
	t_eq(err.code, -EADDRINUSE);
	if (!strstr(err.msg, "in use") || !strstr(err.msg, "u:a u32 x"))
		t_fail("message: %s", err.msg);

	/* References drop one at a time; the last one deletes. */
	t_ok(hvtrace_ue_unregister(r, 1, a.id, &err));
	t_ok(hvtrace_ue_unregister(r, 1, a.id, &err));
	t_eq(hvtrace_ue_unregister(r, 1, a.id, &err), -ENOENT);
	t_assert(strstr(err.msg, "not registered by this owner"));
	t_assert(exists(r, "a"));
	t_ok(hvtrace_ue_unregister(r, 2, a.id, &err));
	t_assert(!exists(r, "a"));
	t_eq(hvtrace_ue_count(r), 1);

	/* The free bit is reused, the id is not. */
	reg_ok(r, 1, "c u8 z", &c);
	t_eq(c.bit, 0);
	t_eq(c.id, HVT_UE_ID_BASE + 2);
	/* The same name may come back with other fields once it is gone. */
	reg_ok(r, 4, "a s64 q", &a);
	t_eq(a.id, HVT_UE_ID_BASE + 3);
	t_eq(a.bit, 2);

	/* A client that vanished: all its references go. */
	reg_ok(r, 1, "b u64 y", &b);
	t_eq(hvt_ue_unregister_all(r, 1), 3);
	t_assert(!exists(r, "b") && !exists(r, "c") && exists(r, "a"));
	t_eq(hvt_ue_unregister_all(r, 1), 0);
	t_eq(hvt_ue_unregister_all(r, 4), 1);
	t_eq(hvtrace_ue_count(r), 0);
	hvtrace_ue_registry_destroy(r);
}

static void test_persistent_and_delete(void)
{
	struct hvtrace_ue_registry *r = new_reg(0, 0);
	struct hvtrace_ue_event_info info;
	struct hvtrace_ue_error err;
	struct hvtrace_ue_reg p;
	char *s;

	dyn_ok(r, "u:p u32 x;char[8] name");
	t_ok(hvtrace_ue_lookup(r, "p", &info));
	t_assert(info.persistent);
	t_eq(info.refs, 0);
	/* Defining it again with the same fields is fine. */
	dyn_ok(r, "u:  p u32 x; char[8] name");
	dyn_err(r, "u:p u32 x", -EADDRINUSE, "in use");

	reg_ok(r, 7, "p u32 x;char[8] name", &p);
	t_eq(hvtrace_ue_delete(r, "p", &err), -EBUSY);
	t_assert(strstr(err.msg, "in use"));
	dyn_err(r, "!u:p u32 x; char[8] name", -EBUSY, "in use");
	t_eq(hvt_ue_unregister_all(r, 7), 1);
	t_assert(exists(r, "p"));	/* persistent: stays */

	/* Delete needs the fields; ';' must be followed by a space. */
	dyn_err(r, "!u:p", -ENOENT, "must repeat them");
	dyn_err(r, "!u:p u32 x;char[8] name", -ENOENT, NULL);
	dyn_err(r, "!u:other/p u32 x; char[8] name", -ENOENT, NULL);
	dyn_ok(r, "!u:user_events/p u32 x; char[8] name");
	t_assert(!exists(r, "p"));
	dyn_err(r, "!u:p u32 x; char[8] name", -ENOENT, "no event");
	t_eq(hvtrace_ue_delete(r, "p", &err), -ENOENT);

	dyn_ok(r, "u:q");
	dyn_ok(r, "-:q");
	dyn_ok(r, "u:q u8 v");
	dyn_ok(r, "!anything:q u8 v");
	dyn_ok(r, "u:q u8 v");
	t_ok(hvtrace_ue_delete(r, "q", &err));

	dyn_err(r, "!", -EINVAL, NULL);
	dyn_err(r, "!u:", -EINVAL, NULL);
	dyn_err(r, "-u:q", -EINVAL, NULL);
	dyn_err(r, "p:probe do_sys_open", -EINVAL, "not a user_events command");
	dyn_err(r, " u:q u8 v", -EINVAL, NULL);
	dyn_err(r, "u:q u8 v # a comment leaves a space", -EINVAL,
		"space after the field name");
	dyn_ok(r, "u:q u8 v# a comment");
	dyn_ok(r, "");
	dyn_ok(r, "   ");
	dyn_ok(r, "# only a comment");
	s = hvtrace_ue_dyn_events_text(r);
	t_assert(s && !strcmp(s, "u:q u8 v\n"));
	free(s);
	hvtrace_ue_registry_destroy(r);
}

struct hook_log {
	int calls;
	uint32_t bit;
	bool on;
};

static void hook(void *arg, uint32_t bit, bool on)
{
	struct hook_log *h = arg;

	h->calls++;
	h->bit = bit;
	h->on = on;
}

static void test_enable(void)
{
	struct hvtrace_ue_registry *r = new_reg(0, 0);
	uint64_t words[HVT_ABI_MAX_EVENTS / 64], gen0, gen;
	struct hook_log h = { 0 };
	struct hvtrace_ue_event_info info;
	struct hvtrace_ue_error err;
	struct hvtrace_ue_reg a, b;
	char *s;

	hvtrace_ue_set_enable_hook(r, hook, &h);
	reg_ok(r, 1, "a u32 x", &a);
	reg_ok(r, 1, "b u32 x", &b);
	gen0 = hvt_ue_enable_generation(r);
	t_ok(hvtrace_ue_set_enabled(r, "b", HVT_UE_USED_FTRACE, true, &err));
	t_eq(h.calls, 1);
	t_eq(h.bit, b.bit);
	t_assert(h.on);
	t_eq(hvtrace_ue_enable_snapshot(r, words, 256, &gen), 256);
	t_eq(gen, gen0 + 1);
	t_equ(words[0], 1ULL << b.bit);
	/* Enabling again, or for a second consumer, changes no bit. */
	t_ok(hvtrace_ue_set_enabled(r, "b", HVT_UE_USED_FTRACE, true, &err));
	t_ok(hvtrace_ue_set_enabled(r, "b", HVT_UE_USED_PERF, true, &err));
	t_eq(h.calls, 1);
	t_eq(hvt_ue_enable_generation(r), gen0 + 1);
	s = hvtrace_ue_status_text(r);
	t_assert(s);
	if (!strstr(s, "b # Used by ftrace perf\n") || !strstr(s, "a\n") ||
	    !strstr(s, "\nActive: 2\nBusy: 1\n"))
		t_fail("status:\n%s", s);
	t_eq(strlen(s), strlen("a\nb # Used by ftrace perf\n\nActive: 2\nBusy: 1\n"));
	free(s);
	t_ok(hvtrace_ue_set_enabled(r, "b", HVT_UE_USED_OTHER, true, &err));
	s = hvtrace_ue_status_text(r);
	t_assert(s && strstr(s, "b # Used by ftrace perf other\n"));
	free(s);

	/* An enabled event is busy, even with no registrations. */
	t_eq(hvt_ue_unregister_all(r, 1), 2);
	t_assert(!exists(r, "a") && exists(r, "b"));
	t_eq(hvtrace_ue_delete(r, "b", &err), -EBUSY);
	t_assert(strstr(err.msg, "enabled"));
	t_eq(hvtrace_ue_dyn_clear(r, &err), -EBUSY);
	t_ok(hvtrace_ue_lookup(r, "b", &info));
	t_eq(info.used_by, HVT_UE_USED_FTRACE | HVT_UE_USED_PERF |
				   HVT_UE_USED_OTHER);
	t_ok(hvtrace_ue_set_enabled(r, "b", HVT_UE_USED_PERF, false, &err));
	t_ok(hvtrace_ue_set_enabled(r, "b", HVT_UE_USED_OTHER, false, &err));
	t_eq(h.calls, 1);
	t_assert(exists(r, "b"));
	/* The last consumer goes: the bit clears and the event with it. */
	t_ok(hvtrace_ue_set_enabled(r, "b", HVT_UE_USED_FTRACE, false, &err));
	t_eq(h.calls, 2);
	t_assert(!h.on);
	t_assert(!exists(r, "b"));
	hvtrace_ue_enable_snapshot(r, words, 256, &gen);
	t_equ(words[0], 0);
	t_eq(gen, gen0 + 2);

	t_eq(hvtrace_ue_set_enabled(r, "b", HVT_UE_USED_FTRACE, true, &err),
	     -ENOENT);
	t_eq(hvtrace_ue_set_enabled(r, "b", 3, true, &err), -EINVAL);
	/* A persistent event survives being disabled. */
	dyn_ok(r, "u:keep u16 v");
	t_ok(hvtrace_ue_set_enabled(r, "keep", HVT_UE_USED_FTRACE, true, &err));
	t_ok(hvtrace_ue_set_enabled(r, "keep", HVT_UE_USED_FTRACE, false, &err));
	t_assert(exists(r, "keep"));
	t_eq(hvtrace_ue_dyn_clear(r, &err), 1);
	t_eq(hvtrace_ue_count(r), 0);
	s = hvtrace_ue_status_text(r);
	t_assert(s && !strcmp(s, "\nActive: 0\nBusy: 0\n"));
	free(s);
	hvtrace_ue_registry_destroy(r);
}

static void test_bitmap_words(void)
{
	struct hvtrace_ue_registry *r = new_reg(200, 0);
	struct hvtrace_ue_error err;
	uint64_t words[4];
	struct hvtrace_ue_reg g;
	char def[32];
	int i;

	for (i = 0; i < 200; i++) {
		snprintf(def, sizeof(def), "e%d u8 v", i);
		reg_ok(r, 1, def, &g);
		t_eq(g.bit, i);
	}
	t_ok(hvtrace_ue_set_enabled(r, "e0", HVT_UE_USED_FTRACE, true, &err));
	t_ok(hvtrace_ue_set_enabled(r, "e63", HVT_UE_USED_FTRACE, true, &err));
	t_ok(hvtrace_ue_set_enabled(r, "e64", HVT_UE_USED_FTRACE, true, &err));
	t_ok(hvtrace_ue_set_enabled(r, "e199", HVT_UE_USED_FTRACE, true, &err));
	memset(words, 0xaa, sizeof(words));
	t_eq(hvtrace_ue_enable_snapshot(r, words, 4, NULL), 4);
	t_equ(words[0], 1ULL | 1ULL << 63);
	t_equ(words[1], 1ULL);
	t_equ(words[2], 0);
	t_equ(words[3], 1ULL << (199 - 192));
	/* Asking for more words than the registry has gives zeros. */
	t_eq(hvtrace_ue_enable_snapshot(r, words, 2, NULL), 2);
	hvtrace_ue_registry_destroy(r);
}

static void test_limits(void)
{
	struct hvtrace_ue_registry *r = new_reg(3, 0), *r2;
	struct hvtrace_ue_registry_config cfg = { 0 };
	struct hvtrace_ue_error err;
	struct hvtrace_ue_reg g;
	char def[600], line[4200];

	reg_ok(r, 1, "a u8 v", &g);
	reg_ok(r, 1, "b u8 v", &g);
	dyn_ok(r, "u:c u8 v");
	t_eq(hvtrace_ue_register(r, 1, "d u8 v", &g, &err), -EMFILE);
	t_assert(strstr(err.msg, "limit is 3"));
	dyn_err(r, "u:d u8 v", -EMFILE, "too many events");
	/* An existing event is still shared at the limit. */
	reg_ok(r, 2, "a u8 v", &g);
	t_ok(hvt_ue_unregister_all(r, 1) == 2 ? 0 : -1);
	t_eq(hvtrace_ue_count(r), 2);
	reg_ok(r, 1, "d u8 v", &g);
	t_eq(hvt_ue_set_limit(r, 4), -EINVAL);
	t_ok(hvt_ue_set_limit(r, 1));
	t_eq(hvtrace_ue_count(r), 3);	/* nothing deleted */
	hvt_ue_unregister_all(r, 1);
	hvt_ue_unregister_all(r, 2);
	t_eq(hvtrace_ue_register(r, 1, "e u8 v", &g, &err), -EMFILE);
	t_ok(hvt_ue_set_limit(r, 3));
	reg_ok(r, 1, "e u8 v", &g);
	hvtrace_ue_registry_destroy(r);

	/* Definition length: 511 bytes and the NUL. */
	r = new_reg(0, 0);
	memset(def, 'a', sizeof(def));
	memcpy(def, "len char[1] ", 12);
	def[511] = '\0';
	reg_ok(r, 1, def, &g);
	def[511] = 'a';
	def[512] = '\0';
	t_eq(hvtrace_ue_register(r, 1, def, &g, &err), -E2BIG);
	t_assert(strstr(err.msg, "longer than 511"));
	/* dynamic_events lines may be longer, up to 4094 bytes. */
	memset(line, 'b', sizeof(line));
	memcpy(line, "u:long char[1] ", 15);
	line[4094] = '\0';
	dyn_ok(r, line);
	line[4094] = 'b';
	line[4095] = '\0';
	dyn_err(r, line, -E2BIG, "4094");
	hvtrace_ue_registry_destroy(r);

	/* Configuration limits. */
	cfg.max_events = HVT_ABI_MAX_EVENTS + 1;
	t_eq(hvtrace_ue_registry_create(&cfg, &r2), -EINVAL);
	cfg.max_events = 2;
	cfg.id_base = HVT_UE_ID_MAX;
	t_eq(hvtrace_ue_registry_create(&cfg, &r2), -EINVAL);
}

static void test_id_wrap(void)
{
	struct hvtrace_ue_registry *r = new_reg(3, HVT_UE_ID_MAX - 2);
	struct hvtrace_ue_error err;
	struct hvtrace_ue_reg a, b, c, d;

	reg_ok(r, 1, "a u8 v", &a);
	reg_ok(r, 1, "b u8 v", &b);
	reg_ok(r, 1, "c u8 v", &c);
	t_eq(a.id, HVT_UE_ID_MAX - 2);
	t_eq(c.id, HVT_UE_ID_MAX);
	t_ok(hvtrace_ue_unregister(r, 1, b.id, &err));
	reg_ok(r, 1, "d u8 v", &d);
	t_eq(d.id, b.id);	/* wrapped, skipping the ids in use */
	t_eq(d.bit, b.bit);
	t_ok(hvtrace_ue_unregister(r, 1, a.id, &err));
	reg_ok(r, 1, "e u8 v", &a);
	t_eq(a.id, HVT_UE_ID_MAX - 2);
	hvtrace_ue_registry_destroy(r);
}

static int count_cb(const struct hvtrace_ue_event_info *info, void *arg)
{
	int *n = arg;

	if (*n == 0 && strcmp(info->name, "first"))
		return -100;
	if (!info->format || strncmp(info->format, "name: ", 6))
		return -101;
	return ++*n == 2 ? 42 : 0;
}

static void test_text_and_walk(void)
{
	struct hvtrace_ue_registry *r = new_reg(0, 0);
	struct hvtrace_ue_error err;
	char *s;
	int n = 0;
	long ret;
	const char *w = "u:first u32 a;struct s b 4\nu:second\n# note\n\nu:third char[4] c";

	ret = hvt_ue_dyn_write(r, w, strlen(w), &err);
	t_eq(ret, (long)strlen(w));
	s = hvtrace_ue_dyn_events_text(r);
	t_assert(s);
	if (strcmp(s, "u:first u32 a; struct s b 4\nu:second\nu:third char[4] c\n"))
		t_fail("dynamic_events:\n%s", s);
	free(s);
	t_eq(hvtrace_ue_foreach(r, count_cb, &n), 42);
	t_eq(n, 2);
	s = hvt_ue_format_of(r, "third");
	t_assert(s && strstr(s, "\tfield:char c[];\toffset:8;\tsize:4;\tsigned:1;\n"));
	free(s);
	t_assert(hvt_ue_format_of(r, "fourth") == NULL && errno == ENOENT);

	/* A write stops at the first bad line; earlier lines stay. */
	w = "u:fourth u8 x\nu:bad long y\nu:fifth u8 z\n";
	ret = hvt_ue_dyn_write(r, w, strlen(w), &err);
	t_eq(ret, -EINVAL);
	t_assert(strstr(err.msg, "field 1 \"long y\""));
	t_assert(exists(r, "fourth") && !exists(r, "fifth"));
	t_eq(hvt_ue_dyn_write(r, "u:x\0y", 5, &err), -EINVAL);
	hvtrace_ue_registry_destroy(r);
}

#define THREADS 4
#define ROUNDS 3000

struct worker {
	struct hvtrace_ue_registry *r;
	uint64_t owner;
	int failures;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	struct hvtrace_ue_error err;
	struct hvtrace_ue_reg g;
	uint64_t rng = w->owner * 0x9e3779b97f4a7c15ULL;
	char def[32], name[8];
	unsigned int k;
	int i;

	for (i = 0; i < ROUNDS; i++) {
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		k = (unsigned int)(rng % 8);
		snprintf(def, sizeof(def), "t%u u32 v;char[%u] s", k, k + 1);
		snprintf(name, sizeof(name), "t%u", k);
		if (hvtrace_ue_register(w->r, w->owner, def, &g, &err)) {
			w->failures++;
			continue;
		}
		/* Consumers come and go on events other threads hold. */
		hvtrace_ue_set_enabled(w->r, name, HVT_UE_USED_OTHER,
				   (rng & 0x100) != 0, &err);
		if (rng & 0x200 &&
		    hvtrace_ue_unregister(w->r, w->owner, g.id, &err))
			w->failures++;
		if ((rng & 0xf000) == 0)
			hvt_ue_unregister_all(w->r, w->owner);
	}
	hvt_ue_unregister_all(w->r, w->owner);
	for (k = 0; k < 8; k++) {
		snprintf(name, sizeof(name), "t%u", k);
		hvtrace_ue_set_enabled(w->r, name, HVT_UE_USED_OTHER, false, &err);
	}
	return NULL;
}

static void test_threads(void)
{
	struct hvtrace_ue_registry *r = new_reg(0, 0);
	struct worker w[THREADS];
	pthread_t t[THREADS];
	char *s;
	int i;

	for (i = 0; i < THREADS; i++) {
		w[i].r = r;
		w[i].owner = (uint64_t)i + 100;
		w[i].failures = 0;
		t_eq(pthread_create(&t[i], NULL, work, &w[i]), 0);
	}
	for (i = 0; i < THREADS; i++) {
		t_eq(pthread_join(t[i], NULL), 0);
		t_eq(w[i].failures, 0);
	}
	/* Every owner dropped everything: nothing is left. */
	t_eq(hvtrace_ue_count(r), 0);
	s = hvtrace_ue_status_text(r);
	t_assert(s && !strcmp(s, "\nActive: 0\nBusy: 0\n"));
	free(s);
	hvtrace_ue_registry_destroy(r);
}

int main(void)
{
	test_ids_bits_refs();
	test_persistent_and_delete();
	test_enable();
	test_bitmap_words();
	test_limits();
	test_id_wrap();
	test_text_and_walk();
	test_threads();
	printf("registry: ids, bits, references, lifetimes, enable, limits, text, threads: ok\n");
	return 0;
}
