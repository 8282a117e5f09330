# SPDX-License-Identifier: GPL-2.0
"""designs - the designs of the walk side by side, from one run of make
bench-walker: our series v3 (ops, kept in the kernel), our series v2 (v2,
the walk of the list in user memory), the RFC as posted (rfc) and, when a
run has it, the kernel-resident variant of v2 (resident,
kernel-patch/resident/, from which v3 grew). The comparisons are made
against ANCHOR, v3.

It reads what opbench_data.analyse already computed (per-flavour cost
models, comparisons against the unpatched kernel and against N = 0) and
the walker loops counted at bench time in each flavour's vmlinux
(walker-loops/<flavour>.txt, analysis/walker_loops.py; opbench_io reads
them as a["walker_loops"]), and answers the question of the RFC's thread:
what keeping the operations in the kernel saves per operation, whether the
target is met, and what it costs at registration.

designs_report renders its section (designs_lines), opbench_plots its plot
(design_slopes).
"""
import opbench_stats as st
from cross_checks import WALK_BENCHES, diff_per_walk, group

# The designs, their names and colours, as a run made before the run
# index (microbench/plan.py) named them; a run with an index carries the
# flavours' declarations (kernel-patch/flavours/), and those say.
LEGACY_DESIGNS = (("ops", "series v3, kept in the kernel"),
                  ("v2", "series v2, walks the user list"),
                  ("resident", "kernel-resident variant of v2"),
                  ("rfc", "RFC as posted"),
                  ("bpf", "BPF program at the same exit point"))
LEGACY_COLOURS = {"ops": "tab:blue", "v2": "tab:orange",
                  "resident": "tab:green", "rfc": "tab:red"}


def designs_of(decls):
    """((flavour, name), ...) in the order of their DESIGN rank, and
    {flavour: colour}: from the run's declarations, or the legacy tables
    for a run without them."""
    if not decls:
        return LEGACY_DESIGNS, dict(LEGACY_COLOURS)
    ds = sorted((d["design"], f) for f, d in decls.items()
                if d.get("design"))
    return (tuple((f, decls[f].get("label", f)) for _, f in ds),
            {f: d["colour"] for f, d in decls.items() if d.get("colour")})


# The bpf flavour's N = 0 cells measured before its program was loaded
# (guest-bench.sh, opbench_io._variant_boots): a thread that does not use
# the hook, and one that opted in with no program attached.
BPF_VARIANTS = (("bpf-unused", "bpf kernel, thread not opted in"),
                ("bpf-noprog", "opted in, no program attached"))
# The design every other is compared with: series v3.
ANCHOR = "ops"
# The target: v3's walk at least this many times cheaper per operation than
# the RFC's.
TARGET_RATIO = 4.0
LAYOUTS = (("preempt", "packed"), ("preempt+scattered", "scattered"))
# The stretch is reported at the fast path's bound and at the list limit
# (the run's irqs_off_max and list_limit).
# The registration table's columns: these N, the fast path's bound, and
# the largest measured.
REGISTER_NS = (0, 1, 1024)
# What v3 costs that the benchmarks do not measure, from rseq.rst (patch
# 5/5; rseq_op_test's array_charged_to_the_thread_cgroup checks the
# charge): kernel memory per entry, and the array doubling (EXAMPLE_OPS
# operations take the next power of two of entries).
ENTRY_BYTES = 40
EXAMPLE_OPS = 1025


def zero_explained(decls, flavour):
    """{bench: reason} from a flavour's N0_EXPLAINED declaration ("BENCH:
    reason; BENCH: reason"): why a thread without operations costs other
    than on the unpatched kernel there."""
    text = ((decls or {}).get(flavour) or {}).get("n0_explained") or ""
    out = {}
    for part in text.split(";"):
        bench, sep, why = part.partition(":")
        if sep and bench.strip() and why.strip():
            out[bench.strip()] = why.strip()
    return out


