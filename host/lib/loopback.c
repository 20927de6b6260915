// SPDX-License-Identifier: MIT
/*
 * libhvtrace: the loopback writer.
 *
 * A local process plays the part of a hypervisor or guest: it creates an
 * area file, formats it with the writer core, and writes "selftest" events
 * (a u64 id, consecutive per CPU from 0) with one thread per CPU buffer,
 * each pinned to a host CPU so it is the single writer of its buffer
 * (hvt_rb_write(), the direct executor).  Like any writer it checks its
 * enable bit before each event, answers time-sync requests (the CPU 0
 * thread) and per-CPU reset requests, and marks the area STOPPED when it
 * ends.  Timestamps come from the clock Kconfig chose (or the caller):
 * the CPU counter, whose frequency is calibrated against CLOCK_MONOTONIC
 * and written into the area header, or CLOCK_MONOTONIC itself.
 *
 * An id is spent only on an event handed to the ring (written or dropped
 * as lost), never while the event is disabled: a reader sees consecutive
 * ids per CPU, with gaps exactly where it is told events were lost.
 *
 * The writer holds an exclusive flock() on the file while it lives, so a
 * second writer refuses to clobber it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <hvtrace/config.h>
#include <hvtrace/ring_buffer.h>

#include "hvtrace-local.h"

/* Sleep slices: the CPU 0 thread keeps answering time syncs promptly. */
#define LB_SYNC_SLICE_NS	100000ULL	/* 100 us */
#define LB_IDLE_SLICE_NS	10000000ULL	/* 10 ms */
#define LB_DISABLED_SLEEP_NS	200000ULL	/* 200 us */

struct lb_cpu {
	struct hvtrace_loopback *lb;
	unsigned int cpu;
	pthread_t thread;
	bool started;
	struct hvt_rb_cpu cb;
	struct hvtrace_loopback_cpu_stats st;	/* relaxed atomics */
	int err;
};

struct hvtrace_loopback {
	struct hvtrace_loopback_params p;
	char path[256];
	int fd;
	uint8_t *area;
	uint64_t map_size;
	uint64_t area_size;
	struct hvt_area_header *hdr;
	const struct hvt_control *ctrl;
	int stop;				/* atomic */
	uint32_t cmd_seq0;			/* host command seen at start */
	struct lb_cpu *cpus;
};

/* --- clocks --------------------------------------------------------------- */

static uint64_t lb_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static inline uint64_t lb_counter(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
	uint64_t v;

	__asm__ volatile("isb; mrs %0, cntvct_el0" : "=r"(v));
	return v;
#else
	return lb_mono_ns();
#endif
}

static inline uint64_t lb_clock(const struct hvtrace_loopback *lb)
{
	return lb->p.clock_id == HVT_CLOCK_COUNTER ? lb_counter()
						   : lb_mono_ns();
}

/* Counter frequency: the architectural register where there is one,
 * else three 10 ms measurements against CLOCK_MONOTONIC (the median). */
static uint64_t lb_counter_freq(void)
{
#if defined(__aarch64__)
	uint64_t f;

	__asm__ volatile("mrs %0, cntfrq_el0" : "=r"(f));
	return f;
#elif defined(__x86_64__) || defined(__i386__)
	uint64_t f[3], tmp;
	int i, j;

	for (i = 0; i < 3; i++) {
		struct timespec d = { 0, 10000000 };
		uint64_t a0, c0, a1, b0, c1, b1;

		a0 = lb_mono_ns();
		c0 = lb_counter();
		a1 = lb_mono_ns();
		nanosleep(&d, NULL);
		b0 = lb_mono_ns();
		c1 = lb_counter();
		b1 = lb_mono_ns();
		f[i] = (uint64_t)((double)(c1 - c0) * 1e9 /
				  ((double)(b0 + b1) / 2 -
				   (double)(a0 + a1) / 2));
	}
	for (i = 1; i < 3; i++)
		for (j = i; j > 0 && f[j - 1] > f[j]; j--) {
			tmp = f[j];
			f[j] = f[j - 1];
			f[j - 1] = tmp;
		}
	return f[1];
#else
	return 1000000000ULL;
#endif
}

