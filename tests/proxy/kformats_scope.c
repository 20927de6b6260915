// SPDX-License-Identifier: MIT
/*
 * issue 22 point 5: the guest kernels' formats cache is scoped to the
 * guest that uploaded, cannot be filled for the others, and is not
 * readable by every local user.  hvtraced runs with its own cache
 * ($HVT_CACHE under a fresh folder that any user may traverse); agents
 * are local hvtrace-agents with tracefs-like folders (--tracefs), each
 * with its own printk_formats, so every agent claims the same kernel
 * (this machine's uname -r and build id):
 *
 *   modes     a permissive file an older hvtraced left (0644 in a 0755
 *             folder) is taken back at start; the files of an upload are
 *             not readable by others: user nobody cannot read
 *             printk_formats
 *   scope     agent "mimic" uploads first; agent "victim" of the same
 *             release and build id then gets its own folder, and its
 *             formats are its own printk_formats, not mimic's
 *   flood     a raw agent "evil" uploads 100 invented releases on one
 *             connection; agent "late" (a new remote) can still upload
 *   NUL       a KFORMATS BEGIN whose release holds a NUL (checksums made
 *             right) is refused: counted as the agent's protocol error,
 *             no folder made
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hvtrace.h>

#include "harness.h"
#include "hvtrace-client.h"

static struct hvtrace_daemon *dc;
static char base[64], cache[128];

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		t_fail("cannot write %s: %s", path, strerror(errno));
	close(fd);
	chmod(path, mode);
}

static void mkdir_p(const char *path)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", path);
	if (system(cmd))
		t_fail("%s failed", cmd);
}

/* A tracefs-like folder whose printk_formats says @who. */
static void make_tracefs(const char *dir, const char *who)
{
	char p[512], text[128];

	snprintf(p, sizeof(p), "%s/events/sched/sched_switch", dir);
	mkdir_p(p);
	snprintf(p, sizeof(p), "%s/events/header_page", dir);
	write_file(p, "field: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n",
		   0644);
	snprintf(p, sizeof(p), "%s/events/sched/enable", dir);
	write_file(p, "0\n", 0644);
	snprintf(p, sizeof(p), "%s/events/sched/sched_switch/format", dir);
	write_file(p, "name: sched_switch\nID: 1\nformat:\n", 0644);
	snprintf(p, sizeof(p), "%s/printk_formats", dir);
	snprintf(text, sizeof(text), "0xffffffff81000000 : \"%s\"\n", who);
	write_file(p, text, 0644);
}

/* The folder hvtraced keeps @name's formats in (waits up to 20 s). */
static void kformats_dir(const char *name, char *dir, size_t size)
{
	struct hvt_remote_rec rec;
	int i;

	h_remote(dc, name, &rec);
	for (i = 0; i < 400; i++) {
		if (!hvtrace_daemon_kformats_dir(dc, rec.id, dir, size) &&
		    dir[0])
			return;
		usleep(50000);
	}
	t_fail("hvtraced keeps no formats for remote '%s' (a full cache?)",
	       name);
}

static void expect_printk(const char *dir, const char *who, const char *what)
{
	char p[512], buf[256], want[128];
	ssize_t n;
	int fd;

	snprintf(p, sizeof(p), "%s/printk_formats", dir);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		t_fail("%s: cannot open %s: %s", what, p, strerror(errno));
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	snprintf(want, sizeof(want), "0xffffffff81000000 : \"%s\"\n", who);
	if (strcmp(buf, want))
		t_fail("%s: %s holds '%s', not %s's formats", what, p, buf,
		       who);
}

/* Can user nobody read @path?  (A child drops to nobody and tries.) */
static bool nobody_reads(const char *path)
{
	struct passwd *pw = getpwnam("nobody");
	pid_t pid;
	int st;

	if (!pw)
		t_skip("no user nobody to read the cache as");
	if (getuid() != 0)
		t_skip("not root: cannot become nobody");
	pid = fork();
	if (pid == 0) {
		if (setgroups(0, NULL) || setgid(pw->pw_gid) ||
		    setuid(pw->pw_uid))
			_exit(2);
		_exit(open(path, O_RDONLY) >= 0 ? 0 : 1);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st) == 2)
		t_fail("cannot run a child as nobody");
	return WEXITSTATUS(st) == 0;
}

