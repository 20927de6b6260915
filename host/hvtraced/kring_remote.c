// SPDX-License-Identifier: MIT
/*
 * hvtraced: the kring transport -- a guest kernel's own ftrace ring found
 * in the memory of a running VMM process, attached by the VMM's pid.
 *
 * Attached with ATTACH_AREA "NAME=vmpid:PID[,formats=DIR]": the ring is
 * found once, at attach, with hvtrace_kring_open_pid() (guest RAM through
 * the VMM's shared memory file or /proc/PID/mem, read-only; the reader
 * validates everything it takes from guest memory), and served like any
 * remote: the same subscriptions and fan-out (remote_ops read_page hands
 * fanout.c the ring's validated sub-buffers), STATS from the reader's
 * counters, the same tools.  Its remote_ops (kring_ops, at the end) keep
 * this file's struct kring_remote in r->priv.
 *
 *   access   the daemon reads the VMM's memory with its own rights, so a
 *            peer may attach by pid only if it could read that memory
 *            itself: root, or the VMM's own user (the owner of
 *            /proc/PID, which a VMM marked undumpable is not) where
 *            kernel.yama.ptrace_scope is 0.  Refused with the reason.
 *   formats  DIR (a guest kernel's formats laid out like tracefs, as
 *            "hvtrace guest kformats" writes it) is read once at attach:
 *            every events/SYSTEM/EVENT/format, bounded in count, size
 *            and total (KF_* limits), opened without following links
 *            and, for a peer that is not root, only files that peer
 *            owns (never root's: a hard link to a secret would be
 *            one).  FORMATS replies carry them as "SYSTEM/EVENT", so a
 *            tool's decoder reads the ring's events.  Without DIR the
 *            events are still read and counted, not named.
 *   time     the ring's timestamps are the guest's own trace clock and
 *            no agent answers time-sync pings: there is no clock model,
 *            TO_HOST leaves the times as they are with err_ns UINT64_MAX
 *            and the REMOTES record's clock_id is 0 (the guest's own).
 *   life     a pidfd of the VMM says when it exits: the remote becomes
 *            "disconnected" (as a stopped area does), pages still
 *            readable (a shared memory file stays mapped) are read to
 *            the end, and a stream of it ends.  It is not kept across a
 *            restart of the daemon (a pid does not survive).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <hvtrace-ring.h>

#include "daemon.h"

#define KR_STATE_MS   200	  /* VMM liveness poll */
#define KR_FORMAT_MAX (64u << 10) /* one format file */
#define KR_MAX_CPUS   D_MAX_CPUS /* what a subscription may name */

struct kring_remote {
	int pid;
	int pidfd; /* the VMM; -1: none */
	struct hvtrace_kring *k;
	bool gone;	  /* the VMM exited */
	bool read_failed; /* a read error was logged */
	uint64_t next_state_ms;
	char where[128];
	struct hvt_m_format *fmt; /* the formats of DIR */
	size_t nr_fmt;
};

static const struct remote_ops kring_ops;

bool kring_remote_spec(const char *spec)
{
	return !strncmp(spec, "vmpid:", 6);
}

/* --- formats from a folder ---------------------------------------------- */

struct kr_load {
	uid_t owner;	 /* files must be this user's ... */
	bool restricted; /* ... when the peer is not root */
	size_t bytes, cap;
	struct hvt_m_format *v;
	size_t n;
};

/* One format file at @dfd/@name as "SYS/EV"; 0, or -errno for a fatal
 * error (a file that is not fit is skipped). */
static int kr_load_one(struct kr_load *l, int dfd, const char *sys,
		       const char *ev)
{
	struct stat st;
	size_t nl, off = 0;
	ssize_t got;
	char *b;
	int fd;

	fd = openat(dfd, "format", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || !st.st_size ||
	    st.st_size > KR_FORMAT_MAX ||
	    (l->restricted && st.st_uid != l->owner)) {
		close(fd);
		return 0;
	}
	if (l->n >= KF_MAX_FILES ||
	    l->bytes + (size_t)st.st_size > KF_MAX_BYTES) {
		close(fd);
		return -E2BIG;
	}
	nl = strlen(sys) + 1 + strlen(ev);
	if (nl > HVT_PROTO_EVNAME_MAX) {
		close(fd);
		return 0;
	}
	b = malloc(nl + 1 + (size_t)st.st_size);
	if (!b) {
		close(fd);
		return -ENOMEM;
	}
	memcpy(b, sys, strlen(sys));
	b[strlen(sys)] = '/';
	memcpy(b + strlen(sys) + 1, ev, strlen(ev));
	b[nl] = '\0';
	/* Bounded by the size fstat gave; a file that grew is cut. */
	while (off < (size_t)st.st_size &&
	       (got = read(fd, b + nl + 1 + off, (size_t)st.st_size - off)) > 0)
		off += (size_t)got;
	close(fd);
	if (!off) {
		free(b);
		return 0;
	}
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 256;
		struct hvt_m_format *v = realloc(l->v, cap * sizeof(*v));

		if (!v) {
			free(b);
			return -ENOMEM;
		}
		l->v = v;
		l->cap = cap;
	}
	memset(&l->v[l->n], 0, sizeof(l->v[0]));
	l->v[l->n].name.ptr = b;
	l->v[l->n].name.len = (uint32_t)nl;
	l->v[l->n].text.ptr = b + nl + 1;
	l->v[l->n].text.len = (uint32_t)off;
	l->n++;
	l->bytes += off;
	return 0;
}

