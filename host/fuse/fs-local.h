/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace: what the files of the FUSE view share among themselves and
 * nothing else needs (hidden, never installed).  fuse-local.h is the view's
 * interface to its sources and to mount.c; this header is the file
 * system's inside: its node, open-file and parked-read types, and the
 * functions that one file of it (fs.c, fs_render.c, fs_io.c, fs_write.c,
 * view.c, view_text.c) calls in another.
 */
#ifndef HVT_FS_LOCAL_H
#define HVT_FS_LOCAL_H

#include <sys/types.h>

#include <fuse_lowlevel.h>

#include "fuse-local.h"

enum fz_kind {
	K_NONE = 0,
	K_ROOT,
	K_REMOTES,
	K_INSTANCES,
	K_LINK,	 /* instances/NAME */
	K_RDIR,	 /* remotes/NAME */
	K_RFILE, /* remotes/NAME/<file> */
	K_PERCPU,
	K_CPUDIR,
	K_CPUFILE,
	K_EVENTS,
	K_EVFILE, /* events/{enable,header_page,header_event} */
	K_SYSDIR,
	K_SYSENABLE,
	K_EVDIR,
	K_EVENTFILE, /* events/SYS/EV/{enable,id,format} */
};

enum fz_file {
	F_NONE = 0,
	/* remotes/NAME */
	F_TRACING_ON,
	F_BUFFER_SIZE_KB,
	F_TRACE_CLOCK,
	F_TRACE,
	F_TRACE_PIPE,
	F_ERROR_LOG,
	F_DYNAMIC_EVENTS,
	F_USER_EVENTS_STATUS,
	F_SAVED_CMDLINES,
	F_PRINTK_FORMATS,
	F_SET_EVENT,
	F_AVAILABLE_EVENTS,
	F_STATE,
	/* per_cpu/cpuN */
	F_CPU_TRACE,
	F_CPU_TRACE_PIPE,
	F_CPU_RAW,
	F_CPU_STATS,
	F_CPU_BUFFER_SIZE_KB,
	/* events */
	F_EV_ENABLE,
	F_HEADER_PAGE,
	F_HEADER_EVENT,
	/* events/SYS/EV */
	F_E_ENABLE,
	F_E_ID,
	F_E_FORMAT,
};

struct file_def {
	const char *name;
	enum fz_file f;
	mode_t mode;
	bool pipe; /* consuming: no snapshot */
};

struct fz_node {
	struct fz_node *hnext;
	fuse_ino_t ino;
	uint8_t kind;
	uint8_t file;
	uint32_t cpu;
	char remote[32];
	char system[64];
	char event[256];
};

/* An open file. */
struct fz_fh {
	struct fz_fh *fnext, *fprev; /* every open file, for shutdown */
	struct fz_node node;	     /* a copy: what was opened */
	const struct file_def *def;
	struct fz_remote *r; /* holds a reference, or NULL */
	int flags;
	char *buf; /* snapshot files */
	size_t len;
	char *rest; /* trace_pipe: the rest of a line */
	size_t rest_len, rest_off;
	uint8_t *raw; /* trace_pipe_raw: a partly read page */
	uint32_t raw_len, raw_off;
	struct fuse_pollhandle *ph;
	/*
	 * Reads in progress or parked.  RELEASE can arrive while a reply
	 * made from this handle is still being written (the reader wakes as
	 * soon as the kernel has the bytes), so the handle lives until the
	 * last of them is done.
	 */
	unsigned int busy;
	bool released;
};

/* A parked read. */
struct fz_waiter {
	struct fz_waiter *next;
	uint64_t id;
	fuse_req_t req;
	struct fz_fh *fh;
	size_t size;
};

#define NODE_HASH 1024

struct fz_fs {
	struct fz_node **nodes; /* by ino - 1 */
	size_t nr_nodes, cap_nodes;
	struct fz_node *hash[NODE_HASH];
	struct fz_waiter *waiters;
	uint64_t next_waiter;
	struct fz_fh *files;  /* open files */
	struct fz_fh **polls; /* open pipes with a poll handle */
	size_t nr_polls, cap_polls;
	time_t t0;
	uid_t uid;
	gid_t gid;
};

static inline struct fz_view *req_view(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* fs.c */
HVT_INTERNAL struct fz_node *node_of(struct fz_fs *fs, fuse_ino_t ino);
HVT_INTERNAL const struct file_def *node_def(const struct fz_node *n);
HVT_INTERNAL struct fz_remote *node_check(struct fz_view *v,
					  const struct fz_node *n, bool *ok);
HVT_INTERNAL void node_stat(struct fz_fs *fs, const struct fz_node *n,
			    struct stat *st);

/* fs_io.c */
HVT_INTERNAL void fz_open(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi);
HVT_INTERNAL void fh_put(struct fz_fs *fs, struct fz_fh *fh);
HVT_INTERNAL void fz_release(fuse_req_t req, fuse_ino_t ino,
			     struct fuse_file_info *fi);
HVT_INTERNAL void fz_read(fuse_req_t req, fuse_ino_t ino, size_t size,
			  off_t off, struct fuse_file_info *fi);
HVT_INTERNAL void fz_wake(struct fz_view *v, struct fz_remote *r);
HVT_INTERNAL void fz_poll(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi,
			  struct fuse_pollhandle *ph);

/* fs_render.c */
HVT_INTERNAL int parse_ulong(const char *s, size_t len, unsigned long *out);
HVT_INTERNAL int fh_render(struct fz_view *v, struct fz_fh *fh);
HVT_INTERNAL int fh_truncate(struct fz_view *v, struct fz_remote *r,
			     const struct fz_node *n);

/* fs_write.c */
HVT_INTERNAL void fz_write(fuse_req_t req, fuse_ino_t ino, const char *data,
			   size_t size, off_t off, struct fuse_file_info *fi);
HVT_INTERNAL void fz_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
			     int to_set, struct fuse_file_info *fi);
HVT_INTERNAL void fz_create(fuse_req_t req, fuse_ino_t parent, const char *name,
			    mode_t mode, struct fuse_file_info *fi);
HVT_INTERNAL void fz_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
			   mode_t mode, dev_t rdev);

/* view.c */
HVT_INTERNAL struct fz_ev *q_cur(struct fz_cpu *q, struct fz_chunk **cp);
HVT_INTERNAL void q_advance(struct fz_cpu *q);
HVT_INTERNAL uint64_t ev_clock(const struct fz_remote *r,
			       const struct fz_ev *e);
/* The queue of @cpu (the source's or the guest kernel's) with the older
 * next record, that record and its chunk; NULL when both are empty. */
HVT_INTERNAL struct fz_cpu *fz_q_next(struct fz_remote *r, uint32_t cpu,
				      struct fz_chunk **cp, struct fz_ev **ep);

/* view_text.c */
HVT_INTERNAL void fz_comm(struct fz_remote *r, const uint8_t *rec,
			  uint32_t len);

#endif /* HVT_FS_LOCAL_H */
