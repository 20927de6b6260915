/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace-guest - write trace events into an hvtrace trace area from
 * user space: any number of threads and processes per CPU, preemptible,
 * migratable and killable at any instant.
 *
 * A process opens the area (a PCI BAR resource file inside a VM, a
 * /dev/shm file locally, or two file descriptors handed over by the guest
 * agent), binds event handles to the ids and enable bits the host owns,
 * and then writes:
 *
 *	static struct hvtg_event ev_sample = HVTG_EVENT_INIT;
 *
 *	hvtg_area_open(NULL, &area);            // $HVTRACE_AREA or default
 *	hvtg_event_bind(area, &ev_sample, id, enable_bit);
 *	...
 *	if (hvtg_enabled(&ev_sample))           // one load and a mask
 *		hvtg_write(&ev_sample, &payload, sizeof(payload));
 *
 * hvtg_write() fills the ftrace common fields, takes a timestamp from the
 * area's clock and commits the record into the ring of the CPU it runs on
 * inside a Linux restartable sequence: no lock, no system call.  A write
 * either commits completely or leaves nothing a reader would believe, so a
 * thread that is preempted, migrated, signalled or SIGKILLed mid-write
 * never corrupts or wedges a CPU buffer.  See docs/guest-writer.md.
 *
 * Functions return 0 (or a count) on success and a negative errno on
 * failure; hvtg_last_error() then says what was wrong and what to do.
 */
#ifndef HVTRACE_GUEST_H
#define HVTRACE_GUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Area path used when hvtg_area_open() gets NULL and $HVTRACE_AREA is
 * unset: in a guest, the init script links it to the trace area's PCI BAR
 * resource file (qemu-scripts/guest-init.sh). */
#define HVTG_DEFAULT_AREA	"/dev/hvtrace-area"

/* Most payload pieces hvtg_writev() takes in one event. */
#define HVTG_MAX_IOV		8

/**
 * hvtg_last_error - text describing the calling thread's last failure
 *
 * Valid until the next failing call on the same thread.
 */
const char *hvtg_last_error(void);

/* --- areas ------------------------------------------------------------ */

struct hvtg_area;	/* opaque */

/**
 * hvtg_area_open - open a formatted trace area for writing
 * @spec: "PATH[@OFFSET[+SIZE]]" (OFFSET and SIZE take 0x hex and K/M/G
 *        suffixes; SIZE defaults to the rest of the file), or NULL for
 *        $HVTRACE_AREA, else HVTG_DEFAULT_AREA
 * @out:  the new handle
 *
 * Opens PATH twice: read-write for the CPU sections and read-only for the
 * control page, which is mapped PROT_READ (the host owns it).  The area
 * must already be formatted (by the agent, or hvtg_area_create()).
 *
 * Return: 0; -ENOENT/-EACCES (PATH), -EINVAL (not a valid area; see
 * hvtg_last_error()), -EAGAIN (not formatted yet), -ENOSYS (this kernel or
 * architecture has no usable restartable sequences).
 */
int hvtg_area_open(const char *spec, struct hvtg_area **out);

/* File descriptors for hvtg_area_open_fds(). */
struct hvtg_area_fds {
	int area_fd;		/* read-write: header and CPU sections */
	uint64_t area_offset;	/* where the area starts in area_fd (4K) */
	uint64_t area_size;	/* bytes of the area; 0: to the end */
	int ctrl_fd;		/* read-only: the control page;
				 * -1: map it from area_fd */
	uint64_t ctrl_offset;	/* file offset of the control page in
				 * ctrl_fd (4K multiple) */
};

/**
 * hvtg_area_set_doorbell - let the host sleep until this process writes
 * @a:            an open area
 * @agent_socket: the agent's socket (NULL: $HVTRACE_AGENT_SOCKET, else
 *                /run/hvtrace/agent.sock)
 *
 * Connects the agent's doorbell (the socket path with ".bell" appended)
 * and registers the process for membarrier(2) GLOBAL_EXPEDITED, so that
 * a write that crosses a wakeup the host armed rings the host once.
 * Where the process may open the guest's ivshmem doorbell register
 * ($HVTRACE_BELL, else /dev/hvtrace-bell), it maps it and rings with one
 * store, which QEMU turns into an eventfd signal to hvtraced; otherwise
 * it sends the agent one datagram, which the agent relays.  hvtg_area_open() and the client library's
 * hvtc_open() call it; an area opened with hvtg_area_open_fds() alone has
 * no doorbell, and the host polls it.  Where the kernel refuses the
 * registration, the agent is told, and the host polls.
 *
 * Return: 0; -ENOENT, -ECONNREFUSED (no agent doorbell there), or the
 * membarrier(2) error.  Writing works either way.
 */
int hvtg_area_set_doorbell(struct hvtg_area *a, const char *agent_socket);

