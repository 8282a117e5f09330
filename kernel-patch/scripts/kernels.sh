#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# kernels.sh - build several flavours in turn.
#
# Usage: kernel-patch/scripts/kernels.sh [--check] FLAVOUR[@TOOLCHAIN]...
# Each flavour takes its series as kernel-build.sh does for make kernel
# (flavour_series in common.sh): SERIES_<name>, and by default its
# declaration's (kernel-patch/flavours/<name>.flavour); baseline, ops and
# control are built from their declarations' alone.
# "ops@host" is ops built with TOOLCHAIN=host. Every flavour is checked
# (kernel-build.sh --check) before the first is built; --check stops there.
# Stops at the first failure.
set -euo pipefail
. "$(dirname "$0")/../../scripts/common.sh"

check=
[ "${1:-}" != --check ] || { check=1; shift; }
[ $# -gt 0 ] || die "usage: kernels.sh [--check] FLAVOUR[@TOOLCHAIN]..."

# kernel_build [--check] FLAVOUR[@TOOLCHAIN]: kernel-build.sh, which
# takes the flavour's series as every target does (flavour_series).
kernel_build() {
	local opt=()
	[ "$1" != --check ] || { opt=(--check); shift; }
	split_flavour "$1"
	TOOLCHAIN=$FLAVOUR_TOOLCHAIN "$TOPDIR/kernel-patch/scripts/kernel-build.sh" \
		${opt[@]+"${opt[@]}"} "$FLAVOUR_NAME" >/dev/null
}

for spec in "$@"; do
	kernel_build --check "$spec"
done
[ -z "$check" ] || exit 0
t0=$(date +%s)
for spec in "$@"; do
	kernel_build "$spec"
done
log "all requested flavours ($*) done in $(fmt_secs $(( $(date +%s) - t0 )))"
