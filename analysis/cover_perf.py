#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""cover_perf - the Performance section of the series' cover letter.

Usage: analysis/cover_perf.py RESULTS_DIR   (make cover-perf RESULTS=...)

Prints, from one results directory of make bench, what the cover letter's
Performance section gives: the cost of ops at N = 0, 1 and the largest N
against the unpatched kernel at N = 0, the walk's slope per operation per
walk, what the walk adds to a preemption at the largest N walked with
interrupts off and at the largest N, in both node layouts, with the unit,
the compiler and the run's name, so that no figure in the cover letter is
typed by hand. The unit is the run's: under icount a figure counts guest
instructions, never time.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bpf_design  # noqa: E402
import opbench_data  # noqa: E402
import report_core as rep  # noqa: E402
from cross_report import stretch_label  # noqa: E402

WIDTH = rep.WIDTH


def wrap(text, indent=""):
    """A paragraph of the section: report_core's, flush left unless told."""
    return rep.indented(text, indent)


def section(a):
    """The Performance section, from the analysis alone."""
    unit = a["unit"]
    k = a["header"]["kernel"]
    out = ["Performance", "==========="]
    out += wrap(
        "Measured with rseq-opbench, run %s; unit: %s; compiler %s; %s "
        "boots per flavour, "
        "baseline and this series built from one source (%s) and one "
        "configuration (preempt=%s), booted under QEMU." % (
            a["run"], a["unit"], rep.compiler_line(k),
            "/".join(str(v) for v in sorted(set(
                a["boots_per_flavour"].values()))),
            rep.source_line(k), k.get("preempt", "?")))
    if a["accel"] == "icount":
        out += [""] + wrap("Every figure below counts guest instructions "
                           "(QEMU icount), not time: there is no KVM or "
                           "PMU on the machine that measured it.")
    out += ["", "Cost per loop against the unpatched kernel at N = 0 "
            "(%s):" % unit, ""]
    out.append("  %-8s %5s %11s  %-24s" % ("bench", "N", "diff",
                                           rep.CI_HEAD))
    rows = [c for c in a["mission"] if c["flavour"] == "ops"]
    for c in rows:
        out.append("  %-8s %5d %11s  %-24s" % (
            c["bench"][:8], c["nr_ops"], rep.num(c["diff"], True),
            rep.interval(c)))
    if not rows:
        out.append("  (this run measured no ops flavour)")
    out += [""] + wrap("N = 0 is the cost to a thread that registered no "
                       "operation. \"same in all boots\": every boot gave "
                       "that figure exactly.", "  ")
    slopes = a["walk_slopes"]
    if slopes:
        out += [""] + wrap("The walk, %s per operation per walk (fit of "
                           "a + b*N per boot, over the N given):" % unit) \
            + [""]
        for s in slopes:
            out.append("  %-8s %9.3f  %-20s N = %d..%d" % (
                s["bench"], s["value"], rep.ci(s["ci"]), s["ns"][0],
                s["ns"][1]))
    walks = [c for c in a.get("cross", [])
             if c["kind"] == "walk-stretch" and c.get("value") is not None]
    if walks:
        out += ["", "Walk added to the return from a preemption (%s):"
                % unit, ""]
        walk_rows = [(stretch_label(c), rep.num(c["value"], True),
                      rep.ci(c["ci"], True)) for c in walks]
        w = max(len(r[0]) for r in walk_rows)
        for what, value, ci in walk_rows:
            line = "  %-*s %10s  %s" % (w, what, value, ci)
            if len(line) > WIDTH:
                # The interval on a line of its own, under the value.
                line = "  %-*s %10s\n  %*s%s" % (w, what, value, w + 13, "", ci)
            out.append(line)
        out += [""] + wrap(
            "The gap from the tick to the return to user space at that N "
            "minus at N = 0, paired by boot. Up to %d operations are "
            "applied on the exit fast path with interrupts off; longer "
            "arrays on the slow path, in task context, in chunks of at "
            "most %d with preemption off, preemptible between chunks."
            % (a["irqs_off_max"], a["irqs_off_max"]), "  ")
    out += designs_lines(a.get("designs"), unit)
    out += bpf_design.cover_lines(a, wrap)
    return "\n".join(line.rstrip() for line in out) + "\n"


def designs_lines(d, unit):
    """The walk of each design the run measured beside ops (make
    bench-walker), and its ratio to ops's, or nothing."""
    if not d or not d["slopes"] or len(d["flavours"]) < 2:
        return []
    out = [""] + wrap("The same walk in each design, from the same run, "
                      "%s per operation per walk, and its ratio to %s's:"
                      % (unit, d["anchor"])) + [""]
    out += wrap("; ".join("%s: %s" % (fl, d["names"][fl])
                          for fl in d["flavours"]) + ".", "  ")
    out.append("")
    ratio = {(r["bench"], r["flavour"]): r for r in d["ratios"]}
    out.append("  %-8s %-8s %7s  %-20s %s" % ("bench", "design", "slope",
                                             rep.CI_HEAD,
                                             "/ " + d["anchor"] + ", " +
                                             rep.CI_HEAD))
    for s in d["slopes"]:
        r = ratio.get((s["bench"], s["flavour"]))
        rt = ""
        if r and r["ratio"] is not None:
            # Every ratio with its interval (the same in all boots: no
            # width to print).
            rc = r.get("ratio_ci")
            rt = "%.2f %s" % (r["ratio"], "" if not rc else
                              "(exact)" if rc[0] == rc[1]
                              else "[%.2f, %.2f]" % tuple(rc))
        out.append(("  %-8s %-8s %7.3f  %-20s %s" % (
            s["bench"], s["flavour"], s["value"], rep.ci(s["ci"]),
            rt)).rstrip())
    if any(r.get("ratio_ci") and r["ratio_ci"][0] == r["ratio_ci"][1]
           for r in d["ratios"]):
        out += [""] + wrap("(exact): the ratio was the same in all boots.",
                           "  ")
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: cover_perf.py RESULTS_DIR (a run of make bench)")
    try:
        a = opbench_data.analyse(opbench_data.load(sys.argv[1]))
    except opbench_data.ResultsError as e:
        sys.exit("cover_perf: %s" % e)
    if a["header"]["incomplete"] is not None:
        sys.exit("cover_perf: %s is incomplete (it holds %s): a cover "
                 "letter takes its figures from a complete run"
                 % (sys.argv[1], opbench_data.INCOMPLETE))
    sys.stdout.write(section(a))


if __name__ == "__main__":
    main()
