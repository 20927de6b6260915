// SPDX-License-Identifier: MIT
/*
 * hvtrace guest - run a QEMU guest and trace it through hvtraced.
 *
 * The guest itself is run by the rig's launcher (qemu-scripts/hvtrace-guest:
 * QEMU with the trace area as an ivshmem BAR on a /dev/shm file and the
 * control channel as a virtio-serial port on a unix socket, TCG unless KVM
 * has been proven to work, clean teardown).  This verb adds the host
 * side: it makes sure hvtraced runs (starting it if needed), attaches the
 * guest to it by name, and waits until the guest's agent has connected,
 * so that "hvtrace events" and "hvtrace stream --remote NAME" work at
 * once.  "stop" detaches and stops; "status" and "list" show both sides.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hvtrace.h>
#include <hvtrace/proto.h>

#include "cli.h"
#include <hvtrace-daemon.h>

#define VERB	    "guest"
#define GU_MAX_ARGS 256

static const char guest_usage[] =
	"usage: hvtrace guest start NAME [OPTIONS] [LAUNCHER-OPTIONS]\n"
	"       hvtrace guest stop NAME [--timeout S] [--socket PATH]\n"
	"       hvtrace guest status NAME [--socket PATH]\n"
	"       hvtrace guest list [--socket PATH]\n"
	"       hvtrace guest kformats NAME|--log FILE [DIR]\n"
	"\n"
	"Run a Linux guest under QEMU and trace it from the host.\n"
	"\n"
	"start   boots guest NAME with qemu-scripts/hvtrace-guest (its trace\n"
	"        area is /dev/shm/hvtrace-NAME, shared as an ivshmem BAR; its\n"
	"        control channel a virtio-serial port on\n"
	"        /run/hvtrace/NAME/control.sock), makes sure hvtraced runs\n"
	"        (starting it when it does not), attaches the guest to it and\n"
	"        waits until the guest is up: its hvtrace-agent connected\n"
	"        and its state ready (status, list).  Then:\n"
	"          hvtrace events status --remote NAME\n"
	"          hvtrace events enable --remote NAME EVENT...\n"
	"          hvtrace stream NAME\n"
	"stop    detaches the guest from hvtraced and stops it (QEMU, its\n"
	"        sockets and its area file go; see --keep-area); exits 0\n"
	"        when the guest is off afterwards: stopped, or found powered\n"
	"        off already (--run), panicked or crashed, or none of that\n"
	"        name, each said once\n"
	"status  the guest (state, vCPUs, area, sockets) and what hvtraced\n"
	"        knows of it (agent state, events, time-sync error bound),\n"
	"        as key=value lines; state= is starting, booting, ready\n"
	"        (the agent runs), ended (the --run command ended),\n"
	"        stopping, or, once QEMU ended unasked, powered-off (the\n"
	"        guest powered itself off), panicked or crashed (then\n"
	"        summary= says how, and whether its area and RAM were\n"
	"        kept); exits 1 when there is no guest of that name\n"
	"list    every guest of the rig (those whose QEMU ended unasked\n"
	"        too, until stopped or cleaned up), and what hvtraced says\n"
	"        of it, in the same words\n"
	"kformats  unpack the event formats a --kernel-events guest printed\n"
	"        on its console (NAME running, or its kept --log FILE) into\n"
	"        DIR, laid out like tracefs (default: a cache folder, named)\n"
	"\n"
	"start options:\n"
	"  --no-daemon         do not start hvtraced; fail if it is not\n"
	"                      running\n"
	"  --no-wait           return once the guest is launched and attached\n"
	"  --timeout S         how long to wait for the guest (default 120)\n"
	"  --socket PATH       hvtraced's socket (default $HVTRACED_SOCKET or\n"
	"                      " HVTRACE_DAEMON_DEFAULT_SOCKET ")\n"
	"launcher options (passed on; see hvtrace-guest(1)):\n"
	"  --run 'CMD'  run 'sh -c CMD' in the guest, then power the guest\n"
	"      off: QEMU ends and its area goes (see --keep-area); 'hvtrace\n"
	"      guest status NAME' and 'hvtrace list' then say powered-off\n"
	"  --cpus N (>= 2)  --mem MB  --area-size SIZE (a power of two)\n"
	"  --agent-args 'ARGS'  --kernel FILE  --initrd FILE\n"
	"  --add FILE[:DEST]  --module NAME  --port NAME  --append 'ARGS'\n"
	"  --qemu-arg ARG  --accel auto|tcg|tcg1|kvm  --keep-area  --log FILE\n"
	"  (auto uses KVM where a probe boot of the kernel worked, else TCG;\n"
	"  kvm fails where it did not, saying why; tcg1: single-threaded\n"
	"  TCG, for guests whose kernel events change while they run)\n"
	"  --kernel-events LIST  the guest kernel's own events (the\n"
	"      kernel's syntax: sched,irq,ftrace:print) into a persistent\n"
	"      ring the host reads from guest RAM (/dev/shm/hvtrace-NAME.ram):\n"
	"      'hvtrace stream NAME --guest-kernel' shows them\n"
	"  --kernel-buffer SIZE  that ring, all CPUs (default 8M)\n"
	"  --kernel-formats LIST more events whose formats the guest prints\n"
	"      at boot (for events it enables later itself)\n"
	"  --keep-ram            keep the RAM file after the guest ends\n"
	"  --kernel-ram file|memfd|anon  guest RAM for --kernel-events: the\n"
	"      RAM file (default), a memfd or QEMU's anonymous memory (no\n"
	"      file: 'hvtrace stream --vm-pid QEMU-PID' reads the ring)\n"
	"  --kernel-mode ring|copy|auto  ring: the persistent ring above;\n"
	"      copy: hvtrace-agent copies the kernel's pages into the trace\n"
	"      area (any guest kernel; 'hvtrace stream NAME' shows them);\n"
	"      auto (default): ring where the guest kernel has it, else copy\n"
	"  --no-bell             no ivshmem-doorbell device (served by\n"
	"      hvtrace-ivshmem): the guest's agent relays its writers'\n"
	"      doorbells\n"
	"\n"
	"The guest kernel is Debian's 6.12 (qemu-scripts/fetch-kernel.sh,\n"
	"cached in /var/cache/hvtrace); the launcher packs the initramfs at\n"
	"each start from busybox and this build's agent and workloads\n"
	"(HVT_OBJTREE; make guest-image builds the same image ahead, for\n"
	"--initrd).  HVT_RUNDIR and HVT_SHM_DIR move /run/hvtrace and\n"
	"/dev/shm for the launcher and for an hvtraced started here.\n";

/* Launcher options that take a value (the rest are flags). */
static const char *const gu_valued[] = {
	"--cpus",   "--mem",	  "--area-size", "--run",    "--agent-args",
	"--kernel", "--initrd",	  "--add",	 "--module", "--port",
	"--append", "--qemu-arg", "--accel",	 "--log",
	"--kernel-events", "--kernel-buffer", "--kernel-ram", "--kernel-formats",
	"--kernel-mode", NULL,
};

