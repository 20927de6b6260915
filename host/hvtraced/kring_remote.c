// SPDX-License-Identifier: MIT
/*
 * hvtraced: the kring transport -- a guest kernel's own ftrace ring found
 * in the memory of a running VMM process, attached by the VMM's pid, or
 * in a guest RAM file (a rig guest's kept RAM, a QEMU memory-backend
 * file), attached by the file.
 *
 * Attached with ATTACH_AREA "NAME=vmpid:PID[,...]": the ring is found once,
 * at attach (guest RAM through the VMM's shared memory file or
 * /proc/PID/mem, read-only; the reader
 * validates everything it takes from guest memory), and served like any
 * remote: the same subscriptions and fan-out (its page source, a kernel
 * ring source, hands fanout.c the ring's validated sub-buffers), STATS
 * from the reader's counters, the same tools.  Its remote_ops (kring_ops,
 * at the end) work on this file's struct kring_remote, which embeds the
 * struct remote.
 *
 *   access   only the kernel's ptrace check decides whose VMM a client
 *            reads: the client (hvtrace_daemon_attach_vm_pid()) finds the
 *            ring with its own rights and passes, with flag
 *            HVT_ATTACH_VM_FDS, the VMM's pidfd and the descriptors of
 *            the memory it found it in (kr_take_fds() checks each); the
 *            daemon re-finds the ring through them only
 *            (hvtrace_kring_open_source()) and never opens /proc/PID by
 *            number for it, so a reused pid reads nothing.  Only root may
 *            name a bare "vmpid:PID" for the daemon to open.
 *   formats  DIR (laid out like tracefs, as "hvtrace guest kformats"
 *            writes it) is read by one reader, common/kfset.c: every
 *            events/SYSTEM/EVENT/format, bounded in count, size and
 *            total (KF_* limits), opened O_NONBLOCK without following
 *            links, regular files only, into a format set (an HVT_KFSET)
 *            in a sealed memfd that kr_load_kfset() maps and
 *            kring_formats.c parses.  With descriptors the client read
 *            DIR and passed the memfd (DIR is only named here); for
 *            root's bare spec the daemon reads it once at attach
 *            (kr_load_folder()), skipping what is not a plain file.  FORMATS
 *            replies carry them as "SYSTEM/EVENT", so a tool's decoder
 *            reads the ring's events.  Without DIR the events are still
 *            read and counted, not named.
 *   time     the ring's timestamps are the guest's own trace clock and
 *            no agent answers time-sync pings: there is no clock model,
 *            TO_HOST leaves the times as they are with err_ns UINT64_MAX
 *            and the REMOTES record's clock_id is 0 (the guest's own).
 *   life     a pidfd of the VMM says when it exits: the remote becomes
 *            "disconnected" (as a stopped area does), pages still
 *            readable (a shared memory file stays mapped) are read to
 *            the end, and a stream of it ends.  It is not kept across a
 *            restart of the daemon (a pid does not survive).
 *   file     "NAME=ram:PATH[,formats=DIR]": the ring in a guest RAM file,
 *            passed by the client (HVT_ATTACH_VM_FDS: the file opened
 *            read-only with the client's rights, then the format set),
 *            or for root only opened here by name.  The file must be a
 *            regular file of local memory or disk (kr_is_ram_file());
 *            it is mapped PROT_READ and the ring found in it as
 *            "hvtrace stream RAMFILE" finds it (hvtrace_kring_open()).
 *            Nothing says whether a guest still writes the file, so it
 *            is read as it is: the remote is stopped from the start
 *            (HVT_REMOTE_DISCONNECTED), its CPUs are read to the end,
 *            and a stream of it ends there.  A running guest is
 *            attached by its VMM's pid instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <hvt_util.h>
#include <hvtrace-events.h>
#include <hvtrace-ring.h>

#include "daemon.h"

#define KR_STATE_MS   200	  /* VMM liveness poll */
#define KR_MAX_CPUS   D_MAX_CPUS /* what a subscription may name */

