// SPDX-License-Identifier: MIT
/*
 * hvtrace-agent: the guest's half of armed wakeups (docs/design.md,
 * "Waking the reader").
 *
 *   writers --"R"--> <socket>.bell --DOORBELL--> hvtraced
 *   hvtraced --BARRIER--> membarrier(GLOBAL_EXPEDITED) --RESULT--> hvtraced
 *
 * (Writers that can map the guest's ivshmem doorbell, /dev/hvtrace-bell,
 * ring hvtraced with one store instead; the agent gives that device the
 * access of its socket.)
 *
 * Writers ring a datagram socket beside the agent's socket (libhvtrace-
 * guest's doorbell.c); every poll round that finds rings sends one
 * DOORBELL notice, so a burst of rings costs the link one frame.  When
 * the host has armed a wakeup it asks for a BARRIER: a full memory
 * barrier on every CPU that runs a writer (step A3), which the agent runs
 * with membarrier(2) MEMBARRIER_CMD_GLOBAL_EXPEDITED; writers register
 * for it when they open the area.  A writer that could not register says
 * "N"; from then on, and on a kernel without the command, BARRIER is
 * answered -EOPNOTSUPP and the host keeps polling.  Since that is for
 * every writer, only the agent's owner (root or the agent's own user:
 * SCM_CREDENTIALS of the datagram) may say "N"; anyone may ring.
 */
#include <errno.h>
#include <limits.h>
#include <linux/membarrier.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent.h"

#define BELL_SUFFIX ".bell"
#define BELL_DEVICE "/dev/hvtrace-bell"

/*
 * The relay-free doorbell (qemu-scripts/guest-init.sh links the register
 * BAR of the guest's ivshmem-doorbell device as /dev/hvtrace-bell): the
 * same access as the agent's socket, so that the writers who may
 * register events may also ring the host with one store rather than
 * through this agent.  Ringing is all the register does for them (a
 * spurious ring costs the host one read that finds nothing).
 */
static void bell_share_device(struct agent *ag, gid_t gid)
{
	char path[PATH_MAX];

	if (!realpath(BELL_DEVICE, path))
		return; /* none: writers ring through this agent */
	if (chown(path, (uid_t)-1, gid) || chmod(path, ag->sock_mode & 0660))
		agent_log("warning: cannot give %s (%s) to the agent's "
			  "clients: %s (their doorbells go through the agent)",
			  BELL_DEVICE, path, strerror(errno));
}

int bell_listen(struct agent *ag)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, ret, one = 1;

	ag->bell_fd = -1;
	if (strlen(ag->sock_path) + sizeof(BELL_SUFFIX) > sizeof(sa.sun_path)) {
		agent_log(
			"no doorbell: socket path too long for '%s" BELL_SUFFIX
			"' (the host polls)",
			ag->sock_path);
		return 0;
	}
	strcpy(sa.sun_path, ag->sock_path);
	strcat(sa.sun_path, BELL_SUFFIX);
	unlink(sa.sun_path); /* ours: clients_listen() took the name */
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* Every datagram carries its sender's credentials: who may say
	 * "N" (bell_no_barrier()). */
	if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one))) {
		ret = -errno;
		agent_log("no doorbell: SO_PASSCRED: %s (the host polls)",
			  strerror(-ret));
		close(fd);
		return 0;
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		ret = -errno;
		agent_log("no doorbell: cannot bind %s: %s (the host polls)",
			  sa.sun_path, strerror(-ret));
		close(fd);
		return 0;
	}
	/* The same access as the agent's socket: whoever may register
	 * events may ring. */
	if (chmod(sa.sun_path, ag->sock_mode))
		agent_log("warning: cannot chmod %s: %s", sa.sun_path,
			  strerror(errno));
	{
		struct stat st;

		if (!stat(ag->sock_path, &st)) {
			if (chown(sa.sun_path, (uid_t)-1, st.st_gid))
				agent_dbg("cannot give %s the group of %s",
					  sa.sun_path, ag->sock_path);
			bell_share_device(ag, st.st_gid);
		}
	}
	ag->bell_fd = fd;
	return 0;
}

void bell_poll_prep(struct agent *ag, struct pollfd *pfd)
{
	pfd->fd = ag->bell_fd;
	pfd->events = POLLIN;
	pfd->revents = 0;
}

