#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# bench-run.sh - the stages of `make bench` after the build, in three steps:
#
#   benchmarks -> tracing -> analysis
#
# Usage: microbench/bench-run.sh   (make bench; PLAN=quick|default|walker)
# Env:   RUNNER=qemu (default: boot the plan's kernels) or native (the
#        kernel this machine runs, with microbench/native-run.sh: one
#        repetition in place of a boot, no tracing; AA=1 labels its
#        repetitions as two flavours for an A/A comparison, CPU= pins),
#        PLAN (microbench/plans/<PLAN>.plan), ACCEL=icount|tcg|kvm|auto
#        (default: accel_for measure in common.sh), LABEL (default the
#        plan), RESULTS_ROOT (default results/), SEED (default: drawn,
#        recorded), BOOT_TIMEOUT; FLAVOURS, SWEEP, LOOPS, PREEMPT_LOOPS,
#        SAMPLES, WARMUP, BENCHES, TYPES, BOOTS, PERF_BENCH override the
#        plan's.
#
# The Makefile builds first (deps, the plan's kernels, the image); this
# reads what they made from the run manifest ($MANIFEST) and fetches,
# unpacks and builds no kernel.
#
# 1. Benchmarks: each flavour boots BOOTS times; the boots go in rounds,
#    each round every flavour once in an order drawn from SEED, so that a
#    drift of the host shows up as a difference between boots of one
#    flavour, not between flavours. microbench/plan.py draws them and
#    writes the run's index: run.json (the plan resolved), boots.jsonl
#    (each boot's number, round, flavour, seed, target and cells) and
#    plan/boot-<n>.cells. Each boot runs its cells in an order drawn from
#    SEED and the boot's number, in a directory of its own
#      results/<UTC date>-<label>/boot-<n>-<flavour>/
#    (vm-images/guest-run: console log, launcher record, kernel
#    provenance, commands, kernel problems) with the raw records and the
#    guest's own description of itself. The binaries the boots ran stay in
#    the run's bin/.
# 2. Tracing, with the run's own opbench, into results/<run>/tracing/.
# 3. The analysis (analysis/analyze.py) into results/<run>/analysis/.
#
# The run holds INCOMPLETE from its first moment until its records are all
# in (after step 2); an interruption says there when and in which step.
# Each step prints a progress line with the time elapsed and an estimate
# of what is left, from the last completed run of the same plan on this
# machine ($CACHE_DIR/timings/). Nothing earlier is overwritten: an
# existing directory is never reused. The exit status is non-zero when any
# boot or step failed; what was measured is analysed anyway, and the
# report lists what is missing.
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"
export BUILDROOT_MAKE=no	# after the build: use the build root, never make it

plan=${PLAN:-default}
load_plan "$plan"
runner=${RUNNER:-qemu}
case $runner in
qemu)
	accel=$(accel_for measure)
	read -r -a fl <<< "$FLAVOURS"
	[ ${#fl[@]} -gt 0 ] || die "no flavours to boot: FLAVOURS is empty"
	;;
native)
	# The running kernel is the one flavour (native-run.sh names it).
	accel=native
	fl=()
	;;
*) die "RUNNER='$runner' is unknown: qemu (boot the plan's kernels) or native (the kernel this machine runs)" ;;
esac
# The boot is the unit of the statistics: each flavour boots BOOTS times,
# in rounds of every flavour once, each round's order drawn from SEED by
# microbench/plan.py, which writes the run's index (run.json, boots.jsonl)
# once the run's directory is made.
boots=${BOOTS:-5}
# The fast path's bound (the ops series' RSEQ_OP_IRQS_OFF_MAX): the N at
# which the tracing counts walks and profiles instructions.
bound=$("$PYTHON" "$TOPDIR/microbench/plan.py" fact irqs_off_max) ||
	die "the fast path's bound is not known: $bound"
# The list limit (rseq-op-abi.h): the N of the flame graph and of the
# walk latency.
limit=$("$PYTHON" "$TOPDIR/microbench/plan.py" fact list_limit) ||
	die "the list limit is not known: $limit"
seed=${SEED:-$(( $(date +%s) % 1000000 + 1 ))}
if ! [[ "$seed" =~ ^[0-9]+$ ]] || [ "$seed" -lt 1 ]; then
	die "SEED='$seed': want a positive integer (it orders the boots and the cells, and is recorded)"
