#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""make-synthetic-run.py - write a results directory with known answers.

    tests/data/make-synthetic-run.py DIR [--accel icount|tcg]
        [--plan synthetic|walker] [--series-hash HASH] [--kernel KDIR]

--plan synthetic (the default): ten boots (five rounds of baseline and ops,
in a shuffled order) of two benchmarks, in the layout microbench/bench-run.sh
writes, from a seeded generator:
  syscall  252.4 per loop on every kernel and every N (no walk)
  switch   4456.0 on baseline; ops at N=0 is 4455.0; ops at N >= 1 is
           4650 + 90.4 x N (45.2 per operation per walk, 2 walks per loop)
  noise    normal, sd 1.5 within a boot, plus sd 0.5 between boots
  gate     one sample of switch on ops at N=64 in boot 4 fails its
           per-iteration gate: the cell is dropped in every boot
  clock    one clock record per boot: 1 tick per instruction, 1 ns per tick
Its output is fixed: tests/data/synthetic-report.txt is the report of it.

--plan walker: what make bench-walker measures, for the cover letter, the
cross-checks and the comparison with the RFC. Twelve boots (three rounds
of baseline, ops, rfc and resident, shuffled), no failed gate, N in
0, 1, 2, 8, 64, 2048 (preempt: 0, 1, 16, 64, 2048); W is a flavour's
cost per operation per walk (WALK below): ops 45.2, rfc 60.0, resident 6.0.
  syscall  252.4 everywhere, as above
  switch   baseline 4456.0; at N=0 ops 4455.0, rfc 4458.0, resident
           4455.0; at N >= 1 ENTRY + 2 x W x N (two walks per loop):
           ops 4650 + 90.4 N, rfc 4700 + 120.0 N, resident 4600 + 12.0 N.
           So ops - rfc is -3.0 at N=0, -50 - 29.6 N above it; the slope
           per walk, ops minus rfc, -14.8 (ratio 90.4/120 = 0.7533).
  preempt  "gaps" records (microbench/bench-preempt.c): one walk per
           preemption, P-gaps of P0 + W x N ticks (P0: 3000, rfc 3004),
           I-gaps (a tick, no walk) of 800 at every N; twelve P-gaps and
           four I-gaps per sample, counts reconciled. The walk added to a
           preemption on ops is 45.2 x N: +2892.8 at N=64, +92569.6 at
           2048. preempt+scattered (one node per page): W + 0.5 per node
           (a made-up difference, so that the two layouts cannot be
           swapped unseen): +2924.8 at N=64, +93593.6 at 2048 on ops.
  noise    normal, sd 1.5 within a boot (P- and I-gaps: rounded to whole
           ticks), plus sd 0.5 between boots
  loops    walker-loops/<flavour>.txt as bench-run.sh writes it
           (analysis/walker_loops.py's table), LOOPS below; ops's is the
           table of the loop --kernel assembles.
--series-hash: the series_hash in the ops boots' kernel-provenance (what
kernel-patch/scripts/cover-letter.sh checks against the series).
--kernel KDIR: also write a built ops kernel as the manifest names one:
KDIR/bzImage (empty), KDIR/provenance, and KDIR/vmlinux, an object whose
rseq_ops_apply is the loop LOOP_ASM (assembled with as), so that
analysis/walker_loops.py finds exactly LOOPS["ops"] in it.

tests/test_analysis.py and tests/test_cover_letter.py check the analysis,
the report and the cover letter recover these answers. After a deliberate
change of the report's format, regenerate the golden report with
    REGEN_GOLDEN=1 /usr/bin/python3 -m pytest tests/test_analysis.py -k golden
