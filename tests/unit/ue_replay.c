// SPDX-License-Identifier: MIT
/*
 * Replay the user_events command script that capture.sh ran against a
 * real Linux 6.12 kernel (tests/golden/userevents/commands.txt) against the
 * hvtrace registry, and compare every answer with the kernel's
 * (kernel/results.txt): errno of every definition, delete, enable and
 * write, the event identity behind every write index, the number of events
 * (the "limit" command), and byte for byte the user_events_status,
 * dynamic_events and format files the kernel printed.  Format files are
 * compared with the kernel's ID (the id is an input of the generator); the
 * registry's own format text is checked to be the same text with its id.
 *
 * Answers that differ on purpose are listed in deviations.txt; each entry
 * must be used.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace/abi.h>

#include "hvt_test.h"
#include "../../host/userevents/userevents-local.h"

#define MAX_DEV 64
#define NR_SLOTS 8
#define MAX_SLOT_REGS 256

struct deviation {
	char *cmd;
	char *result;
	int used;
};

struct slot {
	int open;
	int n;
	uint32_t ids[MAX_SLOT_REGS];
};

static char golden[1024];
static struct deviation devs[MAX_DEV];
static int nr_devs;
static struct slot slots[NR_SLOTS];
static struct hvtrace_ue_registry *reg;
static int compared_files, compared_cmds, failures;

static char *read_file(const char *name, size_t *len)
{
	char path[2048];
	size_t cap = 4096, n = 0, got;
	char *buf;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", golden, name);
	f = fopen(path, "rb");
	if (!f)
		return NULL;
	buf = malloc(cap + 1);
	t_assert(buf);
	while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap + 1);
			t_assert(buf);
		}
	}
	fclose(f);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

static void find_golden(void)
{
	const char *env = getenv("HVT_SRCTREE");
	char *p;

	if (env) {
		snprintf(golden, sizeof(golden), "%s/tests/golden/userevents",
			 env);
		return;
	}
	/* Built from $(srctree)/tests/unit/ue_replay.c: use that tree. */
	snprintf(golden, sizeof(golden), "%s", __FILE__);
	p = strstr(golden, "/tests/unit/");
	if (!p)
		t_fail("set HVT_SRCTREE to the source tree");
	strcpy(p, "/tests/golden/userevents");
}

/* The escapes of ue_capture.c: \t \n \\ and {rep:N:C}. */
static void expand(const char *in, char *out, size_t outlen)
{
	size_t o = 0;

	while (*in) {
		char c = *in++;

		if (c == '\\' && *in) {
			c = *in++;
			if (c == 't')
				c = '\t';
			else if (c == 'n')
				c = '\n';
		} else if (c == '{' && !strncmp(in, "rep:", 4)) {
			char *end;
			long n = strtol(in + 4, &end, 10);

			t_assert(*end == ':' && end[1] && end[2] == '}');
			while (n-- > 0) {
				t_assert(o + 1 < outlen);
				out[o++] = end[1];
			}
			in = end + 3;
			continue;
		}
		t_assert(o + 1 < outlen);
		out[o++] = c;
	}
	out[o] = '\0';
}

static void load_deviations(void)
{
	char *text = read_file("deviations.txt", NULL), *line, *save;

	if (!text)
		t_fail("cannot read %s/deviations.txt", golden);
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *t1, *t2;

		if (line[0] == '#' || !line[0])
			continue;
		t1 = strchr(line, '\t');
		t_assert(t1);
		*t1++ = '\0';
		t2 = strchr(t1, '\t');
		t_assert(t2);
		*t2 = '\0';
		t_assert(nr_devs < MAX_DEV);
		devs[nr_devs].cmd = strdup(line);
		devs[nr_devs].result = strdup(t1);
		nr_devs++;
	}
	free(text);
}

static const char *result_str(long v, char *buf, size_t len)
{
	if (v < 0)
		return hvtrace_ue_errno_name((int)v);
	snprintf(buf, len, "%ld", v);
	return buf;
}

/* Compare generated text with a captured file; returns its length. */
static long compare_text(const char *what, const char *file, const char *ours)
{
	size_t glen, i, line = 1;
	char path[512];
	char *g;

	snprintf(path, sizeof(path), "kernel/%s", file);
	g = read_file(path, &glen);

	if (!g) {
		fprintf(stderr, "MISMATCH %s: no captured file %s\n", what,
			file);
		failures++;
		return -ENOENT;
	}
	for (i = 0; i < glen && ours[i] == g[i]; i++)
		line += g[i] == '\n';
	if (i != glen || ours[i]) {
		fprintf(stderr,
			"MISMATCH %s differs from kernel file %s at byte %zu (line %zu)\n"
			"--- kernel ---\n%s--- hvtrace ---\n%s---\n",
			what, file, i, line, g, ours);
		failures++;
	}
	compared_files++;
	free(g);
	return (long)strlen(ours);
}