static void check_modes(const char *old, const char *dir)
{
	char p[4200];
	struct stat st;

	if (stat(old, &st))
		t_fail("%s: %s", old, strerror(errno));
	if (st.st_mode & 0007)
		t_fail("%s is still mode %o after hvtraced started", old,
		       st.st_mode & 07777);
	if (nobody_reads(old))
		t_fail("user nobody reads %s (left by an older hvtraced)",
		       old);
	snprintf(p, sizeof(p), "%s/printk_formats", dir);
	if (stat(p, &st))
		t_fail("%s: %s", p, strerror(errno));
	if (st.st_mode & 0007)
		t_fail("%s is mode %o: readable by every local user", p,
		       st.st_mode & 07777);
	if (nobody_reads(p))
		t_fail("user nobody reads %s: guest kernel addresses leak", p);
	printf("ok: the cache's files are not readable by others\n");
}

static void put(int fd, const void *p, size_t len)
{
	const uint8_t *b = p;
	uint8_t sink[65536];

	while (len) {
		ssize_t w = send(fd, b, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		/* Drop the answers as they come, so neither side blocks. */
		while (recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0)
			;
		if (w < 0 && (errno == EINTR || errno == EAGAIN)) {
			usleep(1000);
			continue;
		}
		if (w < 0)
			t_fail("send: %s", strerror(errno));
		b += w;
		len -= (size_t)w;
	}
}

static void send_msg(int fd, struct hvt_msg *m)
{
	uint8_t buf[4096];
	int n = hvt_msg_encode(buf, sizeof(buf), m);

	if (n < 0)
		t_fail("encode: %d", n);
	put(fd, buf, (size_t)n);
}

static void kformats_msg(struct hvt_msg *m, uint32_t req, uint32_t op,
			 const char *rel, uint32_t files, uint64_t bytes)
{
	memset(m, 0, sizeof(*m));
	m->type = HVT_MSG_KFORMATS;
	m->req = req;
	m->u.kformats.op = op;
	m->u.kformats.nr_files = files;
	m->u.kformats.total_bytes = bytes;
	m->u.kformats.release.ptr = rel;
	m->u.kformats.release.len = (uint32_t)strlen(rel);
}

/* One connection: 100 invented kernels, then a release with a NUL. */
static void evil_agent(void)
{
	static const char ver[] = "Linux version x\n";
	struct hvt_remote_rec rec;
	char area[128], rel[64], path[512];
	uint8_t buf[4096];
	struct hvt_msg m;
	int fd, k, n;
	struct stat st;

	snprintf(area, sizeof(area), "/dev/shm/hvtrace-t%d-kfevil",
		 (int)getpid());
	fd = h_raw_agent("evil", area);
	h_wait_connected(dc, "evil", 5000);
	for (k = 0; k < 100; k++) {
		snprintf(rel, sizeof(rel), "6.%d.0-invented", k);
		kformats_msg(&m, 100 + 2 * (uint32_t)k, HVT_KF_BEGIN, rel, 1,
			     0);
		send_msg(fd, &m);
		memset(&m, 0, sizeof(m));
		m.type = HVT_MSG_KFILE;
		m.u.kfile.flags = HVT_KFILE_LAST;
		m.u.kfile.name.ptr = "version";
		m.u.kfile.name.len = 7;
		m.u.kfile.data = (const uint8_t *)ver;
		m.u.kfile.len = sizeof(ver) - 1;
		send_msg(fd, &m);
		kformats_msg(&m, 101 + 2 * (uint32_t)k, HVT_KF_END, rel, 1,
			     sizeof(ver) - 1);
		send_msg(fd, &m);
	}
	/* A release "nulXevil" with its X made a NUL after encoding: the
	 * frame's checksums made right again, so only the name is wrong. */
	kformats_msg(&m, 9999, HVT_KF_BEGIN, "nulXevil", 1, 0);
	n = hvt_msg_encode(buf, sizeof(buf), &m);
	t_assert(n > 0);
	{
		uint8_t *x = memmem(buf + HVT_PROTO_HDR_SIZE,
				    (size_t)n - HVT_PROTO_HDR_SIZE,
				    "nulXevil", 8);
		uint32_t sum;

		t_assert(x != NULL);
		x[3] = '\0';
		sum = hvt_proto_sum(buf + HVT_PROTO_HDR_SIZE,
				    (uint32_t)n - HVT_PROTO_HDR_SIZE);
		memcpy(buf + 24, &sum, 4);	/* little-endian hosts */
		sum = hvt_proto_hsum(buf);
		memcpy(buf + 28, &sum, 4);
	}
	put(fd, buf, (size_t)n);
	/* In order on one connection: the NUL frame's error comes last. */
	for (k = 0; k < 1000; k++) {
		h_remote(dc, "evil", &rec);
		if (rec.proto_errors >= 1)
			break;
		put(fd, "", 0);
		usleep(20000);
	}
	if (rec.proto_errors < 1)
		t_fail("a KFORMATS release with a NUL was not refused as a "
		       "protocol error");
	snprintf(path, sizeof(path), "%s/kformats/nul", cache);
	if (!lstat(path, &st))
		t_fail("a folder %s was made of a release with a NUL", path);
	snprintf(path, sizeof(path), "%s/kformats/guests/evil/nul", cache);
	if (!lstat(path, &st))
		t_fail("a folder %s was made of a release with a NUL", path);
	/* What the flood kept: a few of its own, not 100. */
	{
		char cmd[300];
		FILE *f;
		int kept = -1;

		snprintf(cmd, sizeof(cmd),
			 "ls '%s/kformats/guests/evil' 2>/dev/null | wc -l",
			 cache);
		f = popen(cmd, "r");
		if (!f || fscanf(f, "%d", &kept) != 1)
			t_fail("cannot count the flood's folders");
		pclose(f);
		if (kept > 8)
			t_fail("one connection keeps %d kernels in the cache",
			       kept);
	}
	printf("ok: 100 invented kernels sent on one connection; a release "
	       "with a NUL refused\n");
	/* keep the connection open: the flood's remote stays */
}

int main(void)
{
	struct h_agent mimic, victim, late;
	char tfs[256], old[256], dir[4096], mdir[4096], extra[300];

	snprintf(base, sizeof(base), "/tmp/hvt-kfscope.XXXXXX");
	if (!mkdtemp(base))
		t_fail("mkdtemp: %s", strerror(errno));
	chmod(base, 0755);		/* any user may come this far */
	snprintf(cache, sizeof(cache), "%s/cache", base);
	/* What an older hvtraced left: readable by all. */
	snprintf(old, sizeof(old), "%s/kformats/guests/old/6.0.0@none", cache);
	mkdir_p(old);
	snprintf(old, sizeof(old), "%s/kformats", cache);
	chmod(old, 0755);
	snprintf(old, sizeof(old), "%s/kformats/guests", cache);
	chmod(old, 0755);
	snprintf(old, sizeof(old), "%s/kformats/guests/old", cache);
	chmod(old, 0755);
	snprintf(old, sizeof(old), "%s/kformats/guests/old/6.0.0@none", cache);
	chmod(old, 0755);
	snprintf(old, sizeof(old),
		 "%s/kformats/guests/old/6.0.0@none/printk_formats", cache);
	write_file(old, "0xffffffff81000000 : \"old\"\n", 0644);
	setenv("HVT_CACHE", cache, 1);
	dc = h_start(NULL);

	/* scope: the same kernel claimed by two guests. */
	snprintf(tfs, sizeof(tfs), "%s/tracefs-mimic", base);
	make_tracefs(tfs, "mimic");
	snprintf(extra, sizeof(extra), "--tracefs %s", tfs);
	h_agent_start(&mimic, "mimic", extra);
	kformats_dir("mimic", mdir, sizeof(mdir));
	expect_printk(mdir, "mimic", "mimic's own upload");
	snprintf(tfs, sizeof(tfs), "%s/tracefs-victim", base);
	make_tracefs(tfs, "victim");
	snprintf(extra, sizeof(extra), "--tracefs %s", tfs);
	h_agent_start(&victim, "victim", extra);
	kformats_dir("victim", dir, sizeof(dir));
	expect_printk(dir, "victim",
		      "a guest uploading under another's release and build "
		      "id");
	expect_printk(mdir, "mimic", "mimic's upload after victim's");
	printf("ok: each guest decodes with its own upload (%s)\n", dir);

	check_modes(old, dir);

	/* flood, then a new guest. */
	evil_agent();
	snprintf(tfs, sizeof(tfs), "%s/tracefs-late", base);
	make_tracefs(tfs, "late");
	snprintf(extra, sizeof(extra), "--tracefs %s", tfs);
	h_agent_start(&late, "late", extra);
	kformats_dir("late", dir, sizeof(dir));
	expect_printk(dir, "late", "a guest after another's flood");
	printf("ok: another guest still uploads after one connection's 100 "
	       "kernels\n");

	h_agent_stop(&late);
	h_agent_stop(&victim);
	h_agent_stop(&mimic);
	hvtrace_daemon_close(dc);
	snprintf(extra, sizeof(extra), "rm -rf '%s'", base);
	if (system(extra)) {
		/* leave it */
	}
	h_pass();
	return 0;
}
