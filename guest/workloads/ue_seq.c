// SPDX-License-Identifier: MIT
/*
 * ue_seq - numbered user events from several threads, for the end-to-end
 * tests and benchmarks of the guest path.
 *
 * Registers "hvt_seq u32 thread; u32 seq; u64 val; __rel_loc char[] tag"
 * through the agent and writes, from each of --threads threads, records
 * whose every field a reader can check:
 *
 *	thread	the writer's index (0..N-1)
 *	seq	per-thread sequence number, from 0, one per write attempt
 *	val	seq * 7 + thread * 1000003
 *	tag	--tag (default: the host name), then seq % 5 '+' characters
 *
 * Thread t starts on CPU t % ncpu; --migrate K moves it to the next CPU
 * every K events, so one thread's events land on every CPU and only their
 * timestamps order them.
 *
 * Modes:
 *   --count M       each thread writes M events (seq 0..M-1) once the host
 *                   enabled the event; -ENOSPC (ring full) counts as
 *                   dropped, the seq is spent all the same
 *   --duration S    each thread runs S seconds at --rate and writes only
 *                   while the event is enabled (seq counts every
 *                   iteration, so a gap shows when it was disabled)
 *   --phase2 M2     after --count, wait until the host enables hvt_seq_go,
 *                   then write M2 more (seq continues), at --rate2 R2 if
 *                   given (else at --rate)
 *
 * Lines on stdout (flushed; the tests read them from the guest console):
 *   ue_seq: registered id=N
 *   ue_seq: enabled
 *   ue_seq: progress wrote=W0,W1,...        (--progress MS)
 *   ue_seq: t0 enabled at seq N / t0 disabled at seq N   (--duration)
 *   ue_seq: phase1 wrote=W dropped=D
 *   ue_seq: thread T wrote=W dropped=D skipped=S failed=F last=L
 *   ue_seq: done wrote=W dropped=D skipped=S failed=F
 *   ue_seq: error: ...                      (exit 1)
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hvtrace-client.h"

#define SEQ_DEF	    "hvt_seq u32 thread; u32 seq; u64 val; __rel_loc char[] tag"
#define GO_DEF	    "hvt_seq_go u32 unused"
#define MAX_THREADS 64
#define MAX_TAG	    40

struct writer {
	pthread_t th;
	bool joined;
	unsigned int idx;
	_Atomic uint64_t wrote; /* committed (returned 0) */
	uint64_t dropped, skipped, failed;
	uint64_t last; /* last seq attempted */
};

static struct hvtg_event ev_seq = HVTG_EVENT_INIT;
static struct hvtg_event ev_go = HVTG_EVENT_INIT;
static struct hvtc *conn;
static struct writer writers[MAX_THREADS];
static pthread_barrier_t phase_barrier;
static unsigned int nthreads = 4, ncpus = 1;
static unsigned long count = 10000, phase2, migrate;
static double duration, rate, rate2 = -1;
static char tag[MAX_TAG + 1];

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *fmt, ...)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	va_list ap;

	pthread_mutex_lock(&lock);
	fputs("ue_seq: ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
	pthread_mutex_unlock(&lock);
}

