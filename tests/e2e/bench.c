// SPDX-License-Identifier: MIT
/*
 * Guest-to-host benchmark (make bench): a TCG guest with 2 vCPUs, its
 * agent and ue_seq, read by hvtraced for this program.  Prints
 *
 *   BENCH e2e_idle_cpu_unsubscribed  hvtraced's CPU use with the guest
 *                                    attached and idle, nobody reading
 *   BENCH e2e_idle_cpu_<cfg>         ... with a subscriber: the default
 *                                    (armed wakeups), and polling alone
 *                                    (peers, --no-wakeups): the default
 *                                    back-off limit (default_nowake) and
 *                                    --poll-max-us 50000, 10000, 5000 and
 *                                    1000
 *   BENCH e2e_throughput             events/s delivered from a guest
 *                                    workload writing as fast as it can
 *                                    (2 threads, one per vCPU): from the
 *                                    first event's write to the last
 *                                    one's arrival here; and
 *   BENCH e2e_throughput_lost        how many of them were lost
 *   BENCH e2e_wake_doorbells_per_s   doorbells during it
 *   BENCH e2e_wake_events_per_doorbell  and events delivered per doorbell
 *   BENCH e2e_steady_events_per_s    then a steady stream: the same two
 *                                    threads at 50000 events/s each for
 *                                    5 s (ue_seq --phase2 --rate2), the
 *                                    rate delivered
 *   BENCH e2e_steady_lost            how many of them were lost
 *   BENCH e2e_steady_doorbells_per_s doorbells during it, and
 *   BENCH e2e_steady_armings_per_s   the daemon's armings (a doorbell
 *                                    needs one: at most one per CPU
 *                                    buffer per arming, with the default
 *                                    watermark of one byte, counting the
 *                                    arming that stood when it began)
 *   BENCH e2e_latency_p50_<poll>     from the guest's write (its ring
 *   BENCH e2e_latency_p99_<poll>     timestamp on the host clock) to the
 *                                    moment this reader has the event,
 *                                    at 50 events/s, per configuration
 *   BENCH e2e_clock_error_bound      the time-sync error bound then
 *   BENCH e2e_wake_relay_free_share_default  of the doorbells of the
 *                                    default run, the share rung on the
 *                                    guest's ivshmem doorbell (QEMU
 *                                    signals hvtraced's eventfd) rather
 *                                    than relayed by its agent
 *   BENCH e2e_guest_wake_p50         the guest's own floor under a
 *   BENCH e2e_guest_wake_p99         doorbell that its agent relays (a
 *                                    guest started with --no-bell): one
 *                                    guest process waking another with a
 *                                    datagram, 400 times at 50/s
 *                                    (guest/workloads/wake_floor.c), at
 *                                    boot, before the runs above
 *
 * HVT_E2E_SAMPLES=FILE appends each latency sample there ("CONFIG WRITE
 * ARRIVAL", host CLOCK_MONOTONIC ns), to follow single events along the
 * path.
 *
 * Upstream Linux trace remotes poll a remote's buffer every 100 ms, so a
 * reader sees an event 50 ms after it was written on average there.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event-parse.h>

#include <hvtrace.h>

#include "e2e.h"

#define TPUT_THREADS 2
#define TPUT_COUNT   150000
#define STEADY_RATE  50000  /* events/s, each thread */
#define STEADY_COUNT 250000 /* each thread: 5 s */
#define LAT_RATE     50
#define LAT_SECONDS  8
#define NR_CFG	     6

/* The default (armed wakeups), then polling alone: the default back-off
 * limit and four others. */
static const char *const cfg_args[NR_CFG] = {
	"--shm-dir /dev/shm",
	"--shm-dir /dev/shm --no-wakeups",
	"--shm-dir /dev/shm --no-wakeups --poll-max-us 50000",
	"--shm-dir /dev/shm --no-wakeups --poll-max-us 10000",
	"--shm-dir /dev/shm --no-wakeups --poll-max-us 5000",
	"--shm-dir /dev/shm --no-wakeups --poll-max-us 1000",
};
static const char *const cfg_name[NR_CFG] = {
	"default", "default_nowake", "poll50ms", "poll10ms", "poll5ms",
	"poll1ms"};

