#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# bench.sh - boot each flavour in turn and run the microbenchmarks in its guest.
#
# Usage: microbench/bench.sh            (make bench calls it)
# Env:   BENCH_PROFILE=default|quick|walker, ACCEL=icount|tcg|auto (default
#        icount), FLAVOURS (default "baseline ops"; walker: "baseline ops
#        rfc"), LABEL (default the profile), RESULTS_ROOT (default results/);
#        OPS, LOOPS, SAMPLES, BENCHES override the profile's.
#
# Flavours are interleaved across boots (A B B A) so that a
# drift of the host shows up as a difference between boots of one flavour,
# not between flavours. Every boot gets its own directory under
#   results/<UTC date>-<label>/boot-<n>-<flavour>/
# with the raw records, the console log, the launcher record and the guest's
# own description of itself. An existing directory is never reused.
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

profile=${BENCH_PROFILE:-default}
accel=${ACCEL:-icount}
sweep=0,1,2,4,8,16,32,64,128,256,512,1024,2048
case "$profile" in
quick)
	read -r -a fl <<< "${FLAVOURS:-baseline ops}"
	export OPS=${OPS:-0,1,2048} LOOPS=${LOOPS:-200} SAMPLES=${SAMPLES:-3} WARMUP=1
	export BENCHES=${BENCHES:-syscall switch signal migrate} TYPES=null
	;;
default)
	read -r -a fl <<< "${FLAVOURS:-baseline ops}"
	export OPS=${OPS:-$sweep} LOOPS=${LOOPS:-2000} SAMPLES=${SAMPLES:-10} WARMUP=2
	export BENCHES=${BENCHES:-syscall switch signal migrate} TYPES=null
	;;
walker)
	# Issue 9: our walker against the RFC's, baseline at N=0 beside them.
	read -r -a fl <<< "${FLAVOURS:-baseline ops rfc}"
	export OPS=${OPS:-$sweep} LOOPS=${LOOPS:-500} SAMPLES=${SAMPLES:-5} WARMUP=1
	export BENCHES=${BENCHES:-switch signal} TYPES=null
	;;
*) die "BENCH_PROFILE='$profile' is unknown; use quick, default or walker" ;;
esac
# preempt is left out of the profiles: its figure (lost time per
# preemption) is not yet trustworthy, negative in short windows under
# icount. Run it by name: BENCHES="preempt".
# Every profile boots each flavour twice, in mirrored order (A B B A), so
# that the A/A noise floor exists and a drift of the host shows up between
# boots of one flavour rather than between flavours.
order=("${fl[@]}")
for ((i = ${#fl[@]} - 1; i >= 0; i--)); do order+=("${fl[$i]}"); done

out=${RESULTS_ROOT:-$TOPDIR/results}/$(date -u +%Y%m%dT%H%M%SZ)-${LABEL:-$profile}
[ ! -e "$out" ] || die "$out exists; wait a second and run again"
mkdir -p "$out"
img=$("$TOPDIR/vm-images/build-rootfs.sh")
# Against the guest's glibc (2.41: its rseq area is v2), in the build root.
in_buildroot --bind "$out" make -s -C "$TOPDIR/microbench" O="$out" >/dev/null ||
	die "cannot build microbench/opbench in the build root"
{
	echo "profile=$profile"
	echo "accel_requested=$accel"
	echo "boot_order=${order[*]}"
	echo "ops=$OPS loops=$LOOPS samples=$SAMPLES warmup=$WARMUP"
	echo "benches=$BENCHES types=$TYPES"
	echo "host_kernel=$(uname -r)"
	echo "host_cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
	echo "host_cpus=$(nproc)"
	echo "qemu=$(qemu-system-x86_64 --version | head -1)"
	echo "image=$img"
	sed 's/^/image_/' "$(dirname "$img")/provenance"
	echo "project_commit=$(git -C "$TOPDIR" rev-parse HEAD 2>/dev/null || echo none)"
	echo "command=$0 $*"
} > "$out/provenance"

t0=$(date +%s)
n=${#order[@]}
rc=0
for i in "${!order[@]}"; do
	f=${order[$i]}
	k=$("$TOPDIR/kernel-patch/scripts/kernel-path.sh" "$f")
	[ -f "$k/bzImage" ] || die "flavour '$f' is not built: make kernels FLAVOURS=$f"
	d=$out/boot-$((i + 1))-$f
	mkdir -p "$d"
	cp "$out/opbench" "$TOPDIR/microbench/guest-bench.sh" "$d/"
	cp "$k/provenance" "$d/kernel-provenance"
	el=$(( $(date +%s) - t0 ))
	left=$([ "$i" -gt 0 ] && echo "$(fmt_secs $((el * (n - i) / i)))" || echo unknown)
	log "[boot $((i + 1))/$n] $f under $accel; elapsed $(fmt_secs "$el"), about $left left"
	st=0
	"$TOPDIR/vm-images/opbench-vm" --kernel "$k/bzImage" --image "$img" \
		--share "$d" --accel "$accel" --timeout "${BOOT_TIMEOUT:-5400}" \
		--console-log "$d/console.log" --record "$d/vm.json" \
		-- env OPS="$OPS" LOOPS="$LOOPS" SAMPLES="$SAMPLES" WARMUP="$WARMUP" \
		BENCHES="$BENCHES" TYPES="$TYPES" EXTRA="-f $f ${EXTRA:-}" ./guest-bench.sh > "$d/guest-stdout.txt" || st=$?
	case $st in
	0) ;;
	3) log "[boot $((i + 1))/$n] $f: correctness gates FAILED for some cells; they are recorded as invalid (see $d/opbench.log)" ;;
	*)
		log "[boot $((i + 1))/$n] $f: FAILED with status $st (see $d/console.log, $d/opbench.log)"
		rc=1
		;;
	esac
	rm -f "$d/opbench" "$d/guest-bench.sh"
done
cat "$out"/boot-*/opbench.json > "$out/records.json" 2>/dev/null || true
log "done in $(fmt_secs $(( $(date +%s) - t0 ))): $(wc -l < "$out/records.json") records in $out/records.json"
# The one line on stdout: where the run is (microbench/bench-all.sh reads it).
echo "$out"
exit $rc
