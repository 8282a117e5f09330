# SPDX-License-Identifier: GPL-2.0
"""pmu - the hardware counters opbench read around each sample.

Where perf_event_open() can count hardware events (bare metal, KVM with a
virtual PMU), opbench opens one group on the measured thread (cycles,
instructions, cache misses, dTLB load misses: microbench/pmu.c), writes a
"pmu" record saying which, and puts each event per loop into every sample
record ("pmu_<event>"). Where there is none (TCG, this project's own
machines) the record says why and the samples hold no counter: the
analysis then has no PMU figure at all, never a zero.

analyse() returns, per benchmark group, each valid cell's counters per
loop (the mean over boots of each boot's median over samples) and, where
N varies, the instructions' slope per operation per walk: on the same
code it must agree with the icount figure of the same kernel to about 1 %
(a cross-check a KVM user gets for free). Software stand-ins
(OPBENCH_PMU=software, a test of the C side) are reported as such and
never as hardware counts.
"""
import numpy as np

import opbench_stats as st
from cross_checks import per_walk

PREFIX = "pmu_"


def status(run):
    """What the runs' pmu records say: {"recorded": False} for records
    made before opbench counted; else "available" (every boot counted),
    "source" (hardware or software), "events" and the "why" of a boot
    without counters."""
    recs = [r for b in run["boots"] for r in b["records"]
            if r.get("kind") == "pmu"]
    if not recs:
        return {"recorded": False}
    on = [r for r in recs if r.get("available")]
    return {"recorded": True, "available": len(on) == len(recs),
            "partly": 0 < len(on) < len(recs),
            "source": sorted({r.get("source", "hardware") for r in on}),
            "events": sorted({e for r in on for e in r.get("events", [])}),
            "why": sorted({r.get("why", "") for r in recs
                           if not r.get("available")})}


def _per_boot(recs, event):
    """One boot's sample records -> the median of its samples' event."""
    xs = [float(r[PREFIX + event]) for r in recs if PREFIX + event in r]
    return float(np.median(xs)) if xs else None


def analyse(groups, extra, valid):
    """Each group's counters: {gkey: {"events", "cells", "slopes"}}.

    extra: {cell key: {boot: [sample record, ...]}} (opbench_cells'
    collect); valid: the cells that passed their gates. Groups without
    counters are left out."""
    out = {}
    for g in groups:
        gkey = (g["bench"], g["op_type"], g["reg"])
        keys = sorted(k for k in valid if k[:3] == gkey and k in extra)
        events = sorted({f[len(PREFIX):] for k in keys
                         for recs in extra[k].values() for r in recs
                         for f in r if f.startswith(PREFIX)
                         and f != PREFIX + "multiplexed"})
        if not events:
            continue
        cells = []
        for k in keys:
            row = {"flavour": k[3], "nr_ops": k[4],
                   "k": len(extra[k])}
            for e in events:
                vals = [v for v in (_per_boot(recs, e)
                                    for recs in extra[k].values())
                        if v is not None]
                row[e] = float(np.mean(vals)) if vals else None
            row["multiplexed"] = any(PREFIX + "multiplexed" in r
                                     for recs in extra[k].values()
                                     for r in recs)
            cells.append(row)
        slopes = {}
        if "instructions" in events:
            for fl in sorted({k[3] for k in keys}):
                per_n = {k[4]: {b: [float(r[PREFIX + "instructions"])
                                    for r in recs
                                    if PREFIX + "instructions" in r]
                                for b, recs in extra[k].items()}
                         for k in keys if k[3] == fl}
                if len([n for n in per_n if n > 0]) < 2:
                    continue
                m = st.cost_model(per_n, key=gkey + (fl, "pmu"))
                if m and g["walks_per_loop"]:
                    slopes[fl] = per_walk(m, g["walks_per_loop"])
        out[gkey] = {"events": events, "cells": cells, "slopes": slopes}
    return out
