// SPDX-License-Identifier: MIT
/*
 * The relay-free doorbell (docs/design.md, "Waking the reader"): a rig
 * guest's ivshmem-doorbell device, served by hvtrace-ivshmem, whose
 * register a guest writer stores to; QEMU signals hvtraced's eventfd.
 *
 * Two guests in turn, each writing COUNT numbered events at RATE per
 * second from one thread (guest/workloads/ue_seq): far enough apart that
 * hvtraced arms a wakeup and sleeps between them, so every event needs a
 * doorbell to be read before the backstop.
 *
 *   - the default guest: doorbells come on the eventfd (wake_bell_rings
 *     grows) and none is relayed by the agent (wake_relayed stays 0);
 *   - a guest started with --no-bell: no eventfd rings, and the agent
 *     relays the doorbells (wake_relayed grows);
 *   - the default guest again, the writer run by a user that is not root
 *     but a member of the agent socket's group (root's group here): the
 *     agent gave the device that group's access, so its doorbells come on
 *     the eventfd too (the device's register file is root's alone until
 *     then);
 *
 *   - a guest that rings the doorbell without end for FLOOD_S seconds
 *     (guest/workloads/bell_ring) while hvtraced reads it for a
 *     subscriber: hvtraced must take less than a quarter of a CPU meanwhile
 *     and arm the remote at most once per 10 ms (a doorbell counts as
 *     data for the quiet rule; one that finds the remote polled forces no
 *     read, and the eventfd is not watched again until the next arming),
 *     and the guest's events written after the flood still arrive;
 *
 * and in every run, every event arrives exactly once, in order, with
 * read + lost == written and nothing lost.  The backstop (--wake-backstop-ms)
 * is long, so events that no doorbell brought would show as a stall of
 * the whole run past its deadline.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "e2e.h"

#define COUNT	60
#define RATE	20
#define FLOOD_S 4

/* CPU time (user + system) of process @pid, in seconds. */
static double cpu_s(pid_t pid)
{
	unsigned long long ut, st;
	char path[64], buf[1024], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		t_fail("%s: cannot open", path);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2,
			 "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
			 "%llu %llu",
			 &ut, &st) != 2)
		t_fail("%s: cannot parse", path);
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static double wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Before the workload, for the "user" run: user hvtw (uid 1000), a
 * member of group root, which owns the agent's socket. */
#define AS_USER                                                                \
	"echo hvtw:x:1000:1000::/:/bin/sh >>/etc/passwd && "                   \
	"echo hvtw:x:1000: >>/etc/group && "                                   \
	"sed -i 's/^root:x:0:$/root:x:0:hvtw/' /etc/group && "                 \
	"ls -lL /dev/hvtrace-bell && su hvtw -c 'id; "

