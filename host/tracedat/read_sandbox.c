// SPDX-License-Identifier: MIT
/*
 * libhvtrace: the texts of a trace.dat file, parsed by libtraceevent in a
 * forked child first.
 *
 * One job: keep libtraceevent's trusting parsers from crashing the
 * reader.  The metadata readers (read_meta.c) queue every text here in
 * file order (headers, formats, kallsyms, printk formats, cmdlines);
 * rd_sandbox() hands them to the core's sandbox (hvt_tep_sandbox(),
 * host/lib/tep_sandbox.c: all of them parsed in one forked child, a text
 * that is not text or kills or hangs the child marked), and the texts
 * marked are skipped (and counted) when the real handle is built.  A
 * clean file costs one fork and a second parse.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event-parse.h>

#include "rw-local.h"

int rd_op_add(struct hvtrace_tracedat_file *f, enum hvt_tep_text_kind kind,
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

void rd_sandbox(struct hvtrace_tracedat_file *f)
{
	struct hvt_tep_text *t = calloc(f->nr_ops ? f->nr_ops : 1, sizeof(*t));
	unsigned int i;
	long bad = -ENOMEM;

	for (i = 0; t && i < f->nr_ops; i++)
		t[i] = (struct hvt_tep_text){
			.kind = f->ops[i].kind,
			.system = f->ops[i].system,
			.text = f->ops[i].text,
			.len = f->ops[i].len,
		};
	if (t)
		bad = hvt_tep_sandbox(t, f->nr_ops, (int)f->long_size);
	/* Nothing could be checked (no memory, no child): nothing is
	 * parsed, the events print raw. */
	for (i = 0; i < f->nr_ops; i++) {
		f->ops[i].bad = bad < 0 || t[i].bad;
		if (f->ops[i].bad)
			f->bad_formats++;
		else if (t[i].kind == HVT_TEP_KALLSYMS)
			/* A table refused (no valid line, every address
			 * 0): addresses print in hex. */
			hvt_tep_set_ksyms(f->tep, t[i].text, t[i].len,
					  &f->ksyms);
		else
			hvt_tep_apply(f->tep, &t[i], (int)f->long_size);
	}
	free(t);
}
