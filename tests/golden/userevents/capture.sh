#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Capture the golden user_events files from a real Linux kernel.
#
#   tests/golden/userevents/capture.sh [WORKDIR]
#
# 1. Downloads Debian's linux-image-6.12 package and looks at its config.
#    If it has CONFIG_USER_EVENTS=y, that kernel is booted as it is.
#    Otherwise (Debian ships it off) the same version's linux-source-6.12
#    package is built with a small configuration that adds
#    CONFIG_USER_EVENTS=y and keeps the Debian options that change what
#    tracefs prints (CONFIG_INIT_ON_ALLOC_DEFAULT_ON=y).
# 2. Builds a busybox-static initramfs holding ue_capture (a static build
#    of ue_capture.c) and the command script commands.txt.
# 3. Boots it under QEMU TCG.  ue_capture runs the commands against the
#    real /sys/kernel/tracing and writes what the kernel answered and
#    printed (format files, user_events_status, dynamic_events) into a
#    directory that the guest sends back as a tar stream on its second
#    serial port.
# 4. Replaces tests/golden/userevents/kernel/ with the result and records
#    the kernel version in kernel/VERSION.
#
# Needs: apt-get access to Debian's registry, gcc, make, flex, bison, bc,
# libelf-dev, libssl-dev, busybox-static, cpio, qemu-system-x86 (the
# script installs the missing ones when run as root).  The kernel build
# takes 5 to 15 minutes on two cores; later runs reuse WORKDIR.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
work=${1:-/tmp/hvtrace-ue-capture}
jobs=${JOBS:-$(nproc)}
mkdir -p "$work"
cd "$work"

die() { echo "capture.sh: $*" >&2; exit 1; }

need=()
for p in gcc make flex bison bc libelf-dev libssl-dev busybox-static cpio \
	qemu-system-x86 xz-utils; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
	[ "$(id -u)" -eq 0 ] || die "missing packages: ${need[*]}; install them with apt-get"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		--no-install-recommends "${need[@]}" >/dev/null ||
		die "apt-get could not install ${need[*]}"
fi

# --- 1. a kernel with user_events ----------------------------------------

if ! ls linux-image-6.12.*.deb >/dev/null 2>&1; then
	pkg=$(apt-cache depends linux-image-6.12-amd64 2>/dev/null |
		sed -n 's/.*Depends: \(linux-image-6\.12\.[^ ]*-amd64\)$/\1/p' |
		head -1)
	[ -n "$pkg" ] || die "apt-cache knows no linux-image-6.12-amd64; run apt-get update"
	apt-get download "$pkg" >/dev/null 2>&1 || die "apt-get download $pkg failed"
