// SPDX-License-Identifier: MIT
/*
 * Opening and formatting areas with libhvtrace-guest: errors say what is
 * wrong (missing file, unformatted area, every kind of invalid header,
 * a header larger than the file, a clock user space cannot produce, a
 * bad spec); "PATH@OFFSET+SIZE" specs and $HVTRACE_AREA; descriptors with
 * and without a separate control descriptor; the control page and the
 * header are mapped read-only (a write to them faults); hvtg_area_create()
 * defaults come from the configuration; hvtg_clock_describe() gives a
 * consistent frequency and conversion.
 */
#include <signal.h>
#include <sys/wait.h>

#include "../stress/guest_harness.h"

#if IS_ENABLED(CONFIG_HVT_GUEST)

#include "hvtg_internal.h"

static char dir[64];

static void path_of(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s", dir, name);
}

/* Also run when a check fails (t_fail() exits). */
static void cleanup(void)
{
	char p[128];

	path_of(p, sizeof(p), "area");
	unlink(p);
	rmdir(dir);
}

/* A formatted area file of @size bytes at @offset in it. */
static void make_area(const char *p, uint64_t offset, uint32_t clock_id)
{
	struct hvtg_format f = { 0 };
	uint64_t size = hvt_area_size(2, 4, 4096);
	uint8_t *m;
	int fd;

	f.nr_cpus = 2;
	f.nr_subbufs = 4;
	f.subbuf_size = 4096;
	f.clock_id = clock_id;
	fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
	t_assert(fd >= 0);
	t_ok(ftruncate(fd, (off_t)(offset + size)));
	m = mmap(NULL, offset + size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 0);
	t_assert(m != MAP_FAILED);
	t_ok(hvtg_area_format(m + offset, size, &f));
	munmap(m, offset + size);
	close(fd);
}

/* Rewrite one header field of the area file and expect -EINVAL with
 * @why in the message. */
static void bad_header(const char *p, size_t off, const void *val, size_t n,
		       const char *why)
{
	struct hvtg_area *a = NULL;
	uint8_t hdr[64];
	int fd, ret;

	make_area(p, 0, HVT_CLOCK_COUNTER);
	fd = open(p, O_RDWR);
	t_assert(fd >= 0);
	t_assert(pread(fd, hdr, n, (off_t)off) == (ssize_t)n);
	t_assert(pwrite(fd, val, n, (off_t)off) == (ssize_t)n);
	close(fd);
	ret = hvtg_area_open(p, &a);
	if (ret != -EINVAL || !strstr(hvtg_last_error(), why))
		t_fail("header field at %#zx: got %d \"%s\", expected -EINVAL "
		       "naming \"%s\"",
		       off, ret, hvtg_last_error(), why);
	t_assert(a == NULL);
}

/* In a child: store to @addr; it must die of SIGSEGV. */
static void must_fault(volatile uint64_t *addr, const char *what)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		/* The default action, even under a sanitizer's handler. */
		signal(SIGSEGV, SIG_DFL);
		*addr = 0x4141414141414141ull;
		_exit(0);
	}
	t_assert(pid > 0 && waitpid(pid, &status, 0) == pid);
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGSEGV)
		t_fail("a write to the %s did not fault (status %#x)", what,
		       status);
}

