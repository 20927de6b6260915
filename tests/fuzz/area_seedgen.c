// SPDX-License-Identifier: MIT
/*
 * Writes the seed corpora of the area_parse and page_walk fuzz targets:
 * small real areas (1 or 2 CPUs x 2 or 4 sub-buffers x 4 KiB) made by the
 * writer core in the states a reader meets -- empty, partly filled, full
 * with drops and a missed-events page, lapped in overwrite mode, with
 * TIME_EXTENDs and large events, after a reset, with a counter clock,
 * with unplaced events, with an owner's read position to resume from --
 * and the committed data of their pages for the page walker.
 *
 *   area_seedgen AREA-DIR PAGE-DIR
 *
 * The output is deterministic (fixed timestamps, no pid), so regenerating
 * the committed corpora changes nothing unless the writer's format did.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hvtrace/page.h>
#include <hvtrace/ring_buffer.h>

#include "../foundation/fnd.h"

#define SUBBUF		4096u

struct seed {
	uint8_t *area;
	uint64_t size;
	uint32_t nr_cpus;
	uint32_t nr_subbufs;
	struct hvt_rb_cpu cb[2];
	uint64_t seq[2];
};

static void die(const char *what)
{
	fprintf(stderr, "area_seedgen: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void seed_new(struct seed *s, uint32_t nr_cpus, uint32_t nr_subbufs,
		     uint32_t mode, uint32_t clock_id)
{
	struct hvt_area_params p = {
		.nr_cpus = nr_cpus, .nr_subbufs = nr_subbufs,
		.subbuf_size = SUBBUF, .mode = mode,
		.writer_kind = HVT_WRITER_LOOPBACK, .clock_id = clock_id,
		.clock_freq_hz = clock_id == HVT_CLOCK_COUNTER ? 19200000 : 0,
		.clock_mult = clock_id == HVT_CLOCK_COUNTER ? 873813333u : 0,
		.clock_shift = clock_id == HVT_CLOCK_COUNTER ? 24 : 0,
		.name = "seed",
	};
	uint32_t cpu;

	memset(s, 0, sizeof(*s));
	s->nr_cpus = nr_cpus;
	s->nr_subbufs = nr_subbufs;
	s->size = hvt_area_size(nr_cpus, nr_subbufs, SUBBUF);
	p.area_size = s->size;
	s->area = calloc(1, s->size);
	if (!s->area)
		die("calloc");
	if (hvt_area_format(s->area, &p))
		die("hvt_area_format");
	for (cpu = 0; cpu < nr_cpus; cpu++)
		if (hvt_area_cpu(s->area, s->size, cpu, &s->cb[cpu]))
			die("hvt_area_cpu");
}

static int put(struct seed *s, uint32_t cpu)
{
	return fnd_write(&s->cb[cpu], s->seq[cpu]++);
}

/* An event with a chosen timestamp and payload length. */
static int put_raw(struct seed *s, uint32_t cpu, uint64_t ts, uint32_t len)
{
	struct hvt_common_fields c = { .common_type = 7,
				       .common_pid = (int32_t)cpu };
	uint8_t buf[512];
	struct hvt_iovec iov = { buf, len };

	for (uint32_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 13 + ts);
	return hvt_rb_write(&s->cb[cpu], ts, &c, &iov, 1);
}

static void write_file(const char *dir, const char *name, const void *buf,
		       size_t len)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die(path);
	if (write(fd, buf, len) != (ssize_t)len)
		die(path);
	close(fd);
}

/*
 * Post a read position for CPU 0 as an owner would: @k events into page
 * @seq.  The seed then gets one byte more, so that the fuzz target (odd
 * sizes) attaches it as the owner and resumes from the position.
 */
