// SPDX-License-Identifier: MIT
/*
 * The hosted helpers of common/ (hvt_util.h): size and mode parsing, the
 * socket chores around a server's bind() and a client's connect(), the
 * log lines, hvt_util_open_owned() (issue 22 point 4: a name in a
 * shared folder is opened only as a regular file of a trusted owner) and
 * the formats folder reader of an attach by pid, hvt_util_kfset_read() and
 * hvt_util_kfset_memfd() (issue 22 point 2: a FIFO or link in the folder
 * is refused, or with HVT_UTIL_KFSET_SKIP skipped, never waited on).
 */
#include <hvtrace/config.h>

#include "hvt_test.h"

#if IS_ENABLED(CONFIG_HVT_GUEST)

#include <fcntl.h>
#include <hvtrace/proto.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hvt_util.h"

static void check_size(const char *s, int want_ret, uint64_t want)
{
	uint64_t v = 0xdeadbeef;
	int ret = hvt_util_size_parse(s, &v);

	if (ret != want_ret)
		t_fail("size '%s': returned %d, expected %d", s ? s : "(null)",
		       ret, want_ret);
	if (!ret && v != want)
		t_fail("size '%s': got %" PRIu64 ", expected %" PRIu64, s, v,
		       want);
	if (ret && v != 0xdeadbeef)
		t_fail("size '%s': output changed on failure", s);
}

static void test_size(void)
{
	check_size("0", 0, 0);
	check_size("4096", 0, 4096);
	check_size("0x1000", 0, 4096);
	check_size("010", 0, 8);
	check_size("16M", 0, 16ull << 20);
	check_size("3k", 0, 3072);
	check_size("2G", 0, 2ull << 30);
	check_size("18446744073709551615", 0, UINT64_MAX);
	check_size("17179869183G", 0, 17179869183ull << 30);
	check_size("17179869184G", -ERANGE, 0);
	check_size("18446744073709551616", -ERANGE, 0);
	check_size(NULL, -EINVAL, 0);
	check_size("", -EINVAL, 0);
	check_size("-1", -EINVAL, 0);
	check_size("M", -EINVAL, 0);
	check_size("16MB", -EINVAL, 0);
	check_size("16 ", -EINVAL, 0);
	check_size("1T", -EINVAL, 0);
	check_size("4096+8", -EINVAL, 0);
}

static void test_mode(void)
{
	static const struct {
		const char *s;
		int ret;
		unsigned int mode;
	} cases[] = {
		{"0660", 0, 0660},    {"600", 0, 0600},
		{"0", 0, 0},	      {"777", 0, 0777},
		{"1000", -EINVAL, 0}, {"", -EINVAL, 0},
		{"068", -EINVAL, 0},  {"-1", -EINVAL, 0},
		{" 660", -EINVAL, 0}, {"0660x", -EINVAL, 0},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned int m = 01234;
		int ret = hvt_util_mode_parse(cases[i].s, &m);

		if (ret != cases[i].ret)
			t_fail("mode '%s': returned %d, expected %d",
			       cases[i].s, ret, cases[i].ret);
		if (!ret && m != cases[i].mode)
			t_fail("mode '%s': got %o, expected %o", cases[i].s, m,
			       cases[i].mode);
		if (ret && m != 01234)
			t_fail("mode '%s': output changed on failure",
			       cases[i].s);
	}
}

