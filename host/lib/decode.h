/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace internals: the decoder handle shared by decode.c and text.c.
 */
#ifndef HVT_HOST_DECODE_H
#define HVT_HOST_DECODE_H

#include <event-parse.h>
#include <trace-seq.h>

#include "hvtrace-local.h"

/* Records are copied here, zero-padded, before libtraceevent sees them:
 * fields (validated to lie within 64 KiB) and __data_loc strings (16-bit
 * offset and length) can then never read outside it. */
#define DEC_SCRATCH_SIZE	(192u * 1024u)

/*
 * The pid -> comm table: one entry per slot pid % DEC_COMM_SLOTS, as the
 * kernel's own map (map_pid_to_cmdline[], indexed by pid &
 * (PID_MAX_DEFAULT - 1)) holds one task per slot: a pid takes its slot
 * from the pid before it (counted in comm_replaced), so the table holds
 * at most DEC_COMM_SLOTS entries whatever a ring or a table names.  Open
 * addressing over the slot numbers while small, the plain array of
 * DEC_COMM_SLOTS once it would be as large.
 */
#define DEC_COMM_SLOTS		32768u	/* PID_MAX_DEFAULT */
#define DEC_COMM_MIN		64u
#define DEC_PID_MAX		4194304	/* PID_MAX_LIMIT */

struct dec_comm {
	int pid;		/* 0: free slot (pid 0 is "<idle>") */
	bool learned;		/* named by a record of the ring */
	uint64_t ts;		/* that record's ring time */
	char comm[16];
};

/*
 * Where the records of one event name tasks (comm.c): up to
 * DEC_LEARN_PAIRS (comm, pid) field pairs, looked up once per event id.
 */
#define DEC_LEARN_PAIRS		2
#define DEC_LEARN_EVENTS	250	/* events with pairs, at most */

struct dec_learn {
	uint16_t comm[DEC_LEARN_PAIRS];	/* offset of a char[16] */
	uint16_t pid[DEC_LEARN_PAIRS];	/* offset of a 4-byte pid */
	uint8_t n;
};

struct hvtrace_decoder {
	struct tep_handle *tep;
	struct trace_seq seq;
	uint8_t *scratch;	/* DEC_SCRATCH_SIZE bytes, zero past the
				 * record */
	uint32_t scratch_used;
	struct dec_comm *comms;	/* see above; power-of-two size */
	uint32_t comm_cap;
	uint32_t comm_nr;
	uint32_t comm_learned;	/* entries named by records */
	uint64_t comm_replaced;	/* entries a later pid of the slot took */
	/* Event id -> 0: not looked up, 1: names no task, 2 + i:
	 * learn_ev[i]; 65536 entries, allocated at the first record. */
	uint8_t *learn_of;
	struct dec_learn *learn_ev;	/* DEC_LEARN_EVENTS entries */
	uint32_t learn_nr;
	bool hyp;	/* a hypervisor writer's: pid 0 is HVT_HYP_COMM */
	struct hvtrace_ksyms *ksyms;	/* the resolver's table (ksyms.c) */
	struct trace_seq sym_seq;	/* a line with its symbols expanded */
};

/* comm.c */
HVT_INTERNAL int hvt_dec_comm_init(struct hvtrace_decoder *d);
HVT_INTERNAL void hvt_dec_comm_fini(struct hvtrace_decoder *d);
/* A format for event @id arrived: look its fields up again. */
HVT_INTERNAL void hvt_dec_learn_forget(struct hvtrace_decoder *d,
				       unsigned int id);

#endif /* HVT_HOST_DECODE_H */
