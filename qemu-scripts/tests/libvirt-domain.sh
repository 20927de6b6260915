#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A guest kernel's ring read from a libvirt domain by its name (hvtrace
# stream/stat/record --domain NAME, hvtrace daemon attach --domain NAME;
# docs/guest-kernel.md, "libvirt").  libvirt's own daemons (libvirtd and
# virtlogd, Debian 12's libvirt 9.0) are started here when none answers on
# qemu:///system, with no systemd, and stopped again at the end.  Two
# transient domains of the cached Debian 6.12 guest kernel under TCG, with
# the rig's kernel command line (hvtrace-guest start --print-cmdline):
# one with <memoryBacking> memfd/shared, one with libvirt's default
# (anonymous) RAM.  QEMU runs as libvirt's user (not root) under its
# seccomp sandbox; the test checks that it does.  For each:
#
#   the guest writes N numbered trace_marker lines from CPU 0; a live
#   "stream --domain NAME --count N" and a "--drain" show each once, in
#   order, no loss; without --formats the drain takes the formats cache's
#   folder of the kernel; "stat --domain" counts N events on CPU 0;
#   "record --domain" writes a file trace-cmd report shows every line of;
#   "daemon attach --domain" makes a remote whose stream is the same text
#   as the direct drain, function names (tracing_mark_write) included;
#   user nobody is refused for want of ptrace read access.  Then "virsh destroy": a live stream reading the
#   memfd domain reads to its end (every line once, exit 0); for anonymous
#   RAM it stops with an error that says the ring went with QEMU.  A
#   domain that no longer runs is refused by name.
#
# A pid file naming a process that is not the domain's QEMU (a stale one)
# is refused, as are bad names.  Needs root: libvirt's system instance.
#
# Environment: HVT_KRING_LINES (N, default 2000).
. "$(dirname "$0")/lib.sh"
t_require

HVTRACE=$T_OBJTREE/bin/hvtrace
[ -x "$HVTRACE" ] || fail "$HVTRACE is missing; build it with 'make O=$T_OBJTREE'"
N=${HVT_KRING_LINES:-2000}
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: libvirt's system instance (qemu:///system) and reading its QEMU need root"
	exit 77
fi
for p in libvirtd virtlogd virsh; do
	command -v "$p" >/dev/null ||
		fail "$p is missing: install libvirt-daemon-system, libvirt-daemon-system-sysv and libvirt-clients (make deps)"
