// SPDX-License-Identifier: MIT
/*
 * hvtrace daemon - start hvtraced, or ask it about its remotes.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <hvtrace.h>

#include "cli.h"
#include <hvtrace-daemon.h>

static const char daemon_usage[] =
	"usage: hvtrace daemon [start] [--foreground] [--socket PATH]\n"
	"                      [OPTIONS]\n"
	"       hvtrace daemon status [--socket PATH]\n"
	"       hvtrace daemon info [--remote NAME] [--socket PATH]\n"
	"       hvtrace daemon attach|detach NAME [--socket PATH]\n"
	"       hvtrace daemon attach --area AREA --name NAME [--disabled]\n"
	"                      [--socket PATH]\n"
	"       hvtrace daemon attach --vm-pid PID|--domain DOMAIN|--ram FILE\n"
	"                      [--name NAME] [--formats DIR] [--socket PATH]\n"
	"       hvtrace daemon stop [--socket PATH]\n"
	"\n"
	"start (the default) runs hvtraced, the host daemon that owns the\n"
	"trace areas of guests and local agents and proxies their user\n"
	"events; it detaches once its socket listens unless --foreground is\n"
	"given.  Every other option is passed to hvtraced (see hvtraced\n"
	"--help): --attach NAME, --run-dir DIR, --shm-dir DIR, --group NAME,\n"
	"--socket-mode MODE, --client-queue BYTES, --sync-interval MS, ...\n"
	"\n"
	"status   one line per remote: id, name, state, transport, CPUs,\n"
	"         events, clients, time-sync samples and error bound\n"
	"info     everything hvtraced knows about one remote\n"
	"attach   attach guest NAME: hvtraced connects to\n"
	"         RUN_DIR/NAME/control.sock (QEMU's chardev of the guest's\n"
	"         virtio-serial port) and opens SHM_DIR/hvtrace-NAME\n"
	"attach --area AREA --name NAME\n"
	"         attach an area alone, without an agent: a hypervisor's\n"
	"         trace area in its guest-RAM file (FILE@0x1000000+16M) or a\n"
	"         loopback writer's file.  AREA is PATH[@OFFSET[+SIZE]];\n"
	"         hvtraced owns its control page (enable bits, tracing_on,\n"
	"         time sync) and retries every second until the writer has\n"
	"         formatted it.  Its events are enabled, unless --disabled\n"
	"attach --vm-pid PID\n"
	"         attach the guest kernel's ftrace ring found in the memory\n"
	"         of VMM process PID (as hvtrace stream --vm-pid finds it),\n"
	"         as remote NAME (default vmpid-PID); --formats DIR names\n"
	"         its events (the guest's formats, as 'hvtrace guest\n"
	"         kformats' writes them); without it, the formats cache's\n"
	"         folder of the kernel the guest's vmcoreinfo names (its\n"
	"         release and build id).  Only root, or the VMM's own user\n"
	"         with ptrace access to it, may.  Its times are the guest's\n"
	"         own trace clock; when the VMM exits, the remote stops\n"
	"attach --ram FILE\n"
	"         the same for the guest kernel's ring in guest RAM file\n"
	"         FILE (a rig guest's kept RAM, a QEMU memory-backend file),\n"
	"         as remote NAME (default ram-STEM, STEM the file's name\n"
	"         without hvtrace- and .ram); the file is read as it is, to\n"
	"         its end: the remote is stopped from the start (attach a\n"
	"         running guest by --vm-pid)\n"
	"attach --domain DOMAIN\n"
	"         the same for the QEMU of running libvirt domain DOMAIN\n"
	"         (its pid from libvirt's pid file, checked against its\n"
	"         command line), as remote NAME (default DOMAIN)\n"
	"detach   forget a remote (its registry and subscriptions)\n"
	"stop     stop hvtraced (SIGTERM; it says goodbye to its agents) and\n"
	"         wait until it is gone\n"
	"\n"
	"--socket PATH   hvtraced's socket (default $HVTRACED_SOCKET or\n"
	"                " HVTRACE_DAEMON_DEFAULT_SOCKET ")\n";

static int daemon_start(int argc, char **argv)
{
	char self[PATH_MAX], path[PATH_MAX + 16], *slash;
	char **args;
	ssize_t n;
	int i;

	const char *env = getenv("HVTRACED_SOCKET");
	int has_socket = 0, na = 1;

	args = calloc((size_t)argc + 4, sizeof(*args));
	if (!args)
		return hvt_cli_error("daemon", "out of memory");
	args[0] = "hvtraced";
	for (i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--socket") ||
		    !strncmp(argv[i], "--socket=", 9))
			has_socket = 1;
		args[na++] = argv[i];
	}
	/* Its usage errors name this verb, not hvtraced. */
	setenv("HVTRACED_INVOKED_AS", "hvtrace daemon", 1);
	/* hvtraced itself does not read $HVTRACED_SOCKET; the tools do, so
	 * a daemon started here listens where they will look. */
	if (!has_socket && env && *env) {
		args[na++] = "--socket";
		args[na++] = (char *)env;
	}
	/* hvtraced next to this hvtrace first (a build tree, an install
	 * prefix), then $PATH. */
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			snprintf(path, sizeof(path), "%s/hvtraced", self);
			if (!access(path, X_OK))
				execv(path, args);
		}
	}
	execvp("hvtraced", args);
	free(args);
	return hvt_cli_error("daemon",
			     "cannot run hvtraced: %s (install it next to "
			     "hvtrace or in PATH)",
			     strerror(errno));
}

