// SPDX-License-Identifier: MIT
/*
 * hvtrace stream: a live, consuming read, printed like trace_pipe.
 *
 * One path for areas, the host kernel and a guest kernel's ring read from
 * guest RAM: every CPU is an hvtrace_ring
 * (the ring-buffer mmap view), the rings are merged by time
 * (hvtrace_merge, with a reorder window), and each record is printed by
 * the decoder (libtraceevent) exactly as the kernel's trace_pipe prints.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <hvtrace.h>
#include <hvtrace/config.h>

#include "cli.h"
#include "daemon_src.h"
#include "stream.h"
#include <hvtrace-daemon.h>

#define ST_DEFAULT_WINDOW_MS 10.0
#define ST_SYNC_EVERY_NS     1000000000ULL
#define ST_STATUS_EVERY_NS   500000000ULL

static const char st_usage[] =
	"usage: hvtrace stream AREA [OPTIONS]\n"
	"       hvtrace stream NAME [--socket PATH] [OPTIONS]\n"
	"       hvtrace stream NAME --kernel [-e EVENT]... [--instance NAME]\n"
	"                      [OPTIONS]\n"
	"       hvtrace stream --kernel [--instance NAME] [OPTIONS]\n"
	"       hvtrace stream NAME --guest-kernel [--socket PATH] [OPTIONS]\n"
	"       hvtrace stream RAMFILE [--guest-kernel] [--formats DIR]\n"
	"                      [OPTIONS]\n"
	"       hvtrace stream --vm-pid PID|--domain DOMAIN [--formats DIR]\n"
	"                      [OPTIONS]\n"
	"\n"
	"Consume events as they are written and print them as the kernel's\n"
	"trace_pipe does:\n"
	"\n"
	"  <comm>-<pid> [<cpu>] <flags> <sec>.<usec>: <event>: <fields>\n"
	"\n"
	"merged in time order across CPUs, with \"CPU:N [LOST n EVENTS]\"\n"
	"where events were lost.  AREA is PATH[@OFFSET[+SIZE]] (a /dev/shm\n"
	"file, a QEMU memory-backend file, a post-mortem copy); --kernel\n"
	"reads the host kernel's own ring buffer through the same code (the\n"
	"trace_pipe_raw mmap; on kernels before 6.10, or a buffer with a\n"
	"snapshot, read() of whole sub-buffers from trace_pipe_raw, said\n"
	"once on stderr, with the same output; HVTRACE_KERNEL_RING=read\n"
	"forces it).  Area timestamps are converted to the host's\n"
	"CLOCK_MONOTONIC; kernel timestamps are printed in its trace clock,\n"
	"as trace_pipe does.  stderr says once which clock a source's\n"
	"times are on: the host's, with the clock model's error bound, or\n"
	"the writer's own (no time sync: --read-only, a stopped writer).\n"
	"\n"
	"An area is opened as its owner (control page read-write): all its\n"
	"events and tracing are enabled, consumer progress is published (so\n"
	"a consume-mode writer can reuse what was read) and the writer's\n"
	"clock is sampled.  One owner per area: while another process owns\n"
	"it (another stream or record, hvtraced, a mount), stream refuses\n"
	"and names it; read the area through hvtraced, or beside its owner\n"
	"with --read-only.  A read-only file falls back to a read-only open,\n"
	"with a note.  Stream exits by itself once a writer that stopped (or\n"
	"died) has been read to the end, unless --follow.\n"
	"\n"
	"NAME (1..31 of [A-Za-z0-9._-], not a file: ./NAME is one) is a\n"
	"remote of hvtraced -- a guest, a local agent, a hypervisor or\n"
	"loopback area attached with 'hvtrace daemon attach': hvtraced owns\n"
	"it, and its pages come through the daemon (which hands them to\n"
	"every reader); timestamps use the daemon's clock model.  Stream\n"
	"ends once an area's writer stopped and was read to the end (unless\n"
	"--follow) or when the remote is detached.\n"
	"\n"
	"NAME --kernel adds the host kernel's events to the same merge: a\n"
	"tracefs instance of its own (instances/hvtrace-stream-PID, or\n"
	"--instance NAME) on the mono trace clock, the host's\n"
	"CLOCK_MONOTONIC, so host, guest kernel and guest user events share\n"
	"one timeline; -e EVENT enables events there (repeatable; patterns\n"
	"as for record; ftrace:print is every write to the instance's\n"
	"trace_marker).  A remote not on the host's clock (no clock model)\n"
	"is refused: its times cannot share that timeline.\n"
	"Host lines start with \"host: \" (the host's CPU\n"
	"numbers are its own).  At exit the instance is removed, or, when\n"
	"it was there before, its clock, events and tracing_on are put back.\n"
	"\n"
	"--guest-kernel reads a guest kernel's own ftrace ring.  With a rig\n"
	"guest's NAME (started with 'hvtrace guest start NAME\n"
	"--kernel-events LIST'), that ring alone, as hvtraced serves it to\n"
	"every tool: on the host's clock, its formats hvtraced's.  With\n"
	"RAMFILE (a path; one ending in .ram needs no --guest-kernel), the\n"
	"file itself, with no agent and after the guest died (the rig keeps\n"
	"/dev/shm/hvtrace-NAME.ram with --keep-ram).  A RAM file's event\n"
	"formats come from --formats DIR, a copy of the guest's tracefs\n"
	"files (docs/guest-kernel.md), or else from the formats cache\n"
	"($HVT_CACHE, default /var/cache/hvtrace: hvtraced fills it from\n"
	"agents, 'hvtrace-guest kformats' without DIR from a console): the\n"
	"entry of the release in the kernel banner found in guest RAM whose\n"
	"build id guest RAM holds; without formats events print as UNKNOWN\n"
	"id=N and --summary still counts them.  A RAM file's timestamps are\n"
	"the guest's trace clock (guest-relative).\n"
	"\n"
	"--vm-pid PID reads the guest kernel's ring (implies --guest-kernel)\n"
	"from the memory of VMM process PID, however it was started (QEMU\n"
	"from libvirt or a command line): its shared RAM file or memfd is\n"
	"mapped read-only, other RAM read through /proc/PID/mem.  It needs\n"
	"ptrace read access to PID (root, or its user with\n"
	"kernel.yama.ptrace_scope=0); formats come from --formats, else\n"
	"from the cache's folder of the kernel its vmcoreinfo names.\n"
	"When PID exits, a shared RAM file or memfd is read to its end;\n"
	"anonymous RAM is gone with the process (stream stops with an\n"
	"error).  --domain DOMAIN is the same for the QEMU of running\n"
	"libvirt domain DOMAIN (its pid from libvirt's pid file, checked\n"
	"against its command line).\n"
	"\n"
	"options:\n"
	"  --kernel            read the host kernel's ring buffer (with\n"
	"                      NAME: beside the remote's events)\n"
	"  -e, --event EVENT   with NAME --kernel: enable host kernel\n"
	"                      events EVENT (sys, sys:event, event, all)\n"
	"  --guest-kernel      read a guest kernel's ring from guest RAM\n"
	"  --vm-pid PID        ... from the memory of VMM process PID\n"
	"  --domain DOMAIN     ... of the QEMU of libvirt domain DOMAIN\n"
	"  --formats DIR       the guest kernel's event formats (a directory\n"
	"                      laid out like tracefs)\n"
	"  --no-guest-kernel   for a rig guest NAME started with\n"
	"                      --kernel-events: its user events only, not its\n"
	"                      kernel's ring merged beside them\n"
	"  --instance NAME     with --kernel: tracefs instance NAME (or a\n"
	"                      path; with a remote NAME: a name only)\n"
	"  --cpu N             only CPU N\n"
	"  --count N           stop after N events\n"
	"  --timeout S         stop after S seconds\n"
	"  --window MS         reorder window across CPUs (default 10): an\n"
	"                      event is printed once every CPU has a later\n"
	"                      one pending, or once it is MS old\n"
	"  --drain             print what is there now and exit once every\n"
	"                      CPU is empty (post-mortem reads)\n"
	"  --follow            keep waiting after the writer stopped\n"
	"  --read-only         do not take control of the area: nothing is\n"
	"                      written to it (no enabling, no consumer\n"
	"                      progress: without an owner a consume-mode\n"
	"                      writer drops once its ring is full); works\n"
	"                      beside an owner\n"
	"  --summary           print per-CPU counts on stderr at the end\n"
	"  --socket PATH       hvtraced's socket, for NAME (default\n"
	"                      $HVTRACED_SOCKET or "
	"/run/hvtrace/hvtraced.sock)\n"
	"  -h, --help          this text\n"
	"\n"
	"Idle CPUs are polled every CONFIG_HVT_HOST_POLL_US microseconds.\n"
	"On a terminal, with stdout redirected, a status line shows\n"
	"progress.\n";

enum {
	OPT_KERNEL = 1,
	OPT_INSTANCE,
	OPT_CPU,
	OPT_COUNT,
	OPT_TIMEOUT,
	OPT_WINDOW,
	OPT_DRAIN,
	OPT_FOLLOW,
	OPT_RO,
	OPT_SUMMARY,
	OPT_SOCKET,
	OPT_GUEST_KERNEL,
	OPT_FORMATS,
	OPT_VM_PID,
	OPT_DOMAIN,
	OPT_NO_GUEST_KERNEL,
};

#define ST_MAX_EVENTS 64 /* -e patterns */

