// SPDX-License-Identifier: MIT
/*
 * The proxy protocol codec: every message type in both directions round
 * trips; truncated, oversized, wrong-version, unknown-type, corrupted and
 * out-of-range frames are refused with the right error; the stream
 * decoder reassembles frames from any chunking and resynchronises after
 * garbage and cut frames.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace/abi.h>
#include <hvtrace/proto.h>

#include "hvt_test.h"

#define S(x) ((struct hvt_str){ (x), sizeof(x) - 1 })

static uint8_t page_bytes[4096];
static uint8_t rec_buf[4 * HVT_REMOTE_REC_SIZE];
static uint8_t trig_buf[3 * HVT_TRIGGER_REC_SIZE];
static uint8_t u64_buf[5 * 8];

/* A sample message for every (type, direction) that has a layout. */
static int sample(uint16_t type, int reply, struct hvt_msg *m)
{
	enum hvt_layout l = hvt_msg_layout(type, reply);
	uint32_t i;

	memset(m, 0, sizeof(*m));
	m->type = type;
	m->flags = reply ? HVT_PF_REPLY : 0;
	m->req = 0x1000u + type;
	m->chan = 7u + type;
	switch (l) {
	case HVT_L_NONE:
	case HVT_L_COUNT:
		return 0;
	case HVT_L_EMPTY:
		break;
	case HVT_L_HELLO:
		m->u.hello.min_version = 1;
		m->u.hello.max_version = 3;
		m->u.hello.role = reply ? HVT_ROLE_HOST : HVT_ROLE_AGENT;
		m->u.hello.nr_fds = 2;
		m->u.hello.caps = 0xabcd;
		m->u.hello.pid = 4242;
		m->u.hello.nr_cpus = 4;
		m->u.hello.clock_id = HVT_CLOCK_COUNTER;
		m->u.hello.writer_kind = HVT_WRITER_GUEST;
		m->u.hello.area_offset = 0x2000;
		m->u.hello.area_size = 16ull << 20;
		m->u.hello.generation = 0x1122334455667788ull;
		m->u.hello.status = reply ? -98 : 0;
		m->u.hello.name = S("guest-1");
		m->u.hello.text = S("hello there");
		break;
	case HVT_L_BYE:
		m->u.bye.reason = HVT_BYE_PROTOCOL;
		m->u.bye.status = -71;
		m->u.bye.text = S("too many errors");
		break;
	case HVT_L_RESULT:
		m->u.result.status = -98;
		m->u.result.id = 300;
		m->u.result.bit = 12;
		m->u.result.flags = 5;
		m->u.result.text = S("event 'x' is in use with other fields");
		break;
	case HVT_L_REGISTER:
		m->u.reg.flags = HVT_REG_REPLAY;
		m->u.reg.want_id = 301;
		m->u.reg.want_bit = 3;
		m->u.reg.def = S("test_ev u32 a; __rel_loc char[] s");
		break;
	case HVT_L_UNREGISTER:
		m->u.unreg.id = 65535;
		break;
	case HVT_L_ARG:
		if (type == HVT_MSG_ATTACH || type == HVT_MSG_DETACH) {
			m->u.arg.s = S("vm_0.a-b");
		} else if (type == HVT_MSG_KEVENT) {
			m->u.arg.arg = 1;
			m->u.arg.s = S("sched:sched_waking");
		} else {
			m->u.arg.arg = type == HVT_MSG_ENABLE;
			m->u.arg.s = S("u:test_ev u32 a;\tu64 b");
		}
		break;
	case HVT_L_CLIENT_GONE:
		m->u.gone.pid = 99;
		break;
	case HVT_L_CMDLINE:
		m->u.cmdline.pid = 1234;
		m->u.cmdline.comm = S("my worker 1");
		break;
	case HVT_L_EVENT_STATE:
		m->u.event_state.id = 500;
		m->u.event_state.bit = HVT_ABI_MAX_EVENTS - 1;
		m->u.event_state.enabled = 1;
		break;
	case HVT_L_TRACING:
		m->u.tracing.op = HVT_TRACING_ON;
		break;
	case HVT_L_PING:
		m->u.ping.seq = 77;
		m->u.ping.host_ns = 0xfedcba9876543210ull;
		break;
	case HVT_L_PONG:
		m->u.pong.seq = 77;
		m->u.pong.host_ns = 0xfedcba9876543210ull;
		m->u.pong.writer_rx = 0x0123456789abcdefull;
		m->u.pong.writer_tx = 0x0123456789abcdffull;
		m->u.pong.clock_id = HVT_CLOCK_MONO_NS;
		break;
	case HVT_L_TRIGGER:
		m->u.trigger.token = 0xdeadbeefcafef00dull;
		m->u.trigger.host_ns = 1;
		break;
	case HVT_L_TRIGGER_ACK:
		m->u.trigger_ack.token = 0xdeadbeefcafef00dull;
		m->u.trigger_ack.writer_ts = 99999;
		m->u.trigger_ack.status = -28;
		m->u.trigger_ack.cpu = 63;
		break;
	case HVT_L_TEXT_REQ:
		m->u.text_req.kind = HVT_TEXT_DYNAMIC_EVENTS;
		break;
	case HVT_L_TEXT:
		m->u.text.text =
			S("u:a u32 x\nu:b char[16] name\n\tindented\n");
		break;
	case HVT_L_REMOTES:
		for (i = 0; i < 4; i++) {
			struct hvt_remote_rec r = {
				.id = i + 1,
				.state = 1 + i % 3,
				.writer_kind = HVT_WRITER_GUEST,
				.nr_cpus = 2,
				.nr_subbufs = 64,
				.subbuf_size = 4096,
				.mode = HVT_MODE_CONSUME,
				.clock_id = HVT_CLOCK_COUNTER,
				.transport = 1 + i % 2,
				.tracing_on = i & 1,
				.nr_events = 10 * i,
				.nr_clients = i,
				.clock_err_ns = i ? 1000 * i : UINT64_MAX,
				.sync_samples = 5,
				.proto_errors = i,
				.generation = 3,
			};

			snprintf(r.name, sizeof(r.name), "vm%u", i);
			hvt_msg_put_remote(rec_buf + i * HVT_REMOTE_REC_SIZE,
					   &r);
		}
		m->u.remotes.recs.ptr = rec_buf;
		m->u.remotes.recs.count = 4;
		break;
	case HVT_L_FORMAT:
		m->u.format.id = 300;
		m->u.format.name = S("test_ev");
		m->u.format.text = S("name: test_ev\nID: 300\nformat:\n\tfield:"
				     "unsigned short common_type;\n");
		break;
	case HVT_L_STATS:
		m->u.stats.cpu = 1;
		for (i = 0; i < HVT_STATS_FIELDS; i++)
			m->u.stats.v[i] = 1000ull * i + 1;
		break;
	case HVT_L_SUBSCRIBE:
		m->u.subscribe.cpu = -1;
		m->u.subscribe.queue_kib = 64;
		break;
	case HVT_L_UNSUBSCRIBE:
		m->u.unsubscribe.sub = 17;
		break;
	case HVT_L_PAGE:
		for (i = 0; i < sizeof(page_bytes); i++)
			page_bytes[i] = (uint8_t)(i * 7 + 3);
		m->u.page.cpu = 1;
		m->u.page.flags = HVT_PAGEF_TAIL;
		m->u.page.seq = 12;
		m->u.page.entries = 30;
		m->u.page.lost_events = 2;
		m->u.page.dropped_pages = 3;
		m->u.page.dropped_events = 40;
		m->u.page.first_ts = 123456789;
		m->u.page.data = page_bytes;
		m->u.page.len = sizeof(page_bytes);
		break;
	case HVT_L_TO_HOST:
		for (i = 0; i < 5; i++)
			hvt_msg_put_u64(u64_buf + 8 * i, 1ull << (10 * i));
		m->u.to_host.ts.ptr = u64_buf;
		m->u.to_host.ts.count = 5;
		break;
	case HVT_L_TO_HOST_REPLY:
		for (i = 0; i < 5; i++)
			hvt_msg_put_u64(u64_buf + 8 * i, 3ull << (10 * i));
		m->u.to_host_reply.err_ns = 1500;
		m->u.to_host_reply.ns.ptr = u64_buf;
		m->u.to_host_reply.ns.count = 5;
		break;
	case HVT_L_TRIGGER_RUN:
		m->u.trigger_run.count = 1000;
		break;
	case HVT_L_KFORMATS:
		m->u.kformats.op = HVT_KF_END;
		m->u.kformats.nr_files = 1500;
		m->u.kformats.total_bytes = 2345678;
		m->u.kformats.release = S("6.12.48+deb13-amd64");
		m->u.kformats.build_id = S("0123456789abcdef0123456789abcdef01234567");
		break;
	case HVT_L_KFILE:
		m->u.kfile.flags = HVT_KFILE_LAST;
		m->u.kfile.offset = 16384;
		m->u.kfile.name = S("events/sched/sched_switch/format");
		m->u.kfile.data = page_bytes;
		m->u.kfile.len = sizeof(page_bytes);
		break;
	case HVT_L_CLOCK:
		m->u.clock.clock_id = HVT_CLOCK_COUNTER;
		m->u.clock.flags = HVT_CLOCKF_SYNCED;
		m->u.clock.generation = 9;
		m->u.clock.base_writer = 0x0123456789abcdefull;
		m->u.clock.base_host = 0x1122334455667788ull;
		m->u.clock.rate_int = 41;
		m->u.clock.rate_frac = 0x6666666666666666ull;
		m->u.clock.err_ns = 250;
		m->u.clock.rate_err = 0x3eb0c6f7a0b5ed8dull; /* 1e-6 */
		m->u.clock.drift_half = 0x3c9cd2b297d889bcull; /* 1e-16 */
		break;
	case HVT_L_TRIGGER_RUN_REPLY:
		for (i = 0; i < 3; i++) {
			struct hvt_trigger_rec r = {
				.token = 100 + i,
				.host_before = 1000 * i,
				.host_after = 1000 * i + 500,
				.writer_ts = 77 * i,
				.cpu = i,
				.status = i == 2 ? -61 : 0,
			};

			hvt_msg_put_trigger(trig_buf + i * HVT_TRIGGER_REC_SIZE,
					    &r);
		}
		m->u.trigger_run_reply.recs.ptr = trig_buf;
		m->u.trigger_run_reply.recs.count = 3;
		break;
	}
	return 1;
}

