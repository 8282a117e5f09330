#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# guest-selftests.sh - build the rseq selftests for a flavour and run them in its guest.
#
# Usage: correctness/guest-selftests.sh FLAVOUR quick|full|op [ROUNDS]
# Output lands in results/<UTC date>-selftests-<flavour>-<mode>/ (the
# selftest binaries, TAP output, and vm-images/guest-run's console log,
# launcher record, provenance, commands, kernel problems); an earlier run is
# never overwritten. The last line on stdout is that directory.
# Env:   ACCEL (default: accel_for check in common.sh),
#        RESULTS_ROOT (default results/)
# Exit status: the guest's (0 only when every test passed and the kernel
# printed no WARNING, BUG or Oops).
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

flavour=${1:?usage: guest-selftests.sh FLAVOUR quick|full|op [ROUNDS]}
mode=${2:-quick}
rounds=${3:-1}
case "$mode" in
quick) timeout=${TIMEOUT:-1500} ;;
full) timeout=${TIMEOUT:-5400} ;;
op) timeout=${TIMEOUT:-$((300 + 60 * rounds))} ;;
*) die "mode '$mode' is unknown; use quick, full or op" ;;
esac
[[ "$rounds" =~ ^[0-9]+$ ]] || die "ROUNDS='$rounds' is not a number"

kernel_dir "$flavour" >/dev/null
out=$(new_run_dir "${RESULTS_ROOT:-$TOPDIR/results}" "selftests-$flavour-$mode")
"$TOPDIR/correctness/selftests-build.sh" "$flavour" "$out"
# PRELOAD=1 in its declaration: param_test must get operations through
# rseq_op_preload.so, not run without them.
require=$(flavour_get "$flavour" PRELOAD)
log "[$flavour] running '$mode' selftests in the guest (timeout ${timeout}s; log $out/)"
rc=0
"$TOPDIR/vm-images/guest-run" --flavour "$flavour" --out "$out" --timeout "$timeout" \
	--accel "$(accel_for check)" -- env REQUIRE_OPS=$require ./selftests.sh "$mode" "$rounds" \
	| tee "$out/tap.txt" || rc=$?
log "[$flavour] exit status $rc; results in $out"
# The one line on stdout: where the run is (correctness/differential.sh reads it).
echo "$out"
exit $rc
