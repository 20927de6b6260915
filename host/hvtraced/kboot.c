// SPDX-License-Identifier: MIT
/*
 * hvtraced: a rig guest kernel's files of this boot, sent by its agent.
 *
 * The formats cache (kformats.c) keeps a guest kernel's formats per
 * build, so it cannot say what belongs to one boot: the ring instance's
 * trace_clock (the clock its timestamps are in), saved_cmdlines, and the
 * /proc/kallsyms lines of the modules loaded.  An agent that said so in
 * its HELLO (HVT_CAP_AGENT_KBOOT) sends them at the start of each session
 * with a daemon that takes them (HVT_CAP_DAEMON_KBOOT): KFORMATS BOOT,
 * a KFILE per piece of each file, KFORMATS BOOT_END with the counts.
 * They are kept in memory for the area of that session and served to
 * tools as TEXT KBOOT_CLOCK, KBOOT_CMDLINES and KBOOT_MODSYMS, so that a
 * tool that reads the guest kernel's pages through hvtraced needs
 * nothing of the guest's console.
 *
 * Everything is hostile: only those three names, each file once, pieces
 * in order and contiguous, bounded per file (KB_*_MAX) and in all, no
 * NUL byte (they are texts that the tools parse again as hostile); the
 * counts at BOOT_END must match what arrived.  A broken upload keeps
 * nothing and is answered with why at BOOT_END.  Memory: what was sent,
 * at most KB_TOTAL_MAX, held from BOOT_END until the next BOOT_END.
 *
 * Like kformats.c, this file knows nothing of connections; agent.c
 * routes the messages and tool_text.c serves the texts.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"

#define KB_CLOCK_MAX	4096u
#define KB_CMDLINES_MAX (1u << 20) /* 32768 entries of the kernel's */
#define KB_MODSYMS_MAX	(4u << 20)

static const struct {
	const char *name;
	uint32_t max;
} kb_files[KB_NR] = {
	[KB_CLOCK] = {"trace_clock", KB_CLOCK_MAX},
	[KB_CMDLINES] = {"saved_cmdlines", KB_CMDLINES_MAX},
	[KB_MODSYMS] = {"kallsyms", KB_MODSYMS_MAX},
};

static void kb_drop(struct kboot_file *f)
{
	free(f->text);
	f->text = NULL;
	f->len = 0;
	f->have = false;
}

