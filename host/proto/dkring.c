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
 *   hvtrace_daemon_kring_ring_open()  one guest CPU as a ring of the core,
 *                                     its times on the host's clock with
 *                                     the feed's model of the remote
 *
 *   hvtrace_daemon_kformats_dir()     where hvtraced keeps the formats the
 *                                     guest's agent sent (KFORMATS_DIR)
 *
 * The formats are the caller's (a folder laid out like tracefs); the
 * ring's timestamps are the guest's trace clock, which the caller puts on
 * the host's clock with hvtraced's model of the guest's mono clock
 * (hvtrace_daemon_feed_to_host()) when the folder's trace_clock says mono.
 *
 * In agent copy mode (a guest kernel without the persistent ring, or the
 * rig's --kernel-mode copy) there is no ring in guest RAM: the guest's
 * agent copies the kernel's pages into the kernel section of the guest's
 * trace area ($HVT_SHM_DIR/hvtrace-NAME), which the area's header names
 * (<hvtrace/abi.h>, kernel_offset).  The section is an area of its own;
 * this file opens it as its owner (its consumer progress lets the agent
 * reuse slots) and hands out the pages the one page reader returns
 * (hvtrace_cpu_read_page()), to the same callers, decoder and merge.  A
 * section wins over a RAM file: the agent copies only when the kernel made
 * no persistent ring.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include <hvtrace-internal.h>
#include "dfeed.h"
#include "hvt_util.h"

struct hvtrace_daemon_kring {
	struct hvtrace_kring *k;  /* ring mode: read from guest RAM */
	struct hvtrace_area *sec; /* copy mode: the area's kernel section */
	struct hvtrace_decoder *dec;
	uint32_t nr_cpus;
	uint32_t subbuf_size;
	uint8_t *page;
	/* served by hvtraced: the remote's CPUs first_cpu.. are the guest
	 * kernel's (TEXT CPUS); k and sec are NULL */
	bool served;
	bool copied;
	uint32_t first_cpu;
};

/*
 * The area or RAM file @path of a remote, found by its name in a shared
 * folder: opened only when root or this user owns it (anyone
 * may create a name in /dev/shm), as /proc/self/fd/N in @via for the
 * library's opens.  The descriptor; -ENOENT quietly when there is none.
 */
static int dk_open_owned(const char *path, int rdwr, char *via,
			 size_t via_size)
{
	char msg[PATH_MAX + 128];
	int fd;

	fd = hvt_util_open_owned(path, rdwr, (uid_t)-1, msg, sizeof(msg));
	if (fd == -ENOENT)
		return fd;
	if (fd < 0)
		return hvt_err(fd, "%s", msg);
	snprintf(via, via_size, "/proc/self/fd/%d", fd);
	return fd;
}

/* The library's last error (about /proc/self/fd/N), said of @path. */
static int dk_err_in(int err, const char *path)
{
	char m[512];

	snprintf(m, sizeof(m), "%s", hvtrace_last_error());
	return hvt_err(err, "%s: %s", path, m);
}

/*
 * The kernel section named by the header of the area @path: 1 with its
 * place in *@off and *@size, 0 when the area names none (or is no area),
 * -errno for an area file no trusted user owns.
 */
static int dk_section(const char *path, uint64_t *off, uint64_t *size)
{
	struct hvtrace_area_info ui;
	struct hvtrace_area *ua = NULL;
	char via[64];
	int fd, ret;

	fd = dk_open_owned(path, 0, via, sizeof(via));
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	ret = hvtrace_area_open(via, 0, 0, 0, &ua);
	close(fd);
	if (ret)
		return 0;
	ret = hvtrace_area_get_info(ua, &ui);
	hvtrace_area_close(ua);
	if (ret || !ui.kernel_size)
		return 0;
	*off = ui.file_offset + ui.kernel_offset;
	*size = ui.kernel_size;
	return 1;
}

int hvtrace_daemon_kring_path(const char *name, char *buf, size_t size)
{
	const char *shm = getenv("HVT_SHM_DIR");
	uint64_t off, len;
	char via[64];
	int n, fd;

	shm = shm && *shm ? shm : "/dev/shm";
	n = snprintf(buf, size, "%s/hvtrace-%s", shm, name);
	if (n < 0 || (size_t)n >= size)
		return hvt_err(-ENAMETOOLONG,
			       "the area file name of '%s' is too long", name);
	n = dk_section(buf, &off, &len);
	if (n < 0)
		return n;
	if (n)
		return 2;
	n = snprintf(buf, size, "%s/hvtrace-%s.ram", shm, name);
	if (n < 0 || (size_t)n >= size)
		return hvt_err(-ENAMETOOLONG,
			       "the RAM file name of '%s' is too long", name);
	fd = dk_open_owned(buf, 0, via, sizeof(via));
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	close(fd);
	return 1;
}

/* Copy mode: the section of the area @path, opened as its owner. */
static int dk_open_section(struct hvtrace_daemon_kring *r, const char *path)
{
	struct hvtrace_area_info ki;
	uint64_t off, len;
	int ret;

	char via[64];
	int fd;

	ret = dk_section(path, &off, &len);
	if (ret < 0)
		return ret;
	if (!ret)
		return hvt_err(-ENOENT, "%s names no kernel section any more",
			       path);
	/* Read-write: the section's owner writes its control page (its
	 * consumer progress); the agent's pages stay mapped read-only. */
	fd = dk_open_owned(path, 1, via, sizeof(via));
	if (fd < 0)
		return fd == -ENOENT ? hvt_err(fd, "%s is gone", path) : fd;
	ret = hvtrace_area_open(via, off, len, HVTRACE_OPEN_CONTROL, &r->sec);
	close(fd);
	if (ret)
		ret = dk_err_in(ret, path);
	if (!ret)
		ret = hvtrace_area_get_info(r->sec, &ki);
	if (ret)
		return ret;
	if (ki.writer_kind != HVT_WRITER_GUEST_KERNEL)
		return hvt_err(-EINVAL,
			       "%s: the kernel section at %llu holds an area "
			       "of writer kind %u, not a guest kernel's (%u)",
			       path, (unsigned long long)off, ki.writer_kind,
			       HVT_WRITER_GUEST_KERNEL);
	if (ki.clock_id != HVT_CLOCK_MONO_NS)
		return hvt_err(-EINVAL,
			       "%s: the kernel section's clock is not mono, "
			       "the agent's",
			       path);
	r->nr_cpus = ki.nr_cpus;
	r->subbuf_size = ki.subbuf_size;
	return 0;
}

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
	r->served = true;
	r->copied = ret == 2;
	ret = hvtrace_decoder_new_kernel(formats, &r->dec);
	if (ret) {
		hvtrace_daemon_kring_close(r);
		return ret;
	}
	*out = r;
	return 0;
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
	if (ret == 2) {
		ret = dk_open_section(r, ram);
	} else {
		char via[64];
		int fd = dk_open_owned(ram, 0, via, sizeof(via));

		if (fd < 0) {
			ret = fd == -ENOENT ? hvt_err(fd, "%s is gone", ram) :
					      fd;
			goto fail;
		}
		ret = hvtrace_kring_open(via, 0, &r->k);
		close(fd);
		if (ret)
			ret = dk_err_in(ret, ram);
		if (!ret)
			ret = hvtrace_kring_get_info(r->k, &ki);
		if (!ret) {
			r->nr_cpus = ki.nr_cpus;
			r->subbuf_size = ki.subbuf_size;
		}
	}
	if (!ret)
		ret = hvtrace_decoder_new_kernel(formats, &r->dec);
	if (ret)
		goto fail;
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

/* The next validated sub-buffer of guest CPU @cpu into @page (subbuf_size
 * bytes), from guest RAM or the agent's copy. */
static int dk_read(struct hvtrace_daemon_kring *r, int cpu, uint8_t *page,
		   struct hvtrace_page_info *info)
{
	return r->sec ? hvtrace_cpu_read_page(r->sec, cpu, page, r->subbuf_size,
					      info)
		      : hvtrace_kring_read_page(r->k, cpu, page, r->subbuf_size,
						info);
}

int hvtrace_daemon_kring_read_page(struct hvtrace_daemon_kring *r, uint32_t cpu,
				   const uint8_t **page, uint32_t *len)
{
	int ret;

	if (cpu >= r->nr_cpus)
		return hvt_err(-EINVAL, "the guest kernel has no CPU %u", cpu);
	if (r->served)
		return hvt_err(-EOPNOTSUPP, "hvtraced serves this guest "
					    "kernel's pages: read them as "
					    "rings (hvtrace_daemon_kring_"
					    "ring_open())");
	ret = dk_read(r, (int)cpu, r->page, NULL);
	if (ret <= 0)
		return ret;
	*page = r->page;
	*len = r->subbuf_size;
	return 1;
}

bool hvtrace_daemon_kring_copied(const struct hvtrace_daemon_kring *r)
{
	return r->sec || r->copied;
}

bool hvtrace_daemon_kring_finished(const struct hvtrace_daemon_kring *r)
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

void hvtrace_daemon_kring_close(struct hvtrace_daemon_kring *r)
{
	if (!r)
		return;
	hvtrace_decoder_free(r->dec);
	hvtrace_kring_close(r->k);
	hvtrace_area_close(r->sec);
	free(r->page);
	free(r);
}

/* --- a guest CPU as a ring of the core ------------------------------------ */

struct dkring_cpu {
	struct hvtrace_daemon_kring *r;
	struct hvtrace_daemon_feed *f; /* NULL: the guest's own clock */
	uint32_t remote;
	uint8_t *page; /* this CPU's: valid until its next page */
};

static int dkring_next_page(void *ctx, int cpu, struct hvtrace_ring_page *pg)
{
	struct dkring_cpu *c = ctx;
	struct hvtrace_page_info info;
	int ret;

	ret = dk_read(c->r, cpu, c->page, &info);
	if (ret <= 0)
		return ret;
	pg->data = c->page;
	pg->len = c->r->subbuf_size;
	pg->seq = info.seq;
	pg->flags = info.flags;
	pg->lost_events =
		hvt_page_unmarked_lost(c->page, pg->len, info.lost_events);
	return 1;
}

/* The guest's trace clock is its CLOCK_MONOTONIC (the caller checked the
 * folder's trace_clock): the remote's model maps it, as its agent's. */
static int dkring_to_host(void *ctx, int cpu, uint64_t ts, uint64_t *ns,
			  uint64_t *err_ns)
{
	struct dkring_cpu *c = ctx;

	(void)cpu;
	return hvt_dfeed_map(c->f, c->remote, ts, ns, err_ns);
}

static void dkring_close(void *ctx, int cpu)
{
	struct dkring_cpu *c = ctx;

	(void)cpu;
	free(c->page);
	free(c);
}

static const struct hvtrace_ring_source_ops dkring_mapped_ops = {
	.next_page = dkring_next_page,
	.to_host = dkring_to_host,
	.close = dkring_close,
};

static const struct hvtrace_ring_source_ops dkring_own_ops = {
	.next_page = dkring_next_page,
	.close = dkring_close,
};

int hvtrace_daemon_kring_ring_open(struct hvtrace_daemon_kring *r, int cpu,
				   struct hvtrace_daemon_feed *f,
				   uint32_t remote, struct hvtrace_ring **out)
{
	struct dkring_cpu *c;
	int ret;

	if (!r || !out)
		return hvt_err(-EINVAL, "hvtrace_daemon_kring_ring_open: NULL "
					"argument");
	*out = NULL;
	if (cpu < 0 || (uint32_t)cpu >= r->nr_cpus)
		return hvt_err(-EINVAL,
			       "the guest kernel has no CPU %d (it "
			       "has %u)",
			       cpu, r->nr_cpus);
	/* Served: the remote's CPU beside its own, through the feed. */
	if (r->served && !f)
		return hvt_err(-EINVAL, "hvtraced serves this guest kernel's "
					"pages: give the feed they come on");
	if (r->served)
		return hvt_dring_open(f, remote, r->first_cpu + (uint32_t)cpu,
				      cpu, r->subbuf_size, out);
	c = calloc(1, sizeof(*c));
	if (c)
		c->page = malloc(r->subbuf_size);
	if (!c || !c->page) {
		free(c);
		return hvt_err(-ENOMEM, "out of memory");
	}
	c->r = r;
	c->f = f;
	c->remote = remote;
	ret = hvtrace_ring_open_source(f ? &dkring_mapped_ops : &dkring_own_ops,
				       c, cpu, r->subbuf_size, out);
	if (ret)
		dkring_close(c, cpu);
	return ret;
}
