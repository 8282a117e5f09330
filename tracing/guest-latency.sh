#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# guest-latency.sh - run inside a guest booted with KCONFIG=latency: the
# longest interrupts-off and preemption-off stretch while a thread's
# operations are walked, as the kernel's own tracers measure it.
#
# Run by tracing/latency.sh from the shared directory, with
#   NS="0 64 65 2048"  LAYOUTS="packed scattered"  TRACERS="irqsoff preemptoff"
#   LOOPS=..  (switch round trips per measurement: each one two walks)
#   FLAVOUR=..  (the label opbench writes)
# For each tracer, layout and N: the tracer's maximum is reset, opbench's
# switch benchmark walks the list LOOPS times on both threads (N = 0: no
# operation, the kernel's own stretches alone), and the maximum stretch the
# tracer saw is read with where it started and ended. Only CPU 0 is traced
# (tracing_cpumask), where opbench runs; function tracing inside the
# stretch is off (options/function-trace), so that the stretch is the
# code's own. One JSON record per measurement into latency.json;
# the trace of each maximum into trace-<tracer>-<layout>-<n>.txt.
# Exit status: 0; 1 when a tracer is missing or opbench failed.
set -u
: "${NS:?} ${LAYOUTS:?} ${TRACERS:?} ${LOOPS:?}"
T=/sys/kernel/tracing
[ -d "$T/options" ] || mount -t tracefs nodev "$T" 2>/dev/null
rc=0
for tracer in $TRACERS; do
	if ! grep -qw "$tracer" "$T/available_tracers"; then
		echo "guest-latency: no $tracer tracer in this kernel (KCONFIG=latency builds it)" >&2
		rc=1
		continue
	fi
	echo 0 > "$T/tracing_on"
	# CPU 0 only, where opbench runs (-c 0): the other CPU's idle loop,
	# with preemption off, would otherwise be every maximum.
	echo 1 > "$T/tracing_cpumask"
	echo "$tracer" > "$T/current_tracer"
	echo 0 > "$T/options/function-trace"
	echo 0 > "$T/tracing_thresh"
	for layout in $LAYOUTS; do
		for n in $NS; do
			# N = 0 has no list: one measurement, under the first layout.
			[ "$n" = 0 ] && [ "$layout" != "${LAYOUTS%% *}" ] && continue
			echo 0 > "$T/tracing_max_latency"
			echo 1 > "$T/tracing_on"
			./opbench -q -f "${FLAVOUR:-?}" -n "$n" --layout "$layout" -l "$LOOPS" \
				-s 1 -w 0 -c 0 switch >> opbench.json 2>> opbench.log
			st=$?
			echo 0 > "$T/tracing_on"
			max=$(cat "$T/tracing_max_latency" 2>/dev/null)
			[ -n "$max" ] || { max=null; rc=1; echo "guest-latency: $tracer: tracing_max_latency unreadable" >&2; }
			f=trace-$tracer-$layout-$n.txt
			cat "$T/trace" > "$f"
			start=$(sed -n 's/^#* *=> started at: *//p' "$f" | head -n 1)
			end=$(sed -n 's/^#* *=> ended at: *//p' "$f" | head -n 1)
			printf '{"kind":"latency","flavour":"%s","tracer":"%s","layout":"%s","nr_ops":%s,"loops":%s,"max_us":%s,"started_at":"%s","ended_at":"%s","opbench_status":%s}\n' \
				"${FLAVOUR:-?}" "$tracer" "$layout" "$n" "$LOOPS" "$max" \
				"$start" "$end" "$st" >> latency.json
			[ $st = 0 ] || { echo "guest-latency: opbench N=$n $layout exited $st" >&2; rc=1; }
		done
	done
	echo nop > "$T/current_tracer"
done
exit $rc
