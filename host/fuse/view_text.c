// SPDX-License-Identifier: MIT
/*
 * libhvtrace: the text of hvtrace mount's view (trace, trace_pipe, stats,
 * error_log).
 *
 * One job: turn the queued records of a remote into ftrace's text (the
 * trace_pipe lines, the `trace` snapshot with its header, per-CPU stats)
 * and keep the error_log entries a failed write leaves.  The queues
 * themselves (ingest, consuming, raw pages) are in view.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs-local.h"
#include <hvtrace-daemon.h>

/* --- text ----------------------------------------------------------------- */

struct text_buf {
	char *p;
	size_t len, cap;
};

static int tb_reserve(struct text_buf *b, size_t n)
{
	if (b->len + n + 1 <= b->cap)
		return 0;
	{
		size_t cap = (b->len + n + 1) * 2;
		char *p = realloc(b->p, cap);

		if (!p)
			return -ENOMEM;
		b->p = p;
		b->cap = cap;
	}
	return 0;
}

static void tb_printf(struct text_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void tb_printf(struct text_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || tb_reserve(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

/* A loopback writer runs here: name its threads from /proc. */
void fz_comm(struct fz_remote *r, const uint8_t *rec, uint32_t len)
{
	int32_t pid;

	if (len < 8 || r->writer_kind != HVT_WRITER_LOOPBACK)
		return;
	memcpy(&pid, rec + 4, 4);
	hvtrace_daemon_comm_local(r->dec, pid);
}

/*
 * The decoder of a record of queue @qi: the remote's, or for the guest
 * kernel's records the guest kernel's, which names a pid its own
 * saved_cmdlines did not name as the guest's agent named it.
 */
static struct hvtrace_decoder *line_decoder(struct fz_remote *r, uint32_t qi,
					    const uint8_t *rec, uint32_t len)
{
	const char *comm;
	int32_t pid;

	if (qi < r->ncpu || !r->kdec)
		return r->dec;
	if (len >= 8 && r->dec) {
		memcpy(&pid, rec + 4, 4);
		if (pid > 0 && !hvtrace_decoder_comm(r->kdec, pid) &&
		    (comm = hvtrace_decoder_comm(r->dec, pid)))
			hvtrace_decoder_set_comm(r->kdec, pid, comm);
	}
	return r->kdec;
}

/* One record of queue @qi (and the loss before it) as trace_pipe lines. */
static int fz_line(struct fz_remote *r, uint32_t qi, const struct fz_chunk *c,
		   const struct fz_ev *e, struct text_buf *b)
{
	uint32_t cpu = qi % r->ncpu;
	struct hvtrace_decoder *dec;
	struct hvtrace_record rec;
	unsigned int flags = 0;
	int n;

	if (e->lost) {
		if (tb_reserve(b, 64))
			return -ENOMEM;
		n = hvtrace_format_lost((int)cpu,
					e->lost == FZ_LOST_UNKNOWN
						? HVTRACE_LOST_UNKNOWN
						: e->lost,
					b->p + b->len, 64);
		if (n > 0 && n < 64)
			b->len += (size_t)n;
	}
	if (!r->dec && fz_remote_decoder(r))
		return -ENOMEM;
	if (qi < r->ncpu)
		fz_comm(r, c->data + e->off, e->len);
	dec = line_decoder(r, qi, c->data + e->off, e->len);
	memset(&rec, 0, sizeof(rec));
	rec.ts = e->ts;
	rec.host_ns = e->host;
	rec.data = c->data + e->off;
	rec.size = e->len;
	rec.cpu = (int)cpu;
	if (r->clock == FZ_CLOCK_NATIVE && r->clock_id == HVT_CLOCK_COUNTER)
		flags |= HVTRACE_TEXT_RAW_TS;
	for (;;) {
		size_t room;

		if (tb_reserve(b, 256))
			return -ENOMEM;
		room = b->cap - b->len;
		n = hvtrace_decoder_format(dec, &rec, ev_clock(r, e), flags,
					   b->p + b->len, room);
		if (n < 0)
			return n;
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return 0;
		}
		if (tb_reserve(b, (size_t)n + 1))
			return -ENOMEM;
	}
}

/*
 * The queue whose next record is the oldest (consuming cursor), of CPU
 * @cpu or of all (-1): the source's queues and the guest kernel's.
 */
static int pick_cpu(struct fz_remote *r, int cpu)
{
	struct fz_chunk *c;
	uint64_t best_ts = 0;
	int best = -1;
	unsigned int i;

	for (i = 0; i < 2 * r->ncpu; i++) {
		struct fz_ev *e;

		if ((cpu >= 0 && (unsigned int)cpu != i % r->ncpu) ||
		    !fz_q_live(r, i))
			continue;
		e = q_cur(&r->cpu[i], &c);
		if (e && (best < 0 || ev_clock(r, e) < best_ts)) {
			best = (int)i;
			best_ts = ev_clock(r, e);
		}
	}
	return best;
}

size_t fz_take_text(struct fz_remote *r, int cpu, char *buf, size_t size,
		    char **rest, size_t *rest_len)
{
	struct text_buf line = {0};
	size_t n = 0;

	*rest = NULL;
	*rest_len = 0;
	if (!r->cpu)
		return 0;
	while (n < size) {
		struct fz_chunk *c = NULL;
		struct fz_ev *e;
		int i = pick_cpu(r, cpu);

		if (i < 0)
			break;
		e = q_cur(&r->cpu[i], &c);
		if (!e)
			break;
		line.len = 0;
		if (fz_line(r, (uint32_t)i, c, e, &line))
			break;
		if (n + line.len > size) {
			if (n)
				break; /* the next read gets it */
			/* A read smaller than one line: the rest waits for
			 * the next read. */
			memcpy(buf, line.p, size);
			*rest = malloc(line.len - size);
			if (*rest) {
				memcpy(*rest, line.p + size, line.len - size);
				*rest_len = line.len - size;
			}
			n = size;
			q_advance(&r->cpu[i]);
			break;
		}
		memcpy(buf + n, line.p, line.len);
		n += line.len;
		q_advance(&r->cpu[i]);
	}
	free(line.p);
	if (n)
		r->data_gen++;
	return n;
}

char *fz_trace_text(struct fz_remote *r, int cpu, size_t *len)
{
	struct text_buf b = {0};
	struct cur {
		struct fz_chunk *c;
		uint32_t i;
	} *cur = NULL;
	uint64_t entries = 0, written = 0;
	unsigned int i;

	if (r->cpu)
		cur = calloc(2 * (size_t)r->ncpu, sizeof(*cur));
	for (i = 0; r->cpu && i < 2 * r->ncpu; i++) {
		if ((cpu >= 0 && (unsigned int)cpu != i % r->ncpu) ||
		    !fz_q_live(r, i))
			continue;
		entries += r->cpu[i].queued;
		written += r->cpu[i].queued + r->cpu[i].overrun;
		if (cur) {
			cur[i].c = r->cpu[i].head;
			cur[i].i = cur[i].c ? cur[i].c->pos : 0;
		}
	}
	tb_printf(&b,
		  "# tracer: nop\n"
		  "#\n"
		  "# entries-in-buffer/entries-written: %llu/%llu   #P:%u\n"
		  "#\n"
		  "#                                _-----=> "
		  "irqs-off/BH-disabled\n"
		  "#                               / _----=> need-resched\n"
		  "#                              | / _---=> hardirq/softirq\n"
		  "#                              || / _--=> preempt-depth\n"
		  "#                              ||| / _-=> migrate-disable\n"
		  "#                              |||| /     delay\n"
		  "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n"
		  "#              | |         |   |||||     |         |\n",
		  (unsigned long long)entries, (unsigned long long)written,
		  r->nr_cpus);
	/* Merge by time without consuming: a cursor per CPU. */
	while (cur) {
		int best = -1;
		uint64_t best_ts = 0;

		for (i = 0; i < 2 * r->ncpu; i++) {
			struct cur *k = &cur[i];

			if ((cpu >= 0 && (unsigned int)cpu != i % r->ncpu) ||
			    !fz_q_live(r, i))
				continue;
			while (k->c && k->i >= k->c->n) {
				k->c = k->c->next;
				k->i = k->c ? k->c->pos : 0;
			}
			if (k->c && (best < 0 ||
				     ev_clock(r, &k->c->ev[k->i]) < best_ts)) {
				best = (int)i;
				best_ts = ev_clock(r, &k->c->ev[k->i]);
			}
		}
		if (best < 0)
			break;
		if (fz_line(r, (uint32_t)best, cur[best].c,
			    &cur[best].c->ev[cur[best].i], &b))
			break;
		cur[best].i++;
	}
	free(cur);
	if (!b.p)
		tb_printf(&b, "%s", "");
	*len = b.len;
	return b.p;
}

static void ts_line(struct text_buf *b, const struct fz_remote *r,
		    const char *label, uint64_t t)
{
	if (r->clock == FZ_CLOCK_NATIVE && r->clock_id == HVT_CLOCK_COUNTER)
		tb_printf(b, "%s %llu\n", label, (unsigned long long)t);
	else
		tb_printf(b, "%s %5llu.%06llu\n", label,
			  (unsigned long long)(t / 1000000000ULL),
			  (unsigned long long)(t % 1000000000ULL / 1000));
}

char *fz_stats_text(struct fz_remote *r, uint32_t cpu, size_t *len)
{
	struct text_buf b = {0};
	struct fz_cpu sum = {0};
	struct fz_chunk *c;
	struct fz_ev *e;
	uint64_t oldest = 0, now = 0;
	unsigned int k;

	/* One CPU of a guest is one ring in tracefs: the source's records
	 * and the guest kernel's together. */
	for (k = 0; r->cpu && cpu < r->ncpu && k < 2; k++) {
		struct fz_cpu *q = fz_q(r, cpu, k);

		if (!fz_q_live(r, k ? r->ncpu + cpu : cpu))
			continue;
		sum.queued += q->queued;
		sum.overrun += q->overrun;
		sum.bytes += q->bytes;
		sum.dropped += q->dropped;
		sum.read += q->read;
		if (q->tail && q->tail->n &&
		    q->tail->ev[q->tail->n - 1].ts > now)
			now = q->tail->ev[q->tail->n - 1].ts;
	}
	if (r->cpu && cpu < r->ncpu && fz_q_next(r, cpu, &c, &e))
		oldest = ev_clock(r, e);
	if (r->clock == FZ_CLOCK_MONO)
		now = hvt_host_now_ns();
	tb_printf(&b,
		  "entries: %llu\noverrun: %llu\ncommit overrun: 0\n"
		  "bytes: %llu\n",
		  (unsigned long long)sum.queued,
		  (unsigned long long)sum.overrun,
		  (unsigned long long)sum.bytes);
	ts_line(&b, r, "oldest event ts:", oldest);
	ts_line(&b, r, "now ts:", now);
	tb_printf(&b, "dropped events: %llu\nread events: %llu\n",
		  (unsigned long long)sum.dropped,
		  (unsigned long long)sum.read);
	*len = b.len;
	return b.p;
}

void fz_errlog_add(struct fz_remote *r, const char *loc, const char *msg,
		   const char *cmd, unsigned int pos)
{
	struct text_buf b = {.p = r->errlog,
			     .len = r->errlog_len,
			     .cap = r->errlog ? r->errlog_len + 1 : 0};
	uint64_t t = hvt_host_now_ns();
	size_t cl = strcspn(cmd, "\n");

	if (pos > cl)
		pos = (unsigned int)cl;
	/* The kernel keeps the last 16: drop the oldest entry. */
	if (r->errlog_n >= FZ_ERRLOG_MAX && b.p) {
		char *next = strstr(b.p + 1, "\n[");

		if (next) {
			next++;
			b.len -= (size_t)(next - b.p);
			memmove(b.p, next, b.len + 1);
			r->errlog_n--;
		}
	}
	tb_printf(&b, "[%5llu.%06llu] %s: error: %s\n  Command: %.*s\n%*s^\n",
		  (unsigned long long)(t / 1000000000ULL),
		  (unsigned long long)(t % 1000000000ULL / 1000), loc, msg,
		  (int)cl, cmd, (int)pos + 11, "");
	r->errlog = b.p;
	r->errlog_len = b.len;
	r->errlog_n++;
}