static void run_one(const char *suffix, bool bell, bool user, bool flood)
{
	static struct e_seq s;
	struct hvt_m_stats st[8];
	uint64_t rings, relayed, bells, sleeps;
	const char *extra[] = {"--no-bell", NULL};
	struct e_guest g;
	unsigned int n, cpu;
	const char *done;
	char run[512];

	if (flood)
		snprintf(run, sizeof(run),
			 "ue_seq --threads 1 --count %d --rate %d --hold & "
			 "sleep 3; bell_ring %d; wait",
			 COUNT, RATE, FLOOD_S);
	else
		snprintf(run, sizeof(run),
			 "%sue_seq --threads 1 --count %d --rate %d --hold%s",
			 user ? AS_USER : "", COUNT, RATE, user ? "'" : "");
	e_guest_start(&g, suffix, run, bell ? NULL : extra);
	e_wait_event(&g, "hvt_seq", 60000);
	e_seq_init(&s, &g, 1, COUNT);
	rings = h_info_u64(e_dc, g.remote, "wake_bell_rings");
	relayed = h_info_u64(e_dc, g.remote, "wake_relayed");
	bells = h_info_u64(e_dc, g.remote, "wake_doorbells");
	sleeps = h_info_u64(e_dc, g.remote, "wake_sleeps");
	if (flood) {
		double c0 = cpu_s(e_daemon_pid()), w0 = wall_s(), c, w;
		uint64_t stale = h_info_u64(e_dc, g.remote, "wake_stale");
		uint64_t armings = h_info_u64(e_dc, g.remote, "wake_armings");
		const char *l;

		/* Subscribed and idle: the daemon arms, the guest rings. */
		l = e_console_line(&g, "bell_ring: ", "bell_ring: error",
				   (FLOOD_S + 30) * 1000);
		c = cpu_s(e_daemon_pid()) - c0;
		w = wall_s() - w0;
		stale = h_info_u64(e_dc, g.remote, "wake_stale") - stale;
		printf("%s: %s; hvtraced used %.2f s of CPU in %.1f s (%.1f "
		       "%%), %llu stale doorbells ignored\n",
		       suffix, l, c, w, 100.0 * c / w,
		       (unsigned long long)stale);
		if (e_kv(l, "rings") < 1000)
			t_fail("%s: the guest rang only %llu times", suffix,
			       e_kv(l, "rings"));
		if (c > 0.25 * w)
			t_fail("%s: hvtraced took %.1f %% of a CPU while the "
			       "guest rang its doorbell without end",
			       suffix, 100.0 * c / w);
		if (!stale)
			t_fail("%s: no doorbell was found stale", suffix);
		/* At most one arming per quiet period (10 ms) after a
		 * doorbell: D_WAKE_QUIET_US. */
		armings = h_info_u64(e_dc, g.remote, "wake_armings") - armings;
		printf("%s: %llu armings during the flood\n", suffix,
		       (unsigned long long)armings);
		if ((double)armings > w * 100 + 10)
			t_fail("%s: %llu armings in %.1f s: more than one per "
			       "10 ms",
			       suffix, (unsigned long long)armings, w);
		rings = h_info_u64(e_dc, g.remote, "wake_bell_rings");
		bells = h_info_u64(e_dc, g.remote, "wake_doorbells");
		sleeps = h_info_u64(e_dc, g.remote, "wake_sleeps");
	}
	e_enable(&g, "hvt_seq", true);
	done = e_seq_until_done(&s, &g, 60000);
	printf("%s: guest: done %s\n", suffix, done);
	if (e_kv(done, "wrote") != COUNT || e_kv(done, "dropped") ||
	    e_kv(done, "failed"))
		t_fail("%s: the guest did not commit every write: %s", suffix,
		       done);
	e_seq_check_exact(&s, COUNT);
	t_equ(s.lost, 0);
	t_equ(s.dropped, 0);
	n = e_stats(&g, st, 8);
	for (cpu = 0; cpu < n; cpu++) {
		uint64_t *v = st[cpu].v;

		if (v[E_ST_READ] + v[E_ST_LOST] != v[E_ST_WRITTEN] ||
		    v[E_ST_LOST])
			t_fail("%s: cpu %u: read %llu + lost %llu, written "
			       "%llu",
			       suffix, cpu, (unsigned long long)v[E_ST_READ],
			       (unsigned long long)v[E_ST_LOST],
			       (unsigned long long)v[E_ST_WRITTEN]);
	}
	rings = h_info_u64(e_dc, g.remote, "wake_bell_rings") - rings;
	relayed = h_info_u64(e_dc, g.remote, "wake_relayed") - relayed;
	bells = h_info_u64(e_dc, g.remote, "wake_doorbells") - bells;
	sleeps = h_info_u64(e_dc, g.remote, "wake_sleeps") - sleeps;
	printf("%s: %d events: %llu sleeps, %llu doorbells: %llu rings on "
	       "the ivshmem doorbell, %llu relayed by the agent\n",
	       suffix, COUNT, (unsigned long long)sleeps,
	       (unsigned long long)bells, (unsigned long long)rings,
	       (unsigned long long)relayed);
	/* Sparse events: the daemon slept and was woken, at the least for
	 * a good part of them. */
	if (sleeps < COUNT / 4 || bells < COUNT / 4)
		t_fail("%s: %llu sleeps and %llu doorbells for %d events "
		       "%d ms apart: the daemon did not sleep on this guest",
		       suffix, (unsigned long long)sleeps,
		       (unsigned long long)bells, COUNT, 1000 / RATE);
	if (bell && (rings < COUNT / 4 || relayed))
		t_fail("%s: %llu rings on the ivshmem doorbell, %llu relayed: "
		       "the guest's writer did not ring the device",
		       suffix, (unsigned long long)rings,
		       (unsigned long long)relayed);
	if (!bell && (rings || relayed < COUNT / 4))
		t_fail("%s: --no-bell, yet %llu rings on an ivshmem doorbell "
		       "and only %llu relayed",
		       suffix, (unsigned long long)rings,
		       (unsigned long long)relayed);
	e_seq_free(&s);
	e_guest_stop(&g);
}

int main(void)
{
	/* A backstop far past the run: only doorbells wake the daemon. */
	e_init("--wake-backstop-ms 600000");
	run_one("bell", true, false, false);
	run_one("relay", false, false, false);
	run_one("user", true, true, false);
	run_one("flood", true, false, true);
	h_pass();
	return 0;
}
