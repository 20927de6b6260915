#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Link check for the freestanding writer core: list the undefined symbols of
# a relocatable object and fail on any symbol not in the allow-list.
#
#   check-freestanding.sh NM OBJECT ALLOW-LIST
set -euo pipefail
nm=$1 obj=$2 allow=$3

if ! command -v "$nm" >/dev/null; then
	echo "SKIP: $nm not installed (Debian: binutils-aarch64-linux-gnu)"
	exit 77
fi
[ -f "$obj" ] || { echo "error: $obj was not built" >&2; exit 1; }

allowed=$(grep -v '^#' "$allow" | sed '/^[[:space:]]*$/d' | sort -u || true)
undef=$("$nm" -u "$obj" | awk '{print $NF}' | sort -u)
echo "object: $obj"
echo "undefined symbols: ${undef:-<none>}"
bad=$(comm -23 <(printf '%s\n' $undef | sed '/^$/d') <(printf '%s\n' $allowed | sed '/^$/d'))
if [ -n "$bad" ]; then
	echo "error: the freestanding core references symbols outside $allow:" >&2
	printf '  %s\n' $bad >&2
	echo "fix: remove the dependency (no libc in the core), or add the symbol to the allow-list with a reason" >&2
	exit 1
fi
# The object must also really be freestanding-compiled: no .interp, no PIC GOT.
if "$nm" "$obj" | grep -q '_GLOBAL_OFFSET_TABLE_'; then
	echo "error: $obj uses a GOT; build it with -fno-pic" >&2
	exit 1
fi
defined=$("$nm" --defined-only -g "$obj" | wc -l)
if [ "$defined" -lt 5 ]; then
	echo "error: only $defined global symbols in $obj; the core is missing" >&2
	exit 1
fi
echo "ok: $defined exported symbols, no undefined symbols outside the allow-list"
