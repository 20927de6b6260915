// SPDX-License-Identifier: MIT
/*
 * Proxy test harness (see harness.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event-parse.h>
#include <kbuffer.h>

#include <hvtrace.h>
#include <hvtrace-guest.h>

#include "harness.h"

char h_dir[64];
char h_objtree[512];
char h_dsock[300];
pid_t h_dpid;

static pid_t h_pids[64];
static unsigned int h_nr_pids;
static char h_shm[16][256];
static unsigned int h_nr_shm;
static pid_t h_owner;
static bool h_passed;

uint64_t h_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void h_pass(void)
{
	h_passed = true;
}

static void h_dump(const char *path)
{
	char line[512];
	FILE *f = fopen(path, "r");
	long n = 0;

	if (!f)
		return;
	fprintf(stderr, "---- %s (last lines) ----\n", path);
	/* Print the last 40 lines: count first, then skip. */
	while (fgets(line, sizeof(line), f))
		n++;
	rewind(f);
	while (fgets(line, sizeof(line), f))
		if (n-- <= 40)
			fputs(line, stderr);
	fclose(f);
}

/* Remove @path and what it holds, @depth levels of folders at most. */
static void h_rm_tree(const char *path, int depth)
{
	struct dirent *e;
	DIR *d;

	if (!unlink(path) || depth <= 0)
		return;
	d = opendir(path);
	while (d && (e = readdir(d))) {
		char q[1200];

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(q, sizeof(q), "%s/%s", path, e->d_name);
		h_rm_tree(q, depth - 1);
	}
	if (d)
		closedir(d);
	rmdir(path);
}

static void h_cleanup(void)
{
	unsigned int i;
	DIR *d;
	struct dirent *e;
	char p[600];

	if (getpid() != h_owner)
		return;
	for (i = 0; i < h_nr_pids; i++)
		if (h_pids[i] > 0)
			kill(h_pids[i], SIGTERM);
	for (i = 0; i < h_nr_pids; i++) {
		int st, k;

		if (h_pids[i] <= 0)
			continue;
		for (k = 0; k < 100; k++) {
			if (waitpid(h_pids[i], &st, WNOHANG) != 0)
				break;
			usleep(10000);
		}
		if (k == 100) {
			kill(h_pids[i], SIGKILL);
			waitpid(h_pids[i], &st, 0);
		}
	}
	for (i = 0; i < h_nr_shm; i++)
		unlink(h_shm[i]);
	if (!h_dir[0])
		return;
	if (getenv("HVT_TEST_KEEP")) {
		fprintf(stderr, "kept %s (HVT_TEST_KEEP)\n", h_dir);
		return;
	}
	d = opendir(h_dir);
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", h_dir, e->d_name);
		if (!h_passed && strstr(e->d_name, ".log"))
			h_dump(p);
		unlink(p);
	}
	if (d)
		closedir(d);
	/* The launcher's runtime folder (HVT_RUNDIR) keeps a lock file, and
	 * a remote's folder in it (a fake VM's control socket). */
	snprintf(p, sizeof(p), "%s/run", h_dir);
	h_rm_tree(p, 3);
	rmdir(h_dir);
}

static void h_track(pid_t pid)
{
	if (h_nr_pids < 64)
		h_pids[h_nr_pids++] = pid;
}

static void h_untrack(pid_t pid)
{
	unsigned int i;

	for (i = 0; i < h_nr_pids; i++)
		if (h_pids[i] == pid)
			h_pids[i] = 0;
}

static void h_find_objtree(void)
{
	char exe[512], *p;
	ssize_t n;
	const char *env = getenv("HVT_OBJTREE");

	if (env && *env) {
		snprintf(h_objtree, sizeof(h_objtree), "%s", env);
		return;
	}
	/* $(objtree)/tests/proxy/NAME */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		t_fail("cannot find the object tree (set HVT_OBJTREE)");
	exe[n] = '\0';
	for (int up = 0; up < 3; up++) {
		p = strrchr(exe, '/');
		if (!p)
			t_fail("cannot find the object tree (set HVT_OBJTREE)");
		*p = '\0';
	}
	snprintf(h_objtree, sizeof(h_objtree), "%s", exe);
}