static void st_sleep_poll(void)
{
	struct timespec ts = {0, (long)CONFIG_HVT_HOST_POLL_US * 1000L};

	nanosleep(&ts, NULL);
}

static int st_parse(struct st_state *s, int argc, char **argv)
{
	static const struct option opts[] = {
		{"kernel", no_argument, NULL, OPT_KERNEL},
		{"instance", required_argument, NULL, OPT_INSTANCE},
		{"cpu", required_argument, NULL, OPT_CPU},
		{"count", required_argument, NULL, OPT_COUNT},
		{"timeout", required_argument, NULL, OPT_TIMEOUT},
		{"window", required_argument, NULL, OPT_WINDOW},
		{"drain", no_argument, NULL, OPT_DRAIN},
		{"follow", no_argument, NULL, OPT_FOLLOW},
		{"read-only", no_argument, NULL, OPT_RO},
		{"summary", no_argument, NULL, OPT_SUMMARY},
		{"socket", required_argument, NULL, OPT_SOCKET},
		{"guest-kernel", no_argument, NULL, OPT_GUEST_KERNEL},
		{"formats", required_argument, NULL, OPT_FORMATS},
		{"vm-pid", required_argument, NULL, OPT_VM_PID},
		{"domain", required_argument, NULL, OPT_DOMAIN},
		{"no-guest-kernel", no_argument, NULL, OPT_NO_GUEST_KERNEL},
		{"event", required_argument, NULL, 'e'},
		{NULL, 0, NULL, 0},
	};
	const char *domain = NULL;
	unsigned long long v;
	int c, rc;

	s->only_cpu = -1;
	s->window_ms = ST_DEFAULT_WINDOW_MS;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":e:", opts, NULL)) != -1) {
		switch (c) {
		case 'e':
			if (s->nr_events >= ST_MAX_EVENTS)
				return hvt_cli_usage(VERB,
						     "more than %d -e patterns",
						     ST_MAX_EVENTS);
			s->events[s->nr_events++] = optarg;
			break;
		case OPT_KERNEL:
			s->kernel = true;
			break;
		case OPT_INSTANCE:
			s->instance = optarg;
			break;
		case OPT_CPU:
			if (hvt_cli_parse_u64(optarg, &v) || v >= 4096)
				return hvt_cli_usage(VERB,
						     "bad --cpu '%s' (a "
						     "CPU number)",
						     optarg);
			s->only_cpu = (int)v;
			break;
		case OPT_COUNT:
			if (hvt_cli_parse_u64(optarg, &v) || !v)
				return hvt_cli_usage(VERB,
						     "bad --count '%s' (a "
						     "positive number)",
						     optarg);
			s->count = v;
			break;
		case OPT_TIMEOUT:
			if (hvt_cli_parse_seconds(optarg, &s->timeout) ||
			    s->timeout <= 0)
				return hvt_cli_usage(VERB,
						     "bad --timeout '%s' "
						     "(seconds > 0)",
						     optarg);
			break;
		case OPT_WINDOW:
			if (hvt_cli_parse_seconds(optarg, &s->window_ms) ||
			    s->window_ms > 60000)
				return hvt_cli_usage(VERB,
						     "bad --window '%s' "
						     "(milliseconds)",
						     optarg);
			break;
		case OPT_DRAIN:
			s->drain = true;
			break;
		case OPT_FOLLOW:
			s->follow = true;
			break;
		case OPT_RO:
			s->read_only = true;
			break;
		case OPT_SUMMARY:
			s->summary = true;
			break;
		case OPT_SOCKET:
			s->sock = optarg;
			break;
		case OPT_GUEST_KERNEL:
			s->guest_kernel = true;
			break;
		case OPT_FORMATS:
			s->formats = optarg;
			break;
		case OPT_NO_GUEST_KERNEL:
			s->no_guest_kernel = true;
			break;
		case OPT_VM_PID:
			if (hvt_cli_parse_pid(optarg, &s->vm_pid))
				return hvt_cli_usage(VERB,
						     "bad --vm-pid '%s' "
						     "(a process id)",
						     optarg);
			s->guest_kernel = true;
			break;
		case OPT_DOMAIN:
			domain = optarg;
			break;
		case ':':
			return hvt_cli_usage(VERB, "option '%s' needs a value",
					     argv[optind - 1]);
		default:
			return hvt_cli_usage(VERB, "unknown option '%s'",
					     argv[optind - 1]);
		}
	}
	if (optind < argc)
		s->spec = argv[optind++];
	if (optind < argc)
		return hvt_cli_usage(VERB, "unexpected argument '%s'",
				     argv[optind]);
	if (domain) {
		if (s->vm_pid)
			return hvt_cli_usage(VERB, "--domain or --vm-pid, not "
						   "both");
		rc = hvt_cli_domain_pid(VERB, domain, &s->vm_pid);
		if (rc)
			return rc;
		s->guest_kernel = true;
	}
	if (s->vm_pid && (s->spec || s->kernel))
		return hvt_cli_usage(VERB, "--vm-pid names the guest RAM: give "
					   "no AREA, NAME or --kernel with it");
	s->remote = s->spec && !s->vm_pid && !s->guest_kernel &&
		    hvtrace_daemon_name_is_remote(s->spec);
	if (s->kernel && s->spec && !s->remote)
		return hvt_cli_usage(VERB,
				     "give an AREA or --kernel, not both (a "
				     "remote NAME takes --kernel: the host "
				     "kernel beside it)");
	if (s->nr_events && !(s->kernel && s->remote))
		return hvt_cli_usage(VERB, "-e goes with a remote NAME and "
					   "--kernel");
	if (s->kernel && s->remote && s->only_cpu >= 0)
		return hvt_cli_usage(VERB,
				     "--cpu names a CPU of '%s' or of the "
				     "host: not with NAME --kernel",
				     s->spec);
	if (s->kernel && s->remote && s->instance && strchr(s->instance, '/'))
		return hvt_cli_usage(VERB,
				     "--instance '%s': with a remote NAME "
				     "an instance name, not a path",
				     s->instance);
	if (!s->kernel && !s->spec && !s->vm_pid)
		return hvt_cli_usage(VERB, "no AREA given (or --kernel)");
	if (s->instance && !s->kernel)
		return hvt_cli_usage(VERB, "--instance goes with --kernel");
	if (s->spec && strlen(s->spec) > 4 &&
	    !strcmp(s->spec + strlen(s->spec) - 4, ".ram"))
		s->guest_kernel = true;
	if (s->guest_kernel && !s->vm_pid && (s->kernel || !s->spec))
		return hvt_cli_usage(VERB, "--guest-kernel needs a RAMFILE or "
					   "a guest NAME, and not --kernel");
	/* NAME --guest-kernel: the ring hvtraced serves (no tool opens a
	 * remote's RAM file by its name; a RAMFILE is given by path). */
	if (s->guest_kernel && !s->vm_pid && !strchr(s->spec, '/') &&
	    access(s->spec, F_OK) && hvtrace_daemon_name_is_remote(s->spec)) {
		s->kernel_only = true;
		s->remote = true;
	}
	if (s->kernel_only && s->formats)
		return hvt_cli_usage(VERB,
				     "--formats: hvtraced serves the formats "
				     "of guest '%s''s kernel; --formats goes "
				     "with a RAMFILE or --vm-pid",
				     s->spec);
	if (s->kernel_only && s->no_guest_kernel)
		return hvt_cli_usage(VERB, "--guest-kernel and "
					   "--no-guest-kernel contradict each "
					   "other");
	if (s->formats && !s->guest_kernel)
		return hvt_cli_usage(VERB, "--formats goes with a guest "
					   "kernel's ring (--guest-kernel)");
	if (s->guest_kernel && s->read_only)
		return hvt_cli_usage(VERB, "--read-only: a guest kernel's ring "
					   "is always read read-only");
	if (s->drain && s->follow)
		return hvt_cli_usage(VERB, "--drain and --follow contradict "
					   "each other");
	return 0;
}