static void gu_sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* Names both the launcher and hvtraced accept. */
static bool gu_name_ok(const char *n)
{
	size_t i, len = strlen(n);

	if (!len || len > HVT_PROTO_NAME_MAX || n[0] == '-' || n[0] == '_')
		return false;
	for (i = 0; i < len; i++)
		if (!((n[i] >= 'a' && n[i] <= 'z') ||
		      (n[i] >= 'A' && n[i] <= 'Z') ||
		      (n[i] >= '0' && n[i] <= '9') || n[i] == '_' ||
		      n[i] == '-'))
			return false;
	return true;
}


/* The value of KEY in "key=value" lines, copied to @val. */
static bool gu_kv(const char *text, const char *key, char *val, size_t size)
{
	size_t klen = strlen(key);
	const char *p = text;

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		if (len > klen && !strncmp(p, key, klen) && p[klen] == '=') {
			size_t n = len - klen - 1;

			if (n >= size)
				n = size - 1;
			memcpy(val, p + klen + 1, n);
			val[n] = '\0';
			return true;
		}
		p = nl ? nl + 1 : NULL;
	}
	return false;
}

/* "hvtrace-guest status NAME": 0 with the text, 1 when no such guest. */
static int gu_status_text(const char *launcher, const char *name, char **out)
{
	char *argv[] = {(char *)launcher, "status", (char *)name, NULL};
	int rc = hvt_cli_run(argv, out);

	if (rc && *out) {
		free(*out);
		*out = NULL;
	}
	return rc;
}