/* Spawn with stdout/stderr to @log (NULL: stdout to a pipe in *out). */
static pid_t h_spawn(char *const argv[], const char *log, int *out)
{
	int p[2] = { -1, -1 };
	pid_t pid;

	if (out && pipe2(p, O_CLOEXEC))
		t_fail("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		t_fail("fork: %s", strerror(errno));
	if (pid == 0) {
		int fd;

		if (log) {
			fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
			if (fd >= 0) {
				dup2(fd, 1);
				dup2(fd, 2);
			}
		}
		if (out)
			dup2(p[1], 1);
		fd = open("/dev/null", O_RDONLY);
		if (fd >= 0)
			dup2(fd, 0);
		execv(argv[0], argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	if (out) {
		close(p[1]);
		*out = p[0];
	}
	h_track(pid);
	return pid;
}

static void h_need(const char *rel, char *path, size_t size)
{
	snprintf(path, size, "%s/%s", h_objtree, rel);
	if (access(path, X_OK))
		t_fail("%s is not built: run make O=%s (it is part of 'all')",
		       path, h_objtree);
}

/* Start hvtraced in h_dir (its socket, run folder, shm folder and log
 * there) and connect a tool to it. */
static struct hvtrace_daemon *h_daemon_spawn(const char *extra)
{
	char bin[700], log[300], run[300];
	char *argv[20];
	struct hvtrace_daemon *dc = NULL;
	int argc = 0, i;
	char *copy = NULL, *tok, *save;

	snprintf(log, sizeof(log), "%s/hvtraced.log", h_dir);
	snprintf(run, sizeof(run), "%s/run", h_dir);
	h_need("bin/hvtraced", bin, sizeof(bin));
	argv[argc++] = bin;
	argv[argc++] = "--foreground";
	argv[argc++] = "--socket";
	argv[argc++] = h_dsock;
	argv[argc++] = "--run-dir";
	argv[argc++] = run;
	argv[argc++] = "--shm-dir";
	argv[argc++] = h_dir;
	argv[argc++] = "--verbose";
	if (extra) {
		copy = strdup(extra);
		for (tok = strtok_r(copy, " ", &save); tok && argc < 19;
		     tok = strtok_r(NULL, " ", &save))
			argv[argc++] = tok;
	}
	argv[argc] = NULL;
	h_dpid = h_spawn(argv, log, NULL);
	/* Wait for the socket (bounded: 10 s). */
	for (i = 0; i < 1000; i++) {
		if (!access(h_dsock, F_OK) && !hvtrace_daemon_open(h_dsock, &dc))
			break;
		usleep(10000);
	}
	free(copy);
	if (!dc)
		t_fail("hvtraced did not start: %s", hvtrace_last_error());
	return dc;
}

struct hvtrace_daemon *h_start(const char *extra)
{
	char run[300];

	h_owner = getpid();
	atexit(h_cleanup);
	signal(SIGPIPE, SIG_IGN);
	h_find_objtree();
	snprintf(h_dir, sizeof(h_dir), "/tmp/hvtrace-proxy.XXXXXX");
	if (!mkdtemp(h_dir))
		t_fail("mkdtemp: %s", strerror(errno));
	snprintf(h_dsock, sizeof(h_dsock), "%s/hvtraced.sock", h_dir);
	/* The run folder, where hvtraced keeps its state file for a
	 * restart (h_restart()). */
	snprintf(run, sizeof(run), "%s/run", h_dir);
	if (mkdir(run, 0700))
		t_fail("mkdir %s: %s", run, strerror(errno));
	return h_daemon_spawn(extra);
}

struct hvtrace_daemon *h_restart(const char *extra)
{
	int st, i;

	for (i = 0; i < 1000; i++) {
		if (waitpid(h_dpid, &st, WNOHANG) == h_dpid)
			break;
		usleep(10000);
	}
	if (i == 1000)
		t_fail("hvtraced %d did not end within 10 s", (int)h_dpid);
	for (i = 0; i < (int)h_nr_pids; i++)
		if (h_pids[i] == h_dpid)
			h_pids[i] = 0;	/* reaped: the cleanup skips it */
	return h_daemon_spawn(extra);
}

uint32_t h_subscribe(struct hvtrace_daemon *dc, uint32_t remote,
		     uint32_t queue_kib)
{
	struct hvt_msg m, r;

	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_SUBSCRIBE;
	m.chan = remote;
	m.u.subscribe.cpu = -1;
	m.u.subscribe.queue_kib = queue_kib;
	t_ok(hvtrace_daemon_call(dc, &m, &r, 10000, NULL, NULL));
	t_eq(r.u.result.status, 0);
	return r.u.result.id;
}

void h_drain(struct hvtrace_daemon *dc, uint32_t remote,
	     void (*cb)(void *arg, const struct hvt_msg *m), void *arg)
{
	struct hvt_msg m, r;

	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_DRAIN;
	m.chan = remote;
	t_ok(hvtrace_daemon_call(dc, &m, &r, 30000, cb, arg));
	t_eq(r.type, HVT_MSG_DRAIN);
	t_eq(r.u.result.status, 0);
}

ssize_t h_send_with_fd(int sock, const void *buf, size_t len, int fd)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} cm;
	struct msghdr mh = { 0 };
	struct iovec iov = { (void *)buf, len };

	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cm.b;
	mh.msg_controllen = sizeof(cm.b);
	CMSG_FIRSTHDR(&mh)->cmsg_level = SOL_SOCKET;
	CMSG_FIRSTHDR(&mh)->cmsg_type = SCM_RIGHTS;
	CMSG_FIRSTHDR(&mh)->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(CMSG_FIRSTHDR(&mh)), &fd, sizeof(int));
	return sendmsg(sock, &mh, MSG_NOSIGNAL);
}