/* Recompute both checksums after a test edited a frame. */
static void reseal(uint8_t *f)
{
	uint32_t len, s;

	memcpy(&len, f + 4, 4);
	s = hvt_proto_sum(f + HVT_PROTO_HDR_SIZE, len - HVT_PROTO_HDR_SIZE);
	memcpy(f + 24, &s, 4);
	s = hvt_proto_hsum(f);
	memcpy(f + 28, &s, 4);
}

static uint8_t dbuf[HVT_PROTO_MAX_FRAME];

/* Decode exactly one frame from @buf, expecting @want from the decoder. */
static int one_frame(const uint8_t *buf, uint32_t len, uint32_t max,
		     struct hvt_msg *m, const char **why)
{
	struct hvt_proto_dec d;
	struct hvt_frame f;
	int ret;

	t_ok(hvt_proto_dec_init(&d, dbuf, sizeof(dbuf), max));
	t_equ(hvt_proto_dec_feed(&d, buf, len), len);
	ret = hvt_proto_dec_next(&d, &f);
	if (ret != 1)
		return ret < 0 ? ret : -ENODATA;
	return hvt_msg_decode(&f, m, why);
}

static void check_roundtrip(void)
{
	static uint8_t a[HVT_PROTO_MAX_FRAME], b[HVT_PROTO_MAX_FRAME];
	unsigned int type, n = 0;
	int reply;

	for (type = 0; type < 300; type++) {
		for (reply = 0; reply <= 1; reply++) {
			struct hvt_msg m, out;
			const char *why = NULL;
			int la, lb, ret;

			if (!sample((uint16_t)type, reply, &m)) {
				/* No layout: encoding must refuse it. */
				t_eq(hvt_msg_encode(a, sizeof(a), &m), -EINVAL);
				continue;
			}
			n++;
			la = hvt_msg_encode(a, sizeof(a), &m);
			if (la < 0)
				t_fail("encode %s reply=%d: %d",
				       hvt_msg_type_name((uint16_t)type), reply,
				       la);
			t_eq(la, hvt_msg_encoded_size(&m));
			ret = one_frame(a, (uint32_t)la, HVT_PROTO_MAX_FRAME,
					&out, &why);
			if (ret)
				t_fail("decode %s reply=%d: %d (%s)",
				       hvt_msg_type_name((uint16_t)type), reply,
				       ret, why ? why : "");
			t_eq(out.type, type);
			t_eq(out.flags, m.flags);
			t_eq(out.req, m.req);
			t_eq(out.chan, m.chan);
			/* Re-encoding the decoded view gives the same bytes. */
			lb = hvt_msg_encode(b, sizeof(b), &out);
			t_eq(lb, la);
			t_memeq(a, b, (size_t)la);

			/* Every byte of the payload matters: any truncation
			 * (resealed, so framing is fine) must be refused. */
			if (la > (int)HVT_PROTO_HDR_SIZE) {
				uint32_t cut;

				for (cut = 1; cut <= 8 &&
					      cut <= la - HVT_PROTO_HDR_SIZE;
				     cut++) {
					uint32_t nl = (uint32_t)la - cut;

					memcpy(b, a, nl);
					memcpy(b + 4, &nl, 4);
					reseal(b);
					ret = one_frame(b, nl,
							HVT_PROTO_MAX_FRAME,
							&out, &why);
					if (ret != -EBADMSG)
						t_fail("%s reply=%d cut %u: %d",
						       hvt_msg_type_name(
							       (uint16_t)type),
						       reply, cut, ret);
				}
			}
			/* One trailing byte too many is refused as well. */
			memcpy(b, a, (size_t)la);
			b[la] = 0;
			{
				uint32_t nl = (uint32_t)la + 1;

				memcpy(b + 4, &nl, 4);
				reseal(b);
				t_eq(one_frame(b, nl, HVT_PROTO_MAX_FRAME, &out,
					       &why),
				     -EBADMSG);
			}
		}
	}
	/* 34 types; all have requests except ERROR, replies except BYE,
	 * EVENT_STATE, PAGE, DOORBELL and CLOCK. */
	t_eq(n, 34 * 2 - 6);
	printf("round trip: %u message kinds\n", n);
}