/* --- hvtraced ------------------------------------------------------------ */

static int gu_connect(const char *sock, struct hvtrace_daemon **dc)
{
	return hvtrace_daemon_open(sock, dc);
}

/* Start hvtraced (it detaches once it listens). */
static int gu_start_daemon(const char *sock)
{
	char dir[PATH_MAX], path[PATH_MAX + 16];
	const char *run = getenv("HVT_RUNDIR"), *shm = getenv("HVT_SHM_DIR");
	char *argv[12];
	int argc = 0, rc;

	if (!hvt_cli_exe_dir(dir, sizeof(dir))) {
		snprintf(path, sizeof(path), "%s/hvtraced", dir);
		argv[argc++] = hvt_cli_executable(path) ? path : "hvtraced";
	} else {
		argv[argc++] = "hvtraced";
	}
	/* hvtraced does not read $HVTRACED_SOCKET: always say where. */
	argv[argc++] = "--socket";
	argv[argc++] = (char *)(sock ? sock : hvtrace_daemon_default_socket());
	if (run && *run) {
		argv[argc++] = "--run-dir";
		argv[argc++] = (char *)run;
	}
	if (shm && *shm) {
		argv[argc++] = "--shm-dir";
		argv[argc++] = (char *)shm;
	}
	argv[argc] = NULL;
	rc = hvt_cli_run(argv, NULL);
	if (rc)
		return hvt_cli_error(VERB,
				     "could not start hvtraced (exit %d; "
				     "its log is in %s/hvtraced.log); "
				     "start it by hand with 'hvtrace "
				     "daemon --foreground' to see why",
				     rc, run && *run ? run : "/run/hvtrace");
	printf("hvtrace guest: started hvtraced (socket %s, log "
	       "%s/hvtraced.log)\n",
	       sock ? sock : hvtrace_daemon_default_socket(),
	       run && *run ? run : "/run/hvtrace");
	return 0;
}

static int gu_ensure_daemon(const char *sock, bool may_start,
			    struct hvtrace_daemon **dc)
{
	int ret = gu_connect(sock, dc);

	if (!ret)
		return 0;
	if (ret != -ENOENT && ret != -ECONNREFUSED)
		return hvt_cli_error(VERB, "%s", hvtrace_last_error());
	if (!may_start)
		return hvt_cli_error(VERB,
				     "hvtraced is not running (%s): "
				     "start it with 'hvtrace daemon', "
				     "or leave out --no-daemon",
				     sock ? sock
					  : hvtrace_daemon_default_socket());
	ret = gu_start_daemon(sock);
	if (ret)
		return ret;
	if (gu_connect(sock, dc))
		return hvt_cli_error(VERB,
				     "hvtraced started but does not "
				     "answer: %s",
				     hvtrace_last_error());
	return 0;
}

static int gu_attach(struct hvtrace_daemon *dc, const char *name, uint32_t type,
		     char *text, size_t size)
{
	struct hvt_msg m;

	memset(&m, 0, sizeof(m));
	m.type = (uint16_t)type;
	m.u.arg.s.ptr = name;
	m.u.arg.s.len = (uint32_t)strlen(name);
	return hvtrace_daemon_call_result(dc, &m, NULL, text, size);
}

/* --- start --------------------------------------------------------------- */

