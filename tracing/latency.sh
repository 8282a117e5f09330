#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# latency.sh - how long a walk of N operations holds interrupts or
# preemption off, and the kernel's own longest such stretches beside it,
# measured by the kernel's tracers in a guest of each flavour built with
# KCONFIG=latency (its own configuration: the tracers cost every toggle,
# so this kernel measures nothing else).
#
# Usage: tracing/latency.sh OUT FLAVOUR...   (make latency; the walker plan)
# Env:   NS (default 0, the bound, the bound + 1 and the list limit
#        (plan.py fact): either side of the series' bound on
#        the walk with interrupts off), LAYOUTS (default "packed
#        scattered": one node per page), TRACERS (default "walk irqsoff
#        preemptoff"; walk: the function_graph tracer on rseq_ops_apply,
#        each walk's duration and context), LATENCY_LOOPS (switch round
#        trips per measurement, default 200; not the plan's LOOPS, which
#        make bench exports), ACCEL (default: accel_for measure,
#        icount), OPBENCH (an opbench built for the guest, e.g. a run's
#        bin/opbench; default: built here), SMP (vCPUs, default 1: under
#        icount the guest's clock counts every vCPU's instructions, so a
#        walk timed with a second vCPU busy would count its instructions
#        too), BOOT_TIMEOUT.
# Output: OUT/<flavour>/ per flavour: latency.json (one record per tracer,
# layout and N), each walk trace (walk-*.txt) and the trace of each
# tracer's maximum (trace-*.txt), opbench's records, and the runner's
# files (console log, launcher record, kernel provenance). Under icount
# the guest's clock counts one instruction a nanosecond (shift=0): the
# figures are instructions; the analysis says which.
#
# The walk's own stretch is the walk rows; the irqsoff and preemptoff
# maxima are the longest stretch on CPU 0 while the benchmark ran, whatever
# code it was (under icount: the idle loop and softirqs, whose virtual time
# jumps to the next timer), to set the walk beside.
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"
export BUILDROOT_MAKE=no	# after the build: use the build root, never make it

[ $# -ge 2 ] || die "usage: tracing/latency.sh OUT FLAVOUR..."
out=$1
shift
accel=$(accel_for measure)
# Either side of the fast path's bound, and the list limit: facts decided
# once (microbench/plan.py fact).
bound=$("$PYTHON" "$TOPDIR/microbench/plan.py" fact irqs_off_max) || die "the fast path's bound is not known (above)"
limit=$("$PYTHON" "$TOPDIR/microbench/plan.py" fact list_limit) || die "the list limit is not known (above)"
ns=${NS:-0 $bound $((bound + 1)) $limit}
layouts=${LAYOUTS:-packed scattered}
tracers=${TRACERS:-walk irqsoff preemptoff}
loops=${LATENCY_LOOPS:-200}
[[ "$loops" =~ ^[1-9][0-9]*$ ]] || die "LATENCY_LOOPS='$loops': want a number of round trips (default 200)"
smp=${SMP:-1}
[[ "$smp" =~ ^[1-9][0-9]*$ ]] || die "SMP='$smp': want a number of vCPUs (default 1)"
for n in $ns; do
	[[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -le "$limit" ] || die "NS='$ns': want numbers of operations 0..$limit"
done
for l in $layouts; do
	case $l in packed | scattered) ;; *) die "LAYOUTS='$layouts': want packed and/or scattered" ;; esac
done
for t in $tracers; do
	case $t in walk | irqsoff | preemptoff) ;; *) die "TRACERS='$tracers': want walk, irqsoff and/or preemptoff" ;; esac
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
	log "[$f] $tracers stretches at N = $ns ($layouts) under $accel, $smp vCPU(s)"
	st=0
	"$TOPDIR/vm-images/guest-run" --flavour "$f" --kconfig latency --out "$d" \
		--accel "$accel" --smp "$smp" --timeout "${BOOT_TIMEOUT:-3600}" \
		--copy "$opbench" --copy "$TOPDIR/tracing/guest-latency.sh" \
		-- env NS="$ns" LAYOUTS="$layouts" TRACERS="$tracers" LOOPS="$loops" \
		FLAVOUR="$f" sh ./guest-latency.sh > "$d/guest-stdout.txt" || st=$?
	if [ $st != 0 ]; then
		log "[$f] FAILED with status $st (see $d/console.log, $d/opbench.log)"
		rc=1
	fi
done
exit $rc