static void check_field_values(void)
{
	static uint8_t a[8192];
	struct hvt_msg m, out;
	struct hvt_remote_rec r;
	struct hvt_trigger_rec tr;
	const char *why;
	int la;

	t_assert(sample(HVT_MSG_HELLO, 0, &m));
	la = hvt_msg_encode(a, sizeof(a), &m);
	t_ok(one_frame(a, (uint32_t)la, 8192, &out, &why));
	t_eq(out.u.hello.role, HVT_ROLE_AGENT);
	t_eq(out.u.hello.nr_fds, 2);
	t_eq(out.u.hello.pid, 4242);
	t_equ(out.u.hello.area_size, 16ull << 20);
	t_equ(out.u.hello.generation, 0x1122334455667788ull);
	t_eq(out.u.hello.name.len, 7);
	t_memeq(out.u.hello.name.ptr, "guest-1", 7);
	t_eq(out.u.hello.text.len, 11);

	t_assert(sample(HVT_MSG_REGISTER, 1, &m));
	la = hvt_msg_encode(a, sizeof(a), &m);
	t_ok(one_frame(a, (uint32_t)la, 8192, &out, &why));
	t_eq(out.u.result.status, -98);
	t_eq(out.u.result.id, 300);
	t_eq(out.u.result.bit, 12);

	t_assert(sample(HVT_MSG_REMOTES, 1, &m));
	la = hvt_msg_encode(a, sizeof(a), &m);
	t_ok(one_frame(a, (uint32_t)la, 8192, &out, &why));
	t_eq(out.u.remotes.recs.count, 4);
	hvt_msg_remote_at(&out.u.remotes.recs, 3, &r);
	t_eq(r.id, 4);
	t_eq(r.nr_events, 30);
	t_equ(r.clock_err_ns, 3000);
	t_assert(!strcmp(r.name, "vm3"));
	hvt_msg_remote_at(&out.u.remotes.recs, 0, &r);
	t_equ(r.clock_err_ns, UINT64_MAX);

	t_assert(sample(HVT_MSG_TRIGGER_RUN, 1, &m));
	la = hvt_msg_encode(a, sizeof(a), &m);
	t_ok(one_frame(a, (uint32_t)la, 8192, &out, &why));
	hvt_msg_trigger_at(&out.u.trigger_run_reply.recs, 2, &tr);
	t_equ(tr.token, 102);
	t_equ(tr.host_after, 2500);
	t_eq(tr.status, -61);

	t_assert(sample(HVT_MSG_TO_HOST, 0, &m));
	la = hvt_msg_encode(a, sizeof(a), &m);
	t_ok(one_frame(a, (uint32_t)la, 8192, &out, &why));
	t_equ(hvt_msg_u64_at(&out.u.to_host.ts, 4), 1ull << 40);
}

