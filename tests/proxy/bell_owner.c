// SPDX-License-Identifier: MIT
/*
 * issue 22 point 6: only the agent's owner may switch the host's wakeups
 * off.  A writer that cannot register for membarrier(2) sends "N" on the
 * agent's doorbell socket (SOCKET.bell), and the agent refuses every
 * later BARRIER: the host polls, for every writer, until the agent
 * restarts.  Any client that may ring could send it.
 *
 * An agent whose sockets anyone may use (--socket-mode 0666), a
 * subscription so that hvtraced arms wakeups, the daemon asleep; then
 *
 *   - user nobody sends "N" (then root rings, so the daemon arms again):
 *     the next BARRIER must succeed, the remote's wakeups not "refused
 *     by the agent", and the agent's log must say it refused an "N" from
 *     uid 65534;
 *   - root (the agent's own user) sends "N": the wakeups are refused
 *     (the check is who sent it, nothing else).
 */
#include <errno.h>
#include <grp.h>
#include <linux/membarrier.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hvtrace.h>

#include "harness.h"

#define NOBODY 65534

static struct hvtrace_daemon *dc;
static struct h_agent ag;

/* Send @what to the agent's doorbell socket as @uid. */
static void bell_send(const char *what, uid_t uid)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	pid_t pid;
	int st;

	if (strlen(ag.sock) + 6 > sizeof(sa.sun_path))
		t_fail("%s: too long for a socket path", ag.sock);
	memcpy(sa.sun_path, ag.sock, strlen(ag.sock));
	strcat(sa.sun_path, ".bell");
	pid = fork();
	t_assert(pid >= 0);
	if (!pid) {
		int fd;

		if (uid && (setgroups(0, NULL) || setgid(uid) || setuid(uid)))
			_exit(2);
		fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || sendto(fd, what, strlen(what), 0,
				     (struct sockaddr *)&sa, sizeof(sa)) < 0)
			_exit(3);
		_exit(0);
	}
	t_eq(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		t_fail("sending '%s' to %s as uid %u failed (status 0x%x)",
		       what, sa.sun_path, (unsigned int)uid, st);
}

/* The remote's "wakeups:" state. */
static bool wakeups_are(const char *state)
{
	char *text = h_text(dc, ag.remote, HVT_TEXT_INFO), want[128];
	bool yes;

	snprintf(want, sizeof(want), "\nwakeups: %s", state);
	yes = strstr(text, want) != NULL;
	free(text);
	return yes;
}

static void wait_asleep(const char *when)
{
	int i;

	for (i = 0; i < 500 && !wakeups_are("asleep"); i++)
		usleep(10000);
	if (i == 500)
		t_fail("%s: the daemon did not sleep on the remote", when);
}

int main(void)
{
	uint64_t b0;
	long q;
	int i;

	q = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
	if (q < 0 || !(q & MEMBARRIER_CMD_GLOBAL_EXPEDITED))
		t_skip("no membarrier(2) GLOBAL_EXPEDITED here: the agent "
		       "refuses wakeups anyway");
	if (geteuid())
		t_skip("needs root (to send as user nobody)");
	dc = h_start(NULL);
	/* nobody reaches the agent's sockets in the test's folder */
	t_ok(chmod(h_dir, 0755));
	h_agent_start(&ag, "bellown", "--socket-mode 0666");
	h_subscribe(dc, ag.remote, 0);
	wait_asleep("subscribed");

	/* A stranger's "N": dropped. */
	b0 = h_info_u64(dc, ag.remote, "wake_barriers");
	bell_send("N", NOBODY);
	for (i = 0; i < 500; i++) {
		bell_send("R", 0); /* a doorbell: the daemon arms again */
		usleep(10000);
		if (wakeups_are("refused") ||
		    h_info_u64(dc, ag.remote, "wake_barriers") > b0 + 1)
			break;
	}
	if (wakeups_are("refused"))
		t_fail("user nobody switched the host's wakeups off with one "
		       "'N' datagram");
	if (i == 500)
		t_fail("no BARRIER was answered after the doorbells");
	printf("after nobody's 'N': %llu barriers answered, wakeups on\n",
	       (unsigned long long)(h_info_u64(dc, ag.remote,
					       "wake_barriers") - b0));
	if (!h_file_has(ag.log,
			"refused a doorbell 'N' (no wakeups) from uid 65534"))
		t_fail("the agent did not log the refused 'N'");

	/* The owner's "N": taken. */
	bell_send("N", 0);
	for (i = 0; i < 500 && !wakeups_are("refused"); i++) {
		bell_send("R", 0);
		usleep(10000);
	}
	if (i == 500)
		t_fail("root's 'N' did not switch the wakeups off");
	printf("after root's 'N': wakeups refused by the agent\n");
	h_agent_stop(&ag);
	hvtrace_daemon_close(dc);
	h_pass();
	return 0;
}
