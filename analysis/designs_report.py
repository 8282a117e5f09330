# SPDX-License-Identifier: GPL-2.0
"""designs_report - the section "Keep the operations in the kernel?" of the
report: the designs of the walk (designs.analyse), each against series v3
(designs.ANCHOR), as text. The verdicts (the target met or not) and the
figures are designs'."""
import textwrap

from cross_checks import WALK_BENCHES
from report_core import (CI_HEAD, CONF, RULE, WIDTH, ci, num, ratio,
                         ratio_ci)


def _or_na(x):
    return num(x) if x is not None else "n/a"


def target_text(t):
    """designs' verdict on the target, as a sentence."""
    if not t["assessed"]:
        if t["why"] == "no-rfc":
            return "Not assessed: no RFC slope in this run."
        return ("Not assessed: a ratio without an interval (%s)."
                % ", ".join(t["benches"]))
    return "%s (lowest bound of the ratio's interval over %s: %.2f)." % (
        "Met" if t["met"] else "NOT met", ", ".join(t["benches"]), t["low"])


def _lines(x):
    return "+%d/-%d" % (x["added"], x["removed"]) if x else "-"


def abi_lines(d):
    """What each design costs outside the walk (designs._abi): the feature
    size its boots saw, the bytes and lines it adds to the reference."""
    rows = d.get("abi") or []
    if not rows:
        return []
    lines = [""] + textwrap.wrap(
        "Outside the walk: AT_RSEQ_FEATURE_SIZE as each design's boots saw "
        "it; bytes of functions and of data its vmlinux adds to %s's (the "
        "kernel's scripts/bloat-o-meter); lines its tree adds and removes "
        "against the pristine source (git diff --numstat), by area. Bytes "
        "and lines count what each tree holds, dead code included:"
        % rows[0]["flavour"], WIDTH)
    lines.append("  %-10s %7s %9s %6s %12s %10s %10s" % (
        "design", "feature", "functions", "data", "kernel", "uapi",
        "selftests"))
    for r in rows:
        ln = r["lines"] or {}
        fs = r["feature_size"]
        lines.append("  %-10s %7s %9s %6s %12s %10s %10s" % (
            r["flavour"],
            "/".join(str(x) for x in fs) if fs else "n/a",
            "%+d" % r["functions"] if r["functions"] is not None else "-",
            "%+d" % r["data"] if r["data"] is not None else "-",
            _lines(ln.get("kernel")), _lines(ln.get("uapi")),
            _lines(ln.get("selftests"))))
    return lines


