# SPDX-License-Identifier: GPL-2.0
"""opbench_data - read a results directory and derive every statistic from it.

Input, as microbench/bench.sh writes it:
    results/<date>-<label>/provenance            key=value, the run
    results/<date>-<label>/boot-<i>-<flavour>/
        opbench.json        one JSON record per line (sample, gate, unsupported)
        kernel-provenance   key=value, the kernel booted
        vm.json             the launcher's record (accelerator, QEMU command)
        guest-info.txt      key: value, what the guest saw (clocksource, ...)
Output: analyse() returns one JSON-serialisable dict; opbench_report and
opbench_plots render it, and the notebook reloads it.

Mostly records are read. Three inputs are text written for people and
parsed here all the same, until their producers write records: perf bench's
output (parse_perf_bench), bpftrace's printed maps (walk_counts), and the
walker-loops tables (designs.walker_loops).
"""
import collections
import glob
import json
import os
import re

import numpy as np

import opbench_stats as st
import preempt_gaps
import designs
import tcmalloc_model

REFERENCE = "baseline"
# The metric, declared once: the median of a sample's iterations, in TSC
# ticks, converted to the accelerator's unit with the run's clock records.
METRIC = "tsc_median"
BETTER = "lower"
UNITS = {
    "icount": ("instructions", "instr",
               "guest instructions executed, counted by QEMU icount "
               "(shift=0): the TSC advances one tick per instruction, "
               "measured in every boot (clock record). Instructions are not "
               "time: a serialising instruction, stac/clac, a cache or TLB "
               "miss each count one instruction here; nothing is converted"),
    "tcg": ("ns (emulated)", "ns-emul",
            "guest time under QEMU TCG emulation, TSC ticks converted with "
            "the guest's own nanoseconds per tick: emulated time, not "
            "hardware time"),
    "kvm": ("ns", "ns", "guest time under KVM, TSC ticks converted with "
            "the guest's own nanoseconds per tick"),
}
# Under icount a clock record must show this many ticks per instruction.
ICOUNT_TICKS_PER_INSN = 1.0
ICOUNT_TOLERANCE = 1e-3
# The mission's table: every flavour at these N against the reference at 0.
MISSION_NS = (0, 1, 2048)
# Benchmarks whose figure under icount is not one thread's cost.
ICOUNT_EXCLUDED = {
    "migrate": "under icount the guest TSC counts the instructions of both "
               "vCPUs, idle loops and spin-waits included, so a migration's "
               "figure is not this thread's cost; it is shown, not quoted",
}


class ResultsError(Exception):
    """A results directory that cannot be analysed; the message says why."""


def read_kv(path, sep="="):
    d = {}
    if not os.path.exists(path):
        return d
    with open(path) as f:
        for line in f:
            if sep in line:
                k, v = line.rstrip("\n").split(sep, 1)
                d[k.strip()] = v.strip()
    return d


def read_records(path):
    out = []
    with open(path) as f:
        for i, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise ResultsError("%s:%d: not a JSON record (%s); the guest "
                                   "run was probably cut short" % (path, i, e))
    return out


def read_lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [ln.rstrip("\n") for ln in f if ln.strip()]


PERF_SECTION = re.compile(r"^== (.+)$")
PERF_USECS = re.compile(r"^\s*([0-9.]+) usecs/op")


def parse_perf_bench(path):
    """{"syscall basic": usecs per op, "sched pipe -T": ...} from the
    guest's perf-bench.txt; {} when perf bench was not run."""
    out = {}
    sec = None
    for ln in read_lines(path):
        m = PERF_SECTION.match(ln)
        if m:
            sec = m.group(1).strip()
            continue
        m = PERF_USECS.match(ln)
        if m and sec:
            out[sec] = float(m.group(1))
    return out


BOOT_RE = re.compile(r"^boot-(\d+)-(.+)$")


# bench.sh writes this file into a run before its first boot, and
# bench-run.sh removes it once the benchmarks and the tracing are complete:
# a run that still holds it was interrupted or failed half-way (its lines
# say when and how).
INCOMPLETE = "INCOMPLETE"


