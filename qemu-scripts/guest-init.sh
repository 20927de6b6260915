#!/bin/sh
# SPDX-License-Identifier: MIT
#
# /init of the hvtrace guest initramfs (busybox sh, PID 1).
#
# Mounts the pseudo file systems, loads the modules listed in
# /etc/hvtrace/modules, points /dev/hvtrace-area at the ivshmem BAR that
# holds the trace area, makes /dev/virtio-ports/NAME links, starts
# /bin/hvtrace-agent if the image has one, prints the readiness marker,
# runs the command from the kernel command line and powers off.
#
# Kernel command line parameters (values may be double-quoted; the *64
# forms carry base64 for values that need quotes or odd characters):
#   hvtrace.name=NAME          host name of the guest
#   hvtrace.run=CMD            run "sh -c CMD", then power off;
#                              without it the guest idles until stopped
#   hvtrace.run64=B64          the same, base64-encoded
#   hvtrace.agent=ARGS         arguments of /bin/hvtrace-agent
#   hvtrace.agent64=B64        the same, base64-encoded
#   hvtrace.ports=N1,N2        virtio-serial port names to wait for
#   hvtrace.port_wait=SECONDS  how long to wait for them (default 10)
#   hvtrace.kformats=SYS[:EV],... print the guest kernel's event formats of
#                              those systems or events on the console
#   hvtrace.kclock=CLOCK       with kformats: set the ring's trace clock
#   hvtrace.kmode=ring|copy|auto  how the host gets the kernel's events:
#                              copy makes the instance hvt here (events
#                              hvtrace.kevents=LIST, hvtrace.kbuf=KiB per
#                              CPU) and starts the agent with --kernel-copy;
#                              auto is copy when the kernel made no
#                              persistent instance hvt at boot, else ring
#
# Console lines the host side relies on (see docs/qemu-rig.md):
#   "hvtrace: kformats begin" ... "end"     the guest kernel's formats
#   "hvtrace: guest ready"                  userspace is up
#   "hvtrace: run exited with status N"     the command ended
#   "hvtrace: powering off"                 poweroff follows

PATH=/bin:/sbin:/usr/bin:/usr/sbin
HOME=/root
export PATH HOME

# Applet links first (busybox finds itself through /proc/self/exe);
# --install keeps files the image already has under applet names.
/bin/busybox mkdir -p /proc /sys /dev
/bin/busybox mount -t proc -o nosuid,nodev,noexec proc /proc
/bin/busybox --install -s 2>/dev/null
mount -t devtmpfs -o mode=0755 devtmpfs /dev 2>/dev/null
exec </dev/console >/dev/console 2>&1

say() {
	echo "hvtrace: $*"
}

mount -t sysfs -o nosuid,nodev,noexec sysfs /sys
# Every CPU online before anything else runs: a boot retried after a
# panic under multi-threaded TCG is on one (maxcpus=1, docs/qemu-rig.md),
# so that no other vCPU runs the kernel's code while it patches it.
for c in /sys/devices/system/cpu/cpu[0-9]*/online; do
	[ -f "$c" ] && [ "$(cat "$c")" = 0 ] && echo 1 >"$c"
done
mkdir -p /run /tmp /dev/shm /dev/pts /root
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /run
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /tmp
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm
mount -t devpts -o mode=0620,ptmxmode=0666 devpts /dev/pts 2>/dev/null
if [ -d /sys/kernel/tracing ]; then
	mount -t tracefs -o mode=0755 tracefs /sys/kernel/tracing ||
		say "warning: could not mount tracefs"
fi
[ -d /sys/kernel/debug ] && mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null

# The value of KEY on the kernel command line (last one wins), with the
# kernel's double-quote rule: quotes group spaces and are dropped.
cmdline_get() {
	awk -v key="$1" '
	{
		s = $0; n = length(s); i = 1
		while (i <= n) {
			while (i <= n && substr(s, i, 1) == " ")
				i++
			if (i > n)
				break
			tok = ""; q = 0
			while (i <= n) {
				c = substr(s, i, 1)
				if (c == "\"") { q = !q; i++; continue }
				if (c == " " && !q)
					break
				tok = tok c; i++
			}
			eq = index(tok, "=")
			if (eq > 1 && substr(tok, 1, eq - 1) == key) {
				val = substr(tok, eq + 1); found = 1
			}
		}
	}
	END { if (found) print val; exit !found }' /proc/cmdline
}

