#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# kernel-path.sh - print where a flavour's built kernel lives (built or not).
#
# Usage: scripts/kernel-path.sh FLAVOUR[@TOOLCHAIN]
#   -> $CACHE_DIR/kernels/<ver>/<toolchain>/<profile>/<flavour>
set -euo pipefail
. "$(dirname "$0")/common.sh"
src=$("$TOPDIR/scripts/kernel-source.sh")
split_flavour "${1:?usage: kernel-path.sh FLAVOUR[@TOOLCHAIN]}"
tc=$(TOOLCHAIN=$FLAVOUR_TOOLCHAIN toolchain_dir)
echo "$CACHE_DIR/kernels/$(cat "$src/.git/rseq-opbench-version")/$tc/$FLAVOUR_NAME"
