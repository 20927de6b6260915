// SPDX-License-Identifier: MIT
/*
 * hvtrace loopback: a local writer process, for running the whole
 * pipeline without a VM.  The writing itself is hvtrace_loopback_*() in
 * libhvtrace.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <hvtrace.h>
#include <hvtrace/config.h>

#include "cli.h"

#define VERB "loopback"

static const char lb_usage[] =
	"usage: hvtrace loopback --area FILE [OPTIONS]\n"
	"\n"
	"Run a local writer process: create and format the trace area FILE\n"
	"(for example /dev/shm/NAME) and write hvtrace:selftest events (a\n"
	"u64 id, consecutive per CPU from 0, printed \"id=%llu\") into every\n"
	"CPU buffer, one writer thread per CPU pinned to host CPU (cpu %\n"
	"online CPUs).  The writer checks its enable bit before each event,\n"
	"answers time-sync and reset requests, stops on a host's stop\n"
	"command, and marks the area STOPPED when it ends.\n"
	"\n"
	"It runs in the foreground until it has written --events per CPU,\n"
	"--duration has passed, or it gets SIGINT/SIGTERM, then prints a\n"
	"summary on stderr.  With --background it detaches instead: the\n"
	"command returns (printing the writer's pid) as soon as the area is\n"
	"formatted, and the writer keeps running on its own.\n"
	"\n"
	"Read it with 'hvtrace stream FILE' and 'hvtrace stat FILE'.\n"
	"\n"
	"options:\n"
	"  --area FILE         area file to create (required).  Refused if\n"
	"                      a live writer holds it, or if it exists and\n"
	"                      is not an hvtrace area\n"
	"  --cpus N            CPU buffers and writer threads (default 2)\n"
	"  --events N          events per CPU, then stop (default: no\n"
	"                      limit)\n"
	"  --duration S        stop after S seconds (default: no limit)\n"
	"  --rate R            events per second per CPU (default: as fast\n"
	"                      as possible)\n"
	"  --mode MODE         consume (drop new events when full) or\n"
	"                      overwrite (flight recorder); default from\n"
	"                      the build config\n"
	"  --pages P           sub-buffers per CPU, a power of two (default\n"
	"                      from the build config)\n"
	"  --subbuf-size S     sub-buffer bytes, power of two 4K..64K\n"
	"  --clock CLOCK       counter (TSC/CNTVCT, calibrated) or mono\n"
	"                      (CLOCK_MONOTONIC); default from the build\n"
	"                      config\n"
	"  --wait-enable       start with the event disabled and write\n"
	"                      nothing until a host enables it (default:\n"
	"                      the writer enables its event itself until a\n"
	"                      host takes control)\n"
	"  --background        detach once the area is ready; print the pid\n"
	"  --log FILE          a background writer's summary goes here\n"
	"                      (default: discarded)\n"
	"  --quiet             no summary\n"
	"  -h, --help          this text\n";

static struct hvtrace_loopback *lb_current;

static void lb_on_signal(int sig)
{
	(void)sig;
	hvtrace_loopback_stop(lb_current);	/* one relaxed store */
}

static void lb_summary(FILE *f, struct hvtrace_loopback *lb, double secs)
{
	struct hvtrace_loopback_cpu_stats st;
	struct hvtrace_area_info info;
	unsigned long long tw = 0, td = 0;
	unsigned int cpu;

	hvtrace_loopback_get_info(lb, &info);
	fprintf(f, "hvtrace loopback: area '%s': %u CPUs, %s mode, "
		   "%u x %u-byte sub-buffers, clock %s",
		info.name, info.nr_cpus,
		info.mode == HVT_MODE_OVERWRITE ? "overwrite" : "consume",
		info.nr_subbufs, info.subbuf_size,
		info.clock_id == HVT_CLOCK_COUNTER ? "counter" : "mono");
	if (info.clock_id == HVT_CLOCK_COUNTER)
		fprintf(f, " (%.3f MHz)", (double)info.clock_freq_hz / 1e6);
	fprintf(f, "\n%4s %5s %12s %12s %12s %7s %7s\n", "cpu", "host",
		"written", "dropped", "next_id", "syncs", "resets");
	for (cpu = 0; cpu < info.nr_cpus; cpu++) {
		if (hvtrace_loopback_get_stats(lb, cpu, &st))
			continue;
		fprintf(f, "%4u %5d %12llu %12llu %12llu %7llu %7llu\n", cpu,
			st.host_cpu, (unsigned long long)st.written,
			(unsigned long long)st.dropped,
			(unsigned long long)st.next_id,
			(unsigned long long)st.syncs,
			(unsigned long long)st.resets);
		tw += st.written;
		td += st.dropped;
	}
	fprintf(f, "total: %llu written, %llu dropped in %.3f s (%.0f "
		   "events/s)\n",
		tw, td, secs, secs > 0 ? (double)(tw + td) / secs : 0.0);
}

