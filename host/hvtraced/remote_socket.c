// SPDX-License-Identifier: MIT
/*
 * hvtraced: the socket transport -- a local agent on the daemon's socket.
 *
 * The agent comes to the daemon: its HELLO names the remote and passes
 * the area's descriptor (agent.c creates the remote then), so there is
 * nothing to connect, retry or remember across a restart (the agent
 * reconnects by itself).  When its connection goes, the remote stays,
 * "disconnected", for the agent's next connection; if the agent's process
 * is gone, its clients went with it, and so do their registrations.
 *
 * Its remote is a struct agent_remote, the common remote with what an
 * agent session adds (daemon.h); the chardev transport embeds one too and
 * frees it with agent_remote_release().
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "daemon.h"

static const char *sock_control(const struct remote *r)
{
	(void)r;
	return "(local agent socket)";
}

static const char *sock_area_path(const struct remote *r)
{
	(void)r;
	return "";	/* the descriptor it passed */
}

static void sock_hello(struct remote *r, struct conn *c,
		       const struct hvt_msg *m, bool restarted)
{
	int fd;

	(void)r;
	(void)restarted;
	if (!m->u.hello.nr_fds)
		return;
	fd = conn_take_fd(c);
	if (fd >= 0)
		close(fd);	/* the area is attached already */
}

static void sock_bye(struct remote *r, struct conn *c)
{
	(void)r;
	c->closing = true;
	conn_update_events(c);
}

static void sock_conn_lost(struct remote *r)
{
	struct agent_remote *ar = agent_remote(r);

	r->state = HVT_REMOTE_DISCONNECTED;
	d_log("remote '%s': local agent disconnected", r->name);
	/* An agent that is gone took its clients' connections with it. */
	if (ar->agent.pid && kill((pid_t)ar->agent.pid, 0) && errno == ESRCH) {
		remote_held_drop_all(r);
		ar->agent.have_instance = false;
	}
}

void agent_remote_release(struct agent_remote *ar)
{
	if (ar->kf) {
		kf_abort(ar->kf);
		free(ar->kf);
		ar->kf = NULL;
	}
	kboot_free(ar->kb);
	ar->kb = NULL;
	free(ar->kev);
	ar->kev = NULL;
}

static void sock_free(struct remote *r)
{
	struct agent_remote *ar = agent_remote(r);

	agent_remote_release(ar);
	free(ar);
}

const struct remote_ops remote_socket_ops = {
	.transport = HVT_TRANSPORT_SOCKET,
	.name = "socket",
	.attached_as = "a local agent's",
	.control = sock_control,
	.area_path = sock_area_path,
	.where = sock_control,
	.hello = sock_hello,
	.bye = sock_bye,
	.conn_lost = sock_conn_lost,
	.free = sock_free,
};

int remote_socket_new(const char *name, struct remote **out)
{
	struct agent_remote *ar = calloc(1, sizeof(*ar));
	int ret;

	if (!ar)
		return -ENOMEM;
	ret = remote_add(&ar->r, name, &remote_socket_ops);
	if (ret) {
		free(ar);
		return ret;
	}
	*out = &ar->r;
	return 0;
}
