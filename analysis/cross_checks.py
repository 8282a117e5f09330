# SPDX-License-Identifier: GPL-2.0
"""cross_checks - what one benchmark says checked against what another
says, as numbers and verdicts (cross_report renders them):
    cross_checks()    the preemption round trip against switch, the waker
                      holding operations, the tick's cost across N, and
                      the walk a preemption adds in both node layouts;
    walk_count_checks()  the walks per loop each benchmark declares
                      against those bpftrace counted (opbench_io.walk_counts).
"""

# Two estimates of one cost agree when their ratio is this close to 1.
AGREE = 0.05
# A walk count agrees with the declared walks per loop this closely.
WALK_COUNT_TOLERANCE = 0.01
# The series walks lists of up to this many nodes on the exit fast path,
# with interrupts off; longer ones on the slow path with interrupts on
# (RSEQ_OP_IRQS_OFF_MAX of the series). A run's index records the bound
# (microbench/plan.py fact irqs_off_max, from the series); this is its
# value for a run made before the index.
LEGACY_IRQS_OFF_MAX = 64
# The list limit, likewise (rseq-op-abi.h's OB_RSEQ_OP_LIST_LIMIT).
LEGACY_LIST_LIMIT = 2048
# Where each variant is measured: the plan item that adds it.
WAKER_OPS_PLAN = "preempt:waker-ops"
SCATTERED_PLAN = "preempt:scattered"
# A slope per walk is reported for the benchmarks opbench's table marks
# traced (the run's index, run.json "traced"), in this order first; these
# are they for a run made before the index.
WALK_BENCHES = ("switch", "signal", "preempt")


def walk_benches(index):
    """The benchmarks whose slope per walk is reported: the run's index's
    traced ones (WALK_BENCHES' order first, then the table's), or
    WALK_BENCHES for a run without an index."""
    traced = (index or {}).get("traced")
    if traced is None:
        return list(WALK_BENCHES)
    return ([b for b in WALK_BENCHES if b in traced] +
            [b for b in traced if b not in WALK_BENCHES])


def _div(v, w):
    return None if v is None else v / w


def per_walk(m, walks):
    """A cost model's slope b and its walk at the largest N, divided by
    the walks per loop: per operation per walk, with their intervals."""
    return {"value": _div(m.get("b"), walks),
            "ci": [c / walks for c in m["b_ci"]] if m.get("b_ci") else None,
            "k": m["k"], "walk_max": _div(m.get("walk_max"), walks),
            "walk_max_ci": ([c / walks for c in m["walk_max_ci"]]
                            if m.get("walk_max_ci") else None),
            "n_min": m["ns"][0], "n_max": m["ns"][-1]}


def diff_per_walk(c, walks):
    """A slope comparison's difference per walk, as the slopes are."""
    return {"diff_per_walk": _div(c.get("diff"), walks),
            "diff_per_walk_ci": ([x / walks for x in c["diff_ci"]]
                                 if c.get("diff_ci") else None)}


def group(a, bench):
    return next((g for g in a["groups"] if g["bench"] == bench
                 and g["op_type"] == "null"), None)


def slope_per_walk(a, bench, fl="ops", per_loop=False):
    """A benchmark's slope per operation per walk (per loop: per_loop)."""
    g = group(a, bench)
    m = g and g["cost"].get(fl)
    if not m or not g["walks_per_loop"]:
        return None
    s = per_walk(m, 1) if per_loop else g["per_walk"][fl]
    return {"value": s["value"], "ci": s["ci"], "k": s["k"], "bench": bench,
            "ns": [m["ns"][0], m["ns"][-1]]}


def walk_ns(ns, bound):
    """The N whose walk the cross-checks report: the largest N walked
    with interrupts off (at most bound), when measured, and the largest
    N."""
    off = [n for n in ns if 0 < n <= bound]
    return sorted(set(off[-1:] + [ns[-1]]))


def _agrees(r):
    return r is not None and abs(r - 1) <= AGREE


def cross_checks(a):
    """The preemption round trip against what the other benchmarks say,
    one row per check, each {"kind", "value", "expect", "ok", ...}:
    preempt-vs-switch, its slope per walk against switch's (they walk the
    same list on the same path); waker-doubling, the slope doubling when
    the waker holds the operations too; igap-spread, the tick's cost
    (I-gap) not depending on N; walk-stretch, the walk at the largest N
    walked with interrupts off and at the largest N, in both node layouts
    (the stretch the walk adds). ok is None where nothing is expected; a
    row with "plan" was not measured, the plan item says where it is."""
    out = []
    pre, sw = slope_per_walk(a, "preempt"), slope_per_walk(a, "switch")
    if pre and sw:
        r = pre["value"] / sw["value"] if sw["value"] else None
        out.append({"kind": "preempt-vs-switch", "value": r, "expect": 1.0,
                    "ok": _agrees(r), "tolerance": AGREE,
                    "preempt": pre, "switch": sw})
    # Per preemption, not per walk: the doubling is the claim checked.
    both = slope_per_walk(a, "preempt+waker-ops", per_loop=True)
    if pre and not both:
        out.append({"kind": "waker-doubling", "value": None, "expect": 2.0,
                    "ok": None, "plan": WAKER_OPS_PLAN})
    if pre and both:
        r = both["value"] / pre["value"] if pre["value"] else None
        out.append({"kind": "waker-doubling", "value": r, "expect": 2.0,
                    "ok": r is not None and _agrees(r / 2),
                    "tolerance": AGREE, "both": both["value"],
                    "alone": pre["value"]})
    g = group(a, "preempt")
    if g:
        im = [c["gaps"]["i_median"] for c in g["cells"]
              if c.get("gaps", {}).get("i_median")]
        if len(im) > 1:
            spread = (max(im) - min(im)) / min(im)
            out.append({"kind": "igap-spread", "value": spread,
                        "expect": 0.0, "ok": spread <= AGREE,
                        "tolerance": AGREE, "min": min(im), "max": max(im),
                        "cells": len(im)})
    for layout in ("packed", "scattered"):
        name = "preempt" if layout == "packed" else "preempt+scattered"
        grp = group(a, name)
        if not grp:
            if pre:
                out.append({"kind": "walk-stretch", "layout": layout,
                            "value": None, "expect": None, "ok": None,
                            "plan": SCATTERED_PLAN})
            continue
        ns = sorted(c["nr_ops"] for c in grp["cells"]
                    if c["flavour"] == "ops")
        if 0 not in ns or len(ns) < 2:
            continue
        # The longest list walked with interrupts off (when measured), and
        # the largest N, which the series walks with them on.
        for n in walk_ns(ns, a["irqs_off_max"]):
            c = next((r for r in grp["vs_zero"].get("ops", [])
                      if r["nr_ops"] == n), None)
            if c:
                out.append({"kind": "walk-stretch", "layout": layout,
                            "nr_ops": n, "value": c["diff"],
                            "ci": c["diff_ci"], "se": c.get("se"),
                            "expect": None, "ok": None,
                            "irqs_off": n <= a["irqs_off_max"]})
    return out


def walk_count_checks(rows):
    """Each traced benchmark's walks per loop as counted, against the
    walks per loop it declares: agrees within WALK_COUNT_TOLERANCE."""
    return [dict(r, agrees=r["measured"] is not None and abs(
        r["measured"] / r["declared"] - 1) <= WALK_COUNT_TOLERANCE)
        for r in rows]
