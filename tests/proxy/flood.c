// SPDX-License-Identifier: MIT
/*
 * hvtraced stays bounded under a registration flood from one remote while
 * another streams.  A raw agent-protocol peer (a stand-in for a hostile
 * guest: real area, real HELLO) sends, reading every reply:
 *
 *   A  100000 REGISTERs, each on a new client channel (the same 32 event
 *      definitions over and over): the first max_channels are accepted,
 *      every other one is refused with EMFILE;
 *   B  100000 REGISTERs of new (channel, event) pairs on the accepted
 *      channels (32 more definitions): accepted up to max_registrations
 *      held in all, every other one refused with ENOSPC;
 *   C  100000 CLIENT_GONEs, one per channel of A: afterwards the remote
 *      holds no client, and a new channel may register again.
 *
 * Meanwhile a good agent's workload writes 200000 events (its rings hold
 * them all) and a tool reads them: every one arrives, none lost or
 * dropped, and the daemon delivers them while the flood goes on (the
 * count that arrived before the flood ended is printed).  The daemon's RSS
 * (VmRSS) is sampled all along; it must not grow by more than 32 MiB.
 * The caps are the daemon's defaults (Kconfig HVT_HOSTD_MAX_CHANNELS,
 * HVT_HOSTD_MAX_REGISTRATIONS).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event-parse.h>

#include <hvtrace.h>
#include <hvtrace/config.h>

#include "harness.h"
#include "hvtrace-guest.h"

#define COUNT		200000
#define FLOOD		100000u
#define NR_DEFS		32u
#define RSS_BOUND_KIB	(32u * 1024u)

#define MAX_CH		((uint32_t)CONFIG_HVT_HOSTD_MAX_CHANNELS)
#define MAX_REGS	((uint32_t)CONFIG_HVT_HOSTD_MAX_REGISTRATIONS)

_Static_assert(CONFIG_HVT_HOSTD_MAX_CHANNELS < FLOOD,
	       "phase A must go past the channel cap");
_Static_assert(CONFIG_HVT_HOSTD_MAX_REGISTRATIONS <
		       CONFIG_HVT_HOSTD_MAX_CHANNELS * (NR_DEFS + 1),
	       "phase B must go past the registration cap");
_Static_assert((uint64_t)CONFIG_HVT_HOSTD_MAX_CHANNELS * NR_DEFS >= FLOOD,
	       "phase B pairs must be distinct");

/* What the flooding peer saw, per phase: ok, the expected refusal,
 * anything else. */
struct tally {
	uint32_t ok[3], refused[3], other[3];
	int32_t first_other;
	char text[2][160];	/* the refusal texts of A and B */
};

struct good {
	int id;
	uint32_t sub;
	uint64_t events, lost, dropped_pages;
};

static struct tep_handle *tep;

static void count_rec(void *arg, struct tep_handle *t, struct tep_event *ev,
		      struct tep_record *rec)
{
	struct good *g = arg;

	if (ev && ev->id == g->id)
		g->events++;
}

static void take(struct good *g, const struct hvt_msg *m)
{
	if (m->type != HVT_MSG_PAGE || m->req != g->sub)
		return;
	g->lost += m->u.page.lost_events;
	g->dropped_pages = m->u.page.dropped_pages;
	h_decode_page(tep, &m->u.page, count_rec, g);
}

