#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Agent copy mode, forced on the Debian 6.12 guest kernel (which has the
# persistent ring, so auto would pick ring mode; the copy path is the one
# an older kernel gets): "hvtrace guest start --kernel-mode copy" boots
# without reserve_mem, the guest's init makes the instance hvt, and
# hvtrace-agent copies its pages from per_cpu/cpuN/trace_pipe_raw into
# the trace area's kernel section.  "hvtrace stream NAME" reads the
# section beside the guest's user events (docs/guest-kernel.md, "Copy
# mode").
#
# 1. Exact delivery: once the host's stream reads (the writers wait for
#    its "go" on a port, kring_gated), the guest writes N numbered
#    trace_marker lines on CPU 0 while getppid_loop makes exactly K getppid calls on CPU 1 with
#    raw_syscalls:sys_enter in --kernel-events (the guest's init enables
#    the list before any other process runs; see kernel-ring-exact.sh for
#    why raw_syscalls).  The live stream, which ends by
#    itself when the guest powers off (the agent copies through the mmap
#    ABI here), must show every line exactly once
#    and in order, exactly K "sys_enter: NR 110" events of getppid_loop's
#    pid, and no loss.
# 2. Overflow, once with the agent on the ring-buffer mmap ABI (6.10+,
#    its default where the kernel has it) and once on read() (forced):
#    a 64 KiB-per-CPU kernel ring and a 256 KiB area (eight
#    4 KiB slots per CPU in the kernel section); the host's stream is
#    stopped (SIGSTOP) while the guest writes 19900 lines, so the section
#    fills, the agent stops reading and the kernel overwrites its ring.
#    hvtraced reads the section and queues pages for the stream up to its
#    --client-queue, then leaves them in the section (backpressure): the
#    test's hvtraced takes the least (64K), so that a stopped stream
#    stops the section's reader within about a hundred pages (the queue
#    and the socket's buffers), far less than the burst.
#    After the stream resumes, every number is printed at most once and in
#    order, every gap comes right after a "CPU:0 [LOST n EVENTS]" line
#    whose n is exactly the size of the gap, the stream's summary counts
#    the same total, and a second burst of 1000 lines is read whole.
#
# Environment: HVT_KCOPY_LINES (N, default 10000), HVT_KCOPY_CALLS (K,
# default 5000).
. "$(dirname "$0")/lib.sh"
t_require

HVTRACE=$T_OBJTREE/bin/hvtrace
[ -x "$HVTRACE" ] || fail "$HVTRACE is missing; build it with 'make O=$T_OBJTREE'"
N=${HVT_KCOPY_LINES:-10000}
K=${HVT_KCOPY_CALLS:-5000}
initrd=$T_OBJTREE/qemu-scripts/guest.cpio.gz
[ -f "$initrd" ] || fail "$initrd is missing; build it with 'make guest-image'"
t_own_daemon
"$T_OBJTREE/bin/hvtraced" --socket "$HVTRACED_SOCKET" --run-dir "$T_RUNDIR" \
	--shm-dir "$T_SHM" --client-queue 64K ||
	fail "hvtraced did not start (log: $T_RUNDIR/hvtraced.log)"

# --- 1. exact delivery ---------------------------------------------------
t_name n kcopy
"$HVTRACE" guest start "$n" --initrd "$initrd" --log "$T_TMP/$n.log" \
	--kernel-events ftrace:print,raw_syscalls:sys_enter --kernel-mode copy \
	--port go --run "$(kring_gated "taskset 2 getppid_loop $K & $(kring_marks "$N"); wait")" \
	>"$T_TMP/start.out" 2>&1 || { cat "$T_TMP/start.out"; fail "hvtrace guest start failed"; }
[ ! -e "$T_SHM/hvtrace-$n.ram" ] || fail "copy mode made a RAM file"
grep -qa 'reserve_mem' "$T_RUNDIR/$n/qemu.args" && fail "copy mode passed reserve_mem to the guest"
info "$n started ($SECONDS s); streaming until it powers off"
timeout 200 "$HVTRACE" stream "$n" --summary >"$T_TMP/out.txt" 2>"$T_TMP/err.txt" &
spid=$!
T_PIDS+=("$spid")
kring_go "$n" "$T_TMP/err.txt" "$spid" "the guest kernel's pages, copied by its agent"
wait "$spid" || { cat "$T_TMP/err.txt"; fail "stream failed or did not end with the guest"; }
cat "$T_TMP/err.txt"
grep -q "the guest kernel's pages, copied by its agent (kernel copy mode) (2 CPUs) beside its user events" "$T_TMP/err.txt" ||
	fail "the stream did not read the kernel section"
