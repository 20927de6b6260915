// SPDX-License-Identifier: MIT
/*
 * libhvtrace: texts for libtraceevent's parsers, tried in a forked child
 * first -- the one mechanism every reader uses (the decoder's formats,
 * decode.c; a trace.dat file's headers, formats, kallsyms, printk formats
 * and cmdlines, host/tracedat/read_sandbox.c).
 *
 * libtraceevent's parsers trust their input, and these texts are
 * hostile (a guest's formats, a file from anywhere): a byte that is not
 * text in an array size, or a damaged print fmt, crashes
 * tep_parse_event().  So:
 *
 *   - a text must be what the kernel writes: ASCII, tabs and newlines
 *     (a format has no NUL; the others may end in NULs);
 *   - the texts are then parsed in order in one forked child (no
 *     handlers of the caller's, no core, an alarm for a parse that hangs),
 *     which says which text it takes next through a pipe; a text that
 *     kills the child, or keeps it past HVT_TEP_SANDBOX_MS, is marked bad
 *     and a new child goes on after it.
 *
 * A clean batch costs one fork, however many texts: a folder of 2000
 * formats is one child, not 2000.  A batch with k bad texts costs k + 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event-parse.h>

#include "hvtrace-local.h"

#define HVT_TEP_SANDBOX_MS 10000

long hvt_tep_text_bad_byte(const struct hvt_tep_text *t)
{
	size_t i;

	for (i = 0; i < t->len; i++) {
		unsigned char b = (unsigned char)t->text[i];

		if (b == '\0' && t->kind != HVT_TEP_FORMAT)
			break; /* trailing NULs of kallsyms and the like */
		if (b != '\t' && b != '\n' && (b < 0x20 || b > 0x7e))
			return (long)i;
	}
	return -1;
}

void hvt_tep_apply(struct tep_handle *tep, const struct hvt_tep_text *t,
		   int long_size)
{
	switch (t->kind) {
	case HVT_TEP_HEADER_PAGE:
		tep_parse_header_page(tep, (char *)t->text,
				      (unsigned long)t->len, long_size);
		break;
	case HVT_TEP_FORMAT:
		tep_parse_event(tep, t->text, t->len,
				t->system ? t->system : "");
		break;
	case HVT_TEP_KALLSYMS:
		tep_parse_kallsyms(tep, t->text);
		break;
	case HVT_TEP_PRINTK:
		tep_parse_printk_formats(tep, t->text);
		break;
	case HVT_TEP_CMDLINES:
		tep_parse_saved_cmdlines(tep, t->text);
		break;
	}
}

/* The child: texts [from, n) in order, each announced before it is
 * tried; n once all went through. */
static void __attribute__((noreturn))
tep_child(const struct hvt_tep_text *t, unsigned int from, unsigned int n,
	  int long_size, int fd)
{
	static const int fatal[] = {SIGSEGV, SIGBUS,  SIGILL,
				    SIGFPE,  SIGABRT, SIGALRM};
	const struct rlimit no_core = {0, 0};
	struct tep_handle *tep;
	unsigned int i;

	for (i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
		signal(fatal[i], SIG_DFL);
	setrlimit(RLIMIT_CORE, &no_core);
	tep = tep_alloc();
	if (!tep)
		_exit(2);
	tep_set_loglevel(TEP_LOG_NONE);
	tep_set_file_bigendian(tep, TEP_LITTLE_ENDIAN);
	tep_set_local_bigendian(tep, TEP_LITTLE_ENDIAN);
	tep_set_long_size(tep, long_size);
	for (i = from; i < n; i++) {
		if (write(fd, &i, sizeof(i)) != sizeof(i))
			_exit(2);
		if (!t[i].bad)
			hvt_tep_apply(tep, &t[i], long_size);
	}
	if (write(fd, &n, sizeof(n)) != sizeof(n))
		_exit(2);
	_exit(0);
}

/*
 * Texts [from, n) in a child: the index of the one that killed or hung
 * it, n when all went through, or -errno when no child could run.
 */
static long tep_run(const struct hvt_tep_text *t, unsigned int from,
		    unsigned int n, int long_size)
{
	unsigned int last = from, got;
	struct pollfd pfd;
	int p[2], status, err;
	pid_t pid;
	ssize_t r;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		err = -errno;
		close(p[0]);
		close(p[1]);
		return err;
	}
	if (!pid) {
		close(p[0]);
		tep_child(t, from, n, long_size, p[1]);
	}
	close(p[1]);
	pfd.fd = p[0];
	pfd.events = POLLIN;
	for (;;) {
		int pr = poll(&pfd, 1, HVT_TEP_SANDBOX_MS);

		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0) {
			kill(pid, SIGKILL); /* it hangs on text 'last' */
			break;
		}
		r = read(p[0], &got, sizeof(got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r != sizeof(got))
			break; /* it died on text 'last' */
		if (got >= n) {
			last = n;
			break;
		}
		last = got;
	}
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	/* The child could not even start its work: nothing was checked. */
	if (last < n && WIFEXITED(status) && WEXITSTATUS(status) == 2)
		return -ENOMEM;
	return last;
}

long hvt_tep_sandbox(struct hvt_tep_text *t, unsigned int n, int long_size)
{
	unsigned int i, from = 0, bad = 0;
	long at;

	for (i = 0; i < n; i++)
		if (!t[i].bad && hvt_tep_text_bad_byte(&t[i]) >= 0)
			t[i].bad = true;
	/* Each round goes past one bad text: at most n + 1 children. */
	while (from < n) {
		at = tep_run(t, from, n, long_size);
		if (at < 0)
			return at;
		if ((unsigned int)at >= n)
			break;
		t[at].bad = true;
		from = (unsigned int)at + 1;
	}
	for (i = 0; i < n; i++)
		bad += t[i].bad;
	return bad;
}
