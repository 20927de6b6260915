// SPDX-License-Identifier: MIT
/*
 * The proxy protocol's byte layouts against docs/proxy.md ("Payload
 * layouts"): for every layout, a frame is built here by hand from the
 * documented offsets and widths, with a distinct value in every field.
 * The codec must decode it into those values (each in the struct member
 * the document names) and encode that message back into the same bytes.
 * A round trip alone would accept a field moved consistently in both
 * directions; this does not.  The REMOTES and TRIGGER_RUN records are
 * checked the same way through their accessors.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace/abi.h>
#include <hvtrace/errno.h>
#include <hvtrace/proto.h>

#include "hvt_test.h"

/* The freestanding codec returns <hvtrace/errno.h> values; callers compare
 * them with <errno.h> names. */
_Static_assert(HVT_EINVAL == EINVAL && HVT_EBADMSG == EBADMSG &&
		       HVT_EMSGSIZE == EMSGSIZE &&
		       HVT_EPROTONOSUPPORT == EPROTONOSUPPORT &&
		       HVT_EOPNOTSUPP == EOPNOTSUPP,
	       "hvtrace/errno.h differs from errno.h");

/* One documented field: wire offset and width, the member, its value. */
struct gf {
	uint8_t off, width;
	uint16_t moff, msize;
	uint64_t val;
};

#define MSZ(mem) sizeof(((struct hvt_msg *)0)->u.mem)
#define F(o, w, mem, v)                                                        \
	{ (o), (w), offsetof(struct hvt_msg, u.mem), MSZ(mem), (uint64_t)(v) }

struct gcase {
	const char *name;
	uint16_t type;
	uint8_t reply;
	uint32_t fixed;		/* documented fixed part */
	struct gf f[20];	/* ends at width 0 */
	const char *var;	/* variable part (strings, in order) */
	uint32_t var_len;
};

#define VAR(s) (s), sizeof(s) - 1

static uint8_t rec_bytes[HVT_REMOTE_REC_SIZE];
static uint8_t trig_bytes[HVT_TRIGGER_REC_SIZE];
static uint8_t blob[16];