grep -qa 'kernel copy: /sys/kernel/tracing/instances/hvt, 2 CPUs.*through the ring-buffer mmap ABI' "$T_TMP/$n.log" ||
	fail "the agent did not start its kernel copy through the mmap ABI: $(grep -a 'kernel copy' "$T_TMP/$n.log")"
grep -qa 'hvtrace: run exited with status 0' "$T_TMP/$n.log" || fail "the guest's writers failed"
kring_check_marks "$T_TMP/out.txt" "$N"
info "exact: $N markers in order"
kring_check_getppid "$T_TMP/$n.log" "$T_TMP/out.txt" "$K"
grep -q '^hvtrace stream: .*, 0 lost,' "$T_TMP/err.txt" || fail "the summary reports losses"

# --- 2. overflow: the host stopped, the kernel laps its ring ------------
# overflow NAME VIA [APPEND]: the run below, the agent copying through VIA
# ("mmap": the ring-buffer mmap ABI; "read": read(), forced by
# HVT_KCOPY_READ=1 on the kernel command line, which the guest's init and
# so the agent get in their environment).
overflow() {
	local m=$1 via=$2 verdict nlost lostsum gaps tail last summ spid
	"$HVTRACE" guest start "$m" --initrd "$initrd" --log "$T_TMP/$m.log" \
		--kernel-events ftrace:print --kernel-mode copy --kernel-buffer 128K \
		--area-size 256K --port go ${3:+--append "$3"} \
		--run "$(kring_lap_run)" \
		>"$T_TMP/$m.start" 2>&1 || { cat "$T_TMP/$m.start"; fail "hvtrace guest start ($via) failed"; }
	: >"$T_TMP/$m.out"
	"$HVTRACE" stream "$m" --summary >"$T_TMP/$m.out" 2>"$T_TMP/$m.err" &
	spid=$!
	T_PIDS+=("$spid")
	kring_lap "$m" "$spid" "$T_TMP/$m.out" "$T_TMP/$m.err"
	case $via in
	mmap) grep -qa 'kernel copy: .*through the ring-buffer mmap ABI' "$T_TMP/$m.log" ;;
	*) grep -qa 'kernel copy: .*through read()' "$T_TMP/$m.log" ;;
	esac || fail "the agent did not copy through $via: $(grep -a 'kernel copy' "$T_TMP/$m.log")"

	# Every marker on CPU 0, numbers strictly increasing, each gap right
	# after a LOST line of exactly its size, no unknown count; the second
	# burst whole.
	verdict=$(awk '
		/CPU:0 \[LOST EVENTS\]/ { print "a loss without a count: " $0; exit }
		/CPU:0 \[LOST [0-9]+ EVENTS\]/ { nl++; lostsum += $3; want += $3; next }
		/hvt-mark/ {
			if ($0 !~ /\[000\]/) { print "a marker on another CPU: " $0; exit }
			v = $NF + 0
			if (seen && v <= last) { print "line " NR ": " v " after " last; exit }
			gap = seen ? v - last - 1 : v
			if (gap != want) { printf "line %d: gap of %d before %d, LOST said %d\n", NR, gap, v, want; exit }
			if (gap) gaps += gap
			want = 0; last = v; seen = 1; if (v >= 20000) tail++
		}
		END { printf "ok %d %d %d %d %d\n", nl, lostsum, gaps, tail, last }' "$T_TMP/$m.out")
	case $verdict in
	ok*) ;;
	*) fail "$via: $verdict" ;;
	esac
	read -r _ nlost lostsum gaps tail last <<<"$verdict"
	info "overflow ($via): $nlost LOST lines, $lostsum events reported lost, numbering gaps $gaps, second burst $tail of 1000, last $last"
	grep -a 'kernel copy: CPU 0:' "$T_TMP/$m.log" | tr -d '\r'
	[ "$nlost" -ge 1 ] && [ "$gaps" -ge 1 ] ||
		fail "$via: the kernel never lapped its ring while the host was stopped (LOST lines $nlost, gaps $gaps): the test proved nothing"
	[ "$tail" -eq 1000 ] && [ "$last" -eq 20999 ] ||
		fail "$via: the second burst was not read whole ($tail of 1000, last $last)"
	summ=$(sed -n 's/^hvtrace stream: .* events, \([0-9]*\) lost, .*/\1/p' "$T_TMP/$m.err")
	[ "$summ" = "$lostsum" ] || fail "$via: the summary counts ${summ:-no} lost events, the LOST lines $lostsum"
}
t_name m kcopylost
overflow "$m" mmap
t_name m kcopyread
overflow "$m" read HVT_KCOPY_READ=1
echo "PASS"