(see tests/test_analysis.py); this script itself has no --regen.
"""
import argparse
import json
import os
import subprocess
import tempfile

import numpy as np

NS = [0, 1, 2, 4, 8, 16, 32, 64]
SAMPLES = 8
BOOTS = 5
SERIES_HASH = "70c40deeb4d55747"
COMPILER = "gcc (Debian 14.2.0-19) 14.2.0"

# --plan walker: the designs of the walk.
WALKER_FLAVOURS = ["baseline", "ops", "rfc", "resident"]
WALKER_NS = [0, 1, 2, 8, 64, 2048]
PREEMPT_NS = [0, 1, 16, 64, 2048]
WALKER_BOOTS = 3
WALKER_SAMPLES = 5
# Per operation per walk, the entry cost of a switch at N >= 1, and of a
# switch and a preemption at N = 0.
WALK = {"ops": 45.2, "rfc": 60.0, "resident": 6.0}
SWITCH_ENTRY = {"ops": 4650.0, "rfc": 4700.0, "resident": 4600.0}
SWITCH_ZERO = {"baseline": 4456.0, "ops": 4455.0, "rfc": 4458.0,
               "resident": 4455.0}
PREEMPT_ZERO = {"baseline": 3000.0, "ops": 3000.0, "rfc": 3004.0,
                "resident": 3000.0}
SCATTERED_EXTRA = 0.5
I_GAP = 800.0
P_GAPS, I_GAPS = 12, 4
PERIOD_US = 331
# --with-bpf: the BPF design beside them (its walk, its entry, its N = 0
# with the program attached), and its N = 0 before the program is loaded
# (bpf-zero.json): bpf-unused (no opt-in), bpf-noprog (opted in).
BPF_WALK = 107.0
BPF_SWITCH_ENTRY = 5100.0
BPF_SWITCH_ZERO = {"bpf": 5144.0, "bpf-unused": 4463.0,
                   "bpf-noprog": 4549.0}
BPF_PREEMPT_ZERO = {"bpf": 3276.0, "bpf-unused": 3006.0,
                    "bpf-noprog": 3012.0}
SERIES = {"ops": (None, 6), "rfc": ("rfc0123456789abc", 4),
          "resident": ("res0123456789abc", 9), "baseline": ("none", 0)}
# walker_loops.py's table per flavour, as bench-run.sh writes it (one run of
# walker_loops.py per flavour): (function, head, end, instructions, loads,
# conditional branches, stac/clac) of each loop.
LOOPS = {"ops": ("rseq_ops_apply", 0x2, 0x25, 11, 3, 2, 2),
         "rfc": ("rseq_apply_ops_or_report", 0x10, 0x6a, 26, 6, 5, 2),
         "resident": ("rseq_ops_apply", 0x40, 0x5c, 9, 3, 2, 0)}


def loops_table(row):
    """walker_loops.py's output for one loop (its format, main())."""
    f, head, end, insns, loads, cond, stac = row
    w = max(len("function"), len(f))
    return ("%-*s  %-19s  %5s  %5s  %7s  %9s\n" % (
        w, "function", "loop", "insns", "loads", "cond-br", "stac/clac") +
        "%-*s  %-19s  %5d  %5d  %7d  %9d\n" % (
            w, f, "+%#x..+%#x" % (head, end), insns, loads, cond, stac))


# The ops walker's loop, as --kernel assembles it into KDIR/vmlinux:
# LOOPS["ops"]: head at +0x2, back edge at +0x25, eleven instructions,
# three loads (the store and the stac/clac pair are not loads), two
# conditional branches, one stac and one clac.
LOOP_ASM = """\
	.text
	.globl	rseq_ops_apply
	.type	rseq_ops_apply, @function
rseq_ops_apply:
	xorl	%eax, %eax
.Lhead:
	stac
	movq	8(%rdi), %rdx
	movq	16(%rdi), %rcx
	clac
	testq	%rcx, %rcx
	je	.Lskip
	movq	$0, (%rdx)
.Lskip:
	movq	(%rdi), %rdi
	addl	$1, %eax
	testq	%rdi, %rdi
	jne	.Lhead
	ret
	.size	rseq_ops_apply, .-rseq_ops_apply
"""


def truth(bench, flavour, n):
    if bench == "syscall":
        return 252.4
    if flavour == "baseline":
        return 4456.0
    return 4455.0 if n == 0 else 4650.0 + 90.4 * n