static int lb_parse_pow2(const char *what, const char *arg,
			 unsigned long long lo, unsigned long long hi,
			 uint32_t *out)
{
	unsigned long long v;

	if (hvt_cli_parse_u64(arg, &v) || v < lo || v > hi || (v & (v - 1)))
		return hvt_cli_usage(VERB, "%s must be a power of two in "
					   "%llu..%llu, not '%s'",
				     what, lo, hi, arg);
	*out = (uint32_t)v;
	return 0;
}

enum {
	OPT_AREA = 1, OPT_CPUS, OPT_EVENTS, OPT_DURATION, OPT_RATE, OPT_MODE,
	OPT_PAGES, OPT_SUBBUF, OPT_CLOCK, OPT_WAIT, OPT_BG, OPT_LOG, OPT_QUIET,
};

static int cmd_loopback(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "area", required_argument, NULL, OPT_AREA },
		{ "cpus", required_argument, NULL, OPT_CPUS },
		{ "events", required_argument, NULL, OPT_EVENTS },
		{ "duration", required_argument, NULL, OPT_DURATION },
		{ "rate", required_argument, NULL, OPT_RATE },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "pages", required_argument, NULL, OPT_PAGES },
		{ "subbuf-size", required_argument, NULL, OPT_SUBBUF },
		{ "clock", required_argument, NULL, OPT_CLOCK },
		{ "wait-enable", no_argument, NULL, OPT_WAIT },
		{ "background", no_argument, NULL, OPT_BG },
		{ "log", required_argument, NULL, OPT_LOG },
		{ "quiet", no_argument, NULL, OPT_QUIET },
		{ NULL, 0, NULL, 0 },
	};
	struct hvtrace_loopback_params p = {
		.nr_cpus = 2,
		.nr_subbufs = CONFIG_HVT_DEFAULT_SUBBUFS,
		.subbuf_size = CONFIG_HVT_SUBBUF_SIZE,
		.mode = HVT_DEFAULT_MODE,
		.clock_id = IS_ENABLED(CONFIG_HVT_CLOCK_MONOTONIC_SRC) ?
				    HVT_CLOCK_MONO_NS : HVT_CLOCK_COUNTER,
		.pre_enable = true,
	};
	const char *log = NULL;
	bool background = false, quiet = false;
	struct hvtrace_loopback *lb;
	struct sigaction sa;
	unsigned long long v;
	int c, ret, pfd[2];
	double t0;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		switch (c) {
		case OPT_AREA:
			p.path = optarg;
			break;
		case OPT_CPUS:
			if (hvt_cli_parse_u64(optarg, &v) || !v ||
			    v > CONFIG_HVT_MAX_CPUS)
				return hvt_cli_usage(VERB, "--cpus must be "
							   "1..%d, not '%s'",
						     CONFIG_HVT_MAX_CPUS,
						     optarg);
			p.nr_cpus = (uint32_t)v;
			break;
		case OPT_EVENTS:
			if (hvt_cli_parse_u64(optarg, &v))
				return hvt_cli_usage(VERB, "bad --events '%s'",
						     optarg);
			p.events = v;
			break;
		case OPT_DURATION:
			if (hvt_cli_parse_seconds(optarg, &p.duration))
				return hvt_cli_usage(VERB, "bad --duration "
							   "'%s' (seconds)",
						     optarg);
			break;
		case OPT_RATE:
			if (hvt_cli_parse_u64(optarg, &v) || v > 1000000000ULL)
				return hvt_cli_usage(VERB, "bad --rate '%s' "
							   "(events/s per CPU)",
						     optarg);
			p.rate = v;
			break;
		case OPT_MODE:
			if (!strcmp(optarg, "consume"))
				p.mode = HVT_MODE_CONSUME;
			else if (!strcmp(optarg, "overwrite"))
				p.mode = HVT_MODE_OVERWRITE;
			else
				return hvt_cli_usage(VERB,
						     "--mode is consume or "
						     "overwrite, not '%s'",
						     optarg);
			break;
		case OPT_PAGES:
			if ((ret = lb_parse_pow2("--pages", optarg, 2, 65536,
						 &p.nr_subbufs)))
				return ret;
			break;
		case OPT_SUBBUF:
			if ((ret = lb_parse_pow2("--subbuf-size", optarg, 4096,
						 65536, &p.subbuf_size)))
				return ret;
			break;
		case OPT_CLOCK:
			if (!strcmp(optarg, "counter"))
				p.clock_id = HVT_CLOCK_COUNTER;
			else if (!strcmp(optarg, "mono"))
				p.clock_id = HVT_CLOCK_MONO_NS;
			else
				return hvt_cli_usage(VERB, "--clock is counter "
							   "or mono, not '%s'",
						     optarg);
			break;
		case OPT_WAIT:
			p.pre_enable = false;
			break;
		case OPT_BG:
			background = true;
			break;
		case OPT_LOG:
			log = optarg;
			break;
		case OPT_QUIET:
			quiet = true;
			break;
		default:
			return hvt_cli_bad_option(VERB, argv, c);
		}
	}
	if (optind < argc)
		return hvt_cli_usage(VERB, "unexpected argument '%s'",
				     argv[optind]);
	if (!p.path)
		return hvt_cli_usage(VERB, "--area FILE is required");

	if (background) {
		char msg[600];
		ssize_t n;
		pid_t pid;

		if (pipe(pfd))
			return hvt_cli_error(VERB, "pipe: %s", strerror(errno));
		fflush(NULL);
		pid = fork();
		if (pid < 0)
			return hvt_cli_error(VERB, "fork: %s", strerror(errno));
		if (pid > 0) {
			close(pfd[1]);
			n = read(pfd[0], msg, sizeof(msg) - 1);
			close(pfd[0]);
			if (n <= 0) {
				waitpid(pid, NULL, 0);
				return hvt_cli_error(VERB,
						     "the writer process died "
						     "while starting");
			}
			msg[n] = '\0';
			if (strncmp(msg, "ok", 2)) {
				waitpid(pid, NULL, 0);
				return hvt_cli_error(VERB, "%s", msg);
			}
			printf("%d\n", (int)pid);
			return HVT_EXIT_OK;
		}
		/* The writer: its own session, so the terminal's ^C and the
		 * caller's exit leave it alone. */
		close(pfd[0]);
		setsid();
		signal(SIGHUP, SIG_IGN);
	}

	ret = hvtrace_loopback_create(&p, &lb);
	if (ret) {
		if (background) {
			dprintf(pfd[1], "%s", hvtrace_last_error());
			_exit(HVT_EXIT_FAIL);
		}
		return hvt_cli_error(VERB, "%s", hvtrace_last_error());
	}
	lb_current = lb;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = lb_on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	if (background) {
		int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
		int lfd = log ? open(log, O_WRONLY | O_CREAT | O_TRUNC |
						  O_CLOEXEC, 0644)
			      : fd;

		if (fd >= 0) {
			dup2(fd, STDIN_FILENO);
			dup2(fd, STDOUT_FILENO);
		}
		if (lfd >= 0)
			dup2(lfd, STDERR_FILENO);
		dprintf(pfd[1], "ok");
		close(pfd[1]);
	}

	t0 = hvt_cli_now_ns() / 1e9;
	ret = hvtrace_loopback_run(lb);
	if (!quiet)
		lb_summary(stderr, lb, hvt_cli_now_ns() / 1e9 - t0);
	if (ret) {
		hvt_cli_error(VERB, "%s", hvtrace_last_error());
		hvtrace_loopback_destroy(lb);
		return background ? (_exit(HVT_EXIT_FAIL), 1) : HVT_EXIT_FAIL;
	}
	hvtrace_loopback_destroy(lb);
	if (background)
		_exit(HVT_EXIT_OK);
	return HVT_EXIT_OK;
}

HVT_CLI_COMMAND(loopback, "loopback",
		"run a local writer that fills an area with selftest events",
		lb_usage, cmd_loopback);
