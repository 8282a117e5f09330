#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# bench-run.sh - the stages of `make bench` after the build, in three steps:
#
#   benchmarks -> tracing -> analysis
#
# Usage: microbench/bench-run.sh   (make bench; PLAN=quick|default|walker)
# The Makefile builds first (deps, the plan's kernels, the image); this
# reads what they made from the run manifest and fetches, unpacks and
# builds no kernel. Each step prints a progress line with the time elapsed
# and an estimate of what is left, taken from the last completed run of the
# same plan on this machine ($CACHE_DIR/timings/). The run lands in
# results/<UTC date>-<label>/ (microbench/bench.sh), its analysis in
# results/.../analysis/ (analysis/analyze.py). Nothing earlier is
# overwritten. The exit status is non-zero when any boot or step failed;
# what was measured is analysed anyway, and the report lists what is missing.
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

plan=${PLAN:-default}
# The plan's settings are bench.sh's to read; here only its flavours and
# benchmarks.
flavours=$(load_plan "$plan" && echo "$FLAVOURS")
benches=$(load_plan "$plan" && echo "$BENCHES")
plan_file=$TOPDIR/microbench/plans/$plan.plan

timings=$CACHE_DIR/timings/bench-$plan
mkdir -p "$(dirname "$timings")"
declare -A last=()
if [ -r "$timings" ]; then
	while read -r k v; do last[$k]=$v; done < "$timings"
fi
steps=(benchmarks tracing analysis)
declare -A took=()
t_start=$(date +%s)

step() {
	local i=$1 name=$2 left=0 known=1 j
	for ((j = i - 1; j < ${#steps[@]}; j++)); do
		if [ -n "${last[${steps[$j]}]:-}" ]; then
			left=$((left + ${last[${steps[$j]}]}))
		else
			known=0
		fi
	done
	local est="unknown (first $plan run here)"
	[ $known = 1 ] && est="about $(fmt_secs $left) by the last run"
	log "[$i/${#steps[@]}] $name; elapsed $(fmt_secs $(( $(date +%s) - t_start ))), left: $est"
}

rc=0
step 1 "benchmarks in the guest, plan $plan (${plan_file#"$TOPDIR"/})"
t=$(date +%s)
out=$("$TOPDIR/microbench/bench.sh") || rc=$?
took[benchmarks]=$(( $(date +%s) - t ))
if [ -z "$out" ] || [ ! -d "$out" ]; then
	die "the benchmark step produced no results directory; see the messages above"
fi
[ $rc = 0 ] || log "some boots failed (status $rc); analysing what they measured"
# bench.sh marked the run incomplete; an interruption from here on says so
# there too, and the marker goes once benchmarks and tracing are done.
interrupted() {
	echo "interrupted=SIG$1 during the tracing, $(date -u +%Y-%m-%dT%H:%M:%SZ)" >> "$out/INCOMPLETE"
	log "interrupted by SIG$1: $out is marked incomplete ($out/INCOMPLETE)"
	trap - "$1"
	kill -s "$1" $$
}
trap 'interrupted INT' INT
trap 'interrupted TERM' TERM
step 2 "tracing: flame graph of signal, walk latency of switch at 2048 operations, walks per loop counted at 64"
t=$(date +%s)
if [[ " $flavours " == *" ops "* ]]; then
	# Tracing's own LOOPS and SAMPLES, whatever was given for the benchmarks;
	# the run's own opbench, the binary its boots measured.
	if ! env -u LOOPS -u SAMPLES RESULTS_ROOT="$out/tracing" OPBENCH="$out/bin/opbench" "$TOPDIR/tracing/trace.sh" flame ops signal 2048 baseline 0 >/dev/null ||
		! env -u LOOPS -u SAMPLES RESULTS_ROOT="$out/tracing" OPBENCH="$out/bin/opbench" "$TOPDIR/tracing/trace.sh" bpf ops rseq_ops_lat.bt switch 2048 >/dev/null; then
		log "tracing failed (see $out/tracing/); the benchmarks and their analysis are not affected"
		rc=1
	fi
	# The walks per loop each benchmark declares, counted once per run by
	# bpftrace (rseq_ops_rate.bt) at N=64; the report sets them side by side.
	for b in switch preempt signal; do
		[[ " $benches " == *" $b "* ]] || continue
		if ! env -u LOOPS -u SAMPLES RESULTS_ROOT="$out/tracing" OPBENCH="$out/bin/opbench" "$TOPDIR/tracing/trace.sh" bpf ops rseq_ops_rate.bt "$b" 64 >/dev/null; then
			log "counting the walks of $b failed (see $out/tracing/); the report says it is missing"
			rc=1
		fi
	done
else
	log "no ops flavour in FLAVOURS: nothing to trace"
fi
took[tracing]=$(( $(date +%s) - t ))
# Every record is in: the analysis writes atomically on its own.
trap - INT TERM
rm -f "$out/INCOMPLETE"
step 3 "analysis: statistics, plots, report"
t=$(date +%s)
# --strict: exit 3 when cells failed their correctness gate (analyze.py's
# docstring); the analysis is written all the same.
usable=0
"$PYTHON" "$TOPDIR/analysis/analyze.py" "$out" -q --strict || usable=$?
[ $usable = 0 ] || [ $usable = 3 ] ||
	die "the analysis of $out failed; see the messages above (make report RESULTS=$out to retry)"
took[analysis]=$(( $(date +%s) - t ))

if [ $rc = 0 ]; then
	for s in "${steps[@]}"; do echo "$s ${took[$s]}"; done > "$timings.tmp"
	mv "$timings.tmp" "$timings"
fi
[ $usable = 0 ] || log "WARNING: cell-boots failed their correctness gate: listed at the end of the report, not used"
log "done in $(fmt_secs $(( $(date +%s) - t_start )))"
log "report: $out/analysis/report.txt"
log "plots:  $out/analysis/plots/"
log "traces: $out/tracing/*-trace-*/ (flame.svg, diff.svg, ops/rseq_ops_lat.bt.out)"
log "raw:    $out/boot-*/opbench.json"
exit $rc
