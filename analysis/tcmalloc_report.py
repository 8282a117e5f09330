# SPDX-License-Identifier: GPL-2.0
"""tcmalloc_report - the section "legacy against operations" of the report:
the TCMalloc model's figures (tcmalloc_model.analyse), as text."""
import textwrap

import tcmalloc_model as tm
from report_core import CI_HEAD, CONF, RULE, WIDTH, ci, indented, num


def tcmalloc_lines(t, a):
    """The section "legacy against operations" (tcmalloc_model.analyse)."""
    unit = a["unit"]
    icount = a["accel"] == "icount"
    lines = [RULE, "Legacy against operations: a TCMalloc model "
             "(microbench/tcmodel.c)", ""]
    lines += textwrap.wrap(
        "legacy: the model's own 32-byte rseq area, glibc's registration "
        "off, the cached slab word's upper half is cpu_id_start. ops: "
        "glibc's v2 area kept, one RSEQ_OP_RESET (NULL source, 8 bytes) "
        "clears the word. Figures: %s per iteration, mean of per-boot "
        "medians, %s CI over boots.%s" % (
            unit, CONF, " Instructions, not time." if icount else ""), WIDTH)
    cell = {(c["what"], c["mode"], c["flavour"]): c for c in t["cells"]}
    for fl in t["flavours"]:
        lines += ["", "%s kernel" % fl]
        p = {m: cell.get(("pair", m, fl)) for m in tm.MODES}
        lines.append("  allocation+free pair, steady state: %s" % ", ".join(
            "%s %s" % (m, num(p[m]["value"]) if p[m] else "n/a")
            for m in tm.MODES))
        evs = [e for e in t["events"] if e["flavour"] == fl]
        if evs:
            lines.append("  per event, beyond the pair (its recovery "
                         "included):")
            lines.append("    %-9s %-8s %9s  %s" % ("event", "mode", "cost",
                                                  CI_HEAD))
            for e in sorted(evs, key=lambda e: (tm.EVENTS.index(e["what"]),
                                                e["mode"])):
                lines.append(("    %-9s %-8s %9s  %-20s%s" % (
                    e["what"], e["mode"], num(e["cost"], True),
                    ci(e["ci"], True), "" if e["quoted"] else
                    "  (not quoted)")).rstrip())
        mods = [x for x in t["modes"] if x["flavour"] == fl]
        if mods:
            lines.append("  ops against legacy, same boots (ops - legacy):")
            for x in mods:
                lines.append(("    %-9s %9s  %-20s %s" % (
                    x["what"], num(x["diff"], True), ci(x["ci"], True),
                    ("*" if x["verdict"] == "difference" else "") if
                    x["quoted"] else "  (not quoted)")).rstrip())
        for g in t["getcpu"]:
            if g["flavour"] == fl:
                lines += indented(
                    "glibc's sched_getcpu(): %s through its rseq area, %s "
                    "with its registration off (the fallback); rseq saves "
                    "%s %s per call." % (num(g["rseq"]), num(g["fallback"]),
                                         num(g["saved"]),
                                         ci(g["saved_ci"], True)))
        na = [u for u in t["unsupported"] if u["flavour"] == fl]
        modes_na = sorted({(u["mode"], u["why"]) for u in na})
        for m, why in modes_na:
            lines += indented("%s mode n/a here: %s" % (m, why))
    lines += ["", "Gate (every cell; stale uses must be 0)"]
    lines.append("  %-8s %-7s %-8s %8s %11s %6s" % (
        "flavour", "mode", "cell", "events", "recoveries", "stale"))
    order = list(tm.EVENTS) + ["pair", "getcpu", "remote"]
    for g in sorted(t["gates"], key=lambda g: (
            t["flavours"].index(g["flavour"]) if g["flavour"] in
            t["flavours"] else 99, g["mode"],
            order.index(g["what"]) if g["what"] in order else 99)):
        lines.append("  %-8s %-7s %-8s %8d %11d %6d %s" % (
            g["flavour"][:8], g["mode"], g["what"], g["events"],
            g["recoveries"], g["stale"], "ok" if g["valid"] else "FAILED"))
    lines += indented(
        "remote is a gate only: a drainer on the other CPU stops the "
        "worker's CPU and fences it, TCMalloc's cross-CPU drain. Only its "
        "stale count proves anything: the slow path uncaches the word "
        "while the CPU is stopped. preempt's events are the preemptions "
        "the worker saw.")
    excl = sorted({e["what"] for e in t["events"] if not e["quoted"]})
    for w in excl:
        lines += indented("%s is not quoted: %s." % (
            w, tm.ICOUNT_NOT_QUOTED[w]))
    if t["invalid"]:
        lines.append("  Invalid (dropped in every boot):")
        for x in t["invalid"]:
            lines += indented("%s %s %s boot %d sample %d: %s" % (
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
                cols.append("%s %s" % (num(g["diff"], True),
                                       "*" if g["verdict"] == "difference"
                                       else " ") if g else "n/a")
            lines.append(("  %-8s %-8s %9s %20s %20s" % (
                r["bench"], r["flavour"][:8], num(r["legacy"]), cols[0],
                cols[1])).rstrip())
        lines += indented("* difference at %s confidence (paired over "
                          "boots). The intervals are in analysis.json."
                          % CONF)
    return lines
