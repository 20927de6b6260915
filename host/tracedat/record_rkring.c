// SPDX-License-Identifier: MIT
/*
 * libhvtrace: the guest kernel's own ring of a remote of hvtraced, in
 * the remote set (record_remote.c) beside the remote's user events.
 *
 * A rig guest started with --kernel-events leaves its kernel's pages where
 * hvtraced reads them (its RAM file, or its area's kernel section) and
 * serves them beside the remote's own CPUs; the caller opens them as
 * served (hvtrace_daemon_kring_open_served(), with a folder of the guest's
 * formats) and hands them over with
 * hvtrace_tracedat_record_add_remote_kring().  They are read through the
 * kernel source of kernel.c (its guest mode: one ring per CPU on the
 * remote set's feed, rk_ring_open()), records go into the remote set's
 * batch, and so:
 *
 *   - one buffer of its own, "NAME-kernel", with the guest's CPUs: guest
 *     CPU numbers never mix with the host's or the agent's;
 *   - timestamps: the ring's clock must be mono, the clock of the guest's
 *     agent, so the records share the remote's clock model (CLOCK) and land
 *     on the host's CLOCK_MONOTONIC with the same clock model and error
 *     bound as the remote's user events;
 *   - event ids: the guest's kernel ids collide with the host kernel's
 *     (often the very same kernel) and with user events; each id is given
 *     a file id at first sight by the file-wide rules (kept when free,
 *     shared with a buffer that placed the same format, else the highest
 *     free id below 0x8000), written in every record's common_type while
 *     packing; the formats saved list the events under those ids;
 *   - comms: guest pids are not host pids; the guest's saved_cmdlines
 *     from its formats folder, and the names the ring's own sched records
 *     give (the library's hvtrace_decoder_learn_comms(): sched_switch's
 *     prev and next, the wakeups', fork's parent and child, ...), name
 *     them, a record's name over the table's and the latest in time
 *     winning (pids the host's own events named keep the host's name: a
 *     trace.dat has one pid table).
 *
 * Or the ring goes in a file of its own, the guest file of a host/guest
 * pair as trace-cmd record -A writes one (..._add_remote_kring_pair()):
 * a recording of the ring alone (record.c's guest kernel recording of the
 * same rings: its formats, kallsyms and comms are the guest's, its
 * times the guest's own), started, polled, drained and finished with the
 * remote set.  The two files are tied the trace-cmd way:
 *
 *   - TRACEID: a random non-zero id in each file;
 *   - GUEST (the recording's file): the guest's name, its file's trace
 *     id, and for each vCPU the host thread running it (QEMU names them
 *     "CPU N/TCG", "CPU N/KVM"; one "ALL CPUs/TCG" thread runs all vCPUs
 *     of a single-threaded TCG), which KernelShark's KVM combo plots and
 *     trace-cmd's kvm plugin look up;
 *   - TIME_SHIFT (the guest file): the remote's clock model as samples
 *     (guest time, host time - guest time), taken from the converted
 *     times of the newest records as they are read, at least
 *     RK_SHIFT_GAP_NS of guest time apart (the newest always kept), with
 *     the INTERPOLATE flag and scaling 1: trace-cmd maps a guest time
 *     between two samples linearly, as the model does.  The table is
 *     bounded (RK_SHIFT_BYTES): when full, every other sample goes and
 *     the gap doubles.  Every guest CPU gets the same table (the guest's
 *     clock is one clock).
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "rremote.h"

#define RK_SKIP_MAX (1u << 22) /* records skipped at start, per CPU */
#define RK_SHIFT_GAP_NS	     50000000ull /* TIME_SHIFT samples, guest time */
#define RK_SHIFT_BYTES	     (16u << 20) /* TIME_SHIFT option, at most */
#define RK_TSYNC_INTERPOLATE 1u		 /* TRACECMD_TSYNC_FLAG_INTERPOLATE */

struct dr_kring {
	struct dr_src *s;
	struct hvt_tdat_kernel *k;
	char name[80];
	int buffer;
	uint32_t nr_cpus;
	uint32_t subbuf_size;
	struct dr_cpu *cpu;
	uint16_t *idmap;	    /* guest id -> file id, 0: none */
	uint8_t *tried;		    /* guest ids looked up */
	struct hvtrace_catalog cat; /* the formats placed, file ids */
	/* The guest's pid -> comm table: its saved_cmdlines and the names
	 * its sched records give (guest event ids, sched and task formats) */
	struct hvtrace_decoder *dec;
	bool cmdlines_loaded;	    /* saved_cmdlines in @dec */
	uint64_t host_named;	    /* guest pids a host event had named */
	/* its CPUs: the rings of the pages hvtraced serves (rk_ring_open()) */
	struct hvt_tdat_guest_rings g;
	struct hvt_tdat_rset *set;
	struct hvtrace_daemon_kring *dk; /* the caller's */
	char *ksyms;			 /* hvtraced's KALLSYMS, or NULL */
	uint64_t t0;			 /* host time the recording started */
	struct hvtrace_kring_stats *base; /* per CPU, once started */
	struct hvtrace_tracedat_source_stats st;
	/* The guest file of a pair (NULL: the buffer NAME-kernel): the
	 * ring's own recording, its trace id, the vCPU threads of the GUEST
	 * option, and the TIME_SHIFT samples (guest time, host offset). */
	struct hvtrace_tracedat_record *pair;
	uint64_t guest_id;
	int32_t *vcpu_tid;
	uint64_t *sh_t;
	int64_t *sh_off;
	uint32_t nr_sh, max_sh;
	uint64_t sh_gap;
	uint32_t sh_journaled; /* samples in the journal's snapshot */
};

