// SPDX-License-Identifier: MIT
/*
 * hvtrace area container: the whole trace area around the per-CPU rings
 * of ring_buffer.c -- its header checked (hvt_area_validate()), laid out
 * and formatted (hvt_area_format()), one CPU's ring opened in it
 * (hvt_area_cpu()), and the writer's side of the host's clock sync
 * through the control page.  The layout is abi.h's.
 *
 * Freestanding like the writer core: the EL2 image links both
 * (build/freestanding/<arch>/hvtcore.o).  Every value read from the area
 * is the host's or another writer's, so it is checked before use.
 */
#include <hvtrace/ring_buffer.h>

#include "ring-local.h"

/* hvt_area_: whole-area helpers --------------------------------------- */

int hvt_area_validate(const struct hvt_area_header *h, uint64_t area_size,
		      const char **why)
{
	const char *w = NULL;

	if (h->magic != HVT_AREA_MAGIC)
		w = "bad magic (not an hvtrace area, or not formatted yet)";
	else if (h->abi_version != HVT_ABI_VERSION)
		w = "unsupported ABI version";
	else if (h->endian != HVT_AREA_LITTLE_ENDIAN)
		w = "unsupported byte order (only little-endian writers)";
	else if (h->long_size != 8)
		w = "unsupported long size (only 64-bit writers)";
	else if (h->header_size != sizeof(struct hvt_area_header))
		w = "header size mismatch";
	else if (h->page_size != HVT_AREA_ALIGN)
		w = "section alignment is not 4096";
	else if (!rb_is_pow2(h->subbuf_size) ||
		 h->subbuf_size < HVT_ABI_MIN_SUBBUF_SIZE ||
		 h->subbuf_size > HVT_ABI_MAX_SUBBUF_SIZE)
		w = "sub-buffer size is not a power of two in 4K..64K";
	else if (h->nr_cpus == 0 || h->nr_cpus > HVT_ABI_MAX_CPUS)
		w = "CPU count out of range 1..256";
	else if (!rb_is_pow2(h->nr_subbufs) ||
		 h->nr_subbufs < HVT_ABI_MIN_SUBBUFS ||
		 h->nr_subbufs > HVT_ABI_MAX_SUBBUFS)
		w = "sub-buffer count is not a power of two in 2..65536";
	else if (h->mode != HVT_MODE_CONSUME && h->mode != HVT_MODE_OVERWRITE)
		w = "unknown ring mode";
	else if (h->control_offset != HVT_CONTROL_OFFSET)
		w = "control page offset is not 0x1000";
	else if (h->cpu_offset != HVT_CPU_OFFSET)
		w = "first CPU section is not at 0x5000";
	else if (h->meta_size != hvt_meta_size(h->nr_subbufs))
		w = "per-CPU meta size does not match the sub-buffer count";
	else if (h->cpu_stride != hvt_cpu_stride(h->nr_subbufs, h->subbuf_size))
		w = "CPU section stride does not match the geometry";
	else if (hvt_area_size(h->nr_cpus, h->nr_subbufs, h->subbuf_size) >
		 h->area_size)
		w = "geometry is larger than the declared area size";
	else if (h->area_size > area_size)
		w = "declared area size is larger than the mapping";
	else if (h->clock_id < HVT_CLOCK_COUNTER ||
		 h->clock_id > HVT_CLOCK_HOST_NS)
		w = "unknown clock";
	else if (h->clock_shift >= 64)
		w = "clock shift out of range";
	else if (h->clock_id == HVT_CLOCK_COUNTER && !h->clock_freq_hz)
		w = "counter clock without a frequency";
	else if (h->kernel_size &&
		 (h->writer_kind != HVT_WRITER_GUEST ||
		  (h->kernel_offset & (HVT_AREA_ALIGN - 1)) ||
		  (h->kernel_size & (HVT_AREA_ALIGN - 1)) ||
		  h->kernel_offset < h->area_size ||
		  h->kernel_offset + h->kernel_size < h->kernel_offset))
		w = "kernel section not 4 KiB aligned after a guest's area";
	else if (!h->kernel_size && h->kernel_offset)
		w = "kernel section offset without a size";
	if (why)
		*why = w;
	return w ? -HVT_EINVAL : 0;
}

