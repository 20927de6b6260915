/* SPDX-License-Identifier: MIT */
/*
 * hvtrace cross-context ABI: the trace area.
 *
 * A *trace area* is one shared region that a single writer context (a
 * hypervisor, a guest, or a local process) exposes to a host.  It is read by
 * the host through a read-only mapping; only the control page is written by
 * the host.  Everything here is freestanding: it needs only <stdint.h> and
 * <stddef.h>, so the same header builds into EL2 code, guest user space and
 * the host library.
 *
 * All multi-byte fields are in the writer's byte order, which the area header
 * declares (HVT_AREA_LITTLE_ENDIAN is the only one written today).
 *
 *   area offset
 *   0x0000  +-------------------------------+  writer-owned
 *           | struct hvt_area_header        |  geometry, clock, identity
 *   0x1000  +-------------------------------+  HOST-owned (writers map it RO)
 *           | struct hvt_control (4 pages)  |  enable bitmap, consumer
 *           |                               |  progress, sync mailbox, reset,
 *           |                               |  the owner's read positions
 *   0x5000  +-------------------------------+  writer-owned, CPU 0 section
 *           | struct hvt_cpu_meta           |  commit word, counters,
 *           |   desc[nr_subbufs]            |  one descriptor per sub-buffer
 *           +-- (page aligned) -------------+
 *           | sub-buffer 0  (ftrace page)   |  struct buffer_data_page bytes
 *           | sub-buffer 1                  |
 *           | ...                           |
 *           +-------------------------------+  CPU 1 section at
 *           | ...                           |  cpu_offset + 1 * cpu_stride
 *
 * Each sub-buffer is byte-compatible with a Linux ftrace sub-buffer page
 * (see "ftrace sub-buffer format" below), so pages copied out of an area can
 * be handed unchanged to libtraceevent's kbuffer or written into trace.dat.
 *
 * The lockless protocol between the writer and the host reader is described
 * in shared/ring_buffer.c and docs/design.md.
 */
#ifndef HVTRACE_ABI_H
#define HVTRACE_ABI_H

#include <stddef.h>
#include <stdint.h>

#define HVT_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)

/* --- ABI constants -------------------------------------------------- */

/* "hvtrace\0" read as a little-endian u64. */
#define HVT_AREA_MAGIC		0x0065636172747668ULL
/* Written into the control page by the host once it has attached. */
#define HVT_CONTROL_MAGIC	0x6c7274636e747668ULL	/* "hvtnctrl" */
/*
 * Version 2: up to 256 CPUs (the control region grew to four pages, the
 * first CPU section moved to 0x5000), a per-CPU 'unplaced' counter, and
 * the owner's read position per CPU (struct hvt_ctrl_pos).
 */
#define HVT_ABI_VERSION		2

/* Granule of every section offset: the host maps sections separately. */
#define HVT_AREA_ALIGN		4096u
#define HVT_AREA_HEADER_SIZE	4096u
#define HVT_CONTROL_SIZE	16384u

/* Fixed ABI limits (the build-time Kconfig limits must not exceed them). */
#define HVT_ABI_MAX_CPUS	256u
#define HVT_ABI_MAX_EVENTS	16384u
#define HVT_ABI_MIN_SUBBUFS	2u
#define HVT_ABI_MAX_SUBBUFS	65536u
#define HVT_ABI_MIN_SUBBUF_SIZE	4096u
#define HVT_ABI_MAX_SUBBUF_SIZE	65536u

#define HVT_AREA_LITTLE_ENDIAN	1u
#define HVT_AREA_BIG_ENDIAN	2u

/* Ring-buffer mode, per area. */
#define HVT_MODE_CONSUME	1u	/* producer-consumer: drop new when full */
#define HVT_MODE_OVERWRITE	2u	/* flight recorder: overwrite oldest */