void hvt_rk_free(struct dr_kring *k)
{
	uint32_t c;

	if (!k)
		return;
	for (c = 0; k->cpu && c < k->nr_cpus; c++)
		hvt_tdat_rcpu_fini(&k->cpu[c].rc);
	free(k->cpu);
	hvt_tdat_kernel_close(k->k);
	free(k->idmap);
	free(k->tried);
	hvtrace_decoder_free(k->dec);
	free(k->base);
	hvtrace_catalog_free(&k->cat);
	hvtrace_tracedat_record_abort(k->pair);
	free(k->vcpu_tid);
	free(k->sh_t);
	free(k->sh_off);
	free(k->ksyms);
	free(k);
}

/* A guest CPU as a ring of the remote set's feed: the kernel's own
 * timestamps (the batch converts them). */
static int rk_ring_open(void *arg, int cpu, struct hvtrace_ring **out)
{
	struct dr_kring *k = arg;

	return hvtrace_daemon_kring_ring_open(k->dk, cpu, k->set->feed,
					      k->s->rec.id, out);
}

/*
 * A guest kernel address cannot be named: the file has one kallsyms, the
 * host's.  The print format of a guest event shows addresses as numbers
 * ("%ps" and friends become "%p") rather than a host symbol they are not.
 */
static void rk_plain_addresses(char *text)
{
	char *p = strstr(text, "\nprint fmt:");

	while (p && (p = strstr(p, "%p"))) {
		if (p[2] == 's' || p[2] == 'S' || p[2] == 'F' || p[2] == 'f' ||
		    p[2] == 'B')
			memmove(p + 2, p + 3, strlen(p + 3) + 1);
		p += 2;
	}
}

/* The file id of guest event @id: placed at first sight; 0 when the
 * guest's folder has no format for it. */
static int rk_place(struct hvt_tdat_rset *r, struct dr_kring *k, uint16_t id,
		    uint16_t *out)
{
	struct hvtrace_tracedat_record *rec = r->rec;
	struct hvtrace_catalog one = {0};
	const struct hvtrace_catalog_format *f;
	uint32_t fid;
	char *t = NULL, *plain;
	int ret;

	*out = 0;
	if ((k->tried[id / 8] >> (id % 8)) & 1) {
		*out = k->idmap[id];
		return 0;
	}
	k->tried[id / 8] |= (uint8_t)(1u << (id % 8));
	ret = hvt_tdat_kernel_event_format(k->k, id, &one);
	if (ret == -ENOENT || (!ret && !one.nr)) {
		hvtrace_catalog_free(&one);
		return 0; /* no format: the unknown id */
	}
	if (ret) {
		hvtrace_catalog_free(&one);
		return hvt_err(ret, "out of memory");
	}
	f = &one.fmt[0];
	plain = strdup(f->text);
	if (!plain) {
		hvtrace_catalog_free(&one);
		return hvt_err(-ENOMEM, "out of memory");
	}
	rk_plain_addresses(plain);
	/* Another buffer placed the same format (a second guest of the same
	 * kernel)?  Else its own id when free, else a free one. */
	fid = hvt_tdat_ids_find(&rec->ids, f->system, plain, NULL);
	if (!fid) {
		fid = id;
		if (!fid || hvt_tdat_ids_used(&rec->ids, rec->kern, fid))
			ret = hvt_tdat_ids_alloc(&rec->ids, rec->kern, &fid);
		if (!ret) {
			t = hvt_tdat_format_set_id(plain, fid);
			if (!t || hvtrace_catalog_add(&k->cat, f->system,
						      f->name, fid, t, -1))
				ret = hvt_err(-ENOMEM, "out of memory");
		}
		if (!ret) {
			rec->ids.text[fid] = k->cat.fmt[k->cat.nr - 1].text;
			rec->ids.sys[fid] = k->cat.fmt[k->cat.nr - 1].system;
		}
	}
	/* The events that can name tasks, under their guest ids: a format
	 * refused only names nothing. */
	if (!ret && (!strcmp(f->system, "sched") || !strcmp(f->system, "task")))
		hvtrace_decoder_add_format(k->dec, f->system, f->text,
					   strlen(f->text));
	free(t);
	free(plain);
	hvtrace_catalog_free(&one);
	if (ret)
		return ret;
	k->idmap[id] = (uint16_t)fid;
	*out = (uint16_t)fid;
	return 0;
}

