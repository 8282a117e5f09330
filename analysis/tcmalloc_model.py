# SPDX-License-Identifier: GPL-2.0
"""tcmalloc_model - legacy against operations: the TCMalloc model's records
(boot-*/tcmodel.json, microbench/tcmodel.c), its section of the report and
its plot.

A cell is (what, mode, flavour). Each sample record carries the median of
its iterations in TSC ticks and the gate's counts (events, recoveries,
stale uses). As in the main analysis the boot is the unit: a cell's value
is the mean of its per-boot medians with a Student t interval, and two
cells run in the same boots (an event against the plain pair, legacy
against ops) are compared boot by boot (opbench_stats.compare_paired). A
cell whose gate failed in any boot is dropped in every boot and listed.

The same module reads the round trips of the main benchmarks registered
legacy or on glibc's area (groups switch+legacy, switch+glibc, ... of
opbench_data.analyse) for the system-wide table.
"""
import collections
import json
import os
import textwrap

import numpy as np

import opbench_stats as st

WIDTH = 72
RULE = "-" * WIDTH
MODES = ("legacy", "ops")
# The cells that time one event (or none, syscall) followed by one pair.
EVENTS = ("recovery", "syscall", "signal", "fence", "preempt", "migrate")
EVENT_TEXT = {
    "recovery": "word invalidated by hand (the kernel's store, from user "
                "space): the recovery alone",
    "syscall": "getppid(): no event, nothing to invalidate",
    "signal": "raise(), empty handler",
    "fence": "membarrier RSEQ fence of the thread's own CPU",
    "preempt": "preemption by a SCHED_FIFO waker (its run included)",
    "migrate": "sched_setaffinity() to the other CPU",
}
ICOUNT_NOT_QUOTED = {
    "migrate": "under icount the TSC counts both vCPUs' instructions",
}
ROUND_TRIPS = ("syscall", "switch", "signal")
COLOURS = {"legacy": "tab:orange", "ops": "tab:blue"}


def _num(x, signed=False):
    if x is None:
        return "-"
    s = "%.1f" % x if abs(x) < 1e4 else "%.0f" % x
    return ("+" + s) if signed and not s.startswith("-") else s


def _ci(c):
    if not c or c[0] is None:
        return "[no interval]"
    return "[%s, %s]" % (_num(c[0], True), _num(c[1], True))


def load(run):
    """Every boot's tcmodel records: {boot index: [record, ...]}."""
    out = {}
    for b in run["boots"]:
        p = os.path.join(run["dir"], b["dir"], "tcmodel.json")
        if not os.path.exists(p):
            continue
        recs = []
        with open(p) as f:
            for i, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    recs.append(json.loads(line))
                except ValueError as e:
                    raise ValueError("%s line %d: %s" % (p, i, e))
        out[b["index"]] = recs
    return out


def _scale(recs, accel, where):
    """Ticks to the unit, from the boot's tcmodel clock records."""
    clock = [r for r in recs if r.get("kind") == "clock"]
    if not clock:
        return None
    tpi = float(np.median([r["ticks_per_insn"] for r in clock]))
    if accel == "icount":
        if abs(tpi - 1.0) > 1e-3:
            raise ValueError("%s: tcmodel's clock shows %.4f ticks per "
                             "instruction under icount, not 1" % (where, tpi))
        return 1.0
    return float(np.median([r["ns_per_tick"] for r in clock]))


