// SPDX-License-Identifier: MIT
/*
 * hvtrace stream NAME / stat NAME: a remote read through hvtraced.
 *
 * hvtraced owns the remote's area (it is the single consumer of its
 * rings) and hands each page to every subscriber.  Streaming by name is
 * the loop of streaming an area (cmd_stream.c): each subscribed CPU of
 * the remote is a ring of the core (hvtrace_daemon_ring_open(): its pages
 * on the feed connection, everything else -- remotes, formats, comms --
 * asked on a second one, so no page is ever lost to a request), read by
 * the same cursor, merged by the same hvtrace_merge and printed by the
 * same code.  Its records are decoded with the remote's own formats,
 * their timestamps converted to host CLOCK_MONOTONIC by the ring with the
 * clock model hvtraced sends ahead of the pages (no round trip).
 *
 * A rig guest's kernel ring (daemon_kring.c) joins the same merge: each
 * of its CPUs is a ring too (hvtrace_ring_open_source() over
 * hvtrace_daemon_kring_read_page()), its mono timestamps through the same
 * model as the agent's.  With --kernel the host kernel joins as well
 * (hvtrace_tracedat_kernel_open(): a tracefs instance on the mono trace
 * clock, the host's CLOCK_MONOTONIC, so its times need no conversion):
 * its rings are decoded with the host's formats and printed with a
 * "host: " prefix, as trace-cmd report starts a buffer's lines with its
 * name.  --drain (and a writer that stopped) asks hvtraced to read the
 * remote to its end at our pace (hvtrace_daemon_feed_drain_start()); once
 * it answered, the host kernel is read up to that moment, not what it
 * keeps writing (its own events about this reader).
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hvtrace.h>
#include <hvtrace-ring.h>
#include <hvtrace-tracedat.h>

#include "cli.h"
#include "daemon_src.h"
#include "stream.h"
#include <hvtrace-daemon.h>

#define RS_REFRESH_NS	 250000000ULL /* remote state polls */
#define RS_HOST_INSTANCE "hvtrace-stream-%d" /* the private instance */

/* --- the guest kernel's ring beside, as source rings ------------------- */

struct rs_kring {
	struct st_state *s;
	uint32_t cpu;
	uint32_t seq; /* each page a sub-buffer of its own */
};

static int rs_kring_next_page(void *ctx, int cpu, struct hvtrace_ring_page *pg)
{
	struct rs_kring *k = ctx;
	const uint8_t *data;
	uint32_t len;
	int ret;

	(void)cpu;
	ret = hvtrace_daemon_kring_read_page(k->s->dkr, k->cpu, &data, &len);
	if (ret <= 0)
		return ret;
	memset(pg, 0, sizeof(*pg));
	pg->data = data;
	pg->len = len;
	pg->seq = ++k->seq;
	return 1;
}

/* Its mono trace clock is the agent's: the remote's clock model maps it. */
static int rs_kring_to_host(void *ctx, int cpu, uint64_t ts, uint64_t *ns,
			    uint64_t *err_ns)
{
	struct rs_kring *k = ctx;
	int ret;

	(void)cpu;
	ret = hvtrace_daemon_feed_ts_to_host(k->s->feed, k->s->rrec.id, ts, ns,
					     err_ns);
	if (ret != -ENODATA)
		return ret;
	return hvtrace_daemon_feed_to_host(k->s->feed, k->s->rrec.id, &ts, ns,
					   1, err_ns);
}

static void rs_kring_close(void *ctx, int cpu)
{
	(void)cpu;
	free(ctx);
}

static const struct hvtrace_ring_source_ops rs_kring_ops = {
	.next_page = rs_kring_next_page,
	.to_host = rs_kring_to_host,
	.close = rs_kring_close,
};

/* --- opening ------------------------------------------------------------ */

static int rs_fail(void)
{
	return hvt_cli_error(VERB, "%s", hvtrace_last_error());
}

/* The host kernel beside: its instance on the mono trace clock. */
static int rs_host_open(struct st_state *s)
{
	const char *inst = s->instance;

	if (!inst) {
		snprintf(s->hinst, sizeof(s->hinst), RS_HOST_INSTANCE,
			 (int)getpid());
		inst = s->hinst;
	}
	if (hvtrace_tracedat_kernel_open(inst, (const char *const *)s->events,
					 &s->hk))
		return hvt_cli_error(VERB, "the host kernel: %s",
				     hvtrace_last_error());
	if (hvtrace_decoder_new_kernel(NULL, &s->hdec))
		return rs_fail();
	hvtrace_decoder_load_cmdlines(s->hdec, NULL);
	fprintf(stderr,
		"hvtrace stream: '%s': the host kernel's events (instance %s, "
		"%u CPUs, trace clock mono) beside, their lines start with "
		"'host: '\n",
		s->spec, inst, hvtrace_tracedat_kernel_nr_cpus(s->hk));
	return 0;
}

