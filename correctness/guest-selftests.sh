#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# guest-selftests.sh - build the rseq selftests for a flavour and run them in its guest.
#
# Usage: correctness/guest-selftests.sh FLAVOUR quick|full|op [ROUNDS]
# Output lands in results/<UTC date>-selftests-<flavour>-<mode>/ (console
# log, TAP output, launcher record); an earlier run is never overwritten.
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

kdir=$("$TOPDIR/kernel-patch/scripts/kernel-path.sh" "$flavour")
[ -f "$kdir/bzImage" ] || die "flavour '$flavour' is not built: make kernel FLAVOUR=$flavour"
img=$("$TOPDIR/vm-images/build-rootfs.sh")
out=$TOPDIR/results/$(date -u +%Y%m%dT%H%M%SZ)-selftests-$flavour-$mode
[ ! -e "$out" ] || die "$out exists; wait a second and run again"
mkdir -p "$out"
"$TOPDIR/correctness/selftests-build.sh" "$flavour" "$out/rseq"
cp "$kdir/provenance" "$out/kernel-provenance"
require=
[ "$flavour" = ops ] && require=1
log "[$flavour] running '$mode' selftests in the guest (timeout ${timeout}s; log $out/)"
rc=0
"$TOPDIR/vm-images/opbench-vm" --kernel "$kdir/bzImage" --image "$img" \
	--share "$out/rseq" --console-log "$out/console.log" --record "$out/vm.json" \
	--timeout "$timeout" -- env REQUIRE_OPS=$require ./selftests.sh "$mode" "$rounds" \
	| tee "$out/tap.txt" || rc=$?
log "[$flavour] exit status $rc; results in $out"
exit $rc
