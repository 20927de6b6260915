#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The launcher's KVM probe: what it caches and what it says.
#
# 1. The cache key, with a stand-in QEMU that counts its probe boots and
#    fails them (so this part runs whatever this host's KVM does), and a
#    stand-in KVM device file: a verdict is reused for the same kernel,
#    QEMU version and host kernel, and probed again when the kernel's
#    path, size or modification time, or QEMU's version changes, or with
#    --force; a "yes" is cached the same way.  kvm-probe --kernel probes
#    that kernel, and says why it answered no: the failed boot with QEMU's
#    and the console's last lines.  start --accel kvm refuses with the same
#    reason, or names a missing device, and leaves nothing behind.
# 2. This host's real KVM (the real QEMU, /dev/kvm and the rig's guest
#    kernel, in a cache of the test's own): where KVM cannot run the guest,
#    start --accel kvm must say why -- no /dev/kvm, no permission (also
#    checked as user nobody when /dev/kvm is not open to all), or the
#    probe boot failed with QEMU's or the console's last lines.  Where KVM
#    works, that part is skipped with a note (the stand-in part still
#    runs); a guest boot under KVM is not checked here.
. "$(dirname "$0")/lib.sh"
t_require
t_name n kvm
real_cache=${HVT_CACHE:-/var/cache/hvtrace}
export HVT_CACHE=$T_TMP/cache
checks=0

# --- 1. the cache key, with stand-ins ------------------------------------
fake=$T_TMP/fake-qemu
calls=$T_TMP/boots
cat >"$fake" <<'EOS'
#!/bin/bash
if [ "${1:-}" = --version ]; then
	echo "QEMU emulator version ${FAKE_QEMU_VERSION:-1.0} (a test stand-in)"
	exit 0
