// SPDX-License-Identifier: MIT
/*
 * hvtrace-agent: kernel copy mode.  The guest kernel's own ftrace pages,
 * moved whole from an instance's per_cpu/cpuN/trace_pipe_raw into the
 * *kernel section* of the trace area, for guest kernels whose ring the
 * host cannot read in place (no persistent buffer), or when asked.
 *
 *   guest kernel ring (instance DIR)         ivshmem BAR
 *   per_cpu/cpuN/trace_pipe_raw  --read-->   [ user area | kernel section ]
 *     one sub-buffer per read()               a trace area of writer kind
 *     RB_MISSED_* flags, stored count          HVT_WRITER_GUEST_KERNEL, its
 *   per_cpu/cpuN/stats (overrun,               header named by the user
 *     dropped events)                          area's kernel_offset/size
 *
 * The section is an ordinary area (header, host-owned control page, one
 * ring per guest CPU, descriptors) whose sub-buffers are the kernel's
 * pages as the kernel wrote them; hvt_rb_put_page() (the writer core)
 * commits each with the same stores and barriers as a page switch, so the
 * host reads it with its one page reader, and counts losses exactly from
 * the descriptors.
 *
 * Nothing is lost silently:
 *   - the kernel's overwrites: a page read after them carries
 *     RB_MISSED_EVENTS, with the count stored after its data when it had
 *     room (RB_MISSED_STORED); without room the count is the increase of
 *     the CPU's overrun counter since what was accounted, read right
 *     after the page (from the meta page, which the swap refreshed, with
 *     the mmap ABI; from per_cpu/cpuN/stats with read());
 *   - the kernel's drops ("dropped events" in the same file, events the
 *     ring refused) are read with it, and at least once a second;
 *   - the agent never drops a page it read: the section is in consume
 *     mode, and while the host has not freed a slot the agent keeps the
 *     page and reads no more from that CPU, so the kernel's ring (in
 *     overwrite mode) overwrites its oldest pages and counts them as
 *     above.
 * Every count goes into the next committed page's descriptor
 * (lost_before), which the host reports as a LOST line before that page's
 * first event.  A page the walker rejects (never seen from a kernel) is
 * logged, and the events it walks up to the bad item, plus one, are
 * counted lost with the next page (a lower bound; the log says so).
 *
 * One thread of its own (the agent's poll() loop stays as it is), started
 * after the area is formatted; it takes every CPU's pages without
 * blocking, through the ring-buffer mmap ABI where the kernel has it
 * (6.10+: GET_READER swaps, one copy from the kernel's page into the
 * section) or read() (two copies), and sleeps 10 ms when a round moved
 * nothing.  The agent's threads are left
 * out of the instance's events (set_event_notrace_pid): its reads would
 * otherwise record syscall events for ever.  On SIGTERM it drains what
 * the kernel holds (waiting up to 5 s for the host to free slots), marks
 * the section's header HVT_STATE_STOPPED and stops, before the agent
 * tells the host it is leaving.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <hvtrace/abi.h>
#include <hvtrace/page.h>
#include <hvtrace/ring_buffer.h>

#include "agent.h"

#define KC_IDLE_NS  10000000L /* sleep when a round moved nothing */
#define KC_STATS_MS 1000      /* drops checked at least this often */
#define KC_DRAIN_MS 5000      /* at stop: wait this long for room */

struct kc_cpu {
	struct hvt_rb_cpu cb;
	int fd;		      /* trace_pipe_raw, O_NONBLOCK */
	int stats_fd;	      /* stats */
	bool pending;	      /* page[] holds a page the ring refused */
	uint32_t len;	      /* bytes of it read */
	uint64_t carry;	      /* lost events for the next page */
	uint64_t overrun_acc; /* kernel overruns accounted */
	uint64_t dropped_acc; /* kernel drops accounted */
	uint64_t stats_ms;    /* last stats read */
	uint64_t pages, lost, bad;
	uint64_t gaps_page, gaps_stats; /* overwrites seen, by source */
	/* The ring-buffer mmap ABI (6.10+), when the kernel has it. */
	const struct hvt_trace_buffer_meta *meta;
	size_t meta_len;
	const uint8_t *data; /* the kernel's sub-buffers, read-only */
	size_t data_len;
	uint32_t nr_subbufs;
	uint32_t rid;  /* the reader page copied from last */
	uint32_t rpos; /* data bytes of it copied */
	uint8_t *page;
};