/*
 * Wait until guest NAME is up: hvtraced has its agent (CONNECTED) and the
 * launcher says "ready" (the console's readiness marker, which the
 * guest's init prints once its agent listens, moments after the agent may
 * have met hvtraced).  Both, so that once start returns every account of
 * the guest says ready: hvtrace list, hvtrace guest list and status.  A
 * guest whose --run command ended already ("ended", or powered off after
 * its agent connected) was up too.  @rec: hvtraced's record of it.
 * Returns 0, or the exit status of a start that failed or was stopped.
 */
static int gu_wait_up(struct hvtrace_daemon *dc, const char *launcher,
		      const char *name, const char *st, uint64_t t0,
		      double timeout, struct hvt_remote_rec *rec)
{
	uint64_t deadline = t0 + (uint64_t)(timeout * 1000), next_check = 0;
	char text[HVT_PROTO_TEXT_MAX + 1], v[PATH_MAX];
	bool connected = false;

	/* Ctrl-C while waiting: the start is abandoned, the guest stopped. */
	hvt_cli_catch_stop_signals(false);
	for (;;) {
		uint64_t now = hvt_cli_now_ns() / 1000000;
		char *s2 = NULL, state[32] = "", sum[256] = "";
		bool ended;
		int rc;

		if (hvt_cli_stop_signal) {
			char *sargv[] = {(char *)launcher, "stop", (char *)name,
					 NULL};

			fprintf(stderr,
				"hvtrace guest: interrupted: stopping "
				"'%s'\n",
				name);
			gu_attach(dc, name, HVT_MSG_DETACH, text, sizeof(text));
			hvt_cli_run(sargv, NULL);
			return hvt_cli_stop_signal == SIGINT ? 130 : 143;
		}
		if (!connected && !hvtrace_daemon_find_remote(dc, name, rec) &&
		    rec->state == HVT_REMOTE_CONNECTED) {
			connected = true;
			next_check = now;
		}
		if (now >= next_check) {
			/* Every second while booting; at each turn once the
			 * agent is there and only the marker is awaited. */
			next_check = now + (connected ? 0 : 1000);
			rc = gu_status_text(launcher, name, &s2);
			if (!rc)
				gu_kv(s2, "state", state, sizeof(state));
			if (s2)
				gu_kv(s2, "summary", sum, sizeof(sum));
			free(s2);
			ended = !strcmp(state, "stale") ||
				!strcmp(state, "powered-off") ||
				!strcmp(state, "panicked") ||
				!strcmp(state, "crashed");
			if (connected && (!strcmp(state, "ready") ||
					  !strcmp(state, "ended")))
				return 0;
			if (connected && !strcmp(state, "powered-off")) {
				printf("hvtrace guest: '%s' came up and has "
				       "%s already\n",
				       name, sum[0] ? sum : "powered off");
				return 0;
			}
			if (rc || ended) {
				/* A --run command that ended quickly: the
				 * launcher's summary says how. */
				hvt_cli_error(
					VERB,
					"guest '%s' %s before it was up "
					"(console: %s)",
					name, sum[0] ? sum : "ended",
					gu_kv(st, "console_log", v, sizeof(v))
						? v
						: "?");
				return HVT_EXIT_FAIL;
			}
		}
		if (now >= deadline) {
			hvt_cli_error(VERB,
				      "guest '%s' runs but %s within %.0f s "
				      "(console: %s); it stays up: 'hvtrace "
				      "guest stop %s' ends it",
				      name,
				      connected ? "its console did not say "
						  "it is ready"
						: "its agent did not connect",
				      timeout,
				      gu_kv(st, "console_log", v, sizeof(v))
					      ? v
					      : "?",
				      name);
			return HVT_EXIT_FAIL;
		}
		gu_sleep_ms(100);
	}
}

