// SPDX-License-Identifier: MIT
/*
 * hvtrace-agent - the guest side of hvtrace's user-event proxy.
 *
 *   - owns the trace area: maps the ivshmem BAR (/dev/hvtrace-area, a PCI
 *     resource file) or creates a /dev/shm file, and formats it as the
 *     writer side (hvtg_area_format(): writer kind guest, the configured
 *     clock, one CPU buffer per CPU, as many sub-buffers as fit);
 *   - hands the area to applications on a UNIX socket (descriptor
 *     passing; see clients.c for what the permissions mean);
 *   - forwards their user-event registrations to the host, which owns ids,
 *     formats and enable bits, and routes the answers back;
 *   - answers the host's time-sync pings with the area's clock and writes
 *     an event for each causality TRIGGER;
 *   - tells the host the comms of the processes that write.
 *
 * One thread, one poll() loop, no busy waiting: an idle agent sleeps until
 * a descriptor is ready or a deadline (reconnect, probe, request timeout)
 * passes.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hvtrace/abi.h>
#include <hvtrace/config.h>

#include "hvt_util.h"

#include "agent.h"

#define DEFAULT_AREA		"/dev/hvtrace-area"
#define DEFAULT_CONTROL		"/dev/virtio-ports/hvtrace-control"
#define DEFAULT_SOCKET		"/run/hvtrace/agent.sock"
#define DEFAULT_GROUP		"hvtrace"

static const char usage_text[] =
	"usage: hvtrace-agent [OPTIONS]\n"
	"\n"
	"Owns a trace area, hands it to applications on a UNIX socket and\n"
	"proxies their user-event registrations to the host (hvtraced).\n"
	"\n"
	"Area (one of):\n"
	"  --area PATH          format the area in PATH, an existing file or\n"
	"                       PCI BAR resource file (default\n"
	"                       " DEFAULT_AREA ")\n"
	"  --create PATH        create PATH (e.g. /dev/shm/hvtrace-NAME) and\n"
	"                       format an area in it\n"
	"  --size BYTES         size for --create (K/M/G suffixes;\n"
	"                       default 16M)\n"
	"  --mode consume|overwrite   ring mode (default: configured)\n"
	"  --subbuf-size BYTES  sub-buffer size (default: configured)\n"
	"  --subbufs N          sub-buffers per CPU (default: as many as fit)\n"
	"  --cpus N             CPU buffers (default: the CPUs configured\n"
	"                       here, at most CONFIG_HVT_MAX_CPUS); writes on\n"
	"                       a CPU without one are counted as lost\n"
	"  --clock counter|mono writer clock (default: configured)\n"
	"  --name NAME          writer name shown by the host (default: the\n"
	"                       host name)\n"
	"  --kernel-copy DIR    copy the tracing instance DIR's pages (e.g.\n"
	"                       /sys/kernel/tracing/instances/hvt) into a\n"
	"                       kernel section, the second half of the area\n"
	"                       (--area only; docs/guest-kernel.md)\n"
	"\n"
	"Host link (one of):\n"
	"  --control PATH       a virtio-serial port (default\n"
	"                       " DEFAULT_CONTROL ")\n"
	"  --host-socket PATH   hvtraced's socket on this machine (no VM);\n"
	"                       the area descriptor travels with the HELLO\n"
	"  --host-wait MS       how long requests wait for an absent host\n"
	"                       (default 5000)\n"
	"\n"
	"Clients:\n"
	"  --socket PATH        where applications connect (default\n"
	"                       " DEFAULT_SOCKET ")\n"
	"  --group NAME         group owning the socket (default " DEFAULT_GROUP
	",\n"
	"                       when it exists)\n"
	"  --socket-mode OCTAL  socket permissions (default 0660)\n"
	"\n"
	"  -v, --verbose        log more\n"
	"  -h, --help           this text\n";

/* --@opt takes @a (*out = @va) or @b (*out = @vb); 0, or -EINVAL said. */
static int parse_choice(const char *opt, const char *s, const char *a,
			uint32_t va, const char *b, uint32_t vb, uint32_t *out)
{
	if (!strcmp(s, a))
		*out = va;
	else if (!strcmp(s, b))
		*out = vb;
	else {
		fprintf(stderr, "hvtrace-agent: --%s takes %s or %s\n", opt, a,
			b);
		return -EINVAL;
	}
	return 0;
}

