// SPDX-License-Identifier: MIT
/*
 * End-to-end test helpers (see e2e.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event-parse.h>

#include <hvtrace.h>

#include "e2e.h"

struct hvtrace_daemon *e_dc;
char e_launcher[600];
static char e_image[600];
static struct e_guest *e_guests[E_MAX_GUESTS];
static struct e_seq *e_seqs[E_MAX_GUESTS];
static unsigned int e_nr_guests;
static pid_t e_owner;
static pid_t e_daemon; /* an hvtraced started by e_daemon_restart() */
static char e_daemon_args[512];

static void e_cleanup(void)
{
	unsigned int i;

	if (getpid() != e_owner)
		return;
	for (i = e_nr_guests; i-- > 0;)
		e_guest_stop(e_guests[i]);
	if (e_daemon > 0) {
		int st;

		kill(e_daemon, SIGTERM);
		waitpid(e_daemon, &st, 0);
	}
	/* The launcher's lock in the runtime folder (the harness removes
	 * the rest). */
	if (h_dir[0] && !getenv("HVT_TEST_KEEP")) {
		char lock[128];

		snprintf(lock, sizeof(lock), "%s/run/.lock", h_dir);
		unlink(lock);
	}
}

void e_init(const char *daemon_args)
{
	char args[512];

	if (access("/usr/bin/qemu-system-x86_64", X_OK))
		t_skip("qemu-system-x86_64 is not installed (make deps)");
	/* Areas stay in /dev/shm (memory), named after this test's pid. */
	snprintf(args, sizeof(args), "--shm-dir /dev/shm%s%s",
		 daemon_args ? " " : "", daemon_args ? daemon_args : "");
	snprintf(e_daemon_args, sizeof(e_daemon_args), "%s", args);
	e_dc = h_start(args);
	e_owner = getpid();
	atexit(e_cleanup);
	snprintf(e_launcher, sizeof(e_launcher),
		 "%s/qemu-scripts/hvtrace-guest", HVT_SRCTREE);
	snprintf(e_image, sizeof(e_image), "%s/qemu-scripts/guest.cpio.gz",
		 h_objtree);
	if (access(e_image, R_OK))
		t_fail("%s is not built: make O=%s guest-image", e_image,
		       h_objtree);
	{
		char run[128];

		snprintf(run, sizeof(run), "%s/run", h_dir);
		setenv("HVT_RUNDIR", run, 1);
	}
	setenv("HVT_SHM_DIR", "/dev/shm", 1);
	setenv("HVT_OBJTREE", h_objtree, 1);
}

bool e_guest_alive(const struct e_guest *g)
{
	char path[400], buf[32];
	int fd, pid;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/run/%s/qemu.pid", h_dir, g->name);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	pid = atoi(buf);
	return pid > 0 && !kill(pid, 0);
}

void e_remote(struct e_guest *g, struct hvt_remote_rec *rec)
{
	h_remote(e_dc, g->name, rec);
}