static DIR *kr_opendir_at(int dfd, const char *name)
{
	int fd = openat(dfd, name,
			O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d;

	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (!d)
		close(fd);
	return d;
}

static void kr_formats_free(struct hvt_m_format *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free((void *)v[i].name.ptr);
	free(v);
}

/* Every events/SYSTEM/EVENT/format of @dir; 0, or -errno with @msg. */
static int kr_load_formats(struct kring_remote *kr, const char *dir,
			   const struct d_cred *cred, char *msg, size_t msgsize)
{
	struct kr_load l = {0};
	struct dirent *se, *ee;
	DIR *root, *sd = NULL, *ed;
	struct stat st;
	int ret = 0;

	l.restricted = cred && !cred->root;
	l.owner = cred ? cred->uid : 0;
	root = opendir(dir);
	if (root && !fstat(dirfd(root), &st) && l.restricted &&
	    st.st_uid != l.owner && st.st_uid != 0) {
		closedir(root);
		snprintf(msg, msgsize,
			 "formats folder %s: owned by uid %u, not by you "
			 "(uid %u) or root",
			 dir, (unsigned int)st.st_uid, (unsigned int)l.owner);
		return -EACCES;
	}
	if (root)
		sd = kr_opendir_at(dirfd(root), "events");
	if (!sd) {
		ret = -errno;
		if (root)
			closedir(root);
		snprintf(msg, msgsize,
			 "formats folder %s: no events/ folder in it (%s); "
			 "write one with 'hvtrace guest kformats NAME DIR' "
			 "or copy the guest's tracefs",
			 dir, strerror(-ret));
		return ret ? ret : -ENOENT;
	}
	while (!ret && (se = readdir(sd))) {
		if (se->d_name[0] == '.')
			continue;
		ed = kr_opendir_at(dirfd(sd), se->d_name);
		while (!ret && ed && (ee = readdir(ed))) {
			int efd;

			if (ee->d_name[0] == '.')
				continue;
			efd = openat(dirfd(ed), ee->d_name,
				     O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					     O_CLOEXEC);
			if (efd < 0)
				continue;
			ret = kr_load_one(&l, efd, se->d_name, ee->d_name);
			close(efd);
		}
		if (ed)
			closedir(ed);
	}
	closedir(sd);
	closedir(root);
	if (ret) {
		kr_formats_free(l.v, l.n);
		snprintf(msg, msgsize, "formats folder %s: %s", dir,
			 ret == -E2BIG ? "more formats than the daemon takes "
					 "(16384 files, 16 MiB)"
				       : strerror(-ret));
		return ret;
	}
	if (!l.n) {
		snprintf(msg, msgsize,
			 "formats folder %s: no events/SYSTEM/EVENT/format "
			 "file in it%s",
			 dir, l.restricted ? " that you own" : "");
		return -ENOENT;
	}
	kr->fmt = l.v;
	kr->nr_fmt = l.n;
	return 0;
}

/* --- access ------------------------------------------------------------- */

/* May the peer @cred read the memory of @pid?  0, or -errno with @msg. */
static int kr_access(const struct d_cred *cred, int pid, char *msg,
		     size_t msgsize)
{
	char p[64], scope[16] = "";
	struct stat st;
	FILE *f;

	if (!cred || cred->root)
		return 0;
	snprintf(p, sizeof(p), "/proc/%d", pid);
	if (stat(p, &st)) {
		snprintf(msg, msgsize,
			 "no process %d (--vm-pid names the VMM "
			 "process, e.g. QEMU's pid)",
			 pid);
		return -ESRCH;
	}
	f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	if (f) {
		if (!fgets(scope, sizeof(scope), f))
			scope[0] = '\0';
		fclose(f);
	}
	if (st.st_uid != cred->uid || (scope[0] && scope[0] != '0')) {
		snprintf(msg, msgsize,
			 "attaching process %d by pid needs root, or the "
			 "VMM's own user (uid %u) with ptrace read access to "
			 "it (kernel.yama.ptrace_scope 0, VMM not "
			 "undumpable); you are uid %u",
			 pid, (unsigned int)st.st_uid, (unsigned int)cred->uid);
		return -EACCES;
	}
	return 0;
}

/* --- remote_ops ---------------------------------------------------------- */

static const char *kr_where(const struct remote *r)
{
	const struct kring_remote *kr = r->priv;

	return kr->where;
}

static const char *kr_control(const struct remote *r)
{
	(void)r;
	return "(none: no agent; times are the guest's own trace clock)";
}

static int kr_read_page(struct remote *r, uint32_t cpu, uint8_t *page,
			uint32_t size, struct hvtrace_page_info *info)
{
	struct kring_remote *kr = r->priv;
	int ret;

	/* Anonymous guest RAM goes with its process: once the VMM is gone
	 * and a read failed, there is nothing more to read. */
	if (kr->gone && kr->read_failed)
		return 0;
	ret = hvtrace_kring_read_page(kr->k, (int)cpu, page, size, info);
	if (ret > 0)
		kr->read_failed = false;
	if (ret >= 0)
		return ret;
	/* Logged and counted once per run of failures, not per poll. */
	if (!kr->read_failed) {
		d_log("remote '%s': %s%s", r->name, hvtrace_last_error(),
		      kr->gone ? " (the VMM exited; the ring went with it)"
			       : "");
		r->proto_errors++;
	}
	kr->read_failed = true;
	return 0;
}

static int kr_cpu_stats(struct remote *r, uint32_t cpu,
			struct hvtrace_cpu_stats *st)
{
	struct kring_remote *kr = r->priv;
	struct hvtrace_kring_stats ks;
	int ret;

	ret = hvtrace_kring_get_stats(kr->k, (int)cpu, &ks);
	if (ret)
		return ret;
	/* What this reader saw: the ring keeps no count of what the guest
	 * wrote, and what is committed but unread is not known until it is
	 * read. */
	memset(st, 0, sizeof(*st));
	st->read = ks.read;
	st->bytes = ks.bytes;
	st->lost = ks.lost_events;
	st->written = ks.read + ks.lost_events;
	st->errors = ks.errors;
	st->now_ts = ks.now_ts;
	return 0;
}

static size_t kr_formats(const struct remote *r, const struct hvt_m_format **v)
{
	const struct kring_remote *kr = r->priv;

	*v = kr->fmt;
	return kr->nr_fmt;
}

static void kr_tick(struct remote *r, uint64_t now, uint64_t *next)
{
	struct kring_remote *kr = r->priv;
	struct pollfd pfd;

	if (kr->gone)
		return;
	if (now >= kr->next_state_ms) {
		kr->next_state_ms = now + KR_STATE_MS;
		pfd.fd = kr->pidfd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		if (kr->pidfd >= 0 ? poll(&pfd, 1, 0) == 1
				   : kill(kr->pid, 0) && errno == ESRCH) {
			kr->gone = true;
			r->state = HVT_REMOTE_DISCONNECTED;
			d_log("remote '%s': VMM process %d exited; what is "
			      "still readable of its ring is read to the end",
			      r->name, kr->pid);
			return;
		}
	}
	d_due(next, kr->next_state_ms);
}

static void kr_free(struct remote *r)
{
	struct kring_remote *kr = r->priv;

	hvtrace_kring_close(kr->k);
	if (kr->pidfd >= 0)
		close(kr->pidfd);
	kr_formats_free(kr->fmt, kr->nr_fmt);
	free(kr);
}

/* --- attach --------------------------------------------------------------- */

/* "vmpid:PID[,formats=DIR]"; 0, or -EINVAL with @msg. */
static int kr_parse(const char *spec, int *pid, const char **formats, char *msg,
		    size_t msgsize)
{
	const char *p = spec + 6;
	char *end;
	long v;

	errno = 0;
	v = strtol(p, &end, 10);
	if (errno || end == p || v <= 0 || v > 0x3fffffff ||
	    (*end && strncmp(end, ",formats=", 9)) || (*end && !end[9])) {
		snprintf(msg, msgsize,
			 "give the VMM as vmpid:PID[,formats=DIR], not '%s'",
			 spec);
		return -EINVAL;
	}
	*pid = (int)v;
	*formats = *end ? end + 9 : NULL;
	return 0;
}

int kring_remote_attach(const char *name, const char *spec,
			const struct d_cred *cred, struct remote **out,
			char *msg, size_t msgsize)
{
	struct hvtrace_kring_info ki;
	struct kring_remote *kr;
	const char *formats;
	struct remote *r;
	uint8_t *page;
	int ret, pid;

	if (!hvt_proto_name_ok(name, (uint32_t)strlen(name))) {
		snprintf(msg, msgsize,
			 "'%s' is not a remote name: use 1..31 of "
			 "[A-Za-z0-9._-]",
			 name);
		return -EINVAL;
	}
	ret = kr_parse(spec, &pid, &formats, msg, msgsize);
	if (ret)
		return ret;
	if (remote_by_name(name)) {
		snprintf(msg, msgsize, "'%s' is attached already", name);
		return -EEXIST;
	}
	ret = kr_access(cred, pid, msg, msgsize);
	if (ret)
		return ret;
	kr = calloc(1, sizeof(*kr));
	if (!kr) {
		snprintf(msg, msgsize, "out of memory");
		return -ENOMEM;
	}
	kr->pid = pid;
	/* The process first, then its memory: a pid reused after this
	 * cannot pass for the VMM. */
	kr->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (kr->pidfd < 0 && errno == ESRCH) {
		free(kr);
		snprintf(msg, msgsize,
			 "no process %d (--vm-pid names the VMM "
			 "process, e.g. QEMU's pid)",
			 pid);
		return -ESRCH;
	}
	if (formats) {
		ret = kr_load_formats(kr, formats, cred, msg, msgsize);
		if (ret)
			goto fail;
	}
	ret = hvtrace_kring_open_pid(pid, &kr->k);
	if (!ret)
		ret = hvtrace_kring_get_info(kr->k, &ki);
	if (ret) {
		snprintf(msg, msgsize, "%s", hvtrace_last_error());
		goto fail;
	}
	if (!ki.nr_cpus || ki.nr_cpus > KR_MAX_CPUS) {
		snprintf(msg, msgsize,
			 "process %d: a ring of %u CPUs; hvtraced serves 1 "
			 "to %u (read it with 'hvtrace stream --vm-pid')",
			 pid, ki.nr_cpus, KR_MAX_CPUS);
		ret = -EOPNOTSUPP;
		goto fail;
	}
	page = malloc(ki.subbuf_size);
	if (!page) {
		snprintf(msg, msgsize, "out of memory");
		ret = -ENOMEM;
		goto fail;
	}
	snprintf(kr->where, sizeof(kr->where), "process %d at 0x%llx", pid,
		 (unsigned long long)ki.addr);
	ret = remote_new(name, &kring_ops, kr, &r);
	if (ret) {
		free(page);
		snprintf(msg, msgsize, "cannot create remote: %s",
			 strerror(-ret));
		goto fail;
	}
	r->page = page;
	r->info.nr_cpus = ki.nr_cpus;
	r->info.nr_subbufs = ki.nr_subbufs;
	r->info.subbuf_size = ki.subbuf_size;
	r->info.writer_kind = HVT_WRITER_GUEST_KERNEL;
	r->info.mode = HVT_MODE_OVERWRITE;
	r->info.clock_id = 0; /* the guest's own: no clock model */
	r->state = HVT_REMOTE_CONNECTED;
	if (formats && !realpath(formats, r->kf_dir))
		r->kf_dir[0] = '\0';
	kr->next_state_ms = d_now_ms();
	snprintf(msg, msgsize,
		 "attached '%s' (the guest kernel ring in %s: %u CPUs x %u "
		 "sub-buffers of %u bytes; %zu event format%s%s)",
		 name, kr->where, ki.nr_cpus, ki.nr_subbufs, ki.subbuf_size,
		 kr->nr_fmt, kr->nr_fmt == 1 ? "" : "s",
		 formats ? ""
			 : ": give --formats DIR to name "
			   "the events");
	*out = r;
	return 0;
fail:
	hvtrace_kring_close(kr->k);
	if (kr->pidfd >= 0)
		close(kr->pidfd);
	kr_formats_free(kr->fmt, kr->nr_fmt);
	free(kr);
	return ret;
}

static const struct remote_ops kring_ops = {
	.transport = HVT_TRANSPORT_KRING,
	.name = "kring",
	.attached_as = "the guest kernel ring in",
	.control = kr_control,
	.area_path = kr_where,
	.where = kr_where,
	.tick = kr_tick,
	.free = kr_free,
	.read_page = kr_read_page,
	.cpu_stats = kr_cpu_stats,
	.formats = kr_formats,
};
