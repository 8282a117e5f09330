#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# arch-run.sh - boot a flavour on another architecture under QEMU TCG and
# run the RSEQ-operation tests there.
#
# Usage: correctness/arch-run.sh [--check] ARCH FLAVOUR
#   ARCH     a target declared in vm-images/targets/ (ppc32: powerpc
#            book3s/32 with KUAP, one CPU; arm64: two CPUs): segments
#            (destinations in several 256 MiB segments), then rseq_op_test
#            ROUNDS times, then a STRESS-second rseq_op_stress run
# Env:   ROUNDS (rseq_op_test runs; default 10), STRESS (seconds of
#        rseq_op_stress; default 60, 0 for none), TIMEOUT (seconds for the
#        whole guest; default 3600), ICOUNT (yes: -icount shift=0,align=off,sleep=off,
#        a guest clock that counts instructions and skips idle time; no:
#        plain multi-threaded TCG; default: the target's ICOUNT, with why),
#        OPTEST_FLAVOUR (run that flavour's rseq_op_test, e.g. ops' on v2),
#        RESULTS_ROOT, CACHE_DIR
#
# The kernel comes from kernel-patch/scripts/arch-kernel.sh (built if
# needed, cached). The guest is an initramfs of static programs built for
# ARCH in the cross build root: vm-images/arch-init.c as /init,
# correctness/guest/segments.c, the flavour's own rseq_op_test (or ops'
# for a series without one, the RFC as posted), and rseq_op_stress (-R on
# a flavour that reads nodes once). Each program has a timeout in the
# guest; a guest that does not end by TIMEOUT is killed and reported as
# hung, with its console log. The guest is booted by the project's one
# launcher, vm-images/opbench_vm.py --initrd, with the target's QEMU.
#
# Writes RESULTS_ROOT/<date>-arch-ARCH-FLAVOUR/: console.log, tap.txt (the
# guest's TAP: one line per program, its output as comments), run.list,
# provenance, summary.txt, vm.json (the launcher's record: time against
# the limit, host starvation), qemu.log (the launcher's messages),
# kernel-problems.txt (the console's lines that match the project's
# kernel-problem pattern, opbench_vm.SPLAT_RE). Exit status 0 when every program passed or
# skipped (segments may not skip, but on baseline), 1 otherwise (a failure is what this run exists to show on some
# flavours: v2 on ppc32), 2 when the guest hung or did not boot.
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"
export BUILDROOT=cross

check=
[ "${1:-}" != --check ] || { check=1; shift; }
arch=${1:?usage: arch-run.sh [--check] ARCH FLAVOUR}
flavour=${2:?usage: arch-run.sh [--check] ARCH FLAVOUR}
rounds=${ROUNDS:-10}
stress=${STRESS:-60}
timeout=${TIMEOUT:-3600}
icount=${ICOUNT:-}
[[ "$rounds" =~ ^[0-9]+$ ]] || die "ROUNDS='$rounds' (make: ARCH_ROUNDS) is not a whole number of rseq_op_test runs"
[[ "$stress" =~ ^[0-9]+$ ]] || die "STRESS='$stress' (make: ARCH_STRESS) is not a whole number of seconds"
[[ "$timeout" =~ ^[0-9]+$ ]] || die "TIMEOUT='$timeout' is not a whole number of seconds"
[ "$timeout" -ge 60 ] || die "TIMEOUT=$timeout: give the guest at least 60 s"
case $icount in '' | yes | no) ;; *) die "ICOUNT='$icount': want yes or no" ;; esac
target_load "$arch"
cross=$TARGET_CROSS console=$TARGET_CONSOLE
read -ra qemu <<<"$TARGET_QEMU"
icount=${icount:-$TARGET_ICOUNT}
"$TOPDIR/kernel-patch/scripts/arch-kernel.sh" --check "$arch" "$flavour"
[ -z "$check" ] || exit 0
command -v "${qemu[0]}" >/dev/null || die "${qemu[0]} missing; run scripts/deps.sh (as root)"

kdir=$("$TOPDIR/kernel-patch/scripts/arch-kernel.sh" "$arch" "$flavour")
image=$kdir/$(sed -n 's/^image=//p' "$kdir/provenance")
srcver=$(sed -n 's/^source_version=//p' "$kdir/provenance")
# rseq_op_test: the flavour's own, or ops' for a series that has none,
# or OPTEST_FLAVOUR's (ops' on v2: the same binary on both kernels).
tree=$CACHE_DIR/build/$srcver/arch-$arch/${OPTEST_FLAVOUR:-$flavour}
[ -z "${OPTEST_FLAVOUR:-}" ] || [ -f "$tree/tools/testing/selftests/rseq/rseq_op_test.c" ] ||
	die "OPTEST_FLAVOUR=$OPTEST_FLAVOUR: no rseq_op_test in its $arch tree; run make arch-run GUEST_ARCH=$arch FLAVOURS=$OPTEST_FLAVOUR first"