static int gu_start(int argc, char **argv)
{
	char launcher[PATH_MAX], text[HVT_PROTO_TEXT_MAX + 1];
	char *largv[GU_MAX_ARGS + 8], *st = NULL, v[PATH_MAX];
	const char *name = NULL, *sock = NULL;
	bool may_start = true, wait = true;
	struct hvtrace_daemon *dc = NULL;
	struct hvt_remote_rec rec;
	double timeout = 120;
	uint64_t t0;
	int i, k, n = 0, rc, ret;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--socket") && i + 1 < argc) {
			sock = argv[++i];
		} else if (!strcmp(a, "--no-daemon")) {
			may_start = false;
		} else if (!strcmp(a, "--no-wait")) {
			wait = false;
		} else if (!strcmp(a, "--timeout") && i + 1 < argc) {
			if (hvt_cli_parse_seconds(argv[++i], &timeout) ||
			    timeout <= 0)
				return hvt_cli_usage(VERB, "bad --timeout '%s'",
						     argv[i]);
		} else if (!strcmp(a, "--name") || !strcmp(a, "--foreground") ||
			   !strcmp(a, "--quiet") ||
			   !strcmp(a, "--wait-ready")) {
			return hvt_cli_usage(VERB,
					     "start: %s is not for "
					     "'hvtrace guest start' "
					     "(the name comes first; the "
					     "guest runs in the "
					     "background)",
					     a);
		} else if (a[0] == '-') {
			if (n + 2 >= GU_MAX_ARGS)
				return hvt_cli_usage(VERB, "too many options");
			largv[2 + n++] = (char *)a;
			for (k = 0; gu_valued[k]; k++)
				if (!strcmp(a, gu_valued[k]))
					break;
			if (gu_valued[k]) {
				if (i + 1 >= argc)
					return hvt_cli_usage(VERB,
							     "start: option "
							     "'%s' needs a "
							     "value",
							     a);
				largv[2 + n++] = argv[++i];
			}
		} else if (!name) {
			name = a;
		} else {
			return hvt_cli_usage(VERB, "unexpected '%s'", a);
		}
	}
	if (!name)
		return hvt_cli_usage(VERB, "start: which guest? (hvtrace guest "
					   "start NAME)");
	if (!gu_name_ok(name))
		return hvt_cli_usage(VERB,
				     "'%s' is not a guest name: use 1 to "
				     "%u letters, digits, '_' or '-', "
				     "starting with a letter or digit",
				     name, HVT_PROTO_NAME_MAX);

	hvt_cli_set_objtree();
	hvt_cli_launcher(launcher, sizeof(launcher));
	largv[0] = launcher;
	largv[1] = "start";
	largv[2 + n++] = "--name";
	largv[2 + n++] = (char *)name;
	/* The launcher checks the request before anything starts: a bad
	 * option must not leave an hvtraced behind.  It says what was
	 * wrong, as this verb. */
	largv[2 + n] = "--check";
	largv[2 + n + 1] = NULL;
	rc = hvt_cli_run(largv, NULL);
	if (rc)
		return rc == HVT_EXIT_USAGE ? HVT_EXIT_USAGE : HVT_EXIT_FAIL;
	largv[2 + n] = NULL;

	/* hvtraced first: a failure there should not cost a boot. */
	ret = gu_ensure_daemon(sock, may_start, &dc);
	if (ret)
		return ret;

	t0 = hvt_cli_now_ns() / 1000000;
	rc = hvt_cli_run(largv, &st);
	if (rc) {
		hvtrace_daemon_close(dc);
		free(st);
		return hvt_cli_error(VERB,
				     "the launcher (%s) could not start "
				     "guest '%s' (see above)",
				     launcher, name);
	}
	{
		char cpus[16] = "?", mem[16] = "?", accel[16] = "?";
		char area[PATH_MAX] = "?", size[32] = "0";

		gu_kv(st, "cpus", cpus, sizeof(cpus));
		gu_kv(st, "mem_mb", mem, sizeof(mem));
		gu_kv(st, "accel", accel, sizeof(accel));
		gu_kv(st, "area", area, sizeof(area));
		gu_kv(st, "area_size", size, sizeof(size));
		printf("hvtrace guest: booting '%s': %s vCPUs (%s), %s MiB, "
		       "trace area %s (%llu KiB)\n",
		       name, cpus, accel, mem, area,
		       strtoull(size, NULL, 10) / 1024);
		if (gu_kv(st, "ram", v, sizeof(v)) && v[0])
			printf("hvtrace guest: guest RAM in %s: the guest "
			       "kernel's ring is read from there\n",
			       v);
	}

	/* A remote of that name left from an earlier guest: start afresh. */
	if (!hvtrace_daemon_find_remote(dc, name, &rec))
		gu_attach(dc, name, HVT_MSG_DETACH, text, sizeof(text));
	ret = gu_attach(dc, name, HVT_MSG_ATTACH, text, sizeof(text));
	if (ret) {
		hvt_cli_error(VERB,
			      "hvtraced could not attach '%s': %s (the "
			      "guest runs; stop it with 'hvtrace guest "
			      "stop %s')",
			      name, text[0] ? text : strerror(-ret), name);
		free(st);
		hvtrace_daemon_close(dc);
		return HVT_EXIT_FAIL;
	}
	/* hvtraced and the launcher must agree on where the guest is. */
	if (gu_kv(st, "control_sock", v, sizeof(v)) && !strstr(text, v))
		fprintf(stderr,
			"hvtrace guest: warning: hvtraced looks for "
			"the guest elsewhere than the launcher put it "
			"(%s; the launcher: %s): start hvtraced with the "
			"same --run-dir/--shm-dir as HVT_RUNDIR/"
			"HVT_SHM_DIR\n",
			text, v);
	printf("hvtrace guest: %s\n", text);
	fflush(stdout);
	if (!wait) {
		free(st);
		hvtrace_daemon_close(dc);
		return HVT_EXIT_OK;
	}
	ret = gu_wait_up(dc, launcher, name, st, t0, timeout, &rec);
	if (ret) {
		free(st);
		hvtrace_daemon_close(dc);
		return ret;
	}
	printf("hvtrace guest: '%s' is up after %.1f s: agent connected, %u "
	       "CPU buffers of %u x %u bytes; next: 'hvtrace events status "
	       "--remote %s', 'hvtrace stream %s', 'hvtrace guest stop %s'\n",
	       name, (double)(hvt_cli_now_ns() / 1000000 - t0) / 1000.0, rec.nr_cpus,
	       rec.nr_subbufs, rec.subbuf_size, name, name, name);
	free(st);
	hvtrace_daemon_close(dc);
	return HVT_EXIT_OK;
}