static int daemon_status(struct hvtrace_daemon *dc)
{
	struct hvt_msg m, r;
	uint32_t i;

	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_REMOTES;
	if (hvtrace_daemon_call(dc, &m, &r, HVTRACE_DAEMON_TIMEOUT_MS, NULL, NULL))
		return hvt_cli_error("daemon", "%s", hvtrace_last_error());
	if (r.type != HVT_MSG_REMOTES)
		return hvt_cli_error("daemon", "unexpected reply");
	printf("%-4s %-20s %-12s %-8s %4s %6s %7s %8s %12s\n", "ID", "NAME",
	       "STATE", "LINK", "CPUS", "EVENTS", "CLIENTS", "SYNCS",
	       "CLOCK_ERR_NS");
	for (i = 0; i < r.u.remotes.recs.count; i++) {
		struct hvt_remote_rec x;
		char err[32];

		hvt_msg_remote_at(&r.u.remotes.recs, i, &x);
		if (x.clock_err_ns == UINT64_MAX)
			snprintf(err, sizeof(err), "-");
		else
			snprintf(err, sizeof(err), "%llu",
				 (unsigned long long)x.clock_err_ns);
		printf("%-4u %-20s %-12s %-8s %4u %6u %7u %8llu %12s\n", x.id,
		       x.name, hvt_remote_state_word(x.state, x.transport),
		       x.transport == HVT_TRANSPORT_SOCKET ? "socket" :
		       x.transport == HVT_TRANSPORT_AREA   ? "area" :
		       x.transport == HVT_TRANSPORT_KRING  ? "kring" :
							     "chardev",
		       x.nr_cpus, x.nr_events, x.nr_clients,
		       (unsigned long long)x.sync_samples, err);
	}
	return HVT_EXIT_OK;
}

/* The daemon's pid is its socket peer's; SIGTERM ends it cleanly. */
static int daemon_stop(struct hvtrace_daemon *dc, const char *sock)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct timespec ts = { 0, 20000000 };
	int i;

	if (getsockopt(hvtrace_daemon_fd(dc), SOL_SOCKET, SO_PEERCRED, &cred,
		       &len) || cred.pid <= 0)
		return hvt_cli_error("daemon", "cannot tell hvtraced's pid: %s",
				     strerror(errno));
	hvtrace_daemon_close(dc);
	if (kill(cred.pid, SIGTERM))
		return hvt_cli_error("daemon", "cannot stop hvtraced (pid %d): "
					       "%s",
				     (int)cred.pid, strerror(errno));
	/* Bounded: 10 s. */
	for (i = 0; i < 500; i++) {
		if (kill(cred.pid, 0) && errno == ESRCH) {
			printf("hvtraced (pid %d, %s) stopped\n", (int)cred.pid,
			       sock ? sock : hvtrace_daemon_default_socket());
			return HVT_EXIT_OK;
		}
		nanosleep(&ts, NULL);
	}
	return hvt_cli_error("daemon", "hvtraced (pid %d) did not stop within "
				       "10 s",
			     (int)cred.pid);
}

/* The default remote name of RAM file @path: "ram-STEM"; -EINVAL if
 * that is no name. */
static int daemon_ram_name(const char *path, char *out, size_t size)
{
	const char *b = strrchr(path, '/');
	size_t n;

	b = b ? b + 1 : path;
	if (!strncmp(b, "hvtrace-", 8))
		b += 8;
	n = strlen(b);
	if (n > 4 && !strcmp(b + n - 4, ".ram"))
		n -= 4;
	if ((size_t)snprintf(out, size, "ram-%.*s", (int)n, b) >= size ||
	    !hvt_proto_name_ok(out, (uint32_t)strlen(out)))
		return -EINVAL;
	return 0;
}

/* attach --ram: the file and formats opened here, with this user's
 * rights, and passed; without --formats, the formats cache's folder of
 * the kernel the file's vmcoreinfo names. */