int hvt_rk_put(struct hvt_tdat_rset *r, struct dr_cpu *c, uint64_t ts,
	       uint8_t *rec, uint32_t len)
{
	struct dr_kring *k = c->k;
	uint16_t id, fid;
	int ret;

	/* The pages start where hvtraced's reader of the ring stands, not
	 * at this recording's start: what the guest wrote before is not
	 * this recording's.  Only what lies before the start by more than
	 * the clock model's error bound goes: nothing written after it. */
	if (k->t0 && k->st.sync_err_ns < k->t0 &&
	    ts < k->t0 - k->st.sync_err_ns) {
		/* counted as the CPU's entries before the recording */
		k->base[c - k->cpu].read++;
		k->base[c - k->cpu].bytes += len;
		return 0;
	}
	memcpy(&id, rec, 2);
	ret = rk_place(r, k, id, &fid);
	if (ret)
		return ret;
	if (!fid) {
		fid = (uint16_t)r->rec->ids.unknown_id;
		k->st.unknown++;
		r->rec->ids.unknown_total++;
	} else {
		/* The pids it names, as of its (host) time: a batch holds
		 * each CPU's records in turn, and the latest time wins. */
		struct hvtrace_record hr = {
			.ts = ts, .data = rec, .size = len, .cpu = c->rc.cpu,
		};

		hvtrace_decoder_learn_comms(k->dec, &hr);
	}
	memcpy(rec, &fid, 2);
	return hvt_tdat_rcpu_put_event(&c->rc, ts, rec, len);
}

/* One record of CPU @cpu into the batch; a malformed one is counted and
 * its loss carried on to the CPU's next record. */
static int rk_batch(struct hvt_tdat_rset *r, struct dr_kring *k, uint32_t cpu,
		    const struct hvt_tdat_krec *kr)
{
	struct dr_cpu *c = &k->cpu[cpu];
	uint64_t lost = c->pending_lost + kr->lost;
	bool unknown = c->pending_unknown || kr->lost_unknown;

	if (kr->size < sizeof(struct hvt_common_fields)) {
		k->st.errors++;
		c->pending_lost = lost;
		c->pending_unknown = unknown;
		return 0;
	}
	c->pending_lost = 0;
	c->pending_unknown = false;
	return hvt_rr_batch_add(r, c, kr->ts, kr->data, kr->size, lost,
				unknown);
}

/* --- the guest file of a host/guest pair ---------------------------------- */

static int rk_converted(void *arg, uint32_t remote, int ret, uint64_t err_ns)
{
	struct dr_kring *k = arg;

	(void)remote;
	hvt_rk_set_sync_err(k, err_ns);
	return ret;
}

/* Guest time @t at host time @host into the samples: the newest kept,
 * the others at least sh_gap apart; full, every other one goes. */
static void rk_shift_add(struct dr_kring *k, uint64_t t, uint64_t host)
{
	uint32_t i, j;

	if (k->nr_sh && t <= k->sh_t[k->nr_sh - 1])
		return;
	if (k->nr_sh >= 2 && t - k->sh_t[k->nr_sh - 2] < k->sh_gap)
		k->nr_sh--; /* the newest replaces the last */
	if (k->nr_sh == k->max_sh) {
		for (i = 0, j = 0; i < k->nr_sh; i += 2, j++) {
			k->sh_t[j] = k->sh_t[i];
			k->sh_off[j] = k->sh_off[i];
		}
		k->nr_sh = j;
		k->sh_gap *= 2;
	}
	k->sh_t[k->nr_sh] = t;
	k->sh_off[k->nr_sh] = (int64_t)(host - t);
	k->nr_sh++;
}

/* The model at the oldest and the newest times the guest file's CPUs
 * packed last (the times its records have). */
static int rk_shift_sample(struct hvt_tdat_rset *r, struct dr_kring *k)
{
	const struct hvt_tdat_rkernel *g = k->pair->kern;
	uint64_t ts[2] = {UINT64_MAX, 0}, raw[2];
	uint32_t rid[2] = {k->s->rec.id, k->s->rec.id}, c;
	int ret;

	for (c = 0; c < g->nr_cpus; c++) {
		if (!g->cpu[c].have_ts)
			continue;
		if (g->cpu[c].last_ts < ts[0])
			ts[0] = g->cpu[c].last_ts;
		if (g->cpu[c].last_ts > ts[1])
			ts[1] = g->cpu[c].last_ts;
	}
	if (ts[0] == UINT64_MAX || (k->nr_sh && ts[1] <= k->sh_t[k->nr_sh - 1]))
		return 0;
	raw[0] = ts[0];
	raw[1] = ts[1];
	ret = hvtrace_daemon_feed_ts_to_host_mixed(r->feed, 2, rid, ts,
						   rk_converted, k);
	if (ret)
		return ret;
	/* No clock model (yet): nothing to sample. */
	if (k->st.sync_err_ns == UINT64_MAX)
		return 0;
	rk_shift_add(k, raw[0], ts[0]);
	rk_shift_add(k, raw[1], ts[1]);
	return 0;
}

