/* SPDX-License-Identifier: MIT */
/*
 * Oversubscribed writer stress for libhvtrace-guest, shared by
 * guest_stress_consume.c and guest_stress_overwrite.c.
 *
 * One area in a memfd, one event.  Writers:
 *   - stable processes: 4 threads per CPU in total, each writing a fixed
 *     quota;
 *   - victim processes (2 threads each, 3 alive at a time) SIGKILLed at
 *     random instants (0.3 to 5.3 ms apart) and replaced, until the stable
 *     writers finish; then unkilled victims write what is left of the
 *     event budget (CONFIG_HVT_TEST_STRESS_EVENTS in total).
 * Every writer runs at nice 19; a reader thread of this process (nice 0)
 * consumes all CPUs concurrently through the host library
 * (hvtrace_cpu_read_page()).
 *
 * Each record carries its writer id, sequence number, length and a
 * checksum over a body derived from both; it is written with
 * hvtg_writev() in one to three pieces, or with hvtg_write() (every other
 * one-piece record), so that both the general plan and the compact one
 * (single-piece appends) run under contention and kills.  Writers
 * publish, in shared
 * memory, the sequence number they are writing ("started") before each
 * write and how many writes returned ("done") after, plus one bit per
 * event that returned -ENOSPC.  A killed writer thread thus leaves at most
 * one event whose fate is unknown: started == done + 1.
 *
 * What is checked, online by the reader:
 *   - no torn record (length, body, checksum, padding, common fields);
 *   - per CPU and writer, sequence numbers strictly increase;
 *   - no duplicate (writer, seq) anywhere;
 *   - no event a writer never started;
 *   - per CPU, timestamps never decrease;
 * and at the end:
 *   - consume mode: every event whose write returned 0 was read exactly
 *     once, no event that returned -ENOSPC was read, and per CPU
 *     read + lost == committed + dropped as the ring reports them, with
 *     read == committed and lost == dropped; over all CPUs, the ring's
 *     counters equal the writers' own counts plus at most one event per
 *     killed writer thread that was in flight;
 *   - overwrite mode: nothing is dropped, every event read was committed,
 *     and per CPU read + lost (overwritten) == committed;
 *   - no buffer wedged: once each killed writer is dead, the stable
 *     writers make progress (a 60 s watchdog fails the test otherwise),
 *     every writer that was not killed completes its quota, and a final
 *     probe event on every CPU commits and is read.
 */
#ifndef GUEST_STRESS_H
#define GUEST_STRESS_H

#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include <hvtrace.h>

#include "guest_harness.h"

#define ST_MAX_WRITERS	8192
#define ST_EV_ID	100
#define ST_EV_BIT	0
#define ST_VICTIMS	3	/* alive at a time */
#define ST_VTHREADS	2	/* threads per victim */
#define ST_VQUOTA	16384	/* most events one victim thread writes */
#define ST_MAX_DYING	64	/* killed victims not reaped yet */
#define ST_PROBE_WID	(ST_MAX_WRITERS - 1)
#define ST_MAX_CPUS	64

struct st_slot {
	uint64_t started;	/* seq + 1 of the write in progress */
	uint64_t done;		/* writes that returned */
	uint64_t committed;
	uint64_t dropped;
	uint64_t bit_off;	/* first bit of this writer's drop bits */
	uint64_t quota;
	uint64_t aborted, stale, cpu_moved;	/* library statistics */
	int32_t tid;
	int32_t error;		/* unexpected return value, 0 if none */
	uint32_t victim;
	uint32_t killed;
};

struct st_shared {
	uint64_t nbits;
	struct st_slot w[ST_MAX_WRITERS];
	uint64_t drop_bits[];
};

struct st_cfg {
	const char *name;
	uint32_t mode;
	uint32_t nr_subbufs;
	int kills;		/* kill victims at random instants */
};

