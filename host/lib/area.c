// SPDX-License-Identifier: MIT
/*
 * libhvtrace: attaching to a trace area, and the host-owned control page.
 *
 * Trust boundary
 * --------------
 * Everything in the area except the control page is written by the writer
 * and mapped here PROT_READ.  The header is copied once, validated with the
 * same rules the writers use (hvt_area_validate()), and only that snapshot
 * is used afterwards: a writer that rewrites its header cannot move the
 * host's view of the geometry.  The control page is mapped read-write only
 * for the owning host (HVTRACE_OPEN_CONTROL); the owner keeps its own copy
 * of everything it writes there and never reads its decisions back, since
 * a guest can scribble on that page too.  Only one owner at a time: the
 * owner lock (owner.c) is taken before the control page is mapped
 * read-write.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <hvtrace/ring_buffer.h>

#include "hvtrace-local.h"

const struct hvt_cpu_meta *hvt_area_cpu_meta(const struct hvtrace_area *a,
					     uint32_t cpu)
{
	return (const struct hvt_cpu_meta *)(a->ro + a->hdr.cpu_offset +
					     (uint64_t)cpu * a->hdr.cpu_stride);
}

const uint8_t *hvt_area_cpu_pages(const struct hvtrace_area *a, uint32_t cpu)
{
	return a->ro + a->hdr.cpu_offset + (uint64_t)cpu * a->hdr.cpu_stride +
	       a->hdr.meta_size;
}

void hvt_area_publish_consumer(struct hvtrace_area *a, uint32_t cpu,
			       uint32_t seq)
{
	if (!a->ctrl || a->hdr.mode != HVT_MODE_CONSUME)
		return;
	/* W4 pair: our reads of every page below @seq are done before the
	 * writer, which loads consumer with acquire, may reuse their slots. */
	__atomic_store_n(&a->ctrl->consumer[cpu], seq, __ATOMIC_RELEASE);
}

/* Store a position in the control page (owner only). */
static void area_store_pos(struct hvtrace_area *a, uint32_t cpu, uint32_t seq,
			   uint32_t pos, uint64_t accounted, uint64_t unplaced)
{
	struct hvt_ctrl_pos *p = &a->ctrl->read_pos[cpu];

	__atomic_store_n(&p->accounted, accounted, __ATOMIC_RELAXED);
	__atomic_store_n(&p->unplaced, unplaced, __ATOMIC_RELAXED);
	__atomic_store_n(&p->seq, seq, __ATOMIC_RELAXED);
	__atomic_store_n(&p->pos, (uint16_t)pos, __ATOMIC_RELAXED);
	/* Release: a successor that loads 'check' with acquire and finds it
	 * matching sees the fields it was computed from (unless a crash tore
	 * them, which the check detects). */
	__atomic_store_n(&p->check,
			 hvt_ctrl_pos_check(accounted, unplaced, seq,
					    (uint16_t)pos),
			 __ATOMIC_RELEASE);
}

void hvt_area_publish_pos(struct hvtrace_area *a, uint32_t cpu, uint32_t seq,
			  uint32_t pos, uint64_t accounted, uint64_t unplaced)
{
	struct hvt_rd_cpu *c;

	if (!a->ctrl || !(a->flags & HVTRACE_OPEN_RESUME))
		return;
	if (!(a->flags & HVTRACE_OPEN_POST_LATER)) {
		area_store_pos(a, cpu, seq, pos, accounted, unplaced);
		return;
	}
	/* The owner posts it once it has handed the events on. */
	c = &a->cpus[cpu];
	c->held_pos.accounted = accounted;
	c->held_pos.unplaced = unplaced;
	c->held_pos.seq = seq;
	c->held_pos.pos = pos;
	c->has_pos = true;
}

/* Rewrite the effective enable bitmap: requested bits, folded with
 * tracing_on so writers test a single bit. */
static void area_write_enable(struct hvtrace_area *a)
{
	size_t i;

	for (i = 0; i < HVT_ABI_MAX_EVENTS / 64; i++)
		/* Relaxed: enable bits are hints; see hvt_event_enabled(). */
		__atomic_store_n(&a->ctrl->enable[i],
				 a->tracing_on ? a->enable[i] : 0,
				 __ATOMIC_RELAXED);
	__atomic_store_n(&a->ctrl->tracing_on, a->tracing_on ? 1u : 0u,
			 __ATOMIC_RELAXED);
}