static unsigned long rss_kib(pid_t pid)
{
	char path[64], line[256];
	unsigned long kib = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		t_fail("%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %lu kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

/* --- the flooding peer (a child process) -------------------------------- */

static int fl_fd;
static struct hvt_proto_dec fl_dec;
static uint8_t fl_dbuf[2 * HVT_PROTO_MAX_FRAME];

static int fl_connect(const char *area)
{
	int fd = h_raw_agent("flood", area);

	fcntl(fd, F_SETFL, O_NONBLOCK);
	return fd;
}

/* Request k of the whole flood (0 .. 3 * FLOOD - 1). */
static void fl_request(uint32_t k, struct hvt_msg *m, char *def, size_t size)
{
	uint32_t i = k % FLOOD;

	memset(m, 0, sizeof(*m));
	m->req = k + 10;
	if (k < FLOOD) {
		m->type = HVT_MSG_REGISTER;
		m->chan = i + 1;
		snprintf(def, size, "flood_%u u32 a", i % NR_DEFS);
	} else if (k < 2 * FLOOD) {
		m->type = HVT_MSG_REGISTER;
		m->chan = i % MAX_CH + 1;
		snprintf(def, size, "flood_%u u32 a",
			 NR_DEFS + (i / MAX_CH) % NR_DEFS);
	} else {
		m->type = HVT_MSG_CLIENT_GONE;
		m->chan = i + 1;
		return;
	}
	m->u.reg.def.ptr = def;
	m->u.reg.def.len = (uint32_t)strlen(def);
}

static void fl_reply(struct tally *t, const struct hvt_msg *r, uint32_t *got)
{
	uint32_t k, phase;
	int want;

	if (!(r->flags & HVT_PF_REPLY) || r->req < 10 ||
	    r->req - 10 >= 3 * FLOOD)
		return;		/* HELLO reply, notices, pings */
	k = r->req - 10;
	phase = k / FLOOD;
	(*got)++;
	want = phase == 0 ? -EMFILE : -ENOSPC;
	if (r->u.result.status == 0) {
		t->ok[phase]++;
	} else if (r->u.result.status == want && phase < 2) {
		if (!t->refused[phase]++)
			snprintf(t->text[phase], sizeof(t->text[phase]),
				 "%.*s", (int)r->u.result.text.len,
				 r->u.result.text.ptr);
	} else {
		if (!t->other[0] && !t->other[1] && !t->other[2])
			t->first_other = r->u.result.status;
		t->other[phase]++;
	}
}

/*
 * At most FL_WINDOW requests in flight: the daemon queues at most 1 MiB
 * of replies for an agent and drops what a peer that does not drain
 * provokes beyond that, so a peer that wants every answer paces itself.
 */
#define FL_WINDOW	2000u

static bool fl_may_send(uint32_t sent, uint32_t got)
{
	return sent < 3 * FLOOD && sent - got < FL_WINDOW &&
	       (sent < 2 * FLOOD || got >= 2 * FLOOD);
}

static void fl_run(int out)
{
	static uint8_t sbuf[256 * 1024];
	struct tally t = { 0 };
	uint32_t sent = 0, got = 0, slen = 0, soff = 0, last_got = 0;
	uint64_t last_ns = h_now_ns();
	char area[256];

	snprintf(area, sizeof(area), "/dev/shm/hvtrace-t%d-flood",
		 (int)getpid());
	fl_fd = fl_connect(area);
	hvt_proto_dec_init(&fl_dec, fl_dbuf, sizeof(fl_dbuf),
			   HVT_PROTO_MAX_FRAME);
	while (got < 3 * FLOOD) {
		struct pollfd p = { .fd = fl_fd, .events = POLLIN };
		struct hvt_frame f;
		struct hvt_msg r;
		uint8_t *room;
		ssize_t n;

		/* Refill the send buffer; phase C waits for B's replies,
		 * so that the CLIENT_GONEs find what B left. */
		if (soff == slen) {
			slen = soff = 0;
			while (fl_may_send(sent, got) &&
			       slen < sizeof(sbuf) - 4096) {
				struct hvt_msg m;
				char def[64];
				int len;

				fl_request(sent, &m, def, sizeof(def));
				len = hvt_msg_encode(sbuf + slen,
						     sizeof(sbuf) - slen, &m);
				if (len <= 0)
					t_fail("encode: %d", len);
				slen += (uint32_t)len;
				sent++;
			}
		}
		if (soff < slen)
			p.events |= POLLOUT;
		if (got != last_got) {
			last_got = got;
			last_ns = h_now_ns();
		} else if (h_now_ns() - last_ns > 30000000000ull) {
			t_fail("flood: no reply for 30 s (%u of %u replies)",
			       got, 3 * FLOOD);
		}
		if (poll(&p, 1, 1000) < 0)
			t_fail("flood: poll: %s", strerror(errno));
		if (p.revents & POLLOUT) {
			n = send(fl_fd, sbuf + soff, slen - soff,
				 MSG_NOSIGNAL);
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				t_fail("flood: send: %s", strerror(errno));
			if (n > 0)
				soff += (uint32_t)n;
		}
		if (!(p.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		n = hvt_proto_dec_room(&fl_dec, &room);
		n = recv(fl_fd, room, (size_t)n, 0);
		if (n == 0)
			t_fail("flood: the daemon hung up (%u of %u replies)",
			       got, 3 * FLOOD);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			t_fail("flood: recv: %s", strerror(errno));
		}
		hvt_proto_dec_added(&fl_dec, (uint32_t)n);
		while (hvt_proto_dec_next(&fl_dec, &f) == 1)
			if (!hvt_msg_decode(&f, &r, NULL))
				fl_reply(&t, &r, &got);
	}
	if (write(out, &t, sizeof(t)) != (ssize_t)sizeof(t))
		t_fail("flood: write: %s", strerror(errno));
	_exit(0);
}

/* --- the test ------------------------------------------------------------ */

int main(void)
{
	struct hvtrace_daemon *dc = h_start(NULL);
	struct hvt_remote_rec rec;
	struct good g = { 0 };
	struct tally t;
	struct h_agent a;
	struct h_proc w;
	struct hvt_msg m;
	unsigned long rss0, rss, rss_max;
	const char *line;
	char text[256], count[16];
	uint64_t deadline, t0, during = 0;
	int p[2], st, wrote = -1, failed = -1, ret;
	pid_t fl;
	bool fl_done = false, w_done = false;

	/* 64 MiB: the workload's burst (about 10 MB) fits its rings
	 * however slowly they are read, so every event must arrive. */
	h_agent_start(&a, "good", "--size 64M");
	g.sub = h_subscribe(dc, a.remote, 0);
	snprintf(count, sizeof(count), "%d", COUNT);
	h_proc_start(&w, "guest/workloads/ue_writer", "--socket", a.sock,
		     "--count", count, "--wait-enable", "30000", NULL);
	line = h_proc_line(&w, 15000);
	if (sscanf(line, "registered id=%d", &g.id) != 1)
		t_fail("workload: %s", line);
	tep = h_tep(dc, a.remote);
	rss0 = rss_max = rss_kib(h_dpid);

	t_ok(pipe(p));
	fl = fork();
	if (fl < 0)
		t_fail("fork: %s", strerror(errno));
	if (!fl) {
		close(p[0]);
		fl_run(p[1]);
	}
	close(p[1]);
	/* The good remote streams while the flood runs. */
	t_eq(h_result(dc, HVT_MSG_ENABLE, a.remote, 1, "hvt_e2e", text,
		      sizeof(text)),
	     0);

	t0 = h_now_ns();
	deadline = t0 + 240000000000ull;	/* hang guard */
	while (!(fl_done && w_done && g.events >= COUNT)) {
		if (h_now_ns() > deadline)
			t_fail("stuck: flood %s, workload %s, %llu of %d "
			       "events",
			       fl_done ? "done" : "running",
			       w_done ? "done" : "running",
			       (unsigned long long)g.events, COUNT);
		ret = hvtrace_daemon_recv(dc, &m, 100);
		if (ret < 0)
			t_fail("%s", hvtrace_last_error());
		if (ret == 1)
			take(&g, &m);
		rss = rss_kib(h_dpid);
		if (rss > rss_max)
			rss_max = rss;
		if (!fl_done && waitpid(fl, &st, WNOHANG) == fl) {
			if (!WIFEXITED(st) || WEXITSTATUS(st))
				t_fail("the flooding peer failed (status %d)",
				       st);
			fl_done = true;
			during = g.events;
			printf("flood: %.1f s for %u requests\n",
			       (double)(h_now_ns() - t0) / 1e9, 3 * FLOOD);
		}
		if (!w_done && g.events >= COUNT) {
			line = h_proc_line(&w, 15000);	/* "enabled" */
			line = h_proc_line(&w, 15000);
			if (sscanf(line, "done wrote=%d failed=%d", &wrote,
				   &failed) != 2)
				t_fail("workload: %s", line);
			t_eq(h_proc_wait(&w, 10000), 0);
			w_done = true;
		}
	}
	if (read(p[0], &t, sizeof(t)) != (ssize_t)sizeof(t))
		t_fail("no tally from the flooding peer");

	printf("flood A (new channels): %u ok, %u EMFILE, %u other\n",
	       t.ok[0], t.refused[0], t.other[0]);
	printf("  refusal: %s\n", t.text[0]);
	printf("flood B (new registrations): %u ok, %u ENOSPC, %u other\n",
	       t.ok[1], t.refused[1], t.other[1]);
	printf("  refusal: %s\n", t.text[1]);
	printf("flood C (clients gone): %u ok, %u other\n", t.ok[2],
	       t.other[2]);
	printf("good remote: %llu of %d events, %llu lost, %llu pages "
	       "dropped\n",
	       (unsigned long long)g.events, COUNT,
	       (unsigned long long)g.lost,
	       (unsigned long long)g.dropped_pages);
	printf("good events delivered while the flood ran: %llu\n",
	       (unsigned long long)during);
	printf("hvtraced VmRSS: %lu KiB before, %lu KiB at most (bound: "
	       "+%u KiB)\n",
	       rss0, rss_max, RSS_BOUND_KIB);
	if (t.other[0] || t.other[1] || t.other[2])
		t_fail("unexpected replies (first status %d)", t.first_other);
	t_equ(t.ok[0], MAX_CH);
	t_equ(t.refused[0], FLOOD - MAX_CH);
	t_equ(t.ok[1], MAX_REGS - MAX_CH);
	t_equ(t.refused[1], FLOOD - (MAX_REGS - MAX_CH));
	t_equ(t.ok[2], FLOOD);
	t_assert(strstr(t.text[0], "--max-channels"));
	t_assert(strstr(t.text[1], "--max-registrations"));
	t_eq(wrote, COUNT);
	t_eq(failed, 0);
	t_equ(g.events, COUNT);
	t_equ(g.lost, 0);
	t_equ(g.dropped_pages, 0);
	if (rss_max > rss0 + RSS_BOUND_KIB)
		t_fail("hvtraced grew by %lu KiB", rss_max - rss0);

	/* Everything the flood held is gone, the refusals are counted. */
	h_remote(dc, "flood", &rec);
	t_equ(rec.nr_clients, 0);
	{
		char *info = h_text(dc, rec.id, HVT_TEXT_INFO), want[64];

		snprintf(want, sizeof(want), "registrations_refused: %u\n",
			 t.refused[0] + t.refused[1]);
		if (!strstr(info, want) || !strstr(info, "registrations: 0 "))
			t_fail("daemon info does not count the flood: %s",
			       info);
		free(info);
	}
	h_remote(dc, "good", &rec);
	t_equ(rec.state, HVT_REMOTE_CONNECTED);
	tep_free(tep);
	hvtrace_daemon_close(dc);
	h_pass();
	return 0;
}
