// SPDX-License-Identifier: MIT
/*
 * hvt-hyp - host side of the EL2 rig.
 *
 *   hvt-hyp formats [DIR]     print (or write under DIR) the tracefs-style
 *                             events/hypervisor/<event>/{format,id} files
 *   hvt-hyp info FILE         the area's geometry, state and counters
 *   hvt-hyp attach FILE       take the control page, enable events, exit
 *   hvt-hyp stream FILE       print the hypervisor's events while it runs
 *   hvt-hyp check FILE        verify a run: counts, order, time, losses
 *   hvt-hyp enable-test FILE  switch events off and on while it runs
 *   hvt-hyp garbage-test FILE scribble on the control page while it runs
 *   hvt-hyp causality FILE    clock sync and causality round trips
 *
 * FILE is the QEMU guest-RAM file (memory-backend-file mem-path); the
 * trace area sits at HVT_HYP_AREA_OFFSET in it (see hvt_hyp/layout.h).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>

#include "hyp_tool.h"

int opt_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

int opt_double(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	if (errno || end == s || *end || *out < 0)
		return -EINVAL;
	return 0;
}

pid_t opt_pid(const char *s)
{
	uint64_t v;

	if (opt_u64(s, &v) || !v || v > INT32_MAX)
		die("--pid takes a process id, not '%s'", s);
	return (pid_t)v;
}

double opt_seconds(const char *name, const char *s)
{
	double v;

	if (opt_double(s, &v))
		die("--%s takes seconds, not '%s'", name, s);
	return v;
}

static int cmd_formats(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : NULL;
	unsigned int i;

	for (i = 0; i < hvt_hypevents_count(); i++) {
		const struct hvt_hypevent *e = hvt_hypevents_get(i);
		char path[512];
		FILE *f;

		if (!dir) {
			printf("== events/%s/%s/format\n%s== events/%s/%s/id\n%s",
			       e->system, e->name, e->format, e->system,
			       e->name, e->id_text);
			continue;
		}
		snprintf(path, sizeof(path), "%s/events", dir);
		mkdir(path, 0755);
		snprintf(path, sizeof(path), "%s/events/%s", dir, e->system);
		mkdir(path, 0755);
		snprintf(path, sizeof(path), "%s/events/%s/%s", dir, e->system,
			 e->name);
		if (mkdir(path, 0755) && errno != EEXIST)
			die("cannot create %s: %s", path, strerror(errno));
		snprintf(path, sizeof(path), "%s/events/%s/%s/format", dir,
			 e->system, e->name);
		f = fopen(path, "w");
		if (!f || fputs(e->format, f) < 0 || fclose(f))
			die("cannot write %s: %s", path, strerror(errno));
		snprintf(path, sizeof(path), "%s/events/%s/%s/id", dir,
			 e->system, e->name);
		f = fopen(path, "w");
		if (!f || fputs(e->id_text, f) < 0 || fclose(f))
			die("cannot write %s: %s", path, strerror(errno));
	}
	return 0;
}

static const struct option attach_opts[] = {
	{ "events", required_argument, NULL, 'e' },
	{ "wait", required_argument, NULL, 'w' },
	{ NULL, 0, NULL, 0 },
};

static int cmd_attach(int argc, char **argv)
{
	const char *events = "all";
	double wait_s = 30;
	struct hyp_rig r;
	int c;

	while ((c = getopt_long(argc, argv, "e:w:", attach_opts, NULL)) != -1) {
		switch (c) {
		case 'e':
			events = optarg;
			break;
		case 'w':
			if (opt_double(optarg, &wait_s))
				die("--wait takes seconds, not '%s'", optarg);
			break;
		default:
			return 2;
		}
	}
	if (optind >= argc)
		die("usage: hvt-hyp attach FILE [--events LIST] [--wait SEC]");
	if (rig_open(&r, argv[optind], true, wait_s))
		return 1;
	if (rig_enable(&r, events))
		die("cannot enable events: %s", hvtrace_last_error());
	printf("attached to %s: %u CPUs x %u sub-buffers of %u bytes, %s mode; events: %s\n",
	       argv[optind], r.info.nr_cpus, r.info.nr_subbufs,
	       r.info.subbuf_size,
	       r.info.mode == HVT_MODE_CONSUME ? "consume" : "overwrite",
	       events);
	rig_close(&r);
	return 0;
}

struct stream_ctx {
	struct hyp_rig *r;
	bool quiet;
	uint64_t sync_every_ns;
	uint64_t next_sync;
	uint64_t syncs, sync_fail;
	uint64_t lines;
};

static volatile sig_atomic_t stream_stop_flag;

static void stream_sigint(int sig)
{
	(void)sig;
	stream_stop_flag = 1;
}

static int stream_stop(void *ctx)
{
	(void)ctx;
	return stream_stop_flag;
}

static int stream_event(void *ctx, const struct hyp_ev *ev, int cpu,
			uint64_t lost)
{
	struct stream_ctx *s = ctx;
	char line[512];

	if (ev)
		s->lines++;
	if (s->quiet)
		return 0;
	if (!ev) {
		printf("CPU:%d [LOST %llu EVENTS]\n", cpu,
		       (unsigned long long)lost);
		return 0;
	}
	text_event_line(ev, hvtrace_area_to_host_ns(s->r->a, ev->ts, NULL),
			line, sizeof(line));
	fputs(line, stdout);
	return 0;
}

static int stream_tick(void *ctx)
{
	struct stream_ctx *s = ctx;
	uint64_t now = rig_now_ns();

	fflush(stdout);
	if (!s->r->owner || !s->sync_every_ns || now < s->next_sync)
		return 0;
	s->next_sync = now + s->sync_every_ns;
	if (rig_writer_state(s->r) == HVT_STATE_STOPPED)
		return 0;
	if (hvtrace_area_sync(s->r->a, 20))
		s->sync_fail++;
	else
		s->syncs++;
	return 0;
}

static void print_stats(struct hyp_rig *r, FILE *out)
{
	int cpu;

	for (cpu = 0; cpu < (int)r->info.nr_cpus; cpu++) {
		struct hvtrace_cpu_stats st;
		const struct hvt_cpu_meta *m = rig_meta(r, cpu);

		if (hvtrace_cpu_get_stats(r->a, cpu, &st))
			continue;
		fprintf(out, "cpu%d: read %llu lost %llu (overrun %llu dropped %llu) written %llu errors %llu ctrl_errors %llu\n",
			cpu, (unsigned long long)st.read,
			(unsigned long long)st.lost,
			(unsigned long long)st.overrun,
			(unsigned long long)st.dropped,
			(unsigned long long)st.written,
			(unsigned long long)st.errors,
			(unsigned long long)(m ? __atomic_load_n(
							 &m->ctrl_errors,
							 __ATOMIC_RELAXED) :
						 0));
	}
}

static const struct option stream_opts[] = {
	{ "events", required_argument, NULL, 'e' },
	{ "pid", required_argument, NULL, 'p' },
	{ "timeout", required_argument, NULL, 't' },
	{ "wait", required_argument, NULL, 'w' },
	{ "read-only", no_argument, NULL, 'r' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "sync-ms", required_argument, NULL, 's' },
	{ NULL, 0, NULL, 0 },
};

static int cmd_stream(int argc, char **argv)
{
	struct stream_ctx s = { 0 };
	const char *events = "all";
	double timeout_s = 0, wait_s = 30;
	uint64_t sync_ms = 200;
	bool owner = true;
	struct hyp_rig r;
	pid_t pid = 0;
	int c, ret;

	while ((c = getopt_long(argc, argv, "e:p:t:w:rqs:", stream_opts,
				NULL)) != -1) {
		switch (c) {
		case 'e':
			events = optarg;
			break;
		case 'p':
			pid = opt_pid(optarg);
			break;
		case 't':
			if (opt_double(optarg, &timeout_s))
				die("--timeout takes seconds, not '%s'", optarg);
			break;
		case 'w':
			if (opt_double(optarg, &wait_s))
				die("--wait takes seconds, not '%s'", optarg);
			break;
		case 'r':
			owner = false;
			break;
		case 'q':
			s.quiet = true;
			break;
		case 's':
			if (opt_u64(optarg, &sync_ms))
				die("--sync-ms takes milliseconds, not '%s'",
				    optarg);
			break;
		default:
			return 2;
		}
	}
	if (optind >= argc)
		die("usage: hvt-hyp stream FILE [--events LIST] [--pid QEMU_PID] [--timeout SEC] [--read-only] [--quiet]\n"
		    "  (--read-only without --pid reads what is there and exits: post-mortem)");
	if (rig_open(&r, argv[optind], owner, wait_s))
		return 1;
	r.pid = pid;
	if (owner && rig_enable(&r, events))
		die("cannot enable events: %s", hvtrace_last_error());
	if (text_init())
		return 1;
	s.r = &r;
	s.sync_every_ns = sync_ms * 1000000ULL;
	signal(SIGINT, stream_sigint);
	signal(SIGTERM, stream_sigint);
	if (!owner && !pid)
		/* Read-only with no QEMU to watch: a post-mortem read. */
		ret = rig_drain(&r, stream_event, &s);
	else
		ret = rig_follow(&r, stream_event, &s, timeout_s, stream_stop,
				 stream_tick);
	fflush(stdout);
	if (ret == -ETIMEDOUT)
		fprintf(stderr, "hvt-hyp: stopped after %.1f s (--timeout)\n",
			timeout_s);
	else if (ret < 0)
		fprintf(stderr, "hvt-hyp: reading failed: %s\n", strerror(-ret));
	fprintf(stderr, "hvt-hyp: writer %s; %llu events, %llu bad records, %llu time syncs (%llu unanswered)\n",
		rig_writer_state(&r) == HVT_STATE_STOPPED ? "stopped cleanly" :
		!pid ? "did not stop cleanly (state RUNNING)" :
		rig_writer_alive(&r) ? "still running" : "gone (not stopped)",
		(unsigned long long)s.lines,
		(unsigned long long)r.bad_records,
		(unsigned long long)s.syncs, (unsigned long long)s.sync_fail);
	print_stats(&r, stderr);
	text_fini();
	rig_close(&r);
	return ret < 0 && ret != -ETIMEDOUT ? 1 : 0;
}