def analyse(run, a):
    """The model's section of the analysis, or None without records."""
    per = load(run)
    if not any(per.values()):
        return None
    flavour_of = {b["index"]: b["flavour"] for b in run["boots"]}
    samples = collections.defaultdict(lambda: collections.defaultdict(list))
    counts = collections.defaultdict(collections.Counter)
    bad = collections.defaultdict(list)
    unsupported = {}
    for boot, recs in sorted(per.items()):
        fl = flavour_of[boot]
        scale = _scale(recs, a["accel"], "boot %d" % boot)
        for r in recs:
            if r.get("no_ops") or r.get("kind") not in ("tcm",
                                                          "tcm-unsupported"):
                continue
            key = (r["what"], r["mode"], fl)
            if r["kind"] == "tcm-unsupported":
                unsupported[key] = r["why"]
            elif r["kind"] == "tcm":
                c = counts[key]
                for f in ("events", "recoveries", "stale", "slow", "aborts"):
                    c[f] += r[f]
                c["samples"] += 1
                if not r["valid"]:
                    bad[key].append({"boot": boot, "sample": r["sample"],
                                     "why": r["why"]})
                elif r["timed"] and scale is not None:
                    samples[key][boot].append(r["tsc_median"] * scale)
    for key in bad:
        samples.pop(key, None)
    cells = {}
    for key, per_boot in sorted(samples.items()):
        e = st.estimate(per_boot, key=("tcm",) + key)
        e["per_boot"] = {str(b): float(np.median(v))
                         for b, v in sorted(per_boot.items())}
        cells[key] = e
    flavours = [f for f in a["flavours"]
                if any(k[2] == f for k in list(cells) + list(unsupported))]
    out = {"flavours": flavours, "cells": [], "events": [], "modes": [],
           "gates": [], "invalid": [], "unsupported": [], "getcpu": [],
           "round_trips": round_trips(a)}
    for (what, mode, fl), e in sorted(cells.items()):
        out["cells"].append(dict(e, what=what, mode=mode, flavour=fl))
    for (what, mode, fl), c in sorted(counts.items()):
        out["gates"].append(dict(c, what=what, mode=mode, flavour=fl,
                                 valid=(what, mode, fl) not in bad))
    for (what, mode, fl), xs in sorted(bad.items()):
        for x in xs:
            out["invalid"].append(dict(x, what=what, mode=mode, flavour=fl))
    for (what, mode, fl), why in sorted(unsupported.items()):
        out["unsupported"].append({"what": what, "mode": mode,
                                   "flavour": fl, "why": why})
    # Per event: the iteration against the plain pair, boot by boot.
    for fl in flavours:
        for mode in MODES:
            pair = samples.get(("pair", mode, fl))
            for ev in EVENTS:
                x = samples.get((ev, mode, fl))
                if not pair or not x:
                    continue
                c = st.compare_paired(pair, x, key=("tcm-ev", ev, mode, fl))
                out["events"].append({
                    "what": ev, "mode": mode, "flavour": fl,
                    "cost": c["diff"], "ci": c["diff_ci"],
                    "boots": c["paired_boots"],
                    "quoted": not (a["accel"] == "icount"
                                   and ev in ICOUNT_NOT_QUOTED)})
        # ops against legacy, cell by cell, in the same boots.
        for what in ("pair",) + EVENTS:
            lg, op = samples.get((what, "legacy", fl)), samples.get(
                (what, "ops", fl))
            if lg and op:
                c = st.compare_paired(lg, op, key=("tcm-mode", what, fl))
                out["modes"].append({
                    "what": what, "flavour": fl, "legacy": c["ref_value"],
                    "ops": c["value"], "diff": c["diff"],
                    "ci": c["diff_ci"], "verdict": c["verdict"],
                    "quoted": not (a["accel"] == "icount"
                                   and what in ICOUNT_NOT_QUOTED)})
        fb, rs = samples.get(("getcpu", "legacy", fl)), samples.get(
            ("getcpu", "ops", fl))
        if fb and rs:
            c = st.compare_paired(fb, rs, key=("tcm-getcpu", fl))
            out["getcpu"].append({"flavour": fl, "fallback": c["ref_value"],
                                  "rseq": c["value"], "diff": c["diff"],
                                  "ci": c["diff_ci"]})
    return out


def round_trips(a):
    """syscall, switch and signal registered legacy against glibc's area
    with 0 and 1 operation, per flavour, from the main analysis' groups."""
    rows = []
    cells = {}
    for g in a["groups"]:
        if g["reg"] not in ("legacy", "glibc"):
            continue
        base = g["bench"].split("+")[0]
        for c in g["cells"]:
            cells[(base, g["reg"], c["flavour"], c["nr_ops"])] = c
    for bench in ROUND_TRIPS:
        for fl in a["flavours"]:
            ref = cells.get((bench, "legacy", fl, 0))
            if not ref:
                continue
            row = {"bench": bench, "flavour": fl, "legacy": ref["value"],
                   "legacy_ci": ref["ci"], "glibc": {}}
            for n in (0, 1):
                c = cells.get((bench, "glibc", fl, n))
                if not c:
                    continue
                d = st.compare_paired(ref["samples"], c["samples"],
                                      key=("tcm-rt", bench, fl, n))
                row["glibc"][str(n)] = {"value": c["value"],
                                        "diff": d["diff"],
                                        "ci": d["diff_ci"],
                                        "verdict": d["verdict"]}
            rows.append(row)
    return rows