/* Name the loopback writer's threads, looked up once per pid. */
static void st_lookup_comm(struct st_state *s, int pid)
{
	char path[96], comm[32];
	unsigned int i;

	if (pid <= 0 || hvtrace_decoder_comm(s->dec, pid))
		return;
	if (s->kernel) {
		/* A task newer than our copy of saved_cmdlines: read it again
		 * (at most once a second), as trace_pipe looks it up when it
		 * prints. */
		uint64_t now = hvt_cli_now_ns();

		if (now - s->cmdlines_at >= 1000000000ULL) {
			s->cmdlines_at = now;
			hvtrace_decoder_load_cmdlines(s->dec, NULL);
		}
		return;
	}
	if (s->info.writer_kind != HVT_WRITER_LOOPBACK || !s->info.writer_pid)
		return;
	for (i = 0; i < s->nr_tried; i++)
		if (s->tried[i] == pid)
			return;
	if (s->nr_tried < sizeof(s->tried) / sizeof(s->tried[0]))
		s->tried[s->nr_tried++] = pid;
	snprintf(path, sizeof(path), "/proc/%u/task/%d/comm",
		 s->info.writer_pid, pid);
	if (!hvtrace_daemon_comm_read(path, comm, sizeof(comm)))
		hvtrace_decoder_set_comm(s->dec, pid, comm);
}

