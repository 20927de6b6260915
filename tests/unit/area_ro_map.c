// SPDX-License-Identifier: MIT
/*
 * The host maps a writer's memory read-only: a store through the host's
 * mapping of an area faults.
 *
 * Each probe runs in a child that installs its own SIGSEGV handler (so it
 * also holds under ASan, which would otherwise catch the fault) and
 * stores one byte at an address of the host's view; the handler exits
 * with a code that says whether the fault was a permission fault
 * (SEGV_ACCERR: the page is mapped, but not writable) at exactly that
 * address.  Probed:
 *   - an area opened read-only (flags 0): header, control page, a CPU's
 *     meta page, a sub-buffer, the last byte of the area;
 *   - an area opened as owner (HVTRACE_OPEN_CONTROL): the same
 *     writer-owned parts fault; the control page, the one page the host
 *     writes, takes the store (the probe's positive control: a store
 *     that does not fault is seen as such);
 *   - the mmap-ABI view of a CPU (hvtrace_ring_open_area): its
 *     sub-buffers are the writer's pages, read-only.
 */
#include <fcntl.h>
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
#include "hvtrace-local.h"

#define NR_CPUS 2
#define NR	4
#define SUBBUF	4096

enum { PROBE_STORED = 10, PROBE_ACCERR, PROBE_OTHER_FAULT };

static volatile uint8_t *probe_addr;

static void probe_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	_exit(si->si_code == SEGV_ACCERR && si->si_addr == probe_addr
		      ? PROBE_ACCERR
		      : PROBE_OTHER_FAULT);
}

/* Store one byte at @p in a child; the child's exit code. */
static int probe_store(const void *p)
{
	struct sigaction sa;
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	t_assert(pid >= 0);
	if (!pid) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = probe_segv;
		sa.sa_flags = SA_SIGINFO;
		sigaction(SIGSEGV, &sa, NULL);
		sigaction(SIGBUS, &sa, NULL);
		probe_addr = (volatile uint8_t *)(uintptr_t)p;
		/* The same value back: a store that works changes nothing. */
		*probe_addr = *probe_addr;
		_exit(PROBE_STORED);
	}
	t_assert(waitpid(pid, &status, 0) == pid);
	if (!WIFEXITED(status))
		t_fail("probe child died with signal %d",
		       WIFSIGNALED(status) ? WTERMSIG(status) : -1);
	return WEXITSTATUS(status);
}

static void expect_fault(const char *what, const void *p)
{
	int r = probe_store(p);

	if (r != PROBE_ACCERR)
		t_fail("%s: a store through the host's mapping %s", what,
		       r == PROBE_STORED ? "went through"
					 : "faulted, but not as a permission "
					   "fault at that address");
	printf("  %-44s store faults (SEGV_ACCERR)\n", what);
}

static void probe_area(struct hvtrace_area *a, const char *how)
{
	char what[96];

	snprintf(what, sizeof(what), "%s: header", how);
	expect_fault(what, a->ro);
	snprintf(what, sizeof(what), "%s: cpu 0 meta", how);
	expect_fault(what, hvt_area_cpu_meta(a, 0));
	snprintf(what, sizeof(what), "%s: cpu 1 sub-buffer 2", how);
	expect_fault(what, hvt_area_cpu_pages(a, 1) + 2 * SUBBUF + 100);
	snprintf(what, sizeof(what), "%s: last byte", how);
	expect_fault(what, a->ro + a->size - 1);
}

int main(void)
{
	struct hvt_area_params p = {
		.nr_cpus = NR_CPUS,
		.nr_subbufs = NR,
		.subbuf_size = SUBBUF,
		.mode = HVT_MODE_CONSUME,
		.writer_kind = HVT_WRITER_LOOPBACK,
		.clock_id = HVT_CLOCK_MONO_NS,
		.name = "ro-map",
	};
	struct hvtrace_ring *ring;
	struct hvtrace_area *a;
	char path[64];
	uint64_t size;
	uint8_t *mem;
	int fd;

	snprintf(path, sizeof(path), "/dev/shm/hvt-ro-map-%d", getpid());
	size = hvt_area_size(NR_CPUS, NR, SUBBUF);
	p.area_size = size;
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	t_assert(fd >= 0);
	t_ok(ftruncate(fd, (off_t)size) ? -errno : 0);
	mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	t_assert(mem != MAP_FAILED);
	close(fd);
	t_ok(hvt_area_format(mem, &p));

	printf("read-only open:\n");
	if (hvtrace_area_open(path, 0, 0, 0, &a))
		t_fail("open: %s", hvtrace_last_error());
	probe_area(a, "read-only");
	expect_fault("read-only: control page", a->ro + HVT_CONTROL_OFFSET);
	hvtrace_area_close(a);

	printf("owner open:\n");
	if (hvtrace_area_open(path, 0, 0, HVTRACE_OPEN_CONTROL, &a))
		t_fail("open as owner: %s", hvtrace_last_error());
	probe_area(a, "owner");
	if (probe_store(a->ro + HVT_CONTROL_OFFSET + 0x400) != PROBE_STORED)
		t_fail("owner: the control page is not writable");
	printf("  %-44s store works (the host's page)\n",
	       "owner: control page");

	printf("mmap-ABI view:\n");
	t_ok(hvtrace_ring_open_area(a, 0, &ring));
	expect_fault("ring view: cpu 0 sub-buffer 1",
		     hvtrace_ring_subbuf(ring, 1));
	hvtrace_ring_close(ring);
	hvtrace_area_close(a);

	munmap(mem, size);
	unlink(path);
	printf("PASS\n");
	return 0;
}