static long cmd_format(const char *name, const char *file)
{
	struct hvtrace_ue_event_info info;
	char *golden_text, *ours, *with_id, *id_line, path[512];
	long ret;

	if (hvtrace_ue_lookup(reg, name, &info))
		return -ENOENT;
	snprintf(path, sizeof(path), "kernel/%s", file);
	golden_text = read_file(path, NULL);
	if (!golden_text) {
		fprintf(stderr, "MISMATCH format %s: hvtrace has the event, the kernel did not\n",
			name);
		failures++;
		return -EEXIST;
	}
	id_line = strstr(golden_text, "\nID: ");
	t_assert(id_line);
	/* The kernel's id in the generator, then the file compared. */
	ours = hvt_ue_format_text(info.def, (unsigned int)atoi(id_line + 5));
	t_assert(ours);
	ret = compare_text(name, file, ours);
	free(ours);
	/* The registry serves the same text with its own id. */
	with_id = hvt_ue_format_text(info.def, info.id);
	t_assert(with_id);
	if (strcmp(with_id, info.format)) {
		fprintf(stderr, "MISMATCH registry format of %s\n", name);
		failures++;
	}
	free(with_id);
	free(golden_text);
	return ret;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* user_events_write_core(): the write index, min_size, enabled, locs. */
static long cmd_write(int slot, const char *name, const char *hex)
{
	struct hvtrace_ue_event_info info;
	unsigned char rec[4096];
	size_t n = HVT_UE_COMMON_SIZE;
	int i, found = 0;

	if (slot < 0 || slot >= NR_SLOTS || !slots[slot].open)
		return -EBADF;
	if (hvtrace_ue_lookup(reg, name, &info))
		return -ENOENT;
	for (i = 0; i < slots[slot].n; i++)
		found |= slots[slot].ids[i] == info.id;
	if (!found)
		return -ENOENT;
	memset(rec, 0, sizeof(rec));
	while (hex[0] && hex[1]) {
		t_assert(n < sizeof(rec));
		rec[n++] = (unsigned char)(hexval(hex[0]) << 4 |
					   hexval(hex[1]));
		hex += 2;
	}
	if (n < info.def->record_size)
		return -EINVAL;
	if (!info.enabled)
		return -EBADF;
	return hvt_ue_validate_record(info.def, rec, n);
}

static long run(const char *line)
{
	char cmd[16], arg[8192], *a2, *a3;
	struct hvtrace_ue_error err;
	const char *rest = strchr(line, ' ');
	size_t clen = rest ? (size_t)(rest - line) : strlen(line);
	int slot;
	long ret;

	t_assert(clen < sizeof(cmd));
	memcpy(cmd, line, clen);
	cmd[clen] = '\0';
	expand(rest ? rest + 1 : "", arg, sizeof(arg));

	if (!strcmp(cmd, "dyn"))
		return hvtrace_ue_dyn_apply(reg, arg, &err);
	if (!strcmp(cmd, "trunc")) {
		ret = hvtrace_ue_dyn_clear(reg, &err);
		return ret < 0 ? ret : 0;
	}
	if (!strcmp(cmd, "settle"))
		return 0;
	if (!strcmp(cmd, "del"))
		return hvtrace_ue_delete(reg, arg, &err);
	if (!strcmp(cmd, "raw"))
		return LONG_MIN;

	a2 = strchr(arg, ' ');
	if (a2)
		*a2++ = '\0';
	else
		a2 = arg + strlen(arg);

	if (!strcmp(cmd, "reg")) {
		struct hvtrace_ue_reg r;
		int i;

		slot = atoi(arg);
		t_assert(slot >= 0 && slot < NR_SLOTS);
		if (!slots[slot].open) {
			slots[slot].open = 1;
			slots[slot].n = 0;
		}
		ret = hvtrace_ue_register(reg, (uint64_t)slot + 1, a2, &r, &err);
		if (ret)
			return ret;
		/* The kernel's write index: the event's place in the file. */
		for (i = 0; i < slots[slot].n; i++)
			if (slots[slot].ids[i] == r.id)
				return i;
		t_assert(i < MAX_SLOT_REGS);
		slots[slot].ids[i] = r.id;
		slots[slot].n = i + 1;
		return i;
	}
	if (!strcmp(cmd, "close")) {
		slot = atoi(arg);
		if (slot < 0 || slot >= NR_SLOTS || !slots[slot].open)
			return -EBADF;
		hvt_ue_unregister_all(reg, (uint64_t)slot + 1);
		slots[slot].open = 0;
		slots[slot].n = 0;
		return 0;
	}
	if (!strcmp(cmd, "enable"))
		return hvtrace_ue_set_enabled(reg, arg, HVT_UE_USED_FTRACE,
					  !strcmp(a2, "1"), &err);
	if (!strcmp(cmd, "limit")) {
		long n = (long)hvtrace_ue_count(reg) + atoi(arg);

		t_ok(hvt_ue_set_limit(reg, (unsigned int)n));
		return n;
	}
	if (!strcmp(cmd, "sysctl")) {
		long v = atol(a2);

		t_assert(!strcmp(arg, "user_events_max"));
		if (v > HVT_ABI_MAX_EVENTS)
			v = HVT_ABI_MAX_EVENTS;
		return hvt_ue_set_limit(reg, (unsigned int)v);
	}
	if (!strcmp(cmd, "copy")) {
		char *text;

		if (!strcmp(arg, "dynamic_events"))
			text = hvtrace_ue_dyn_events_text(reg);
		else if (!strcmp(arg, "user_events_status"))
			text = hvtrace_ue_status_text(reg);
		else
			return LONG_MIN;	/* not the registry's file */
		t_assert(text);
		ret = compare_text(arg, a2, text);
		free(text);
		return ret;
	}
	if (!strcmp(cmd, "format"))
		return cmd_format(arg, a2);
	if (!strcmp(cmd, "write")) {
		a3 = strchr(a2, ' ');
		t_assert(a3);
		*a3++ = '\0';
		return cmd_write(atoi(arg), a2, a3);
	}
	t_fail("unknown command in commands.txt: %s", line);
	return 0;
}

int main(void)
{
	char *commands, *results, *cl, *rl, *csave, *rsave;
	char buf[32];
	int i, skipped = 0;

	find_golden();
	commands = read_file("commands.txt", NULL);
	results = read_file("kernel/results.txt", NULL);
	if (!commands || !results)
		t_fail("cannot read %s/commands.txt and kernel/results.txt",
		       golden);
	load_deviations();
	t_ok(hvtrace_ue_registry_create(NULL, &reg));

	rl = strtok_r(results, "\n", &rsave);
	for (cl = strtok_r(commands, "\n", &csave); cl;
	     cl = strtok_r(NULL, "\n", &csave)) {
		const char *kernel, *expect, *ours;
		char *sep;
		long ret;

		if (cl[0] == '#' || !cl[0])
			continue;
		if (!rl)
			t_fail("kernel/results.txt ends before \"%s\"", cl);
		sep = strstr(rl, " => ");
		while (sep && strstr(sep + 1, " => "))
			sep = strstr(sep + 1, " => ");
		if (!sep || (size_t)(sep - rl) != strlen(cl) ||
		    strncmp(rl, cl, strlen(cl)))
			t_fail("results.txt is out of step with commands.txt at \"%s\" (recapture)",
			       cl);
		kernel = sep + 4;

		ret = run(cl);
		rl = strtok_r(NULL, "\n", &rsave);
		if (ret == LONG_MIN) {
			skipped++;
			continue;
		}
		expect = kernel;
		for (i = 0; i < nr_devs; i++) {
			if (!strcmp(devs[i].cmd, cl)) {
				expect = devs[i].result;
				devs[i].used++;
			}
		}
		ours = result_str(ret, buf, sizeof(buf));
		compared_cmds++;
		if (strcmp(ours, expect)) {
			fprintf(stderr,
				"MISMATCH \"%s\": hvtrace %s, expected %s (kernel %s)\n",
				cl, ours, expect, kernel);
			failures++;
		}
	}
	for (i = 0; i < nr_devs; i++) {
		if (!devs[i].used) {
			fprintf(stderr, "deviation never used: %s\n",
				devs[i].cmd);
			failures++;
		}
	}
	printf("%d commands compared with Linux (%d deviations on purpose), %d files byte-identical checks, %d commands not about the registry\n",
	       compared_cmds, nr_devs, compared_files, skipped);
	hvtrace_ue_registry_destroy(reg);
	for (i = 0; i < nr_devs; i++) {
		free(devs[i].cmd);
		free(devs[i].result);
	}
	free(commands);
	free(results);
	if (failures)
		t_fail("%d mismatches with the kernel", failures);
	return 0;
}
