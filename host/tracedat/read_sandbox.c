// SPDX-License-Identifier: MIT
/*
 * libhvtrace: the texts of a trace.dat file, parsed by libtraceevent in a
 * forked child first.
 *
 * One job: keep libtraceevent's trusting parsers from crashing the
 * reader.  The metadata readers (read_meta.c) queue every text here in
 * file order; rd_sandbox() parses them all in a child, and the texts that
 * kill or hang it are skipped (and counted) when the real handle is
 * built.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event-parse.h>

#include "rw-local.h"

/* --- libtraceevent parsing, tried in a child first ----------------------- */

/*
 * libtraceevent's parsers trust their input: a damaged format text (a
 * non-ASCII byte in an array size, for one) crashes tep_parse_event().  So
 * every text the file hands to libtraceevent is first parsed in a forked
 * child, in file order; a text that kills or hangs the child is skipped
 * (and counted) when the real handle is built.  A clean file costs one
 * fork and a second parse.
 */

#define RD_SANDBOX_TIMEOUT_MS 10000

int rd_op_add(struct hvtrace_tracedat_file *f, enum rd_op_kind kind,
	      const char *system, char *text, size_t len)
{
	struct rd_op *o;

	if (f->nr_ops == f->cap_ops) {
		unsigned int n = f->cap_ops ? f->cap_ops * 2 : 64;

		o = realloc(f->ops, n * sizeof(*o));
		if (!o) {
			free(text);
			return -ENOMEM;
		}
		f->ops = o;
		f->cap_ops = n;
	}
	o = &f->ops[f->nr_ops++];
	memset(o, 0, sizeof(*o));
	o->kind = kind;
	snprintf(o->system, sizeof(o->system), "%s", system ? system : "");
	o->text = text;
	o->len = len;
	return 0;
}

static void rd_op_apply(struct hvtrace_tracedat_file *f, struct tep_handle *tep,
			const struct rd_op *o)
{
	switch (o->kind) {
	case RD_OP_HEADER:
		tep_parse_header_page(tep, o->text, o->len, (int)f->long_size);
		break;
	case RD_OP_FORMAT:
		/* One it cannot parse prints raw, as in trace-cmd. */
		tep_parse_event(tep, o->text, o->len, o->system);
		break;
	case RD_OP_KALLSYMS:
		tep_parse_kallsyms(tep, o->text);
		break;
	case RD_OP_PRINTK:
		tep_parse_printk_formats(tep, o->text);
		break;
	case RD_OP_CMDLINES:
		tep_parse_saved_cmdlines(tep, o->text);
		break;
	}
}

/* Text the kernel would write: printable ASCII, tabs and newlines. */
static bool rd_text_ok(const struct rd_op *o)
{
	size_t i;

	for (i = 0; i < o->len; i++) {
		unsigned char ch = (unsigned char)o->text[i];

		if (ch == '\0' && o->kind != RD_OP_FORMAT)
			break; /* trailing NULs in kallsyms & co */
		if (ch != '\t' && ch != '\n' && (ch < 0x20 || ch > 0x7e))
			return false;
	}
	return true;
}

/*
 * Parse ops [from, nr) in a child; returns the index of the op that
 * crashed or hung it, or nr when all went through.
 */
static unsigned int rd_sandbox_run(struct hvtrace_tracedat_file *f,
				   unsigned int from)
{
	unsigned int i, last = from, got;
	struct pollfd pfd;
	int p[2], status;
	pid_t pid;
	ssize_t r;

	if (pipe(p))
		return f->nr_ops; /* cannot check: trust it */
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return f->nr_ops;
	}
	if (pid == 0) {
		struct tep_handle *tep = tep_alloc();

		close(p[0]);
		if (!tep)
			_exit(2);
		tep_set_loglevel(TEP_LOG_NONE);
		tep_set_file_bigendian(tep, TEP_LITTLE_ENDIAN);
		tep_set_local_bigendian(tep, TEP_LITTLE_ENDIAN);
		tep_set_long_size(tep, (int)f->long_size);
		for (i = from; i < f->nr_ops; i++) {
			/* Say which one is next, then try it. */
			if (write(p[1], &i, sizeof(i)) != sizeof(i))
				_exit(2);
			if (!f->ops[i].bad)
				rd_op_apply(f, tep, &f->ops[i]);
		}
		i = f->nr_ops;
		if (write(p[1], &i, sizeof(i)) != sizeof(i))
			_exit(2);
		_exit(0);
	}
	close(p[1]);
	pfd.fd = p[0];
	pfd.events = POLLIN;
	for (;;) {
		int pr = poll(&pfd, 1, RD_SANDBOX_TIMEOUT_MS);

		if (pr <= 0) {
			if (pr < 0 && errno == EINTR)
				continue;
			kill(pid, SIGKILL); /* hung on op 'last' */
			break;
		}
		r = read(p[0], &got, sizeof(got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r != sizeof(got))
			break; /* it died on op 'last' */
		if (got >= f->nr_ops) {
			last = f->nr_ops;
			break;
		}
		last = got;
	}
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (last < f->nr_ops && WIFEXITED(status) && WEXITSTATUS(status) == 2)
		return f->nr_ops; /* the child itself failed: trust */
	return last;
}

void rd_sandbox(struct hvtrace_tracedat_file *f)
{
	unsigned int i, from = 0;

	for (i = 0; i < f->nr_ops; i++)
		if (!rd_text_ok(&f->ops[i])) {
			f->ops[i].bad = true;
			f->bad_formats++;
		}
	/* Each round skips past one bad op: at most nr_ops rounds. */
	while (from < f->nr_ops) {
		i = rd_sandbox_run(f, from);
		if (i >= f->nr_ops)
			break;
		f->ops[i].bad = true;
		f->bad_formats++;
		from = i + 1;
	}
	for (i = 0; i < f->nr_ops; i++)
		if (!f->ops[i].bad)
			rd_op_apply(f, f->tep, &f->ops[i]);
}
