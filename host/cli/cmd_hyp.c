// SPDX-License-Identifier: MIT
/*
 * hvtrace hyp - the EL2 hypervisor rig's trace area, from the host.
 *
 * The rig (hyp/, docs/hyp.md) keeps its trace area at a fixed offset in
 * QEMU's guest-RAM file (hvtrace/hyp_layout.h).  This verb knows that offset
 * and the hypervisor's event table; everything else is the library's:
 * hvtrace_area_open() maps the area (read-only, plus the control page for
 * attach), hvtrace_cpu_get_stats() gives the counters.  Printing events
 * is 'hvtrace stream RAMFILE@0x1000000+16M' (the library's text output);
 * this verb only does what stream cannot: wait for the hypervisor to
 * format its area, enable a chosen set of events, show the formats.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <hvtrace.h>
#include <hvtrace/hyp_events.h>
#include <hvtrace/hyp_layout.h>

#include "cli.h"

#define VERB "hyp"

static const char hyp_usage[] =
	"usage: hvtrace hyp formats [DIR]\n"
	"       hvtrace hyp info RAMFILE [--wait S]\n"
	"       hvtrace hyp attach RAMFILE [--events LIST] [--wait S]\n"
	"\n"
	"The EL2 hypervisor rig (qemu-scripts/run-hyp.sh, docs/hyp.md) keeps\n"
	"its trace area at offset 0x1000000 of QEMU's guest-RAM file\n"
	"RAMFILE.  Its events print with\n"
	"  hvtrace stream RAMFILE@0x1000000+16M\n"
	"\n"
	"formats  print the events/hypervisor/EVENT/{format,id} files, or\n"
	"         write them under DIR (laid out like tracefs)\n"
	"info     the area's geometry, writer state and per-CPU counters\n"
	"         (also after QEMU is gone)\n"
	"attach   take the control page, enable the events of LIST (comma-\n"
	"         separated names, or all; default all) and exit: a\n"
	"         hypervisor booted with wait=MS starts its payload then, and\n"
	"         'hvtrace stream --read-only' or a post-mortem read shows\n"
	"         only those events\n"
	"\n"
	"options:\n"
	"  --wait S      wait up to S seconds for the hypervisor to format its\n"
	"                area (default: 0 for info, 30 for attach)\n"
	"  --events LIST the events to enable (attach)\n"
	"  -h, --help    this text\n";

static void hyp_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Open the rig's area, waiting up to @wait_s for it to be formatted. */
static int hyp_open(const char *path, unsigned int flags, double wait_s,
		    struct hvtrace_area **a, struct hvtrace_area_info *info)
{
	uint64_t end = hvt_cli_now_ns() + (uint64_t)(wait_s * 1e9);
	int ret;

	/* -EAGAIN: not formatted yet; -ENOENT/-EINVAL: the file is not
	 * there or not sized yet (QEMU creates it at start). */
	while ((ret = hvtrace_area_open(path, HVT_HYP_AREA_OFFSET,
					HVT_HYP_AREA_SIZE, flags, a)) &&
	       (ret == -EAGAIN || ret == -ENOENT || ret == -EINVAL) &&
	       hvt_cli_now_ns() < end)
		hyp_sleep_ms(2);
	if (ret)
		return hvt_cli_error(VERB, "%s%s", hvtrace_last_error(),
				     ret == -EAGAIN ? " (--wait S waits for the hypervisor to format it)" : "");
	hvtrace_area_get_info(*a, info);
	if (info->writer_kind != HVT_WRITER_HYP) {
		hvtrace_area_close(*a);
		return hvt_cli_error(VERB, "%s holds an area of writer kind %u, not the hypervisor's (%u)",
				     path, info->writer_kind, HVT_WRITER_HYP);
	}
	return 0;
}

static int hyp_write_file(const char *dir, const struct hvt_hypevent *e,
			  const char *file, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/events/%s/%s/%s", dir, e->system,
		 e->name, file);
	f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f))
		return hvt_cli_error(VERB, "cannot write %s: %s", path,
				     strerror(errno));
	return 0;
}

static int hyp_formats(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : NULL;
	unsigned int i;

	if (argc > 2)
		return hvt_cli_usage(VERB, "formats takes one DIR at most");
	for (i = 0; i < hvt_hypevents_count(); i++) {
		const struct hvt_hypevent *e = hvt_hypevents_get(i);
		const char *sub[] = { "events", e->system, e->name };
		char path[512];
		size_t len;
		int d;

		if (!dir) {
			printf("== events/%s/%s/format\n%s== events/%s/%s/id\n%s",
			       e->system, e->name, e->format, e->system,
			       e->name, e->id_text);
			continue;
		}
		len = (size_t)snprintf(path, sizeof(path), "%s", dir);
		for (d = 0; d < 3 && len < sizeof(path); d++) {
			len += (size_t)snprintf(path + len, sizeof(path) - len,
						"/%s", sub[d]);
			if (len < sizeof(path) && mkdir(path, 0755) &&
			    errno != EEXIST)
				return hvt_cli_error(VERB, "cannot create %s: %s",
						     path, strerror(errno));
		}
		if (hyp_write_file(dir, e, "format", e->format) ||
		    hyp_write_file(dir, e, "id", e->id_text))
			return HVT_EXIT_FAIL;
	}
	return HVT_EXIT_OK;
}

/*
 * Enable the events of a comma-separated list of names ("all": every
 * one) and disable the others; nothing changes when a name is unknown.
 */
