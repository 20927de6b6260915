// SPDX-License-Identifier: MIT
/*
 * hvtrace mount DIR: every remote as a tracefs-style directory tree
 * (host/fuse/, docs/fuse.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hvtrace.h>
#include <hvtrace/config.h>

#include "cli.h"
#if IS_ENABLED(CONFIG_HVT_HOST_FUSE)
#include <hvtrace-daemon.h>
#include <hvtrace-fuse.h>
#endif

#define VERB "mount"

static const char mount_usage[] =
	"usage: hvtrace mount DIR [--socket PATH] [--area NAME=AREA]...\n"
	"                     [--no-daemon] [--background] [--allow-other]\n"
	"\n"
	"Show every remote as a tracefs-style directory tree under DIR (a\n"
	"FUSE file system), the way Linux shows its trace remotes and its\n"
	"tracefs instances:\n"
	"\n"
	"  DIR/remotes/NAME/      tracing_on, buffer_size_kb, trace_clock,\n"
	"                         trace, trace_pipe, error_log, set_event,\n"
	"                         saved_cmdlines, per_cpu/cpuN/{trace,\n"
	"                         trace_pipe,trace_pipe_raw,stats},\n"
	"                         events/{enable,header_page,header_event},\n"
	"                         events/SYSTEM/{enable,EVENT/{enable,id,\n"
	"                         format}}, and dynamic_events and\n"
	"                         user_events_status for remotes with user\n"
	"                         events\n"
	"  DIR/instances/NAME     the same directory, for libtracefs's\n"
	"                         instance API\n"
	"\n"
	"Remotes are those of hvtraced (guests, local agents, areas attached\n"
	"with 'hvtrace daemon attach --area'); they appear and disappear as\n"
	"the daemon attaches and detaches them.  A rig guest whose kernel\n"
	"keeps its own ring in guest RAM (see 'hvtrace guest --help') also\n"
	"shows its kernel's events (events/SYSTEM/EVENT, their records in\n"
	"the same per_cpu files).  --area NAME=AREA adds an\n"
	"area (PATH[@OFFSET[+SIZE]]) that this process owns itself, for use\n"
	"without hvtraced (with --no-daemon, only those).\n"
	"\n"
	"It runs until DIR is unmounted (fusermount3 -u DIR) or it gets\n"
	"SIGINT or SIGTERM; then readers waiting in trace_pipe get the end of\n"
	"file and DIR is unmounted.  Reads of a remote that is detached, or\n"
	"whose writer stopped, end at the end of its data.\n"
	"\n"
	"options:\n"
	"  --socket PATH        hvtraced's socket (default $HVTRACED_SOCKET\n"
	"                       or /run/hvtrace/hvtraced.sock)\n"
	"  --area NAME=AREA     an area of our own (repeatable)\n"
	"  --no-daemon          do not use hvtraced\n"
	"  --background         return once DIR is mounted (prints the pid)\n"
	"  --allow-other        let other users in (FUSE allow_other, with\n"
	"                       default_permissions: the kernel enforces\n"
	"                       the files' modes, 0640 and 0440 owned by\n"
	"                       the mounting user, so others can list the\n"
	"                       directories only; needs user_allow_other\n"
	"                       in /etc/fuse.conf unless root)\n"
	"  --debug              libfuse's debug output\n"
	"  -h, --help           this text\n"
	"\n"
	"examples:\n"
	"  hvtrace mount /mnt/hvt --background\n"
	"  cat /mnt/hvt/remotes/hyp/trace_pipe\n"
	"  echo 0 > /mnt/hvt/remotes/hyp/events/hypervisor/hyp_exit/enable\n"
	"  fusermount3 -u /mnt/hvt\n";

#if IS_ENABLED(CONFIG_HVT_HOST_FUSE)
enum { OPT_SOCKET = 1, OPT_AREA, OPT_NO_DAEMON, OPT_BG, OPT_ALLOW, OPT_DEBUG };

struct mount_ready {
	int fd; /* the parent's pipe, -1: foreground */
};

/*
 * The events a rig guest's kernel instance enabled at boot, as its
 * launcher recorded them (KERNEL_EVENTS= in $HVT_RUNDIR/NAME/guest.env);
 * "" when not known.
 */
static void mount_kernel_events(const char *name, char *buf, size_t size)
{
	const char *run = getenv("HVT_RUNDIR");
	char path[PATH_MAX], line[4096];
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "%s/%s/guest.env",
		 run && *run ? run : "/run/hvtrace", name);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "KERNEL_EVENTS=", 14)) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(buf, size, "%s", line + 14);
			break;
		}
	fclose(f);
}

/* The view asks for a remote's guest kernel ring: the one the stream and
 * the recorder read too (hvt_cli_kring_of(); @arg: hvtraced's socket). */
static int mount_kring_open(void *arg, const char *name,
			    struct hvtrace_daemon_kring **out, char *formats,
			    size_t formats_size, char *enabled,
			    size_t enabled_size)
{
	*out = NULL;
	if (hvt_cli_kring_of(VERB, name, arg, formats, formats_size, out) ||
	    !*out)
		return 0; /* said why on stderr; the user events stay */
	mount_kernel_events(name, enabled, enabled_size);
	return 0;
}

static void mount_kring_close(void *arg, struct hvtrace_daemon_kring *kr,
			      char *formats)
{
	(void)arg;
	hvt_cli_kring_close(kr, formats);
}