static int cmd_info(int argc, char **argv)
{
	double wait_s = 0;
	struct hyp_rig r;
	uint32_t state;

	if (argc == 4 && !strcmp(argv[2], "--wait")) {
		if (opt_double(argv[3], &wait_s))
			die("--wait takes seconds, not '%s'", argv[3]);
	} else if (argc != 2) {
		die("usage: hvt-hyp info FILE [--wait SEC]");
	}
	if (rig_open(&r, argv[1], false, wait_s))
		return 1;
	state = rig_writer_state(&r);
	printf("area %s: writer '%s' kind %u, %u CPUs x %u sub-buffers of %u bytes, %s mode, state %s, generation %llu, counter %llu Hz\n",
	       argv[1], r.info.name, r.info.writer_kind, r.info.nr_cpus,
	       r.info.nr_subbufs, r.info.subbuf_size,
	       r.info.mode == HVT_MODE_CONSUME ? "consume" : "overwrite",
	       state == HVT_STATE_STOPPED ? "STOPPED" :
	       state == HVT_STATE_RUNNING ? "RUNNING" : "INIT",
	       (unsigned long long)r.info.generation,
	       (unsigned long long)r.info.clock_freq_hz);
	print_stats(&r, stdout);
	rig_close(&r);
	return 0;
}