/* The guest file's counters, as the source's. */
static void rk_pair_stats(struct dr_kring *k)
{
	const struct hvtrace_tracedat_source_stats *g = &k->pair->kern->st;

	k->st.events = g->events;
	k->st.lost = g->lost;
	k->st.lost_unknown = g->lost_unknown;
	k->st.trailing_lost = g->trailing_lost;
	k->st.bytes = g->bytes;
	k->st.errors = g->errors;
	k->st.unknown = g->unknown;
	k->st.clamped = g->clamped;
}

static int rk_pair_pump(struct hvt_tdat_rset *r, struct dr_kring *k)
{
	uint64_t before = k->pair->kern->st.events;
	int ret;

	ret = hvtrace_tracedat_record_poll(k->pair, 0);
	if (ret < 0)
		return ret;
	rk_pair_stats(k);
	ret = rk_shift_sample(r, k);
	if (ret)
		return ret;
	/* A killed recording's guest file keeps the samples of the last
	 * snapshot: a new one each time the table doubled (a few, however
	 * long it records; the kallsyms and formats go with each). */
	if (k->nr_sh >= 2 * k->sh_journaled + 2) {
		k->sh_journaled = k->nr_sh;
		ret = hvt_tdat_rec_journal_meta(k->pair);
		if (ret)
			return ret;
	}
	return (int)(k->pair->kern->st.events - before);
}

/*
 * TIME_SHIFT (trace-cmd's trace-timesync.c layout): the host's trace id,
 * flags, the guest's CPU count; per CPU the sample count, times, offsets
 * and scalings; then per CPU the fractions.  Written in the file's (the
 * host's) byte order.
 */
static int rk_pair_meta(void *arg, struct hvtrace_tracedat_writer *w)
{
	struct dr_kring *k = arg;
	uint32_t c, i, n = k->nr_sh, cpus = k->nr_cpus;
	uint32_t flags = RK_TSYNC_INTERPOLATE;
	size_t size = 16 + (size_t)cpus * (4 + 32 * (size_t)n);
	uint8_t *b, *p;
	int64_t one = 1, zero = 0;
	int ret;

	if (!n)
		return 0;
	b = malloc(size);
	if (!b)
		return hvt_err(-ENOMEM, "out of memory");
	p = b;
	memcpy(p, &k->s->r->rec->trace_id, 8);
	memcpy(p + 8, &flags, 4);
	memcpy(p + 12, &cpus, 4);
	p += 16;
	for (c = 0; c < cpus; c++) {
		memcpy(p, &n, 4);
		p += 4;
		for (i = 0; i < n; i++, p += 8)
			memcpy(p, &k->sh_t[i], 8);
		for (i = 0; i < n; i++, p += 8)
			memcpy(p, &k->sh_off[i], 8);
		for (i = 0; i < n; i++, p += 8)
			memcpy(p, &one, 8);
	}
	for (c = 0; c < cpus; c++)
		for (i = 0; i < n; i++, p += 8)
			memcpy(p, &zero, 8);
	ret = hvtrace_tracedat_writer_add_option(w, HVT_TDAT_OPT_TIME_SHIFT, b,
						 (uint32_t)size);
	free(b);
	if (!ret)
		ret = hvt_tdat_rec_add_optionf(
			w, HVT_TDAT_OPT_CPUSTAT,
			"\nBuffer: (top)\n\nclock: the guest's mono; "
			"TIME_SHIFT "
			"to the host's CLOCK_MONOTONIC: %u samples of "
			"hvtraced's clock model of '%s' (error bound +-%.3f "
			"us)\n",
			n, k->s->name, (double)k->st.sync_err_ns / 1e3);
	return ret;
}

/* GUEST (the recording's file): name, the guest file's trace id, the
 * vCPU count, then (vCPU, host thread) pairs. */
static int rk_pair_guest_option(struct dr_kring *k,
				struct hvtrace_tracedat_writer *w)
{
	size_t nl = strlen(k->s->name) + 1;
	size_t size = nl + 8 + 4 + 8 * (size_t)k->nr_cpus;
	int32_t cpus = (int32_t)k->nr_cpus, v;
	uint8_t *b, *p;
	int ret;

	b = malloc(size);
	if (!b)
		return hvt_err(-ENOMEM, "out of memory");
	memcpy(b, k->s->name, nl);
	p = b + nl;
	memcpy(p, &k->guest_id, 8);
	memcpy(p + 8, &cpus, 4);
	p += 12;
	for (v = 0; v < cpus; v++, p += 8) {
		memcpy(p, &v, 4);
		memcpy(p + 4, &k->vcpu_tid[v], 4);
	}
	ret = hvtrace_tracedat_writer_add_option(w, HVT_TDAT_OPT_GUEST, b,
						 (uint32_t)size);
	free(b);
	return ret;
}