static void default_name(struct agent *ag)
{
	char host[256];
	size_t i, n = 0;

	if (gethostname(host, sizeof(host)))
		host[0] = '\0';
	host[sizeof(host) - 1] = '\0';
	for (i = 0; host[i] && n < HVT_PROTO_NAME_MAX; i++) {
		char c = host[i];

		if (c == '.' && !n)
			continue;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-'))
			c = '_';
		ag->name[n++] = c;
	}
	ag->name[n] = '\0';
	if (!n)
		strcpy(ag->name, "guest");
}

int agent_area_setup(struct agent *ag)
{
	struct hvtg_area_fds fds;
	const struct hvt_area_header *h;
	struct stat st;
	void *mem;
	int fd, ret;

	ag->fmt.name = ag->name;
	ag->fmt.writer_kind = HVT_WRITER_GUEST;
	if (ag->create) {
		ret = hvtg_area_create(ag->area_path, ag->create_size,
				       &ag->fmt);
		if (ret) {
			agent_log("cannot create the area %s: %s",
				  ag->area_path, hvtg_last_error());
			return ret;
		}
	} else {
		fd = open(ag->area_path, O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			ret = -errno;
			agent_log("cannot open the area %s: %s (in a VM it is "
				  "the ivshmem BAR, linked by the guest's "
				  "init; locally use --create)",
				  ag->area_path, strerror(-ret));
			return ret;
		}
		if (fstat(fd, &st) || st.st_size < (off_t)HVT_CPU_OFFSET) {
			agent_log("%s is too small for a trace area",
				  ag->area_path);
			close(fd);
			return -EINVAL;
		}
		mem = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE,
			   MAP_SHARED, fd, 0);
		close(fd);
		if (mem == MAP_FAILED) {
			ret = -errno;
			agent_log("cannot map %s: %s", ag->area_path,
				  strerror(-ret));
			return ret;
		}
		ret = ag->kcopy_dir ?
			kcopy_format(ag, mem, (uint64_t)st.st_size) : 0;
		if (!ret)
			ret = hvtg_area_format(mem, (uint64_t)st.st_size,
					       &ag->fmt);
		munmap(mem, (size_t)st.st_size);
		if (ret) {
			agent_log("cannot format %s: %s", ag->area_path,
				  hvtg_last_error());
			return ret;
		}
	}
	ag->area_fd = open(ag->area_path, O_RDWR | O_CLOEXEC);
	ag->ctrl_fd = open(ag->area_path, O_RDONLY | O_CLOEXEC);
	if (ag->area_fd < 0 || ag->ctrl_fd < 0 || fstat(ag->area_fd, &st)) {
		agent_log("cannot reopen %s: %s", ag->area_path,
			  strerror(errno));
		return -errno;
	}
	ag->area_size = (uint64_t)st.st_size & ~(uint64_t)(HVT_AREA_ALIGN - 1);
	memset(&fds, 0, sizeof(fds));
	fds.area_fd = ag->area_fd;
	fds.area_size = ag->area_size;
	fds.ctrl_fd = ag->ctrl_fd;
	fds.ctrl_offset = HVT_CONTROL_OFFSET;
	ret = hvtg_area_open_fds(&fds, &ag->w);
	if (ret) {
		agent_log("cannot open the area for writing: %s",
			  hvtg_last_error());
		return ret;
	}
	hvtg_area_get_info(ag->w, &ag->info);
	/* The generation the host sees: read from the header we wrote. */
	h = mmap(NULL, HVT_AREA_HEADER_SIZE, PROT_READ, MAP_SHARED,
		 ag->ctrl_fd, 0);
	if (h != MAP_FAILED) {
		ag->generation = __atomic_load_n(&h->generation,
						 __ATOMIC_RELAXED);
		munmap((void *)h, HVT_AREA_HEADER_SIZE);
	}
	agent_log("area %s: %u CPUs x %u sub-buffers of %u bytes, %s mode, "
		  "clock %s, generation %llu",
		  ag->area_path, ag->info.nr_cpus, ag->info.nr_subbufs,
		  ag->info.subbuf_size,
		  ag->info.mode == HVT_MODE_OVERWRITE ? "overwrite" : "consume",
		  ag->info.clock_id == HVT_CLOCK_COUNTER ? "counter" :
							   "monotonic",
		  (unsigned long long)ag->generation);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "area", required_argument, NULL, 'a' },
		{ "create", required_argument, NULL, 'C' },
		{ "size", required_argument, NULL, 's' },
		{ "mode", required_argument, NULL, 'm' },
		{ "subbuf-size", required_argument, NULL, 'B' },
		{ "subbufs", required_argument, NULL, 'N' },
		{ "kernel-copy", required_argument, NULL, 'K' },
		{ "cpus", required_argument, NULL, 'P' },
		{ "clock", required_argument, NULL, 'k' },
		{ "name", required_argument, NULL, 'n' },
		{ "control", required_argument, NULL, 'c' },
		{ "host-socket", required_argument, NULL, 'H' },
		{ "host-wait", required_argument, NULL, 'W' },
		{ "socket", required_argument, NULL, 'S' },
		{ "group", required_argument, NULL, 'g' },
		{ "socket-mode", required_argument, NULL, 'M' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static struct agent agent;
	struct agent *ag = &agent;
	const char *control = DEFAULT_CONTROL, *host_socket = NULL;
	struct pollfd pfd[4 + AGENT_MAX_CLIENTS];
	struct client *cl[AGENT_MAX_CLIENTS];
	uint64_t v;
	sigset_t mask;
	int opt, sfd, ret;

	ag->area_path = DEFAULT_AREA;
	ag->create_size = 16ull << 20;
	ag->sock_path = DEFAULT_SOCKET;
	ag->group = DEFAULT_GROUP;
	ag->sock_mode = 0660;
	ag->host_wait_ms = 5000;
	ag->next_chan = 1;
	ag->lfd = -1;
	ag->bell_fd = -1;
	ag->area_fd = ag->ctrl_fd = -1;
	ag->trig_ev = (struct hvtg_event)HVTG_EVENT_INIT;
	hvt_util_log_setup("hvtrace-agent", 0);
	default_name(ag);

	while ((opt = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
		switch (opt) {
		case 'a':
			ag->area_path = optarg;
			ag->create = false;
			break;
		case 'C':
			ag->area_path = optarg;
			ag->create = true;
			break;
		case 's':
			if (hvt_util_size_parse(optarg, &ag->create_size) ||
			    ag->create_size % HVT_AREA_ALIGN) {
				fprintf(stderr, "hvtrace-agent: --size %s: "
						"give a multiple of 4096 "
						"(e.g. 16M)\n", optarg);
				return 2;
			}
			break;
		case 'm':
			if (parse_choice("mode", optarg, "consume",
					 HVT_MODE_CONSUME, "overwrite",
					 HVT_MODE_OVERWRITE, &ag->fmt.mode))
				return 2;
			break;
		case 'B':
		case 'K':
			ag->kcopy_dir = optarg;
			break;
		case 'N':
		case 'P':
			if (hvt_util_size_parse(optarg, &v) || v > UINT32_MAX ||
			    (opt == 'P' && !v)) {
				fprintf(stderr, "hvtrace-agent: bad number "
						"'%s'\n", optarg);
				return 2;
			}
			if (opt == 'B')
				ag->fmt.subbuf_size = (uint32_t)v;
			else if (opt == 'P')
				ag->fmt.nr_cpus = (uint32_t)v;
			else
				ag->fmt.nr_subbufs = (uint32_t)v;
			break;
		case 'k':
			if (parse_choice("clock", optarg, "counter",
					 HVT_CLOCK_COUNTER, "mono",
					 HVT_CLOCK_MONO_NS, &ag->fmt.clock_id))
				return 2;
			break;
		case 'n':
			if (!hvt_proto_name_ok(optarg,
					       (uint32_t)strlen(optarg))) {
				fprintf(stderr, "hvtrace-agent: --name '%s': "
						"use 1..31 of [A-Za-z0-9._-]\n",
					optarg);
				return 2;
			}
			strcpy(ag->name, optarg);
			break;
		case 'c':
			control = optarg;
			host_socket = NULL;
			break;
		case 'H':
			host_socket = optarg;
			break;
		case 'W':
			if (hvt_util_size_parse(optarg, &v) || v > 3600000) {
				fprintf(stderr,
					"hvtrace-agent: bad --host-wait '%s'\n",
					optarg);
				return 2;
			}
			ag->host_wait_ms = (uint32_t)v;
			break;
		case 'S':
			ag->sock_path = optarg;
			break;
		case 'g':
			ag->group = *optarg ? optarg : NULL;
			break;
		case 'M':
			if (hvt_util_mode_parse(optarg, &ag->sock_mode)) {
				fprintf(stderr, "hvtrace-agent: --socket-mode "
						"takes an octal mode\n");
				return 2;
			}
			break;
		case 'v':
			hvt_util_log_setup("hvtrace-agent", 1);
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		default:
			fputs(usage_text, stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "hvtrace-agent: unexpected argument '%s'\n%s",
			argv[optind], usage_text);
		return 2;
	}

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		agent_log("signalfd: %s", strerror(errno));
		return 1;
	}
	if (ag->kcopy_dir && ag->create) {
		fprintf(stderr, "hvtrace-agent: --kernel-copy needs --area "
				"(the guest's shared area), not --create\n");
		return 2;
	}
	ret = agent_area_setup(ag);
	if (ret || (ag->kcopy_dir && kcopy_start(ag)))
		return 1;
	ret = clients_listen(ag);
	if (!ret)
		ret = bell_listen(ag);
	if (ret)
		return 1;
	link_init(ag, host_socket ? LINK_SOCKET : LINK_CHARDEV,
		  host_socket ? host_socket : control);
	agent_log("'%s' ready: clients on %s, host via %s", ag->name,
		  ag->sock_path, ag->link.path);

	while (!ag->stop) {
		uint64_t now = agent_now_ms(), next = now + 60000;
		struct client *c;
		unsigned int n = 0, i;
		int timeout;

		link_tick(ag, now);
		pfd[0].fd = sfd;
		pfd[0].events = POLLIN;
		pfd[1].fd = ag->nr_clients < AGENT_MAX_CLIENTS ? ag->lfd : -1;
		pfd[1].events = POLLIN;
		link_poll_prep(ag, &pfd[2], now, &next);
		for (c = ag->clients; c && n < AGENT_MAX_CLIENTS; c = c->next) {
			cl[n] = c;
			client_poll_prep(c, &pfd[3 + n]);
			n++;
		}
		bell_poll_prep(ag, &pfd[3 + n]);
		timeout = next <= now ? 0 :
			  next - now > 60000 ? 60000 : (int)(next - now);
		ret = poll(pfd, 4 + n, timeout);
		if (ret < 0) {
			if (errno == EINTR)
				continue;
			agent_log("poll: %s", strerror(errno));
			break;
		}
		now = agent_now_ms();
		if (pfd[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				agent_log("signal %u: stopping", si.ssi_signo);
				ag->stop = 1;
			}
		}
		link_poll_done(ag, &pfd[2], now);
		bell_poll_done(ag, &pfd[3 + n]);
		for (i = 0; i < n; i++)
			if (pfd[3 + i].revents)
				client_poll_done(ag, cl[i], &pfd[3 + i]);
		if (pfd[1].revents & POLLIN)
			clients_accept(ag);
		clients_reap(ag);
	}
	kcopy_stop(ag);	/* the kernel's last pages before the host hears */
	link_bye(ag);
	bell_close(ag);
	if (ag->lfd >= 0) {
		close(ag->lfd);
		unlink(ag->sock_path);
	}
	return 0;
}
