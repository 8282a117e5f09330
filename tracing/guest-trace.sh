#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# guest-trace.sh - run inside the guest: perf or bpftrace around a workload.
#
# Run by tracing/trace.sh from the shared directory (opbench, prime-signals
# and the .bt scripts beside it). Every command it runs is appended to
# guest-commands.txt before it runs.
#
#   guest-trace.sh perf BENCH OPS SECONDS FREQ
#       opbench runs; perf record (cpu-clock, call graphs, all CPUs) for
#       SECONDS of guest time; writes perf.data, perf.script,
#       perf-report.txt
#   guest-trace.sh bpftrace SCRIPT BENCH OPS LOOPS SAMPLES
#       the script around opbench; writes SCRIPT.out, opbench.json
#   guest-trace.sh validate SCRIPT COUNT N
#       the script around prime-signals COUNT N; writes SCRIPT.out and
#       prime-signals.json
#   guest-trace.sh overhead SCRIPT BENCH OPS LOOPS SAMPLES ROUNDS
#       opbench alone and under the script, alternated ROUNDS times;
#       writes plain-<i>.json and traced-<i>.json
set -u
echo 0 > /proc/sys/kernel/kptr_restrict 2>/dev/null
echo -1 > /proc/sys/kernel/perf_event_paranoid 2>/dev/null
mode=${1:?usage: guest-trace.sh perf|bpftrace|validate|overhead ...}
shift

run() {
	echo "$*" >> guest-commands.txt
	"$@"
}

opbench_args() {
	echo "-n $2 -l $3 -s $4 -w 1 $1"
}

case $mode in
perf)
	# A window of fixed length, not a fixed number of loops, so that two
	# profiles of very different loop costs hold as many samples.
	bench=$1 ops=$2 secs=$3 freq=$4
	run ./opbench -n "$ops" -l 1000000000 -s 1 -w 0 "$bench" \
		> opbench.json 2> opbench.log &
	pid=$!
	run sleep 0.2
	if ! kill -0 $pid 2>/dev/null; then
		echo "guest-trace.sh: opbench $bench -n $ops stopped early" >&2
		cat opbench.log >&2
		exit 1
	fi
	run perf record -q -e cpu-clock -F "$freq" -g -a -o perf.data -- \
		sleep "$secs" 2> perf-record.log || exit 1
	kill $pid
	wait $pid 2>/dev/null
	run perf script -i perf.data > perf.script 2> perf-script.log || exit 1
	run perf report -i perf.data --stdio --no-children --sort sym \
		--percent-limit 0.5 > perf-report.txt 2>/dev/null
	;;
bpftrace)
	script=$1 bench=$2 ops=$3 loops=$4 samples=$5
	run bpftrace -o "$script.out" "$script" \
		-c "./opbench $(opbench_args "$bench" "$ops" "$loops" "$samples")" \
		> opbench.json 2> bpftrace.log || exit 1
	;;
validate)
	script=$1 count=$2 n=$3
	run bpftrace -o "$script.out" "$script" -c "./prime-signals $count $n" \
		> prime-signals.json 2> bpftrace.log || exit 1
	;;
overhead)
	script=$1 bench=$2 ops=$3 loops=$4 samples=$5 rounds=$6
	i=1
	while [ "$i" -le "$rounds" ]; do
		run ./opbench $(opbench_args "$bench" "$ops" "$loops" "$samples") \
			> "plain-$i.json" 2>> opbench.log || exit 1
		run bpftrace -o "$script.out.$i" "$script" \
			-c "./opbench $(opbench_args "$bench" "$ops" "$loops" "$samples")" \
			> "traced-$i.json" 2>> bpftrace.log || exit 1
		i=$((i + 1))
	done
	;;
*)
	echo "guest-trace.sh: unknown mode '$mode'" >&2
	exit 2
	;;
esac