if [ ! -f "$tree/tools/testing/selftests/rseq/rseq_op_test.c" ]; then
	tree=$CACHE_DIR/build/$srcver/arch-$arch/ops
	[ -f "$tree/tools/testing/selftests/rseq/rseq_op_test.c" ] ||
		die "$flavour's series has no rseq_op_test and ops is not built for $arch: run make arch-run GUEST_ARCH=$arch FLAVOURS=ops first"
fi
semantics=
case $(op_semantics "$flavour") in
resident) semantics=-R ;;
handle) semantics=-M ;;
esac

label=arch-$arch-$flavour
[ -z "${OPTEST_FLAVOUR:-}" ] || label+=-optest-$OPTEST_FLAVOUR
out=$(new_run_dir "${RESULTS_ROOT:-$TOPDIR/results}" "$label")
out=$(realpath "$out")	# the kernel-problem step reads it from elsewhere
log "[$arch $flavour] run directory: $out"
ird=$out/initramfs
mkdir -p "$ird"
# Static programs for the guest, built in the cross root. Output
# directories must exist inside it: $out is under the project tree,
# which the root mounts. -latomic: on 32-bit powerpc, rseq_op_test's
# 8-byte atomics are libatomic calls.
in_buildroot "${cross}gcc" -static -O2 -Wall -Wextra -o "$ird/init" "$TOPDIR/vm-images/arch-init.c" \
	2>"$out/build.log" || { cat "$out/build.log" >&2; die "vm-images/arch-init.c failed to build for $arch"; }
in_buildroot "${cross}gcc" -static -O2 -Wall -Wextra -isystem "$kdir/headers" -o "$ird/segments" \
	"$TOPDIR/correctness/guest/segments.c" 2>>"$out/build.log" ||
	{ cat "$out/build.log" >&2; die "correctness/guest/segments.c failed to build for $arch against $flavour's headers"; }
in_buildroot "${cross}gcc" -static -O2 -Wall -isystem "$kdir/headers" \
	-I "$tree/tools/testing/selftests" -o "$ird/rseq_op_test" \
	"$tree/tools/testing/selftests/rseq/rseq_op_test.c" -lpthread -latomic 2>>"$out/build.log" ||
	{ cat "$out/build.log" >&2; die "rseq_op_test failed to build for $arch against $flavour's headers"; }
in_buildroot make -s -C "$TOPDIR/microbench" O="$ird" CC="${cross}gcc" USERCFLAGS=-static LDLIBS="-lpthread -latomic" \
	"$ird/rseq_op_stress" >>"$out/build.log" 2>&1 ||
	{ cat "$out/build.log" >&2; die "rseq_op_stress failed to build for $arch"; }
{
	# Timeouts in guest seconds: under icount (sleep=off) a second is
	# 10^9 instructions and idle time is skipped, so that segments and a
	# round of rseq_op_test take well under a second of it; a thread that
	# never leaves the kernel burns it at TCG's speed.
	echo "# TIMEOUT NAME PROGRAM ARGS (vm-images/arch-init.c)"
	echo "30 segments /segments -k 6 -r 200"
	for ((i = 1; i <= rounds; i++)); do
		echo "120 rseq_op_test.$i /rseq_op_test"
	done
	[ "$stress" -eq 0 ] || echo "$((stress + 120)) rseq_op_stress /rseq_op_stress -d $stress -j 2 $semantics"
} > "$ird/run.list"
cp "$ird/run.list" "$out/run.list"
(cd "$ird" && find . | LC_ALL=C sort | in_buildroot cpio -o -H newc --quiet -R 0:0) > "$out/initramfs.cpio" ||
	die "cannot pack the initramfs"
rm -rf "$ird"

accel=tcg
[ "$icount" = no ] || accel=icount
# The project's one launcher (vm-images/opbench_vm.py), with the target's
# QEMU: its timeout, console, record (vm.json), host starvation, and the
# start and exit markers the initramfs's /init prints.
vm=("$PYTHON" "$TOPDIR/vm-images/opbench_vm.py" --qemu "${qemu[0]}"
	--machine "${qemu[*]:1}" --console "$console" --accel "$accel"
	--kernel "$image" --initrd "$out/initramfs.cpio" --timeout "$timeout"
	--console-log "$out/console.log" --record "$out/vm.json")
