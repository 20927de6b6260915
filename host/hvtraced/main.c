// SPDX-License-Identifier: MIT
/*
 * hvtraced - the hvtrace host daemon.
 *
 * Owns trace areas of guests and local agents, runs their user_events
 * registries, keeps their clock models fed, and serves tools on a UNIX
 * socket.  One thread around epoll: descriptors (listening socket, agent
 * and tool connections, the signalfd) wake it; deadlines (reconnects,
 * HELLO retries, time-sync pings, trigger timeouts, ring polling while
 * someone subscribes) become the epoll timeout.  With nothing to do it
 * sleeps; an attached remote costs one ping per --sync-interval.
 *
 * Access: the socket is created mode 0660 (--socket-mode), owned by group
 * "hvtrace" when that group exists (--group).  Tools and local agents of
 * that group, and root, can connect, and each connection's credentials are
 * checked again (access.c); agents inside guests reach the daemon only
 * through their virtio-serial port.  Areas attached by clients other than
 * root must be regular files under --area-dir that they could write
 * themselves.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <hvtrace/config.h>

#include <hvt_util.h>

#include "daemon.h"

#define DEFAULT_RUN_DIR		"/run/hvtrace"
#define DEFAULT_SOCKET		DEFAULT_RUN_DIR "/hvtraced.sock"

static const char usage_text[] =
	"usage: hvtraced [OPTIONS]\n"
	"\n"
	"The hvtrace host daemon: owns the trace areas of guests and local\n"
	"agents, proxies their user events, keeps their clocks in sync and\n"
	"serves tools (hvtrace events, streams) on a UNIX socket.\n"
	"\n"
	"  -f, --foreground       stay in the foreground, log to stderr\n"
	"                         (default: detach once the socket listens)\n"
	"  --socket PATH          tools and local agents connect here\n"
	"                         (default " DEFAULT_SOCKET ")\n"
	"  --group NAME           group owning the socket (default hvtrace,\n"
	"                         when it exists)\n"
	"  --socket-mode OCTAL    socket permissions (default 0660)\n"
	"  --attach NAME          attach guest NAME at start (repeatable):\n"
	"                         its control channel is\n"
	"                         RUN_DIR/NAME/control.sock, its area\n"
	"                         SHM_DIR/hvtrace-NAME\n"
	"  --attach-area NAME=AREA  attach an area alone (repeatable): a\n"
	"                         hypervisor's RAM-file range or a loopback\n"
	"                         writer's file, PATH[@OFFSET[+SIZE]]; the\n"
	"                         daemon owns its control page; or a guest\n"
	"                         kernel's ring in a VMM's memory,\n"
	"                         vmpid:PID[,formats=DIR], or in a guest\n"
	"                         RAM file, ram:PATH[,formats=DIR]\n"
	"  --run-dir DIR          default " DEFAULT_RUN_DIR "\n"
	"  --shm-dir DIR          default /dev/shm\n"
	"  --area-dir DIR         a directory whose regular files clients\n"
	"                         other than root may attach with 'hvtrace\n"
	"                         daemon attach --area' (repeatable, at\n"
	"                         most 8; default /dev/shm, --shm-dir and\n"
	"                         --run-dir).  Root may attach any file\n"
	"  --log FILE             where a detached daemon logs (default\n"
	"                         RUN_DIR/hvtraced.log)\n"
	"  --client-queue BYTES   pages queued per tool before waiting for\n"
	"                         it (default 8M)\n"
	"  --sync-interval MS     time-sync ping period per remote (default\n"
	"                         1000; 0: only at session start)\n"
	"  --poll-us US           ring poll interval while pages flow\n"
	"                         (default CONFIG_HVT_HOST_POLL_US)\n"
	"  --poll-max-us US       poll interval when idle (default 10000:\n"
	"                         an event is seen within 10 ms; idle, with a\n"
	"                         subscriber, about 0.3% of a CPU)\n"
	"  --no-wakeups           poll guests' rings as areas are polled,\n"
	"                         rather than sleeping until an agent's\n"
	"                         writer rings (armed wakeups, the default)\n"
	"  --wake-mark BYTES      bytes committed past what was read before\n"
	"                         a writer rings (default 1: the next event)\n"
	"  --wake-backstop-ms MS  poll interval while every read remote\n"
	"                         sleeps (default 1000)\n"
	"  --reader-threads N|auto  threads that read an area's CPUs at once\n"
	"                         (default auto: up to 8, not beyond the\n"
	"                         online CPUs, for an area with 8 or more\n"
	"                         CPUs subscribed; N > 1: every area with 2\n"
	"                         or more; 1: one thread reads everything)\n"
	"  --max-channels N       per remote: client channels that may hold\n"
	"                         registrations (default\n"
	"                         CONFIG_HVT_HOSTD_MAX_CHANNELS); a REGISTER\n"
	"                         on one more is refused with EMFILE\n"
	"  --max-registrations N  per remote: distinct (channel, event)\n"
	"                         registrations held (default\n"
	"                         CONFIG_HVT_HOSTD_MAX_REGISTRATIONS); beyond\n"
	"                         it a REGISTER is refused with ENOSPC\n"
	"  -v, --verbose          log more\n"
	"  -h, --help             this text\n"
	"  --version\n"
	"\n"
	"Guest kernel formats that an agent sends are kept for that remote\n"
	"only, in $HVT_CACHE/kformats/guests/REMOTE/RELEASE@BUILDID (default\n"
	"/var/cache/hvtrace); a host-made $HVT_CACHE/kformats/RELEASE@BUILDID\n"
	"is used for every remote of that build.\n";

static int listen_socket(void)
{
	struct sockaddr_un sa;
	mode_t old_mask;
	bool bound;
	gid_t gid;
	int fd, ret;

	ret = hvt_util_sock_prepare(D->sock_path, &sa);
	switch (ret) {
	case 0:
		break;
	case -ENAMETOOLONG:
		d_log("socket path too long: %s", D->sock_path);
		return ret;
	case -EEXIST:
		d_log("%s exists and is not a socket: remove it or use --socket",
		      D->sock_path);
		return ret;
	case -EADDRINUSE:
		d_log("another hvtraced is running on %s (stop it first, or use "
		      "--socket)",
		      D->sock_path);
		return ret;
	default:
		d_log("cannot create the folder of %s: %s", D->sock_path,
		      strerror(-ret));
		return ret;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* The socket is born with its final mode (never wider for an
	 * instant), given to the group, and only then listens. */
	old_mask = umask(~D->sock_mode & 0777);
	ret = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ? -errno : 0;
	umask(old_mask);
	bound = !ret;
	if (!ret && access_group_gid(&gid) &&
	    chown(D->sock_path, (uid_t)-1, gid)) {
		ret = -errno;
		d_log("cannot give %s to group %s: %s (members could not "
		      "connect; run hvtraced as root or pick --group)",
		      D->sock_path, D->group, strerror(-ret));
	}
	if (!ret && listen(fd, 128))
		ret = -errno;
	if (ret) {
		d_log("cannot listen on %s: %s", D->sock_path, strerror(-ret));
		close(fd);
		if (bound)
			unlink(D->sock_path);
		return ret;
	}
	if (!conn_listen(fd)) {
		close(fd);
		return -ENOMEM;
	}
	return 0;
}