def _wrap(text, indent="  "):
    return textwrap.wrap(text, WIDTH, initial_indent=indent,
                         subsequent_indent=indent)


def report_lines(t, a):
    """The report's section "legacy against operations"."""
    unit = a["unit"]
    icount = a["accel"] == "icount"
    lines = [RULE, "Legacy against operations: a TCMalloc model "
             "(microbench/tcmodel.c)", ""]
    lines += textwrap.wrap(
        "legacy: the model's own 32-byte rseq area, glibc's registration "
        "off, the cached slab word's upper half is cpu_id_start. ops: "
        "glibc's v2 area kept, one RSEQ_OP_RESET (NULL source, 8 bytes) "
        "clears the word. Figures: %s per iteration, mean of per-boot "
        "medians, 95%% CI over boots.%s" % (
            unit, " Instructions, not time." if icount else ""), WIDTH)
    cell = {(c["what"], c["mode"], c["flavour"]): c for c in t["cells"]}
    for fl in t["flavours"]:
        lines += ["", "%s kernel" % fl]
        p = {m: cell.get(("pair", m, fl)) for m in MODES}
        lines.append("  allocation+free pair, steady state: %s" % ", ".join(
            "%s %s" % (m, _num(p[m]["value"]) if p[m] else "n/a")
            for m in MODES))
        evs = [e for e in t["events"] if e["flavour"] == fl]
        if evs:
            lines.append("  per event, beyond the pair (its recovery "
                         "included):")
            lines.append("    %-9s %-8s %9s  %s" % ("event", "mode", "cost",
                                                  "95% CI"))
            for e in sorted(evs, key=lambda e: (EVENTS.index(e["what"]),
                                                e["mode"])):
                lines.append(("    %-9s %-8s %9s  %-20s%s" % (
                    e["what"], e["mode"], _num(e["cost"], True),
                    _ci(e["ci"]), "" if e["quoted"] else
                    "  (not quoted)")).rstrip())
        mods = [x for x in t["modes"] if x["flavour"] == fl]
        if mods:
            lines.append("  ops against legacy, same boots (ops - legacy):")
            for x in mods:
                lines.append(("    %-9s %9s  %-20s %s" % (
                    x["what"], _num(x["diff"], True), _ci(x["ci"]),
                    ("*" if x["verdict"] == "difference" else "") if
                    x["quoted"] else "  (not quoted)")).rstrip())
        for g in t["getcpu"]:
            if g["flavour"] == fl:
                lines += _wrap("glibc's sched_getcpu(): %s through its rseq "
                               "area, %s with its registration off (the "
                               "fallback); rseq saves %s %s per call." % (
                                   _num(g["rseq"]), _num(g["fallback"]),
                                   _num(-g["diff"]), _ci(
                                       [-g["ci"][1], -g["ci"][0]]
                                       if g["ci"] else None)))
        na = [u for u in t["unsupported"] if u["flavour"] == fl]
        modes_na = sorted({(u["mode"], u["why"]) for u in na})
        for m, why in modes_na:
            lines += _wrap("%s mode n/a here: %s" % (m, why))
    lines += ["", "Gate (every cell; stale uses must be 0)"]
    lines.append("  %-8s %-7s %-8s %8s %11s %6s" % (
        "flavour", "mode", "cell", "events", "recoveries", "stale"))
    order = list(EVENTS) + ["pair", "getcpu", "remote"]
    for g in sorted(t["gates"], key=lambda g: (
            t["flavours"].index(g["flavour"]) if g["flavour"] in
            t["flavours"] else 99, g["mode"],
            order.index(g["what"]) if g["what"] in order else 99)):
        lines.append("  %-8s %-7s %-8s %8d %11d %6d %s" % (
            g["flavour"][:8], g["mode"], g["what"], g["events"],
            g["recoveries"], g["stale"], "ok" if g["valid"] else "FAILED"))
    lines += _wrap("remote is a gate only: a drainer on the other CPU stops "
                   "the worker's CPU and fences it, TCMalloc's cross-CPU "
                   "drain. Only its stale count proves anything: the slow "
                   "path uncaches the word while the CPU is stopped. "
                   "preempt's events are the preemptions the worker saw.")
    excl = sorted({e["what"] for e in t["events"] if not e["quoted"]})
    for w in excl:
        lines += _wrap("%s is not quoted: %s." % (w, ICOUNT_NOT_QUOTED[w]))
    if t["invalid"]:
        lines.append("  Invalid (dropped in every boot):")
        for x in t["invalid"]:
            lines += _wrap("%s %s %s boot %d sample %d: %s" % (
                x["what"], x["mode"], x["flavour"], x["boot"], x["sample"],
                x["why"]), "    ")
    rt = t["round_trips"]
    if rt:
        lines += ["", "Round trips by registration: legacy 32-byte area "
                  "against glibc's v2", "area with 0 and 1 operation "
                  "(%s per loop; diff against legacy)" % unit]
        lines.append("  %-8s %-8s %9s %20s %20s" % (
            "bench", "flavour", "legacy", "glibc N=0", "glibc N=1"))
        for r in rt:
            cols = []
            for n in ("0", "1"):
                g = r["glibc"].get(n)
                cols.append("%s %s" % (_num(g["diff"], True),
                                       "*" if g["verdict"] == "difference"
                                       else " ") if g else "n/a")
            lines.append(("  %-8s %-8s %9s %20s %20s" % (
                r["bench"], r["flavour"][:8], _num(r["legacy"]), cols[0],
                cols[1])).rstrip())
        lines += _wrap("* difference at 95% confidence (paired over boots). "
                       "The intervals are in analysis.json.")
    return lines


