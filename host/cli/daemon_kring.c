// SPDX-License-Identifier: MIT
/*
 * hvtrace stream NAME: the guest kernel's own ring beside the guest's user
 * events, on one timeline.
 *
 * A rig guest started with --kernel-events keeps its kernel's ftrace ring
 * in its RAM file ($HVT_SHM_DIR/hvtrace-NAME.ram).  When the ring's trace
 * clock is mono (the rig sets it) it shares the time base of the agent's
 * area, so the stream of the remote NAME puts its events through the same
 * conversion to host time (hvtraced's TO_HOST) and the same merge as the
 * user events.  This file opens the ring and its formats (the ones the
 * guest printed on its console, unpacked by the rig's launcher) and hands
 * out its pages; daemon_src.c merges.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hvtrace.h>
#include <hvtrace-daemon.h>

#include "cli.h"
#include "daemon_src.h"

struct hvt_rs_kring {
	struct hvtrace_kring *k;
	struct hvtrace_decoder *dec;
	uint32_t nr_cpus;
	uint32_t subbuf_size;
	uint8_t *page;
	char formats[64]; /* the private folder the formats went to */
};

static void rk_rm(const char *dir)
{
	char *argv[] = {"rm", "-rf", (char *)dir, NULL};

	hvt_cli_run(argv, NULL);
}

int hvt_rs_kring_open(const char *name, struct hvt_rs_kring **out)
{
	const char *shm = getenv("HVT_SHM_DIR");
	char ram[PATH_MAX], launcher[PATH_MAX], *argv[5], *text = NULL;
	char clock[64];
	struct hvtrace_kring_info ki;
	struct hvt_rs_kring *r;
	int rc;

	*out = NULL;
	snprintf(ram, sizeof(ram), "%s/hvtrace-%s.ram",
		 shm && *shm ? shm : "/dev/shm", name);
	if (access(ram, F_OK))
		return 0; /* no kernel ring: user events only */
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	snprintf(r->formats, sizeof(r->formats),
		 "/tmp/hvtrace-kformats.XXXXXX");
	if (!mkdtemp(r->formats)) {
		r->formats[0] = '\0';
		goto note;
	}
	hvt_cli_launcher(launcher, sizeof(launcher));
	argv[0] = launcher;
	argv[1] = "kformats";
	argv[2] = (char *)name;
	argv[3] = r->formats;
	argv[4] = NULL;
	rc = hvt_cli_run(argv, &text);
	free(text);
	if (rc || !hvt_cli_ring_clock_mono(r->formats, clock, sizeof(clock))) {
		fprintf(stderr,
			"hvtrace stream: note: the guest kernel's ring of '%s' "
			"is left out: %s (hvtrace stream %s --guest-kernel "
			"reads it alone)\n",
			name,
			rc ? "its formats are not on its console"
			   : "its clock is not mono, the agent's",
			name);
		goto note;
	}
	if (hvtrace_kring_open(ram, 0, &r->k) ||
	    hvtrace_kring_get_info(r->k, &ki) ||
	    hvtrace_decoder_new_kernel(r->formats, &r->dec)) {
		fprintf(stderr,
			"hvtrace stream: note: the guest kernel's ring of '%s' "
			"is left out: %s\n",
			name, hvtrace_last_error());
		goto note;
	}
	r->nr_cpus = ki.nr_cpus;
	r->subbuf_size = ki.subbuf_size;
	r->page = malloc(r->subbuf_size);
	if (!r->page)
		goto note;
	fprintf(stderr,
		"hvtrace stream: '%s': the guest kernel's ring (%u CPUs) "
		"beside its user events, on the host's clock\n",
		name, r->nr_cpus);
	*out = r;
	return 0;
note:
	hvt_rs_kring_close(r);
	return 0;
}

uint32_t hvt_rs_kring_cpus(const struct hvt_rs_kring *r)
{
	return r->nr_cpus;
}

struct hvtrace_decoder *hvt_rs_kring_decoder(const struct hvt_rs_kring *r)
{
	return r->dec;
}

int hvt_rs_kring_page(struct hvt_rs_kring *r, uint32_t cpu,
		      const uint8_t **page, uint32_t *len)
{
	int ret;

	ret = hvtrace_kring_read_page(r->k, (int)cpu, r->page, r->subbuf_size,
				      NULL);
	if (ret <= 0)
		return ret;
	*page = r->page;
	*len = r->subbuf_size;
	return 1;
}

void hvt_rs_kring_close(struct hvt_rs_kring *r)
{
	if (!r)
		return;
	hvtrace_decoder_free(r->dec);
	hvtrace_kring_close(r->k);
	free(r->page);
	if (r->formats[0])
		rk_rm(r->formats);
	free(r);
}
