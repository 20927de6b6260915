#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Run a cross-built aarch64 test program under QEMU user-mode emulation.
#   run-aarch64.sh BINARY
set -u
bin=${1:?usage: run-aarch64.sh BINARY}
if [ ! -x "$bin" ]; then
	echo "SKIP: $bin not built (no aarch64 cross compiler: gcc-aarch64-linux-gnu)"
	exit 77
fi
if ! command -v qemu-aarch64 >/dev/null; then
	echo "SKIP: qemu-aarch64 not installed (Debian package qemu-user)"
	exit 77
fi
exec qemu-aarch64 "$bin"