fi
deb=$(ls linux-image-6.12.*.deb | head -1)
rm -rf image && mkdir image && dpkg -x "$deb" image
config=$(ls image/boot/config-* | head -1)
kver=${config##*/config-}
echo "capture.sh: Debian kernel $kver"

if grep -q '^CONFIG_USER_EVENTS=y' "$config"; then
	kernel=$(ls image/boot/vmlinuz-* | head -1)
	how="Debian's linux-image $kver as shipped (CONFIG_USER_EVENTS=y)"
else
	echo "capture.sh: $kver has no CONFIG_USER_EVENTS; building linux-source-6.12 with it"
	if [ ! -d linux ]; then
		ls linux-source-6.12_*.deb >/dev/null 2>&1 ||
			apt-get download linux-source-6.12 >/dev/null 2>&1 ||
			die "apt-get download linux-source-6.12 failed"
		rm -rf src && mkdir src
		dpkg -x linux-source-6.12_*.deb src
		tar -xf src/usr/src/linux-source-6.12.tar.xz
		mv linux-source-6.12 linux
		rm -rf src
	fi
	srcver=$(ls linux-source-6.12_*.deb | sed 's/.*_\(6\.12[^_]*\)_all.deb/\1/')
	cat >user_events.config <<'CFG'
CONFIG_64BIT=y
CONFIG_PRINTK=y
CONFIG_TTY=y
CONFIG_SERIAL_8250=y
CONFIG_SERIAL_8250_CONSOLE=y
CONFIG_SERIAL_8250_NR_UARTS=4
CONFIG_SERIAL_8250_RUNTIME_UARTS=4
CONFIG_BLK_DEV_INITRD=y
CONFIG_BINFMT_ELF=y
CONFIG_BINFMT_SCRIPT=y
CONFIG_DEVTMPFS=y
CONFIG_PROC_FS=y
CONFIG_SYSFS=y
CONFIG_MULTIUSER=y
CONFIG_FUTEX=y
CONFIG_POSIX_TIMERS=y
CONFIG_FTRACE=y
CONFIG_USER_EVENTS=y
CONFIG_INIT_ON_ALLOC_DEFAULT_ON=y
CFG
	if [ ! -f linux/arch/x86/boot/bzImage ] ||
	   ! cmp -s user_events.config linux/.hvt-fragment; then
		make -C linux -s ARCH=x86_64 tinyconfig >/dev/null
		linux/scripts/kconfig/merge_config.sh -m -O linux \
			linux/.config user_events.config >/dev/null
		make -C linux -s ARCH=x86_64 olddefconfig >/dev/null
		for opt in USER_EVENTS INIT_ON_ALLOC_DEFAULT_ON SERIAL_8250_CONSOLE \
			BLK_DEV_INITRD DEVTMPFS; do
			grep -q "^CONFIG_$opt=y" linux/.config ||
				die "kernel config lost CONFIG_$opt=y"
		done
		echo "capture.sh: building the kernel with -j$jobs (minutes)"
		make -C linux -s ARCH=x86_64 -j"$jobs" bzImage >build.log 2>&1 ||
			{ tail -30 build.log >&2; die "kernel build failed (log $work/build.log)"; }
		cp user_events.config linux/.hvt-fragment
	fi
	kernel=linux/arch/x86/boot/bzImage
	how="Debian's linux-source-6.12 $srcver (the source of linux-image $kver, which ships without CONFIG_USER_EVENTS) built as x86_64 tinyconfig plus: $(grep -v '^CONFIG_64BIT' user_events.config | tr '\n' ' ')"
fi

# --- 2. initramfs ----------------------------------------------------------

gcc -static -O2 -Wall -Wextra -o ue_capture "$here/ue_capture.c" ||
	die "cannot build ue_capture.c statically (libc6-dev has libc.a)"
rm -rf initramfs && mkdir -p initramfs/bin initramfs/proc initramfs/sys \
	initramfs/dev initramfs/out
cp /bin/busybox initramfs/bin/busybox
for t in sh mount mkdir cat stty tar sleep reboot sync; do
	ln -s busybox initramfs/bin/$t
done
cp ue_capture initramfs/bin/ue_capture
cp "$here/commands.txt" initramfs/commands.txt
cat >initramfs/init <<'INIT'
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tracefs tracefs /sys/kernel/tracing
cat /proc/version >/out/VERSION.kernel
/bin/ue_capture /commands.txt /out
echo "ue_capture exit $?"
stty -F /dev/ttyS1 raw -echo
cd /out && tar -cf /dev/ttyS1 .
sync
reboot -f
INIT
chmod +x initramfs/init
(cd initramfs && find . | cpio -o -H newc --quiet) >initramfs.cpio

# --- 3. boot ---------------------------------------------------------------

rm -f data.tar console.log
timeout 600 qemu-system-x86_64 -accel tcg -m 512 -smp 1 -nographic \
	-no-reboot -kernel "$kernel" -initrd initramfs.cpio \
	-append "console=ttyS0 panic=-1 quiet" \
	-serial file:console.log -serial file:data.tar -monitor none \
	>/dev/null 2>&1 || die "QEMU failed or timed out; see $work/console.log"
grep -q "ue_capture exit 0" console.log ||
	{ tail -30 console.log >&2; die "ue_capture failed in the guest"; }

# --- 4. install ------------------------------------------------------------

rm -rf out && mkdir out
tar -xf data.tar -C out 2>/dev/null || die "no tar stream from the guest"
[ -f out/results.txt ] || die "guest sent no results.txt"
dest=$here/kernel
rm -rf "$dest" && mkdir -p "$dest"
cp -r out/. "$dest/"
{
	echo "kernel: $(cat out/VERSION.kernel)"
	echo "built: $how"
	echo "qemu: $(qemu-system-x86_64 --version | head -1)"
} >"$dest/VERSION"
rm -f "$dest/VERSION.kernel"
echo "capture.sh: wrote $dest ($(ls "$dest" | wc -l) entries)"