static int daemon_attach_ram(struct hvtrace_daemon *dc, const char *remote,
			     const char *ram, const char *formats)
{
	char text[HVT_PROTO_TEXT_MAX + 1];
	static char cached[PATH_MAX];

	if (!hvt_proto_name_ok(remote, (uint32_t)strlen(remote)))
		return hvt_cli_usage("daemon",
				     "'%s' is not a remote name "
				     "(1..31 of [A-Za-z0-9._-])",
				     remote);
	if (!formats && !hvt_cli_kformats_cached("daemon", ram, NULL, cached,
						 sizeof(cached)))
		formats = cached;
	if (hvtrace_daemon_attach_ram(dc, remote, ram, formats, text,
				      sizeof(text)))
		return hvt_cli_error("daemon", "attach %s: %s", remote,
				     hvtrace_last_error());
	if (text[0])
		printf("%s\n", text);
	return HVT_EXIT_OK;
}

static int daemon_run(int argc, char **argv)
{
	const char *sock = NULL, *remote = NULL, *cmd = "start", *area = NULL;
	const char *vm_pid = NULL, *formats = NULL, *domain = NULL;
	const char *ram = NULL;
	char vm_name[32];
	int vm_pid_nr = 0;
	bool disabled = false;
	struct hvtrace_daemon *dc;
	struct hvt_remote_rec rec;
	int i, rc, first = 1;

	if (argc > 1 && argv[1][0] != '-') {
		cmd = argv[1];
		first = 2;
	}
	if (!strcmp(cmd, "start")) {
		/* Pass --socket on: hvtraced understands it itself. */
		return daemon_start(argc - first, argv + first);
	}
	if (strcmp(cmd, "status") && strcmp(cmd, "info") &&
	    strcmp(cmd, "attach") && strcmp(cmd, "detach") &&
	    strcmp(cmd, "stop"))
		return hvt_cli_usage("daemon", "unknown command '%s'", cmd);
	for (i = first; i < argc; i++) {
		if (!strcmp(argv[i], "--socket") && i + 1 < argc) {
			sock = argv[++i];
		} else if ((!strcmp(argv[i], "--remote") ||
			    !strcmp(argv[i], "--name")) && i + 1 < argc) {
			remote = argv[++i];
		} else if (!strcmp(argv[i], "--area") && i + 1 < argc &&
			   !strcmp(cmd, "attach")) {
			area = argv[++i];
		} else if (!strcmp(argv[i], "--disabled") &&
			   !strcmp(cmd, "attach")) {
			disabled = true;
		} else if (!strcmp(argv[i], "--vm-pid") && i + 1 < argc &&
			   !strcmp(cmd, "attach")) {
			vm_pid = argv[++i];
		} else if (!strcmp(argv[i], "--domain") && i + 1 < argc &&
			   !strcmp(cmd, "attach")) {
			domain = argv[++i];
		} else if (!strcmp(argv[i], "--ram") && i + 1 < argc &&
			   !strcmp(cmd, "attach")) {
			ram = argv[++i];
		} else if (!strcmp(argv[i], "--formats") && i + 1 < argc &&
			   !strcmp(cmd, "attach")) {
			formats = argv[++i];
		} else if (argv[i][0] == '-') {
			return hvt_cli_usage("daemon", "unknown option '%s'",
					     argv[i]);
		} else if (!remote &&
			   (!strcmp(cmd, "attach") || !strcmp(cmd, "detach"))) {
			remote = argv[i];
		} else {
			return hvt_cli_usage("daemon", "unexpected '%s'",
					     argv[i]);
		}
	}
	if (!!domain + !!vm_pid + !!area + !!ram > 1)
		return hvt_cli_usage("daemon", "one of --area, --vm-pid, "
					       "--domain and --ram");
	if (ram) {
		if (!remote && daemon_ram_name(ram, vm_name, sizeof(vm_name)))
			return hvt_cli_usage("daemon",
					     "no remote name follows from %s: "
					     "give --name NAME (1..31 of "
					     "[A-Za-z0-9._-])",
					     ram);
		if (!remote)
			remote = vm_name;
	} else if (domain) {
		rc = hvt_cli_domain_pid("daemon", domain, &vm_pid_nr);
		if (rc)
			return rc;
		if (!remote)
			remote = domain;
	} else if (vm_pid) {
		char *e;
		long pid = strtol(vm_pid, &e, 10);

		if (*e || e == vm_pid || pid <= 0 || pid > 0x3fffffff)
			return hvt_cli_usage("daemon", "--vm-pid %s: not a "
						       "process id",
					     vm_pid);
		vm_pid_nr = (int)pid;
		if (!remote) {
			snprintf(vm_name, sizeof(vm_name), "vmpid-%ld", pid);
			remote = vm_name;
		}
	} else if (formats) {
		return hvt_cli_usage("daemon", "--formats goes with --vm-pid, "
					       "--domain or --ram");
	}
	if ((!strcmp(cmd, "attach") || !strcmp(cmd, "detach")) && !remote)
		return hvt_cli_usage("daemon", "%s needs a %sNAME", cmd,
				     area ? "--name " : "guest ");
	if (disabled && !area)
		return hvt_cli_usage("daemon", "--disabled goes with --area");
	if (hvtrace_daemon_open(sock, &dc)) {
		if (!strcmp(cmd, "stop")) {
			printf("hvtraced is not running (%s)\n",
			       sock ? sock : hvtrace_daemon_default_socket());
			return HVT_EXIT_OK;
		}
		return hvt_cli_error("daemon", "%s", hvtrace_last_error());
	}
	if (!strcmp(cmd, "stop"))
		return daemon_stop(dc, sock);
	if (!strcmp(cmd, "status")) {
		rc = daemon_status(dc);
	} else if (!strcmp(cmd, "info")) {
		char *t;
		size_t len;

		if (hvtrace_daemon_find_remote(dc, remote, &rec) ||
		    hvtrace_daemon_get_text(dc, rec.id, HVT_TEXT_INFO, &t, &len)) {
			rc = hvt_cli_error("daemon", "%s",
					   hvtrace_last_error());
		} else {
			fwrite(t, 1, len, stdout);
			free(t);
			rc = HVT_EXIT_OK;
		}
	} else if (ram) {
		rc = daemon_attach_ram(dc, remote, ram, formats);
	} else if (vm_pid_nr) {
		char text[HVT_PROTO_TEXT_MAX + 1];
		static char cached[PATH_MAX];
		bool name_ok = hvt_proto_name_ok(remote,
						 (uint32_t)strlen(remote));

		/* The memory and the formats are opened here, with this
		 * user's rights, and passed to hvtraced; without --formats,
		 * the formats cache's folder of the kernel the guest's
		 * vmcoreinfo names (stderr says which, or why none). */
		if (name_ok && !formats &&
		    !hvt_cli_kformats_of_pid("daemon", vm_pid_nr, cached,
					     sizeof(cached)))
			formats = cached;
		if (!name_ok) {
			rc = hvt_cli_usage("daemon", "'%s' is not a remote "
						     "name (1..31 of "
						     "[A-Za-z0-9._-])",
					   remote);
		} else if (hvtrace_daemon_attach_vm_pid(dc, remote, vm_pid_nr,
						      formats, text,
						      sizeof(text))) {
			rc = hvt_cli_error("daemon", "attach %s: %s", remote,
					   hvtrace_last_error());
		} else {
			if (text[0])
				printf("%s\n", text);
			rc = HVT_EXIT_OK;
		}
	} else {
		struct hvt_msg m;
		char text[HVT_PROTO_TEXT_MAX + 1];

		char *spec = NULL;

		memset(&m, 0, sizeof(m));
		m.type = !strcmp(cmd, "attach") ? HVT_MSG_ATTACH :
						  HVT_MSG_DETACH;
		m.u.arg.s.ptr = remote;
		m.u.arg.s.len = (uint32_t)strlen(remote);
		if (area && hvt_proto_name_ok(remote, m.u.arg.s.len)) {
			/* NAME=AREA: a remote that is an area alone. */
			if (asprintf(&spec, "%s=%s", remote, area) < 0) {
				hvtrace_daemon_close(dc);
				return hvt_cli_error("daemon", "out of memory");
			}
			m.type = HVT_MSG_ATTACH_AREA;
			m.u.arg.arg = disabled ? HVT_ATTACH_DISABLED : 0;
			m.u.arg.s.ptr = spec;
			m.u.arg.s.len = (uint32_t)strlen(spec);
		}
		if (!hvt_proto_name_ok(remote, (uint32_t)strlen(remote))) {
			rc = hvt_cli_usage("daemon", "'%s' is not a guest "
						     "name (1..31 of "
						     "[A-Za-z0-9._-])",
					   remote);
		} else if (hvtrace_daemon_call_result(dc, &m, NULL, text,
					      sizeof(text))) {
			rc = hvt_cli_error("daemon", "%s %s: %s", cmd, remote,
					   hvtrace_last_error());
		} else {
			if (text[0])
				printf("%s\n", text);
			rc = HVT_EXIT_OK;
		}
		free(spec);
	}
	hvtrace_daemon_close(dc);
	return rc;
}

HVT_CLI_COMMAND(daemon, "daemon",
		"start hvtraced, list its remotes, attach or detach guests",
		daemon_usage, daemon_run);
