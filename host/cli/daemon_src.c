// SPDX-License-Identifier: MIT
/*
 * hvtrace stream NAME / stat NAME: a remote read through hvtraced.
 *
 * hvtraced owns the remote's area (it is the single consumer of its
 * rings) and hands each page to every subscriber.  Streaming by name reads
 * the remote the way stream reads an area (cmd_stream.c): every CPU is a
 * ring of the core, the rings go into one hvtrace_merge, and each record
 * it returns is printed by its source's decoder.  The rings are
 *
 *   - the remote's CPUs (hvtrace_daemon_ring_open(): each subscribes its
 *     CPU on the page feed; times on the host's CLOCK_MONOTONIC through
 *     the clock model hvtraced sends ahead of the pages, converted here,
 *     no round trip);
 *   - a rig guest's kernel ring (daemon_kring.c), its CPUs after the
 *     remote's (hvtrace_daemon_kring_ring_open(): its mono times through
 *     the same model as the agent's);
 *   - with --kernel, the host kernel (hvtrace_tracedat_kernel_open(): a
 *     tracefs instance on the mono trace clock, the host's
 *     CLOCK_MONOTONIC, so its times need no conversion): its CPUs last,
 *     decoded with the host's formats and printed with a "host: " prefix,
 *     as trace-cmd report starts a buffer's lines with its name.
 *
 * Everything per record is the core's (validation, the one copy into the
 * reader page, time conversion, losses as rec->lost_before, ordering);
 * what is this file's is the printing: which decoder, the comms, the
 * "host: " prefix and the clock notes.  Everything else (remotes, formats,
 * comms) is asked on a second connection, so no page waits for a request.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hvtrace.h>
#include <hvtrace-tracedat.h>

#include "cli.h"
#include "daemon_src.h"
#include <hvtrace-daemon.h>

#define RS_REFRESH_NS 250000000ULL /* remote state polls */
#define RS_STATUS_NS  500000000ULL
#define RS_WAIT_MS    20 /* longest sleep for a page */
#define RS_EMIT_MAX	 65536u /* records printed between state checks */
#define RS_HOST_INSTANCE "hvtrace-stream-%d" /* the private instance */

enum rs_kind { RS_REMOTE, RS_GUEST_KERNEL, RS_HOST_KERNEL };

/* One ring of the merge: a CPU of one source. */
struct rs_q {
	struct hvtrace_ring *ring; /* the host kernel's are its handle's */
	enum rs_kind kind;
	int cpu;
	unsigned long long events, lost;
	bool lost_unknown;
};

struct rs {
	const struct hvt_rstream_opts *o;
	const char *verb;
	struct hvtrace_daemon *dc;
	struct hvtrace_daemon_feed *feed;
	struct hvt_remote_rec rec;
	struct hvtrace_daemon_events evs;
	struct hvtrace_decoder *dec;
	struct hvtrace_daemon_kring *kr; /* the guest kernel's ring, or NULL */
	struct hvtrace_tracedat_kernel *hk; /* the host kernel, or NULL */
	struct hvtrace_decoder *hdec;	    /* ... its formats */
	uint64_t hcomm_ns;		    /* last saved_cmdlines read */
	char hinst[64];			    /* its private instance's name */
	char kformats[PATH_MAX];	    /* the guest kernel's formats */
	struct rs_q *q;			    /* remote, guest kernel, host */
	uint32_t nr_q;
	struct hvtrace_merge *merge;
	uint64_t comm_tried_ns;
	int tried[256]; /* loopback pids /proc was asked for */
	unsigned int nr_tried;
	uint64_t local_tried_ns; /* ... last asked again */
	unsigned long long printed, lost;
	char *line;
	size_t line_cap;
	bool out_broken;
	struct hvt_cli_order order; /* the latest time printed */
	bool clock_said, own_said; /* its clock, said on stderr */
};

static int rs_fail(struct rs *s)
{
	return hvt_cli_error(s->verb, "%s", hvtrace_last_error());
}

