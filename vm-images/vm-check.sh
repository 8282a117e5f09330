#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vm-check.sh - boot each built flavour and show its release and rseq feature size.
#
# Usage: vm-images/vm-check.sh FLAVOUR...     (make vm-check)
# Prints one line per flavour:  <flavour>: <uname -r> AT_RSEQ_FEATURE_SIZE=<n>
# Each boot's directory (vm-images/guest-run) is kept under
# results/<UTC date>-vm-check/<flavour>/. A flavour that is not built, or a
# boot that fails, fails the check and is named.
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

[ $# -gt 0 ] || die "usage: vm-check.sh FLAVOUR..."
for f in "$@"; do kernel_dir "$f" >/dev/null; done
out=$(new_run_dir "${RESULTS_ROOT:-$TOPDIR/results}" vm-check)
rc=0
for f in "$@"; do
	st=0
	"$TOPDIR/vm-images/guest-run" --flavour "$f" --out "$out/$f" --accel "$(accel_for check)" \
		--timeout 180 -- sh -c \
		'echo "$(uname -r) $(LD_SHOW_AUXV=1 /bin/true | grep -o "AT_RSEQ_FEATURE_SIZE: *[0-9]*" | tr -d " " | tr : =)"' |
		sed "s/^/$f: /" || st=$?
	[ "$st" = 0 ] || { log "$f: boot failed with status $st; see $out/$f/console.log"; rc=1; }
done
exit $rc
