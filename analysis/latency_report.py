# SPDX-License-Identifier: GPL-2.0
"""latency_report - the latency section (analysis/latency.py's result)."""
from report_core import RULE, indented

HEAD = ("How long a walk of N operations holds interrupts or preemption "
        "off, and the kernel's own longest stretches beside it, by the "
        "kernel's tracers (KCONFIG=latency kernels)")


def _num(lat, r, x):
    # Time: a walk to the nanosecond, a tracer's maximum to the us.
    if lat["unit"] == "us" and r["resolution"] < 1:
        return "%.3f" % x
    return "%.0f" % x


def _figure(lat, r, n):
    return _num(lat, r, r["values"][n]) if n in r["values"] else "-"


def latency_lines(lat):
    if not lat:
        return []
    if lat.get("error"):
        return [RULE] + indented(HEAD, indent="") + [""] + indented(
            "Not shown: %s. The benchmarks' analysis is not affected." %
            lat["error"])
    ns = lat["ns"]
    unit = lat["unit"]
    lines = [RULE] + indented(HEAD, indent="") + [""]
    # Four N a table, so that it stays within the report's width.
    for i in range(0, len(ns), 4):
        part = ns[i:i + 4]
        if i:
            lines.append("")
        lines.append("%-9s %-12s %-9s" % ("flavour", "stretch", "layout") +
                     "".join("%10s" % ("N=%d" % n) for n in part))
        for r in lat["rows"]:
            lines.append("%-9s %-12s %-9s" % (
                r["flavour"][:9], r["tracer"], r["layout"]) +
                "".join("%10s" % _figure(lat, r, n) for n in part))
    icount = unit == "instructions"
    lines += indented(
        "%s. walk irqs / walk preempt: the longest walk (function_graph "
        "on rseq_ops_apply, with its own entry and exit) that ran with "
        "interrupts off, the fast path of at most %d nodes, or with only "
        "preemption off, the slow path (v2's whole list, v3's and v4's "
        "chunks of at most %d); walk task: a walk in task context with "
        "neither off, which no series here does any more; "
        "to the %s; '-': no walk "
        "there." % (unit, lat["irqs_off_max"], lat["irqs_off_max"],
                    "instruction (one a nanosecond under icount)"
                    if icount else "nanosecond (us with three decimals)"))
    lines += indented(
        "irqsoff / preemptoff: the tracers' longest stretch on CPU 0 "
        "while the benchmark ran, whatever code it was, in whole "
        "microseconds%s; N=0: the kernel's own, no list (measured once, "
        "shown in both layouts). At N > 0 they include the walks: the "
        "walk raised the kernel's worst case where they exceed N=0 and "
        "their stretch starts and ends in the walker's caller (below)." % (
            " x 1000 (resolution 1000 instructions)" if icount else ""))
    top = max(ns)
    for r in lat["rows"]:
        if r["walks"].get(top):
            lines += indented("%s %s %s N=%d: %d walks, median %s" % (
                r["flavour"], r["tracer"], r["layout"], top,
                r["walks"][top], _num(lat, r, r["median"][top])),
                more="    ")
        w = r["where"].get(top)
        if w and any(w):
            lines += indented("%s %s %s N=%d: from %s to %s" % (
                r["flavour"], r["tracer"], r["layout"], top,
                w[0] or "?", w[1] or "?"), more="    ")
    return lines