int h_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (strlen(h_dsock) >= sizeof(sa.sun_path))
		t_fail("socket path too long");
	memcpy(sa.sun_path, h_dsock, strlen(h_dsock) + 1);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		t_fail("connect %s: %s", h_dsock, strerror(errno));
	return fd;
}

void h_hello_msg(struct hvt_msg *m, uint8_t role, const char *name)
{
	memset(m, 0, sizeof(*m));
	m->type = HVT_MSG_HELLO;
	m->req = 1;
	m->u.hello.min_version = 1;
	m->u.hello.max_version = 1;
	m->u.hello.role = role;
	m->u.hello.pid = (uint32_t)getpid();
	if (name) {
		m->u.hello.name.ptr = name;
		m->u.hello.name.len = (uint32_t)strlen(name);
	}
}

int h_raw_agent(const char *name, const char *area)
{
	uint8_t buf[4096];
	struct hvt_msg m;
	int fd, afd, n;

	t_ok(hvtg_area_create(area, 1 << 20, NULL));
	afd = open(area, O_RDWR | O_CLOEXEC);
	unlink(area);
	t_assert(afd >= 0);
	fd = h_connect();
	h_hello_msg(&m, HVT_ROLE_AGENT, name);
	m.u.hello.nr_fds = 1;
	n = hvt_msg_encode(buf, sizeof(buf), &m);
	t_assert(n > 0);
	if (h_send_with_fd(fd, buf, (size_t)n, afd) != n)
		t_fail("sendmsg: %s", strerror(errno));
	close(afd);
	return fd;
}

void h_wait_connected(struct hvtrace_daemon *dc, const char *name,
		      int timeout_ms)
{
	struct hvt_remote_rec rec;
	int k;

	for (k = 0; k < timeout_ms / 10; k++) {
		if (!hvtrace_daemon_find_remote(dc, name, &rec) &&
		    rec.state == HVT_REMOTE_CONNECTED)
			return;
		usleep(10000);
	}
	t_fail("the %s agent's session did not come up", name);
}

bool h_file_has(const char *path, const char *needle)
{
	char line[1024];
	bool found = false;
	FILE *f = fopen(path, "r");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, needle) != NULL;
	fclose(f);
	return found;
}

void h_remote(struct hvtrace_daemon *dc, const char *name,
	      struct hvt_remote_rec *rec)
{
	if (hvtrace_daemon_find_remote(dc, name, rec))
		t_fail("remote %s: %s", name, hvtrace_last_error());
}