static int area_map(struct hvtrace_area *a)
{
	void *p;

	p = mmap(NULL, a->size, PROT_READ, MAP_SHARED, a->fd, (off_t)a->offset);
	if (p == MAP_FAILED)
		return hvt_err(-errno, "cannot map %s read-only: %s", a->path,
			       strerror(errno));
	a->ro = p;
	return 0;
}

static int area_take_control(struct hvtrace_area *a)
{
	uint32_t cpu;
	void *p;
	int ret;

	/* One owner per area (owner.c): refused before any write. */
	ret = hvt_area_owner_take(a);
	if (ret)
		return ret;
	/*
	 * Map it read-write in place of its read-only view, inside the
	 * area's mapping: the SIGBUS guard's range then covers it too, and
	 * unmapping the area unmaps it.
	 */
	p = mmap((void *)(a->ro + HVT_CONTROL_OFFSET), HVT_CONTROL_SIZE,
		 PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, a->fd,
		 (off_t)(a->offset + HVT_CONTROL_OFFSET));
	if (p == MAP_FAILED)
		return hvt_err(-errno,
			       "cannot map the control page of %s read-write: "
			       "%s (the owner needs write access to the file)",
			       a->path, strerror(errno));
	a->ctrl = p;
	/*
	 * Start from a known state.  Every field is stored once, with its
	 * final value: writers read this page at any moment, so it must
	 * never show a transient zero (a consume-mode writer would see a
	 * full ring).  consumer[] is left for the readers below, which take
	 * it as a hint and then store their own positions.  Sequence numbers
	 * (clock seqcount, cmd_seq) continue from the page's values, so a
	 * writer that remembers the previous owner's last value sees the
	 * next change as new.
	 */
	__atomic_store_n(&a->ctrl->magic, 0, __ATOMIC_RELAXED);
	a->clock_seq = __atomic_load_n(&a->ctrl->clock.seq, __ATOMIC_RELAXED);
	a->cmd_seq = __atomic_load_n(&a->ctrl->cmd_seq, __ATOMIC_RELAXED);
	memset(a->ctrl->reserved1, 0, sizeof(a->ctrl->reserved1));
	a->tracing_on = true;
	memset(a->enable, 0, sizeof(a->enable));
	area_write_enable(a);
	for (cpu = 0; cpu < HVT_ABI_MAX_CPUS; cpu++) {
		uint32_t v = 0;

		if (cpu < a->hdr.nr_cpus) {
			const struct hvt_cpu_meta *m = hvt_area_cpu_meta(a, cpu);

			/* Adopt the writer's current reset generation, so no
			 * stale request is served. */
			v = __atomic_load_n(&m->reset_ack, __ATOMIC_RELAXED);
		}
		__atomic_store_n(&a->ctrl->reset_req[cpu], v, __ATOMIC_RELAXED);
	}
	a->sync_req = __atomic_load_n(&a->hdr.sync_seq, __ATOMIC_RELAXED);
	__atomic_store_n(&a->ctrl->sync_req, a->sync_req, __ATOMIC_RELAXED);
	__atomic_store_n(&a->ctrl->abi_version, HVT_ABI_VERSION,
			 __ATOMIC_RELAXED);
	/* Release: everything above is visible before the magic. */
	__atomic_store_n(&a->ctrl->magic, HVT_CONTROL_MAGIC, __ATOMIC_RELEASE);
	return 0;
}

static int area_attach_guarded(struct hvtrace_area *a, const char *path,
			       uint64_t offset, unsigned int flags);

/*
 * An area file this user may not open: what is true (its owner, group and
 * mode, and that this user may not read it, or may read but not write
 * it) and what to do.  The rig creates a guest's area mode 0660 in the
 * group of the user who started the guest; hvtraced, once it has the
 * area, serves it to the group hvtrace by name.
 */
