#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# latency.sh - the longest interrupts-off and preemption-off stretch a walk
# adds, measured by the kernel's irqsoff and preemptoff tracers in a guest
# of each flavour built with KCONFIG=latency (its own configuration: the
# tracers cost every toggle, so this kernel measures nothing else).
#
# Usage: tracing/latency.sh OUT FLAVOUR...   (make latency; the walker plan)
# Env:   NS (default "0 64 65 2048": either side of the series' bound on
#        the walk with interrupts off), LAYOUTS (default "packed
#        scattered": one node per page), TRACERS (default "irqsoff
#        preemptoff"), LOOPS (switch round trips per measurement, default
#        200), ACCEL (default: accel_for measure, icount), OPBENCH (an
#        opbench built for the guest, e.g. a run's bin/opbench; default:
#        built here), BOOT_TIMEOUT.
# Output: OUT/<flavour>/ per flavour: latency.json (one record per tracer,
# layout and N), the trace of each maximum, opbench's records, and the
# runner's files (console log, launcher record, kernel provenance). Under
# icount the tracers' microseconds are thousands of guest instructions
# (shift=0: one instruction a nanosecond); the analysis says which.
#
# NOT YET A MEASURE OF THE WALK: under icount the maxima seen so far are
# the kernel's own stretches (the idle loop and softirqs, whose virtual
# time jumps to the next timer: about 1000 us), not the walk's; each
# trace-*.txt says where its maximum started and ended. Isolating the
# walk (a threshold and the walker in the stack, or the walker's own
# duration) is open work (issue 30).
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"
export BUILDROOT_MAKE=no	# after the build: use the build root, never make it

[ $# -ge 2 ] || die "usage: tracing/latency.sh OUT FLAVOUR..."
out=$1
shift
accel=$(accel_for measure)
ns=${NS:-0 64 65 2048}
layouts=${LAYOUTS:-packed scattered}
tracers=${TRACERS:-irqsoff preemptoff}
loops=${LOOPS:-200}
for n in $ns; do
	[[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -le 2048 ] || die "NS='$ns': want numbers of operations 0..2048"
done
for l in $layouts; do
	case $l in packed | scattered) ;; *) die "LAYOUTS='$layouts': want packed and/or scattered" ;; esac
done
for t in $tracers; do
	case $t in irqsoff | preemptoff) ;; *) die "TRACERS='$tracers': want irqsoff and/or preemptoff" ;; esac
done
# The kernels first: a missing one stops here, before any boot.
for f in "$@"; do KCONFIG=latency kernel_dir "$f" >/dev/null; done
mkdir -p "$out"
opbench=${OPBENCH:-}
if [ -z "$opbench" ]; then
	guest_programs "$out/bin" opbench
	opbench=$out/bin/opbench
fi
rc=0
for f in "$@"; do
	d=$out/$f
	[ ! -e "$d" ] || die "$d exists: name a new OUT (nothing is overwritten)"
	mkdir -p "$d"
	log "[$f] irqsoff/preemptoff stretches at N = $ns ($layouts) under $accel"
	st=0
	"$TOPDIR/vm-images/guest-run" --flavour "$f" --kconfig latency --out "$d" \
		--accel "$accel" --timeout "${BOOT_TIMEOUT:-3600}" \
		--copy "$opbench" --copy "$TOPDIR/tracing/guest-latency.sh" \
		-- env NS="$ns" LAYOUTS="$layouts" TRACERS="$tracers" LOOPS="$loops" \
		FLAVOUR="$f" sh ./guest-latency.sh > "$d/guest-stdout.txt" || st=$?
	if [ $st != 0 ]; then
		log "[$f] FAILED with status $st (see $d/console.log, $d/opbench.log)"
		rc=1
	fi
done
exit $rc
