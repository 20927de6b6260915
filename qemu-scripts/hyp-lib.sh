# SPDX-License-Identifier: MIT
#
# Shell functions for running the EL2 rig under QEMU (sourced by
# run-hyp.sh and by the tests in tests/hyp/).  Nothing here runs on its
# own.
#
#   hyp_init OBJTREE [driver]   locate the image and the hvtrace CLI, and
#                               with "driver" the tests' driver (exit 77
#                               if QEMU is missing, 1 if the build is)
#   hyp_start NAME CPUS ARGS    boot the image; guest RAM in /dev/shm
#   hyp_cmd CHARS               type a console command ('q' = power off)
#   hyp_wait_exit SECONDS       wait for QEMU to end; sets HYP_RC
#   hyp_kill9                   SIGKILL QEMU (a crash, as far as the
#                               trace area is concerned)
#   hyp_cleanup                 stop QEMU, remove the RAM file (unless
#                               HYP_KEEP=1) and the temporary directory
#
# After hyp_init: HYP_ELF, HYP_HVTRACE (the CLI: 'hyp info', 'hyp
# attach', 'stream'), HYP_TOOL (tests/hyp's driver, with "driver").
# After hyp_start: HYP_PID (QEMU), HYP_RAM (the guest-RAM file, the area
# is at file offset 0x1000000), HYP_LOG (the console), HYP_DIR.
#
# Guest RAM is a memory-backend-file with share=on, so the host sees the
# hypervisor's trace area in HYP_RAM while it runs and after it is gone.

HYP_QEMU=${HYP_QEMU:-qemu-system-aarch64}
HYP_RAM_MB=${HYP_RAM_MB:-32}
HYP_KEEP=${HYP_KEEP:-0}
HYP_PID=
HYP_RAM=
HYP_DIR=
HYP_LOG=
HYP_RC=
HYP_UART_FD=

hyp_init() {
	local objtree=$1 f

	if ! command -v "$HYP_QEMU" >/dev/null 2>&1; then
		echo "SKIP: $HYP_QEMU not installed (Debian: qemu-system-arm; make deps)"
		exit 77
	fi
	HYP_ELF=$objtree/hyp/hvtrace-el2.elf
	HYP_HVTRACE=$objtree/bin/hvtrace
	HYP_TOOL=
	[ "${2:-}" = driver ] && HYP_TOOL=$objtree/tests/hyp/hvt-hyp-test
	for f in "$HYP_ELF" "$HYP_HVTRACE" $HYP_TOOL; do
		[ -f "$f" ] && continue
		echo "error: $f is missing: build with make O=$objtree${HYP_TOOL:+ tests} (CONFIG_HVT_HYP and CONFIG_HVT_HOST)" >&2
		exit 1
	done
	trap hyp_cleanup EXIT
}

# hyp_start NAME CPUS "BOOT ARGS"
hyp_start() {
	local name=$1 cpus=$2 args=$3

	HYP_DIR=$(mktemp -d "${TMPDIR:-/tmp}/hvt-hyp-$name.XXXXXX")
	HYP_RAM=/dev/shm/hvt-hyp-$name-$$
	HYP_LOG=$HYP_DIR/console.log
	rm -f "$HYP_RAM"
	# A fresh, zeroed file: no stale area or control page from a
	# previous run.
	truncate -s "${HYP_RAM_MB}M" "$HYP_RAM" || {
		echo "error: cannot create $HYP_RAM" >&2
		return 1
	}
	mkfifo "$HYP_DIR/uart.in"
	# setsid: a Ctrl-C meant for the host tools must not kill
	# QEMU before the hypervisor powers off cleanly.
	setsid "$HYP_QEMU" -M virt,virtualization=on -cpu cortex-a57 -smp "$cpus" \
		-m "${HYP_RAM_MB}M" -accel tcg,thread=multi \
		-object "memory-backend-file,id=ram,mem-path=$HYP_RAM,size=${HYP_RAM_MB}M,share=on" \
		-machine memory-backend=ram \
		-display none -monitor none -serial stdio -no-reboot \
		-kernel "$HYP_ELF" -append "$args" \
		<"$HYP_DIR/uart.in" >"$HYP_LOG" 2>&1 &
	HYP_PID=$!
	# Open the console's input end (this unblocks QEMU's stdin).
	exec {HYP_UART_FD}>"$HYP_DIR/uart.in"
	echo "hyp: QEMU pid $HYP_PID, $cpus CPUs, RAM file $HYP_RAM, args: $args"
}

hyp_cmd() {
	[ -n "$HYP_UART_FD" ] || return 0
	# QEMU may have exited already: a closed console is no error (and
	# must not SIGPIPE the caller).
	(trap '' PIPE; printf '%s' "$1" >&"$HYP_UART_FD") 2>/dev/null
	return 0
}

hyp_wait_exit() {
	local timeout=$1 i

	for ((i = 0; i < timeout * 10; i++)); do
		if ! kill -0 "$HYP_PID" 2>/dev/null; then
			wait "$HYP_PID"
			HYP_RC=$?
			HYP_PID=
			return 0
		fi
		sleep 0.1
	done
	echo "error: QEMU (pid $HYP_PID) still runs after ${timeout}s; console:" >&2
	tail -n 20 "$HYP_LOG" >&2
	return 1
}

hyp_kill9() {
	[ -n "$HYP_PID" ] || return 0
	kill -KILL "$HYP_PID" 2>/dev/null
	wait "$HYP_PID" 2>/dev/null
	HYP_RC=$?
	HYP_PID=
}

# The console must show a clean power-off and no panic.
hyp_check_clean_exit() {
	local why=$1

	if [ "$HYP_RC" != 0 ]; then
		echo "FAIL: QEMU exited with status $HYP_RC" >&2
		return 1
	fi
	if grep -q PANIC "$HYP_LOG"; then
		echo "FAIL: the hypervisor panicked:" >&2
		grep PANIC "$HYP_LOG" >&2
		return 1
	fi
	if ! grep -q "hyp: powering off ($why)" "$HYP_LOG" ||
	   ! grep -q "hyp: system off" "$HYP_LOG"; then
		echo "FAIL: no clean power-off ($why) on the console:" >&2
		tail -n 20 "$HYP_LOG" >&2
		return 1
	fi
	return 0
}

hyp_cleanup() {
	if [ -n "$HYP_PID" ]; then
		kill -TERM "$HYP_PID" 2>/dev/null
		sleep 0.2
		kill -KILL "$HYP_PID" 2>/dev/null
		wait "$HYP_PID" 2>/dev/null
		HYP_PID=
	fi
	if [ -n "$HYP_UART_FD" ]; then
		exec {HYP_UART_FD}>&-
		HYP_UART_FD=
	fi
	if [ -n "$HYP_RAM" ] && [ "$HYP_KEEP" != 1 ]; then
		rm -f "$HYP_RAM"
	elif [ -n "$HYP_RAM" ]; then
		echo "hyp: kept the guest-RAM file $HYP_RAM (trace area at offset 0x1000000)"
	fi
	if [ -n "$HYP_DIR" ]; then
		if [ -n "${HYP_SHOW_LOG:-}" ] && [ -f "$HYP_LOG" ]; then
			echo "--- console"
			cat "$HYP_LOG"
		fi
		rm -rf "$HYP_DIR"
		HYP_DIR=
	fi
}
