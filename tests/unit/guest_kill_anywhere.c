// SPDX-License-Identifier: MIT
/*
 * SIGKILL at every instruction of the executors.  For each instruction of
 * hvtg_rseq_exec_asm() and of hvtg_rseq_append_asm(), the executor of the
 * compact plan that plain appends take (addresses from objdump), and for
 * each kind of
 * write (append, page switch with a slot claim, seal of a full page,
 * drop), a child process writes one event with a breakpoint planted at
 * that instruction and is SIGKILLed when it reaches it, i.e. with every
 * earlier store done and none after.  Then, in the surviving area:
 *
 *   - the ring walks cleanly and holds exactly the events committed
 *     before, plus the child's event if and only if the kill came after
 *     its commit store;
 *   - every payload is intact;
 *   - the buffer is not wedged: another writer's next event commits (or,
 *     on a full consume ring, is counted as lost) and reads back.
 *
 * Instructions the child never reaches (the failure and abort paths)
 * must let it finish normally, with all of its events committed.
 */
#include <link.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#include "../stress/guest_harness.h"

#if IS_ENABLED(CONFIG_HVT_GUEST) && defined(__x86_64__)

#include "hvtg_internal.h"

enum scenario { SC_APPEND, SC_SWITCH, SC_SEAL, SC_DROP, SC_NR };
static const char *const sc_name[SC_NR] = { "append", "switch", "seal",
					    "drop" };

#define MAX_INSNS	256
static uintptr_t insn[MAX_INSNS];	/* run-time addresses */
static char insn_after[MAX_INSNS];	/* on the committed path, after the
					 * commit store */
static int nr_insns;

static struct hvtg_event ev = HVTG_EVENT_INIT;

static int bias_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	*(uintptr_t *)arg = info->dlpi_addr;
	return 1;	/* the first object is the program itself */
}

/* Instruction addresses of one executor, from objdump. */
static void find_insns(uintptr_t start, uintptr_t end, uintptr_t post_commit)
{
	uintptr_t bias = 0, lo, hi;
	char cmd[512], line[512];
	int after_commit = 0, first = nr_insns;
	FILE *f;

	dl_iterate_phdr(bias_cb, &bias);
	lo = start - bias;
	hi = end - bias;
	snprintf(cmd, sizeof(cmd),
		 "objdump -d --no-show-raw-insn --start-address=%#lx "
		 "--stop-address=%#lx /proc/%d/exe 2>/dev/null",
		 (unsigned long)lo, (unsigned long)hi, (int)getpid());
	f = popen(cmd, "r");
	if (!f)
		t_skip("cannot run objdump (binutils) to find instructions");
	while (fgets(line, sizeof(line), f)) {
		unsigned long a;
		char mnem[32];

		if (sscanf(line, " %lx:\t%31s", &a, mnem) != 2 || a < lo ||
		    a >= hi)
			continue;
		if (nr_insns == MAX_INSNS)
			t_fail("more than %d instructions", MAX_INSNS);
		/* From post_commit_ip up to its ret: after the commit. */
		if (a + bias == post_commit)
			after_commit = 1;
		insn_after[nr_insns] = after_commit == 1;
		insn[nr_insns++] = a + bias;
		if (after_commit == 1 && !strcmp(mnem, "ret"))
			after_commit = 2;
	}
	pclose(f);
	if (nr_insns - first < 20 || after_commit != 2)
		t_skip("objdump did not disassemble the executor (%d "
		       "instructions found)",
		       nr_insns - first);
}

/* Is @a an instruction of the compact plan's executor? */
static int in_compact(uintptr_t a)
{
	return a >= (uintptr_t)hvtg_rseq_append_asm &&
	       a < (uintptr_t)hvtg_rseq_append_end;
}

static void payload(uint8_t *p, uint32_t len, uint32_t tag)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(tag * 131 + i * 7);
}

static int write_tagged(uint32_t tag, uint32_t len)
{
	uint8_t p[256];
	uint32_t head = tag | len << 16;

	memcpy(p, &head, 4);
	payload(p + 4, len - 4, tag);
	return hvtg_write(&ev, p, len);
}

struct check {
	uint64_t n;
	int bad;
};

static void verify(const struct th_event *e, void *arg)
{
	struct check *c = arg;
	uint8_t want[256];
	uint32_t head, len, i;

	c->n++;
	if (e->len < 4 || e->len > 256) {
		c->bad = 1;
		return;
	}
	memcpy(&head, e->payload, 4);
	len = head >> 16;
	if (len > e->len || e->len - len > 3) {
		c->bad = 1;
		return;
	}
	payload(want, len - 4, head & 0xffff);
	if (memcmp(want, e->payload + 4, len - 4))
		c->bad = 1;
	for (i = len; i < e->len; i++)	/* record padding */
		if (e->payload[i])
			c->bad = 1;
}

/* Shape the ring so that a 119-byte event (132 bytes on the page) is the
 * wanted kind of write. */
static void setup(struct th_area *ta, enum scenario sc)
{
	struct hvt_cpu_meta *m;
	uint32_t tag = 1;
	int ret;

	th_area_new(ta, 1, 2, 4096, HVT_MODE_CONSUME, HVT_CLOCK_COUNTER);
	t_ok(hvtg_event_bind(ta->w, &ev, 21, 0));
	th_enable(ta, 0, 1);
	m = th_meta(ta, 0);
	t_ok(write_tagged(tag++, 100));
	switch (sc) {
	case SC_APPEND:
		break;
	case SC_SWITCH:
		/* Page 0 too full for a 132-byte event. */
		while (HVT_WORD_OFFSET(m->write) + 132 <= 4080)
			t_ok(write_tagged(tag++, 100));
		break;
	case SC_SEAL:
		/* On the last usable page, too full for the event. */
		while (HVT_WORD_SEQ(m->write) == 0 ||
		       HVT_WORD_OFFSET(m->write) + 132 <= 4080)
			t_ok(write_tagged(tag++, 100));
		break;
	case SC_DROP:
		do {
			ret = write_tagged(tag++, 100);
		} while (ret == 0);
		t_eq(ret, -ENOSPC);
		break;
	default:
		break;
	}
}