static void usage(FILE *out)
{
	fputs("usage: hvt-hyp COMMAND [ARGS]\n"
	      "  formats [DIR]            the events/hypervisor/* format and id files\n"
	      "  info FILE [--wait SEC]   the area's geometry, state and counters\n"
	      "  attach FILE              take control of the area, enable events\n"
	      "  stream FILE              print events while the hypervisor runs\n"
	      "  check FILE               verify a run (see --help of each command)\n"
	      "  enable-test FILE         enable/disable while running\n"
	      "  garbage-test FILE        hostile control page while running\n"
	      "  causality FILE           clock sync and causality round trips\n"
	      "FILE is the QEMU guest-RAM file; the area is at file offset 0x1000000.\n",
	      out);
}

int main(int argc, char **argv)
{
	/* Sleeps while polling the area should be as short as asked. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	argv++;
	argc--;
	if (!strcmp(argv[0], "formats"))
		return cmd_formats(argc, argv);
	if (!strcmp(argv[0], "info"))
		return cmd_info(argc, argv);
	if (!strcmp(argv[0], "attach"))
		return cmd_attach(argc, argv);
	if (!strcmp(argv[0], "stream"))
		return cmd_stream(argc, argv);
	if (!strcmp(argv[0], "check"))
		return cmd_check(argc, argv);
	if (!strcmp(argv[0], "enable-test"))
		return cmd_enable_test(argc, argv);
	if (!strcmp(argv[0], "garbage-test"))
		return cmd_garbage_test(argc, argv);
	if (!strcmp(argv[0], "causality"))
		return cmd_causality(argc, argv);
	fprintf(stderr, "hvt-hyp: unknown command '%s'\n", argv[0]);
	usage(stderr);
	return 2;
}
