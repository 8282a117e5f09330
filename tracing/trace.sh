#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# trace.sh - perf flame graphs and bpftrace runs of the exit path, in the guest.
#
# Usage:
#   tracing/trace.sh flame FLAVOUR BENCH OPS [VS_FLAVOUR VS_OPS]
#       perf record around opbench BENCH with OPS operations; folded stacks
#       and flame.svg; with VS_*, a second boot and diff.svg (VS as the
#       reference: red is what FLAVOUR/OPS spends more on)
#   tracing/trace.sh bpf FLAVOUR SCRIPT BENCH OPS
#       tracing/SCRIPT around opbench BENCH with OPS operations
#   tracing/trace.sh validate FLAVOUR [SCRIPT...]
#       each script around prime-signals (1009 signals, a prime): the
#       walks it counts must equal signals + context switches
#   tracing/trace.sh overhead FLAVOUR SCRIPT BENCH OPS
#       opbench alone and under the script, alternated; the difference
#       with its confidence interval
#   tracing/trace.sh insn FLAVOUR BENCH OPS [VS_FLAVOUR VS_OPS]
#       every instruction of opbench BENCH's timed samples counted to its
#       call stack by the QEMU plugin tracing/insnprof (one vCPU, icount,
#       nokaslr): insn.folded, flame.svg, table.txt (instructions per
#       function per walk), check.txt (the plugin's total against the
#       TSC's); with VS_*, diff.svg. TYPE=reset4|reset8|null|cpu|mmcid:
#       the operations' type (default: the benchmark's own)
# Env: ACCEL (default: accel_for measure in common.sh), LOOPS, SAMPLES (bpf, overhead), FREQ and
#      SECONDS_TRACED (flame: perf's rate, default 997 Hz, and window,
#      default 1 s of guest time),
#      ROUNDS (overhead, default 3), RESULTS_ROOT (default results/),
#      OPBENCH (an opbench built for the guest, e.g. a run's bin/opbench;
#      default: built here).
# Output: results/<UTC date>-trace-<mode>-<flavour>-.../ with commands.txt
# (host and guest command lines, exactly as run), each boot's console log
# and launcher record, the raw tool output and what was derived from it.
# The last line on stdout is that directory.
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"
export BUILDROOT_MAKE=no	# after the build: use the build root, never make it

mode=${1:?usage: tracing/trace.sh flame|bpf|validate|overhead|insn FLAVOUR ...}
flavour=${2:?usage: tracing/trace.sh $mode FLAVOUR ...}
shift 2
accel=$(accel_for measure)
loops=${LOOPS:-200}
samples=${SAMPLES:-3}
freq=${FREQ:-997}
secs=${SECONDS_TRACED:-1}
tdir=$TOPDIR/tracing

case $mode in
flame)
	bench=${1:?BENCH}; ops=${2:?OPS}; vs_fl=${3:-}; vs_ops=${4:-}
	label=$mode-$flavour-$bench-$ops
	;;
bpf)
	script=${1:?SCRIPT}; bench=${2:?BENCH}; ops=${3:?OPS}
	label=$mode-$flavour-${script%.bt}-$bench-$ops
	;;
validate)
	scripts=("$@")
	[ ${#scripts[@]} -gt 0 ] || scripts=(rseq_ops_lat.bt rseq_ops_rate.bt)
	label=$mode-$flavour
	;;
overhead)
	script=${1:?SCRIPT}; bench=${2:?BENCH}; ops=${3:?OPS}
	label=$mode-$flavour-${script%.bt}-$bench-$ops
	;;
insn)
	bench=${1:?BENCH}; ops=${2:?OPS}; vs_fl=${3:-}; vs_ops=${4:-}
	label=$mode-$flavour-$bench-$ops
	case ${TYPE:-} in
	'') ;;
	reset4 | reset8 | null | cpu | mmcid) label=$label-$TYPE ;;
	*) die "TYPE='$TYPE' is not an operation type of opbench: reset4, reset8, null, cpu or mmcid (empty: the benchmark's own)" ;;
	esac
	[ "$accel" = icount ] || die "insn: ACCEL=$accel; the profile compares its count with icount's, use ACCEL=icount"
	;;
*) die "mode '$mode' is unknown; use flame, bpf, validate, overhead or insn" ;;
esac
for s in ${script:-} ${scripts[@]+"${scripts[@]}"}; do
	[ -f "$tdir/$s" ] || die "no tracing script '$s' in tracing/ (have: $(cd "$tdir" && echo *.bt))"
done

# From the run manifest, before anything is made: a missing flavour stops here.
kernel_dir "$flavour" >/dev/null
[ -z "${vs_fl:-}" ] || kernel_dir "$vs_fl" >/dev/null
out=$(new_run_dir "${RESULTS_ROOT:-$TOPDIR/results}" "trace-$label")
# Guest binaries: the run's own opbench when make bench traces its run
# (OPBENCH), else built here the one way (guest_programs).
if [ -n "${OPBENCH:-}" ]; then
	[ -x "$OPBENCH" ] || die "OPBENCH='$OPBENCH' is not an executable opbench"
	mkdir -p "$out/bin"
	cp "$OPBENCH" "$out/bin/opbench"
	guest_programs "$out/bin" prime-signals