static int rs_add(struct st_state *s, struct hvtrace_ring *ring,
		  enum st_src src, int cpu)
{
	struct st_cpu *c = &s->cpus[s->nr++];

	c->ring = ring;
	c->src = src;
	c->cpu = cpu;
	return 0;
}

/* The rings: the remote's CPUs, its guest kernel's, the host kernel's. */
static int rs_open_rings(struct st_state *s)
{
	uint32_t nk = s->dkr ? hvtrace_daemon_kring_cpus(s->dkr) : 0;
	uint32_t nh = s->hk ? hvtrace_tracedat_kernel_nr_cpus(s->hk) : 0;
	struct hvtrace_ring *ring;
	uint32_t cpu;

	s->cpus = calloc((size_t)s->rrec.nr_cpus + nk + nh, sizeof(*s->cpus));
	if (!s->cpus)
		return hvt_cli_error(VERB, "out of memory");
	for (cpu = 0; cpu < s->rrec.nr_cpus; cpu++) {
		if (s->only_cpu >= 0 && (int)cpu != s->only_cpu)
			continue;
		if (hvtrace_daemon_ring_open(s->feed, s->rrec.id, (int)cpu,
					     &ring))
			return rs_fail();
		rs_add(s, ring, ST_SRC_REMOTE, (int)cpu);
	}
	for (cpu = 0; cpu < nk; cpu++) {
		struct rs_kring *k;

		if (s->only_cpu >= 0 && (int)cpu != s->only_cpu)
			continue;
		k = calloc(1, sizeof(*k));
		if (!k)
			return hvt_cli_error(VERB, "out of memory");
		k->s = s;
		k->cpu = cpu;
		if (hvtrace_ring_open_source(
			    &rs_kring_ops, k, (int)cpu,
			    hvtrace_daemon_kring_subbuf_size(s->dkr), &ring)) {
			free(k);
			return hvt_cli_error(VERB, "the guest kernel's ring: %s",
					     hvtrace_last_error());
		}
		rs_add(s, ring, ST_SRC_GKERNEL, (int)cpu);
	}
	for (cpu = 0; cpu < nh; cpu++) {
		ring = hvtrace_tracedat_kernel_ring(s->hk, cpu);
		if (ring)
			rs_add(s, ring, ST_SRC_HOST, (int)cpu);
	}
	if (!s->nr)
		return hvt_cli_error(VERB, "'%s': no CPU to read", s->spec);
	return 0;
}

/* A remote hvtraced attached again after a restart whose area file is
 * gone: which file (TEXT INFO's "missing: " line) and what to do. */
static int rs_missing(struct st_state *s)
{
	char *text = NULL, *p = NULL, *end;
	size_t len = 0;
	int ret;

	if (!hvtrace_daemon_get_text(s->dc, s->rrec.id, HVT_TEXT_INFO, &text,
				     &len) &&
	    text && (p = strstr(text, "\nmissing: "))) {
		p += strlen("\nmissing: ");
		end = strchr(p, '\n');
		if (end)
			*end = '\0';
	}
	ret = hvt_cli_error(VERB,
			    "'%s' is missing, nothing to read: its area file "
			    "%s is gone (hvtraced attached it again after a "
			    "restart); create it again at that path, attach "
			    "it again, or forget it with 'hvtrace daemon "
			    "detach %s'",
			    s->rrec.name, p ? p : "(see 'hvtrace daemon info')",
			    s->rrec.name);
	free(text);
	return ret;
}