def newest_run(root):
    """The newest complete benchmark run (with boot records) under root;
    an incomplete one is taken only when named."""
    runs = [d for d in glob.glob(os.path.join(root, "*"))
            if glob.glob(os.path.join(d, "boot-*", "opbench.json"))]
    done = [d for d in runs
            if not os.path.exists(os.path.join(d, INCOMPLETE))]
    if not done:
        raise ResultsError(
            "no complete benchmark run under %s%s; run `make bench` first or "
            "name a results directory" % (root, "" if not runs else
                                          " (incomplete: %s)" % ", ".join(
                                              sorted(map(os.path.basename,
                                                         runs)))))
    return max(done, key=os.path.basename)


def load(rdir):
    """The run in rdir: provenance, boots and their records."""
    if not os.path.isdir(rdir):
        raise ResultsError("%s is not a directory; give a results/<date>-"
                           "<label>/ directory written by make bench" % rdir)
    boots = []
    for d in sorted(glob.glob(os.path.join(rdir, "boot-*"))):
        m = BOOT_RE.match(os.path.basename(d))
        if not m or not os.path.isdir(d):
            continue
        rec = os.path.join(d, "opbench.json")
        vm = {}
        if os.path.exists(os.path.join(d, "vm.json")):
            with open(os.path.join(d, "vm.json")) as f:
                vm = json.load(f)
        boots.append({
            "index": int(m.group(1)), "flavour": m.group(2),
            "dir": os.path.basename(d),
            "records": read_records(rec) if os.path.exists(rec) else [],
            "kernel": read_kv(os.path.join(d, "kernel-provenance")),
            "guest": read_kv(os.path.join(d, "guest-info.txt"), ":"),
            "vm": vm,
            "tsc_lines": read_lines(os.path.join(d, "tsc.txt")),
            "perf_bench": parse_perf_bench(os.path.join(d, "perf-bench.txt")),
        })
    boots.sort(key=lambda b: b["index"])
    if not boots:
        raise ResultsError("%s has no boot-<n>-<flavour>/ directories: not a "
                           "results directory of make bench" % rdir)
    if not any(b["records"] for b in boots):
        raise ResultsError("%s: no boot produced records; see the boots' "
                           "console.log and opbench.log" % rdir)
    return {"dir": os.path.abspath(rdir), "name": os.path.basename(
        os.path.abspath(rdir)), "provenance": read_kv(
            os.path.join(rdir, "provenance")), "boots": boots,
            "manifest": read_kv(os.path.join(rdir, "manifest")),
            "incomplete": (read_kv(os.path.join(rdir, INCOMPLETE))
                           if os.path.exists(os.path.join(rdir, INCOMPLETE))
                           else None),
            "walk_counts": walk_counts(rdir)}


BT_SCALAR = re.compile(r"^@(\w+)\[([^\]]*)\]: (\d+)$")
# guest-trace.sh runs opbench with one warm-up sample before the timed ones.
TRACE_WARMUP = 1


def walk_counts(rdir):
    """The walks bpftrace counted (tracing/rseq_ops_rate.bt, make bench's
    tracing step) beside the loops opbench ran in the same process: one
    {bench, nr_ops, walks, loops, declared} per traced benchmark."""
    out = []
    pat = os.path.join(rdir, "tracing", "*-trace-bpf-ops-rseq_ops_rate-*",
                       "ops", "rseq_ops_rate.bt.out")
    for path in sorted(glob.glob(pat)):
        d = os.path.dirname(path)
        walks = {}
        for ln in read_lines(path):
            m = BT_SCALAR.match(ln)
            if m and m.group(1) == "walks":
                walks[m.group(2)] = int(m.group(3))
        try:
            recs = read_records(os.path.join(d, "opbench.json"))
        except (OSError, ResultsError):
            continue
        timed = [r for r in recs if r.get("kind") in ("sample", "gaps")]
        if not timed:
            continue
        r0 = timed[0]
        bench = r0["bench"]
        loops = int(r0["loops"]) * (len(timed) + TRACE_WARMUP)
        out.append({"bench": bench, "nr_ops": int(r0["nr_ops"]),
                    "walks": walks.get(bench), "loops": loops,
                    "declared": r0.get("walks_per_loop", 1),
                    "measured": walks[bench] / loops
                    if walks.get(bench) else None})
    return out


