#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# boot-time.sh - measure boot-to-command time of a flavour's guest.
#
# Usage: vm-images/boot-time.sh FLAVOUR [RUNS] [ACCEL]   (defaults: 5, tcg)
# Boots RUNS times running `true`; prints each time from QEMU start to the
# guest command's start (the launcher's boot_to_command_s), then the median.
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

flavour=${1:?usage: boot-time.sh FLAVOUR [RUNS] [ACCEL]}
runs=${2:-5}
accel=${3:-tcg}
kdir=$("$TOPDIR/kernel-patch/scripts/kernel-path.sh" "$flavour")
[ -f "$kdir/bzImage" ] || die "flavour '$flavour' is not built: make kernel FLAVOUR=$flavour"
img=$("$TOPDIR/vm-images/build-rootfs.sh")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for i in $(seq 1 "$runs"); do
	"$TOPDIR/vm-images/opbench-vm" --kernel "$kdir/bzImage" --image "$img" \
		--share "$tmp" --accel "$accel" --timeout 120 --record "$tmp/r$i.json" \
		-- true 2>/dev/null
	/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["boot_to_command_s"])' "$tmp/r$i.json"
done | tee "$tmp/times" | sed "s/^/$flavour $accel boot-to-command s: /"
sort -n "$tmp/times" | awk -v f="$flavour" -v a="$accel" \
	'{ v[NR] = $1 } END { printf "%s %s median of %d: %.3f s\n", f, a, NR, (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