done
V=(virsh -q -c qemu:///system)
LV_STARTED=()	# pid files of the libvirt daemons this test started
LV_DOMAINS=()	# its transient domains

lv_cleanup() {
	local d f
	for d in "${LV_DOMAINS[@]}"; do
		"${V[@]}" destroy "$d" >/dev/null 2>&1
	done
	"$HVTRACE" daemon stop >/dev/null 2>&1
	for f in "${LV_STARTED[@]}"; do
		[ -r "$f" ] && kill "$(cat "$f")" 2>/dev/null
	done
	t_cleanup
}

t_own_daemon
trap lv_cleanup EXIT

# libvirt's daemons: used as they are when libvirtd answers; else started
# here (virtlogd first: libvirtd hands it QEMU's log).
if ! "${V[@]}" list --all >/dev/null 2>&1; then
	info "starting virtlogd and libvirtd (none answers on qemu:///system)"
	if [ ! -S /run/libvirt/virtlogd-sock ]; then
		virtlogd -d || fail "virtlogd -d failed"
		LV_STARTED+=(/run/virtlogd.pid)
	fi
	libvirtd -d || fail "libvirtd -d failed"
	LV_STARTED+=(/run/libvirtd.pid)
	tries=200
	until "${V[@]}" list --all >/dev/null 2>&1; do
		[ $tries -gt 0 ] || fail "libvirtd does not answer on qemu:///system after 20 s"
		tries=$((tries - 1))
		sleep 0.1
	done
fi

# The kernel and initramfs where QEMU, as libvirt's user, can read them.
kernel=$("$T_SRCTREE/qemu-scripts/fetch-kernel.sh") || fail "no guest kernel"
initrd=$(t_initrd)
chmod 711 "$T_TMP"
LV=$T_TMP/lv
mkdir -m 755 "$LV"
cp "$kernel" "$LV/vmlinuz" && cp "$initrd" "$LV/initrd.gz" && chmod 644 "$LV"/* ||
	fail "cannot copy the kernel and initramfs to $LV"

xml_escape() {
	sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g' \
		-e 's/"/\&quot;/g' -e "s/'/\&apos;/g"
}

# lv_domain NAME KIND: the XML of a 2-vCPU TCG domain of the rig's guest
# writing N marks, its RAM a shared memfd (KIND memfd) or libvirt's
# default anonymous RAM (anon), its console in $LV/NAME.log.
lv_domain() {
	local name=$1 kind=$2 cmdline mem=''
	cmdline=$("$G" start --name "$name" --kernel-events ftrace:print \
		--run "sleep 1; $(kring_marks "$N"); echo hvt-marks-done; sleep 600" \
		--print-cmdline) || fail "hvtrace-guest start --print-cmdline failed"
	[ "$kind" = memfd ] &&
		mem="<memoryBacking><source type='memfd'/><access mode='shared'/></memoryBacking>"
	cat <<EOF
<domain type='qemu'>
  <name>$name</name>
  <memory unit='MiB'>512</memory>
  <vcpu>2</vcpu>
  $mem
  <os>
    <type arch='x86_64' machine='q35'>hvm</type>
    <kernel>$LV/vmlinuz</kernel>
    <initrd>$LV/initrd.gz</initrd>
    <cmdline>$(printf '%s' "$cmdline" | xml_escape)</cmdline>
  </os>
  <cpu mode='maximum'/>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>destroy</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <emulator>$(command -v "${HVT_QEMU:-qemu-system-x86_64}")</emulator>
    <serial type='file'><source path='$LV/$name.log'/><target port='0'/></serial>
    <memballoon model='none'/>
  </devices>
</domain>
EOF
}

mkdir -p "$T_RUNDIR"
"$HVTRACE" daemon start --socket "$HVTRACED_SOCKET" --run-dir "$T_RUNDIR" \
	--log "$T_TMP/hvtraced.log" >/dev/null || fail "hvtraced did not start"

one() {
	local kind=$1 d qpid log uid
	d=hvt-t$$-$kind
	log=$LV/$d.log
	info "$kind: a libvirt domain $d, $N lines read by its name"
	lv_domain "$d" "$kind" >"$LV/$d.xml"
	ln -s "$log" "$T_TMP/$d.log"	# for t_dump_logs
	LV_DOMAINS+=("$d")
	"${V[@]}" create "$LV/$d.xml" >"$T_TMP/$d-create.out" 2>&1 ||
		fail "virsh create failed: $(cat "$T_TMP/$d-create.out")"
	qpid=$(cat "/run/libvirt/qemu/$d.pid") || fail "libvirt wrote no pid file for $d"
	# libvirt's confinement: its own user, its seccomp sandbox.
	uid=$(awk '/^Uid:/ { print $2 }' "/proc/$qpid/status")
	[ -n "$uid" ] && [ "$uid" != 0 ] || fail "QEMU $qpid of $d runs as uid ${uid:-?}, not libvirt's user"
	grep -q '^Seccomp:[[:space:]]*2' "/proc/$qpid/status" ||
		fail "QEMU $qpid of $d is not under a seccomp filter"
	[ "$(readlink "/proc/$qpid/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ] ||
		fail "QEMU $qpid of $d shares this mount namespace"
	info "QEMU $qpid runs as $(id -nu "$uid") under a seccomp filter, in a mount namespace of its own"
	if [ "$kind" = memfd ]; then
		grep -q ' rw-s .*/memfd:' "/proc/$qpid/maps" ||
			fail "QEMU $qpid has no shared memfd mapping"
	elif grep -q '/memfd:' "/proc/$qpid/maps"; then
		fail "QEMU $qpid of the default-RAM domain maps a memfd"
	fi
	wait_line "$log" 'hvtrace: kformats end' 120 || fail "$d printed no formats"
	"$G" kformats --log "$log" "$T_TMP/fmt-$kind" >/dev/null || fail "kformats failed"
	# Live: ends at N events.
	timeout 200 "$HVTRACE" stream --domain "$d" --formats "$T_TMP/fmt-$kind" \
		--count "$N" >"$T_TMP/$d-live.txt" 2>"$T_TMP/$d-live.err" ||
		{ cat "$T_TMP/$d-live.err"; fail "live stream --domain $d failed"; }
	kring_check_marks "$T_TMP/$d-live.txt" "$N"
	wait_line "$log" '^hvt-marks-done' 300 || fail "the guest did not finish writing"
	# No --formats: the cache's folder of the kernel.
	HVT_CACHE=$T_TMP/cache "$G" kformats --log "$log" >/dev/null ||
		fail "kformats into the cache failed"
	HVT_CACHE=$T_TMP/cache "$HVTRACE" stream --domain "$d" --drain \
		>"$T_TMP/$d-drain.txt" 2>"$T_TMP/$d-drain.err" ||
		{ cat "$T_TMP/$d-drain.err"; fail "stream --domain $d --drain failed"; }
	grep -q "formats from $T_TMP/cache/kformats/" "$T_TMP/$d-drain.err" ||
		fail "stream --domain did not take the cached formats: $(cat "$T_TMP/$d-drain.err")"
	kring_check_marks "$T_TMP/$d-drain.txt" "$N"
	# Function names from the guest's vmcoreinfo: ftrace:print's ip.
	grep -q ' tracing_mark_write: hvt-mark 0$' "$T_TMP/$d-drain.txt" ||
		fail "stream --domain prints no function name: $(grep -m1 'hvt-mark 0' "$T_TMP/$d-drain.txt")"
	# A user other than root: refused by the kernel's ptrace check.
	if setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$HVTRACE" 2>/dev/null; then
		if setpriv --reuid=65534 --regid=65534 --clear-groups "$HVTRACE" stat \
			--domain "$d" >/dev/null 2>"$T_TMP/eperm.err"; then
			fail "stat --domain as nobody succeeded"
		fi
		grep -q "needs ptrace read access" "$T_TMP/eperm.err" ||
			fail "as nobody: $(cat "$T_TMP/eperm.err")"
	else
		info "(not checked: the refusal of user nobody; needs a build nobody can run)"
	fi
	"$HVTRACE" stat --domain "$d" >"$T_TMP/$d-stat.txt" 2>&1 ||
		{ cat "$T_TMP/$d-stat.txt"; fail "stat --domain $d failed"; }
	awk -v n="$N" '
		/^CPU 0:/ { c = 0 } /^CPU 1:/ { c = 1 }
		/^entries:/ { e[c] = $2 } /^errors:/ { err += $2 }
		END { exit !(e[0] == n && e[1] == 0 && err == 0) }' "$T_TMP/$d-stat.txt" ||
		{ cat "$T_TMP/$d-stat.txt"; fail "stat --domain: not $N events on CPU 0 and none on CPU 1"; }
	"$HVTRACE" record -q -o "$T_TMP/$d.dat" --domain "$d" --formats "$T_TMP/fmt-$kind" \
		2>"$T_TMP/$d-rec.err" || { cat "$T_TMP/$d-rec.err"; fail "record --domain $d failed"; }
	trace-cmd report "$T_TMP/$d.dat" >"$T_TMP/$d-report.txt" 2>"$T_TMP/$d-report.err" ||
		{ cat "$T_TMP/$d-report.err"; fail "trace-cmd report cannot read record --domain's file"; }
	kring_check_marks "$T_TMP/$d-report.txt" "$N"
	# Through hvtraced: the remote is named after the domain.
	"$HVTRACE" daemon attach --domain "$d" --formats "$T_TMP/fmt-$kind" \
		>"$T_TMP/$d-attach.out" 2>&1 ||
		{ cat "$T_TMP/$d-attach.out"; fail "daemon attach --domain $d failed"; }
	timeout 60 "$HVTRACE" stream "$d" --drain >"$T_TMP/$d-remote.txt" 2>"$T_TMP/$d-remote.err" ||
		{ cat "$T_TMP/$d-remote.err"; fail "stream $d (the remote) failed"; }
	"$HVTRACE" stream --domain "$d" --formats "$T_TMP/fmt-$kind" --drain \
		>"$T_TMP/$d-direct.txt" 2>/dev/null || fail "stream --domain $d --drain failed"
	cmp -s "$T_TMP/$d-remote.txt" "$T_TMP/$d-direct.txt" ||
		fail "stream $d (through hvtraced) differs from stream --domain: $(diff "$T_TMP/$d-remote.txt" "$T_TMP/$d-direct.txt" | head -5)"
	"$HVTRACE" daemon detach "$d" >/dev/null || fail "detach $d failed"
	# virsh destroy while a live stream reads: a memfd is read to its
	# end; anonymous RAM goes with QEMU.
	"$HVTRACE" stream --domain "$d" --formats "$T_TMP/fmt-$kind" \
		>"$T_TMP/$d-end.txt" 2>"$T_TMP/$d-end.err" &
	local spid=$!
	T_PIDS+=("$spid")
	wait_line "$T_TMP/$d-end.txt" 'hvt-mark' 60 ||
		fail "the live stream by name printed nothing: $(cat "$T_TMP/$d-end.err")"
	"${V[@]}" destroy "$d" >/dev/null || fail "virsh destroy $d failed"
	wait_pid_gone "$qpid" 60 || fail "QEMU $qpid did not end"
	kring_check_end "$kind" "$spid" "$T_TMP/$d-end.txt" "$T_TMP/$d-end.err" "$N"
	if "$HVTRACE" stream --domain "$d" --drain >/dev/null 2>"$T_TMP/gone.err"; then
		fail "stream --domain of a destroyed domain succeeded"
	fi
	grep -q "no running libvirt domain" "$T_TMP/gone.err" ||
		fail "destroyed domain: $(cat "$T_TMP/gone.err")"
}

one memfd
one anon

info "a stale pid file, bad names"
mkdir "$T_TMP/fake"
sleep 600 &
T_PIDS+=($!)
echo "$!" >"$T_TMP/fake/stale.pid"
if HVT_LIBVIRT_RUNDIR=$T_TMP/fake "$HVTRACE" stream --domain stale --drain \
	>/dev/null 2>"$T_TMP/stale.err"; then
	fail "a stale pid file was taken"
fi
grep -q "is not that domain's QEMU" "$T_TMP/stale.err" || fail "stale: $(cat "$T_TMP/stale.err")"
rc=0
"$HVTRACE" stat --domain ../x >/dev/null 2>"$T_TMP/bad.err" || rc=$?
[ "$rc" = 2 ] && grep -q "no '/'" "$T_TMP/bad.err" || fail "bad name (exit $rc): $(cat "$T_TMP/bad.err")"
rc=0
"$HVTRACE" daemon attach --domain x --vm-pid 1 >/dev/null 2>"$T_TMP/both.err" || rc=$?
[ "$rc" = 2 ] || fail "--domain with --vm-pid (exit $rc): $(cat "$T_TMP/both.err")"
echo "PASS"