/**
 * hvtg_area_open_fds - open a trace area from file descriptors
 * @fds: the descriptors (for example handed over by the guest agent over
 *       a UNIX socket); they are not closed and may be closed after return
 * @out: the new handle
 *
 * The control page is always mapped PROT_READ, whether or not ctrl_fd is
 * given.  Return: as hvtg_area_open().
 */
int hvtg_area_open_fds(const struct hvtg_area_fds *fds,
		       struct hvtg_area **out);

/**
 * hvtg_area_close - unmap an area and free the handle; NULL is a no-op
 *
 * Unbind (or stop using) every event bound to the area first: a write
 * racing with close touches unmapped memory.
 */
void hvtg_area_close(struct hvtg_area *a);

struct hvtg_area_info {
	char name[32];
	uint32_t nr_cpus;	/* CPU buffers in the area */
	uint32_t nr_subbufs;
	uint32_t subbuf_size;
	uint32_t mode;		/* HVT_MODE_* */
	uint32_t clock_id;	/* HVT_CLOCK_* */
	uint64_t clock_freq_hz;
	uint64_t area_size;
	uint32_t max_payload;	/* largest payload one event can carry */
};

/** hvtg_area_get_info - geometry and clock of an open area */
int hvtg_area_get_info(const struct hvtg_area *a, struct hvtg_area_info *info);

/* --- formatting (whoever creates the area: the agent, a local writer) - */

/* A writer clock, as written into the area header. */
struct hvtg_clock {
	uint32_t clock_id;	/* HVT_CLOCK_COUNTER or HVT_CLOCK_MONO_NS */
	uint32_t mult;		/* nominal ns = counter * mult >> shift */
	uint32_t shift;
	uint64_t freq_hz;	/* counter frequency; 0 for ns clocks */
};

/**
 * hvtg_clock_describe - describe a writer clock for an area header
 * @clock_id: HVT_CLOCK_COUNTER, HVT_CLOCK_MONO_NS, or 0 for the configured
 *            default (CONFIG_HVT_CLOCK_*_SRC)
 * @out:      filled on success
 *
 * For the counter it finds the frequency: CNTFRQ_EL0 on aarch64; on
 * x86_64 CPUID leaf 0x15 when it states both the crystal frequency and the
 * TSC ratio, else a 20 ms measurement of the TSC against
 * CLOCK_MONOTONIC_RAW.  The host refines the conversion with time-sync
 * samples, so the nominal frequency only has to be close.
 *
 * The counter must run in step on all CPUs (an invariant, synchronized
 * TSC, as on current machines and KVM guests); this is not checked.
 *
 * Return: 0, -EINVAL (unknown id), -ENOTSUP (no counter frequency could
 * be found, or an architecture without a counter).
 */
int hvtg_clock_describe(uint32_t clock_id, struct hvtg_clock *out);

/* Geometry for hvtg_area_format(); 0 in a field means "the default". */
struct hvtg_format {
	uint32_t nr_cpus;	/* 0: CPUs configured here, capped at
				 * CONFIG_HVT_MAX_CPUS */
	uint32_t nr_subbufs;	/* per CPU, power of two;
				 * 0: as many as fit */
	uint32_t subbuf_size;	/* 0: CONFIG_HVT_SUBBUF_SIZE */
	uint32_t mode;		/* HVT_MODE_*; 0: configured default */
	uint32_t clock_id;	/* HVT_CLOCK_*; 0: configured default */
	uint32_t writer_kind;	/* HVT_WRITER_*; 0: HVT_WRITER_GUEST */
	const char *name;	/* writer name, NULL: "guest" */
	uint64_t kernel_size;	/* bytes at the end of the area kept for a
				 * kernel section (agent copy mode, see
				 * <hvtrace/abi.h>), a multiple of 4096;
				 * 0: none */
};

/**
 * hvtg_area_format - format a trace area in memory the caller mapped
 * @mem:  start of the area, 4 KiB aligned, mapped read-write
 * @size: bytes available at @mem
 * @f:    geometry (NULL: all defaults)
 *
 * Writes the header (with the clock from hvtg_clock_describe()) and
 * formats every CPU buffer; the header magic is published last.  The
 * control page is left alone (the host owns it): each CPU buffer starts at
 * the consumer position found there, so a stale page cannot make a fresh
 * ring look full.  Do not format an area that writers are using.
 *
 * Return: 0, -EINVAL (bad geometry), -ENOSPC (does not fit in @size),
 * -ENOTSUP (clock).
 */
int hvtg_area_format(void *mem, uint64_t size, const struct hvtg_format *f);

/**
 * hvtg_area_create - create (or truncate) a file and format an area in it
 * @path: a file, typically under /dev/shm
 * @size: bytes (a multiple of 4096)
 * @f:    geometry (NULL: all defaults)
 *
 * Return: as hvtg_area_format(), or -errno from open/ftruncate/mmap.
 */
int hvtg_area_create(const char *path, uint64_t size,
		     const struct hvtg_format *f);

