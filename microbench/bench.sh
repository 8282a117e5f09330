#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# bench.sh - boot each flavour in turn and run the microbenchmarks in its guest.
#
# Usage: microbench/bench.sh   (make bench, through microbench/bench-run.sh)
# The run holds INCOMPLETE from its first moment; bench-run.sh removes it.
# Env:   PLAN=quick|default|walker (microbench/plans/<PLAN>.plan), ACCEL=
#        icount|tcg|kvm|auto (default: accel_for measure in common.sh), LABEL (default the plan),
#        RESULTS_ROOT (default results/), SEED (default: drawn, recorded);
#        FLAVOURS, SWEEP, LOOPS, SAMPLES, WARMUP, BENCHES, TYPES, BOOTS,
#        PERF_BENCH override the plan's.
#
# Reads kernels and image from the run manifest ($MANIFEST): it builds no
# kernel and fetches nothing. Each flavour boots BOOTS times; the boots go
# in rounds, each round every flavour once in an order drawn from SEED, so
# that a drift of the host shows up as a difference between boots of one
# flavour, not between flavours. Each boot runs its cells in an order drawn
# from SEED and the boot's number. Every boot gets its own directory under
#   results/<UTC date>-<label>/boot-<n>-<flavour>/
# (vm-images/guest-run: console log, launcher record, kernel provenance,
# commands, kernel problems) with the raw records and the guest's own
# description of itself. An existing directory is never reused.
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"
export BUILDROOT_MAKE=no	# after the build: use the build root, never make it