/* --- stop, status, list ----------------------------------------------------
 */

static int gu_stop(int argc, char **argv)
{
	char launcher[PATH_MAX], text[HVT_PROTO_TEXT_MAX + 1];
	const char *name = NULL, *sock = NULL, *timeout = NULL;
	struct hvtrace_daemon *dc;
	struct hvt_remote_rec rec;
	char *largv[8];
	int i, n = 0, rc;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--socket") && i + 1 < argc)
			sock = argv[++i];
		else if (!strcmp(argv[i], "--timeout") && i + 1 < argc)
			timeout = argv[++i];
		else if (argv[i][0] == '-')
			return hvt_cli_usage(VERB, "stop: unknown option '%s'",
					     argv[i]);
		else if (!name)
			name = argv[i];
		else
			return hvt_cli_usage(VERB, "unexpected '%s'", argv[i]);
	}
	if (!name)
		return hvt_cli_usage(VERB, "stop: which guest? (hvtrace guest "
					   "list)");
	if (!gu_name_ok(name))
		return hvt_cli_usage(VERB, "'%s' is not a guest name", name);
	/* Detach first, so that hvtraced does not keep reconnecting. */
	if (!gu_connect(sock, &dc)) {
		if (!hvtrace_daemon_find_remote(dc, name, &rec)) {
			if (gu_attach(dc, name, HVT_MSG_DETACH, text,
				      sizeof(text)))
				fprintf(stderr,
					"hvtrace guest: warning: "
					"could not detach '%s' from "
					"hvtraced: %s\n",
					name, text);
			else
				printf("hvtrace guest: detached '%s' from "
				       "hvtraced\n",
				       name);
		}
		hvtrace_daemon_close(dc);
	}
	hvt_cli_launcher(launcher, sizeof(launcher));
	largv[n++] = launcher;
	largv[n++] = "stop";
	largv[n++] = (char *)name;
	if (timeout) {
		largv[n++] = "--timeout";
		largv[n++] = (char *)timeout;
	}
	largv[n] = NULL;
	/* The launcher says what it found, once: stopped, powered off
	 * already, or none of that name. */
	rc = hvt_cli_run(largv, NULL);
	if (rc)
		return hvt_cli_error(VERB,
				     "the launcher could not stop '%s' "
				     "(see above)",
				     name);
	return HVT_EXIT_OK;
}