static struct st_cpu *st_cpu_of(struct st_state *s, int cpu)
{
	unsigned int i;

	for (i = 0; i < s->nr; i++)
		if (s->cpus[i].cpu == cpu)
			return &s->cpus[i];
	return &s->cpus[0];
}

static void st_write(struct st_state *s, const char *buf, size_t len)
{
	if (s->out_broken)
		return;
	if (fwrite(buf, 1, len, stdout) != len)
		s->out_broken = true; /* EPIPE (| head) or a full disk */
}

static void st_print_lost(struct st_state *s, int cpu, uint64_t lost)
{
	struct st_cpu *c = st_cpu_of(s, cpu);
	char buf[64];
	int n;

	if (lost == HVTRACE_LOST_UNKNOWN)
		c->lost_unknown = true;
	else
		c->lost += lost, s->lost += lost;
	n = hvtrace_format_lost(cpu, lost, buf, sizeof(buf));
	if (n > 0)
		st_write(s, buf, (size_t)n);
}

static int st_print(struct st_state *s, const struct hvtrace_record *rec)
{
	uint64_t ts = rec->host_ns, err = UINT64_MAX;
	int n;

	if (s->kernel)
		ts = rec->ts; /* its own trace clock, as trace_pipe prints */
	else if (s->kring)
		ts = rec->ts; /* the guest's own trace clock */
	else
		hvtrace_area_to_host_ns(s->area, rec->ts, &err);
	/* A refitted clock model (an area's time sync, a new anchor of the
	 * guest kernel's line) moves converted times: stream_order.c's
	 * rule keeps the output in time order. */
	ts = hvt_cli_order_time(&s->order, ts, err);

	if (rec->lost_before)
		st_print_lost(s, rec->cpu, rec->lost_before);
	if (rec->size >= 8) {
		int32_t pid;

		memcpy(&pid, (const uint8_t *)rec->data + 4, 4);
		st_lookup_comm(s, pid);
	}
	for (;;) {
		n = hvtrace_decoder_format(s->dec, rec, ts, s->text_flags,
					   s->line, s->line_cap);
		if (n < 0)
			return hvt_cli_error(VERB, "%s", hvtrace_last_error());
		if ((size_t)n < s->line_cap)
			break;
		free(s->line);
		s->line_cap = (size_t)n + 1;
		s->line = malloc(s->line_cap);
		if (!s->line)
			return hvt_cli_error(VERB, "out of memory");
	}
	st_write(s, s->line, (size_t)n);
	st_cpu_of(s, rec->cpu)->events++;
	s->printed++;
	return 0;
}

