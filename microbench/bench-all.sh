#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# bench-all.sh - make bench: from a fresh machine to a report, in six steps.
#
#   deps -> kernels -> image -> benchmarks -> tracing -> analysis
#
# Usage: microbench/bench-all.sh   (make bench; BENCH_PROFILE=quick|default|walker)
# Each step prints a progress line with the time elapsed and an estimate of
# what is left, taken from the last completed run of the same profile on this
# machine ($CACHE_DIR/timings/). The run lands in results/<UTC date>-<label>/
# (microbench/bench.sh), its analysis in results/.../analysis/ (analysis/
# analyze.py). Nothing earlier is overwritten. The exit status is non-zero
# when any boot or step failed; what was measured is analysed anyway, and
# the report lists what is missing.
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

profile=${BENCH_PROFILE:-default}
case "$profile" in
quick | default) flavours=${FLAVOURS:-baseline ops} ;;
walker) flavours=${FLAVOURS:-baseline ops rfc} ;;
*) die "BENCH_PROFILE='$profile' is unknown; use quick, default or walker" ;;
esac
rfc_series=${RFC_SERIES:-$TOPDIR/../shared/seeds}
export FLAVOURS=$flavours

timings=$CACHE_DIR/timings/bench-$profile
mkdir -p "$(dirname "$timings")"
declare -A last=()
if [ -r "$timings" ]; then
	while read -r k v; do last[$k]=$v; done < "$timings"
fi
steps=(deps kernels image benchmarks tracing analysis)
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
	local est="unknown (first $profile run here)"
	[ $known = 1 ] && est="about $(fmt_secs $left) by the last run"
	log "[$i/${#steps[@]}] $name; elapsed $(fmt_secs $(( $(date +%s) - t_start ))), left: $est"
}

timed() {
	local name=$1 t
	shift
	t=$(date +%s)
	"$@"
	took[$name]=$(( $(date +%s) - t ))
}

build_kernels() {
	if [[ " $flavours " == *" rfc "* ]]; then
		[ -d "$rfc_series" ] || die "flavour rfc needs the RFC's patches: RFC_SERIES=$rfc_series does not exist"
		export SERIES_rfc=$rfc_series
	fi
	# shellcheck disable=SC2086 # one flavour per word
	"$TOPDIR/kernel-patch/scripts/kernels.sh" $flavours
}

rc=0
step 1 "dependencies (Debian packages)"
timed deps "$TOPDIR/scripts/deps.sh"
step 2 "kernels: $flavours (cached builds are reused)"
timed kernels build_kernels
step 3 "guest image (cached by recipe)"
timed image "$TOPDIR/vm-images/build-rootfs.sh" >/dev/null
step 4 "benchmarks in the guest, profile $profile"
t=$(date +%s)
out=$("$TOPDIR/microbench/bench.sh") || rc=$?
took[benchmarks]=$(( $(date +%s) - t ))
if [ -z "$out" ] || [ ! -d "$out" ]; then
	die "the benchmark step produced no results directory; see the messages above"
fi
[ $rc = 0 ] || log "some boots failed (status $rc); analysing what they measured"
step 5 "tracing: flame graph of signal, walk latency of switch, at 2048 operations"
t=$(date +%s)
if [[ " $flavours " == *" ops "* ]]; then
	if ! RESULTS_ROOT=$out/tracing "$TOPDIR/tracing/trace.sh" flame ops signal 2048 baseline 0 >/dev/null ||
		! RESULTS_ROOT=$out/tracing "$TOPDIR/tracing/trace.sh" bpf ops rseq_ops_lat.bt switch 2048 >/dev/null; then
		log "tracing failed (see $out/tracing/); the benchmarks and their analysis are not affected"
		rc=1
	fi
else
	log "no ops flavour in FLAVOURS: nothing to trace"
fi
took[tracing]=$(( $(date +%s) - t ))
step 6 "analysis: statistics, plots, report"
timed analysis /usr/bin/python3 "$TOPDIR/analysis/analyze.py" "$out" -q

if [ $rc = 0 ]; then
	for s in "${steps[@]}"; do echo "$s ${took[$s]}"; done > "$timings.tmp"
	mv "$timings.tmp" "$timings"
fi
invalid=$(/usr/bin/python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["invalid"]))' "$out/analysis/analysis.json" 2>/dev/null || echo "?")
[ "$invalid" = 0 ] || log "WARNING: $invalid cell-boots failed their correctness gate: listed at the end of the report, not used"
log "done in $(fmt_secs $(( $(date +%s) - t_start )))"
log "report: $out/analysis/report.txt"
log "plots:  $out/analysis/plots/"
log "traces: $out/tracing/ (flame.svg, diff.svg, rseq_ops_lat.bt.out)"
log "raw:    $out/boot-*/opbench.json"
exit $rc