static void test_sock(void)
{
	char dir[] = "/tmp/hvt-util-XXXXXX", path[256], file[256];
	struct sockaddr_un sa;
	struct stat st;
	int lfd, cfd;

	if (!mkdtemp(dir))
		t_fail("mkdtemp: %s", strerror(errno));
	snprintf(path, sizeof(path), "%s/a/b/s.sock", dir);

	/* Nothing there: the directories are made, the address filled. */
	t_eq(hvt_util_sock_prepare(path, &sa), 0);
	t_assert(!strcmp(sa.sun_path, path));
	t_eq(sa.sun_family, AF_UNIX);
	snprintf(file, sizeof(file), "%s/a/b", dir);
	t_assert(!stat(file, &st) && S_ISDIR(st.st_mode));

	/* Nobody connected yet: a client is told there is no server. */
	t_eq(hvt_util_sock_connect(path), -ENOENT);

	/* A live server: refused, and left in place. */
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	t_assert(lfd >= 0);
	t_ok(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) ? -errno : 0);
	t_ok(listen(lfd, 4) ? -errno : 0);
	cfd = hvt_util_sock_connect(path);
	t_ok(cfd);
	close(cfd);
	t_eq(hvt_util_sock_prepare(path, &sa), -EADDRINUSE);
	t_assert(!lstat(path, &st) && S_ISSOCK(st.st_mode));

	/* The server gone: its socket is stale and removed. */
	close(lfd);
	t_eq(hvt_util_sock_connect(path), -ECONNREFUSED);
	t_eq(hvt_util_sock_prepare(path, &sa), 0);
	t_assert(lstat(path, &st) && errno == ENOENT);

	/* A regular file is never removed. */
	cfd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	t_assert(cfd >= 0);
	close(cfd);
	t_eq(hvt_util_sock_prepare(path, &sa), -EEXIST);
	t_assert(!lstat(path, &st) && S_ISREG(st.st_mode));
	unlink(path);

	/* A path that does not fit a socket address. */
	memset(file, 'x', sizeof(file) - 1);
	file[0] = '/';
	file[sizeof(file) - 1] = '\0';
	t_eq(hvt_util_sock_prepare(file, &sa), -ENAMETOOLONG);
	t_eq(hvt_util_sock_connect(file), -ENAMETOOLONG);

	snprintf(file, sizeof(file), "%s/a/b", dir);
	rmdir(file);
	snprintf(file, sizeof(file), "%s/a", dir);
	rmdir(file);
	rmdir(dir);
}

/* Log lines go to stderr as "PROG: message"; debug ones only verbose. */
static void test_log(void)
{
	char path[] = "/tmp/hvt-util-log-XXXXXX", buf[256];
	int fd = mkstemp(path), saved = dup(2);
	ssize_t n;

	t_assert(fd >= 0 && saved >= 0);
	fflush(stderr);
	t_assert(dup2(fd, 2) == 2);
	hvt_util_log_setup("prog-a", 0);
	t_eq(hvt_util_log_verbose(), 0);
	hvt_util_log("one %d", 1);
	hvt_util_dbg("hidden");
	hvt_util_log_setup(NULL, 1);
	t_eq(hvt_util_log_verbose(), 1);
	hvt_util_dbg("two %s", "x");
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	unlink(path);
	t_assert(n >= 0);
	buf[n] = '\0';
	if (strcmp(buf, "prog-a: one 1\nprog-a: two x\n"))
		t_fail("log output '%s'", buf);
}

/* The open file's checks (the owner check itself needs a second user:
 * tests/hvtraced/planted_names). */
static void test_open_owned(void)
{
	char dir[] = "/tmp/hvt-owned-XXXXXX", path[256], other[256];
	char msg[512];
	int fd;

	if (!mkdtemp(dir))
		t_fail("mkdtemp: %s", strerror(errno));
	snprintf(path, sizeof(path), "%s/hvtrace-x.ram", dir);
	t_eq(hvt_util_open_owned(path, 0, (uid_t)-1, msg, sizeof(msg)),
	     -ENOENT);
	fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	t_assert(fd >= 0);
	close(fd);
	fd = hvt_util_open_owned(path, 1, (uid_t)-1, msg, sizeof(msg));
	t_assert(fd >= 0 && !msg[0]);
	close(fd);
	/* Writable by every user: refused, whoever owns it. */
	t_ok(chmod(path, 0666) ? -errno : 0);
	t_eq(hvt_util_open_owned(path, 0, (uid_t)-1, msg, sizeof(msg)),
	     -EPERM);
	t_assert(strstr(msg, "is writable by every user (mode 0666)"));
	/* A symbolic link, even to a good file. */
	t_ok(chmod(path, 0600) ? -errno : 0);
	snprintf(other, sizeof(other), "%s/hvtrace-l.ram", dir);
	t_ok(symlink(path, other) ? -errno : 0);
	t_eq(hvt_util_open_owned(other, 0, (uid_t)-1, msg, sizeof(msg)),
	     -ELOOP);
	t_assert(strstr(msg, "is a symbolic link: someone else may have "
			     "planted it; remove it"));
	unlink(other);
	/* A FIFO: not opened blocking, refused. */
	snprintf(other, sizeof(other), "%s/hvtrace-f.ram", dir);
	t_ok(mkfifo(other, 0600) ? -errno : 0);
	t_eq(hvt_util_open_owned(other, 0, (uid_t)-1, msg, sizeof(msg)),
	     -EPERM);
	t_assert(strstr(msg, "is not a regular file"));
	unlink(other);
	unlink(path);
	rmdir(dir);
}

