// SPDX-License-Identifier: MIT
/*
 * The SIGBUS guard: a library call that touches an area whose file shrank
 * under the mapping fails with -EIO instead of killing the process, while a
 * SIGBUS anywhere else still reaches the handler the program installed
 * before libhvtrace (or the default action).
 */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hvtrace.h>
#include <hvtrace/ring_buffer.h>

#include "hvt_test.h"

static char path[64], other[64];

static void make_area(const char *p)
{
	struct hvt_area_params ap = {
		.nr_cpus = 1, .nr_subbufs = 4, .subbuf_size = 4096,
		.mode = HVT_MODE_CONSUME, .writer_kind = HVT_WRITER_LOOPBACK,
		.clock_id = HVT_CLOCK_MONO_NS, .name = "sigbus",
	};
	uint64_t size = hvt_area_size(1, 4, 4096);
	void *m;
	int fd;

	ap.area_size = size;
	fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
	t_assert(fd >= 0);
	t_assert(ftruncate(fd, (off_t)size) == 0);
	m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	t_assert(m != MAP_FAILED);
	t_ok(hvt_area_format(m, &ap));
	munmap(m, size);
	close(fd);
}

static volatile sig_atomic_t user_handler_ran;
static sigjmp_buf user_env;

static void user_handler(int sig)
{
	user_handler_ran = 1;
	siglongjmp(user_env, 1);
}

/* Child: libhvtrace installed over SIG_DFL; fault outside any area. */
static int child(void)
{
	struct hvtrace_area *a;
	volatile uint8_t *m;
	int fd;

	make_area(path);
	if (hvtrace_area_open(path, 0, 0, 0, &a))
		return 3;
	fd = open(other, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, 4096))
		return 4;
	m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED || ftruncate(fd, 0))
		return 5;
	(void)m[0];
	return 6;	/* survived: the guard swallowed a foreign fault */
}

int main(int argc, char **argv)
{
	struct hvtrace_area *a;
	uint32_t state;
	uint64_t gen;
	int status;
	pid_t pid;

	snprintf(path, sizeof(path), "/dev/shm/hvt-sigbus-%d", getpid());
	snprintf(other, sizeof(other), "/dev/shm/hvt-sigbus-o-%d", getpid());
	if (argc > 3 && !strcmp(argv[1], "child")) {
		/* The parent's file names: it removes them afterwards. */
		snprintf(path, sizeof(path), "%s", argv[2]);
		snprintf(other, sizeof(other), "%s", argv[3]);
		return child();
	}

	/* A program's own SIGBUS handler, installed before libhvtrace. */
	signal(SIGBUS, user_handler);

	make_area(path);
	if (hvtrace_area_open(path, 0, 0, 0, &a))
		t_fail("open: %s", hvtrace_last_error());
	t_eq(hvtrace_area_writer_state(a, &state, &gen), 0);

	/* Shrink the file to nothing: reads of the header now fault. */
	t_assert(truncate(path, 0) == 0);
	t_eq(hvtrace_area_writer_state(a, &state, &gen), -EIO);
	t_assert(strstr(hvtrace_last_error(), "SIGBUS"));
	{
		struct hvtrace_area_info info;

		t_eq(hvtrace_area_get_info(a, &info), -EIO);
	}
	{
		uint8_t page[4096];

		t_eq(hvtrace_cpu_read_page(a, 0, page, sizeof(page), NULL),
		     -EIO);
	}
	/* An owner's stores into the control page, a read position posted
	 * after its page was handed on included. */
	{
		struct hvtrace_read_pos pos = { 0 };
		struct hvtrace_area *o;

		make_area(path);
		t_ok(hvtrace_area_open(path, 0, 0,
				       HVTRACE_OPEN_CONTROL |
					       HVTRACE_OPEN_RESUME |
					       HVTRACE_OPEN_POST_LATER,
				       &o));
		t_assert(truncate(path, 0) == 0);
		t_eq(hvtrace_cpu_post_pos(o, 0, &pos), -EIO);
		t_eq(hvtrace_area_set_tracing(o, true), -EIO);
		t_eq(hvtrace_area_set_event(o, 1, true), -EIO);
		hvtrace_area_close(o);
	}

	/* A fault outside any area still reaches the program's handler. */
	{
		volatile uint8_t *m;
		int fd = open(other, O_RDWR | O_CREAT | O_TRUNC, 0600);

		t_assert(fd >= 0);
		t_assert(ftruncate(fd, 4096) == 0);
		m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
		t_assert(m != MAP_FAILED);
		t_assert(ftruncate(fd, 0) == 0);
		if (!sigsetjmp(user_env, 1))
			(void)m[0];
		t_eq(user_handler_ran, 1);
		munmap((void *)m, 4096);
		close(fd);
	}

	/* A program with no handler of its own: the default action (death
	 * by SIGBUS) still applies to faults outside areas. */
	pid = fork();
	t_assert(pid >= 0);
	if (pid == 0) {
		execl("/proc/self/exe", "reader_sigbus_guard", "child", path,
		      other, (char *)NULL);
		_exit(3);
	}
	t_assert(waitpid(pid, &status, 0) == pid);
	/* The guard must not have swallowed the foreign fault. */
	if (WIFEXITED(status) && WEXITSTATUS(status) == 6)
		t_fail("child survived a SIGBUS outside any area");
#if defined(__SANITIZE_ADDRESS__)
	/* Under ASan the "default" handler is ASan's, which reports the BUS
	 * and aborts (ASAN_OPTIONS=abort_on_error=1) or exits non-zero. */
	if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT) &&
	    !(WIFEXITED(status) && WEXITSTATUS(status) != 0))
		t_fail("child: expected ASan's BUS report, got status 0x%x",
		       status);
#else
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGBUS)
		t_fail("child: expected death by SIGBUS, got status 0x%x",
		       status);
#endif
	unlink(other);

	hvtrace_area_close(a);
	unlink(path);
	unlink(other);
	printf("ok: truncated area gives -EIO; foreign SIGBUS reaches the "
	       "program's handler\n");
	return 0;
}