static int area_open_error(const char *path, unsigned int flags, int err)
{
	const struct passwd *pw;
	const struct group *gr;
	char owner[64], group[64];
	struct stat st;

	if ((err != -EACCES && err != -EPERM) || stat(path, &st))
		return hvt_err(err, "cannot open %s: %s", path,
			       strerror(-err));
	pw = getpwuid(st.st_uid);
	gr = getgrgid(st.st_gid);
	if (pw)
		snprintf(owner, sizeof(owner), "%s", pw->pw_name);
	else
		snprintf(owner, sizeof(owner), "uid %u", (unsigned)st.st_uid);
	if (gr)
		snprintf(group, sizeof(group), "%s", gr->gr_name);
	else
		snprintf(group, sizeof(group), "gid %u", (unsigned)st.st_gid);
	if ((flags & HVTRACE_OPEN_CONTROL) && !access(path, R_OK))
		return hvt_err(err,
			       "area file %s (owner %s, group %s, mode %04o): "
			       "this user (uid %u) may read it but not write "
			       "it (%s)",
			       path, owner, group, (unsigned)st.st_mode & 07777,
			       (unsigned)getuid(), strerror(-err));
	if (st.st_gid == 0 || !gr)
		return hvt_err(err,
			       "area file %s (owner %s, group %s, mode %04o): "
			       "this user (uid %u) may not read it (%s).  Run "
			       "as root, or read it through hvtraced by its "
			       "name ('hvtrace stream NAME': hvtraced's socket "
			       "is open to the group hvtrace); the rig creates "
			       "a guest's area mode 0660 in the group of the "
			       "user who started the guest",
			       path, owner, group, (unsigned)st.st_mode & 07777,
			       (unsigned)getuid(), strerror(-err));
	return hvt_err(err,
		       "area file %s (owner %s, group %s, mode %04o): this user "
		       "(uid %u) may not read it (%s).  Run as root, or join "
		       "its group %s ('usermod -aG %s USER' as root, then log "
		       "in again%s); the rig creates a guest's area mode 0660 "
		       "in the group of the user who started the guest",
		       path, owner, group, (unsigned)st.st_mode & 07777,
		       (unsigned)getuid(), strerror(-err), group, group,
		       (st.st_mode & 040) ? "" : ", and give the group read "
		       "access: 'chmod g+r FILE'");
}

HVTRACE_API int hvtrace_area_open(const char *path, uint64_t offset,
				  uint64_t size, unsigned int flags,
				  struct hvtrace_area **out)
{
	struct hvtrace_area *a;
	struct stat st;
	int ret;

	if (!path || !out)
		return hvt_err(-EINVAL, "hvtrace_area_open: no path given");
	if (offset % HVT_AREA_ALIGN)
		return hvt_err(-EINVAL,
			       "area offset 0x%llx is not a multiple of 4096",
			       (unsigned long long)offset);
	if (flags & ~(HVTRACE_OPEN_CONTROL | HVTRACE_OPEN_RESUME |
		      HVTRACE_OPEN_POST_LATER) ||
	    (flags & HVTRACE_OPEN_RESUME && !(flags & HVTRACE_OPEN_CONTROL)) ||
	    (flags & HVTRACE_OPEN_POST_LATER && !(flags & HVTRACE_OPEN_RESUME)))
		return hvt_err(-EINVAL, "unknown open flags 0x%x (RESUME goes "
					"with CONTROL, POST_LATER with RESUME)",
			       flags);

	a = calloc(1, sizeof(*a));
	if (!a)
		return hvt_err(-ENOMEM, "out of memory");
	a->flags = flags;
	a->offset = offset;
	a->lock_fd = -1;
	snprintf(a->path, sizeof(a->path), "%s", path);
	a->fd = open(path, ((flags & HVTRACE_OPEN_CONTROL) ? O_RDWR : O_RDONLY) |
				   O_CLOEXEC);
	if (a->fd < 0) {
		ret = area_open_error(path, flags, -errno);
		free(a);
		return ret;
	}
	if (fstat(a->fd, &st) < 0) {
		ret = hvt_err(-errno, "cannot stat %s: %s", path,
			      strerror(errno));
		goto fail;
	}
	if ((uint64_t)st.st_size <= offset) {
		ret = hvt_err(-EINVAL,
			      "%s is %lld bytes: nothing at offset 0x%llx",
			      path, (long long)st.st_size,
			      (unsigned long long)offset);
		goto fail;
	}
	a->size = size ? size : (uint64_t)st.st_size - offset;
	if (offset + a->size > (uint64_t)st.st_size) {
		ret = hvt_err(-EINVAL,
			      "%s is %lld bytes: an area of %llu bytes at "
			      "0x%llx does not fit",
			      path, (long long)st.st_size,
			      (unsigned long long)a->size,
			      (unsigned long long)offset);
		goto fail;
	}
	if (a->size < HVT_CPU_OFFSET) {
		ret = hvt_err(-EINVAL, "%s: %llu bytes is too small for a "
				       "trace area",
			      path, (unsigned long long)a->size);
		goto fail;
	}
	ret = area_map(a);
	if (ret)
		goto fail;
	hvt_guard_init();
	ret = area_attach_guarded(a, path, offset, flags);
	if (ret)
		goto fail;
	*out = a;
	return 0;
fail:
	hvtrace_area_close(a);
	return ret;
}

