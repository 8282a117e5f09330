# SPDX-License-Identifier: GPL-2.0
"""opbench_data - derive every number and verdict of a run from its records.

    opbench_io.load(rdir) -> run   (every file of the run, read once)
    analyse(run)          -> a     (one JSON-serialisable dict)
    opbench_report.render(a), opbench_plots.plot_all(a, outdir) and the
    notebook take only a: they format, they decide nothing.

The records become per-boot cells in opbench_cells (clock checks, gates),
the statistics are opbench_stats', the cross-checks cross_checks', the
sections of the TCMalloc model and of the three designs tcmalloc_model's
and designs'.
"""
import collections

import numpy as np

import opbench_stats as st
import bpf_design
import designs
import latency
import pmu
import tcmalloc_model
from cross_checks import (AGREE, LEGACY_IRQS_OFF_MAX, LEGACY_LIST_LIMIT,
                          WALK_COUNT_TOLERANCE, cross_checks, diff_per_walk,
                          per_walk, slope_per_walk, walk_benches,
                          walk_count_checks)
from opbench_cells import BETTER, accel_of, clocks, collect, cell_detail, \
    mean_cells, preempt_detail
# What the rest of analysis/ and the tests call opbench_data's.
from opbench_io import INCOMPLETE, ResultsError, load, newest_run  # noqa: F401

# The flavour every other is compared with: the unpatched kernel, unless
# the run names its own (a native run: the running kernel, provenance
# "reference").
REFERENCE = "baseline"
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
    "native": ("ns", "ns", "time on this machine's own CPU and running "
               "kernel, no QEMU: TSC ticks converted with the nanoseconds "
               "per tick that opbench measures against CLOCK_MONOTONIC in "
               "every repetition (clock record)"),
}
# How two flavours are compared: the boots independent under icount (their
# spread pooled over the benchmark's cells), boot i of each paired in time
# (tcg, kvm, native: round i of the run).
# A cell's interval: its own spread between boots, or under icount the
# larger of it and the flavour's spread pooled over the benchmark's cells.
SPREAD_RULE = {True: "the interval uses the larger of it and the spread "
                     "pooled over the benchmark's cells",
               False: "the interval uses it (none pooled in time)"}
COMPARISON = {True: "Welch t on per-boot medians",
              False: "paired t on per-boot medians, boot i of each "
                     "flavour (round i) paired"}
# The mission's table: every flavour at N = 0, 1 and the list limit against
# the reference at 0; mission_ns() takes the limit the run's index recorded,
# MISSION_NS is the table of a run without one.
def mission_ns(limit):
    return (0, 1, limit)


MISSION_NS = mission_ns(LEGACY_LIST_LIMIT)
# Benchmarks whose figure under icount is not one thread's cost.
ICOUNT_EXCLUDED = {
    "migrate": "under icount the guest TSC counts the instructions of both "
               "vCPUs, idle loops and spin-waits included, so a migration's "
               "figure is not this thread's cost; it is shown, not quoted",
}


def reference_of(run):
    """The flavour the others are compared with: the run's own choice
    (provenance "reference"), else the unpatched kernel."""
    return run["provenance"].get("reference") or REFERENCE


def flavour_order(run):
    order = []
    for b in run["boots"]:
        if b["flavour"] not in order:
            order.append(b["flavour"])
    order.sort()
    ref = reference_of(run)
    if ref in order:
        order.remove(ref)
        order.insert(0, ref)
    return order



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



