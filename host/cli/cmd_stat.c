// SPDX-License-Identifier: MIT
/*
 * hvtrace stat: per-CPU counters, like tracefs per_cpu/cpuN/stats.
 *
 * For an area the numbers come from shared memory only
 * (hvtrace_cpu_get_totals()): the area is opened read-only and nothing is
 * consumed, so stat never disturbs the area's owner.  For the kernel the
 * per_cpu stats files are printed as they are.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hvtrace.h>

#include "cli.h"
#include "daemon_src.h"
#include <hvtrace-daemon.h>

#define VERB "stat"

static const char stat_usage[] =
	"usage: hvtrace stat AREA [--cpu N] [--read-only]\n"
	"       hvtrace stat NAME [--cpu N] [--socket PATH]\n"
	"       hvtrace stat --kernel [--instance NAME] [--cpu N]\n"
	"       hvtrace stat --vm-pid PID|--domain DOMAIN [--cpu N]\n"
	"\n"
	"Print per-CPU buffer counters, in the layout of tracefs\n"
	"per_cpu/cpuN/stats:\n"
	"\n"
	"  entries          committed events on sub-buffers the owner has\n"
	"                   not finished consuming (all of them when\n"
	"                   nobody consumes)\n"
	"  overrun          events overwritten before anyone read them\n"
	"                   (overwrite mode)\n"
	"  commit overrun   always 0 (the writer core cannot lose a commit)\n"
	"  bytes            data bytes of the unconsumed sub-buffers\n"
	"  oldest event ts  first unconsumed sub-buffer, in seconds\n"
	"  now ts           newest committed event, in seconds\n"
	"  dropped events   events dropped because the ring was full\n"
	"                   (consume mode)\n"
	"  read events      events on sub-buffers the owner finished\n"
	"                   (consume mode)\n"
	"\n"
	"followed by what an area adds: committed, unplaced (events the\n"
	"writer could put in no CPU buffer: written on a CPU the area has\n"
	"no buffer for, or given up; they count as lost), written\n"
	"(committed + dropped + unplaced), the writer's sub-buffer\n"
	"positions and the hostile\n"
	"control values it rejected.  AREA is PATH[@OFFSET[+SIZE]]; it is\n"
	"opened read-only and nothing is consumed.  --kernel prints the host\n"
	"kernel's per_cpu stats files.  For an AREA the timestamps go\n"
	"through the area header's clock description only (no time-sync\n"
	"sample is taken).  NAME is a remote of hvtraced (see\n"
	"'hvtrace daemon status'): its summary, then the counters of the\n"
	"daemon's reader (written, lost, errors added), timestamps on the\n"
	"host clock through the daemon's clock model.  --vm-pid PID reads\n"
	"the ring of the guest kernel that runs in VMM process PID (see\n"
	"'hvtrace stream --vm-pid'): per CPU, the committed events from the\n"
	"ring's head (entries, bytes, oldest and newest timestamp, guest\n"
	"clock), then what the read met (lost pages, skipped pages,\n"
	"errors); nothing in the guest is changed.\n"
	"\n"
	"options:\n"
	"  --kernel            the host kernel's buffers\n"
	"  --instance NAME     with --kernel: tracefs instance NAME\n"
	"  --vm-pid PID        a guest kernel's ring in VMM process PID\n"
	"  --domain DOMAIN     ... in the QEMU of libvirt domain DOMAIN\n"
	"  --cpu N             only CPU N\n"
	"  --read-only         accepted for symmetry with stream and\n"
	"                      record: an AREA is always opened read-only\n"
	"  --socket PATH       hvtraced's socket, for NAME\n"
	"  -h, --help          this text\n";

enum {
	OPT_KERNEL = 1,
	OPT_INSTANCE,
	OPT_CPU,
	OPT_SOCKET,
	OPT_RO,
	OPT_VM_PID,
	OPT_DOMAIN,
};

static void stat_ts(const char *label, uint64_t ns)
{
	unsigned long long us = (ns + 500) / 1000;

	printf("%s %5llu.%06llu\n", label, us / 1000000, us % 1000000);
}

static const char *stat_state(uint32_t s)
{
	return s == HVT_STATE_RUNNING	? "running"
	       : s == HVT_STATE_STOPPED ? "stopped"
	       : s == HVT_STATE_INIT	? "starting"
					: "unknown";
}

static const char *stat_kind(uint32_t k)
{
	return k == HVT_WRITER_LOOPBACK ? "loopback"
	       : k == HVT_WRITER_GUEST	? "guest"
	       : k == HVT_WRITER_HYP	? "hypervisor"
					: "unknown";
}

static int stat_area(const char *spec, int only_cpu)
{
	struct hvtrace_area_info info;
	struct hvtrace_cpu_totals t;
	struct hvtrace_area *a;
	unsigned int cpu, first, last;
	uint32_t state = 0;
	uint64_t gen = 0;
	int ret = HVT_EXIT_OK;

	if (hvtrace_area_open_spec(spec, 0, &a))
		return hvt_cli_error(VERB, "%s", hvtrace_last_error());
	hvtrace_area_get_info(a, &info);
	hvtrace_area_writer_state(a, &state, &gen);
	first = 0;
	last = info.nr_cpus - 1;
	if (only_cpu >= 0) {
		if ((unsigned int)only_cpu >= info.nr_cpus) {
			hvtrace_area_close(a);
			return hvt_cli_usage(VERB,
					     "--cpu %d: area '%s' has "
					     "CPUs 0..%u",
					     only_cpu, info.name, last);
		}
		first = last = (unsigned int)only_cpu;
	}
	printf("area: %s ('%s', %s writer pid %u, %s, generation %llu)\n", spec,
	       info.name, stat_kind(info.writer_kind), info.writer_pid,
	       stat_state(state), (unsigned long long)gen);
	printf("geometry: %u CPUs x %u sub-buffers of %u bytes, %s mode\n",
	       info.nr_cpus, info.nr_subbufs, info.subbuf_size,
	       info.mode == HVT_MODE_OVERWRITE ? "overwrite" : "consume");
	if (info.clock_id == HVT_CLOCK_COUNTER)
		printf("clock: counter at %.3f MHz\n",
		       (double)info.clock_freq_hz / 1e6);
	else
		printf("clock: %s\n", info.clock_id == HVT_CLOCK_MONO_NS
					      ? "writer CLOCK_MONOTONIC (ns)"
					      : "host ns");
	for (cpu = first; cpu <= last; cpu++) {
		if (hvtrace_cpu_get_totals(a, (int)cpu, &t)) {
			printf("\nCPU %u: unreadable: %s\n", cpu,
			       hvtrace_last_error());
			ret = HVT_EXIT_FAIL;
			continue;
		}
		printf("\nCPU %u:\n", cpu);
		printf("entries: %llu\n", (unsigned long long)t.entries);
		printf("overrun: %llu\n", (unsigned long long)t.overrun);
		printf("commit overrun: 0\n");
		printf("bytes: %llu\n", (unsigned long long)t.bytes);
		stat_ts("oldest event ts:",
			t.entries
				? hvtrace_area_to_host_ns(a, t.oldest_ts, NULL)
				: 0);
		stat_ts("now ts:",
			t.committed ? hvtrace_area_to_host_ns(a, t.now_ts, NULL)
				    : 0);
		printf("dropped events: %llu\n", (unsigned long long)t.dropped);
		printf("read events: %llu\n", (unsigned long long)t.consumed);
		printf("committed: %llu\n", (unsigned long long)t.committed);
		printf("unplaced: %llu\n", (unsigned long long)t.unplaced);
		printf("written: %llu\n",
		       (unsigned long long)(t.committed + t.dropped +
					    t.unplaced));
		printf("sub-buffers: tail %u, oldest %u, consumer %u\n",
		       t.tail_seq, t.oldest_seq, t.consumer_seq);
		printf("control errors: %llu\n",
		       (unsigned long long)t.ctrl_errors);
	}
	hvtrace_area_close(a);
	return ret;
}

static int stat_kernel(const char *instance, int only_cpu)
{
	char dir[256], path[512], buf[4096];
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	int cpu, printed = 0;
	ssize_t n;
	int fd;

	/* Mounts tracefs if needed, and checks the instance exists. */
	if (hvtrace_tracefs_dir(instance, dir, sizeof(dir)))
		return hvt_cli_error(VERB, "%s", hvtrace_last_error());
	for (cpu = 0; cpu < ncpu; cpu++) {
		if (only_cpu >= 0 && cpu != only_cpu)
			continue;
		snprintf(path, sizeof(path), "%s/per_cpu/cpu%d/stats", dir,
			 cpu);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			if (only_cpu >= 0)
				return hvt_cli_error(VERB, "cannot read %s: %s",
						     path, strerror(errno));
			continue;
		}
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n < 0)
			continue;
		buf[n] = '\0';
		printf("%sCPU %d:\n%s", printed ? "\n" : "", cpu, buf);
		printed++;
	}
	if (!printed)
		return hvt_cli_error(VERB, "no per_cpu stats found under %s",
				     dir);
	return HVT_EXIT_OK;
}

