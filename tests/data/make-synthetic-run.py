#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""make-synthetic-run.py - write a results directory with known answers.

    tests/data/make-synthetic-run.py DIR [--accel icount|tcg]

Ten boots (five rounds of baseline and ops, in a shuffled order) of two
benchmarks, in the layout microbench/bench.sh writes, from a seeded
generator:
  syscall  252.4 per loop on every kernel and every N (no walk)
  switch   4456.0 on baseline; ops at N=0 is 4455.0; ops at N >= 1 is
           4650 + 90.4 x N (45.2 per operation per walk, 2 walks per loop)
  noise    normal, sd 1.5 within a boot, plus sd 0.5 between boots
  gate     one sample of switch on ops at N=64 in boot 4 fails its
           per-iteration gate: the cell is dropped in every boot
  clock    one clock record per boot: 1 tick per instruction, 1 ns per tick
tests/test_analysis.py checks the analysis recovers these answers, and the
report against tests/data/synthetic-report.txt (regenerate both with
tests/test_analysis.py --regen ... see that file).
"""
import argparse
import json
import os

import numpy as np

NS = [0, 1, 2, 4, 8, 16, 32, 64]
SAMPLES = 8
BOOTS = 5


def truth(bench, flavour, n):
    if bench == "syscall":
        return 252.4
    if flavour == "baseline":
        return 4456.0
    return 4455.0 if n == 0 else 4650.0 + 90.4 * n


def boot_records(rng, bench, flavour, boot, shift):
    out = []
    for n in NS:
        head = {"bench": bench, "flavour": flavour,
                "kernel": "7.2.13-%s" % flavour, "nr_ops": n,
                "op_type": "null", "reg": "own", "cpu": 1}
        if flavour == "baseline" and n > 0:
            out.append(dict(head, kind="unsupported", errno=22,
                            why="kernel without RSEQ operations"))
            continue
        sw = 0.0 if bench == "syscall" else 1.0
        for s in range(SAMPLES):
            v = truth(bench, flavour, n) + shift + rng.normal(0, 1.5)
            ok = not (bench == "switch" and flavour == "ops" and n == 64
                      and boot == 4 and s == 2)
            out.append(dict(head, kind="sample", sample=s, loops=1000,
                            loop="getppid" if bench == "syscall" else
                            "yield round trip (2 switches)",
                            clock="tsc", tsc_median=round(v, 3),
                            tsc_p10=round(v - 2, 3), tsc_p90=round(v + 2, 3),
                            tsc_mean=round(v + 3, 3), counted=1000,
                            outliers=1, expect="none" if bench == "syscall"
                            else "switch", walked=0 if bench == "syscall"
                            or n == 0 else 1000 if ok else 990,
                            no_event=0, partial=0, missed=0 if ok else 10,
                            unexpected=0, partner_violations=0,
                            better="lower",
                            walks_per_loop=0 if bench == "syscall" else 2,
                            switches_per_loop=sw, valid=ok,
                            why="" if ok else
                            "an expected walk did not happen"))
        exp = n if bench == "switch" else 0
        out.append(dict(head, kind="gate", check="walk-after-switch",
                        resets_expected=exp, resets_seen=exp,
                        valid=True, detail="synthetic"))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--accel", default="icount")
    args = ap.parse_args()
    rng = np.random.default_rng(20261203)
    order = []
    for _ in range(BOOTS):
        order += list(rng.permutation(["baseline", "ops"]))
    os.makedirs(args.dir)
    with open(os.path.join(args.dir, "provenance"), "w") as f:
        f.write("plan=synthetic\naccel_requested=%s\n"
                "boot_order=%s\nboots_per_flavour=5\nseed=4242\n"
                "ops=0,1,2,4,8,16,32,64 loops=1000 samples=8 warmup=1\n"
                "host_kernel=6.1.0-test\nhost_cpu=Test CPU\nhost_cpus=2\n"
                "qemu=QEMU emulator version 7.2.22\nimage_suite=trixie\n"
                "image_recipe=0123456789abcdef\nimage_perf=6.12\n"
                "image_bpftrace=0.23.2\nproject_commit=0000000000000000\n"
                "command=microbench/bench.sh\n" % (args.accel, " ".join(order)))
    with open(os.path.join(args.dir, "manifest"), "w") as f:
        f.write("source_version=7.2.13-1\nopbench_sha256=0123456789abcdef\n")
    for i, fl in enumerate(order, 1):
        d = os.path.join(args.dir, "boot-%d-%s" % (i, fl))
        os.makedirs(d)
        shift = rng.normal(0, 0.5)
        recs = [{"kind": "clock", "flavour": fl, "kernel": "7.2.13-" + fl,
                 "clock": "tsc", "insns": 200000, "ticks": 200000,
                 "ticks_per_insn": 1.0, "ns_per_tick": 1.0}]
        for bench in ("syscall", "switch"):
            recs += boot_records(rng, bench, fl, i, shift)
        with open(os.path.join(d, "opbench.json"), "w") as f:
            for r in recs:
                f.write(json.dumps(r, separators=(",", ":")) + "\n")
        with open(os.path.join(d, "kernel-provenance"), "w") as f:
            f.write("flavour=%s\nkernel_release=7.2.13-%s\n"
                    "source_package=linux-source-7.2\nsource_version=7.2.13-1\n"
                    "series_hash=%s\nseries_patches=%s\n"
                    "config_hash=42b266868f7f4dd7\n"
                    "config_fragments=opbench.config\n"
                    "toolchain=trixie trixie-0123456789abcdef gcc "
                    "(Debian 14.2.0-19) 14.2.0\n"
                    "compiler=gcc (Debian 14.2.0-19) 14.2.0\n"
                    "cc_has_asm_goto_output=y\npreempt=full\n"
                    "mitigations=on\n" % (
                        fl, fl, "70c40deeb4d55747" if fl == "ops" else "none",
                        "5" if fl == "ops" else "0"))
        with open(os.path.join(d, "tsc.txt"), "w") as f:
            f.write("[    0.000000] tsc: Fast TSC calibration using PIT\n"
                    "[    1.234567] tsc: Refined TSC clocksource "
                    "calibration: 1000.000 MHz\n")
        with open(os.path.join(d, "perf-bench.txt"), "w") as f:
            f.write("== syscall basic\n# Running 'syscall/basic' benchmark"
                    ":\n# Executed 200000 getppid() calls\n     Total time:"
                    " 0.050 [sec]\n\n       %.6f usecs/op\n"
                    "== sched pipe -T\n       %.6f usecs/op\n" % (
                        0.250 + rng.normal(0, 0.0003),
                        5.1 + rng.normal(0, 0.01)))
        with open(os.path.join(d, "guest-info.txt"), "w") as f:
            f.write("clocksource: tsc\ncpus: 2\ncpu_model: QEMU TCG CPU\n"
                    "glibc: ldd (Debian GLIBC 2.41-12) 2.41\n"
                    "vuln_spectre_v2: Mitigation: Retpolines\n")
        cmd = ["qemu-system-x86_64", "-smp", "2", "-accel", "tcg", "-cpu",
               "max"]
        if args.accel == "icount":
            cmd += ["-icount", "shift=0,align=off,sleep=off"]
        with open(os.path.join(d, "vm.json"), "w") as f:
            json.dump({"accel": args.accel, "smp": 2, "pin": None,
                       "qemu_command": cmd,
                       "guest_command": ["./guest-bench.sh"]}, f)


if __name__ == "__main__":
    main()