static void rs_write(struct rs *s, const char *buf, size_t len)
{
	if (s->out_broken)
		return;
	if (fwrite(buf, 1, len, stdout) != len)
		s->out_broken = true; /* EPIPE (| head) or a full disk */
}

/* Name a loopback writer's threads from /proc (it runs on this host). */
static void rs_comm(struct rs *s, int pid)
{
	uint64_t now;
	unsigned int i;

	if (pid <= 0 || hvtrace_decoder_comm(s->dec, pid))
		return;
	if (s->rec.writer_kind == HVT_WRITER_LOOPBACK) {
		/* Each new pid at once; one /proc had no name for (a thread
		 * that ended) again at most once a second, not per event. */
		now = hvt_cli_now_ns();
		for (i = 0; i < s->nr_tried && s->tried[i] != pid; i++)
			;
		if (i < s->nr_tried) {
			if (now - s->local_tried_ns < 1000000000ULL)
				return;
			s->local_tried_ns = now;
		} else if (s->nr_tried < sizeof(s->tried) / sizeof(s->tried[0])) {
			s->tried[s->nr_tried++] = pid;
		}
		hvtrace_daemon_comm_local(s->dec, pid);
		return;
	}
	/* A guest's writer: its agent reports comms; ask again now and
	 * then. */
	now = hvt_cli_now_ns();
	if (now - s->comm_tried_ns >= 1000000000ULL) {
		s->comm_tried_ns = now;
		hvtrace_daemon_comms_load(s->dc, s->rec.id, s->dec);
	}
}

/* Name the host's pids from its saved_cmdlines, read again at most once a
 * second for a pid it did not have (as trace_pipe looks them up). */
static void rs_hcomm(struct rs *s, int pid)
{
	uint64_t now;

	if (pid <= 0 || hvtrace_decoder_comm(s->hdec, pid))
		return;
	now = hvt_cli_now_ns();
	if (now - s->hcomm_ns >= 1000000000ULL) {
		s->hcomm_ns = now;
		hvtrace_decoder_load_cmdlines(s->hdec, NULL);
	}
}

/* The pid of @rec named in its decoder, @dec, before it is printed. */
static void rs_name_pid(struct rs *s, const struct rs_q *q,
			struct hvtrace_decoder *dec,
			const struct hvtrace_record *rec)
{
	const char *comm;
	int32_t pid;

	if (rec->size < 8)
		return;
	memcpy(&pid, (const uint8_t *)rec->data + 4, 4);
	if (q->kind == RS_HOST_KERNEL) {
		rs_hcomm(s, pid);
	} else if (q->kind == RS_REMOTE) {
		rs_comm(s, pid);
	} else if (pid > 0 && !hvtrace_decoder_comm(dec, pid) &&
		   (comm = hvtrace_decoder_comm(s->dec, pid))) {
		/* The kernel's and the agent's pids are the same guest's:
		 * what the agent named, the kernel's lines show too. */
		hvtrace_decoder_set_comm(dec, pid, comm);
	}
}

/* Why a remote's times are not on the host's clock. */
static const char *rs_own_why(const struct rs *s)
{
	return s->rec.transport == HVT_TRANSPORT_KRING
		       ? "a guest kernel ring (by VMM pid or RAM file): no "
			 "clock model"
		       : "hvtraced has no clock model of it: no time sync";
}

/* The remote's times cannot join the host kernel's timeline. */
static int rs_own_refuse(struct rs *s)
{
	return hvt_cli_error(s->verb,
			     "'%s': its times are the writer's own, not the "
			     "host's CLOCK_MONOTONIC (%s), so they cannot be "
			     "merged by time with the host kernel's: leave "
			     "out --kernel to stream '%s' on its own clock, "
			     "or record both ('hvtrace record -k', which "
			     "labels its buffer's clock 'writer')",
			     s->rec.name, rs_own_why(s), s->rec.name);
}

/*
 * The clock of a remote's record (@err: its bound): on the host's, the
 * bound said once; the writer's own (no clock model), said once, and
 * never merged with the host kernel's lines.
 */
