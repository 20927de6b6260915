// SPDX-License-Identifier: MIT
/*
 * hvtrace record -o FILE REMOTE...: remotes of hvtraced into trace.dat
 * (hvtrace_tracedat_drecord_*()), with the same stops, signals and
 * status line as recording areas.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hvtrace.h>

#include "cli.h"
#include "daemon_src.h"

static volatile sig_atomic_t rr_stop;

static void rr_on_signal(int sig)
{
	(void)sig;
	rr_stop = 1;
}

static double rr_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void rr_totals(struct hvtrace_tracedat_drecord *r, uint64_t *events,
		      uint64_t *lost)
{
	struct hvtrace_tracedat_source_stats st;
	unsigned int i;

	*events = *lost = 0;
	for (i = 0; i < hvtrace_tracedat_drecord_nr_sources(r); i++) {
		if (hvtrace_tracedat_drecord_source_stats(r, i, &st))
			continue;
		*events += st.events;
		*lost += st.lost + st.trailing_lost;
	}
}

static void rr_human(char *buf, size_t len, double v)
{
	if (v >= 1e9)
		snprintf(buf, len, "%.1fG", v / 1e9);
	else if (v >= 1e6)
		snprintf(buf, len, "%.1fM", v / 1e6);
	else if (v >= 1e4)
		snprintf(buf, len, "%.1fk", v / 1e3);
	else
		snprintf(buf, len, "%.0f", v);
}

/* One line on stderr, rewritten in place: per remote events and bytes. */
static void rr_status(struct hvtrace_tracedat_drecord *r, double elapsed,
		      double rate)
{
	struct hvtrace_tracedat_source_stats st;
	uint64_t events, lost;
	char line[512], a[32], b[32];
	size_t n;
	unsigned int i;

	rr_totals(r, &events, &lost);
	rr_human(a, sizeof(a), (double)events);
	rr_human(b, sizeof(b), rate);
	n = (size_t)snprintf(line, sizeof(line),
			     "%6.1fs  %s events  %s/s  lost %llu", elapsed, a,
			     b, (unsigned long long)lost);
	for (i = 0;
	     i < hvtrace_tracedat_drecord_nr_sources(r) && n < sizeof(line) - 1;
	     i++) {
		if (hvtrace_tracedat_drecord_source_stats(r, i, &st))
			continue;
		rr_human(a, sizeof(a), (double)st.bytes);
		n += (size_t)snprintf(line + n, sizeof(line) - n,
				      "  | %s %sB%s", st.name, a,
				      st.finished ? " (done)" : "");
	}
	fprintf(stderr, "\r\033[K%.*s", 200, line);
	fflush(stderr);
}

int hvt_cli_record_remotes(const struct hvt_rrecord_opts *o, int n,
			   char **remotes)
{
	struct hvtrace_tracedat_drecord_opts ro = {
		.path = o->path,
		.socket = o->sock,
		.events = o->events,
	};
	struct hvtrace_tracedat_drecord *r = NULL;
	struct hvtrace_tracedat_source_stats st;
	double t0, last_status = 0, last_t;
	uint64_t last_events = 0, ev, lost;
	struct sigaction sa;
	bool tty;
	int i, ret, poll = 1;
	unsigned int k;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = rr_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	if (hvtrace_tracedat_drecord_create(&ro, &r))
		return hvt_cli_error("record", "%s", hvtrace_last_error());
	for (i = 0; i < n; i++) {
		if (hvtrace_tracedat_drecord_add_remote(r, remotes[i], NULL) <
		    0) {
			hvt_cli_error("record", "%s", hvtrace_last_error());
			hvtrace_tracedat_drecord_abort(r);
			return HVT_EXIT_FAIL;
		}
	}
	if (hvtrace_tracedat_drecord_start(r)) {
		hvt_cli_error("record", "%s", hvtrace_last_error());
		hvtrace_tracedat_drecord_abort(r);
		return HVT_EXIT_FAIL;
	}
	tty = !o->quiet && isatty(STDERR_FILENO);
	t0 = last_t = rr_now();
	while (!rr_stop && poll > 0) {
		double now = rr_now();

		if (o->duration > 0 && now - t0 >= o->duration)
			break;
		rr_totals(r, &ev, &lost);
		if (o->max_events && ev >= o->max_events)
			break;
		if (tty && now - last_status >= 0.25) {
			rr_status(r, now - t0,
				  now > last_t ? (double)(ev - last_events) /
							 (now - last_t)
					       : 0);
			last_events = ev;
			last_t = now;
			last_status = now;
		}
		poll = hvtrace_tracedat_drecord_poll(r, 10);
	}
	if (poll < 0) {
		if (tty)
			fputc('\n', stderr);
		hvt_cli_error("record", "%s (writing what was recorded)",
			      hvtrace_last_error());
	}
	if (tty) {
		double el = rr_now() - t0;

		rr_totals(r, &ev, &lost);
		rr_status(r, el, el > 0 ? (double)ev / el : 0);
		fputc('\n', stderr);
	}
	/* A second Ctrl-C while finishing must not leave half a file. */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	if (hvtrace_tracedat_drecord_stop(r))
		hvt_cli_error("record", "%s", hvtrace_last_error());
	for (k = 0; k < hvtrace_tracedat_drecord_nr_sources(r); k++) {
		if (hvtrace_tracedat_drecord_source_stats(r, k, &st))
			continue;
		if (st.errors)
			fprintf(stderr,
				"hvtrace record: %s: %llu malformed "
				"item(s) skipped\n",
				st.name, (unsigned long long)st.errors);
		if (st.unknown)
			fprintf(stderr,
				"hvtrace record: %s: %llu event(s) "
				"of ids with no known format (shown as "
				"unknown)\n",
				st.name, (unsigned long long)st.unknown);
	}
	rr_totals(r, &ev, &lost);
	ret = hvtrace_tracedat_drecord_finish(r);
	if (ret)
		return hvt_cli_error("record", "%s", hvtrace_last_error());
	if (tty)
		fprintf(stderr,
			"hvtrace record: wrote %s: %llu events, %llu "
			"lost\n",
			o->path, (unsigned long long)ev,
			(unsigned long long)lost);
	return poll < 0 ? HVT_EXIT_FAIL : HVT_EXIT_OK;
}