/* Has the area's writer finished (or died)?  Then read to the end. */
static int st_writer_done(struct st_state *s, bool *restarted)
{
	uint32_t state = 0;
	uint64_t gen = 0;

	*restarted = false;
	if (s->kernel)
		return 0;
	if (s->kring) {
		struct stat st;

		/* The VMM is gone; or the RAM file was removed (a rig guest's
		 * launcher removes it once QEMU exited, unless --keep-ram).
		 * A file that stays gives no sign: --drain reads it whole. */
		if (s->vm_pid)
			return kill(s->vm_pid, 0) && errno == ESRCH;
		return stat(s->ram, &st) || st.st_dev != s->ram_dev ||
		       st.st_ino != s->ram_ino;
	}
	if (hvtrace_area_writer_state(s->area, &state, &gen)) {
		*restarted = true;
		return 1;
	}
	if (state == HVT_STATE_STOPPED)
		return 1;
	if (s->info.writer_kind == HVT_WRITER_LOOPBACK && s->info.writer_pid &&
	    kill((pid_t)s->info.writer_pid, 0) && errno == ESRCH)
		return 1;
	return 0;
}

static void st_status(struct st_state *s, uint64_t t0, bool final)
{
	double secs = (double)(hvt_cli_now_ns() - t0) / 1e9;
	unsigned long long bytes = 0;
	unsigned int i;

	if (final) {
		fprintf(stderr, "\r\033[K");
		return;
	}
	for (i = 0; s->area && i < s->nr; i++) {
		struct hvtrace_cpu_stats st;

		if (!hvtrace_cpu_get_stats(s->area, s->cpus[i].cpu, &st))
			bytes += st.bytes;
	}
	fprintf(stderr, "\r\033[K%s: %llu events  %.0f events/s  %llu lost",
		s->kernel ? "kernel" : s->info.name, s->printed,
		secs > 0 ? (double)s->printed / secs : 0, s->lost);
	if (s->area)
		fprintf(stderr, "  %llu bytes", bytes);
}