# A parameter that may also come base64-encoded as KEY64.
param() {
	local b64
	if b64=$(cmdline_get "${1}64"); then
		echo "$b64" | base64 -d 2>/dev/null ||
			say "warning: ${1}64 is not valid base64"
		return 0
	fi
	cmdline_get "$1"
}

name=$(cmdline_get hvtrace.name) || name=hvtrace-guest
hostname "$name"

# Modules the image carries, in load order (dependencies first).
if [ -f /etc/hvtrace/modules ]; then
	while read -r mod; do
		[ -n "$mod" ] || continue
		insmod "$mod" || say "warning: could not load module $mod"
	done </etc/hvtrace/modules
fi

# The trace area: BAR2 of the ivshmem device (PCI 1af4:1110).  The first
# one is /dev/hvtrace-area, further ones /dev/hvtrace-area1, ...  An
# ivshmem-doorbell device (the one with an MSI-X BAR1) is the host's
# doorbell: its register BAR0 is /dev/hvtrace-bell, which writers map to
# ring the host without a relay (docs/design.md, "Waking the reader").
n=0
for dev in /sys/bus/pci/devices/*; do
	[ -r "$dev/vendor" ] || continue
	[ "$(cat "$dev/vendor")" = 0x1af4 ] || continue
	[ "$(cat "$dev/device")" = 0x1110 ] || continue
	if [ "$(cat "$dev/enable" 2>/dev/null)" = 0 ]; then
		echo 1 >"$dev/enable" || say "warning: could not enable ${dev##*/}"
	fi
	if [ -e "$dev/resource1" ]; then
		[ -e /dev/hvtrace-bell ] ||
			ln -sf "/sys/bus/pci/devices/${dev##*/}/resource0" /dev/hvtrace-bell
		continue
	fi
	link=/dev/hvtrace-area
	[ $n -gt 0 ] && link=/dev/hvtrace-area$n
	ln -sf "/sys/bus/pci/devices/${dev##*/}/resource2" "$link"
	n=$((n + 1))
done
[ $n -gt 0 ] || say "warning: no ivshmem device (1af4:1110): no /dev/hvtrace-area"

# virtio-serial ports are announced by the host after the driver binds,
# so they may show up a little after init starts: wait (bounded) for the
# names the launcher asked for.
link_ports() {
	local p pname
	mkdir -p /dev/virtio-ports
	for p in /sys/class/virtio-ports/*; do
		[ -r "$p/name" ] || continue
		pname=$(cat "$p/name")
		[ -n "$pname" ] || continue
		[ -c "/dev/${p##*/}" ] || continue
		ln -sfn "../${p##*/}" "/dev/virtio-ports/$pname"
	done
}
want=$(cmdline_get hvtrace.ports | tr ',' ' ')
wait_s=$(cmdline_get hvtrace.port_wait) || wait_s=10
case $wait_s in '' | *[!0-9]*) wait_s=10 ;; esac
tries=$((wait_s * 20))
while :; do
	link_ports
	missing=
	for w in $want; do
		[ -e "/dev/virtio-ports/$w" ] || missing="$missing $w"
	done
	[ -z "$missing" ] && break
	if [ $tries -le 0 ]; then
		say "warning: virtio-serial port(s)$missing did not appear within ${wait_s}s"
		break
	fi
	tries=$((tries - 1))
	sleep 0.05
done

# True while PID runs (a zombie has ended: PID 1 has not reaped it yet).
alive() {
	local st
	st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null) || return 1
	[ -n "$st" ] && [ "${st%% *}" != Z ]
}

