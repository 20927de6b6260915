// SPDX-License-Identifier: MIT
/*
 * hvtrace format - show the format file of a user_events definition.
 *
 * Runs the definitions through a private user_events registry (the one the
 * daemon uses), so ids, matching and errors are exactly what a guest
 * registration would get.  Needs no daemon.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include <hvtrace-userevents.h>

#define FORMAT_USAGE							\
	"usage: hvtrace format [--id N] [--print-fmt | --dyn] DEFINITION...\n" \
	"\n"								\
	"Print the events/user_events/NAME/format file that hvtrace generates\n" \
	"for a user_events definition, byte for byte what Linux 6.12 prints,\n" \
	"or the reason the definition is refused.  No daemon is needed.\n" \
	"\n"								\
	"A definition is what a process registers (512 bytes at most):\n" \
	"  NAME [TYPE FIELD[;TYPE FIELD...]]\n"				\
	"with TYPE one of s8 s16 s32 s64 u8 u16 u32 u64 char short int,\n" \
	"'unsigned char|short|int', char[N] (N = 1..1024, decimal, 0x hex or\n" \
	"0 octal), '__data_loc char[]', '__rel_loc char[]', or\n"	\
	"'struct TYPE FIELD SIZE'.  A leading \"u:\" (the dynamic_events\n" \
	"form) is accepted.  Several definitions are registered in order, as\n" \
	"into one registry: the same name with the same fields is the same\n" \
	"event, the same name with other fields is refused.\n"		\
	"\n"								\
	"options:\n"							\
	"  --id N        id of the first event (default 32768, the first id\n" \
	"                the registry hands out); later events count up\n" \
	"  --print-fmt   print only the print fmt\n"			\
	"  --dyn         print the dynamic_events line instead\n"	\
	"  -h, --help    this text\n"					\
	"\n"								\
	"exit status: 0 all definitions accepted, 1 one was refused (the\n" \
	"message names the field and the reason), 2 bad command line.\n" \
	"\n"								\
	"example:\n"							\
	"  hvtrace format 'sched_sample u32 cpu;char[16] comm;__rel_loc char[] msg'\n"

enum format_mode { FMT_FILE, FMT_PRINT, FMT_DYN };

static int format_one(struct hvtrace_ue_registry *reg, const char *verb,
		      const char *def, enum format_mode mode, int *printed)
{
	struct hvtrace_ue_event_info info;
	struct hvtrace_ue_error err;
	struct hvtrace_ue_reg r;
	char *text;
	int ret;

	if (!strncmp(def, HVT_UE_PREFIX, 2)) {
		def += 2;
		while (*def == ' ' || *def == '\t')
			def++;
	}
	ret = hvtrace_ue_register(reg, 1, def, &r, &err);
	if (ret)
		return hvt_cli_error(verb, "%s (%s)", err.msg,
				     hvtrace_ue_errno_name(ret));
	if (hvtrace_ue_lookup_id(reg, r.id, &info))
		return hvt_cli_error(verb, "event vanished");
	if (mode == FMT_FILE)
		text = strdup(info.format);
	else if (mode == FMT_PRINT)
		text = hvtrace_ue_print_fmt(info.def);
	else
		text = hvtrace_ue_dyn_line(info.def);
	if (!text)
		return hvt_cli_error(verb, "out of memory");
	if ((*printed)++ && mode == FMT_FILE)
		putchar('\n');
	fputs(text, stdout);
	if (mode != FMT_FILE)
		putchar('\n');
	free(text);
	return HVT_EXIT_OK;
}

static int format_run(int argc, char **argv)
{
	struct hvtrace_ue_registry_config cfg = { 0 };
	enum format_mode mode = FMT_FILE;
	unsigned long long id = HVT_UE_ID_BASE;
	struct hvtrace_ue_registry *reg;
	int i, ret, ndefs = 0, printed = 0, only_defs = 0;
	const char **defs;
	const char *verb = argv[0];

	defs = calloc((size_t)argc, sizeof(*defs));
	if (!defs)
		return hvt_cli_error(verb, "out of memory");
	/* Options may come before or after the definitions; "--" ends them. */
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!only_defs && !strcmp(a, "--")) {
			only_defs = 1;
		} else if (only_defs || a[0] != '-' || !a[1]) {
			defs[ndefs++] = a;
		} else if (!strcmp(a, "--id") || !strncmp(a, "--id=", 5)) {
			const char *v = a[4] == '=' ? a + 5 : NULL;

			if (!v && i + 1 < argc)
				v = argv[++i];
			if (!v || hvt_cli_parse_u64(v, &id) || id == 0 ||
			    id > HVT_UE_ID_MAX) {
				free(defs);
				return hvt_cli_usage(verb,
						     "--id %s: expected a number 1..%u",
						     v ? v : "(missing)",
						     HVT_UE_ID_MAX);
			}
		} else if (!strcmp(a, "--print-fmt")) {
			mode = FMT_PRINT;
		} else if (!strcmp(a, "--dyn")) {
			mode = FMT_DYN;
		} else {
			free(defs);
			return hvt_cli_usage(verb, "unknown option '%s'", a);
		}
	}
	if (ndefs <= 0) {
		free(defs);
		return hvt_cli_usage(verb, "no definition given");
	}
	if (id + (unsigned long long)ndefs - 1 > HVT_UE_ID_MAX) {
		free(defs);
		return hvt_cli_usage(verb,
				     "--id %llu leaves no room for %d events",
				     id, ndefs);
	}

	cfg.id_base = (unsigned int)id;
	cfg.max_events = (unsigned int)ndefs;
	ret = hvtrace_ue_registry_create(&cfg, &reg);
	if (ret) {
		free(defs);
		return hvt_cli_error(verb, "cannot create a registry: %s",
				     strerror(-ret));
	}

	ret = HVT_EXIT_OK;
	for (i = 0; i < ndefs && ret == HVT_EXIT_OK; i++)
		ret = format_one(reg, verb, defs[i], mode, &printed);
	hvtrace_ue_registry_destroy(reg);
	free(defs);
	if (ret == HVT_EXIT_OK && fflush(stdout))
		return hvt_cli_error(verb, "cannot write the output: %s",
				     strerror(errno));
	return ret;
}

HVT_CLI_COMMAND(format, "format", "show the format file of a user_events definition",
		FORMAT_USAGE, format_run);
