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

struct dec_comm {
	int pid;		/* 0: free slot (pid 0 is "<idle>") */
	char comm[16];
};

struct hvtrace_decoder {
	struct tep_handle *tep;
	struct trace_seq seq;
	uint8_t *scratch;	/* DEC_SCRATCH_SIZE bytes, zero past the
				 * record */
	uint32_t scratch_used;
	struct dec_comm *comms;	/* open addressing, power-of-two size */
	uint32_t comm_cap;
	uint32_t comm_nr;
	bool hyp;	/* a hypervisor writer's: pid 0 is HVT_HYP_COMM */
};

#endif /* HVT_HOST_DECODE_H */
