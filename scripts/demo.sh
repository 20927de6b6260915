#!/bin/bash
# SPDX-License-Identifier: MIT
#
# 'make demo': for now, the loopback demo (scripts/demo-loopback.sh) --
# a local writer, live streaming as ftrace text, exact loss accounting,
# and the host kernel through the same reader.
exec "$(dirname "$0")/demo-loopback.sh" "$@"