void e_guest_start(struct e_guest *g, const char *suffix, const char *run,
		   const char *const *extra)
{
	char log[300];
	const char *argv[64];
	struct hvt_remote_rec rec;
	uint64_t deadline;
	int argc = 0, st, k;
	pid_t pid;

	memset(g, 0, sizeof(*g));
	snprintf(g->name, sizeof(g->name), "e%d-%s", (int)(getpid() % 100000),
		 suffix);
	snprintf(g->console, sizeof(g->console), "%s/%s.console.log", h_dir,
		 g->name);
	snprintf(g->area, sizeof(g->area), "/dev/shm/hvtrace-%s", g->name);
	snprintf(log, sizeof(log), "%s/%s.launcher.log", h_dir, g->name);
	argv[argc++] = e_launcher;
	argv[argc++] = "start";
	argv[argc++] = "--name";
	argv[argc++] = g->name;
	argv[argc++] = "--initrd";
	argv[argc++] = e_image;
	argv[argc++] = "--log";
	argv[argc++] = g->console;
	argv[argc++] = "--foreground";
	argv[argc++] = "--quiet";
	if (run) {
		argv[argc++] = "--run";
		argv[argc++] = run;
	}
	for (k = 0; extra && extra[k] && argc < 62; k++) {
		if (!strcmp(extra[k], "--keep-area"))
			g->keep_area = true;
		argv[argc++] = extra[k];
	}
	argv[argc] = NULL;
	if (e_nr_guests == E_MAX_GUESTS)
		t_fail("at most %d guests", E_MAX_GUESTS);
	e_guests[e_nr_guests++] = g;
	pid = fork();
	if (pid < 0)
		t_fail("fork: %s", strerror(errno));
	if (!pid) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		fd = open("/dev/null", O_RDONLY);
		if (fd >= 0)
			dup2(fd, 0);
		execv(e_launcher, (char *const *)argv);
		fprintf(stderr, "cannot run %s: %s\n", e_launcher,
			strerror(errno));
		_exit(127);
	}
	g->launcher = pid;

	/* Ready: the console says so (bounded: 150 s under TCG). */
	deadline = h_now_ns() + 150000000000ull;
	while (!h_file_has(g->console, "hvtrace: guest ready")) {
		if (waitpid(pid, &st, WNOHANG) == pid) {
			g->launcher = 0;
			t_fail("guest %s: the launcher exited (status %d) "
			       "before the guest was ready (see %s)",
			       g->name, WIFEXITED(st) ? WEXITSTATUS(st) : -1,
			       log);
		}
		if (h_now_ns() > deadline)
			t_fail("guest %s: not ready within 150 s", g->name);
		usleep(20000);
	}
	/* The agent's session (it started before "guest ready"). */
	e_guest_attach(g);
	h_remote(e_dc, g->name, &rec);
	printf("guest %s up: %u CPU buffers of %u x %u bytes\n", g->name,
	       rec.nr_cpus, rec.nr_subbufs, rec.subbuf_size);
	fflush(stdout);
}

void e_guest_stop(struct e_guest *g)
{
	char cmd[1200], text[512];
	int st, k;

	if (!g->launcher)
		return;
	h_result(e_dc, HVT_MSG_DETACH, 0, 0, g->name, text, sizeof(text));
	snprintf(cmd, sizeof(cmd), "%s stop %s --timeout 20 >/dev/null 2>&1",
		 e_launcher, g->name);
	if (system(cmd))
		fprintf(stderr, "warning: could not stop guest %s\n", g->name);
	for (k = 0; k < 3000; k++) {
		if (waitpid(g->launcher, &st, WNOHANG) == g->launcher)
			break;
		usleep(10000);
	}
	if (k == 3000) {
		kill(g->launcher, SIGKILL);
		waitpid(g->launcher, &st, 0);
	}
	g->launcher = 0;
	snprintf(cmd, sizeof(cmd), "%s cleanup %s%s >/dev/null 2>&1",
		 e_launcher, g->keep_area ? "--areas " : "", g->name);
	if (system(cmd))
		fprintf(stderr, "warning: could not clean up guest %s\n",
			g->name);
}

const char *e_console_line(struct e_guest *g, const char *prefix,
			   const char *fail_prefix, int timeout_ms)
{
	static char line[4096];
	uint64_t deadline = h_now_ns() + (uint64_t)timeout_ms * 1000000;
	size_t plen = strlen(prefix);

	for (;;) {
		FILE *f = fopen(g->console, "r");

		if (f && !fseek(f, g->con_off, SEEK_SET)) {
			while (fgets(line, sizeof(line), f)) {
				size_t len = strlen(line);

				if (!len || line[len - 1] != '\n')
					break; /* not complete yet */
				g->con_off += (long)len;
				while (len && (line[len - 1] == '\n' ||
					       line[len - 1] == '\r'))
					line[--len] = '\0';
				if (fail_prefix &&
				    !strncmp(line, fail_prefix,
					     strlen(fail_prefix))) {
					fclose(f);
					t_fail("guest %s: %s", g->name, line);
				}
				if (!strncmp(line, prefix, plen)) {
					fclose(f);
					return line + plen;
				}
			}
		}
		if (f)
			fclose(f);
		if (!timeout_ms)
			return NULL;
		if (h_now_ns() > deadline)
			t_fail("guest %s: no console line '%s...' within %d ms",
			       g->name, prefix, timeout_ms);
		usleep(20000);
	}
}