static void pin(unsigned int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu % ncpus, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* The record after the common fields; returns its length. */
static size_t build(uint8_t *buf, uint32_t thread, uint32_t seq)
{
	uint64_t val = (uint64_t)seq * 7 + (uint64_t)thread * 1000003;
	size_t n = strlen(tag), k;
	uint32_t loc;

	memcpy(buf, &thread, 4);
	memcpy(buf + 4, &seq, 4);
	memcpy(buf + 8, &val, 8);
	memcpy(buf + 20, tag, n);
	for (k = 0; k < seq % 5; k++)
		buf[20 + n++] = '+';
	buf[20 + n++] = '\0';
	/* __rel_loc: length << 16 | offset from the end of the loc field. */
	loc = (uint32_t)n << 16;
	memcpy(buf + 16, &loc, 4);
	return 20 + n;
}

/*
 * At @r events per second, each thread (0: as fast as it can).  An event
 * more often than every PACE_BATCH_NS is not slept for one by one (a TCG
 * guest's sleep alone takes about 0.1 ms): the thread writes on until it
 * is PACE_BATCH_NS ahead, then sleeps to the next event's time, so the
 * rate holds over every millisecond.
 */
#define PACE_BATCH_NS 1000000ull

static void pace(uint64_t *next, double r)
{
	uint64_t period;
	struct timespec ts;

	if (r <= 0)
		return;
	period = (uint64_t)(1e9 / r);
	*next += period;
	if (period < PACE_BATCH_NS && *next < now_ns() + PACE_BATCH_NS)
		return;
	ts.tv_sec = (time_t)(*next / 1000000000ull);
	ts.tv_nsec = (long)(*next % 1000000000ull);
	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

static void write_one(struct writer *w, uint32_t seq)
{
	uint8_t rec[128];
	size_t len = build(rec, w->idx, seq);
	int ret = hvtg_write(&ev_seq, rec, len);

	w->last = seq;
	if (!ret)
		atomic_fetch_add_explicit(&w->wrote, 1, memory_order_relaxed);
	else if (ret == -ENOSPC)
		w->dropped++;
	else if (ret == -ENODATA)
		w->skipped++;
	else
		w->failed++;
}

/* Write seq [from, to) once enabled (count mode), at @r a second. */
static void write_range(struct writer *w, uint32_t from, uint32_t to,
			unsigned int *cpu, double r)
{
	uint64_t next = now_ns();
	uint32_t seq;

	for (seq = from; seq < to; seq++) {
		if (migrate && seq && seq % migrate == 0)
			pin(++*cpu);
		write_one(w, seq);
		pace(&next, r);
	}
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	unsigned int cpu = w->idx;
	char name[16];

	snprintf(name, sizeof(name), "seq-%u", w->idx);
	pthread_setname_np(pthread_self(), name);
	hvtc_name_thread(conn);
	pin(cpu);
	if (duration > 0) {
		uint64_t end = now_ns() + (uint64_t)(duration * 1e9);
		uint64_t next = now_ns();
		bool was = false;
		uint32_t seq;

		for (seq = 0; now_ns() < end; seq++) {
			bool on = hvtg_enabled(&ev_seq);

			if (migrate && seq && seq % migrate == 0)
				pin(++cpu);
			if (w->idx == 0 && on != was) {
				say("t0 %s at seq %u",
				    on ? "enabled" : "disabled", seq);
				was = on;
			}
			if (on)
				write_one(w, seq);
			else
				w->skipped++;
			w->last = seq;
			pace(&next, rate);
		}
		return NULL;
	}
	write_range(w, 0, (uint32_t)count, &cpu, rate);
	if (phase2) {
		pthread_barrier_wait(&phase_barrier); /* phase 1 done */
		pthread_barrier_wait(&phase_barrier); /* go */
		write_range(w, (uint32_t)count, (uint32_t)(count + phase2),
			    &cpu, rate2 >= 0 ? rate2 : rate);
	}
	return NULL;
}

static void totals(uint64_t *wrote, uint64_t *dropped, uint64_t *skipped,
		   uint64_t *failed)
{
	unsigned int i;

	*wrote = *dropped = *skipped = *failed = 0;
	for (i = 0; i < nthreads; i++) {
		*wrote += atomic_load(&writers[i].wrote);
		*dropped += writers[i].dropped;
		*skipped += writers[i].skipped;
		*failed += writers[i].failed;
	}
}

static void progress(void)
{
	char buf[1024];
	size_t n = 0;
	unsigned int i;

	for (i = 0; i < nthreads && n < sizeof(buf) - 32; i++)
		n += (size_t)snprintf(
			buf + n, sizeof(buf) - n, "%s%llu", i ? "," : "",
			(unsigned long long)atomic_load(&writers[i].wrote));
	say("progress wrote=%s", buf);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: ue_seq [--socket PATH] [--wait-agent MS] [--threads "
		"N]\n"
		"              [--count M | --duration S] [--rate R] [--tag "
		"T]\n"
		"              [--migrate K] [--wait-enable MS] [--phase2 M2]\n"
		"              [--rate2 R2]\n"
		"              [--progress MS] [--hold]\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"socket", required_argument, NULL, 's'},
		{"wait-agent", required_argument, NULL, 'a'},
		{"threads", required_argument, NULL, 't'},
		{"count", required_argument, NULL, 'c'},
		{"duration", required_argument, NULL, 'd'},
		{"rate", required_argument, NULL, 'r'},
		{"tag", required_argument, NULL, 'T'},
		{"migrate", required_argument, NULL, 'm'},
		{"wait-enable", required_argument, NULL, 'w'},
		{"phase2", required_argument, NULL, '2'},
		{"rate2", required_argument, NULL, 'R'},
		{"progress", required_argument, NULL, 'p'},
		{"hold", no_argument, NULL, 'H'},
		{NULL, 0, NULL, 0},
	};
	const char *sock = NULL;
	long agent_ms = 30000, wait_ms = 60000, progress_ms = 0;
	uint64_t deadline, wrote, dropped, skipped, failed;
	int opt, ret, hold = 0;
	long n;
	unsigned int i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (gethostname(tag, sizeof(tag)) || !tag[0])
		strcpy(tag, "guest");
	tag[MAX_TAG] = '\0';
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			sock = optarg;
			break;
		case 'a':
			agent_ms = atol(optarg);
			break;
		case 't':
			nthreads = (unsigned int)atoi(optarg);
			break;
		case 'c':
			count = strtoul(optarg, NULL, 0);
			break;
		case 'd':
			duration = atof(optarg);
			break;
		case 'r':
			rate = atof(optarg);
			break;
		case 'T':
			snprintf(tag, sizeof(tag), "%s", optarg);
			break;
		case 'm':
			migrate = strtoul(optarg, NULL, 0);
			break;
		case 'w':
			wait_ms = atol(optarg);
			break;
		case '2':
			phase2 = strtoul(optarg, NULL, 0);
			break;
		case 'R':
			rate2 = atof(optarg);
			break;
		case 'p':
			progress_ms = atol(optarg);
			break;
		case 'H':
			hold = 1;
			break;
		default:
			usage();
			return 2;
		}
	}
	if (optind < argc || !nthreads || nthreads > MAX_THREADS ||
	    (phase2 && duration > 0)) {
		usage();
		return 2;
	}
	n = sysconf(_SC_NPROCESSORS_ONLN);
	ncpus = n > 0 ? (unsigned int)n : 1;

	/* The agent may still be starting: retry while nobody listens. */
	deadline = now_ns() + (uint64_t)agent_ms * 1000000;
	while ((ret = hvtc_open(sock, &conn)) &&
	       (ret == -ENOENT || ret == -ECONNREFUSED) && now_ns() < deadline)
		usleep(50000);
	if (ret) {
		say("error: %s", hvtc_last_error());
		return 1;
	}
	if (hvtc_register(conn, SEQ_DEF, &ev_seq) ||
	    (phase2 && hvtc_register(conn, GO_DEF, &ev_go))) {
		say("error: register: %s", hvtc_last_error());
		return 1;
	}
	say("registered id=%d", hvtc_event_id(conn, &ev_seq));
	if (duration <= 0 && wait_ms > 0) {
		deadline = now_ns() + (uint64_t)wait_ms * 1000000;
		while (!hvtg_enabled(&ev_seq) && now_ns() < deadline)
			usleep(2000);
		if (!hvtg_enabled(&ev_seq)) {
			say("error: hvt_seq not enabled within %ld ms",
			    wait_ms);
			return 1;
		}
		say("enabled");
	}

	pthread_barrier_init(&phase_barrier, NULL, nthreads + 1);
	for (i = 0; i < nthreads; i++) {
		writers[i].idx = i;
		if (pthread_create(&writers[i].th, NULL, writer_main,
				   &writers[i])) {
			say("error: cannot start thread %u", i);
			return 1;
		}
	}
	if (phase2) {
		pthread_barrier_wait(&phase_barrier);
		totals(&wrote, &dropped, &skipped, &failed);
		say("phase1 wrote=%llu dropped=%llu", (unsigned long long)wrote,
		    (unsigned long long)dropped);
		while (!hvtg_enabled(&ev_go))
			usleep(2000);
		say("go");
		pthread_barrier_wait(&phase_barrier);
	}
	if (progress_ms > 0) {
		/* Until every writer is done: lower bounds of what was
		 * committed, for post-mortem checks. */
		for (;;) {
			bool all = true;

			usleep((useconds_t)progress_ms * 1000);
			progress();
			for (i = 0; i < nthreads; i++) {
				if (writers[i].joined)
					continue;
				if (pthread_tryjoin_np(writers[i].th, NULL))
					all = false;
				else
					writers[i].joined = true;
			}
			if (all)
				break;
		}
	}
	for (i = 0; i < nthreads; i++)
		if (!writers[i].joined)
			pthread_join(writers[i].th, NULL);
	for (i = 0; i < nthreads; i++)
		say("thread %u wrote=%llu dropped=%llu skipped=%llu "
		    "failed=%llu "
		    "last=%llu",
		    i, (unsigned long long)writers[i].wrote,
		    (unsigned long long)writers[i].dropped,
		    (unsigned long long)writers[i].skipped,
		    (unsigned long long)writers[i].failed,
		    (unsigned long long)writers[i].last);
	totals(&wrote, &dropped, &skipped, &failed);
	say("done wrote=%llu dropped=%llu skipped=%llu failed=%llu",
	    (unsigned long long)wrote, (unsigned long long)dropped,
	    (unsigned long long)skipped, (unsigned long long)failed);
	if (hold)
		for (;;)
			pause();
	hvtc_close(conn);
	return failed ? 1 : 0;
}