/*
 * Child: stop for the tracer, then write the victim event.
 * Returns only in the parent: 1 if the child was killed at the
 * breakpoint, 0 if it finished.
 */
static int run_child(uintptr_t at)
{
	long word;
	pid_t pid;
	int status;

	pid = fork();
	t_assert(pid >= 0);
	if (pid == 0) {
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		raise(SIGSTOP);
		/* 119 bytes: the copy loop's 8, 4, 2 and 1-byte paths. */
		write_tagged(1000, 119);
		_exit(0);
	}
	t_assert(waitpid(pid, &status, 0) == pid);
	t_assert(WIFSTOPPED(status) && WSTOPSIG(status) == SIGSTOP);
	errno = 0;
	word = ptrace(PTRACE_PEEKTEXT, pid, (void *)at, NULL);
	t_assert(errno == 0);
	word = (word & ~0xffL) | 0xcc;	/* int3 */
	t_ok(ptrace(PTRACE_POKETEXT, pid, (void *)at, (void *)word));
	t_ok(ptrace(PTRACE_CONT, pid, NULL, NULL));
	t_assert(waitpid(pid, &status, 0) == pid);
	if (WIFEXITED(status)) {
		t_eq(WEXITSTATUS(status), 0);
		return 0;
	}
	if (!WIFSTOPPED(status) || WSTOPSIG(status) != SIGTRAP)
		t_fail("child at %#lx: unexpected status %#x",
		       (unsigned long)at, status);
	kill(pid, SIGKILL);
	t_assert(waitpid(pid, &status, 0) == pid);
	t_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	return 1;
}

int main(void)
{
	int i, sc, killed_total = 0, finished_total = 0;
	int committed_kills = 0, compact_kills = 0, compact_after = 0;

	find_insns((uintptr_t)hvtg_rseq_exec_asm, (uintptr_t)hvtg_rseq_exec_end,
		   (uintptr_t)hvtg_rseq_post_commit_ip);
	find_insns((uintptr_t)hvtg_rseq_append_asm,
		   (uintptr_t)hvtg_rseq_append_end,
		   (uintptr_t)hvtg_rseq_append_post_commit_ip);
	t_ok(th_pin(0));
	for (sc = 0; sc < SC_NR; sc++) {
		for (i = 0; i < nr_insns; i++) {
			struct th_area ta;
			struct check c = { 0 };
			uint64_t e0, l0, w0, e1, l1;
			int killed, after, compact, ret;

			setup(&ta, (enum scenario)sc);
			e0 = th_entries(&ta, 0);
			l0 = th_lost(&ta, 0);
			w0 = th_meta(&ta, 0)->write;
			killed = run_child(insn[i]);
			after = insn_after[i];
			e1 = th_entries(&ta, 0);
			l1 = th_lost(&ta, 0);
			if (!killed) {
				finished_total++;
				/* The child's event went through. */
				t_equ(e1 + l1, e0 + l0 + 1);
			} else {
				killed_total++;
				committed_kills += after;
				compact = in_compact(insn[i]);
				compact_kills += compact;
				compact_after += compact && after;
				switch (sc) {
				case SC_APPEND:
				case SC_SWITCH:
					t_equ(e1, e0 + (uint64_t)after);
					t_equ(l1, l0);
					break;
				case SC_SEAL:
					/* The seal commits the page end, no
					 * event; the drop never started. */
					t_equ(e1, e0);
					t_equ(l1, l0);
					if (after)
						t_equ(HVT_WORD_OFFSET(
							      th_meta(&ta, 0)
								      ->write),
						      4080);
					else
						t_equ(th_meta(&ta, 0)->write,
						      w0);
					break;
				case SC_DROP:
					t_equ(e1, e0);
					t_equ(l1, l0 + (uint64_t)after);
					break;
				default:
					break;
				}
			}
			if (th_walk(&ta, 0, verify, &c, NULL) != e1 || c.bad)
				t_fail("%s, kill at +%#lx: ring corrupted",
				       sc_name[sc],
				       (unsigned long)(insn[i] -
						       insn[0]));
			/* Not wedged: the next write goes through. */
			ret = write_tagged(2000, 120);
			if (sc == SC_APPEND || sc == SC_SWITCH) {
				t_eq(ret, 0);
				t_equ(th_entries(&ta, 0), e1 + 1);
			} else {
				t_eq(ret, -ENOSPC);
				t_equ(th_lost(&ta, 0), l1 + 1);
			}
			c.n = 0;
			t_equ(th_walk(&ta, 0, verify, &c, NULL),
			      th_entries(&ta, 0));
			t_assert(!c.bad);
			th_area_free(&ta);
		}
	}
	printf("%d instructions x %d kinds: %d kills (%d after the commit), "
	       "%d runs never reached the breakpoint\n",
	       nr_insns, SC_NR, killed_total, committed_kills,
	       finished_total);
	printf("in the compact plan's executor: %d kills (%d after the "
	       "commit)\n",
	       compact_kills, compact_after);
	t_assert(killed_total > 0 && committed_kills > 0);
	t_assert(compact_kills > 0 && compact_after > 0);
	printf("PASS\n");
	return 0;
}

#else
int main(void)
{
	t_skip("the instruction-level kill test needs the guest library "
	       "(CONFIG_HVT_GUEST) on x86_64");
}
#endif
