// SPDX-License-Identifier: MIT
/*
 * hvtrace stream NAME / stat NAME: a remote read through hvtraced.
 *
 * hvtraced owns the remote's area (it is the single consumer of its
 * rings) and hands each page to every subscriber.  Streaming by name
 * subscribes on one connection (the page feed) and asks everything else
 * (remotes, formats, comms) on a second one, so no page is ever lost to
 * a request.  Records are decoded with the remote's own formats, their
 * timestamps converted to host CLOCK_MONOTONIC with the daemon's clock
 * model as it arrives ahead of the pages (CLOCK; converted here, no round
 * trip: TO_HOST per burst only for an hvtraced that sends no model),
 * merged across CPUs with a
 * reorder window, and printed exactly as hvtrace stream prints an area.
 * A rig guest's kernel ring (daemon_kring.c) joins the same merge: its
 * CPUs are queues after the remote's, its mono timestamps go through the
 * same model as the agent's.  With --kernel the host kernel joins too
 * (hvtrace_tracedat_kernel_open(): a tracefs instance on the mono trace
 * clock, the host's CLOCK_MONOTONIC, so its times need no conversion):
 * its CPUs are the last queues, read through their rings before the guest
 * kernel's in each pass (so a host event that a guest event followed is
 * not fetched after it, while the host's backlog fits in one pass),
 * decoded with the host's formats and printed
 * with a "host: " prefix, as trace-cmd report starts a buffer's lines with
 * its name.
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
#include <hvtrace-tracedat.h>

#include "cli.h"
#include "daemon_src.h"
#include <hvtrace-daemon.h>

#define RS_REFRESH_NS 250000000ULL /* remote state polls */
#define RS_STATUS_NS  500000000ULL
#define RS_WAIT_MS    20 /* longest sleep for a page */
#define RS_HOST_READ  4096u /* host kernel records per CPU and pass */
#define RS_HOST_INSTANCE "hvtrace-stream-%d" /* the private instance */

struct rs_rec {
	struct rs_rec *next;
	uint64_t ts, host, fetched, lost;
	uint64_t err; /* host's error bound: 0 for the host kernel's */
	int cpu;
	uint32_t q; /* its queue: the remote's CPU, nr_cpus + the guest
		     * kernel's CPU, or host_q + the host kernel's CPU */
	uint32_t len;
	uint8_t data[];
};

struct rs_cpu {
	struct rs_rec *head, *tail;
	uint64_t sub_dropped; /* the subscription's drops seen so far */
	uint64_t pending_lost; /* lost before the next record (or the end) */
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
	struct rs_cpu *cpus;
	uint32_t nr_cpus;
	uint32_t nr_q;		  /* queues: nr_cpus, the guest kernel's CPUs, then
				   * the host kernel's */
	struct hvtrace_daemon_kring *kr; /* the guest kernel's ring, or NULL */
	struct hvtrace_tracedat_kernel *hk; /* the host kernel, or NULL */
	struct hvtrace_decoder *hdec;	    /* ... its formats */
	uint32_t host_q;		    /* its first queue */
	bool host_frozen;		    /* draining: read it no more */
	uint64_t hcomm_ns;		    /* last saved_cmdlines read */
	char hinst[64];			    /* its private instance's name */
	char kformats[PATH_MAX];        /* its formats' folder */
	uint64_t comm_tried_ns;
	int tried[256]; /* loopback pids /proc was asked for */
	unsigned int nr_tried;
	uint64_t local_tried_ns; /* ... last asked again */
	unsigned long long printed, lost, bytes, pages;
	char *line;
	size_t line_cap;
	bool out_broken;
	/* records waiting for their host time */
	struct rs_rec **conv;
	size_t nr_conv, cap_conv;
	uint64_t now_fetch;
	uint32_t page_cpu;
	uint32_t page_q;
	uint64_t page_lost;
	struct hvt_cli_order order; /* the latest time printed */
	bool clock_said, own_said; /* its clock, said on stderr */
};

