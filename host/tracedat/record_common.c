// SPDX-License-Identifier: MIT
/*
 * libhvtrace: what the two recorders share -- record.c (areas opened by
 * the process, the host kernel) and record_daemon.c (remotes of
 * hvtraced).  Both write the same file layout (docs/tracedat.md): one
 * buffer per source, packed per CPU on the host clock, event ids unique in
 * the file and below 0x8000, host pids named from /proc, and the same
 * options.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "tdat.h"

/* --- per-CPU packing ------------------------------------------------------ */

/* Pages from the packer go to the writer. */
static int rcpu_emit(void *ctx, const uint8_t *page, uint32_t size)
{
	struct hvt_tdat_rcpu *c = ctx;
	int ret;

	ret = hvtrace_tracedat_writer_add_page(c->w, *c->buffer, c->cpu, page,
					       size);
	if (!ret)
		c->st->bytes += c->pack.page_size;
	return ret;
}

int hvt_tdat_rcpu_init(struct hvt_tdat_rcpu *c,
		       struct hvtrace_tracedat_writer *w, const int *buffer,
		       uint32_t cpu, uint32_t subbuf_size,
		       struct hvtrace_tracedat_source_stats *st)
{
	c->w = w;
	c->buffer = buffer;
	c->cpu = cpu;
	c->st = st;
	return hvt_tdat_pack_init(&c->pack, subbuf_size, rcpu_emit, c);
}

void hvt_tdat_rcpu_fini(struct hvt_tdat_rcpu *c)
{
	hvt_tdat_pack_fini(&c->pack);
}

int hvt_tdat_rcpu_put_event(struct hvt_tdat_rcpu *c, uint64_t ts,
			    const uint8_t *rec, uint32_t len)
{
	int ret;

	if (c->have_ts && ts < c->last_ts) {
		ts = c->last_ts;
		c->st->clamped++;
	}
	c->last_ts = ts;
	c->have_ts = true;
	ret = hvt_tdat_pack_event(&c->pack, ts, rec, len);
	if (ret == -E2BIG) {
		c->st->errors++;
		return 0;
	}
	if (!ret)
		c->st->events++;
	return ret;
}

int hvt_tdat_rcpu_put_lost(struct hvt_tdat_rcpu *c, uint64_t n, bool known)
{
	if (known)
		c->st->lost += n;
	else
		c->st->lost_unknown++;
	return hvt_tdat_pack_lost(&c->pack, n, known);
}

/* --- file-wide event ids -------------------------------------------------- */

int hvt_tdat_ids_init(struct hvt_tdat_ids *ids)
{
	memset(ids, 0, sizeof(*ids));
	ids->text = calloc(65536, sizeof(*ids->text));
	ids->sys = calloc(65536, sizeof(*ids->sys));
	return ids->text && ids->sys ? 0 : -ENOMEM;
}

void hvt_tdat_ids_fini(struct hvt_tdat_ids *ids)
{
	free(ids->text);
	free(ids->sys);
	ids->text = NULL;
	ids->sys = NULL;
}

bool hvt_tdat_ids_used(const struct hvt_tdat_ids *ids,
		       const struct hvt_tdat_kernel *k, uint32_t id)
{
	return id >= HVT_TDAT_ID_LIMIT || id == ids->unknown_id ||
	       ids->text[id] || (k && hvt_tdat_kernel_has_id(k, id));
}

int hvt_tdat_ids_alloc(const struct hvt_tdat_ids *ids,
		       const struct hvt_tdat_kernel *k, uint32_t *id)
{
	uint32_t i;

	for (i = HVT_TDAT_ID_LIMIT - 1; i > 0 && hvt_tdat_ids_used(ids, k, i);
	     i--)
		;
	if (!i)
		return hvt_err(-ENOSPC, "no free event id left in the file");
	*id = i;
	return 0;
}

uint32_t hvt_tdat_ids_find(const struct hvt_tdat_ids *ids, const char *system,
			   const char *text, char **out)
{
	uint32_t j;
	char *t;

	for (j = 1; j < HVT_TDAT_ID_LIMIT; j++) {
		if (!ids->text[j] || strcmp(ids->sys[j], system))
			continue;
		t = hvt_tdat_format_set_id(text, j);
		if (t && !strcmp(t, ids->text[j])) {
			if (out)
				*out = t;
			else
				free(t);
			return j;
		}
		free(t);
	}
	return 0;
}

/* --- event patterns ------------------------------------------------------- */

int hvt_tdat_events_dup(const char *const *events, char ***out)
{
	unsigned int n = 0, i;
	char **v;

	while (events && events[n])
		n++;
	v = calloc(n + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		v[i] = strdup(events[i]);
		if (!v[i]) {
			hvt_tdat_events_free(v);
			return -ENOMEM;
		}
	}
	*out = v;
	return 0;
}

void hvt_tdat_events_free(char **events)
{
	unsigned int i;

	for (i = 0; events && events[i]; i++)
		free(events[i]);
	free(events);
}

/* --- host pids ------------------------------------------------------------ */

bool hvt_tdat_pid_first(uint8_t **seen, int pid)
{
	if (pid <= 0 || pid >= HVT_TDAT_PID_MAX)
		return false;
	if (!*seen) {
		*seen = calloc(HVT_TDAT_PID_MAX / 8, 1);
		if (!*seen)
			return false;
	}
	if ((*seen)[pid / 8] & (1u << (pid % 8)))
		return false;
	(*seen)[pid / 8] |= (uint8_t)(1u << (pid % 8));
	return true;
}

