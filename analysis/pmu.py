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

Timed samples run without counters (opbench's default, OPBENCH_PMU
unset): live counters cost every switch of the measured thread a save and
a restore, and under KVM the PMU's MSR writes trap to the host. The counts
come from a counting pass of their own (OPBENCH_PMU=count: the native
runner runs one after each repetition's timed pass, its records in
pmu/opbench.json, counting_run()), whose samples are read for their
counters and never for time. Runs made before the default changed counted
during the timed samples, and their counts are read from there, said so.
"""
import numpy as np

import opbench_stats as st
from cross_checks import per_walk
from opbench_io import ResultsError

PREFIX = "pmu_"
# The measured thread's own walks per loop, where the benchmark's walks
# per loop count another thread's too (switch: the partner's).
THREAD_WALKS = {"switch": 1}


def counting_run(run):
    """The run with each boot's counting-pass records in place of its
    timed ones (the boots that had a counting pass), or None when no boot
    had one."""
    boots = [dict(b, records=b["pmu_records"]) for b in run["boots"]
             if b.get("pmu_records")]
    return dict(run, boots=boots) if boots else None


def status(run):
    """What the runs' pmu records say: {"recorded": False} for records
    made before opbench counted; else "available" (every boot counted),
    "source" (hardware or software), "events", the "why" of a boot
    without counters, and "pass": "count" (a counting pass of its own),
    "timed" (counted during the timed samples: records made before the
    counting pass) or None (nothing counted)."""
    counting = counting_run(run)
    # Boots of a run with a counting pass that have none (it failed, or
    # timed out): they counted nothing.
    uncounted = [b["dir"] for b in run["boots"] if counting is not None
                 and not b.get("pmu_records") and not b.get("variant_of")]
    if counting is not None:
        recs = [r for b in counting["boots"] for r in b["records"]
                if r.get("kind") == "pmu"]
        where = "count"
    else:
        recs = [r for b in run["boots"] for r in b["records"]
                if r.get("kind") == "pmu"]
        where = "timed"
    if not recs:
        return {"recorded": False}
    on = [r for r in recs if r.get("available")]
    why = sorted({r.get("why", "") for r in recs if not r.get("available")})
    probe = run.get("provenance", {}).get("pmu_probe")
    if not on and probe:
        # The native runner looked for counters and found none: why, and
        # that no counting pass ran, say more than "off while timing".
        why = ["%s (no counting pass)" % probe]
    if uncounted:
        why.append("no counting pass in %s" % ", ".join(uncounted))
    if counting is None and not probe:
        # opbench's default, with no pass to count: say there was none.
        why = [w + "; this run had no counting pass" if
               w.startswith("off in timed samples") else w for w in why]
    return {"recorded": True,
            "available": len(on) == len(recs) and not uncounted,
            "partly": bool(on) and (len(on) < len(recs) or bool(uncounted)),
            "pass": where if on else None,
            "source": sorted({r.get("source", "hardware") for r in on}),
            "events": sorted({e for r in on for e in r.get("events", [])}),
            "why": why}


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


# How far the PMU's instructions per operation per walk may sit from the
# icount figure of the same kernel and still agree: 2 %, or the PMU
# slope's own interval where that is wider. Known sources of disagreement,
# each able to move the figure by more than that on a correct kernel:
#   - alternatives: the same vmlinux patches itself for the CPU it runs
#     on, and QEMU's TCG CPU model is not the host's (SMAP's STAC/CLAC,
#     the string copy variants), so the walk can run other instructions;
#   - REP-prefixed string instructions: QEMU counts an instruction per
#     iteration, a hardware counter may count the instruction once;
#   - interrupts and faults inside the walk, counted by the PMU on the
#     measured thread's account, never under icount's quiet guest;
#   - multiplexing: a group that was not on the PMU the whole sample is
#     scaled (the cells say "multiplexed").
ICOUNT_TOLERANCE = 0.02


def against_icount(a, ref):
    """Set every PMU slope of the analysis a beside the icount figure of
    the same kernel in ref, an icount run's analysis (analysis.json): the
    same benchmark and flavour, built from the same series. Adds "icount",
    "ratio", "icount_run" and "agrees" (ICOUNT_TOLERANCE, or the icount
    figure inside the PMU slope's interval) to each slope that has its
    match."""
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
                ratio = s["value"] / fig["value"]
                lo, hi = s.get("ci") or (None, None)
                inside = lo is not None and lo <= fig["value"] <= hi
                s.update(icount=fig["value"], ratio=ratio,
                         icount_run=ref["run"],
                         agrees=bool(abs(ratio - 1) <= ICOUNT_TOLERANCE
                                     or inside))