static int rs_clock_note(struct rs *s, uint64_t err)
{
	if (err == UINT64_MAX) {
		if (s->hk)
			return rs_own_refuse(s);
		if (!s->own_said)
			fprintf(stderr,
				"hvtrace stream: '%s': times are the writer's "
				"own (clock 'writer'), not the host's "
				"CLOCK_MONOTONIC (%s)\n",
				s->rec.name, rs_own_why(s));
		s->own_said = true;
		return 0;
	}
	if (err && !s->clock_said)
		fprintf(stderr,
			"hvtrace stream: '%s': times on the host's "
			"CLOCK_MONOTONIC through hvtraced's clock model "
			"(error bound +-%.1f us)\n",
			s->rec.name, (double)err / 1e3);
	s->clock_said = true;
	return 0;
}

/*
 * The error bound of @rec's host time: 0 for the host kernel's own clock;
 * for the guest's, the bound of the model the feed holds now (the one the
 * ring converted with, or a newer fit), UINT64_MAX where there is none.
 */
static uint64_t rs_err(struct rs *s, const struct rs_q *q,
		       const struct hvtrace_record *rec)
{
	struct hvtrace_ring_source_stats st;
	uint64_t ns, err;

	if (q->kind == RS_HOST_KERNEL)
		return 0;
	if (!hvtrace_daemon_feed_ts_to_host(s->feed, s->rec.id, rec->ts, &ns,
					    &err))
		return err;
	/* An hvtraced that sends no model: the ring asked it (TO_HOST). */
	if (hvtrace_ring_source_stats(q->ring, &st) || st.map_errors)
		return UINT64_MAX;
	return st.err_ns;
}

/* Losses before a record of @q, or that no record followed. */
static void rs_lost(struct rs *s, struct rs_q *q, uint64_t lost)
{
	char buf[64];
	int n;

	if (lost == HVTRACE_LOST_UNKNOWN) {
		q->lost_unknown = true;
	} else {
		q->lost += lost;
		s->lost += lost;
	}
	n = hvtrace_format_lost(q->cpu, lost, buf, sizeof(buf));
	if (n > 0 && q->kind == RS_HOST_KERNEL)
		rs_write(s, "host: ", 6);
	if (n > 0)
		rs_write(s, buf, (size_t)n);
}

static int rs_print(struct rs *s, struct rs_q *q, struct hvtrace_record *rec)
{
	bool host = q->kind == RS_HOST_KERNEL;
	struct hvtrace_decoder *dec =
		host ? s->hdec
		: q->kind == RS_GUEST_KERNEL
			? hvtrace_daemon_kring_decoder(s->kr)
			: s->dec;
	uint64_t err = rs_err(s, q, rec);
	int n;

	if (!host && rs_clock_note(s, err))
		return -1;
	/* A refitted model moves converted times: stream_order.c's rule
	 * keeps the output in time order. */
	rec->host_ns = hvt_cli_order_time(&s->order, rec->host_ns, err);
	if (rec->lost_before)
		rs_lost(s, q, rec->lost_before);
	rs_name_pid(s, q, dec, rec);
	for (;;) {
		n = hvtrace_decoder_format(dec, rec, rec->host_ns, 0, s->line,
					   s->line_cap);
		if (n < 0)
			return rs_fail(s);
		if ((size_t)n < s->line_cap)
			break;
		free(s->line);
		s->line_cap = (size_t)n + 1;
		s->line = malloc(s->line_cap);
		if (!s->line)
			return hvt_cli_error(s->verb, "out of memory");
	}
	if (host)
		rs_write(s, "host: ", 6);
	rs_write(s, s->line, (size_t)n);
	q->events++;
	s->printed++;
	return 0;
}

/*
 * Print what the merge lets go (at most RS_EMIT_MAX records): the oldest
 * record once every ring has one pending, once it waited the window, or
 * everything when flushing, then the losses no record followed.  Pages of
 * no ring are not kept.  Returns the records printed, -1 on an error, or
 * -2 when --count was reached.
 */
