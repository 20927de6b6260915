// SPDX-License-Identifier: MIT
/*
 * hvt-hyp-test: attaching to the rig's trace area and reading it through
 * libhvtrace's public API (hvtrace_area_open, hvtrace_cpu_read_page).
 *
 * The area lives at HVT_HYP_AREA_OFFSET in the QEMU guest-RAM file; the
 * library maps it read-only and, for the owner, the control page
 * read-write.  Pages come back from the library already validated and
 * self-contained; they are walked with the shared page walker and each
 * record is decoded into struct hyp_ev only after its length was checked
 * against the event's record size.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <hvtrace/page.h>

#include "hyp_tool.h"

uint64_t rig_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void rig_sleep_us(unsigned int us)
{
	struct timespec ts = { us / 1000000, (long)(us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

/* HVT_HYP_DEBUG=1: describe every page the library hands over. */
static int rig_debug = -1;

int rig_open(struct hyp_rig *r, const char *path, bool owner, double wait_s)
{
	uint64_t deadline = rig_now_ns() + (uint64_t)(wait_s * 1e9);
	int ret, fd;

	if (rig_debug < 0)
		rig_debug = getenv("HVT_HYP_DEBUG") != NULL;
	memset(r, 0, sizeof(*r));
	r->path = path;
	r->owner = owner;
	for (;;) {
		ret = hvtrace_area_open(path, HVT_HYP_AREA_OFFSET,
					HVT_HYP_AREA_SIZE,
					owner ? HVTRACE_OPEN_CONTROL : 0,
					&r->a);
		if (ret != -EAGAIN && ret != -ENOENT && ret != -EINVAL)
			break;
		/* Not formatted yet (or the file is still being sized):
		 * the hypervisor formats the area a moment after boot. */
		if (rig_now_ns() > deadline)
			break;
		rig_sleep_us(2000);
	}
	if (ret) {
		fprintf(stderr, "hvt-hyp-test: cannot attach to the trace area in %s at 0x%x: %s\n",
			path, HVT_HYP_AREA_OFFSET, hvtrace_last_error());
		return ret;
	}
	hvtrace_area_get_info(r->a, &r->info);
	if (r->info.writer_kind != HVT_WRITER_HYP) {
		fprintf(stderr, "hvt-hyp-test: %s holds a trace area of writer kind %u, not the hypervisor's (%u)\n",
			path, r->info.writer_kind, HVT_WRITER_HYP);
		hvtrace_area_close(r->a);
		r->a = NULL;
		return -EINVAL;
	}
	r->page = malloc(r->info.subbuf_size);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		void *p = mmap(NULL, HVT_HYP_AREA_SIZE, PROT_READ, MAP_SHARED,
			       fd, HVT_HYP_AREA_OFFSET);

		if (p != MAP_FAILED)
			r->ro = p;
		close(fd);
	}
	if (!r->page || !r->ro) {
		fprintf(stderr, "hvt-hyp-test: cannot map %s read-only\n", path);
		rig_close(r);
		return -ENOMEM;
	}
	return 0;
}

void rig_close(struct hyp_rig *r)
{
	hvtrace_area_close(r->a);
	free(r->page);
	if (r->ro)
		munmap((void *)r->ro, HVT_HYP_AREA_SIZE);
	r->a = NULL;
	r->page = NULL;
	r->ro = NULL;
}

/* Enable a comma-separated list of event names, or "all". */
int rig_enable(struct hyp_rig *r, const char *list)
{
	unsigned int i;
	char *copy, *tok, *save = NULL;
	int ret = 0;

	if (!list || !strcmp(list, "all")) {
		for (i = 0; i < hvt_hypevents_count(); i++) {
			ret = hvtrace_area_set_event(r->a, i, true);
			if (ret)
				return ret;
		}
		return 0;
	}
	for (i = 0; i < hvt_hypevents_count(); i++)
		hvtrace_area_set_event(r->a, i, false);
	copy = strdup(list);
	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		const struct hvt_hypevent *e = hvt_hypevents_by_name(tok);

		if (!e) {
			fprintf(stderr, "hvt-hyp-test: no hypervisor event '%s' (see hvtrace hyp formats)\n",
				tok);
			ret = -ENOENT;
			break;
		}
		ret = hvtrace_area_set_event(r->a, e->index, true);
		if (ret)
			break;
	}
	free(copy);
	return ret;
}

