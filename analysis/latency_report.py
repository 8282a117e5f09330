# SPDX-License-Identifier: GPL-2.0
"""latency_report - the latency section (analysis/latency.py's result)."""
from report_core import RULE, indented

HEAD = ("Longest stretch with interrupts off (irqsoff) and preemption off "
        "(preemptoff) while a list of N operations is walked, by the "
        "kernel's tracers (KCONFIG=latency)")


def latency_lines(lat):
    if not lat:
        return []
    ns = lat["ns"]
    lines = [RULE] + indented(HEAD, indent="") + [""]
    # Four N a table, so that it stays within the report's width.
    for i in range(0, len(ns), 4):
        part = ns[i:i + 4]
        if i:
            lines.append("")
        lines.append("%-9s %-10s %-9s" % ("flavour", "tracer", "layout") +
                     "".join("%10s" % ("N=%d" % n) for n in part))
        for r in lat["rows"]:
            lines.append("%-9s %-10s %-9s" % (
                r["flavour"][:9], r["tracer"], r["layout"]) + "".join(
                "%10s" % ("%.0f" % r["values"][n] if n in r["values"]
                          else "-") for n in part))
    lines += indented(
        "%s, the tracers' whole microseconds%s; N=0: the kernel's own "
        "stretches, no list (measured once, shown in both layouts). A "
        "maximum is the longest stretch on CPU 0 while the benchmark ran, "
        "whatever code it was: see where it started and ended before "
        "reading it as the walk's" % (
            lat["unit"], " x 1000 under icount (one instruction a "
            "nanosecond): resolution 1000 instructions" if
            lat["unit"] == "instructions" else ""))
    top = max(ns)
    for r in lat["rows"]:
        w = r["where"].get(top)
        if w and any(w):
            lines += indented("%s %s %s N=%d: from %s to %s" % (
                r["flavour"], r["tracer"], r["layout"], top,
                w[0] or "?", w[1] or "?"), more="    ")
    return lines
