// SPDX-License-Identifier: MIT
/*
 * The guest kernel's own ring of a remote, for every reader of remotes.
 *
 * A rig guest started with --kernel-events leaves its kernel's ftrace
 * pages where hvtraced reads them: its ring in guest RAM, or in agent copy
 * mode (a guest kernel without the persistent ring, or the rig's
 * --kernel-mode copy) the kernel section of its trace area that its agent
 * copies the kernel's pages into.  hvtraced reads either itself and serves
 * those pages beside the remote's own CPUs, numbered after them; the
 * stream, the recorder and the tracefs-style view read them from there,
 * so every tool of the guest reads the same pages and none opens the
 * guest's files.  This file gives all three that second source:
 *
 *   hvtrace_daemon_kring_served()       whether hvtraced serves them and
 *                                       how (TEXT CPUS: ring or copy mode)
 *   hvtrace_daemon_kring_open_served()  a handle of those CPUs and a
 *                                       decoder of the guest's formats
 *   hvtrace_daemon_kring_ring_open()    one guest CPU as a ring of the core
 *                                       on the caller's feed
 *                                       (hvt_dring_open()), its times put
 *                                       on the host's clock with the feed's
 *                                       model of the remote
 *
 *   hvtrace_daemon_kformats_dir()       where hvtraced keeps the formats the
 *                                       guest's agent sent (KFORMATS_DIR)
 *
 * The formats are the caller's (a folder laid out like tracefs); the
 * pages' timestamps are the guest's trace clock, which the feed maps with
 * hvtraced's model of the guest's mono clock: the caller checks that the
 * folder's trace_clock says mono.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace-internal.h>
#include "dfeed.h"

/* The guest kernel's CPUs hvtraced serves for a remote: its CPUs
 * first_cpu..first_cpu + nr_cpus - 1 (TEXT CPUS). */
struct hvtrace_daemon_kring {
	struct hvtrace_decoder *dec;
	uint32_t nr_cpus;
	uint32_t subbuf_size;
	bool copied; /* copy mode: the pages its agent copies */
	uint32_t first_cpu;
};

int hvtrace_daemon_kformats_dir(struct hvtrace_daemon *dc, uint32_t remote,
				char *buf, size_t size)
{
	struct hvt_msg m, r;
	int ret;

	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_KFORMATS_DIR;
	m.chan = remote;
	ret = hvtrace_daemon_call(dc, &m, &r, HVTRACE_DAEMON_TIMEOUT_MS, NULL,
				  NULL);
	if (ret)
		return ret;
	if (r.type == HVT_MSG_ERROR)
		return hvt_err(r.u.result.status ? r.u.result.status : -EIO,
			       "%.*s", (int)r.u.result.text.len,
			       r.u.result.text.ptr);
	if (r.type != HVT_MSG_KFORMATS_DIR)
		return hvt_err(-EPROTO, "unexpected %s reply",
			       hvt_msg_type_name(r.type));
	if (r.u.text.status)
		return hvt_err(r.u.text.status, "%.*s",
			       (int)r.u.text.text.len, r.u.text.text.ptr);
	/* A folder path: absolute, one line, and it must fit. */
	if (!r.u.text.text.len || r.u.text.text.len >= size ||
	    r.u.text.text.ptr[0] != '/' ||
	    memchr(r.u.text.text.ptr, '\n', r.u.text.text.len))
		return hvt_err(-EPROTO, "hvtraced named no usable formats "
			       "folder");
	memcpy(buf, r.u.text.text.ptr, r.u.text.text.len);
	buf[r.u.text.text.len] = '\0';
	return 0;
}

/*
 * TEXT CPUS of @remote: the guest kernel's CPUs hvtraced serves beside the
 * remote's own, which must follow each other and share one sub-buffer
 * size.  2 (pages its agent copies), 1 (its ring in guest RAM), 0 (none,
 * or an older hvtraced that does not say), or -errno.
 */