/* Who writes the area (selects the host-side event tables). */
#define HVT_WRITER_LOOPBACK	1u
#define HVT_WRITER_GUEST	2u
#define HVT_WRITER_HYP		3u
/*
 * A guest kernel's own ftrace pages, copied whole by the guest's agent
 * from the kernel's trace_pipe_raw: the *kernel section* of a guest's
 * area (see hvt_area_header.kernel_offset).  Its event ids, formats and
 * clock are the guest kernel's, not the user events' (docs/design.md,
 * "The kernel section").
 */
#define HVT_WRITER_GUEST_KERNEL	4u

/* Writer life cycle, area header 'state'. */
#define HVT_STATE_INIT		0u
#define HVT_STATE_RUNNING	1u
#define HVT_STATE_STOPPED	2u	/* writer finished cleanly */

/* Host-to-writer commands (struct hvt_control.cmd). */
#define HVT_CMD_NONE		0u
#define HVT_CMD_STOP		1u	/* finish: stop writing, power off */

/* Units of the timestamps in the pages. */
#define HVT_CLOCK_COUNTER	1u	/* raw cycle counter at clock_freq_hz */
#define HVT_CLOCK_MONO_NS	2u	/* writer's CLOCK_MONOTONIC, ns */
#define HVT_CLOCK_HOST_NS	3u	/* already converted to host ns */

/*
 * The name a reader gives a writer's own clock (any clock_id but
 * HVT_CLOCK_HOST_NS) where its times are left as written, not mapped to
 * the host's: the trace clock of such a trace.dat buffer, and the word
 * stream uses for such a source.
 */
static inline const char *hvt_clock_own_name(uint32_t clock_id)
{
	switch (clock_id) {
	case HVT_CLOCK_COUNTER:
		return "counter";
	case HVT_CLOCK_MONO_NS:
		return "writer-mono";
	default:
		return "writer";
	}
}

/* --- ftrace sub-buffer format (include/linux/ring_buffer.h) ---------- */

#define HVT_PAGE_HDR_SIZE	16u	/* u64 time_stamp + local_t commit */
#define HVT_PAGE_COMMIT_OFF	8u
#define HVT_MISSED_EVENTS	(1UL << 31)
#define HVT_MISSED_STORED	(1UL << 30)
#define HVT_COMMIT_FLAGS	(HVT_MISSED_EVENTS | HVT_MISSED_STORED)
/* libtraceevent masks the size with (1 << 27) - 1; the kernel with ~flags. */
#define HVT_COMMIT_SIZE_MASK	((1UL << 27) - 1)

#define HVT_EVT_HDR_SIZE	4u
#define HVT_TYPE_LEN_BITS	5u
#define HVT_TS_BITS		27u
#define HVT_TS_MASK		((1u << HVT_TS_BITS) - 1)
#define HVT_TYPE_DATA_MAX	28u	/* type_len 1..28: payload = 4 * type_len */
#define HVT_TYPE_PADDING	29u
#define HVT_TYPE_TIME_EXTEND	30u
#define HVT_TYPE_TIME_STAMP	31u
#define HVT_EVT_MIN_SIZE	8u	/* smallest event: header + one word */

/* Common fields at the start of every trace event record. */
struct hvt_common_fields {
	uint16_t common_type;		/* event id */
	uint8_t common_flags;
	uint8_t common_preempt_count;
	int32_t common_pid;
};
HVT_STATIC_ASSERT(sizeof(struct hvt_common_fields) == 8, "common fields");
HVT_STATIC_ASSERT(offsetof(struct hvt_common_fields, common_pid) == 4, "pid");

/* --- area header (writer-owned, page 0) ----------------------------- */

/*
 * The writer fills every field, then publishes 'magic' with a release store
 * (pairs with the host's acquire load of 'magic' in hvtrace_area_attach()).
 * The host snapshots the geometry once, validates it, and never re-reads it:
 * a writer that rewrites its header later cannot move the host's view.
 */