/* Validate and attach; reads the mapping, so it runs under the guard. */
static int area_attach(struct hvtrace_area *a, const char *path,
		       uint64_t offset, unsigned int flags)
{
	const char *why = NULL;
	uint32_t cpu;
	int ret;

	/* W5 pair: the writer publishes the magic last, with release. */
	{
		uint64_t magic = __atomic_load_n((const uint64_t *)a->ro,
						 __ATOMIC_ACQUIRE);

		if (magic != 0 && magic != HVT_AREA_MAGIC) {
			ret = hvt_err(-EINVAL,
				      "%s: not an hvtrace area at 0x%llx (magic "
				      "0x%016llx); check the path and offset",
				      path, (unsigned long long)offset,
				      (unsigned long long)magic);
			return ret;
		}
	}
	if (__atomic_load_n((const uint64_t *)a->ro, __ATOMIC_ACQUIRE) !=
	    HVT_AREA_MAGIC) {
		ret = hvt_err(-EAGAIN,
			      "%s has no hvtrace area at 0x%llx yet (the writer "
			      "has not formatted it); retry once it runs",
			      path, (unsigned long long)offset);
		return ret;
	}
	memcpy(&a->hdr, a->ro, sizeof(a->hdr));
	/* W5 pair (re-format): if the writer began re-formatting while we
	 * copied, the magic or the generation has changed. */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n((const uint64_t *)a->ro, __ATOMIC_RELAXED) !=
		    HVT_AREA_MAGIC ||
	    __atomic_load_n(&((const struct hvt_area_header *)a->ro)->generation,
			    __ATOMIC_RELAXED) != a->hdr.generation)
		return hvt_err(-EAGAIN, "%s: the writer re-formatted the area "
					"while it was being attached; retry",
			       path);
	a->hdr.name[sizeof(a->hdr.name) - 1] = '\0';
	if (hvt_area_validate(&a->hdr, a->size, &why)) {
		ret = hvt_err(-EINVAL, "%s: invalid trace area header: %s",
			      path, why);
		return ret;
	}
	hvt_clock_init(&a->clock, a->hdr.clock_id, a->hdr.clock_freq_hz,
		       a->hdr.clock_mult, a->hdr.clock_shift);

	if (flags & HVTRACE_OPEN_CONTROL) {
		ret = area_take_control(a);
		if (ret)
			return ret;
	}

	a->cpus = hvt_calloc_lines(a->hdr.nr_cpus, sizeof(*a->cpus));
	if (!a->cpus) {
		ret = hvt_err(-ENOMEM, "out of memory");
		return ret;
	}
	for (cpu = 0; cpu < a->hdr.nr_cpus; cpu++) {
		ret = hvt_rd_init(a, &a->cpus[cpu], cpu);
		if (ret)
			return ret;
	}
	return 0;
}

static int area_attach_guarded(struct hvtrace_area *a, const char *path,
			       uint64_t offset, unsigned int flags)
{
	struct hvt_guard g;
	int ret;

	if (hvt_guard_enter(&g, a->ro, a->size))
		return hvt_err(-EIO, "%s shrank while it was being attached "
				     "(SIGBUS); retry",
			       path);
	ret = area_attach(a, path, offset, flags);
	hvt_guard_leave(&g);
	return ret;
}

HVTRACE_API int hvtrace_area_open_spec(const char *spec, unsigned int flags,
				       struct hvtrace_area **out)
{
	unsigned long long off = 0, size = 0;
	char path[256], *at, *plus, *end;

