#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# stress.sh - adversarial use of RSEQ operations on the debug kernel, in a guest.
#
# Usage: correctness/stress.sh [--check] [DURATION_SECONDS]  (make stress DURATION=...)
# Env:   STRESS_KCONFIG (kernel configuration, default debug: KASAN, lockdep,
#        lockup detectors), FLAVOUR (default ops), PARALLEL (victims at a
#        time, default 4), SEED, SCENARIO (only that scenario, or those of
#        a comma-separated list; default all, drawn at random; make soak:
#        the fault-* ones), RESULTS_ROOT (default results/). ops (v4),
#        ops-v3, control and resident run the scenarios with the outcomes
#        of a kernel that reads nodes once (-R), v2 and rfc with those of
#        a walk of the list, min those of the handle ABI (-M) (the
#        flavour's SEMANTICS, scripts/common.sh op_semantics);
#        STRESS_SEMANTICS=list|resident|handle chooses for any flavour;
#        STRESS_APPEND: more kernel parameters for the guest (for example
#        transparent_hugepage=never), recorded in the run's commands
#
# Boots FLAVOUR of STRESS_KCONFIG and runs correctness/stress/rseq_op_stress
# for DURATION seconds (default 600). Passes only if every victim process
# had the outcome its scenario called for (see rseq_op_stress.c) and the
# kernel printed nothing that matches the project's kernel-problem pattern
# (opbench_vm.SPLAT_RE: oops, BUG, WARNING, KASAN, lockdep, lockup, hung
# task, RCU stall). Output: results/<UTC date>-stress-<kconfig>-<secs>s/
# with the summary (summary.json) and vm-images/guest-run's boot directory
# (console log, launcher record, provenance, commands, kernel problems).
# The last line on stdout is that directory. --check: check the arguments
# and stop (make stress, before it builds anything).
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"
export BUILDROOT_MAKE=no	# after the build: use the build root, never make it

check=
[ "${1:-}" != --check ] || { check=1; shift; }
secs=${1:-${DURATION:-600}}
[[ "$secs" =~ ^[0-9]+$ ]] && [ "$secs" -gt 0 ] ||
	die "DURATION='$secs' is not a positive number of seconds (e.g. DURATION=600, the default)"
[ -z "${STRESS_PROFILE:-}" ] || die "STRESS_PROFILE is now STRESS_KCONFIG (default|debug)"
export KCONFIG=${STRESS_KCONFIG:-debug}
case $KCONFIG in
default | debug) ;;
*) die "STRESS_KCONFIG='$KCONFIG' is unknown; use STRESS_KCONFIG=debug (the default) or STRESS_KCONFIG=default" ;;
esac
flavour=${FLAVOUR:-ops}
par=${PARALLEL:-4}
# A kernel that checks and copies nodes at registration (ops, i.e. v4,
# ops-v3 and the resident variant) ignores writes to registered nodes,
# where a walk of the list (v2, the RFC) kills the task (rseq_op_stress
# -R or not); one that takes descriptions and gives handles (min) has no
# node at all (-M: the scenarios that need none).
# STRESS_SEMANTICS=list|resident overrides the choice (a test runs the
# list outcomes on ops, where they must be wrong).
case ${STRESS_SEMANTICS:-$(op_semantics "$flavour")} in
resident) semantics=-R ;;
list) semantics= ;;
handle) semantics=-M ;;
*) die "STRESS_SEMANTICS='$STRESS_SEMANTICS': want list, resident or handle" ;;
esac
[[ "${STRESS_APPEND:-}" =~ ^[A-Za-z0-9_.,=:\ -]*$ ]] ||
	die "STRESS_APPEND='$STRESS_APPEND' is not a list of kernel parameters (letters, digits, _ . , = : -, spaces)"
if [ -n "${SCENARIO:-}" ]; then
	[[ "$SCENARIO" =~ ^[a-z-]+(,[a-z-]+)*$ ]] ||
		die "SCENARIO='$SCENARIO' is not a scenario name or a comma-separated list of them (correctness/stress/rseq_op_stress.c --list)"
fi
# The flavour and the kernel configuration, as the kernel build checks
# them (an unknown STRESS_KCONFIG or a flavour without a series).
"$TOPDIR/kernel-patch/scripts/kernels.sh" --check "$flavour"
[ -z "$check" ] || exit 0

kernel_dir "$flavour" >/dev/null
label=stress-$KCONFIG-${secs}s
[ "$flavour" = ops ] || label=stress-$flavour-$KCONFIG-${secs}s
out=$(new_run_dir "${RESULTS_ROOT:-$TOPDIR/results}" "$label")
guest_programs "$out" rseq_op_stress
# Swap, so that MADV_PAGEOUT (fault-pageout) and a memory cgroup at its
# limit (fault-memcg) have somewhere to put anonymous pages: a file on the
# guest's root file system, a snapshot that nothing is written back to.
# Only where SCENARIO names one of them (make soak does): their victims
# wait on the guest's disk, up to two thirds of their 60 s alarm on the
# debug kernel (2026-12-07), too slow for the short runs of make test, where
# they stay unsupported for want of swap, as the summary says.
swap=
case ",${SCENARIO:-}," in
*,fault-pageout,* | *,fault-memcg,*)
	swap='if fallocate -l 256M /opbench-swap && chmod 600 /opbench-swap &&
	mkswap /opbench-swap >/dev/null && swapon /opbench-swap; then
	echo "stress: swap: a 256 MiB file" >&2
