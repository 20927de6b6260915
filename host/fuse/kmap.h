/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace: the guest kernel's event ids in the tracefs-style view
 * (kmap.c; hidden, never installed).
 */
#ifndef HVT_FUSE_KMAP_H
#define HVT_FUSE_KMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hvtrace-internal.h>

#define FZ_KMAP_MAX	    8192    /* guest kernel events, at most */
#define FZ_KMAP_ID_LIMIT    0x8000u /* served ids stay below */
#define FZ_KMAP_COMMON_SIZE 8	    /* common_type, flags, preempt, pid */

/* One event of the guest kernel. */
struct fz_kev {
	char system[64];
	char name[256];
	uint16_t kid;		   /* the guest kernel's id */
	uint16_t id;		   /* the id served in the view */
	bool served;		   /* has an id (fz_kmap_assign()) */
	int enabled;		   /* 1, 0, or -1: not known */
	char *format;		   /* the guest's text */
	size_t len, id_at, id_len; /* its "ID:" line */
};

struct fz_kmap {
	struct fz_kev *ev;
	unsigned int nev, cap;
	uint16_t slot[65536]; /* guest id -> index + 1; 0: none */
};

HVT_INTERNAL struct fz_kmap *fz_kmap_new(void);
HVT_INTERNAL void fz_kmap_free(struct fz_kmap *m);
/*
 * One format of the guest (hostile text): bounded names and size, an
 * "ID:" line with an id no other format has.  @enabled: the instance's
 * events in the kernel's syntax ("sched,ftrace:print"), NULL when not
 * known.  Return: 0 or -errno (the format is left out).
 */
HVT_INTERNAL int fz_kmap_add(struct fz_kmap *m, const char *system,
			     const char *name, const char *format, size_t len,
			     const char *enabled);
/*
 * A regular file of at most @max bytes, NUL-terminated (malloc'd; its
 * length in *@len), or NULL: missing, not a regular file, or larger.
 */
HVT_INTERNAL char *fz_kmap_slurp(const char *path, size_t max, size_t *len);
/* Every events/SYS/EV/format of folder @dir; -ENOENT when none is good. */
HVT_INTERNAL int fz_kmap_load(struct fz_kmap *m, const char *dir,
			      const char *enabled);
/* Give every event its served id, none of @ids (the remote's own). */
HVT_INTERNAL void fz_kmap_assign(struct fz_kmap *m, const uint32_t *ids,
				 unsigned int n);
/*
 * A record of a guest kernel page (payload @rec, @len bytes): the index
 * of its event when it has the common header and a type the guest's
 * formats describe, else -1 (the record is not queued; it counts as
 * lost).  Reads only what fz_kmap_add() wrote, never the served ids, so
 * it may run beside fz_kmap_assign().
 */
HVT_INTERNAL int fz_kmap_keep(const struct fz_kmap *m, const uint8_t *rec,
			      uint32_t len);
/*
 * Rewrite the common_type of a record to its served id; -1 (nothing
 * written) when fz_kmap_keep() would not keep it now.
 */
HVT_INTERNAL int fz_kmap_rewrite(const struct fz_kmap *m, uint8_t *rec,
				 uint32_t len);
/* The format text with the served id in its "ID:" line (malloc'd). */
HVT_INTERNAL char *fz_kmap_format(const struct fz_kev *e);

#endif /* HVT_FUSE_KMAP_H */
