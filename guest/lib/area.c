// SPDX-License-Identifier: MIT
/*
 * Opening, formatting and closing trace areas; event handles.
 *
 * Mapping: the whole area read-write from the area descriptor, then the
 * header page made read-only (writers never change it) and the control
 * page replaced by a PROT_READ mapping from the control descriptor (the
 * host owns it; a guest writer must not be able to flip enable bits or
 * consumer positions).  The header is validated once, from a snapshot,
 * with the writer core's rules (hvt_area_validate()), and every CPU
 * handle is built from that snapshot; nothing read later from shared
 * memory changes the geometry the library uses.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hvtrace/config.h>

#include "hvt_util.h"

#include "hvtg_internal.h"

const uint64_t hvtg_disabled_word;

int hvtg_area_open(const char *spec, struct hvtg_area **out)
{
	struct hvtg_area_fds fds = { .area_fd = -1, .ctrl_fd = -1 };
	char path[4096];
	char *at;
	int ret;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!spec)
		spec = getenv("HVTRACE_AREA");
	if (!spec || !*spec)
		spec = HVTG_DEFAULT_AREA;
	if (strlen(spec) >= sizeof(path))
		return hvtg_err(-ENAMETOOLONG, "area path too long");
	strcpy(path, spec);
	at = strrchr(path, '@');
	if (at) {
		char *plus;

		*at++ = 0;
		plus = strchr(at, '+');
		if (plus)
			*plus++ = 0;
		if (hvt_util_size_parse(at, &fds.area_offset))
			return hvtg_err(-EINVAL,
					"bad offset in area spec '%s': use "
					"PATH[@OFFSET[+SIZE]]",
					spec);
		if (plus && hvt_util_size_parse(plus, &fds.area_size))
			return hvtg_err(-EINVAL,
					"bad size in area spec '%s': use "
					"PATH[@OFFSET[+SIZE]]",
					spec);
	}
	fds.ctrl_offset = fds.area_offset + HVT_CONTROL_OFFSET;

	fds.area_fd = open(path, O_RDWR | O_CLOEXEC);
	if (fds.area_fd < 0) {
		ret = -errno;
		return hvtg_err(ret,
				"cannot open trace area %s read-write: %s "
				"(start the hvtrace agent, or set "
				"HVTRACE_AREA to the area file)",
				path, strerror(-ret));
	}
	fds.ctrl_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fds.ctrl_fd < 0) {
		ret = -errno;
		close(fds.area_fd);
		return hvtg_err(ret, "cannot open %s read-only: %s", path,
				strerror(-ret));
	}
	ret = hvtg_area_open_fds(&fds, out);
	close(fds.ctrl_fd);
	close(fds.area_fd);
	/* The agent of $HVTRACE_AGENT_SOCKET (or the default), if any: an
	 * area without one is polled by the host. */
	if (!ret)
		hvtg_area_set_doorbell(*out, NULL);
	return ret;
}

static int area_fail(struct hvtg_area *a, int err)
{
	if (a->base)
		munmap(a->base, a->map_size);
	free(a);
	return err;
}

int hvtg_area_open_fds(const struct hvtg_area_fds *fds,
		       struct hvtg_area **out)
{
	struct hvt_area_header h;
	struct hvtg_area *a;
	uint64_t size;
	const char *why;
	void *p;
	int ctrl_fd, ret;
	uint32_t cpu;