void h_agent_start(struct h_agent *a, const char *name, const char *extra)
{
	char bin[700], *argv[32], *copy = NULL, *tok, *save;
	struct hvtrace_daemon *dc;
	struct hvt_remote_rec rec;
	int argc = 0, i;

	memset(a, 0, sizeof(*a));
	snprintf(a->name, sizeof(a->name), "%s", name);
	snprintf(a->sock, sizeof(a->sock), "%s/agent-%s.sock", h_dir, name);
	snprintf(a->area, sizeof(a->area), "/dev/shm/hvtrace-t%d-%s",
		 (int)getpid(), name);
	snprintf(a->log, sizeof(a->log), "%s/agent-%s.log", h_dir, name);
	if (h_nr_shm < 16)
		snprintf(h_shm[h_nr_shm++], sizeof(h_shm[0]), "%s", a->area);
	h_need("bin/hvtrace-agent", bin, sizeof(bin));
	argv[argc++] = bin;
	argv[argc++] = "--create";
	argv[argc++] = a->area;
	argv[argc++] = "--size";
	argv[argc++] = "4M";
	argv[argc++] = "--name";
	argv[argc++] = a->name;
	argv[argc++] = "--host-socket";
	argv[argc++] = h_dsock;
	argv[argc++] = "--socket";
	argv[argc++] = a->sock;
	argv[argc++] = "--verbose";
	if (extra) {
		copy = strdup(extra);
		for (tok = strtok_r(copy, " ", &save); tok && argc < 31;
		     tok = strtok_r(NULL, " ", &save))
			argv[argc++] = tok;
	}
	argv[argc] = NULL;
	a->pid = h_spawn(argv, a->log, NULL);
	free(copy);
	if (hvtrace_daemon_open(h_dsock, &dc))
		t_fail("%s", hvtrace_last_error());
	/* Up when connected with its trigger event registered (10 s). */
	for (i = 0; i < 1000; i++) {
		if (!hvtrace_daemon_find_remote(dc, name, &rec) &&
		    rec.state == HVT_REMOTE_CONNECTED && rec.nr_events >= 1 &&
		    !access(a->sock, F_OK))
			break;
		usleep(10000);
	}
	if (i == 1000)
		t_fail("agent %s did not connect to hvtraced", name);
	a->remote = rec.id;
	hvtrace_daemon_close(dc);
}

void h_agent_stop(struct h_agent *a)
{
	int st;

	if (a->pid <= 0)
		return;
	kill(a->pid, SIGTERM);
	waitpid(a->pid, &st, 0);
	h_untrack(a->pid);
	a->pid = 0;
}

void h_proc_start(struct h_proc *p, const char *rel, ...)
{
	char bin[700], *argv[32];
	int argc = 0;
	va_list ap;

	memset(p, 0, sizeof(*p));
	h_need(rel, bin, sizeof(bin));
	argv[argc++] = bin;
	va_start(ap, rel);
	while (argc < 31 && (argv[argc] = va_arg(ap, char *)))
		argc++;
	va_end(ap);
	argv[argc] = NULL;
	p->pid = h_spawn(argv, NULL, &p->out);
}

const char *h_proc_line(struct h_proc *p, int timeout_ms)
{
	static char line[4096];
	uint64_t deadline = h_now_ns() + (uint64_t)timeout_ms * 1000000;

	for (;;) {
		char *nl = memchr(p->buf, '\n', p->have);
		struct pollfd pfd = { .fd = p->out, .events = POLLIN };
		ssize_t n;
		uint64_t now;

		if (nl) {
			size_t len = (size_t)(nl - p->buf);

			memcpy(line, p->buf, len);
			line[len] = '\0';
			memmove(p->buf, nl + 1, p->have - len - 1);
			p->have -= len + 1;
			return line;
		}
		now = h_now_ns();
		if (now >= deadline)
			t_fail("no output line from pid %d within %d ms",
			       (int)p->pid, timeout_ms);
		if (poll(&pfd, 1, (int)((deadline - now) / 1000000) + 1) <= 0)
			continue;
		n = read(p->out, p->buf + p->have,
			 sizeof(p->buf) - 1 - p->have);
		if (n <= 0)
			t_fail("pid %d closed its output before the expected "
			       "line",
			       (int)p->pid);
		p->have += (size_t)n;
	}
}

