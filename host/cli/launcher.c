// SPDX-License-Identifier: MIT
/*
 * The hvtrace CLI runs the QEMU rig's launcher (qemu-scripts/hvtrace-guest)
 * for "hvtrace guest" and for the guest kernel formats of "hvtrace stream
 * NAME --guest-kernel": where the launcher is, pointing it at this build,
 * and running a helper program with its output collected.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

#define LA_OUT_MAX  (256u * 1024u)

/* The directory this hvtrace binary lives in. */
int hvt_cli_exe_dir(char *buf, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);
	char *slash;

	if (n <= 0)
		return -ENOENT;
	buf[n] = '\0';
	slash = strrchr(buf, '/');
	if (!slash)
		return -ENOENT;
	*slash = '\0';
	return 0;
}

bool hvt_cli_executable(const char *p)
{
	struct stat st;

	return !stat(p, &st) && S_ISREG(st.st_mode) && !access(p, X_OK);
}

/*
 * The launcher: $HVT_GUEST_LAUNCHER, next to this binary, in
 * ../libexec/hvtrace, in $HVT_SRCTREE, in the source tree this was built
 * from, then $PATH.
 */
int hvt_cli_launcher(char *buf, size_t size)
{
	const char *env = getenv("HVT_GUEST_LAUNCHER");
	char dir[PATH_MAX - 64];

	/* Its messages name the command the user typed. */
	setenv("HVT_GUEST_PROG", "hvtrace guest", 1);

	if (env && *env) {
		snprintf(buf, size, "%s", env);
		return hvt_cli_executable(buf) ? 0 : -ENOENT;
	}
	if (!hvt_cli_exe_dir(dir, sizeof(dir))) {
		snprintf(buf, size, "%s/hvtrace-guest", dir);
		if (hvt_cli_executable(buf))
			return 0;
		snprintf(buf, size, "%s/../libexec/hvtrace/hvtrace-guest", dir);
		if (hvt_cli_executable(buf))
			return 0;
	}
	env = getenv("HVT_SRCTREE");
	if (env && *env) {
		snprintf(buf, size, "%s/qemu-scripts/hvtrace-guest", env);
		if (hvt_cli_executable(buf))
			return 0;
	}
#ifdef HVT_GUEST_LAUNCHER_PATH
	snprintf(buf, size, "%s", HVT_GUEST_LAUNCHER_PATH);
	if (hvt_cli_executable(buf))
		return 0;
#endif
	snprintf(buf, size, "hvtrace-guest");
	return 0; /* execvp searches $PATH */
}

/*
 * Point the launcher at this build (its agent, workloads and .config)
 * unless HVT_OBJTREE says otherwise: a build tree has bin/hvtrace and
 * bin/hvtrace-agent side by side.
 */
void hvt_cli_set_objtree(void)
{
	char dir[PATH_MAX], agent[PATH_MAX + 32], *slash;
	const char *env = getenv("HVT_OBJTREE");

	if ((env && *env) || hvt_cli_exe_dir(dir, sizeof(dir)))
		return;
	snprintf(agent, sizeof(agent), "%s/hvtrace-agent", dir);
	if (!hvt_cli_executable(agent))
		return;
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return;
	*slash = '\0';
	setenv("HVT_OBJTREE", dir, 1);
}

/*
 * Run @argv (argv[0] through $PATH if it has no slash) and wait.  With
 * @out, its stdout is collected (NUL-terminated, malloc'd); stderr always
 * goes to ours.  Returns the exit status, 128 + signal, or -errno.
 */
int hvt_cli_run(char *const argv[], char **out)
{
	size_t have = 0, cap = 0;
	char *buf = NULL;
	int p[2] = {-1, -1}, st;
	pid_t pid;

	if (out && pipe(p))
		return -errno;
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		if (out) {
			close(p[0]);
			close(p[1]);
		}
		return -errno;
	}
	if (!pid) {
		if (out) {
			dup2(p[1], STDOUT_FILENO);
			close(p[0]);
			close(p[1]);
		}
		execvp(argv[0], argv);
		fprintf(stderr, "hvtrace: cannot run %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	if (out) {
		close(p[1]);
		for (;;) {
			char discard[4096];
			ssize_t n;

			if (have + 4096 > cap && cap < LA_OUT_MAX) {
				char *nb = realloc(buf, cap + 65536);

				if (nb) {
					buf = nb;
					cap += 65536;
				}
			}
			/* Bounded: past LA_OUT_MAX the rest is read and
			 * dropped, so the child never blocks on us. */
			if (have + 1 < cap)
				n = read(p[0], buf + have, cap - have - 1);
			else
				n = read(p[0], discard, sizeof(discard));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			if (have + 1 < cap)
				have += (size_t)n;
		}
		close(p[0]);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			free(buf);
			return -errno;
		}
	if (out) {
		if (!buf)
			buf = calloc(1, 1);
		else
			buf[have] = '\0';
		*out = buf;
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The rig's QEMU of guest @name while it runs, or 0 (cli.h). */
int hvt_cli_rig_qemu_pid(const char *name)
{
	const char *run = getenv("HVT_RUNDIR");
	char path[PATH_MAX], comm[32], want[32];
	int pid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/qemu.pid",
		 run && *run ? run : "/run/hvtrace", name);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fscanf(f, "%d", &pid) != 1 || pid <= 0)
		pid = 0;
	fclose(f);
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	f = pid ? fopen(path, "re") : NULL;
	if (!f)
		return 0;
	/* The kernel keeps 15 bytes of a comm; a pid reused by another
	 * process is not the guest's QEMU. */
	snprintf(want, sizeof(want), "hvt-%.11s", name);
	if (!fgets(comm, sizeof(comm), f) || strncmp(comm, want, strlen(want)))
		pid = 0;
	fclose(f);
	return pid;
}
