// SPDX-License-Identifier: MIT
/*
 * The trace.dat writer keeps recorded pages in memory up to a cap
 * ($HVT_RECORD_MEM_MB) and spills a CPU to a temporary file past it
 * (host/tracedat/write.c).  The same pages, added in the same
 * interleaved order, must give the same file byte for byte whether
 * every CPU stays in memory (the default), one spills part of the way
 * (a 15 MiB cap: 8 chunks of 2 MiB fill, the last one over it), or every
 * CPU spills at its first full chunk (0).  The
 * temporary files are counted in /proc/self/fd, so a cap that was not
 * applied fails the test; and the file's page data is checked against
 * the pages added, CPU by CPU.  A bad $HVT_RECORD_MEM_MB is refused
 * with a message that names it.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hvtrace-tracedat.h>
#include <hvtrace.h>

#define NR_CPUS	  3u
#define PAGE	  4096u
#define PER_CPU_0 1400u /* pages: about 5.5 MiB, two full chunks */
#define HDR	  "field: u64 timestamp;\n"

static int failures;

#define CHECK(cond, ...)                                                      \
	do {                                                                  \
		if (!(cond)) {                                                \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);           \
			printf(__VA_ARGS__);                                  \
			printf("\n");                                         \
			failures++;                                           \
		}                                                             \
	} while (0)

/* CPU @cpu's page @i: its size and bytes, a function of both. */
static uint32_t page_size_of(uint32_t cpu, uint32_t i)
{
	return 16 + (i * 7919u + cpu * 104729u) % (PAGE - 16);
}

static void page_fill(uint8_t *p, uint32_t cpu, uint32_t i)
{
	uint32_t n = page_size_of(cpu, i), k, x = cpu * 1000003u + i + 1;

	for (k = 0; k < n; k++) {
		x = x * 1103515245u + 12345u;
		p[k] = (uint8_t)(x >> 16);
	}
}

static uint32_t pages_of(uint32_t cpu)
{
	return PER_CPU_0 + cpu * 300u;
}

static int count_tmpfiles(void)
{
	char link[512], path[300];
	struct dirent *d;
	DIR *dir = opendir("/proc/self/fd");
	int n = 0;
	ssize_t k;

	if (!dir)
		return -1;
	while ((d = readdir(dir))) {
		snprintf(path, sizeof(path), "/proc/self/fd/%s", d->d_name);
		k = readlink(path, link, sizeof(link) - 1);
		if (k <= 0)
			continue;
		link[k] = '\0';
		if (strstr(link, "(deleted)"))
			n++;
	}
	closedir(dir);
	return n;
}

/* Write the file with cap @mb (NULL: unset); *@tmps: temp files seen. */
static int write_file(const char *path, const char *mb, int *tmps)
{
	struct hvtrace_tracedat_writer *w;
	uint8_t page[PAGE];
	uint32_t i, cpu, most = 0;
	int ret, before;

	if (mb)
		setenv("HVT_RECORD_MEM_MB", mb, 1);
	else
		unsetenv("HVT_RECORD_MEM_MB");
	ret = hvtrace_tracedat_writer_create(path, PAGE, &w);
	if (ret)
		return ret;
	ret = hvtrace_tracedat_writer_set_headers(w, HDR, strlen(HDR), HDR,
						  strlen(HDR));
	if (!ret)
		ret = hvtrace_tracedat_writer_add_buffer(w, "", "mono", NR_CPUS,
							 PAGE);
	if (ret < 0) {
		hvtrace_tracedat_writer_abort(w);
		return ret;
	}
	before = count_tmpfiles();
	for (cpu = 0; cpu < NR_CPUS; cpu++)
		if (pages_of(cpu) > most)
			most = pages_of(cpu);
	/* Interleaved, as reader threads add them. */
	for (i = 0; i < most && !ret; i++)
		for (cpu = 0; cpu < NR_CPUS && !ret; cpu++) {
			if (i >= pages_of(cpu))
				continue;
			page_fill(page, cpu, i);
			ret = hvtrace_tracedat_writer_add_page(
				w, 0, cpu, page, page_size_of(cpu, i));
		}
	*tmps = count_tmpfiles() - before;
	if (ret) {
		hvtrace_tracedat_writer_abort(w);
		return ret;
	}
	return hvtrace_tracedat_writer_finish(w);
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (!fseek(f, 0, SEEK_END) && (n = ftell(f)) > 0 &&
	    !fseek(f, 0, SEEK_SET)) {
		buf = malloc((size_t)n);
		if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		*len = (size_t)n;
	}
	fclose(f);
	return buf;
}

