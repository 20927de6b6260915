// SPDX-License-Identifier: MIT
/*
 * The trace.dat reader on damaged files: it must refuse them or read them
 * with errors counted, never crash, read out of bounds (this test runs
 * under ASan+UBSan in make check) or loop.
 *
 *   - targeted damage: an options chain that points at itself, a CPU data
 *     range past the end, a page whose commit size exceeds the page, an
 *     event header whose length runs past the commit, a section size past
 *     the end, a truncated file -- each with the expected outcome;
 *   - random damage: a fixed-seed generator flips 1..16 bytes of a valid
 *     file (or cuts it short) 500 times, and every variant is opened,
 *     read to the end and printed.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../tracedat/gen.h"

/*
 * libtraceevent leaks a few bytes on its error paths when a damaged
 * format fails to parse (tep_parse_event()); that is the library's, not
 * ours.  LeakSanitizer reads this hook in the sanitizer build.
 */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libtraceevent.so\n";
}

static struct gen g;
static uint8_t *orig;
static size_t orig_len;
static char dir[] = "/tmp/hvt-tdat-bad-XXXXXX";
static char path[64];

static void load_orig(const char *p)
{
	FILE *f = fopen(p, "rb");
	struct stat st;

	t_assert(f && !stat(p, &st));
	orig_len = (size_t)st.st_size;
	orig = malloc(orig_len);
	t_assert(orig && fread(orig, 1, orig_len, f) == orig_len);
	fclose(f);
}

static void save(const uint8_t *b, size_t n)
{
	FILE *f = fopen(path, "wb");

	t_assert(f && fwrite(b, 1, n, f) == n);
	fclose(f);
}

/* Open and read everything; returns events read, -errno if refused. */
static long read_all(uint64_t *errors)
{
	struct hvtrace_tracedat_file *f;
	struct hvtrace_tracedat_event ev;
	FILE *null = fopen("/dev/null", "w");
	long n = 0;
	int ret;

	t_assert(null);
	ret = hvtrace_tracedat_open(path, &f);
	if (ret) {
		fclose(null);
		return ret;
	}
	while ((ret = hvtrace_tracedat_next(f, &ev)) > 0) {
		hvtrace_tracedat_print_event(f, &ev, null);
		n++;
		/* Every page holds at least one event: bounded by the file. */
		t_assert(n <= (long)orig_len);
	}
	if (errors)
		*errors = hvtrace_tracedat_errors(f);
	hvtrace_tracedat_close(f);
	fclose(null);
	return ret < 0 ? ret : n;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* Offset of the BUFFER option data for @name in the original file. */
static size_t find_buffer_opt(const char *name)
{
	size_t i, nl = strlen(name) + 1;

	for (i = 0; i + 6 + 8 + nl < orig_len; i++) {
		uint16_t id;

		memcpy(&id, orig + i, 2);
		if (id == HVT_TDAT_OPT_BUFFER &&
		    !memcmp(orig + i + 6 + 8, name, nl) &&
		    rd64(orig + i + 6) < orig_len)
			return i + 6;
	}
	t_fail("no BUFFER option for '%s'", name);
	return 0;
}

static uint64_t xs = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	xs ^= xs << 13;
	xs ^= xs >> 7;
	xs ^= xs << 17;
	return xs;
}

static void on_alarm(int sig)
{
	(void)sig;
	/* A loop on hostile input: the one failure that cannot print. */
	_exit(1);
}

int main(void)
{
	uint8_t *b;
	size_t wide, data;
	uint64_t errors, first_opts;
	long good, n;
	unsigned int i, refused = 0, read_ok = 0;

	signal(SIGALRM, on_alarm);
	t_assert(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/f.dat", dir);
	gen_file(&g, path);
	load_orig(path);
	good = read_all(&errors);
	t_eq(good, (long)g.nr);
	t_eq(errors, 0);
	b = malloc(orig_len);
	t_assert(b);
	first_opts = rd64(orig + 24);
	t_assert(first_opts < orig_len);

	/* 1. The first options section's DONE points back at itself. */
	memcpy(b, orig, orig_len);
	{
		uint64_t sz = rd64(b + first_opts + 8);
		size_t done = first_opts + 16 + sz - 8;

		memcpy(b + done, &first_opts, 8);
	}
	save(b, orig_len);
	alarm(20);
	t_assert(read_all(NULL) < 0);

	/* 2. A CPU of "wide" claims data past the end of the file. */
	memcpy(b, orig, orig_len);
	wide = find_buffer_opt("wide");
	/* u64 offset, "wide\0", "mono\0", u32 page, u32 cpus, then cpu 0. */
	data = wide + 8 + 5 + 5 + 4 + 4;
	memcpy(b + data + 4 + 8, &(uint64_t){orig_len * 2}, 8);
	save(b, orig_len);
	t_assert(read_all(NULL) < 0);

	/* 3. A page whose commit size exceeds the page: skipped, counted. */
	memcpy(b, orig, orig_len);
	{
		uint64_t off = rd64(orig + data + 4); /* wide cpu 0 data */
		uint64_t commit = 100000;

		memcpy(b + off + 8, &commit, 8);
		save(b, orig_len);
		n = read_all(&errors);
		t_assert(n > 0 && n < good);
		t_eq(errors, 1);

		/* 4. An event header whose length runs past the commit. */
		memcpy(b, orig, orig_len);
		memcpy(b + off + 16, &(uint32_t){0}, 4);
		memcpy(b + off + 20, &(uint32_t){0x7fffff00}, 4);
		save(b, orig_len);
		n = read_all(&errors);
		t_assert(n > 0 && n < good);
		t_eq(errors, 1);
	}

	/* 5. The header section says it is larger than the file. */
	memcpy(b, orig, orig_len);
	memcpy(b + 32 + 8, &(uint64_t){orig_len}, 8);
	save(b, orig_len);
	t_assert(read_all(NULL) < 0);

	/* 6. Cut short anywhere in the metadata or the data. */
	for (i = 1; i < 40; i++) {
		save(orig, orig_len * i / 40);
		n = read_all(NULL);
		t_assert(n < good);
	}

	/* 7. Random damage. */
	for (i = 0; i < 500; i++) {
		unsigned int k, flips = 1 + (unsigned int)(rnd() % 16);
		size_t len = orig_len;

		memcpy(b, orig, orig_len);
		for (k = 0; k < flips; k++) {
			/* Half the flips in the metadata before the data. */
			size_t at = (rnd() & 1) ? rnd() % (first_opts + 600)
						: rnd() % orig_len;

			if (at >= orig_len)
				at = orig_len - 1;
			b[at] = (rnd() & 1) ? (uint8_t)rnd() : b[at] ^ 0xff;
		}
		if (rnd() % 8 == 0)
			len = rnd() % orig_len;
		save(b, len);
		alarm(20);
		n = read_all(&errors);
		if (n < 0)
			refused++;
		else
			read_ok++;
	}
	alarm(0);
	printf("damaged files: %u refused, %u read (with errors counted)\n",
	       refused, read_ok);
	t_assert(refused > 0 && read_ok > 0);
	free(b);
	free(orig);
	unlink(path);
	rmdir(dir);
	return 0;
}