/* Does user_events_status text @t list @name (a line "NAME[ # ...]")? */
static bool e_status_has(const char *t, const char *name)
{
	size_t n = strlen(name);
	const char *p;

	for (p = t; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, name, n) &&
		    (p[n] == '\n' || p[n] == ' ' || !p[n]))
			return true;
	return false;
}

void e_wait_event(struct e_guest *g, const char *name, int ms)
{
	int k;

	for (k = 0; k < ms / 20 + 1; k++) {
		char *t = h_text(e_dc, g->remote, HVT_TEXT_STATUS);
		bool found = e_status_has(t, name);

		free(t);
		if (found)
			return;
		usleep(20000);
	}
	t_fail("guest %s: event %s not registered within %d ms", g->name, name,
	       ms);
}

void e_enable(struct e_guest *g, const char *event, bool on)
{
	struct hvt_msg m, r;

	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_ENABLE;
	m.chan = g->remote;
	m.u.arg.arg = on;
	m.u.arg.s.ptr = event;
	m.u.arg.s.len = (uint32_t)strlen(event);
	/* Pages that come meanwhile go to the record checkers. */
	t_ok(hvtrace_daemon_call(e_dc, &m, &r, 10000, e_seq_dispatch, NULL));
	if (r.u.result.status)
		t_fail("%s %s: %.*s", on ? "enable" : "disable", event,
		       (int)r.u.result.text.len, r.u.result.text.ptr);
}

uint32_t e_subscribe(struct e_guest *g)
{
	struct hvt_msg m, r;

	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_SUBSCRIBE;
	m.chan = g->remote;
	m.u.subscribe.cpu = -1;
	t_ok(hvtrace_daemon_call(e_dc, &m, &r, 10000, NULL, NULL));
	if (r.type != HVT_MSG_SUBSCRIBE || r.u.result.status)
		t_fail("subscribe to %s: %.*s", g->name,
		       (int)r.u.result.text.len, r.u.result.text.ptr);
	return r.u.result.id;
}

void e_drain(struct e_guest *g, void (*cb)(void *arg, const struct hvt_msg *m),
	     void *arg)
{
	struct hvt_msg m, r;

	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_DRAIN;
	m.chan = g->remote;
	t_ok(hvtrace_daemon_call(e_dc, &m, &r, 30000, cb, arg));
	if (r.type != HVT_MSG_DRAIN || r.u.result.status)
		t_fail("drain %s: %.*s", g->name, (int)r.u.result.text.len,
		       r.u.result.text.ptr);
}

unsigned int e_stats(struct e_guest *g, struct hvt_m_stats *st,
		     unsigned int max)
{
	struct hvt_msg m, r;
	unsigned int n = 0;
	int ret;

	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_STATS;
	m.chan = g->remote;
	ret = hvtrace_daemon_call(e_dc, &m, &r, 10000, e_seq_dispatch, NULL);
	while (!ret) {
		if (r.type != HVT_MSG_STATS)
			t_fail("STATS answered with %s",
			       hvt_msg_type_name(r.type));
		if (r.u.stats.status)
			t_fail("STATS of CPU %u: %s", r.u.stats.cpu,
			       strerror(-r.u.stats.status));
		if (r.u.stats.cpu < max) {
			st[r.u.stats.cpu] = r.u.stats;
			if (r.u.stats.cpu + 1 > n)
				n = r.u.stats.cpu + 1;
		}
		if (!(r.flags & HVT_PF_MORE))
			return n;
		for (;;) {
			ret = hvtrace_daemon_recv(e_dc, &r, 10000);
			if (ret != 1 || r.req == m.req)
				break;
			e_seq_dispatch(NULL, &r);
		}
		ret = ret == 1 ? 0 : -1;
	}
	t_fail("STATS: %s", hvtrace_last_error());
}

/* --- hvt_seq records ----------------------------------------------------- */