struct hvt_area_header {
	uint64_t magic;			/* 0x000 HVT_AREA_MAGIC, written last */
	uint32_t abi_version;		/* 0x008 HVT_ABI_VERSION */
	uint8_t endian;			/* 0x00c HVT_AREA_*_ENDIAN */
	uint8_t long_size;		/* 0x00d sizeof(long) of the writer: 8 */
	uint16_t header_size;		/* 0x00e sizeof(struct hvt_area_header) */
	uint64_t area_size;		/* 0x010 bytes, whole area */
	uint32_t page_size;		/* 0x018 section alignment, 4096 */
	uint32_t subbuf_size;		/* 0x01c ftrace sub-buffer size */
	uint32_t nr_cpus;		/* 0x020 */
	uint32_t nr_subbufs;		/* 0x024 per CPU */
	uint32_t mode;			/* 0x028 HVT_MODE_* */
	uint32_t writer_kind;		/* 0x02c HVT_WRITER_* */
	uint64_t control_offset;	/* 0x030 */
	uint64_t cpu_offset;		/* 0x038 first CPU section */
	uint64_t cpu_stride;		/* 0x040 distance between CPU sections */
	uint32_t meta_size;		/* 0x048 per-CPU meta, page multiple */
	uint32_t state;			/* 0x04c HVT_STATE_* */
	/* clock description */
	uint32_t clock_id;		/* 0x050 HVT_CLOCK_* */
	uint32_t clock_shift;		/* 0x054 nominal ns = cnt * mult >> shift */
	uint64_t clock_freq_hz;		/* 0x058 counter frequency, 0 if ns */
	uint32_t clock_mult;		/* 0x060 */
	uint32_t writer_pid;		/* 0x064 process that owns the area */
	char name[32];			/* 0x068 NUL-terminated writer name */
	/*
	 * Time-sync answer (see struct hvt_control.sync_req): the writer
	 * stores sync_clock, then sync_seq with release; the host loads
	 * sync_seq with acquire, then sync_clock, then sync_seq again.
	 */
	uint64_t sync_seq;		/* 0x088 */
	uint64_t sync_clock;		/* 0x090 writer clock when answered */
	uint64_t generation;		/* 0x098 bumped on every writer start */
	/*
	 * The kernel section (agent copy mode): a second, complete trace
	 * area of writer kind HVT_WRITER_GUEST_KERNEL, kernel_size bytes at
	 * kernel_offset from the start of this area (at or after its
	 * area_size, 4 KiB aligned), whose sub-buffers are the guest
	 * kernel's own ftrace pages.  Its rings, descriptors and control
	 * page work exactly as this area's; only what the pages hold
	 * differs (the guest kernel's event ids and trace clock).  Both 0
	 * when there is none.  The host reads the section with the same
	 * page reader and validates it as any area.
	 */
	uint64_t kernel_offset;		/* 0x0a0 */
	uint64_t kernel_size;		/* 0x0a8 */
	uint8_t reserved[4096 - 0xb0];
};
HVT_STATIC_ASSERT(sizeof(struct hvt_area_header) == HVT_AREA_HEADER_SIZE,
		  "area header is one page");
HVT_STATIC_ASSERT(offsetof(struct hvt_area_header, control_offset) == 0x30,
		  "control_offset");
HVT_STATIC_ASSERT(offsetof(struct hvt_area_header, cpu_stride) == 0x40,
		  "cpu_stride");
HVT_STATIC_ASSERT(offsetof(struct hvt_area_header, clock_id) == 0x50,
		  "clock_id");
HVT_STATIC_ASSERT(offsetof(struct hvt_area_header, name) == 0x68, "name");
HVT_STATIC_ASSERT(offsetof(struct hvt_area_header, sync_seq) == 0x88,
		  "sync_seq");
HVT_STATIC_ASSERT(offsetof(struct hvt_area_header, generation) == 0x98,
		  "generation");
HVT_STATIC_ASSERT(offsetof(struct hvt_area_header, kernel_offset) == 0xa0,
		  "kernel_offset");

/* --- control page (host-owned, page 1) ------------------------------ */