struct kcopy {
	const char *dir; /* the instance (instances/hvt) */
	uint32_t nr_cpus, subbuf_size;
	uint8_t *sec; /* the section, mapped read-write */
	uint64_t sec_size;
	struct kc_cpu *cpus;
	pthread_t thread;
	bool running;
	volatile int stop;
};

static struct kcopy kc_state;

/*
 * A small tracefs file of the instance: read into @buf (NUL-terminated),
 * or, with @write, @buf written to it.  0 or -errno.
 */
static int kc_file(const char *dir, const char *name, char *buf, size_t size,
		   bool write_it)
{
	char path[512];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, (write_it ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write_it ? write(fd, buf, strlen(buf)) : read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	if (!write_it)
		buf[n] = '\0';
	return 0;
}

/* The kernel's CPUs with a per_cpu folder (0..n-1) and its sub-buffer
 * size. */
static int kc_probe(struct kcopy *k)
{
	char path[512], buf[64];
	uint32_t n = 0;
	long kb;

	while (n < HVT_ABI_MAX_CPUS) {
		snprintf(path, sizeof(path), "%s/per_cpu/cpu%u/trace_pipe_raw",
			 k->dir, n);
		if (access(path, R_OK))
			break;
		n++;
	}
	if (!n) {
		agent_log("kernel copy: %s/per_cpu/cpu0/trace_pipe_raw cannot "
			  "be read: is %s a tracing instance, with tracefs "
			  "mounted?",
			  k->dir, k->dir);
		return -ENOENT;
	}
	k->nr_cpus = n;
	k->subbuf_size = (uint32_t)sysconf(_SC_PAGESIZE);
	/* 6.8 and later can change it per instance. */
	if (!kc_file(k->dir, "buffer_subbuf_size_kb", buf, sizeof(buf),
		     false)) {
		kb = strtol(buf, NULL, 10);
		if (kb > 0 && kb <= 64)
			k->subbuf_size = (uint32_t)kb * 1024;
	}
	if (k->subbuf_size < HVT_ABI_MIN_SUBBUF_SIZE ||
	    k->subbuf_size > HVT_ABI_MAX_SUBBUF_SIZE ||
	    (k->subbuf_size & (k->subbuf_size - 1))) {
		agent_log("kernel copy: the kernel's sub-buffers are %u bytes; "
			  "the area takes powers of two in 4K..64K",
			  k->subbuf_size);
		return -EINVAL;
	}
	return 0;
}

int kcopy_format(struct agent *ag, void *mem, uint64_t size)
{
	struct kcopy *k = &kc_state;
	struct hvtg_format f;
	char buf[256];
	uint64_t ksize;
	int ret;

	k->dir = ag->kcopy_dir;
	ret = kc_probe(k);
	if (ret)
		return ret;
	/*
	 * The instance's clock must be the agent's (mono) for the host to put
	 * its pages on the user events' timeline; setting it empties the
	 * ring, which is why it is done now, before anything runs.
	 */
	if (!kc_file(k->dir, "trace_clock", buf, sizeof(buf), false) &&
	    !strstr(buf, "[mono]")) {
		strcpy(buf, "mono");
		ret = kc_file(k->dir, "trace_clock", buf, sizeof(buf), true);
		if (ret) {
			agent_log("kernel copy: cannot set %s/trace_clock to "
				  "mono: %s",
				  k->dir, strerror(-ret));
			return ret;
		}
	}
	/* Half the BAR, whole pages. */
	ksize = (size / 2) & ~(uint64_t)(HVT_AREA_ALIGN - 1);
	memset(&f, 0, sizeof(f));
	f.nr_cpus = k->nr_cpus;
	f.subbuf_size = k->subbuf_size;
	f.mode = HVT_MODE_CONSUME;
	f.clock_id = HVT_CLOCK_MONO_NS;
	f.writer_kind = HVT_WRITER_GUEST_KERNEL;
	f.name = "guest-kernel";
	ret = hvtg_area_format((uint8_t *)mem + (size - ksize), ksize, &f);
	if (ret) {
		agent_log("kernel copy: cannot format the kernel section "
			  "(%llu bytes at %llu): %s",
			  (unsigned long long)ksize,
			  (unsigned long long)(size - ksize),
			  hvtg_last_error());
		return ret;
	}
	ag->fmt.kernel_size = ksize;
	k->sec_size = ksize;
	return 0;
}

/* "overrun: N" and "dropped events: N" of a CPU's stats file. */
static int kc_stats(struct kc_cpu *c, uint64_t *overrun, uint64_t *dropped)
{
	char buf[1024], *p;
	ssize_t n;

	n = pread(c->stats_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	if (!strncmp(buf, "overrun: ", 9))
		p = buf + 9;
	else if ((p = strstr(buf, "\noverrun: ")))
		p += 10;
	else
		return -EIO;
	*overrun = strtoull(p, NULL, 10);
	p = strstr(buf, "dropped events: ");
	*dropped = p ? strtoull(p + 16, NULL, 10) : 0;
	return 0;
}

/* What the kernel's counters say was lost since they were accounted; with
 * @overruns false only its drops (its overruns show on a page). */
static void kc_take_stats(struct kc_cpu *c, bool overruns, uint64_t now)
{
	uint64_t ov, dr;

	c->stats_ms = now;
	if (kc_stats(c, &ov, &dr))
		return;
	if (dr > c->dropped_acc) {
		c->carry += dr - c->dropped_acc;
		c->dropped_acc = dr;
	}
	if (overruns && ov > c->overrun_acc) {
		c->carry += ov - c->overrun_acc;
		c->overrun_acc = ov;
	}
}

/* A page just read: the losses it reports go with it. */
static void kc_page_losses(struct kc_cpu *c, uint64_t now)
{
	uint64_t commit, count;
	uint32_t size;

	memcpy(&commit, c->page + HVT_PAGE_COMMIT_OFF, 8);
	if (!(commit & HVT_MISSED_EVENTS))
		return;
	size = (uint32_t)(commit & HVT_COMMIT_SIZE_MASK);
	if ((commit & HVT_MISSED_STORED) &&
	    size + 8 <= c->len - HVT_PAGE_HDR_SIZE) {
		memcpy(&count, c->page + HVT_PAGE_HDR_SIZE + size, 8);
		c->carry += count;
		c->overrun_acc += count;
		c->gaps_page++;
		return;
	}
	/* No room for the count on the page: the overrun counter has it;
	 * with the mmap ABI the meta page's, which the kernel refreshed in
	 * the swap that took this page (closer to it than the stats file). */
	c->gaps_stats++;
	if (c->meta) {
		uint64_t ov = c->meta->overrun;

		if (ov > c->overrun_acc) {
			c->carry += ov - c->overrun_acc;
			c->overrun_acc = ov;
		}
		return;
	}
	kc_take_stats(c, true, now);
}

/* A page the walker refused: its events as far as they walk, plus one,
 * are counted lost (a lower bound). */
static void kc_bad_page(struct kc_cpu *c, uint32_t cpu)
{
	struct hvt_page_iter it;
	uint64_t commit, ts;
	uint32_t size;
	uint64_t n = 1;
	int ret;

	memcpy(&ts, c->page, 8);
	memcpy(&commit, c->page + HVT_PAGE_COMMIT_OFF, 8);
	size = (uint32_t)(commit & HVT_COMMIT_SIZE_MASK);
	if (size > c->len - HVT_PAGE_HDR_SIZE)
		size = c->len - HVT_PAGE_HDR_SIZE;
	hvt_page_iter_init(&it, c->page + HVT_PAGE_HDR_SIZE, size, ts);
	while ((ret = hvt_page_next(&it)) > 0)
		if (ret == HVT_ITEM_DATA)
			n++;
	c->bad++;
	c->carry += n;
	agent_log("kernel copy: CPU %u: a malformed page from the kernel "
		  "(commit 0x%llx); at least %llu events counted lost",
		  cpu, (unsigned long long)commit, (unsigned long long)n);
}

/*
 * Move what CPU @cpu has (at most 64 pages a round, for fairness).
 * Returns the pages moved, or -1 when the section is full.
 */
/*
 * The mmap ABI: map per_cpu/cpuN/trace_pipe_raw (the meta page, then the
 * sub-buffers); without it (before 6.10, or a refusal) the agent reads.
 */
static void kc_map(struct kcopy *k, uint32_t cpu)
{
	struct kc_cpu *c = &k->cpus[cpu];
	const struct hvt_trace_buffer_meta *m;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), len;
	void *p;

	m = mmap(NULL, pg, PROT_READ, MAP_SHARED, c->fd, 0);
	if (m == MAP_FAILED)
		return;
	len = m->meta_page_size;
	if (m->meta_struct_len < sizeof(*m) || len < pg || len % pg ||
	    len > (1u << 20) || m->subbuf_size != k->subbuf_size ||
	    m->nr_subbufs < 2 || m->nr_subbufs > (1u << 20)) {
		munmap((void *)m, pg);
		return;
	}
	c->nr_subbufs = m->nr_subbufs;
	c->data_len = (size_t)c->nr_subbufs * k->subbuf_size;
	munmap((void *)m, pg);
	m = mmap(NULL, len, PROT_READ, MAP_SHARED, c->fd, 0);
	p = mmap(NULL, c->data_len, PROT_READ, MAP_SHARED, c->fd, (off_t)len);
	if (m == MAP_FAILED || p == MAP_FAILED) {
		if (m != MAP_FAILED)
			munmap((void *)m, len);
		if (p != MAP_FAILED)
			munmap(p, c->data_len);
		return;
	}
	c->meta = m;
	c->meta_len = len;
	c->data = p;
	c->rid = UINT32_MAX;
}

/*
 * The next new events through the mmap ABI into c->page: swap in a
 * reader page (TRACE_MMAP_IOCTL_GET_READER), then copy what it holds past
 * what was copied of it before.  A page the writer was still on when it
 * was swapped in grows in place (same id, larger reader.read); its new
 * part becomes a page of its own whose time stamp is the running time at
 * the cut, so the first new event's delta still holds.  1, 0 (nothing
 * new), or -errno.
 */
static int kc_mmap_next(struct kcopy *k, struct kc_cpu *c)
{
	const uint32_t max = k->subbuf_size - HVT_PAGE_HDR_SIZE;
	struct hvt_page_iter it;
	const uint8_t *src;
	uint64_t commit, ts, hdr;
	uint32_t id, read, end;
	int r;

	while (ioctl(c->fd, HVT_TRACE_MMAP_IOCTL_GET_READER) < 0)
		if (errno != EINTR)
			return -errno;
	/* The kernel updated the meta page in the ioctl; nothing races. */
	id = c->meta->reader.id;
	read = c->meta->reader.read;
	if (id >= c->nr_subbufs || read > max)
		return -EPROTO;
	if (id != c->rid) {
		c->rid = id;
		c->rpos = 0;
	}
	if (read <= c->rpos)
		return 0;
	src = c->data + (size_t)id * k->subbuf_size;
	memcpy(&ts, src, 8);
	memcpy(&commit, src + HVT_PAGE_COMMIT_OFF, 8);
	end = read;
	/* The running time at the cut: walk what was copied already. */
	hvt_page_iter_init(&it, src + HVT_PAGE_HDR_SIZE, c->rpos, ts);
	while ((r = hvt_page_next(&it)) > 0)
		;
	if (r < 0 || it.pos != c->rpos)
		return -EPROTO;
	memcpy(c->page, &it.ts, 8);
	hdr = end - c->rpos;
	/* The missed-events flags (and the count after the data) are set
	 * when the page is swapped in: they belong to its first part. */
	if (!c->rpos && (commit & HVT_MISSED_EVENTS)) {
		hdr |= HVT_MISSED_EVENTS;
		if ((commit & HVT_MISSED_STORED) &&
		    (commit & HVT_COMMIT_SIZE_MASK) == end && end + 8 <= max) {
			memcpy(c->page + HVT_PAGE_HDR_SIZE + end,
			       src + HVT_PAGE_HDR_SIZE + end, 8);
			hdr |= HVT_MISSED_STORED;
		}
	}
	memcpy(c->page + HVT_PAGE_COMMIT_OFF, &hdr, 8);
	memcpy(c->page + HVT_PAGE_HDR_SIZE, src + HVT_PAGE_HDR_SIZE + c->rpos,
	       end - c->rpos);
	c->len = k->subbuf_size;
	c->rpos = end;
	return 1;
}

/* The next page of CPU @cpu into c->page: 1, 0 (none now), or -1. */
static int kc_next_page(struct kcopy *k, uint32_t cpu)
{
	struct kc_cpu *c = &k->cpus[cpu];
	ssize_t n;
	int ret;

	if (c->meta) {
		ret = kc_mmap_next(k, c);
		if (ret >= 0)
			return ret;
		/* Not again: read() from here on.  The kernel consumed
		 * only what the last ioctl reported, which was copied. */
		agent_log("kernel copy: CPU %u: the mmap ABI failed (%s); "
			  "reading from here on",
			  cpu, strerror(-ret));
		munmap((void *)c->meta, c->meta_len);
		munmap((void *)c->data, c->data_len);
		c->meta = NULL;
	}
	for (;;) {
		n = read(c->fd, c->page, k->subbuf_size);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		if (n < 0) {
			agent_log("kernel copy: CPU %u: read: %s", cpu,
				  strerror(errno));
			return -1;
		}
		if (n == 0)
			return 0;
		if ((size_t)n >= HVT_PAGE_HDR_SIZE)
			break; /* trace_pipe_raw gives pages */
	}
	c->len = (uint32_t)n;
	return 1;
}

static int kc_cpu_round(struct kcopy *k, uint32_t cpu, uint64_t now)
{
	struct kc_cpu *c = &k->cpus[cpu];
	int moved = 0, ret;

	while (moved < 64) {
		if (!c->pending) {
			ret = kc_next_page(k, cpu);
			if (ret < 0)
				return moved;
			if (!ret)
				break;
			c->pending = true;
			kc_page_losses(c, now);
		}
		ret = hvt_rb_put_page(&c->cb, c->page, c->len, c->carry);
		if (ret == -HVT_ENOSPC)
			return -1; /* the host is behind: keep the page */
		c->pending = false;
		if (ret == -HVT_ENODATA)
			continue; /* no event: the loss waits */
		if (ret) {
			kc_bad_page(c, cpu);
			continue;
		}
		c->lost += c->carry;
		c->carry = 0;
		c->pages++;
		moved++;
	}
	if (now - c->stats_ms >= KC_STATS_MS)
		kc_take_stats(c, false, now);
	return moved;
}

/*
 * Leave the agent's own threads out of the instance's events: its reads of
 * trace_pipe_raw are system calls, and with syscall events enabled each
 * read would record events that the next read copies, for ever.
 */
static void kc_notrace_self(struct kcopy *k)
{
	char path[512], buf[64];
	int fd, n;

	snprintf(path, sizeof(path), "%s/set_event_notrace_pid", k->dir);
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0) {
		agent_log("kernel copy: %s: %s; the agent's own system calls "
			  "are recorded too (a kernel before 5.9)",
			  path, strerror(errno));
		return;
	}
	n = snprintf(buf, sizeof(buf), "%d %ld\n", (int)getpid(),
		     (long)gettid());
	if (write(fd, buf, (size_t)n) != n)
		agent_log("kernel copy: cannot leave the agent out of %s: %s",
			  path, strerror(errno));
	close(fd);
}

