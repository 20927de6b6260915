// SPDX-License-Identifier: MIT
/*
 * libhvtrace: records as trace_pipe text.
 *
 * The line is what the kernel's trace_pipe prints with its default options
 * (irq-info on, no tgid; kernel/trace/trace_output.c):
 *
 *   trace_print_context():  "%16s-%-7d " comm, pid
 *                           "[%03d] "    cpu
 *   trace_print_lat_fmt():  five characters: irqs-off, need-resched,
 *                           hardirq/softirq, preempt depth, migrate-disable
 *   trace_print_time():     " %5lu.%06lu" with ns2usecs() rounding, or
 *                           " %12llu" for clocks not in nanoseconds
 *                           ": "
 *   the event:              "<name>: " then its print fmt output; the
 *                           kernel's own "ftrace" events have their own
 *                           output functions, which print no name
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "decode.h"
#include "ksyms-local.h"

/* common_flags bits (include/linux/trace_events.h, trace_flag_type) */
#define TF_IRQS_OFF		0x01
#define TF_NEED_RESCHED_LAZY	0x02
#define TF_NEED_RESCHED		0x04
#define TF_HARDIRQ		0x08
#define TF_SOFTIRQ		0x10
#define TF_PREEMPT_RESCHED	0x20
#define TF_NMI			0x40
#define TF_BH_OFF		0x80

static void text_lat_flags(uint8_t f, uint8_t pc, char out[6])
{
	static const char hex[] = "0123456789abcdef";
	bool bh_off = f & TF_BH_OFF, nmi = f & TF_NMI;
	bool hard = f & TF_HARDIRQ, soft = f & TF_SOFTIRQ;

	out[0] = (f & TF_IRQS_OFF) && bh_off ? 'D' :
		 (f & TF_IRQS_OFF)	    ? 'd' :
		 bh_off			    ? 'b' : '.';
	switch (f & (TF_NEED_RESCHED | TF_NEED_RESCHED_LAZY |
		     TF_PREEMPT_RESCHED)) {
	case TF_NEED_RESCHED | TF_NEED_RESCHED_LAZY | TF_PREEMPT_RESCHED:
		out[1] = 'B';
		break;
	case TF_NEED_RESCHED | TF_PREEMPT_RESCHED:
		out[1] = 'N';
		break;
	case TF_NEED_RESCHED_LAZY | TF_PREEMPT_RESCHED:
		out[1] = 'L';
		break;
	case TF_NEED_RESCHED | TF_NEED_RESCHED_LAZY:
		out[1] = 'b';
		break;
	case TF_NEED_RESCHED:
		out[1] = 'n';
		break;
	case TF_PREEMPT_RESCHED:
		out[1] = 'p';
		break;
	case TF_NEED_RESCHED_LAZY:
		out[1] = 'l';
		break;
	default:
		out[1] = '.';
		break;
	}
	out[2] = nmi && hard ? 'Z' : nmi ? 'z' : hard && soft ? 'H' :
		 hard	     ? 'h' : soft ? 's' : '.';
	out[3] = pc & 0xf ? hex[pc & 0xf] : '.';
	out[4] = pc & 0xf0 ? hex[pc >> 4] : '.';
	out[5] = '\0';
}

/* Append to a bounded buffer, snprintf style: *pos keeps counting past
 * the end so the caller learns the full length. */
static void text_add(char *buf, size_t size, size_t *pos, const char *fmt,
		     ...) __attribute__((format(printf, 4, 5)));
static void text_add(char *buf, size_t size, size_t *pos, const char *fmt,
		     ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(*pos < size ? buf + *pos : NULL,
		      *pos < size ? size - *pos : 0, fmt, ap);
	va_end(ap);
	if (n > 0)
		*pos += (size_t)n;
}

static void text_comm(const struct hvtrace_decoder *d, int pid, char out[16])
{
	const char *c;

	/* As trace_find_cmdline(): pid 0 is the idle task, but a
	 * hypervisor's events belong to no task (as in a trace.dat file,
	 * where they carry HVT_HYP_PID). */
	if (d->hyp && (pid == 0 || pid == HVT_HYP_PID))
		c = HVT_HYP_COMM;
	else if (pid == 0)
		c = "<idle>";
	else if (pid < 0)
		c = "<XXX>";	/* the kernel's mark for a negative pid */
	else if (!(c = hvtrace_decoder_comm(d, pid)))
		c = "<...>";
	snprintf(out, 16, "%s", c);
}