static void rig_decode(struct hyp_ev *ev, const uint8_t *rec, uint32_t len)
{
	const struct hvt_hypevent *e;
	uint16_t id;

	ev->rec = rec;
	ev->len = len;
	ev->type = -1;
	if (len < sizeof(struct hvt_common_fields))
		return;
	memcpy(&id, rec, sizeof(id));
	e = hvt_hypevents_by_id(id);
	if (!e || len < e->rec_size || e->rec_size > sizeof(ev->u))
		return;
	memcpy(&ev->u, rec, e->rec_size);
	ev->type = (int)e->index;
}

/* Read up to @max pages of one CPU; returns events delivered or < 0. */
static int rig_read_cpu(struct hyp_rig *r, int cpu, unsigned int max,
			hyp_ev_fn fn, void *ctx)
{
	const struct hvt_cpu_meta *m = rig_meta(r, cpu);
	unsigned int pages;
	int total = 0, ret;

	/*
	 * A commit word with offset 0 means the writer has never written
	 * on this CPU (any later page starts with an event).  Nothing to
	 * read then, and libhvtrace's reader must not look yet: it would
	 * take the empty page's time_stamp (0, written only with the first
	 * event) as the page's start time, and every timestamp of that page
	 * would come out shifted (see docs/hyp.md).
	 */
	/* Acquire: pairs with the writer's commit store (W1). */
	if (m && !HVT_WORD_OFFSET(__atomic_load_n(&m->write,
						  __ATOMIC_ACQUIRE)))
		return 0;
	for (pages = 0; pages < max; pages++) {
		struct hvtrace_page_info info;
		struct hvt_page_iter it;
		uint64_t ts, commit;

		ret = hvtrace_cpu_read_page(r->a, cpu, r->page,
					    r->info.subbuf_size, &info);
		if (ret < 0) {
			fprintf(stderr, "hvt-hyp-test: reading cpu%d: %s\n", cpu,
				hvtrace_last_error());
			return ret;
		}
		if (ret == 0)
			break;
		if (rig_debug)
			fprintf(stderr, "hvt-hyp-test: cpu%d page seq %u entries %u size %u lost %llu ts %llu flags %u\n",
				cpu, info.seq, info.entries, info.size,
				(unsigned long long)info.lost_events,
				(unsigned long long)info.first_ts, info.flags);
		if (info.lost_events) {
			r->lost[cpu] += info.lost_events;
			ret = fn(ctx, NULL, cpu, info.lost_events);
			if (ret < 0)
				return ret;
		}
		memcpy(&ts, r->page, 8);
		memcpy(&commit, r->page + HVT_PAGE_COMMIT_OFF, 8);
		commit &= HVT_COMMIT_SIZE_MASK;
		if (commit > r->info.subbuf_size - HVT_PAGE_HDR_SIZE)
			return -EBADMSG;	/* the library never says so */
		hvt_page_iter_init(&it, r->page + HVT_PAGE_HDR_SIZE,
				   (uint32_t)commit, ts);
		while ((ret = hvt_page_next(&it)) > 0) {
			struct hyp_ev ev;

			if (ret != HVT_ITEM_DATA)
				continue;
			memset(&ev, 0, sizeof(ev));
			ev.cpu = cpu;
			ev.ts = it.ts;
			rig_decode(&ev, it.payload, it.len);
			if (ev.type < 0)
				r->bad_records++;
			r->events[cpu]++;
			total++;
			ret = fn(ctx, &ev, cpu, 0);
			if (ret < 0)
				return ret;
		}
		if (ret < 0) {
			fprintf(stderr, "hvt-hyp-test: cpu%d: malformed page from the reader\n",
				cpu);
			return -EBADMSG;
		}
	}
	return total;
}