int main(void)
{
	struct hvtg_area_info info;
	struct hvtg_area *a;
	struct hvtg_clock clk;
	char p[128], spec[160];
	uint32_t v32;
	uint64_t v64;
	int fd;

	snprintf(dir, sizeof(dir), "/tmp/hvtg-open.XXXXXX");
	t_assert(mkdtemp(dir));
	atexit(cleanup);
	path_of(p, sizeof(p), "area");

	/* Missing file: -ENOENT naming it. */
	t_eq(hvtg_area_open("/nonexistent/hvtg-area", &a), -ENOENT);
	t_assert(strstr(hvtg_last_error(), "/nonexistent/hvtg-area"));

	/* An empty (unformatted) file of a plausible size: -EAGAIN. */
	fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
	t_assert(fd >= 0);
	t_ok(ftruncate(fd, (off_t)hvt_area_size(2, 4, 4096)));
	close(fd);
	t_eq(hvtg_area_open(p, &a), -EAGAIN);
	t_assert(strstr(hvtg_last_error(), "not formatted"));

	/* Too small to hold anything. */
	fd = open(p, O_RDWR | O_TRUNC);
	t_ok(ftruncate(fd, 4096));
	close(fd);
	t_eq(hvtg_area_open(p, &a), -EINVAL);

	/* Invalid headers, each named. */
	v64 = 0x1234;
	bad_header(p, offsetof(struct hvt_area_header, magic), &v64, 8,
		   "bad magic");
	v32 = 99;
	bad_header(p, offsetof(struct hvt_area_header, abi_version), &v32, 4,
		   "ABI version");
	v32 = 0;
	bad_header(p, offsetof(struct hvt_area_header, nr_cpus), &v32, 4,
		   "CPU count");
	v32 = 3000;
	bad_header(p, offsetof(struct hvt_area_header, subbuf_size), &v32, 4,
		   "sub-buffer size");
	v32 = 3;
	bad_header(p, offsetof(struct hvt_area_header, nr_subbufs), &v32, 4,
		   "sub-buffer count");
	v32 = 7;
	bad_header(p, offsetof(struct hvt_area_header, mode), &v32, 4,
		   "ring mode");
	v64 = 0x4000;
	bad_header(p, offsetof(struct hvt_area_header, cpu_offset), &v64, 8,
		   "first CPU section");
	v64 = 1ull << 30;
	bad_header(p, offsetof(struct hvt_area_header, area_size), &v64, 8,
		   "larger than the mapping");
	v32 = 9;
	bad_header(p, offsetof(struct hvt_area_header, clock_id), &v32, 4,
		   "unknown clock");

	/* A clock user space cannot produce. */
	make_area(p, 0, HVT_CLOCK_COUNTER);
	fd = open(p, O_RDWR);
	v32 = HVT_CLOCK_HOST_NS;
	t_assert(pwrite(fd, &v32, 4,
			offsetof(struct hvt_area_header, clock_id)) == 4);
	close(fd);
	t_eq(hvtg_area_open(p, &a), -ENOTSUP);

	/* Specs: an area at 64 KiB into its file. */
	make_area(p, 65536, HVT_CLOCK_MONO_NS);
	t_eq(hvtg_area_open(p, &a), -EAGAIN);	/* nothing at offset 0 */
	snprintf(spec, sizeof(spec), "%s@64K", p);
	t_ok(hvtg_area_open(spec, &a));
	t_ok(hvtg_area_get_info(a, &info));
	t_equ(info.nr_cpus, 2);
	t_equ(info.clock_id, HVT_CLOCK_MONO_NS);
	hvtg_area_close(a);
	snprintf(spec, sizeof(spec), "%s@0x10000+%llu", p,
		 (unsigned long long)hvt_area_size(2, 4, 4096));
	t_ok(hvtg_area_open(spec, &a));
	hvtg_area_close(a);
	snprintf(spec, sizeof(spec), "%s@0x10000+4096", p);
	t_eq(hvtg_area_open(spec, &a), -EINVAL);	/* SIZE too small */
	snprintf(spec, sizeof(spec), "%s@12zz", p);
	t_eq(hvtg_area_open(spec, &a), -EINVAL);
	snprintf(spec, sizeof(spec), "%s@100", p);
	t_eq(hvtg_area_open(spec, &a), -EINVAL);	/* not 4K aligned */
	snprintf(spec, sizeof(spec), "%s@65536", p);
	setenv("HVTRACE_AREA", spec, 1);
	t_ok(hvtg_area_open(NULL, &a));
	hvtg_area_close(a);
	unsetenv("HVTRACE_AREA");

	/* Descriptors: the control page and header are read-only either
	 * way; the rings are writable. */
	make_area(p, 0, HVT_CLOCK_COUNTER);
	{
		struct hvtg_area_fds fds = { 0 };

		fds.area_fd = open(p, O_RDWR);
		fds.ctrl_fd = -1;
		t_ok(hvtg_area_open_fds(&fds, &a));
		must_fault((volatile uint64_t *)&a->ctrl->enable[0],
			   "control page (no control descriptor)");
		must_fault((volatile uint64_t *)a->base, "header");
		hvtg_area_close(a);
		fds.ctrl_fd = open(p, O_RDONLY);
		fds.ctrl_offset = HVT_CONTROL_OFFSET;
		t_ok(hvtg_area_open_fds(&fds, &a));
		must_fault((volatile uint64_t *)&a->ctrl->consumer[0],
			   "control page (read-only descriptor)");
		/* The rings are writable: a write commits. */
		{
			static struct hvtg_event ev = HVTG_EVENT_INIT;
			uint8_t *m = mmap(NULL, HVT_CONTROL_SIZE,
					  PROT_READ | PROT_WRITE, MAP_SHARED,
					  fds.area_fd, HVT_CONTROL_OFFSET);

			t_assert(m != MAP_FAILED);
			((struct hvt_control *)m)->enable[0] = 1;
			t_ok(hvtg_event_bind(a, &ev, 1, 0));
			t_ok(th_pin(0));
			t_ok(hvtg_write(&ev, &v64, sizeof(v64)));
			munmap(m, HVT_CONTROL_SIZE);
		}
		hvtg_area_close(a);
		/* A read-only area descriptor cannot be opened for writing. */
		close(fds.area_fd);
		fds.area_fd = open(p, O_RDONLY);
		t_eq(hvtg_area_open_fds(&fds, &a), -EACCES);
		t_assert(strstr(hvtg_last_error(), "O_RDWR"));
		close(fds.area_fd);
		close(fds.ctrl_fd);
	}

	/* hvtg_area_create() with size 0: the configured geometry. */
	t_ok(hvtg_area_create(p, 0, NULL));
	t_ok(hvtg_area_open(p, &a));
	t_ok(hvtg_area_get_info(a, &info));
	t_equ(info.nr_subbufs, CONFIG_HVT_DEFAULT_SUBBUFS);
	t_equ(info.subbuf_size, CONFIG_HVT_SUBBUF_SIZE);
	t_equ(info.mode, HVT_DEFAULT_MODE);
	t_equ(info.clock_id, IS_ENABLED(CONFIG_HVT_CLOCK_MONOTONIC_SRC) ?
				     HVT_CLOCK_MONO_NS :
				     HVT_CLOCK_COUNTER);
	t_assert(info.nr_cpus >= 1 && info.nr_cpus <= CONFIG_HVT_MAX_CPUS);
	t_equ(info.max_payload,
	      CONFIG_HVT_SUBBUF_SIZE - HVT_PAGE_HDR_SIZE - 16 - 8);
	t_assert(!strcmp(info.name, "guest"));
	hvtg_area_close(a);
	{
		struct hvtg_format f = { 0 };

		f.nr_cpus = CONFIG_HVT_MAX_CPUS + 1;
		t_eq(hvtg_area_create(p, 0, &f), -EINVAL);
		t_assert(strstr(hvtg_last_error(), "CONFIG_HVT_MAX_CPUS"));
		f.nr_cpus = 2;
		t_eq(hvtg_area_create(p, 3 * 4096, &f), -ENOSPC);
	}

	/* Clock descriptions. */
	t_ok(hvtg_clock_describe(HVT_CLOCK_MONO_NS, &clk));
	t_equ(clk.freq_hz, 0);
	t_equ(clk.mult, 1);
	t_equ(clk.shift, 0);
	t_eq(hvtg_clock_describe(HVT_CLOCK_HOST_NS, &clk), -EINVAL);
	t_ok(hvtg_clock_describe(HVT_CLOCK_COUNTER, &clk));
	t_equ(clk.clock_id, HVT_CLOCK_COUNTER);
	t_assert(clk.freq_hz >= 1000000 && clk.freq_hz <= 100000000000ull);
	t_assert(clk.shift <= 32);
	{
		/* freq counts of nominal conversion are one second. */
		double ns = (double)clk.freq_hz * clk.mult /
			    (double)(1ull << clk.shift);

		if (ns < 1e9 * (1 - 1e-6) || ns > 1e9 * (1 + 1e-6))
			t_fail("counter at %llu Hz: mult %u shift %u give %.3f "
			       "ns per second",
			       (unsigned long long)clk.freq_hz, clk.mult,
			       clk.shift, ns);
		printf("counter clock: %llu Hz, mult %u, shift %u\n",
		       (unsigned long long)clk.freq_hz, clk.mult, clk.shift);
	}

	printf("PASS\n");
	return 0;
}

#else
int main(void)
{
	t_skip("the guest library is not configured (CONFIG_HVT_GUEST)");
}
#endif
