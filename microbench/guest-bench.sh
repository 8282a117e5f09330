#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# guest-bench.sh - run inside the guest: the opbench cells of one boot.
#
# Run by microbench/bench.sh from the shared directory, with:
#   OPS="0,1,2048"  BENCHES="syscall switch ..."  LOOPS=..  SAMPLES=..  WARMUP=..
#   TYPES="null ..."  EXTRA="..."   (opbench options; TYPES empty: each
#   benchmark's own default type, from opbench --list)
# Writes opbench.json (records), opbench.log (progress) and guest-info.txt
# into the current directory. Exit status: 0; 3 when only
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
	for t in ${TYPES:-default}; do
		topt=
		[ "$t" = default ] || topt="-t $t"
		echo "guest-bench: $b type $t ops $OPS" >&2
		# shellcheck disable=SC2086 # topt and EXTRA are option lists
		./opbench -n "$OPS" $topt -l "$LOOPS" -s "$SAMPLES" -w "$WARMUP" \
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

exit $rc
