#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# kernels.sh - build several flavours in turn.
#
# Usage: kernel-patch/scripts/kernels.sh FLAVOUR[@TOOLCHAIN]...
# baseline, ops (kernel-patch/series/) and control (ops plus the planted bug
# of kernel-patch/controls/) need no series; any other flavour takes its
# series from SERIES_<name> (make sets SERIES_rfc from RFC_SERIES);
# resident, the kernel-resident variant, defaults to kernel-patch/resident/.
# "ops@host" is ops built with TOOLCHAIN=host. Stops at the first failure.
set -euo pipefail
. "$(dirname "$0")/../../scripts/common.sh"

[ $# -gt 0 ] || die "usage: kernels.sh FLAVOUR[@TOOLCHAIN]..."
SERIES_resident=${SERIES_resident:-$TOPDIR/kernel-patch/resident}
t0=$(date +%s)
for spec in "$@"; do
	split_flavour "$spec"
	f=$FLAVOUR_NAME
	var=SERIES_${f//-/_}
	case $f in
	baseline | ops | control) ;;
	*) [ -n "${!var:-}" ] || die "flavour '$f' needs a series: set $var=<patch directory or mbox>" ;;
	esac
	TOOLCHAIN=$FLAVOUR_TOOLCHAIN "$TOPDIR/kernel-patch/scripts/kernel-build.sh" "$f" ${!var:+"${!var}"} >/dev/null
done
log "all requested flavours ($*) done in $(fmt_secs $(( $(date +%s) - t0 )))"
