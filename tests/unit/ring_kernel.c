// SPDX-License-Identifier: MIT
/*
 * The host kernel through the same ring/cursor/decoder path as areas:
 * markers written to a private tracefs instance's trace_marker come back
 * through the kernel ring, and each line we print is byte-for-byte the
 * line the kernel itself prints for that event in the instance's
 * (non-consuming) "trace" file.  The meta counters follow the kernel:
 * entries counts every event written to the fresh instance, read what was
 * handed over.
 *
 * Two passes, each on a fresh instance: the trace_pipe_raw mmap with
 * TRACE_MMAP_IOCTL_GET_READER (HVTRACE_KERNEL_RING=mmap; Linux 6.10 and
 * later, else that pass is skipped with a note), and the read() fallback
 * (HVTRACE_KERNEL_RING=read), which runs on every kernel.  Both must print
 * the same lines as the kernel.
 *
 * Skips (77) only when tracefs cannot be mounted or written.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hvtrace.h>

#include "hvt_test.h"

#define NR_MARKERS 300

static char inst_dir[512];

/*
 * libtraceevent 1.7 (Debian 12) leaks a couple of bytes per odd kernel
 * format while libtracefs loads all of them; that is the library's, not
 * ours.  LeakSanitizer reads this hook in the sanitizer pass.
 */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libtraceevent.so\n";
}

static struct hvtrace_ring *ring; /* open: the instance cannot go */

static void cleanup(void)
{
	hvtrace_ring_close(ring);
	ring = NULL;
	if (inst_dir[0])
		rmdir(inst_dir);
}

static void write_marker(const char *dir, const char *text)
{
	char path[600];
	int fd;

	snprintf(path, sizeof(path), "%s/trace_marker", dir);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		t_fail("open %s: %s", path, strerror(errno));
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		t_fail("write %s: %s", path, strerror(errno));
	close(fd);
}

/* The kernel's own text of the instance's buffer, header lines dropped. */
static char *kernel_trace_text(const char *dir, size_t *len)
{
	char path[600];
	size_t cap = 1 << 20, n = 0;
	char *buf = malloc(cap), *out;
	FILE *f;
	char line[4096];

	t_assert(buf);
	snprintf(path, sizeof(path), "%s/trace", dir);
	f = fopen(path, "r");
	t_assert(f);
	while (fgets(line, sizeof(line), f)) {
		size_t l = strlen(line);

		if (line[0] == '#')
			continue;
		t_assert(n + l < cap);
		memcpy(buf + n, line, l);
		n += l;
	}
	fclose(f);
	buf[n] = '\0';
	out = buf;
	*len = n;
	return out;
}

/* The kernel's saved_cmdlines entry of @pid ("" if none) into @out. */
static void saved_cmdline(const char *root, int pid, char *out, size_t size)
{
	char path[600], line[256];
	FILE *f;
	int p, off;

	out[0] = '\0';
	snprintf(path, sizeof(path), "%s/saved_cmdlines", root);
	f = fopen(path, "r");
	t_assert(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%d %n", &p, &off) == 1 && p == pid) {
			snprintf(out, size, "%s", line + off);
			break;
		}
	fclose(f);
}

