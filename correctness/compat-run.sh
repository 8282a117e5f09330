#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# compat-run.sh - rseq_op_test built for i386, run on a 64-bit kernel.
#
# Usage: correctness/compat-run.sh [--check] FLAVOUR
# The flavour's debug kernel (KCONFIG=debug: the configuration with
# CONFIG_IA32_EMULATION) boots in the usual x86_64 guest; rseq_op_test (the
# flavour's own, or ops' for a series without one) is built static with
# Debian's i686 cross compiler in the cross build root against the
# flavour's exported headers, so that the RSEQ-operation structures have
# i386's layout (__u64 4-byte aligned unless the header says otherwise),
# and runs as a 32-bit task. ROUNDS (default 1) runs in a row, then one
# more under the PER_LINUX32 personality (setarch linux32).
# Env:   ROUNDS, TIMEOUT (default 300 + 120 * ROUNDS), RESULTS_ROOT, ACCEL
# Output: RESULTS_ROOT/<date>-compat-FLAVOUR/ (tap.txt, console.log and
# guest-run's records); the last line on stdout is that directory. Exit
# status: the guest's (0 only when every case passed or skipped).
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"
export KCONFIG=debug

check=
[ "${1:-}" != --check ] || { check=1; shift; }
flavour=${1:?usage: compat-run.sh [--check] FLAVOUR}
rounds=${ROUNDS:-1}
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || die "ROUNDS='$rounds' (make: COMPAT_ROUNDS): want a whole number of runs, 1 or more"
timeout=${TIMEOUT:-$((300 + 120 * rounds))}
[[ "$timeout" =~ ^[0-9]+$ ]] || die "TIMEOUT='$timeout' is not a whole number of seconds"
"$TOPDIR/kernel-patch/scripts/kernels.sh" --check "$flavour"
[ -z "$check" ] || exit 0

kdir=$(kernel_dir "$flavour")
grep -q '^CONFIG_IA32_EMULATION=y' "$kdir/config" ||
	die "the debug kernel of $flavour ($kdir) has no CONFIG_IA32_EMULATION: rebuild it (make test-kernels, or KCONFIG=debug make kernels FLAVOURS=$flavour)"
wt=$(kernel_tree "$flavour")
st=$wt/tools/testing/selftests
[ -f "$st/rseq/rseq_op_test.c" ] || st=$(kernel_tree ops)/tools/testing/selftests
[ -f "$st/rseq/rseq_op_test.c" ] ||
	die "no rseq_op_test.c in $flavour's tree nor in ops': build ops first (KCONFIG=debug make kernels FLAVOURS=ops)"

out=$(new_run_dir "${RESULTS_ROOT:-$TOPDIR/results}" "compat-$flavour")
log "[$flavour] building rseq_op_test for i386 into $out"
BUILDROOT=cross in_buildroot --bind "$out" i686-linux-gnu-gcc -static -O2 -Wall -isystem "$kdir/headers" \
	-I "$st" -o "$out/rseq_op_test" "$st/rseq/rseq_op_test.c" -lpthread 2>"$out/build.log" ||
	{ cat "$out/build.log" >&2; die "rseq_op_test failed to build for i386 against $flavour's headers; log: $out/build.log"; }
BUILDROOT=cross in_buildroot --bind "$out" i686-linux-gnu-gcc -static -O2 -Wall -Wextra -isystem "$kdir/headers" \
	-o "$out/segments" "$TOPDIR/correctness/guest/segments.c" 2>>"$out/build.log" ||
	{ cat "$out/build.log" >&2; die "segments failed to build for i386; log: $out/build.log"; }
cat > "$out/compat.sh" <<EOF
#!/bin/sh
# One TAP line per program; their own output as comments.
echo "TAP version 13"
echo "# kernel \$(uname -r) \$(uname -m), programs: \$(od -An -tx1 -j4 -N1 rseq_op_test | tr -d ' ') (ELF class 01: 32-bit)"
n=0
fail=0
run() {
	n=\$((n + 1))
	name=\$1
	shift
	GLIBC_TUNABLES=glibc.pthread.rseq=0 "\$@" > out.txt 2>&1
	rc=\$?
	sed 's/^/# /' out.txt
	if [ \$rc -eq 0 ]; then echo "ok \$n \$name"
	elif [ \$rc -eq 4 ]; then echo "ok \$n \$name # SKIP"
	else echo "not ok \$n \$name # exit \$rc"; fail=\$((fail + 1)); fi
}
run segments.i386 ./segments -k 4 -r 50
# A series' kernel offers operations to compat tasks: a skip fails.
if [ "$flavour" != baseline ] && grep -q 'kernel without RSEQ operations' out.txt; then
	n=\$((n + 1))
	echo "not ok \$n segments_found_operations # the kernel offers none to a 32-bit task"
	fail=\$((fail + 1))
fi
i=1
while [ \$i -le $rounds ]; do
	run rseq_op_test.i386.\$i ./rseq_op_test
	i=\$((i + 1))
done
# Once more with the PER_LINUX32 personality, under which uname() names an
# i686 machine on this 64-bit kernel: the test must still reset 8 bytes.
if command -v setarch > /dev/null; then
	run rseq_op_test.i386.linux32 setarch linux32 ./rseq_op_test
else
	n=\$((n + 1))
	echo "not ok \$n rseq_op_test.i386.linux32 # no setarch in the guest image"
	fail=\$((fail + 1))
fi
echo "1..\$n"
[ \$fail -eq 0 ]
EOF
chmod +x "$out/compat.sh"
log "[$flavour] running it as a 32-bit task on the 64-bit debug kernel (timeout ${timeout}s; log $out/)"
rc=0
"$TOPDIR/vm-images/guest-run" --flavour "$flavour" --out "$out" --timeout "$timeout" \
	--accel "$(accel_for check)" -- ./compat.sh | tee "$out/tap.txt" || rc=$?
log "[$flavour] exit status $rc; results in $out"
echo "$out"
exit $rc