/* QEMU's vCPU threads of VMM @pid by their names ("CPU 3/TCG"; "ALL
 * CPUs/TCG" runs them all); -1 where none is found. */
static void rk_vcpu_threads(struct dr_kring *k, int pid)
{
	char path[64], comm[32];
	int32_t all = -1;
	uint32_t v, found = 0;
	struct dirent *de;
	DIR *d;

	for (v = 0; v < k->nr_cpus; v++)
		k->vcpu_tid[v] = -1;
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = pid > 0 ? opendir(path) : NULL;
	while (d && (de = readdir(d))) {
		long tid = strtol(de->d_name, NULL, 10);
		FILE *f;

		if (tid <= 0 || tid > INT32_MAX)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%ld/comm", pid,
			 tid);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f)) {
			if (sscanf(comm, "CPU %u/", &v) == 1 &&
			    v < k->nr_cpus && k->vcpu_tid[v] < 0) {
				k->vcpu_tid[v] = (int32_t)tid;
				found++;
			} else if (!strncmp(comm, "ALL CPUs/", 9)) {
				all = (int32_t)tid;
			}
		}
		fclose(f);
	}
	if (d)
		closedir(d);
	for (v = 0; all > 0 && v < k->nr_cpus; v++)
		if (k->vcpu_tid[v] < 0) {
			k->vcpu_tid[v] = all;
			found++;
		}
	if (found < k->nr_cpus)
		fprintf(stderr,
			"hvtrace record: note: '%s': %u of %u vCPU threads "
			"found%s%s; the GUEST option maps the others to no "
			"host task (-1)\n",
			k->s->name, found, k->nr_cpus,
			pid > 0 ? " in the VMM's /proc/PID/task" : "",
			pid > 0 ? " (QEMU names them with -name "
				  "...,debug-threads=on)"
				: " (the VMM's pid is unknown)");
}

/* A random trace id, never 0 (KernelShark skips a guest of id 0). */
static uint64_t rk_trace_id(void)
{
	uint64_t id = 0;

	while (!id)
		if (getrandom(&id, sizeof(id), 0) != sizeof(id))
			id = hvt_host_now_ns() ^ ((uint64_t)getpid() << 40);
	return id;
}

/* The guest file's recording of ring @ring, and the pair's ids. */
static int rk_pair_open(struct hvt_tdat_rset *r, struct dr_kring *k,
			const char *path, const char *formats, int vmm_pid)
{
	size_t row = 32 * (size_t)k->nr_cpus;
	int ret;

	ret = hvt_tdat_record_create_kring(path, formats, &k->g, &k->pair);
	if (ret)
		return ret;
	if (strcmp(hvt_tdat_kernel_clock(k->pair->kern->k), "mono")) {
		ret = hvt_err(-EINVAL,
			      "the guest kernel ring of '%s' uses the '%s' "
			      "trace clock; a guest file's TIME_SHIFT needs "
			      "'mono' (the rig's)",
			      k->s->name,
			      hvt_tdat_kernel_clock(k->pair->kern->k));
		return ret;
	}
	k->max_sh = (uint32_t)(RK_SHIFT_BYTES / (row ? row : 32));
	if (k->max_sh < 64)
		k->max_sh = 64;
	k->sh_gap = RK_SHIFT_GAP_NS;
	k->sh_t = calloc(k->max_sh, sizeof(*k->sh_t));
	k->sh_off = calloc(k->max_sh, sizeof(*k->sh_off));
	k->vcpu_tid = calloc(k->nr_cpus, sizeof(*k->vcpu_tid));
	if (!k->sh_t || !k->sh_off || !k->vcpu_tid)
		return hvt_err(-ENOMEM, "out of memory");
	rk_vcpu_threads(k, vmm_pid);
	k->guest_id = rk_trace_id();
	k->pair->trace_id = k->guest_id;
	k->pair->meta_hook = rk_pair_meta;
	k->pair->meta_arg = k;
	if (!r->rec->trace_id)
		r->rec->trace_id = rk_trace_id();
	return 0;
}

/* The guest file complete: read to the newest record, sampled once more. */
static int rk_pair_finish(struct hvt_tdat_rset *r, struct dr_kring *k)
{
	int ret;

	ret = hvtrace_tracedat_record_stop(k->pair);
	rk_pair_stats(k);
	if (!ret)
		ret = rk_shift_sample(r, k);
	if (!ret && !k->nr_sh && k->st.events)
		fprintf(stderr,
			"hvtrace record: note: '%s': hvtraced has no clock "
			"model of the guest: its guest file has no TIME_SHIFT "
			"and keeps the guest's own times\n",
			k->s->name);
	if (ret) {
		hvtrace_tracedat_record_abort(k->pair);
		k->pair = NULL;
		return ret;
	}
	ret = hvtrace_tracedat_record_finish(k->pair);
	k->pair = NULL;
	return ret;
}

