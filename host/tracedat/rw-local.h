/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace trace.dat component: what the reader's and the writer's own
 * files share among themselves (hidden, never installed).  tracedat-local.h is the
 * component's interface to its other files and to the recorders; this
 * header is the inside of the reader (read.c, read_meta.c,
 * read_sandbox.c, read_events.c) and of the writer (write.c,
 * write_finish.c): their state structures and the functions one of their
 * files calls in another.
 */
#ifndef HVT_TRACEDAT_RW_LOCAL_H
#define HVT_TRACEDAT_RW_LOCAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "tracedat-local.h"

/* --- the reader -------------------------------------------------------- */

#define RD_MAX_TEXT	    (512u << 20) /* one metadata text */
#define RD_MAX_OPTION	    (64u << 20)
#define RD_MAX_OPT_SECTIONS 4096u
#define RD_MAX_BUFFERS	    1024u
#define RD_MAX_CPUS	    4096u
#define RD_FIELD_LIMIT	    65536u
#define RD_SCRATCH	    (256u * 1024) /* record + zeroed slack */

struct rd_cpu {
	uint64_t off; /* file offset of the CPU's data */
	uint64_t size;
	uint64_t next; /* offset of the next page to load */
	uint8_t *page;
	struct kbuffer *kb;
	bool have; /* an event is pending */
	void *ev;
	uint64_t ts;
	int64_t missed;
	uint32_t ev_size;
};

struct rd_buffer {
	char *name;
	char *clock;
	uint32_t page_size;
	uint32_t nr_cpus;
	uint64_t section_off; /* v7 flyrecord section; v6 "flyrecord" */
	bool latency;
	struct rd_cpu *cpu;
};

/* One sample of a guest file's TIME_SHIFT option (trace-cmd's
 * ts_offset_sample): at guest time @time the host is @offset ahead, the
 * guest's clock runs at @scaling >> @frac of the host's. */
struct rd_tsync_sample {
	int64_t time;
	int64_t offset;
	int64_t scaling;
	int64_t frac;
};

struct rd_tsync_cpu {
	uint32_t n;
	struct rd_tsync_sample *s; /* sorted by time, no time twice */
};

struct hvtrace_tracedat_file {
	int fd;
	uint64_t file_size;
	char *path;
	int version;
	uint32_t page_size;
	uint32_t long_size;
	uint32_t cpucount;
	struct tep_handle *tep;
	/* Its KALLSYMS as tep's function resolver (hvt_tep_set_ksyms()):
	 * symbols print in the kernel's forms, as a decoder's do. */
	struct hvtrace_ksyms *ksyms;
	struct tep_plugin_list *plugins;
	struct rd_buffer *buf;
	unsigned int nr_buf;
	uint64_t sec_off[6]; /* v7: sections 16..21 */
	char *cpustats;
	size_t cpustats_len;
	char *uname;
	char *trace_clock;
	int64_t ts_offset;
	/* A guest file's TIME_SHIFT (read_tsync.c): its top-level buffer's
	 * times put on its host's clock, as trace-cmd does. */
	uint32_t tsync_flags;
	uint32_t tsync_cpus;
	struct rd_tsync_cpu *tsync;
	uint64_t errors;
	uint8_t *scratch;
	uint32_t scratch_used;
	uint8_t *bad_ids;   /* 65536 flags: fields beyond the limit */
	uint32_t *min_size; /* 65536: end of each event's last field */
	bool started;
	struct rd_op *ops; /* texts for libtraceevent */
	unsigned int nr_ops, cap_ops;
	uint64_t bad_formats; /* texts it would not survive */
	int name_width;
	char *base_name;
};

/* A text queued for libtraceevent (read_sandbox.c). */

struct rd_op {
	enum hvt_tep_text_kind kind;
	char system[256];
	char *text;
	size_t len;
	bool bad;
};

/* A cursor over a region of the file. */
struct rd_cur {
	struct hvtrace_tracedat_file *f;
	uint64_t pos;
	uint64_t end;
};