/* ns = cnt * mult >> shift, with mult as precise as 32 bits allow. */
static void lb_mult_shift(uint64_t freq, uint32_t *mult, uint32_t *shift)
{
	uint32_t s;

	for (s = 32; s > 0; s--) {
		double m = 1e9 * (double)(1ULL << s) / (double)freq;

		if (m < 4294967295.0) {
			*mult = (uint32_t)(m + 0.5);
			*shift = s;
			return;
		}
	}
	*mult = 1;
	*shift = 0;
}

static void lb_sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ULL),
			       (long)(ns % 1000000000ULL) };

	nanosleep(&ts, NULL);
}

/* --- writer threads ------------------------------------------------------- */

static bool lb_stopping(const struct hvtrace_loopback *lb)
{
	return __atomic_load_n(&lb->stop, __ATOMIC_RELAXED);
}

#define LB_INC(field) \
	__atomic_store_n(&(field), (field) + 1, __ATOMIC_RELAXED)

/* Answer a pending time-sync request: the clock is read after the request
 * was seen (hvt_area_sync_pending() loads it with acquire), so the answer
 * lies inside the host's bracket. */
static void lb_serve_sync(struct lb_cpu *c)
{
	uint64_t req;

	if (!hvt_area_sync_pending(c->lb->area, &req))
		return;
	hvt_area_sync_answer(c->lb->area, req, lb_clock(c->lb));
	LB_INC(c->st.syncs);
}

/* A new host command (HVT_CMD_*)?  Only STOP means anything here. */
static void lb_check_cmd(struct hvtrace_loopback *lb)
{
	/* Acquire: pairs with the host's release store of cmd_seq, which
	 * it makes after storing cmd. */
	uint32_t seq = __atomic_load_n(&lb->ctrl->cmd_seq, __ATOMIC_ACQUIRE);

	if (seq != lb->cmd_seq0 &&
	    __atomic_load_n(&lb->ctrl->cmd, __ATOMIC_RELAXED) == HVT_CMD_STOP)
		hvtrace_loopback_stop(lb);
}

/* Wait until @due (CLOCK_MONOTONIC ns), serving control requests. */
static void lb_wait_until(struct lb_cpu *c, uint64_t due)
{
	struct hvtrace_loopback *lb = c->lb;
	uint64_t now;

	while (!lb_stopping(lb) && (now = lb_mono_ns()) < due) {
		uint64_t slice = due - now;

		if (c->cpu == 0) {
			lb_serve_sync(c);
			if (slice > LB_SYNC_SLICE_NS)
				slice = LB_SYNC_SLICE_NS;
		} else if (slice > LB_IDLE_SLICE_NS) {
			slice = LB_IDLE_SLICE_NS;
		}
		if (slice < 20000)
			continue;	/* spin the last few microseconds */
		lb_sleep_ns(slice);
	}
}

