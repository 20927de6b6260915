// SPDX-License-Identifier: MIT
/*
 * The host's control page, treated as hostile.
 *
 * The host may write anything into its control page at any time.  Nothing
 * in the hypervisor reads it directly except this file: each CPU keeps a
 * private *shadow* control page (struct hyp_cpu.shadow), and the writer
 * core (consumer progress, reset requests) and the emit functions (enable
 * bits) only ever see the shadow.  A value moves from the host's page into
 * the shadow only after it passed the rules below; a value that fails
 * them is counted once in that CPU's meta->ctrl_errors (once per distinct
 * bad value, so a host that keeps writing the same bad value is one
 * error, and one that writes garbage continuously is many) and the shadow
 * keeps its previous value.  No value makes the hypervisor fault or loop:
 * every load is a single aligned word inside the page, and no loop count
 * comes from the page.
 *
 * Rules, per CPU on every hypervisor entry (fast, plain loads):
 *   enable[0]      bits of events this hypervisor does not have are
 *                  masked off; they are not errors (a host may enable
 *                  "everything", the ABI's bits being hints)
 *   consumer[cpu]  consume mode only: must lie in [seq + 1 - nr_subbufs,
 *                  seq + 1] around the writer's current page seq (the
 *                  host cannot have finished pages not yet written, and
 *                  the writer never got further ahead than the ring)
 *   reset_req[cpu] must be 1..65536 requests ahead of the last one served
 *
 * Rules checked by CPU 0 about once a millisecond (counted in CPU 0's
 * meta):
 *   magic          0 (not attached) or HVT_CONTROL_MAGIC
 *   abi_version    HVT_ABI_VERSION once magic is set
 *   tracing_on     0 or 1 (informational: the host folds it into enable)
 *   reserved       0
 *   clock          seqcount: an even, stable seq; shift < 64; mult != 0;
 *                  mult/2^shift within a factor of two of 1e9/CNTFRQ;
 *                  epoch_cnt no more than a second in the future.  A seq
 *                  that stays odd for 100 polls counts as an error.
 *
 * The time-sync mailbox (sync_req) takes any value: it is an opaque token
 * echoed back (see trace.c).
 */
#include <hvtrace/hyp_events.h>

#include "hyp.h"

static struct hvt_cpu_meta *cpu_meta(struct hyp_cpu *hc)
{
	return hc->cb.meta;
}