	if (!spec || !*spec)
		return hvt_err(-EINVAL, "empty area name");
	if (snprintf(path, sizeof(path), "%s", spec) >= (int)sizeof(path))
		return hvt_err(-ENAMETOOLONG, "area path too long: %s", spec);
	at = strrchr(path, '@');
	if (at) {
		*at++ = '\0';
		plus = strchr(at, '+');
		if (plus)
			*plus++ = '\0';
		errno = 0;
		off = strtoull(at, &end, 0);
		if (errno || end == at || (*end && strchr("kKmMgG", *end) &&
					   end[1]) ||
		    (*end && !strchr("kKmMgG", *end)))
			return hvt_err(-EINVAL,
				       "bad offset '%s' in '%s' (use "
				       "PATH@OFFSET[+SIZE], e.g. ram.img@128M+8M)",
				       at, spec);
		if (*end)
			off <<= (*end | 0x20) == 'k' ? 10 :
				(*end | 0x20) == 'm' ? 20 : 30;
		if (plus) {
			size = strtoull(plus, &end, 0);
			if (end == plus || (*end && (!strchr("kKmMgG", *end) ||
						     end[1])))
				return hvt_err(-EINVAL,
					       "bad size '%s' in '%s'", plus,
					       spec);
			if (*end)
				size <<= (*end | 0x20) == 'k' ? 10 :
					 (*end | 0x20) == 'm' ? 20 : 30;
		}
	}
	return hvtrace_area_open(path, off, size, flags, out);
}

HVTRACE_API void hvtrace_area_close(struct hvtrace_area *a)
{
	uint32_t cpu;

	if (!a)
		return;
	if (a->cpus) {
		for (cpu = 0; cpu < a->hdr.nr_cpus; cpu++)
			hvt_rd_fini(&a->cpus[cpu]);
		free(a->cpus);
	}
	/* The control page, if mapped, lies inside the area mapping. */
	if (a->ro)
		munmap((void *)a->ro, a->size);
	hvt_area_owner_drop(a);
	if (a->fd >= 0)
		close(a->fd);
	free(a);
}

HVTRACE_API int hvtrace_area_get_info(const struct hvtrace_area *a,
				      struct hvtrace_area_info *info)
{
	if (!a || !info)
		return hvt_err(-EINVAL, "hvtrace_area_get_info: NULL argument");
	memset(info, 0, sizeof(*info));
	memcpy(info->name, a->hdr.name, sizeof(info->name));
	info->name[sizeof(info->name) - 1] = '\0';
	info->writer_kind = a->hdr.writer_kind;
	info->mode = a->hdr.mode;
	info->kernel_offset = a->hdr.kernel_offset;
	info->kernel_size = a->hdr.kernel_size;
	{
		struct hvt_guard g;

		if (hvt_guard_enter(&g, a->ro, a->size))
			return hvt_err(-EIO, "%s shrank under the reader "
					     "(SIGBUS); reopen the area",
				       a->path);
		info->state = __atomic_load_n(
			&((const struct hvt_area_header *)a->ro)->state,
			__ATOMIC_RELAXED);
		hvt_guard_leave(&g);
	}
	info->nr_cpus = a->hdr.nr_cpus;
	info->nr_subbufs = a->hdr.nr_subbufs;
	info->subbuf_size = a->hdr.subbuf_size;
	info->area_size = a->hdr.area_size;
	info->file_offset = a->offset;
	info->generation = a->hdr.generation;
	info->clock_id = a->hdr.clock_id;
	info->clock_mult = a->hdr.clock_mult;
	info->clock_shift = a->hdr.clock_shift;
	info->clock_freq_hz = a->hdr.clock_freq_hz;
	info->writer_pid = a->hdr.writer_pid;
	return 0;
}

HVTRACE_API int hvtrace_area_writer_state(const struct hvtrace_area *a,
					  uint32_t *state, uint64_t *generation)
{
	const struct hvt_area_header *h = (const void *)a->ro;
	uint64_t gen, magic;
	uint32_t st;
	struct hvt_guard g;

	if (hvt_guard_enter(&g, a->ro, a->size))
		return hvt_err(-EIO, "%s shrank under the reader (SIGBUS); "
				     "reopen the area",
			       a->path);
	gen = __atomic_load_n(&h->generation, __ATOMIC_RELAXED);
	magic = __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE);
	st = __atomic_load_n(&h->state, __ATOMIC_RELAXED);
	hvt_guard_leave(&g);
	if (state)
		*state = st;
	if (generation)
		*generation = gen;
	return magic != HVT_AREA_MAGIC || gen != a->hdr.generation;
}