int rig_poll(struct hyp_rig *r, hyp_ev_fn fn, void *ctx)
{
	int cpu, n, total = 0;

	for (cpu = 0; cpu < (int)r->info.nr_cpus; cpu++) {
		n = rig_read_cpu(r, cpu, 64, fn, ctx);
		if (n < 0)
			return n;
		total += n;
	}
	return total;
}

/* Read everything that is left, then claim trailing drops. */
int rig_drain(struct hyp_rig *r, hyp_ev_fn fn, void *ctx)
{
	int cpu, n, total = 0, rounds;

	for (rounds = 0; rounds < 1000000; rounds++) {
		n = rig_poll(r, fn, ctx);
		if (n < 0)
			return n;
		if (!n)
			break;
		total += n;
	}
	for (cpu = 0; cpu < (int)r->info.nr_cpus; cpu++) {
		uint64_t t = hvtrace_cpu_take_trailing_lost(r->a, cpu);

		if (t) {
			r->lost[cpu] += t;
			n = fn(ctx, NULL, cpu, t);
			if (n < 0)
				return n;
		}
	}
	return total;
}

uint32_t rig_writer_state(struct hyp_rig *r)
{
	uint32_t state = 0;

	hvtrace_area_writer_state(r->a, &state, NULL);
	return state;
}

/* Is the QEMU process (if known) still running?  A zombie is not. */
bool rig_writer_alive(struct hyp_rig *r)
{
	char path[64], buf[256], *p;
	FILE *f;
	size_t n;

	if (!r->pid)
		return rig_writer_state(r) != HVT_STATE_STOPPED;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)r->pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return false;
	return p[2] != 'Z' && p[2] != 'X';
}

/*
 * Read while the writer runs: until @stop says so, the writer stopped
 * (state STOPPED) or its QEMU exited, then drain.  Returns the events
 * read, -ETIMEDOUT after @timeout_s, or an error from @fn.
 */
int rig_follow(struct hyp_rig *r, hyp_ev_fn fn, void *ctx, double timeout_s,
	       int (*stop)(void *ctx), int (*tick)(void *ctx))
{
	uint64_t deadline = rig_now_ns() + (uint64_t)(timeout_s * 1e9);
	int n, total = 0, ret;

	for (;;) {
		n = rig_poll(r, fn, ctx);
		if (n < 0)
			return n;
		total += n;
		if (tick) {
			ret = tick(ctx);
			if (ret < 0)
				return ret;
		}
		if (stop && stop(ctx))
			return total;
		if (n)
			continue;
		if (rig_writer_state(r) == HVT_STATE_STOPPED ||
		    !rig_writer_alive(r))
			break;
		if (timeout_s > 0 && rig_now_ns() > deadline)
			return -ETIMEDOUT;
		rig_sleep_us(500);
	}
	n = rig_drain(r, fn, ctx);
	return n < 0 ? n : total + n;
}

/*
 * The writer's meta of @cpu, through the tool's own read-only mapping
 * (for counters the library does not report, like ctrl_errors).  The
 * geometry comes from the library's validated snapshot.
 */
const struct hvt_cpu_meta *rig_meta(struct hyp_rig *r, int cpu)
{
	uint64_t off;

	if (!r->ro || cpu < 0 || (uint32_t)cpu >= r->info.nr_cpus)
		return NULL;
	off = HVT_CPU_OFFSET +
	      (uint64_t)cpu * hvt_cpu_stride(r->info.nr_subbufs,
					     r->info.subbuf_size);
	return (const struct hvt_cpu_meta *)(r->ro + off);
}

/* The hypervisor's count of bad control-page values, every CPU. */
uint64_t rig_ctrl_errors(struct hyp_rig *r)
{
	uint64_t sum = 0;
	int cpu;

	for (cpu = 0; cpu < (int)r->info.nr_cpus; cpu++) {
		const struct hvt_cpu_meta *m = rig_meta(r, cpu);

		if (m)
			sum += __atomic_load_n(&m->ctrl_errors,
					       __ATOMIC_RELAXED);
	}
	return sum;
}