fi

# Everything is resolved from the run manifest before the first boot: a
# missing flavour or image stops the run here, not half-way through.
for f in "${fl[@]}"; do kernel_dir "$f" >/dev/null; done
if [ "$runner" = qemu ]; then
	img=$(manifest_get image) || die "no guest image in the manifest ($MANIFEST): make image"
fi

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

label=${LABEL:-$plan}
[ "$runner" = qemu ] || label=$label-$runner
out=$(new_run_dir "${RESULTS_ROOT:-$TOPDIR/results}" "$label")
# Incomplete until its records are all in: neither newest_run nor the
# report takes it unnamed. A SIGINT or SIGTERM says so in the marker, with
# the step it stopped.
echo "started=$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$out/INCOMPLETE"
# artefact KIND PATH [KEY=VALUE...]: one line of the run's artefacts.jsonl,
# what a stage left for the analysis beside the boots: the loader
# (analysis/opbench_io.py) reads what these lines name, and nothing else.
artefact() {
	local kind=$1 path=${2#"$out"/} kv="" a
	shift 2
	for a in "$@"; do kv+=", \"${a%%=*}\": \"${a#*=}\""; done
	printf '{"kind": "%s", "path": "%s"%s}\n' "$kind" "$path" "$kv" >> "$out/artefacts.jsonl"
}
stage=benchmarks
# The long children (boots, tracing) run in the background and are waited
# for: bash runs a trap only once its foreground child has ended, and a
# SIGTERM to this script alone (make passes its own on) must stop the run
# at once, its guest included, not after the boot.
child=
waited() {
	local st=0
	"$@" &
	child=$!
	wait "$child" || st=$?
	child=
	return "$st"
}
tree_pids() {	# a process and its descendants, deepest first
	local p
	for p in $(pgrep -P "$1"); do tree_pids "$p"; done
	echo "$1"
}
alive() {	# any of these processes still running (a zombie is gone)
	local p
	for p in "$@"; do
		ps -o stat= -p "$p" 2>/dev/null | grep -qv '^Z' && return 0
	done
	return 1
}
# SIGTERM a process tree and wait until it is gone (QEMU drops its
# snapshot overlay on the way out), at most KILL_WAIT seconds, then
# SIGKILL what is left: no guest outlives the run that started it.
kill_tree() {
	local pids i
	pids=$(tree_pids "$1")
	# shellcheck disable=SC2086
	kill -TERM $pids 2>/dev/null || true
	for ((i = 0; i < ${KILL_WAIT:-30} * 10; i++)); do
		# shellcheck disable=SC2086
		alive $pids || return 0
		sleep 0.1
	done
	log "still running ${KILL_WAIT:-30} s after SIGTERM, killed: $pids"
	# shellcheck disable=SC2086
	kill -KILL $pids 2>/dev/null || true
}
interrupted() {
	[ -z "$child" ] || kill_tree "$child"
	echo "interrupted=SIG$1 during the $stage, $(date -u +%Y-%m-%dT%H:%M:%SZ)" >> "$out/INCOMPLETE"
	log "interrupted by SIG$1: $out is marked incomplete ($out/INCOMPLETE)"
	trap - "$1"
	kill -s "$1" $$
}
trap 'interrupted INT' INT
trap 'interrupted TERM' TERM

rc=0
if [ "$runner" = qemu ]; then
	step 1 "benchmarks in the guest, plan $plan (${PLAN_FILE#"$TOPDIR"/})"
else
	step 1 "benchmarks on the running kernel ($(uname -r)), plan $plan (${PLAN_FILE#"$TOPDIR"/})"
fi
t=$(date +%s)
# Against the guest's glibc (2.41: its rseq area is v2). The run keeps
# them in bin/: its tracing runs the same opbench. Natively they are
# static (the host's glibc may be older than the build root's), with the
# runner's scripts beside them: bin/ is a kit (make kit).
if [ "$runner" = qemu ]; then
	guest_programs "$out/bin" opbench tcmodel
	# The BPF design's loader, for the boots of the bpf flavour.
	if [[ " ${fl[*]} " == *" bpf "* ]]; then
		bpf_programs "$out/bin"
	fi
else
	STATIC=1 guest_programs "$out/bin" opbench tcmodel
	cp "$TOPDIR/microbench/native-run.sh" "$TOPDIR/microbench/guest-bench.sh" \
		"$TOPDIR/scripts/host-state.sh" "$out/bin/"
fi
# opbench's own table (what each benchmark walks, whether it runs alone,
# whether the tracing counts its walks), as the run's binary says: the
# guest's runs in the build root, which has the guest's glibc.
if [ "$runner" = qemu ]; then
	in_buildroot --bind "$out" "$out/bin/opbench" --list --json > "$out/benches.json" ||
		die "opbench --list --json failed in the build root"
else
	"$out/bin/opbench" --list --json > "$out/bin/benches.json" ||
		die "opbench --list --json failed"
	# The plan's cells, in its order: native-run.sh draws each
	# repetition's order from its seed.
	"$PYTHON" "$TOPDIR/microbench/plan.py" cells "$plan" --benches "$out/bin/benches.json" \
		--run-json "$out/bin/run.json" > "$out/bin/plan.cells" ||
		die "planning the cells of plan $plan failed"
fi
# The run's index: one line per boot, "<n> <flavour> <seed> <cells file>".
order=() bseed=() bcells=()
if [ "$runner" = qemu ]; then
	idx=$(FLAVOURS="${fl[*]}" BOOTS=$boots "$PYTHON" "$TOPDIR/microbench/plan.py" \
		index "$plan" "$out" --benches "$out/benches.json" --seed "$seed" \
		--runner qemu --accel "$accel" 2>&1) ||
		die "planning the run in $out failed: $idx"
	while read -r _ f s c; do
		order+=("$f")
		bseed+=("$s")
		bcells+=("$c")
	done <<< "$idx"
fi
# The run's own manifest: what the build steps made, and the benchmark
# binaries every boot of this run ran.
{
	cat "$MANIFEST" 2>/dev/null || true
	echo "opbench_sha256=$(sha256sum < "$out/bin/opbench" | cut -c1-16)"
	echo "tcmodel_sha256=$(sha256sum < "$out/bin/tcmodel" | cut -c1-16)"
	if [ -f "$out/bin/rseq-bpf-ops" ]; then
		echo "rseq_bpf_ops_sha256=$(sha256sum < "$out/bin/rseq-bpf-ops" | cut -c1-16)"
	fi
} > "$out/manifest"
{
	echo "plan=$plan"
	echo "plan_file=${PLAN_FILE#"$TOPDIR"/}"
	echo "project_commit=$(git -C "$TOPDIR" rev-parse HEAD 2>/dev/null || echo none)"
	# Uncommitted changes make the commit a lie: say so, with a hash of them.
	if [ -n "$(git -C "$TOPDIR" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
		echo "project_dirty=$(git -C "$TOPDIR" diff HEAD 2>/dev/null | sha256sum | cut -c1-16)"
	fi
	echo "command=$0 $*"
	# Natively, native-run.sh adds the rest (the order, the host).
	if [ "$runner" = qemu ]; then
		echo "runner=qemu"
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
		# The host's state moves time under KVM (and emulated time under
		# TCG); under icount it moves nothing, and is recorded all the same.
		sh "$TOPDIR/scripts/host-state.sh"
		echo "qemu=$(qemu-system-x86_64 --version | head -1)"
		echo "image=$img"
		sed 's/^/image_/' "$(dirname "$img")/provenance"
	fi
} > "$out/provenance"
if [ "$runner" = native ]; then
	st=0
	waited env BIN="$out/bin" REPS="$boots" SEED="$seed" \
		"$out/bin/native-run.sh" "$out" || st=$?
	case $st in
	0) ;;
	3) log "correctness gates FAILED for some cells; they are recorded as invalid (see $out/rep-*/opbench.log)" ;;
	*) rc=1 ;;
	esac