# The agent measures the TSC frequency against CLOCK_MONOTONIC_RAW when
# it formats the area.  Until the kernel has refined its TSC calibration
# (about a second after the TSC clocksource appears; the early one comes
# from the PIT, which under an emulator on a busy host can be off by a
# percent or more) that clock runs at the early rate: wait (at most 5 s)
# for the switch to "tsc", when the TSC is the clocksource at all.
cs=/sys/devices/system/clocksource/clocksource0
if [ -x /bin/hvtrace-agent ] && [ -r $cs/current_clocksource ] &&
	grep -qw tsc $cs/available_clocksource 2>/dev/null; then
	tries=100
	while [ $tries -gt 0 ] && [ "$(cat $cs/current_clocksource)" != tsc ]; do
		tries=$((tries - 1))
		sleep 0.05
	done
fi

# hvtrace.kmode: in copy mode (a kernel without the persistent ring, or
# asked for) the instance is an ordinary one, made here, whose pages the
# agent copies into the trace area's kernel section (docs/guest-kernel.md,
# "Copy mode").  auto chooses: the instance hvt exists at this point only
# when the kernel made it from trace_instance=hvt@hvt (reserve_mem).
# kevents_enable LIST WHERE [MISSING]: enable each item of LIST (SYS or
# SYS:EVENT, comma-separated) in the instance hvt, saying so when one
# cannot be; an item without an enable file is passed over, with
# "MISSING ITEM" said when MISSING is given.
kevents_enable() {
	local item e
	for item in $(echo "$1" | tr ',' ' '); do
		e=/sys/kernel/tracing/instances/hvt/events/${item%%:*}
		[ "$item" = "${item%%:*}" ] || e=$e/${item#*:}
		if [ -w "$e/enable" ]; then
			echo 1 >"$e/enable" || say "cannot enable $item in $2"
		elif [ -n "$3" ]; then
			say "$3 $item"
		fi
	done
}

kmode=$(cmdline_get hvtrace.kmode) || kmode=ring
ti=/sys/kernel/tracing/instances
if [ "$kmode" = auto ]; then
	if [ -d $ti/hvt ]; then kmode=ring; else kmode=copy; fi
	say "kernel mode: $kmode (auto)"
fi
if [ "$kmode" = copy ]; then
	[ -d $ti/hvt ] || mkdir $ti/hvt ||
		say "cannot make the tracing instance $ti/hvt"
	kb=$(cmdline_get hvtrace.kbuf) && [ -w $ti/hvt/buffer_size_kb ] &&
		{ echo "$kb" >$ti/hvt/buffer_size_kb ||
			say "cannot set the kernel ring's size to $kb KiB per CPU"; }
	# ftrace:print (trace_marker) has no enable file and always records.
	kevents_enable "$(cmdline_get hvtrace.kevents)" "the kernel copy instance"
fi

# hvtrace.klate=LIST: the syscall events of the ring's list, left out of
# trace_instance= (a system call event enabled on the command line records
# nothing: enabling it flags the tasks of that moment, and there are none
# yet).  Enabled here, while init is the only process, so that no CPU is
# in a system call while the kernel patches its entry code for them, and
# every later process inherits the flag from init.
if [ "$kmode" = ring ] && kl=$(cmdline_get hvtrace.klate); then
	kevents_enable "$kl" "the kernel ring" "the guest kernel has no event"
fi

# hvtrace.kformats=SYS1,SYS2:EVENT: the guest kernel's event formats for the
# host, which reads this kernel's own ring from guest RAM but cannot see
# its tracefs: the headers, saved_cmdlines, printk_formats, the kallsyms
# lines of the modules loaded, and the format
# files of those event systems and events, as a gzip'd tar in base64 between two
# console lines (hvtrace-guest kformats NAME DIR unpacks them).  Printed
# before the agent starts, so a host that sees the agent (hvtrace guest
# start returns then) finds them on the console already.
if kf=$(cmdline_get hvtrace.kformats) && [ -d /sys/kernel/tracing/events ]; then
	t=/sys/kernel/tracing
	d=/tmp/kformats
	rm -rf "$d"
	mkdir -p "$d/events"
	# hvtrace.kclock=CLOCK: the instance's trace clock, set before the
	# workload runs (a change of clock empties the ring: the events of
	# the boot so far go).  "mono" is the clock of the agent's area, so
	# the guest's kernel and user events share one time base that the
	# host's time sync maps.
	if kc=$(cmdline_get hvtrace.kclock) && [ -w "$t/instances/hvt/trace_clock" ]; then
		echo "$kc" >"$t/instances/hvt/trace_clock" ||
			say "cannot set the guest kernel ring's clock to $kc"
	fi
	[ -r "$t/instances/hvt/trace_clock" ] && cat "$t/instances/hvt/trace_clock" >"$d/trace_clock"
	for f in events/header_page events/header_event saved_cmdlines printk_formats; do
		cat "$t/$f" >"$d/$f" 2>/dev/null
	done
	uname -r >"$d/release"
	cat /proc/version >"$d/version"
	# The symbols of the modules loaded so far, this boot's: a module's
	# code is placed when it loads, and the table the host reads from
	# guest RAM has the kernel image only.
	if grep -q . /proc/modules 2>/dev/null; then
		grep -F "$(printf '\t[')" /proc/kallsyms >"$d/kallsyms" ||
			rm -f "$d/kallsyms"
	fi
	# An item is SYS (every event of it) or SYS:EVENT (that one only).
	for item in $(echo "$kf" | tr ',' ' '); do
		sys=${item%%:*}
		ev='*'
		[ "$item" = "$sys" ] || ev=${item#*:}
		[ -d "$t/events/$sys" ] || continue
		# libtracefs takes a folder with an enable file for a system
		mkdir -p "$d/events/$sys"
		cat "$t/events/$sys/enable" >"$d/events/$sys/enable" 2>/dev/null
		for e in "$t/events/$sys"/$ev/; do
			[ -f "$e/format" ] || continue
			n=${e%/}
			n=${n##*/}
			mkdir -p "$d/events/$sys/$n"
			cat "$e/format" >"$d/events/$sys/$n/format"
		done
	done
	say "kformats begin"
	tar -C "$d" -czf - . | base64
	say "kformats end"
	rm -rf "$d"
fi

agent_pid=
if [ -x /bin/hvtrace-agent ]; then
	agent_args=$(param hvtrace.agent)
	[ "$kmode" = copy ] && agent_args="--kernel-copy $ti/hvt${agent_args:+ $agent_args}"
	say "starting hvtrace-agent${agent_args:+ $agent_args}"
	eval "/bin/hvtrace-agent $agent_args </dev/null &"
	agent_pid=$!
	# Let the agent listen before the workload starts (up to 5 s): a
	# client that connects too early would have to retry.  The agent
	# formats the area first and listens once it is done; --socket in
	# its arguments moves the socket.
	agent_sock=/run/hvtrace/agent.sock
	eval "set -- $agent_args"
	while [ $# -gt 0 ]; do
		case $1 in
		--socket) [ $# -ge 2 ] && agent_sock=$2 ;;
		--socket=*) agent_sock=${1#--socket=} ;;
		esac
		shift
	done
	tries=100
	while [ $tries -gt 0 ] && alive "$agent_pid" && [ ! -S "$agent_sock" ]; do
		tries=$((tries - 1))
		sleep 0.05
	done
	[ -S "$agent_sock" ] ||
		say "warning: hvtrace-agent is not listening on $agent_sock after 5 s"
fi

read -r up _ </proc/uptime
say "guest ready (uptime ${up}s)"

if run=$(param hvtrace.run) && [ -n "$run" ]; then
	say "run: $run"
	(cd /root && exec sh -c "$run" </dev/null)
	rc=$?
	say "run exited with status $rc"
else
	say "no hvtrace.run= on the kernel command line; idling until stopped"
	while :; do
		sleep 3600
	done
fi

if [ -n "$agent_pid" ] && alive "$agent_pid"; then
	kill -TERM "$agent_pid" 2>/dev/null
	i=0
	# Up to 10 s: in kernel copy mode the agent moves the kernel's last
	# pages first.
	while alive "$agent_pid" && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
fi
sync
say "powering off"
poweroff -f
# Not reached unless ACPI power-off failed; QEMU runs with -no-reboot,
# so a reboot ends it too.
reboot -f