void e_seq_init(struct e_seq *s, struct e_guest *g, unsigned int threads,
		uint32_t max_seq)
{
	struct tep_event *ev;
	unsigned int t;

	memset(s, 0, sizeof(*s));
	if (threads > E_MAX_THREADS)
		t_fail("at most %d threads", E_MAX_THREADS);
	s->threads = threads;
	s->max_seq = max_seq;
	snprintf(s->tag, sizeof(s->tag), "%s", g->name);
	for (t = 0; t < threads; t++) {
		s->seen[t] = calloc(max_seq, 1);
		s->ts[t] = calloc(max_seq, sizeof(uint64_t));
		s->cpu[t] = calloc(max_seq, 1);
		if (!s->seen[t] || !s->ts[t] || !s->cpu[t])
			t_fail("out of memory");
	}
	s->tep = h_tep(e_dc, g->remote);
	ev = tep_find_event_by_name(s->tep, "user_events", "hvt_seq");
	if (!ev)
		t_fail("no hvt_seq format from %s", g->name);
	s->id = ev->id;
	for (t = 0; t < E_MAX_GUESTS && e_seqs[t]; t++)
		;
	if (t == E_MAX_GUESTS)
		t_fail("at most %d record checkers at once", E_MAX_GUESTS);
	e_seqs[t] = s;
	/* Last: pages may come at once, and only e_seq_dispatch() on this
	 * connection takes them (other calls would drop them). */
	s->sub = e_subscribe(g);
}

void e_seq_free(struct e_seq *s)
{
	unsigned int t;

	for (t = 0; t < s->threads; t++) {
		free(s->seen[t]);
		free(s->ts[t]);
		free(s->cpu[t]);
	}
	for (t = 0; t < E_MAX_GUESTS; t++)
		if (e_seqs[t] == s)
			e_seqs[t] = NULL;
	tep_free(s->tep);
	s->tep = NULL;
}

static void e_seq_record(void *arg, struct tep_handle *tep,
			 struct tep_event *ev, struct tep_record *rec)
{
	struct e_seq *s = arg;
	unsigned long long thread, seq, val;
	char expect[128];
	const char *tag;
	int len, k, cpu = rec->cpu;

	(void)tep;
	if (!ev || ev->id != s->id) {
		s->other++;
		return;
	}
	if (tep_get_field_val(NULL, ev, "thread", rec, &thread, 0) ||
	    tep_get_field_val(NULL, ev, "seq", rec, &seq, 0) ||
	    tep_get_field_val(NULL, ev, "val", rec, &val, 0))
		t_fail("libtraceevent cannot read thread/seq/val");
	if (thread >= s->threads)
		t_fail("record of thread %llu: only %u threads write", thread,
		       s->threads);
	if (seq >= s->max_seq)
		t_fail("thread %llu seq %llu: beyond the %u expected", thread,
		       seq, s->max_seq);
	if (val != seq * 7 + thread * 1000003)
		t_fail("thread %llu seq %llu: val %llu, expected %llu", thread,
		       seq, val, seq * 7 + thread * 1000003);
	tag = tep_get_field_raw(NULL, ev, "tag", rec, &len, 0);
	k = snprintf(expect, sizeof(expect), "%s", s->tag);
	for (unsigned int x = 0; x < seq % 5; x++)
		expect[k++] = '+';
	expect[k] = '\0';
	if (!tag || len != k + 1 || memcmp(tag, expect, (size_t)k + 1))
		t_fail("thread %llu seq %llu: tag '%.*s', expected '%s' (an "
		       "event of another guest?)",
		       thread, seq, tag ? len : 0, tag ? tag : "", expect);
	if (cpu < 0 || cpu >= 8)
		t_fail("record from CPU %d", cpu);
	if (s->seen[thread][seq]++)
		t_fail("thread %llu seq %llu arrived twice", thread, seq);
	if (seq < s->last[thread][cpu])
		t_fail("thread %llu: seq %llu after %u on CPU %d (out of "
		       "order)",
		       thread, seq, s->last[thread][cpu] - 1, cpu);
	s->last[thread][cpu] = (uint32_t)seq + 1;
	s->ts[thread][seq] = rec->ts;
	s->cpu[thread][seq] = (uint8_t)cpu;
	s->per_cpu[cpu]++;
	s->n++;
}