int st_open_remote(struct st_state *s)
{
	int ret;

	if (hvtrace_daemon_open(s->sock, &s->dc) ||
	    hvtrace_daemon_find_remote(s->dc, s->spec, &s->rrec))
		return rs_fail();
	if (s->rrec.state == HVT_REMOTE_MISSING)
		return rs_missing(s);
	if (!s->rrec.nr_cpus)
		return hvt_cli_error(VERB,
				     "the area of '%s' is not "
				     "attached yet (see 'hvtrace "
				     "daemon info --remote %s')",
				     s->rrec.name, s->rrec.name);
	if (s->only_cpu >= 0 && (uint32_t)s->only_cpu >= s->rrec.nr_cpus)
		return hvt_cli_usage(VERB, "--cpu %d: '%s' has CPUs 0..%u",
				     s->only_cpu, s->rrec.name,
				     s->rrec.nr_cpus - 1);
	if (s->rrec.transport == HVT_TRANSPORT_KRING)
		fprintf(stderr, "hvtrace stream: '%s' is a guest kernel ring "
			"read by VMM pid: times are the guest's own trace "
			"clock (no clock model)\n", s->rrec.name);
	/* A guest agent's clock is mono: its kernel ring can join. */
	if (!s->no_guest_kernel && s->rrec.clock_id == HVT_CLOCK_MONO_NS) {
		ret = hvt_cli_kring_open(VERB, s->dc, s->rrec.id, s->rrec.name,
					 s->dkformats, sizeof(s->dkformats),
					 &s->dkr);
		if (ret)
			return ret;
	}
	if (s->host_kernel) {
		ret = rs_host_open(s);
		if (ret)
			return ret;
	}
	if (hvtrace_daemon_events_get(s->dc, s->rrec.id, &s->evs) ||
	    hvtrace_daemon_decoder_new(&s->rrec, &s->evs, &s->dec))
		return rs_fail();
	hvtrace_daemon_comms_load(s->dc, s->rrec.id, s->dec);
	if (hvtrace_daemon_feed_open(s->sock, &s->feed))
		return rs_fail();
	return rs_open_rings(s);
}

/* The rings first (they unsubscribe through the feed), then the rest. */
void st_close_remote(struct st_state *s)
{
	unsigned int i;

	hvtrace_merge_free(s->merge);
	s->merge = NULL;
	for (i = 0; s->cpus && i < s->nr; i++)
		if (s->cpus[i].src != ST_SRC_HOST)
			hvtrace_ring_close(s->cpus[i].ring);
	free(s->cpus);
	s->cpus = NULL;
	s->nr = 0;
	hvtrace_decoder_free(s->hdec);
	hvtrace_tracedat_kernel_close(s->hk);
	hvt_cli_kring_close(s->dkr, s->dkformats);
	hvtrace_daemon_events_free(&s->evs);
	hvtrace_daemon_feed_close(s->feed);
	hvtrace_daemon_close(s->dc);
}

/* --- the loop's hooks --------------------------------------------------- */

int st_remote_check(struct st_state *s)
{
	struct hvt_remote_rec *v;
	uint32_t n;
	int ret;

	ret = hvtrace_daemon_get_remotes(s->dc, &v, &n);
	if (!ret) {
		ret = (int)hvtrace_daemon_remote_now(v, n, &s->rrec, NULL);
		free(v);
	}
	if (ret == HVTRACE_DAEMON_REMOTE_GONE) {
		fprintf(stderr, "hvtrace stream: '%s' was detached from "
				"hvtraced\n",
			s->rrec.name);
		return 2;
	}
	if (ret < 0)
		return -rs_fail();
	if (ret == HVTRACE_DAEMON_REMOTE_NEW_RUN) {
		fprintf(stderr, "hvtrace stream: the writer re-formatted the "
				"area (a new run); stopping\n");
		return 2;
	}
	/* An area's writer that stopped or died: read it to the end and
	 * stop, unless --follow. */
	if (ret == HVTRACE_DAEMON_REMOTE_STOPPED && !s->follow) {
		fprintf(stderr, "hvtrace stream: '%s' stopped (its writer or "
				"VMM ended); reading to the end\n",
			s->rrec.name);
		return 1;
	}
	/* Kernel copy mode: the agent copied its last page and left; the
	 * same. */
	if (s->dkr && !s->follow && hvtrace_daemon_kring_finished(s->dkr)) {
		fprintf(stderr,
			"hvtrace stream: the agent of '%s' stopped copying "
			"the guest kernel's pages; reading to the end\n",
			s->rrec.name);
		return 1;
	}
	return 0;
}

uint64_t st_remote_time(struct st_state *s, const struct st_cpu *c,
			const struct hvtrace_record *rec, uint64_t *err_ns)
{
	uint64_t ns;

	if (c->src == ST_SRC_HOST) {
		*err_ns = 0; /* the mono trace clock: the host's own */
		return rec->ts;
	}
	/* The ring converted it; the bound of the model it used. */
	if (hvtrace_daemon_feed_ts_to_host(s->feed, s->rrec.id, rec->ts, &ns,
					   err_ns))
		*err_ns = UINT64_MAX;
	return rec->host_ns;
}

