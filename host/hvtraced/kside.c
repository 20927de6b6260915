// SPDX-License-Identifier: MIT
/*
 * hvtraced: a rig guest's kernel ring, read beside its agent's area.
 *
 * A rig guest started with --kernel-events leaves its kernel's ftrace
 * pages where the host can read them, in one of two places:
 *
 *   copy mode  the agent copies the kernel's sub-buffers into the kernel
 *              section of the guest's trace area (the area header's
 *              kernel_offset, <hvtrace/abi.h>): an area of its own, of
 *              writer kind HVT_WRITER_GUEST_KERNEL on the agent's mono
 *              clock, which the daemon owns as it owns the area (its
 *              consumer position lets the agent reuse slots);
 *   ring mode  the kernel keeps its persistent ring in guest RAM, which
 *              the rig backs with the file SHM_DIR/hvtrace-NAME.ram: the
 *              daemon maps it read-only (hvtrace_kring_open(); everything
 *              it takes from guest RAM is validated) and reads the
 *              kernel's symbols from it once (TEXT KALLSYMS).
 *
 * A section wins over a RAM file: the agent copies only when the kernel
 * made no persistent ring.  Either becomes the remote's second page
 * source (page_source.c), its CPUs numbered after the area's, read, fanned
 * out, backpressured and drained like them; TEXT CPUS names them, so every
 * tool of the guest reads the same pages and none opens the guest's files
 * (a section has one owner: before, two tools of one guest excluded each
 * other).  The RAM file is found by name in a folder anyone may write: it
 * is taken only as a regular file of a trusted owner, as the area is
 * (hvt_util_open_owned()).  A new area (a new run of the guest) opens it
 * again; a ring that is gone or not set up yet leaves the remote its
 * user events, and the log says why.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hvt_util.h>
#include <hvtrace-ring.h>

#include "daemon.h"

struct kside {
	struct page_source *ps; /* the remote's source, or NULL */
	int ram_fd;		/* ring mode: the RAM file, or -1 */
	char *ksyms;		/* ring mode: kallsyms text, or NULL */
	size_t ksyms_len;
	char ksyms_why[160];
};

/* Copy mode: the section of the remote's area, owned: 1, 0 (none), or
 * -errno. */
static int kside_section(struct remote *r, struct kside *ks,
			 const char *area_path, uid_t owner)
{
	struct hvtrace_area_info ki;
	struct hvtrace_area *sec = NULL;
	char via[64], msg[512];
	uint64_t off;
	int fd, ret;

	if (!r->area || !r->info.kernel_size)
		return 0;
	fd = hvt_util_open_owned(area_path, 1, owner, msg, sizeof(msg));
	if (fd < 0) {
		d_log("remote '%s': its kernel section is left out: %s",
		      r->name, msg);
		return fd;
	}
	snprintf(via, sizeof(via), "/proc/self/fd/%d", fd);
	off = r->info.file_offset + r->info.kernel_offset;
	ret = hvtrace_area_open(via, off, r->info.kernel_size,
				HVTRACE_OPEN_CONTROL, &sec);
	close(fd);
	if (!ret)
		ret = hvtrace_area_get_info(sec, &ki);
	snprintf(msg, sizeof(msg), "%s", ret ? hvtrace_last_error() : "");
	if (!ret && (ki.writer_kind != HVT_WRITER_GUEST_KERNEL ||
		     ki.clock_id != HVT_CLOCK_MONO_NS)) {
		snprintf(msg, sizeof(msg),
			 "it holds writer kind %u on clock %u, not a guest "
			 "kernel's (%u) on the agent's mono clock",
			 ki.writer_kind, ki.clock_id, HVT_WRITER_GUEST_KERNEL);
		ret = -EINVAL;
	}
	if (ret) {
		d_log("remote '%s': its kernel section is left out: %s",
		      r->name, msg);
		if (sec)
			hvtrace_area_close(sec);
		return ret;
	}
	ret = page_source_kernel_section(r, sec, &ki, &ks->ps);
	if (ret)
		return ret;
	d_log("remote '%s': the guest kernel's pages, copied by its agent: "
	      "%u CPUs x %u sub-buffers of %u bytes, CPUs %u..%u",
	      r->name, ki.nr_cpus, ki.nr_subbufs, ki.subbuf_size,
	      ks->ps->first_cpu, ks->ps->first_cpu + ki.nr_cpus - 1);
	return 1;
}