int hvt_rk_pump(struct hvt_tdat_rset *r, unsigned int max)
{
	struct hvt_tdat_krec kr;
	unsigned int i, n = 0, got;
	uint32_t cpu;
	int ret;

	for (i = 0; i < r->nr_ksrc; i++) {
		struct dr_kring *k = r->ksrc[i]->kr;

		if (r->ksrc[i]->finished || k->st.finished)
			continue;
		if (k->pair) {
			ret = rk_pair_pump(r, k);
			if (ret < 0)
				return ret;
			n += (unsigned int)ret;
			continue;
		}
		for (cpu = 0; cpu < k->nr_cpus; cpu++) {
			for (got = 0; got < max; got++) {
				ret = hvt_tdat_kernel_next(k->k, cpu, &kr);
				if (ret < 0) {
					/* A ring the guest damaged: counted,
					 * the reader skips on. */
					k->st.errors++;
					break;
				}
				if (!ret)
					break;
				ret = rk_batch(r, k, cpu, &kr);
				if (ret)
					return hvt_err(ret, "out of memory");
			}
			n += got;
		}
	}
	return (int)n;
}

int hvt_rk_start(struct hvt_tdat_rset *r)
{
	struct hvt_tdat_krec kr;
	unsigned int i, n;
	uint32_t c;
	int ret;

	for (i = 0; i < r->nr_ksrc; i++) {
		struct dr_kring *k = r->ksrc[i]->kr;
		struct hvt_tdat_kernel *kn = k->k;

		/* The per-CPU readers: the guest file's own, or these. */
		ret = k->pair ? hvtrace_tracedat_record_start(k->pair)
			      : hvt_tdat_kernel_start(kn);
		if (ret)
			return ret;
		if (k->pair)
			kn = k->pair->kern->k;
		/* What the guest committed before: not this recording's
		 * (bounded: the guest keeps writing meanwhile). */
		for (c = 0; c < k->nr_cpus; c++) {
			for (n = 0; n < RK_SKIP_MAX; n++)
				if (hvt_tdat_kernel_next(kn, c, &kr) <= 0)
					break;
			/* The CPU statistics count from here. */
			hvt_tdat_kernel_guest_stats(kn, c, &k->base[c]);
		}
		k->t0 = hvt_host_now_ns();
	}
	return 0;
}

int hvt_rk_drain(struct hvt_tdat_rset *r, int ret)
{
	unsigned int i;
	uint32_t c;

	for (i = 0; i < r->nr_ksrc && !ret; i++) {
		struct dr_kring *k = r->ksrc[i]->kr;

		if (k->pair) {
			ret = rk_pair_finish(r, k);
			k->st.finished = true;
			continue;
		}
		k->st.errors += hvt_tdat_kernel_errors(k->k);
		for (c = 0; c < k->nr_cpus && !ret; c++) {
			k->st.trailing_lost += k->cpu[c].pending_lost;
			ret = hvtrace_pack_flush(&k->cpu[c].rc.pack);
		}
		k->st.finished = true;
	}
	return ret;
}

void hvt_rk_set_sync_err(struct dr_kring *k, uint64_t err_ns)
{
	k->st.sync_err_ns = err_ns;
}

void hvt_rk_geometry(struct hvt_tdat_rset *r, uint32_t *sb, uint32_t *cpus)
{
	unsigned int i;

	for (i = 0; i < r->nr_ksrc; i++) {
		const struct dr_kring *k = r->ksrc[i]->kr;

		if (k->guest_id) /* in the guest file */
			continue;
		if (k->subbuf_size > *sb)
			*sb = k->subbuf_size;
		if (k->nr_cpus > *cpus)
			*cpus = k->nr_cpus;
	}
}

/* The guest's saved_cmdlines ("pid comm" lines) into its table, once:
 * the names records give, before or after, stay over them. */
static void rk_saved_cmdlines(struct dr_kring *k)
{
	struct hvt_tdat_blob b = {0};
	char *line, *next;

	if (k->cmdlines_loaded)
		return;
	k->cmdlines_loaded = true;
	if (hvt_tdat_kernel_file(k->k, "saved_cmdlines", true, &b))
		return;
	for (line = b.data; line && *line; line = next) {
		char comm[HVT_TDAT_COMM_LEN];
		int pid;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (sscanf(line, "%d %15[^\n]", &pid, comm) == 2 && pid > 0 &&
		    pid < HVT_TDAT_PID_MAX)
			hvtrace_decoder_set_comm(k->dec, pid, comm);
	}
	hvt_tdat_blob_free(&b);
}

struct rk_cmdline_arg {
	struct hvt_tdat_rset *r;
	struct dr_kring *k;
};