fi

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
	if "$PYTHON" "$TOPDIR/analysis/walker_loops.py" "$k/vmlinux" "$fn" \
		> "$out/walker-loops/$f.txt" 2>&1; then
		artefact walker-loops "$out/walker-loops/$f.txt" flavour="$f" function="$fn"
	else
		log "walker loops of $f ($fn) not counted: $(tail -1 "$out/walker-loops/$f.txt")"
	fi
done

# What each flavour adds to the unpatched kernel: the bytes of its vmlinux
# (the kernel's scripts/bloat-o-meter) and the lines of its tree (against
# the pristine base), for the designs table (analysis/kernel_size.py).
bfl=
for f in "${fl[@]}"; do
	[ "${f%@*}" != baseline ] || bfl=$f	# baseline, or baseline@TOOLCHAIN
done
if [ -n "$bfl" ]; then
	mkdir -p "$out/kernel-size"
	srcdir=$(manifest_source source_dir)
	base=$(base_tag "$(manifest_source source_version)")
	bk=$(kernel_dir "$bfl")
	for f in "${fl[@]}"; do
		[ "$f" != "$bfl" ] || continue
		k=$(kernel_dir "$f")
		if "$PYTHON" "$TOPDIR/analysis/kernel_size.py" "$srcdir/scripts/bloat-o-meter" \
			"$bk/vmlinux" "$k/vmlinux" "$(kernel_tree "$f")" "$base" "$bfl" \
			> "$out/kernel-size/$f.json" 2> "$out/kernel-size/$f.log"; then
			artefact kernel-size "$out/kernel-size/$f.json" flavour="$f"
		else
			log "what $f adds to the kernel not counted: $(tail -1 "$out/kernel-size/$f.log")"
		fi
	done