/* Detach: the parent returns once the child listens (or failed). */
static int daemonize(int *ready_fd, const char *log_path)
{
	int p[2];
	pid_t pid;
	char c;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		close(p[1]);
		if (read(p[0], &c, 1) == 1 && c == 'y')
			_exit(0);
		fprintf(stderr, "hvtraced: failed to start; see %s\n",
			log_path);
		_exit(1);
	}
	close(p[0]);
	setsid();
	*ready_fd = p[1];
	return 0;
}

/* What the command line asks for beyond struct daemon's options. */
struct d_args {
	bool foreground;
	const char *log_path;
	const char *attach[64];		/* --attach NAME */
	unsigned int nr_attach;
	const char *attach_area[64];	/* --attach-area NAME=SPEC */
	unsigned int nr_attach_area;
};

static void d_defaults(void)
{
	D->sock_path = DEFAULT_SOCKET;
	D->group = "hvtrace";
	D->sock_mode = 0660;
	D->run_dir = DEFAULT_RUN_DIR;
	D->shm_dir = "/dev/shm";
	/* The formats cache, shared with hvtrace-guest kformats and the
	 * CLI's post-mortem reads. */
	D->cache_dir = getenv("HVT_CACHE") && *getenv("HVT_CACHE") ?
			       getenv("HVT_CACHE") :
			       "/var/cache/hvtrace";
	D->client_queue = 8u << 20;
	D->sync_interval_ms = 1000;
	D->poll_min_us = CONFIG_HVT_HOST_POLL_US;
	D->poll_max_us = 10000;
	D->wakeups = true;
	D->wake_mark = 1;
	D->wake_backstop_ms = 1000;
	D->max_channels = CONFIG_HVT_HOSTD_MAX_CHANNELS;
	D->max_registrations = CONFIG_HVT_HOSTD_MAX_REGISTRATIONS;
}