static void set_read_pos(struct seed *s, uint32_t seq, uint32_t k)
{
	struct hvt_control *ctrl =
		(struct hvt_control *)(s->area + HVT_CONTROL_OFFSET);
	struct hvt_cpu_meta *m = fnd_meta(s->area, 0);
	struct hvt_subbuf_desc *d = &m->desc[seq & (s->nr_subbufs - 1)];
	const uint8_t *pg = fnd_page(s->area, 0, seq);
	struct hvt_ctrl_pos *p = &ctrl->read_pos[0];
	struct hvt_page_iter it;
	uint32_t n = 0;
	int ret;

	hvt_page_iter_init(&it, pg + 16, SUBBUF - 16, hvt_rd64(pg));
	while (n < k && (ret = hvt_page_next(&it)) > 0)
		if (ret == HVT_ITEM_DATA)
			n++;
	p->accounted = d->entries_before + d->lost_before + n;
	p->unplaced = 0;
	p->seq = seq;
	p->pos = (uint16_t)it.pos;
	p->check = hvt_ctrl_pos_check(p->accounted, 0, seq, p->pos);
	s->area = realloc(s->area, s->size + 1);
	if (!s->area)
		die("realloc");
	s->area[s->size++] = 0;
}

/* The area, and each page with committed data as a page_walk seed. */
static void seed_out(struct seed *s, const char *adir, const char *pdir,
		     const char *name)
{
	uint8_t buf[8 + SUBBUF];
	char pname[128];
	uint32_t cpu, i;

	write_file(adir, name, s->area, s->size);
	for (cpu = 0; cpu < s->nr_cpus; cpu++) {
		struct hvt_cpu_meta *m = fnd_meta(s->area, cpu);
		uint32_t tail = HVT_WORD_SEQ(m->write);

		for (i = 0; i < s->nr_subbufs; i++) {
			uint32_t seq = tail - i, len;
			const uint8_t *pg = fnd_page(s->area, cpu, seq);

			if (m->desc[seq & (s->nr_subbufs - 1)].seq != seq)
				continue;
			len = i == 0 ? HVT_WORD_OFFSET(m->write) :
				       (uint32_t)(hvt_rd64(pg + 8) &
						  HVT_COMMIT_SIZE_MASK);
			if (!len || len > SUBBUF - 16)
				continue;
			memcpy(buf, pg, 8);
			memcpy(buf + 8, pg + 16, len);
			snprintf(pname, sizeof(pname), "%s-cpu%u-page%u", name,
				 cpu, i);
			write_file(pdir, pname, buf, 8 + len);
		}
	}
	free(s->area);
}

