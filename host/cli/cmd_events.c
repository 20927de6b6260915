// SPDX-License-Identifier: MIT
/*
 * hvtrace events - user events of a remote, through hvtraced.
 *
 * The texts are the kernel's: 'status' prints user_events_status, 'list'
 * prints dynamic_events; 'define' and 'delete' take dynamic_events lines.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace.h>

#include "cli.h"
#include <hvtrace-daemon.h>
#include <hvtrace-userevents.h>

static const char events_usage[] =
	"usage: hvtrace events COMMAND [--remote NAME] [--socket PATH] [ARGS]\n"
	"\n"
	"User events that guests and local agents registered, as hvtraced\n"
	"keeps them (the host owns ids, formats and enable state).  A remote\n"
	"that is an area alone (a hypervisor or a loopback writer that\n"
	"'hvtrace daemon attach' attached) has its writer's own events\n"
	"instead: status, enable, disable, format and tracing work on them\n"
	"(NAME, SYSTEM/NAME or globs such as 'hypervisor/*'); define and\n"
	"delete are refused.\n"
	"\n"
	"commands:\n"
	"  status              user_events_status: each event, '# Used by\n"
	"                      ftrace' when enabled, then Active: and Busy:\n"
	"  list                dynamic_events: one 'u:NAME fields' line each\n"
	"  define LINE...      define persistent events: 'u:NAME fields'\n"
	"                      lines (the 'u:' may be left out); several\n"
	"                      words make one definition; '-' reads lines\n"
	"                      from stdin\n"
	"  delete WHAT...      delete events: '!u:NAME fields' (fields\n"
	"                      must match), 'u:NAME' or NAME; refused\n"
	"                      (EBUSY) while registered or enabled\n"
	"  enable NAME...      enable events for tracing ('*': all); a\n"
	"                      guest's kernel events too, through its agent:\n"
	"                      SYSTEM:EVENT (sched:sched_waking), a SYSTEM,\n"
	"                      or any name that is no user event\n"
	"  disable NAME...     disable events ('*': all; kernel events as\n"
	"                      for enable)\n"
	"  format [NAME...]    format files (default: header_page,\n"
	"                      header_event and every event)\n"
	"  tracing [on|off]    show or set tracing_on of the remote\n"
	"  cmdlines            saved_cmdlines: PID COMM of the remote's\n"
	"                      writers\n"
	"\n"
	"options:\n"
	"  --remote NAME       the remote (needed when hvtraced has several)\n"
	"  --socket PATH       hvtraced's socket (default $HVTRACED_SOCKET or\n"
	"                      " HVTRACE_DAEMON_DEFAULT_SOCKET ")\n"
	"  -v, --verbose       print what each change did\n"
	"\n"
	"examples:\n"
	"  hvtrace events define 'u:myapp_req u32 id; __rel_loc char[] path'\n"
	"  hvtrace events enable myapp_req\n"
	"  hvtrace events status --remote vm1\n"
	"  hvtrace events delete \\\n"
	"          '!u:myapp_req u32 id; __rel_loc char[] path'\n";

struct ev_ctx {
	struct hvtrace_daemon *dc;
	struct hvt_remote_rec rec;
	int verbose;
};

static int ev_fail(const char *what)
{
	return hvt_cli_error("events", "%s%s%s", what ? what : "",
			     what ? ": " : "", hvtrace_last_error());
}

static int ev_print_text(struct ev_ctx *x, uint32_t kind)
{
	size_t len;
	char *t;
	int ret;

	ret = hvtrace_daemon_get_text(x->dc, x->rec.id, kind, &t, &len);
	if (ret)
		return ev_fail(NULL);
	fwrite(t, 1, len, stdout);
	free(t);
	return HVT_EXIT_OK;
}

/* One request answered by a RESULT; prints the daemon's reason on error. */
static int ev_result(struct ev_ctx *x, uint16_t type, uint32_t arg,
		     const char *s, const char *what)
{
	struct hvt_m_result res;
	struct hvt_msg m;
	char text[HVT_PROTO_TEXT_MAX + 1];
	int ret;

	if (strlen(s) > HVT_PROTO_DEF_MAX)
		return hvt_cli_error("events", "%s: longer than %u bytes",
				     what, HVT_PROTO_DEF_MAX);
	memset(&m, 0, sizeof(m));
	m.type = type;
	m.chan = x->rec.id;
	m.u.arg.arg = arg;
	m.u.arg.s.ptr = s;
	m.u.arg.s.len = (uint32_t)strlen(s);
	ret = hvtrace_daemon_call_result(x->dc, &m, &res, text, sizeof(text));
	if (ret) {
		hvt_cli_error("events", "%s '%s': %s (%s)", what, s,
			      text[0] ? text : strerror(-ret),
			      hvtrace_ue_errno_name(ret));
		return HVT_EXIT_FAIL;
	}
	if (x->verbose) {
		if (res.id)
			printf("%s %s: id %u, enable bit %u\n", what, s,
			       res.id, res.bit);
		else
			printf("%s %s%s%s\n", what, s, text[0] ? ": " : "",
			       text);
	}
	return HVT_EXIT_OK;
}

