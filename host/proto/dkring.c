// SPDX-License-Identifier: MIT
/*
 * The guest kernel's own ring of a remote, for every reader of remotes.
 *
 * A rig guest started with --kernel-events keeps its kernel's ftrace ring
 * in its RAM file ($HVT_SHM_DIR/hvtrace-NAME.ram, default /dev/shm).  The
 * stream, the recorder and the tracefs-style view read the remote NAME
 * through hvtraced; this file gives all three the same second source
 * beside it:
 *
 *   hvtrace_daemon_kring_open()       the RAM file of NAME, its ring and a
 *                                     decoder of the guest's formats
 *   hvtrace_daemon_kring_read_page()  the next validated sub-buffer of one
 *                                     guest CPU (hvtrace_kring_read_page())
 *
 * The formats are the caller's (a folder laid out like tracefs); the
 * ring's timestamps are the guest's trace clock, which the caller puts on
 * the host's clock with hvtraced's model of the guest's mono clock
 * (hvtrace_daemon_feed_to_host()) when the folder's trace_clock says mono.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hvtrace-local.h"
#include <hvtrace-daemon.h>

struct hvtrace_daemon_kring {
	struct hvtrace_kring *k;
	struct hvtrace_decoder *dec;
	uint32_t nr_cpus;
	uint32_t subbuf_size;
	uint8_t *page;
};

int hvtrace_daemon_kring_path(const char *name, char *buf, size_t size)
{
	const char *shm = getenv("HVT_SHM_DIR");
	int n;

	n = snprintf(buf, size, "%s/hvtrace-%s.ram",
		     shm && *shm ? shm : "/dev/shm", name);
	if (n < 0 || (size_t)n >= size)
		return hvt_err(-ENAMETOOLONG,
			       "the RAM file name of '%s' is too long", name);
	return access(buf, F_OK) ? 0 : 1;
}

int hvtrace_daemon_kring_open(const char *name, const char *formats,
			      struct hvtrace_daemon_kring **out)
{
	struct hvtrace_kring_info ki;
	struct hvtrace_daemon_kring *r;
	char ram[PATH_MAX];
	int ret;

	*out = NULL;
	ret = hvtrace_daemon_kring_path(name, ram, sizeof(ram));
	if (ret <= 0)
		return ret; /* 0: no kernel ring, user events only */
	r = calloc(1, sizeof(*r));
	if (!r)
		return hvt_err(-ENOMEM, "out of memory");
	ret = hvtrace_kring_open(ram, 0, &r->k);
	if (!ret)
		ret = hvtrace_kring_get_info(r->k, &ki);
	if (!ret)
		ret = hvtrace_decoder_new_kernel(formats, &r->dec);
	if (ret)
		goto fail;
	r->nr_cpus = ki.nr_cpus;
	r->subbuf_size = ki.subbuf_size;
	r->page = malloc(r->subbuf_size);
	if (!r->page) {
		ret = hvt_err(-ENOMEM, "out of memory");
		goto fail;
	}
	*out = r;
	return 0;
fail:
	hvtrace_daemon_kring_close(r);
	return ret;
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

struct hvtrace_kring *
hvtrace_daemon_kring_ring(const struct hvtrace_daemon_kring *r)
{
	return r->k;
}

int hvtrace_daemon_kring_read_page(struct hvtrace_daemon_kring *r, uint32_t cpu,
				   const uint8_t **page, uint32_t *len)
{
	int ret;

	if (cpu >= r->nr_cpus)
		return hvt_err(-EINVAL, "the guest kernel has no CPU %u", cpu);
	ret = hvtrace_kring_read_page(r->k, (int)cpu, r->page, r->subbuf_size,
				      NULL);
	if (ret <= 0)
		return ret;
	*page = r->page;
	*len = r->subbuf_size;
	return 1;
}

void hvtrace_daemon_kring_close(struct hvtrace_daemon_kring *r)
{
	if (!r)
		return;
	hvtrace_decoder_free(r->dec);
	hvtrace_kring_close(r->k);
	free(r->page);
	free(r);
}