/* --- control page ------------------------------------------------------ */

static int area_need_control(const struct hvtrace_area *a, const char *what)
{
	if (!a)
		return hvt_err(-EINVAL, "%s: no area", what);
	if (!a->ctrl)
		return hvt_err(-EPERM,
			       "%s: the area was opened read-only; open it with "
			       "HVTRACE_OPEN_CONTROL (one owner per area)",
			       what);
	return 0;
}

static int area_gone(const struct hvtrace_area *a)
{
	return hvt_err(-EIO, "%s shrank under its mapping (SIGBUS on the "
			     "control page); reopen the area",
		       a->path);
}

/*
 * Stores into the control page run under the SIGBUS guard too: the page is
 * part of the area mapping (see area_take_control()).  No return between
 * the two macros.
 */
#define CTRL_STORES_BEGIN(a)                                                  \
	{                                                                     \
		struct hvt_guard ctrl_g_;                                     \
		if (hvt_guard_enter(&ctrl_g_, (a)->ro, (a)->size))            \
			return area_gone(a);
#define CTRL_STORES_END                                                       \
		hvt_guard_leave(&ctrl_g_);                                    \
	}

HVTRACE_API int hvtrace_cpu_read_pos(struct hvtrace_area *a, int cpu,
				     struct hvtrace_read_pos *pos)
{
	if (!a || !pos || cpu < 0 || (uint32_t)cpu >= a->hdr.nr_cpus ||
	    !(a->flags & HVTRACE_OPEN_POST_LATER))
		return hvt_err(-EINVAL, "hvtrace_cpu_read_pos: a bad argument, "
					"or an area opened without "
					"HVTRACE_OPEN_POST_LATER");
	if (!a->cpus[cpu].has_pos)
		return -ENODATA;
	*pos = a->cpus[cpu].held_pos;
	return 0;
}

HVTRACE_API int hvtrace_cpu_post_pos(struct hvtrace_area *a, int cpu,
				     const struct hvtrace_read_pos *pos)
{
	if (!a || !pos || cpu < 0 || (uint32_t)cpu >= a->hdr.nr_cpus ||
	    pos->pos > 0xffff)
		return hvt_err(-EINVAL, "hvtrace_cpu_post_pos: a bad argument");
	if (!a->ctrl || !(a->flags & HVTRACE_OPEN_RESUME))
		return hvt_err(-EPERM, "hvtrace_cpu_post_pos: the area was not "
				       "opened with HVTRACE_OPEN_CONTROL | "
				       "HVTRACE_OPEN_RESUME");
	CTRL_STORES_BEGIN(a)
	area_store_pos(a, (uint32_t)cpu, pos->seq, pos->pos, pos->accounted,
		       pos->unplaced);
	CTRL_STORES_END
	return 0;
}

HVTRACE_API int hvtrace_area_set_tracing(struct hvtrace_area *a, bool on)
{
	int ret = area_need_control(a, "set tracing");

	if (ret)
		return ret;
	a->tracing_on = on;
	CTRL_STORES_BEGIN(a)
	area_write_enable(a);
	CTRL_STORES_END
	return 0;
}

HVTRACE_API bool hvtrace_area_get_tracing(const struct hvtrace_area *a)
{
	return a && a->ctrl && a->tracing_on;
}

HVTRACE_API int hvtrace_area_set_event(struct hvtrace_area *a,
				       unsigned int bit, bool on)
{
	int ret = area_need_control(a, "set event");

	if (ret)
		return ret;
	if (bit >= HVT_ABI_MAX_EVENTS)
		return hvt_err(-ERANGE, "event bit %u out of range (< %u)", bit,
			       HVT_ABI_MAX_EVENTS);
	if (on)
		a->enable[bit / 64] |= 1ULL << (bit % 64);
	else
		a->enable[bit / 64] &= ~(1ULL << (bit % 64));
	CTRL_STORES_BEGIN(a)
	/* Relaxed: see hvt_event_enabled(); writers poll the word. */
	__atomic_store_n(&a->ctrl->enable[bit / 64],
			 a->tracing_on ? a->enable[bit / 64] : 0,
			 __ATOMIC_RELAXED);
	CTRL_STORES_END
	return 0;
}