def accel_of(run):
    accels = {b["vm"].get("accel") for b in run["boots"] if b["vm"]}
    accels.discard(None)
    if len(accels) > 1:
        raise ResultsError("boots ran under different accelerators (%s): "
                           "their figures are not comparable; analyse runs "
                           "made with one ACCEL" % ", ".join(sorted(accels)))
    return accels.pop() if accels else "unknown"


def clocks(run, accel):
    """Each boot's clock: {boot: {"scale": unit per TSC tick, ...}}.

    Under icount a tick must be an instruction, measured in the boot by
    opbench's known loop; a boot whose clock record says otherwise stops
    the analysis, since its figures would be called instructions wrongly.
    Elsewhere a tick is converted with the guest's nanoseconds per tick.
    """
    out = {}
    for b in run["boots"]:
        recs = [r for r in b["records"] if r.get("kind") == "clock"]
        if not recs:
            if any(r.get("kind") == "sample" for r in b["records"]):
                raise ResultsError(
                    "%s: sample records without a clock record: written by "
                    "an older opbench (CLOCK_MONOTONIC batches); run make "
                    "bench again" % b["dir"])
            continue
        tpi = [float(r["ticks_per_insn"]) for r in recs]
        npt = [float(r["ns_per_tick"]) for r in recs]
        c = {"ticks_per_insn": float(np.median(tpi)),
             "ns_per_tick": float(np.median(npt)), "records": len(recs)}
        if accel == "icount":
            bad = [x for x in tpi
                   if abs(x - ICOUNT_TICKS_PER_INSN) > ICOUNT_TOLERANCE]
            if bad:
                raise ResultsError(
                    "%s: under icount the TSC advanced %.4f ticks per "
                    "instruction of a known loop, not 1: its figures are "
                    "not instruction counts (check QEMU's -icount shift=0)"
                    % (b["dir"], bad[0]))
            c["scale"] = 1.0
        else:
            c["scale"] = c["ns_per_tick"]
        out[b["index"]] = c
    return out


def bench_name(r):
    """The benchmark a record belongs to, with its variant: the node
    layout when not packed, a waker that holds operations too, and the
    rseq area when it is not the benchmark's own (legacy, glibc)."""
    name = r["bench"]
    if r.get("reg", "own") != "own":
        name += "+" + r["reg"]
    if r.get("layout", "packed") != "packed":
        name += "+" + r["layout"]
    if r.get("waker_ops"):
        name += "+waker-ops"
    return name


def _cell(r):
    return (bench_name(r), r.get("op_type", "?"), r.get("reg", "?"),
            r["flavour"], int(r["nr_ops"]))


def _sample_why(r):
    return "sample %s: %s" % (r.get("sample"), r.get("why") or "invalid")