/* Decoder-level refusals: version, oversize, flags, reserved, checksums. */
static void check_frame_errors(void)
{
	static uint8_t a[HVT_PROTO_MAX_FRAME], s[HVT_PROTO_MAX_FRAME * 2];
	struct hvt_proto_dec d;
	struct hvt_frame f;
	struct hvt_msg m, out;
	const char *why;
	uint32_t la, lp, big;
	int ret;

	t_assert(sample(HVT_MSG_PING, 0, &m));
	lp = (uint32_t)hvt_msg_encode(a, sizeof(a), &m);

	/* Bad version: the whole frame is skipped, the next one decodes. */
	memcpy(s, a, lp);
	s[10] = 2;
	reseal(s);
	memcpy(s + lp, a, lp);
	t_ok(hvt_proto_dec_init(&d, dbuf, sizeof(dbuf), 4096));
	hvt_proto_dec_feed(&d, s, 2 * lp);
	t_eq(hvt_proto_dec_next(&d, &f), -EPROTONOSUPPORT);
	t_eq(hvt_proto_dec_next(&d, &f), 1);
	t_eq(f.type, HVT_MSG_PING);
	t_eq(hvt_proto_dec_next(&d, &f), 0);
	t_equ(d.skipped, lp);

	/* Oversized: a valid 64 KiB PAGE frame on a 16 KiB stream. */
	{
		static uint8_t bigpage[65536];

		m.type = HVT_MSG_PAGE;
		m.flags = 0;
		memset(&m.u, 0, sizeof(m.u));
		m.u.page.data = bigpage;
		m.u.page.len = sizeof(bigpage);
		big = (uint32_t)hvt_msg_encode(s, sizeof(s), &m);
		t_assert(big > 65536);
	}
	memcpy(s + big, a, lp);
	t_ok(hvt_proto_dec_init(&d, dbuf, HVT_PROTO_AGENT_FRAME,
				HVT_PROTO_AGENT_FRAME));
	{
		uint32_t off = 0, n, errs = 0, good = 0;

		/* Feed in pieces: the decoder never buffers more than its
		 * capacity while it skips the big frame. */
		while (off < big + lp) {
			n = hvt_proto_dec_feed(&d, s + off, big + lp - off);
			off += n;
			while ((ret = hvt_proto_dec_next(&d, &f)) != 0) {
				if (ret == -EMSGSIZE)
					errs++;
				else if (ret == 1 && f.type == HVT_MSG_PING)
					good++;
				else
					t_fail("unexpected %d", ret);
			}
		}
		t_eq(errs, 1);
		t_eq(good, 1);
	}

	/* A header claiming less than a header. */
	memcpy(s, a, lp);
	{
		uint32_t small = 8;

		memcpy(s + 4, &small, 4);
	}
	s[28] = 0;
	{
		uint32_t hs = hvt_proto_hsum(s);

		memcpy(s + 28, &hs, 4);
	}
	memcpy(s + HVT_PROTO_HDR_SIZE, a, lp);
	t_ok(hvt_proto_dec_init(&d, dbuf, sizeof(dbuf), 4096));
	hvt_proto_dec_feed(&d, s, HVT_PROTO_HDR_SIZE + lp);
	t_eq(hvt_proto_dec_next(&d, &f), -EMSGSIZE);
	t_eq(hvt_proto_dec_next(&d, &f), 1);

	/* Unknown flag bit and non-zero reserved header word. */
	memcpy(s, a, lp);
	s[11] = 0x80;
	reseal(s);
	t_eq(one_frame(s, lp, 4096, &out, &why), -EBADMSG);
	memcpy(s, a, lp);
	s[21] = 1;
	reseal(s);
	t_eq(one_frame(s, lp, 4096, &out, &why), -EBADMSG);

	/* MORE without REPLY is refused by the message decoder. */
	memcpy(s, a, lp);
	s[11] = HVT_PF_MORE;
	reseal(s);
	t_eq(one_frame(s, lp, 4096, &out, &why), -EBADMSG);

	/* Unknown type and a direction the type does not have. */
	memcpy(s, a, lp);
	s[8] = 0xe7;
	s[9] = 0x03;	/* 999 */
	reseal(s);
	t_eq(one_frame(s, lp, 4096, &out, &why), -EOPNOTSUPP);
	memcpy(s, a, lp);
	s[8] = HVT_MSG_PAGE;
	s[11] = HVT_PF_REPLY;
	reseal(s);
	t_eq(one_frame(s, lp, 4096, &out, &why), -EOPNOTSUPP);

	/* Corrupted payload or header: checksum refusal, then resync. */
	memcpy(s, a, lp);
	s[HVT_PROTO_HDR_SIZE + 3] ^= 0x40;
	memcpy(s + lp, a, lp);
	t_ok(hvt_proto_dec_init(&d, dbuf, sizeof(dbuf), 4096));
	hvt_proto_dec_feed(&d, s, 2 * lp);
	t_eq(hvt_proto_dec_next(&d, &f), -EBADMSG);
	t_eq(hvt_proto_dec_next(&d, &f), 1);
	t_eq(hvt_proto_dec_next(&d, &f), 0);
	memcpy(s, a, lp);
	s[14] ^= 1;	/* req id: header checksum */
	memcpy(s + lp, a, lp);
	t_ok(hvt_proto_dec_init(&d, dbuf, sizeof(dbuf), 4096));
	hvt_proto_dec_feed(&d, s, 2 * lp);
	t_eq(hvt_proto_dec_next(&d, &f), -EBADMSG);
	t_eq(hvt_proto_dec_next(&d, &f), 1);
	t_equ(f.req, m.req);
	t_eq(hvt_proto_dec_next(&d, &f), 0);

	/* A frame cut short by a reconnect, then a whole one: the whole
	 * one is recovered from inside the cut one's claimed length. */
	t_assert(sample(HVT_MSG_REGISTER, 0, &m));
	la = (uint32_t)hvt_msg_encode(a, sizeof(a), &m);
	memcpy(s, a, la / 2);
	memcpy(s + la / 2, a, la);
	t_ok(hvt_proto_dec_init(&d, dbuf, sizeof(dbuf), 4096));
	hvt_proto_dec_feed(&d, s, la / 2 + la);
	t_eq(hvt_proto_dec_next(&d, &f), -EBADMSG);
	t_eq(hvt_proto_dec_next(&d, &f), 1);
	t_ok(hvt_msg_decode(&f, &out, &why));
	t_eq(out.u.reg.def.len, m.u.reg.def.len);
	t_eq(hvt_proto_dec_next(&d, &f), 0);
	t_eq(d.errors, 1);
}

