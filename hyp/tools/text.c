// SPDX-License-Identifier: MIT
/*
 * hvt-hyp: event text through libtraceevent.
 *
 * Every hypervisor event's format file text (from the generated table in
 * host/hypevents/) is parsed with tep_parse_event(); records are printed
 * with tep_print_event(), so what the tool shows is exactly what any
 * libtraceevent user (trace-cmd, KernelShark) would show from the same
 * format files.  Lines follow the kernel's trace remotes output:
 *
 *   [CPU]\t  SEC.USEC: EVENT FIELDS
 */
#include <errno.h>
#include <string.h>

#include <event-parse.h>
#include <trace-seq.h>

#include "hyp_tool.h"

static struct tep_handle *text_handle;

struct tep_handle *text_tep(void)
{
	return text_handle;
}

int text_init(void)
{
	unsigned int i;

	if (text_handle)
		return 0;
	text_handle = tep_alloc();
	if (!text_handle)
		return -ENOMEM;
	tep_set_long_size(text_handle, 8);
	tep_set_file_bigendian(text_handle, TEP_LITTLE_ENDIAN);
	tep_set_local_bigendian(text_handle, TEP_LITTLE_ENDIAN);
	for (i = 0; i < hvt_hypevents_count(); i++) {
		const struct hvt_hypevent *e = hvt_hypevents_get(i);
		enum tep_errno err;

		err = tep_parse_event(text_handle, e->format,
				      strlen(e->format), e->system);
		if (err) {
			char msg[128];

			tep_strerror(text_handle, err, msg, sizeof(msg));
			fprintf(stderr, "hvt-hyp: libtraceevent rejects the format of %s: %s\n",
				e->name, msg);
			return -EINVAL;
		}
	}
	return 0;
}

void text_fini(void)
{
	tep_free(text_handle);
	text_handle = NULL;
}

int text_event_line(const struct hyp_ev *ev, uint64_t ns, char *buf,
		    size_t len)
{
	struct tep_record rec;
	struct trace_seq s;
	int n;

	memset(&rec, 0, sizeof(rec));
	rec.ts = ns;
	rec.cpu = ev->cpu;
	rec.size = (int)ev->len;
	rec.data = (void *)ev->rec;
	trace_seq_init(&s);
	if (tep_find_event_by_record(text_handle, &rec))
		tep_print_event(text_handle, &s, &rec, "%s %s", TEP_PRINT_NAME,
				TEP_PRINT_INFO);
	else
		trace_seq_printf(&s, "UNKNOWN id=%u",
				 ev->len >= 2 ? (unsigned int)(ev->rec[0] |
							       ev->rec[1] << 8)
					      : 0u);
	trace_seq_terminate(&s);
	n = snprintf(buf, len, "[%03d]\t%5llu.%06llu: %s\n", ev->cpu,
		     (unsigned long long)(ns / 1000000000ULL),
		     (unsigned long long)(ns % 1000000000ULL / 1000),
		     s.buffer);
	trace_seq_destroy(&s);
	return n;
}