def analyse(a, compare=None):
    """The comparison, or None when the run lacks ANCHOR or every other
    design. compare(model_ref, model, key): two slopes
    compared as the run's unit allows (opbench_data's
    compare_kernel_slopes: paired by round in time); default Welch."""
    if compare is None:
        def compare(m_ref, m, key):
            return st.compare_slopes(m_ref, m)
    designs, colours = designs_of(a.get("flavour_decls"))
    fls = [f for f, _ in designs if f in a["flavours"]]
    if ANCHOR not in fls or len(fls) < 2:
        return None
    out = {"flavours": fls, "names": dict(designs + BPF_VARIANTS),
           "colours": colours, "slopes": [],
           "ratios": [], "zero": [], "stretch": [], "register": [],
           "missing": [],
           "loops": a.get("walker_loops", {}), "target": TARGET_RATIO}
    out["common_ns"] = {}
    # Per bench, the designs fitted from N > 1 (their FIT_FROM).
    out["fit_from"] = {}
    # ... and those that declare it but measured fewer than two N there.
    out["fit_from_dropped"] = {}
    for bench in a.get("walk_benches", WALK_BENCHES):
        g = group(a, bench)
        if not g:
            continue
        walks = g["walks_per_loop"]
        # Designs that measured different N are compared on the N they all
        # measured (opbench_data.common_models).
        sfx = "_common" if g.get("common_ns") else ""
        if sfx:
            out["common_ns"][bench] = g["common_ns"]
        if g.get("fit_from"):
            out["fit_from"][bench] = {f: n for f, n in g["fit_from"].items()
                                      if f in fls}
        if g.get("fit_from_dropped"):
            out["fit_from_dropped"][bench] = {
                f: n for f, n in g["fit_from_dropped"].items() if f in fls}
        for fl in fls:
            s = g["per_walk" + sfx].get(fl)
            if s:
                # One operation, against none, per walk: the fixed part
                # of a walk with the slope (what TCMalloc pays).
                one = next((r for r in g["vs_zero"].get(fl, [])
                            if r["nr_ops"] == 1), None)
                out["slopes"].append(dict(
                    s, bench=bench, flavour=fl,
                    mean=g["per_walk_mean" + sfx].get(fl),
                    n1=diff_per_walk(one, walks) if one and walks else None))
                continue
            bad = sorted({x["nr_ops"] for x in a.get("invalid", [])
                          if x["bench"] == bench and x["flavour"] == fl})
            out["missing"].append({
                "bench": bench, "flavour": fl,
                "why": ("its gate failed at N=%s (see Invalid cells)"
                        % ",".join(str(n) for n in bad)) if bad else
                       "no cost model (fewer than two N >= 1, or no boot "
                       "with every N)"})
        cost = g["cost" + sfx]
        res = cost.get(ANCHOR)
        for fl in fls:
            if fl == ANCHOR or fl not in cost or not res:
                continue
            c = compare(res, cost[fl], (bench, ANCHOR, fl))
            if c and walks:
                # diff per walk, as the slopes; the ratio has no unit.
                out["ratios"].append(dict(
                    diff_per_walk(c, walks), bench=bench, flavour=fl,
                    ratio=c.get("ratio"), ratio_ci=c.get("ratio_ci")))
        variants = [f for f, _ in BPF_VARIANTS if f in a["flavours"]]
        explained = {f: zero_explained(a.get("flavour_decls"), f)
                     for f in fls + variants}
        for c in g["vs_reference"]:
            if c["nr_ops"] == 0 and c["flavour"] in fls + variants:
                ci = c.get("diff_ci")
                out["zero"].append({
                    "bench": bench, "flavour": c["flavour"],
                    "diff": c["diff"], "diff_ci": ci,
                    "excludes_0": bool(ci) and (ci[0] > 0 or ci[1] < 0),
                    "explained": explained[c["flavour"]].get(bench)})
    for name, layout in LAYOUTS:
        g = group(a, name)
        if not g:
            continue
        for fl in fls:
            for r in g["vs_zero"].get(fl, []):
                if r["nr_ops"] in (a["irqs_off_max"], a["list_limit"]):
                    out["stretch"].append({"layout": layout, "flavour": fl,
                                           "nr_ops": r["nr_ops"],
                                           "diff": r["diff"],
                                           "diff_ci": r.get("diff_ci")})
    g = group(a, "register")
    if g:
        for fl in fls:
            cells = sorted((c for c in g["cells"] if c["flavour"] == fl),
                           key=lambda c: c["nr_ops"])
            m = g["cost"].get(fl)
            out["register"].append({
                "flavour": fl,
                "cells": [{"nr_ops": c["nr_ops"], "value": c["value"],
                           "ci": c.get("ci")} for c in cells],
                "slope": m["b"] if m and "b" in m else None,
                "slope_ci": m.get("b_ci") if m else None,
                "full": [n for f, n in g["unsupported"] if f == fl]})
    out["breakeven"] = _breakeven(out)
    out["target_verdict"] = _target(out)
    out["register_ns"] = _register_ns(out, a["irqs_off_max"])
    out["anchor"] = ANCHOR
    out["anchor_cost"] = _anchor_cost(out)
    entries = 1 << (EXAMPLE_OPS - 1).bit_length()
    out["memory"] = {"entry_bytes": ENTRY_BYTES, "ops": EXAMPLE_OPS,
                     "entries": entries,
                     "kib": entries * ENTRY_BYTES // 1024}
    out["abi"] = _abi(a, fls)
    return out


def _abi(a, fls):
    """What each design costs outside the walk, as the run recorded it:
    AT_RSEQ_FEATURE_SIZE in its boots and the reference's, and what its
    kernel adds to the reference's (analysis/kernel_size.py: bytes of
    functions and data, lines by area); [] for a run with neither."""
    fs = a.get("rseq_feature_size", {})
    ks = a.get("kernel_size", {})
    if not fs and not ks:
        return []
    # The flavour the sizes were counted against, as they record it.
    ref = next((k["base"] for k in ks.values() if k.get("base")),
               a.get("reference", "baseline"))
    rows = []
    for fl in [ref] + [f for f in fls if f != ref]:
        k = ks.get(fl, {})
        rows.append({
            "flavour": fl, "feature_size": fs.get(fl),
            "functions": k.get("bloat", {}).get("functions", {}).get("net"),
            "data": k.get("bloat", {}).get("data", {}).get("net"),
            "lines": k.get("lines")})
    return rows


def _target(d):
    """Whether ANCHOR's walk is TARGET_RATIO times cheaper per operation
    than the RFC's: met when the lowest bound of every ratio's
    interval is; not assessed without an RFC slope or an interval."""
    rfc = [r for r in d["ratios"] if r["flavour"] == "rfc"]
    if not rfc:
        return {"assessed": False, "why": "no-rfc"}
    bad = [r["bench"] for r in rfc
           if r["ratio"] is None or not r["ratio_ci"]]
    if bad:
        return {"assessed": False, "why": "no-interval", "benches": bad}
    low = min(r["ratio_ci"][0] for r in rfc)
    return {"assessed": True, "met": low >= d["target"], "low": low,
            "benches": [r["bench"] for r in rfc]}


def _register_ns(d, bound):
    ns = sorted({c["nr_ops"] for r in d["register"] for c in r["cells"]})
    return [n for n in ns if n in REGISTER_NS or n in (bound, ns[-1])]


def _anchor_cost(d):
    """ANCHOR's registration: its growth per operation held and its round
    trip at N = 0 against v2's (the walk of the user list, which allocates
    nothing), or None when it was not measured."""
    reg = {r["flavour"]: r for r in d["register"]}
    res = reg.get(ANCHOR)
    if not res or res["slope"] is None:
        return None
    by = {c["nr_ops"]: c["value"] for c in res["cells"]}
    return {"slope": res["slope"], "anchor_zero": by.get(0),
            "walker_zero": {c["nr_ops"]: c["value"] for c in
                            reg.get("v2", {}).get("cells", [])}.get(0)}


def _breakeven(d):
    """When ANCHOR wins: the walks after which what it saves
    per operation (switch's slopes per walk) has paid for what its
    registration round trip costs more, with N = 0 held and with the
    largest N measured. One row per other design."""
    sl = {s["flavour"]: s["value"] for s in d["slopes"]
          if s["bench"] == "switch"}
    # The difference of the switch slopes per walk, as compared (its
    # interval): a difference not resolved saves nothing a walk.
    diff = {r["flavour"]: r for r in d["ratios"] if r["bench"] == "switch"}
    reg = {r["flavour"]: {c["nr_ops"]: c["value"] for c in r["cells"]}
           for r in d["register"]}
    res = reg.get(ANCHOR, {})
    rows = []
    for fl in d["flavours"]:
        if fl == ANCHOR or fl not in sl or ANCHOR not in sl:
            continue
        save = sl[fl] - sl[ANCHOR]
        ci = (diff.get(fl) or {}).get("diff_per_walk_ci")
        # What a walk saves, as resolved: +1 ANCHOR's walk is cheaper, -1
        # dearer, 0 no difference resolved (or no interval to tell).
        sign = 0 if ci is None else 1 if ci[0] > 0 else -1 if ci[1] < 0 \
            else 0
        for n in sorted(set(reg.get(fl, {})) & set(res))[:1] + \
                sorted(set(reg.get(fl, {})) & set(res))[-1:]:
            extra = res[n] - reg[fl][n]
            rows.append({"flavour": fl, "nr_ops": n, "extra": extra,
                         "save_per_walk": save, "save_ci": ci,
                         "sign": sign,
                         # walks after which the cheaper walk has paid for
                         # the dearer registration (either way round)
                         "walks": (extra / save if sign and extra * sign > 0
                                   else None)})
    return rows
