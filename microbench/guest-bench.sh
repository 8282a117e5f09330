#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# guest-bench.sh - run inside the guest: the opbench cells of one boot.
#
# Run by microbench/bench-run.sh from the shared directory, with:
#   CELLS=FILE  the boot's cells, one line each, run in the file's order
#   (microbench/plan.py writes them; it alone reads plans and benchmark
#   words): "WORD BENCH OPS TYPE PLACE [OPBENCH OPTION...]" runs opbench
#   BENCH at N in OPS with type TYPE (default: the benchmark's own,
#   opbench --list), alone on CPU 0 when PLACE is alone (opbench's table
#   says which), with the options (a word's variant); "tcmalloc ..." runs tcmodel,
#   the TCMalloc model, in both modes (legacy, ops) into tcmodel.json:
#   TCM_LOOPS iterations per sample (default LOOPS), PREEMPT_LOOPS
#   preemptions, SAMPLES, WARMUP.
#   LOOPS=..  SAMPLES=..  WARMUP=..  PREEMPT_LOOPS=..  (preempt: wake-ups
#   per sample; default LOOPS)   EXTRA="..."   (more opbench options)
#   SEED=n  opbench's order of N within each cell, and recorded
#   PERF_BENCH=1  also run perf bench syscall basic and sched pipe -T
#   NATIVE=1  run on the host's own kernel (microbench/native-run.sh):
#   no CPU is taken offline, preempt runs where CPUOPT says (default: the
#   programs' own choice); OPBENCH, TCMODEL: the programs (default ./)
#   ./rseq-bpf-ops present (the bpf flavour): the BPF design, see below;
#   also writes bpf-zero.json and rseq-bpf-ops.txt.
#   VIA=WAY  opbench --via WAY for every cell, and tcmodel's in ops mode
#   (the flavour's declaration: min registers with PR_RSEQ_OPS).
# Writes opbench.json (records), opbench.log (progress), tcmodel.json and
# tcmodel.log (with tcmalloc), guest-info.txt,
# tsc.txt (the kernel's TSC and clocksource lines) and perf-bench.txt
# into the current directory. Exit status: 0; 3 when only
# correctness gates failed (those cells are recorded as invalid); 1 when an
# opbench run failed otherwise (crash, bad usage).
set -u
: "${CELLS:?CELLS names the file of the cells of the boot (microbench/plan.py)}"
: "${LOOPS:?} ${SAMPLES:?} ${WARMUP:?}"
if [ ! -r "$CELLS" ]; then
	echo "guest-bench: CELLS=$CELLS: no such file (microbench/plan.py writes it)" >&2
	exit 1
fi
rc=0
seed=${SEED:-0}
{
	echo "uname: $(uname -a)"
	echo "glibc: $(ldd --version | head -1)"
	echo "cmdline: $(cat /proc/cmdline)"
	echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
	echo "cpus: $(nproc)"
	echo "cpu_model: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
	for f in /sys/devices/system/cpu/vulnerabilities/*; do
		echo "vuln_$(basename "$f"): $(cat "$f")"
	done
	echo "preempt: $(uname -v)"
	echo "seed: $seed"
} > guest-info.txt 2>&1
# What the guest calibrated its TSC to: under icount a tick is an
# instruction whatever it says, and opbench's clock record measures that.
dmesg | grep -i -E 'tsc|clocksource' > tsc.txt 2>&1

# Every CPU but the first offline, or back online: preempt runs on one CPU
# so that under icount no other vCPU's instructions fall into its gaps.
cpus_online() {
	[ "${NATIVE:-0}" = 1 ] && return 0	# never on the host's own CPUs
	for c in /sys/devices/system/cpu/cpu[1-9]*/online; do
		[ -w "$c" ] && echo "$1" > "$c"
	done
}

# Where preempt runs: alone on CPU 0 in a guest (the others offline), where
# the runner says natively.
alone="-c 0"
[ "${NATIVE:-0}" = 1 ] && alone=${CPUOPT:-}
opbench=${OPBENCH:-./opbench}
tcmodel=${TCMODEL:-./tcmodel}

# account STATUS WHAT: fold one program's exit status into rc. 1 is a
# failed gate (recorded; the analysis drops those cells): rc 3 unless
# something worse happened; any other failure makes rc 1.
account() {
	if [ "$1" = 1 ] && [ $rc = 0 ]; then
		rc=3
	elif [ "$1" != 0 ] && [ "$1" != 1 ]; then
		echo "guest-bench: $2 exited with status $1" >&2
		rc=1
	fi
}