int hvt_tdat_pid_name(struct hvtrace_tracedat_writer *w, int pid)
{
	struct hvt_tdat_blob b = {0};
	char p[64];
	int ret;

	snprintf(p, sizeof(p), "/proc/%d/comm", pid);
	ret = hvt_tdat_read_file(p, &b, 64);
	if (!ret) {
		b.data[strcspn(b.data, "\n")] = '\0';
		if (b.data[0])
			ret = hvtrace_tracedat_writer_add_cmdline(w, pid,
								  b.data);
		else
			ret = -ENOENT;
	}
	hvt_tdat_blob_free(&b);
	return ret;
}

/* --- metadata and finishing ----------------------------------------------- */

int hvt_tdat_rec_add_optionf(struct hvtrace_tracedat_writer *w, uint16_t id,
			     const char *fmt, ...)
{
	va_list ap;
	char *text;
	int n, ret;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return hvt_err(-EINVAL, "bad option text");
	text = malloc((size_t)n + 1);
	if (!text)
		return hvt_err(-ENOMEM, "out of memory");
	va_start(ap, fmt);
	vsnprintf(text, (size_t)n + 1, fmt, ap);
	va_end(ap);
	ret = hvtrace_tracedat_writer_add_option(w, id, text, (uint32_t)n + 1);
	free(text);
	return ret;
}

int hvt_tdat_rec_add_buffer_stat(struct hvtrace_tracedat_writer *w,
				 const char *name)
{
	return hvt_tdat_rec_add_optionf(w, HVT_TDAT_OPT_CPUSTAT,
					"\nBuffer: %s\n\n", name);
}

int hvt_tdat_rec_add_cpustat(struct hvtrace_tracedat_writer *w,
			     const struct hvt_tdat_cpustat *cs)
{
	/* Times "%5llu.%06llu" like the kernel's stats files. */
	return hvt_tdat_rec_add_optionf(
		w, HVT_TDAT_OPT_CPUSTAT,
		"CPU: %u\nentries: %llu\noverrun: %llu\n"
		"commit overrun: 0\nbytes: %llu\n"
		"oldest event ts: %5llu.%06llu\n"
		"now ts: %5llu.%06llu\ndropped events: %llu\n"
		"read events: %llu\n",
		cs->cpu, (unsigned long long)cs->entries,
		(unsigned long long)cs->overrun, (unsigned long long)cs->bytes,
		(unsigned long long)(cs->oldest_ns / 1000000000),
		(unsigned long long)(cs->oldest_ns % 1000000000 / 1000),
		(unsigned long long)(cs->now_ns / 1000000000),
		(unsigned long long)(cs->now_ns % 1000000000 / 1000),
		(unsigned long long)cs->dropped, (unsigned long long)cs->read);
}

int hvt_tdat_rec_set_headers(struct hvtrace_tracedat_writer *w,
			     uint32_t subbuf_size)
{
	struct hvt_tdat_blob hp = {0}, he = {0};
	int ret;

	ret = hvt_tdat_header_page_text(&hp, subbuf_size);
	if (!ret)
		ret = hvt_tdat_header_event_text(&he);
	if (!ret)
		ret = hvtrace_tracedat_writer_set_headers(w, hp.data, hp.len,
							  he.data, he.len);
	hvt_tdat_blob_free(&hp);
	hvt_tdat_blob_free(&he);
	return ret;
}

int hvt_tdat_rec_add_unknown(struct hvtrace_tracedat_writer *w, uint32_t id)
{
	struct hvt_tdat_blob b = {0};
	int ret;

	ret = hvt_tdat_unknown_format_text(&b, id);
	if (!ret)
		ret = hvtrace_tracedat_writer_add_format(w, "hvtrace", b.data,
							 b.len);
	hvt_tdat_blob_free(&b);
	return ret;
}

int hvt_tdat_rec_add_options(struct hvtrace_tracedat_writer *w,
			     const char *clock, uint32_t len)
{
	static const char version[] = "hvtrace " HVT_VERSION;
	struct utsname u;
	int ret;

	if (!clock) {
		clock = "[mono]\n";
		len = 8;
	}
	ret = hvtrace_tracedat_writer_add_option(w, HVT_TDAT_OPT_TRACECLOCK,
						 clock, len);
	if (!ret && !uname(&u))
		ret = hvt_tdat_rec_add_optionf(
			w, HVT_TDAT_OPT_UNAME, "%s %s %s %s", u.sysname,
			u.nodename, u.release, u.machine);
	if (!ret)
		ret = hvtrace_tracedat_writer_add_option(
			w, HVT_TDAT_OPT_VERSION, version, sizeof(version));
	return ret;
}

int hvt_tdat_rec_add_cpucount(struct hvtrace_tracedat_writer *w, uint32_t cpus)
{
	uint8_t x[4] = {(uint8_t)cpus, (uint8_t)(cpus >> 8),
			(uint8_t)(cpus >> 16), (uint8_t)(cpus >> 24)};

	return hvtrace_tracedat_writer_add_option(w, HVT_TDAT_OPT_CPUCOUNT, x,
						  4);
}

int hvt_tdat_rec_end(struct hvtrace_tracedat_writer *w, int ret)
{
	char why[512];

	if (!ret)
		return hvtrace_tracedat_writer_finish(w);
	snprintf(why, sizeof(why), "%s", hvtrace_last_error());
	hvtrace_tracedat_writer_abort(w);
	return hvt_err(ret, "%s", why);
}