static int rs_emit(struct rs *s, bool flush)
{
	struct hvtrace_daemon_page *pg;
	struct hvtrace_record rec;
	unsigned int n = 0;
	uint32_t i;
	int ret;

	while (n < RS_EMIT_MAX && !s->out_broken) {
		ret = hvtrace_merge_next(s->merge, &rec, flush);
		if (ret < 0)
			return rs_fail(s), -1;
		if (!ret)
			break;
		ret = hvtrace_merge_last_ring(s->merge);
		if (ret < 0 || (uint32_t)ret >= s->nr_q ||
		    rs_print(s, &s->q[ret], &rec))
			return -1;
		n++;
		if (s->o->count && s->printed >= s->o->count)
			return -2;
	}
	while (hvtrace_daemon_feed_pending(s->feed) &&
	       hvtrace_daemon_feed_next(s->feed, 0, &pg) > 0)
		free(pg);
	if (flush && n < RS_EMIT_MAX)
		for (i = 0; i < s->nr_q; i++) {
			uint64_t lost =
				hvtrace_ring_take_trailing_lost(s->q[i].ring);

			if (lost)
				rs_lost(s, &s->q[i], lost);
		}
	return (int)n;
}

/* Everything out of the merge, however long it takes. */
static int rs_flush(struct rs *s)
{
	int ret;

	while ((ret = rs_emit(s, true)) > 0)
		;
	return ret == -2 ? 0 : ret;
}

/* Wait up to @ms for bytes from hvtraced. */
static void rs_wait(struct rs *s, int ms)
{
	struct pollfd pfd = {.fd = hvtrace_daemon_feed_fd(s->feed),
			     .events = POLLIN};

	poll(&pfd, 1, ms);
}

/* Pages and bytes the source rings took (the summary, the status line). */
static void rs_taken(const struct rs *s, unsigned long long *pages,
		     unsigned long long *bytes)
{
	struct hvtrace_ring_source_stats st;
	uint32_t i;

	*pages = *bytes = 0;
	for (i = 0; i < s->nr_q; i++)
		if (!hvtrace_ring_source_stats(s->q[i].ring, &st)) {
			*pages += st.pages;
			*bytes += st.copied;
		}
}

static void rs_status(struct rs *s, uint64_t t0, bool final)
{
	double secs = (double)(hvt_cli_now_ns() - t0) / 1e9;
	unsigned long long pages, bytes;

	if (final) {
		fprintf(stderr, "\r\033[K");
		return;
	}
	rs_taken(s, &pages, &bytes);
	fprintf(stderr,
		"\r\033[K%s: %llu events  %.0f events/s  %llu lost  "
		"%llu bytes",
		s->rec.name, s->printed,
		secs > 0 ? (double)s->printed / secs : 0, s->lost, bytes);
}

/* What became of the remote (hvtrace_daemon_remote_now()); -errno. */
static int rs_refresh(struct rs *s)
{
	struct hvt_remote_rec *v;
	uint32_t n;
	int ret;

	ret = hvtrace_daemon_get_remotes(s->dc, &v, &n);
	if (ret)
		return ret;
	ret = (int)hvtrace_daemon_remote_now(v, n, &s->rec, NULL);
	free(v);
	return ret;
}

/* The host kernel beside: its instance on the mono trace clock. */
static int rs_host_open(struct rs *s)
{
	const char *inst = s->o->kernel_instance;

	if (!inst) {
		snprintf(s->hinst, sizeof(s->hinst), RS_HOST_INSTANCE,
			 (int)getpid());
		inst = s->hinst;
	}
	if (hvtrace_tracedat_kernel_open(inst, s->o->kernel_events, &s->hk))
		return hvt_cli_error(s->verb, "the host kernel: %s",
				     hvtrace_last_error());
	if (hvtrace_decoder_new_kernel(NULL, &s->hdec))
		return rs_fail(s);
	hvtrace_decoder_load_cmdlines(s->hdec, NULL);
	fprintf(stderr,
		"hvtrace stream: '%s': the host kernel's events (instance %s, "
		"%u CPUs, trace clock mono) beside, their lines start with "
		"'host: '\n",
		s->o->name, inst, hvtrace_tracedat_kernel_nr_cpus(s->hk));
	return 0;
}