static void st_summary(struct st_state *s, double secs)
{
	unsigned long long errors = 0;
	unsigned int i;

	for (i = 0; i < s->nr; i++) {
		struct st_cpu *c = &s->cpus[i];
		unsigned long long e = hvtrace_ring_errors(c->ring);

		if (s->area) {
			struct hvtrace_cpu_stats st;

			if (!hvtrace_cpu_get_stats(s->area, c->cpu, &st))
				e += st.errors;
		}
		if (s->kring) {
			struct hvtrace_kring_stats ks;

			if (!hvtrace_kring_get_stats(s->kring, c->cpu, &ks)) {
				e += ks.errors;
				if (ks.lost_pages)
					fprintf(stderr,
						"  cpu %d: at least "
						"%llu pages "
						"overwritten before "
						"they were read\n",
						c->cpu,
						(unsigned long long)
							ks.lost_pages);
			}
		}
		errors += e;
		fprintf(stderr,
			"  cpu %d: %llu events, %llu lost%s, %llu "
			"errors\n",
			c->cpu, c->events, c->lost,
			c->lost_unknown ? " (and an unknown number)" : "", e);
	}
	fprintf(stderr,
		"hvtrace stream: %u CPUs, %llu events, %llu lost, %llu "
		"errors in %.3f s (%.0f events/s)\n",
		s->nr, s->printed, s->lost, errors, secs,
		secs > 0 ? (double)s->printed / secs : 0.0);
}