def collect(run, clock):
    """Per-boot samples of every cell, and what the gates said.

    A cell is (bench, op type, registration, flavour, N). Its samples from
    one boot count only if every sample record of that cell and boot passed
    its per-iteration gate, every gate record is valid and there is one (a
    cell without any gate record is invalid: nothing proved the operations
    ran). preempt's cells come from "gaps" records, classified here
    (analysis/preempt_gaps.py); a boot's samples are then its per-sample
    median P-gaps. A cell invalid in any boot is dropped in every boot, so
    that no comparison half-uses it; analyse() lists it.
    """
    samples = collections.defaultdict(lambda: collections.defaultdict(list))
    extra = collections.defaultdict(lambda: collections.defaultdict(list))
    gaps = collections.defaultdict(lambda: collections.defaultdict(list))
    gates = collections.defaultdict(list)
    bad_samples = collections.defaultdict(list)
    unsupported = {}
    meta = {}
    orders = {}
    for b in run["boots"]:
        scale = clock.get(b["index"], {}).get("scale", 1.0)
        for r in b["records"]:
            kind = r.get("kind")
            if kind in ("clock",):
                continue
            if kind == "order":
                orders.setdefault(b["index"], []).append(
                    {"bench": bench_name(r), "seed": r.get("seed"),
                     "nr_ops": r.get("nr_ops")})
                continue
            key = _cell(r)
            if kind == "sample":
                if METRIC not in r:
                    raise ResultsError(
                        "%s: a sample record without %s: written by an "
                        "older opbench; run make bench again" % (
                            b["dir"], METRIC))
                if not r.get("valid", False):
                    bad_samples[(key, b["index"])].append(_sample_why(r))
                samples[key][b["index"]].append(float(r[METRIC]) * scale)
                extra[key][b["index"]].append(r)
                meta.setdefault(key[0], {
                    "loop": r.get("loop", "loop"),
                    "walks_per_loop": r.get("walks_per_loop"),
                    "better": r.get("better", BETTER)})
            elif kind == "gaps":
                gaps[key][b["index"]].append(r)
                # The spinner walks once per preemption; a waker holding
                # the operations too walks once more on its way back.
                meta.setdefault(key[0], {
                    "loop": "preemption (P-gap)",
                    "walks_per_loop": 2 if r.get("waker_ops") else 1,
                    "better": "lower"})
            elif kind == "gate":
                gates[(key, b["index"])].append(r)
            elif kind == "unsupported":
                unsupported[key] = r.get("why", "unsupported")
    preempt = {}
    for key, per_boot in gaps.items():
        for boot, recs in per_boot.items():
            # A preemption by another task (a kworker) is a real one, with
            # a walk: accepted only when the counts account for it exactly.
            c = preempt_gaps.combine(recs, foreign_ok=True)
            scale = clock.get(boot, {}).get("scale", 1.0)
            preempt.setdefault(key, {})[boot] = c
            samples[key][boot] = [x * scale for x in c["sample_medians"]]
            if not c["valid"]:
                bad_samples[(key, boot)].extend(c["why"])
    invalid = []
    cell_ok = {}
    for key, per_boot in samples.items():
        for boot, xs in per_boot.items():
            g = gates.get((key, boot), [])
            bad = [x for x in g if not x.get("valid")]
            whys = list(bad_samples.get((key, boot), []))
            if not g and key not in preempt:
                whys.append("no gate record: nothing proved the operations "
                            "ran")
            whys += ["gate %s: %s of %s resets" % (
                x.get("check"), x.get("resets_seen"),
                x.get("resets_expected")) for x in bad]
            if key in preempt:
                # The classifier is authoritative for preempt's gaps.
                whys = list(bad_samples.get((key, boot), []))
            if not xs:
                whys.append("no samples")
            if whys:
                invalid.append({"bench": key[0], "op_type": key[1],
                                "reg": key[2], "flavour": key[3],
                                "nr_ops": key[4], "boot": boot,
                                "samples": len(xs),
                                "why": "; ".join(sorted(set(whys))[:3])})
            cell_ok.setdefault(key, True)
            cell_ok[key] &= not whys
    # Gates that failed where no sample was taken are invalid cells too.
    for (key, boot), g in gates.items():
        if key in samples and boot in samples[key]:
            continue
        bad = [x for x in g if not x.get("valid")]
        if bad:
            invalid.append({"bench": key[0], "op_type": key[1], "reg": key[2],
                            "flavour": key[3], "nr_ops": key[4], "boot": boot,
                            "samples": 0, "why": "gate %s failed, no samples"
                            % bad[0].get("check")})
            cell_ok[key] = False
    invalid.sort(key=lambda x: (x["bench"], x["flavour"], x["nr_ops"],
                                x["boot"]))
    valid = {k: dict(v) for k, v in samples.items() if cell_ok.get(k)}
    dropped = sorted({k for k, ok in cell_ok.items() if not ok})
    return {"valid": valid, "extra": extra, "preempt": preempt,
            "invalid": invalid, "dropped": dropped,
            "unsupported": unsupported, "meta": meta, "orders": orders}


