// SPDX-License-Identifier: MIT
/*
 * The trace area inside guest RAM: formatting, per-CPU buffers, the
 * time-sync mailbox and statistics.
 */
#include "trace.h"

/* mult/2^shift = 1e9 / freq with mult as large as fits 32 bits. */
static void clock_mult_shift(uint64_t freq, uint32_t *mult, uint32_t *shift)
{
	uint32_t s = 32;
	uint64_t m;

	for (;;) {
		m = ((1000000000ULL << s) + freq / 2) / freq;
		if (m <= 0xffffffffULL || !s)
			break;
		s--;
	}
	*mult = (uint32_t)m;
	*shift = s;
}

int trace_init(void)
{
	struct hvt_area_params ap;
	const struct hvt_area_header *h = hyp_header;
	uint32_t cpu;
	int ret;

	memset(&ap, 0, sizeof(ap));
	ap.area_size = HVT_HYP_AREA_SIZE;
	ap.nr_cpus = hyp_nr_cpus;
	ap.nr_subbufs = hyp_params.subbufs;
	ap.subbuf_size = CONFIG_HVT_SUBBUF_SIZE;
	ap.mode = hyp_params.mode;
	ap.writer_kind = HVT_WRITER_HYP;
	ap.clock_id = HVT_CLOCK_COUNTER;
	ap.clock_freq_hz = hyp_counter_freq;
	clock_mult_shift(hyp_counter_freq, &ap.clock_mult, &ap.clock_shift);
	ap.writer_pid = 0;
	ap.name = "hvtrace-el2";

	ret = hvt_area_format(hyp_area, &ap);
	if (ret) {
		hyp_printf("hyp: hvt_area_format failed (%d): %u CPUs x %u sub-buffers of %u bytes do not fit %u bytes\n",
			   ret, ap.nr_cpus, ap.nr_subbufs, ap.subbuf_size,
			   HVT_HYP_AREA_SIZE);
		return ret;
	}
	for (cpu = 0; cpu < hyp_nr_cpus; cpu++) {
		struct hyp_cpu *hc = &hyp_cpus[cpu];
		uint8_t *sec = (uint8_t *)hyp_area + h->cpu_offset +
			       (uint64_t)cpu * h->cpu_stride;

		hc->cpu = cpu;
		/* ctrl_init_cpu() reads the formatted meta. */
		hc->cb.meta = (struct hvt_cpu_meta *)sec;
		ctrl_init_cpu(hc);
		ret = hvt_rb_cpu_attach(&hc->cb, (struct hvt_cpu_meta *)sec,
					sec + h->meta_size, &hc->shadow, cpu,
					h->nr_subbufs, h->subbuf_size, h->mode);
		if (ret)
			return ret;
	}
	hyp_printf("hyp: trace area at 0x%x (file offset 0x%x), %u bytes: %u CPUs x %u sub-buffers of %u bytes, %s mode, counter %llu Hz\n",
		   HVT_HYP_AREA_BASE, HVT_HYP_AREA_OFFSET, HVT_HYP_AREA_SIZE,
		   h->nr_cpus, h->nr_subbufs, h->subbuf_size,
		   h->mode == HVT_MODE_CONSUME ? "consume" : "overwrite",
		   (unsigned long long)hyp_counter_freq);
	return 0;
}

/*
 * Answer a pending host time-sync request (CPU 0) and write a selftest
 * event carrying the request's value, so the host can check causality.
 * The counter is read between seeing the request and answering it, so the
 * answer cannot predate the host's posting of the request.
 */
void trace_sync_service(void)
{
	struct hyp_cpu *hc = &hyp_cpus[0];
	uint64_t req;

	/* Acquire inside: pairs with the host's store of sync_req. */
	if (!hvt_area_sync_pending(hyp_area, &req))
		return;
	hvt_area_sync_answer(hyp_area, req, arch_counter_after_loads());
	hyp_trace(hc, hvt_hyp_trace_selftest(req));
}

void trace_print_stats(void)
{
	uint32_t cpu;

	for (cpu = 0; cpu < hyp_nr_cpus; cpu++) {
		struct hyp_cpu *hc = &hyp_cpus[cpu];
		struct hvt_cpu_meta *m = hc->cb.meta;

		if (!m)
			continue;
		hyp_printf("hyp: cpu%u hcalls=%llu entries=%llu lost=%llu ctrl_errors=%llu write_errors=%llu payload_calls=%llu payload_bad=%llu\n",
			   cpu, (unsigned long long)hc->hcalls,
			   (unsigned long long)hvt_rb_entries(&hc->cb),
			   (unsigned long long)__atomic_load_n(
				   &m->lost, __ATOMIC_RELAXED),
			   (unsigned long long)__atomic_load_n(
				   &m->ctrl_errors, __ATOMIC_RELAXED),
			   (unsigned long long)hc->write_errors,
			   (unsigned long long)hc->payload_calls,
			   (unsigned long long)hc->payload_bad);
	}
}