int main(int argc, char **argv)
{
	struct hvt_control *ctrl;
	struct seed s;
	int i;

	if (argc != 3) {
		fprintf(stderr, "usage: area_seedgen AREA-DIR PAGE-DIR\n");
		return 1;
	}

	seed_new(&s, 1, 2, HVT_MODE_CONSUME, HVT_CLOCK_MONO_NS);
	seed_out(&s, argv[1], argv[2], "01-empty");

	seed_new(&s, 1, 2, HVT_MODE_CONSUME, HVT_CLOCK_MONO_NS);
	for (i = 0; i < 20; i++)
		put(&s, 0);
	seed_out(&s, argv[1], argv[2], "02-partial");

	/* Full: the writer seals its page and drops; then the host frees a
	 * slot and the next page reports the drops. */
	seed_new(&s, 1, 2, HVT_MODE_CONSUME, HVT_CLOCK_MONO_NS);
	for (i = 0; i < 300; i++)
		put(&s, 0);
	ctrl = (struct hvt_control *)(s.area + HVT_CONTROL_OFFSET);
	ctrl->consumer[0] = HVT_WORD_SEQ(fnd_meta(s.area, 0)->write);
	for (i = 0; i < 30; i++)
		put(&s, 0);
	seed_out(&s, argv[1], argv[2], "03-missed");

	/* Drops after the last page (trailing). */
	seed_new(&s, 1, 2, HVT_MODE_CONSUME, HVT_CLOCK_MONO_NS);
	for (i = 0; i < 300; i++)
		put(&s, 0);
	seed_out(&s, argv[1], argv[2], "04-trailing");

	/* Overwrite, lapped many times. */
	seed_new(&s, 1, 2, HVT_MODE_OVERWRITE, HVT_CLOCK_MONO_NS);
	for (i = 0; i < 700; i++)
		put(&s, 0);
	seed_out(&s, argv[1], argv[2], "05-lapped");

	/* TIME_EXTENDs, exact 27-bit boundaries, large and tiny events. */
	seed_new(&s, 1, 2, HVT_MODE_OVERWRITE, HVT_CLOCK_MONO_NS);
	{
		uint64_t ts = 1000;
		static const uint64_t gaps[] = { 0, 1, (1 << 27) - 1, 1 << 27,
						 (1 << 27) + 1, 1ULL << 40, 5 };
		static const uint32_t lens[] = { 0, 4, 104, 108, 200, 400, 13 };

		for (i = 0; i < 120; i++) {
			ts += gaps[i % 7];
			put_raw(&s, 0, ts, lens[(i / 7 + i) % 7]);
		}
	}
	seed_out(&s, argv[1], argv[2], "06-extend");

	/* A host reset request served by the writer. */
	seed_new(&s, 1, 2, HVT_MODE_CONSUME, HVT_CLOCK_MONO_NS);
	for (i = 0; i < 40; i++)
		put(&s, 0);
	ctrl = (struct hvt_control *)(s.area + HVT_CONTROL_OFFSET);
	ctrl->reset_req[0]++;
	hvt_rb_poll_reset(&s.cb[0]);
	ctrl->consumer[0] = HVT_WORD_SEQ(fnd_meta(s.area, 0)->write);
	for (i = 0; i < 10; i++)
		put(&s, 0);
	seed_out(&s, argv[1], argv[2], "07-reset");

	/* Two CPUs, overwrite, a counter clock. */
	seed_new(&s, 2, 2, HVT_MODE_OVERWRITE, HVT_CLOCK_COUNTER);
	for (i = 0; i < 150; i++) {
		put(&s, 0);
		if (i % 3)
			put(&s, 1);
	}
	seed_out(&s, argv[1], argv[2], "08-two-cpus");

	/* Four sub-buffers: final pages between the oldest and the tail,
	 * drops reported on a middle page. */
	seed_new(&s, 1, 4, HVT_MODE_CONSUME, HVT_CLOCK_MONO_NS);
	for (i = 0; i < 150; i++)
		put(&s, 0);
	ctrl = (struct hvt_control *)(s.area + HVT_CONTROL_OFFSET);
	ctrl->consumer[0] = 2;
	for (i = 0; i < 100; i++)
		put(&s, 0);
	seed_out(&s, argv[1], argv[2], "09-four-consume");

	seed_new(&s, 1, 4, HVT_MODE_OVERWRITE, HVT_CLOCK_MONO_NS);
	for (i = 0; i < 500; i++)
		put(&s, 0);
	seed_out(&s, argv[1], argv[2], "10-four-overwrite");

	/* Unplaced events (a writer on a CPU beyond the area, or one that
	 * gave up) between pages, reported with the next page. */
	seed_new(&s, 2, 2, HVT_MODE_CONSUME, HVT_CLOCK_MONO_NS);
	for (i = 0; i < 200; i++) {
		put(&s, i % 2);
		if (i % 50 == 7)
			hvt_rb_count_unplaced(&s.cb[i % 2]);
	}
	seed_out(&s, argv[1], argv[2], "11-unplaced");

	/* An owner's read position in the middle of a final page, and one
	 * on a page the writer has lapped since (overwrite). */
	seed_new(&s, 1, 4, HVT_MODE_CONSUME, HVT_CLOCK_MONO_NS);
	for (i = 0; i < 150; i++)
		put(&s, 0);
	set_read_pos(&s, 0, 20);
	seed_out(&s, argv[1], argv[2], "12-resume");

	seed_new(&s, 1, 4, HVT_MODE_OVERWRITE, HVT_CLOCK_MONO_NS);
	for (i = 0; i < 60; i++)
		put(&s, 0);
	set_read_pos(&s, 0, 30);
	for (i = 0; i < 500; i++)
		put(&s, 0);
	seed_out(&s, argv[1], argv[2], "13-resume-lapped");
	return 0;
}