	if (!fds || !out || fds->area_fd < 0)
		return hvtg_err(-EINVAL, "no area file descriptor");
	*out = NULL;
	/* No executor (architecture, kernel, C library): refuse now rather
	 * than on the first write. */
	ret = hvtg_thread_init();
	if (ret)
		return ret;
	if ((fds->area_offset | fds->ctrl_offset) & (HVT_AREA_ALIGN - 1))
		return hvtg_err(-EINVAL,
				"area and control offsets must be multiples "
				"of 4096");
	size = fds->area_size;
	if (!size) {
		struct stat st;

		if (fstat(fds->area_fd, &st))
			return hvtg_err(-errno, "fstat of the area failed: %s",
					strerror(errno));
		if ((uint64_t)st.st_size <= fds->area_offset)
			return hvtg_err(-EINVAL,
					"area file is %llu bytes, nothing at "
					"offset %llu",
					(unsigned long long)st.st_size,
					(unsigned long long)fds->area_offset);
		size = (uint64_t)st.st_size - fds->area_offset;
	}
	if (size < HVT_CPU_OFFSET + HVT_AREA_ALIGN || size > (1ull << 40))
		return hvtg_err(-EINVAL,
				"area size %llu is not plausible (header, "
				"control page and at least one CPU section)",
				(unsigned long long)size);

	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->map_size = size;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fds->area_fd,
		 (off_t)fds->area_offset);
	if (p == MAP_FAILED) {
		ret = -errno;
		return area_fail(a, hvtg_err(ret,
					     "cannot map the area read-write: "
					     "%s (the area descriptor must be "
					     "opened O_RDWR)",
					     strerror(-ret)));
	}
	a->base = p;
	/* The host owns the control page: read-only, from ctrl_fd. */
	ctrl_fd = fds->ctrl_fd >= 0 ? fds->ctrl_fd : fds->area_fd;
	p = mmap(a->base + HVT_CONTROL_OFFSET, HVT_CONTROL_SIZE, PROT_READ,
		 MAP_SHARED | MAP_FIXED, ctrl_fd,
		 (off_t)(fds->ctrl_fd >= 0 ? fds->ctrl_offset :
					     fds->area_offset +
						     HVT_CONTROL_OFFSET));
	if (p == MAP_FAILED) {
		ret = -errno;
		return area_fail(a, hvtg_err(ret,
					     "cannot map the control page "
					     "read-only: %s",
					     strerror(-ret)));
	}
	a->ctrl = p;
	/* Writers never change the header. */
	mprotect(a->base, HVT_AREA_HEADER_SIZE, PROT_READ);

	/* Pairs with the formatter's release store of the magic; any other
	 * non-zero value is reported by the validation below. */
	if (__atomic_load_n((const uint64_t *)a->base, __ATOMIC_ACQUIRE) == 0)
		return area_fail(a, hvtg_err(-EAGAIN,
					     "the trace area is not formatted "
					     "yet (no hvtrace magic): wait for "
					     "the agent, or format it with "
					     "hvtg_area_create()"));
	memcpy(&h, a->base, sizeof(h));
	if (hvt_area_validate(&h, size, &why))
		return area_fail(a, hvtg_err(-EINVAL, "invalid trace area: %s",
					     why));
	if (h.clock_id != HVT_CLOCK_COUNTER && h.clock_id != HVT_CLOCK_MONO_NS)
		return area_fail(a, hvtg_err(-ENOTSUP,
					     "the area's clock (%u) is not one "
					     "a user-space writer produces "
					     "(counter or CLOCK_MONOTONIC)",
					     h.clock_id));
	/* Every CPU handle from this one validated snapshot. */
	for (cpu = 0; cpu < h.nr_cpus; cpu++) {
		uint8_t *sec = a->base + h.cpu_offset +
			       (uint64_t)cpu * h.cpu_stride;

		ret = hvt_rb_cpu_attach(&a->cpus[cpu],
					(struct hvt_cpu_meta *)sec,
					sec + h.meta_size, a->ctrl, cpu,
					h.nr_subbufs, h.subbuf_size, h.mode);
		if (ret)
			return area_fail(a, hvtg_err(-EINVAL,
						     "CPU %u of the area is "
						     "invalid",
						     cpu));
	}
	a->nr_cpus = h.nr_cpus;
	a->clock_id = h.clock_id;
	memcpy(a->info.name, h.name, sizeof(a->info.name));
	a->info.name[sizeof(a->info.name) - 1] = 0;
	a->info.nr_cpus = h.nr_cpus;
	a->info.nr_subbufs = h.nr_subbufs;
	a->info.subbuf_size = h.subbuf_size;
	a->info.mode = h.mode;
	a->info.clock_id = h.clock_id;
	a->info.clock_freq_hz = h.clock_freq_hz;
	a->info.area_size = h.area_size;
	a->info.max_payload = a->cpus[0].max_record -
			      (uint32_t)sizeof(struct hvt_common_fields);
	a->bell_fd = -1; /* hvtg_area_set_doorbell() connects it */
	a->bell_regs = NULL;

	*out = a;
	return 0;
}

void hvtg_area_close(struct hvtg_area *a)
{
	if (!a)
		return;
	hvtg_bell_close(a);
	munmap(a->base, a->map_size);
	free(a);
}

int hvtg_area_get_info(const struct hvtg_area *a, struct hvtg_area_info *info)
{
	if (!a || !info)
		return -EINVAL;
	*info = a->info;
	return 0;
}

/* --- formatting ---------------------------------------------------- */

static int area_defaults(const struct hvtg_format *f, struct hvtg_format *d,
			 struct hvtg_clock *clk)
{
	long n;
	int ret;

	memset(d, 0, sizeof(*d));
	if (f)
		*d = *f;
	if (!d->nr_cpus) {
		n = sysconf(_SC_NPROCESSORS_CONF);
		if (n < 1)
			n = 1;
		if (n > CONFIG_HVT_MAX_CPUS)
			n = CONFIG_HVT_MAX_CPUS;
		d->nr_cpus = (uint32_t)n;
	}
	if (d->nr_cpus > CONFIG_HVT_MAX_CPUS)
		return hvtg_err(-EINVAL,
				"%u CPUs asked for, the build allows %d "
				"(CONFIG_HVT_MAX_CPUS, make menuconfig)",
				d->nr_cpus, CONFIG_HVT_MAX_CPUS);
	if (!d->subbuf_size)
		d->subbuf_size = CONFIG_HVT_SUBBUF_SIZE;
	if (!d->mode)
		d->mode = HVT_DEFAULT_MODE;
	if (!d->writer_kind)
		d->writer_kind = HVT_WRITER_GUEST;
	if (!d->name)
		d->name = "guest";
	ret = hvtg_clock_describe(d->clock_id, clk);
	if (ret)
		return ret;
	d->clock_id = clk->clock_id;
	return 0;
}