else
	guest_programs "$out/bin" opbench prime-signals
fi
# The instruction profile counts between opbench's markers: a benchmark
# whose samples are gaps between events has none (its table's "marked").
if [ "$mode" = insn ]; then
	marked=$(in_buildroot --bind "$out" "$out/bin/opbench" --list --json |
		"$PYTHON" -c 'import json, sys
rows = {r["name"]: r for r in json.load(sys.stdin)}
r = rows.get(sys.argv[1])
ok = " ".join(n for n, x in rows.items() if x.get("marked", True))
print("unknown" if r is None else "yes" if r.get("marked", True) else "no", ok)' "$bench") ||
		die "opbench --list --json failed in the build root"
	# Refused: nothing ran, so no run is left behind.
	case $marked in
	no\ *) rm -rf "$out"; die "insn: $bench's samples are gaps between events, with no marked window for the profiler to count in; profile one of: ${marked#no }" ;;
	unknown\ *) rm -rf "$out"; die "insn: opbench has no benchmark '$bench' (opbench --list)" ;;
	esac
fi
echo "# host: $0 $mode $flavour $*" > "$out/commands.txt"
own=${OPBENCH:+", the run's own ($OPBENCH)"}
echo "# opbench sha256 $(sha256sum < "$out/bin/opbench" | cut -c1-16)$own" >> "$out/commands.txt"
echo "# ACCEL=$accel LOOPS=$loops SAMPLES=$samples FREQ=$freq SECONDS_TRACED=$secs" >> "$out/commands.txt"