/* A guest kernel's ring as a page source: its CPUs are the kernel's. */
struct kring_source {
	struct page_source ps;
	struct hvtrace_kring *k;
	struct remote *r;	/* whose errors it counts */
	bool gone;		/* the guest went: a failed read is the end */
	bool read_failed;	/* a read error was logged */
};

struct kring_remote {
	struct remote r;
	int pid;
	int pidfd; /* the VMM; -1: none */
	struct hvtrace_kring *k;	/* until its source takes it over */
	struct kring_source *src;	/* the ring's page source */
	bool gone;	  /* the VMM exited */
	uint64_t next_state_ms;
	char where[128];
	struct hvt_m_format *fmt; /* the formats of DIR */
	size_t nr_fmt;
	char *ksyms; /* the kernel's symbols as kallsyms text, or NULL */
	size_t ksyms_len;
	char ksyms_why[160]; /* why there are none */
};

static const struct remote_ops kring_ops;

static struct kring_remote *kring_remote(struct remote *r)
{
	return container_of(r, struct kring_remote, r);
}

static const struct kring_remote *kring_remote_c(const struct remote *r)
{
	return container_of(r, const struct kring_remote, r);
}

bool kring_remote_spec(const char *spec)
{
	return !strncmp(spec, "vmpid:", 6) || !strncmp(spec, "ram:", 4);
}

/* --- remote_ops ---------------------------------------------------------- */

static const char *kr_where(const struct remote *r)
{
	const struct kring_remote *kr = kring_remote_c(r);

	return kr->where;
}

static const char *kr_control(const struct remote *r)
{
	(void)r;
	return "(none: no agent; times are the guest's own trace clock)";
}

/* --- the kernel ring's page source ---------------------------------------- */

static struct kring_source *kring_source(struct page_source *ps)
{
	return container_of(ps, struct kring_source, ps);
}

static int ks_read_page(struct page_source *ps, uint32_t cpu, uint8_t *page,
			uint32_t size, struct hvtrace_page_info *info)
{
	struct kring_source *ks = kring_source(ps);
	int ret;

	/* Anonymous guest RAM goes with its process: once the VMM is gone
	 * and a read failed, there is nothing more to read. */
	if (ks->gone && ks->read_failed)
		return 0;
	ret = hvtrace_kring_read_page(ks->k, (int)cpu, page, size, info);
	if (ret > 0)
		ks->read_failed = false;
	if (ret >= 0)
		return ret;
	/* Logged and counted once per run of failures, not per poll. */
	if (!ks->read_failed) {
		d_log("remote '%s': %s%s", ks->r->name, hvtrace_last_error(),
		      ks->gone ? " (the VMM exited; the ring went with it)"
			       : "");
		ks->r->proto_errors++;
	}
	ks->read_failed = true;
	return 0;
}

static int ks_cpu_stats(struct page_source *ps, uint32_t cpu,
			struct hvtrace_cpu_stats *st)
{
	struct kring_source *ks = kring_source(ps);
	struct hvtrace_kring_stats kst;
	int ret;

	ret = hvtrace_kring_get_stats(ks->k, (int)cpu, &kst);
	if (ret)
		return ret;
	/* What this reader saw: the ring keeps no count of what the guest
	 * wrote, and what is committed but unread is not known until it is
	 * read. */
	memset(st, 0, sizeof(*st));
	st->read = kst.read;
	st->bytes = kst.bytes;
	st->lost = kst.lost_events;
	st->written = kst.read + kst.lost_events;
	st->errors = kst.errors;
	st->now_ts = kst.now_ts;
	return 0;
}

static void ks_close(struct page_source *ps)
{
	struct kring_source *ks = kring_source(ps);

	hvtrace_kring_close(ks->k);
	free(ks);
}

static const struct page_source_ops kring_source_ops = {
	.name = "kernel ring",
	.cpu_kind = "kernel",
	.read_page = ks_read_page,
	.cpu_stats = ks_cpu_stats,
	/* the ring's pages carry their own losses */
	.close = ks_close,
};