/* @dir/events/@sys/@ev/format with @text, a FIFO (@text "fifo") or a
 * link to sched/s/format ("link"). */
static void kfs_file(const char *dir, const char *sys, const char *ev,
		     const char *text)
{
	char p[512];
	int fd;

	snprintf(p, sizeof(p), "%s/events", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/events/%s", dir, sys);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/events/%s/%s", dir, sys, ev);
	t_ok(mkdir(p, 0755) ? -errno : 0);
	snprintf(p, sizeof(p), "%s/events/%s/%s/format", dir, sys, ev);
	if (!strcmp(text, "fifo")) {
		t_ok(mkfifo(p, 0600) ? -errno : 0);
	} else if (!strcmp(text, "link")) {
		t_ok(symlink("../s/format", p) ? -errno : 0);
	} else {
		fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
		t_assert(fd >= 0);
		t_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
		close(fd);
	}
}

static void test_kfset(void)
{
	static const char rec[] = "\x07\x00\x03\x00\x00\x00sched/sfmt";
	char dir[] = "/tmp/hvt-kfset-XXXXXX", cmd[300], msg[512];
	uint8_t *set = (void *)1, back[64];
	size_t len = 1;
	int fd, seals;

	if (!mkdtemp(dir))
		t_fail("mkdtemp: %s", strerror(errno));
	t_eq(hvt_util_kfset_read(dir, 0, &set, &len, msg, sizeof(msg)),
	     -ENOENT);
	t_assert(!set && !len && strstr(msg, "no events/ folder in it"));
	kfs_file(dir, "sched", "s", "fmt");
	kfs_file(dir, "sched", "f", "fifo");
	/* A FIFO: refused at once, not waited on. */
	t_eq(hvt_util_kfset_read(dir, 0, &set, &len, msg, sizeof(msg)),
	     -EINVAL);
	t_assert(!set && strstr(msg, "events/sched/f/format is not a "
				     "regular file"));
	/* Skipped with HVT_UTIL_KFSET_SKIP, and so are a link, a name the
	 * daemon refuses and an empty file. */
	kfs_file(dir, "sched", "l", "link");
	kfs_file(dir, "sched", "sp ace", "fmt");
	kfs_file(dir, "sched", ".hidden", "fmt");
	kfs_file(dir, "sched", "empty", "");
	t_ok(hvt_util_kfset_read(dir, HVT_UTIL_KFSET_SKIP, &set, &len, msg,
				 sizeof(msg)));
	t_eq(len, (size_t)HVT_KFSET_MAGIC_LEN + sizeof(rec) - 1);
	t_assert(!memcmp(set, HVT_KFSET_MAGIC, HVT_KFSET_MAGIC_LEN) &&
		 !memcmp(set + HVT_KFSET_MAGIC_LEN, rec, sizeof(rec) - 1));
	/* The set in a memfd nobody can change. */
	fd = hvt_util_kfset_memfd(set, len, msg, sizeof(msg));
	t_assert(fd >= 0 && !msg[0]);
	seals = fcntl(fd, F_GET_SEALS);
	t_assert(seals >= 0 && (seals & F_SEAL_WRITE) &&
		 (seals & F_SEAL_SHRINK) && (seals & F_SEAL_GROW));
	t_eq(pread(fd, back, sizeof(back), 0), (ssize_t)len);
	t_assert(!memcmp(back, set, len));
	t_assert(write(fd, "x", 1) < 0);
	close(fd);
	free(set);
	/* Without the skip, the link is refused too (once the FIFO is gone). */
	snprintf(cmd, sizeof(cmd), "%s/events/sched/f/format", dir);
	unlink(cmd);
	t_eq(hvt_util_kfset_read(dir, 0, &set, &len, msg, sizeof(msg)),
	     -ELOOP);
	t_assert(strstr(msg, "events/sched/l/format"));
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	t_ok(system(cmd) ? -EIO : 0);
}

int main(void)
{
	test_log();
	test_open_owned();
	test_kfset();
	test_size();
	test_mode();
	test_sock();
	printf("PASS\n");
	return 0;
}

#else

int main(void)
{
	t_skip("the hosted helpers are linked here through the guest library "
	       "(CONFIG_HVT_GUEST)");
}

#endif