# boot FLAVOUR DIR GUEST-ARGS...: one guest running guest-trace.sh in DIR.
boot() {
	local fl=$1 d=$2 rc=0 b
	shift 2
	mkdir -p "$d"
	cp "$tdir"/*.bt "$d/"
	local vm=("$TOPDIR/vm-images/guest-run" --flavour "$fl" --out "$d"
		--accel "$accel" --timeout "${TRACE_TIMEOUT:-1800}")
	for b in "$out/bin/opbench" "$out/bin/prime-signals" "$tdir/guest-trace.sh"; do
		vm+=(--copy "$b")
	done
	vm+=(-- ./guest-trace.sh "$@")
	echo "${vm[*]}" >> "$out/commands.txt"
	log "[$fl] $* (under $accel; log $d/console.log)"
	"${vm[@]}" > "$d/guest-stdout.txt" || rc=$?
	[ -f "$d/guest-commands.txt" ] && sed "s|^|# guest ($fl): |" "$d/guest-commands.txt" >> "$out/commands.txt"
	[ $rc = 0 ] || { log "[$fl] guest failed with status $rc: see $d/console.log and $d/*.log"; return $rc; }
}

fold() {
	"$PYTHON" "$tdir/stackcollapse.py" --comm "$bench" "$1/perf.script" > "$1/perf.folded"
	log "folded $(wc -l < "$1/perf.folded") stacks, $(awk '{ s += $NF } END { print s }' "$1/perf.folded") samples: $1/perf.folded"
}

# insnboot FLAVOUR OPS DIR: opbench under the instruction profiler. On the
# bpf flavour, the BPF design's program is loaded first and opbench
# registers with it (--via bpf); its JITed code and trampoline are not in
# System.map. Another flavour registers the way its declaration's VIA
# says (min: --via min).
insnboot() {
	local fl=$1 n=$2 d=$3 kdir rc=0 t pre= via= bpf=() way
	kdir=$(kernel_dir "$fl")
	mkdir -p "$d"
	if [ "$fl" = bpf ]; then
		[ -x "$out/bin/rseq-bpf-ops" ] || bpf_programs "$out/bin"
		bpf=(--copy "$out/bin/rseq-bpf-ops")
		pre="./rseq-bpf-ops load > bpf-load.txt 2>&1 && "
		via="--via bpf "
	else
		way=$(flavour_get "$fl" VIA)
		via=${way:+--via $way }
	fi
	"$PYTHON" "$tdir/insnprof.py" entries "$kdir/System.map" > "$d/entries.txt"
	local vm=("$TOPDIR/vm-images/guest-run" --flavour "$fl" --out "$d"
		--accel icount --smp 1 --append nokaslr
		--timeout "${TRACE_TIMEOUT:-1800}"
		--plugin "file=$out/bin/insnprof.so,out=$d/insnprof.txt,entries=$d/entries.txt"
		--copy "$out/bin/opbench" "${bpf[@]}"
		-- sh -c "$pre./opbench -q --mark -w 0 -n $n -l $loops -s $samples $via${TYPE:+-t $TYPE }$bench > opbench.json")
	echo "${vm[*]}" >> "$out/commands.txt"
	log "[$fl] $bench at $n operations${TYPE:+ of type $TYPE} under the instruction profiler (log $d/console.log)"
	t=$(date +%s)
	"${vm[@]}" > "$d/guest-stdout.txt" || rc=$?
	echo "boot_seconds=$(( $(date +%s) - t ))" > "$d/timing.txt"
	[ $rc = 0 ] || { log "[$fl] guest failed with status $rc: see $d/console.log"; return $rc; }
	[ -s "$d/insnprof.txt" ] || die "[$fl] the plugin wrote no profile: see $d/console.log"
	"$PYTHON" "$tdir/insnprof.py" analyse "$d/insnprof.txt" "$d/opbench.json" \
		--map "$kdir/System.map" --binary "$out/bin/opbench" --dir "$d" >&2
	grep -qx 'consistent=yes' "$d/check.txt" ||
		die "[$fl] the profile's windows do not match opbench's samples (or one stayed open): $d/check.txt"
}

case $mode in
insn)
	qh=$(manifest_get qemu_plugin_h) && [ -f "$qh/qemu-plugin.h" ] ||
		die "no qemu-plugin.h in the manifest ($MANIFEST): make plugin-header"
	make -s -C "$tdir/insnprof" O="$out/bin" QEMU_PLUGIN_H="$qh" "$out/bin/insnprof.so" ||
		die "cannot build the plugin tracing/insnprof"
	insnboot "$flavour" "$ops" "$out/$flavour-$ops"
	cp "$out/$flavour-$ops/check.txt" "$out/$flavour-$ops/table.txt" "$out/"
	"$PYTHON" "$tdir/flamegraph.py" "$out/$flavour-$ops/insn.folded" --unit instructions \
		--title "$bench, $ops operations${TYPE:+ ($TYPE)}, $flavour kernel: instructions" \
		--subtitle "every guest instruction of the timed samples, counted by the QEMU plugin tracing/insnprof (icount, one vCPU), interrupts off included" \
		> "$out/flame.svg"
	if [ -n "$vs_fl" ]; then
		insnboot "$vs_fl" "$vs_ops" "$out/$vs_fl-$vs_ops"
		"$PYTHON" "$tdir/flamegraph.py" --diff --unit instructions "$out/$vs_fl-$vs_ops/insn.folded" \
			"$out/$flavour-$ops/insn.folded" \
			--title "$bench: $flavour at $ops operations against $vs_fl at $vs_ops: instructions" \
			--subtitle "red: larger share on $flavour/$ops, blue: smaller; QEMU plugin instruction counts" \
			> "$out/diff.svg"
	fi
	log "instruction flame graph: $out/flame.svg${vs_fl:+, differential: $out/diff.svg}; per walk: $out/table.txt"
	;;
flame)
	boot "$flavour" "$out/$flavour-$ops" perf "$bench" "$ops" "$secs" "$freq"
	fold "$out/$flavour-$ops"
	"$PYTHON" "$tdir/flamegraph.py" "$out/$flavour-$ops/perf.folded" \
		--title "$bench, $ops operations, $flavour kernel" \
		--subtitle "perf record -e cpu-clock -F $freq -g -a, $secs s of guest time, '$bench' only, QEMU $accel. Time with interrupts off lands on the next instruction with them on." \
		> "$out/flame.svg"
	if [ -n "$vs_fl" ]; then
		boot "$vs_fl" "$out/$vs_fl-$vs_ops" perf "$bench" "$vs_ops" "$secs" "$freq"
		fold "$out/$vs_fl-$vs_ops"
		"$PYTHON" "$tdir/flamegraph.py" --diff "$out/$vs_fl-$vs_ops/perf.folded" \
			"$out/$flavour-$ops/perf.folded" \
			--title "$bench: $flavour at $ops operations against $vs_fl at $vs_ops" \
			--subtitle "red: larger share on $flavour/$ops, blue: smaller; perf cpu-clock, QEMU $accel" \
			> "$out/diff.svg"
	fi
	log "flame graph: $out/flame.svg${vs_fl:+, differential: $out/diff.svg}"
	;;
bpf)
	boot "$flavour" "$out/$flavour" bpftrace "$script" "$bench" "$ops" "$loops" "$samples"
	cat "$out/$flavour/$script.out"
	;;
validate)
	for s in "${scripts[@]}"; do
		boot "$flavour" "$out/${s%.bt}" validate "$s" 1009 7
	done
	dirs=()
	for s in "${scripts[@]}"; do dirs+=("$out/${s%.bt}"); done
	"$PYTHON" "$tdir/check-trace.py" validate "${dirs[@]}" | tee "$out/validate.txt"
	[ "${PIPESTATUS[0]}" = 0 ] || die "validation failed: $out/validate.txt"
	;;
overhead)
	boot "$flavour" "$out/$flavour" overhead "$script" "$bench" "$ops" "$loops" \
		"$samples" "${ROUNDS:-3}"
	"$PYTHON" "$tdir/check-trace.py" overhead "$out/$flavour" | tee "$out/overhead.txt"
	[ "${PIPESTATUS[0]}" = 0 ] || die "no overhead figure: $out/overhead.txt"
	;;
esac
echo "$out"