int kring_source_add(struct remote *r, struct hvtrace_kring *k,
		     const struct hvtrace_kring_info *ki,
		     struct page_source **out)
{
	struct kring_source *ks = calloc(1, sizeof(*ks));
	int ret;

	if (!ks) {
		hvtrace_kring_close(k);
		return -ENOMEM;
	}
	ks->k = k;
	ks->r = r;
	ks->ps.ops = &kring_source_ops;
	ks->ps.nr_cpus = ki->nr_cpus;
	ks->ps.nr_subbufs = ki->nr_subbufs;
	ks->ps.subbuf_size = ki->subbuf_size;
	ks->ps.kernel = true;
	ret = page_source_add(r, &ks->ps, false);
	if (!ret)
		*out = &ks->ps;
	return ret;
}

static size_t kr_formats(const struct remote *r, const struct hvt_m_format **v)
{
	const struct kring_remote *kr = kring_remote_c(r);

	*v = kr->fmt;
	return kr->nr_fmt;
}

static int kr_kallsyms(const struct remote *r, const char **text, size_t *len,
		       const char **why)
{
	const struct kring_remote *kr = kring_remote_c(r);

	*text = kr->ksyms;
	*len = kr->ksyms_len;
	*why = kr->ksyms_why;
	return kr->ksyms ? 0 : -ENOENT;
}

/*
 * The guest kernel's symbols, read once at attach from its vmcoreinfo
 * and kallsyms tables (hostile input, validated by
 * hvtrace_ksyms_from_kring()) while the VMM runs, so that its tools name
 * functions even after anonymous RAM went with the VMM.  Without them
 * addresses print in hex: never the host's names.
 */
int kring_ksyms_load(struct hvtrace_kring *k, const char *name, char **text,
		     size_t *len, char *why, size_t why_size)
{
	struct hvtrace_ksyms *ks = NULL;
	struct hvtrace_ksyms_info ki;
	int ret;

	ret = hvtrace_ksyms_from_kring(k, &ks, &ki);
	if (!ret)
		ret = hvtrace_ksyms_text(ks, text, len);
	if (ret) {
		snprintf(why, why_size, "%s", hvtrace_last_error());
		d_log("remote '%s': the guest kernel's function names print "
		      "in hex: %s",
		      name, why);
	} else {
		d_log("remote '%s': %u guest kernel symbols from its "
		      "vmcoreinfo",
		      name, ki.symbols);
	}
	hvtrace_ksyms_free(ks);
	return ret;
}