int h_proc_wait(struct h_proc *p, int timeout_ms)
{
	int st, i;

	for (i = 0; i < timeout_ms / 10 + 1; i++) {
		pid_t r = waitpid(p->pid, &st, WNOHANG);

		if (r == p->pid) {
			h_untrack(p->pid);
			close(p->out);
			if (WIFEXITED(st))
				return WEXITSTATUS(st);
			return 128 + WTERMSIG(st);
		}
		usleep(10000);
	}
	t_fail("pid %d did not exit within %d ms", (int)p->pid, timeout_ms);
}

int h_result(struct hvtrace_daemon *dc, uint16_t type, uint32_t remote,
	     uint32_t arg, const char *s, char *text, size_t size)
{
	struct hvt_msg m;

	memset(&m, 0, sizeof(m));
	m.type = type;
	m.chan = remote;
	if (type == HVT_MSG_TRACING) {
		m.u.tracing.op = arg;
	} else if (type == HVT_MSG_SUBSCRIBE) {
		m.u.subscribe.cpu = (int32_t)arg;
	} else if (type == HVT_MSG_UNSUBSCRIBE) {
		m.u.unsubscribe.sub = arg;
	} else {
		m.u.arg.arg = arg;
		m.u.arg.s.ptr = s;
		m.u.arg.s.len = (uint32_t)strlen(s);
	}
	return hvtrace_daemon_call_result(dc, &m, NULL, text, size);
}

char *h_text(struct hvtrace_daemon *dc, uint32_t remote, uint32_t kind)
{
	char *t;

	if (hvtrace_daemon_get_text(dc, remote, kind, &t, NULL))
		t_fail("TEXT %u: %s", kind, hvtrace_last_error());
	return t;
}

uint64_t h_info_u64(struct hvtrace_daemon *dc, uint32_t remote,
		    const char *key)
{
	char *text = h_text(dc, remote, HVT_TEXT_INFO), *p;
	unsigned long long v;
	size_t n = strlen(key);

	for (p = text; (p = strstr(p, key)); p += n)
		if ((p == text || p[-1] == '\n') &&
		    sscanf(p + n, ": %llu", &v) == 1)
			break;
	if (!p)
		t_fail("no '%s' in the remote's info:\n%s", key, text);
	free(text);
	return v;
}

struct tep_handle *h_tep(struct hvtrace_daemon *dc, uint32_t remote)
{
	struct tep_handle *tep = tep_alloc();
	struct hvt_msg m, r;
	int ret, parts, events = 0;

	if (!tep)
		t_fail("tep_alloc failed");
	tep_set_file_bigendian(tep, TEP_LITTLE_ENDIAN);
	tep_set_local_bigendian(tep, TEP_LITTLE_ENDIAN);
	tep_set_long_size(tep, 8);
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_FORMATS;
	m.chan = remote;
	ret = hvtrace_daemon_call(dc, &m, &r, 10000, NULL, NULL);
	for (parts = 0; !ret && parts < 65536; parts++) {
		if (r.type != HVT_MSG_FORMATS)
			t_fail("FORMATS answered with %s",
			       hvt_msg_type_name(r.type));
		if (r.u.format.name.len == 11 &&
		    !memcmp(r.u.format.name.ptr, "header_page", 11)) {
			char *hp = strndup(r.u.format.text.ptr,
					   r.u.format.text.len);

			if (tep_parse_header_page(tep, hp, r.u.format.text.len,
						  8))
				t_fail("libtraceevent refused header_page");
			free(hp);
		} else if (r.u.format.id) {
			if (tep_parse_event(tep, r.u.format.text.ptr,
					    r.u.format.text.len,
					    "user_events"))
				t_fail("libtraceevent refused the format of "
				       "%.*s",
				       (int)r.u.format.name.len,
				       r.u.format.name.ptr);
			events++;
		}
		if (!(r.flags & HVT_PF_MORE))
			break;
		do {
			ret = hvtrace_daemon_recv(dc, &r, 10000);
		} while (ret == 1 && r.req != m.req);
		ret = ret == 1 ? 0 : -1;
	}
	if (ret)
		t_fail("FORMATS: %s", hvtrace_last_error());
	if (!events)
		t_fail("FORMATS returned no event formats");
	return tep;
}