/* Message-level refusals: ranges, strings, counts, reserved fields. */
static void check_payload_errors(void)
{
	static uint8_t a[8192];
	struct hvt_msg m, out;
	const char *why;
	int la;

/* A sample message of (type, reply) with @expr applied is refused. */
#define REFUSE_ENC(type, reply, expr)                                          \
	do {                                                                   \
		sample(type, reply, &m);                                       \
		expr;                                                          \
		t_eq(hvt_msg_encode(a, sizeof(a), &m), -EINVAL);               \
	} while (0)

	REFUSE_ENC(HVT_MSG_HELLO, 0, m.u.hello.role = 9);
	REFUSE_ENC(HVT_MSG_HELLO, 0, m.u.hello.min_version = 4);
	REFUSE_ENC(HVT_MSG_HELLO, 0, m.u.hello.nr_fds = 3);
	REFUSE_ENC(HVT_MSG_HELLO, 0, m.u.hello.name = S("bad/name"));
	REFUSE_ENC(HVT_MSG_HELLO, 0, m.u.hello.name = S(".hidden"));
	REFUSE_ENC(HVT_MSG_HELLO, 0,
		   m.u.hello.name = S("0123456789012345678901234567890123"));
	REFUSE_ENC(HVT_MSG_HELLO, 0, m.u.hello.area_offset = 100);
	REFUSE_ENC(HVT_MSG_HELLO, 0, m.u.hello.status = 5);
	REFUSE_ENC(HVT_MSG_REGISTER, 0, m.u.reg.flags = 2);
	REFUSE_ENC(HVT_MSG_REGISTER, 0, m.u.reg.def = S("with\0nul"));
	REFUSE_ENC(HVT_MSG_REGISTER, 0, m.u.reg.def = S("new\nline"));
	REFUSE_ENC(HVT_MSG_REGISTER, 0, m.u.reg.def.len = 0);
	REFUSE_ENC(HVT_MSG_REGISTER, 0, m.u.reg.want_bit = HVT_ABI_MAX_EVENTS);
	REFUSE_ENC(HVT_MSG_REGISTER, 0,
		   (m.u.reg.flags = 0, m.u.reg.want_id = 1));
	REFUSE_ENC(HVT_MSG_CMDLINE, 0,
		   m.u.cmdline.comm = S("a-very-long-command-name"));
	REFUSE_ENC(HVT_MSG_CMDLINE, 0, m.u.cmdline.comm = S("tab\there"));
	REFUSE_ENC(HVT_MSG_EVENT_STATE, 0, m.u.event_state.enabled = 2);
	REFUSE_ENC(HVT_MSG_TRACING, 0, m.u.tracing.op = 3);
	REFUSE_ENC(HVT_MSG_ENABLE, 0, m.u.arg.arg = 2);
	REFUSE_ENC(HVT_MSG_ATTACH, 0, m.u.arg.s = S("../etc"));
	REFUSE_ENC(HVT_MSG_SUBSCRIBE, 0, m.u.subscribe.cpu = 256);
	REFUSE_ENC(HVT_MSG_PAGE, 0, m.u.page.len = 8);
	REFUSE_ENC(HVT_MSG_TEXT, 0, m.u.text_req.kind = 0);
	REFUSE_ENC(HVT_MSG_TO_HOST, 0, m.u.to_host.ts.count = 0);
	REFUSE_ENC(HVT_MSG_PING, 1, m.u.pong.clock_id = 0);
	REFUSE_ENC(HVT_MSG_PING, 1,
		   m.u.pong.writer_tx = m.u.pong.writer_rx - 1);
	REFUSE_ENC(HVT_MSG_REGISTER, 1, m.u.result.status = -5000);
	REFUSE_ENC(HVT_MSG_TRIGGER_RUN, 1,
		   trig_buf[33] = 1);	/* record cpu 256 + */
	REFUSE_ENC(HVT_MSG_REMOTES, 1, rec_buf[4] = 9); /* record state */
	REFUSE_ENC(HVT_MSG_REMOTES, 1,
		   rec_buf[80 + 31] = 'x');	/* name not terminated */
	REFUSE_ENC(HVT_MSG_REMOTES, 1, m.u.remotes.recs.ptr = NULL);
	REFUSE_ENC(HVT_MSG_PAGE, 0, m.u.page.data = NULL);
	REFUSE_ENC(HVT_MSG_FORMATS, 1, m.u.format.name.ptr = NULL);
	REFUSE_ENC(HVT_MSG_DEFINE, 0, m.u.arg.s.len = 70000);
	REFUSE_ENC(HVT_MSG_KEVENT, 0, m.u.arg.s = S("../sched"));
	REFUSE_ENC(HVT_MSG_KEVENT, 0, m.u.arg.s = S("sched/x"));
	REFUSE_ENC(HVT_MSG_KEVENT, 0, m.u.arg.s = S("sched:"));
	REFUSE_ENC(HVT_MSG_KEVENT, 0, m.u.arg.s = S(":sched_waking"));
	REFUSE_ENC(HVT_MSG_KEVENT, 0, m.u.arg.s = S("a:b:c"));
	REFUSE_ENC(HVT_MSG_KEVENT, 0, m.u.arg.arg = 2);
	REFUSE_ENC(HVT_MSG_KFORMATS, 0, m.u.kformats.op = HVT_KF_OP_MAX + 1);
	REFUSE_ENC(HVT_MSG_KFORMATS, 0, m.u.kformats.build_id = S("0A"));
	REFUSE_ENC(HVT_MSG_KFORMATS, 0, m.u.kformats.build_id = S("abc"));
	REFUSE_ENC(HVT_MSG_KFORMATS, 0, m.u.kformats.release.len = 0);
	REFUSE_ENC(HVT_MSG_KFORMATS, 0,
		   m.u.kformats.release = S("6.12\n-evil"));
	REFUSE_ENC(HVT_MSG_KFORMATS, 0, m.u.kformats.op = HVT_KF_BEGIN);
	REFUSE_ENC(HVT_MSG_KFILE, 0, m.u.kfile.flags = 2);
	REFUSE_ENC(HVT_MSG_KFILE, 0, m.u.kfile.name.len = 0);
	REFUSE_ENC(HVT_MSG_KFILE, 0, m.u.kfile.name = S("a\tb"));
	REFUSE_ENC(HVT_MSG_CLOCK, 0, m.u.clock.clock_id = 4);
	REFUSE_ENC(HVT_MSG_CLOCK, 0, m.u.clock.flags = 2);
	REFUSE_ENC(HVT_MSG_CLOCK, 0, m.u.clock.generation = 0);
	REFUSE_ENC(HVT_MSG_CLOCK, 0, (m.u.clock.rate_int = 0,
				      m.u.clock.rate_frac = 0));
	REFUSE_ENC(HVT_MSG_CLOCK, 0,
		   m.u.clock.rate_int = HVT_CLOCK_RATE_INT_MAX + 1);
	REFUSE_ENC(HVT_MSG_CLOCK, 0,
		   m.u.clock.rate_int = HVT_CLOCK_RATE_INT_MAX);
	REFUSE_ENC(HVT_MSG_CLOCK, 0,
		   m.u.clock.rate_err = 0x7ff8000000000000ull); /* NaN */
	REFUSE_ENC(HVT_MSG_CLOCK, 0,
		   m.u.clock.drift_half = 0x7ff0000000000000ull); /* inf */
	REFUSE_ENC(HVT_MSG_CLOCK, 0,
		   m.u.clock.rate_err = 0x8000000000000001ull); /* < 0 */
	REFUSE_ENC(HVT_MSG_CLOCK, 0, m.u.clock.clock_id = 0); /* a model */
	REFUSE_ENC(HVT_MSG_CLOCK, 1, (void)0); /* a notice, no reply */
	sample(HVT_MSG_REGISTER, 0, &m);
	m.flags = HVT_PF_MORE;
	t_eq(hvt_msg_encode(a, sizeof(a), &m), -EINVAL);
	sample(HVT_MSG_REGISTER, 0, &m);
	t_eq(hvt_msg_encode(a, 40, &m), -EMSGSIZE);
#undef REFUSE_ENC

	/* The decoder applies the same rules to bytes from the wire. */
#define REFUSE_DEC(type, reply, off, val)                                      \
	do {                                                                   \
		sample(type, reply, &m);                                       \
		la = hvt_msg_encode(a, sizeof(a), &m);                         \
		t_assert(la > 0);                                              \
		a[HVT_PROTO_HDR_SIZE + (off)] = (val);                         \
		reseal(a);                                                     \
		t_eq(one_frame(a, (uint32_t)la, 8192, &out, &why), -EBADMSG);  \
		t_assert(why != NULL);                                         \
	} while (0)

	REFUSE_DEC(HVT_MSG_HELLO, 0, 4, 0);		/* role 0 */
	REFUSE_DEC(HVT_MSG_HELLO, 0, 6, 1);		/* reserved */
	REFUSE_DEC(HVT_MSG_HELLO, 0, 56, 8);		/* name_len 8 */
	REFUSE_DEC(HVT_MSG_HELLO, 0, 60, '/');		/* name char */
	REFUSE_DEC(HVT_MSG_REGISTER, 0, 0, 4);		/* flags */
	REFUSE_DEC(HVT_MSG_REGISTER, 0, 14, 1);		/* reserved */
	REFUSE_DEC(HVT_MSG_REGISTER, 0, 16, 0);		/* NUL in def */
	REFUSE_DEC(HVT_MSG_REGISTER, 0, 12, 0xff);	/* def_len */
	REFUSE_DEC(HVT_MSG_UNREGISTER, 0, 2, 1);	/* id > 65535 */
	REFUSE_DEC(HVT_MSG_UNREGISTER, 0, 4, 1);	/* reserved */
	REFUSE_DEC(HVT_MSG_EVENT_STATE, 0, 9, 1);	/* reserved */
	REFUSE_DEC(HVT_MSG_TRACING, 0, 0, 7);		/* op */
	REFUSE_DEC(HVT_MSG_PING, 1, 32, 9);		/* clock id */
	REFUSE_DEC(HVT_MSG_PING, 1, 24, 0x00);	/* tx before rx */
	REFUSE_DEC(HVT_MSG_PING, 1, 36, 1);		/* reserved */
	REFUSE_DEC(HVT_MSG_TRIGGER, 1, 21, 1);		/* cpu 256 + */
	REFUSE_DEC(HVT_MSG_TEXT, 0, 0, 99);		/* kind */
	REFUSE_DEC(HVT_MSG_TEXT, 1, 4, 0xff);		/* text len */
	REFUSE_DEC(HVT_MSG_REMOTES, 1, 0, 5);		/* count */
	REFUSE_DEC(HVT_MSG_REMOTES, 1, 8 + 32, 0);	/* transport 0 */
	REFUSE_DEC(HVT_MSG_FORMATS, 1, 8, 0xff);	/* name len */
	REFUSE_DEC(HVT_MSG_STATS, 1, 5, 1);		/* cpu 256 + */
	REFUSE_DEC(HVT_MSG_SUBSCRIBE, 0, 1, 1);	/* cpu 256 */
	REFUSE_DEC(HVT_MSG_PAGE, 0, 4, 2);		/* flags */
	REFUSE_DEC(HVT_MSG_PAGE, 0, 49, 0x0f);	/* len mismatch */
	REFUSE_DEC(HVT_MSG_TO_HOST, 0, 0, 6);		/* count */
	REFUSE_DEC(HVT_MSG_TRIGGER_RUN, 0, 2, 1);	/* count > max */
	REFUSE_DEC(HVT_MSG_TRIGGER_RUN, 1, 4, 2);	/* count */
	REFUSE_DEC(HVT_MSG_TRIGGER_RUN, 1, 8 + 36, 1);	/* status > 0 */
	REFUSE_DEC(HVT_MSG_CMDLINE, 0, 8, 0x1b);	/* ESC in comm */
	REFUSE_DEC(HVT_MSG_ATTACH, 0, 8, '/');		/* name char */
	REFUSE_DEC(HVT_MSG_BYE, 0, 0, 9);		/* reason */
	REFUSE_DEC(HVT_MSG_ERROR, 1, 3, 0x7f);		/* status > 0 */
	REFUSE_DEC(HVT_MSG_REMOTES, 0, 0, 1);		/* reserved */
	REFUSE_DEC(HVT_MSG_CLOCK, 0, 0, 5);		/* clock id */
	REFUSE_DEC(HVT_MSG_CLOCK, 0, 39, 0x40);	/* rate_int > 2^62 */
	REFUSE_DEC(HVT_MSG_CLOCK, 0, 63, 0xbe);	/* rate_err < 0 */
	REFUSE_DEC(HVT_MSG_CLOCK, 0, 71, 0xbc);	/* drift_half < 0 */
	REFUSE_DEC(HVT_MSG_KEVENT, 0, 8, '.');		/* name char */
	REFUSE_DEC(HVT_MSG_KFORMATS, 0, 0, 0);		/* op 0 */
	REFUSE_DEC(HVT_MSG_KFORMATS, 0, 20, 1);		/* reserved */
	REFUSE_DEC(HVT_MSG_KFORMATS, 0, 24 + 19, 'A');	/* build id hex */
	REFUSE_DEC(HVT_MSG_KFILE, 0, 4, 1);		/* reserved */
	REFUSE_DEC(HVT_MSG_KFILE, 0, 18, 1);		/* reserved */
	REFUSE_DEC(HVT_MSG_KFILE, 0, 24, '\n');	/* name char */
	REFUSE_DEC(HVT_MSG_KFILE, 0, 21, 0x0f);	/* len mismatch */
#undef REFUSE_DEC
}