fi

t0=$(date +%s)
n=${#order[@]}
for i in "${!order[@]}"; do
	f=${order[$i]}
	d=$out/boot-$((i + 1))-$f
	mkdir -p "$d"
	el=$(( $(date +%s) - t0 ))
	left=$([ "$i" -gt 0 ] && echo "$(fmt_secs $((el * (n - i) / i)))" || echo unknown)
	log "[boot $((i + 1))/$n] $f under $accel; elapsed $(fmt_secs "$el"), about $left left"
	st=0
	bpfcopy=()
	[ "$f" != bpf ] || bpfcopy=(--copy "$out/bin/rseq-bpf-ops")
	waited "$TOPDIR/vm-images/guest-run" --flavour "$f" --out "$d" --accel "$accel" \
		--timeout "${BOOT_TIMEOUT:-5400}" \
		--copy "$out/bin/opbench" --copy "$out/bin/tcmodel" "${bpfcopy[@]}" \
		--copy "$TOPDIR/microbench/guest-bench.sh" --copy "${bcells[$i]}" \
		-- env CELLS="$(basename "${bcells[$i]}")" LOOPS="$LOOPS" PREEMPT_LOOPS="$PREEMPT_LOOPS" \
		SAMPLES="$SAMPLES" WARMUP="$WARMUP" SEED="${bseed[$i]}" \
		PERF_BENCH="${PERF_BENCH:-0}" TCM_LOOPS="${TCM_LOOPS:-}" VIA="$(flavour_get "$f" VIA)" \
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
[ "$runner" = native ] ||
	log "boots done in $(fmt_secs $(( $(date +%s) - t0 ))): $(cat "$out"/boot-*/opbench.json 2>/dev/null | wc -l) records in $out/boot-*/opbench.json"
took[benchmarks]=$(( $(date +%s) - t ))
[ $rc = 0 ] || log "some boots failed; analysing what they measured"
# The BPF design's requirements, measured on its kernel in a boot of their
# own (capabilities, kernel log, verifier, unprivileged use, faulting
# destinations): the report's "Why not BPF?" reads bpf/*/facts.txt.
if [ "$runner" = qemu ] && [[ " ${fl[*]} " == *" bpf "* ]]; then
	log "the BPF design's requirements, measured in a boot of bpf (microbench/bpf/bpf-run.sh facts)"
	if waited env RESULTS_ROOT="$out/bpf" "$TOPDIR/microbench/bpf/bpf-run.sh" facts bpf \
		> "$out/bpf-facts.log" 2>&1; then
		# bpf-run.sh prints its directory last.
		facts=$(tail -1 "$out/bpf-facts.log")/facts.txt
		if [ -f "$facts" ]; then
			artefact bpf-facts "$facts" flavour=bpf
		else
			log "the BPF design's requirements left no $facts; the report says they are missing"
		fi
	else
		log "measuring the BPF design's requirements failed (see $out/bpf-facts.log); the benchmarks are not affected"
		rc=1
	fi
fi
stage=tracing
if [ "$runner" = qemu ]; then
	step 2 "tracing: flame graph of signal, walk latency of switch at $limit operations, walks per loop counted at $bound"
else
	step 2 "tracing: none natively"
fi
# trace.sh with its own LOOPS and SAMPLES (none of the plan's settings)
# and the run's own opbench, the binary its boots measured.
# The directory it made (trace.sh prints it last) is in $traced after.
traced=
trace() {
	local st=0
	traced=
	# shellcheck disable=SC2046 # one -u per name
	waited env $(printf -- '-u %s ' $PLAN_VARS) RESULTS_ROOT="$out/tracing" \
		OPBENCH="$out/bin/opbench" "$TOPDIR/tracing/trace.sh" "$@" > "$out/tracing.last" || st=$?
	[ "$st" != 0 ] || traced=$(tail -1 "$out/tracing.last")
	rm -f "$out/tracing.last"
	return "$st"
}
t=$(date +%s)
if [ "$runner" = native ]; then
	log "no tracing natively: bpftrace and perf would load programs into this machine's kernel"
elif [[ " $FLAVOURS " == *" ops "* ]]; then
	if ! trace flame ops signal "$limit" baseline 0 ||
		! trace bpf ops rseq_ops_lat.bt switch "$limit"; then
		log "tracing failed (see $out/tracing/); the benchmarks and their analysis are not affected"
		rc=1
	fi
	# The walks per loop each benchmark declares, counted once per run by
	# bpftrace (rseq_ops_rate.bt) at N = the bound; the report sets them
	# side by side.
	# The plan's benchmarks that opbench's table marks traced (run.json).
	traced_benches=$("$PYTHON" -c 'import json, sys; print(" ".join(json.load(open(sys.argv[1]))["traced"]))' "$out/run.json")
	for b in $traced_benches; do
		if trace bpf ops rseq_ops_rate.bt "$b" "$bound"; then
			artefact walk-count "$traced" bench="$b" nr_ops="$bound" flavour=ops
		else
			log "counting the walks of $b failed (see $out/tracing/); the report says it is missing"
			rc=1
		fi
	done
else
	log "no ops flavour in FLAVOURS: nothing to trace"
fi
# The BPF design's walk, every instruction of it beside ops' (the report's
# "Why not BPF?" reads its table.txt): the QEMU plugin needs the plugin
# header (make plugin-header; make bench-walker makes it).
if [ "$runner" = qemu ] && [[ " ${fl[*]} " == *" bpf "* ]]; then
	if qh=$(manifest_get qemu_plugin_h 2>/dev/null) && [ -f "$qh/qemu-plugin.h" ]; then
		if trace insn bpf switch "$bound" ops "$bound"; then
			artefact insn-profile "$traced" bench=switch nr_ops="$bound" flavours="bpf ops"
		else
			log "the instruction profile of bpf failed (see $out/tracing/); the report says it is missing"
			rc=1
		fi
	else
		log "no instruction profile of bpf: no qemu-plugin.h in the manifest (make plugin-header)"
	fi
fi
# The stretches with interrupts or preemption off, on the latency kernels
# (KCONFIG=latency, built by make bench-kernels for the plan's LATENCY).
if [ "$runner" = qemu ] && [ -n "${LATENCY:-}" ]; then
	# shellcheck disable=SC2086 # a list of flavours
	if waited env OPBENCH="$out/bin/opbench" "$TOPDIR/tracing/latency.sh" \
		"$out/latency" $LATENCY >/dev/null; then
		for f in $LATENCY; do
			if [ -f "$out/latency/$f/latency.json" ]; then
				artefact latency "$out/latency/$f/latency.json" flavour="$f"
			else
				log "the latency step left no records of $f; the report says they are missing"
			fi
		done
	else
		log "the latency step failed (see $out/latency/); the benchmarks and their analysis are not affected"
		rc=1
	fi
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
if [ "$runner" = qemu ]; then
	log "traces: $out/tracing/*-trace-*/ (flame.svg, diff.svg, ops/rseq_ops_lat.bt.out)"
	log "raw:    $out/boot-*/opbench.json"
else
	log "raw:    $out/rep-*/opbench.json"
fi
exit $rc