int h_decode_page(struct tep_handle *tep, const struct hvt_m_page *pg,
		  h_rec_cb cb, void *arg)
{
	static uint8_t page[65536 + 16];
	static struct kbuffer *kb;
	unsigned long long ts;
	void *data;
	int n = 0;

	if (!kb)
		kb = kbuffer_alloc(KBUFFER_LSIZE_8, KBUFFER_ENDIAN_LITTLE);
	if (!kb)
		t_fail("kbuffer_alloc failed");
	if (pg->len > 65536 || pg->len < 16)
		t_fail("PAGE of %u bytes", pg->len);
	memset(page, 0, sizeof(page));
	memcpy(page, pg->data, pg->len);
	if (kbuffer_load_subbuffer(kb, page))
		t_fail("kbuffer refused a page");
	/* Bounded by the page: kbuffer only moves forward. */
	for (data = kbuffer_read_event(kb, &ts); data && n < 65536;
	     data = kbuffer_next_event(kb, &ts)) {
		struct tep_record rec;
		struct tep_event *ev;

		memset(&rec, 0, sizeof(rec));
		rec.ts = ts;
		rec.data = data;
		rec.size = kbuffer_event_size(kb);
		rec.cpu = (int)pg->cpu;
		ev = tep_find_event(tep, tep_data_type(tep, &rec));
		cb(arg, tep, ev, &rec);
		n++;
	}
	return n;
}

void h_e2e_record(void *arg, struct tep_handle *tep, struct tep_event *ev,
		  struct tep_record *rec)
{
	struct h_e2e *s = arg;
	unsigned long long seq, val;
	char expect[64], line[256];
	struct trace_seq ts;
	const char *msg;
	int len, k;

	if (!ev || ev->id != s->id) {
		s->other++;
		return;
	}
	if (tep_get_field_val(NULL, ev, "seq", rec, &seq, 0) ||
	    tep_get_field_val(NULL, ev, "val", rec, &val, 0))
		t_fail("libtraceevent cannot read seq/val");
	if (seq >= s->total)
		t_fail("record seq=%llu: an event written before the enable "
		       "(or garbage) reached the host",
		       seq);
	if (val != seq * 7 + 3)
		t_fail("seq %llu: val %llu, expected %llu", seq, val,
		       seq * 7 + 3);
	msg = tep_get_field_raw(NULL, ev, "msg", rec, &len, 0);
	k = snprintf(expect, sizeof(expect), "m%llu", seq);
	for (unsigned int x = 0; x < seq % 13; x++)
		expect[k++] = 'x';
	expect[k] = '\0';
	if (!msg || len != k + 1 || strcmp(msg, expect))
		t_fail("seq %llu: msg '%.*s' (%d bytes), expected '%s'", seq,
		       msg ? len : 0, msg ? msg : "", len, expect);
	if (s->pid && tep_data_pid(tep, rec) != s->pid)
		t_fail("seq %llu: common_pid %d, expected %d", seq,
		       tep_data_pid(tep, rec), s->pid);
	/* The print fmt path too: __get_rel_str() through libtraceevent. */
	trace_seq_init(&ts);
	tep_print_event(tep, &ts, rec, "%s", TEP_PRINT_INFO);
	trace_seq_terminate(&ts);
	snprintf(line, sizeof(line), "seq=%llu val=%llu msg=%s", seq, val,
		 expect);
	if (strcmp(ts.buffer, line))
		t_fail("printed '%s', expected '%s'", ts.buffer, line);
	trace_seq_destroy(&ts);
	s->count[seq]++;
	s->n++;
}

void h_wait_sync(struct hvtrace_daemon *dc, const char *name, uint64_t n,
		 int timeout_ms)
{
	struct hvt_remote_rec rec;
	int k;

	for (k = 0; k < timeout_ms / 10 + 1; k++) {
		h_remote(dc, name, &rec);
		if (rec.sync_samples >= n)
			return;
		usleep(10000);
	}
	t_fail("%s: only %llu time-sync samples after %d ms", name,
	       (unsigned long long)rec.sync_samples, timeout_ms);
}

struct caus {
	int id;
	uint32_t sub;
	struct tep_handle *tep;
	unsigned int rounds;
	/* events as they came: token -> ts */
	uint64_t tok[H_MAX_ROUNDS], ts[H_MAX_ROUNDS];
	unsigned int n;
};

