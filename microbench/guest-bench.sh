#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# guest-bench.sh - run inside the guest: opbench cells, then perf bench beside them.
#
# Run by microbench/bench.sh from the shared directory, with:
#   OPS="0,1,2048"  BENCHES="syscall switch ..."  LOOPS=..  SAMPLES=..  WARMUP=..
#   TYPES="null ..."  EXTRA="..."   (opbench options)
# Writes opbench.json (records), opbench.log (progress), perf-bench.txt and
# guest-info.txt into the current directory. Exit status: 0; 3 when only
# correctness gates failed (those cells are recorded as invalid); 1 when an
# opbench run failed otherwise (crash, bad usage).
set -u
rc=0
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
} > guest-info.txt 2>&1

for b in $BENCHES; do
	for t in ${TYPES:-null}; do
		[ "$b" = migrate ] && [ "$t" = null ] && t=cpu
		echo "guest-bench: $b type $t ops $OPS" >&2
		./opbench -n "$OPS" -t "$t" -l "$LOOPS" -s "$SAMPLES" -w "$WARMUP" \
			${EXTRA:-} "$b" >> opbench.json 2>> opbench.log
		st=$?
		# 1: a gate failed (recorded; the analysis drops those cells).
		if [ $st = 1 ] && [ $rc = 0 ]; then
			rc=3
		elif [ $st != 0 ] && [ $st != 1 ]; then
			echo "guest-bench: opbench $b exited with status $st" >&2
			rc=1
		fi
	done
done

# Cross-check with tools nobody here wrote, at N = 0, same boot.
if command -v perf >/dev/null; then
	{
		echo "== perf bench syscall basic"
		perf bench syscall basic -l 1000000 2>&1
		echo "== perf bench sched pipe -T"
		taskset -c "$(($(nproc) - 1))" perf bench sched pipe -T -l 100000 2>&1
	} > perf-bench.txt
fi
exit $rc