static int hyp_enable(struct hvtrace_area *a, const char *list)
{
	uint64_t want = 0;
	char *copy, *tok, *save = NULL;
	unsigned int i, n = hvt_hypevents_count();
	int ret = 0;

	if (!strcmp(list, "all"))
		want = ~0ULL;
	copy = want ? NULL : strdup(list);
	if (!want && !copy)
		return hvt_cli_error(VERB, "out of memory");
	for (tok = copy ? strtok_r(copy, ",", &save) : NULL; tok && !ret;
	     tok = strtok_r(NULL, ",", &save)) {
		const struct hvt_hypevent *e = hvt_hypevents_by_name(tok);

		if (!e || e->index >= 64)
			ret = hvt_cli_error(VERB, "no hypervisor event '%s' (see hvtrace hyp formats)",
					    tok);
		else
			want |= 1ULL << e->index;
	}
	free(copy);
	for (i = 0; i < n && !ret; i++)
		if (hvtrace_area_set_event(a, i, i < 64 && (want >> i & 1)))
			ret = hvt_cli_error(VERB, "cannot enable events: %s",
					    hvtrace_last_error());
	return ret;
}

static const char *hyp_mode(const struct hvtrace_area_info *info)
{
	return info->mode == HVT_MODE_CONSUME ? "consume" : "overwrite";
}

/* FILE [--wait S] [--events LIST]: the options info and attach share. */
static int hyp_args(int argc, char **argv, bool events, const char **file,
		    double *wait_s, const char **list)
{
	int i;

	*file = NULL;
	for (i = 1; i < argc; i++) {
		bool has_val = i + 1 < argc;

		if (!strcmp(argv[i], "--wait") && has_val) {
			if (hvt_cli_parse_seconds(argv[++i], wait_s))
				return hvt_cli_usage(VERB, "--wait takes seconds, not '%s'",
						     argv[i]);
		} else if (events && !strcmp(argv[i], "--events") && has_val) {
			*list = argv[++i];
		} else if (argv[i][0] != '-' && !*file) {
			*file = argv[i];
		} else {
			return hvt_cli_usage(VERB, "%s: unexpected '%s'",
					     argv[0], argv[i]);
		}
	}
	if (!*file)
		return hvt_cli_usage(VERB, "%s needs the guest-RAM file",
				     argv[0]);
	return 0;
}

static int hyp_info(int argc, char **argv)
{
	struct hvtrace_area_info info;
	struct hvtrace_area *a;
	const char *file;
	double wait_s = 0;
	uint32_t state = 0;
	int ret, cpu;

	ret = hyp_args(argc, argv, false, &file, &wait_s, NULL);
	if (ret || (ret = hyp_open(file, 0, wait_s, &a, &info)))
		return ret;
	hvtrace_area_writer_state(a, &state, NULL);
	printf("area %s: writer '%s' kind %u, %u CPUs x %u sub-buffers of %u bytes, %s mode, state %s, generation %llu, counter %llu Hz\n",
	       file, info.name, info.writer_kind, info.nr_cpus,
	       info.nr_subbufs, info.subbuf_size, hyp_mode(&info),
	       state == HVT_STATE_STOPPED ? "STOPPED" :
	       state == HVT_STATE_RUNNING ? "RUNNING" : "INIT",
	       (unsigned long long)info.generation,
	       (unsigned long long)info.clock_freq_hz);
	for (cpu = 0; cpu < (int)info.nr_cpus; cpu++) {
		struct hvtrace_cpu_stats st;

		if (hvtrace_cpu_get_stats(a, cpu, &st))
			continue;
		printf("cpu%d: written %llu unread %llu lost %llu (overrun %llu dropped %llu) errors %llu\n",
		       cpu, (unsigned long long)st.written,
		       (unsigned long long)st.entries,
		       (unsigned long long)st.lost,
		       (unsigned long long)st.overrun,
		       (unsigned long long)st.dropped,
		       (unsigned long long)st.errors);
	}
	hvtrace_area_close(a);
	return HVT_EXIT_OK;
}

static int hyp_attach(int argc, char **argv)
{
	struct hvtrace_area_info info;
	const char *file, *events = "all";
	struct hvtrace_area *a;
	double wait_s = 30;
	int ret;

	ret = hyp_args(argc, argv, true, &file, &wait_s, &events);
	if (ret || (ret = hyp_open(file, HVTRACE_OPEN_CONTROL, wait_s, &a,
				   &info)))
		return ret;
	ret = hyp_enable(a, events);
	if (!ret)
		printf("attached to %s: %u CPUs x %u sub-buffers of %u bytes, %s mode; events: %s\n",
		       file, info.nr_cpus, info.nr_subbufs, info.subbuf_size,
		       hyp_mode(&info), events);
	hvtrace_area_close(a);
	return ret;
}

static int hyp_run(int argc, char **argv)
{
	if (argc < 2)
		return hvt_cli_usage(VERB, "which command: formats, info or attach?");
	if (!strcmp(argv[1], "formats"))
		return hyp_formats(argc - 1, argv + 1);
	if (!strcmp(argv[1], "info"))
		return hyp_info(argc - 1, argv + 1);
	if (!strcmp(argv[1], "attach"))
		return hyp_attach(argc - 1, argv + 1);
	if (argv[1][0] == '-')
		return hvt_cli_usage(VERB, "unknown option '%s'", argv[1]);
	return hvt_cli_usage(VERB, "unknown command '%s' (formats, info or attach)",
			     argv[1]);
}

HVT_CLI_COMMAND(hyp, VERB,
		"the EL2 hypervisor rig's area: formats, info, attach",
		hyp_usage, hyp_run);