/* One option of d_parse(); 0, or the exit status (2: a bad value). */
static int d_option(int opt, const char *arg, struct d_args *a)
{
	uint64_t v;

	switch (opt) {
	case 'f':
		a->foreground = true;
		break;
	case 'S':
		D->sock_path = arg;
		break;
	case 'g':
		D->group = *arg ? arg : NULL;
		break;
	case 'M': {
		char *end;
		unsigned long m = strtoul(arg, &end, 8);

		if (*end || m > 0777) {
			fprintf(stderr, "hvtraced: --socket-mode takes an "
					"octal mode\n");
			return 2;
		}
		D->sock_mode = (unsigned int)m;
		break;
	}
	case 'A':
		if (a->nr_attach == 64) {
			fprintf(stderr, "hvtraced: at most 64 --attach\n");
			return 2;
		}
		a->attach[a->nr_attach++] = arg;
		break;
	case 'a':
		if (a->nr_attach_area == 64 || !strchr(arg, '=')) {
			fprintf(stderr, "hvtraced: --attach-area takes "
					"NAME=PATH[@OFFSET[+SIZE]] "
					"(at most 64)\n");
			return 2;
		}
		a->attach_area[a->nr_attach_area++] = arg;
		break;
	case 'R':
		D->run_dir = arg;
		break;
	case 's':
		D->shm_dir = arg;
		break;
	case 'D':
		if (D->nr_area_dirs == D_MAX_AREA_DIRS || arg[0] != '/') {
			fprintf(stderr, "hvtraced: --area-dir takes an "
					"absolute directory (at most %d)\n",
				D_MAX_AREA_DIRS);
			return 2;
		}
		D->area_dirs[D->nr_area_dirs++] = arg;
		break;
	case 'L':
		a->log_path = arg;
		break;
	case 'Q':
	case 'I':
	case 'p':
	case 'P':
		if (hvt_util_size_parse(arg, &v) || v > UINT32_MAX ||
		    ((opt == 'p' || opt == 'P') && v < 50) ||
		    (opt == 'Q' && v < 65536)) {
			fprintf(stderr, "hvtraced: bad value '%s' for --%s\n",
				arg,
				opt == 'Q' ? "client-queue (>= 64K)" :
				opt == 'I' ? "sync-interval" :
				opt == 'p' ? "poll-us (>= 50)" :
					     "poll-max-us (>= 50)");
			return 2;
		}
		if (opt == 'Q')
			D->client_queue = v;
		else if (opt == 'I')
			D->sync_interval_ms = (uint32_t)v;
		else if (opt == 'p')
			D->poll_min_us = (uint32_t)v;
		else
			D->poll_max_us = (uint32_t)v;
		break;
	case 'W':
		D->wakeups = false;
		break;
	case 'k':
	case 'b':
		if (hvt_util_size_parse(arg, &v) || !v ||
		    v > (opt == 'k' ? (1u << 24) : 3600000u)) {
			fprintf(stderr, "hvtraced: --%s takes %s, not '%s'\n",
				opt == 'k' ? "wake-mark" : "wake-backstop-ms",
				opt == 'k' ? "1 to 16M bytes" :
					     "1 to 3600000 ms",
				arg);
			return 2;
		}
		if (opt == 'k')
			D->wake_mark = (uint32_t)v;
		else
			D->wake_backstop_ms = (uint32_t)v;
		break;
	case 'T':
		if (!strcmp(arg, "auto")) {
			D->reader_threads = 0;
			break;
		}
		if (hvt_util_size_parse(arg, &v) || !v || v > D_READERS_MAX) {
			fprintf(stderr,
				"hvtraced: --reader-threads takes 'auto' or a "
				"number from 1 to %u, not '%s'\n",
				D_READERS_MAX, arg);
			return 2;
		}
		D->reader_threads = (unsigned int)v;
		break;
	case 'C':
	case 'G':
		if (hvt_util_size_parse(arg, &v) || !v || v > (1u << 24)) {
			fprintf(stderr, "hvtraced: --%s takes a number from 1 "
					"to 16777216, not '%s'\n",
				opt == 'C' ? "max-channels" :
					     "max-registrations",
				arg);
			return 2;
		}
		if (opt == 'C')
			D->max_channels = (unsigned int)v;
		else
			D->max_registrations = (unsigned int)v;
		break;
	case 'v':
		D->verbose = 1;
		break;
	default:
		return 2;	/* getopt's '?' and ':' are d_parse()'s */
	}
	return 0;
}