static void gu_print_remote(struct hvtrace_daemon *dc, const char *name,
			    const char *sock)
{
	struct hvt_remote_rec rec;

	if (!dc) {
		printf("hvtraced=not running (%s; start it with 'hvtrace "
		       "daemon')\n",
		       sock ? sock : hvtrace_daemon_default_socket());
		return;
	}
	printf("hvtraced=running (%s)\n",
	       sock ? sock : hvtrace_daemon_default_socket());
	if (hvtrace_daemon_find_remote(dc, name, &rec)) {
		printf("remote=not attached (attach it with 'hvtrace daemon "
		       "attach %s')\n",
		       name);
		return;
	}
	printf("remote_id=%u\n", rec.id);
	printf("remote_state=%s\n", hvt_remote_state_word(rec.state,
							 rec.transport));
	printf("tracing=%s\n", rec.tracing_on ? "on" : "off");
	printf("events=%u\n", rec.nr_events);
	printf("clients=%u\n", rec.nr_clients);
	printf("cpu_buffers=%u\n", rec.nr_cpus);
	printf("subbufs=%u\n", rec.nr_subbufs);
	printf("subbuf_size=%u\n", rec.subbuf_size);
	printf("mode=%s\n", rec.mode == HVT_MODE_OVERWRITE ? "overwrite"
			    : rec.mode == HVT_MODE_CONSUME ? "consume"
							   : "-");
	printf("sync_samples=%llu\n", (unsigned long long)rec.sync_samples);
	if (rec.clock_err_ns == UINT64_MAX)
		printf("clock_error_ns=unknown (not synchronised yet)\n");
	else
		printf("clock_error_ns=%llu\n",
		       (unsigned long long)rec.clock_err_ns);
	printf("protocol_errors=%llu\n", (unsigned long long)rec.proto_errors);
}

static int gu_status(int argc, char **argv)
{
	char launcher[PATH_MAX];
	const char *name = NULL, *sock = NULL;
	struct hvtrace_daemon *dc = NULL;
	char *st = NULL;
	int i, rc;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--socket") && i + 1 < argc)
			sock = argv[++i];
		else if (argv[i][0] == '-')
			return hvt_cli_usage(VERB,
					     "status: unknown option "
					     "'%s'",
					     argv[i]);
		else if (!name)
			name = argv[i];
		else
			return hvt_cli_usage(VERB, "unexpected '%s'", argv[i]);
	}
	if (!name)
		return hvt_cli_usage(VERB, "status: which guest?");
	if (!gu_name_ok(name))
		return hvt_cli_usage(VERB, "'%s' is not a guest name", name);
	hvt_cli_launcher(launcher, sizeof(launcher));
	/* The launcher said "no guest" (exit 1) as this verb; anything else
	 * is this verb's to say. */
	rc = gu_status_text(launcher, name, &st);
	if (rc == HVT_EXIT_FAIL)
		return HVT_EXIT_FAIL;
	if (rc)
		return hvt_cli_error(VERB,
				     "the launcher %s could not tell the "
				     "state of '%s' (exit %d)",
				     launcher, name, rc);
	fputs(st, stdout);
	free(st);
	if (gu_connect(sock, &dc))
		dc = NULL;
	gu_print_remote(dc, name, sock);
	hvtrace_daemon_close(dc);
	return HVT_EXIT_OK;
}

