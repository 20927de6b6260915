// SPDX-License-Identifier: MIT
/*
 * Writes no CPU buffer can take are not lost silently, end to end.  An
 * agent formats its area with one CPU buffer (--cpus 1) on a machine with
 * two CPUs; ue_seq writes from two threads, pinned to CPU 0 and CPU 1.
 * Every write of the thread on CPU 1 fails with ENXIO and is counted in
 * the area as unplaced; hvtraced reports them as lost:
 *
 *   - the PAGEs a tool receives carry them as lost events (what hvtrace
 *     stream prints as "CPU:0 [LOST n EVENTS]"), those after CPU 0's last
 *     page as "not yet reported" (trailing) in the daemon's STATS;
 *   - hvtrace stat NAME prints them as "unplaced" and written counts
 *     them: read + lost + trailing == written == both threads' writes.
 *
 * Needs two online CPUs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event-parse.h>

#include <hvtrace.h>

#include "harness.h"

#define COUNT	5000

struct tally {
	int id;
	uint32_t sub;
	uint64_t events, lost;
};

static struct tep_handle *tep;

static void count_rec(void *arg, struct tep_handle *t, struct tep_event *ev,
		      struct tep_record *rec)
{
	struct tally *y = arg;

	if (ev && ev->id == y->id)
		y->events++;
}

/* "name: value" in the block of CPU @cpu of hvtrace stat's output. */
static long long stat_field(const char *out, int cpu, const char *name)
{
	char head[32];
	const char *p, *end;
	size_t n = strlen(name);

	snprintf(head, sizeof(head), "\nCPU %d:\n", cpu);
	p = strstr(out, head);
	if (!p)
		return -1;
	p += strlen(head);
	end = strstr(p, "\nCPU ");
	while (p && *p && (!end || p < end)) {
		if (!strncmp(p, name, n) && p[n] == ':')
			return atoll(p + n + 1);
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -1;
}

int main(void)
{
	struct hvtrace_daemon *dc;
	struct tally y = { 0 };
	struct h_agent a;
	struct h_proc w;
	struct hvt_msg m;
	char text[256], cmd[1024], out[8192], count[16];
	unsigned long long wrote, dropped, skipped, failed;
	long long unplaced, written, trailing, lost, readv;
	const char *line;
	uint64_t deadline;
	size_t len;
	FILE *f;
	int ret;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		printf("SKIP: one online CPU: no CPU beyond a one-buffer "
		       "area\n");
		return 77;
	}
	dc = h_start(NULL);
	h_agent_start(&a, "few", "--size 4M --cpus 1");
	y.sub = h_subscribe(dc, a.remote, 0);

	snprintf(count, sizeof(count), "%d", COUNT);
	h_proc_start(&w, "guest/workloads/ue_seq", "--socket", a.sock,
		     "--threads", "2", "--count", count, "--wait-enable",
		     "30000", NULL);
	line = h_proc_line(&w, 15000);
	if (sscanf(line, "ue_seq: registered id=%d", &y.id) != 1)
		t_fail("workload: %s", line);
	tep = h_tep(dc, a.remote);
	t_eq(h_result(dc, HVT_MSG_ENABLE, a.remote, 1, "hvt_seq", text,
		      sizeof(text)),
	     0);
	do
		line = h_proc_line(&w, 30000);
	while (strncmp(line, "ue_seq: done ", 13));
	if (sscanf(line, "ue_seq: done wrote=%llu dropped=%llu skipped=%llu "
			 "failed=%llu",
		   &wrote, &dropped, &skipped, &failed) != 4)
		t_fail("workload: %s", line);
	/* The thread on CPU 1 failed every write (ENXIO), so ue_seq says
	 * it failed. */
	t_eq(h_proc_wait(&w, 10000), 1);
	printf("ue_seq: wrote %llu, dropped %llu, failed %llu\n", wrote,
	       dropped, failed);
	/* 4 MiB holds thread 0's records: nothing dropped for a full ring. */
	t_equ(wrote, COUNT);
	t_equ(dropped, 0);
	t_equ(failed, COUNT);

	/* Everything placed arrives; the unplaced ones come as losses. */
	deadline = h_now_ns() + 60000000000ull;	/* hang guard */
	while (y.events < wrote) {
		if (h_now_ns() > deadline)
			t_fail("%llu of %llu events arrived",
			       (unsigned long long)y.events, wrote);
		ret = hvtrace_daemon_recv(dc, &m, 200);
		if (ret < 0)
			t_fail("%s", hvtrace_last_error());
		if (ret == 1 && m.type == HVT_MSG_PAGE && m.req == y.sub) {
			y.lost += m.u.page.lost_events;
			h_decode_page(tep, &m.u.page, count_rec, &y);
		}
	}

	snprintf(cmd, sizeof(cmd), "%s/bin/hvtrace stat few --socket %s",
		 h_objtree, h_dsock);
	f = popen(cmd, "r");
	t_assert(f);
	len = fread(out, 1, sizeof(out) - 1, f);
	out[len] = '\0';
	t_eq(pclose(f), 0);
	unplaced = stat_field(out, 0, "unplaced");
	written = stat_field(out, 0, "written");
	trailing = stat_field(out, 0, "not yet reported lost");
	lost = stat_field(out, 0, "lost");
	readv = stat_field(out, 0, "read events");
	printf("tool: %llu events, %llu reported lost in pages\n",
	       (unsigned long long)y.events, (unsigned long long)y.lost);
	printf("hvtrace stat: written %lld, read %lld, lost %lld, unplaced "
	       "%lld, not yet reported %lld\n",
	       written, readv, lost, unplaced, trailing);
	if (unplaced < 0 || written < 0 || trailing < 0 || lost < 0 ||
	    readv < 0)
		t_fail("hvtrace stat output lacks a field:\n%s", out);
	t_equ(y.events, wrote);
	t_equ((uint64_t)readv, wrote);
	t_equ((uint64_t)written, wrote + dropped + failed);
	/* Reported with a page of CPU 0 or still trailing: which depends
	 * on how the two threads interleaved (tests/unit/guest_unplaced
	 * checks the page report deterministically). */
	t_equ((uint64_t)(unplaced + trailing), failed);
	t_equ((uint64_t)lost, y.lost);
	t_equ((uint64_t)unplaced, y.lost);
	t_equ((uint64_t)(readv + lost + trailing), (uint64_t)written);
	tep_free(tep);
	hvtrace_daemon_close(dc);
	h_pass();
	return 0;
}
