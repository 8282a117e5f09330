#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# boot-time.sh - measure boot-to-command time of a flavour's guest.
#
# Usage: vm-images/boot-time.sh FLAVOUR [RUNS] [ACCEL]   (make boot-time;
#        defaults: 5 runs, accel_for check in common.sh)
# Boots RUNS times running `true`; prints each time from QEMU start to the
# guest command's start (the launcher's boot_to_command_s), then the median.
# The boots' directories are kept under results/<UTC date>-boot-time-<f>/.
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

flavour=${1:?usage: boot-time.sh FLAVOUR [RUNS] [ACCEL]}
runs=${2:-5}
accel=${3:-$(accel_for check)}
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || die "RUNS='$runs' is not a positive number"
kernel_dir "$flavour" >/dev/null
out=$(new_run_dir "${RESULTS_ROOT:-$TOPDIR/results}" "boot-time-$flavour")
for i in $(seq 1 "$runs"); do
	"$TOPDIR/vm-images/guest-run" --flavour "$flavour" --out "$out/boot-$i" \
		--accel "$accel" --timeout 180 -- true >/dev/null ||
		die "boot $i failed; see $out/boot-$i/console.log"
done
"$PYTHON" - "$flavour" "$accel" "$out"/boot-*/vm.json <<'PYEOF'
import json, statistics, sys
flavour, accel, records = sys.argv[1], sys.argv[2], sys.argv[3:]
times = [json.load(open(r))["boot_to_command_s"] for r in records]
for t in times:
    print("%s %s boot-to-command s: %.3f" % (flavour, accel, t))
print("%s %s median of %d: %.3f s" % (flavour, accel, len(times),
                                      statistics.median(times)))
PYEOF