/* A remote hvtraced attached again after a restart whose area file is
 * gone: which file (TEXT INFO's "missing: " line) and what to do. */
static int rs_missing(struct rs *s)
{
	char *text = NULL, *p = NULL, *end;
	size_t len = 0;
	int ret;

	if (!hvtrace_daemon_get_text(s->dc, s->rec.id, HVT_TEXT_INFO, &text,
				     &len) &&
	    text && (p = strstr(text, "\nmissing: "))) {
		p += strlen("\nmissing: ");
		end = strchr(p, '\n');
		if (end)
			*end = '\0';
	}
	ret = hvt_cli_error(s->verb,
			    "'%s' is missing, nothing to read: its area file "
			    "%s is gone (hvtraced attached it again after a "
			    "restart); create it again at that path, attach "
			    "it again, or forget it with 'hvtrace daemon "
			    "detach %s'",
			    s->rec.name, p ? p : "(see 'hvtrace daemon info')",
			    s->rec.name);
	free(text);
	return ret;
}

/*
 * The host kernel beside a remote: only a remote on the host's clock
 * (a model hvtraced fitted, waited for up to 2 s after an attach).
 */
static int rs_host_clock(struct rs *s)
{
	int i;

	for (i = 0; i < 20 && s->rec.transport != HVT_TRANSPORT_KRING &&
		    s->rec.clock_err_ns == UINT64_MAX;
	     i++) {
		struct timespec ts = {0, 100000000L};

		nanosleep(&ts, NULL);
		if (hvtrace_daemon_find_remote(s->dc, s->o->name, &s->rec))
			return rs_fail(s);
	}
	if (s->rec.transport == HVT_TRANSPORT_KRING ||
	    s->rec.clock_err_ns == UINT64_MAX)
		return rs_own_refuse(s);
	return 0;
}

/* The next ring of the merge, CPU @cpu of source @kind (filled by the
 * caller); NULL: none left (never: rs_rings() counted them). */
static struct rs_q *rs_add_q(struct rs *s, enum rs_kind kind, int cpu)
{
	struct rs_q *q = &s->q[s->nr_q++];

	q->kind = kind;
	q->cpu = cpu;
	return q;
}

/* Every source's CPUs as rings of one merge (--cpu: that CPU of the
 * remote and of the guest kernel; the host kernel's all). */
static int rs_rings(struct rs *s)
{
	uint32_t nr_k = s->kr ? hvtrace_daemon_kring_cpus(s->kr) : 0;
	uint32_t nr_h = s->hk ? hvtrace_tracedat_kernel_nr_cpus(s->hk) : 0;
	struct hvtrace_ring **rings;
	uint32_t c, i;
	int ret;

	s->q = calloc((size_t)s->rec.nr_cpus + nr_k + nr_h, sizeof(*s->q));
	if (!s->q)
		return hvt_cli_error(s->verb, "out of memory");
	for (c = 0; c < s->rec.nr_cpus && !s->o->kernel_only; c++) {
		if (s->o->cpu >= 0 && (int)c != s->o->cpu)
			continue;
		ret = hvtrace_daemon_ring_open(
			s->feed, s->rec.id, (int)c,
			&rs_add_q(s, RS_REMOTE, (int)c)->ring);
		if (ret)
			return hvt_cli_error(s->verb,
					     "cannot read CPU %u of '%s' "
					     "through hvtraced: %s",
					     c, s->rec.name,
					     hvtrace_last_error());
	}
	for (c = 0; c < nr_k; c++) {
		if (s->o->cpu >= 0 && (int)c != s->o->cpu)
			continue;
		ret = hvtrace_daemon_kring_ring_open(
			s->kr, (int)c, s->feed, s->rec.id,
			&rs_add_q(s, RS_GUEST_KERNEL, (int)c)->ring);
		if (ret)
			return hvt_cli_error(s->verb,
					     "the guest kernel's ring: %s",
					     hvtrace_last_error());
	}
	for (c = 0; c < nr_h; c++) {
		struct hvtrace_ring *r = hvtrace_tracedat_kernel_ring(s->hk, c);

		if (r)
			rs_add_q(s, RS_HOST_KERNEL, (int)c)->ring = r;
	}
	rings = calloc(s->nr_q, sizeof(*rings));
	if (!rings)
		return hvt_cli_error(s->verb, "out of memory");
	for (i = 0; i < s->nr_q; i++)
		rings[i] = s->q[i].ring;
	ret = hvtrace_merge_new(rings, s->nr_q,
				(uint64_t)(s->o->window_ms * 1e6), &s->merge);
	free(rings);
	return ret ? rs_fail(s) : 0;
}