fi
echo boot >>"$FAKE_QEMU_CALLS"
con=
for a; do
	case $a in *,path=*) con=${a##*,path=} ;; esac
done
[ -n "$con" ] || { echo "stand-in: no console file" >&2; exit 2; }
if [ "${FAKE_QEMU_OK:-0}" = 1 ]; then
	echo "hvtrace: guest ready" >"$con"
	exit 0
fi
printf 'stand-in console line 1\nstand-in console: the guest gave up\n' >"$con"
echo "stand-in QEMU: failed to set MSR 0x10a" >&2
exit 1
EOS
chmod +x "$fake"
: >"$T_TMP/kvm"
: >"$calls"
k1=$T_TMP/vmlinuz-1
k2=$T_TMP/vmlinuz-2
k3=$T_TMP/vmlinuz-3
echo kernel-one >"$k1"
echo kernel-two >"$k2"
echo kernel-three >"$k3"

boots() {
	wc -l <"$calls" | tr -d ' '
}

# probe WANT_VERDICT WANT_BOOTS WHAT ARGS...: kvm-probe with the stand-ins.
probe() {
	local want=$1 want_boots=$2 what=$3 out
	shift 3
	out=$(HVT_QEMU=$fake HVT_KVM_DEV=$T_TMP/kvm FAKE_QEMU_CALLS=$calls \
		"$G" kvm-probe "$@" 2>"$T_TMP/probe.err") ||
		fail "kvm-probe $*: $(cat "$T_TMP/probe.err")"
	[ "$out" = "$want" ] || fail "$what: kvm-probe said '$out', expected '$want'"
	[ "$(boots)" = "$want_boots" ] ||
		fail "$what: $(boots) probe boots so far, expected $want_boots"
	echo "ok: $what ($out, $want_boots boots)"
	checks=$((checks + 1))
}

probe no 1 "a first probe of kernel 1" --kernel "$k1"
for want in "probe boot under KVM failed" "QEMU exit status 1" \
	"failed to set MSR 0x10a" "the guest gave up" "$k1"; do
	grep -qF -- "$want" "$T_TMP/probe.err" ||
		fail "kvm-probe's reason does not mention '$want': $(cat "$T_TMP/probe.err")"
done
probe no 1 "the same kernel again: cached" --kernel "$k1"
grep -q "the guest gave up" "$T_TMP/probe.err" ||
	fail "a cached no lost its reason: $(cat "$T_TMP/probe.err")"
grep -q "cached" "$T_TMP/probe.err" ||
	fail "a cached no does not say it is cached: $(cat "$T_TMP/probe.err")"
touch -d '2020-01-02 03:04:05' "$k1"
probe no 2 "kernel 1 modified (mtime)" --kernel "$k1"
echo more >>"$k1"
touch -d '2020-01-02 03:04:05' "$k1"
probe no 3 "kernel 1 grown, same mtime" --kernel "$k1"
probe no 4 "another kernel" --kernel "$k2"
probe no 4 "kernel 1 again: cached" --kernel "$k1"
FAKE_QEMU_VERSION=2.0 probe no 5 "another QEMU version" --kernel "$k1"
probe no 5 "the first QEMU version again: cached" --kernel "$k1"
probe no 6 "--force" --kernel "$k1" --force
FAKE_QEMU_OK=1 probe yes 7 "a kernel that boots" --kernel "$k3"
probe yes 7 "a yes is cached too" --kernel "$k3"
ln -s "$k2" "$T_TMP/link-to-2"
probe no 7 "a link to kernel 2: the same file, cached" --kernel "$T_TMP/link-to-2"

# refuse "MESSAGE PARTS..." -- ENV... : start --accel kvm must fail, say
# each part, and leave nothing behind.
refuse() {
	local -a want=() envs=()
	local out w
	while [ "$1" != -- ]; do
		want+=("$1")
		shift
	done
	shift
	envs=("$@")
	out=$(env "${envs[@]}" FAKE_QEMU_CALLS="$calls" "$G" start --name "$n" \
		--accel kvm --kernel "$KERNEL" --run true 2>&1) &&
		fail "start --accel kvm was accepted (${envs[*]})"
	for w in "${want[@]}"; do
		grep -qF -- "$w" <<<"$out" ||
			fail "start --accel kvm said '$out'; expected it to mention '$w'"
	done
	[ ! -e "$T_RUNDIR/$n" ] || fail "a refused start left $T_RUNDIR/$n"
	[ ! -e "$T_SHM/hvtrace-$n" ] || fail "a refused start left an area file"
	echo "ok: start --accel kvm refused: $(head -n1 <<<"$out")"
	checks=$((checks + 1))
}

KERNEL=$k1
refuse "--accel kvm" "probe boot under KVM failed" "the guest gave up" \
	"kvm-probe --force" -- HVT_QEMU="$fake" HVT_KVM_DEV="$T_TMP/kvm"
[ "$(boots)" = 7 ] || fail "start --accel kvm probed again a kernel with a cached verdict"
refuse "--accel kvm" "there is no $T_TMP/no-kvm" -- \
	HVT_QEMU="$fake" HVT_KVM_DEV="$T_TMP/no-kvm"

# --- 2. this host's KVM ----------------------------------------------------
if ! KERNEL=$(HVT_CACHE=$real_cache "$T_SRCTREE/qemu-scripts/fetch-kernel.sh" 2>"$T_TMP/fetch.err"); then
	fail "no guest kernel for the real probe: $(cat "$T_TMP/fetch.err")"
fi
if [ ! -e /dev/kvm ]; then
	refuse "--accel kvm" "there is no /dev/kvm" --
	echo "this host: no /dev/kvm, and start --accel kvm says so"
elif ! { exec 3<>/dev/kvm; } 2>/dev/null; then
	refuse "--accel kvm" "no permission to open /dev/kvm" --
	echo "this host: /dev/kvm is not ours to open, and start --accel kvm says so"
else
	exec 3>&-
	if [ "$(stat -Lc %a /dev/kvm)" != 666 ] && command -v setpriv >/dev/null &&
		[ -r "$KERNEL" ]; then
		# nobody may not reach the tree (a clone in /root): run a copy
		# of the launcher from a folder nobody can enter.
		nb=$(mktemp -d /tmp/hvt-kvm-nobody.XXXXXX) && chmod 755 "$nb" &&
			cp "$G" "$nb/hvtrace-guest" && chmod 755 "$nb/hvtrace-guest" ||
			fail "cannot copy the launcher for the check as nobody"
		out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups \
			env HVT_CACHE="$nb/cache" "$nb/hvtrace-guest" kvm-probe --kernel "$KERNEL" 2>&1)
		rm -rf "$nb"
		grep -q "no permission to open /dev/kvm" <<<"$out" ||
			fail "kvm-probe as nobody said '$out'; expected 'no permission to open /dev/kvm'"
		echo "ok: as nobody, kvm-probe names the permission: $(tail -n1 <<<"$out")"
		checks=$((checks + 1))
	fi
	verdict=$("$G" kvm-probe --kernel "$KERNEL" 2>"$T_TMP/real.err") ||
		fail "kvm-probe failed: $(cat "$T_TMP/real.err")"
	if [ "$verdict" = yes ]; then
		echo "SKIP (part): KVM runs the guest kernel on this host, so there is no refusal to check"
	else
		[ "$verdict" = no ] || fail "kvm-probe said '$verdict'"
		grep -q "probe boot under KVM failed" "$T_TMP/real.err" ||
			fail "the real probe's no gives no reason: $(cat "$T_TMP/real.err")"
		grep -Eq "QEMU's last lines|console's last lines" "$T_TMP/real.err" ||
			fail "the real probe's no shows neither QEMU's nor the console's lines: $(cat "$T_TMP/real.err")"
		refuse "--accel kvm" "probe boot under KVM failed" --
		echo "this host: KVM cannot run the guest kernel; the reason given:"
		sed 's/^/    /' "$T_TMP/real.err"
	fi
fi
echo "$checks checks"
echo "PASS"
