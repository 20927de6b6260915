/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the foundation tests (golden pages, hostile writers,
 * stress, post-mortem, fuzz seeds): creating a real area file, and a
 * self-checking event record.
 *
 * Record layout after the 8 bytes of common fields:
 *
 *   u64 seq     per-CPU sequence number, counted by the writer for every
 *               event it tried to write (committed or dropped)
 *   u32 cpu     CPU buffer it was written to
 *   u32 fill    filler bytes that follow (0..FND_MAX_FILL)
 *   u8  filler[fill]  derived from seq
 *   u32 csum    fnd_csum() of everything from seq to the end of the filler
 *
 * The timestamp of record seq is fnd_ts(seq), so a reader can check every
 * timestamp exactly, TIME_EXTENDs included.
 */
#ifndef HVT_FOUNDATION_H
#define HVT_FOUNDATION_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

#include <hvtrace/ring_buffer.h>

#define FND_MAX_FILL	180u
/* Payload after the common fields, with slack for 8-byte filler stores. */
#define FND_REC_MAX	(16u + FND_MAX_FILL + 4u + 8u)
#define FND_EVENT_ID	0x4242u

static inline uint64_t fnd_mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/* Checksum of @n bytes: word-wise multiply-xorshift, then the tail. */
static inline uint32_t fnd_csum(const uint8_t *p, uint32_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ n, w;

	for (; n >= 8; p += 8, n -= 8) {
		memcpy(&w, p, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdULL;
		h ^= h >> 29;
	}
	for (; n; n--)
		h = (h ^ *p++) * 0x100000001b3ULL;
	h ^= h >> 32;
	return (uint32_t)h;
}

/* Filler length of record @seq: mostly small events, some large ones
 * (type_len 0: records above 112 bytes). */
static inline uint32_t fnd_fill_len(uint64_t seq, uint32_t cpu)
{
	uint64_t h = fnd_mix(seq * 64 + cpu);

	return (h & 7) == 0 ? (uint32_t)(h >> 8) % (FND_MAX_FILL + 1) :
			      (uint32_t)(h >> 8) % 48;
}

/*
 * Timestamp of record @seq: small steps, and every 4099th record a jump
 * past the 27-bit delta range (a TIME_EXTEND).  Strictly increasing.
 */
static inline uint64_t fnd_ts(uint64_t seq)
{
	return 1000000 + seq * 37 + (seq / 4099) * ((1ULL << 27) + 5);
}

/* Build record @seq for @cpu into @buf (FND_REC_MAX bytes, the payload
 * after the common fields); returns the payload length. */
static inline uint32_t fnd_build(uint8_t *buf, uint64_t seq, uint32_t cpu)
{
	uint32_t fill = fnd_fill_len(seq, cpu), i, csum;
	uint64_t h = fnd_mix(seq ^ ((uint64_t)cpu << 56));

	memcpy(buf, &seq, 8);
	memcpy(buf + 8, &cpu, 4);
	memcpy(buf + 12, &fill, 4);
	/* Filler: 8 bytes at a time (buf has room past the record). */
	for (i = 0; i < fill; i += 8) {
		uint64_t v = h + i * 0x9e3779b97f4a7c15ULL;

		memcpy(buf + 16 + i, &v, 8);
	}
	csum = fnd_csum(buf, 16 + fill);
	memcpy(buf + 16 + fill, &csum, 4);
	return 16 + fill + 4;
}

/*
 * Check a record as a reader got it: @data points at the common fields,
 * @len is the payload length the decoder reported (4-byte aligned).
 * Returns 0 and the record's seq, or -1 with *why set.
 */
static inline int fnd_check(const uint8_t *data, uint32_t len, uint32_t cpu,
			    uint64_t *seq, const char **why)
{
	const struct hvt_common_fields *c = (const void *)data;
	uint32_t rcpu, fill, csum;
	const uint8_t *p = data + 8;

	if (len < 8 + 20) {
		*why = "record too short";
		return -1;
	}
	if (c->common_type != FND_EVENT_ID || c->common_pid != (int32_t)cpu) {
		*why = "wrong common fields";
		return -1;
	}
	memcpy(seq, p, 8);
	memcpy(&rcpu, p + 8, 4);
	memcpy(&fill, p + 12, 4);
	if (rcpu != cpu || fill > FND_MAX_FILL ||
	    ((8 + 16 + fill + 4 + 3) & ~3u) != len) {
		*why = "wrong cpu, filler or length";
		return -1;
	}
	memcpy(&csum, p + 16 + fill, 4);
	if (csum != fnd_csum(p, 16 + fill)) {
		*why = "checksum mismatch (torn record)";
		return -1;
	}
	/* A stale record with a valid checksum would still have the filler
	 * length of another seq. */
	if (fill != fnd_fill_len(*seq, cpu)) {
		*why = "filler length does not match the seq";
		return -1;
	}
	return 0;
}

/* Write record @seq to @cb with hvt_rb_write(). */
static inline int fnd_write(struct hvt_rb_cpu *cb, uint64_t seq)
{
	struct hvt_common_fields c = { .common_type = FND_EVENT_ID,
				       .common_pid = (int32_t)cb->cpu };
	uint8_t buf[FND_REC_MAX];
	struct hvt_iovec iov;

	iov.base = buf;
	iov.len = fnd_build(buf, seq, cb->cpu);
	return hvt_rb_write(cb, fnd_ts(seq), &c, &iov, 1);
}

/* Area files are removed when the test exits, even through t_fail(). */
static char fnd_paths[16][64];
static int fnd_nr_paths;
static pid_t fnd_owner;

static void fnd_cleanup(void)
{
	if (getpid() != fnd_owner)
		return;
	for (int i = 0; i < fnd_nr_paths; i++)
		unlink(fnd_paths[i]);
}

static inline void fnd_track(const char *path)
{
	for (int i = 0; i < fnd_nr_paths; i++)
		if (!strcmp(fnd_paths[i], path))
			return;
	if (fnd_nr_paths == 16 || strlen(path) >= sizeof(fnd_paths[0]))
		return;
	if (!fnd_nr_paths) {
		fnd_owner = getpid();
		atexit(fnd_cleanup);
	}
	strcpy(fnd_paths[fnd_nr_paths++], path);
}

/*
 * Create (or truncate) @path as a trace area file and format it; returns
 * the read-write mapping (the writer's view) or NULL with errno set.
 */
static inline void *fnd_area_create(const char *path, uint32_t nr_cpus,
				    uint32_t nr_subbufs, uint32_t subbuf_size,
				    uint32_t mode, uint64_t *size_out)
{
	struct hvt_area_params p = {
		.nr_cpus = nr_cpus, .nr_subbufs = nr_subbufs,
		.subbuf_size = subbuf_size, .mode = mode,
		.writer_kind = HVT_WRITER_LOOPBACK,
		.clock_id = HVT_CLOCK_MONO_NS, .name = "foundation",
	};
	uint64_t size = hvt_area_size(nr_cpus, nr_subbufs, subbuf_size);
	void *map;
	int fd, ret;

	p.area_size = size;
	p.writer_pid = (uint32_t)getpid();
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return NULL;
	fnd_track(path);
	if (ftruncate(fd, (off_t)size)) {
		close(fd);
		return NULL;
	}
	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return NULL;
	ret = hvt_area_format(map, &p);
	if (ret) {
		munmap(map, size);
		errno = -ret;
		return NULL;
	}
	*size_out = size;
	return map;
}

/* The area files live in /dev/shm: skip (77) on a machine without it. */
static inline void fnd_need_shm(void)
{
	if (access("/dev/shm", W_OK)) {
		printf("SKIP: /dev/shm is not writable here (%s); the test "
		       "needs a tmpfs for its area files\n",
		       strerror(errno));
		exit(77);
	}
}

/* Meta of CPU @cpu in a mapped area (the writer's or a test's view). */
static inline struct hvt_cpu_meta *fnd_meta(void *area, uint32_t cpu)
{
	const struct hvt_area_header *h = area;

	return (struct hvt_cpu_meta *)((uint8_t *)area + h->cpu_offset +
				       (uint64_t)cpu * h->cpu_stride);
}

/* Sub-buffer @seq of CPU @cpu. */
static inline uint8_t *fnd_page(void *area, uint32_t cpu, uint32_t seq)
{
	const struct hvt_area_header *h = area;

	return (uint8_t *)fnd_meta(area, cpu) + h->meta_size +
	       (uint64_t)(seq & (h->nr_subbufs - 1)) * h->subbuf_size;
}

/* Events committed on CPU @cpu according to its commit word and the tail
 * page's descriptor, read straight from the mapping. */
static inline uint64_t fnd_committed(void *area, uint32_t cpu)
{
	const struct hvt_area_header *h = area;
	struct hvt_cpu_meta *m = fnd_meta(area, cpu);
	uint64_t w = __atomic_load_n(&m->write, __ATOMIC_ACQUIRE);

	return m->desc[HVT_WORD_SEQ(w) & (h->nr_subbufs - 1)].entries_before +
	       HVT_WORD_ENTRIES(w);
}

#endif /* HVT_FOUNDATION_H */
