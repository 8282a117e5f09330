#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vm-check.sh - boot each built flavour and show its release and rseq feature size.
#
# Usage: vm-images/vm-check.sh FLAVOUR...
# Prints one line per flavour:  <flavour>: <uname -r> AT_RSEQ_FEATURE_SIZE=<n>
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

img=$("$TOPDIR/vm-images/build-rootfs.sh")
for f in "$@"; do
	k=$("$TOPDIR/kernel-patch/scripts/kernel-path.sh" "$f")
	if [ ! -f "$k/bzImage" ]; then
		log "$f: not built, skipped"
		continue
	fi
	share=$(mktemp -d)
	"$TOPDIR/vm-images/opbench-vm" --kernel "$k/bzImage" --image "$img" \
		--share "$share" --timeout 120 -- sh -c \
		'echo "$(uname -r) $(LD_SHOW_AUXV=1 /bin/true | grep -o "AT_RSEQ_FEATURE_SIZE: *[0-9]*" | tr -d " " | tr : =)"' |
		sed "s/^/$f: /"
	rm -rf "$share"
done