def walker_truth(bench, flavour, n):
    """--plan walker: a loop's (switch, syscall) or a P-gap's (preempt)
    known cost."""
    if bench == "syscall":
        return 252.4
    if bench == "switch":
        if n == 0:
            return SWITCH_ZERO[flavour]
        return SWITCH_ENTRY[flavour] + 2 * WALK[flavour] * n
    w = WALK.get(flavour, 0.0) + (SCATTERED_EXTRA if bench ==
                                  "preempt+scattered" else 0.0)
    return PREEMPT_ZERO[flavour] + w * n


def boot_records(rng, bench, flavour, boot, shift, ns=NS, samples=SAMPLES,
                 cost=truth, fail=True):
    out = []
    for n in ns:
        head = {"bench": bench, "flavour": flavour,
                "kernel": "7.2.13-%s" % flavour, "nr_ops": n,
                "op_type": "null", "reg": "own", "cpu": 1}
        if flavour == "baseline" and n > 0:
            out.append(dict(head, kind="unsupported", errno=22,
                            why="kernel without RSEQ operations"))
            continue
        sw = 0.0 if bench == "syscall" else 1.0
        for s in range(samples):
            v = cost(bench, flavour, n) + shift + rng.normal(0, 1.5)
            ok = not (fail and bench == "switch" and flavour == "ops" and
                      n == 64 and boot == 4 and s == 2)
            out.append(dict(head, kind="sample", sample=s, loops=1000,
                            loop="getppid" if bench == "syscall" else
                            "yield round trip (2 switches)",
                            clock="tsc", tsc_median=round(v, 3),
                            tsc_p10=round(v - 2, 3), tsc_p90=round(v + 2, 3),
                            tsc_mean=round(v + 3, 3), tsc_trim=round(v, 3),
                            counted=1000,
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


def preempt_records(rng, flavour, shift, layout):
    """bench-preempt.c's records of one boot: per N, one "gaps" record
    per sample (P-gaps and I-gaps interleaved, counts reconciled) and the
    gate."""
    out = []
    name = "preempt" if layout == "packed" else "preempt+scattered"
    for n in PREEMPT_NS:
        head = {"bench": "preempt", "flavour": flavour,
                "kernel": "7.2.13-%s" % flavour, "nr_ops": n,
                "op_type": "null", "reg": "own", "cpu": 1, "layout": layout}
        if flavour == "baseline" and n > 0:
            out.append(dict(head, kind="unsupported", errno=22,
                            why="kernel without RSEQ operations"))
            continue
        bits = 3 if n else 0
        for s in range(WALKER_SAMPLES):
            p = [int(round(walker_truth(name, flavour, n) + shift +
                           rng.normal(0, 1.5))) for _ in range(P_GAPS)]
            i = [int(round(I_GAP + shift + rng.normal(0, 1.5)))
                 for _ in range(I_GAPS)]
            gaps = [[x, 1, bits] for x in p]
            for k, x in enumerate(i):
                gaps.insert(2 * k + 1, [x, 0, 0])
            out.append(dict(head, kind="gaps", sample=s, clock="tsc",
                            threshold=200, ticks_per_us=1000.0,
                            loop_ticks=10, period_us=PERIOD_US,
                            waker_ops=False, loops=P_GAPS, wakeups=P_GAPS,
                            nivcsw=P_GAPS, nvcsw=0, waker_violations=0,
                            truncated=False, bracket_ok=True, gaps=gaps))
        seen = P_GAPS * WALKER_SAMPLES if n else 0
        out.append(dict(head, kind="gate", check="walk-per-preemption",
                        resets_expected=seen, resets_seen=seen, valid=True,
                        detail="synthetic"))
    return out


def write_boot(d, rng, i, fl, accel, series_hash, records):
    """One boot's directory; records(shift) its opbench.json records."""
    os.makedirs(d)
    shift = rng.normal(0, 0.5)
    recs = [{"kind": "clock", "flavour": fl, "kernel": "7.2.13-" + fl,
             "clock": "tsc", "insns": 200000, "ticks": 200000,
             "ticks_per_insn": 1.0, "ns_per_tick": 1.0, "tsc_step": 1}]
    recs += records(shift)
    with open(os.path.join(d, "opbench.json"), "w") as f:
        for r in recs:
            f.write(json.dumps(r, separators=(",", ":")) + "\n")
    with open(os.path.join(d, "kernel-provenance"), "w") as f:
        f.write("flavour=%s\nkernel_release=7.2.13-%s\n"
                "source_package=linux-source-7.2\nsource_version=7.2.13-1\n"
                "series_hash=%s\nseries_patches=%s\n"
                "config_hash=42b266868f7f4dd7\n"
                "config_fragments=opbench.config\n"
                "toolchain=trixie trixie-0123456789abcdef %s\n"
                "compiler=%s\n"
                "cc_has_asm_goto_output=y\npreempt=full\n"
                "mitigations=on\n" % (fl, fl, series_hash[0],
                                      series_hash[1], COMPILER, COMPILER))
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
    cmd = ["qemu-system-x86_64", "-smp", "2", "-accel", "tcg", "-cpu", "max"]
    if accel == "icount":
        cmd += ["-icount", "shift=0,align=off,sleep=off"]
    with open(os.path.join(d, "vm.json"), "w") as f:
        json.dump({"accel": accel, "smp": 2, "pin": None,
                   "qemu_command": cmd,
                   "guest_command": ["./guest-bench.sh"]}, f)


def write_run(args, plan, order, ops, boots):
    os.makedirs(args.dir)
    with open(os.path.join(args.dir, "provenance"), "w") as f:
        f.write("plan=%s\naccel_requested=%s\n"
                "boot_order=%s\nboots_per_flavour=%d\nseed=4242\n"
                "ops=%s loops=1000 samples=%d warmup=1\n"
                "host_kernel=6.1.0-test\nhost_cpu=Test CPU\nhost_cpus=2\n"
                "qemu=QEMU emulator version 7.2.22\nimage_suite=trixie\n"
                "image_recipe=0123456789abcdef\nimage_perf=6.12\n"
                "image_bpftrace=0.23.2\nproject_commit=0000000000000000\n"
                "command=microbench/bench.sh\n" % (
                    plan, args.accel, " ".join(order), boots,
                    ",".join(str(n) for n in ops),
                    SAMPLES if plan == "synthetic" else WALKER_SAMPLES))
    with open(os.path.join(args.dir, "manifest"), "w") as f:
        f.write("source_version=7.2.13-1\nopbench_sha256=0123456789abcdef\n")


def synthetic(args):
    rng = np.random.default_rng(20261203)
    order = []
    for _ in range(BOOTS):
        order += list(rng.permutation(["baseline", "ops"]))
    write_run(args, "synthetic", order, NS, BOOTS)
    for i, fl in enumerate(order, 1):
        write_boot(os.path.join(args.dir, "boot-%d-%s" % (i, fl)), rng, i,
                   fl, args.accel,
                   (args.series_hash, "5") if fl == "ops" else ("none", "0"),
                   lambda shift: [r for bench in ("syscall", "switch")
                                  for r in boot_records(rng, bench, fl, i,
                                                        shift)])


def with_bpf():
    """--with-bpf: the bpf flavour in the tables above."""
    WALKER_FLAVOURS.append("bpf")
    WALK["bpf"] = BPF_WALK
    SWITCH_ENTRY["bpf"] = BPF_SWITCH_ENTRY
    SWITCH_ZERO.update(BPF_SWITCH_ZERO)
    PREEMPT_ZERO.update(BPF_PREEMPT_ZERO)
    SERIES["bpf"] = ("bpf0123456789abc", 1)


def bpf_zero(d, rng, shift):
    """A bpf boot's bpf-zero.json: N = 0 of switch and preempt (packed) as
    bpf-unused and bpf-noprog, as guest-bench.sh writes them."""
    recs = []
    for label in ("bpf-unused", "bpf-noprog"):
        # opbench's clock record, labelled as its cells (-f LABEL)
        recs.append({"kind": "clock", "flavour": label,
                     "kernel": "7.2.13-bpf", "clock": "tsc",
                     "insns": 200000, "ticks": 200000, "ticks_per_insn": 1.0,
                     "ns_per_tick": 1.0})
        recs += [dict(r, via="prctl" if label == "bpf-unused" else "bpf")
                 for r in boot_records(rng, "switch", label, 0, shift, [0],
                                       WALKER_SAMPLES, walker_truth, False)]
        recs += [r for r in preempt_records(rng, label, shift, "packed")
                 if r["nr_ops"] == 0]
    with open(os.path.join(d, "bpf-zero.json"), "w") as f:
        for r in recs:
            f.write(json.dumps(r, separators=(",", ":")) + "\n")


def walker(args):
    rng = np.random.default_rng(20261204)
    order = []
    if args.with_bpf:
        with_bpf()
    for _ in range(WALKER_BOOTS):
        order += list(rng.permutation(WALKER_FLAVOURS))
    write_run(args, "walker", order, WALKER_NS, WALKER_BOOTS)

    def records(fl):
        def make(shift):
            out = []
            for bench in ("syscall", "switch"):
                out += boot_records(rng, bench, fl, 0, shift, WALKER_NS,
                                    WALKER_SAMPLES, walker_truth, False)
            for layout in ("packed", "scattered"):
                out += preempt_records(rng, fl, shift, layout)
            return out
        return make
    for i, fl in enumerate(order, 1):
        h, n = SERIES[fl]
        write_boot(os.path.join(args.dir, "boot-%d-%s" % (i, fl)), rng, i,
                   fl, args.accel, (h or args.series_hash, str(n)),
                   records(fl))
        if fl == "bpf":
            bpf_zero(os.path.join(args.dir, "boot-%d-%s" % (i, fl)), rng,
                     rng.normal(0, 0.5))
    d = os.path.join(args.dir, "walker-loops")
    os.makedirs(d)
    for fl, row in LOOPS.items():
        with open(os.path.join(d, fl + ".txt"), "w") as f:
            f.write(loops_table(row))


def kernel(kdir, series_hash):
    """A built ops kernel, as kernel-build.sh leaves one (what the cover
    letter reads of it)."""
    os.makedirs(kdir, exist_ok=True)
    open(os.path.join(kdir, "bzImage"), "w").close()
    with open(os.path.join(kdir, "provenance"), "w") as f:
        f.write("flavour=ops\nkernel_release=7.2.13-ops\n"
                "source_package=linux-source-7.2\nsource_version=7.2.13-1\n"
                "series_hash=%s\nseries_patches=6\ncompiler=%s\n"
                "cc_has_asm_goto_output=y\npreempt=full\n" % (
                    series_hash, COMPILER))
    with tempfile.TemporaryDirectory() as t:
        src = os.path.join(t, "loop.s")
        with open(src, "w") as f:
            f.write(LOOP_ASM)
        subprocess.run(["as", "--64", "-o", os.path.join(kdir, "vmlinux"),
                        src], check=True)
    with open(os.path.join(kdir, "System.map"), "w") as f:
        f.write("0000000000000000 T rseq_ops_apply\n")


def main():
    ap = argparse.ArgumentParser(
        description="write a results directory with known answers")
    ap.add_argument("dir")
    ap.add_argument("--accel", default="icount")
    ap.add_argument("--plan", choices=("synthetic", "walker"),
                    default="synthetic")
    ap.add_argument("--series-hash", default=SERIES_HASH)
    ap.add_argument("--kernel", metavar="KDIR")
    ap.add_argument("--with-bpf", action="store_true",
                    help="--plan walker: the bpf flavour too")
    args = ap.parse_args()
    if args.plan == "synthetic":
        synthetic(args)
    else:
        walker(args)
    if args.kernel:
        kernel(args.kernel, args.series_hash)


if __name__ == "__main__":
    main()