/*
 * A guest kernel's ring in VMM process @pid: read every CPU from its head
 * to its commit (a private copy: nothing in the guest changes) and print
 * what was there.
 */
static int stat_vm_pid(int pid, int only_cpu)
{
	struct hvtrace_kring_info ki;
	struct hvtrace_kring_stats st;
	struct hvtrace_page_info pi;
	struct hvtrace_kring *k;
	unsigned int cpu, first, last;
	int ret = HVT_EXIT_OK;
	uint8_t *page;

	if (hvtrace_kring_open_pid(pid, &k))
		return hvt_cli_error(VERB, "--vm-pid %d: %s", pid,
				     hvtrace_last_error());
	hvtrace_kring_get_info(k, &ki);
	first = 0;
	last = ki.nr_cpus - 1;
	if (only_cpu >= 0) {
		if ((unsigned int)only_cpu > last) {
			hvtrace_kring_close(k);
			return hvt_cli_usage(VERB,
					     "--cpu %d: the guest kernel "
					     "ring has CPUs 0..%u",
					     only_cpu, last);
		}
		first = last = (unsigned int)only_cpu;
	}
	page = malloc(ki.subbuf_size);
	if (!page) {
		hvtrace_kring_close(k);
		return hvt_cli_error(VERB, "out of memory");
	}
	printf("guest kernel ring: process %d, at 0x%llx (%s layout)\n", pid,
	       (unsigned long long)ki.addr,
	       ki.layout == HVTRACE_KRING_LAYOUT_6_12 ? "6.12" : "6.15+");
	printf("geometry: %u CPUs x %u sub-buffers of %u bytes, overwrite "
	       "mode\n",
	       ki.nr_cpus, ki.nr_subbufs, ki.subbuf_size);
	printf("clock: the guest's trace clock\n");
	for (cpu = first; cpu <= last; cpu++) {
		uint64_t oldest = 0, n = 0;
		bool any = false;
		int r = 0;

		/* One lap of the ring: what was committed when stat began
		 * (a guest writing meanwhile cannot keep it going). */
		while (n++ < ki.nr_subbufs &&
		       (r = hvtrace_kring_read_page(k, (int)cpu, page,
						    ki.subbuf_size, &pi)) > 0)
			if (!any) {
				any = true;
				oldest = pi.first_ts;
			}
		printf("\nCPU %u:\n", cpu);
		if (r < 0) {
			printf("unreadable: %s\n", hvtrace_last_error());
			ret = HVT_EXIT_FAIL;
			continue;
		}
		hvtrace_kring_get_stats(k, (int)cpu, &st);
		printf("entries: %llu\n", (unsigned long long)st.read);
		printf("bytes: %llu\n", (unsigned long long)st.bytes);
		stat_ts("oldest event ts:", oldest);
		stat_ts("now ts:", st.now_ts);
		printf("lost pages: %llu\n", (unsigned long long)st.lost_pages);
		printf("skipped pages: %llu\n",
		       (unsigned long long)st.skipped_pages);
		printf("errors: %llu\n", (unsigned long long)st.errors);
	}
	free(page);
	hvtrace_kring_close(k);
	return ret;
}

