// SPDX-License-Identifier: MIT
/*
 * hvtrace writer core: armed wakeups.
 *
 * A reader that has caught up with a CPU buffer would rather sleep than
 * poll.  It arms a wakeup in the control page; the next writer that
 * commits past the watermark rings a doorbell once.  The writer's cost
 * while nobody is armed is one load and a compare after its commit
 * (hvt_rb_wake_due(), inline in ring_buffer.h); everything else is here,
 * off the fast path.
 *
 *   reader (host)                              writer (one CPU buffer)
 *   -------------                              -----------------------
 *   has read everything up to word R
 *   A2 wake := HVT_WAKE(gen + 1,               W1 meta->write := C (release:
 *              HVT_WAKE_POS(R) + mark)            the commit)
 *   A3 full barrier on every writer CPU        W2 wake (relaxed); its gen ==
 *      (membarrier(2), or the guest's agent       meta->wake_ack: done
 *      doing it for a guest's writers)         W3 HVT_WAKE_POS(C) >= its at
 *   A4 load meta->write (acquire): moved          and CAS wake_ack ack -> gen
 *      past at?  read now; else                W4 the CAS winner rings
 *   A5 sleep until the doorbell
 *
 * gen and at share one 64-bit word, so a writer never pairs one arming's
 * gen with another's at.
 *
 * Why no wakeup is lost.  The writer has no fence between W1 and W2 (a
 * full fence there would cost more than the rest of the write), so by
 * itself a writer could load the old wake word while its commit still
 * sits in its store buffer, and the reader could load the old commit word
 * at A4: both would miss.  A3 closes that.  After a full barrier on every
 * CPU that runs a writer, each writer is either past W1 with C visible
 * (A4 sees it) or not yet at W2 (which then sees A2, visible before A3
 * began).  The barrier pairs with no instruction of the writer: it is
 * done to the writer's CPU (membarrier(2) MEMBARRIER_CMD_PRIVATE_EXPEDITED
 * or GLOBAL_EXPEDITED for host processes; for a guest, the guest's agent
 * calls it for the guest's writers when the host asks).  W1 (release)
 * pairs with A4 (acquire), as for every read.  The wake word publishes no
 * data: relaxed on both sides.
 *
 * At most one doorbell per arming: the writers of a CPU buffer claim the
 * gen with a compare-and-swap on meta->wake_ack; only the winner rings.
 * Each writer handle remembers the last gen it found claimed
 * (wake_seen), so the check after a commit compares the wake word with
 * the handle's own copy, not with the meta.
 * A writer that saw the gen but has not reached at does nothing: a later
 * commit will.  A reader that found data at A4 re-arms with a new gen
 * later; a doorbell still due for the older one may then come early for
 * the newer one (a spurious wake, never a lost one).
 *
 * Everything read from the control page is a plain number to the writer:
 * a host that writes nonsense there gets early or missing doorbells for
 * its own reader, never a fault in the writer.
 */
#include <hvtrace/ring_buffer.h>

int hvt_rb_wake_slow(struct hvt_rb_cpu *cb, uint64_t wake)
{
	uint32_t gen = HVT_WAKE_GEN(wake), ack;
	/* Our own or another writer's commit word: only a position here. */
	uint64_t word = __atomic_load_n(&cb->meta->write, __ATOMIC_RELAXED);

	if ((int32_t)(HVT_WAKE_POS(word) - HVT_WAKE_AT(wake)) < 0)
		return 0; /* W3: not up to the watermark yet */
	ack = __atomic_load_n(&cb->meta->wake_ack, __ATOMIC_RELAXED);
	/*
	 * Claimed or not, this gen needs nothing more from this handle: the
	 * fast path skips it from now on (a relaxed store: the threads of a
	 * process share the handle; it is only a hint).  The CAS elects the
	 * one writer that rings; relaxed, since the doorbell carries no data
	 * (the reader loads the commit word, acquire, when it wakes).  A CAS
	 * that fails lost to another writer's claim, of this gen or of an
	 * older one it still held: that writer rings, and any doorbell after
	 * the arming wakes the reader.
	 */
	__atomic_store_n(&cb->wake_seen, gen, __ATOMIC_RELAXED);
	if (ack == gen)
		return 0;
	return __atomic_compare_exchange_n(&cb->meta->wake_ack, &ack, gen, 0,
					   __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

uint64_t hvt_wake_word(uint32_t gen, uint64_t read_word, uint32_t mark,
		       uint32_t data_size)
{
	uint32_t seq = HVT_WORD_SEQ(read_word);
	uint32_t off = HVT_WORD_OFFSET(read_word);

	if (!mark)
		mark = 1;
	if (data_size) {
		seq += mark / data_size;
		off += mark % data_size;
		if (off > data_size) {
			seq++;
			off -= data_size;
		}
	}
	if (off > 0xffff)
		off = 0xffff;
	return HVT_WAKE(gen, HVT_WAKE_POS(HVT_WORD(seq, 0, off)));
}