def flavour_order(run):
    order = []
    for b in run["boots"]:
        if b["flavour"] not in order:
            order.append(b["flavour"])
    order.sort()
    if REFERENCE in order:
        order.remove(REFERENCE)
        order.insert(0, REFERENCE)
    return order


def _mean(rows, field):
    xs = [r[field] for r in rows if r.get(field) is not None]
    return float(np.mean(xs)) if xs else None


def cell_detail(extra_boots, loops_field="loops"):
    """What a cell's sample records say beside the figure: switches per
    loop, iterations hit by an interrupt, iterations without the event."""
    rows = [r for b in sorted(extra_boots) for r in extra_boots[b]]
    if not rows:
        return {}
    loops = sum(r.get(loops_field, 0) for r in rows) or 1
    d = {"switches_per_loop": _mean(rows, "switches_per_loop"),
         "outliers_per_loop": sum(r.get("outliers", 0) for r in rows) / loops,
         "no_event_per_loop": sum(r.get("no_event", 0) for r in rows) / loops,
         "counted_per_loop": sum(r.get("counted", 0) for r in rows) / loops,
         "spread_within": float(np.mean([
             (r["tsc_p90"] - r["tsc_p10"]) for r in rows
             if "tsc_p90" in r]))}
    return {k: v for k, v in d.items() if v is not None}


def preempt_detail(per_boot, clock):
    """A preempt cell's gap figures, pooled over its boots (the median
    with its interval comes from the boots, see analyse()), each boot's
    gaps converted with that boot's clock, as its samples are."""
    bs = sorted(per_boot)
    cs = [per_boot[b] for b in bs]

    def pooled(field):
        return np.concatenate([
            np.asarray(per_boot[b][field], dtype=float) *
            clock.get(b, {}).get("scale", 1.0) for b in bs]) \
            if bs else np.array([])
    p, i = pooled("p"), pooled("i")
    n_p = sum(c["n_p"] for c in cs)
    d = {"n_p": int(n_p), "n_i": int(sum(c["n_i"] for c in cs)),
         "tick_coincident": int(sum(c["tick_coincident"] for c in cs)),
         "reconciled": all(c["reconciled"] for c in cs),
         "samples": int(sum(c["samples"] for c in cs)),
         "samples_used": int(sum(c["samples_used"] for c in cs)),
         "disturbed": [w for c in cs for w in c["disturbed"]]}
    d["tick_share"] = d["tick_coincident"] / n_p if n_p else None
    if len(p):
        for q, name in ((10, "p10"), (50, "p50"), (90, "p90"), (99, "p99")):
            d[name] = float(np.percentile(p, q))
    if len(i):
        d["i_median"] = float(np.median(i))
    return d


def perf_bench(run, clock, accel):
    """perf bench figures per flavour and boot, converted to the unit:
    perf reports microseconds of the guest's clock per operation; under
    icount the boot's nanoseconds per tick turn them into instructions."""
    out = {}
    for b in run["boots"]:
        c = clock.get(b["index"])
        if not b["perf_bench"] or not c:
            continue
        for name, us in b["perf_bench"].items():
            v = us * 1000.0
            if accel == "icount":
                v = v / c["ns_per_tick"]
            out.setdefault(name, {}).setdefault(b["flavour"], {})[
                b["index"]] = [v]
    return out


# Two estimates of one cost agree when their ratio is this close to 1.
AGREE = 0.05


def _slope_per_walk(a, bench, fl="ops", per_loop=False):
    """A benchmark's slope per operation per walk (per loop: per_loop)."""
    g = next((x for x in a["groups"] if x["bench"] == bench
              and x["op_type"] == "null"), None)
    m = g and g["cost"].get(fl)
    if not m or not g["walks_per_loop"]:
        return None
    w = 1 if per_loop else g["walks_per_loop"]
    return {"value": m["b"] / w, "ci": [c / w for c in m["b_ci"]]
            if m["b_ci"] else None, "k": m["k"], "bench": bench}


# The series walks lists of up to this many nodes on the exit fast path,
# with interrupts off; longer ones on the slow path with interrupts on
# (RSEQ_OP_IRQS_OFF_MAX in include/linux/rseq_entry.h of the series).
IRQS_OFF_MAX = 64


