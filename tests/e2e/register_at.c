// SPDX-License-Identifier: MIT
/*
 * The registry's preferred binding (hvtrace_ue_register_at()), which
 * hvtraced uses for the registrations an agent replays after a daemon
 * restart: a writer that bound its handle to an id and an enable bit under
 * the old daemon keeps writing with them, so the new registry must hand
 * out exactly those when it can.
 *
 *   - a fresh registry honours the wanted id and bit, in any order, even
 *     when they are not what it would have picked;
 *   - new events then get ids above the preferred ones (ids keep growing)
 *     and the lowest free bit;
 *   - a wanted id or bit that is taken, or out of range, gives a fresh
 *     binding (both fresh: a half-honoured binding is useless to a writer);
 *   - an event that exists keeps its binding (shared, one more reference);
 *   - enable bits follow the preferred binding;
 *   - definitions are still checked (EINVAL, EADDRINUSE, E2BIG).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <hvtrace/abi.h>

#include "hvt_test.h"
#include "../../host/userevents/userevents-local.h"

static void reg_at(struct hvtrace_ue_registry *r, uint64_t owner, const char *def,
		   uint32_t id, uint32_t bit, uint32_t want_id,
		   uint32_t want_bit)
{
	struct hvtrace_ue_error err = {0};
	struct hvtrace_ue_reg out = {0};
	int ret = hvtrace_ue_register_at(r, owner, def, id, bit, &out, &err);

	if (ret)
		t_fail("register_at '%s' (%u, %u): %d %s", def, id, bit, ret,
		       err.msg);
	if (out.id != want_id || out.bit != want_bit)
		t_fail("register_at '%s' wanting id %u bit %u: got id %u bit "
		       "%u, expected id %u bit %u",
		       def, id, bit, out.id, out.bit, want_id, want_bit);
}

int main(void)
{
	struct hvtrace_ue_registry *old, *r;
	struct hvtrace_ue_error err = {0};
	struct hvtrace_ue_reg a, b, c, out;
	struct hvtrace_ue_event_info info;
	uint64_t words[HVT_ABI_MAX_EVENTS / 64];
	char big[600];

	/* The bindings writers hold, from a first registry. */
	t_ok(hvtrace_ue_registry_create(NULL, &old));
	t_ok(hvtrace_ue_register(old, 1, "ra_a u32 x", &a, &err));
	t_ok(hvtrace_ue_register(old, 1, "ra_tmp u32 t", &out, &err));
	t_ok(hvtrace_ue_register(old, 2, "ra_b u64 y; __rel_loc char[] s", &b,
			     &err));
	t_ok(hvtrace_ue_unregister(old, 1, out.id, &err)); /* a gap in ids */
	t_ok(hvtrace_ue_register(old, 3, "ra_c u32 z", &c, &err));
	t_eq(a.id, HVT_UE_ID_BASE);
	t_eq(b.id, HVT_UE_ID_BASE + 2);
	t_eq(c.id, HVT_UE_ID_BASE + 3);
	t_eq(c.bit, 1); /* ra_tmp's bit was free again */
	hvtrace_ue_registry_destroy(old);

	/* The restarted daemon: replays in another order than the ids. */
	t_ok(hvtrace_ue_registry_create(NULL, &r));
	reg_at(r, 12, "ra_c u32 z", c.id, c.bit, c.id, c.bit);
	reg_at(r, 11, "ra_b u64 y; __rel_loc char[] s", b.id, b.bit, b.id,
	       b.bit);
	reg_at(r, 10, "ra_a u32 x", a.id, a.bit, a.id, a.bit);
	t_eq(hvtrace_ue_count(r), 3);
	t_ok(hvtrace_ue_lookup(r, "ra_b", &info));
	t_eq(info.id, b.id);
	t_eq(info.bit, b.bit);
	t_eq(info.refs, 1);

	/* A new event: an id above every preferred one, the lowest free
	 * bit (b held bit 2, a 0, c 1). */
	t_ok(hvtrace_ue_register(r, 13, "ra_new u8 n", &out, &err));
	t_eq(out.id, c.id + 1);
	t_eq(out.bit, 3);

	/* Wanted id taken: a fresh binding, not half of the wanted one. */
	reg_at(r, 14, "ra_d u32 d", a.id, 9, out.id + 1, 4);
	/* Wanted bit taken. */
	reg_at(r, 14, "ra_e u32 e", HVT_UE_ID_BASE + 100, a.bit, out.id + 2, 5);
	/* Out of range: below the id base, bit beyond the bitmap. */
	reg_at(r, 14, "ra_f u32 f", 5, 20, out.id + 3, 6);
	reg_at(r, 14, "ra_g u32 g", HVT_UE_ID_BASE + 200, HVT_ABI_MAX_EVENTS,
	       out.id + 4, 7);
	reg_at(r, 14, "ra_h u32 h", HVT_UE_ID_MAX + 1, 30, out.id + 5, 8);
	/* Both free and unusual: honoured. */
	reg_at(r, 14, "ra_i u32 i", HVT_UE_ID_MAX, 1000, HVT_UE_ID_MAX, 1000);

	/* An existing event keeps its binding and gains a reference. */
	reg_at(r, 15, "ra_a u32 x", HVT_UE_ID_BASE + 300, 77, a.id, a.bit);
	t_ok(hvtrace_ue_lookup(r, "ra_a", &info));
	t_eq(info.refs, 2);
	t_eq(info.owners, 2);

	/* Enable bits are the preferred ones. */
	t_ok(hvtrace_ue_set_enabled(r, "ra_b", HVT_UE_USED_FTRACE, true, &err));
	t_ok(hvtrace_ue_set_enabled(r, "ra_i", HVT_UE_USED_FTRACE, true, &err));
	memset(words, 0, sizeof(words));
	t_assert(hvtrace_ue_enable_snapshot(r, words, HVT_ABI_MAX_EVENTS / 64,
					NULL) > 1000 / 64);
	t_eq((words[b.bit / 64] >> (b.bit % 64)) & 1, 1);
	t_eq((words[1000 / 64] >> (1000 % 64)) & 1, 1);
	t_eq((words[a.bit / 64] >> (a.bit % 64)) & 1, 0);

	/* The definition is still checked. */
	t_eq(hvtrace_ue_register_at(r, 16, "ra_bad long x", HVT_UE_ID_BASE + 400,
				40, &out, &err),
	     -EINVAL);
	t_assert(strstr(err.msg, "long") != NULL);
	t_eq(hvtrace_ue_register_at(r, 16, "ra_a u64 x", HVT_UE_ID_BASE + 400, 40,
				&out, &err),
	     -EADDRINUSE);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "ra_big u32 ", 11);
	t_eq(hvtrace_ue_register_at(r, 16, big, HVT_UE_ID_BASE + 400, 40, &out,
				&err),
	     -E2BIG);
	t_eq(hvtrace_ue_lookup_id(r, HVT_UE_ID_BASE + 400, &info), -ENOENT);

	/* Unregistering works as for any registration. */
	t_ok(hvtrace_ue_unregister(r, 12, c.id, &err));
	t_eq(hvtrace_ue_lookup(r, "ra_c", &info), -ENOENT);
	hvtrace_ue_registry_destroy(r);
	printf("register_at: preferred bindings honoured when free, fresh "
	       "ones otherwise\n");
	return 0;
}