else
	echo "stress: no swap in the guest (see above)" >&2
fi' ;;
esac
# fault-numa: the debug kernel has NUMA balancing (debug.config), which
# stays off on one node: two fake nodes, and a scanner that goes over a
# process's memory every 100 to 200 ms of a thread's CPU time (100 ms is
# the kernel's floor at the default scan size; the default maximum, 60 s,
# would give a victim of a few seconds one scan). The scan delay keeps
# its default, 1 s: a mapping's record of the threads that touched it
# lasts four times that (VMA_PID_RESET_PERIOD), and the scanner skips a
# mapping that the thread it runs in did not touch meanwhile. The counts
# of PTE updates and hinting faults are printed after the run. Only where
# SCENARIO names fault-numa (make soak's second boot names it alone: with
# it on beside the others, 3 of 284 victims of the swapping scenarios met
# their alarm in 600 s, 2026-12-07): it then makes
# every process's pages PROT_NONE, and in make test's short run with it
# (2026-12-07, beside a selftest run on the host) a migrate-signal victim
# took 16.2 s, past the quarter of its alarm that the rig test allows
# (under 6 s in a 600 s run on one node, host quiet; which of the two
# slowed it was not measured). Where it is not named, and on the default
# configuration (no NUMA), the scenario is unsupported, as the summary
# says.
numa=
case ",${SCENARIO:-}," in
*,fault-numa,*) [ "$KCONFIG" != debug ] || numa=numa=fake=2 ;;
esac
cat > "$out/guest-stress.sh" <<EOF
#!/bin/sh
# The debug kernel's watchdogs keep their default thresholds (hung tasks
# at 120 s, soft lockups at 20 s): under TCG they are wall clocks, which a
# busy host stops; a report while the host starved QEMU is classed as
# such (vm-images/opbench_vm.py, starved_watchdog). A task that hangs
# shorter than 120 s still fails the run, by the stress program's alarms
# or the boot's time limit.
$swap
nb=/sys/kernel/debug/sched/numa_balancing
[ -d /sys/kernel/debug/sched ] || mount -t debugfs none /sys/kernel/debug 2>/dev/null
nb_on=
if [ -d \$nb ] && [ "\$(cat /proc/sys/kernel/numa_balancing)" != 0 ]; then
	nb_on=1
	echo 100 > \$nb/scan_period_min_ms &&
		echo 200 > \$nb/scan_period_max_ms &&
		echo "stress: NUMA balancing on \$(ls -d /sys/devices/system/node/node* | wc -l) nodes, a scan every 100-200 ms of a thread's CPU time" >&2
fi
# fault-memcg's cgroups (rseq_op_test makes its own mount where none is)
grep -q ' cgroup2 ' /proc/mounts || mount -t cgroup2 none /sys/fs/cgroup ||
	echo "stress: no cgroup2 hierarchy in the guest" >&2
./rseq_op_stress -d $secs -j $par $semantics ${SEED:+-s $SEED} ${SCENARIO:+-S $SCENARIO}
st=\$?
if [ -n "\$nb_on" ]; then
	echo "stress: NUMA balancing:" \$(grep -E '^numa_(pte_updates|hint_faults|pages_migrated) ' /proc/vmstat) >&2
fi
exit \$st
EOF
chmod +x "$out/guest-stress.sh"
log "[$flavour/$KCONFIG] $secs s of stress, $par victims at a time (console: $out/console.log)"
st=0
# no5lvl: with -cpu max, TCG offers 5-level paging, and the debug kernel
# then reported "BUG: KASAN: wild-memory-access in do_raw_spin_lock" from
# an interrupt taken during start_kernel() in 2 boots of 6 (0 of 8 with
# no5lvl), long before any process runs. Such a report taints the kernel
# and turns lockdep off for the whole run.
"$TOPDIR/vm-images/guest-run" --flavour "$flavour" --out "$out" --accel "$(accel_for check)" \
	--timeout $((secs + 600)) --append "no5lvl${numa:+ $numa}${STRESS_APPEND:+ $STRESS_APPEND}" -- ./guest-stress.sh > "$out/guest-stdout.txt" || st=$?