static void st_cleanup(struct st_state *s)
{
	unsigned int i;

	hvtrace_merge_free(s->merge);
	for (i = 0; s->cpus && i < s->nr; i++)
		hvtrace_ring_close(s->cpus[i].ring);
	free(s->cpus);
	hvtrace_decoder_free(s->dec);
	hvtrace_area_close(s->area);
	hvtrace_kring_close(s->kring);
	free(s->line);
}

static int st_run(struct st_state *s)
{
	struct hvtrace_ring **rings;
	struct hvtrace_record rec;
	uint64_t t0 = hvt_cli_now_ns(), deadline = UINT64_MAX, last_sync = t0;
	uint64_t last_status = t0;
	bool finishing = s->drain, stopped = false, restarted, status;
	unsigned int i, spins = 0;
	int ret = 0;

	status = isatty(STDERR_FILENO) && !isatty(STDOUT_FILENO);
	stopped = st_writer_done(s, &restarted) && !restarted;
	if (s->timeout > 0)
		deadline = t0 + (uint64_t)(s->timeout * 1e9);
	rings = calloc(s->nr, sizeof(*rings));
	if (!rings)
		return hvt_cli_error(VERB, "out of memory");
	for (i = 0; i < s->nr; i++)
		rings[i] = s->cpus[i].ring;
	ret = hvtrace_merge_new(rings, s->nr, (uint64_t)(s->window_ms * 1e6),
				&s->merge);
	free(rings);
	if (ret)
		return hvt_cli_error(VERB, "%s", hvtrace_last_error());

	while (!hvt_cli_stop_signal && !s->out_broken) {
		/* A stopped writer adds nothing: no need to wait for it. */
		int got = hvtrace_merge_next(s->merge, &rec,
					     finishing || stopped);

		if (got < 0) {
			ret = hvt_cli_error(VERB, "%s", hvtrace_last_error());
			break;
		}
		if (got > 0) {
			ret = st_print(s, &rec);
			if (ret)
				break;
			if (s->count && s->printed >= s->count)
				break;
			/* Check the clock now and then even when busy. */
			if (++spins < 4096)
				continue;
			spins = 0;
		} else {
			if (finishing) {
				/* Every CPU is empty: report drops that no
				 * page followed, then stop. */
				for (i = 0; i < s->nr; i++) {
					struct st_cpu *c = &s->cpus[i];
					uint64_t n;

					n = hvtrace_ring_take_trailing_lost(
						c->ring);
					if (n)
						st_print_lost(s, c->cpu, n);
				}
				break;
			}
			fflush(stdout);
			stopped = st_writer_done(s, &restarted);
			if (restarted) {
				fprintf(stderr, "hvtrace stream: the writer "
						"re-formatted the area (a new "
						"run); stopping\n");
				break;
			}
			if (stopped && !s->follow) {
				finishing = true;
				continue;
			}
		}
		{
			uint64_t now = hvt_cli_now_ns();

			if (now >= deadline)
				break;
			if (got) {
				/* Busy: still notice a writer that stopped, so
				 * the merge need not wait for it. */
				stopped = st_writer_done(s, &restarted) &&
					  !restarted;
			}
			if (s->syncing && now - last_sync >= ST_SYNC_EVERY_NS) {
				last_sync = now;
				if (hvtrace_area_sync(s->area, 5) == -ETIMEDOUT)
					s->syncing = false;
			}
			if (status && now - last_status >= ST_STATUS_EVERY_NS) {
				last_status = now;
				st_status(s, t0, false);
			}
		}
		if (!got)
			st_sleep_poll();
	}
	fflush(stdout);
	if (status)
		st_status(s, t0, true);
	if (s->summary)
		st_summary(s, (double)(hvt_cli_now_ns() - t0) / 1e9);
	return ret ? HVT_EXIT_FAIL : HVT_EXIT_OK;
}

