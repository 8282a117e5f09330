# SPDX-License-Identifier: GPL-2.0
"""preempt_report - the preemption round trip's gap table (preempt_gaps'
classification, pooled per cell by opbench_cells.preempt_detail), as the
report prints it under the preempt benchmarks' cells."""
from report_core import indented, num


def gap_lines(g):
    """The P- and I-gaps of each cell, and the samples left out."""
    lines = ["", "%6s %-8s %6s %6s %8s %8s %8s %5s %8s" % (
        "N", "flavour", "P-gaps", "I-gaps", "p10", "p90", "p99",
        "tick%", "I-med")]
    for c in g["cells"]:
        d = c.get("gaps", {})
        ts = d.get("tick_share")
        lines.append("%6d %-8s %6d %6d %8s %8s %8s %5s %8s" % (
            c["nr_ops"], c["flavour"][:8], d.get("n_p", 0),
            d.get("n_i", 0), num(d.get("p10")), num(d.get("p90")),
            num(d.get("p99")), "%.1f" % (100 * ts) if ts is not None
            else "-", num(d.get("i_median"))))
    dist = [(c["nr_ops"], c["flavour"], c["gaps"]) for c in g["cells"]
            if c.get("gaps", {}).get("samples_used", 0) <
            c.get("gaps", {}).get("samples", 0)]
    for n, fl, d in dist:
        lines += indented(
            "%s N=%d: %d of %d samples disturbed, not used (%s)" % (
                fl, n, d["samples"] - d["samples_used"], d["samples"],
                d["disturbed"][0].split(": ", 1)[-1]), more="    ")
    lines += indented(
        "P-gap: the spinner's time away when the waker preempted it "
        "(one walk); I-gap: an interrupt without a switch; tick%: "
        "P-gaps a tick also fell into (left out of the median); "
        "percentiles pooled over boots")
    return lines