/* A counter of the remote's summary (hvtrace daemon info). */
struct bcol {
	uint32_t sub;
	struct tep_handle *tep;
	int id;
	struct tep_format_field *seq;
	uint64_t now; /* when the current page arrived */
	uint64_t tput, steady, lat, lost, pages;
	uint64_t first_ts, last_ns; /* first tput event written, last
				     * one received */
	uint64_t steady_first_ts, steady_last_ns; /* the same, steady */
	bool keep;		    /* record latency samples */
	uint64_t *ts, *recv;
	size_t nr, cap;
};

static struct bcol col;

static void b_record(void *arg, struct tep_handle *tep, struct tep_event *ev,
		     struct tep_record *rec)
{
	struct bcol *c = arg;
	const char *tag;
	int len;

	(void)tep;
	if (!ev || ev->id != c->id)
		return;
	tag = tep_get_field_raw(NULL, ev, "tag", rec, &len, 0);
	if (!tag || len < 4)
		t_fail("a record without its tag");
	if (!memcmp(tag, "tput", 4)) {
		unsigned long long seq;

		if (tep_read_number_field(c->seq, rec->data, &seq))
			t_fail("a record without its seq");
		if (seq >= TPUT_COUNT) {
			/* --phase2: the steady stream */
			if (!c->steady)
				c->steady_first_ts = rec->ts;
			c->steady_last_ns = c->now;
			c->steady++;
			return;
		}
		if (!c->tput)
			c->first_ts = rec->ts;
		c->last_ns = c->now;
		c->tput++;
		return;
	}
	c->lat++;
	if (!c->keep)
		return;
	if (c->nr == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 4096;
		c->ts = realloc(c->ts, c->cap * sizeof(*c->ts));
		c->recv = realloc(c->recv, c->cap * sizeof(*c->recv));
		if (!c->ts || !c->recv)
			t_fail("out of memory");
	}
	c->ts[c->nr] = rec->ts;
	c->recv[c->nr] = c->now;
	c->nr++;
}

static void b_page(void *arg, const struct hvt_msg *m)
{
	struct bcol *c = arg;

	if (m->type != HVT_MSG_PAGE || m->req != c->sub)
		return;
	c->now = h_now_ns();
	c->pages++;
	c->lost += m->u.page.lost_events;
	if (m->u.page.dropped_events)
		t_fail("hvtraced dropped pages for this reader");
	h_decode_page(c->tep, &m->u.page, b_record, c);
}

/* Formats, then a subscription whose pages go to col. */
static void b_subscribe(struct e_guest *g)
{
	struct tep_event *ev;
	struct hvt_msg m, r;

	if (col.tep)
		tep_free(col.tep);
	col.tep = h_tep(e_dc, g->remote);
	ev = tep_find_event_by_name(col.tep, "user_events", "hvt_seq");
	if (!ev)
		t_fail("no hvt_seq format");
	col.id = ev->id;
	col.seq = tep_find_field(ev, "seq");
	if (!col.seq)
		t_fail("no seq field in hvt_seq");
	e_page_hook = b_page;
	e_page_hook_arg = &col;
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_SUBSCRIBE;
	m.chan = g->remote;
	m.u.subscribe.cpu = -1;
	t_ok(hvtrace_daemon_call(e_dc, &m, &r, 10000, e_seq_dispatch, NULL));
	t_eq(r.u.result.status, 0);
	col.sub = r.u.result.id;
}

static uint64_t cpu_ns(pid_t pid)
{
	char path[64];
	unsigned long long ns = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	f = fopen(path, "r");
	if (!f || fscanf(f, "%llu", &ns) != 1)
		t_fail("cannot read %s", path);
	fclose(f);
	return ns;
}