def _walk_ns(ns):
    """The N whose walk the cross-checks report: the largest N walked
    with interrupts off, when measured, and the largest N."""
    off = [n for n in ns if 0 < n <= IRQS_OFF_MAX]
    return sorted(set(off[-1:] + [ns[-1]]))


def cross_checks(a):
    """The preemption round trip against what the other benchmarks say:
    its slope per walk against switch's (they walk the same list on the
    same path), the slope doubling when the waker holds the operations too,
    the tick's cost (I-gap) not depending on N, and the walk at the
    largest N walked with interrupts off and at the largest N, in both node
    layouts (the stretch the walk adds)."""
    out = []
    pre, sw = _slope_per_walk(a, "preempt"), _slope_per_walk(a, "switch")
    if pre and sw:
        r = pre["value"] / sw["value"] if sw["value"] else None
        out.append({"check": "preempt slope per walk / switch slope per walk",
                    "value": r, "expect": 1.0,
                    "ok": r is not None and abs(r - 1) <= AGREE,
                    "detail": "preempt %.3f %s, switch %.3f %s per "
                              "operation per walk" % (
                                  pre["value"], _ci_text(pre["ci"]),
                                  sw["value"], _ci_text(sw["ci"]))})
    # Per preemption, not per walk: the doubling is the claim checked.
    both = _slope_per_walk(a, "preempt+waker-ops", per_loop=True)
    if pre and not both:
        out.append({"check": "preempt slope, waker with operations too / "
                             "waker without", "value": None, "expect": 2.0,
                    "ok": None, "detail": "not measured in this run (plan "
                    "default's preempt:waker-ops)"})
    if pre and both:
        r = both["value"] / pre["value"] if pre["value"] else None
        out.append({"check": "preempt slope, waker with operations too / "
                             "waker without", "value": r, "expect": 2.0,
                    "ok": r is not None and abs(r / 2 - 1) <= AGREE,
                    "detail": "%.3f against %.3f per operation per "
                              "preemption: two walks per preemption, not "
                              "one" % (both["value"], pre["value"])})
    g = next((x for x in a["groups"] if x["bench"] == "preempt"), None)
    if g:
        im = [(c["flavour"], c["nr_ops"], c["gaps"]["i_median"])
              for c in g["cells"] if c.get("gaps", {}).get("i_median")]
        if len(im) > 1:
            vals = [x[2] for x in im]
            spread = (max(vals) - min(vals)) / min(vals)
            out.append({"check": "I-gap median (a tick, no switch) across "
                                 "N and flavours: (max - min) / min",
                        "value": spread, "expect": 0.0,
                        "ok": spread <= AGREE,
                        "detail": "%s..%s over %d cells" % (
                            _num(min(vals)), _num(max(vals)), len(im))})
    for layout in ("packed", "scattered"):
        name = "preempt" if layout == "packed" else "preempt+scattered"
        grp = next((x for x in a["groups"] if x["bench"] == name), None)
        if not grp:
            if pre:
                out.append({"check": "walk added to a preemption, %s nodes"
                                     % layout, "value": None, "expect": None,
                            "ok": None, "detail": "not measured in this "
                            "run (plan default's preempt:scattered)"})
            continue
        ns = sorted(c["nr_ops"] for c in grp["cells"]
                    if c["flavour"] == "ops")
        if 0 not in ns or len(ns) < 2:
            continue
        # The longest list walked with interrupts off (when measured), and
        # the largest N, which the series walks with them on.
        for n in _walk_ns(ns):
            c = next((r for r in grp["vs_zero"].get("ops", [])
                      if r["nr_ops"] == n), None)
            if not c:
                continue
            off = n <= IRQS_OFF_MAX
            out.append({"check": "walk added to a preemption at N=%d, %s "
                                 "nodes%s" % (n, layout,
                                              ", interrupts off" if off
                                              else ""),
                        "value": c["diff"], "ci": c["diff_ci"],
                        "se": c.get("se"), "expect": None, "ok": None,
                        "irqs_off": off,
                        "detail": "P-gap at N=%d minus at N=0 on ops, "
                                  "paired by boot; %s" % (n, (
                                      "the series walks up to %d nodes on "
                                      "the exit fast path with interrupts "
                                      "off (by its code, not measured "
                                      "here): the interrupts-off stretch "
                                      "the walk adds" % IRQS_OFF_MAX) if off
                                      else ("above %d nodes the series "
                                            "walks on the slow path with "
                                            "interrupts on and preemption "
                                            "off (by its code): the stretch "
                                            "the walk adds to the return, "
                                            "not with interrupts off"
                                            % IRQS_OFF_MAX))})
    return out


