// SPDX-License-Identifier: MIT
/*
 * hvtrace record: what recording areas and remotes of hvtraced (each with
 * the host kernel or not) share once the recording has started: the
 * stops, the signals, the status line and finishing the file.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hvtrace-tracedat.h>

#include "cli.h"

static void rec_human(char *buf, size_t len, double v)
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

/* --- status --------------------------------------------------------------- */

static void rec_totals(const struct hvt_cli_rec *rec, uint64_t *events,
		       uint64_t *lost)
{
	struct hvtrace_tracedat_source_stats st;
	unsigned int i;

	*events = *lost = 0;
	for (i = 0; i < hvtrace_tracedat_record_nr_sources(rec->r); i++) {
		if (hvtrace_tracedat_record_source_stats(rec->r, i, &st))
			continue;
		*events += st.events;
		*lost += st.lost + st.trailing_lost;
	}
}

/* One line on stderr, rewritten in place: per buffer events and bytes. */
static void rec_status(const struct hvt_cli_rec *rec, double elapsed,
		       double rate)
{
	struct hvtrace_tracedat_source_stats st;
	uint64_t events, lost;
	char line[512], a[32], b[32];
	size_t n;
	unsigned int i;

	rec_totals(rec, &events, &lost);
	rec_human(a, sizeof(a), (double)events);
	rec_human(b, sizeof(b), rate);
	n = (size_t)snprintf(line, sizeof(line),
			     "%6.1fs  %s events  %s/s  lost %llu", elapsed, a,
			     b, (unsigned long long)lost);
	for (i = 0; i < hvtrace_tracedat_record_nr_sources(rec->r) &&
		    n < sizeof(line) - 1;
	     i++) {
		if (hvtrace_tracedat_record_source_stats(rec->r, i, &st))
			continue;
		rec_human(a, sizeof(a), (double)st.bytes);
		n += (size_t)snprintf(line + n, sizeof(line) - n,
				      "  | %s %sB%s",
				      st.kernel ? "kernel" : st.name, a,
				      st.finished ? " (done)" : "");
	}
	fprintf(stderr, "\r\033[K%.*s", 200, line);
	fflush(stderr);
}

static void rec_report_problems(const struct hvt_cli_rec *rec)
{
	struct hvtrace_tracedat_source_stats st;
	unsigned int i;

	for (i = 0; i < hvtrace_tracedat_record_nr_sources(rec->r); i++) {
		if (hvtrace_tracedat_record_source_stats(rec->r, i, &st))
			continue;
		if (st.errors)
			fprintf(stderr,
				"hvtrace record: %s: %llu malformed item(s) "
				"skipped%s\n",
				st.kernel ? "kernel" : st.name,
				(unsigned long long)st.errors,
				rec->errors_note ? rec->errors_note : "");
		if (st.unknown)
			fprintf(stderr,
				"hvtrace record: %s: %llu event(s) of ids with "
				"no known format (shown as unknown)\n",
				st.kernel ? "kernel" : st.name,
				(unsigned long long)st.unknown);
	}
}

/* The clock models' error bounds (a guest kernel ring beside its
 * remote's user events: how far its times may be off the host's).
 * Informational: not with -q (the file's CPU statistics keep each
 * buffer's bound: hvtrace report --stat).  A buffer not on the host's
 * clock (bound UINT64_MAX) is a warning the library gave. */
static void rec_report_clock(const struct hvt_cli_rec *rec)
{
	struct hvtrace_tracedat_source_stats st;
	unsigned int i;

	for (i = 0; rec->say_clock && !rec->quiet &&
		    i < hvtrace_tracedat_record_nr_sources(rec->r);
	     i++)
		if (!hvtrace_tracedat_record_source_stats(rec->r, i, &st) &&
		    st.sync_err_ns && st.sync_err_ns != UINT64_MAX &&
		    st.events)
			fprintf(stderr,
				"hvtrace record: %s: times on the host's "
				"CLOCK_MONOTONIC through hvtraced's clock "
				"model (error bound +-%.1f us)\n",
				st.name, (double)st.sync_err_ns / 1e3);
}

int hvt_cli_rec_run(const struct hvt_cli_rec *rec)
{
	double t0, last_status = 0, last_t;
	uint64_t last_events = 0, ev, lost;
	bool tty, status_shown = false;
	int ret, poll = 1;

	tty = !rec->quiet && isatty(STDERR_FILENO);
	t0 = last_t = hvt_cli_now_ns() / 1e9;
	while (!hvt_cli_stop_signal && poll > 0) {
		double now = hvt_cli_now_ns() / 1e9;

		if (rec->duration > 0 && now - t0 >= rec->duration)
			break;
		if (rec->max_events) {
			rec_totals(rec, &ev, &lost);
			if (ev >= rec->max_events)
				break;
		}
		if (tty && now - last_status >= 0.25) {
			rec_totals(rec, &ev, &lost);
			rec_status(rec, now - t0,
				   now > last_t ? (double)(ev - last_events) /
							  (now - last_t)
						: 0);
			last_events = ev;
			last_t = now;
			last_status = now;
			status_shown = true;
		}
		poll = hvtrace_tracedat_record_poll(rec->r, 10);
	}
	if (poll < 0) {
		if (status_shown)
			fputc('\n', stderr);
		hvt_cli_error("record", "%s (writing what was recorded)",
			      hvtrace_last_error());
	}
	if (tty) {
		double el = hvt_cli_now_ns() / 1e9 - t0;

		/* The last line gives the average rate. */
		rec_totals(rec, &ev, &lost);
		rec_status(rec, el, el > 0 ? (double)ev / el : 0);
		fputc('\n', stderr);
	}
	/* A second Ctrl-C while finishing must not leave half a file. */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	if (hvtrace_tracedat_record_stop(rec->r))
		hvt_cli_error("record", "%s", hvtrace_last_error());
	rec_report_problems(rec);
	rec_report_clock(rec);
	rec_totals(rec, &ev, &lost);
	ret = hvtrace_tracedat_record_finish(rec->r);
	if (ret)
		return hvt_cli_error("record", "%s", hvtrace_last_error());
	if (tty)
		fprintf(stderr,
			"hvtrace record: wrote %s: %llu events, %llu lost\n",
			rec->path, (unsigned long long)ev,
			(unsigned long long)lost);
	return poll < 0 ? HVT_EXIT_FAIL : HVT_EXIT_OK;
}