static int gu_list(int argc, char **argv)
{
	char launcher[PATH_MAX], *rows = NULL, *p, *nl;
	const char *sock = NULL;
	char *largv[] = {launcher, "list", "--no-header", NULL};
	struct hvtrace_daemon *dc = NULL;
	int i, rc;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--socket") && i + 1 < argc)
			sock = argv[++i];
		else
			return hvt_cli_usage(VERB, "list: unexpected '%s'",
					     argv[i]);
	}
	hvt_cli_launcher(launcher, sizeof(launcher));
	rc = hvt_cli_run(largv, &rows);
	if (rc) {
		free(rows);
		return hvt_cli_error(VERB, "the launcher could not list the "
					   "guests (see above)");
	}
	if (gu_connect(sock, &dc))
		dc = NULL;
	printf("%-20s %-11s %4s %6s %10s %-12s %s\n", "NAME", "STATE", "CPUS",
	       "MEM_MB", "AREA_KIB", "HVTRACED", "AREA");
	/* Rows: name state pid cpus mem area_size area control */
	for (p = rows; p && *p; p = nl ? nl + 1 : NULL) {
		char name[64], state[32], pid[32], cpus[16], mem[16], size[32];
		char area[PATH_MAX], kib[32];
		struct hvt_remote_rec rec;
		const char *att;

		nl = strchr(p, '\n');
		if (nl)
			*nl = '\0';
		if (sscanf(p, "%63s %31s %31s %15s %15s %31s %4095s", name,
			   state, pid, cpus, mem, size, area) != 7)
			continue;
		if (!dc)
			att = "not running";
		else if (hvtrace_daemon_find_remote(dc, name, &rec))
			att = "-";
		else
			att = hvt_remote_state_word(rec.state,
							    rec.transport);
		/* A guest whose QEMU ended has a record, not a size. */
		if (size[0] >= '0' && size[0] <= '9')
			snprintf(kib, sizeof(kib), "%llu",
				 strtoull(size, NULL, 10) / 1024);
		else
			snprintf(kib, sizeof(kib), "-");
		printf("%-20s %-11s %4s %6s %10s %-12s %s\n", name, state,
		       cpus, mem, kib, att, area);
	}
	free(rows);
	hvtrace_daemon_close(dc);
	return HVT_EXIT_OK;
}

/* The launcher's kformats, as it is: its words, its exit status. */
static int gu_kformats(int argc, char **argv)
{
	char launcher[PATH_MAX];
	char *largv[GU_MAX_ARGS];
	int i, rc;

	if (argc + 2 > GU_MAX_ARGS)
		return hvt_cli_usage(VERB, "kformats: too many arguments");
	hvt_cli_set_objtree();
	hvt_cli_launcher(launcher, sizeof(launcher));
	largv[0] = launcher;
	for (i = 0; i < argc; i++)
		largv[1 + i] = argv[i];
	largv[1 + argc] = NULL;
	rc = hvt_cli_run(largv, NULL);
	if (rc < 0)
		return hvt_cli_error(VERB, "cannot run the launcher %s: %s",
				     launcher, strerror(-rc));
	return rc;
}

static int guest_run(int argc, char **argv)
{
	if (argc < 2)
		return hvt_cli_usage(VERB, "which command? start, stop, status "
					   "or list");
	if (!strcmp(argv[1], "start"))
		return gu_start(argc - 1, argv + 1);
	if (!strcmp(argv[1], "stop"))
		return gu_stop(argc - 1, argv + 1);
	if (!strcmp(argv[1], "status"))
		return gu_status(argc - 1, argv + 1);
	if (!strcmp(argv[1], "list") || !strcmp(argv[1], "ls"))
		return gu_list(argc - 1, argv + 1);
	if (!strcmp(argv[1], "kformats"))
		return gu_kformats(argc - 1, argv + 1);
	if (argv[1][0] == '-')
		return hvt_cli_usage(VERB, "unknown option '%s'", argv[1]);
	return hvt_cli_usage(VERB,
			     "unknown command '%s' (start, stop, status, "
			     "list, kformats)",
			     argv[1]);
}

HVT_CLI_COMMAND(guest, "guest",
		"run a QEMU guest and trace it through hvtraced", guest_usage,
		guest_run);