/*
 * Host-to-writer clock parameters: host_ns = epoch_ns +
 * ((cnt - epoch_cnt) * mult >> shift).  Published as a seqcount: the host
 * makes 'seq' odd, writes, makes it even (release); a writer that reads an
 * odd or changed 'seq' keeps its previous parameters.
 */
struct hvt_ctrl_clock {
	uint32_t seq;			/* 0x00 */
	uint32_t shift;			/* 0x04 must be < 64 */
	uint32_t mult;			/* 0x08 */
	uint32_t reserved;		/* 0x0c */
	uint64_t epoch_cnt;		/* 0x10 */
	uint64_t epoch_ns;		/* 0x18 */
};
HVT_STATIC_ASSERT(sizeof(struct hvt_ctrl_clock) == 32, "ctrl clock");

/*
 * Where the owner's reader is in a CPU buffer, so that a successor (the
 * same daemon restarted) resumes after the last event it returned: no
 * event twice, and the gap to what is still in the ring counted exactly.
 * Host-only: writers never read it.  The owner stores the fields, then
 * 'check' (a fold of the other fields, hvt_ctrl_pos_check()) with
 * release; a successor trusts the entry only when 'check' matches and the
 * position still names the same events in the ring (a torn entry left by
 * a crash, or a guest's scribbling, is ignored).
 */
struct hvt_ctrl_pos {
	uint64_t accounted;		/* 0x00 events read or reported lost
					 * up to here: entries_before +
					 * lost_before of the sub-buffer +
					 * events read on it */
	uint64_t unplaced;		/* 0x08 unplaced events reported */
	uint32_t seq;			/* 0x10 the sub-buffer */
	uint16_t pos;			/* 0x14 data bytes of it returned */
	uint16_t check;			/* 0x16 written last */
};
HVT_STATIC_ASSERT(sizeof(struct hvt_ctrl_pos) == 24, "ctrl pos");

static inline uint16_t hvt_ctrl_pos_check(uint64_t accounted,
					  uint64_t unplaced, uint32_t seq,
					  uint16_t pos)
{
	uint64_t x = accounted * 0x9e3779b97f4a7c15ULL ^ unplaced ^
		     ((uint64_t)seq << 16) ^ pos;

	x ^= x >> 32;
	x ^= x >> 16;
	/* Never 0: a zeroed control page holds no position. */
	return (uint16_t)(x | 1);
}

/*
 * Writers treat every field here as hostile: a hypervisor must not fault or
 * loop on any value.  The host, in turn, never reads its own decisions back
 * from this page (a guest can scribble on it); it keeps private copies.
 */
/*
 * A wakeup request of the reader of one CPU buffer, one 64-bit word so a
 * writer loads both halves at once: gen in the low half (armed while it
 * differs from the meta's wake_ack), at in the high half (ring when the
 * commit position, HVT_WAKE_POS() of the commit word, reaches it,
 * compared modulo 2^32).
 */
struct hvt_ctrl_wake {
	uint64_t word;	/* HVT_WAKE(gen, at) */
};
#define HVT_WAKE(gen, at)	((uint64_t)(uint32_t)(gen) |		\
				 (uint64_t)(uint32_t)(at) << 32)
#define HVT_WAKE_GEN(w)		((uint32_t)(w))
#define HVT_WAKE_AT(w)		((uint32_t)((w) >> 32))

/*
 * The commit position of a commit word for wakeups: the low 16 bits of
 * the sequence number above the 16-bit offset.  Positions are compared
 * as a signed 32-bit distance, so a watermark may reach 32767 pages
 * ahead.
 */
#define HVT_WAKE_POS(w)	((uint32_t)(((w) >> 16) & 0xffff0000u) |	\
			 (uint32_t)((w) & 0xffffu))