static void rs_close_rings(struct rs *s)
{
	uint32_t i;

	hvtrace_merge_free(s->merge);
	for (i = 0; s->q && i < s->nr_q; i++)
		if (s->q[i].kind != RS_HOST_KERNEL)
			hvtrace_ring_close(s->q[i].ring);
	free(s->q);
}

/* --guest-kernel NAME cannot be read through hvtraced (@why): the RAM
 * file is the user's to name. */
static int rs_ram_hint(struct rs *s, const char *why)
{
	const char *shm = getenv("HVT_SHM_DIR");

	return hvt_cli_error(s->verb,
			     "%s; a rig guest's RAM file is read directly "
			     "by its path: 'hvtrace stream "
			     "%s/hvtrace-%s.ram' (kept after the guest ends "
			     "when it was started with --keep-ram)",
			     why, shm && *shm ? shm : "/dev/shm", s->o->name);
}

/*
 * --guest-kernel: the guest kernel's ring that hvtraced serves, alone; a
 * remote without one is refused, naming what to do instead.
 */
static int rs_kernel_only(struct rs *s)
{
	char why[256];
	uint32_t nr;

	if (!s->kr) {
		snprintf(why, sizeof(why),
			 "'%s': hvtraced serves no guest kernel ring of it "
			 "on the host's clock (a rig guest started with "
			 "--kernel-events LIST has one)",
			 s->rec.name);
		return rs_ram_hint(s, why);
	}
	nr = hvtrace_daemon_kring_cpus(s->kr);
	if (s->o->cpu >= 0 && (uint32_t)s->o->cpu >= nr)
		return hvt_cli_usage(s->verb,
				     "--cpu %d: the guest kernel of '%s' has "
				     "CPUs 0..%u",
				     s->o->cpu, s->rec.name, nr - 1);
	return 0;
}