static int cmd_stream(int argc, char **argv)
{
	struct st_state s;
	int ret;

	memset(&s, 0, sizeof(s));
	ret = st_parse(&s, argc, argv);
	if (ret)
		return ret;
	if (s.kernel && s.remote) {
		/* The host kernel beside the remote, in its merge. */
		s.events[s.nr_events] = NULL;
		s.kernel = false;
		s.host_kernel = true;
	}
	if (!s.kernel && (!s.guest_kernel || s.kernel_only) && s.remote) {
		struct hvt_rstream_opts o = {
			.name = s.spec,
			.sock = s.sock,
			.cpu = s.only_cpu,
			.count = s.count,
			.timeout = s.timeout,
			.window_ms = s.window_ms,
			.drain = s.drain,
			.follow = s.follow,
			.summary = s.summary,
			.user_only = s.no_guest_kernel,
			.kernel_only = s.kernel_only,
			.host_kernel = s.host_kernel,
			.kernel_instance = s.instance,
			.kernel_events = (const char *const *)s.events,
		};

		if (s.read_only)
			return hvt_cli_usage(VERB,
					     "--read-only: hvtraced owns "
					     "remote '%s'; its readers "
					     "never take control",
					     s.spec);
		return hvt_cli_stream_remote(&o);
	}
	if (s.sock)
		return hvt_cli_usage(VERB, "--socket goes with a remote NAME");
	s.line_cap = 8192;
	s.line = malloc(s.line_cap);
	if (!s.line)
		return hvt_cli_error(VERB, "out of memory");
	ret = s.kernel	       ? st_open_kernel(&s)
	      : s.guest_kernel ? st_open_kring(&s)
			       : st_open_area(&s);
	if (ret) {
		st_cleanup(&s);
		return ret;
	}
	hvt_cli_catch_stop_signals(false);
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOFBF, 1 << 20);
	ret = st_run(&s);
	st_cleanup(&s);
	return ret;
}

HVT_CLI_COMMAND(stream, "stream",
		"print events live, like trace_pipe (an area or the kernel)",
		st_usage, cmd_stream);