static struct st_shared *sh;
static struct th_area st_area;
static struct hvtrace_area *st_host;
static uint32_t st_ncpu;
static const struct st_cfg *st_cfg;

/* --- records ---------------------------------------------------------- */

struct st_rec_hdr {
	uint32_t wid;
	uint32_t len;		/* record bytes */
	uint64_t seq;
};

static inline uint64_t st_mix(uint64_t wid, uint64_t seq)
{
	uint64_t x = (wid << 40) ^ seq ^ 0x9e3779b97f4a7c15ull;

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 29;
	return x;
}

/* 20..96 bytes: header, body, checksum. */
static inline uint32_t st_rec_len(uint32_t wid, uint64_t seq)
{
	return 20 + (uint32_t)(st_mix(wid, seq) % 77);
}

static inline uint32_t st_csum(const uint8_t *p, uint32_t n)
{
	uint32_t h = 2166136261u, i;

	for (i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

static inline void st_rec_build(uint8_t *buf, uint32_t wid, uint64_t seq)
{
	struct st_rec_hdr h = { wid, st_rec_len(wid, seq), seq };
	uint64_t m = st_mix(wid, seq);
	uint32_t i, c;

	memcpy(buf, &h, sizeof(h));
	for (i = 16; i < h.len - 4; i++)
		buf[i] = (uint8_t)((m >> (i % 8 * 8)) + i);
	c = st_csum(buf, h.len - 4);
	memcpy(buf + h.len - 4, &c, 4);
}

/* Check a record read back; returns a description of what is wrong. */
static inline const char *st_rec_check(const uint8_t *p, uint32_t plen,
				       struct st_rec_hdr *h)
{
	uint8_t want[128];
	uint32_t i;

	if (plen < 20 || plen > 96)
		return "record length out of range";
	memcpy(h, p, sizeof(*h));
	if (h->wid >= ST_MAX_WRITERS)
		return "writer id out of range";
	if (h->len != st_rec_len(h->wid, h->seq) ||
	    ((h->len + 3) & ~3u) != plen)
		return "record length does not match its writer and seq";
	st_rec_build(want, h->wid, h->seq);
	if (memcmp(want, p, h->len))
		return "record body or checksum differs (torn record)";
	for (i = h->len; i < plen; i++)
		if (p[i])
			return "record padding not zero";
	return NULL;
}

static inline int st_bit(const uint64_t *bits, uint64_t i)
{
	return (bits[i / 64] >> (i % 64)) & 1;
}

/* --- writers ------------------------------------------------------------ */

struct st_wctx {
	struct hvtg_event *ev;
	uint32_t wid;
};

static void *st_writer_thread(void *p)
{
	struct st_wctx *c = p;
	struct st_slot *s = &sh->w[c->wid];
	struct hvtg_thread_stats ts;
	uint8_t buf[128];
	uint64_t seq;
	int ret;

	__atomic_store_n(&s->tid, (int32_t)syscall(SYS_gettid),
			 __ATOMIC_RELEASE);
	for (seq = 0; seq < s->quota; seq++) {
		struct iovec iov[3];
		uint32_t len = st_rec_len(c->wid, seq), a, b;
		int n = 1 + (int)(seq % 3);

		st_rec_build(buf, c->wid, seq);
		/* Split at arbitrary points. */
		a = (uint32_t)(st_mix(seq, c->wid) % len);
		b = a + (uint32_t)(st_mix(c->wid, ~seq) % (len - a + 1));
		if (n == 1) {
			iov[0] = (struct iovec){ buf, len };
		} else if (n == 2) {
			iov[0] = (struct iovec){ buf, a };
			iov[1] = (struct iovec){ buf + a, len - a };
		} else {
			iov[0] = (struct iovec){ buf, a };
			iov[1] = (struct iovec){ buf + a, b - a };
			iov[2] = (struct iovec){ buf + b, len - b };
		}
		__atomic_store_n(&s->started, seq + 1, __ATOMIC_RELAXED);
		if (n == 1 && (seq / 3) % 2)
			ret = hvtg_write(c->ev, buf, len);
		else
			ret = hvtg_writev(c->ev, iov, n);
		if (ret == -ENOSPC) {
			__atomic_fetch_or(&sh->drop_bits[(s->bit_off + seq) /
							 64],
					  1ull << ((s->bit_off + seq) % 64),
					  __ATOMIC_RELAXED);
			s->dropped++;
		} else if (ret == 0) {
			s->committed++;
		} else {
			s->error = ret;
			break;
		}
		__atomic_store_n(&s->done, seq + 1, __ATOMIC_RELEASE);
	}
	hvtg_get_thread_stats(&ts);
	s->aborted = ts.aborted;
	s->stale = ts.stale;
	s->cpu_moved = ts.cpu_moved;
	return NULL;
}

/* A writer process: its own mapping of the area, @n threads. */
static void st_writer_process(uint32_t first_wid, int n)
{
	static struct hvtg_event ev = HVTG_EVENT_INIT;
	struct hvtg_area_fds fds = { .area_fd = st_area.fd, .ctrl_fd = -1 };
	struct st_wctx ctx[64];
	pthread_t th[64];
	struct hvtg_area *a;
	int i;

	if (setpriority(PRIO_PROCESS, 0, 19))
		_exit(3);
	if (hvtg_area_open_fds(&fds, &a) || hvtg_event_bind(a, &ev, ST_EV_ID,
							     ST_EV_BIT))
		_exit(4);
	for (i = 0; i < n; i++) {
		ctx[i].ev = &ev;
		ctx[i].wid = first_wid + (uint32_t)i;
		if (pthread_create(&th[i], NULL, st_writer_thread, &ctx[i]))
			_exit(5);
	}
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	_exit(0);
}

/* --- reader ------------------------------------------------------------- */

struct st_reader {
	pthread_t th;
	volatile int writers_done;
	uint64_t *seen;			/* bit per (writer, seq) */
	int64_t *last;			/* [cpu][wid] last seq read */
	uint64_t read[ST_MAX_CPUS];
	uint64_t lost[ST_MAX_CPUS];
	uint64_t last_ts[ST_MAX_CPUS];
	uint64_t pages;
	uint64_t probe_cpu_mask;
	char fail[256];
};

static struct st_reader rd;

static void st_read_page(uint32_t cpu, const uint8_t *page,
			 const struct hvtrace_page_info *info)
{
	struct hvt_page_iter it;
	int ret;

	rd.lost[cpu] += info->lost_events;
	hvt_page_iter_init(&it, page + HVT_PAGE_HDR_SIZE, info->size,
			   info->first_ts);
	while ((ret = hvt_page_next(&it)) > 0) {
		const struct hvt_common_fields *c;
		struct st_rec_hdr h;
		struct st_slot *s;
		const char *why;
		uint64_t bit;

		if (ret != HVT_ITEM_DATA)
			continue;
		if (it.ts < rd.last_ts[cpu])
			t_fail("cpu %u: timestamp went back from %llu to %llu",
			       cpu, (unsigned long long)rd.last_ts[cpu],
			       (unsigned long long)it.ts);
		rd.last_ts[cpu] = it.ts;
		if (it.len < sizeof(*c))
			t_fail("cpu %u: %u-byte record", cpu, it.len);
		c = (const void *)it.payload;
		why = st_rec_check(it.payload + sizeof(*c),
				   it.len - (uint32_t)sizeof(*c), &h);
		if (why)
			t_fail("cpu %u page %u: %s", cpu, info->seq, why);
		if (c->common_type != ST_EV_ID || c->common_flags ||
		    c->common_preempt_count)
			t_fail("cpu %u: common fields type %u flags %u pc %u",
			       cpu, c->common_type, c->common_flags,
			       c->common_preempt_count);
		s = &sh->w[h.wid];
		if (h.wid == ST_PROBE_WID) {
			if (h.seq != cpu)
				t_fail("probe for cpu %llu read on cpu %u",
				       (unsigned long long)h.seq, cpu);
			rd.probe_cpu_mask |= 1ull << cpu;
			rd.read[cpu]++;
			continue;
		}
		if (!s->quota || h.seq >= __atomic_load_n(&s->started,
							  __ATOMIC_ACQUIRE))
			t_fail("cpu %u: writer %u seq %llu was never started",
			       cpu, h.wid, (unsigned long long)h.seq);
		if (c->common_pid != __atomic_load_n(&s->tid, __ATOMIC_ACQUIRE))
			t_fail("cpu %u: writer %u: common_pid %d, its thread "
			       "is %d",
			       cpu, h.wid, c->common_pid, s->tid);
		if ((int64_t)h.seq <= rd.last[cpu * ST_MAX_WRITERS + h.wid])
			t_fail("cpu %u: writer %u seq %llu after seq %lld",
			       cpu, h.wid, (unsigned long long)h.seq,
			       (long long)rd.last[cpu * ST_MAX_WRITERS +
						  h.wid]);
		rd.last[cpu * ST_MAX_WRITERS + h.wid] = (int64_t)h.seq;
		bit = s->bit_off + h.seq;
		if (st_bit(rd.seen, bit))
			t_fail("writer %u seq %llu read twice", h.wid,
			       (unsigned long long)h.seq);
		rd.seen[bit / 64] |= 1ull << (bit % 64);
		rd.read[cpu]++;
	}
	if (ret < 0)
		t_fail("cpu %u: malformed page from the reader", cpu);
}

static void *st_reader_thread(void *arg)
{
	uint8_t *page = malloc(st_area.subbuf_size);
	struct hvtrace_page_info info;
	int idle_passes = 0, ret;
	uint32_t cpu, budget;

	if (!page)
		t_fail("no memory");
	for (;;) {
		int any = 0, done = rd.writers_done;

		for (cpu = 0; cpu < st_ncpu; cpu++) {
			for (budget = 0; budget < 256; budget++) {
				ret = hvtrace_cpu_read_page(st_host, (int)cpu,
							    page,
							    st_area.subbuf_size,
							    &info);
				if (ret < 0)
					t_fail("hvtrace_cpu_read_page: %d (%s)",
					       ret, hvtrace_last_error());
				if (ret == 0)
					break;
				st_read_page(cpu, page, &info);
				rd.pages++;
				any = 1;
			}
		}
		if (any) {
			idle_passes = 0;
			continue;
		}
		/* Writers finished before this pass began: two empty passes
		 * in a row mean everything was read. */
		if (done && ++idle_passes >= 2)
			break;
		usleep(50);
	}
	free(page);
	return NULL;
}

/* --- orchestration ------------------------------------------------------- */

static uint64_t st_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t st_rng = 0x853c49e6748fea9bull;

static uint64_t st_rand(void)
{
	st_rng ^= st_rng << 13;
	st_rng ^= st_rng >> 7;
	st_rng ^= st_rng << 17;
	return st_rng;
}

static uint32_t st_next_wid;
static uint64_t st_next_bit;
static uint64_t st_budget;		/* events not yet given to a writer */

/* Give @n writers a quota each (0 if none left); returns the first id. */
static uint32_t st_alloc_writers(int n, uint64_t quota, int victim)
{
	uint32_t first = st_next_wid;
	int i;

	if (st_next_wid + (uint32_t)n >= ST_PROBE_WID)
		return UINT32_MAX;
	for (i = 0; i < n; i++) {
		struct st_slot *s = &sh->w[st_next_wid++];
		uint64_t q = quota < st_budget ? quota : st_budget;

		if (st_next_bit + q > sh->nbits)
			q = 0;
		s->quota = q;
		s->bit_off = st_next_bit;
		s->victim = (uint32_t)victim;
		st_next_bit += (q + 63) & ~63ull;
		st_budget -= q;
	}
	return first;
}

static pid_t st_spawn(uint32_t first_wid, int n)
{
	pid_t pid = fork();

	if (pid < 0)
		t_fail("fork: %s", strerror(errno));
	if (pid == 0)
		st_writer_process(first_wid, n);
	return pid;
}

struct st_victim {
	pid_t pid;
	uint32_t wid;
};

static uint64_t st_stable_done(uint32_t first, uint32_t n)
{
	uint64_t d = 0;
	uint32_t i;

	for (i = 0; i < n; i++)
		d += __atomic_load_n(&sh->w[first + i].done, __ATOMIC_ACQUIRE);
	return d;
}

static void st_reap(pid_t pid, int killed)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		t_fail("waitpid: %s", strerror(errno));
	if (killed && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		return;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		t_fail("writer process %d ended with status %#x", (int)pid,
		       status);
}

/* Return the unwritten part of a killed victim's quota to the budget. */
static void st_victim_killed(const struct st_victim *v)
{
	int i;

	for (i = 0; i < ST_VTHREADS; i++) {
		struct st_slot *s = &sh->w[v->wid + i];

		s->killed = 1;
		st_budget += s->quota - s->started;
	}
}

/* Reap stable writers that finished; they must have exited cleanly. */
static void st_poll_stable(pid_t *pid, int *left)
{
	int i, status;

	for (i = 0; i < 2; i++) {
		if (!pid[i] || waitpid(pid[i], &status, WNOHANG) != pid[i])
			continue;
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			t_fail("stable writer failed (status %#x)", status);
		pid[i] = 0;
		(*left)--;
	}
}

/* Wait until the stable writers commit more (or have all finished). */
static void st_wait_progress(uint32_t first, uint32_t n, pid_t *pid,
			     int *left, int kills)
{
	uint64_t p0 = st_stable_done(first, n);
	uint64_t deadline = st_now_ns() + 60000000000ull;

	while (*left && st_stable_done(first, n) == p0) {
		if (st_now_ns() > deadline)
			t_fail("no writer progress for 60 s after kill %d: "
			       "a CPU buffer is wedged",
			       kills);
		usleep(100);
		st_poll_stable(pid, left);
	}
}

static int st_run(const struct st_cfg *cfg)
{
	uint64_t total_events = CONFIG_HVT_TEST_STRESS_EVENTS;
	uint32_t stable_first, nstable, cpu, i;
	struct st_victim vic[ST_VICTIMS], dying[ST_MAX_DYING];
	int ndying = 0;
	pid_t stable_pid[2];
	int nvic = 0, kills = 0, stable_left = 2, k;
	uint64_t t0 = st_now_ns(), t_write, nbits;
	uint64_t committed = 0, dropped = 0, inflight = 0, inflight_seen = 0;
	uint64_t ring_entries = 0, ring_lost = 0, attempted = 0;
	uint64_t aborted = 0, stale = 0, cpu_moved = 0;
	uint64_t probe_drops = 0, probe_base = 0;
	size_t shsize;

	st_cfg = cfg;
	st_ncpu = (uint32_t)th_nr_cpus();
	if (st_ncpu > ST_MAX_CPUS)
		st_ncpu = ST_MAX_CPUS;
	nstable = 4 * st_ncpu;
	if (nstable > 32)
		nstable = 32;

	/* Every writer's region is rounded up to 64 bits; a killed
	 * victim's unused bits are not reused (its budget is). */
	nbits = total_events + ST_MAX_WRITERS * 64ull + 2048ull * ST_VQUOTA;
	shsize = sizeof(struct st_shared) + nbits / 8;
	sh = mmap(NULL, shsize, PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		t_fail("mmap: %s", strerror(errno));
	sh->nbits = nbits;
	rd.seen = calloc(nbits / 64 + 1, 8);
	rd.last = malloc(sizeof(int64_t) * ST_MAX_CPUS * ST_MAX_WRITERS);
	if (!rd.seen || !rd.last)
		t_fail("no memory");
	for (i = 0; i < ST_MAX_CPUS * ST_MAX_WRITERS; i++)
		rd.last[i] = -1;

	th_area_new(&st_area, st_ncpu, cfg->nr_subbufs, 4096, cfg->mode,
		    HVT_CLOCK_COUNTER);
	if (hvtrace_area_open(st_area.path, 0, 0, HVTRACE_OPEN_CONTROL,
			      &st_host))
		t_fail("hvtrace_area_open: %s", hvtrace_last_error());
	t_ok(hvtrace_area_set_event(st_host, ST_EV_BIT, true));
	if (pthread_create(&rd.th, NULL, st_reader_thread, NULL))
		t_fail("pthread_create");

	st_budget = total_events;
	/* Stable writers: half the events, 4 threads per CPU, 2 processes. */
	stable_first = st_alloc_writers((int)nstable,
					total_events / 2 / nstable, 0);
	stable_pid[0] = st_spawn(stable_first, (int)nstable / 2);
	stable_pid[1] = st_spawn(stable_first + nstable / 2,
				 (int)(nstable - nstable / 2));

	/* Phase 1: victims, killed at random instants. */
	while (stable_left) {
		int status;

		while (nvic < ST_VICTIMS && st_budget) {
			uint32_t w = st_alloc_writers(ST_VTHREADS, ST_VQUOTA,
						      1);

			if (w == UINT32_MAX)
				break;
			vic[nvic].wid = w;
			vic[nvic].pid = st_spawn(w, ST_VTHREADS);
			nvic++;
		}
		usleep(300 + (useconds_t)(st_rand() % 5000));
		if (nvic && cfg->kills) {
			k = (int)(st_rand() % (uint64_t)nvic);
			kill(vic[k].pid, SIGKILL);
			/* Reaped below, when it is gone: a nice-19 process
			 * may take a while to be scheduled and die. */
			if (ndying == ST_MAX_DYING) {
				st_reap(dying[0].pid, 1);
				st_victim_killed(&dying[0]);
				st_wait_progress(stable_first, nstable,
						 stable_pid, &stable_left,
						 kills);
				dying[0] = dying[--ndying];
			}
			dying[ndying++] = vic[k];
			vic[k] = vic[--nvic];
			kills++;
		}
		/* Killed victims that are gone: their budget comes back,
		 * and the stable writers must still make progress (no CPU
		 * buffer wedged by the dead writer). */
		for (k = 0; k < ndying; k++) {
			if (waitpid(dying[k].pid, &status, WNOHANG) !=
			    dying[k].pid)
				continue;
			if (!WIFSIGNALED(status) &&
			    (!WIFEXITED(status) || WEXITSTATUS(status)))
				t_fail("victim writer failed (status %#x)",
				       status);
			st_victim_killed(&dying[k]);
			st_wait_progress(stable_first, nstable, stable_pid,
					 &stable_left, kills);
			dying[k--] = dying[--ndying];
		}
		/* Victims that finished on their own. */
		for (k = 0; k < nvic; k++) {
			if (waitpid(vic[k].pid, &status, WNOHANG) ==
			    vic[k].pid) {
				if (!WIFEXITED(status) || WEXITSTATUS(status))
					t_fail("victim writer failed");
				vic[k--] = vic[--nvic];
			}
		}
		st_poll_stable(stable_pid, &stable_left);
	}
	while (ndying) {
		st_reap(dying[0].pid, 1);
		st_victim_killed(&dying[0]);
		dying[0] = dying[--ndying];
	}
	/* Phase 2: the rest of the budget, nobody killed. */
	for (;;) {
		while (nvic < ST_VICTIMS && st_budget) {
			uint32_t w = st_alloc_writers(ST_VTHREADS, ST_VQUOTA,
						      1);

			if (w == UINT32_MAX)
				break;
			vic[nvic].wid = w;
			vic[nvic].pid = st_spawn(w, ST_VTHREADS);
			nvic++;
		}
		if (!nvic)
			break;
		st_reap(vic[0].pid, 0);
		vic[0] = vic[--nvic];
	}
	t_write = st_now_ns();

	/* Probe every CPU: a write still commits and is read. */
	{
		static struct hvtg_event ev = HVTG_EVENT_INIT;
		struct hvtg_thread_stats pst;
		uint8_t buf[128];

		t_ok(hvtg_get_thread_stats(&pst));
		probe_base = pst.dropped;

		t_ok(hvtg_event_bind(st_area.w, &ev, ST_EV_ID, ST_EV_BIT));
		for (cpu = 0; cpu < st_ncpu; cpu++) {
			int ret;

			t_ok(th_pin((int)cpu));
			st_rec_build(buf, ST_PROBE_WID, cpu);
			ret = hvtg_write(&ev, buf,
					 st_rec_len(ST_PROBE_WID, cpu));
			/* Consume mode: retry while the reader makes room. */
			while (ret == -ENOSPC) {
				usleep(1000);
				ret = hvtg_write(&ev, buf,
						 st_rec_len(ST_PROBE_WID, cpu));
			}
			if (ret)
				t_fail("probe write on cpu %u: %d", cpu, ret);
		}
	}
	{
		struct hvtg_thread_stats pst;

		t_ok(hvtg_get_thread_stats(&pst));
		probe_drops = pst.dropped - probe_base;
	}
	rd.writers_done = 1;
	pthread_join(rd.th, NULL);

	/* --- accounting ------------------------------------------------ */
	for (cpu = 0; cpu < st_ncpu; cpu++) {
		struct hvtrace_cpu_stats st;
		uint64_t e = th_entries(&st_area, cpu);
		uint64_t l = th_lost(&st_area, cpu);

		rd.lost[cpu] += hvtrace_cpu_take_trailing_lost(st_host,
							       (int)cpu);
		t_ok(hvtrace_cpu_get_stats(st_host, (int)cpu, &st));
		printf("cpu %u: ring committed %llu dropped %llu; read %llu "
		       "lost %llu (reader errors %llu)\n",
		       cpu, (unsigned long long)e, (unsigned long long)l,
		       (unsigned long long)rd.read[cpu],
		       (unsigned long long)rd.lost[cpu],
		       (unsigned long long)st.errors);
		t_equ(st.errors, 0);
		t_equ(st.read, rd.read[cpu]);
		if (rd.read[cpu] + rd.lost[cpu] != e + l)
			t_fail("cpu %u: read %llu + lost %llu != committed "
			       "%llu + dropped %llu",
			       cpu, (unsigned long long)rd.read[cpu],
			       (unsigned long long)rd.lost[cpu],
			       (unsigned long long)e, (unsigned long long)l);
		if (cfg->mode == HVT_MODE_CONSUME) {
			t_equ(rd.read[cpu], e);
			t_equ(rd.lost[cpu], l);
		} else {
			t_equ(l, 0);
		}
		ring_entries += e;
		ring_lost += l;
	}
	t_equ(rd.probe_cpu_mask, (st_ncpu >= 64 ? ~0ull :
				  (1ull << st_ncpu) - 1));

	for (i = 0; i < st_next_wid; i++) {
		struct st_slot *s = &sh->w[i];
		uint64_t seq;

		if (s->error)
			t_fail("writer %u: write returned %d", i, s->error);
		if (s->started != s->done &&
		    !(s->killed && s->started == s->done + 1))
			t_fail("writer %u: started %llu done %llu (killed %u)",
			       i, (unsigned long long)s->started,
			       (unsigned long long)s->done, s->killed);
		if (!s->killed && s->done != s->quota)
			t_fail("writer %u finished %llu of %llu events", i,
			       (unsigned long long)s->done,
			       (unsigned long long)s->quota);
		for (seq = 0; seq < s->quota; seq++) {
			int seen = st_bit(rd.seen, s->bit_off + seq);
			int drop = st_bit(sh->drop_bits, s->bit_off + seq);

			if (seq >= s->started) {
				if (seen)
					t_fail("writer %u seq %llu read but "
					       "never written",
					       i, (unsigned long long)seq);
			} else if (seq >= s->done) {
				/* In flight when killed: either way. */
				inflight++;
				inflight_seen += (uint64_t)seen;
			} else if (drop) {
				dropped++;
				if (seen)
					t_fail("writer %u seq %llu returned "
					       "-ENOSPC but was read",
					       i, (unsigned long long)seq);
			} else {
				committed++;
				if (!seen && cfg->mode == HVT_MODE_CONSUME)
					t_fail("writer %u seq %llu committed "
					       "but never read",
					       i, (unsigned long long)seq);
			}
		}
		/* The writer's own counters (not updated atomically with
		 * done, so a kill may leave them one ahead). */
		if (s->committed + s->dropped < s->done ||
		    s->committed + s->dropped > s->started)
			t_fail("writer %u: counted %llu + %llu, done %llu",
			       i, (unsigned long long)s->committed,
			       (unsigned long long)s->dropped,
			       (unsigned long long)s->done);
		attempted += s->started;
		aborted += s->aborted;
		stale += s->stale;
		cpu_moved += s->cpu_moved;
	}
	if (cfg->mode == HVT_MODE_CONSUME) {
		/* Probes are counted in the ring, not in the writers. */
		t_equ(ring_entries, committed + inflight_seen + st_ncpu);
		dropped += probe_drops;
		if (ring_lost < dropped ||
		    ring_lost - dropped > inflight - inflight_seen)
			t_fail("ring dropped %llu, writers %llu, %llu killed "
			       "in flight (%llu of them read)",
			       (unsigned long long)ring_lost,
			       (unsigned long long)dropped,
			       (unsigned long long)inflight,
			       (unsigned long long)inflight_seen);
	} else {
		t_equ(dropped, 0);
		if (ring_entries < committed + st_ncpu ||
		    ring_entries - committed - st_ncpu > inflight)
			t_fail("ring committed %llu, writers %llu + %u "
			       "probes, %llu in flight",
			       (unsigned long long)ring_entries,
			       (unsigned long long)committed, st_ncpu,
			       (unsigned long long)inflight);
	}
	printf("%s: %u writer threads (%u stable), %d kills, %llu events "
	       "attempted: %llu committed, %llu dropped, %llu in flight at a "
	       "kill (%llu of them committed and read)\n",
	       cfg->name, st_next_wid, nstable, kills,
	       (unsigned long long)attempted, (unsigned long long)committed,
	       (unsigned long long)dropped, (unsigned long long)inflight,
	       (unsigned long long)inflight_seen);
	printf("%s: reader %llu pages; writers saw %llu kernel aborts, %llu "
	       "stale plans, %llu CPU changes; writing took %.1f s, all %.1f "
	       "s\n",
	       cfg->name, (unsigned long long)rd.pages,
	       (unsigned long long)aborted, (unsigned long long)stale,
	       (unsigned long long)cpu_moved, (double)(t_write - t0) / 1e9,
	       (double)(st_now_ns() - t0) / 1e9);
	if (st_budget)
		t_fail("%llu events of the budget were never written (writer "
		       "ids or drop bits ran out)",
		       (unsigned long long)st_budget);
	t_equ(attempted, total_events);
	hvtrace_area_close(st_host);
	th_area_free(&st_area);
	printf("PASS\n");
	return 0;
}

#endif /* GUEST_STRESS_H */
