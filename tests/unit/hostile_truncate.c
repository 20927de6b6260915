// SPDX-License-Identifier: MIT
/*
 * A hostile (or careless) writer truncates the area file while the host
 * has it mapped.  Touching a mapped page beyond the new end of file raises
 * SIGBUS, which would kill the whole host process (a daemon serving many
 * areas).  The reader must survive: calls on the CPUs that are gone fail
 * with an error (or report nothing) and count an error, and the CPUs still
 * inside the file keep returning their events.
 *
 * The reader runs in a child process so that a SIGBUS is reported as a
 * test failure instead of killing the test.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hvtrace.h>
#include <hvtrace/page.h>
#include <hvtrace/ring_buffer.h>

#include "hvt_test.h"
#include "../foundation/fnd.h"

#define NR_CPUS		2
#define NR_SUBBUFS	8
#define SUBBUF		4096

static uint64_t count_events(const uint8_t *page)
{
	struct hvt_page_iter it;
	uint64_t n = 0;
	int ret;
	uint32_t size = (uint32_t)(hvt_rd64(page + 8) & HVT_COMMIT_SIZE_MASK);

	hvt_page_iter_init(&it, page + 16, size, hvt_rd64(page));
	while ((ret = hvt_page_next(&it)) > 0)
		n += ret == HVT_ITEM_DATA;
	return n;
}

/* Read @cpu until nothing is new; returns events or the error. */
static long long drain(struct hvtrace_area *a, int cpu)
{
	static uint8_t page[SUBBUF];
	long long n = 0;
	int ret, i;

	for (i = 0; i < 1000; i++) {
		ret = hvtrace_cpu_read_page(a, cpu, page, sizeof(page), NULL);
		if (ret < 0)
			return ret;
		if (ret == 0)
			return n;
		n += (long long)count_events(page);
	}
	t_fail("cpu %d: the reader never ran dry", cpu);
}

static void reader(const char *path, uint64_t cpu1_off, uint64_t written0)
{
	struct hvtrace_cpu_stats st;
	struct hvtrace_area *a;
	long long got;

	if (hvtrace_area_open(path, 0, 0, 0, &a))
		t_fail("open: %s", hvtrace_last_error());

	/* The writer cuts the file just before CPU 1's section. */
	t_ok(truncate(path, (off_t)cpu1_off) ? -errno : 0);
	got = drain(a, 1);
	printf("cpu 1 after the cut: %lld (%s)\n", got,
	       got < 0 ? hvtrace_last_error() : "no error");
	t_assert(got <= 0);
	t_ok(hvtrace_cpu_get_stats(a, 1, &st));
	if (got == 0 && st.errors == 0)
		t_fail("cpu 1 is gone but neither an error was returned nor "
		       "counted");
	/* CPU 0 is still inside the file: all of it reads back. */
	got = drain(a, 0);
	t_eq(got, (long long)written0);

	/* Now everything goes. */
	t_ok(truncate(path, 0) ? -errno : 0);
	got = drain(a, 0);
	t_assert(got <= 0);
	hvtrace_cpu_get_stats(a, 0, &st);
	hvtrace_cpu_get_stats(a, 1, &st);
	hvtrace_area_close(a);
	exit(0);
}

int main(void)
{
	struct hvt_rb_cpu cb[NR_CPUS];
	uint64_t size, written[NR_CPUS] = { 0 }, cpu1_off;
	char path[64];
	uint8_t *area;
	int cpu, status;
	pid_t pid;

	fnd_need_shm();
	snprintf(path, sizeof(path), "/dev/shm/hvt-truncate-%d", getpid());
	area = fnd_area_create(path, NR_CPUS, NR_SUBBUFS, SUBBUF,
			       HVT_MODE_CONSUME, &size);
	if (!area)
		t_fail("cannot create %s: %s", path, strerror(errno));
	for (cpu = 0; cpu < NR_CPUS; cpu++) {
		t_ok(hvt_area_cpu(area, size, (uint32_t)cpu, &cb[cpu]));
		for (int i = 0; i < 200; i++)
			t_eq(fnd_write(&cb[cpu], written[cpu]++), 0);
	}
	cpu1_off = (uint64_t)((uint8_t *)fnd_meta(area, 1) - area);
	munmap(area, size);

	fflush(stdout);
	pid = fork();
	t_assert(pid >= 0);
	if (pid == 0)
		reader(path, cpu1_off, written[0]);
	t_assert(waitpid(pid, &status, 0) == pid);
	unlink(path);
	if (WIFSIGNALED(status))
		t_fail("the reader was killed by signal %d (%s) after the area "
		       "file was truncated under its mapping; it must check "
		       "the file size or handle SIGBUS",
		       WTERMSIG(status), strsignal(WTERMSIG(status)));
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		t_fail("the reader failed (exit %d)", WEXITSTATUS(status));
	printf("ok: the reader survived the truncation of its area file\n");
	return 0;
}