/* One pass with HVTRACE_KERNEL_RING=@mode; 0, or 77 if it cannot run. */
static int run_pass(const char *root, const char *mode)
{
	const struct hvt_trace_buffer_meta *m;
	struct hvtrace_decoder *dec;
	struct hvtrace_record rec;
	struct hvtrace_ring *r;
	char *expect, *got, line[4096], name[64], text[128];
	char before[64], after[64];
	size_t elen, glen = 0;
	unsigned int i, n = 0, attempt;
	int ret;

	t_ok(setenv("HVTRACE_KERNEL_RING", mode, 1) ? -errno : 0);
	snprintf(name, sizeof(name), "hvt-ring-kernel-%d-%s", getpid(), mode);
	snprintf(inst_dir, sizeof(inst_dir), "%s/instances/%s", root, name);
	if (mkdir(inst_dir, 0755)) {
		int e = errno;

		inst_dir[0] = '\0';
		if (e == EACCES || e == EPERM || e == EROFS)
			t_skip("cannot create a tracefs instance: %s",
			       strerror(e));
		t_fail("mkdir %s/instances/%s: %s", root, name, strerror(e));
	}

	ret = hvtrace_ring_open_kernel(name, 0, &ring);
	r = ring;
	if (ret == -EOPNOTSUPP && !strcmp(mode, "mmap")) {
		printf("note: mmap pass skipped: this kernel cannot mmap ring "
		       "buffers: %s\n",
		       hvtrace_last_error());
		cleanup();
		inst_dir[0] = '\0';
		return 77;
	}
	if (ret)
		t_fail("open kernel ring (%s): %s", mode, hvtrace_last_error());
	t_assert(hvtrace_ring_is_kernel(r));
	if (!strcmp(mode, "read")) {
		t_assert(hvtrace_ring_fallback(r));
		t_assert(strstr(hvtrace_ring_fallback(r), "=read"));
	} else {
		t_assert(!hvtrace_ring_fallback(r));
	}
	m = hvtrace_ring_meta(r);
	t_assert(m->meta_struct_len >= 80);
	t_assert(m->nr_subbufs >= 2);
	t_equ(m->entries, 0); /* a fresh instance */
	t_assert(m->reader.id < m->nr_subbufs);
	t_assert(hvtrace_ring_subbuf(r, m->nr_subbufs - 1));
	t_assert(!hvtrace_ring_subbuf(r, m->nr_subbufs));

	/* Nothing written yet: the cursor has nothing. */
	t_eq(hvtrace_ring_peek(r, &rec), 0);

	for (i = 0; i < NR_MARKERS; i++) {
		snprintf(text, sizeof(text), "hvtrace ring test %u %s\n", i,
			 i % 3 ? "x" : "a somewhat longer marker text");
		write_marker(inst_dir, text);
	}
	/*
	 * Both texts name the writer's pid from the kernel's saved_cmdlines,
	 * which other tasks change at any time: this pid's entry can be a
	 * stale one of an exited task that had the pid, replaced when the
	 * slot is taken again.  The decoder takes the table after the
	 * kernel printed its text; only when the pid's entry is the same
	 * before and after both is the pair compared (a few tries).
	 */
	for (attempt = 0;; attempt++) {
		saved_cmdline(root, getpid(), before, sizeof(before));
		expect = kernel_trace_text(inst_dir, &elen);
		t_ok(hvtrace_decoder_new_kernel(NULL, &dec));
		saved_cmdline(root, getpid(), after, sizeof(after));
		if (!strcmp(before, after))
			break;
		t_assert(attempt < 5);
		hvtrace_decoder_free(dec);
		free(expect);
	}

	got = malloc(elen + 65536);
	t_assert(got);
	while ((ret = hvtrace_ring_peek(r, &rec)) == 1) {
		int len;

		t_eq(rec.cpu, 0);
		t_equ(rec.lost_before, 0);
		len = hvtrace_decoder_format(dec, &rec, rec.ts, 0, line,
					     sizeof(line));
		t_assert(len > 0 && (size_t)len < sizeof(line));
		t_assert(glen + (size_t)len < elen + 65536);
		memcpy(got + glen, line, (size_t)len);
		glen += (size_t)len;
		n++;
		hvtrace_ring_consume(r);
	}
	t_eq(ret, 0);
	got[glen] = '\0';
	t_eq(n, NR_MARKERS);
	if (glen != elen || memcmp(got, expect, elen)) {
		fprintf(stderr, "--- kernel:\n%.600s\n--- ours (%s):\n%.600s\n",
			expect, mode, got);
		t_fail("our trace_pipe text differs from the kernel's");
	}
	/* Kernel counters: everything written, everything handed over. */
	t_equ(m->entries, NR_MARKERS);
	t_equ(m->read, NR_MARKERS);
	t_equ(m->entries - m->overrun - m->read, 0);

	/* More markers after a drain come through the same cursor. */
	write_marker(inst_dir, "after the drain\n");
	t_eq(hvtrace_ring_peek(r, &rec), 1);
	t_ok(hvtrace_decoder_format(dec, &rec, rec.ts, 0, line, sizeof(line)));
	t_assert(strstr(line, "tracing_mark_write: after the drain\n"));
	hvtrace_ring_consume(r);
	t_eq(hvtrace_ring_peek(r, &rec), 0);
	t_equ(m->read, NR_MARKERS + 1);

	hvtrace_decoder_free(dec);
	free(expect);
	free(got);
	cleanup();
	inst_dir[0] = '\0';
	printf("ok: %u kernel events through the %s path, text identical to "
	       "the kernel's\n",
	       n, mode);
	return 0;
}

int main(void)
{
	char root[256];
	cpu_set_t set;

	if (hvtrace_tracefs_dir(NULL, root, sizeof(root)))
		t_skip("no tracefs: %s", hvtrace_last_error());
	atexit(cleanup);

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	t_ok(sched_setaffinity(0, sizeof(set), &set) ? -errno : 0);

	run_pass(root, "mmap");
	run_pass(root, "read");
	return 0;
}