static void le(uint8_t *p, uint32_t width, uint64_t v)
{
	uint32_t i;

	for (i = 0; i < width; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static const struct gcase cases[] = {
	{ "EMPTY", HVT_MSG_REMOTES, 0, 8, { { 0 } }, NULL, 0 },
	{ "HELLO", HVT_MSG_HELLO, 0, 60,
	  { F(0, 2, hello.min_version, 1), F(2, 2, hello.max_version, 3),
	    F(4, 1, hello.role, HVT_ROLE_AGENT), F(5, 1, hello.nr_fds, 2),
	    F(8, 4, hello.caps, 0x0a0b0c0d), F(12, 4, hello.pid, 0x1234),
	    F(16, 4, hello.nr_cpus, 4), F(20, 4, hello.clock_id, 0x21),
	    F(24, 4, hello.writer_kind, 0x22),
	    F(28, 4, hello.status, (uint32_t)-98),
	    F(32, 8, hello.area_offset, 0x3000),
	    F(40, 8, hello.area_size, 0x0102030405060708ull),
	    F(48, 8, hello.generation, 0x1122334455667788ull),
	    F(56, 2, hello.name.len, 7), F(58, 2, hello.text.len, 11) },
	  VAR("guest-1hello there") },
	{ "BYE", HVT_MSG_BYE, 0, 12,
	  { F(0, 4, bye.reason, HVT_BYE_PROTOCOL),
	    F(4, 4, bye.status, (uint32_t)-71), F(8, 2, bye.text.len, 5) },
	  VAR("bye!!") },
	{ "RESULT", HVT_MSG_REGISTER, 1, 20,
	  { F(0, 4, result.status, (uint32_t)-22), F(4, 4, result.id, 300),
	    F(8, 4, result.bit, 12), F(12, 4, result.flags, 5),
	    F(16, 2, result.text.len, 4) },
	  VAR("oops") },
	{ "REGISTER", HVT_MSG_REGISTER, 0, 16,
	  { F(0, 4, reg.flags, HVT_REG_REPLAY), F(4, 4, reg.want_id, 301),
	    F(8, 4, reg.want_bit, 3), F(12, 2, reg.def.len, 8) },
	  VAR("ev u32 a") },
	{ "UNREGISTER", HVT_MSG_UNREGISTER, 0, 8,
	  { F(0, 4, unreg.id, 0xfffe) }, NULL, 0 },
	{ "ARG", HVT_MSG_ENABLE, 0, 8,
	  { F(0, 4, arg.arg, 1), F(4, 2, arg.s.len, 5) }, VAR("my_ev") },
	{ "CLIENT_GONE", HVT_MSG_CLIENT_GONE, 0, 8,
	  { F(0, 4, gone.pid, 99) }, NULL, 0 },
	{ "CMDLINE", HVT_MSG_CMDLINE, 0, 8,
	  { F(0, 4, cmdline.pid, 1234), F(4, 2, cmdline.comm.len, 6) },
	  VAR("worker") },
	{ "EVENT_STATE", HVT_MSG_EVENT_STATE, 0, 16,
	  { F(0, 4, event_state.id, 500), F(4, 4, event_state.bit, 77),
	    F(8, 1, event_state.enabled, 1) }, NULL, 0 },
	{ "TRACING", HVT_MSG_TRACING, 0, 8,
	  { F(0, 4, tracing.op, HVT_TRACING_ON) }, NULL, 0 },
	{ "PING", HVT_MSG_PING, 0, 16,
	  { F(0, 8, ping.seq, 77), F(8, 8, ping.host_ns, 0xfedcba98ull) },
	  NULL, 0 },
	{ "PONG", HVT_MSG_PING, 1, 40,
	  { F(0, 8, pong.seq, 78), F(8, 8, pong.host_ns, 0x1111),
	    F(16, 8, pong.writer_rx, 0x100), F(24, 8, pong.writer_tx, 0x200),
	    F(32, 4, pong.clock_id, HVT_CLOCK_MONO_NS) }, NULL, 0 },
	{ "TRIGGER", HVT_MSG_TRIGGER, 0, 16,
	  { F(0, 8, trigger.token, 0xdeadbeefcafef00dull),
	    F(8, 8, trigger.host_ns, 5) }, NULL, 0 },
	{ "TRIGGER_ACK", HVT_MSG_TRIGGER, 1, 24,
	  { F(0, 8, trigger_ack.token, 0x0102),
	    F(8, 8, trigger_ack.writer_ts, 99999),
	    F(16, 4, trigger_ack.status, (uint32_t)-28),
	    F(20, 4, trigger_ack.cpu, 63) }, NULL, 0 },
	{ "TEXT_REQ", HVT_MSG_TEXT, 0, 8,
	  { F(0, 4, text_req.kind, HVT_TEXT_DYNAMIC_EVENTS) }, NULL, 0 },
	{ "TEXT", HVT_MSG_TEXT, 1, 8,
	  { F(0, 4, text.status, (uint32_t)-2), F(4, 4, text.text.len, 12) },
	  VAR("line1\n\tline2") },
	{ "REMOTES", HVT_MSG_REMOTES, 1, 8,
	  { F(0, 4, remotes.recs.count, 1) }, NULL, 0 },
	{ "FORMAT", HVT_MSG_FORMATS, 1, 16,
	  { F(0, 4, format.status, 0), F(4, 4, format.id, 300),
	    F(8, 2, format.name.len, 5), F(12, 4, format.text.len, 10) },
	  VAR("ev_axformat: x\n") },
	{ "STATS", HVT_MSG_STATS, 1, 128,
	  { F(0, 4, stats.status, (uint32_t)-5), F(4, 4, stats.cpu, 1),
	    F(8, 8, stats.v[0], 0x0101), F(16, 8, stats.v[1], 0x0202),
	    F(24, 8, stats.v[2], 0x0303), F(32, 8, stats.v[3], 0x0404),
	    F(40, 8, stats.v[4], 0x0505), F(48, 8, stats.v[5], 0x0606),
	    F(56, 8, stats.v[6], 0x0707), F(64, 8, stats.v[7], 0x0808),
	    F(72, 8, stats.v[8], 0x0909), F(80, 8, stats.v[9], 0x0a0a),
	    F(88, 8, stats.v[10], 0x0b0b), F(96, 8, stats.v[11], 0x0c0c),
	    F(104, 8, stats.v[12], 0x0d0d), F(112, 8, stats.v[13], 0x0e0e),
	    F(120, 8, stats.v[14], 0x0f0f) }, NULL, 0 },
	{ "SUBSCRIBE", HVT_MSG_SUBSCRIBE, 0, 8,
	  { F(0, 4, subscribe.cpu, (uint32_t)-1),
	    F(4, 4, subscribe.queue_kib, 64) }, NULL, 0 },
	{ "UNSUBSCRIBE", HVT_MSG_UNSUBSCRIBE, 0, 8,
	  { F(0, 4, unsubscribe.sub, 17) }, NULL, 0 },
	{ "PAGE", HVT_MSG_PAGE, 0, 56,
	  { F(0, 4, page.cpu, 1), F(4, 4, page.flags, HVT_PAGEF_TAIL),
	    F(8, 4, page.seq, 12), F(12, 4, page.entries, 30),
	    F(16, 8, page.lost_events, 2), F(24, 8, page.dropped_pages, 3),
	    F(32, 8, page.dropped_events, 40),
	    F(40, 8, page.first_ts, 123456789), F(48, 4, page.len, 16) },
	  NULL, 0 },
	{ "TO_HOST", HVT_MSG_TO_HOST, 0, 8,
	  { F(0, 4, to_host.ts.count, 2) }, NULL, 0 },
	{ "TO_HOST_REPLY", HVT_MSG_TO_HOST, 1, 16,
	  { F(0, 4, to_host_reply.status, 0),
	    F(4, 4, to_host_reply.ns.count, 2),
	    F(8, 8, to_host_reply.err_ns, 1500) }, NULL, 0 },
	{ "TRIGGER_RUN", HVT_MSG_TRIGGER_RUN, 0, 8,
	  { F(0, 4, trigger_run.count, 1000) }, NULL, 0 },
	{ "TRIGGER_RUN_REPLY", HVT_MSG_TRIGGER_RUN, 1, 8,
	  { F(0, 4, trigger_run_reply.status, 0),
	    F(4, 4, trigger_run_reply.recs.count, 1) }, NULL, 0 },
	{ "KFORMATS", HVT_MSG_KFORMATS, 0, 24,
	  { F(0, 4, kformats.op, HVT_KF_END), F(4, 4, kformats.nr_files, 1234),
	    F(8, 8, kformats.total_bytes, 0x0102030405ull),
	    F(16, 2, kformats.release.len, 12),
	    F(18, 2, kformats.build_id.len, 8) },
	  VAR("6.12.9-amd640a1b2c3d") },
	{ "KFILE", HVT_MSG_KFILE, 0, 24,
	  { F(0, 4, kfile.flags, HVT_KFILE_LAST),
	    F(8, 8, kfile.offset, 0x1122334455ull),
	    F(16, 2, kfile.name.len, 18), F(20, 4, kfile.len, 8) },
	  VAR("events/header_pagefield: x") },
	{ "CLOCK", HVT_MSG_CLOCK, 0, 72,
	  { F(0, 4, clock.clock_id, HVT_CLOCK_COUNTER),
	    F(4, 4, clock.flags, HVT_CLOCKF_SYNCED),
	    F(8, 8, clock.generation, 0x0203),
	    F(16, 8, clock.base_writer, 0x1122334455667788ull),
	    F(24, 8, clock.base_host, 0x0a0b0c0d0e0f1011ull),
	    F(32, 8, clock.rate_int, 41),
	    F(40, 8, clock.rate_frac, 0x8000000000000001ull),
	    F(48, 8, clock.err_ns, 250),
	    F(56, 8, clock.rate_err, 0x3eb0c6f7a0b5ed8dull),
	    F(64, 8, clock.drift_half, 0x3c9cd2b297d889bcull) },
	  NULL, 0 },
};

/* The variable part of a case without strings: records or bytes. */
static void case_var(const struct gcase *c, const uint8_t **var,
		     uint32_t *len)
{
	*var = (const uint8_t *)c->var;
	*len = c->var_len;
	if (!strcmp(c->name, "REMOTES")) {
		*var = rec_bytes;
		*len = sizeof(rec_bytes);
	} else if (!strcmp(c->name, "TRIGGER_RUN_REPLY")) {
		*var = trig_bytes;
		*len = sizeof(trig_bytes);
	} else if (!strcmp(c->name, "PAGE") ||
		   !strncmp(c->name, "TO_HOST", 7)) {
		*var = blob;
		*len = sizeof(blob);
	}
}

static uint64_t member(const struct hvt_msg *m, const struct gf *f)
{
	const uint8_t *p = (const uint8_t *)m + f->moff;
	uint64_t v = 0;

	memcpy(&v, p, f->msize);	/* little-endian host */
	return v;
}

static void check_case(const struct gcase *c)
{
	uint8_t frame[512], out[512];
	const uint8_t *var;
	struct hvt_frame fr;
	struct hvt_msg m;
	const char *why = NULL;
	uint32_t len, var_len, i;
	int n;

	case_var(c, &var, &var_len);
	len = HVT_PROTO_HDR_SIZE + c->fixed + var_len;
	t_assert(len <= sizeof(frame));
	memset(frame, 0, sizeof(frame));
	le(frame + 0, 4, HVT_PROTO_MAGIC);
	le(frame + 4, 4, len);
	le(frame + 8, 2, c->type);
	frame[10] = HVT_PROTO_VERSION;
	frame[11] = c->reply ? HVT_PF_REPLY : 0;
	le(frame + 12, 4, 0x01020304);
	le(frame + 16, 4, 0x0a0b0c0d);
	for (i = 0; c->f[i].width; i++)
		le(frame + HVT_PROTO_HDR_SIZE + c->f[i].off, c->f[i].width,
		   c->f[i].val);
	if (var_len)
		memcpy(frame + HVT_PROTO_HDR_SIZE + c->fixed, var, var_len);
	le(frame + 24, 4,
	   hvt_proto_sum(frame + HVT_PROTO_HDR_SIZE, len - HVT_PROTO_HDR_SIZE));
	le(frame + 28, 4, hvt_proto_hsum(frame));

	fr = (struct hvt_frame){ .type = c->type,
				 .version = HVT_PROTO_VERSION,
				 .flags = frame[11],
				 .req = 0x01020304,
				 .chan = 0x0a0b0c0d,
				 .payload = frame + HVT_PROTO_HDR_SIZE,
				 .len = len - HVT_PROTO_HDR_SIZE };
	if (hvt_msg_decode(&fr, &m, &why))
		t_fail("%s: the documented layout does not decode: %s",
		       c->name, why ? why : "?");
	for (i = 0; c->f[i].width; i++) {
		uint64_t mask = c->f[i].msize == 8 ?
					~0ull :
					(1ull << (8 * c->f[i].msize)) - 1;

		if (member(&m, &c->f[i]) != (c->f[i].val & mask))
			t_fail("%s: field at payload offset %u decoded as "
			       "0x%llx, documented value 0x%llx",
			       c->name, c->f[i].off,
			       (unsigned long long)member(&m, &c->f[i]),
			       (unsigned long long)(c->f[i].val & mask));
	}
	n = hvt_msg_encode(out, sizeof(out), &m);
	t_eq(n, (int)len);
	for (i = 0; i < len; i++)
		if (out[i] != frame[i])
			t_fail("%s: encoded byte %u is 0x%02x, documented "
			       "0x%02x",
			       c->name, i, out[i], frame[i]);
}

/* REMOTES and TRIGGER_RUN records by their documented offsets. */
static void build_records(void)
{
	static const uint32_t r32[12] = { 9, 2, 3, 4, 64, 4096, 1, 1, 2, 1,
					   10, 11 };
	uint32_t i;

	for (i = 0; i < 12; i++)
		le(rec_bytes + 4 * i, 4, r32[i]);
	le(rec_bytes + 48, 8, 1000);
	le(rec_bytes + 56, 8, 5);
	le(rec_bytes + 64, 8, 6);
	le(rec_bytes + 72, 8, 7);
	memcpy(rec_bytes + 80, "vm0", 3);

	le(trig_bytes + 0, 8, 100);
	le(trig_bytes + 8, 8, 1000);
	le(trig_bytes + 16, 8, 1500);
	le(trig_bytes + 24, 8, 77);
	le(trig_bytes + 32, 4, 3);
	le(trig_bytes + 36, 4, (uint32_t)-61);
	for (i = 0; i < sizeof(blob); i++)
		blob[i] = (uint8_t)(0xa0 + i);
}

static void check_records(void)
{
	struct hvt_arr a = { rec_bytes, 1 }, t = { trig_bytes, 1 };
	struct hvt_remote_rec r;
	struct hvt_trigger_rec tr;
	uint8_t out[HVT_REMOTE_REC_SIZE];

	hvt_msg_remote_at(&a, 0, &r);
	t_equ(r.id, 9);
	t_equ(r.state, 2);
	t_equ(r.writer_kind, 3);
	t_equ(r.nr_cpus, 4);
	t_equ(r.nr_subbufs, 64);
	t_equ(r.subbuf_size, 4096);
	t_equ(r.mode, 1);
	t_equ(r.clock_id, 1);
	t_equ(r.transport, 2);
	t_equ(r.tracing_on, 1);
	t_equ(r.nr_events, 10);
	t_equ(r.nr_clients, 11);
	t_equ(r.clock_err_ns, 1000);
	t_equ(r.sync_samples, 5);
	t_equ(r.proto_errors, 6);
	t_equ(r.generation, 7);
	t_assert(!strcmp(r.name, "vm0"));
	memset(out, 0xee, sizeof(out));
	hvt_msg_put_remote(out, &r);
	t_memeq(out, rec_bytes, HVT_REMOTE_REC_SIZE);

	hvt_msg_trigger_at(&t, 0, &tr);
	t_equ(tr.token, 100);
	t_equ(tr.host_before, 1000);
	t_equ(tr.host_after, 1500);
	t_equ(tr.writer_ts, 77);
	t_equ(tr.cpu, 3);
	t_eq(tr.status, -61);
	memset(out, 0xee, sizeof(out));
	hvt_msg_put_trigger(out, &tr);
	t_memeq(out, trig_bytes, HVT_TRIGGER_REC_SIZE);
}

int main(void)
{
	uint32_t i;

	build_records();
	check_records();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_case(&cases[i]);
	/* Every layout but NONE has a case. */
	t_equ(sizeof(cases) / sizeof(cases[0]), HVT_L_COUNT - 1);
	printf("ok: %zu layouts match docs/proxy.md byte for byte\n",
	       sizeof(cases) / sizeof(cases[0]));
	return 0;
}