cat > "$out/provenance" <<EOP
arch=$arch
flavour=$flavour
kernel=$kdir
kernel_release=$(sed -n 's/^kernel_release=//p' "$kdir/provenance")
series_hash=$(sed -n 's/^series_hash=//p' "$kdir/provenance")
config_hash=$(sed -n 's/^config_hash=//p' "$kdir/provenance")
rseq_op_test=$tree/tools/testing/selftests/rseq/rseq_op_test.c
qemu=$("${qemu[0]}" --version | head -1)
accel=$([ "$icount" = no ] && echo "tcg multi-threaded" || echo "tcg icount")
command=$("${vm[@]}" --show-command)
rounds=$rounds
stress_seconds=$stress
timeout=$timeout
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
EOP
log "[$arch $flavour] booting under TCG: segments, rseq_op_test x$rounds, ${stress} s of stress (timeout ${timeout} s; console: $out/console.log)"
t0=$(date +%s)
"${vm[@]}" > "$out/guest-stdout.txt" 2> "$out/qemu.log" &
vpid=$!
# Killed or interrupted, this script takes its guest with it.
trap 'pkill -TERM -P $vpid 2>/dev/null; kill $vpid 2>/dev/null || true' EXIT
trap 'exit 130' INT TERM
last=0
while kill -0 $vpid 2>/dev/null; do
	el=$(( $(date +%s) - t0 ))
	if [ $((el / 60)) -gt "$last" ]; then
		last=$((el / 60))
		log "[$arch $flavour] $(fmt_secs "$el"): $(grep -cE '^(not )?ok ' "$out/console.log" 2>/dev/null || true) program(s) done; last line: $(tail -1 "$out/console.log" 2>/dev/null | cut -c1-100)"
	fi
	sleep 2
done
st=0
wait $vpid || st=$?
trap - EXIT
echo "finished=$(date -u +%Y-%m-%dT%H:%M:%SZ)" >> "$out/provenance"
echo "guest_seconds=$(( $(date +%s) - t0 ))" >> "$out/provenance"
sed -n '/^OPBENCH-START/,/^OPBENCH-EXIT/p' "$out/console.log" | tr -d '\r' > "$out/tap.txt"
# The launcher's status is the guest's failures, or 124 (hung, killed at
# the timeout), 125 (a kernel problem on the console, below), 126 (no exit
# marker), 2 (it refused to launch, in qemu.log): the exit marker tells a
# count of failures from the launcher's own.
if grep -q '^OPBENCH-EXIT: [0-9]' "$out/tap.txt"; then
	state=done
elif [ "$st" = 124 ]; then
	state=hung
else
	state=running
fi
{
	echo "arch=$arch flavour=$flavour state=$state seconds=$(( $(date +%s) - t0 ))"
	grep -E '^(not )?ok |^OPBENCH-EXIT' "$out/tap.txt" || true
} > "$out/summary.txt"
cat "$out/summary.txt" >&2
# The launcher's kernel-problem pattern (opbench_vm.SPLAT_RE): the matching
# lines into kernel-problems.txt, as guest_run.py writes them.
(cd "$TOPDIR/vm-images" && "$PYTHON" -c 'import sys, opbench_vm
print("".join(l + "\n" for l in opbench_vm.find_splats(open(sys.argv[1], errors="replace").read())), end="")' "$out/console.log") > "$out/kernel-problems.txt" ||
	die "cannot read the console with vm-images/opbench_vm.py's kernel-problem pattern"
problems=$(wc -l < "$out/kernel-problems.txt")
echo "kernel_problems=$problems" >> "$out/provenance"
[ "$problems" -eq 0 ] || log "[$arch $flavour] $problems kernel problem line(s) on the console: $out/console.log"
case $state in
hung)
	tail -30 "$out/console.log" >&2
	log "[$arch $flavour] HUNG: the guest did not finish in $timeout s and was killed; console: $out/console.log"
	echo "$out"
	exit 2
	;;
running)
	tail -30 "$out/console.log" >&2
	log "[$arch $flavour] QEMU exited before the guest finished (no OPBENCH-EXIT); console: $out/console.log, launcher: $out/qemu.log"
	echo "$out"
	exit 2
	;;
esac
fails=$(sed -n 's/^OPBENCH-EXIT: //p' "$out/tap.txt")
fails=${fails:-0}
# A kernel of this series offers operations on both architectures: a
# segments program that found none (it skips) is a failure here, not a pass.
if [ "$flavour" != baseline ] && grep -q '^ok [0-9]* segments # SKIP' "$out/tap.txt"; then
	log "[$arch $flavour] segments skipped: the kernel offers no RSEQ operations (RSEQ_CS_FLAG_RSEQ_OP_AVAILABLE clear)"
	fails=$((fails + 1))
fi
log "[$arch $flavour] done in $(fmt_secs $(( $(date +%s) - t0 ))): $fails failure(s); $out"
echo "$out"
[ "$fails" = 0 ] && [ "$problems" -eq 0 ]
