// SPDX-License-Identifier: MIT
/*
 * hvt-hyp-test - the EL2 rig's end-to-end test driver.
 *
 *   hvt-hyp-test check FILE        verify a run: counts, order, time, losses
 *   hvt-hyp-test enable-test FILE  switch events off and on while it runs
 *   hvt-hyp-test garbage-test FILE scribble on the control page while it runs
 *   hvt-hyp-test causality FILE    clock sync and causality round trips
 *
 * FILE is the QEMU guest-RAM file (memory-backend-file mem-path); the
 * trace area sits at HVT_HYP_AREA_OFFSET in it (see hvtrace/hyp_layout.h).
 * A user starts, inspects and prints the rig with 'hvtrace hyp' and
 * 'hvtrace stream'; this program only checks it (the scripts in tests/hyp).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "hyp_tool.h"

static int opt_value(const struct drv_opt *o, const char *s)
{
	char *end;

	errno = 0;
	switch (o->kind) {
	case DRV_STR:
		*(const char **)o->val = s;
		return 0;
	case DRV_SECONDS:
		*(double *)o->val = strtod(s, &end);
		return errno || end == s || *end || *(double *)o->val < 0 ?
			       -EINVAL : 0;
	default: {
		unsigned long long v = strtoull(s, &end, 0);

		if (errno || end == s || *end || *s == '-')
			return -EINVAL;
		if (o->kind == DRV_U64) {
			*(uint64_t *)o->val = v;
			return 0;
		}
		if (!v || v > INT32_MAX)
			return -EINVAL;
		*(pid_t *)o->val = (pid_t)v;
		return 0;
	}
	}
}

const char *drv_parse(int argc, char **argv, const struct drv_opt *opts,
		      const char *usage)
{
	const char *file = NULL;
	int i;

	for (i = 1; i < argc; i++) {
		const struct drv_opt *o = opts;

		if (strncmp(argv[i], "--", 2)) {
			if (file)
				die("%s", usage);
			file = argv[i];
			continue;
		}
		while (o->name && strcmp(o->name, argv[i] + 2))
			o++;
		if (!o->name)
			die("unknown option '%s'\n%s", argv[i], usage);
		if (o->kind == DRV_FLAG) {
			*(bool *)o->val = true;
			continue;
		}
		if (++i >= argc || opt_value(o, argv[i]))
			die("--%s takes %s, not '%s'", o->name,
			    o->kind == DRV_STR ? "a value" :
			    o->kind == DRV_SECONDS ? "seconds" :
			    o->kind == DRV_PID ? "a process id" : "a count",
			    i < argc ? argv[i] : "nothing");
	}
	if (!file)
		die("%s", usage);
	return file;
}

static void usage(FILE *out)
{
	fputs("usage: hvt-hyp-test COMMAND FILE [OPTIONS]\n"
	      "  check FILE               verify a run (counts, order, time, losses)\n"
	      "  enable-test FILE         enable/disable while running\n"
	      "  garbage-test FILE        hostile control page while running\n"
	      "  causality FILE           clock sync and causality round trips\n"
	      "FILE is the QEMU guest-RAM file; the area is at file offset 0x1000000.\n",
	      out);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*run)(int argc, char **argv);
	} cmds[] = {
		{ "check", cmd_check },
		{ "enable-test", cmd_enable_test },
		{ "garbage-test", cmd_garbage_test },
		{ "causality", cmd_causality },
	};
	unsigned int i;

	/* Sleeps while polling the area should be as short as asked. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].run(argc - 1, argv + 1);
	fprintf(stderr, "hvt-hyp-test: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