static void kr_tick(struct remote *r, uint64_t now, uint64_t *next)
{
	struct kring_remote *kr = kring_remote(r);
	struct pollfd pfd;

	if (kr->gone)
		return;
	if (now >= kr->next_state_ms) {
		kr->next_state_ms = d_grid(now, KR_STATE_MS);
		pfd.fd = kr->pidfd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		if (kr->pidfd >= 0 ? poll(&pfd, 1, 0) == 1
				   : kill(kr->pid, 0) && errno == ESRCH) {
			kr->gone = true;
			kr->src->gone = true;
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
	struct kring_remote *kr = kring_remote(r);

	/* its ring went with its page source (remote_destroy()) */
	if (kr->pidfd >= 0)
		close(kr->pidfd);
	kring_formats_free(kr->fmt, kr->nr_fmt);
	free(kr->ksyms);
	free(kr);
}

/* --- attach --------------------------------------------------------------- */

/* One number of a spec, decimal or 0x hex; advances *@p. */
static bool kr_num(const char **p, uint64_t *v)
{
	unsigned long long x;
	char *e;

	if (**p < '0' || **p > '9')
		return false;
	errno = 0;
	x = strtoull(*p, &e, 0);
	if (errno || e == *p)
		return false;
	*v = x;
	*p = e;
	return true;
}

struct kr_spec {
	int pid;			/* 0: a RAM file */
	char ram[PATH_MAX];		/* "ram:": the file's path */
	const char *formats;		/* DIR, or NULL */
	bool passed;			/* HVT_ATTACH_VM_FDS */
	struct hvtrace_kring_source src; /* with passed: where the ring is */
};

/*
 * "vmpid:PID[,formats=DIR]", or with HVT_ATTACH_VM_FDS
 * "vmpid:PID,map=BASE+SIZE@FOFF[,formats=DIR]" or
 * "vmpid:PID,mem=BASE+SIZE[,formats=DIR]"; 0, or -EINVAL with @msg.
 * The numbers are only parsed here: hvtrace_kring_open_source() bounds
 * them.
 */
static int kr_parse(const char *spec, struct kr_spec *ks, char *msg,
		    size_t msgsize)
{
	const char *p = spec + 6;
	char *end;
	long v;

	errno = 0;
	v = strtol(p, &end, 10);
	if (errno || end == p || v <= 0 || v > 0x3fffffff || *p == '-' ||
	    *p == '+' || *p == ' ')
		goto bad;
	p = end;
	if (ks->passed) {
		ks->src.mapped = !strncmp(p, ",map=", 5);
		if (!ks->src.mapped && strncmp(p, ",mem=", 5))
			goto bad;
		p += 5;
		if (!kr_num(&p, &ks->src.base) || *p++ != '+' ||
		    !kr_num(&p, &ks->src.size))
			goto bad;
		if (ks->src.mapped &&
		    (*p++ != '@' || !kr_num(&p, &ks->src.foff)))
			goto bad;
	}
	if ((*p && strncmp(p, ",formats=", 9)) || (*p && !p[9]))
		goto bad;
	ks->pid = (int)v;
	ks->formats = *p ? p + 9 : NULL;
	return 0;
bad:
	snprintf(msg, msgsize,
		 ks->passed ? "give the VMM as vmpid:PID,map=BASE+SIZE@FOFF or "
			      "vmpid:PID,mem=BASE+SIZE, then [,formats=DIR], "
			      "not '%s'"
			    : "give the VMM as vmpid:PID[,formats=DIR], not '%s'",
		 spec);
	return -EINVAL;
}

/*
 * "ram:PATH[,formats=DIR]", PATH absolute (with HVT_ATTACH_VM_FDS only a
 * name: the file is the descriptor passed); 0, or -EINVAL with @msg.
 */
static int kr_parse_ram(const char *spec, struct kr_spec *ks, char *msg,
			size_t msgsize)
{
	const char *p = spec + 4, *f = strstr(p, ",formats=");
	size_t n = f ? (size_t)(f - p) : strlen(p);

	if (p[0] != '/' || n >= sizeof(ks->ram) || (f && !f[9])) {
		snprintf(msg, msgsize,
			 "give the RAM file as ram:PATH[,formats=DIR], PATH "
			 "absolute, not '%s'",
			 spec);
		return -EINVAL;
	}
	memcpy(ks->ram, p, n);
	ks->ram[n] = '\0';
	ks->formats = f ? f + 9 : NULL;
	return 0;
}

/* The value of the "@key:" line of /proc/self/fdinfo/@fd, or -1. */
static long kr_fdinfo(int fd, const char *key)
{
	char p[64], line[128];
	size_t kl = strlen(key);
	long v = -1;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/self/fdinfo/%d", fd);
	f = fopen(p, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl) && line[kl] == ':') {
			v = strtol(line + kl + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

/* Is @fd, passed by a client, the file /proc/@pid/@what? */
static bool kr_is_proc_file(int fd, int pid, const char *what)
{
	char p[64], want[64], got[96];
	struct statfs sf;
	ssize_t n;

	if (fstatfs(fd, &sf) || sf.f_type != PROC_SUPER_MAGIC)
		return false;
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	n = readlink(p, got, sizeof(got) - 1);
	if (n <= 0)
		return false;
	got[n] = '\0';
	snprintf(want, sizeof(want), "/proc/%d/%s", pid, what);
	return !strcmp(got, want);
}

/*
 * A shared RAM file a client passed: regular, on a file system whose
 * reads come from memory or a local disk (not FUSE, not the network: a
 * page fault there would wait for whoever serves it).
 */
static bool kr_is_ram_file(int fd)
{
	struct statfs sf;
	struct stat st;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || fstatfs(fd, &sf))
		return false;
	switch ((unsigned long)sf.f_type) {
	case TMPFS_MAGIC:
	case HUGETLBFS_MAGIC:
	case EXT4_SUPER_MAGIC:
	case XFS_SUPER_MAGIC:
	case BTRFS_SUPER_MAGIC:
		return true;
	}
	return false;
}

#define KR_KFSET_MAX                                                   \
	((size_t)HVT_KFSET_MAGIC_LEN + KF_MAX_BYTES +                  \
	 (size_t)KF_MAX_FILES * (HVT_KFSET_REC_HDR + HVT_PROTO_EVNAME_MAX))

/* The format set in the sealed memfd @fd; 0, or -errno with @msg. */
static int kr_load_kfset(struct kring_remote *kr, int fd, char *msg,
			 size_t msgsize)
{
	const unsigned int need = F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW;
	int seals = fcntl(fd, F_GET_SEALS);
	struct stat st;
	void *m;
	int ret;

	/* Sealed: nobody changes it under the parser, and a memfd's reads
	 * never wait. */
	if (seals < 0 || ((unsigned int)seals & need) != need ||
	    fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(msg, msgsize, "the formats sent are not in a memfd "
				       "sealed against writes and resizing");
		return -EBADF;
	}
	if (st.st_size <= 0 || (uint64_t)st.st_size > KR_KFSET_MAX) {
		snprintf(msg, msgsize, "the format set sent is empty or larger "
				       "than the daemon takes (16384 files, "
				       "16 MiB)");
		return -E2BIG;
	}
	m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED) {
		snprintf(msg, msgsize, "cannot map the format set sent: %s",
			 strerror(errno));
		return -errno;
	}
	ret = kring_formats_parse(m, (size_t)st.st_size, &kr->fmt,
				  &kr->nr_fmt, msg, msgsize);
	munmap(m, (size_t)st.st_size);
	return ret;
}

/*
 * Root's own "vmpid:PID,formats=DIR": DIR is read by the reader a client
 * reads its folder with (hvt_util_kfset_read(), common/kfset.c) into a
 * format set in a sealed memfd, taken as a passed one (kr_load_kfset()):
 * one folder reader, one parser.  A format file that is not a plain file
 * (a FIFO, a link) is skipped, never waited on.
 */
static int kr_load_folder(struct kring_remote *kr, const char *dir, char *msg,
			  size_t msgsize)
{
	uint8_t *set;
	size_t len;
	int fd, ret;

	ret = hvt_util_kfset_read(dir, HVT_UTIL_KFSET_SKIP, &set, &len, msg,
				  msgsize);
	if (ret)
		return ret;
	fd = hvt_util_kfset_memfd(set, len, msg, msgsize);
	free(set);
	if (fd < 0)
		return fd;
	ret = kr_load_kfset(kr, fd, msg, msgsize);
	close(fd);
	return ret;
}

/*
 * The descriptors a client passed with HVT_ATTACH_VM_FDS, all opened with
 * the client's rights (the kernel's ptrace check decided who may read the
 * VMM): the pidfd of @ks->pid, then the memory (a RAM file, or
 * /proc/PID/mem and /proc/PID/pagemap), then the format set with
 * formats=.  Each is checked for what it must be; the daemon never opens
 * /proc/PID itself for them.  Fills kr->pidfd, kr->fmt and @ks->src's
 * descriptors (still the caller's).
 */
static int kr_take_fds(struct kring_remote *kr, struct kr_spec *ks, int *fds,
		       int nr_fds, char *msg, size_t msgsize)
{
	int want = 2 + !ks->src.mapped + !!ks->formats, i = 2;

	if (!ks->pid) { /* a RAM file, then the format set */
		if (nr_fds != 1 + !!ks->formats) {
			snprintf(msg, msgsize,
				 "an attach of a RAM file needs %d "
				 "descriptors passed with it, not %d",
				 1 + !!ks->formats, nr_fds);
			return -EBADF;
		}
		ks->src.fd = fds[0];
		return ks->formats ? kr_load_kfset(kr, fds[1], msg, msgsize)
				   : 0;
	}

	if (nr_fds != want) {
		snprintf(msg, msgsize, "an attach by pid needs %d descriptors "
				       "passed with it, not %d",
			 want, nr_fds);
		return -EBADF;
	}
	if (kr_fdinfo(fds[0], "Pid") != ks->pid) {
		snprintf(msg, msgsize, "the first descriptor passed is not a "
				       "pidfd of process %d",
			 ks->pid);
		return -EBADF;
	}
	kr->pidfd = fcntl(fds[0], F_DUPFD_CLOEXEC, 3);
	if (kr->pidfd < 0) {
		snprintf(msg, msgsize, "cannot keep the pidfd: %s",
			 strerror(errno));
		return -errno;
	}
	ks->src.fd = fds[1];
	ks->src.pagemap = -1;
	if (ks->src.mapped && !kr_is_ram_file(fds[1])) {
		snprintf(msg, msgsize, "the memory passed is not a RAM file "
				       "(tmpfs, hugetlbfs, memfd or a local "
				       "disk's)");
		return -EBADF;
	}
	if (!ks->src.mapped) {
		if (!kr_is_proc_file(fds[1], ks->pid, "mem") ||
		    !kr_is_proc_file(fds[2], ks->pid, "pagemap")) {
			snprintf(msg, msgsize,
				 "the memory passed is not /proc/%d/mem and "
				 "/proc/%d/pagemap",
				 ks->pid, ks->pid);
			return -EBADF;
		}
		ks->src.pagemap = fds[i++];
	}
	if (ks->formats)
		return kr_load_kfset(kr, fds[i], msg, msgsize);
	return 0;
}

/* "vmpid:": the ring in the memory of a running VMM, into kr->k. */
static int kr_open_vmm(struct kring_remote *kr, struct kr_spec *ks, int *fds,
		       int nr_fds, const struct d_cred *cred, char *msg,
		       size_t msgsize)
{
	int ret;

	kr->pid = ks->pid;
	/*
	 * Only root may have the daemon open /proc/PID and a formats folder
	 * by name: for anyone else the client opens them with its own
	 * rights and passes the descriptors, so the kernel's ptrace check
	 * decides, and a reused pid or a FIFO cannot stand in.
	 */
	if (!ks->passed && cred && !cred->root) {
		snprintf(msg, msgsize,
			 "attaching process %d by pid: hvtraced opens a VMM's "
			 "memory only with the descriptors its client opened "
			 "and passed ('hvtrace daemon attach --vm-pid' does); "
			 "update hvtrace",
			 ks->pid);
		return -EPERM;
	}
	if (ks->passed) {
		ret = kr_take_fds(kr, ks, fds, nr_fds, msg, msgsize);
		if (ret)
			return ret;
		ret = hvtrace_kring_open_source(ks->pid, &ks->src, &kr->k);
	} else {
		/* The process first, then its memory: a pid reused after
		 * this cannot pass for the VMM. */
		kr->pidfd = (int)syscall(SYS_pidfd_open, ks->pid, 0);
		if (kr->pidfd < 0 && errno == ESRCH) {
			snprintf(msg, msgsize,
				 "no process %d (--vm-pid names the VMM "
				 "process, e.g. QEMU's pid)",
				 ks->pid);
			return -ESRCH;
		}
		if (ks->formats) {
			ret = kr_load_folder(kr, ks->formats, msg, msgsize);
			if (ret)
				return ret;
		}
		ret = hvtrace_kring_open_pid(ks->pid, &kr->k);
	}
	if (ret)
		snprintf(msg, msgsize, "%s", hvtrace_last_error());
	return ret;
}

/* "ram:": the ring in a guest RAM file, into kr->k. */
static int kr_open_ram(struct kring_remote *kr, struct kr_spec *ks, int *fds,
		       int nr_fds, const struct d_cred *cred, char *msg,
		       size_t msgsize)
{
	char via[64];
	int fd, ret;

	if (ks->passed) {
		ret = kr_take_fds(kr, ks, fds, nr_fds, msg, msgsize);
		if (ret)
			return ret;
		fd = ks->src.fd; /* the caller's: closed after the attach */
	} else if (cred && !cred->root) {
		snprintf(msg, msgsize,
			 "attaching %s: hvtraced opens a RAM file only as the "
			 "descriptor its client opened and passed ('hvtrace "
			 "daemon attach --ram' does); update hvtrace",
			 ks->ram);
		return -EPERM;
	} else {
		fd = open(ks->ram,
			  O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
		if (fd < 0) {
			ret = -errno;
			snprintf(msg, msgsize, "%s: %s", ks->ram,
				 strerror(errno));
			return ret;
		}
		if (ks->formats)
			ret = kr_load_folder(kr, ks->formats, msg, msgsize);
		else
			ret = 0;
		if (ret) {
			close(fd);
			return ret;
		}
	}
	if (!kr_is_ram_file(fd)) {
		snprintf(msg, msgsize,
			 "%s is not a RAM file (a regular file on tmpfs, "
			 "hugetlbfs or a local disk)",
			 ks->ram);
		ret = -EBADF;
	} else {
		snprintf(via, sizeof(via), "/proc/self/fd/%d", fd);
		ret = hvtrace_kring_open(via, 0, &kr->k);
		if (ret) {
			const char *e = hvtrace_last_error();
			size_t vl = strlen(via);

			/* named by the file's path, not by the descriptor */
			if (!strncmp(e, via, vl) && e[vl] == ':')
				e += vl + 1 + (e[vl + 1] == ' ');
			snprintf(msg, msgsize, "%s: %s", ks->ram, e);
		}
	}
	if (!ks->passed)
		close(fd); /* the ring's mapping stays */
	return ret;
}

static int kr_spec_parse(const char *spec, struct kr_spec *ks, char *msg,
			 size_t msgsize)
{
	return strncmp(spec, "ram:", 4) ? kr_parse(spec, ks, msg, msgsize)
					: kr_parse_ram(spec, ks, msg, msgsize);
}

/* Where the ring is, for messages: "process PID" or "file PATH". */
static void kr_set_where(struct kring_remote *kr, const struct kr_spec *ks,
			 uint64_t addr)
{
	if (ks->pid)
		snprintf(kr->where, sizeof(kr->where), "process %d at 0x%llx",
			 ks->pid, (unsigned long long)addr);
	else
		snprintf(kr->where, sizeof(kr->where), "file %.*s",
			 (int)sizeof(kr->where) - 8, ks->ram);
}

int kring_remote_attach(const char *name, const char *spec, uint32_t flags,
			int *fds, int nr_fds, const struct d_cred *cred,
			struct remote **out, char *msg, size_t msgsize)
{
	struct kr_spec ks = { .passed = flags & HVT_ATTACH_VM_FDS };
	struct hvtrace_kring_info ki;
	struct page_source *ps;
	struct kring_remote *kr;
	struct remote *r;
	int ret;

	if (!hvt_proto_name_ok(name, (uint32_t)strlen(name))) {
		snprintf(msg, msgsize,
			 "'%s' is not a remote name: use 1..31 of "
			 "[A-Za-z0-9._-]",
			 name);
		return -EINVAL;
	}
	if (flags & ~(uint32_t)(HVT_ATTACH_VM_FDS | HVT_ATTACH_DISABLED)) {
		snprintf(msg, msgsize,
			 "unknown attach flags 0x%x for an "
			 "attach of a guest kernel ring",
			 flags);
		return -EINVAL;
	}
	ret = kr_spec_parse(spec, &ks, msg, msgsize);
	if (ret)
		return ret;
	if (remote_by_name(name)) {
		snprintf(msg, msgsize, "'%s' is attached already", name);
		return -EEXIST;
	}
	if (!ks.passed && nr_fds) {
		snprintf(msg, msgsize,
			 "descriptors passed without "
			 "HVT_ATTACH_VM_FDS");
		return -EINVAL;
	}
	kr = calloc(1, sizeof(*kr));
	if (!kr) {
		snprintf(msg, msgsize, "out of memory");
		return -ENOMEM;
	}
	kr->pidfd = -1;
	ret = ks.pid ? kr_open_vmm(kr, &ks, fds, nr_fds, cred, msg, msgsize)
		     : kr_open_ram(kr, &ks, fds, nr_fds, cred, msg, msgsize);
	if (ret)
		goto fail;
	ret = hvtrace_kring_get_info(kr->k, &ki);
	if (ret) {
		snprintf(msg, msgsize, "%s", hvtrace_last_error());
		goto fail;
	}
	kr_set_where(kr, &ks, ki.addr);
	if (!ki.nr_cpus || ki.nr_cpus > KR_MAX_CPUS) {
		snprintf(msg, msgsize,
			 "%s: a ring of %u CPUs; hvtraced serves 1 to %u (read "
			 "it with 'hvtrace stream')",
			 kr->where, ki.nr_cpus, KR_MAX_CPUS);
		ret = -EOPNOTSUPP;
		goto fail;
	}
	kring_ksyms_load(kr->k, name, &kr->ksyms, &kr->ksyms_len, kr->ksyms_why,
			 sizeof(kr->ksyms_why));
	r = &kr->r;
	ret = kring_source_add(r, kr->k, &ki, &ps);
	if (!ret)
		kr->src = kring_source(ps);
	kr->k = NULL; /* the source's now, or closed */
	if (ret) {
		snprintf(msg, msgsize, "cannot read its ring: %s",
			 strerror(-ret));
		goto fail;
	}
	ret = remote_add(r, name, &kring_ops);
	if (ret) {
		page_sources_close(r);
		snprintf(msg, msgsize, "cannot create remote: %s",
			 strerror(-ret));
		goto fail;
	}
	r->info.nr_cpus = ki.nr_cpus;
	r->info.nr_subbufs = ki.nr_subbufs;
	r->info.subbuf_size = ki.subbuf_size;
	r->info.writer_kind = HVT_WRITER_GUEST_KERNEL;
	r->info.mode = HVT_MODE_OVERWRITE;
	r->info.clock_id = 0; /* the guest's own: no clock model */
	r->state = HVT_REMOTE_CONNECTED;
	if (!ks.pid) {
		/* A file is read as it is, to its end (see "file" above). */
		kr->gone = true;
		kr->src->gone = true;
		r->state = HVT_REMOTE_DISCONNECTED;
	}
	/* A passed folder is only named (the client resolved it): never
	 * looked up here. */
	if (ks.formats && ks.passed) {
		if (ks.formats[0] == '/' && strlen(ks.formats) < PATH_MAX)
			remote_set_kf_dir(r, ks.formats);
	} else if (ks.formats) {
		r->kf_dir = realpath(ks.formats, NULL);
	}
	kr->next_state_ms = d_now_ms();
	snprintf(msg, msgsize,
		 "attached '%s' (the guest kernel ring in %s: %u CPUs x %u "
		 "sub-buffers of %u bytes; %zu event format%s%s%s)",
		 name, kr->where, ki.nr_cpus, ki.nr_subbufs, ki.subbuf_size,
		 kr->nr_fmt, kr->nr_fmt == 1 ? "" : "s",
		 ks.formats ? ""
			    : ": the formats cache holds none of this kernel; "
			      "give --formats DIR, or file them with 'hvtrace "
			      "guest kformats', to name the events",
		 ks.pid ? "" : "; read as it is, to its end");
	*out = r;
	return 0;
fail:
	hvtrace_kring_close(kr->k);
	if (kr->pidfd >= 0)
		close(kr->pidfd);
	kring_formats_free(kr->fmt, kr->nr_fmt);
	free(kr->ksyms);
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
	.formats = kr_formats,
	.kallsyms = kr_kallsyms,
};
