// SPDX-License-Identifier: MIT
/*
 * hvtrace-agent: the guest kernel instance's events, switched by the host.
 *
 * KEVENT (ARG: 1 on, 0 off, "SYSTEM" or "SYSTEM:EVENT") writes "1" or "0"
 * into the kernel instance's events/SYSTEM[/EVENT]/enable (the instance
 * whose ring the host reads from guest RAM, --kernel-instance), and
 * answers with a RESULT that says what happened.  The codec has checked
 * the name (hvt_msg_decode(): letters, digits, '_' and at most one ':'
 * between two non-empty parts), so it cannot name anything outside the
 * events folder; the file is opened O_NOFOLLOW.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

static void kev_reply(struct agent *ag, const struct hvt_msg *req, int status,
		      const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void kev_reply(struct agent *ag, const struct hvt_msg *req, int status,
		      const char *fmt, ...)
{
	char text[HVT_PROTO_TEXT_MAX + 1];
	struct hvt_msg r;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	memset(&r, 0, sizeof(r));
	r.type = status ? HVT_MSG_ERROR : HVT_MSG_KEVENT;
	r.flags = HVT_PF_REPLY;
	r.req = req->req;
	r.chan = req->chan;
	r.u.result.status = status;
	r.u.result.id = req->u.arg.arg;
	r.u.result.text.ptr = text;
	r.u.result.text.len = (uint32_t)strlen(text);
	link_push(ag, &r);
}

void kevents_request(struct agent *ag, const struct hvt_msg *m)
{
	char name[HVT_PROTO_EVNAME_MAX + 1], inst[PATH_MAX], path[2 * PATH_MAX];
	const char *on = m->u.arg.arg ? "1" : "0";
	char *colon;
	ssize_t n;
	int fd;

	n = m->u.arg.s.len < sizeof(name) - 1 ? m->u.arg.s.len :
						sizeof(name) - 1;
	memcpy(name, m->u.arg.s.ptr, (size_t)n);
	name[n] = '\0';
	if (!ag->tracefs) {
		kev_reply(ag, m, -ENOENT,
			  "this agent has no tracefs (--tracefs)");
		return;
	}
	agent_kinstance_dir(ag, inst, sizeof(inst));
	colon = strchr(name, ':');
	if (colon)
		*colon = '/';
	agent_path(path, sizeof(path), "%s/events/%s/enable", inst, name);
	if (colon)
		*colon = ':';
	fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		int e = errno;

		if (e == ENOENT)
			kev_reply(ag, m, -ENOENT,
				  "the guest kernel has no %s '%s' "
				  "(in %s/events)",
				  colon ? "event" : "event system", name,
				  inst);
		else
			kev_reply(ag, m, -e, "cannot open %s: %s", path,
				  strerror(e));
		return;
	}
	n = write(fd, on, 1);
	if (n != 1) {
		int e = n < 0 ? errno : EIO;

		close(fd);
		kev_reply(ag, m, -e, "cannot write %s: %s", path, strerror(e));
		return;
	}
	close(fd);
	agent_log("guest kernel %s '%s' %s in %s",
		  colon ? "event" : "event system", name,
		  m->u.arg.arg ? "enabled" : "disabled", inst);
	kev_reply(ag, m, 0, "%s %s", name,
		  m->u.arg.arg ? "enabled" : "disabled");
}
