#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# differential.sh - run rseq_op_test on ops and on rfc; list the cases that differ.
#
# Usage: correctness/differential.sh     (make differential; both flavours built)
# Each flavour's run lands in its own results/<UTC date>-selftests-<f>-op/;
# the comparison is written beside the rfc run (differential.txt). A run
# that fails to produce TAP output stops the comparison, naming the run: an
# older run is never compared in its place.
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

declare -A dir=()
for f in ops rfc; do
	kernel_dir "$f" >/dev/null
done
for f in ops rfc; do
	rc=0
	# The last line on stdout names the run; rseq_op_test's own failures are
	# what this compares, so a non-zero status alone does not stop it.
	d=$("$TOPDIR/correctness/guest-selftests.sh" "$f" op 1 | tail -1) || rc=$?
	[ -n "$d" ] && [ -d "$d" ] || die "[$f] the selftest run made no results directory (status $rc); see the messages above"
	[ -s "$d/tap.txt" ] && grep -q '^ok\|^not ok' "$d/tap.txt" ||
		die "[$f] no TAP results in $d/tap.txt (status $rc): the guest did not run rseq_op_test; see $d/console.log"
	case $rc in
	0 | 1) ;;
	*) die "[$f] the guest failed with status $rc (not a test failure): see $d/console.log and $d/kernel-problems.txt" ;;
	esac
	dir[$f]=$d
done
"$PYTHON" "$TOPDIR/correctness/tap-diff.py" "${dir[ops]}/tap.txt" "${dir[rfc]}/tap.txt" ops rfc |
	tee "${dir[rfc]}/differential.txt"
