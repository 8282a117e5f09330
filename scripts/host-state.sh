#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# host-state.sh - the state of this machine that moves a time measurement,
# as key=value lines (the run's provenance and the report's header), or
# with --advice, what to change before measuring time, one line each.
#
# Usage: host-state.sh [--advice]
# Env:   SYSROOT  a directory standing for / (tests point it at a fake
#                 sysfs and procfs); default: the real one.
#
# What it reads, in the manner of pyperf's `system show`: the CPU model
# and the CPUs online; SMT; the cpufreq driver, governors and turbo
# (intel_pstate's no_turbo or cpufreq's boost); isolated and nohz_full
# CPUs; transparent huge pages; perf_event_paranoid and whether a CPU PMU
# is there; KVM's halt polling; the clocksource; ASLR; the kernel command
# line; whether the CPU flags say "hypervisor" (this machine is a virtual
# machine: its native times are a guest's). A file that does not exist
# reads as "none"; nothing is written.
#
# POSIX sh, coreutils and sed: the kit (make kit) runs it on any x86-64
# Linux with nothing else installed.
set -u

root=${SYSROOT:-}
cpu=$root/sys/devices/system/cpu

# rd FILE: its first line, or "none".
rd() {
	if [ -r "$1" ]; then
		head -n 1 "$1" 2>/dev/null || echo none
	else
		echo none
	fi
}

# per_cpu FILE: the distinct values of cpu*/FILE across the CPUs,
# comma-separated in CPU order ("performance", "performance,powersave").
per_cpu() {
	seen=
	for f in "$cpu"/cpu[0-9]*/"$1"; do
		[ -r "$f" ] || continue
		v=$(rd "$f")
		case ",$seen," in *",$v,"*) ;; *) seen=${seen:+$seen,}$v ;; esac
	done
	echo "${seen:-none}"
}

# The selected value of a sysfs "a [b] c" choice.
chosen() {
	v=$(rd "$1")
	case $v in
	*"["*"]"*) v=${v#*[}; echo "${v%%]*}" ;;
	*) echo "$v" ;;
	esac
}

model=$(sed -n 's/^model name[[:space:]]*: //p' "$root/proc/cpuinfo" 2>/dev/null | head -n 1)
online=$(rd "$cpu/online")
smt=$(rd "$cpu/smt/active")
case $smt in 1) smt=on ;; 0) smt=off ;; esac
driver=$(per_cpu cpufreq/scaling_driver)
governor=$(per_cpu cpufreq/scaling_governor)
# Turbo: intel_pstate says no_turbo (1: off); acpi-cpufreq and others say
# boost (1: on).
if [ -r "$cpu/intel_pstate/no_turbo" ]; then
	case $(rd "$cpu/intel_pstate/no_turbo") in 1) turbo=off ;; 0) turbo=on ;; *) turbo=unknown ;; esac
elif [ -r "$cpu/cpufreq/boost" ]; then
	case $(rd "$cpu/cpufreq/boost") in 1) turbo=on ;; 0) turbo=off ;; *) turbo=unknown ;; esac
else
	turbo=none
fi
isolated=$(rd "$cpu/isolated")
[ -n "$isolated" ] || isolated=none
nohz=$(rd "$cpu/nohz_full")
case $nohz in "" | "(null)") nohz=none ;; esac
thp=$(chosen "$root/sys/kernel/mm/transparent_hugepage/enabled")
paranoid=$(rd "$root/proc/sys/kernel/perf_event_paranoid")
# A CPU PMU: perf's core event source ("cpu", or "cpu_core" on hybrids).
pmu=none
for p in cpu cpu_core cpu_atom armv8_pmuv3_0; do
	if [ -d "$root/sys/bus/event_source/devices/$p" ]; then
		pmu=$p
		break
	fi