HVTRACE_API bool hvtrace_area_event_enabled(const struct hvtrace_area *a,
					    unsigned int bit)
{
	if (!a || bit >= HVT_ABI_MAX_EVENTS)
		return false;
	return (a->enable[bit / 64] >> (bit % 64)) & 1;
}

HVTRACE_API int hvtrace_area_reset_cpu(struct hvtrace_area *a, int cpu)
{
	int ret = area_need_control(a, "reset");

	if (ret)
		return ret;
	if (cpu < 0 || (uint32_t)cpu >= a->hdr.nr_cpus)
		return hvt_err(-EINVAL, "no CPU %d in area %s", cpu,
			       a->hdr.name);
	a->cpus[cpu].reset_req++;
	CTRL_STORES_BEGIN(a)
	/* Release: pairs with the writer's acquire in hvt_rb_poll_reset(). */
	__atomic_store_n(&a->ctrl->reset_req[cpu], a->cpus[cpu].reset_req,
			 __ATOMIC_RELEASE);
	CTRL_STORES_END
	return 0;
}

HVTRACE_API int hvtrace_area_set_clock(struct hvtrace_area *a, uint32_t mult,
				       uint32_t shift, uint64_t epoch_cnt,
				       uint64_t epoch_ns)
{
	struct hvt_ctrl_clock *c;
	uint32_t seq;
	int ret = area_need_control(a, "set clock");

	if (ret)
		return ret;
	if (shift >= 64)
		return hvt_err(-EINVAL, "clock shift %u must be < 64", shift);
	c = &a->ctrl->clock;
	/* Odd: update in progress.  From our own copy, never read back. */
	seq = (a->clock_seq + 1) | 1;
	CTRL_STORES_BEGIN(a)
	__atomic_store_n(&c->seq, seq, __ATOMIC_RELAXED);
	/* Order the odd seq before the fields; pairs with the writer's
	 * acquire fence between its field loads and its second seq load. */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&c->shift, shift, __ATOMIC_RELAXED);
	__atomic_store_n(&c->mult, mult, __ATOMIC_RELAXED);
	__atomic_store_n(&c->epoch_cnt, epoch_cnt, __ATOMIC_RELAXED);
	__atomic_store_n(&c->epoch_ns, epoch_ns, __ATOMIC_RELAXED);
	/* Even again, with release: pairs with the writer's acquire load of
	 * seq before it reads the fields. */
	__atomic_store_n(&c->seq, seq + 1, __ATOMIC_RELEASE);
	CTRL_STORES_END
	a->clock_seq = seq + 1;
	return 0;
}

HVTRACE_API int hvtrace_area_send_command(struct hvtrace_area *a, uint32_t cmd)
{
	uint32_t seq;
	int ret = area_need_control(a, "send command");

	if (ret)
		return ret;
	seq = ++a->cmd_seq;
	CTRL_STORES_BEGIN(a)
	__atomic_store_n(&a->ctrl->cmd, cmd, __ATOMIC_RELAXED);
	/* Release: cmd is visible before the new sequence number; pairs
	 * with the writer's acquire load of cmd_seq. */
	__atomic_store_n(&a->ctrl->cmd_seq, seq, __ATOMIC_RELEASE);
	CTRL_STORES_END
	return 0;
}

/* --- time sync through the control page ------------------------------- */

static int area_sync(struct hvtrace_area *a, int timeout_ms);

HVTRACE_API int hvtrace_area_sync(struct hvtrace_area *a, int timeout_ms)
{
	struct hvt_guard g;
	int ret;

	if (!a || !a->ctrl)
		return area_sync(a, timeout_ms);	/* reports the error */
	if (hvt_guard_enter(&g, a->ro, a->size))
		return hvt_err(-EIO, "%s shrank under the reader (SIGBUS); "
				     "reopen the area",
			       a->path);
	ret = area_sync(a, timeout_ms);
	hvt_guard_leave(&g);
	return ret;
}

