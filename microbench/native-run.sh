#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# native-run.sh - run a benchmark plan on the kernel this machine is
# running, without QEMU: the payload a guest boot runs (guest-bench.sh,
# opbench, tcmodel), REPS times, one directory per repetition, into the
# run layout analysis/analyze.py reads.
#
# Usage: native-run.sh OUT
#   OUT     the run directory: made here, or empty and made by the caller
#           (make bench RUNNER=native); an earlier run is never reused.
# Env:    SWEEP LOOPS PREEMPT_LOOPS SAMPLES WARMUP BENCHES TYPES PERF_BENCH
#         (the plan, as make bench passes them or the kit's plan.env sets
#         them; SWEEP, BENCHES and TYPES are recorded, the cells
#         themselves are PLAN_CELLS, which microbench/plan.py wrote from
#         them); REPS (repetitions per label, default 5), SEED (default:
#         drawn, recorded), AA=1 (A/A: every repetition of the running
#         kernel is labelled, in turn, "<label>" or "<label>2", the
#         analysis compares the two), CPU (the measured CPU; default the
#         last one allowed), REP_TIMEOUT (seconds, default 3600), BIN (the
#         directory holding opbench, tcmodel, guest-bench.sh,
#         host-state.sh and plan.cells, and run.json where the plan made
#         one; default this script's),
#         PLAN_CELLS (another file of cells than BIN/plan.cells),
#         PLAN_RUN_JSON (another run.json than BIN/run.json),
#         PMU_PASS (count, the default: after each repetition's timed
#         pass, a counting pass of the same cells with the hardware
#         counters, when opbench finds a PMU; software: software events in
#         their place, a test; off: none), PMU_SAMPLES (the counting pass's
#         samples a cell, default 2).
#
# The kernel: one that this project built and packaged (make deb) carries
# /boot/opbench-provenance-<release> (BOOT_DIR: another directory than
# /boot, for tests); its label is its flavour and its
# provenance, series hash included, goes into every repetition. Any other
# kernel is an unpatched reference: labelled "native", named by uname -r.
# Cells it cannot run (operations on a kernel without them) come back as
# "unsupported" records, never as failures.
#
# Nothing here changes the machine: no CPU is taken offline, nothing is
# installed or loaded into the kernel (no tracing). What the machine's
# state is (governor, turbo, SMT, isolated CPUs, ...: host-state.sh) is
# recorded in the run and in every repetition.
#
# Exit status: 0; 3 when only correctness gates failed; 1 when a
# repetition failed or timed out; 2 on bad input. POSIX sh with coreutils,
# awk, sed, grep and gzip: the kit (make kit) runs it on any x86-64 Linux
# (busybox included) with nothing else installed.
set -u

die() {
	echo "native-run: $*" >&2
	exit 2
}
log() {
	echo "native-run: $(date -u +%H:%M:%S) $*" >&2
}