/*
 * The rig's relay-free doorbell: QEMU's ivshmem-doorbell device, served
 * by hvtrace-ivshmem (host/ivshmem/main.c).  A guest writer rings the
 * host by storing HVT_BELL_VALUE in the device's doorbell register, at
 * HVT_BELL_REG in BAR0; QEMU signals the host's eventfd, which hvtraced
 * watches.  The guest is peer HVT_BELL_GUEST_ID, the host peer
 * HVT_BELL_HOST_PEER (vector 0).
 */
#define HVT_BELL_REG		12	/* ivshmem's Doorbell register */
#define HVT_BELL_HOST_PEER	0
#define HVT_BELL_GUEST_ID	1
#define HVT_BELL_VALUE		((uint32_t)HVT_BELL_HOST_PEER << 16 | 0)
/* The 64-bit word hvtrace-ivshmem sends with the eventfd on bell.sock. */
#define HVT_BELL_MAGIC		0x6c6c6562747668ull	/* "hvtbell" */

struct hvt_control {
	uint64_t magic;			/* 0x000 HVT_CONTROL_MAGIC */
	uint32_t abi_version;		/* 0x008 */
	uint32_t tracing_on;		/* 0x00c informational; folded below */
	/* Time-sync request: the host bumps it; the writer answers. */
	uint64_t sync_req;		/* 0x010 */
	/*
	 * A command for the writer (HVT_CMD_*): the host stores cmd, then
	 * bumps cmd_seq with release; a writer that sees a new cmd_seq
	 * (acquire) acts on cmd once.  Unknown commands are ignored.
	 */
	uint32_t cmd_seq;		/* 0x018 */
	uint32_t cmd;			/* 0x01c */
	struct hvt_ctrl_clock clock;	/* 0x020 */
	uint8_t reserved1[0x800 - 0x040];
	/*
	 * Effective enable bitmap, one bit per event (bit = the event's
	 * enable index, not its id).  The host folds tracing_on into it, so
	 * a writer's fast path is one load and a mask.
	 */
	uint64_t enable[HVT_ABI_MAX_EVENTS / 64];	/* 0x800 */
	/*
	 * Per-CPU consumer progress: sequence number of the oldest
	 * sub-buffer the host has not finished reading.  Producer-consumer
	 * writers never reuse a slot whose page is >= consumer[cpu].  The
	 * host stores it with release after its last read of the page; the
	 * writer loads it with acquire before reusing the slot.
	 */
	uint32_t consumer[HVT_ABI_MAX_CPUS];	/* 0x1000 */
	/* Per-CPU reset request generation (writer acks in hvt_cpu_meta). */
	uint32_t reset_req[HVT_ABI_MAX_CPUS];	/* 0x1400 */
	/*
	 * Armed wakeups, per CPU (docs/design.md, "Waking the reader").
	 * A reader that has caught up stores a new gen and its at (A2),
	 * then makes every writer pass a full barrier (A3); a writer that
	 * sees gen != its meta's wake_ack after a commit, and has committed
	 * up to at, claims gen in wake_ack and rings its doorbell once
	 * (hvt_rb_wake_due()).
	 */
	struct hvt_ctrl_wake wake[HVT_ABI_MAX_CPUS];	/* 0x1800 */
	/* The owner's read position per CPU (host-only, see above). */
	struct hvt_ctrl_pos read_pos[HVT_ABI_MAX_CPUS];	/* 0x2000 */
	uint8_t reserved3[0x4000 - 0x3800];
};
HVT_STATIC_ASSERT(sizeof(struct hvt_control) == HVT_CONTROL_SIZE,
		  "control is four pages");
HVT_STATIC_ASSERT(offsetof(struct hvt_control, sync_req) == 0x10, "sync");
HVT_STATIC_ASSERT(offsetof(struct hvt_control, cmd_seq) == 0x18, "cmd");
HVT_STATIC_ASSERT(offsetof(struct hvt_control, clock) == 0x20, "clock");
HVT_STATIC_ASSERT(offsetof(struct hvt_control, enable) == 0x800, "enable");
HVT_STATIC_ASSERT(offsetof(struct hvt_control, consumer) == 0x1000,
		  "consumer");