/* Frames mixed with garbage, fed in every chunk size pattern. */
static void check_stream(void)
{
	static uint8_t stream[1 << 20];
	static const uint16_t types[] = {
		HVT_MSG_HELLO, HVT_MSG_REGISTER, HVT_MSG_PING, HVT_MSG_CMDLINE,
		HVT_MSG_PAGE, HVT_MSG_EVENT_STATE, HVT_MSG_TRIGGER,
		HVT_MSG_DELETE,
	};
	struct hvt_proto_dec d;
	struct hvt_frame f;
	uint32_t len = 0, nframes = 0, garbage_runs = 0, i, seed = 12345;
	uint32_t chunk;

	for (i = 0; i < 200; i++) {
		struct hvt_msg m;
		int n;

		sample(types[i % 8], 0, &m);
		m.req = i;
		n = hvt_msg_encode(stream + len, sizeof(stream) - len, &m);
		t_assert(n > 0);
		len += (uint32_t)n;
		nframes++;
		if (i % 5 == 4) {
			/* Garbage that includes fake magics. */
			uint32_t g = 1 + i % 37, k;

			for (k = 0; k < g; k++)
				stream[len + k] = (uint8_t)(0x41 + k * 13);
			if (g > 8)
				memcpy(stream + len + 2, "HVTP", 4);
			len += g;
			garbage_runs++;
		}
	}
	for (chunk = 1; chunk <= 4099; chunk = chunk * 3 + 1) {
		uint32_t off = 0, got = 0, errs = 0;
		int ret;

		t_ok(hvt_proto_dec_init(&d, dbuf, HVT_PROTO_AGENT_FRAME,
					HVT_PROTO_AGENT_FRAME));
		while (off < len) {
			uint32_t n = chunk;

			if (chunk == 1)	/* vary: 1..17 */
				n = 1 + (seed = seed * 1103515245u + 12345u) %
						17;
			if (n > len - off)
				n = len - off;
			n = hvt_proto_dec_feed(&d, stream + off, n);
			off += n;
			while ((ret = hvt_proto_dec_next(&d, &f)) != 0) {
				struct hvt_msg m;

				if (ret < 0) {
					t_eq(ret, -EBADMSG);
					errs++;
					continue;
				}
				t_equ(f.req, got);
				t_ok(hvt_msg_decode(&f, &m, NULL));
				got++;
			}
		}
		t_eq(got, nframes);
		t_eq(errs, garbage_runs);
	}
	printf("stream: %u frames, %u garbage runs, every chunking\n", nframes,
	       garbage_runs);
}