int hvtg_area_format(void *mem, uint64_t size, const struct hvtg_format *f)
{
	struct hvt_area_params p;
	struct hvtg_format d;
	struct hvtg_clock clk;
	int ret;

	if (!mem || ((uintptr_t)mem & (HVT_AREA_ALIGN - 1)))
		return hvtg_err(-EINVAL, "area memory must be 4 KiB aligned");
	ret = area_defaults(f, &d, &clk);
	if (ret)
		return ret;
	memset(&p, 0, sizeof(p));
	p.area_size = size;
	p.nr_cpus = d.nr_cpus;
	p.nr_subbufs = d.nr_subbufs;
	p.subbuf_size = d.subbuf_size;
	p.mode = d.mode;
	p.writer_kind = d.writer_kind;
	p.clock_id = clk.clock_id;
	p.clock_freq_hz = clk.freq_hz;
	p.clock_mult = clk.mult;
	p.clock_shift = clk.shift;
	p.writer_pid = (uint32_t)getpid();
	p.name = d.name;
	p.kernel_size = d.kernel_size;
	if (p.nr_cpus && p.nr_cpus <= HVT_ABI_MAX_CPUS &&
	    p.subbuf_size <= HVT_ABI_MAX_SUBBUF_SIZE &&
	    hvt_area_size(p.nr_cpus,
			  p.nr_subbufs ? p.nr_subbufs : HVT_ABI_MIN_SUBBUFS,
			  p.subbuf_size) > size - d.kernel_size)
		ret = -HVT_ENOSPC;
	else
		ret = hvt_area_format(mem, &p);
	if (ret == -HVT_ENOSPC)
		return hvtg_err(-ENOSPC,
				"%u CPUs x %u sub-buffers of %u bytes do not "
				"fit in %llu bytes",
				p.nr_cpus,
				p.nr_subbufs ? p.nr_subbufs :
					       HVT_ABI_MIN_SUBBUFS,
				p.subbuf_size, (unsigned long long)size);
	if (ret)
		return hvtg_err(-EINVAL,
				"bad area geometry: %u CPUs (1..256), %u "
				"sub-buffers (power of two, 2..65536), "
				"sub-buffer size %u (power of two, "
				"4096..65536), mode %u",
				p.nr_cpus, p.nr_subbufs, p.subbuf_size, p.mode);
	return 0;
}

int hvtg_area_create(const char *path, uint64_t size,
		     const struct hvtg_format *f)
{
	struct hvtg_format d;
	struct hvtg_clock clk;
	void *mem;
	int fd, ret;

	if (!path)
		return -EINVAL;
	if (!size) {
		ret = area_defaults(f, &d, &clk);
		if (ret)
			return ret;
		size = hvt_area_size(d.nr_cpus,
				     d.nr_subbufs ? d.nr_subbufs :
						    CONFIG_HVT_DEFAULT_SUBBUFS,
				     d.subbuf_size);
		if (!f || !f->nr_subbufs) {
			d.nr_subbufs = 0;	/* fills the size above */
			f = &d;
		}
	}
	if (size & (HVT_AREA_ALIGN - 1))
		return hvtg_err(-EINVAL,
				"area size must be a multiple of 4096");
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return hvtg_err(-errno, "cannot create %s: %s", path,
				strerror(errno));
	if (ftruncate(fd, (off_t)size)) {
		ret = -errno;
		close(fd);
		return hvtg_err(ret, "cannot size %s to %llu bytes: %s", path,
				(unsigned long long)size, strerror(-ret));
	}
	mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ret = -errno;
	close(fd);
	if (mem == MAP_FAILED)
		return hvtg_err(ret, "cannot map %s: %s", path, strerror(-ret));
	ret = hvtg_area_format(mem, size, f);
	munmap(mem, size);
	return ret;
}

/* --- events --------------------------------------------------------- */

int hvtg_event_bind(struct hvtg_area *a, struct hvtg_event *ev, uint32_t id,
		    uint32_t enable_bit)
{
	if (!a || !ev)
		return -EINVAL;
	if (id > 0xffff || enable_bit >= HVT_ABI_MAX_EVENTS)
		return hvtg_err(-EINVAL,
				"event id %u (max 65535) or enable bit %u "
				"(max %u) out of range",
				id, enable_bit, HVT_ABI_MAX_EVENTS - 1);
	ev->priv_area = a;
	ev->priv_id = id;
	ev->priv_bit = enable_bit;
	ev->priv_mask = 1ull << (enable_bit & 63);
	__atomic_store_n(&ev->priv_word, &a->ctrl->enable[enable_bit >> 6],
			 __ATOMIC_RELAXED);
	return 0;
}

void hvtg_event_unbind(struct hvtg_event *ev)
{
	if (!ev)
		return;
	__atomic_store_n(&ev->priv_word, &hvtg_disabled_word,
			 __ATOMIC_RELAXED);
	ev->priv_mask = 0;
	ev->priv_area = NULL;
}