HVTRACE_API int hvtrace_decoder_format(struct hvtrace_decoder *d,
				       const struct hvtrace_record *rec,
				       uint64_t ts_ns, unsigned int flags,
				       char *buf, size_t size)
{
	struct hvt_common_fields cf = { 0 };
	struct tep_record trec;
	struct trace_seq *line;
	struct tep_event *ev;
	char comm[16], lat[6];
	size_t pos = 0, n;

	if (!d || !rec || (!buf && size))
		return hvt_err(-EINVAL, "hvtrace_decoder_format: bad argument");
	if (rec->size > DEC_SCRATCH_SIZE / 2 || (rec->size && !rec->data))
		return hvt_err(-EINVAL, "record of %u bytes is too large",
			       rec->size);
	if (size)
		buf[0] = '\0';
	memcpy(&cf, rec->data,
	       rec->size < sizeof(cf) ? rec->size : sizeof(cf));

	/* The names this record gives first: a sched_switch names its own
	 * task (prev), as the kernel's table has it by the time it prints. */
	hvtrace_decoder_learn_comms(d, rec);
	text_comm(d, cf.common_pid, comm);
	text_lat_flags(cf.common_flags, cf.common_preempt_count, lat);
	text_add(buf, size, &pos, "%16s-%-7d [%03d] %s", comm, cf.common_pid,
		 rec->cpu, lat);
	if (flags & HVTRACE_TEXT_RAW_TS) {
		text_add(buf, size, &pos, " %12llu: ",
			 (unsigned long long)ts_ns);
	} else {
		unsigned long long t = (ts_ns + 500) / 1000;	/* ns2usecs */

		text_add(buf, size, &pos, " %5llu.%06llu: ", t / 1000000,
			 t % 1000000);
	}

	ev = rec->size >= sizeof(cf) ? tep_find_event(d->tep, cf.common_type)
				     : NULL;
	if (!ev) {
		text_add(buf, size, &pos, "UNKNOWN id=%u\n", cf.common_type);
		return (int)pos;
	}

	/* libtraceevent reads fields by offset: give it a zero-padded copy
	 * (DEC_SCRATCH_SIZE), so no record can send it past our memory. */
	if (d->scratch_used > rec->size)
		memset(d->scratch + rec->size, 0,
		       d->scratch_used - rec->size);
	memcpy(d->scratch, rec->data, rec->size);
	d->scratch_used = rec->size;

	memset(&trec, 0, sizeof(trec));
	trec.ts = rec->ts;
	trec.size = (int)rec->size;
	trec.record_size = (int)rec->size;
	trec.data = d->scratch;
	trec.cpu = rec->cpu;
	trec.missed_events = 0;

	trace_seq_reset(&d->seq);
	tep_print_event(d->tep, &d->seq, &trec, "%s", TEP_PRINT_INFO);
	trace_seq_terminate(&d->seq);
	line = &d->seq;
	/* Symbols named: in the kernel's form (ksyms.c). */
	if (d->ksyms && memchr(line->buffer, HVT_KS_TAIL, line->len)) {
		trace_seq_reset(&d->sym_seq);
		hvt_ksyms_expand(&d->sym_seq, line->buffer, line->len);
		line = &d->sym_seq;
	}
	n = line->len;
	/* The kernel ends a line once; print fmts may end in newlines. */
	while (n && (line->buffer[n - 1] == '\n'))
		n--;
	if (strcmp(ev->system, "ftrace"))
		text_add(buf, size, &pos, "%s: ", ev->name);
	text_add(buf, size, &pos, "%.*s\n", (int)n, line->buffer);
	return (int)pos;
}

HVTRACE_API int hvtrace_format_lost(int cpu, uint64_t lost, char *buf,
				    size_t size)
{
	if (lost == HVTRACE_LOST_UNKNOWN)
		return snprintf(buf, size, "CPU:%d [LOST EVENTS]\n", cpu);
	return snprintf(buf, size, "CPU:%d [LOST %llu EVENTS]\n", cpu,
			(unsigned long long)lost);
}