done
halt_poll=$(rd "$root/sys/module/kvm/parameters/halt_poll_ns")
clocksource=$(rd "$root/sys/devices/system/clocksource/clocksource0/current_clocksource")
aslr=$(rd "$root/proc/sys/kernel/randomize_va_space")
# The CPUID bit a hypervisor sets for its guests, as /proc/cpuinfo's flags
if grep -q '^flags.*[[:space:]]hypervisor\([[:space:]]\|$\)' "$root/proc/cpuinfo" 2>/dev/null; then
	hypervisor=yes
else
	hypervisor=no
fi

if [ "${1:-}" != --advice ]; then
	echo "host_cpu_model=${model:-unknown}"
	echo "host_cpus_online=$online"
	echo "host_smt=$smt"
	echo "host_cpufreq_driver=$driver"
	echo "host_governor=$governor"
	echo "host_turbo=$turbo"
	echo "host_isolated=$isolated"
	echo "host_nohz_full=$nohz"
	echo "host_thp=$thp"
	echo "host_perf_event_paranoid=$paranoid"
	echo "host_pmu=$pmu"
	echo "host_kvm_halt_poll_ns=$halt_poll"
	echo "host_clocksource=$clocksource"
	echo "host_aslr=$aslr"
	echo "host_hypervisor=$hypervisor"
	echo "host_cmdline=$(rd "$root/proc/cmdline")"
	exit 0
fi

# --advice: one line per setting that moves time, "ok" or what to change.
say() {
	echo "$1"
}
case $hypervisor in
yes) say "hypervisor: yes: this machine is a virtual machine (its CPU flags say so): native times are a guest's, with the hypervisor's exits and steal time in them; measure on a bare machine for a kernel's own cost" ;;
*) say "hypervisor: no: ok" ;;
esac
case $governor in
none) say "governor: no cpufreq here (a VM or a fixed clock): nothing to set" ;;
performance) say "governor: performance: ok" ;;
*) say "governor: $governor: set performance (cpupower frequency-set -g performance, or echo performance into $cpu/cpu*/cpufreq/scaling_governor)" ;;
esac
case $turbo in
on) say "turbo: on: the clock follows load and temperature; turn it off (echo 1 > $cpu/intel_pstate/no_turbo, or echo 0 > $cpu/cpufreq/boost)" ;;
off) say "turbo: off: ok" ;;
*) say "turbo: not exposed here: nothing to set" ;;
esac
case $smt in
on) say "smt: on: a sibling thread shares the core; run on one thread per core (the runners pin) or echo off > $cpu/smt/control" ;;
off) say "smt: off: ok" ;;
*) say "smt: not reported here: check lscpu's Thread(s) per core" ;;
esac
if [ "$isolated" = none ]; then
	say "isolated: none: for the least noise boot with isolcpus=<cpus> nohz_full=<cpus> rcu_nocbs=<cpus> and pin the benchmark there (CPU=)"
else
	say "isolated: $isolated: ok (nohz_full: $nohz); pin the benchmark there"
fi
case $thp in
always) say "thp: always: a first touch may or may not get a huge page; madvise makes runs alike (echo madvise > $root/sys/kernel/mm/transparent_hugepage/enabled)" ;;
*) say "thp: $thp: ok" ;;
esac
if [ "$pmu" = none ]; then
	say "pmu: none: no hardware counters here (a VM without a virtual PMU); cycles and instructions are not counted, time is"
elif [ "$paranoid" != none ] && [ "$paranoid" -gt 1 ] 2>/dev/null; then
	say "pmu: $pmu, perf_event_paranoid $paranoid: opbench counts kernel code too, which needs 1 or less for a user without CAP_PERFMON; run as root or set it to 1"
else
	say "pmu: $pmu (perf_event_paranoid $paranoid): ok"
fi
case $clocksource in
tsc) say "clocksource: tsc: ok" ;;
*) say "clocksource: $clocksource: the kernel does not trust the TSC here; the benchmarks read the TSC all the same, and their clock record says how it compares with CLOCK_MONOTONIC" ;;
esac
if [ "$halt_poll" != none ]; then
	say "kvm halt_poll_ns: $halt_poll: a KVM host; polling trades host CPU for guest wake-up latency: keep it as it is, it is recorded"
fi
exit 0