void e_seq_msg(void *arg, const struct hvt_msg *m)
{
	struct e_seq *s = arg;

	if (m->type != HVT_MSG_PAGE || m->req != s->sub)
		return;
	s->pages++;
	s->lost += m->u.page.lost_events;
	if (m->u.page.dropped_events > s->dropped)
		s->dropped = m->u.page.dropped_events;
	h_decode_page(s->tep, &m->u.page, e_seq_record, s);
}

void (*e_page_hook)(void *arg, const struct hvt_msg *m);
void *e_page_hook_arg;

void e_seq_dispatch(void *arg, const struct hvt_msg *m)
{
	unsigned int i;

	(void)arg;
	for (i = 0; i < E_MAX_GUESTS; i++)
		if (e_seqs[i])
			e_seq_msg(e_seqs[i], m);
	if (e_page_hook)
		e_page_hook(e_page_hook_arg, m);
}

void e_seq_collect(struct e_seq *s, int ms, uint64_t until)
{
	uint64_t deadline = h_now_ns() + (uint64_t)ms * 1000000;
	struct hvt_msg m;

	while (h_now_ns() < deadline && (!until || !s || s->n < until)) {
		int ret = hvtrace_daemon_recv(e_dc, &m, 100);

		if (ret < 0)
			t_fail("hvtraced: %s", hvtrace_last_error());
		if (ret == 1)
			e_seq_dispatch(NULL, &m);
	}
}

void e_seq_check_exact(const struct e_seq *s, uint32_t count)
{
	unsigned int t;
	uint32_t q;

	for (t = 0; t < s->threads; t++) {
		for (q = 0; q < s->max_seq; q++) {
			if (q < count && s->seen[t][q] != 1)
				t_fail("thread %u seq %u arrived %u times", t,
				       q, s->seen[t][q]);
			if (q >= count && s->seen[t][q])
				t_fail("thread %u seq %u: never written", t, q);
			if (q && q < count && s->ts[t][q] < s->ts[t][q - 1])
				t_fail("thread %u: seq %u (CPU %u, ts %llu) "
				       "is older than seq %u (CPU %u, ts "
				       "%llu)",
				       t, q, s->cpu[t][q],
				       (unsigned long long)s->ts[t][q], q - 1,
				       s->cpu[t][q - 1],
				       (unsigned long long)s->ts[t][q - 1]);
		}
	}
	if (s->n != (uint64_t)count * s->threads)
		t_fail("%llu records, expected %llu", (unsigned long long)s->n,
		       (unsigned long long)count * s->threads);
}

const char *e_seq_until_done(struct e_seq *s, struct e_guest *g, int ms)
{
	static char done[512];
	uint64_t deadline = h_now_ns() + (uint64_t)ms * 1000000;
	const char *l;

	while (!(l = e_console_line(g, "ue_seq: done ", "ue_seq: error", 0))) {
		if (h_now_ns() > deadline)
			t_fail("guest %s: the workload did not finish within "
			       "%d ms",
			       g->name, ms);
		e_seq_collect(s, 200, 0);
	}
	snprintf(done, sizeof(done), "%s", l);
	e_drain(g, e_seq_dispatch, NULL);
	return done;
}

unsigned long long e_kv(const char *line, const char *key)
{
	char k[64];
	const char *p;

	snprintf(k, sizeof(k), "%s=", key);
	for (p = line; (p = strstr(p, k)); p++)
		if (p == line || p[-1] == ' ' || p[-1] == ',')
			return strtoull(p + strlen(k), NULL, 10);
	t_fail("no %s= in '%s'", key, line);
}

pid_t e_daemon_pid(void)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(hvtrace_daemon_fd(e_dc), SOL_SOCKET, SO_PEERCRED, &cred,
		       &len) ||
	    cred.pid <= 0)
		t_fail("cannot tell hvtraced's pid: %s", strerror(errno));
	return cred.pid;
}