def plot(t, a, run, outdir, save, title):
    """Cost per event, legacy against ops, with intervals: one panel per
    flavour, bars per event, and ops less legacy (paired) written over
    each pair."""
    import matplotlib.pyplot as plt
    evs = [e for e in t["events"] if e["quoted"] and e["what"] != "syscall"]
    if not evs:
        return []
    fls = [f for f in t["flavours"] if any(e["flavour"] == f for e in evs)]
    fig, axes = plt.subplots(1, len(fls), figsize=(8, 5), squeeze=False,
                             sharey=True)
    for ax, fl in zip(axes[0], fls):
        names = [w for w in EVENTS if any(e["what"] == w and e["flavour"] == fl
                                          for e in evs)]
        x = np.arange(len(names))
        for i, mode in enumerate(MODES):
            vals, lo, hi = [], [], []
            for w in names:
                e = next((e for e in evs if e["what"] == w and e["mode"] == mode
                          and e["flavour"] == fl), None)
                v = e["cost"] if e else np.nan
                vals.append(v)
                c = e["ci"] if e and e["ci"] else [v, v]
                lo.append(v - c[0])
                hi.append(c[1] - v)
            if all(np.isnan(vals)):
                continue
            ax.bar(x + (i - 0.5) * 0.4, vals, 0.4, yerr=[lo, hi], capsize=3,
                   label=mode, color=COLOURS[mode])
        # The difference that matters, ops less legacy in the same boots,
        # written over each pair of bars.
        for j, w in enumerate(names):
            d = next((m for m in t["modes"] if m["what"] == w
                      and m["flavour"] == fl), None)
            top = max((e["ci"][1] for e in evs if e["what"] == w
                       and e["flavour"] == fl and e["ci"]), default=None)
            if d and d["diff"] is not None and top is not None:
                ax.annotate("ops %+.0f" % d["diff"], (x[j], top),
                            textcoords="offset points", xytext=(0, 4),
                            ha="center", fontsize=8)
        ax.set_xticks(x)
        ax.set_xticklabels(names, rotation=30)
        ax.set_title("%s kernel" % fl)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("%s per event, beyond one pair" % a["unit"])
    for ax in axes[0]:
        if ax.get_legend_handles_labels()[0]:
            ax.legend()
    fig.suptitle(title(a, run, "TCMalloc model: cost per event, legacy "
                       "against operations (95% CI)"), fontsize=9)
    fig.tight_layout()
    return save(fig, outdir, "tcmalloc-events")
