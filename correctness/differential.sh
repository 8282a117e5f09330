#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# differential.sh - run ops' rseq_op_test on ops and on another flavour; list
# the cases that differ.
#
# Usage: correctness/differential.sh [AGAINST]   (make differential [AGAINST=rfc|v2|...])
# AGAINST (default rfc, the RFC as posted; v2 is our series v2) runs the
# same rseq_op_test binary as ops, the one in ops' tree (the series under
# test): the comparison shows which cases the other kernel fails. Each
# flavour's run lands in its own results/<UTC date>-selftests-<f>-op/; the
# comparison is written beside the other flavour's run (differential.txt).
# A run that fails to produce TAP output stops the comparison, naming the
# run: an older run is never compared in its place.
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

against=${1:-rfc}
[ "$against" != ops ] || die "AGAINST=ops: name another flavour to compare ops with (rfc, v2, ...)"
declare -A dir=()
for f in ops "$against"; do
	kernel_dir "$f" >/dev/null
done
for f in ops "$against"; do
	rc=0
	# The last line on stdout names the run; rseq_op_test's own failures are
	# what this compares, so a non-zero status alone does not stop it.
	d=$(OPTEST_FLAVOUR=ops "$TOPDIR/correctness/guest-selftests.sh" "$f" op 1 | tail -1) || rc=$?
	[ -n "$d" ] && [ -d "$d" ] || die "[$f] the selftest run made no results directory (status $rc); see the messages above"
	[ -s "$d/tap.txt" ] && grep -q '^ok\|^not ok' "$d/tap.txt" ||
		die "[$f] no TAP results in $d/tap.txt (status $rc): the guest did not run rseq_op_test; see $d/console.log"
	case $rc in
	0 | 1) ;;
	*) die "[$f] the guest failed with status $rc (not a test failure): see $d/console.log and $d/kernel-problems.txt" ;;
	esac
	dir[$f]=$d
done
"$PYTHON" "$TOPDIR/correctness/tap-diff.py" "${dir[ops]}/tap.txt" "${dir[$against]}/tap.txt" ops "$against" |
	tee "${dir[$against]}/differential.txt"