/* Ring mode: the RAM file, read-only: 1, 0 (none), or -errno. */
static int kside_ring(struct remote *r, struct kside *ks, const char *ram_path,
		      uid_t owner)
{
	struct hvtrace_kring_info ki;
	struct hvtrace_kring *k = NULL;
	char via[64], msg[512];
	int fd, ret;

	fd = hvt_util_open_owned(ram_path, 0, owner, msg, sizeof(msg));
	if (fd == -ENOENT)
		return 0;
	if (fd < 0) {
		d_log("remote '%s': its kernel ring is left out: %s", r->name,
		      msg);
		return fd;
	}
	snprintf(via, sizeof(via), "/proc/self/fd/%d", fd);
	ret = hvtrace_kring_open(via, 0, &k);
	if (!ret)
		ret = hvtrace_kring_get_info(k, &ki);
	snprintf(msg, sizeof(msg), "%s", ret ? hvtrace_last_error() : "");
	if (!ret && (!ki.nr_cpus || ki.nr_cpus > D_MAX_CPUS - r->nr_cpus)) {
		snprintf(msg, sizeof(msg), "a ring of %u CPUs beside %u",
			 ki.nr_cpus, r->nr_cpus);
		ret = -E2BIG;
	}
	if (ret) {
		d_log("remote '%s': its kernel ring in %s is left out: %s",
		      r->name, ram_path, msg);
		hvtrace_kring_close(k);
		close(fd);
		return ret;
	}
	ks->ram_fd = fd; /* kept to see the file go (kside_release_unread()) */
	kring_ksyms_load(k, r->name, &ks->ksyms, &ks->ksyms_len, ks->ksyms_why,
			 sizeof(ks->ksyms_why));
	ret = kring_source_add(r, k, &ki, &ks->ps);
	if (ret)
		return ret;
	d_log("remote '%s': the guest kernel's ring in %s: %u CPUs x %u "
	      "sub-buffers of %u bytes, CPUs %u..%u",
	      r->name, ram_path, ki.nr_cpus, ki.nr_subbufs, ki.subbuf_size,
	      ks->ps->first_cpu, ks->ps->first_cpu + ki.nr_cpus - 1);
	return 1;
}

int kside_open(struct remote *r, const char *area_path, const char *ram_path,
	       uid_t owner, struct kside **out)
{
	struct kside *ks;
	int ret;

	kside_close(r, out);
	ks = calloc(1, sizeof(*ks));
	if (!ks)
		return -ENOMEM;
	ks->ram_fd = -1;
	ret = kside_section(r, ks, area_path, owner);
	if (!ret && ram_path)
		ret = kside_ring(r, ks, ram_path, owner);
	if (ret <= 0) {
		/* a source that failed to join was closed with its ring */
		ks->ps = NULL;
		kside_close(NULL, &ks);
		return ret;
	}
	*out = ks;
	return 0;
}

void kside_close(struct remote *r, struct kside **ks)
{
	if (!*ks)
		return;
	if (r && (*ks)->ps)
		page_source_del(r, (*ks)->ps);
	if ((*ks)->ram_fd >= 0)
		close((*ks)->ram_fd);
	free((*ks)->ksyms);
	free(*ks);
	*ks = NULL;
}

int kside_kallsyms(const struct kside *ks, const char **text, size_t *len,
		   const char **why)
{
	*text = ks ? ks->ksyms : NULL;
	*len = ks ? ks->ksyms_len : 0;
	*why = !ks ? "the guest kernel's ring is not read"
	       : ks->ksyms_why[0]
		       ? ks->ksyms_why
		       : "in kernel copy mode there is no guest RAM to read "
			 "the kernel's symbols from";
	return *text ? 0 : -ENOENT;
}

bool kside_release_unread(struct remote *r, struct kside **ks)
{
	struct stat st;

	if (!*ks || (*ks)->ram_fd < 0 || fstat((*ks)->ram_fd, &st) ||
	    st.st_nlink ||
	    subs_read_cpus(r, (*ks)->ps->first_cpu, (*ks)->ps->nr_cpus))
		return false;
	d_log("remote '%s': its RAM file is gone and no tool reads its "
	      "kernel ring: the ring is let go (%llu MiB of guest RAM)",
	      r->name, (unsigned long long)(st.st_size >> 20));
	kside_close(r, ks);
	return true;
}