/* read_meta.c */
HVT_INTERNAL int rd_at(struct hvtrace_tracedat_file *f, uint64_t off, void *buf,
		       size_t len);
HVT_INTERNAL uint32_t rd_le32(const uint8_t *p);
HVT_INTERNAL uint64_t rd_le64(const uint8_t *p);
HVT_INTERNAL int cur_read(struct rd_cur *c, void *buf, size_t len);
HVT_INTERNAL int cur_u16(struct rd_cur *c, uint16_t *v);
HVT_INTERNAL int cur_u32(struct rd_cur *c, uint32_t *v);
HVT_INTERNAL int cur_u64(struct rd_cur *c, uint64_t *v);
HVT_INTERNAL int cur_str(struct rd_cur *c, char *buf, size_t max);
HVT_INTERNAL int rd_header_info(struct hvtrace_tracedat_file *f,
				struct rd_cur *c);
HVT_INTERNAL int rd_ftrace_formats(struct hvtrace_tracedat_file *f,
				   struct rd_cur *c);
HVT_INTERNAL int rd_event_formats(struct hvtrace_tracedat_file *f,
				  struct rd_cur *c);
HVT_INTERNAL int rd_kallsyms(struct hvtrace_tracedat_file *f, struct rd_cur *c);
HVT_INTERNAL int rd_printk(struct hvtrace_tracedat_file *f, struct rd_cur *c);
HVT_INTERNAL int rd_cmdlines(struct hvtrace_tracedat_file *f, struct rd_cur *c);
/* read_tsync.c: TIME_SHIFT of @len bytes at @p into @f (a malformed
 * one is an error: -EBADMSG); a guest time @ts of CPU @cpu on the host's
 * clock. */
HVT_INTERNAL int rd_time_shift(struct hvtrace_tracedat_file *f,
			       const uint8_t *p, uint32_t len);
HVT_INTERNAL uint64_t rd_tsync_calc(const struct hvtrace_tracedat_file *f,
				    uint32_t cpu, uint64_t ts);
HVT_INTERNAL void rd_tsync_free(struct hvtrace_tracedat_file *f);

HVT_INTERNAL int rd_options(struct hvtrace_tracedat_file *f, struct rd_cur *c,
			    uint64_t *next);

/* read_sandbox.c */
HVT_INTERNAL int rd_op_add(struct hvtrace_tracedat_file *f,
			   enum hvt_tep_text_kind kind, const char *system,
			   char *text, size_t len);
HVT_INTERNAL void rd_sandbox(struct hvtrace_tracedat_file *f);

/* --- the writer -------------------------------------------------------- */

#define WR_OBUF_SIZE   (256u * 1024)
#define WR_MAX_BUFFERS 256u
#define WR_BATCH_SIZE  (2048u * 1024) /* a chunk of pages, per CPU */
#define WR_STAGE_SIZE  (256u * 1024) /* a CPU's pages, on to its room */
#define WR_STAGE_WRITE (128u * 1024) /* written if no one else writes */
#define WR_MEM_MAX     (128ull << 20) /* chunks kept in memory, all CPUs;
					 * $HVT_RECORD_MEM_MB changes it */

/*
 * One CPU of a buffer.  Its pages gather in @batch, a chunk of
 * WR_BATCH_SIZE bytes.  A full chunk is kept in @chunks while the
 * writer's chunks stay under WR_MEM_MAX in all (@mem_bytes of the
 * writer), and _finish() writes them straight into the output: one copy
 * of each page, no temporary file.  Past the cap, the CPU spills: its
 * chunks go to its temporary file (@fd), and from then on each chunk
 * as it fills, so memory stays bounded however long the recording.
 * Nothing but the CPU's own state (and the writer's atomic @mem_bytes)
 * is touched by _add_page(), so callers may add pages of different CPUs
 * from different threads.
 */