int hvt_area_format(void *area, const struct hvt_area_params *ps)
{
	struct hvt_area_header *h = area;
	struct hvt_control *ctrl;
	uint32_t nr = ps->nr_subbufs, cpu, i;
	uint64_t gen, size = ps->area_size - ps->kernel_size;
	int ret;

	if (ps->kernel_size &&
	    (ps->kernel_size > ps->area_size ||
	     ((size | ps->kernel_size) & (HVT_AREA_ALIGN - 1))))
		return -HVT_EINVAL;
	if (!area || !ps->nr_cpus || ps->nr_cpus > HVT_ABI_MAX_CPUS ||
	    !rb_is_pow2(ps->subbuf_size) ||
	    ps->subbuf_size < HVT_ABI_MIN_SUBBUF_SIZE ||
	    ps->subbuf_size > HVT_ABI_MAX_SUBBUF_SIZE)
		return -HVT_EINVAL;
	if (!nr) {
		/* Largest power of two that fits. */
		nr = HVT_ABI_MAX_SUBBUFS;
		while (nr >= HVT_ABI_MIN_SUBBUFS &&
		       hvt_area_size(ps->nr_cpus, nr, ps->subbuf_size) >
			       size)
			nr >>= 1;
		if (nr < HVT_ABI_MIN_SUBBUFS)
			return -HVT_ENOSPC;	/* not even two sub-buffers */
	}
	if (!rb_is_pow2(nr) || nr < HVT_ABI_MIN_SUBBUFS ||
	    nr > HVT_ABI_MAX_SUBBUFS)
		return -HVT_EINVAL;
	if (hvt_area_size(ps->nr_cpus, nr, ps->subbuf_size) > size)
		return -HVT_ENOSPC;

	gen = h->magic == HVT_AREA_MAGIC ? h->generation + 1 : 1;
	/*
	 * Unpublish first: a host must not see a half-formatted area.  The
	 * release fence orders the cleared magic before every store below;
	 * it pairs with the acquire fence a host issues between copying the
	 * header and re-checking magic and generation (hvtrace_area_open).
	 */
	__atomic_store_n(&h->magic, 0, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	rb_zero((uint8_t *)h + sizeof(h->magic),
		sizeof(*h) - sizeof(h->magic));
	h->abi_version = HVT_ABI_VERSION;
	h->endian = HVT_AREA_LITTLE_ENDIAN;
	h->long_size = 8;
	h->header_size = sizeof(*h);
	h->area_size = size;
	if (ps->kernel_size) {
		h->kernel_offset = size;
		h->kernel_size = ps->kernel_size;
	}
	h->page_size = HVT_AREA_ALIGN;
	h->subbuf_size = ps->subbuf_size;
	h->nr_cpus = ps->nr_cpus;
	h->nr_subbufs = nr;
	h->mode = ps->mode;
	h->writer_kind = ps->writer_kind;
	h->control_offset = HVT_CONTROL_OFFSET;
	h->cpu_offset = HVT_CPU_OFFSET;
	h->cpu_stride = hvt_cpu_stride(nr, ps->subbuf_size);
	h->meta_size = hvt_meta_size(nr);
	h->state = HVT_STATE_RUNNING;
	h->clock_id = ps->clock_id;
	h->clock_shift = ps->clock_shift;
	h->clock_freq_hz = ps->clock_freq_hz;
	h->clock_mult = ps->clock_mult;
	h->writer_pid = ps->writer_pid;
	for (i = 0; ps->name && ps->name[i] && i < sizeof(h->name) - 1; i++)
		h->name[i] = ps->name[i];
	h->generation = gen;

	ctrl = (struct hvt_control *)((uint8_t *)area + HVT_CONTROL_OFFSET);
	for (cpu = 0; cpu < ps->nr_cpus; cpu++) {
		uint8_t *sec = (uint8_t *)area + HVT_CPU_OFFSET +
			       (uint64_t)cpu * h->cpu_stride;
		struct hvt_rb_cpu cb;

		ret = hvt_rb_cpu_init(&cb, (struct hvt_cpu_meta *)sec,
				      sec + h->meta_size, ctrl, cpu, nr,
				      ps->subbuf_size, ps->mode);
		if (ret)
			return ret;
	}
	/* W5: publish the header and every CPU buffer behind it. */
	__atomic_store_n(&h->magic, HVT_AREA_MAGIC, __ATOMIC_RELEASE);
	return 0;
}

int hvt_area_cpu(void *area, uint64_t area_size, uint32_t cpu,
		 struct hvt_rb_cpu *cb)
{
	const struct hvt_area_header *h = area;
	struct hvt_area_header snap;
	uint8_t *sec;

	if (!area || area_size < HVT_CPU_OFFSET)
		return -HVT_EINVAL;
	/* W5: acquire the magic, then take one snapshot and trust only it. */
	if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != HVT_AREA_MAGIC)
		return -HVT_EINVAL;
	rb_copy(&snap, h, sizeof(snap));
	if (hvt_area_validate(&snap, area_size, NULL))
		return -HVT_EINVAL;
	if (cpu >= snap.nr_cpus)
		return -HVT_EINVAL;
	sec = (uint8_t *)area + snap.cpu_offset + (uint64_t)cpu * snap.cpu_stride;
	return hvt_rb_cpu_attach(cb, (struct hvt_cpu_meta *)sec,
				 sec + snap.meta_size,
				 (const struct hvt_control *)((uint8_t *)area +
							      snap.control_offset),
				 cpu, snap.nr_subbufs, snap.subbuf_size,
				 snap.mode);
}

int hvt_area_sync_pending(const void *area, uint64_t *req)
{
	const struct hvt_area_header *h = area;
	const struct hvt_control *ctrl =
		(const struct hvt_control *)((const uint8_t *)area +
					     HVT_CONTROL_OFFSET);
	/*
	 * Acquire: orders later memory accesses after this load.  A clock
	 * read is not a memory access: a writer that needs the answer to
	 * postdate the request must also serialise its clock read (ISB
	 * before CNTVCT on aarch64, LFENCE before RDTSC on x86).
	 */
	uint64_t r = __atomic_load_n(&ctrl->sync_req, __ATOMIC_ACQUIRE);

	if (r == __atomic_load_n(&h->sync_seq, __ATOMIC_RELAXED))
		return 0;
	*req = r;
	return 1;
}

void hvt_area_sync_answer(void *area, uint64_t req, uint64_t clock)
{
	struct hvt_area_header *h = area;

	__atomic_store_n(&h->sync_clock, clock, __ATOMIC_RELAXED);
	/* W6: the clock value is visible before the answer's seq. */
	__atomic_store_n(&h->sync_seq, req, __ATOMIC_RELEASE);
}

int hvt_area_sync_poll(void *area, uint64_t clock)
{
	uint64_t req;

	if (!hvt_area_sync_pending(area, &req))
		return 0;
	hvt_area_sync_answer(area, req, clock);
	return 1;
}