static void *lb_thread(void *arg)
{
	struct lb_cpu *c = arg;
	struct hvtrace_loopback *lb = c->lb;
	struct hvt_common_fields common = {
		.common_type = HVTRACE_EVENT_SELFTEST_ID,
	};
	uint64_t id = 0, start, deadline, due, period = 0;
	struct hvt_iovec iov = { &id, sizeof(id) };
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned int n = 0;
	char name[16];
	cpu_set_t set;

	c->st.host_cpu = -1;
	if (ncpu > 0) {
		CPU_ZERO(&set);
		CPU_SET(c->cpu % (unsigned long)ncpu, &set);
		if (!sched_setaffinity(0, sizeof(set), &set))
			c->st.host_cpu = (int)(c->cpu % (unsigned long)ncpu);
	}
	snprintf(name, sizeof(name), "hvt-lb/%u", c->cpu);
	prctl(PR_SET_NAME, name, 0, 0, 0);
	common.common_pid = (int32_t)gettid();

	start = lb_mono_ns();
	deadline = UINT64_MAX;
	if (lb->p.duration > 0)
		deadline = start + (uint64_t)(lb->p.duration * 1e9);
	if (lb->p.rate)
		period = 1000000000ULL / lb->p.rate ? 1000000000ULL / lb->p.rate
						   : 1;
	due = start;

	while (!lb_stopping(lb)) {
		int ret;

		if (lb->p.events && id >= lb->p.events)
			break;
		if ((++n & 63) == 0 || period) {
			if (lb_mono_ns() >= deadline)
				break;
			if (hvt_rb_poll_reset(&c->cb))
				LB_INC(c->st.resets);
			lb_check_cmd(lb);
		}
		if (c->cpu == 0)
			lb_serve_sync(c);
		/* The writer's fast-path check: one load and a mask. */
		if (!hvt_event_enabled(lb->ctrl, HVTRACE_EVENT_SELFTEST_BIT)) {
			LB_INC(c->st.disabled_waits);
			lb_wait_until(c, lb_mono_ns() + LB_DISABLED_SLEEP_NS);
			if (lb_mono_ns() >= deadline)
				break;
			due = lb_mono_ns();	/* no burst after a pause */
			continue;
		}
		if (period) {
			uint64_t now = lb_mono_ns();

			if (now < due) {
				lb_wait_until(c, due);
				continue;
			}
			due += period;
			if (due + 1000000000ULL < now)
				due = now;	/* fell a second behind */
		}
		ret = hvt_rb_write(&c->cb, lb_clock(lb), &common, &iov, 1);
		if (ret == 0) {
			LB_INC(c->st.written);
		} else if (ret == -HVT_ENOSPC) {
			LB_INC(c->st.dropped);
		} else {
			c->err = -EINVAL;
			break;
		}
		id++;
		__atomic_store_n(&c->st.next_id, id, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* --- life cycle ----------------------------------------------------------- */

static int lb_check_params(const struct hvtrace_loopback_params *p)
{
	if (!p->path || !*p->path)
		return hvt_err(-EINVAL, "no area file given");
	if (!p->nr_cpus || p->nr_cpus > CONFIG_HVT_MAX_CPUS)
		return hvt_err(-EINVAL, "CPU count %u out of range 1..%d "
					"(CONFIG_HVT_MAX_CPUS)",
			       p->nr_cpus, CONFIG_HVT_MAX_CPUS);
	if (p->nr_subbufs < HVT_ABI_MIN_SUBBUFS ||
	    p->nr_subbufs > HVT_ABI_MAX_SUBBUFS ||
	    (p->nr_subbufs & (p->nr_subbufs - 1)))
		return hvt_err(-EINVAL,
			       "sub-buffers per CPU must be a power of two in "
			       "2..65536, not %u",
			       p->nr_subbufs);
	if (p->subbuf_size < HVT_ABI_MIN_SUBBUF_SIZE ||
	    p->subbuf_size > HVT_ABI_MAX_SUBBUF_SIZE ||
	    (p->subbuf_size & (p->subbuf_size - 1)))
		return hvt_err(-EINVAL,
			       "sub-buffer size must be a power of two in "
			       "4096..65536, not %u",
			       p->subbuf_size);
	if (p->mode != HVT_MODE_CONSUME && p->mode != HVT_MODE_OVERWRITE)
		return hvt_err(-EINVAL, "unknown ring mode %u", p->mode);
	if (p->clock_id != HVT_CLOCK_COUNTER &&
	    p->clock_id != HVT_CLOCK_MONO_NS)
		return hvt_err(-EINVAL, "the loopback writer stamps with the "
					"CPU counter or CLOCK_MONOTONIC only");
	if (p->duration < 0)
		return hvt_err(-EINVAL, "negative duration");
	return 0;
}

/* Refuse files that are not (stale) hvtrace areas: never clobber data. */
static int lb_check_existing(struct hvtrace_loopback *lb, uint64_t fsize)
{
	struct hvt_area_header h;
	ssize_t n;

	if (!fsize)
		return 0;
	n = pread(lb->fd, &h, sizeof(h), 0);
	if (n == (ssize_t)sizeof(h) && (h.magic == HVT_AREA_MAGIC || !h.magic))
		return 0;
	if (n < (ssize_t)sizeof(h)) {
		uint8_t buf[sizeof(h)];
		ssize_t i;

		n = pread(lb->fd, buf, sizeof(buf), 0);
		for (i = 0; i < n && !buf[i]; i++)
			;
		if (n >= 0 && i == n)
			return 0;
	}
	return hvt_err(-EEXIST,
		       "%s exists and is not an hvtrace area; refusing to "
		       "overwrite it (remove it, or pick another file)",
		       lb->path);
}

HVTRACE_API int hvtrace_loopback_create(const struct hvtrace_loopback_params *p,
					struct hvtrace_loopback **out)
{
	struct hvt_area_params ap;
	struct hvtrace_loopback *lb;
	const char *base;
	struct stat st;
	uint32_t mult = 0, shift = 0;
	uint64_t freq = 0;
	unsigned int cpu;
	int ret;

	if (!p || !out)
		return hvt_err(-EINVAL,
			       "hvtrace_loopback_create: NULL argument");
	ret = lb_check_params(p);
	if (ret)
		return ret;
	lb = calloc(1, sizeof(*lb));
	if (!lb)
		return hvt_err(-ENOMEM, "out of memory");
	lb->p = *p;
	snprintf(lb->path, sizeof(lb->path), "%s", p->path);
	lb->p.path = lb->path;
	lb->fd = open(lb->path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lb->fd < 0) {
		ret = hvt_err(-errno, "cannot create %s: %s", lb->path,
			      strerror(errno));
		free(lb);
		return ret;
	}
	if (flock(lb->fd, LOCK_EX | LOCK_NB)) {
		struct hvt_area_header h;

		memset(&h, 0, sizeof(h));
		if (pread(lb->fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
			h.writer_pid = 0;
		h.name[sizeof(h.name) - 1] = '\0';
		ret = hvt_err(-EBUSY,
			      "%s is in use by a live writer (pid %u, '%s'); "
			      "stop it first or pick another file",
			      lb->path, h.writer_pid, h.name);
		goto fail;
	}
	if (fstat(lb->fd, &st)) {
		ret = hvt_err(-errno, "cannot stat %s: %s", lb->path,
			      strerror(errno));
		goto fail;
	}
	ret = lb_check_existing(lb, (uint64_t)st.st_size);
	if (ret)
		goto fail;

	lb->area_size = hvt_area_size(p->nr_cpus, p->nr_subbufs,
				      p->subbuf_size);
	/* Never shrink: a reader of the previous run may still map it. */
	lb->map_size = (uint64_t)st.st_size > lb->area_size ?
			       (uint64_t)st.st_size : lb->area_size;
	if (ftruncate(lb->fd, (off_t)lb->map_size)) {
		ret = hvt_err(-errno, "cannot size %s to %llu bytes: %s",
			      lb->path, (unsigned long long)lb->map_size,
			      strerror(errno));
		goto fail;
	}
	lb->area = mmap(NULL, lb->map_size, PROT_READ | PROT_WRITE, MAP_SHARED,
			lb->fd, 0);
	if (lb->area == MAP_FAILED) {
		lb->area = NULL;
		ret = hvt_err(-errno, "cannot map %s: %s", lb->path,
			      strerror(errno));
		goto fail;
	}
	lb->hdr = (struct hvt_area_header *)lb->area;
	lb->ctrl = (const struct hvt_control *)(lb->area + HVT_CONTROL_OFFSET);

	if (p->clock_id == HVT_CLOCK_COUNTER) {
		freq = lb_counter_freq();
		if (!freq) {
			ret = hvt_err(-EIO, "cannot calibrate the CPU counter");
			goto fail;
		}
		lb_mult_shift(freq, &mult, &shift);
	}
	base = strrchr(lb->path, '/');
	base = base ? base + 1 : lb->path;
	memset(&ap, 0, sizeof(ap));
	ap.area_size = lb->area_size;
	ap.nr_cpus = p->nr_cpus;
	ap.nr_subbufs = p->nr_subbufs;
	ap.subbuf_size = p->subbuf_size;
	ap.mode = p->mode;
	ap.writer_kind = HVT_WRITER_LOOPBACK;
	ap.clock_id = p->clock_id;
	ap.clock_freq_hz = freq;
	ap.clock_mult = mult;
	ap.clock_shift = shift;
	ap.writer_pid = (uint32_t)getpid();
	ap.name = base;

	/* The control page is the host's: it is left as it is (a host may
	 * stay attached across runs; a fresh ring starts at its consumer
	 * position).  Commands already posted there are not for this run. */
	lb->cmd_seq0 = __atomic_load_n(&lb->ctrl->cmd_seq, __ATOMIC_ACQUIRE);
	ret = hvt_area_format(lb->area, &ap);
	if (ret) {
		ret = hvt_err(-EINVAL, "cannot format %s (%d)", lb->path, ret);
		goto fail;
	}
	if (p->pre_enable) {
		struct hvt_control *ctrl = (struct hvt_control *)lb->ctrl;

		/* Until a host takes control, the writer enables its own
		 * event, as if a host had. Relaxed: writers poll the bit. */
		__atomic_store_n(&ctrl->enable[HVTRACE_EVENT_SELFTEST_BIT / 64],
				 1ULL << (HVTRACE_EVENT_SELFTEST_BIT % 64),
				 __ATOMIC_RELAXED);
		__atomic_store_n(&ctrl->tracing_on, 1u, __ATOMIC_RELAXED);
	}

	lb->cpus = calloc(p->nr_cpus, sizeof(*lb->cpus));
	if (!lb->cpus) {
		ret = hvt_err(-ENOMEM, "out of memory");
		goto fail;
	}
	for (cpu = 0; cpu < p->nr_cpus; cpu++) {
		struct lb_cpu *c = &lb->cpus[cpu];

		c->lb = lb;
		c->cpu = cpu;
		c->st.host_cpu = -1;
		if (hvt_area_cpu(lb->area, lb->area_size, cpu, &c->cb)) {
			ret = hvt_err(-EINVAL, "cannot open CPU %u of the new "
					       "area",
				      cpu);
			goto fail;
		}
	}
	*out = lb;
	return 0;
fail:
	hvtrace_loopback_destroy(lb);
	return ret;
}

HVTRACE_API int hvtrace_loopback_run(struct hvtrace_loopback *lb)
{
	unsigned int cpu;
	int ret = 0, err;

	if (!lb)
		return hvt_err(-EINVAL, "hvtrace_loopback_run: no writer");
	for (cpu = 0; cpu < lb->p.nr_cpus; cpu++) {
		struct lb_cpu *c = &lb->cpus[cpu];

		err = pthread_create(&c->thread, NULL, lb_thread, c);
		if (err) {
			ret = hvt_err(-err, "cannot start writer thread %u: %s",
				      cpu, strerror(err));
			hvtrace_loopback_stop(lb);
			break;
		}
		c->started = true;
	}
	for (cpu = 0; cpu < lb->p.nr_cpus; cpu++) {
		struct lb_cpu *c = &lb->cpus[cpu];

		if (!c->started)
			continue;
		pthread_join(c->thread, NULL);
		c->started = false;
		if (c->err && !ret)
			ret = hvt_err(c->err, "writer thread %u failed", cpu);
	}
	/* Release: every commit before the state change is visible first. */
	__atomic_store_n(&lb->hdr->state, HVT_STATE_STOPPED, __ATOMIC_RELEASE);
	return ret;
}

HVTRACE_API void hvtrace_loopback_stop(struct hvtrace_loopback *lb)
{
	if (lb)
		__atomic_store_n(&lb->stop, 1, __ATOMIC_RELAXED);
}

HVTRACE_API int
hvtrace_loopback_get_stats(const struct hvtrace_loopback *lb, unsigned int cpu,
			   struct hvtrace_loopback_cpu_stats *st)
{
	const struct hvtrace_loopback_cpu_stats *s;

	if (!lb || !st || cpu >= lb->p.nr_cpus)
		return hvt_err(-EINVAL, "no loopback CPU %u", cpu);
	s = &lb->cpus[cpu].st;
	st->written = __atomic_load_n(&s->written, __ATOMIC_RELAXED);
	st->dropped = __atomic_load_n(&s->dropped, __ATOMIC_RELAXED);
	st->next_id = __atomic_load_n(&s->next_id, __ATOMIC_RELAXED);
	st->disabled_waits = __atomic_load_n(&s->disabled_waits,
					     __ATOMIC_RELAXED);
	st->syncs = __atomic_load_n(&s->syncs, __ATOMIC_RELAXED);
	st->resets = __atomic_load_n(&s->resets, __ATOMIC_RELAXED);
	st->host_cpu = __atomic_load_n(&s->host_cpu, __ATOMIC_RELAXED);
	return 0;
}

HVTRACE_API int hvtrace_loopback_get_info(const struct hvtrace_loopback *lb,
					  struct hvtrace_area_info *info)
{
	const struct hvt_area_header *h;

	if (!lb || !info)
		return hvt_err(-EINVAL, "hvtrace_loopback_get_info: NULL "
					"argument");
	h = lb->hdr;
	memset(info, 0, sizeof(*info));
	memcpy(info->name, h->name, sizeof(info->name) - 1);
	info->writer_kind = h->writer_kind;
	info->mode = h->mode;
	info->state = __atomic_load_n(&h->state, __ATOMIC_RELAXED);
	info->nr_cpus = h->nr_cpus;
	info->nr_subbufs = h->nr_subbufs;
	info->subbuf_size = h->subbuf_size;
	info->area_size = h->area_size;
	info->generation = h->generation;
	info->clock_id = h->clock_id;
	info->clock_mult = h->clock_mult;
	info->clock_shift = h->clock_shift;
	info->clock_freq_hz = h->clock_freq_hz;
	info->writer_pid = h->writer_pid;
	return 0;
}

HVTRACE_API int hvtrace_area_sync_local(struct hvtrace_area *a)
{
	struct hvtrace_area_info info;
	uint64_t t0, c, t1;

	if (!a || hvtrace_area_get_info(a, &info))
		return hvt_err(-EINVAL, "hvtrace_area_sync_local: no area");
	if (info.clock_id != HVT_CLOCK_COUNTER &&
	    info.clock_id != HVT_CLOCK_MONO_NS)
		return hvt_err(-EINVAL, "area '%s' has no clock this host can "
					"read",
			       info.name);
	t0 = lb_mono_ns();
	c = info.clock_id == HVT_CLOCK_COUNTER ? lb_counter() : lb_mono_ns();
	t1 = lb_mono_ns();
	hvtrace_area_add_sync_sample(a, t0, c, t1);
	return 0;
}

HVTRACE_API void hvtrace_loopback_destroy(struct hvtrace_loopback *lb)
{
	if (!lb)
		return;
	if (lb->cpus) {
		hvtrace_loopback_stop(lb);
		for (unsigned int cpu = 0; cpu < lb->p.nr_cpus; cpu++)
			if (lb->cpus[cpu].started)
				pthread_join(lb->cpus[cpu].thread, NULL);
		free(lb->cpus);
	}
	if (lb->area)
		munmap(lb->area, lb->map_size);
	if (lb->fd >= 0)
		close(lb->fd);	/* drops the flock */
	free(lb);
}