static int rs_open(struct rs *s)
{
	int ret;

	if (hvtrace_daemon_open(s->o->sock, &s->dc) ||
	    hvtrace_daemon_find_remote(s->dc, s->o->name, &s->rec))
		return s->o->kernel_only ? rs_ram_hint(s, hvtrace_last_error())
					 : rs_fail(s);
	if (s->rec.state == HVT_REMOTE_MISSING)
		return rs_missing(s);
	if (!s->rec.nr_cpus)
		return hvt_cli_error(s->verb,
				     "the area of '%s' is not "
				     "attached yet (see 'hvtrace "
				     "daemon info --remote %s')",
				     s->rec.name, s->rec.name);
	if (s->o->cpu >= 0 && !s->o->kernel_only &&
	    (uint32_t)s->o->cpu >= s->rec.nr_cpus)
		return hvt_cli_usage(s->verb, "--cpu %d: '%s' has CPUs 0..%u",
				     s->o->cpu, s->rec.name,
				     s->rec.nr_cpus - 1);
	if (s->rec.transport == HVT_TRANSPORT_KRING && !s->o->host_kernel) {
		/* Said here once, not again at its first record. */
		fprintf(stderr,
			"hvtrace stream: '%s' is a guest kernel ring "
			"(by VMM pid or RAM file): times are the guest's own "
			"trace "
			"clock (no clock model)\n",
			s->rec.name);
		s->own_said = true;
	}
	/* A guest agent's clock is mono: its kernel ring can join. */
	if (!s->o->user_only && s->rec.clock_id == HVT_CLOCK_MONO_NS) {
		hvt_cli_kring_alone = s->o->kernel_only;
		ret = hvt_cli_kring_open(s->verb, s->dc, s->rec.id,
					 s->rec.name, s->kformats,
					 sizeof(s->kformats), &s->kr);
		if (ret)
			return ret;
		if (s->kr)
			hvt_cli_kring_names(s->verb, s->dc, s->rec.id, s->kr);
	}
	if (s->o->kernel_only) {
		ret = rs_kernel_only(s);
		if (ret)
			return ret;
	}
	if (s->o->host_kernel) {
		ret = rs_host_clock(s);
		if (ret)
			return ret;
		ret = rs_host_open(s);
		if (ret)
			return ret;
	}
	s->line_cap = 8192;
	s->line = malloc(s->line_cap);
	if (!s->line)
		return hvt_cli_error(s->verb, "out of memory");
	if (hvtrace_daemon_events_get(s->dc, s->rec.id, &s->evs) ||
	    hvtrace_daemon_decoder_new(&s->rec, &s->evs, &s->dec))
		return rs_fail(s);
	hvtrace_daemon_comms_load(s->dc, s->rec.id, s->dec);
	/* A guest kernel ring attached by pid: hvtraced read its symbols. */
	if (s->rec.transport == HVT_TRANSPORT_KRING &&
	    hvtrace_daemon_ksyms_load(s->dc, s->rec.id, s->dec))
		fprintf(stderr,
			"hvtrace %s: note: the guest kernel's function names "
			"print in hex (never the host's): %s\n",
			s->verb, hvtrace_last_error());
	if (hvtrace_daemon_feed_open(s->o->sock, &s->feed))
		return rs_fail(s);
	return rs_rings(s);
}

static void rs_summary(struct rs *s, double secs)
{
	unsigned long long pages, bytes;
	uint32_t i;

	for (i = 0; i < s->nr_q; i++) {
		struct rs_q *q = &s->q[i];

		fprintf(stderr, "  %scpu %d: %llu events, %llu lost%s\n",
			q->kind == RS_HOST_KERNEL    ? "host kernel "
			: q->kind == RS_GUEST_KERNEL ? "guest kernel "
						     : "",
			q->cpu, q->events, q->lost,
			q->lost_unknown ? " (and an unknown number)" : "");
	}
	rs_taken(s, &pages, &bytes);
	fprintf(stderr,
		"hvtrace stream: %s: %llu events, %llu lost, %llu "
		"pages in %.3f s (%.0f events/s)\n",
		s->rec.name, s->printed, s->lost, pages, secs,
		secs > 0 ? (double)s->printed / secs : 0.0);
}

/*
 * --drain, or a remote that stopped: everything it committed until now
 * (hvtraced reads it at the pace the rings take it), the host kernel up
 * to now (not what it keeps writing about this reader), then the end.
 * Returns 0 or -1.
 */
static int rs_drain(struct rs *s)
{
	uint64_t idle_since = hvt_cli_now_ns();
	int ret, n;

	if (hvtrace_daemon_feed_drain_start(s->feed, s->rec.id))
		return rs_fail(s), -1;
	while (!hvt_cli_stop_signal && !s->out_broken) {
		n = rs_emit(s, false);
		if (n == -2)
			return 0;
		if (n < 0)
			return -1;
		ret = hvtrace_daemon_feed_drained(s->feed);
		if (ret < 0)
			return rs_fail(s), -1;
		if (ret)
			break;
		if (n) {
			idle_since = hvt_cli_now_ns();
			continue;
		}
		if (hvt_cli_now_ns() - idle_since >=
		    (uint64_t)HVTRACE_DAEMON_TIMEOUT_MS * 1000000ULL)
			return hvt_cli_error(s->verb,
					     "hvtraced did not answer a DRAIN "
					     "within %d ms",
					     HVTRACE_DAEMON_TIMEOUT_MS),
			       -1;
		rs_wait(s, RS_WAIT_MS);
	}
	hvtrace_tracedat_kernel_stop(s->hk);
	return rs_flush(s);
}