/*
 * The page data: every CPU's pages, in order, each zero-padded to PAGE,
 * one CPU after the other, ending at the first page-aligned offset where
 * CPU 0's first page is found.
 */
static void check_pages(const uint8_t *f, size_t len)
{
	uint8_t page[PAGE];
	size_t off;
	uint32_t cpu, i, n;

	page_fill(page, 0, 0);
	n = page_size_of(0, 0);
	for (off = 0; off + PAGE <= len; off += PAGE)
		if (!memcmp(f + off, page, n))
			break;
	CHECK(off + PAGE <= len, "CPU 0's first page is not in the file");
	if (off + PAGE > len)
		return;
	for (cpu = 0; cpu < NR_CPUS; cpu++)
		for (i = 0; i < pages_of(cpu); i++, off += PAGE) {
			n = page_size_of(cpu, i);
			memset(page, 0, PAGE);
			page_fill(page, cpu, i);
			if (off + PAGE > len || memcmp(f + off, page, PAGE)) {
				CHECK(0, "CPU %u page %u is not where it "
					 "belongs (offset %zu)",
				      cpu, i, off);
				return;
			}
		}
}

int main(void)
{
	static const char *caps[] = {NULL, "15", "0"};
	char path[3][96];
	uint8_t *file[3] = {NULL};
	size_t len[3] = {0};
	int tmps[3] = {0}, ret, k;
	struct hvtrace_tracedat_writer *w;

	for (k = 0; k < 3; k++) {
		snprintf(path[k], sizeof(path[k]), "/tmp/hvt-spill-%d-%d.dat",
			 (int)getpid(), k);
		ret = write_file(path[k], caps[k], &tmps[k]);
		CHECK(!ret, "cap %s: %s", caps[k] ? caps[k] : "default",
		      hvtrace_last_error());
		file[k] = slurp(path[k], &len[k]);
		CHECK(file[k], "cap %s: cannot read %s back",
		      caps[k] ? caps[k] : "default", path[k]);
		printf("cap %s MiB: %zu bytes, %d temporary files\n",
		       caps[k] ? caps[k] : "default (128)", len[k], tmps[k]);
	}
	/* Default: all in memory.  15 MiB: chunks of 512 pages fill at
	 * pages 512, 1024 (every CPU) and 1536 (CPUs 1 and 2): the eighth,
	 * CPU 2's third, spills CPU 2 with the two it kept.  0: each CPU
	 * spills at its first full chunk. */
	CHECK(tmps[0] == 0, "%d temporary files under the default cap",
	      tmps[0]);
	CHECK(tmps[1] == 1, "%d temporary files under a 15 MiB cap, not 1",
	      tmps[1]);
	CHECK(tmps[2] == (int)NR_CPUS, "%d temporary files under a 0 cap",
	      tmps[2]);
	for (k = 1; k < 3; k++)
		CHECK(file[0] && file[k] && len[0] == len[k] &&
			      !memcmp(file[0], file[k], len[0]),
		      "the file with cap %s differs from the default's", caps[k]);
	if (file[0])
		check_pages(file[0], len[0]);

	setenv("HVT_RECORD_MEM_MB", "12x", 1);
	ret = hvtrace_tracedat_writer_create(path[0], PAGE, &w);
	CHECK(ret == -EINVAL && strstr(hvtrace_last_error(),
				       "HVT_RECORD_MEM_MB='12x'"),
	      "a bad HVT_RECORD_MEM_MB: %d %s", ret, hvtrace_last_error());
	if (!ret)
		hvtrace_tracedat_writer_abort(w);
	unsetenv("HVT_RECORD_MEM_MB");

	for (k = 0; k < 3; k++) {
		free(file[k]);
		unlink(path[k]);
	}
	printf("%s\n", failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
