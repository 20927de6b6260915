// SPDX-License-Identifier: MIT
/*
 * libhvtrace-guest: the writer's doorbell (armed wakeups, docs/design.md
 * "Waking the reader").
 *
 * After each commit the write path asks the writer core whether a reader
 * is armed and this commit reached its watermark (hvt_rb_wake_due(): one
 * load and a compare while nobody is armed).  The one writer that must
 * ring does it one of two ways:
 *
 *   - relay-free: a store of HVT_BELL_VALUE to the doorbell register of
 *     the guest's ivshmem-doorbell device (its BAR0, /dev/hvtrace-bell,
 *     mapped write-only by hvtg_area_set_doorbell() when the process may
 *     open it); QEMU signals hvtraced's eventfd, and no guest process
 *     needs to be scheduled on the way;
 *   - relayed: a one-byte datagram to the agent's doorbell socket (the
 *     agent's socket path with ".bell" appended), which forwards a
 *     DOORBELL to the host.  A full socket queue means a ring is already
 *     on its way: the datagram is dropped, never waited for.
 *
 * hvtg_area_set_doorbell() sets both up; hvtg_area_open() and the client
 * library's hvtc_open() call it.  The agent's socket is needed either
 * way: the agent runs the host's barriers (below).
 *
 * The host's arming is made safe by a full barrier on every CPU that
 * runs a writer, which the agent runs with membarrier(2)
 * MEMBARRIER_CMD_GLOBAL_EXPEDITED; that reaches only processes that
 * registered for it, so connecting the doorbell registers the process.  Where
 * the kernel refuses, the library tells the agent ("N"), which then
 * refuses the host's BARRIER requests so that the host keeps polling:
 * a writer the barrier cannot reach must not be slept on.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "hvtg_internal.h"

#define BELL_SUFFIX ".bell"
#define BELL_MAP    4096 /* the register BAR (256 bytes), a page */

/* The ivshmem doorbell's registers, if this process may map them. */
static void bell_map_regs(struct hvtg_area *a)
{
	const char *path = getenv("HVTRACE_BELL");
	void *p;
	int fd;

	if (!path || !*path)
		path = HVTG_DEFAULT_BELL;
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return; /* none, or not ours to open: the agent relays */
	p = mmap(NULL, BELL_MAP, PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p != MAP_FAILED)
		a->bell_regs = p;
}

int hvtg_area_set_doorbell(struct hvtg_area *a, const char *agent_socket)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, ret;

	if (!a)
		return hvtg_err(-EINVAL, "no area");
	hvtg_bell_close(a);
	if (!agent_socket || !*agent_socket)
		agent_socket = getenv("HVTRACE_AGENT_SOCKET");
	if (!agent_socket || !*agent_socket)
		agent_socket = HVTG_DEFAULT_AGENT_SOCKET;
	if (strlen(agent_socket) + sizeof(BELL_SUFFIX) > sizeof(sa.sun_path))
		return hvtg_err(-ENAMETOOLONG,
				"the agent's socket path is too long for its "
				"doorbell: %s",
				agent_socket);
	strcpy(sa.sun_path, agent_socket);
	strcat(sa.sun_path, BELL_SUFFIX);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return hvtg_err(-errno, "socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		ret = -errno;
		close(fd);
		/* No agent (or an older one): nobody arms a wakeup for it. */
		return hvtg_err(ret,
				"no doorbell at %s: %s (the host polls this "
				"area)",
				sa.sun_path, strerror(-ret));
	}
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED,
		    0, 0)) {
		ret = -errno;
		(void)!send(fd, "N", 1, MSG_DONTWAIT);
		close(fd);
		return hvtg_err(ret,
				"membarrier(REGISTER_GLOBAL_EXPEDITED): %s "
				"(the agent now tells the host to poll)",
				strerror(-ret));
	}
	a->bell_fd = fd;
	bell_map_regs(a);
	return 0;
}

void hvtg_bell_ring(struct hvtg_area *a)
{
	/* The doorbell carries no data: the host loads the commit words
	 * (acquire) once woken, and a commit it cannot see yet is covered
	 * by its next arming's barrier (docs/design.md, A3). */
	if (a->bell_regs)
		a->bell_regs[HVT_BELL_REG / 4] = HVT_BELL_VALUE;
	else if (a->bell_fd >= 0)
		(void)!send(a->bell_fd, "R", 1, MSG_DONTWAIT);
}

void hvtg_bell_close(struct hvtg_area *a)
{
	if (a->bell_fd >= 0)
		close(a->bell_fd);
	a->bell_fd = -1;
	if (a->bell_regs)
		munmap((void *)a->bell_regs, BELL_MAP);
	a->bell_regs = NULL;
}