static void caus_record(void *arg, struct tep_handle *tep,
			struct tep_event *ev, struct tep_record *rec)
{
	struct caus *f = arg;
	unsigned long long token;

	if (!ev || ev->id != f->id)
		return;
	if (tep_get_field_val(NULL, ev, "token", rec, &token, 0))
		t_fail("cannot read the token field");
	if (f->n >= H_MAX_ROUNDS)
		t_fail("more trigger events than rounds");
	f->tok[f->n] = token;
	f->ts[f->n] = rec->ts;
	f->n++;
}

static void caus_msg(void *arg, const struct hvt_msg *m)
{
	struct caus *f = arg;

	if (m->type != HVT_MSG_PAGE || m->req != f->sub)
		return;
	if (m->u.page.lost_events || m->u.page.dropped_pages)
		t_fail("pages lost (%llu) or dropped (%llu)",
		       (unsigned long long)m->u.page.lost_events,
		       (unsigned long long)m->u.page.dropped_pages);
	h_decode_page(f->tep, &m->u.page, caus_record, f);
}

void h_causality(struct hvtrace_daemon *dc, const char *name, uint32_t remote,
		 unsigned int rounds, struct h_causality_result *res)
{
	static struct caus f;
	static struct hvt_trigger_rec recs[H_MAX_ROUNDS];
	static uint64_t conv[H_MAX_ROUNDS], ev_ts[H_MAX_ROUNDS];
	static uint64_t err[H_MAX_ROUNDS];
	static uint8_t buf[8];
	struct hvt_remote_rec rec;
	struct tep_event *ev;
	struct hvt_msg m, r;
	uint64_t deadline, sum_rtt = 0;
	unsigned int i, j, found = 0;

	if (rounds > H_MAX_ROUNDS)
		t_fail("at most %d rounds", H_MAX_ROUNDS);
	memset(&f, 0, sizeof(f));
	memset(res, 0, sizeof(*res));
	res->rounds = rounds;
	res->min_before = res->min_after = INT64_MAX;

	f.sub = h_subscribe(dc, remote, 0);
	f.tep = h_tep(dc, remote);
	ev = tep_find_event_by_name(f.tep, "user_events", "hvtrace_trigger");
	if (!ev)
		t_fail("no hvtrace_trigger format");
	f.id = ev->id;

	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_TRIGGER_RUN;
	m.chan = remote;
	m.u.trigger_run.count = rounds;
	t_ok(hvtrace_daemon_call(dc, &m, &r, 120000, caus_msg, &f));
	if (r.type == HVT_MSG_ERROR)
		t_fail("TRIGGER_RUN: %.*s", (int)r.u.result.text.len,
		       r.u.result.text.ptr);
	t_eq(r.type, HVT_MSG_TRIGGER_RUN);
	t_eq(r.u.trigger_run_reply.status, 0);
	t_eq(r.u.trigger_run_reply.recs.count, rounds);
	for (i = 0; i < rounds; i++) {
		hvt_msg_trigger_at(&r.u.trigger_run_reply.recs, i, &recs[i]);
		if (recs[i].status)
			t_fail("round %u: the agent's write failed: %s", i,
			       strerror(-recs[i].status));
	}
	deadline = h_now_ns() + 30000000000ull;
	while (f.n < rounds && h_now_ns() < deadline) {
		int ret = hvtrace_daemon_recv(dc, &m, 500);

		if (ret < 0)
			t_fail("%s", hvtrace_last_error());
		if (ret == 1)
			caus_msg(&f, &m);
	}
	if (f.n != rounds)
		t_fail("%s: %u of %u trigger events arrived", name, f.n,
		       rounds);
	/* Match events to rounds by their unique tokens. */
	for (i = 0; i < rounds; i++) {
		for (j = 0; j < f.n; j++)
			if (f.tok[j] == recs[i].token)
				break;
		if (j == f.n)
			t_fail("round %u: its event never arrived", i);
		ev_ts[i] = f.ts[j];
		found++;
	}
	/*
	 * Convert with the daemon's clock model, as a recorder would: one
	 * TO_HOST per event, because the bound a reply states is that of
	 * its last timestamp, and each event is held to its own.
	 */
	for (i = 0; i < rounds; i++) {
		hvt_msg_put_u64(buf, ev_ts[i]);
		memset(&m, 0, sizeof(m));
		m.type = HVT_MSG_TO_HOST;
		m.chan = remote;
		m.u.to_host.ts.ptr = buf;
		m.u.to_host.ts.count = 1;
		t_ok(hvtrace_daemon_call(dc, &m, &r, 10000, caus_msg, &f));
		t_eq(r.type, HVT_MSG_TO_HOST);
		t_eq(r.u.to_host_reply.ns.count, 1);
		conv[i] = hvt_msg_u64_at(&r.u.to_host_reply.ns, 0);
		err[i] = r.u.to_host_reply.err_ns;
		if (err[i] == UINT64_MAX || err[i] > res->err_ns)
			res->err_ns = err[i];
	}
	/*
	 * The event was written at a host time in [before, after]; the
	 * model states that its conversion is within err of that time.
	 * Outside [before - err, after + err] the model broke its word.
	 */
	for (i = 0; i < rounds; i++) {
		const struct hvt_trigger_rec *t = &recs[i];
		int64_t before = (int64_t)(conv[i] - t->host_before);
		int64_t after = (int64_t)(t->host_after - conv[i]);
		uint64_t rtt = t->host_after - t->host_before;

		if (before < 0 || after < 0) {
			uint64_t out = (uint64_t)(before < 0 ? -before : -after);
			bool beyond = err[i] == UINT64_MAX || out > err[i];

			if (res->outside < 5 || (beyond && res->violations < 5))
				fprintf(stderr,
					"%s: round %u host [%llu, %llu] "
					"event %llu (writer %llu), %llu ns "
					"outside; stated bound %llu ns\n",
					beyond ? "violation" :
						 "outside its bracket",
					i, (unsigned long long)t->host_before,
					(unsigned long long)t->host_after,
					(unsigned long long)conv[i],
					(unsigned long long)ev_ts[i],
					(unsigned long long)out,
					(unsigned long long)err[i]);
			res->outside++;
			res->violations += beyond;
		}
		if (before < res->min_before)
			res->min_before = before;
		if (after < res->min_after)
			res->min_after = after;
		if (rtt > res->max_rtt)
			res->max_rtt = rtt;
		sum_rtt += rtt;
	}
	res->mean_rtt = sum_rtt / rounds;
	h_remote(dc, name, &rec);
	res->samples = rec.sync_samples;
	tep_free(f.tep);
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_UNSUBSCRIBE;
	m.u.unsubscribe.sub = f.sub;
	t_ok(hvtrace_daemon_call(dc, &m, &r, 10000, NULL, NULL));
	(void)found;
}