def designs_lines(d, a):
    """The section "keep the operations in the kernel?" (designs.analyse)."""
    unit = a["unit"]
    icount = a["accel"] == "icount"
    fls = d["flavours"]
    lines = [RULE, "Keep the operations in the kernel? The designs of "
             "the walk", ""]
    lines += textwrap.wrap(
        "; ".join("%s: %s" % (fl, d["names"][fl]) for fl in fls) +
        ". Same source, configuration and compiler, one run. Figures: %s, "
        "mean over boots, %s CI.%s" % (
            unit, CONF,
            " Instructions under QEMU icount, not time." if icount else ""),
        WIDTH)
    sl = {(s["bench"], s["flavour"]): s for s in d["slopes"]}
    benches = [b for b in a.get("walk_benches", WALK_BENCHES)
               if any(k[0] == b for k in sl)]
    if benches:
        # Wrapped: "ns (emulated)" makes it longer than a line.
        lines += [""] + textwrap.wrap("The walk, %s per operation per walk "
                                      "(fit of a + b*N per boot):" % unit,
                                      WIDTH)
        by_ns = {}
        for b, ns in d.get("common_ns", {}).items():
            by_ns.setdefault(tuple(ns), []).append(b)
        for ns, bs in sorted(by_ns.items()):
            lines += textwrap.wrap(
                "  %s: fitted over N = %s only, the N every design here "
                "measured and fits (a design with a lower limit has no "
                "cell above it, one with FIT_FROM none below; a wider fit "
                "would take in what the others' walk costs there)." % (", ".join(b for b in benches
                                                if b in bs) or
                                      ", ".join(sorted(bs)),
                                      ",".join(str(n) for n in ns)),
                WIDTH, subsequent_indent="    ")
        starts = {}
        for b, per in d.get("fit_from", {}).items():
            for fl, n in per.items():
                starts.setdefault(n, set()).add(fl)
        dropped = {}
        for b, per in d.get("fit_from_dropped", {}).items():
            for fl, n in per.items():
                dropped.setdefault((fl, n), []).append(b)
        for (fl, n), bs in sorted(dropped.items()):
            lines += textwrap.wrap(
                "  %s: fitted from N = 1 in %s, where this run measured "
                "fewer than two N from its FIT_FROM (%d): its N = 1 takes a "
                "path of its own and bends that slope." % (
                    fl, ", ".join(bs), n), WIDTH, subsequent_indent="    ")
        for n, fs in sorted(starts.items()):
            lines += textwrap.wrap(
                "  %s: fitted from N = %d, in every walk benchmark (their "
                "declarations' FIT_FROM): a single operation takes a path "
                "of its own, off the line through the others; what it "
                "costs is the N = 1 table below." % (
                    ", ".join(f for f in fls if f in fs), n),
                WIDTH, subsequent_indent="    ")
        lines.append("  %-8s %-10s %10s  %s" % ("bench", "design", "slope",
                                                CI_HEAD))
        miss = {(m["bench"], m["flavour"]): m["why"]
                for m in d.get("missing", [])}
        for b in benches:
            for fl in fls:
                s = sl.get((b, fl))
                if s:
                    lines.append("  %-8s %-10s %10s  %s" % (
                        b, fl, num(s["value"]), ci(s["ci"])))
                elif (b, fl) in miss:
                    lines += textwrap.wrap(
                        "%-8s %-10s no slope: %s" % (b, fl, miss[(b, fl)]),
                        WIDTH, initial_indent="  ",
                        subsequent_indent="  " + " " * 20)
        ones = [(b, fl, sl[(b, fl)]["n1"]) for b in benches for fl in fls
                if (b, fl) in sl and sl[(b, fl)].get("n1")]
        if ones:
            lines += [""] + textwrap.wrap(
                "One operation against none (N = 1 minus N = 0, paired by "
                "boot), %s per walk: the walk's fixed part and one "
                "operation, what a thread with one operation pays:" % unit,
                WIDTH)
            lines.append("  %-8s %-10s %10s  %s" % ("bench", "design", "N=1",
                                                    CI_HEAD))
            for b, fl, o in ones:
                lines.append("  %-8s %-10s %10s  %s" % (
                    b, fl, num(o["diff_per_walk"], True),
                    ci(o["diff_per_walk_ci"], True)))
        means = [(b, fl, sl[(b, fl)]["mean"]) for b in benches for fl in fls
                 if (b, fl) in sl and sl[(b, fl)].get("mean")]
        if means:
            lines += [""] + textwrap.wrap(
                "What a return costs a user: the same fit on each sample's "
                "mean per loop, every iteration counted: re-walks, and "
                "iterations without a walk too (the slope above takes the "
                "%s, which hides both), %s per operation per walk:" % (
                    "trimmed mean of the iterations" if a.get("metric") ==
                    "tsc_trim" else "median iteration", unit), WIDTH)
            lines.append("  %-8s %-10s %10s  %-20s %s" % (
                "bench", "design", "mean", CI_HEAD, "vs slope"))
            for b, fl, m in means:
                med = sl[(b, fl)]["value"]
                lines.append("  %-8s %-10s %10s  %-20s %s" % (
                    b, fl, num(m["value"]), ci(m["ci"]),
                    "%+.1f %%" % (100.0 * (m["value"] / med - 1))
                    if med and m["value"] is not None else "n/a"))
            if any(b == "preempt" for b in benches):
                lines += textwrap.wrap(
                    "  preempt has no mean: its samples are P-gaps, one "
                    "per preemption.", WIDTH, subsequent_indent="  ")
        anchor = d["anchor"]
        lines += [""] + textwrap.wrap("Per operation, each design against "
                                      "%s (ratio of slopes):" % anchor,
                                      WIDTH)
        for r in d["ratios"]:
            lines.append("  %-8s %-8s / %-8s  %6s  %s" % (
                r["bench"], r["flavour"], anchor,
                ratio(r["ratio"]) if r["ratio"] is not None else "n/a",
                "[same in all boots]" if r["ratio_ci"] and
                r["ratio_ci"][0] == r["ratio_ci"][1] else
                ratio_ci(r["ratio_ci"]) if r["ratio_ci"]
                else "[no interval]"))
        target = ("Target: the walk of %s at least %.0f times cheaper "
                  "per operation than the RFC's. " % (anchor, d["target"]))
        lines += [""] + textwrap.wrap(target + target_text(
            d["target_verdict"]), WIDTH)
        lines += ["", "One walk of the largest N (from the fit), %s:" % unit]
        for b in benches:
            for fl in fls:
                s = sl.get((b, fl))
                if s and s.get("walk_max") is not None:
                    lines.append("  %-8s %-10s N=%-5d %10s  %s" % (
                        b, fl, s["n_max"], num(s["walk_max"]),
                        ci(s["walk_max_ci"])))
    if d["zero"]:
        lines += [""] + textwrap.wrap("N = 0 against the unpatched kernel "
                                      "(a thread with no operation), %s "
                                      "per loop:" % unit, WIDTH)
        for z in d["zero"]:
            flag = (" (!)" if z.get("excludes_0") and not z.get("explained")
                    else " (*)" if z.get("excludes_0") else "")
            lines.append("  %-8s %-10s %10s  %s%s" % (
                z["bench"], z["flavour"], num(z["diff"], True),
                ci(z["diff_ci"], True), flag))
        for z in d["zero"]:
            if z.get("excludes_0") and z.get("explained"):
                lines += textwrap.wrap(
                    "(*) %s %s: %s" % (z["bench"], z["flavour"],
                                       z["explained"]),
                    WIDTH, initial_indent="  ", subsequent_indent="    ")
        if any(z.get("excludes_0") and not z.get("explained")
               for z in d["zero"]):
            lines += textwrap.wrap(
                "(!) An interval that excludes 0 with no explanation on "
                "record (the flavour's N0_EXPLAINED): a thread without "
                "operations pays something here that nobody has "
                "explained.", WIDTH, initial_indent="  ",
                subsequent_indent="  ")
    if d["stretch"]:
        lines += [""] + textwrap.wrap("Walk added to the return from a "
                                      "preemption (P-gap at N minus at N = "
                                      "0, paired by boot), %s:" % unit,
                                      WIDTH)
        for s in d["stretch"]:
            lines.append("  %-9s %-10s N=%-5d %10s  %s" % (
                s["layout"], s["flavour"], s["nr_ops"],
                num(s["diff"], True), ci(s["diff_ci"], True)))
        lines += textwrap.wrap(
            "  Every design but rfc applies up to %d operations with "
            "interrupts off and longer lists with them on: %s with "
            "preemption off, ops in chunks of at most %d with "
            "preemption off, preemptible between chunks; rfc walks every "
            "list with interrupts off.%s" % (a["irqs_off_max"],
                                             " and ".join(
                                                 f for f in ("v2", "resident")
                                                 if f in fls) or "v2",
                                             a["irqs_off_max"],
                             " Under icount both layouts execute the same "
                             "instructions." if icount else ""), WIDTH,
            subsequent_indent="  ")
    lines += abi_lines(d)
    if d["register"]:
        lines += [""] + textwrap.wrap("Registration: prctl() registering "
                                      "one more node and unregistering it, "
                                      "with N held, %s per round trip:"
                                      % unit, WIDTH)
        show = d["register_ns"]
        lines.append("  %-10s" % "design" + "".join("%10s" % ("N=%d" % n)
                                                     for n in show)
                     + "  per held op")
        for r in d["register"]:
            by = {c["nr_ops"]: c["value"] for c in r["cells"]}
            lines.append("  %-10s" % r["flavour"] + "".join(
                "%10s" % (num(by[n]) if n in by else "n/a") for n in show)
                + "  %s" % (num(r["slope"], True) if r["slope"] is not None
                            else "n/a"))
        for r in d["register"]:
            if r["full"]:
                lines += textwrap.wrap(
                    "  %s at N=%s: full, no operation can be added (its "
                    "limit)." % (r["flavour"], ",".join(
                        str(n) for n in sorted(r["full"]))),
                    WIDTH, subsequent_indent="    ")
    if d["loops"]:
        lines += [""] + textwrap.wrap("The walkers' loops, counted in each "
                                      "vmlinux (analysis/walker_loops.py; "
                                      "static: every instruction from a "
                                      "loop's head to its back edge):",
                                      WIDTH)
        lines.append("  %-10s %-30s %6s %6s %7s" % ("design", "function "
                                                    "loop", "insns",
                                                    "loads", "cond-br"))
        for fl in fls:
            for lp in d["loops"].get(fl, []):
                lines.append("  %-10s %-30s %6d %6d %7d" % (
                    fl, ("%s +%s" % (lp["function"], lp["head"]))[:30],
                    lp["insns"], lp["loads"], lp["cond_br"]))
            if fl not in d["loops"] and fl == "bpf":
                lines.append("  %-10s a BPF program, JITed at load: not in "
                             "its vmlinux" % fl)
            elif fl not in d["loops"]:
                lines.append("  %-10s no walker function in its vmlinux (the "
                             "walk is inlined)" % fl)
            elif not d["loops"][fl]:
                lines.append("  %-10s not counted (see walker-loops/%s.txt)"
                             % (fl, fl))
    be = d.get("breakeven") or []
    if be:
        lines += [""] + textwrap.wrap(
            "When each design wins: the registration round trip of %s "
            "costs more; each walk saves the difference of the switch "
            "slopes per operation. Walks of one operation to pay back one "
            "register and unregister:" % d["anchor"], WIDTH)
        for r in be:
            s, x, w = r["sign"], r["extra"], num(r["save_per_walk"], True)
            if s > 0 and x > 0:
                then = "%s saved a walk: %.0f walks" % (w, r["walks"])
            elif s < 0 and x < 0:
                then = ("%s a walk dearer: %s wins for the first %.0f "
                        "walks" % (w, d["anchor"], r["walks"]))
            elif s >= 0 and x <= 0:
                then = ("%s registers for less%s: it wins from the first "
                        "walk" % (d["anchor"], "" if s else
                                  ", and no walk differs as resolved"))
            elif s < 0:
                then = "%s a walk dearer: %s never wins" % (w, d["anchor"])
            else:
                then = ("%s a walk, not resolved from 0: no number of walks "
                        "pays it back as measured" % w)
            lines += textwrap.wrap(
                "vs %-4s N=%-5d %s a round trip; %s" % (
                    r["flavour"], r["nr_ops"], num(r["extra"], True), then),
                WIDTH, initial_indent="  ", subsequent_indent="    ")
        lines += textwrap.wrap(
            "A thread that keeps its operations registered across more "
            "returns after a switch than that is cheaper with %s; one that "
            "registers and unregisters around a few returns, or changes "
            "its nodes in place, is not." % d["anchor"], WIDTH)
    rc = d["anchor_cost"]
    if rc:
        measured = ("Measured here: registration grows by %s %s per "
                    "operation held (the lookup of the node among them), "
                    "and at N = 0 each round trip allocates and frees the "
                    "array (%s, against %s for v2); the benchmark "
                    "unregisters the newest node, the best case: an older "
                    "one also costs a search and a move of the entries "
                    "after it. " % (num(rc["slope"]), unit,
                                    _or_na(rc["anchor_zero"]),
                                    _or_na(rc["walker_zero"])))
    else:
        measured = "Registration was not measured in this run. "
    mem = d["memory"]
    lines += [""] + textwrap.wrap(
        "What %s costs instead. " % d["anchor"] + measured +
        "Not measured by the benchmarks, from rseq.rst: kernel memory of "
        "%d bytes per entry allocated, the array doubling (%d operations "
        "take %d entries, %d KiB), charged to the memory cgroup of the "
        "thread that registers (rseq_op_test checks it on the debug "
        "kernel: array_charged_to_the_thread_cgroup); a copy at fork(); nodes that user space can no "
        "longer change without registering them again. The cover letter "
        "(kernel-patch/cover-letter.txt) lists every difference from the "
        "RFC and from v2." % (
            mem["entry_bytes"], mem["ops"], mem["entries"], mem["kib"]),
        WIDTH)
    return lines