[ $# -eq 1 ] || die "usage: native-run.sh OUT (a new or empty run directory)"
out=$1
bin=${BIN:-$(dirname "$0")}
for p in opbench tcmodel guest-bench.sh host-state.sh; do
	[ -r "$bin/$p" ] || die "$bin/$p is missing: BIN must name the directory of the benchmark programs (make kit puts them in the kit's bin/)"
done
cells=${PLAN_CELLS:-$bin/plan.cells}
[ -r "$cells" ] || die "$cells is missing: the plan's cells, as microbench/plan.py cells PLAN writes them (make kit puts them in the kit's bin/)"
bin=$(cd "$bin" && pwd)	# each repetition runs in its own directory
: "${SWEEP:?SWEEP is unset: set the plan (the kit: . ./plan.env)}"
: "${LOOPS:?} ${SAMPLES:?} ${WARMUP:?} ${BENCHES:?}"
reps=${REPS:-5}
case $reps in '' | *[!0-9]*) die "REPS='$reps': want a number of repetitions, at least 1" ;; esac
[ "$reps" -ge 1 ] || die "REPS=0: want at least 1 repetition (3 or more for the A/A floor)"
seed=${SEED:-$(( $(date +%s) % 1000000 + 1 ))}
case $seed in '' | *[!0-9]* | 0) die "SEED='$seed': want a positive integer (it orders the repetitions and the cells, and is recorded)" ;; esac
case ${AA:-0} in 0 | 1) ;; *) die "AA='$AA': want 1 (A/A: the running kernel against itself) or 0" ;; esac
case ${CPU:-} in '' | *[!0-9]*) [ -z "${CPU:-}" ] || die "CPU='$CPU': want a CPU number" ;; esac
tmo=${REP_TIMEOUT:-3600}
pmu_pass=${PMU_PASS:-count}
case $pmu_pass in off | count | software) ;; *) die "PMU_PASS='$pmu_pass': want count (the default), software or off" ;; esac
pmu_samples=${PMU_SAMPLES:-2}
pmu_why=
case $pmu_samples in '' | *[!0-9]* | 0) die "PMU_SAMPLES='$pmu_samples': want a positive number of samples" ;; esac
[ "$(id -u)" = 0 ] || log "not root: the preempt benchmark's SCHED_FIFO waker and the TSC lines of dmesg may be refused"

for x in "$out"/rep-* "$out"/boot-* "$out"/boots.jsonl; do
	[ -e "$x" ] && die "$out already holds a run ($x): name a new directory (nothing is overwritten)"
done
mkdir -p "$out" || die "cannot make $out"
out=$(cd "$out" && pwd)

# The kernel and its label.
rel=$(uname -r)
kprov=${BOOT_DIR:-/boot}/opbench-provenance-$rel
if [ -r "$kprov" ]; then
	label=$(sed -n 's/^flavour=//p' "$kprov")
	[ -n "$label" ] || die "$kprov names no flavour: reinstall the package make deb built"
	what="flavour $label built by rseq-opbench ($(sed -n 's/^series_hash=//p' "$kprov"))"
else
	kprov=
	label=native
	what="an unpatched reference (not built by rseq-opbench)"
fi
labels=$label
[ "${AA:-0}" = 1 ] && labels="$label ${label}2"
log "kernel $rel: $what; labels: $labels; $reps repetition(s) each, seed $seed"

# The repetitions in rounds, each round every label once in an order drawn
# from the seed, so that a drift of the machine shows up between
# repetitions of one label, not between labels.
order=$(awk -v s="$seed" -v n="$reps" -v l="$labels" 'BEGIN {
	srand(s); k = split(l, a, " ")
	for (r = 0; r < n; r++) {
		for (i = k; i > 1; i--) { j = int(rand() * i) + 1; t = a[i]; a[i] = a[j]; a[j] = t }
		for (i = 1; i <= k; i++) printf "%s ", a[i]
	}
}')

# The counters are read in a pass of their own, after each repetition's
# timed one, which runs without them (opbench's default): only where
# opbench can open them.
if [ "$pmu_pass" != off ]; then
	probe=$(OPBENCH_PMU=$pmu_pass "$bin/opbench" -q -n 0 -l 1 -s 1 -w 0 syscall 2>/dev/null |
		grep '"kind":"pmu"')
	case $probe in
	*'"available":true'*) log "counters: a counting pass ($pmu_pass, $pmu_samples sample(s) a cell) after each repetition" ;;
	*)
		pmu_why=$(echo "$probe" | sed -n 's/.*"why":"\([^"]*\)".*/\1/p')
		log "counters: no counting pass: ${pmu_why:-opbench wrote no pmu record}"
		pmu_pass=off
		;;
	esac
fi