/* Count @v as a bad value of @f unless it is the one counted last. */
static void ctrl_bad(struct hyp_cpu *hc, enum hyp_ctrl_field f, uint64_t v)
{
	struct hvt_cpu_meta *m = cpu_meta(hc);

	if (hc->have_bad[f] && hc->last_bad[f] == v)
		return;
	hc->have_bad[f] = 1;
	hc->last_bad[f] = v;
	/* Single writer (this CPU); the host reads it as a statistic. */
	__atomic_store_n(&m->ctrl_errors,
			 __atomic_load_n(&m->ctrl_errors, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELAXED);
}

/* The last accepted clock parameters (CPU 0 only). */
static struct hvt_ctrl_clock ctrl_clock;
static uint32_t ctrl_clock_valid;

void ctrl_init_cpu(struct hyp_cpu *hc)
{
	const struct hvt_control *host = hyp_host_ctrl;
	struct hvt_cpu_meta *m = cpu_meta(hc);
	uint64_t en;

	memset(&hc->shadow, 0, sizeof(hc->shadow));
	/* What hvt_area_format() just started the ring with. */
	hc->shadow.consumer[hc->cpu] =
		HVT_WORD_SEQ(__atomic_load_n(&m->write, __ATOMIC_RELAXED));
	hc->shadow.reset_req[hc->cpu] = m->reset_ack;
	en = __atomic_load_n(&host->enable[0], __ATOMIC_RELAXED);
	hc->shadow.enable[0] = en & HVT_HYP_ENABLE_MASK;
}

void ctrl_refresh_cpu(struct hyp_cpu *hc)
{
	const struct hvt_control *host = hyp_host_ctrl;
	struct hvt_cpu_meta *m = cpu_meta(hc);
	uint32_t cpu = hc->cpu, v;
	uint64_t en;

	/* Relaxed: enable bits are hints, as in hvt_event_enabled(). */
	en = __atomic_load_n(&host->enable[0], __ATOMIC_RELAXED) &
	     HVT_HYP_ENABLE_MASK;
	if (en != hc->shadow.enable[0])
		__atomic_store_n(&hc->shadow.enable[0], en, __ATOMIC_RELAXED);

	if (hc->cb.mode == HVT_MODE_CONSUME) {
		/*
		 * Acquire: pairs with the host's release store of consumer
		 * after its last read of the page (W4); the writer core's
		 * own acquire load of the shadow then only orders program
		 * order on this CPU.
		 */
		v = __atomic_load_n(&host->consumer[cpu], __ATOMIC_ACQUIRE);
		if (v != hc->shadow.consumer[cpu]) {
			uint32_t seq = HVT_WORD_SEQ(
				__atomic_load_n(&m->write, __ATOMIC_RELAXED));
			int32_t d = (int32_t)(seq - v);

			if (d >= -1 && d < (int32_t)hc->cb.nr_subbufs)
				__atomic_store_n(&hc->shadow.consumer[cpu], v,
						 __ATOMIC_RELAXED);
			else
				ctrl_bad(hc, CTRL_F_CONSUMER, v);
		}
	}

	/* Acquire: pairs with the host's release store of the request. */
	v = __atomic_load_n(&host->reset_req[cpu], __ATOMIC_ACQUIRE);
	if (v != hc->shadow.reset_req[cpu]) {
		uint32_t ahead = v - m->reset_ack;

		if (ahead >= 1 && ahead <= 65536)
			hc->shadow.reset_req[cpu] = v;
		else
			ctrl_bad(hc, CTRL_F_RESET, v);
	}
	if (hc->shadow.reset_req[cpu] != m->reset_ack)
		hvt_rb_poll_reset(&hc->cb);
}

static uint64_t ctrl_fold(const uint64_t *w, uint32_t n)
{
	uint64_t acc = 0;
	uint32_t i;

	for (i = 0; i < n; i++) {
		uint64_t v = __atomic_load_n(&w[i], __ATOMIC_RELAXED);

		/* Position-dependent, so moved garbage is new garbage. */
		acc ^= v * (2 * (uint64_t)i + 1) + (v ? i : 0);
	}
	return acc;
}

static int ctrl_clock_ok(const struct hvt_ctrl_clock *c)
{
	uint64_t per_sec, now = arch_counter();

	if (c->shift >= 64 || !c->mult)
		return 0;
	/* freq < 2^32 and mult < 2^32: the product fits 64 bits. */
	per_sec = ((hyp_counter_freq & 0xffffffffULL) * c->mult) >> c->shift;
	if (per_sec < 500000000ULL || per_sec > 2000000000ULL)
		return 0;
	if (c->epoch_cnt > now + hyp_counter_freq)
		return 0;
	return 1;
}

static void ctrl_poll_clock(struct hyp_cpu *hc)
{
	const struct hvt_control *host = hyp_host_ctrl;
	struct hvt_ctrl_clock c;
	uint32_t s1, s2;

	/* Acquire: pairs with the host's release store of the even seq. */
	s1 = __atomic_load_n(&host->clock.seq, __ATOMIC_ACQUIRE);
	if (s1 & 1) {
		if (++hc->clock_odd_polls == 100)
			ctrl_bad(hc, CTRL_F_CLOCK_ODD, s1);
		return;
	}
	hc->clock_odd_polls = 0;
	if (ctrl_clock_valid && s1 == ctrl_clock.seq)
		return;
	if (!s1 && !ctrl_clock_valid)
		return;		/* never published */
	c.seq = s1;
	c.shift = __atomic_load_n(&host->clock.shift, __ATOMIC_RELAXED);
	c.mult = __atomic_load_n(&host->clock.mult, __ATOMIC_RELAXED);
	c.reserved = 0;
	c.epoch_cnt = __atomic_load_n(&host->clock.epoch_cnt, __ATOMIC_RELAXED);
	c.epoch_ns = __atomic_load_n(&host->clock.epoch_ns, __ATOMIC_RELAXED);
	/* The field loads complete before seq is read again (pairs with
	 * the host's release fence after making seq odd). */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	s2 = __atomic_load_n(&host->clock.seq, __ATOMIC_RELAXED);
	if (s1 != s2)
		return;		/* torn: try again at the next poll */
	if (!ctrl_clock_ok(&c)) {
		ctrl_bad(hc, CTRL_F_CLOCK, ((uint64_t)s1 << 32) ^ c.mult ^
					   ((uint64_t)c.shift << 40) ^
					   c.epoch_cnt);
		return;
	}
	ctrl_clock = c;
	ctrl_clock_valid = 1;
}

/*
 * Host commands: act once per new cmd_seq.  The sequence seen at boot is
 * taken as already served, so a stale command from an earlier run is not
 * replayed.  Unknown commands are counted and ignored.
 */
static uint32_t ctrl_cmd_seen;
static int ctrl_cmd_primed;

static void ctrl_poll_command(struct hyp_cpu *hc)
{
	/* Acquire: pairs with the host's release store of cmd_seq, so cmd
	 * is the value stored with it. */
	uint32_t seq = __atomic_load_n(&hyp_host_ctrl->cmd_seq,
				       __ATOMIC_ACQUIRE);
	uint32_t cmd;

	if (!ctrl_cmd_primed) {
		ctrl_cmd_seen = seq;
		ctrl_cmd_primed = 1;
		return;
	}
	if (seq == ctrl_cmd_seen)
		return;
	ctrl_cmd_seen = seq;
	cmd = __atomic_load_n(&hyp_host_ctrl->cmd, __ATOMIC_RELAXED);
	if (cmd == HVT_CMD_STOP)
		hyp_poweroff("host command (control page)");
	else if (cmd != HVT_CMD_NONE)
		ctrl_bad(hc, CTRL_F_CMD, cmd);
}

void ctrl_poll_global(struct hyp_cpu *hc)
{
	const struct hvt_control *host = hyp_host_ctrl;
	uint64_t magic, v;
	uint32_t u;

	magic = __atomic_load_n(&host->magic, __ATOMIC_RELAXED);
	if (magic && magic != HVT_CONTROL_MAGIC)
		ctrl_bad(hc, CTRL_F_MAGIC, magic);
	u = __atomic_load_n(&host->abi_version, __ATOMIC_RELAXED);
	if (magic == HVT_CONTROL_MAGIC && u != HVT_ABI_VERSION)
		ctrl_bad(hc, CTRL_F_ABI, u);
	u = __atomic_load_n(&host->tracing_on, __ATOMIC_RELAXED);
	if (u > 1)
		ctrl_bad(hc, CTRL_F_TRACING_ON, u);
	v = ctrl_fold((const uint64_t *)host->reserved1,
		      sizeof(host->reserved1) / 8);
	if (v)
		ctrl_bad(hc, CTRL_F_RESERVED, v);
	ctrl_poll_command(hc);
	ctrl_poll_clock(hc);
}

/* A host has attached (magic) and enabled at least one known event. */
int ctrl_host_ready(void)
{
	return __atomic_load_n(&hyp_host_ctrl->magic, __ATOMIC_RELAXED) ==
		       HVT_CONTROL_MAGIC &&
	       (__atomic_load_n(&hyp_host_ctrl->enable[0], __ATOMIC_RELAXED) &
		HVT_HYP_ENABLE_MASK);
}

int ctrl_clock_get(struct hvt_ctrl_clock *c)
{
	if (!ctrl_clock_valid)
		return 0;
	*c = ctrl_clock;
	return 1;
}
