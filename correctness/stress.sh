#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# stress.sh - adversarial use of RSEQ operations on the debug kernel, in a guest.
#
# Usage: correctness/stress.sh [DURATION_SECONDS]     (make stress DURATION=...)
# Env:   STRESS_PROFILE (default debug: KASAN, lockdep, lockup detectors), FLAVOUR
#        (default ops), PARALLEL (victims at a time, default 4), SEED,
#        RESULTS_ROOT (default results/)
#
# Boots FLAVOUR of PROFILE and runs correctness/stress/rseq_op_stress for
# DURATION seconds (default 600). Passes only if every victim process had
# the outcome its scenario called for (see rseq_op_stress.c) and the kernel
# printed no oops, BUG, WARNING, KASAN report, lockdep splat, lockup, hung
# task or RCU stall. Output: results/<UTC date>-stress-<profile>-<secs>s/
# with the summary (summary.json), the console log, the launcher record and
# the exact commands. The last line on stdout is that directory.
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

secs=${1:-${DURATION:-600}}
[[ "$secs" =~ ^[0-9]+$ ]] && [ "$secs" -gt 0 ] || die "DURATION='$secs' is not a positive number of seconds"
# Not PROFILE: make exports PROFILE=default to every recipe.
export PROFILE=${STRESS_PROFILE:-debug}
flavour=${FLAVOUR:-ops}
par=${PARALLEL:-4}

kdir=$("$TOPDIR/kernel-patch/scripts/kernel-path.sh" "$flavour")
[ -f "$kdir/bzImage" ] || die "no $PROFILE kernel for '$flavour': make kernels FLAVOURS=$flavour PROFILE=$PROFILE"
img=$("$TOPDIR/vm-images/build-rootfs.sh")
out=${RESULTS_ROOT:-$TOPDIR/results}/$(date -u +%Y%m%dT%H%M%SZ)-stress-$PROFILE-${secs}s
[ ! -e "$out" ] || die "$out exists; wait a second and run again"
mkdir -p "$out"
# Built against the guest's glibc, in the trixie build root.
in_buildroot --bind "$out" gcc -O2 -g -Wall -Wextra -o "$out/rseq_op_stress" \
	"$TOPDIR/correctness/stress/rseq_op_stress.c" "$TOPDIR/microbench/reg.c" -lpthread ||
	die "cannot build the stress program (correctness/stress/rseq_op_stress.c)"
cp "$kdir/provenance" "$out/kernel-provenance"
cat > "$out/guest-stress.sh" <<EOF
#!/bin/sh
# Hung tasks reported after 30 s instead of 120 s; lockups at 10 s.
echo 30 > /proc/sys/kernel/hung_task_timeout_secs 2>/dev/null
echo 10 > /proc/sys/kernel/watchdog_thresh 2>/dev/null
exec ./rseq_op_stress -d $secs -j $par ${SEED:+-s $SEED}
EOF
chmod +x "$out/guest-stress.sh"
# no5lvl: with -cpu max, TCG offers 5-level paging, and the debug kernel
# then reported "BUG: KASAN: wild-memory-access in do_raw_spin_lock" from
# an interrupt taken during start_kernel() in 2 boots of 6 (0 of 8 with
# no5lvl), long before any process runs. Such a report taints the kernel
# and turns lockdep off for the whole run.
vm=("$TOPDIR/vm-images/opbench-vm" --kernel "$kdir/bzImage" --image "$img"
	--share "$out" --timeout $((secs + 600)) --console-log "$out/console.log"
	--record "$out/vm.json" --append no5lvl -- ./guest-stress.sh)
{
	echo "# host: $0 $*"
	echo "# STRESS_PROFILE=$PROFILE FLAVOUR=$flavour PARALLEL=$par SEED=${SEED:-}"
	echo "${vm[*]}"
	sed -n 's/^exec /# guest: /p' "$out/guest-stress.sh"
} > "$out/commands.txt"
log "[$flavour/$PROFILE] $secs s of stress, $par victims at a time (console: $out/console.log)"
rc=0
"${vm[@]}" > "$out/guest-stdout.txt" || rc=$?
grep '^{' "$out/guest-stdout.txt" | tail -1 > "$out/summary.json" || true

# The kernel's side: anything a debug kernel prints when it is hurt.
pat='Oops|BUG:|WARNING:|KASAN|UBSAN|possible circular locking|possible recursive locking|inconsistent lock state|suspicious RCU usage|blocked for more than|soft lockup|hard LOCKUP|rcu.*detected stall|general protection fault|Kernel panic|Call Trace'
grep -E "$pat" "$out/console.log" > "$out/kernel-problems.txt" || true
problems=$(wc -l < "$out/kernel-problems.txt")

/usr/bin/python3 - "$out/summary.json" "$problems" "$rc" <<'EOF'
import json, sys
path, problems, rc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
try:
    s = json.load(open(path))
except (OSError, ValueError):
    s = {}
print("stress: %s s, %s victim processes, %s prctl calls, %s walks triggered"
      % (s.get("seconds", "?"), s.get("victims", "?"), s.get("prctl_calls", "?"),
         s.get("walks_triggered", "?")))
print("stress: %s contract violations injected; SIGSEGV expected %s, seen %s;"
      " wrong outcomes %s" % (s.get("violations_injected", "?"),
                              s.get("segv_expected", "?"), s.get("segv_seen", "?"),
                              s.get("wrong", "?")))
print("stress: kernel problems on the console: %d; guest status %d" % (problems, rc))
EOF
if [ "$problems" -gt 0 ]; then
	if sed '/OPBENCH-START/q' "$out/console.log" | grep -qE "$pat"; then
		log "the first report came at boot, before the stress started: the run is void (lock debugging is off after a report), not a verdict on RSEQ operations"
	fi
	log "FAILED: the kernel reported problems (first ones below; all in $out/kernel-problems.txt)"
	head -5 "$out/kernel-problems.txt" >&2
	rc=1
fi
if [ ! -s "$out/summary.json" ]; then
	log "FAILED: no summary from the guest (status $rc); see $out/console.log"
	rc=1
elif [ "$rc" != 0 ]; then
	log "FAILED: wrong outcomes or guest status $rc; see $out/guest-stdout.txt and $out/console.log"
fi
echo "$out"
exit $rc
