#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Both ways of reading the host kernel's ring print the same events: the
# same numbered trace_marker lines go through the trace_pipe_raw mmap
# (HVTRACE_KERNEL_RING=mmap) and through read() (HVTRACE_KERNEL_RING=read);
# each must print the kernel's own text and exact losses (kring_leg in
# lib.sh), and the two event lists, pids and timestamps aside, must be
# identical.  Skips without a writable tracefs, or on a kernel without
# the ring-buffer mmap (before 6.10: kernel_ring_read covers it there).
. "$(dirname "$0")/lib.sh"
declare -F kring_leg >/dev/null || { echo "FAIL: lib.sh did not load"; exit 1; }

kring_setup
probe=hvt-kring-$$-mmap-probe
mkdir $KRING_ROOT/instances/$probe || fail "cannot create a tracefs instance"
KRING_DIRS=$KRING_ROOT/instances/$probe
if ! HVTRACE_KERNEL_RING=mmap "$HVTRACE" stream --kernel --instance $probe \
	--cpu 0 --drain >/dev/null 2>"$TMP/probe.err"; then
	if grep -q 'needs Linux 6.10' "$TMP/probe.err"; then
		echo "SKIP: this kernel ($(uname -r)) has no ring-buffer mmap: $(cat "$TMP/probe.err")"
		exit 77
	fi
	fail "stream --kernel with HVTRACE_KERNEL_RING=mmap: $(cat "$TMP/probe.err")"
fi
rmdir $KRING_ROOT/instances/$probe
kring_leg mmap
kring_leg read
if ! cmp -s "$TMP/mmap.events" "$TMP/read.events"; then
	diff "$TMP/mmap.events" "$TMP/read.events" | head -10
	fail "the mmap and read() paths print different events"
fi
expect_eq "events compared" "$(grep -c 'kring marker' "$TMP/read.events")" 40
echo "ok: the mmap and read() paths print the same 40 events"
