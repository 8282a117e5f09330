#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# kernels.sh - build several flavours in turn; a missing series is reported, not faked.
#
# Usage: kernel-patch/scripts/kernels.sh FLAVOUR[@TOOLCHAIN]...  (ops uses kernel-patch/series/)
# A flavour other than baseline and ops takes its series from SERIES_<name>;
# "ops@host" is ops built with TOOLCHAIN=host.
set -euo pipefail
. "$(dirname "$0")/../../scripts/common.sh"

t0=$(date +%s)
for spec in "$@"; do
	split_flavour "$spec"
	f=$FLAVOUR_NAME
	var=SERIES_${f//-/_}
	rc=0
	TOOLCHAIN=$FLAVOUR_TOOLCHAIN "$TOPDIR/kernel-patch/scripts/kernel-build.sh" "$f" ${!var:-} >/dev/null || rc=$?
	case $rc in
	0) ;;
	3) log "skipping '$f': its series does not exist yet" ;;
	*) exit $rc ;;
	esac
done
log "all requested flavours done in $(fmt_secs $(( $(date +%s) - t0 )))"