static int kb_fail(struct kboot *kb, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int kb_fail(struct kboot *kb, int err, const char *fmt, ...)
{
	va_list ap;
	unsigned int i;

	if (!kb->failed) {
		va_start(ap, fmt);
		vsnprintf(kb->why, sizeof(kb->why), fmt, ap);
		va_end(ap);
		kb->failed = err;
	}
	for (i = 0; i < KB_NR; i++)
		kb_drop(&kb->in[i]);
	kb->cur = -1;
	return err;
}

void kboot_free(struct kboot *kb)
{
	unsigned int i;

	if (!kb)
		return;
	for (i = 0; i < KB_NR; i++) {
		kb_drop(&kb->in[i]);
		kb_drop(&kb->done[i]);
	}
	free(kb);
}

void kboot_abort(struct kboot *kb)
{
	unsigned int i;

	for (i = 0; i < KB_NR; i++)
		kb_drop(&kb->in[i]);
	kb->active = false;
	kb->cur = -1;
}

int kboot_begin(struct kboot *kb, const struct hvt_m_kformats *m)
{
	kboot_abort(kb);
	kb->failed = 0;
	kb->why[0] = '\0';
	if (m->nr_files > KB_NR)
		return kb_fail(kb, -E2BIG,
			       "%u files announced for this boot; at most %u "
			       "(trace_clock, saved_cmdlines, kallsyms)",
			       m->nr_files, KB_NR);
	kb->active = true;
	kb->files = 0;
	kb->bytes = 0;
	return 0;
}

int kboot_file(struct kboot *kb, const struct hvt_m_kfile *m)
{
	struct kboot_file *f;
	char *t;
	int i;

	if (!kb->active || kb->failed)
		return kb->failed ? kb->failed : -EPROTO;
	for (i = 0; i < KB_NR; i++)
		if (m->name.len == strlen(kb_files[i].name) &&
		    !memcmp(m->name.ptr, kb_files[i].name, m->name.len))
			break;
	if (i == KB_NR)
		return kb_fail(kb, -EINVAL,
			       "'%.*s' is not a file of a boot (trace_clock, "
			       "saved_cmdlines, kallsyms)",
			       (int)(m->name.len > 64 ? 64 : m->name.len),
			       m->name.ptr);
	f = &kb->in[i];
	if (kb->cur != i) {
		if (kb->cur >= 0)
			return kb_fail(kb, -EPROTO,
				       "'%s' began before '%s' "
				       "ended",
				       kb_files[i].name,
				       kb_files[kb->cur].name);
		if (f->have || m->offset)
			return kb_fail(kb, -EPROTO,
				       "'%s' sent twice, or not from offset 0",
				       kb_files[i].name);
		kb->cur = i;
	}
	if (m->offset != f->len)
		return kb_fail(kb, -EPROTO,
			       "'%s': a piece at offset %llu, expected %zu",
			       kb_files[i].name, (unsigned long long)m->offset,
			       f->len);
	if (m->len > kb_files[i].max - f->len)
		return kb_fail(kb, -EFBIG, "'%s' goes past %u bytes",
			       kb_files[i].name, kb_files[i].max);
	if (m->len && memchr(m->data, '\0', m->len))
		return kb_fail(kb, -EINVAL, "'%s' holds a NUL byte",
			       kb_files[i].name);
	t = realloc(f->text, f->len + m->len + 1);
	if (!t)
		return kb_fail(kb, -ENOMEM, "out of memory");
	f->text = t;
	memcpy(t + f->len, m->data, m->len);
	f->len += m->len;
	t[f->len] = '\0';
	kb->bytes += m->len;
	if (m->flags & HVT_KFILE_LAST) {
		f->have = true;
		kb->files++;
		kb->cur = -1;
	}
	return 0;
}

int kboot_end(struct kboot *kb, const struct hvt_m_kformats *m,
	      uint64_t generation, char *msg, size_t msgsize)
{
	unsigned int i;
	int ret = kb->failed;

	if (!ret && !kb->active)
		ret = kb_fail(kb, -EPROTO, "BOOT_END without BOOT");
	if (!ret && (kb->cur >= 0 || m->nr_files != kb->files ||
		     m->total_bytes != kb->bytes))
		ret = kb_fail(kb, -EPROTO,
			      "BOOT_END says %u files, %llu bytes; %u whole "
			      "files, %llu bytes arrived",
			      m->nr_files, (unsigned long long)m->total_bytes,
			      kb->files, (unsigned long long)kb->bytes);
	kb->active = false;
	if (ret) {
		snprintf(msg, msgsize, "%s", kb->why);
		return ret;
	}
	for (i = 0; i < KB_NR; i++) {
		kb_drop(&kb->done[i]);
		kb->done[i] = kb->in[i];
		memset(&kb->in[i], 0, sizeof(kb->in[i]));
	}
	kb->generation = generation;
	kb->kept = true;
	snprintf(msg, msgsize, "this boot's %u file%s, %llu bytes", kb->files,
		 kb->files == 1 ? "" : "s", (unsigned long long)kb->bytes);
	return 0;
}

int kboot_text(const struct kboot *kb, unsigned int which, uint64_t generation,
	       const char **text, size_t *len)
{
	const struct kboot_file *f;

	if (!kb || !kb->kept || kb->generation != generation || which >= KB_NR)
		return -ENOENT;
	f = &kb->done[which];
	if (!f->have)
		return -ENODATA;
	*text = f->text ? f->text : "";
	*len = f->len;
	return 0;
}
