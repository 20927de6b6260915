// SPDX-License-Identifier: MIT
/*
 * Fuzz the user_events grammar with hostile definitions (a guest sends
 * them): the parser, the format / print fmt / dynamic_events text, the
 * record check, libtraceevent on every accepted format, and the registry
 * fed the input as dynamic_events lines and registrations.
 *
 * Properties checked besides memory safety: an accepted definition has
 * packed offsets from 8 that add up to record_size; its dynamic_events
 * line parses back to the same layout and matches the event; its format
 * parses with libtraceevent; the registry ends empty once every owner is
 * gone and dynamic_events is cleared.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event-parse.h>

#include "../../host/userevents/userevents-local.h"

#define MAX_INPUT 8192

/*
 * libtraceevent 1.7.1 leaks a little on some of its own parse errors (for
 * field names the kernel accepts but that are not C identifiers, such as
 * "!"); those leaks are not ours to find.
 */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libtraceevent.so\n";
}

static void check(int cond)
{
	if (!cond)
		abort();
}

static void check_def(const struct hvtrace_ue_def *def, const uint8_t *rest,
		      size_t rest_len)
{
	struct hvtrace_ue_def *again;
	struct hvtrace_ue_error err;
	struct tep_handle *tep;
	uint64_t off = HVT_UE_COMMON_SIZE;
	char *fmt, *pf, *line, *args;
	uint32_t i;

	for (i = 0; i < def->nr_fields; i++) {
		check(def->fields[i].offset == off);
		check(def->fields[i].size > 0);
		off += def->fields[i].size;
	}
	check(off == def->record_size);

	fmt = hvt_ue_format_text(def, HVT_UE_ID_BASE);
	pf = hvtrace_ue_print_fmt(def);
	line = hvtrace_ue_dyn_line(def);
	check(fmt && pf && line);
	check(strstr(fmt, pf) != NULL);

	/* The dynamic_events line describes the same event. */
	check(!strncmp(line, HVT_UE_PREFIX, 2));
	check(hvt_ue_parse(line + 2, &again, &err) == 0);
	check(again->nr_fields == def->nr_fields);
	check(again->record_size == def->record_size);
	for (i = 0; i < def->nr_fields; i++) {
		check(!strcmp(again->fields[i].type, def->fields[i].type));
		check(!strcmp(again->fields[i].name, def->fields[i].name));
		check(again->fields[i].size == def->fields[i].size);
	}
	args = strchr(line, ' ');
	check(hvtrace_ue_match_args(def, args ? args + 1 : NULL));
	hvt_ue_def_free(again);

	/* Whatever follows the definition, taken as a record. */
	if (rest_len >= def->record_size)
		(void)hvt_ue_validate_record(def, rest, rest_len);

	tep = tep_alloc();
	if (tep) {
		tep_set_long_size(tep, 8);
		(void)tep_parse_event(tep, fmt, strlen(fmt), HVT_UE_SYSTEM);
		tep_free(tep);
	}
	free(fmt);
	free(pf);
	free(line);
}

struct names {
	char *v[16];
	int n;
};

static int collect(const struct hvtrace_ue_event_info *info, void *arg)
{
	struct names *names = arg;

	if (names->n < 16)
		names->v[names->n++] = strdup(info->name);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hvtrace_ue_registry_config cfg = { .max_events = 16 };
	struct hvtrace_ue_registry *reg;
	struct hvtrace_ue_error err;
	struct hvtrace_ue_def *def;
	struct hvtrace_ue_reg r;
	size_t n = size < MAX_INPUT ? size : MAX_INPUT, len;
	struct hvtrace_ue_event_info info;
	struct names names;
	char *text, *s;
	size_t l;
	int i;

	text = malloc(n + 1);
	if (!text)
		return 0;
	memcpy(text, data, n);
	text[n] = '\0';
	len = strlen(text);	/* the definition ends at the first NUL */

	if (hvt_ue_parse(text, &def, &err) == 0) {
		check_def(def, data + len, size - len);
		hvt_ue_def_free(def);
	} else {
		check(err.code < 0 && err.msg[0]);
	}

	if (hvtrace_ue_registry_create(&cfg, &reg))
		goto out;
	/* Every line as a dynamic_events command, then as registrations. */
	(void)hvt_ue_dyn_write(reg, text, len, &err);
	(void)hvtrace_ue_register(reg, 1, text, &r, &err);
	for (s = text; *s; s += l + (s[l] == '\n')) {
		char line[HVT_UE_MAX_DESC];

		l = strcspn(s, "\n");
		if (l >= sizeof(line))
			continue;
		memcpy(line, s, l);
		line[l] = '\0';
		/* Enable every other registered event for a while. */
		if (hvtrace_ue_register(reg, 2, line, &r, &err) == 0 &&
		    (r.id & 1) && hvtrace_ue_lookup_id(reg, r.id, &info) == 0)
			(void)hvtrace_ue_set_enabled(reg, info.name,
						 HVT_UE_USED_FTRACE, true,
						 &err);
		(void)hvtrace_ue_dyn_apply(reg, line, &err);
	}
	free(hvtrace_ue_status_text(reg));
	free(hvtrace_ue_dyn_events_text(reg));
	hvt_ue_unregister_all(reg, 1);
	hvt_ue_unregister_all(reg, 2);
	/* Consumers off, persistent events gone: nothing may remain. */
	names.n = 0;
	hvtrace_ue_foreach(reg, collect, &names);
	for (i = 0; i < names.n; i++) {
		if (names.v[i])
			(void)hvtrace_ue_set_enabled(reg, names.v[i],
						 HVT_UE_USED_FTRACE, false,
						 &err);
		free(names.v[i]);
	}
	(void)hvtrace_ue_dyn_clear(reg, &err);
	check(hvtrace_ue_count(reg) == 0);
	hvtrace_ue_registry_destroy(reg);
out:
	free(text);
	return 0;
}