plan=${PLAN:-default}
load_plan "$plan"
accel=$(accel_for measure)
read -r -a fl <<< "$FLAVOURS"
[ ${#fl[@]} -gt 0 ] || die "no flavours to boot: FLAVOURS is empty"
# The boot is the unit of the statistics: each flavour boots BOOTS times,
# in rounds of every flavour once, each round's order shuffled from SEED.
boots=${BOOTS:-5}
if ! [[ "$boots" =~ ^[0-9]+$ ]] || [ "$boots" -lt 1 ]; then
	die "BOOTS='$boots': want a number of boots per flavour, at least 1 (3 or more for the A/A floor)"
fi
seed=${SEED:-$(( $(date +%s) % 1000000 + 1 ))}
if ! [[ "$seed" =~ ^[0-9]+$ ]] || [ "$seed" -lt 1 ]; then
	die "SEED='$seed': want a positive integer (it orders the boots and the cells, and is recorded)"
fi
RANDOM=$seed
order=()
for ((r = 0; r < boots; r++)); do
	round=("${fl[@]}")
	for ((i = ${#round[@]} - 1; i > 0; i--)); do
		j=$((RANDOM % (i + 1)))
		t=${round[i]}
		round[i]=${round[j]}
		round[j]=$t
	done
	order+=("${round[@]}")
done

# Everything is resolved from the run manifest before the first boot: a
# missing flavour or image stops the run here, not half-way through.
for f in "${fl[@]}"; do kernel_dir "$f" >/dev/null; done
img=$(manifest_get image) || die "no guest image in the manifest ($MANIFEST): make image"
out=$(new_run_dir "${RESULTS_ROOT:-$TOPDIR/results}" "${LABEL:-$plan}")
# Incomplete until bench-run.sh has traced it: neither newest_run nor the
# report takes it unnamed. A SIGINT or SIGTERM says so in the marker.
echo "started=$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$out/INCOMPLETE"
interrupted() {
	echo "interrupted=SIG$1 during the benchmarks, $(date -u +%Y-%m-%dT%H:%M:%SZ)" >> "$out/INCOMPLETE"
	log "interrupted by SIG$1: $out is marked incomplete ($out/INCOMPLETE)"
	trap - "$1"
	kill -s "$1" $$
}
trap 'interrupted INT' INT
trap 'interrupted TERM' TERM
# Against the guest's glibc (2.41: its rseq area is v2). The run keeps
# them in bin/: its tracing runs the same opbench.
guest_programs "$out/bin" opbench tcmodel
# The run's own manifest: what the build steps made, and the benchmark
# binaries every boot of this run ran.
{
	cat "$MANIFEST"
	echo "opbench_sha256=$(sha256sum < "$out/bin/opbench" | cut -c1-16)"
	echo "tcmodel_sha256=$(sha256sum < "$out/bin/tcmodel" | cut -c1-16)"
} > "$out/manifest"
{
	echo "plan=$plan"
	echo "plan_file=${PLAN_FILE#"$TOPDIR"/}"
	echo "accel_requested=$accel"
	echo "boot_order=${order[*]}"
	echo "boots_per_flavour=$boots"
	echo "seed=$seed"
	echo "ops=$SWEEP loops=$LOOPS preempt_loops=$PREEMPT_LOOPS samples=$SAMPLES warmup=$WARMUP"
	echo "perf_bench=${PERF_BENCH:-0}"
	echo "benches=$BENCHES types=$TYPES"
	echo "host_kernel=$(uname -r)"
	echo "host_cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
	echo "host_cpus=$(nproc)"
	echo "qemu=$(qemu-system-x86_64 --version | head -1)"
	echo "image=$img"
	sed 's/^/image_/' "$(dirname "$img")/provenance"
	echo "project_commit=$(git -C "$TOPDIR" rev-parse HEAD 2>/dev/null || echo none)"
	# Uncommitted changes make the commit a lie: say so, with a hash of them.
	if [ -n "$(git -C "$TOPDIR" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
		echo "project_dirty=$(git -C "$TOPDIR" diff HEAD 2>/dev/null | sha256sum | cut -c1-16)"
	fi
	echo "command=$0 $*"
} > "$out/provenance"

# Each walker's loops, counted in its flavour's vmlinux: the static side of
# the slopes this run measures (analysis/designs.py reads them). The walker
# is out of line in our series and the resident variant; the RFC inlines
# its walk into rseq_apply_ops_or_report() where it has one. A flavour
# without a walker (baseline) has no file.
mkdir -p "$out/walker-loops"
for f in "${fl[@]}"; do
	k=$(kernel_dir "$f")
	if [ ! -f "$k/System.map" ] || [ ! -f "$k/vmlinux" ]; then
		log "walker loops of $f not counted: no System.map or vmlinux in $k"
		continue
	fi
	fn=$(awk '$3 == "rseq_ops_apply" || $3 == "rseq_apply_ops" ||
		$3 == "rseq_apply_ops_or_report" { print $3; exit }' "$k/System.map")
	[ -n "$fn" ] || continue
	"$PYTHON" "$TOPDIR/analysis/walker_loops.py" "$k/vmlinux" "$fn" \
		> "$out/walker-loops/$f.txt" 2>&1 ||
		log "walker loops of $f ($fn) not counted: $(tail -1 "$out/walker-loops/$f.txt")"
done

t0=$(date +%s)
n=${#order[@]}
rc=0
for i in "${!order[@]}"; do
	f=${order[$i]}
	d=$out/boot-$((i + 1))-$f
	mkdir -p "$d"
	el=$(( $(date +%s) - t0 ))
	left=$([ "$i" -gt 0 ] && echo "$(fmt_secs $((el * (n - i) / i)))" || echo unknown)
	log "[boot $((i + 1))/$n] $f under $accel; elapsed $(fmt_secs "$el"), about $left left"
	st=0
	"$TOPDIR/vm-images/guest-run" --flavour "$f" --out "$d" --accel "$accel" \
		--timeout "${BOOT_TIMEOUT:-5400}" \
		--copy "$out/bin/opbench" --copy "$out/bin/tcmodel" \
		--copy "$TOPDIR/microbench/guest-bench.sh" \
		-- env SWEEP="$SWEEP" LOOPS="$LOOPS" PREEMPT_LOOPS="$PREEMPT_LOOPS" \
		SAMPLES="$SAMPLES" WARMUP="$WARMUP" \
		BENCHES="$BENCHES" TYPES="$TYPES" SEED=$((seed + i + 1)) \
		PERF_BENCH="${PERF_BENCH:-0}" TCM_LOOPS="${TCM_LOOPS:-}" \
		EXTRA="-f $f ${EXTRA:-}" TCM_EXTRA="-f $f" ./guest-bench.sh > "$d/guest-stdout.txt" || st=$?
	case $st in
	0) ;;
	3) log "[boot $((i + 1))/$n] $f: correctness gates FAILED for some cells; they are recorded as invalid (see $d/opbench.log)" ;;
	*)
		log "[boot $((i + 1))/$n] $f: FAILED with status $st (see $d/console.log, $d/opbench.log)"
		rc=1
		;;
	esac
done
log "done in $(fmt_secs $(( $(date +%s) - t0 ))): $(cat "$out"/boot-*/opbench.json 2>/dev/null | wc -l) records in $out/boot-*/opbench.json"
# The one line on stdout: where the run is (microbench/bench-run.sh reads it).
echo "$out"
exit $rc