sh "$bin/host-state.sh" > "$out/host-state" 2>/dev/null
{
	echo "runner=native"
	echo "reference=$label"
	echo "aa=${AA:-0}"
	echo "boot_order=$order"
	echo "boots_per_flavour=$reps"
	echo "seed=$seed"
	echo "ops=$SWEEP loops=$LOOPS preempt_loops=${PREEMPT_LOOPS:-$LOOPS} samples=$SAMPLES warmup=$WARMUP"
	echo "perf_bench=${PERF_BENCH:-0}"
	echo "pmu_pass=$pmu_pass pmu_samples=$pmu_samples"
	[ -z "${pmu_why:-}" ] || echo "pmu_probe=$pmu_why"
	echo "benches=$BENCHES types=${TYPES:-}"
	# What ran: the cells (SWEEP, BENCHES and TYPES say what they were
	# planned from).
	echo "cells_sha256=$(sha256sum < "$cells" | cut -c1-16)"
	echo "cells_count=$(( $(wc -l < "$cells") ))"
	echo "host_kernel=$rel"
	echo "host_cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
	echo "host_cpus=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo '?')"
	cat "$out/host-state"
	echo "opbench_sha256=$(sha256sum < "$bin/opbench" | cut -c1-16)"
	echo "tcmodel_sha256=$(sha256sum < "$bin/tcmodel" | cut -c1-16)"
} >> "$out/provenance"

# What the kernel is, for every repetition: the package's provenance, or
# what the running system says of itself.
kernel_provenance() {
	if [ -n "$kprov" ]; then
		cat "$kprov"
		return
	fi
	cfg=none
	if [ -r /proc/config.gz ]; then
		cfg=$(gzip -dc /proc/config.gz | sha256sum | cut -c1-16)
	elif [ -r "/boot/config-$rel" ]; then
		cfg=$(sha256sum < "/boot/config-$rel" | cut -c1-16)
	fi
	echo "flavour=$label"
	echo "kernel_release=$rel"
	echo "kernel_version=$(uname -v)"
	echo "source_package=the running kernel"
	echo "source_version=$rel"
	echo "series=none"
	echo "series_hash=none"
	echo "series_patches=0"
	echo "config_hash=$cfg"
	case $(uname -v) in *PREEMPT_RT*) echo "preempt=rt" ;; *PREEMPT_DYNAMIC*) echo "preempt=dynamic" ;; *PREEMPT*) echo "preempt=full" ;; *) echo "preempt=other" ;; esac
}

boot_id=$(tr -dc '0-9a-f-' < /proc/sys/kernel/random/boot_id 2>/dev/null) || boot_id=
[ -n "$boot_id" ] || log "no /proc/sys/kernel/random/boot_id: make merge will take this run as one boot"