HVT_STATIC_ASSERT(offsetof(struct hvt_control, reset_req) == 0x1400, "reset");
HVT_STATIC_ASSERT(offsetof(struct hvt_control, wake) == 0x1800, "wake");
HVT_STATIC_ASSERT(offsetof(struct hvt_control, read_pos) == 0x2000,
		  "read_pos");

/* --- per-CPU meta (writer-owned) ------------------------------------ */

/*
 * The commit word.  One store of it publishes everything a write did:
 *
 *   63                 32 31          16 15           0
 *  +---------------------+--------------+--------------+
 *  | seq (sub-buffer no.)|   entries    |    offset    |
 *  +---------------------+--------------+--------------+
 *
 * seq:     sequence number of the current (tail) sub-buffer; its slot is
 *          seq & (nr_subbufs - 1) (nr_subbufs is a power of two, so slots
 *          stay consecutive across the 2^32 wrap).  Compared modulo 2^32.
 * entries: data events committed on that sub-buffer.
 * offset:  bytes committed after the 16-byte page header.
 */
#define HVT_WORD_SEQ(w)		((uint32_t)((w) >> 32))
#define HVT_WORD_ENTRIES(w)	((uint32_t)(((w) >> 16) & 0xffff))
#define HVT_WORD_OFFSET(w)	((uint32_t)((w) & 0xffff))
#define HVT_WORD(seq, ent, off)						\
	(((uint64_t)(uint32_t)(seq) << 32) |				\
	 ((uint64_t)((ent) & 0xffff) << 16) | ((uint64_t)(off) & 0xffff))

/*
 * Per sub-buffer descriptor.  'seq' is written (then a release fence)
 * before any byte of a reused slot changes, so a host that reads 'seq'
 * before and after copying a page knows whether the copy is intact.
 * entries_before + lost_before count every event the writer handled before
 * this sub-buffer began; the host derives exact loss counts from them.
 */
struct hvt_subbuf_desc {
	uint32_t seq;			/* 0x00 page sequence now in the slot */
	uint32_t flags;			/* 0x04 reserved, 0 */
	uint64_t entries_before;	/* 0x08 events committed before it */
	uint64_t lost_before;		/* 0x10 events dropped before it */
	uint64_t missed;		/* 0x18 dropped right before it */
};
HVT_STATIC_ASSERT(sizeof(struct hvt_subbuf_desc) == 32, "desc");

struct hvt_cpu_meta {
	/*
	 * Commit word, see HVT_WORD().  Writer: release store after all
	 * bytes it publishes.  Host: acquire load, then read those bytes.
	 */
	uint64_t write;			/* 0x00 */
	/*
	 * Timestamp of the last committed event, valid only while
	 * ts_key == write.  A write stores ts_key = HVT_TS_KEY_INVALID, the
	 * new ts, then ts_key = new word, all before the commit store; a
	 * later writer loads ts_key, ts, (acquire fence) ts_key and trusts
	 * ts only if both keys equal the word it read.
	 */
	uint64_t ts_key;		/* 0x08 */
	uint64_t ts;			/* 0x10 */
	/* Events dropped because the ring was full (consume mode). */
	uint64_t lost;			/* 0x18 */
	uint32_t cpu;			/* 0x20 */
	uint32_t reset_ack;		/* 0x24 last control reset_req served */
	uint64_t ctrl_errors;		/* 0x28 hostile control values seen */
	uint32_t reset_seq;		/* 0x30 first page after the last reset */
	/*
	 * The newest wakeup gen (struct hvt_ctrl_wake) a writer claimed,
	 * with a compare-and-swap, so one writer rings per arming.
	 */
	uint32_t wake_ack;		/* 0x34 */
	/*
	 * Events that could not be placed in any CPU buffer: written on a
	 * CPU the area has no buffer for (counted in the buffer of
	 * cpu % nr_cpus), or given up after too many failed attempts
	 * (counted in the buffer tried).  Any writer of the area may add to
	 * it, with a relaxed atomic add (hvt_rb_count_unplaced()); the host
	 * reports the increase as lost with the buffer's next page.
	 */
	uint64_t unplaced;		/* 0x38 */
	struct hvt_subbuf_desc desc[];	/* 0x40 nr_subbufs entries */
};
HVT_STATIC_ASSERT(offsetof(struct hvt_cpu_meta, write) == 0, "write");
HVT_STATIC_ASSERT(offsetof(struct hvt_cpu_meta, lost) == 0x18, "lost");
HVT_STATIC_ASSERT(offsetof(struct hvt_cpu_meta, reset_seq) == 0x30, "reset");
HVT_STATIC_ASSERT(offsetof(struct hvt_cpu_meta, unplaced) == 0x38, "unplaced");
HVT_STATIC_ASSERT(offsetof(struct hvt_cpu_meta, desc) == 0x40, "desc");