/* Apply define/delete to each line of @buf. */
static int ev_lines(struct ev_ctx *x, uint16_t type, char *buf,
		    const char *what)
{
	int rc = HVT_EXIT_OK;
	char *line, *save = NULL;

	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *p = line, *end;

		while (*p == ' ' || *p == '\t')
			p++;
		end = p + strlen(p);
		while (end > p && (end[-1] == ' ' || end[-1] == '\t' ||
				   end[-1] == '\r'))
			*--end = '\0';
		if (!*p || *p == '#')
			continue;
		if (ev_result(x, type, 0, p, what))
			rc = HVT_EXIT_FAIL;
	}
	return rc;
}

static int ev_define_delete(struct ev_ctx *x, uint16_t type, int argc,
			    char **argv)
{
	const char *what = type == HVT_MSG_DEFINE ? "define" : "delete";
	size_t len = 0, cap = 0;
	char *buf = NULL;
	int i, rc;

	if (!argc)
		return hvt_cli_usage("events", "%s needs a definition", what);
	if (argc == 1 && !strcmp(argv[0], "-")) {
		char chunk[4096];
		size_t n;

		while ((n = fread(chunk, 1, sizeof(chunk), stdin)) > 0) {
			char *nb;

			if (len + n + 1 > cap) {
				cap = (len + n + 1) * 2;
				nb = realloc(buf, cap);
				if (!nb) {
					free(buf);
					return hvt_cli_error("events",
							     "out of memory");
				}
				buf = nb;
			}
			memcpy(buf + len, chunk, n);
			len += n;
		}
		if (!buf)
			return HVT_EXIT_OK;
		buf[len] = '\0';
	} else if (type == HVT_MSG_DELETE) {
		/* Each argument is one thing to delete. */
		rc = HVT_EXIT_OK;
		for (i = 0; i < argc; i++)
			if (ev_result(x, type, 0, argv[i], what))
				rc = HVT_EXIT_FAIL;
		return rc;
	} else {
		/* Several words are one definition, like the shell wrote it
		 * without quotes; one argument may hold several lines. */
		for (i = 0; i < argc; i++)
			len += strlen(argv[i]) + 1;
		buf = malloc(len + 1);
		if (!buf)
			return hvt_cli_error("events", "out of memory");
		buf[0] = '\0';
		for (i = 0; i < argc; i++) {
			if (i)
				strcat(buf, " ");
			strcat(buf, argv[i]);
		}
	}
	rc = ev_lines(x, type, buf, what);
	free(buf);
	return rc;
}

static int ev_format_cb_print(struct ev_ctx *x, int argc, char **argv)
{
	struct hvt_msg m, r;
	int ret, parts, rc = HVT_EXIT_OK, i, shown = 0;

	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_FORMATS;
	m.chan = x->rec.id;
	ret = hvtrace_daemon_call(x->dc, &m, &r, HVTRACE_DAEMON_TIMEOUT_MS, NULL,
			       NULL);
	for (parts = 0; !ret && parts < 65536; parts++) {
		bool want = !argc;

		if (r.type == HVT_MSG_ERROR)
			return hvt_cli_error("events", "%.*s",
					     (int)r.u.result.text.len,
					     r.u.result.text.ptr);
		if (r.type != HVT_MSG_FORMATS)
			return hvt_cli_error("events", "unexpected reply");
		for (i = 0; i < argc; i++)
			if (strlen(argv[i]) == r.u.format.name.len &&
			    !memcmp(argv[i], r.u.format.name.ptr,
				    r.u.format.name.len))
				want = true;
		if (want) {
			if (!argc || argc > 1)
				printf("==> %.*s <==\n",
				       (int)r.u.format.name.len,
				       r.u.format.name.ptr);
			fwrite(r.u.format.text.ptr, 1, r.u.format.text.len,
			       stdout);
			shown++;
		}
		if (!(r.flags & HVT_PF_MORE))
			break;
		do {
			ret = hvtrace_daemon_recv(x->dc, &r,
					       HVTRACE_DAEMON_TIMEOUT_MS);
		} while (ret == 1 && r.req != m.req);
		ret = ret == 1 ? 0 : ret ? ret : -ETIMEDOUT;
	}
	if (ret)
		return ev_fail("formats");
	if (argc && shown < argc) {
		hvt_cli_error("events", "%d of the events asked for do not "
					"exist (see 'hvtrace events list')",
			      argc - shown);
		rc = HVT_EXIT_FAIL;
	}
	return rc;
}