/*
 * One datagram from the doorbell socket into @b, its sender's uid into
 * @uid ((uid_t)-1: the kernel did not say); returns its length, 0 or
 * -1 when there is none.
 */
static ssize_t bell_recv(struct agent *ag, char *b, size_t size, uid_t *uid)
{
	char cbuf[CMSG_SPACE(sizeof(struct ucred))];
	struct iovec io = {.iov_base = b, .iov_len = size};
	struct msghdr m = {.msg_iov = &io,
			   .msg_iovlen = 1,
			   .msg_control = cbuf,
			   .msg_controllen = sizeof(cbuf)};
	struct cmsghdr *ch;
	ssize_t n;

	*uid = (uid_t)-1;
	n = recvmsg(ag->bell_fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n <= 0)
		return n;
	for (ch = CMSG_FIRSTHDR(&m); ch; ch = CMSG_NXTHDR(&m, ch)) {
		struct ucred cr;

		if (ch->cmsg_level != SOL_SOCKET ||
		    ch->cmsg_type != SCM_CREDENTIALS ||
		    ch->cmsg_len < CMSG_LEN(sizeof(cr)))
			continue;
		memcpy(&cr, CMSG_DATA(ch), sizeof(cr));
		*uid = cr.uid;
	}
	return n;
}

/*
 * "N" switches the host's wakeups off until the agent restarts, for
 * every writer: only the agent's owner (its own uid, or root) may say
 * it.  Anyone else's is dropped, counted and logged (the first, then at
 * every power of two, so a flood cannot fill the log).
 */
static void bell_no_barrier(struct agent *ag, uid_t uid)
{
	if (uid != 0 && uid != geteuid()) {
		ag->bell_n_refused++;
		if (!(ag->bell_n_refused & (ag->bell_n_refused - 1)))
			agent_log("refused a doorbell 'N' (no wakeups) from uid "
				  "%ld: only root or the agent's user may "
				  "switch the host's wakeups off (%llu "
				  "refused)",
				  uid == (uid_t)-1 ? -1L : (long)uid,
				  (unsigned long long)ag->bell_n_refused);
		return;
	}
	if (ag->bell_refuse)
		return;
	agent_log("a writer cannot register for membarrier(2): the host's "
		  "wakeups are refused from now on (it polls)");
	ag->bell_refuse = true;
}

void bell_poll_done(struct agent *ag, const struct pollfd *pfd)
{
	bool rang = false;
	char b[64];
	ssize_t n;
	uid_t uid;
	int i;

	if (!(pfd->revents & POLLIN))
		return;
	/* Drain what is queued, a bounded number of reads per round. */
	for (i = 0; i < 256; i++) {
		n = bell_recv(ag, b, sizeof(b), &uid);
		if (n <= 0)
			break;
		if (b[0] == 'N')
			bell_no_barrier(ag, uid);
		rang |= b[0] == 'R';
	}
	if (rang && ag->link.up) {
		struct hvt_msg m;

		memset(&m, 0, sizeof(m));
		m.type = HVT_MSG_DOORBELL;
		if (!link_push(ag, &m))
			ag->bell_rings++;
	}
}

static int bell_barrier_run(struct agent *ag)
{
	long q;

	if (ag->bell_refuse)
		return -EOPNOTSUPP;
	q = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
	if (q < 0 || !(q & MEMBARRIER_CMD_GLOBAL_EXPEDITED))
		return -EOPNOTSUPP;
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0))
		return -errno;
	return 0;
}

void bell_barrier(struct agent *ag, const struct hvt_msg *m)
{
	static const char why[] = "no barrier here: the host must poll";
	struct hvt_msg r;
	int ret = bell_barrier_run(ag);

	memset(&r, 0, sizeof(r));
	r.type = HVT_MSG_BARRIER;
	r.flags = HVT_PF_REPLY;
	r.req = m->req;
	r.u.result.status = ret;
	if (ret) {
		r.u.result.text.ptr = why;
		r.u.result.text.len = sizeof(why) - 1;
	}
	link_push(ag, &r);
}

void bell_close(struct agent *ag)
{
	struct sockaddr_un sa;
	socklen_t len = sizeof(sa);

	if (ag->bell_fd < 0)
		return;
	if (!getsockname(ag->bell_fd, (struct sockaddr *)&sa, &len) &&
	    sa.sun_path[0])
		unlink(sa.sun_path);
	close(ag->bell_fd);
	ag->bell_fd = -1;
}