/* hvtraced's CPU use over @ms, in percent of one CPU. */
static double idle_cpu(int ms)
{
	pid_t pid = e_daemon_pid();
	uint64_t c0, t0, c1, t1;

	c0 = cpu_ns(pid);
	t0 = h_now_ns();
	e_seq_collect(NULL, ms, 0);
	c1 = cpu_ns(pid);
	t1 = h_now_ns();
	return 100.0 * (double)(c1 - c0) / (double)(t1 - t0);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void latency(struct e_guest *g, const char *name)
{
	static uint8_t buf[HVT_PROTO_MAX_TS * 8];
	uint64_t *lat, err = UINT64_MAX, bells, rings;
	struct hvt_msg m, r;
	size_t i, j, n;

	/* Doorbells over the run, and how many came by the guest's ivshmem
	 * doorbell rather than through its agent (asked outside the
	 * samples: a TEXT request drops the pages it meets). */
	bells = h_info_u64(e_dc, g->remote, "wake_doorbells");
	rings = h_info_u64(e_dc, g->remote, "wake_bell_rings");
	e_seq_collect(NULL, 1000, 0); /* settle */
	col.nr = 0;
	col.keep = true;
	e_seq_collect(NULL, LAT_SECONDS * 1000, 0);
	col.keep = false;
	bells = h_info_u64(e_dc, g->remote, "wake_doorbells") - bells;
	rings = h_info_u64(e_dc, g->remote, "wake_bell_rings") - rings;
	n = col.nr;
	if (n < LAT_SECONDS * LAT_RATE / 2)
		t_fail("%s: only %zu latency samples", name, n);
	lat = calloc(n, sizeof(*lat));
	for (i = 0; i < n; i += HVT_PROTO_MAX_TS) {
		size_t k = n - i > HVT_PROTO_MAX_TS ? HVT_PROTO_MAX_TS : n - i;

		for (j = 0; j < k; j++)
			hvt_msg_put_u64(buf + 8 * j, col.ts[i + j]);
		memset(&m, 0, sizeof(m));
		m.type = HVT_MSG_TO_HOST;
		m.chan = g->remote;
		m.u.to_host.ts.ptr = buf;
		m.u.to_host.ts.count = (uint32_t)k;
		t_ok(hvtrace_daemon_call(e_dc, &m, &r, 10000, e_seq_dispatch,
				      NULL));
		t_eq(r.type, HVT_MSG_TO_HOST);
		err = r.u.to_host_reply.err_ns;
		for (j = 0; j < k; j++) {
			uint64_t w = hvt_msg_u64_at(&r.u.to_host_reply.ns,
						    (uint32_t)j);

			lat[i + j] =
				col.recv[i + j] > w ? col.recv[i + j] - w : 0;
		}
	}
	if (getenv("HVT_E2E_SAMPLES")) {
		/* For a look at the path: "write arrival" per sample, host
		 * CLOCK_MONOTONIC ns. */
		FILE *f = fopen(getenv("HVT_E2E_SAMPLES"), "a");

		for (i = 0; f && i < n; i++)
			fprintf(f, "%s %llu %llu\n", name,
				(unsigned long long)(col.recv[i] - lat[i]),
				(unsigned long long)col.recv[i]);
		if (f)
			fclose(f);
	}
	qsort(lat, n, sizeof(*lat), cmp_u64);
	printf("%s: %zu samples at %d/s: min %.0f us, p50 %.0f us, p99 %.0f "
	       "us, max %.0f us (clock error bound %.1f us)\n",
	       name, n, LAT_RATE, lat[0] / 1e3, lat[n / 2] / 1e3,
	       lat[n * 99 / 100] / 1e3, lat[n - 1] / 1e3, err / 1e3);
	printf("BENCH e2e_latency_p50_%s %.0f us\n", name, lat[n / 2] / 1e3);
	printf("BENCH e2e_latency_p99_%s %.0f us\n", name,
	       lat[n * 99 / 100] / 1e3);
	printf("%s: %llu doorbells, %llu of them rung on the ivshmem "
	       "doorbell, the rest relayed by the agent\n",
	       name, (unsigned long long)bells, (unsigned long long)rings);
	if (!strcmp(name, cfg_name[0])) {
		printf("BENCH e2e_clock_error_bound %.1f us\n", err / 1e3);
		printf("BENCH e2e_wake_relay_free_share_default %.0f %%\n",
		       bells ? 100.0 * (double)(rings < bells ? rings : bells) /
				       (double)bells
			     : 0.0);
	}
	fflush(stdout);
	free(lat);
}

int main(void)
{
	struct e_guest g;
	const char *l;
	char run[512];
	double pct, secs;
	uint64_t bells, armings, wrote, dropped, lost;
	unsigned int c;

	e_init(NULL);
	snprintf(run, sizeof(run),
		 "wake_floor 400 && "
		 "ue_seq --tag tput --threads %d --count %d --wait-enable "
		 "600000 --phase2 %d --rate2 %d && ue_seq --tag lat "
		 "--threads 1 --duration 600 --rate %d --hold",
		 TPUT_THREADS, TPUT_COUNT, STEADY_COUNT, STEADY_RATE, LAT_RATE);
	e_guest_start(&g, "bench", run, NULL);
	e_wait_event(&g, "hvt_seq", 60000);
	/* (printed before ue_seq started: the line is in the console) */
	l = e_console_line(&g, "wake_floor: ", "wake_floor: error", 10000);
	if (!l)
		t_fail("the guest printed no wake_floor line");
	printf("guest wake floor: %s\n", l);
	printf("BENCH e2e_guest_wake_p50 %llu us\n", e_kv(l, "p50_us"));
	printf("BENCH e2e_guest_wake_p99 %llu us\n", e_kv(l, "p99_us"));
	fflush(stdout);

	/* Idle: attached, nothing enabled. */
	e_seq_collect(NULL, 1000, 0);
	pct = idle_cpu(5000);
	printf("BENCH e2e_idle_cpu_unsubscribed %.3f %%\n", pct);
	for (c = 0; c < NR_CFG; c++) {
		if (c) {
			e_daemon_restart(cfg_args[c]);
			e_guest_attach(&g);
			e_wait_event(&g, "hvt_seq", 30000);
		}
		b_subscribe(&g);
		e_seq_collect(NULL, 1000, 0);
		pct = idle_cpu(5000);
		printf("BENCH e2e_idle_cpu_%s %.3f %%\n", cfg_name[c], pct);
		fflush(stdout);
	}

	/* Throughput, with the default daemon. */
	e_daemon_restart(cfg_args[0]);
	e_guest_attach(&g);
	e_wait_event(&g, "hvt_seq", 30000);
	b_subscribe(&g);
	bells = h_info_u64(e_dc, g.remote, "wake_doorbells");
	e_enable(&g, "hvt_seq", true);
	while (!(l = e_console_line(&g, "ue_seq: phase1 ", "ue_seq: error",
				    0)))
		e_seq_collect(NULL, 200, 0);
	printf("guest: phase1 %s\n", l);
	wrote = e_kv(l, "wrote");
	dropped = e_kv(l, "dropped");
	e_drain(&g, e_seq_dispatch, NULL);
	/* From the first event's write to the last one's arrival. */
	secs = (double)(col.last_ns - e_to_host(&g, col.first_ts, NULL)) / 1e9;
	printf("throughput: %llu events in %.3f s, %llu lost (guest: wrote "
	       "%llu, dropped %llu)\n",
	       (unsigned long long)col.tput, secs, (unsigned long long)col.lost,
	       (unsigned long long)wrote, (unsigned long long)dropped);
	printf("BENCH e2e_throughput %.0f events/s\n",
	       secs > 0 ? (double)col.tput / secs : 0);
	/* The writers' drops reach the reader as the pages' lost counts:
	 * one number, which must close the account. */
	if (col.tput + col.lost != wrote + dropped)
		t_fail("throughput: %llu read + %llu lost is not the %llu "
		       "written + %llu dropped",
		       (unsigned long long)col.tput,
		       (unsigned long long)col.lost, (unsigned long long)wrote,
		       (unsigned long long)dropped);
	printf("BENCH e2e_throughput_lost %llu events\n",
	       (unsigned long long)col.lost);
	/* One doorbell per arming and CPU buffer at most: the daemon arms
	 * when it has read everything, so a stream rings about once per
	 * drained batch. */
	bells = h_info_u64(e_dc, g.remote, "wake_doorbells") - bells;
	armings = h_info_u64(e_dc, g.remote, "wake_armings");
	printf("doorbells during the stream: %llu (%llu armings, %llu "
	       "sleeps in all)\n",
	       (unsigned long long)bells, (unsigned long long)armings,
	       (unsigned long long)h_info_u64(e_dc, g.remote, "wake_sleeps"));
	printf("BENCH e2e_wake_doorbells_per_s %.0f doorbells/s\n",
	       secs > 0 ? (double)bells / secs : 0);
	printf("BENCH e2e_wake_events_per_doorbell %.0f events\n",
	       bells ? (double)col.tput / (double)bells : 0);
	fflush(stdout);

	/* A steady stream: --phase2 at --rate2, once hvt_seq_go is on. */
	lost = col.lost;
	bells = h_info_u64(e_dc, g.remote, "wake_doorbells");
	e_enable(&g, "hvt_seq_go", true);
	while (!(l = e_console_line(&g, "ue_seq: done ", "ue_seq: error", 0)))
		e_seq_collect(NULL, 200, 0);
	printf("guest: %s\n", l);
	wrote = e_kv(l, "wrote") - wrote;
	dropped = e_kv(l, "dropped") - dropped;
	e_drain(&g, e_seq_dispatch, NULL);
	lost = col.lost - lost;
	secs = (double)(col.steady_last_ns -
			e_to_host(&g, col.steady_first_ts, NULL)) /
	       1e9;
	bells = h_info_u64(e_dc, g.remote, "wake_doorbells") - bells;
	armings = h_info_u64(e_dc, g.remote, "wake_armings") - armings;
	printf("steady: %llu events in %.3f s, %llu lost (guest: wrote %llu, "
	       "dropped %llu); %llu doorbells, %llu armings\n",
	       (unsigned long long)col.steady, secs, (unsigned long long)lost,
	       (unsigned long long)wrote, (unsigned long long)dropped,
	       (unsigned long long)bells, (unsigned long long)armings);
	if (col.steady + lost != wrote + dropped)
		t_fail("steady: %llu read + %llu lost is not the %llu written "
		       "+ %llu dropped",
		       (unsigned long long)col.steady,
		       (unsigned long long)lost, (unsigned long long)wrote,
		       (unsigned long long)dropped);
	/* Each arming lets each CPU buffer ring once; the arming that
	 * stood when the stream began (the daemon had drained the flood
	 * and slept) rings inside it too. */
	if (bells > (armings + 1) * TPUT_THREADS)
		t_fail("steady: %llu doorbells for %llu armings (and the one "
		       "standing before) of %d CPU buffers",
		       (unsigned long long)bells,
		       (unsigned long long)armings, TPUT_THREADS);
	printf("BENCH e2e_steady_events_per_s %.0f events/s\n",
	       secs > 0 ? (double)col.steady / secs : 0);
	printf("BENCH e2e_steady_lost %llu events\n", (unsigned long long)lost);
	printf("BENCH e2e_steady_doorbells_per_s %.1f doorbells/s\n",
	       secs > 0 ? (double)bells / secs : 0);
	printf("BENCH e2e_steady_armings_per_s %.1f armings/s\n",
	       secs > 0 ? (double)armings / secs : 0);
	fflush(stdout);

	/* Latency at a low rate, per poll limit. */
	for (c = 0; c < NR_CFG; c++) {
		if (c) {
			e_daemon_restart(cfg_args[c]);
			e_guest_attach(&g);
			e_wait_event(&g, "hvt_seq", 30000);
			b_subscribe(&g);
			e_enable(&g, "hvt_seq", true);
		}
		latency(&g, cfg_name[c]);
	}
	tep_free(col.tep);
	free(col.ts);
	free(col.recv);
	e_guest_stop(&g);
	h_pass();
	return 0;
}