# One kernel for every repetition: its provenance is read once.
kernel_provenance > "$out/kernel-provenance"
# The run's index (microbench/plan.py's form, which the analysis reads):
# the plan's run.json, and a line per repetition in boots.jsonl, written
# as its directory is made, so that a run cut short names what it ran.
runjson=${PLAN_RUN_JSON:-$bin/run.json}
[ ! -r "$runjson" ] || cp "$runjson" "$out/run.json"
host=$(uname -n)
nlabels=$(echo "$labels" | wc -w)
rc=0
i=0
n=$(echo "$order" | wc -w)
cpuopt=${CPU:+-c $CPU}
# payload DIR PMU SAMPLES WARMUP PERF_BENCH: the guest's payload as it is,
# run here in DIR on DIR/cells, with OPBENCH_PMU=PMU (off for the timed
# pass, the counting pass's mode for it), for repetition $i of label $f:
# NATIVE=1 keeps every CPU online; the binaries are the run's own. Its
# status, timeout's when REP_TIMEOUT passed.
payload() {
	(cd "$1" && exec env NATIVE=1 OPBENCH_PMU="$2" OPBENCH="$bin/opbench" TCMODEL="$bin/tcmodel" \
		CELLS=cells LOOPS="$LOOPS" PREEMPT_LOOPS="${PREEMPT_LOOPS:-}" \
		SAMPLES="$3" WARMUP="$4" SEED=$((seed + i)) PERF_BENCH="$5" TCM_LOOPS="${TCM_LOOPS:-}" \
		CPUOPT="$cpuopt" EXTRA="-f $f $cpuopt ${EXTRA:-}" TCM_EXTRA="-f $f $cpuopt" \
		timeout -k 10 "$tmo" sh "$bin/guest-bench.sh" > "$1/guest-stdout.txt")
}
for f in $order; do
	i=$((i + 1))
	d=$out/rep-$i-$f
	# Never into an existing directory: another runner's, or an earlier run.
	mkdir "$d" || die "cannot make $d (another run in $out?)"
	cp "$out/kernel-provenance" "$out/host-state" "$d/"
	# The boot it ran in (the kernel's boot_id, new at every boot): make
	# merge takes a boot, not a repetition, as the unit it compares.
	printf '{"runner": "native", "kernel_release": "%s", "label": "%s", "reference": %s, "started": "%s", "boot_id": "%s", "timeout_s": %s}\n' \
		"$rel" "$f" "$([ "$f" = "$label" ] && echo true || echo false)" \
		"$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$boot_id" "$tmo" > "$d/native.json"
	log "[repetition $i/$n] $f"
	printf '{"boot": %d, "round": %d, "host": "%s", "target": "native", "flavour": "%s", "kconfig": "native", "seed": %d, "dir": "rep-%d-%s", "cells": "rep-%d-%s/cells"}\n' \
		"$i" $(( (i - 1) / nlabels )) "$host" "$f" $((seed + i)) "$i" "$f" "$i" "$f" \
		>> "$out/boots.jsonl"
	# The plan's cells (microbench/plan.py) in an order drawn from the
	# repetition's seed, every type of one word together.
	awk -v s=$((seed + i)) 'BEGIN { srand(s) }
		$1 != w { w = $1; k = rand() }
		{ printf "%.9f %06d %s\n", k, NR, $0 }' "$cells" |
		sort -k1,1n -k2,2n | cut -d' ' -f3- > "$d/cells"
	st=0
	payload "$d" off "$SAMPLES" "$WARMUP" "${PERF_BENCH:-0}" || st=$?
	case $st in
	0) ;;
	3) log "[repetition $i/$n] $f: correctness gates FAILED for some cells; recorded as invalid (see $d/opbench.log)" ;;
	124 | 137 | 143)	# timeout's status: coreutils 124 (137 after -k), busybox 143
		log "[repetition $i/$n] $f: TIMED OUT after $tmo s (REP_TIMEOUT); see $d/opbench.log"
		echo "timed out after $tmo s" > "$d/TIMEOUT"
		rc=1
		;;
	*)
		log "[repetition $i/$n] $f: FAILED with status $st (see $d/opbench.log)"
		rc=1
		;;
	esac
	[ $st = 3 ] && [ $rc = 0 ] && rc=3
	# The counting pass: the same cells (not the TCMalloc model's) in the
	# same order, with the counters, into pmu/; read for the counters
	# alone (analysis/pmu.py), never for time. Its failure is logged, and
	# leaves the timed pass as it was.
	if [ "$pmu_pass" != off ] && [ $st -le 3 ]; then
		mkdir "$d/pmu" && grep -v '^tcmalloc ' "$d/cells" > "$d/pmu/cells"
		pst=0
		payload "$d/pmu" "$pmu_pass" "$pmu_samples" 1 0 || pst=$?
		[ $pst -le 3 ] || log "[repetition $i/$n] $f: the counting pass FAILED with status $pst (see $d/pmu/opbench.log); the timed pass stands"
	fi
done
log "done: $(cat "$out"/rep-*/opbench.json 2>/dev/null | wc -l) records in $out/rep-*/opbench.json"
exit $rc
