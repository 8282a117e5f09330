#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# kernel-path.sh - print where a flavour's built kernel lives (built or not).
#
# Usage: kernel-patch/scripts/kernel-path.sh FLAVOUR[@TOOLCHAIN]
#   -> $CACHE_DIR/kernels/<ver>/<toolchain>/<profile>/<flavour>
set -euo pipefail
. "$(dirname "$0")/../../scripts/common.sh"
src=$("$TOPDIR/kernel-patch/scripts/kernel-source.sh")
split_flavour "${1:?usage: kernel-path.sh FLAVOUR[@TOOLCHAIN]}"
base=$(TOOLCHAIN=$FLAVOUR_TOOLCHAIN kernels_base "$(cat "$src/.git/rseq-opbench-version")")
echo "$base/$FLAVOUR_NAME"