static int rs_fail(struct rs *s)
{
	return hvt_cli_error(s->verb, "%s", hvtrace_last_error());
}

/* A record at the tail of queue @q; NULL when out of memory. */
static struct rs_rec *rs_queue(struct rs *s, uint32_t q, uint32_t cpu,
			       uint64_t ts, uint64_t lost, const void *p,
			       uint32_t len)
{
	struct rs_cpu *c = &s->cpus[q];
	struct rs_rec *r;

	r = malloc(sizeof(*r) + len);
	if (!r)
		return NULL;
	r->next = NULL;
	r->ts = ts;
	r->host = ts;
	r->err = 0;
	r->fetched = s->now_fetch;
	r->lost = lost;
	r->cpu = (int)cpu;
	r->q = q;
	r->len = len;
	memcpy(r->data, p, len);
	if (c->tail)
		c->tail->next = r;
	else
		c->head = r;
	c->tail = r;
	return r;
}

static int rs_add_event(void *arg, uint64_t ts, const uint8_t *p, uint32_t len)
{
	struct rs *s = arg;
	struct rs_rec *r;
	uint64_t host, err;

	/* On the host's clock at once, with the model the feed received
	 * ahead of this page (its own bound, not a batch's). */
	if (!hvtrace_daemon_feed_ts_to_host(s->feed, s->rec.id, ts, &host,
					    &err)) {
		r = rs_queue(s, s->page_q, s->page_cpu, ts, s->page_lost, p,
			     len);
		if (!r)
			return -ENOMEM;
		s->page_lost = 0;
		r->host = host;
		r->err = err;
		return 0;
	}
	/* No model received (an hvtraced that sends none): TO_HOST for the
	 * burst, as rs_convert() asks.  Room to convert it first: a queued
	 * record is always converted. */
	if (s->nr_conv == s->cap_conv) {
		size_t cap = s->cap_conv ? s->cap_conv * 2 : 1024;
		struct rs_rec **v = realloc(s->conv, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->conv = v;
		s->cap_conv = cap;
	}
	r = rs_queue(s, s->page_q, s->page_cpu, ts, s->page_lost, p, len);
	if (!r)
		return -ENOMEM;
	s->page_lost = 0;
	s->conv[s->nr_conv++] = r;
	return 0;
}

/*
 * A sub-buffer of queue @q (guest CPU @cpu): its records go to the queue,
 * the events lost before it (@drops more that hvtraced dropped for us)
 * to its first record.
 */
static int rs_page_data(struct rs *s, uint32_t q, uint32_t cpu,
			const uint8_t *data, uint32_t len, uint64_t drops)
{
	uint64_t lost = 0;
	int n;

	s->pages++;
	s->bytes += len;
	s->now_fetch = hvt_cli_now_ns();
	s->page_cpu = cpu;
	s->page_q = q;
	s->page_lost = 0;
	n = hvtrace_daemon_page_walk(data, len, &lost, NULL, NULL);
	if (n < 0)
		return hvt_cli_error(s->verb,
				     "a malformed page for CPU %u (%s)", cpu,
				     q < s->nr_cpus ? "from hvtraced"
						    : "guest kernel");
	/* With what an empty page of the CPU left before this one. */
	if (lost == UINT64_MAX || drops == UINT64_MAX ||
	    s->cpus[q].pending_lost == HVTRACE_LOST_UNKNOWN)
		s->page_lost = HVTRACE_LOST_UNKNOWN;
	else
		s->page_lost = lost + drops + s->cpus[q].pending_lost;
	s->cpus[q].pending_lost = 0;
	if (!n) {
		/* No event to carry the loss: the next one of this CPU
		 * will, or the end of the stream (rs_emit()). */
		s->cpus[q].pending_lost = s->page_lost;
		s->page_lost = 0;
		return 0;
	}
	n = hvtrace_daemon_page_walk(data, len, &lost, rs_add_event, s);
	return n < 0 ? hvt_cli_error(s->verb, "out of memory") : 0;
}

/* A page from the feed: its records go to their CPU's queue. */
static int rs_page(struct rs *s, const struct hvtrace_daemon_page *pg)
{
	uint64_t drops;

	if (pg->cpu >= s->nr_cpus)
		return 0;
	/* Pages hvtraced dropped for this (slow) subscriber: their events
	 * are lost to us, reported before the next event. */
	drops = hvtrace_daemon_page_drops(pg, &s->cpus[pg->cpu].sub_dropped);
	return rs_page_data(s, pg->cpu, pg->cpu, pg->data, pg->len, drops);
}

/* What the guest kernel's ring committed since the last call (at most
 * 64 pages a CPU, for fairness); the number of pages, or -1. */
static int rs_kpump(struct rs *s)
{
	uint32_t cpu, len;
	const uint8_t *data;
	int n = 0, i, ret;

	for (cpu = 0; s->kr && cpu < hvtrace_daemon_kring_cpus(s->kr); cpu++) {
		if (s->o->cpu >= 0 && (int)cpu != s->o->cpu)
			continue;
		for (i = 0; i < 64; i++) {
			ret = hvtrace_daemon_kring_read_page(s->kr, cpu, &data, &len);
			if (ret < 0)
				return hvt_cli_error(s->verb,
						     "the guest kernel's ring: "
						     "%s",
						     hvtrace_last_error());
			if (!ret)
				break;
			if (rs_page_data(s, s->nr_cpus + cpu, cpu, data, len,
					 0))
				return -1;
			n++;
		}
	}
	return n;
}

/* What the host kernel wrote since the last call (at most RS_HOST_READ
 * records a CPU); the number of records, or -1.  Its times are the host's
 * CLOCK_MONOTONIC already (the instance's mono trace clock). */
static int rs_hpump(struct rs *s)
{
	uint32_t cpu, nr = hvtrace_tracedat_kernel_nr_cpus(s->hk);
	struct hvtrace_record rec;
	unsigned int i;
	int n = 0, ret;

	s->now_fetch = hvt_cli_now_ns();
	for (cpu = 0; cpu < nr; cpu++) {
		struct hvtrace_ring *ring =
			hvtrace_tracedat_kernel_ring(s->hk, cpu);

		for (i = 0; ring && i < RS_HOST_READ; i++) {
			ret = hvtrace_ring_peek(ring, &rec);
			if (ret < 0)
				return hvt_cli_error(s->verb,
						     "the host kernel's ring: "
						     "%s",
						     hvtrace_last_error());
			if (!ret)
				break;
			if (!rs_queue(s, s->host_q + cpu, cpu, rec.ts,
				      rec.lost_before, rec.data, rec.size))
				return hvt_cli_error(s->verb, "out of memory");
			hvtrace_ring_consume(ring);
			n++;
		}
	}
	return n;
}

/* Host times for the records that arrived since the last call. */
static int rs_convert(struct rs *s)
{
	uint64_t *ts, err = UINT64_MAX;
	size_t i;
	int ret;

	if (!s->nr_conv)
		return 0;
	ts = malloc(s->nr_conv * sizeof(*ts));
	if (!ts)
		return hvt_cli_error(s->verb, "out of memory");
	for (i = 0; i < s->nr_conv; i++)
		ts[i] = s->conv[i]->ts;
	ret = hvtrace_daemon_feed_to_host(s->feed, s->rec.id, ts, ts,
					  s->nr_conv, &err);
	if (!ret)
		for (i = 0; i < s->nr_conv; i++) {
			s->conv[i]->host = ts[i];
			s->conv[i]->err = err; /* the batch's bound */
		}
	free(ts);
	s->nr_conv = 0;
	return ret ? rs_fail(s) : 0;
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

/* Why a remote's times are not on the host's clock. */
static const char *rs_own_why(const struct rs *s)
{
	return s->rec.transport == HVT_TRANSPORT_KRING
		       ? "a guest kernel ring read by VMM pid: no clock model"
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

static int rs_print(struct rs *s, struct rs_rec *r)
{
	struct rs_cpu *c = &s->cpus[r->q];
	bool host = s->hk && r->q >= s->host_q;
	bool kernel = !host && r->q >= s->nr_cpus;
	struct hvtrace_decoder *dec =
		host	 ? s->hdec
		: kernel ? hvtrace_daemon_kring_decoder(s->kr)
			 : s->dec;
	struct hvtrace_record rec;
	/* The model moves between batches: stream_order.c's rule. */
	uint64_t t = hvt_cli_order_time(&s->order, r->host, r->err);
	int n;

	if (!host && rs_clock_note(s, r->err))
		return -1;

	if (r->lost) {
		char buf[64];

		if (r->lost == HVTRACE_LOST_UNKNOWN) {
			c->lost_unknown = true;
		} else {
			c->lost += r->lost;
			s->lost += r->lost;
		}
		n = hvtrace_format_lost(r->cpu, r->lost, buf, sizeof(buf));
		if (n > 0 && host)
			rs_write(s, "host: ", 6);
		if (n > 0)
			rs_write(s, buf, (size_t)n);
	}
	if (r->len >= 8 && host) {
		int32_t pid;

		memcpy(&pid, r->data + 4, 4);
		rs_hcomm(s, pid);
	} else if (r->len >= 8) {
		int32_t pid;
		const char *comm;

		memcpy(&pid, r->data + 4, 4);
		/* The kernel's and the agent's pids are the same guest's:
		 * what the agent named, the kernel's lines show too. */
		if (!kernel) {
			rs_comm(s, pid);
		} else if (pid > 0 && !hvtrace_decoder_comm(dec, pid) &&
			   (comm = hvtrace_decoder_comm(s->dec, pid))) {
			hvtrace_decoder_set_comm(dec, pid, comm);
		}
	}
	memset(&rec, 0, sizeof(rec));
	rec.ts = r->ts;
	rec.host_ns = t;
	rec.data = r->data;
	rec.size = r->len;
	rec.cpu = r->cpu;
	rec.fetched_ns = r->fetched;
	for (;;) {
		n = hvtrace_decoder_format(dec, &rec, t, 0, s->line,
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
	c->events++;
	s->printed++;
	return 0;
}

/* The CPU of queue @i, and whether it is the host kernel's. */
static uint32_t rs_q_cpu(const struct rs *s, uint32_t i, bool *host)
{
	*host = s->hk && i >= s->host_q;
	return *host ? i - s->host_q : i < s->nr_cpus ? i : i - s->nr_cpus;
}

/* The end: losses no record followed, as trace_pipe shows them. */
static void rs_pending_lost(struct rs *s)
{
	uint32_t i;

	for (i = 0; i < s->nr_q; i++) {
		struct rs_cpu *c = &s->cpus[i];
		bool host;
		uint32_t cpu = rs_q_cpu(s, i, &host);
		char buf[64];
		int n;

		if (!c->pending_lost)
			continue;
		if (c->pending_lost == HVTRACE_LOST_UNKNOWN) {
			c->lost_unknown = true;
		} else {
			c->lost += c->pending_lost;
			s->lost += c->pending_lost;
		}
		n = hvtrace_format_lost((int)cpu, c->pending_lost, buf,
					sizeof(buf));
		c->pending_lost = 0;
		if (n > 0 && host)
			rs_write(s, "host: ", 6);
		if (n > 0)
			rs_write(s, buf, (size_t)n);
	}
}

/*
 * Print what may go: the oldest record once every CPU has one pending
 * (none can be older then), once it waited the window, or everything
 * when flushing.  Its time is printed by stream_order.c's rule (no
 * earlier than the latest time printed while their error bounds
 * overlap), as each batch is converted with the clock model of its
 * moment.  Returns 1 when --count was reached.
 */
static int rs_emit(struct rs *s, bool flush)
{
	uint64_t window = (uint64_t)(s->o->window_ms * 1e6);

	for (;;) {
		struct rs_cpu *best = NULL;
		struct rs_rec *r;
		bool all = true;
		uint32_t i;
		int ret;

		for (i = 0; i < s->nr_q; i++) {
			struct rs_cpu *c = &s->cpus[i];
			uint32_t cpu = i < s->nr_cpus ? i : i - s->nr_cpus;

			if (s->o->cpu >= 0 && (int)cpu != s->o->cpu &&
			    !(s->hk && i >= s->host_q))
				continue;
			if (!c->head) {
				all = false;
				continue;
			}
			if (!best || c->head->host < best->head->host)
				best = c;
		}
		if (!best) {
			if (flush)
				rs_pending_lost(s);
			return 0;
		}
		r = best->head;
		if (!flush && !all && hvt_cli_now_ns() - r->fetched < window)
			return 0;
		best->head = r->next;
		if (!best->head)
			best->tail = NULL;
		ret = rs_print(s, r);
		free(r);
		if (ret)
			return -1;
		if (s->o->count && s->printed >= s->o->count)
			return 1;
	}
}

static void rs_free_queues(struct rs *s)
{
	uint32_t i;

	for (i = 0; s->cpus && i < s->nr_q; i++) {
		struct rs_rec *r, *n;

		for (r = s->cpus[i].head; r; r = n) {
			n = r->next;
			free(r);
		}
	}
	free(s->cpus);
	free(s->conv);
}

/* Take every page the feed holds now (or wait up to @wait_ms for one). */
static int rs_pump(struct rs *s, int wait_ms)
{
	struct hvtrace_daemon_page *pg;
	int ret, got = 0;

	for (;;) {
		ret = hvtrace_daemon_feed_next(s->feed, got ? 0 : wait_ms, &pg);
		if (ret < 0)
			return rs_fail(s);
		if (!ret)
			break;
		ret = rs_page(s, pg);
		free(pg);
		if (ret)
			return -1;
		got++;
		if (s->nr_conv >= 16384)
			break;
	}
	/* The host kernel before the guest kernel: a guest event written
	 * after a host one (caused by it) is never fetched first. */
	if (s->hk && !s->host_frozen) {
		ret = rs_hpump(s);
		if (ret < 0)
			return -1;
		got += ret;
	}
	if (s->kr) {
		ret = rs_kpump(s);
		if (ret < 0)
			return -1;
		got += ret;
	}
	if (rs_convert(s))
		return -1;
	return got;
}

static void rs_status(struct rs *s, uint64_t t0, bool final)
{
	double secs = (double)(hvt_cli_now_ns() - t0) / 1e9;

	if (final) {
		fprintf(stderr, "\r\033[K");
		return;
	}
	fprintf(stderr,
		"\r\033[K%s: %llu events  %.0f events/s  %llu lost  "
		"%llu bytes",
		s->rec.name, s->printed,
		secs > 0 ? (double)s->printed / secs : 0, s->lost, s->bytes);
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

static int rs_open(struct rs *s)
{
	int ret;

	if (hvtrace_daemon_open(s->o->sock, &s->dc) ||
	    hvtrace_daemon_find_remote(s->dc, s->o->name, &s->rec))
		return rs_fail(s);
	if (s->rec.state == HVT_REMOTE_MISSING)
		return rs_missing(s);
	if (!s->rec.nr_cpus)
		return hvt_cli_error(s->verb,
				     "the area of '%s' is not "
				     "attached yet (see 'hvtrace "
				     "daemon info --remote %s')",
				     s->rec.name, s->rec.name);
	if (s->o->cpu >= 0 && (uint32_t)s->o->cpu >= s->rec.nr_cpus)
		return hvt_cli_usage(s->verb, "--cpu %d: '%s' has CPUs 0..%u",
				     s->o->cpu, s->rec.name,
				     s->rec.nr_cpus - 1);
	s->nr_cpus = s->rec.nr_cpus;
	if (s->rec.transport == HVT_TRANSPORT_KRING && !s->o->host_kernel) {
		/* Said here once, not again at its first record. */
		fprintf(stderr, "hvtrace stream: '%s' is a guest kernel ring "
			"read by VMM pid: times are the guest's own trace "
			"clock (no clock model)\n", s->rec.name);
		s->own_said = true;
	}
	/* A guest agent's clock is mono: its kernel ring can join. */
	if (!s->o->user_only && s->rec.clock_id == HVT_CLOCK_MONO_NS) {
		ret = hvt_cli_kring_open(s->verb, s->dc, s->rec.id,
					 s->rec.name, s->kformats,
					 sizeof(s->kformats), &s->kr);
		if (ret)
			return ret;
		if (s->kr)
			hvt_cli_kring_ksyms(s->verb,
					    hvtrace_daemon_kring_decoder(s->kr),
					    hvtrace_daemon_kring_ring(s->kr));
	}
	s->nr_q = s->nr_cpus + (s->kr ? hvtrace_daemon_kring_cpus(s->kr) : 0);
	s->host_q = s->nr_q;
	if (s->o->host_kernel) {
		ret = rs_host_clock(s);
		if (ret)
			return ret;
		ret = rs_host_open(s);
		if (ret)
			return ret;
		s->nr_q += hvtrace_tracedat_kernel_nr_cpus(s->hk);
	}
	s->cpus = calloc(s->nr_q, sizeof(*s->cpus));
	s->line_cap = 8192;
	s->line = malloc(s->line_cap);
	if (!s->cpus || !s->line)
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
	ret = hvtrace_daemon_feed_open(s->o->sock, &s->feed);
	if (!ret)
		ret = hvtrace_daemon_feed_subscribe(s->feed, s->rec.id,
						    s->o->cpu, 0, NULL);
	return ret ? rs_fail(s) : 0;
}

static void rs_summary(struct rs *s, double secs)
{
	uint32_t i;

	for (i = 0; i < s->nr_q; i++) {
		struct rs_cpu *c = &s->cpus[i];
		bool host;
		uint32_t cpu = rs_q_cpu(s, i, &host);

		if (s->o->cpu >= 0 && (int)cpu != s->o->cpu && !host)
			continue;
		fprintf(stderr, "  %scpu %u: %llu events, %llu lost%s\n",
			host		 ? "host kernel "
			: i < s->nr_cpus ? ""
					 : "guest kernel ",
			cpu, c->events, c->lost,
			c->lost_unknown ? " (and an unknown number)" : "");
	}
	fprintf(stderr,
		"hvtrace stream: %s: %llu events, %llu lost, %llu "
		"pages in %.3f s (%.0f events/s)\n",
		s->rec.name, s->printed, s->lost, s->pages, secs,
		secs > 0 ? (double)s->printed / secs : 0.0);
}

int hvt_cli_stream_remote(const struct hvt_rstream_opts *o)
{
	struct rs s;
	uint64_t t0, deadline = UINT64_MAX, last_refresh, last_status;
	bool status, finishing = false, drain_out = false;
	int ret = 0, got, drained;

	memset(&s, 0, sizeof(s));
	s.o = o;
	s.verb = "stream";
	/* A host instance is set up in rs_open(): a stop signal from then on
	 * must let it be put back. */
	if (o->host_kernel)
		hvt_cli_catch_stop_signals(false);
	ret = rs_open(&s);
	if (ret)
		goto out;
	hvt_cli_catch_stop_signals(false);
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOFBF, 1 << 20);
	status = isatty(STDERR_FILENO) && !isatty(STDOUT_FILENO);
	t0 = last_refresh = last_status = hvt_cli_now_ns();
	if (o->timeout > 0)
		deadline = t0 + (uint64_t)(o->timeout * 1e9);
	if (o->drain)
		finishing = true;

	while (!hvt_cli_stop_signal && !s.out_broken) {
		uint64_t now;

		if (finishing) {
			/* Everything committed until now, then the end:
			 * hvtraced reads it at the pace we take it. */
			if (!drain_out) {
				if (hvtrace_daemon_feed_drain_start(s.feed,
								    s.rec.id)) {
					ret = rs_fail(&s);
					break;
				}
				drain_out = true;
			}
			drained = hvtrace_daemon_feed_drained(s.feed);
			if (drained < 0) {
				ret = rs_fail(&s);
				break;
			}
			if (!drained) {
				if (rs_pump(&s, RS_WAIT_MS) < 0 ||
				    rs_emit(&s, false) < 0) {
					ret = HVT_EXIT_FAIL;
					break;
				}
				continue;
			}
			if (rs_pump(&s, 0) < 0) {
				ret = HVT_EXIT_FAIL;
				break;
			}
			/* The host kernel up to now, not what it keeps
			 * writing (its own events about this reader). */
			s.host_frozen = true;
			while ((got = rs_pump(&s, 0)) > 0)
				;
			if (got < 0) {
				ret = HVT_EXIT_FAIL;
				break;
			}
			if (rs_emit(&s, true) < 0)
				ret = HVT_EXIT_FAIL;
			break;
		}
		got = rs_pump(&s, RS_WAIT_MS);
		if (got < 0) {
			ret = HVT_EXIT_FAIL;
			break;
		}
		got = rs_emit(&s, false);
		if (got) {
			ret = got < 0 ? HVT_EXIT_FAIL : 0;
			break;
		}
		now = hvt_cli_now_ns();
		if (now >= deadline)
			break;
		if (now - last_refresh >= RS_REFRESH_NS) {
			last_refresh = now;
			ret = rs_refresh(&s);
			if (ret == HVTRACE_DAEMON_REMOTE_GONE) {
				fprintf(stderr,
					"hvtrace stream: '%s' was "
					"detached from hvtraced\n",
					s.rec.name);
				ret = 0;
				rs_emit(&s, true);
				break;
			}
			if (ret < 0) {
				ret = rs_fail(&s);
				break;
			}
			if (ret == HVTRACE_DAEMON_REMOTE_NEW_RUN) {
				ret = 0;
				fprintf(stderr, "hvtrace stream: the writer "
						"re-formatted the area (a new "
						"run); stopping\n");
				rs_emit(&s, true);
				break;
			}
			/* An area's writer that stopped or died: read it to
			 * the end and stop, unless --follow. */
			if (ret == HVTRACE_DAEMON_REMOTE_STOPPED && !o->follow) {
				fprintf(stderr, "hvtrace stream: '%s' stopped "
					"(its writer or VMM ended); reading "
					"to the end\n", s.rec.name);
				finishing = true;
			}
			/* Kernel copy mode: the agent copied its last page
			 * and left; the same. */
			if (s.kr && !o->follow &&
			    hvtrace_daemon_kring_finished(s.kr)) {
				fprintf(stderr,
					"hvtrace stream: the agent of '%s' "
					"stopped copying the guest kernel's "
					"pages; reading to the end\n",
					s.rec.name);
				finishing = true;
			}
			ret = 0;
		}
		if (status && now - last_status >= RS_STATUS_NS) {
			last_status = now;
			rs_status(&s, t0, false);
		}
		fflush(stdout);
	}
	if (hvt_cli_stop_signal)
		rs_emit(&s, true); /* consumed already: print, not drop */
	fflush(stdout);
	if (status)
		rs_status(&s, t0, true);
	if (o->summary && s.cpus)
		rs_summary(&s, (double)(hvt_cli_now_ns() - t0) / 1e9);
out:
	free(s.line);
	rs_free_queues(&s);
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
