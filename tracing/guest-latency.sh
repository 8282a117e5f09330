#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# guest-latency.sh - run inside a guest booted with KCONFIG=latency: how
# long a walk of a thread's operations holds interrupts or preemption off,
# and the longest such stretch of the kernel's own, as the kernel's
# tracers measure them.
#
# Run by tracing/latency.sh from the shared directory, with
#   NS (numbers of operations; latency.sh: 0, the bound, the bound + 1 and
#   the list limit)  LAYOUTS="packed scattered"
#   TRACERS="walk irqsoff preemptoff"
#   LOOPS=..  (switch round trips per measurement: each one two walks)
#   FLAVOUR=..  (the label opbench writes)
# For each tracer, layout and N, opbench's switch benchmark walks the list
# LOOPS times on both threads (N = 0: no operation). Only CPU 0 is traced
# (tracing_cpumask), where opbench runs (latency.sh boots one vCPU).
#   walk: the function_graph tracer on rseq_ops_apply alone, with the
#       latency format: each walk's duration and whether it ran with
#       interrupts off (the fast path) or preemption off (the slow path).
#       The whole trace goes to walk-<layout>-<n>.txt, which the analysis
#       reads; N = 0 has no walk and is skipped.
#   irqsoff, preemptoff: the tracer's maximum, reset before each
#       measurement, is the longest stretch on CPU 0 whatever code it was
#       (function tracing inside it off, so that it is the code's own);
#       its trace, with where it started and ended, into
#       trace-<tracer>-<layout>-<n>.txt.
# One JSON record per measurement into latency.json.
# Exit status: 0; 1 when a tracer is missing or opbench failed.
set -u
: "${NS:?} ${LAYOUTS:?} ${TRACERS:?} ${LOOPS:?}"
T=/sys/kernel/tracing
[ -d "$T/options" ] || mount -t tracefs nodev "$T" 2>/dev/null
rc=0
for tracer in $TRACERS; do
	kt=$tracer
	[ "$tracer" = walk ] && kt=function_graph
	if ! grep -qw "$kt" "$T/available_tracers"; then
		echo "guest-latency: no $kt tracer in this kernel (KCONFIG=latency builds it)" >&2
		rc=1
		continue
	fi
	echo 0 > "$T/tracing_on"
	# CPU 0 only, where opbench runs (-c 0): the other CPU's idle loop,
	# with preemption off, would otherwise be every maximum.
	echo 1 > "$T/tracing_cpumask"
	if [ "$tracer" = walk ]; then
		if ! echo rseq_ops_apply > "$T/set_ftrace_filter" 2>/dev/null; then
			echo "guest-latency: rseq_ops_apply cannot be traced in this kernel" >&2
			rc=1
			continue
		fi
		echo 0 > "$T/options/funcgraph-irqs"
		echo 1 > "$T/options/latency-format"
	fi
	echo "$kt" > "$T/current_tracer"
	[ "$tracer" = walk ] || echo 0 > "$T/options/function-trace"
	echo 0 > "$T/tracing_thresh"
	for layout in $LAYOUTS; do
		for n in $NS; do
			# N = 0 has no list: one measurement, under the first layout.
			[ "$n" = 0 ] && [ "$layout" != "${LAYOUTS%% *}" ] && continue
			# N = 0 has no walk to time.
			[ "$tracer" = walk ] && [ "$n" = 0 ] && continue
			if [ "$tracer" = walk ]; then
				echo > "$T/trace"
			else
				echo 0 > "$T/tracing_max_latency"
			fi
			echo 1 > "$T/tracing_on"
			./opbench -q -f "${FLAVOUR:-?}" -n "$n" --layout "$layout" -l "$LOOPS" \
				-s 1 -w 0 -c 0 switch >> opbench.json 2>> opbench.log
			st=$?
			echo 0 > "$T/tracing_on"
			[ $st = 0 ] || { echo "guest-latency: opbench N=$n $layout exited $st" >&2; rc=1; }
			if [ "$tracer" = walk ]; then
				f=walk-$layout-$n.txt
				cat "$T/trace" > "$f"
				printf '{"kind":"latency","flavour":"%s","tracer":"walk","layout":"%s","nr_ops":%s,"loops":%s,"trace":"%s","opbench_status":%s}\n' \
					"${FLAVOUR:-?}" "$layout" "$n" "$LOOPS" "$f" "$st" >> latency.json
				continue
			fi
			max=$(cat "$T/tracing_max_latency" 2>/dev/null)
			[ -n "$max" ] || { max=null; rc=1; echo "guest-latency: $tracer: tracing_max_latency unreadable" >&2; }
			f=trace-$tracer-$layout-$n.txt
			cat "$T/trace" > "$f"
			start=$(sed -n 's/^#* *=> started at: *//p' "$f" | head -n 1)
			end=$(sed -n 's/^#* *=> ended at: *//p' "$f" | head -n 1)
			printf '{"kind":"latency","flavour":"%s","tracer":"%s","layout":"%s","nr_ops":%s,"loops":%s,"max_us":%s,"started_at":"%s","ended_at":"%s","opbench_status":%s}\n' \
				"${FLAVOUR:-?}" "$tracer" "$layout" "$n" "$LOOPS" "$max" \
				"$start" "$end" "$st" >> latency.json
		done
	done
	echo nop > "$T/current_tracer"
	if [ "$tracer" = walk ]; then
		echo > "$T/set_ftrace_filter"
		echo 0 > "$T/options/latency-format"
	fi
done
exit $rc