# The TCMalloc model, both modes: every cell with both CPUs online but
# preempt, which runs alone on CPU 0 as the preempt benchmark does.
tcmalloc() {
	for m in legacy ops; do
		for cells in "pair,recovery,syscall,signal,fence,migrate,getcpu,remote" preempt; do
			cpuopt=
			if [ "$cells" = preempt ]; then
				cpus_online 0
				cpuopt=$alone
			fi
			echo "guest-bench: tcmalloc $m $cells" >&2
			viaopt=
			[ "$m" = ops ] && [ -n "${VIA:-}" ] && viaopt="--via $VIA"
			# shellcheck disable=SC2086 # the options are lists
			"$tcmodel" --mode $m $cpuopt -l "${TCM_LOOPS:-$LOOPS}" \
				-p "${PREEMPT_LOOPS:-$LOOPS}" -s "$SAMPLES" -w "$WARMUP" \
				$viaopt ${TCM_EXTRA:-} "$cells" >> tcmodel.json 2>> tcmodel.log
			st=$?
			[ "$cells" = preempt ] && cpus_online 1
			account $st "tcmodel --mode $m $cells"
		done
	done
}

# run_cell OUT WORD BENCH OPS TYPE PLACE VOPTS [OPTION...]: one cell into
# OUT; PLACE alone runs it alone (the other CPUs offline in a guest),
# VOPTS are the options of the word's variant (before EXTRA, which can
# override them), OPTION... go after EXTRA.
run_cell() {
	out=$1 word=$2 b=$3 ops=$4 t=$5 place=$6 vopt=$7
	shift 7
	topt=
	cpuopt=
	loops=$LOOPS
	[ "$t" = default ] || topt="-t $t"
	if [ "$place" = alone ]; then
		cpus_online 0
		cpuopt=$alone
	fi
	[ "$b" = preempt ] && loops=${PREEMPT_LOOPS:-$LOOPS}
	echo "guest-bench: $word type $t ops $ops $*" >&2
	# shellcheck disable=SC2086 # the options are lists
	"$opbench" -n "$ops" $topt $cpuopt $vopt -l "$loops" -s "$SAMPLES" -w "$WARMUP" \
		--seed "$seed" ${EXTRA:-} "$@" "$b" >> "$out" 2>> opbench.log
	st=$?
	[ "$place" = alone ] && cpus_online 1
	account $st "opbench $b"
}

# The BPF design (the bpf flavour; bench-run.sh copies its loader here).
# First the N = 0 cells of switch, signal and preempt (without variant)
# twice, into bpf-zero.json: as a thread that does not use the hook
# (flavour label bpf-unused), and as one that opted in to it with no
# program attached (bpf-noprog). Then the program is loaded (what the
# loader said: rseq-bpf-ops.txt; what the kernel logs at load is measured
# by guest-bpf-facts.sh, in its own boot) and every cell registers
# its operations with it (--via bpf); at N = 0 the thread opts in, and the
# program runs and finds no operation.
bpf_via=
if [ -x ./rseq-bpf-ops ]; then
	while read -r word b ops t place opts <&3; do
		case $word in switch | signal | preempt) ;; *) continue ;; esac
		run_cell bpf-zero.json "$word" "$b" 0 "$t" "$place" "$opts" -f bpf-unused
		run_cell bpf-zero.json "$word" "$b" 0 "$t" "$place" "$opts" -f bpf-noprog --via bpf
	done 3< "$CELLS"
	{
		echo "== rseq-bpf-ops load"
		./rseq-bpf-ops load
		echo "status=$?"
	} > rseq-bpf-ops.txt 2>&1
	if ! grep -q '^status=0$' rseq-bpf-ops.txt; then
		echo "guest-bench: loading the BPF design failed (rseq-bpf-ops.txt)" >&2
		cat rseq-bpf-ops.txt >&2
		exit 1
	fi
	bpf_via="--via bpf"
elif [ -n "${VIA:-}" ]; then
	# The flavour's own way to register (its declaration's VIA).
	bpf_via="--via $VIA"
fi

while read -r word b ops t place opts <&3; do
	if [ "$b" = tcmalloc ]; then
		tcmalloc
		continue
	fi
	# shellcheck disable=SC2086 # empty or one option
	run_cell opbench.json "$word" "$b" "$ops" "$t" "$place" "$opts" $bpf_via
done 3< "$CELLS"
if [ -n "$bpf_via" ]; then
	{
		echo "== rseq-bpf-ops status"
		./rseq-bpf-ops status
		./rseq-bpf-ops unload
	} >> rseq-bpf-ops.txt 2>&1
fi

# perf's own benchmarks in the same boot, beside syscall and switch at N=0:
# their figures are the guest's clock (gettimeofday) over whole runs, ticks
# included; the analysis converts them with opbench's clock record.
if [ "${PERF_BENCH:-0}" = 1 ]; then
	if command -v perf > /dev/null; then
		{
			echo "== syscall basic"
			taskset -c 0 perf bench syscall basic -l "${PERF_LOOPS:-200000}" 2>&1
			echo "== sched pipe -T"
			taskset -c 0 perf bench sched pipe -T -l "${PERF_PIPE_LOOPS:-20000}" 2>&1
		} > perf-bench.txt
	else
		echo "perf: not installed in the guest" > perf-bench.txt
	fi
fi

exit $rc
