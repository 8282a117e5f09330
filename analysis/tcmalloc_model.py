# SPDX-License-Identifier: GPL-2.0
"""tcmalloc_model - legacy against operations: the TCMalloc model's records
(boot-*/tcmodel.json, microbench/tcmodel.c, read by opbench_io.load) and
their statistics. tcmalloc_report renders its section (tcmalloc_lines),
opbench_plots its plot (tcmalloc_events).

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

import numpy as np

import opbench_stats as st
from opbench_cells import clocks

MODES = ("legacy", "ops")
# The cells that time one event (or none, syscall) followed by one pair.
EVENTS = ("recovery", "syscall", "signal", "fence", "preempt", "migrate")
ICOUNT_NOT_QUOTED = {
    "migrate": "under icount the TSC counts both vCPUs' instructions",
}
ROUND_TRIPS = ("syscall", "switch", "signal")
COLOURS = {"legacy": "tab:orange", "ops": "tab:blue"}


def _scales(run, per, accel):
    """{boot: ticks to the unit} from each boot's tcmodel clock records,
    checked and converted as opbench's are, all boots at once so that
    one TSC rate source holds for the run (opbench_cells.clocks); a boot
    without a clock record has none."""
    lines = {b["index"]: b.get("tsc_lines") for b in run["boots"]}
    c = clocks({"boots": [{"index": boot, "dir": "boot %d" % boot,
                           "records": recs, "tsc_lines": lines.get(boot)}
                          for boot, recs in per.items()]}, accel)
    return {boot: x["scale"] for boot, x in c.items()}


def analyse(run, a):
    """The model's section of the analysis, or None without records."""
    per = {b["index"]: b["tcmodel"] for b in run["boots"]
           if b.get("tcmodel") is not None}
    if not any(per.values()):
        return None
    flavour_of = {b["index"]: b["flavour"] for b in run["boots"]}
    samples = collections.defaultdict(lambda: collections.defaultdict(list))
    counts = collections.defaultdict(collections.Counter)
    bad = collections.defaultdict(list)
    unsupported = {}
    scales = _scales(run, per, a["accel"])
    for boot, recs in sorted(per.items()):
        fl = flavour_of[boot]
        scale = scales.get(boot)
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
            # What rseq saves a call: the difference, negated.
            out["getcpu"].append({"flavour": fl, "fallback": c["ref_value"],
                                  "rseq": c["value"], "diff": c["diff"],
                                  "ci": c["diff_ci"],
                                  "saved": None if c["diff"] is None
                                  else -c["diff"],
                                  "saved_ci": [-c["diff_ci"][1],
                                               -c["diff_ci"][0]]
                                  if c["diff_ci"] else None})
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