/* A guest pid's name into the file, unless a host event named the pid. */
static int rk_cmdline(void *arg, int pid, const char *comm)
{
	struct rk_cmdline_arg *a = arg;
	const uint8_t *named = a->r->rec->pid_named;

	if (named && pid < HVT_TDAT_PID_MAX && (named[pid / 8] >> (pid % 8)) & 1) {
		a->k->host_named++;
		return 0;
	}
	return hvtrace_tracedat_writer_add_cmdline(a->r->w, pid, comm);
}

int hvt_rk_formats(struct hvt_tdat_rset *r)
{
	struct hvtrace_comm_stats cst;
	unsigned int i, j;
	int ret = 0;

	for (i = 0; !ret && i < r->nr_ksrc; i++) {
		struct dr_kring *k = r->ksrc[i]->kr;
		struct rk_cmdline_arg a = { .r = r, .k = k };

		if (k->guest_id) /* the guest file's own */
			continue;
		/* Counted afresh each pass (the journal's snapshot at the
		 * start is one, and says nothing). */
		k->host_named = 0;
		for (j = 0; !ret && j < k->cat.nr; j++)
			ret = hvtrace_tracedat_writer_add_format(
				r->w, k->cat.fmt[j].system, k->cat.fmt[j].text,
				strlen(k->cat.fmt[j].text));
		rk_saved_cmdlines(k);
		if (!ret)
			ret = hvtrace_decoder_comm_each(k->dec, 0, rk_cmdline,
							&a);
		if (hvt_tdat_journal_snapshot(r->w))
			continue;
		if (!hvtrace_decoder_comm_stats(k->dec, &cst) && cst.replaced)
			fprintf(stderr,
				"hvtrace record: '%s': %llu guest pids lost "
				"their names to later pids of the same slot "
				"(pid %% %llu, as the kernel's own table)\n",
				k->name, (unsigned long long)cst.replaced,
				(unsigned long long)cst.max_entries);
		if (k->host_named)
			fprintf(stderr,
				"hvtrace record: '%s': %llu guest pids are "
				"also host pids of this file; their events "
				"show the host's comm (the file has one pid "
				"table)\n",
				k->name, (unsigned long long)k->host_named);
	}
	return ret;
}

int hvt_rk_cpustats(struct hvt_tdat_rset *r)
{
	struct hvtrace_kring_stats now;
	unsigned int i;
	uint32_t c;
	int ret = 0;

	for (i = 0; !ret && i < r->nr_ksrc; i++) {
		struct dr_kring *k = r->ksrc[i]->kr;

		if (k->guest_id) { /* its vCPU threads; the rest is its own */
			ret = rk_pair_guest_option(k, r->w);
			continue;
		}
		ret = hvt_tdat_rec_own_clock(r->w, k->buffer, k->name,
					     k->st.sync_err_ns, k->st.events);
		if (!ret)
			ret = hvt_tdat_rec_add_buffer_stat(
				r->w, k->name,
				k->st.sync_err_ns == UINT64_MAX ? "writer"
								: NULL,
				k->st.sync_err_ns);
		for (c = 0; !ret && c < k->nr_cpus; c++) {
			const struct hvtrace_kring_stats *b = &k->base[c];

			if (hvt_tdat_kernel_guest_stats(k->k, c, &now))
				continue;
			/* What this recording read, and what it skipped. */
			ret = hvt_tdat_rec_add_optionf(
				r->w, HVT_TDAT_OPT_CPUSTAT,
				"CPU: %u\nentries: %llu\nbytes: %llu\n"
				"pages lost (overwritten before read): %llu\n"
				"errors: %llu\n"
				"entries before the recording (skipped): "
				"%llu\n",
				c, (unsigned long long)(now.read - b->read),
				(unsigned long long)(now.bytes - b->bytes),
				(unsigned long long)(now.lost_pages -
						     b->lost_pages),
				(unsigned long long)(now.errors - b->errors),
				(unsigned long long)b->read);
		}
	}
	return ret;
}

const struct hvtrace_tracedat_source_stats *
hvt_rk_stats(const struct hvt_tdat_rset *r, unsigned int i)
{
	return &r->ksrc[i]->kr->st;
}