def rounds_of(run):
    """Each boot's round. bench-run.sh and native-run.sh run every flavour
    once a round and write the order (provenance boot_order): boot i is in
    round (i - 1) // flavours, whatever boots are missing; a merged run
    writes each boot's round beside it (boot_rounds). A run without
    that order (or one that disagrees with its boot directories) counts
    the boots of each flavour before it instead. A run with an index
    (microbench/plan.py's boots.jsonl) names each boot's round."""
    if run["boots"] and all("round" in b for b in run["boots"]):
        return {b["index"]: b["round"] for b in run["boots"]}
    order = run["provenance"].get("boot_order", "").split()
    nfl = len(set(order))
    # A variant of a boot (opbench_io._variant_boots) is in its round.
    consistent = order and all(b["index"] <= len(order) and
                               order[b["index"] - 1] == b.get("variant_of",
                                                              b["flavour"])
                               for b in run["boots"])
    # A merged run (analysis/merge_runs.py) says each boot's round.
    given = run["provenance"].get("boot_rounds", "").split()
    if consistent and len(given) == len(order) and \
            all(x.isdigit() for x in given):
        return {b["index"]: int(given[b["index"] - 1]) for b in run["boots"]}
    if consistent:
        return {b["index"]: (b["index"] - 1) // nfl for b in run["boots"]}
    seen, out = collections.Counter(), {}
    for b in run["boots"]:
        out[b["index"]] = seen[b["flavour"]]
        seen[b["flavour"]] += 1
    return out


def compare_kernels(pool, rounds, ref, cell, key, family=None, ref_fl=None,
                    fl=None):
    """Two kernels' cells compared as the run's unit allows: under icount
    (pool) a Welch t with each flavour's pooled spread; in time paired by
    round (COMPARISON)."""
    if pool:
        c = st.compare(ref, cell, key=key,
                       spread_ref=(family or {}).get(ref_fl),
                       spread=(family or {}).get(fl))
    else:
        c = st.compare_paired({rounds[b]: v for b, v in ref.items()},
                              {rounds[b]: v for b, v in cell.items()},
                              key=key)
    c["test"] = COMPARISON[pool]
    return c


def compare_kernel_slopes(pool, rounds, m_ref, m, key):
    """Two kernels' cost-model slopes, as compare_kernels compares cells."""
    if pool:
        return st.compare_slopes(m_ref, m)
    return st.compare_slopes_paired(m_ref, m, rounds, key=key)


def fit_models(g, suffix, fl, sub, key, extra, clock, tag=()):
    """One flavour's cost model of SUB ({N: its cell}) into g["cost" +
    SUFFIX], and per walk where a loop has walks: of the cells' medians
    (g["per_walk" + SUFFIX], as the report prints it beside b) and of
    each sample's mean per loop (g["per_walk_mean" + SUFFIX]: what a user
    pays, every iteration and re-walk counted, where the median hides
    them). KEY: the flavour's (bench, type, registration, flavour), which
    mean_cells() reads the records by; TAG tells the fits' keys apart."""
    walks = g["walks_per_loop"]
    model = st.cost_model(sub, key=key + tag)
    if not model:
        return
    g["cost" + suffix][fl] = model
    if not walks:
        return
    g["per_walk" + suffix][fl] = per_walk(model, walks)
    mean = mean_cells(extra, clock, sub, key)
    mmodel = st.cost_model(mean, key=key + ("mean",) + tag) if mean else None
    if mmodel:
        g["per_walk_mean" + suffix][fl] = per_walk(mmodel, walks)


def fit_from(decls, fl, walks):
    """The smallest N a flavour's walk is fitted from: its declaration's
    FIT_FROM (2 where one operation takes a path of its own, off the line
    through the others) in a benchmark with walks per loop, else 1."""
    if not walks:
        return 1
    return int(((decls or {}).get(fl) or {}).get("fit_from") or 1)


def common_models(g, cells, gkey, flavours, col, clock, start=None):
    """When the flavours of a group measured different N (a design whose
    limit is lower: min stops at 64), the same models fitted over the N
    >= 1 they all measured, so that designs are compared on one range:
    g["common_ns"], and "cost_common", "per_walk_common",
    "per_walk_mean_common" by flavour. A fit over a wider range takes in
    what the walk costs up there (ops' chunks above 64), which the other
    design never ran. Nothing when every flavour measured the same N, or
    fewer than two are shared. START: {flavour: the smallest N it is
    fitted from} (fit_from; default 1 for every flavour)."""
    start = start or {fl: 1 for fl in flavours}
    sets = [set(k[4] for k in cells if k[3] == fl and k[4] >= start[fl])
            for fl in flavours]
    sets = [s for s in sets if len(s) >= 2]
    if len(sets) < 2:
        return
    common = set.intersection(*sets)
    if len(common) < 2 or all(s == common for s in sets):
        return
    g["common_ns"] = sorted(common)
    for name in ("cost_common", "per_walk_common", "per_walk_mean_common"):
        g[name] = {}
    for fl in flavours:
        sub = {n: cells[gkey + (fl, n)] for n in [0] + g["common_ns"]
               if gkey + (fl, n) in cells and (n == 0 or n >= start[fl])}
        fit_models(g, "_common", fl, sub, gkey + (fl,), col["extra"], clock,
                   ("common",))


def analyse(run):
    """Every number the report, the plots and the notebook show."""
    accel = accel_of(run)
    # Under icount a boot's median lands on one of a few values: a
    # flavour's between-boot spread is pooled over its cells, and the
    # boots of two flavours are independent. In time (tcg, kvm, native)
    # medians are continuous and a boot's level scales every cell, so a
    # spread pooled over N = 0..2048 is the large N's, many times a small
    # N's own: each cell keeps its own; and the machine drifts, so two
    # flavours are compared round by round.
    pool = accel == "icount"
    rounds = rounds_of(run)
    ref = reference_of(run)
    unit, unit_short, unit_doc = UNITS.get(
        accel, ("ticks", "ticks", "guest TSC ticks, accelerator unknown"))
    clock = clocks(run, accel)
    col = collect(run, clock)
    valid, unsupported, meta = col["valid"], col["unsupported"], col["meta"]
    # Which figure of a sample the run takes (opbench_cells: the median,
    # or in time the trimmed mean), and the TSC's step where recorded.
    metric = col["metric"]
    tsc_steps = sorted({c["tsc_step"] for c in clock.values()
                        if c.get("tsc_step")})
    flavours = flavour_order(run)
    boots_of = collections.Counter(b["flavour"] for b in run["boots"])
    groups = sorted({k[:3] for k in valid} | {k[:3] for k in unsupported}
                    | {k[:3] for k in col["dropped"]})
    # The fast path's bound and the list limit, as the run's index recorded
    # them (from the series and rseq-op-abi.h).
    bound = ((run.get("index") or {}).get("irqs_off_max")
             or LEGACY_IRQS_OFF_MAX)
    limit = ((run.get("index") or {}).get("list_limit")
             or LEGACY_LIST_LIMIT)
    # The flavours' declarations the run was planned with (FIT_FROM).
    decls = (run.get("index") or {}).get("flavour_decls")
    out = {"run": run["name"], "dir": run["dir"], "accel": accel,
           "header": header_facts(run), "mission_ns": list(mission_ns(limit)),
           "confidence": st.CONFIDENCE, "irqs_off_max": bound,
           "list_limit": limit,
           "metric": metric, "tsc_step": tsc_steps,
           "tolerances": {"agree": AGREE,
                          "walk_counts": WALK_COUNT_TOLERANCE},
           "unit": unit, "unit_short": unit_short, "unit_doc": unit_doc,
           "method": st.METHOD if pool else st.METHOD_TIME,
           "reference": ref,
           "comparison": COMPARISON[accel == "icount"],
           "spread_rule": SPREAD_RULE[accel == "icount"],
           "flavours": flavours, "boots_per_flavour": dict(boots_of),
           "clock": {str(k): v for k, v in sorted(clock.items())},
           "tsc_lines": next((b["tsc_lines"] for b in run["boots"]
                              if b["tsc_lines"]), []),
           "clock_values": {
               "ticks_per_insn": sorted({round(c["ticks_per_insn"], 6)
                                         for c in clock.values()}),
               "ns_per_tick": sorted({round(c["ns_per_tick"], 4)
                                      for c in clock.values()}),
               # In time: what converted ticks (the kernel's TSC rate, or
               # the measured one where the two disagree) and by how much
               # the measured rate differed from the kernel's.
               "rate_source": sorted({c["rate_source"] for c in
                                      clock.values() if "rate_source" in c}),
               "rate_why": sorted({c["rate_why"] for c in clock.values()
                                   if "rate_why" in c}),
               "rate_check": sorted(round(c["rate_check"], 5)
                                    for c in clock.values()
                                    if "rate_check" in c),
               "ns_per_tick_kernel": sorted({round(
                   c["ns_per_tick_kernel"], 6) for c in clock.values()
                   if "ns_per_tick_kernel" in c})},
           "orders": {str(k): v for k, v in sorted(col["orders"].items())},
           "groups": [], "invalid": col["invalid"],
           "dropped": [{"bench": k[0], "op_type": k[1], "reg": k[2],
                        "flavour": k[3], "nr_ops": k[4]}
                       for k in col["dropped"]],
           "mission": []}
    # Each flavour's kernel release, as the unsupported cells name it.
    out["kernels"] = {f["flavour"]: f["kernel_release"]
                      for f in out["header"]["flavours"]}
    for bench, op_type, reg in groups:
        gkey = (bench, op_type, reg)
        cells = {k: v for k, v in valid.items() if k[:3] == gkey}
        g = {"bench": bench, "op_type": op_type, "reg": reg,
             "loop": meta.get(bench, {}).get("loop", "loop"),
             "walks_per_loop": meta.get(bench, {}).get("walks_per_loop"),
             "better": meta.get(bench, {}).get("better", BETTER),
             "cells": [], "vs_reference": [], "vs_zero": {}, "cost": {},
             "per_walk": {}, "per_walk_mean": {}, "fit_from": {},
             "fit_from_dropped": {},
             "vs_rfc": [], "headline_excluded":
                 ICOUNT_EXCLUDED.get(bench) if accel == "icount" else None,
             "unsupported": sorted(
                 [k[3], k[4]] for k in unsupported if k[:3] == gkey),
             # Why, in the records' words, per flavour.
             "unsupported_why": {k[3]: why for k, why in sorted(
                 unsupported.items()) if k[:3] == gkey},
             "dropped": sorted([k[3], k[4]] for k in col["dropped"]
                               if k[:3] == gkey)}
        # The headline (its table and its plots) holds each benchmark as
        # designed and quoted under the run's unit; the variants
        # (+scattered, +waker-ops) have their own sections.
        g["headline"] = not g["headline_excluded"] and "+" not in bench
        # Each flavour's between-boot spread, pooled over its cells: under
        # icount a boot's median lands on one of a few values, and five
        # boots of one cell agreeing exactly say little about the next.
        family = {fl: st.pooled_spread([v for k, v in cells.items()
                                        if k[3] == fl])
                  for fl in {k[3] for k in cells}} if pool else {}
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
        g["aa"] = st.aa_floor(pb(ref, 0) or {})
        ref0 = pb(ref, 0)
        for fl in flavours:
            if fl == ref or not ref0:
                continue
            for n in sorted(k[4] for k in cells if k[3] == fl):
                if n not in mission_ns(limit):
                    continue
                c = compare_kernels(pool, rounds, ref0, pb(fl, n),
                                    gkey + ("ref", fl, n), family, ref, fl)
                c.update({"flavour": fl, "nr_ops": n})
                g["vs_reference"].append(c)
        start = {fl: 1 for fl in flavours}
        for fl in flavours:
            ns = sorted(k[4] for k in cells if k[3] == fl)
            if 0 in ns and len(ns) >= 2:
                # N and N = 0 ran in the same boots: paired, so the boot
                # effect they share cancels.
                psp = st.paired_spread(pb(fl, 0),
                                       [pb(fl, n) for n in ns[1:]]) \
                    if pool else None
                rows = []
                for n in ns[1:]:
                    c = st.compare_paired(pb(fl, 0), pb(fl, n),
                                          key=gkey + ("zero", fl, n),
                                          spread=psp)
                    c["nr_ops"] = n
                    rows.append(c)
                g["vs_zero"][fl] = rows
            # A flavour whose single operation takes a path of its own
            # is fitted from N = 2 (its FIT_FROM); N = 1 stays in the
            # cells and in vs_zero, where the designs section prints it.
            # A run that measured fewer than two N from there (the quick
            # plan: 0, 1 and the limit) fits from N = 1 and says so.
            start[fl] = fit_from(decls, fl, g["walks_per_loop"])
            if start[fl] > 1 and sum(1 for n in ns if n >= start[fl]) < 2:
                g["fit_from_dropped"][fl] = start[fl]
                start[fl] = 1
            if start[fl] > 1:
                g["fit_from"][fl] = start[fl]
            fit_models(g, "", fl, {n: pb(fl, n) for n in ns
                                   if n == 0 or n >= start[fl]},
                       gkey + (fl,), col["extra"], clock)
        common_models(g, cells, gkey, flavours, col, clock, start)
        # Ours against the RFC as posted, N by N and slope against slope.
        if "ops" in flavours and "rfc" in flavours:
            for n in sorted(k[4] for k in cells if k[3] == "ops"):
                if pb("rfc", n):
                    c = compare_kernels(pool, rounds, pb("rfc", n),
                                        pb("ops", n), gkey + ("rfc", n),
                                        family, "rfc", "ops")
                    c["nr_ops"] = n
                    g["vs_rfc"].append(c)
            # On the N both were fitted over, where that differs (ops
            # from N = 2: common_models).
            cost = g.get("cost_common") or g["cost"]
            if "ops" in cost and "rfc" in cost:
                g["slopes_vs_rfc"] = s = compare_kernel_slopes(
                    pool, rounds, cost["rfc"], cost["ops"],
                    gkey + ("rfc", "slope"))
                if s:
                    s.update(diff_per_walk(s, g["walks_per_loop"] or 1))
        if g["headline"]:
            for c in g["vs_reference"]:
                out["mission"].append(dict(c, bench=bench, op_type=op_type,
                                           reg=reg))
        out["groups"].append(g)
    # The headline's rows are the primary comparisons (N = 0, 1 and the
    # limit against the unpatched kernel): their marks, adjusted for
    # their number (Holm), beside the marks each row has alone; every
    # other table of the report is exploratory.
    for c, p in zip(out["mission"], st.holm(
            [c.get("p") for c in out["mission"]])):
        c["p_holm"] = p
        c["holm"] = (c["verdict"] == "difference" and p is not None
                     and p < 1 - st.CONFIDENCE)
    out["tsc_calibration"] = tsc_calibration(out["tsc_lines"])
    out["cross"] = cross_checks(out)
    out["walk_benches"] = walk_benches(run.get("index"))
    out["walk_slopes"] = [x for x in (slope_per_walk(out, b)
                                      for b in out["walk_benches"]) if x]
    out["walk_counts"] = walk_count_checks(run.get("walk_counts", []))
    out["perf_bench"] = perf_rows(run, clock, accel, out["groups"])
    out["walker_loops"] = run.get("walker_loops", {})
    out["kernel_size"] = run.get("kernel_size", {})
    # AT_RSEQ_FEATURE_SIZE as each flavour's boots saw it (clock records;
    # none from an opbench before it recorded it)
    fs = {}
    for b in run["boots"]:
        for r in b["records"]:
            if r.get("kind") == "clock" and "rseq_feature_size" in r:
                fs.setdefault(b["flavour"], set()).add(r["rseq_feature_size"])
    out["rseq_feature_size"] = {f: sorted(v) for f, v in sorted(fs.items())}
    # What the run's stages left beside the boots (opbench_io.read_artefacts;
    # None for a run made before the index): bpf_design reads its files.
    out["artefacts"] = run.get("artefacts")
    # The hardware counters, where the run had any (pmu.py).
    out["pmu"] = pmu.status(run)
    counting = pmu.counting_run(run)
    if counting is not None:
        # The counters of the counting pass, its own samples and gates;
        # the timed pass ran without them.
        pcol = collect(counting, clock)
        counted = pmu.analyse(out["groups"], pcol["extra"], pcol["valid"])
    else:
        counted = pmu.analyse(out["groups"], col["extra"], valid)
    for g in out["groups"]:
        g["pmu"] = counted.get((g["bench"], g["op_type"], g["reg"]))
    # The latency step's own problem stays in its section.
    try:
        out["latency"] = latency.analyse(run.get("latency", []), accel,
                                         bound)
    except ResultsError as e:
        out["latency"] = {"error": str(e)}
    # The designs' slopes compared as the run's unit allows; the designs
    # are the flavours the run's index declares (designs.designs_of).
    out["flavour_decls"] = (run.get("index") or {}).get("flavour_decls")
    out["designs"] = designs.analyse(
        out, lambda m_ref, m, key: compare_kernel_slopes(pool, rounds,
                                                         m_ref, m, key))
    out["bpf"] = bpf_design.analyse(out)
    out["tcmalloc"] = tcmalloc_model.analyse(run, out)
    # The run is usable when every cell passed its gate; analyze.py's exit
    # status says so.
    out["invalid_count"] = len(out["invalid"]) + len(
        (out["tcmalloc"] or {}).get("invalid", []))
    out["usable"] = out["invalid_count"] == 0
    return out


def tsc_calibration(tl):
    """The guest kernel's own TSC calibration line, as it printed it."""
    cal = ([ln for ln in tl if "Refined TSC" in ln] +
           [ln for ln in tl if "Detected" in ln or "calibrat" in ln])
    return cal[0].split("] ", 1)[-1] if cal else None


def perf_rows(run, clock, accel, groups):
    """perf's own benchmarks beside ours at N = 0."""
    ours = {"syscall basic": "syscall", "sched pipe -T": "switch"}
    out = {}
    for name, per_fl in sorted(perf_bench(run, clock, accel).items()):
        row = {}
        for fl, per_boot in sorted(per_fl.items()):
            e = st.estimate(per_boot, key=("perf", name, fl))
            g = next((x for x in groups if x["bench"] == ours.get(name)
                      and x["op_type"] == "null"), None)
            mine = next((c for c in (g or {}).get("cells", [])
                         if c["flavour"] == fl and c["nr_ops"] == 0), None)
            e["ours_bench"] = ours.get(name)
            e["ours"] = mine["value"] if mine else None
            e["ratio_ours"] = (mine["value"] / e["value"]
                               if mine and e["value"] else None)
            row[fl] = e
        out[name] = row
    return out


# The host facts the header prints on a line of their own.
HOST_FACTS = ("host_kernel", "host_cpu", "host_cpus")


def header_facts(run):
    """What the report's header says of the run: provenance, the kernels,
    the guest, how QEMU ran it, and whether the flavours differ in
    anything but the series (compiler, configuration)."""
    p = run["provenance"]
    boots = run["boots"]
    first = next((b for b in boots if b["kernel"]), boots[0])
    vm = next((b for b in boots if b["vm"]), {"vm": {}, "launch": {}})
    g = next((b["guest"] for b in boots if b["guest"]), {})
    flavours = []
    for b in boots:
        if b["flavour"] in [f["flavour"] for f in flavours]:
            continue
        k = b["kernel"]
        flavours.append({"flavour": b["flavour"],
                         "kernel_release": k.get("kernel_release"),
                         "series": k.get("series_hash")
                         not in (None, "", "none"),
                         "series_hash": k.get("series_hash"),
                         "series_patches": k.get("series_patches")})
    # The compiler and asm goto, not the build root's key: a re-made root
    # with the same gcc is the same compiler.
    compilers = sorted({(b["kernel"].get("compiler", "?"),
                         b["kernel"].get("cc_has_asm_goto_output", "?"))
                        for b in boots if b["kernel"]})
    configs = sorted(map(str, {b["kernel"].get("config_hash")
                               for b in boots}))
    # What of the host moves time (scripts/host-state.sh), as recorded.
    state = {k[len("host_"):]: v for k, v in p.items()
             if k.startswith("host_") and k not in HOST_FACTS}
    return {"provenance": p, "manifest": run.get("manifest", {}),
            "runner": p.get("runner", "qemu"), "host_state": state,
            "incomplete": run.get("incomplete"),
            "plan": p.get("plan", p.get("profile")),
            "boot_order": [b["flavour"] for b in boots],
            # A merged native run pools each boot's repetitions
            # (opbench_io._pool_units): how many there were, and the
            # kernels with fewer boots than the merge wants.
            "repetitions": sum(len(b.get("reps") or [0]) for b in boots),
            "pooled": bool(p.get("boot_units")),
            "few_boots": p.get("few_boots", ""),
            # Merged before make merge knew boots: repetitions paired.
            "merged_by_repetition": bool(p.get("merged_from"))
            and not p.get("boot_units"),
            "not_run": run.get("not_run", []),
            "kernel": first["kernel"], "flavours": flavours,
            "compilers": [list(c) for c in compilers],
            "compilers_differ": len(compilers) > 1,
            "configs": configs, "configs_differ": len(configs) > 1,
            "qemu_version": p.get("qemu", vm["vm"].get("qemu_version")),
            "launch": vm["launch"], "pin": vm["vm"].get("pin"),
            "guest_command": vm["vm"].get("guest_command", []),
            "guest": g, "guest_cpus": g.get("cpus", vm["vm"].get("smp"))}