static int events_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "remote", required_argument, NULL, 'r' },
		{ "socket", required_argument, NULL, 's' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *remote = NULL, *sock = NULL, *cmd;
	struct ev_ctx x = { 0 };
	int opt, rc, i;

	optind = 1;
	opterr = 0;
	/* '+': options stop at the first non-option only after the
	 * command, so 'define -' and '!u:...' reach the command. */
	while ((opt = getopt_long(argc, argv, "+:vh", opts, NULL)) != -1) {
		switch (opt) {
		case 'r':
			remote = optarg;
			break;
		case 's':
			sock = optarg;
			break;
		case 'v':
			x.verbose = 1;
			break;
		case 'h':
			hvt_cli_print_usage("events");
			return HVT_EXIT_OK;
		default:
			return hvt_cli_bad_option("events", argv, opt);
		}
	}
	if (optind >= argc)
		return hvt_cli_usage("events", "missing command (status, list, "
					       "define, delete, enable, "
					       "disable, format, tracing, "
					       "cmdlines)");
	cmd = argv[optind++];
	/* Options may also follow the command. */
	{
		int k = optind;

		while (k < argc) {
			if (!strcmp(argv[k], "--remote") && k + 1 < argc) {
				remote = argv[k + 1];
			} else if (!strcmp(argv[k], "--socket") &&
				   k + 1 < argc) {
				sock = argv[k + 1];
			} else if (!strcmp(argv[k], "-v") ||
				   !strcmp(argv[k], "--verbose")) {
				x.verbose = 1;
				memmove(&argv[k], &argv[k + 1],
					(size_t)(argc - k - 1) * sizeof(*argv));
				argc--;
				continue;
			} else if (!strcmp(argv[k], "--")) {
				memmove(&argv[k], &argv[k + 1],
					(size_t)(argc - k - 1) * sizeof(*argv));
				argc--;
				break;
			} else {
				k++;
				continue;
			}
			memmove(&argv[k], &argv[k + 2],
				(size_t)(argc - k - 2) * sizeof(*argv));
			argc -= 2;
		}
	}
	if (strcmp(cmd, "status") && strcmp(cmd, "list") &&
	    strcmp(cmd, "define") && strcmp(cmd, "delete") &&
	    strcmp(cmd, "enable") && strcmp(cmd, "disable") &&
	    strcmp(cmd, "format") && strcmp(cmd, "tracing") &&
	    strcmp(cmd, "cmdlines"))
		return hvt_cli_usage("events", "unknown command '%s'", cmd);

	if (hvtrace_daemon_open(sock, &x.dc))
		return ev_fail(NULL);
	if (hvtrace_daemon_find_remote(x.dc, remote, &x.rec)) {
		rc = ev_fail(NULL);
		goto out;
	}
	argc -= optind;
	argv += optind;
	if (!strcmp(cmd, "status")) {
		rc = ev_print_text(&x, HVT_TEXT_STATUS);
	} else if (!strcmp(cmd, "list")) {
		rc = ev_print_text(&x, HVT_TEXT_DYNAMIC_EVENTS);
	} else if (!strcmp(cmd, "cmdlines")) {
		rc = ev_print_text(&x, HVT_TEXT_CMDLINES);
	} else if (!strcmp(cmd, "define")) {
		rc = ev_define_delete(&x, HVT_MSG_DEFINE, argc, argv);
	} else if (!strcmp(cmd, "delete")) {
		rc = ev_define_delete(&x, HVT_MSG_DELETE, argc, argv);
	} else if (!strcmp(cmd, "enable") || !strcmp(cmd, "disable")) {
		uint32_t on = !strcmp(cmd, "enable");

		if (!argc) {
			rc = hvt_cli_usage("events", "%s needs event names",
					   cmd);
			goto out;
		}
		rc = HVT_EXIT_OK;
		for (i = 0; i < argc; i++)
			if (ev_result(&x, HVT_MSG_ENABLE, on, argv[i], cmd))
				rc = HVT_EXIT_FAIL;
	} else if (!strcmp(cmd, "format")) {
		rc = ev_format_cb_print(&x, argc, argv);
	} else {
		struct hvt_m_result res;
		struct hvt_msg m;
		char text[256];

		memset(&m, 0, sizeof(m));
		m.type = HVT_MSG_TRACING;
		m.chan = x.rec.id;
		if (argc == 0)
			m.u.tracing.op = HVT_TRACING_QUERY;
		else if (argc == 1 && (!strcmp(argv[0], "on") ||
				       !strcmp(argv[0], "1")))
			m.u.tracing.op = HVT_TRACING_ON;
		else if (argc == 1 && (!strcmp(argv[0], "off") ||
				       !strcmp(argv[0], "0")))
			m.u.tracing.op = HVT_TRACING_OFF;
		else {
			rc = hvt_cli_usage("events", "tracing takes on or off");
			goto out;
		}
		if (hvtrace_daemon_call_result(x.dc, &m, &res, text, sizeof(text))) {
			rc = ev_fail("tracing");
			goto out;
		}
		if (m.u.tracing.op == HVT_TRACING_QUERY)
			printf("%u\n", res.id);
		rc = HVT_EXIT_OK;
	}
out:
	hvtrace_daemon_close(x.dc);
	return rc;
}

HVT_CLI_COMMAND(events, "events",
		"list, define, delete, enable and disable user events",
		events_usage, events_run);