int hvt_tdat_rremote_add_kring(struct hvtrace_tracedat_record *rec,
			       const char *remote,
			       struct hvtrace_daemon_kring *ring,
			       const char *formats, const char *guest_path,
			       int vmm_pid)
{
	struct hvt_tdat_kernel_opts ko = {
		.guest_formats = formats,
	};
	struct hvt_tdat_rset *r = rec->set;
	struct dr_src *s = NULL;
	struct dr_kring *k;
	unsigned int i;
	size_t len;
	uint32_t c;
	int ret;

	if (!ring || !remote)
		return hvt_err(-EINVAL, "record: no guest kernel ring given");
	if (rec->started)
		return hvt_err(-EBUSY, "record: a guest kernel ring is added "
				       "before recording starts");
	for (i = 0; r && hvt_tdat_rremote_is(rec) && i < r->nr_src; i++)
		if (!strcmp(r->src[i]->rec.name, remote) ||
		    !strcmp(r->src[i]->name, remote))
			s = r->src[i];
	if (!s)
		return hvt_err(-ENOENT,
			       "record: add the remote '%s' before its guest "
			       "kernel's ring",
			       remote);
	if (s->kr)
		return hvt_err(-EEXIST,
			       "the guest kernel ring of '%s' is "
			       "given twice",
			       remote);
	if (s->rec.clock_id != HVT_CLOCK_MONO_NS)
		return hvt_err(-EINVAL,
			       "the guest kernel ring of '%s' cannot go on the "
			       "host's clock: its agent's clock is not the "
			       "guest's mono clock",
			       remote);
	k = calloc(1, sizeof(*k));
	if (!k)
		return hvt_err(-ENOMEM, "out of memory");
	k->s = s;
	k->set = r;
	k->dk = ring;
	/* Its CPUs on the set's feed, its symbols as hvtraced read them
	 * from guest RAM (none in copy mode). */
	k->g.open = rk_ring_open;
	k->g.arg = k;
	k->g.nr_cpus = hvtrace_daemon_kring_cpus(ring);
	k->g.subbuf_size = hvtrace_daemon_kring_subbuf_size(ring);
	if (!hvtrace_daemon_kring_copied(ring) &&
	    hvtrace_daemon_get_text(r->dc, s->rec.id, HVT_TEXT_KALLSYMS,
				    &k->ksyms, &len)) {
		k->ksyms = NULL;
	} else if (k->ksyms) {
		k->g.ksyms_text = k->ksyms;
		k->g.ksyms_len = len;
	}
	ko.guest_rings = &k->g;
	ret = hvt_tdat_kernel_open(&ko, &k->k);
	if (ret) {
		hvt_rk_free(k);
		return ret;
	}
	if (strcmp(hvt_tdat_kernel_clock(k->k), "mono")) {
		ret = hvt_err(-EINVAL,
			      "the guest kernel ring of '%s' uses the '%s' "
			      "trace clock; only 'mono' (the rig's) can be "
			      "put on the host's clock",
			      remote, hvt_tdat_kernel_clock(k->k));
		hvt_rk_free(k);
		return ret;
	}
	k->nr_cpus = hvt_tdat_kernel_nr_cpus(k->k);
	k->subbuf_size = hvt_tdat_kernel_subbuf_size(k->k);
	if (strlen(s->name) + sizeof("-kernel") > sizeof(k->st.name)) {
		hvt_rk_free(k);
		return hvt_err(-ENAMETOOLONG,
			       "the buffer name '%s' is too "
			       "long for '%s-kernel'",
			       s->name, s->name);
	}
	snprintf(k->name, sizeof(k->name), "%s-kernel", s->name);
	memcpy(k->st.name, k->name, strlen(k->name) + 1);
	k->st.nr_cpus = k->nr_cpus;
	k->cpu = hvt_calloc_lines(k->nr_cpus, sizeof(*k->cpu));
	k->base = calloc(k->nr_cpus, sizeof(*k->base));
	k->idmap = calloc(65536, sizeof(*k->idmap));
	k->tried = calloc(65536 / 8, 1);
	if (!k->cpu || !k->base || !k->idmap || !k->tried ||
	    hvtrace_decoder_new(4096, &k->dec)) {
		hvt_rk_free(k);
		return hvt_err(-ENOMEM, "out of memory");
	}
	/* A guest file of its own, or a buffer of the recording's. */
	if (guest_path) {
		ret = rk_pair_open(r, k, guest_path, formats, vmm_pid);
		if (ret) {
			hvt_rk_free(k);
			return ret;
		}
		goto added;
	}
	for (c = 0; c < k->nr_cpus; c++) {
		k->cpu[c].src = s;
		k->cpu[c].k = k;
		ret = hvt_tdat_rcpu_init(&k->cpu[c].rc, r->w, &k->buffer, c,
					 k->subbuf_size, &k->st);
		if (ret) {
			hvt_rk_free(k);
			return hvt_err(ret, "bad sub-buffer size %u",
				       k->subbuf_size);
		}
	}
	for (i = 0; i < r->nr_src; i++)
		if (!strcmp(r->src[i]->name, k->name)) {
			hvt_rk_free(k);
			return hvt_err(-EEXIST, "a remote is named '%s-kernel'",
				       s->name);
		}
	ret = hvtrace_tracedat_writer_add_buffer(r->w, k->name, "mono",
						 k->nr_cpus, k->subbuf_size);
	if (ret < 0) {
		hvt_rk_free(k);
		return ret;
	}
	k->buffer = ret;
added:
	s->kr = k;
	r->ksrc[r->nr_ksrc++] = s;
	/* Source indexes: the kernel, the remotes, then these rings. */
	return (int)(!!rec->kern + r->nr_src + r->nr_ksrc - 1);
}