void e_daemon_stop(void (*cb)(void *arg, const struct hvt_msg *m),
		   void *arg)
{
	pid_t old = e_daemon_pid();
	bool gone = false, eof = false;
	struct hvt_msg m;
	int st, k, ret;

	if (kill(old, SIGTERM))
		t_fail("kill hvtraced %d: %s", (int)old, strerror(errno));
	/* It is our child (the harness's or ours): reap it, and take what it
	 * sends until its end of the socket closes. */
	for (k = 0; k < 1000 && !(gone && eof); k++) {
		if (!gone && (waitpid(old, &st, WNOHANG) == old || kill(old, 0)))
			gone = true;
		while (!eof) {
			ret = hvtrace_daemon_recv(e_dc, &m, 10);
			if (ret < 0)
				eof = true;
			else if (ret == 0)
				break;
			else if (cb)
				cb(arg, &m);
		}
		if (!gone)
			usleep(1000);
	}
	if (!gone)
		t_fail("hvtraced %d did not stop within 10 s", (int)old);
	if (!eof)
		t_fail("hvtraced %d stopped, but its socket stays open",
		       (int)old);
	hvtrace_daemon_close(e_dc);
	e_dc = NULL;
	if (old == e_daemon)
		e_daemon = 0;
	printf("stopped hvtraced %d\n", (int)old);
}

void e_daemon_restart(const char *args)
{
	e_daemon_stop(e_seq_dispatch, NULL);
	e_daemon_start(args);
}

void e_daemon_start(const char *args)
{
	char bin[700], log[300], run[300], *argv[24], *copy, *tok, *save;
	int argc = 0, k, fd;
	pid_t pid;

	snprintf(bin, sizeof(bin), "%s/bin/hvtraced", h_objtree);
	snprintf(log, sizeof(log), "%s/hvtraced.log", h_dir);
	snprintf(run, sizeof(run), "%s/run", h_dir);
	argv[argc++] = bin;
	argv[argc++] = "--foreground";
	argv[argc++] = "--socket";
	argv[argc++] = h_dsock;
	argv[argc++] = "--run-dir";
	argv[argc++] = run;
	argv[argc++] = "--verbose";
	copy = strdup(args ? args : e_daemon_args);
	for (tok = strtok_r(copy, " ", &save); tok && argc < 23;
	     tok = strtok_r(NULL, " ", &save))
		argv[argc++] = tok;
	argv[argc] = NULL;
	pid = fork();
	if (pid < 0)
		t_fail("fork: %s", strerror(errno));
	if (!pid) {
		fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execv(bin, argv);
		_exit(127);
	}
	free(copy);
	e_daemon = pid;
	for (k = 0; k < 1000; k++) {
		if (!access(h_dsock, F_OK) && !hvtrace_daemon_open(h_dsock, &e_dc))
			break;
		usleep(10000);
	}
	if (!e_dc)
		t_fail("the new hvtraced did not start: %s",
		       hvtrace_last_error());
	printf("started hvtraced %d\n", (int)pid);
}

void e_guest_attach(struct e_guest *g)
{
	struct hvt_remote_rec rec;
	char text[512];
	int k, ret;

	/* After e_daemon_restart() the new hvtraced may have re-attached
	 * the guest from its state file already: that is the same state. */
	ret = h_result(e_dc, HVT_MSG_ATTACH, 0, 0, g->name, text, sizeof(text));
	if (ret && ret != -EEXIST)
		t_fail("attach %s: %s", g->name, text);
	for (k = 0; k < 3000; k++) {
		h_remote(e_dc, g->name, &rec);
		if (rec.state == HVT_REMOTE_CONNECTED && rec.nr_cpus)
			break;
		usleep(10000);
	}
	if (k == 3000)
		t_fail("guest %s: its agent did not connect within 30 s",
		       g->name);
	g->remote = rec.id;
}

uint64_t e_to_host(struct e_guest *g, uint64_t ts, uint64_t *err)
{
	struct hvt_msg m, r;
	uint8_t buf[8];

	hvt_msg_put_u64(buf, ts);
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_TO_HOST;
	m.chan = g->remote;
	m.u.to_host.ts.ptr = buf;
	m.u.to_host.ts.count = 1;
	t_ok(hvtrace_daemon_call(e_dc, &m, &r, 10000, e_seq_dispatch, NULL));
	t_eq(r.type, HVT_MSG_TO_HOST);
	if (err)
		*err = r.u.to_host_reply.err_ns;
	return hvt_msg_u64_at(&r.u.to_host_reply.ns, 0);
}