/*
 * A bad command line, said as every hvtrace verb says it: what was wrong,
 * then where the usage is.  Started by "hvtrace daemon", whose
 * daemon_start() names itself in $HVTRACED_INVOKED_AS.  Returns 2.
 */
static int d_bad_usage(const char *fmt, const char *what)
{
	const char *prog = getenv("HVTRACED_INVOKED_AS");

	if (!prog || (strcmp(prog, "hvtrace daemon") &&
		      strcmp(prog, "hvtraced")))
		prog = "hvtraced";
	fprintf(stderr, "%s: ", prog);
	fprintf(stderr, fmt, what);
	fprintf(stderr, "\nRun '%s --help' for usage.\n", prog);
	return 2;
}

/*
 * The command line into D and @a.  Returns -1 to go on, or the exit
 * status: 0 after --help or --version, 2 for a bad command line.
 */
static int d_parse(int argc, char **argv, struct d_args *a)
{
	static const struct option opts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "socket", required_argument, NULL, 'S' },
		{ "group", required_argument, NULL, 'g' },
		{ "socket-mode", required_argument, NULL, 'M' },
		{ "attach", required_argument, NULL, 'A' },
		{ "attach-area", required_argument, NULL, 'a' },
		{ "run-dir", required_argument, NULL, 'R' },
		{ "shm-dir", required_argument, NULL, 's' },
		{ "area-dir", required_argument, NULL, 'D' },
		{ "log", required_argument, NULL, 'L' },
		{ "client-queue", required_argument, NULL, 'Q' },
		{ "sync-interval", required_argument, NULL, 'I' },
		{ "poll-us", required_argument, NULL, 'p' },
		{ "poll-max-us", required_argument, NULL, 'P' },
		{ "no-wakeups", no_argument, NULL, 'W' },
		{ "wake-mark", required_argument, NULL, 'k' },
		{ "wake-backstop-ms", required_argument, NULL, 'b' },
		{ "reader-threads", required_argument, NULL, 'T' },
		{ "max-channels", required_argument, NULL, 'C' },
		{ "max-registrations", required_argument, NULL, 'G' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int opt, ret;

	d_defaults();
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":fvh", opts, NULL)) != -1) {
		const char *arg = argv[optind - 1];

		if (opt == '?' || opt == ':') {
			char shortopt[3] = { '-', (char)optopt, 0 };

			if (optopt > 0 && optopt < 256 && strncmp(arg, "--", 2))
				arg = shortopt;
			return d_bad_usage(opt == ':' ? "option '%s' needs a value"
						      : "unknown option '%s'",
					   arg);
		}
		if (opt == 'h') {
			fputs(usage_text, stdout);
			return 0;
		}
		if (opt == 'V') {
			printf("hvtraced %s\n", HVT_VERSION);
			return 0;
		}
		ret = d_option(opt, optarg, a);
		if (ret)
			return ret;
	}
	if (optind < argc) {
		return d_bad_usage("unexpected argument '%s'", argv[optind]);
	}
	if (!D->nr_area_dirs) {
		D->area_dirs[D->nr_area_dirs++] = "/dev/shm";
		if (strcmp(D->shm_dir, "/dev/shm"))
			D->area_dirs[D->nr_area_dirs++] = D->shm_dir;
		D->area_dirs[D->nr_area_dirs++] = D->run_dir;
	}
	if (D->poll_max_us < D->poll_min_us)
		D->poll_max_us = D->poll_min_us;
	D->poll_us = D->poll_min_us;
	return -1;
}

