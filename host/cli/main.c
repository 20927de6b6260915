// SPDX-License-Identifier: MIT
/*
 * hvtrace - read ftrace across a VM boundary.
 *
 * Dispatches "hvtrace VERB ARGS..." to the verbs registered in the
 * hvt_cli_cmds linker section (see cli.h).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hvt_util.h>

#include "cli.h"

extern const struct hvt_cli_cmd __start_hvt_cli_cmds[] __attribute__((weak));
extern const struct hvt_cli_cmd __stop_hvt_cli_cmds[] __attribute__((weak));

static const struct hvt_cli_cmd *cli_find(const char *name)
{
	const struct hvt_cli_cmd *c;

	for (c = __start_hvt_cli_cmds; c < __stop_hvt_cli_cmds; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

static int cli_cmp(const void *a, const void *b)
{
	const struct hvt_cli_cmd *const *x = a, *const *y = b;

	return strcmp((*x)->name, (*y)->name);
}

static void cli_main_usage(FILE *f)
{
	const struct hvt_cli_cmd *c, *sorted[128];
	size_t n = 0, i;

	fprintf(f,
		"usage: hvtrace VERB [OPTIONS] [ARGS]\n"
		"       hvtrace --help | -h | help [VERB]\n"
		"       hvtrace --version | -V\n"
		"\n"
		"hvtrace reads trace events that a hypervisor, a guest VM or a local\n"
		"process writes into shared memory, as ftrace data.\n"
		"\n"
		"verbs:\n");
	for (c = __start_hvt_cli_cmds; c < __stop_hvt_cli_cmds && n < 128; c++)
		sorted[n++] = c;
	qsort(sorted, n, sizeof(sorted[0]), cli_cmp);
	for (i = 0; i < n; i++)
		fprintf(f, "  %-10s %s\n", sorted[i]->name, sorted[i]->summary);
	fprintf(f, "\nRun 'hvtrace VERB --help' for the options of a verb.\n");
}

int hvt_cli_error(const char *verb, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "hvtrace %s: ", verb);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return HVT_EXIT_FAIL;
}

int hvt_cli_usage(const char *verb, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "hvtrace %s: ", verb);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nRun 'hvtrace %s --help' for usage.\n", verb);
	return HVT_EXIT_USAGE;
}

int hvt_cli_bad_option(const char *verb, char **argv, int c)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "?";

	/* A short option may sit inside a group ("-qZ"): name it alone. */
	if (optopt > 0 && optopt < 256 && strncmp(arg, "--", 2))
		return hvt_cli_usage(verb, c == ':' ? "option '-%c' needs a value"
						    : "unknown option '-%c'",
				     optopt);
	if (c == ':')
		return hvt_cli_usage(verb, "option '%s' needs a value", arg);
	return hvt_cli_usage(verb, "unknown option '%s'", arg);
}

int hvt_cli_wants_help(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return 1;
	}
	return 0;
}

void hvt_cli_print_usage(const char *verb)
{
	const struct hvt_cli_cmd *c = cli_find(verb);

	if (c)
		fputs(c->usage, stdout);
}

int hvt_cli_parse_pid(const char *s, int *out)
{
	char *end;
	long v;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v <= 0 || v > INT_MAX)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

int hvt_cli_parse_u64(const char *s, unsigned long long *out)
{
	uint64_t v;
	int ret = hvt_util_size_parse(s, &v);

	if (!ret)
		*out = v;
	return ret;
}

int hvt_cli_parse_reader_threads(const char *s, unsigned int *out)
{
	unsigned long long v;

	if (s && !strcmp(s, "auto")) {
		*out = 0;
		return 0;
	}
	if (hvt_cli_parse_u64(s, &v) || !v || v > 256)
		return -EINVAL;
	*out = (unsigned int)v;
	return 0;
}

int hvt_cli_parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	v = strtod(s, &end);
	if (*end || v < 0 || v != v)
		return -EINVAL;
	*out = v;
	return 0;
}

uint64_t hvt_cli_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

volatile sig_atomic_t hvt_cli_stop_signal;

static void cli_on_stop_signal(int sig)
{
	hvt_cli_stop_signal = sig;
}

void hvt_cli_catch_stop_signals(bool hangup)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = cli_on_stop_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (hangup)
		sigaction(SIGHUP, &sa, NULL);
}

int main(int argc, char **argv)
{
	const struct hvt_cli_cmd *c;

	if (argc < 2) {
		cli_main_usage(stderr);
		return HVT_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "help")) {
		if (argc > 2 && (c = cli_find(argv[2]))) {
			fputs(c->usage, stdout);
			return HVT_EXIT_OK;
		}
		cli_main_usage(stdout);
		return HVT_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("hvtrace %s\n", HVT_VERSION);
		return HVT_EXIT_OK;
	}
	c = cli_find(argv[1]);
	if (!c) {
		fprintf(stderr, "hvtrace: unknown verb '%s'\n", argv[1]);
		cli_main_usage(stderr);
		return HVT_EXIT_USAGE;
	}
	if (hvt_cli_wants_help(argc - 1, argv + 1)) {
		fputs(c->usage, stdout);
		return HVT_EXIT_OK;
	}
	return c->run(argc - 1, argv + 1);
}
