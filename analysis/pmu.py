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
N varies, the instructions' slope per operation per walk. The group is
opened on the measured thread only: a benchmark's walks on other threads
(switch's partner) are not counted, and the slope is divided by the
measured thread's own walks per loop (THREAD_WALKS). On the same code it
must agree with the icount figure of the same kernel to about 1 %:
against_icount() sets it beside an icount run of the same flavour and
series (analyze.py --icount-run), a cross-check a KVM user gets for free.
Software stand-ins (OPBENCH_PMU=software, a test of the C side) are
reported as such and never as hardware counts.

The counters are live during the timed samples: every switch of the
measured thread saves and restores them (under KVM the PMU's MSR writes
trap to the host), so times measured with and without them are not
comparable; OPBENCH_PMU=off measures without.
"""
import numpy as np

import opbench_stats as st
from cross_checks import per_walk
from opbench_io import ResultsError

PREFIX = "pmu_"
# The measured thread's own walks per loop, where the benchmark's walks
# per loop count another thread's too (switch: the partner's).
THREAD_WALKS = {"switch": 1}


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
                         and f not in (PREFIX + "multiplexed",
                                       PREFIX + "unscheduled")})
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
                walks = THREAD_WALKS.get(g["bench"].split("+")[0],
                                         g["walks_per_loop"])
                if m and walks:
                    slopes[fl] = dict(per_walk(m, walks),
                                      thread_walks=walks)
        out[gkey] = {"events": events, "cells": cells, "slopes": slopes}
    return out


def against_icount(a, ref):
    """Set every PMU slope of the analysis a beside the icount figure of
    the same kernel in ref, an icount run's analysis (analysis.json): the
    same benchmark and flavour, built from the same series. Adds "icount",
    "ratio" and "icount_run" to each slope that has its match."""
    if ref.get("accel") != "icount":
        raise ResultsError("--icount-run: %s ran under %s, not icount" % (
            ref.get("run"), ref.get("accel")))
    series = {f["flavour"]: f["series_hash"]
              for f in ref["header"]["flavours"]}
    mine = {f["flavour"]: f["series_hash"] for f in a["header"]["flavours"]}
    other = {(g["bench"], g["op_type"], g["reg"]): g for g in ref["groups"]}
    for g in a["groups"]:
        og = other.get((g["bench"], g["op_type"], g["reg"]))
        for fl, s in ((g.get("pmu") or {}).get("slopes") or {}).items():
            fig = ((og or {}).get("per_walk") or {}).get(fl)
            if fig and fig.get("value") and series.get(fl) == mine.get(fl):
                s.update(icount=fig["value"], ratio=s["value"] / fig["value"],
                         icount_run=ref["run"])
