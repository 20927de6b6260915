#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Install the Debian 12 packages hvtrace needs, if any are missing.
# Idempotent and quick when everything is present.  Needs root (or sudo)
# only when something has to be installed.
set -euo pipefail

PKGS=(
	# build
	gcc make pkg-config clang libclang-rt-14-dev kconfig-frontends
	libncurses-dev gcc-aarch64-linux-gnu binutils-aarch64-linux-gnu
	# the aarch64 C library headers: guest library and its tests for arm64
	libc6-dev-arm64-cross
	# host library: real ftrace decoding, tracefs, FUSE
	libtraceevent-dev libtracefs-dev libfuse3-dev fuse3
	# tools the tests check our files with
	trace-cmd kernelshark xvfb x11-apps imagemagick
	# QEMU rigs
	qemu-system-x86 qemu-system-arm busybox-static cpio procps xz-utils libc6-dev
	qemu-user
	# qemu/libvirt-domain: libvirt's QEMU driver, started without systemd
	# (the sysv flavour, so that apt does not pull systemd in)
	libvirt-daemon-system libvirt-daemon-system-sysv libvirt-daemon-driver-qemu
	libvirt-clients
	# a peer to benchmark against
	liblttng-ust-dev lttng-tools
	# trace.dat tests: xwininfo checks KernelShark's windows; x_close
	# (libX11) closes it so it saves its session
	x11-utils libx11-dev
	man-db groff-base bsdextrautils
	# the FUSE tests check poll() on trace_pipe with python3's select;
	# hvtraced/kring_attach's fake VMM maps memory with python3's mmap
	# (libpython3-stdlib, which python3-minimal lacks)
	python3-minimal python3
	# make check-fresh: a fresh Debian 12 root to run the README in
	debootstrap git
)

missing=()
for p in "${PKGS[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
		missing+=("$p")
	fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "hvtrace: installing missing Debian packages: ${missing[*]}"
SUDO=
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null; then
		SUDO=sudo
	else
		echo "error: packages missing (${missing[*]}) and not root; run as root or install them with apt-get" >&2
		exit 1
	fi
fi
export DEBIAN_FRONTEND=noninteractive
if ! $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >/tmp/hvtrace-apt.log 2>&1; then
	$SUDO apt-get update -q >>/tmp/hvtrace-apt.log 2>&1 || true
	if ! $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >>/tmp/hvtrace-apt.log 2>&1; then
		tail -20 /tmp/hvtrace-apt.log >&2
		echo "error: apt-get could not install: ${missing[*]} (log: /tmp/hvtrace-apt.log)" >&2
		exit 1
	fi
fi
echo "hvtrace: packages installed"