/* Name a loopback writer's threads from /proc (it runs on this host). */
static void rs_comm(struct st_state *s, int pid)
{
	uint64_t now;
	unsigned int i;

	if (pid <= 0 || hvtrace_decoder_comm(s->dec, pid))
		return;
	if (s->rrec.writer_kind == HVT_WRITER_LOOPBACK) {
		/* Each new pid at once; one /proc had no name for (a thread
		 * that ended) again at most once a second, not per event. */
		now = hvt_cli_now_ns();
		for (i = 0; i < s->nr_tried && s->tried[i] != pid; i++)
			;
		if (i < s->nr_tried && now - s->comm_tried_ns < 1000000000ULL)
			return;
		if (i == s->nr_tried &&
		    s->nr_tried < sizeof(s->tried) / sizeof(s->tried[0]))
			s->tried[s->nr_tried++] = pid;
		if (i < s->nr_tried)
			s->comm_tried_ns = now;
		hvtrace_daemon_comm_local(s->dec, pid);
		return;
	}
	/* A guest's writer: its agent reports comms; ask again now and
	 * then. */
	now = hvt_cli_now_ns();
	if (now - s->comm_tried_ns >= 1000000000ULL) {
		s->comm_tried_ns = now;
		hvtrace_daemon_comms_load(s->dc, s->rrec.id, s->dec);
	}
}

struct hvtrace_decoder *st_remote_decoder(struct st_state *s,
					  const struct st_cpu *c, int pid)
{
	struct hvtrace_decoder *dec;
	const char *comm;
	uint64_t now;

	switch (c->src) {
	case ST_SRC_HOST:
		/* The host's pids from its saved_cmdlines, read again at
		 * most once a second for a pid it did not have (as
		 * trace_pipe looks them up). */
		if (pid > 0 && !hvtrace_decoder_comm(s->hdec, pid)) {
			now = hvt_cli_now_ns();
			if (now - s->hcomm_ns >= 1000000000ULL) {
				s->hcomm_ns = now;
				hvtrace_decoder_load_cmdlines(s->hdec, NULL);
			}
		}
		return s->hdec;
	case ST_SRC_GKERNEL:
		/* The kernel's and the agent's pids are the same guest's:
		 * what the agent named, the kernel's lines show too. */
		dec = hvtrace_daemon_kring_decoder(s->dkr);
		if (pid > 0 && !hvtrace_decoder_comm(dec, pid) &&
		    (comm = hvtrace_decoder_comm(s->dec, pid)))
			hvtrace_decoder_set_comm(dec, pid, comm);
		return dec;
	default:
		if (pid != INT_MIN)
			rs_comm(s, pid);
		return s->dec;
	}
}

/* What the source rings were given: pages and their bytes (headers
 * included), as received from hvtraced and the guest kernel's ring. */
static void rs_ring_totals(struct st_state *s, unsigned long long *pages,
			   unsigned long long *bytes)
{
	struct hvtrace_ring_source_stats st;
	unsigned int i;

	*pages = *bytes = 0;
	for (i = 0; i < s->nr; i++)
		if (s->cpus[i].src != ST_SRC_HOST &&
		    !hvtrace_ring_source_stats(s->cpus[i].ring, &st)) {
			*pages += st.pages;
			*bytes += st.page_bytes;
		}
}

void st_remote_status(struct st_state *s, double secs)
{
	unsigned long long pages, bytes;

	rs_ring_totals(s, &pages, &bytes);
	fprintf(stderr,
		"\r\033[K%s: %llu events  %.0f events/s  %llu lost  "
		"%llu bytes",
		s->rrec.name, s->printed,
		secs > 0 ? (double)s->printed / secs : 0, s->lost, bytes);
}