def _num(x):
    return "%.1f" % x


def _ci_text(c):
    return "[%.3f, %.3f]" % tuple(c) if c else "[no interval]"


def analyse(run):
    """Every number the report, the plots and the notebook show."""
    accel = accel_of(run)
    unit, unit_short, unit_doc = UNITS.get(
        accel, ("ticks", "ticks", "guest TSC ticks, accelerator unknown"))
    clock = clocks(run, accel)
    col = collect(run, clock)
    valid, unsupported, meta = col["valid"], col["unsupported"], col["meta"]
    flavours = flavour_order(run)
    boots_of = collections.Counter(b["flavour"] for b in run["boots"])
    groups = sorted({k[:3] for k in valid} | {k[:3] for k in unsupported}
                    | {k[:3] for k in col["dropped"]})
    out = {"run": run["name"], "dir": run["dir"], "accel": accel,
           "unit": unit, "unit_short": unit_short, "unit_doc": unit_doc,
           "method": st.METHOD, "reference": REFERENCE,
           "flavours": flavours, "boots_per_flavour": dict(boots_of),
           "clock": {str(k): v for k, v in sorted(clock.items())},
           "tsc_lines": next((b["tsc_lines"] for b in run["boots"]
                              if b["tsc_lines"]), []),
           "orders": {str(k): v for k, v in sorted(col["orders"].items())},
           "groups": [], "invalid": col["invalid"],
           "dropped": [{"bench": k[0], "op_type": k[1], "reg": k[2],
                        "flavour": k[3], "nr_ops": k[4]}
                       for k in col["dropped"]],
           "mission": [], "perf_bench": {}}
    for bench, op_type, reg in groups:
        gkey = (bench, op_type, reg)
        cells = {k: v for k, v in valid.items() if k[:3] == gkey}
        g = {"bench": bench, "op_type": op_type, "reg": reg,
             "loop": meta.get(bench, {}).get("loop", "loop"),
             "walks_per_loop": meta.get(bench, {}).get("walks_per_loop"),
             "better": meta.get(bench, {}).get("better", BETTER),
             "cells": [], "vs_reference": [], "vs_zero": {}, "cost": {},
             "vs_rfc": [], "headline_excluded":
                 ICOUNT_EXCLUDED.get(bench) if accel == "icount" else None,
             "unsupported": sorted(
                 [k[3], k[4]] for k in unsupported if k[:3] == gkey),
             "dropped": sorted([k[3], k[4]] for k in col["dropped"]
                               if k[:3] == gkey)}
        # Each flavour's between-boot spread, pooled over its cells: under
        # icount a boot's median lands on one of a few values, and five
        # boots of one cell agreeing exactly say little about the next.
        family = {fl: st.pooled_spread([v for k, v in cells.items()
                                        if k[3] == fl])
                  for fl in {k[3] for k in cells}}
        g["spread"] = family
        for key, per_boot in sorted(
                cells.items(), key=lambda kv: (flavours.index(kv[0][3])
                                               if kv[0][3] in flavours
                                               else 99, kv[0][4])):
            fl, n = key[3], key[4]
            e = st.estimate(per_boot, key=key, spread=family.get(fl))
            e.update({"flavour": fl, "nr_ops": n, "boots": sorted(per_boot),
                      "per_boot": {str(b): float(np.median(per_boot[b]))
                                   for b in sorted(per_boot)},
                      "samples": per_boot})
            e.update(cell_detail(col["extra"].get(key, {})))
            if key in col["preempt"]:
                e["gaps"] = preempt_detail(col["preempt"][key], clock)
            g["cells"].append(e)

        def pb(fl, n):
            return cells.get(gkey + (fl, n))

        # A/A: the reference flavour at N = 0, the spread between its
        # boots: how far two single boots of one kernel fall apart. It is
        # printed beside the verdicts, not folded into them: the intervals
        # already carry the spread between boots.
        g["aa"] = st.aa_floor(pb(REFERENCE, 0) or {})
        ref0 = pb(REFERENCE, 0)
        for fl in flavours:
            if fl == REFERENCE or not ref0:
                continue
            for n in sorted(k[4] for k in cells if k[3] == fl):
                if n not in MISSION_NS:
                    continue
                c = st.compare(ref0, pb(fl, n), key=gkey + ("ref", fl, n),
                               spread_ref=family.get(REFERENCE),
                               spread=family.get(fl))
                c.update({"flavour": fl, "nr_ops": n})
                g["vs_reference"].append(c)
        for fl in flavours:
            ns = sorted(k[4] for k in cells if k[3] == fl)
            if 0 in ns and len(ns) >= 2:
                # N and N = 0 ran in the same boots: paired, so the boot
                # effect they share cancels.
                psp = st.paired_spread(pb(fl, 0),
                                       [pb(fl, n) for n in ns[1:]])
                rows = []
                for n in ns[1:]:
                    c = st.compare_paired(pb(fl, 0), pb(fl, n),
                                          key=gkey + ("zero", fl, n),
                                          spread=psp)
                    c["nr_ops"] = n
                    rows.append(c)
                g["vs_zero"][fl] = rows
            model = st.cost_model({n: pb(fl, n) for n in ns},
                                  key=gkey + (fl,))
            if model:
                g["cost"][fl] = model
        # Ours against the RFC as posted, N by N and slope against slope.
        if "ops" in flavours and "rfc" in flavours:
            for n in sorted(k[4] for k in cells if k[3] == "ops"):
                if pb("rfc", n):
                    c = st.compare(pb("rfc", n), pb("ops", n),
                                   key=gkey + ("rfc", n),
                                   spread_ref=family.get("rfc"),
                                   spread=family.get("ops"))
                    c["nr_ops"] = n
                    g["vs_rfc"].append(c)
            if "ops" in g["cost"] and "rfc" in g["cost"]:
                g["slopes_vs_rfc"] = st.compare_slopes(g["cost"]["rfc"],
                                                       g["cost"]["ops"])
        # The headline holds each benchmark as designed; its variants
        # (+scattered, +waker-ops) have their own sections.
        if not g["headline_excluded"] and "+" not in bench:
            for c in g["vs_reference"]:
                out["mission"].append(dict(c, bench=bench, op_type=op_type,
                                           reg=reg))
        out["groups"].append(g)
    out["cross"] = cross_checks(out)
    out["walk_counts"] = run.get("walk_counts", [])
    # perf's own benchmarks beside ours at N = 0.
    ours = {"syscall basic": "syscall", "sched pipe -T": "switch"}
    for name, per_fl in sorted(perf_bench(run, clock, accel).items()):
        row = {}
        for fl, per_boot in sorted(per_fl.items()):
            e = st.estimate(per_boot, key=("perf", name, fl))
            g = next((x for x in out["groups"] if x["bench"] == ours.get(name)
                      and x["op_type"] == "null"), None)
            mine = next((c for c in (g or {}).get("cells", [])
                         if c["flavour"] == fl and c["nr_ops"] == 0), None)
            e["ours_bench"] = ours.get(name)
            e["ours"] = mine["value"] if mine else None
            e["ratio_ours"] = (mine["value"] / e["value"]
                               if mine and e["value"] else None)
            row[fl] = e
        out["perf_bench"][name] = row
    out["designs"] = designs.analyse(out)
    try:
        out["tcmalloc"] = tcmalloc_model.analyse(run, out)
    except ValueError as e:
        raise ResultsError("the TCMalloc model's records: %s" % e)
    return out