/* Without --foreground: log to the log file, detach (d_ready() tells the
 * parent).  0, or the exit status. */
static int d_detach(struct d_args *a, int *ready_fd)
{
	char logbuf[PATH_MAX];
	int fd, ret;

	if (a->foreground)
		return 0;
	if (!a->log_path) {
		hvt_util_dir_create(D->run_dir);
		snprintf(logbuf, sizeof(logbuf), "%s/hvtraced.log", D->run_dir);
		a->log_path = logbuf;
	}
	fd = open(a->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
	if (fd < 0) {
		fprintf(stderr, "hvtraced: cannot open the log %s: %s (use "
				"--log or --foreground)\n",
			a->log_path, strerror(errno));
		return 1;
	}
	ret = daemonize(ready_fd, a->log_path);
	a->log_path = NULL;	/* (logbuf goes) */
	if (ret) {
		fprintf(stderr, "hvtraced: cannot detach: %s\n",
			strerror(-ret));
		close(fd);
		return 1;
	}
	dup2(fd, STDERR_FILENO);
	close(fd);
	fd = open("/dev/null", O_RDWR);
	if (fd >= 0) {
		dup2(fd, STDIN_FILENO);
		dup2(fd, STDOUT_FILENO);
		if (fd > 2)
			close(fd);
	}
	return 0;
}

/* The remotes of --attach and --attach-area; one that fails is logged. */
static void d_attach_args(const struct d_args *a)
{
	struct remote *r;
	unsigned int i;

	for (i = 0; i < a->nr_attach; i++) {
		char msg[512];

		if (remote_attach_chardev(a->attach[i], (uid_t)-1, &r, msg,
					  sizeof(msg)))
			d_log("--attach %s: %s", a->attach[i], msg);
		else
			d_log("%s", msg);
	}
	for (i = 0; i < a->nr_attach_area; i++) {
		char msg[1024], name[64];
		const char *spec = a->attach_area[i];
		const char *eq = strchr(spec, '=');

		snprintf(name, sizeof(name), "%.*s", (int)(eq - spec), spec);
		if (kring_remote_spec(eq + 1) ?
			    kring_remote_attach(name, eq + 1, 0, NULL, 0, NULL,
						&r, msg, sizeof(msg)) :
			    area_remote_attach(name, eq + 1, 0, NULL, &r, msg,
					       sizeof(msg)))
			d_log("--attach-area %s: %s", spec, msg);
		else
			d_log("%s", msg);
	}
}

/* The formats cache holds guest kernel addresses: root and group hvtrace
 * only, whatever an older hvtraced left. */
static void d_cache_fix(void)
{
	char msg[PATH_MAX + 128];
	int n = kf_cache_fix(D->cache_dir, msg, sizeof(msg));

	if (n < 0)
		d_log("the guest kernels' formats cache: %s", msg);
	else if (n > 0)
		d_log("the guest kernels' formats cache %s/kformats: %d "
		      "folders and files readable by others were taken back "
		      "to root and group hvtrace",
		      D->cache_dir, n);
}

/* Signals, epoll, the roles, the socket, what is attached at start.  0, or
 * the exit status. */
static int d_setup(const struct d_args *a)
{
	sigset_t mask;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	D->epfd = epoll_create1(EPOLL_CLOEXEC);
	D->sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (D->epfd < 0 || D->sfd < 0) {
		d_log("epoll/signalfd: %s", strerror(errno));
		return 1;
	}
	access_init();
	d_cache_fix();
	conn_role_register(&agent_conn_ops);
	conn_role_register(&tool_conn_ops);
	if (!conn_signal(D->sfd) || listen_socket())
		return 1;
	d_attach_args(a);
	state_restore();
	d_log("listening on %s (pid %d)", D->sock_path, (int)getpid());
	return 0;
}

/* A detached daemon's parent returns once the socket listens. */
static void d_ready(int ready_fd)
{
	if (ready_fd < 0)
		return;
	if (write(ready_fd, "y", 1) != 1)
		d_log("warning: could not tell the parent we started");
	close(ready_fd);
}

/* The epoll timeout of the next round: to the first deadline, or the next
 * ring poll while someone subscribes. */
static int d_timeout(void)
{
	uint64_t now = d_now_ms(), next = now + 60000, now_us;
	struct remote *r;
	int timeout;

	for (r = D->remotes; r; r = r->next)
		remote_tick(r, now, &next);
	conns_deadlines(now, &next);
	timeout = next <= now ? 0 : (int)(next - now);
	if (fanout_active()) {
		now_us = d_now_us();
		if (D->next_poll_us <= now_us)
			timeout = 0;
		else if ((D->next_poll_us - now_us + 999) / 1000 <
			 (uint64_t)timeout)
			timeout = (int)((D->next_poll_us - now_us + 999) /
					1000);
	}
	return timeout;
}

/* Until a signal stops it: deadlines, descriptors, ring polls. */
static void d_loop(void)
{
	struct epoll_event evs[64];
	int n, i;

	while (!D->stop) {
		n = epoll_wait(D->epfd, evs, 64, d_timeout());
		if (n < 0 && errno != EINTR) {
			d_log("epoll_wait: %s", strerror(errno));
			break;
		}
		for (i = 0; i < n; i++)
			conn_handle(evs[i].data.ptr, evs[i].events);
		if (fanout_active() && d_now_us() >= D->next_poll_us) {
			bool backlog = fanout_poll();
			/* Armed wakeups may sleep, or settle sooner; a backlog
			 * is read again once the connections were served. */
			uint64_t after = wake_after_poll(D->poll_us);

			D->next_poll_us = d_now_us() + (backlog ? 0 : after);
		}
		conns_reap();
		state_save();
	}
}

static void d_teardown(void)
{
	conns_flush_all(D_STOP_FLUSH_MS);
	while (D->remotes)
		remote_destroy(D->remotes);
	fanout_stop();
	conns_reap();
	page_bufs_free();
	unlink(D->sock_path);
	d_log("stopped");
}

int main(int argc, char **argv)
{
	static struct daemon daemon;
	struct d_args args = { 0 };
	int ready_fd = -1, ret;

	D = &daemon;
	ret = d_parse(argc, argv, &args);
	if (ret >= 0)
		return ret;
	ret = d_detach(&args, &ready_fd);
	if (!ret)
		ret = d_setup(&args);
	if (ret)
		return ret;
	d_ready(ready_fd);
	d_loop();
	d_teardown();
	return 0;
}