/* --- events ------------------------------------------------------------ */

/*
 * An event handle.  Caller storage (usually a static variable initialised
 * with HVTG_EVENT_INIT); the fields are private to the library: use the
 * functions below.  An unbound handle is never enabled.
 *
 * Today a handle is filled by hvtg_event_bind() with an id and enable bit
 * the caller already knows.  Registration of user events through the
 * agent and the host fills the same handle, so code written against
 * hvtg_enabled()/hvtg_write() does not change when it arrives.
 */
struct hvtg_event {
	const uint64_t *priv_word;	/* enable word on the control page */
	uint64_t priv_mask;		/* this event's bit in it */
	struct hvtg_area *priv_area;
	uint32_t priv_id;		/* common_type */
	uint32_t priv_bit;		/* enable bit index */
};

/* Always zero: where unbound handles point. */
extern const uint64_t hvtg_disabled_word;

#define HVTG_EVENT_INIT	{ &hvtg_disabled_word, 0, NULL, 0, 0 }

/**
 * hvtg_event_bind - attach a handle to an event of an area
 * @a:          area
 * @ev:         handle to fill
 * @id:         the event id the host assigned (written as common_type)
 * @enable_bit: the event's bit in the control page's enable bitmap
 *
 * Bind before other threads use the handle; to move a handle to another
 * event, unbind it first.
 *
 * Return: 0, or -EINVAL (id above 65535, bit not below 16384).
 */
int hvtg_event_bind(struct hvtg_area *a, struct hvtg_event *ev, uint32_t id,
		    uint32_t enable_bit);

/** hvtg_event_unbind - make a handle permanently disabled again */
void hvtg_event_unbind(struct hvtg_event *ev);

/**
 * hvtg_enabled - is the event enabled by the host now?
 * @ev: a handle (bound or not)
 *
 * One load of the enable word and a mask; no call, no fence.  The bit is
 * a hint: an event that was enabled when checked may be written just
 * after the host disabled it.
 */
static inline bool hvtg_enabled(const struct hvtg_event *ev)
{
	const uint64_t *w = __atomic_load_n(&ev->priv_word, __ATOMIC_RELAXED);

	/* Relaxed: nothing is ordered against the host's bit flip. */
	return (__atomic_load_n(w, __ATOMIC_RELAXED) & ev->priv_mask) != 0;
}

/**
 * hvtg_write - write one event into the current CPU's ring
 * @ev:      a bound handle
 * @payload: the event's fields, laid out as its format describes
 * @len:     bytes of @payload
 *
 * Fills the common fields (common_type = the event id, common_flags and
 * common_preempt_count 0, common_pid = the calling thread's id as ftrace
 * does, the TID rather than the process id), stamps the area clock and
 * commits the record with the restartable-sequence executor.  No system
 * call on this path once the thread has written its first event.
 *
 * Return: 0 when committed; -ENODATA when the event is disabled (nothing
 * written); -ENOSPC when the ring is full in consume mode (the event is
 * counted as lost in the ring); -E2BIG when the record cannot fit in a
 * sub-buffer; -EBADF for an unbound handle; -ENXIO when the thread runs on
 * a CPU the area has no buffer for; -ENOSYS without restartable sequences;
 * -EAGAIN if the write was retried 2^20 times in a row without committing
 * (something keeps rewriting the buffer).  -ENXIO and -EAGAIN events are
 * counted in the area as unplaced, which the host reports as lost.
 */
int hvtg_write(const struct hvtg_event *ev, const void *payload, size_t len);

/**
 * hvtg_writev - hvtg_write() with the payload in up to HVTG_MAX_IOV pieces
 *
 * The pieces are concatenated after the common fields.  Return: as
 * hvtg_write(), and -EINVAL for more than HVTG_MAX_IOV pieces or a piece
 * with a NULL base and a non-zero length.
 */
int hvtg_writev(const struct hvtg_event *ev, const struct iovec *iov,
		int iovcnt);

/* --- statistics -------------------------------------------------------- */

/* What the calling thread's writes did (counted since the thread began). */
struct hvtg_thread_stats {
	uint64_t committed;	/* events committed */
	uint64_t dropped;	/* events counted lost: ring full */
	uint64_t sealed;	/* pages closed because the ring was full */
	uint64_t aborted;	/* critical sections the kernel aborted
				 * (preemption, migration, signal) */
	uint64_t cpu_moved;	/* plans refused: the thread changed CPU */
	uint64_t stale;		/* plans refused: another writer
				 * committed first */
	uint64_t unplaced;	/* events no CPU buffer took (-ENXIO,
				 * -EAGAIN), counted lost in the area */
};

/** hvtg_get_thread_stats - the calling thread's counters */
int hvtg_get_thread_stats(struct hvtg_thread_stats *st);

#ifdef __cplusplus
}
#endif

#endif /* HVTRACE_GUEST_H */
