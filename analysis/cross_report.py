# SPDX-License-Identifier: GPL-2.0
"""cross_report - the cross-checks (cross_checks) as the report says them:
each check's name, its figure, its verdict and the sentence that explains
it; and the walks per loop declared against those bpftrace counted."""
from report_core import RULE, indented, interval, num

TITLES = {
    "preempt-vs-switch": "preempt slope per walk / switch slope per walk",
    "waker-doubling": "preempt slope, waker with operations too / waker "
                      "without",
    "igap-spread": "I-gap median (a tick, no switch) across N and "
                   "flavours: (max - min) / min",
}


def _ci3(c):
    return "[%.3f, %.3f]" % tuple(c) if c else "[no interval]"


def tolerance(t):
    return "%.0f%%" % (100 * t)


def stretch_label(r):
    """"N=64, packed nodes, interrupts off": which walk-stretch row."""
    return "N=%d, %s nodes%s" % (r["nr_ops"], r["layout"],
                                 ", interrupts off" if r["irqs_off"] else "")


def title(r):
    if r["kind"] != "walk-stretch":
        return TITLES[r["kind"]]
    if r["value"] is None:
        return "walk added to a preemption, %s nodes" % r["layout"]
    return "walk added to a preemption at " + stretch_label(r)


def detail(r, irqs_off_max):
    """The sentence under a check: what was compared, or where to find
    what this run did not measure."""
    if r.get("plan"):
        return "not measured in this run (plan default's %s)" % r["plan"]
    k = r["kind"]
    if k == "preempt-vs-switch":
        return "preempt %.3f %s, switch %.3f %s per operation per walk" % (
            r["preempt"]["value"], _ci3(r["preempt"]["ci"]),
            r["switch"]["value"], _ci3(r["switch"]["ci"]))
    if k == "waker-doubling":
        return ("%.3f against %.3f per operation per preemption: two walks "
                "per preemption, not one" % (r["both"], r["alone"]))
    if k == "igap-spread":
        return "%.1f..%.1f over %d cells" % (r["min"], r["max"], r["cells"])
    return "P-gap at N=%d minus at N=0 on ops, paired by boot; %s" % (
        r["nr_ops"], (
            "the series walks up to %d nodes on the exit fast path with "
            "interrupts off (by its code, not measured here): the "
            "interrupts-off stretch the walk adds" % irqs_off_max)
        if r["irqs_off"] else (
            "above %d nodes the series walks on the slow path with "
            "interrupts on (by its code; preemption off in v2, on in v3): "
            "the stretch the walk adds to the return, not with "
            "interrupts off"
            % irqs_off_max))


def cross_lines(a):
    rows = a.get("cross") or []
    if not rows:
        return []
    lines = [RULE, "Cross-checks of the preemption round trip"]
    for r in rows:
        if r["ok"] is None:
            verdict = ""
        else:
            t = tolerance(r["tolerance"])
            verdict = "agrees within %s" % t if r["ok"] else (
                "DISAGREES by more than %s: a finding to explain" % t)
        if r["value"] is None:
            val = "-"
        elif r.get("ci") is not None or r["expect"] is None:
            val = "%s %s %s" % (num(r["value"], True), interval(r),
                                a["unit"])
        else:
            val = "%.3f (expected %s)" % (r["value"], num(r["expect"]))
        lines.append("")
        lines += indented(title(r) + ":", more="    ")
        lines += indented("%s%s; %s" % (val, "; " + verdict if verdict
                                        else "", detail(r, a["irqs_off_max"])),
                          "    ")
    if a["accel"] == "icount" and any(r.get("layout") == "scattered" and
                                      r["value"] is not None for r in rows):
        lines += [""] + indented(
            "Under icount the two layouts execute the same instructions: "
            "cache and TLB misses, the whole point of the scattered layout, "
            "are invisible; only a KVM or bare-metal run shows their time.")
    return lines


def walk_count_lines(a):
    rows = a.get("walk_counts") or []
    if not rows:
        return []
    lines = [RULE, "Walks per loop: declared by each benchmark, counted by "
             "bpftrace", ""]
    lines.append("%-8s %5s %9s %9s %9s %9s  %s" % (
        "bench", "N", "walks", "loops", "counted", "declared", ""))
    for r in rows:
        m = r["measured"]
        lines.append("%-8s %5d %9s %9d %9s %9d  %s" % (
            r["bench"][:8], r["nr_ops"], r["walks"] if r["walks"] is not
            None else "-", r["loops"], "%.4f" % m if m is not None else "-",
            r["declared"], "agrees" if r["agrees"] else "DIFFERS"))
    lines += indented(
        "tracing/rseq_ops_rate.bt counts the walker's calls in one run per "
        "benchmark (warm-up, gates and the partner's walks included: a "
        "few walks beyond the loops); agrees: within %s." % tolerance(
            a["tolerances"]["walk_counts"]))
    return lines
