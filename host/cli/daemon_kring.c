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
 *
 * In kernel copy mode (a guest kernel without the persistent ring, or the
 * rig's --kernel-mode copy) the agent copies the kernel's pages into the
 * kernel section of the guest's trace area ($HVT_SHM_DIR/hvtrace-NAME),
 * which the area's header names.  The section is an area of its own: this
 * file opens it as its owner (consumer progress lets the agent reuse
 * slots) and hands out the pages the one page reader returns, to the same
 * decoder and merge.  A section wins over a RAM file: the agent copies
 * only when the kernel made no persistent ring.
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
	struct hvtrace_kring *k;  /* ring mode: read from guest RAM */
	struct hvtrace_area *sec; /* copy mode: the area's kernel section */
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

/*
 * The kernel section of the guest's area @path, opened as its owner:
 * 1 with *@out, 0 when the area names none, -1 when it names one that
 * cannot be read (*@why says why).
 */
static int rk_section(const char *path, struct hvtrace_area **out,
		      const char **why)
{
	struct hvtrace_area_info ui, ki;
	struct hvtrace_area *ua = NULL;

	*out = NULL;
	if (access(path, F_OK) || hvtrace_area_open(path, 0, 0, 0, &ua))
		return 0; /* no area yet: nothing to join */
	if (hvtrace_area_get_info(ua, &ui) || !ui.kernel_size) {
		hvtrace_area_close(ua);
		return 0;
	}
	hvtrace_area_close(ua);
	if (hvtrace_area_open(path, ui.file_offset + ui.kernel_offset,
			      ui.kernel_size, HVTRACE_OPEN_CONTROL, out) ||
	    hvtrace_area_get_info(*out, &ki)) {
		*why = hvtrace_last_error();
		hvtrace_area_close(*out);
		*out = NULL;
		return -1;
	}
	if (ki.writer_kind != HVT_WRITER_GUEST_KERNEL ||
	    ki.clock_id != HVT_CLOCK_MONO_NS) {
		*why = ki.writer_kind != HVT_WRITER_GUEST_KERNEL
			       ? "the area's kernel section holds another "
				 "writer's area"
			       : "the kernel section's clock is not mono, the "
				 "agent's";
		hvtrace_area_close(*out);
		*out = NULL;
		return -1;
	}
	return 1;
}

int hvt_rs_kring_open(const char *name, struct hvt_rs_kring **out)
{
	const char *shm = getenv("HVT_SHM_DIR");
	char ram[PATH_MAX], area[PATH_MAX], launcher[PATH_MAX], *argv[5];
	char clock[64], *text = NULL;
	const char *why = NULL;
	struct hvtrace_kring_info ki;
	struct hvtrace_area_info ai;
	struct hvtrace_area *sec;
	struct hvt_rs_kring *r;
	int rc;

	*out = NULL;
	snprintf(ram, sizeof(ram), "%s/hvtrace-%s.ram",
		 shm && *shm ? shm : "/dev/shm", name);
	snprintf(area, sizeof(area), "%s/hvtrace-%s",
		 shm && *shm ? shm : "/dev/shm", name);
	rc = rk_section(area, &sec, &why);
	if (rc < 0) {
		fprintf(stderr,
			"hvtrace stream: note: the guest kernel's pages of "
			"'%s' (kernel copy mode) are left out: %s\n",
			name, why);
		return 0;
	}
	if (!sec && access(ram, F_OK))
		return 0; /* no kernel ring: user events only */
	r = calloc(1, sizeof(*r));
	if (!r) {
		hvtrace_area_close(sec);
		return -ENOMEM;
	}
	r->sec = sec;
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
			"hvtrace stream: note: the guest kernel's %s of '%s' "
			"is left out: %s%s%s%s\n",
			r->sec ? "pages" : "ring", name,
			rc ? "its formats are not on its console"
			   : "its clock is not mono, the agent's",
			r->sec ? "" : " (hvtrace stream ", r->sec ? "" : name,
			r->sec ? "" : " --guest-kernel reads it alone)");
		goto note;
	}
	if (r->sec) {
		hvtrace_area_get_info(r->sec, &ai);
		ki.nr_cpus = ai.nr_cpus;
		ki.subbuf_size = ai.subbuf_size;
	}
	if ((!r->sec && (hvtrace_kring_open(ram, 0, &r->k) ||
			 hvtrace_kring_get_info(r->k, &ki))) ||
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
		"hvtrace stream: '%s': the guest kernel's %s (%u CPUs) "
		"beside its user events, on the host's clock\n",
		name,
		r->sec ? "pages, copied by its agent (kernel copy mode)"
		       : "ring",
		r->nr_cpus);
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

	ret = r->sec ? hvtrace_cpu_read_page(r->sec, (int)cpu, r->page,
					     r->subbuf_size, NULL)
		     : hvtrace_kring_read_page(r->k, (int)cpu, r->page,
					       r->subbuf_size, NULL);
	if (ret <= 0)
		return ret;
	*page = r->page;
	*len = r->subbuf_size;
	return 1;
}

bool hvt_rs_kring_finished(const struct hvt_rs_kring *r)
{
	uint32_t state;

	if (!r->sec || hvtrace_area_writer_state(r->sec, &state, NULL) < 0 ||
	    state != HVT_STATE_STOPPED)
		return false;
	/* The agent stored the state (release) after its last page: what
	 * is read from here on sees every page. */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return true;
}

void hvt_rs_kring_close(struct hvt_rs_kring *r)
{
	if (!r)
		return;
	hvtrace_decoder_free(r->dec);
	hvtrace_kring_close(r->k);
	hvtrace_area_close(r->sec);
	free(r->page);
	if (r->formats[0])
		rk_rm(r->formats);
	free(r);
}
