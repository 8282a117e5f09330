# SPDX-License-Identifier: GPL-2.0
"""latency - how long a walk holds interrupts or preemption off.

tracing/latency.sh boots each flavour built with KCONFIG=latency and, while
a thread's list of N operations is walked (opbench switch), in both node
layouts, records:
  walk: each walk's duration (the function_graph tracer on
      rseq_ops_apply) and whether it ran with interrupts off (the fast
      path, at most the bound's nodes, RSEQ_OP_IRQS_OFF_MAX), only
      preemption off (v2's slow path) or neither (v3's slow path: no
      stretch at all, shown for comparison);
  irqsoff, preemptoff: the tracers' longest stretch on CPU 0 while the
      benchmark ran, whatever code it was (N = 0: the kernel's own, no
      list).
Records: <run>/latency/<flavour>/latency.json (kind "latency": tracer,
layout, nr_ops; max_us, started_at, ended_at for a tracer's maximum;
trace, the walk trace, whose walks opbench_io.latency_records reads).

The guest's clock under icount (shift=0) advances one nanosecond per
instruction: the tracers' whole microseconds are thousands of
instructions, function_graph's nanoseconds are instructions. Elsewhere it
is time, in microseconds.
"""
import statistics

from cross_checks import LEGACY_IRQS_OFF_MAX
from opbench_io import ResultsError

TRACERS = ("irqsoff", "preemptoff")
# The walk rows: its longest walk in each context.
WALK_ROWS = (("irqs", "walk irqs"), ("preempt", "walk preempt"),
             ("preemptible", "walk task"))
ORDER = tuple(t for _, t in WALK_ROWS) + TRACERS


# How far a tick may be from one instruction under icount (opbench's
# clock record in the latency boot), as the main analysis allows.
TICK_TOLERANCE = 0.01


def analyse(recs, accel, bound=LEGACY_IRQS_OFF_MAX):
    """{"unit", "resolution", "ns", "rows", "irqs_off_max"}: one row per
    flavour, tracer and layout, its longest stretch at each N ("values":
    {N: figure}); for a tracer's row where it started and ended
    ("where"), for a walk row the walks in its context and their median
    ("walks", "median"), and each row's resolution; None without records.
    The accelerator is the latency boots' own (their vm.json), accel only
    for records without one; bound is the fast path's (the run's index),
    which the section's text names."""
    if not recs:
        return None
    accels = {r.get("accel") or accel for r in recs}
    if len(accels) > 1:
        raise ResultsError("latency: the boots ran under different "
                           "accelerators (%s)" % ", ".join(
                               sorted(map(str, accels))))
    icount = accels.pop() == "icount"
    if icount:
        off = [t for r in recs for t in r.get("ticks_per_insn", [])
               if abs(t - 1) > TICK_TOLERANCE]
        if off:
            raise ResultsError("latency: under icount a tick was %.4f "
                               "instructions, not 1: the tracers' "
                               "microseconds are not thousands of "
                               "instructions" % off[0])
    scale = 1000.0 if icount else 1.0
    ns = sorted({int(r["nr_ops"]) for r in recs})
    rows = {}
    for r in recs:
        if r.get("opbench_status", 0) not in (0, 1):
            raise ResultsError("latency: opbench failed (status %s) for %s "
                               "N=%s: see its opbench.log" % (
                                   r["opbench_status"], r["flavour"],
                                   r["nr_ops"]))
        n = int(r["nr_ops"])
        if r["tracer"] == "walk":
            if r.get("walks_error"):
                raise ResultsError("latency: %s" % r["walks_error"])
            if n and not r.get("walks"):
                raise ResultsError(
                    "latency: %s N=%d %s: no walk in %s: was rseq_ops_apply "
                    "traced (set_ftrace_filter)?" % (
                        r["flavour"], n, r["layout"], r.get("trace")))
            # function_graph's nanoseconds: instructions under icount.
            for ctx, name in WALK_ROWS:
                row = _row(rows, r["flavour"], name, r["layout"])
                d = sorted(ns_ for ns_, c in r.get("walks", []) if c == ctx)
                row["walks"][n] = len(d)
                if d:
                    row["values"][n] = d[-1] * scale / 1000.0
                    row["median"][n] = statistics.median(d) * scale / 1000.0
            continue
        row = _row(rows, r["flavour"], r["tracer"], r["layout"])
        if r["max_us"] is None:     # the tracer's maximum was unreadable
            continue
        row["values"][n] = float(r["max_us"]) * scale
        row["where"][n] = [r.get("started_at", ""), r.get("ended_at", "")]
    # N = 0 (no list) is measured once, under the first layout: every
    # layout's row shows it.
    for (fl, tr, lay), row in rows.items():
        if tr in TRACERS and 0 not in row["values"]:
            zero = next((x for (f, t, _), x in rows.items()
                         if f == fl and t == tr and 0 in x["values"]), None)
            if zero:
                row["values"][0] = zero["values"][0]
                row["where"][0] = zero["where"][0]
    order = sorted(rows, key=lambda k: (k[0], ORDER.index(k[1])
                                        if k[1] in ORDER else 9, k[2]))
    out = [rows[k] for k in order]
    for r in out:
        r["resolution"] = (1.0 if r.pop("ns_resolution") else 1000.0) * \
            scale / 1000.0
    return {"unit": "instructions" if icount else "us",
            "resolution": scale if icount else 1.0,
            "ns": ns, "rows": out, "irqs_off_max": bound}


def _row(rows, flavour, tracer, layout):
    return rows.setdefault((flavour, tracer, layout), {
        "flavour": flavour, "tracer": tracer, "layout": layout,
        "values": {}, "where": {}, "walks": {}, "median": {},
        # function_graph: nanoseconds; the tracers: whole microseconds.
        "ns_resolution": tracer not in TRACERS})
