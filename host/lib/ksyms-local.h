/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace: what ksyms.c (the table, the text parser, the resolver) and
 * ksyms_ram.c (the table decoded from guest RAM) share; hidden, never
 * installed.
 */
#ifndef HVT_KSYMS_LOCAL_H
#define HVT_KSYMS_LOCAL_H

#include <stdint.h>

#include "hvtrace-local.h"

struct ks_sym {
	uint64_t addr;
	uint32_t name;		/* offset in strs */
	uint16_t mod;		/* 0: the image; else mods[mod - 1] */
	char type;
};

struct hvtrace_ksyms {
	struct ks_sym *syms;	/* in the order added */
	uint32_t nr, cap;
	uint32_t *idx;		/* lookup order: by address, no A/a */
	uint32_t nr_idx;
	char *strs;		/* NUL-ended names and module names */
	size_t strs_len, strs_cap;
	uint32_t *mods;		/* offsets in strs */
	uint32_t *mod_hash;	/* KS_MOD_HASH slots: 0 empty, else mod */
	struct hvtrace_ksyms_info info;
	/* The resolver's last answer: name and tail (ks_resolve()). */
	char resolved[HVTRACE_KSYMS_NAME_MAX + HVTRACE_KSYMS_MODULE_MAX + 24];
};

HVT_INTERNAL struct hvtrace_ksyms *hvt_ks_new(void);
/* Every byte in 0x21..0x7e. */
HVT_INTERNAL bool hvt_ks_printable(const char *s, size_t n);
/*
 * Add one symbol; @name (@nlen bytes) and @mod (@mlen bytes, 0: the
 * image) are checked.  Return: 0; -EINVAL (not a valid symbol: @why says
 * which part); -ENOMEM.
 */
HVT_INTERNAL int hvt_ks_add(struct hvtrace_ksyms *ks, uint64_t addr,
			    char type, const char *name, size_t nlen,
			    const char *mod, size_t mlen, const char **why);
/* All added: sort the lookup index.  Return: 0, -ENOENT (empty),
 * -ENODATA (every address 0), -ENOMEM; @what names the source. */
HVT_INTERNAL int hvt_ks_finish(struct hvtrace_ksyms *ks, const char *what);

#endif /* HVT_KSYMS_LOCAL_H */