/* Mounted: a background child tells its parent, then detaches. */
static void mount_ready_cb(void *arg)
{
	struct mount_ready *mr = arg;
	int fd;

	if (mr->fd < 0)
		return;
	if (write(mr->fd, "y", 1) != 1)
		perror("hvtrace mount: telling the parent");
	close(mr->fd);
	mr->fd = -1;
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		dup2(fd, STDIN_FILENO);
		dup2(fd, STDOUT_FILENO);
		if (fd > 2)
			close(fd);
	}
}
#endif

#if !IS_ENABLED(CONFIG_HVT_HOST_FUSE)
static int cmd_mount(int argc, char **argv)
{
	return hvt_cli_error(VERB, "this hvtrace was built without the FUSE "
				   "view (CONFIG_HVT_HOST_FUSE)");
}
#else
static int cmd_mount(int argc, char **argv)
{
	static const struct option opts[] = {
		{"socket", required_argument, NULL, OPT_SOCKET},
		{"area", required_argument, NULL, OPT_AREA},
		{"no-daemon", no_argument, NULL, OPT_NO_DAEMON},
		{"background", no_argument, NULL, OPT_BG},
		{"allow-other", no_argument, NULL, OPT_ALLOW},
		{"debug", no_argument, NULL, OPT_DEBUG},
		{NULL, 0, NULL, 0},
	};
	struct hvtrace_fuse_options o;
	struct mount_ready mr = {-1};
	char **areas;
	bool bg = false;
	struct stat st;
	int c, ret;

	memset(&o, 0, sizeof(o));
	areas = calloc((size_t)argc + 1, sizeof(*areas));
	if (!areas)
		return hvt_cli_error(VERB, "out of memory");
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		switch (c) {
		case OPT_SOCKET:
			o.sock = optarg;
			break;
		case OPT_AREA:
			if (!strchr(optarg, '=')) {
				free(areas);
				return hvt_cli_usage(VERB,
						     "--area takes "
						     "NAME=AREA, not "
						     "'%s'",
						     optarg);
			}
			areas[o.nr_areas++] = optarg;
			break;
		case OPT_NO_DAEMON:
			o.no_daemon = true;
			break;
		case OPT_BG:
			bg = true;
			break;
		case OPT_ALLOW:
			o.allow_other = true;
			break;
		case OPT_DEBUG:
			o.debug = true;
			break;
		default:
			free(areas);
			return hvt_cli_bad_option(VERB, argv, c);
		}
	}
	if (optind >= argc) {
		free(areas);
		return hvt_cli_usage(VERB, "no mount point DIR given");
	}
	o.mountpoint = argv[optind++];
	if (optind < argc) {
		free(areas);
		return hvt_cli_usage(VERB, "unexpected argument '%s'",
				     argv[optind]);
	}
	if (o.no_daemon && !o.nr_areas) {
		free(areas);
		return hvt_cli_usage(VERB, "--no-daemon needs --area NAME=AREA "
					   "(nothing to show otherwise)");
	}
	if (o.no_daemon && o.sock) {
		free(areas);
		return hvt_cli_usage(VERB,
				     "--socket and --no-daemon contradict "
				     "each other");
	}
	o.areas = areas;
	if (stat(o.mountpoint, &st) || !S_ISDIR(st.st_mode)) {
		free(areas);
		return hvt_cli_error(VERB,
				     "%s is not a directory (create it "
				     "first)",
				     o.mountpoint);
	}
	if (access("/dev/fuse", R_OK | W_OK)) {
		free(areas);
		return hvt_cli_error(VERB,
				     "/dev/fuse: %s (load the fuse "
				     "module, or run where FUSE is "
				     "available)",
				     strerror(errno));
	}
	if (bg) {
		int p[2];
		pid_t pid;
		char ok;

		/* Fork before any thread exists; the child mounts and says
		 * when it is ready. */
		if (pipe2(p, O_CLOEXEC)) {
			free(areas);
			return hvt_cli_error(VERB, "pipe: %s", strerror(errno));
		}
		pid = fork();
		if (pid < 0) {
			free(areas);
			return hvt_cli_error(VERB, "fork: %s", strerror(errno));
		}
		if (pid > 0) {
			close(p[1]);
			if (read(p[0], &ok, 1) == 1 && ok == 'y') {
				printf("%d\n", (int)pid);
				free(areas);
				return HVT_EXIT_OK;
			}
			/* The child failed and said why on stderr. */
			waitpid(pid, NULL, 0);
			free(areas);
			return HVT_EXIT_FAIL;
		}
		close(p[0]);
		setsid();
		mr.fd = p[1];
	}
	o.ready = mount_ready_cb;
	o.ready_arg = &mr;
	o.kring_open = mount_kring_open;
	o.kring_close = mount_kring_close;
	o.kring_arg = (void *)o.sock;
	ret = hvtrace_fuse_run(&o);
	free(areas);
	if (ret && !o.no_daemon && (ret == -ENOENT || ret == -ECONNREFUSED))
		return hvt_cli_error(VERB, "%s; without hvtraced, mount areas "
					   "of your own with --no-daemon "
					   "--area NAME=AREA",
				     hvtrace_last_error());
	if (ret)
		return hvt_cli_error(VERB, "%s", hvtrace_last_error());
	return HVT_EXIT_OK;
}

#endif

HVT_CLI_COMMAND(mount, VERB,
		"show remotes as a tracefs-style file system (FUSE)",
		mount_usage, cmd_mount);