struct HVT_CACHELINE_ALIGNED wr_cpu {
	int fd;	       /* temporary page file, -1 until it spills */
	uint64_t size; /* bytes added (room, file, @chunks and @batch) */
	uint8_t *batch;
	uint32_t batch_len;
	uint8_t **chunks; /* full chunks kept in memory, in order */
	unsigned int nr_chunks, cap_chunks;
	/* Its room in the output, if it has one (write.c, "Rooms"). */
	uint64_t room_want; /* bytes asked by hvt_tdat_writer_set_room() */
	uint64_t room_off;  /* file offset of the room; 0: no room */
	uint64_t room_len;
	uint64_t room_used; /* bytes written into the room */
	bool room_full;	    /* outgrown: later pages go to chunks */
	uint8_t *stage;	    /* pages on their way into the room */
	uint32_t stage_len;
};

struct wr_buffer {
	char *name;
	char *clock;
	uint32_t page_size;
	uint32_t nr_cpus;
	struct wr_cpu *cpu;
	uint64_t room_section; /* offset of its rooms' section; 0: none */
	uint64_t room_end;     /* end of its last CPU's room */
	/* computed by _finish() */
	uint64_t section_off;
	uint64_t data_off;
	bool in_rooms;	   /* its pages stay where they are, in its rooms */
	uint32_t room_sid; /* string id of its rooms' section */
};

struct wr_format {
	char *system;
	char *text;
	size_t len;
};

struct wr_option {
	uint16_t id;
	uint32_t len;
	void *data;
};

struct wr_cmdline {
	int pid;
	char comm[64];
};

struct hvtrace_tracedat_writer {
	int fd;
	char *path;
	char *dir;
	uint32_t page_size;

	struct hvt_tdat_blob header_page;
	struct hvt_tdat_blob header_event;
	struct hvt_tdat_blob kallsyms;
	struct hvt_tdat_blob printk;

	struct wr_format *fmt;
	unsigned int nr_fmt, cap_fmt;
	struct wr_option *opt;
	unsigned int nr_opt, cap_opt;
	struct wr_cmdline *cmd;
	unsigned int nr_cmd, cap_cmd;
	struct wr_buffer *buf;
	unsigned int nr_buf;
	uint64_t mem_bytes; /* chunks kept in memory (atomic) */
	uint64_t mem_max;   /* at most ($HVT_RECORD_MEM_MB, WR_MEM_MAX) */
	uint64_t rooms_end; /* end of the last room; 0: no rooms */
	bool rooms_laid;    /* hvt_tdat_writer_lay_rooms() was called */
	pthread_mutex_t room_lock; /* one thread writes into rooms at once */

	/* output state of _finish() */
	struct hvt_tdat_blob strings;
	uint8_t *obuf;
	size_t olen;
	uint64_t off; /* logical output offset */
	int err;
	bool keep;    /* the file is complete: do not unlink */
	bool created; /* we created or truncated the output */

	/* The journal of the recording (journal.c), or jfd -1. */
	int jfd;
	char *jpath;
	pthread_mutex_t jlock; /* reader threads add pages at once */
	uint8_t *jbuf;	       /* records on their way into it */
	size_t jlen;
	bool jmeta; /* metadata calls go into a snapshot only */
	int jerr;
};

#define WR_JBUF_SIZE (1024u * 1024)

/* journal.c: append one record to @w's journal (no-op without one). */
HVT_INTERNAL int wr_journal_add(struct hvtrace_tracedat_writer *w,
				uint16_t type, uint16_t a, uint32_t b,
				const void *data, uint32_t len);
/* The same, its payload in two pieces. */
HVT_INTERNAL int wr_journal_add2(struct hvtrace_tracedat_writer *w,
				 uint16_t type, uint16_t a, uint32_t b,
				 const void *d1, size_t l1, const void *d2,
				 size_t l2);
/* Close the journal; remove it when @remove. */
HVT_INTERNAL void wr_journal_close(struct hvtrace_tracedat_writer *w,
				   bool remove);

/* write.c */
HVT_INTERNAL int wr_cpu_flush(struct hvtrace_tracedat_writer *w,
			      struct wr_cpu *c);
HVT_INTERNAL int wr_room_flush(struct hvtrace_tracedat_writer *w,
			       struct wr_cpu *c);

#endif /* HVT_TRACEDAT_RW_LOCAL_H */
