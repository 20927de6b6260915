// SPDX-License-Identifier: MIT
/*
 * hvtrace-agent: time-sync answers through the area's control page.
 *
 * The host's round trips over the control channel (PING/PONG) cost tens
 * of microseconds under TCG, and their legs are uneven; through the
 * memory both sides already share, one exchange costs what it takes the
 * host to see a store of the guest's and back.  The agent stays one
 * poll() loop that sleeps while idle, so the channel wakes it: a host that
 * wants answers through shared memory posts a request on the control page
 * (sync_req != the header's sync_seq) before it sends a PING.  Having sent
 * the PONG, the agent then spins on the control page and answers every
 * request it sees (hvt_area_sync_pending(), its clock read after that
 * load, hvt_area_sync_answer()), until no new request came for
 * SHMSYNC_QUIET_NS (SHMSYNC_FIRST_NS for the first after the posted one,
 * which waits for the PONG to reach the host) or SHMSYNC_MAX_NS passed:
 * the host runs its exchanges in that window.  A host that posts nothing (an older one, or one
 * without the control page) never makes the agent spin.
 *
 * The control page is the host's, and hostile: the request is an opaque
 * token echoed back, and nothing the host stores can make the spin last
 * longer than SHMSYNC_MAX_NS.
 */
#include <sys/mman.h>
#include <time.h>

#include <hvtrace/abi.h>
#include <hvtrace/ring_buffer.h>

#include "agent.h"

#define SHMSYNC_QUIET_NS	5000000ull	/* 5 ms without a request */
#define SHMSYNC_FIRST_NS	25000000ull	/* for the first one: the PONG
						 * may take milliseconds to
						 * reach the host's loop */
#define SHMSYNC_MAX_NS		50000000ull	/* 50 ms in all, at most */
#define SHMSYNC_MAP		(HVT_CONTROL_OFFSET + 4096)

static void *shm_map;
static bool shm_failed;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The area's clock, read after every earlier load (the request's). */
static uint64_t shmsync_clock(uint32_t clock_id)
{
#if defined(__x86_64__)
	if (clock_id == HVT_CLOCK_COUNTER) {
		uint32_t lo, hi;

		__asm__ __volatile__("lfence; rdtsc" : "=a"(lo), "=d"(hi)
				     :: "memory");
		return ((uint64_t)hi << 32) | lo;
	}
#endif
	return agent_clock_read(clock_id);
}

static void *shmsync_area(struct agent *ag)
{
	void *p;

	if (shm_map || shm_failed)
		return shm_map;
	if (ag->area_fd < 0 || ag->area_size < SHMSYNC_MAP) {
		agent_log("no area mapping for time sync through the control "
			  "page; the host falls back to its pings");
		shm_failed = true;
		return NULL;
	}
	p = mmap(NULL, SHMSYNC_MAP, PROT_READ | PROT_WRITE, MAP_SHARED,
		 ag->area_fd, 0);
	if (p == MAP_FAILED) {
		agent_log("cannot map the area's control page for time sync "
			  "(%m); the host falls back to its pings");
		shm_failed = true;
		return NULL;
	}
	shm_map = p;
	return p;
}

unsigned int shmsync_serve(struct agent *ag)
{
	uint64_t req, start, last, now;
	unsigned int answered = 0;
	void *area = shmsync_area(ag);

	if (!area || !hvt_area_sync_pending(area, &req)) {
		agent_dbg("PING without a time-sync request on the control "
			  "page");
		return 0;
	}
	start = last = now_ns();
	for (;;) {
		if (hvt_area_sync_pending(area, &req)) {
			hvt_area_sync_answer(area, req,
					     shmsync_clock(ag->info.clock_id));
			answered++;
			last = now_ns();
			continue;
		}
		now = now_ns();
		if (now - last > (answered > 1 ? SHMSYNC_QUIET_NS :
						 SHMSYNC_FIRST_NS) ||
		    now - start > SHMSYNC_MAX_NS)
			break;
		__asm__ __volatile__("" ::: "memory");
#if defined(__x86_64__)
		__builtin_ia32_pause();
#elif defined(__aarch64__)
		__asm__ __volatile__("yield");
#endif
	}
	if (!ag->shm_answers && answered > 1)
		agent_log("answering the host's time sync through the area's "
			  "control page");
	ag->shm_answers += answered;
	return answered;
}