static int dk_served(struct hvtrace_daemon *dc, uint32_t remote,
		     uint32_t *first, uint32_t *nr, uint32_t *subbuf)
{
	unsigned int cpu, size, subbufs;
	char *text = NULL, *line, *save = NULL, kind[16];
	int where = 0, ret = 0;
	size_t len;

	*first = *nr = *subbuf = 0;
	if (hvtrace_daemon_get_text(dc, remote, HVT_TEXT_CPUS, &text, &len))
		return 0;
	for (line = strtok_r(text, "\n", &save); line && !ret;
	     line = strtok_r(NULL, "\n", &save)) {
		int w;

		if (sscanf(line, "%u %15s %u %u", &cpu, kind, &size,
			   &subbufs) != 4) {
			ret = -EPROTO;
			break;
		}
		w = !strcmp(kind, "kernel")	   ? 1
		    : !strcmp(kind, "kernel-copy") ? 2
						   : 0;
		if (!w)
			continue;
		if (!*nr) {
			*first = cpu;
			*subbuf = size;
			where = w;
		}
		if (cpu != *first + *nr || size != *subbuf || w != where ||
		    size < 64 || size > HVT_PROTO_MAX_PAGE)
			ret = -EPROTO;
		(*nr)++;
	}
	free(text);
	if (ret)
		return hvt_err(ret, "hvtraced described the guest kernel's "
				    "CPUs in a way this library cannot "
				    "read");
	return *nr ? where : 0;
}

int hvtrace_daemon_kring_served(struct hvtrace_daemon *dc, uint32_t remote)
{
	uint32_t first, nr, size;

	if (!dc)
		return hvt_err(-EINVAL, "hvtrace_daemon_kring_served: NULL "
					"argument");
	return dk_served(dc, remote, &first, &nr, &size);
}

int hvtrace_daemon_kring_open_served(struct hvtrace_daemon *dc, uint32_t remote,
				     const char *formats,
				     struct hvtrace_daemon_kring **out)
{
	struct hvtrace_daemon_kring *r;
	int ret;

	if (!dc || !out)
		return hvt_err(-EINVAL, "hvtrace_daemon_kring_open_served: "
					"NULL argument");
	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return hvt_err(-ENOMEM, "out of memory");
	ret = dk_served(dc, remote, &r->first_cpu, &r->nr_cpus,
			&r->subbuf_size);
	if (ret <= 0) {
		free(r);
		return ret;
	}
	r->copied = ret == 2;
	ret = hvtrace_decoder_new_kernel(formats, &r->dec);
	if (ret) {
		hvtrace_daemon_kring_close(r);
		return ret;
	}
	*out = r;
	return 0;
}

uint32_t hvtrace_daemon_kring_cpus(const struct hvtrace_daemon_kring *r)
{
	return r->nr_cpus;
}

uint32_t hvtrace_daemon_kring_subbuf_size(const struct hvtrace_daemon_kring *r)
{
	return r->subbuf_size;
}

struct hvtrace_decoder *
hvtrace_daemon_kring_decoder(const struct hvtrace_daemon_kring *r)
{
	return r->dec;
}

bool hvtrace_daemon_kring_copied(const struct hvtrace_daemon_kring *r)
{
	return r->copied;
}

void hvtrace_daemon_kring_close(struct hvtrace_daemon_kring *r)
{
	if (!r)
		return;
	hvtrace_decoder_free(r->dec);
	free(r);
}

int hvtrace_daemon_kring_ring_open(struct hvtrace_daemon_kring *r, int cpu,
				   struct hvtrace_daemon_feed *f,
				   uint32_t remote, struct hvtrace_ring **out)
{
	if (!r || !f || !out)
		return hvt_err(-EINVAL, "hvtrace_daemon_kring_ring_open: NULL "
					"argument");
	*out = NULL;
	if (cpu < 0 || (uint32_t)cpu >= r->nr_cpus)
		return hvt_err(-EINVAL,
			       "the guest kernel has no CPU %d (it "
			       "has %u)",
			       cpu, r->nr_cpus);
	/* The remote's CPU beside its own, through the feed. */
	return hvt_dring_open(f, remote, r->first_cpu + (uint32_t)cpu, cpu,
			      r->subbuf_size, out);
}