#define HVT_TS_KEY_INVALID	(~0ULL)

/* --- the Linux ring-buffer mmap ABI (include/uapi/linux/trace_mmap.h) - */

/*
 * Debian 12's linux-libc-dev predates this header, so it is carried here.
 * The host presents every CPU buffer, remote or local kernel, through it.
 */
struct hvt_trace_buffer_meta {
	uint32_t meta_page_size;	/* 0 */
	uint32_t meta_struct_len;	/* 4 */
	uint32_t subbuf_size;		/* 8 */
	uint32_t nr_subbufs;		/* 12 reader page included */
	struct {
		uint64_t lost_events;	/* 16 */
		uint32_t id;		/* 24 */
		uint32_t read;		/* 28 */
	} reader;
	uint64_t flags;			/* 32 */
	uint64_t entries;		/* 40 */
	uint64_t overrun;		/* 48 */
	uint64_t read;			/* 56 */
	uint64_t pages_lost;		/* 64 (Reserved1 in 6.10..7.0) */
	uint64_t pages_touched;		/* 72 (Reserved2 in 6.10..7.0) */
};
HVT_STATIC_ASSERT(sizeof(struct hvt_trace_buffer_meta) == 80, "meta 80");
HVT_STATIC_ASSERT(offsetof(struct hvt_trace_buffer_meta, reader.id) == 24,
		  "reader.id");
HVT_STATIC_ASSERT(offsetof(struct hvt_trace_buffer_meta, overrun) == 48,
		  "overrun");

/* _IO('R', 0x20) */
#define HVT_TRACE_MMAP_IOCTL_GET_READER	0x5220

/* --- layout helpers (shared by writers and the host validator) ------ */

static inline uint64_t hvt_align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/* Bytes of the per-CPU meta region for nr_subbufs descriptors. */
static inline uint32_t hvt_meta_size(uint32_t nr_subbufs)
{
	return (uint32_t)hvt_align_up(sizeof(struct hvt_cpu_meta) +
				      (uint64_t)nr_subbufs *
					      sizeof(struct hvt_subbuf_desc),
				      HVT_AREA_ALIGN);
}

/* Bytes of one CPU section. */
static inline uint64_t hvt_cpu_stride(uint32_t nr_subbufs, uint32_t subbuf_size)
{
	return hvt_meta_size(nr_subbufs) + (uint64_t)nr_subbufs * subbuf_size;
}

#define HVT_CONTROL_OFFSET	((uint64_t)HVT_AREA_HEADER_SIZE)
#define HVT_CPU_OFFSET		((uint64_t)HVT_AREA_HEADER_SIZE + HVT_CONTROL_SIZE)

/* Bytes of a whole area with the given geometry. */
static inline uint64_t hvt_area_size(uint32_t nr_cpus, uint32_t nr_subbufs,
				     uint32_t subbuf_size)
{
	return HVT_CPU_OFFSET +
	       (uint64_t)nr_cpus * hvt_cpu_stride(nr_subbufs, subbuf_size);
}

#endif /* HVTRACE_ABI_H */