void st_remote_summary(struct st_state *s, double secs)
{
	static const char *const what[] = {
		[ST_SRC_OWN] = "",
		[ST_SRC_REMOTE] = "",
		[ST_SRC_GKERNEL] = "guest kernel ",
		[ST_SRC_HOST] = "host kernel ",
	};
	unsigned long long pages, bytes, errors = 0;
	unsigned int i;

	/* As for an area: a malformed page is an error of its CPU (its
	 * events reported lost, the stream went on). */
	for (i = 0; i < s->nr; i++) {
		struct st_cpu *c = &s->cpus[i];
		unsigned long long e = hvtrace_ring_errors(c->ring);

		errors += e;
		fprintf(stderr, "  %scpu %d: %llu events, %llu lost%s, %llu "
			"errors\n",
			what[c->src], c->cpu, c->events, c->lost,
			c->lost_unknown ? " (and an unknown number)" : "", e);
	}
	rs_ring_totals(s, &pages, &bytes);
	fprintf(stderr,
		"hvtrace stream: %s: %llu events, %llu lost, %llu errors, "
		"%llu pages in %.3f s (%.0f events/s)\n",
		s->rrec.name, s->printed, s->lost, errors, pages, secs,
		secs > 0 ? (double)s->printed / secs : 0.0);
}

/* --- stat --------------------------------------------------------------- */

static void st_ts(const char *label, uint64_t ns)
{
	unsigned long long us = (ns + 500) / 1000;

	printf("%s %5llu.%06llu\n", label, us / 1000000, us % 1000000);
}

int hvt_cli_stat_remote(const char *name, const char *sock, int only_cpu)
{
	struct hvt_m_stats *st = NULL;
	struct hvtrace_daemon_feed *feed = NULL;
	struct hvtrace_daemon *dc = NULL;
	struct hvt_remote_rec rec;
	uint64_t *ts = NULL;
	uint32_t n = 0, i;
	char *info = NULL;
	int rc = HVT_EXIT_OK;

	if (hvtrace_daemon_open(sock, &dc) ||
	    hvtrace_daemon_find_remote(dc, name, &rec)) {
		rc = hvt_cli_error("stat", "%s", hvtrace_last_error());
		goto out;
	}
	if (only_cpu >= 0 && (uint32_t)only_cpu >= rec.nr_cpus) {
		rc = hvt_cli_usage("stat", "--cpu %d: '%s' has %u CPUs",
				   only_cpu, name, rec.nr_cpus);
		goto out;
	}
	st = calloc(rec.nr_cpus + 1, sizeof(*st));
	ts = calloc(2 * (size_t)rec.nr_cpus + 2, sizeof(*ts));
	if (!st || !ts) {
		rc = hvt_cli_error("stat", "out of memory");
		goto out;
	}
	/* One record per CPU; their writer-clock stamps to host time with
	 * the daemon's model (a feed connection converts; it subscribes to
	 * nothing). */
	if (hvtrace_daemon_stats_get(dc, rec.id, rec.nr_cpus, st, &n) ||
	    hvtrace_daemon_feed_open(sock, &feed) ||
	    hvtrace_daemon_feed_stats_to_host(feed, rec.id, st, n, ts)) {
		rc = hvt_cli_error("stat", "%s", hvtrace_last_error());
		goto out;
	}
	if (!hvtrace_daemon_get_text(dc, rec.id, HVT_TEXT_INFO, &info, NULL)) {
		/* The remote's summary, as hvtrace daemon info prints it. */
		printf("%s", info);
		free(info);
	}
	for (i = 0; i < n; i++) {
		const uint64_t *v = st[i].v;

		if (only_cpu >= 0 && st[i].cpu != (uint32_t)only_cpu)
			continue;
		printf("\nCPU %u:\n", st[i].cpu);
		if (st[i].status) {
			printf("unreadable: %s\n", strerror(-st[i].status));
			rc = HVT_EXIT_FAIL;
			continue;
		}
		printf("entries: %llu\n", (unsigned long long)v[1]);
		printf("overrun: %llu\n", (unsigned long long)(v[2] + v[4]));
		printf("commit overrun: 0\n");
		printf("bytes: %llu\n", (unsigned long long)v[9]);
		st_ts("oldest event ts:", v[1] ? ts[2 * i] : 0);
		st_ts("now ts:", v[0] ? ts[2 * i + 1] : 0);
		printf("dropped events: %llu\n", (unsigned long long)v[3]);
		printf("unplaced: %llu\n", (unsigned long long)v[14]);
		printf("read events: %llu\n", (unsigned long long)v[8]);
		printf("written: %llu\n", (unsigned long long)v[0]);
		printf("lost: %llu\n", (unsigned long long)v[5]);
		printf("not yet reported lost: %llu\n",
		       (unsigned long long)v[6]);
		printf("errors: %llu\n", (unsigned long long)v[10]);
	}
out:
	free(st);
	free(ts);
	hvtrace_daemon_feed_close(feed);
	hvtrace_daemon_close(dc);
	return rc;
}
