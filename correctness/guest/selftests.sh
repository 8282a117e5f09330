#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# selftests.sh - run the rseq selftests inside the guest, as TAP.
#
# Usage (in the guest, from the directory correctness/selftests-build.sh filled):
#   ./selftests.sh quick [ROUNDS]   rseq_op_test ROUNDS times (default 1), rfc_client, the
#                                   quick upstream tests, a short param_test
#                                   pass with an operation in every thread
#   ./selftests.sh full             everything in the directory, run_param_test.sh
#                                   and the benchmarks included
#   ./selftests.sh op ROUNDS        rseq_op_test only, ROUNDS times
# Exit status 0 only when every test passed (skips are not failures).
set -u
mode=${1:-quick}
rounds=${2:-1}
n=0
failed=0
passed=0
skipped=0

run() {	# name, command...: one TAP line, output kept as comments
	local name=$1 out rc
	shift
	n=$((n + 1))
	out=$("$@" 2>&1)
	rc=$?
	printf '%s\n' "$out" | sed 's/^/# /' | tail -"${TAIL:-15}"
	# A kselftest harness whose every case skipped exits 0: a skip, said so.
	if [ $rc -eq 0 ] && printf '%s\n' "$out" |
		grep -qE '^# Totals: pass:0 fail:0 xfail:0 xpass:0 skip:[1-9]'; then
		rc=4
	fi
	if [ $rc -eq 0 ]; then
		echo "ok $n $name"
		passed=$((passed + 1))
	elif [ $rc -eq 4 ]; then
		echo "ok $n $name # SKIP"
		skipped=$((skipped + 1))
	else
		echo "not ok $n $name # exit $rc"
		failed=$((failed + 1))
	fi
}

# A skipped case tested nothing: every round's skips are counted, per case
# and reason, and printed as "<n>x skipped: <case> (<reason>)" lines that
# the rig tests hold against the configuration's list (tests/rigreport.py).
skip_counts() {
	sed -n 's/^ok [0-9]* \(.*\) # SKIP \(.*\)$/skipped: \1 (\2)/p' |
		sort | uniq -c | sed 's/^ *\([0-9]*\) /\1x /'
}

op_rounds() {	# rseq_op_test $1 times in a row; stop at the first failure
	local i out skips=
	for i in $(seq 1 "$1"); do
		if ! out=$(./run_rseq_op_test.sh 2>&1); then
			# The failed cases, with the harness's lines about them.
			printf '%s\n' "$out" | grep -vE '^(ok |# +(OK|RUN) )' | tail -40
			echo "rseq_op_test failed in round $i of $1"
			return 1
		fi
		skips+=$(printf '%s\n' "$out" | grep -E '^ok [0-9]+ .* # SKIP')$'\n'
	done
	printf '%s\n' "$out" | grep -E '^# (PASSED|Totals|FAILED)'
	printf '%s' "$skips" | skip_counts
	echo "rseq_op_test passed $1 round(s) in a row"
}

param_with_ops() {	# a short param_test pass, one RSEQ operation per thread
	local t out
	for t in s l b m i; do
		out=$(GLIBC_TUNABLES=glibc.pthread.rseq=0 LD_PRELOAD=./rseq_op_preload.so \
			./param_test -T "$t" -r 100 -t 4 2>&1) || { echo "$out"; return 1; }
		echo "-T $t: $(printf '%s\n' "$out" | grep rseq_op_preload)"
		if [ -n "${REQUIRE_OPS:-}" ] &&
			printf '%s\n' "$out" | grep -q 'with_ops=0 '; then
			echo "no thread got an operation"
			return 1
		fi
	done
}

echo "TAP version 13"
echo "# kernel $(uname -r), $(nproc) CPUs, mode $mode"
case "$mode" in
op)
	if [ "$rounds" = 1 ]; then
		# One round: keep every case's line, for comparisons.
		TAIL=1000 run rseq_op_test ./run_rseq_op_test.sh
	else
		TAIL=30 run rseq_op_test_x$rounds op_rounds "$rounds"
	fi
	;;
quick | full)
	TAIL=45 run rseq_op_test_x$rounds op_rounds "$rounds"
	run rfc_client env GLIBC_TUNABLES=glibc.pthread.rseq=0 ./rfc_client
	run basic_test ./basic_test
	run basic_percpu_ops_test ./basic_percpu_ops_test
	run syscall_errors_test ./run_syscall_errors_test.sh
	run legacy_check ./run_legacy_check.sh
	run check_optimized env GLIBC_TUNABLES=glibc.pthread.rseq=0 ./check_optimized
	run param_test_short_with_ops param_with_ops
	if [ "$mode" = full ]; then
		# The rest of the directory, as its Makefile lists it
		# (TEST_GEN_PROGS and TEST_PROGS): the whole of it in full.
		run basic_percpu_ops_mm_cid_test ./basic_percpu_ops_mm_cid_test
		run param_test_benchmark ./param_test_benchmark
		run param_test_mm_cid_benchmark ./param_test_mm_cid_benchmark
		run run_timeslice_test ./run_timeslice_test.sh
		run run_param_test ./run_param_test.sh
	fi
	;;
*)
	echo "usage: selftests.sh quick|full|op [ROUNDS]" >&2
	exit 2
	;;
esac
echo "1..$n"
echo "# $passed passed, $skipped skipped, $failed failed"
[ $failed -eq 0 ]
