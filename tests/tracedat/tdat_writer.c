// SPDX-License-Identifier: MIT
/*
 * A scripted trace-area writer for the trace.dat tests.
 *
 * Formats an area in a file (/dev/shm) with the writer core and writes
 * events into it with the direct API (hvt_rb_write()), following a script
 * of commands given after "--".  Every event it writes or drops is logged,
 * so a test can compare what trace-cmd shows with what was written:
 *
 *   W <cpu> <event> <fields>   committed
 *   D <cpu> <event> <fields>   dropped (ring full, consume mode)
 *   M <i>                      kernel trace_marker "tdat-marker <i>" written
 *
 * <fields> is the text the event's print fmt makes of its values, so it
 * can be compared with trace-cmd's output as is.
 * seq is (cpu << 32) | n, n counting every event of that CPU; it is the
 * value of each event's u64 field (elr, func or id), so every record in
 * the trace names the event it is.
 *
 * Writer kinds: "hyp" writes the hypervisor events (hyp_enter, hyp_exit,
 * host_hcall, selftest in turn); "loopback" writes the built-in
 * hvtrace:selftest event.  Clocks: "mono" (CLOCK_MONOTONIC ns) or "tsc"
 * (the raw x86 TSC at a calibrated frequency: the host must convert).
 *
 * Commands:
 *   wait-control          until a host owns the area and enabled our events
 *   write N               N events on every CPU (CPUs in turn)
 *   write-cpu C N         N events on CPU C
 *   wait-consumed         until the host consumed every CPU (consume mode)
 *   sleep MS
 *   sigstop PID|@FILE, sigcont PID|@FILE
 *   markers N GAP_MS      N times: a kernel marker, then one event on CPU
 *                         i % cpus, GAP_MS apart (clock alignment tests)
 *   unknown C N           N events of an id no format describes, on CPU C
 *   corrupt C             scribble over CPU C's newest finished page
 *   stop                  mark the area STOPPED and exit
 *   die                   exit at once, area left RUNNING
 *   run MS                write continuously for MS ms (0: until killed)
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include <hvtrace/hyp_events.h>
#include <hvtrace/page.h>
#include <hvtrace/ring_buffer.h>

#define MAX_CPUS 16

static struct {
	const char *path;
	const char *marker;
	const char *name;
	uint32_t cpus, subbufs, subbuf_size, mode;
	int kind; /* 0 hyp, 1 loopback */
	int tsc;
	uint64_t tsc_hz;
	void *area;
	uint64_t size;
	struct hvt_rb_cpu cb[MAX_CPUS];
	uint64_t n[MAX_CPUS];
	FILE *log;
	volatile int quit;
} w = {
	.cpus = 2,
	.subbufs = 8,
	.subbuf_size = 4096,
	.mode = HVT_MODE_CONSUME,
	.name = "tdatw",
};

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "tdat_writer: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(2);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ts(void)
{
#if defined(__x86_64__)
	if (w.tsc)
		return __rdtsc();
#endif
	return mono_ns();
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

#if defined(__x86_64__)
static void tsc_point(uint64_t *t, uint64_t *c)
{
	uint64_t best = UINT64_MAX;

	for (int k = 0; k < 16; k++) {
		uint64_t a = mono_ns(), x, b;

		_mm_lfence();
		x = __rdtsc();
		_mm_lfence();
		b = mono_ns();
		if (b - a < best) {
			best = b - a;
			*t = a + (b - a) / 2;
			*c = x;
		}
	}
}
#endif

static void calibrate_tsc(void)
{
#if defined(__x86_64__)
	/* Each end is a TSC reading between two clock reads, the tightest
	 * of a few tries: a preemption between one clock read and the TSC
	 * read would skew the declared rate by its length. */
	uint64_t t0 = 0, c0 = 0, t1 = 0, c1 = 0;

	tsc_point(&t0, &c0);
	sleep_ms(100);
	tsc_point(&t1, &c1);
	w.tsc_hz = (uint64_t)((double)(c1 - c0) * 1e9 / (double)(t1 - t0));
#else
	die("the tsc clock needs x86_64");
#endif
}

static const struct hvt_control *ctrl(void)
{
	return (const struct hvt_control *)((uint8_t *)w.area +
					    HVT_CONTROL_OFFSET);
}

static struct hvt_area_header *hdr(void)
{
	return w.area;
}

/*
 * Answer the host's time-sync requests.  The clock is read after the
 * request is seen (and, for the TSC, after the load that saw it: lfence),
 * never before: a reading taken before the host posted its request, then
 * held while this thread was preempted, is not inside the host's bracket,
 * and the model fitted to it is off by the delay while stating a tight
 * bound (tracedat/multi put events milliseconds across a kernel marker).
 */
static void *sync_thread(void *arg)
{
	uint64_t req;

	(void)arg;
	while (!w.quit) {
		if (hvt_area_sync_pending(w.area, &req)) {
#if defined(__x86_64__)
			_mm_lfence();
#endif
			hvt_area_sync_answer(w.area, req, now_ts());
		}
		usleep(50);
	}
	return NULL;
}

/* Write the next event of @cpu; returns 0 or -HVT_ENOSPC. */
static int write_one(uint32_t cpu)
{
	uint64_t n = w.n[cpu]++, seq = ((uint64_t)cpu << 32) | n;
	struct hvt_common_fields c = {0};
	struct hvt_iovec iov;
	const char *ev;
	int ret;
	union {
		struct hvt_hyp_rec_hyp_enter enter;
		struct hvt_hyp_rec_hyp_exit exit;
		struct hvt_hyp_rec_host_hcall hcall;
		struct hvt_hyp_rec_selftest self;
		struct {
			struct hvt_common_fields common;
			uint64_t id;
		} lb;
	} r;

	memset(&r, 0, sizeof(r));
	if (w.kind == 1) {
		c.common_type = 0xe000;
		c.common_pid = getpid();
		r.lb.id = seq;
		iov.base = &r.lb.id;
		iov.len = 8;
		ev = "selftest";
	} else {
		switch (n % 4) {
		case 0:
			c.common_type = HVT_HYP_ID_hyp_enter;
			r.enter.ec = (uint32_t)(n & 0x3f);
			r.enter.iss = (uint32_t)(n & 0xffffff);
			r.enter.elr = seq;
			iov.base = (uint8_t *)&r.enter + sizeof(c);
			iov.len = sizeof(r.enter) - sizeof(c);
			ev = "hyp_enter";
			break;
		case 1:
			c.common_type = HVT_HYP_ID_hyp_exit;
			r.exit.elr = seq;
			iov.base = (uint8_t *)&r.exit + sizeof(c);
			iov.len = sizeof(r.exit) - sizeof(c);
			ev = "hyp_exit";
			break;
		case 2:
			c.common_type = HVT_HYP_ID_host_hcall;
			r.hcall.func = seq;
			r.hcall.a0 = n * 2;
			r.hcall.a1 = n * 3;
			r.hcall.a2 = n * 5;
			r.hcall.ret = -(int64_t)n;
			iov.base = (uint8_t *)&r.hcall + sizeof(c);
			iov.len = sizeof(r.hcall) - sizeof(c);
			ev = "host_hcall";
			break;
		default:
			c.common_type = HVT_HYP_ID_selftest;
			r.self.id = seq;
			iov.base = (uint8_t *)&r.self + sizeof(c);
			iov.len = sizeof(r.self) - sizeof(c);
			ev = "selftest";
			break;
		}
	}
	ret = hvt_rb_write(&w.cb[cpu], now_ts(), &c, &iov, 1);
	if (ret && ret != -HVT_ENOSPC)
		die("hvt_rb_write: %d", ret);
	/* The fields as the event's print fmt shows them. */
	fprintf(w.log, "%c %u %s ", ret ? 'D' : 'W', cpu, ev);
	if (w.kind == 1 || n % 4 == 3)
		fprintf(w.log, "id=%llu\n", (unsigned long long)seq);
	else if (n % 4 == 0)
		fprintf(w.log, "ec=0x%x iss=0x%x elr=0x%llx\n", r.enter.ec,
			r.enter.iss, (unsigned long long)seq);
	else if (n % 4 == 1)
		fprintf(w.log, "elr=0x%llx\n", (unsigned long long)seq);
	else
		fprintf(w.log,
			"func=0x%llx a0=0x%llx a1=0x%llx a2=0x%llx "
			"ret=%lld\n",
			(unsigned long long)seq, (unsigned long long)r.hcall.a0,
			(unsigned long long)r.hcall.a1,
			(unsigned long long)r.hcall.a2, (long long)r.hcall.ret);
	return ret;
}

static bool our_events_enabled(void)
{
	/* Pairs with the host's release store of the control magic (its
	 * enable bits are written before it). */
	if (__atomic_load_n(&ctrl()->magic, __ATOMIC_ACQUIRE) !=
	    HVT_CONTROL_MAGIC)
		return false;
	if (w.kind == 1)
		return hvt_event_enabled(ctrl(), 0);
	return hvt_event_enabled(ctrl(), HVT_HYP_EVENT_hyp_enter) &&
	       hvt_event_enabled(ctrl(), HVT_HYP_EVENT_selftest);
}

static void wait_for(bool (*cond)(void), const char *what)
{
	uint64_t end = mono_ns() + 30000000000ULL;

	while (!cond()) {
		if (mono_ns() > end)
			die("timed out waiting for %s", what);
		sleep_ms(1);
	}
}

static bool all_consumed(void)
{
	uint32_t c;

	for (c = 0; c < w.cpus; c++) {
		const struct hvt_cpu_meta *m = w.cb[c].meta;
		/* Our own commit word: this thread wrote it (no pair). */
		uint64_t word = __atomic_load_n(&m->write, __ATOMIC_ACQUIRE);
		/* Pairs with the host's release store of consumer[]. */
		uint32_t cons =
			__atomic_load_n(&ctrl()->consumer[c], __ATOMIC_ACQUIRE);

		if (cons != HVT_WORD_SEQ(word))
			return false;
	}
	return true;
}

static pid_t parse_pid(const char *s)
{
	char buf[32];
	FILE *f;

	if (s[0] != '@')
		return (pid_t)atoi(s);
	f = fopen(s + 1, "r");
	if (!f || !fgets(buf, sizeof(buf), f))
		die("cannot read a pid from %s", s + 1);
	fclose(f);
	return (pid_t)atoi(buf);
}

static void marker(unsigned int i)
{
	char text[64];
	int fd, n;

	if (!w.marker)
		die("markers need --marker PATH (a trace_marker file)");
	fd = open(w.marker, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		die("cannot open %s: %s", w.marker, strerror(errno));
	n = snprintf(text, sizeof(text), "tdat-marker %u", i);
	if (write(fd, text, (size_t)n) != n)
		die("write %s: %s", w.marker, strerror(errno));
	close(fd);
	fprintf(w.log, "M %u\n", i);
}

/* Damage the newest finished page of @cpu: an event header that claims
 * more bytes than the page holds. */
static void corrupt(uint32_t cpu)
{
	/* Our own commit word (this thread wrote it): no pair. */
	uint64_t word =
		__atomic_load_n(&w.cb[cpu].meta->write, __ATOMIC_ACQUIRE);
	uint32_t seq = HVT_WORD_SEQ(word) - 1;
	uint8_t *page = w.cb[cpu].pages +
			(uint64_t)(seq & (w.subbufs - 1)) * w.subbuf_size;
	struct hvt_page_iter it;
	uint64_t commit;
	uint32_t bad = 0, n = 0; /* type_len 0 ... */
	int item;

	/* The header of the page's third event. */
	memcpy(&commit, page + HVT_PAGE_COMMIT_OFF, 8);
	hvt_page_iter_init(&it, page + HVT_PAGE_HDR_SIZE,
			   (uint32_t)(commit & HVT_COMMIT_SIZE_MASK), 0);
	while ((item = hvt_page_next(&it)) > 0)
		if (item == HVT_ITEM_DATA && ++n == 3)
			break;
	if (n != 3)
		die("page %u of CPU %u has fewer than 3 events", seq, cpu);
	memcpy(page + HVT_PAGE_HDR_SIZE + it.evt_pos, &bad, 4);
	bad = 0x7fffffff; /* ... with an impossible length */
	memcpy(page + HVT_PAGE_HDR_SIZE + it.evt_pos + 4, &bad, 4);
	fprintf(w.log, "C %u %u\n", cpu, seq);
}

static void usage(void)
{
	die("usage: tdat_writer --area PATH [--cpus N] [--subbufs N] "
	    "[--subbuf-size S] [--mode consume|overwrite] [--kind "
	    "hyp|loopback] "
	    "[--clock mono|tsc] [--name NAME] [--marker PATH] --log FILE -- "
	    "COMMANDS...");
}

int main(int argc, char **argv)
{
	struct hvt_area_params p = {0};
	pthread_t th;
	int i, fd;
	uint32_t c;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--"))
			break;
		if (!v)
			usage();
		if (!strcmp(a, "--area"))
			w.path = v;
		else if (!strcmp(a, "--cpus"))
			w.cpus = (uint32_t)atoi(v);
		else if (!strcmp(a, "--subbufs"))
			w.subbufs = (uint32_t)atoi(v);
		else if (!strcmp(a, "--subbuf-size"))
			w.subbuf_size = (uint32_t)atoi(v);
		else if (!strcmp(a, "--mode"))
			w.mode = !strcmp(v, "overwrite") ? HVT_MODE_OVERWRITE
							 : HVT_MODE_CONSUME;
		else if (!strcmp(a, "--kind"))
			w.kind = !strcmp(v, "loopback");
		else if (!strcmp(a, "--clock"))
			w.tsc = !strcmp(v, "tsc");
		else if (!strcmp(a, "--name"))
			w.name = v;
		else if (!strcmp(a, "--marker"))
			w.marker = v;
		else if (!strcmp(a, "--log")) {
			w.log = fopen(v, "w");
			if (!w.log)
				die("cannot create %s", v);
		} else
			usage();
		i++;
	}
	if (!w.path || !w.log || w.cpus < 1 || w.cpus > MAX_CPUS)
		usage();
	setvbuf(w.log, NULL, _IOLBF, 0);
	if (w.tsc)
		calibrate_tsc();

	w.size = hvt_area_size(w.cpus, w.subbufs, w.subbuf_size);
	fd = open(w.path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)w.size))
		die("cannot create %s: %s", w.path, strerror(errno));
	w.area = mmap(NULL, w.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (w.area == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	close(fd);
	p.area_size = w.size;
	p.nr_cpus = w.cpus;
	p.nr_subbufs = w.subbufs;
	p.subbuf_size = w.subbuf_size;
	p.mode = w.mode;
	p.writer_kind = w.kind ? HVT_WRITER_LOOPBACK : HVT_WRITER_HYP;
	p.clock_id = w.tsc ? HVT_CLOCK_COUNTER : HVT_CLOCK_MONO_NS;
	p.clock_freq_hz = w.tsc ? w.tsc_hz : 0;
	p.writer_pid = (uint32_t)getpid();
	p.name = w.name;
	if (hvt_area_format(w.area, &p))
		die("hvt_area_format failed");
	for (c = 0; c < w.cpus; c++)
		if (hvt_area_cpu(w.area, w.size, c, &w.cb[c]))
			die("hvt_area_cpu %u failed", c);
	if (pthread_create(&th, NULL, sync_thread, NULL))
		die("pthread_create");
	fprintf(w.log, "READY %d\n", getpid());

	for (i++; i < argc; i++) {
		const char *cmd = argv[i];
		const char *a1 = i + 1 < argc ? argv[i + 1] : "0";
		const char *a2 = i + 2 < argc ? argv[i + 2] : "0";

		if (!strcmp(cmd, "wait-control")) {
			wait_for(our_events_enabled, "a host to enable events");
		} else if (!strcmp(cmd, "write")) {
			long k, n = atol(a1);

			for (k = 0; k < n; k++)
				for (c = 0; c < w.cpus; c++)
					write_one(c);
			i++;
		} else if (!strcmp(cmd, "write-cpu")) {
			long k, n = atol(a2);

			c = (uint32_t)atoi(a1);
			if (c >= w.cpus)
				die("no CPU %u", c);
			for (k = 0; k < n; k++)
				write_one(c);
			i += 2;
		} else if (!strcmp(cmd, "wait-consumed")) {
			wait_for(all_consumed, "the host to consume");
		} else if (!strcmp(cmd, "sleep")) {
			sleep_ms((unsigned int)atoi(a1));
			i++;
		} else if (!strcmp(cmd, "sigstop") || !strcmp(cmd, "sigcont")) {
			pid_t pid = parse_pid(a1);

			if (pid <= 0 ||
			    kill(pid, cmd[3] == 's' ? SIGSTOP : SIGCONT))
				die("cannot signal %s: %s", a1,
				    strerror(errno));
			i++;
		} else if (!strcmp(cmd, "markers")) {
			unsigned int k, n = (unsigned int)atoi(a1);

			for (k = 0; k < n; k++) {
				marker(k);
				sleep_ms((unsigned int)atoi(a2));
				write_one(k % w.cpus);
				sleep_ms((unsigned int)atoi(a2));
			}
			i += 2;
		} else if (!strcmp(cmd, "unknown")) {
			/* Events of an id no format describes. */
			struct hvt_common_fields cu = {.common_type = 0x4321};
			uint64_t v = 0x5eed;
			struct hvt_iovec iov = {&v, 8};
			long k, n = atol(a2);

			c = (uint32_t)atoi(a1);
			if (c >= w.cpus)
				die("no CPU %u", c);
			for (k = 0; k < n; k++) {
				int ret = hvt_rb_write(&w.cb[c], now_ts(), &cu,
						       &iov, 1);

				if (ret && ret != -HVT_ENOSPC)
					die("hvt_rb_write: %d", ret);
				fprintf(w.log,
					"%c %u unknown_event event of an id "
					"the "
					"writer did not describe\n",
					ret ? 'D' : 'W', c);
			}
			i += 2;
		} else if (!strcmp(cmd, "corrupt")) {
			corrupt((uint32_t)atoi(a1));
			i++;
		} else if (!strcmp(cmd, "run")) {
			uint64_t end = mono_ns() + (uint64_t)atol(a1) * 1000000;

			while (!atol(a1) || mono_ns() < end) {
				for (c = 0; c < w.cpus; c++)
					write_one(c);
				usleep(100);
			}
			i++;
		} else if (!strcmp(cmd, "stop")) {
			/* Release: every commit above is visible before
			 * STOPPED; pairs with the host's load of the state
			 * (hvtrace_area_writer_state()), after which it
			 * drains the rings once more. */
			__atomic_store_n(&hdr()->state, HVT_STATE_STOPPED,
					 __ATOMIC_RELEASE);
			fprintf(w.log, "STOPPED\n");
		} else if (!strcmp(cmd, "die")) {
			fprintf(w.log, "DIED\n");
			_exit(0);
		} else {
			die("unknown command '%s'", cmd);
		}
	}
	w.quit = 1;
	pthread_join(th, NULL);
	fclose(w.log);
	return 0;
}