static void *kc_thread(void *arg)
{
	struct kcopy *k = arg;
	uint64_t drain_until = 0;
	sigset_t all;

	/* Signals are the main loop's (its signalfd). */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	kc_notrace_self(k);
	for (;;) {
		uint64_t now = agent_now_ms();
		bool full = false;
		int moved = 0, r;
		uint32_t cpu;

		for (cpu = 0; cpu < k->nr_cpus; cpu++) {
			r = kc_cpu_round(k, cpu, now);
			if (r < 0)
				full = true;
			else
				moved += r;
		}
		if (k->stop) {
			/* Draining: until nothing is left, or the host has
			 * left us full for KC_DRAIN_MS. */
			if (!drain_until)
				drain_until = now + KC_DRAIN_MS;
			if ((!moved && !full) || now >= drain_until)
				break;
		}
		if (!moved) {
			struct timespec ts = {0, KC_IDLE_NS};

			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

int kcopy_start(struct agent *ag)
{
	struct kcopy *k = &kc_state;
	uint8_t *area;
	uint32_t cpu;
	char path[512];
	int ret;

	if (!k->sec_size)
		return 0;
	/* The section: mapped read-write at its offset in the BAR. */
	area = mmap(NULL, k->sec_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		    ag->area_fd, (off_t)(ag->area_size - k->sec_size));
	if (area == MAP_FAILED) {
		ret = -errno;
		agent_log("kernel copy: cannot map the kernel section: %s",
			  strerror(-ret));
		return ret;
	}
	k->sec = area;
	k->cpus = calloc(k->nr_cpus, sizeof(*k->cpus));
	if (!k->cpus)
		return -ENOMEM;
	for (cpu = 0; cpu < k->nr_cpus; cpu++) {
		struct kc_cpu *c = &k->cpus[cpu];
		uint64_t ov, dr;

		c->fd = c->stats_fd = -1;
		c->page = malloc(k->subbuf_size);
		if (!c->page)
			return -ENOMEM;
		ret = hvt_area_cpu(area, k->sec_size, cpu, &c->cb);
		if (ret) {
			agent_log("kernel copy: CPU %u of the kernel section: "
				  "%d",
				  cpu, ret);
			return -EINVAL;
		}
		snprintf(path, sizeof(path), "%s/per_cpu/cpu%u/trace_pipe_raw",
			 k->dir, cpu);
		c->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		snprintf(path, sizeof(path), "%s/per_cpu/cpu%u/stats", k->dir,
			 cpu);
		c->stats_fd = open(path, O_RDONLY | O_CLOEXEC);
		if (c->fd >= 0 && !getenv("HVT_KCOPY_READ"))
			kc_map(k, cpu);
		if (c->fd < 0 || c->stats_fd < 0) {
			ret = -errno;
			agent_log("kernel copy: cannot open %s/per_cpu/cpu%u: "
				  "%s",
				  k->dir, cpu, strerror(-ret));
			return ret;
		}
		/* What the kernel lost before we started is not ours to
		 * report: the section starts now. */
		if (!kc_stats(c, &ov, &dr)) {
			c->overrun_acc = ov;
			c->dropped_acc = dr;
		}
	}
	ret = pthread_create(&k->thread, NULL, kc_thread, k);
	if (ret) {
		agent_log("kernel copy: cannot start its thread: %s",
			  strerror(ret));
		return -ret;
	}
	k->running = true;
	agent_log("kernel copy: %s, %u CPUs, sub-buffers of %u bytes, into "
		  "a section of %llu bytes, through %s",
		  k->dir, k->nr_cpus, k->subbuf_size,
		  (unsigned long long)k->sec_size,
		  k->cpus[0].meta ? "the ring-buffer mmap ABI" : "read()");
	return 0;
}

void kcopy_stop(struct agent *ag)
{
	struct kcopy *k = &kc_state;
	uint32_t cpu;

	(void)ag;
	if (!k->running)
		return;
	k->stop = 1;
	pthread_join(k->thread, NULL);
	k->running = false;
	/* Every page is committed: say the writer finished, so a host
	 * reader drains the section and ends.  Release: pairs with the
	 * host's acquire fence after it saw the state
	 * (hvt_rs_kring_finished()). */
	__atomic_store_n(&((struct hvt_area_header *)k->sec)->state,
			 HVT_STATE_STOPPED, __ATOMIC_RELEASE);
	for (cpu = 0; cpu < k->nr_cpus; cpu++) {
		struct kc_cpu *c = &k->cpus[cpu];

		agent_log("kernel copy: CPU %u: %llu pages, %llu events "
			  "reported lost (overwrites: %llu counted on the "
			  "page, %llu from the overrun counter)%s%s",
			  cpu, (unsigned long long)c->pages,
			  (unsigned long long)c->lost,
			  (unsigned long long)c->gaps_page,
			  (unsigned long long)c->gaps_stats,
			  c->pending || c->carry ? ", and some left behind: "
						   "the host stopped reading"
						 : "",
			  c->bad ? ", malformed pages seen" : "");
	}
}