void h_filled_remote(struct hvtrace_daemon *dc, const char *name,
		     unsigned int cpus, unsigned int events,
		     unsigned int pages, struct hvt_remote_rec *rec)
{
	char cmd[2048];

	snprintf(cmd, sizeof(cmd),
		 "%s/bin/hvtrace loopback --area %s/%s.area --cpus %u "
		 "--events %u --pages %u --mode consume --quiet",
		 h_objtree, h_dir, name, cpus, events, pages);
	if (system(cmd))
		t_fail("loopback writer for %s failed", name);
	snprintf(cmd, sizeof(cmd),
		 "%s/bin/hvtrace daemon attach --area %s/%s.area --name %s "
		 "--socket %s >/dev/null",
		 h_objtree, h_dir, name, name, h_dsock);
	if (system(cmd))
		t_fail("attach of %s failed", name);
	if (hvtrace_daemon_find_remote(dc, name, rec))
		t_fail("%s: %s", name, hvtrace_last_error());
}

struct hvtrace_daemon_feed *h_small_feed(const char *pages)
{
	struct hvtrace_daemon_feed *f;

	setenv("HVTRACE_DAEMON_FEED_PAGES", pages, 1);
	if (hvtrace_daemon_feed_open(h_dsock, &f))
		t_fail("feed: %s", hvtrace_last_error());
	unsetenv("HVTRACE_DAEMON_FEED_PAGES");
	return f;
}
