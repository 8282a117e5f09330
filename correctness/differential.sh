#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# differential.sh - run rseq_op_test on ops and on rfc; list the cases that differ.
#
# Usage: correctness/differential.sh     (both flavours must be built)
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

for f in ops rfc; do
	"$TOPDIR/correctness/guest-selftests.sh" "$f" op 1 >/dev/null || true
done
a=$(ls -d "$TOPDIR"/results/*-selftests-ops-op | tail -1)
b=$(ls -d "$TOPDIR"/results/*-selftests-rfc-op | tail -1)
"$TOPDIR/correctness/tap-diff.py" "$a/tap.txt" "$b/tap.txt" ops rfc | tee "$b/differential.txt"