static int area_sync(struct hvtrace_area *a, int timeout_ms)
{
	const struct hvt_area_header *h;
	struct hvt_clock_sample s;
	uint64_t deadline, req;
	unsigned int spins = 0;
	int ret = area_need_control(a, "time sync");

	if (ret)
		return ret;
	h = (const void *)a->ro;
	req = ++a->sync_req;
	s.host_send = hvt_host_now_ns();
	/* Relaxed is enough: the writer polls; nothing else rides on it. */
	__atomic_store_n(&a->ctrl->sync_req, req, __ATOMIC_RELAXED);
	deadline = s.host_send + (uint64_t)timeout_ms * 1000000ULL;
	for (;;) {
		/* W6 pair: the writer stores sync_clock, then sync_seq with
		 * release. */
		uint64_t got = __atomic_load_n(&h->sync_seq, __ATOMIC_ACQUIRE);

		if (got == req) {
			s.host_recv = hvt_host_now_ns();
			s.writer = __atomic_load_n(&h->sync_clock,
						   __ATOMIC_RELAXED);
			/* A second load: if seq moved on, the clock value may
			 * belong to a newer answer; drop the sample. */
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			if (__atomic_load_n(&h->sync_seq, __ATOMIC_RELAXED) !=
			    req)
				return hvt_err(-EAGAIN, "sync answer changed "
							"while read");
			hvt_clock_add(&a->clock, &s);
			return 0;
		}
		if (hvt_host_now_ns() > deadline)
			return hvt_err(-ETIMEDOUT,
				       "the writer of %s did not answer a time "
				       "sync request within %d ms (it answers "
				       "only while it runs)",
				       a->hdr.name, timeout_ms);
		hvt_wait_a_little(&spins);
	}
}

/*
 * One exchange through the control page for a caller that refines the
 * sample itself (hvtraced, for a guest whose agent answers while it spins
 * after a PING): request @token, spin (no sleep) until the writer echoes
 * it or @timeout_ns passes.  The model is not touched.  The answer is
 * hostile: only an exact echo of the token counts, and a seq that moves
 * while the clock is read drops the sample.
 */
int hvt_area_sync_exchange(struct hvtrace_area *a, uint64_t token,
			   uint64_t timeout_ns, uint64_t *send,
			   uint64_t *writer, uint64_t *recv)
{
	const struct hvt_area_header *h;
	struct hvt_guard g;
	uint64_t s, now, got, w;
	int ret = area_need_control(a, "time sync");

	if (ret)
		return ret;
	if (hvt_guard_enter(&g, a->ro, a->size))
		return area_gone(a);
	h = (const void *)a->ro;
	s = hvt_host_now_ns();
	/* Release: a writer that sees the token sees nothing older. */
	__atomic_store_n(&a->ctrl->sync_req, token, __ATOMIC_RELEASE);
	for (;;) {
		got = __atomic_load_n(&h->sync_seq, __ATOMIC_ACQUIRE);
		now = hvt_host_now_ns();
		if (got == token)
			break;
		if (now - s > timeout_ns) {
			hvt_guard_leave(&g);
			return -ETIMEDOUT;
		}
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#elif defined(__aarch64__)
		__asm__ volatile("yield");
#endif
	}
	w = __atomic_load_n(&h->sync_clock, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	got = __atomic_load_n(&h->sync_seq, __ATOMIC_RELAXED);
	hvt_guard_leave(&g);
	if (got != token)
		return -EAGAIN;
	*send = s;
	*writer = w;
	*recv = now;
	return 0;
}

HVTRACE_API void hvtrace_area_add_sync_sample(struct hvtrace_area *a,
					      uint64_t host_send,
					      uint64_t writer,
					      uint64_t host_recv)
{
	struct hvt_clock_sample s = { host_send, writer, host_recv };

	if (a && host_recv >= host_send)
		hvt_clock_add(&a->clock, &s);
}

HVTRACE_API void hvtrace_area_clock_map(const struct hvtrace_area *a,
				    struct hvtrace_clock_map *m)
{
	hvt_clock_map_get(&a->clock, m);
}

HVTRACE_API uint64_t hvtrace_area_to_host_ns(const struct hvtrace_area *a,
					     uint64_t ts, uint64_t *err_ns)
{
	return hvt_clock_to_host(&a->clock, ts, err_ns);
}

void hvt_area_clock_affine(const struct hvtrace_area *a,
			   struct hvt_clock_affine *out)
{
	hvt_clock_affine_get(&a->clock, out);
}