static int cmd_stat(int argc, char **argv)
{
	static const struct option opts[] = {
		{"kernel", no_argument, NULL, OPT_KERNEL},
		{"instance", required_argument, NULL, OPT_INSTANCE},
		{"cpu", required_argument, NULL, OPT_CPU},
		{"socket", required_argument, NULL, OPT_SOCKET},
		{"read-only", no_argument, NULL, OPT_RO},
		{"vm-pid", required_argument, NULL, OPT_VM_PID},
		{"domain", required_argument, NULL, OPT_DOMAIN},
		{NULL, 0, NULL, 0},
	};
	const char *spec = NULL, *instance = NULL, *sock = NULL;
	const char *domain = NULL;
	unsigned long long v;
	bool kernel = false;
	int c, rc, cpu = -1, vm_pid = 0;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		switch (c) {
		case OPT_KERNEL:
			kernel = true;
			break;
		case OPT_INSTANCE:
			instance = optarg;
			break;
		case OPT_SOCKET:
			sock = optarg;
			break;
		case OPT_RO:
			break; /* an AREA is always opened read-only */
		case OPT_VM_PID:
			if (hvt_cli_parse_pid(optarg, &vm_pid))
				return hvt_cli_usage(VERB,
						     "bad --vm-pid '%s' "
						     "(a process id)",
						     optarg);
			break;
		case OPT_DOMAIN:
			domain = optarg;
			break;
		case OPT_CPU:
			if (hvt_cli_parse_u64(optarg, &v) || v >= 4096)
				return hvt_cli_usage(VERB,
						     "bad --cpu '%s' (a "
						     "CPU number)",
						     optarg);
			cpu = (int)v;
			break;
		default:
			return hvt_cli_bad_option(VERB, argv, c);
		}
	}
	if (optind < argc)
		spec = argv[optind++];
	if (optind < argc)
		return hvt_cli_usage(VERB, "unexpected argument '%s'",
				     argv[optind]);
	if (domain) {
		if (vm_pid)
			return hvt_cli_usage(VERB, "--domain or --vm-pid, not "
						   "both");
		rc = hvt_cli_domain_pid(VERB, domain, &vm_pid);
		if (rc)
			return rc;
	}
	if (vm_pid) {
		if (kernel || spec || instance || sock)
			return hvt_cli_usage(VERB, "--vm-pid and --domain go "
						   "alone (with --cpu N at "
						   "most)");
		return stat_vm_pid(vm_pid, cpu);
	}
	if (kernel == !!spec)
		return hvt_cli_usage(VERB, kernel ? "give an AREA or --kernel, "
						    "not both"
						  : "no AREA given (or "
						    "--kernel)");
	if (instance && !kernel)
		return hvt_cli_usage(VERB, "--instance goes with --kernel");
	if (!kernel && hvtrace_daemon_name_is_remote(spec))
		return hvt_cli_stat_remote(spec, sock, cpu);
	if (sock)
		return hvt_cli_usage(VERB, "--socket goes with a remote NAME");
	return kernel ? stat_kernel(instance, cpu) : stat_area(spec, cpu);
}

HVT_CLI_COMMAND(stat, "stat", "per-CPU counters of an area or the kernel",
		stat_usage, cmd_stat);