/*
 * hvt_msg_encode_head(): the head and the tail left in place are, byte for
 * byte, the frame hvt_msg_encode() builds, checksums included; a message
 * whose last field is not a variable one, or whose bytes before it are no
 * whole number of words, is refused, as is a head that does not fit.
 */
static void check_encode_head(void)
{
	static uint8_t a[HVT_PROTO_MAX_FRAME], h[HVT_PROTO_MAX_FRAME];
	static uint8_t page[65536];
	unsigned int type, heads = 0, len;
	const void *tail;
	uint32_t tail_len;
	struct hvt_msg m;
	int reply, la, lh;

	for (type = 0; type < 300; type++) {
		for (reply = 0; reply <= 1; reply++) {
			if (!sample((uint16_t)type, reply, &m))
				continue;
			la = hvt_msg_encode(a, sizeof(a), &m);
			t_assert(la > 0);
			lh = hvt_msg_encode_head(h, sizeof(h), &m, &tail,
						 &tail_len);
			if (lh == -EINVAL)
				continue;
			t_assert(lh > 0);
			t_equ((uint32_t)lh + tail_len, (uint32_t)la);
			t_assert(!memcmp(h, a, (size_t)lh));
			t_assert(!tail_len || !memcmp(tail, a + lh, tail_len));
			heads++;
		}
	}
	t_assert(heads >= 2); /* PAGE, and a reply or another at least */
	for (len = 0; len < sizeof(page); len++)
		page[len] = (uint8_t)(len * 7 + 3);
	for (len = HVT_PROTO_MIN_PAGE; len <= sizeof(page);
	     len += len < 64 ? 1 : 4093) {
		memset(&m, 0, sizeof(m));
		m.type = HVT_MSG_PAGE;
		m.u.page.cpu = 1;
		m.u.page.seq = len;
		m.u.page.data = page;
		m.u.page.len = len;
		la = hvt_msg_encode(a, sizeof(a), &m);
		lh = hvt_msg_encode_head(h, sizeof(h), &m, &tail, &tail_len);
		t_assert(la > 0 && lh > 0);
		t_equ(tail_len, len);
		t_assert(tail == page);
		t_equ((uint32_t)lh + len, (uint32_t)la);
		t_assert(!memcmp(h, a, (size_t)lh));
		t_assert(!memcmp(a + lh, page, len));
		/* The head alone must fit; the tail needs no room. */
		t_eq(hvt_msg_encode_head(h, (uint32_t)lh - 1, &m, &tail,
					 &tail_len),
		     -EMSGSIZE);
		t_eq(hvt_msg_encode_head(h, (uint32_t)lh, &m, &tail, &tail_len),
		     lh);
	}
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_PING;
	t_eq(hvt_msg_encode_head(h, sizeof(h), &m, &tail, &tail_len), -EINVAL);
	t_eq(hvt_msg_encode_head(h, sizeof(h), &m, NULL, &tail_len), -EINVAL);
}

int main(void)
{
	check_roundtrip();
	check_encode_head();
	check_field_values();
	check_frame_errors();
	check_payload_errors();
	check_stream();
	printf("ok\n");
	return 0;
}