/* One look at the remote's state (every RS_REFRESH_NS): 1 to read to the
 * end and stop, 2 to stop now, 0 to go on, -1 on an error. */
static int rs_check(struct rs *s)
{
	int ret = rs_refresh(s);

	if (ret == HVTRACE_DAEMON_REMOTE_GONE) {
		fprintf(stderr,
			"hvtrace stream: '%s' was detached from "
			"hvtraced\n",
			s->rec.name);
		return 2;
	}
	if (ret < 0)
		return rs_fail(s), -1;
	if (ret == HVTRACE_DAEMON_REMOTE_NEW_RUN) {
		fprintf(stderr, "hvtrace stream: the writer re-formatted the "
				"area (a new run); stopping\n");
		return 2;
	}
	if (s->o->follow)
		return 0;
	/* An area's writer that stopped or died: read it to the end. */
	if (ret == HVTRACE_DAEMON_REMOTE_STOPPED) {
		fprintf(stderr,
			"hvtrace stream: '%s' stopped (its writer or "
			"VMM ended); reading to the end\n",
			s->rec.name);
		return 1;
	}
	return 0;
}

/* Until the end: 0, or -1 on an error. */
static int rs_loop(struct rs *s)
{
	uint64_t t0 = hvt_cli_now_ns(), deadline = UINT64_MAX, now;
	uint64_t last_refresh = t0, last_status = t0;
	bool status = isatty(STDERR_FILENO) && !isatty(STDOUT_FILENO);
	int ret = 0, got, n;

	if (s->o->timeout > 0)
		deadline = t0 + (uint64_t)(s->o->timeout * 1e9);
	if (s->o->drain)
		ret = rs_drain(s);
	while (!s->o->drain && !hvt_cli_stop_signal && !s->out_broken) {
		got = rs_emit(s, false);
		if (got < 0) {
			ret = got == -2 ? 0 : -1;
			break;
		}
		now = hvt_cli_now_ns();
		if (now >= deadline)
			break;
		if (now - last_refresh >= RS_REFRESH_NS) {
			last_refresh = now;
			n = rs_check(s);
			if (n) {
				ret = n < 0    ? -1
				      : n == 1 ? rs_drain(s)
					       : rs_flush(s);
				break;
			}
		}
		if (status && now - last_status >= RS_STATUS_NS) {
			last_status = now;
			rs_status(s, t0, false);
		}
		fflush(stdout);
		if (!got)
			rs_wait(s, RS_WAIT_MS);
	}
	if (hvt_cli_stop_signal && !ret)
		ret = rs_flush(s); /* consumed already: print, not drop */
	fflush(stdout);
	if (status)
		rs_status(s, t0, true);
	if (s->o->summary)
		rs_summary(s, (double)(hvt_cli_now_ns() - t0) / 1e9);
	return ret;
}

int hvt_cli_stream_remote(const struct hvt_rstream_opts *o)
{
	struct rs s;
	int ret;

	memset(&s, 0, sizeof(s));
	s.o = o;
	s.verb = "stream";
	/* A host instance is set up in rs_open(): a stop signal from then on
	 * must let it be put back. */
	if (o->host_kernel)
		hvt_cli_catch_stop_signals(false);
	ret = rs_open(&s);
	if (!ret) {
		hvt_cli_catch_stop_signals(false);
		signal(SIGPIPE, SIG_IGN);
		setvbuf(stdout, NULL, _IOFBF, 1 << 20);
		ret = rs_loop(&s) ? HVT_EXIT_FAIL : HVT_EXIT_OK;
	}
	free(s.line);
	rs_close_rings(&s);
	hvtrace_decoder_free(s.dec);
	hvtrace_decoder_free(s.hdec);
	hvtrace_tracedat_kernel_close(s.hk);
	hvt_cli_kring_close(s.kr, s.kformats);
	hvtrace_daemon_events_free(&s.evs);
	hvtrace_daemon_feed_close(s.feed);
	hvtrace_daemon_close(s.dc);
	return ret ? HVT_EXIT_FAIL : HVT_EXIT_OK;
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
