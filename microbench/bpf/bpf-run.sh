#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# bpf-run.sh - boot a flavour with the BPF design's loader and run one of
# its guest steps.
#
# Usage: microbench/bpf/bpf-run.sh [--check] WHAT [FLAVOUR]
#   WHAT facts   guest-bpf-facts.sh: what the design requires, measured
#                (capabilities, kernel log, verifier, unprivileged
#                registration, faulting destinations), into facts.txt
#   WHAT smoke   load the program, then opbench --via bpf at N = 1 and 64:
#                switch (a reset after every switch), syscall (none after a
#                system call that does not sleep) and signal, with their
#                gates, into smoke.json; the loader's output in smoke.txt
#   FLAVOUR      default bpf; another flavour shows the loader's refusal
# Env:   TIMEOUT (default 900 for smoke, 2400 for facts), RESULTS_ROOT, ACCEL
# Output: RESULTS_ROOT/<date>-bpf-WHAT-FLAVOUR/; its path is the last line
# on stdout. Exit status: the guest step's (facts: 0 when every step ran;
# smoke: 0 when the program loaded and every gate held, 3 when a gate
# failed).
set -euo pipefail
. "$(dirname "$0")/../../scripts/common.sh"

check=
[ "${1:-}" != --check ] || { check=1; shift; }
what=${1:?usage: bpf-run.sh [--check] facts|smoke [FLAVOUR]}
flavour=${2:-bpf}
case $what in
facts | smoke) ;;
*) die "bpf-run: '$what' is not a step; use facts or smoke" ;;
esac
timeout=${TIMEOUT:-$([ "$what" = facts ] && echo 2400 || echo 900)}
[[ "$timeout" =~ ^[0-9]+$ ]] || die "TIMEOUT='$timeout' is not a whole number of seconds"
"$TOPDIR/kernel-patch/scripts/kernels.sh" --check "$flavour"
[ -z "$check" ] || exit 0

out=$(new_run_dir "${RESULTS_ROOT:-$TOPDIR/results}" "bpf-$what-$flavour")
log "[$flavour] building opbench, bpf-fault and the BPF design's loader into $out/bin"
guest_programs "$out/bin" opbench bpf-fault
bpf_programs "$out/bin"
cat > "$out/smoke.sh" <<'GUEST'
#!/bin/sh
# The loader, then the gates of switch, syscall and signal with --via bpf.
{
	echo "== load"
	./rseq-bpf-ops load
	echo "status=$?"
} > smoke.txt 2>&1
cat smoke.txt
grep -q '^status=0$' smoke.txt || exit 2
rc=0
for b in switch syscall signal; do
	./opbench --via bpf -n 1,64 -l 300 -s 3 -w 1 -q $b >> smoke.json || rc=$?
done
{
	echo "== opbench exit $rc"
	echo "== status"
	./rseq-bpf-ops status
	./rseq-bpf-ops unload
} >> smoke.txt 2>&1
tail -4 smoke.txt
[ $rc -eq 0 ] || exit 3
GUEST
chmod +x "$out/smoke.sh"
cp "$(dirname "$0")/guest-bpf-facts.sh" "$out/"
log "[$flavour] running '$what' in the guest (timeout ${timeout}s; log $out/)"
rc=0
"$TOPDIR/vm-images/guest-run" --flavour "$flavour" --out "$out" --timeout "$timeout" \
	--accel "$(accel_for check)" \
	--copy "$out/bin/opbench" --copy "$out/bin/bpf-fault" --copy "$out/bin/rseq-bpf-ops" \
	-- "./$([ "$what" = facts ] && echo guest-bpf-facts.sh || echo smoke.sh)" || rc=$?
[ "$what" != facts ] || [ ! -f "$out/facts.txt" ] || cat "$out/facts.txt"
log "[$flavour] exit status $rc; results in $out"
echo "$out"
exit $rc