echo "# STRESS_KCONFIG=$KCONFIG FLAVOUR=$flavour PARALLEL=$par SEED=${SEED:-} SCENARIO=${SCENARIO:-} STRESS_APPEND=${STRESS_APPEND:-} semantics=${semantics:-list} kernel-args=no5lvl${numa:+ $numa}" >> "$out/commands.txt"
grep '^{' "$out/guest-stdout.txt" | tail -1 > "$out/summary.json" || true
[ -f "$out/kernel-problems.txt" ] || die "no kernel-problems.txt from guest-run (status $st); see the messages above"
problems=$(wc -l < "$out/kernel-problems.txt")
# What the guest's script said about its set-up (swap, cgroup2, NUMA)
grep -a '^stress: ' "$out/console.log" | tr -d '\r' || true

"$PYTHON" - "$out/summary.json" "$problems" "$st" <<'EOF'
import json, sys
path, problems, rc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
try:
    s = json.load(open(path))
except (OSError, ValueError):
    s = {}
print("stress: %s s, %s victim processes, %s prctl calls, %s walks triggered"
      % (s.get("seconds", "?"), s.get("victims", "?"), s.get("prctl_calls", "?"),
         s.get("walks_triggered", "?")))
print("stress: %s contract violations injected; SIGSEGV expected %s, seen %s;"
      " wrong outcomes %s" % (s.get("violations_injected", "?"),
                              s.get("segv_expected", "?"), s.get("segv_seen", "?"),
                              s.get("wrong", "?")))
sc = s.get("scenarios", {})
if sc and "victim_alarm_s" in s:
    name = max(sc, key=lambda n: sc[n]["max_s"])
    print("stress: slowest victim %s %.1f s of the %d s alarm (%.2f); exposed runs %d"
          % (name, sc[name]["max_s"], s["victim_alarm_s"],
             sc[name]["max_s"] / s["victim_alarm_s"],
             sum(v.get("exposed", 0) for v in sc.values())))
    race = s["race_register"]
    print("stress: fork retries %d; void runs %d; race-register %d of %d rounds,"
          " %d runs cut at %d s" % (s["fork_retries"], s["void_runs"], race["rounds"],
                                    race["rounds_drawn"], race["time_cut"], race["budget_s"]))
    mv = s.get("migrate_signal")
    if mv:
        print("stress: migrate-signal %d of %d moves, %d runs cut at %d s"
              % (mv["moves"], mv["moves_drawn"], mv["time_cut"], mv["budget_s"]))
if sc and "transient_faults" in s:
    tf = s["transient_faults"]
    # More rounds than drawn: a victim goes on until its sibling's first try.
    print("stress: transient faults: %d rounds run, %d drawn, %d runs cut at %d s;"
          " events %s" % (tf["rounds"], tf["rounds_drawn"], tf["time_cut"], tf["budget_s"],
                          ", ".join("%s %d" % (n, v["events"]) for n, v in sorted(sc.items())
                                    if n.startswith("fault-") and v["runs"]) or "none"))
    # Words found at a check on a page that changed frame since the
    # arming: migrated, or dropped and faulted in again.
    print("stress: transient faults: words whose page changed frame before a check: %s"
          % (", ".join("%s %d" % (n, v["moved"]) for n, v in sorted(sc.items())
                       if n.startswith("fault-") and v["runs"]) or "none"))
    # fault-dontneed's checks with a drop of the words' pages in progress
    # at the arming's end or at the check, and the marks found on dropped
    # pages in them: not judged (rseq_op_stress.c, fault_check()).
    dn = sc.get("fault-dontneed")
    if dn and dn["runs"] and "raced_checks" in dn:
        print("stress: fault-dontneed: %d of %d checks with a drop in progress, %d marks"
              " found on dropped pages in them (%d with the drop in progress at the"
              " arming's end), %d in the control: not judged, a store racing with the drop"
              % (dn["raced_checks"], dn["checks"], dn["raced_set"], dn["raced_set_arm"],
                 dn["ctl_raced_set"]))
    # Runs whose event this kernel cannot cause: right outcomes that
    # tested nothing, said here by name and reason.
    for name, u in sorted(s["unsupported"].items()):
        print("stress: unsupported here: %s (%d of %d runs): %s"
              % (name, u["runs"], sc[name]["runs"], u["why"]))
print("stress: kernel problems on the console: %d; guest status %d" % (problems, rc))
EOF
rc=0
if [ "$problems" -gt 0 ]; then
	log "FAILED: the kernel reported problems (first ones below; all in $out/kernel-problems.txt)"
	head -5 "$out/kernel-problems.txt" >&2
	rc=1
fi
if [ ! -s "$out/summary.json" ]; then
	log "FAILED: no summary from the guest (status $st); see $out/console.log"
	rc=1
elif [ "$st" = 1 ]; then
	log "FAILED: wrong outcomes; see $out/guest-stdout.txt and $out/console.log"
	rc=1
elif [ "$st" != 0 ]; then
	log "FAILED: guest status $st; see $out/guest-stdout.txt and $out/console.log"
	rc=1
fi
echo "$out"
exit $rc
