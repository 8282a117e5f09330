# SPDX-License-Identifier: GPL-2.0
"""opbench_report - render an analysis (opbench_data.analyse) as plain text.

The text is meant to be pasted into an email: at most 72 columns, fixed
width, deterministic (the same records give the same bytes). Verdicts follow
ministat: "Difference at 95% confidence" or "No difference proven at 95%
confidence" (the level is opbench_stats.CONFIDENCE), with the interval, the
A/A noise floor and the smallest effect the run could detect beside each.

render(a) takes the analysis alone: every figure and verdict is in it, the
header's facts too; nothing here reads a file or decides. This module holds
the header and the benchmarks' sections; the other sections are rendered
beside their data modules (preempt_report, cross_report, tcmalloc_report,
designs_report), with report_core's helpers.
"""
import math
import textwrap

from cross_report import cross_lines, walk_count_lines
from bpf_design import bpf_lines
from designs_report import designs_lines
from latency_report import latency_lines
from preempt_report import gap_lines
from report_core import (CI_HEAD, CONF, MARK, RULE, WIDTH, ci, compiler_line,
                         field, indented, interval, num, pct, pct_ci, pval,
                         source_line, verdict_word)
import opbench_stats as st
import pmu
from opbench_cells import METRIC, METRIC_TEXT, METRIC_TIME, TSC_AGREE
from tcmalloc_report import tcmalloc_lines


def _q(x):
    """A fact the run did not record: "?"."""
    return "?" if x is None else x


def header(a):
    h = a["header"]
    p = h["provenance"]
    k = h["kernel"]
    g = h["guest"]
    title = "rseq-opbench report: %s" % a["run"]
    lines = [title, "=" * len(title)]
    if h["incomplete"] is not None:
        lines += field("WARNING", "this run is INCOMPLETE (%s): the figures "
                       "cover only what was measured before it stopped" % (
                           h["incomplete"].get("interrupted") or
                           "it stopped before the benchmarks and tracing "
                           "completed"))
    native = h["runner"] == "native"
    lines += field("Run", "plan %s; %d %s in order %s; %s%s" % (
        _q(h["plan"]), len(h["boot_order"]),
        "boots" if not native or h["pooled"] else "repetitions",
        " ".join(h["boot_order"]),
        p.get("ops", ""), "; planned and not run: %s" % " ".join(
            h["not_run"]) if h.get("not_run") else ""))
    if native and h["pooled"]:
        lines += field("Runner", "native, merged: the plan's programs on "
                       "a test box's running kernels, no QEMU, no tracing; "
                       "%d repetitions in %d boots, a boot's repetitions "
                       "pooled into one value (a boot moves all its figures "
                       "alike): \"boot\" below means a boot of the box, "
                       "paired with the other kernels' boot of the same "
                       "rank" % (h["repetitions"], len(h["boot_order"])))
    elif native:
        lines += field("Runner", "native: the plan's programs on this "
                       "machine's running kernel, no QEMU, no tracing; each "
                       "repetition is one run of them and stands for a "
                       "boot: \"boot\" below means repetition")
    if h["merged_by_repetition"]:
        lines += field("WARNING", "merged before make merge knew boots: its "
                       "repetitions are paired as rounds, and a boot's "
                       "effect on every figure of it is taken for a "
                       "difference between kernels; merge the runs again")
    if h["few_boots"]:
        lines += field("WARNING", "fewer than 5 boots of %s: with a boot "
                       "effect of a few per cent, a difference that small "
                       "between kernels is not resolved; alternate the "
                       "kernels over more reboots (the kit's README, step "
                       "4)" % ", ".join(
                           x.replace(":", " (") + ")"
                           for x in h["few_boots"].split()))
    lines += field("Kernel", "%s; preempt=%s, mitigations=%s, "
                   "config %s (%s)" % (
                       source_line(k),
                       k.get("preempt", "?"), k.get("mitigations", "?"),
                       k.get("config_hash", "?"),
                       k.get("config_fragments", "?")))
    lines += field("Compiler", compiler_line(k))
    for i, f in enumerate(h["flavours"]):
        series = ("series %s (%s patches)" % (f["series_hash"],
                                              f["series_patches"])
                  if f["series"] else "no series")
        lines += field("Flavour" if i == 0 else "", "%-9s %s, %s" % (
            f["flavour"], _q(f["kernel_release"]), series))
    if h["compilers_differ"]:
        lines += field("WARNING", "the flavours were built with different "
                       "compilers (%s): differences between them are not "
                       "the series' alone" % " / ".join(
                           "%s, asm goto outputs %s" % tuple(c)
                           for c in h["compilers"]))
    if h["configs_differ"]:
        lines += field("WARNING", "the flavours were built with different "
                       "configs (%s): differences between them are not the "
                       "series' alone" % ", ".join(h["configs"]))
    if not native:
        lines += field("QEMU", "%s; %s" % (_q(h["qemu_version"]).replace(
            "QEMU emulator version ", ""), " ".join(h["launch"].get(
                "args", []))))
    lines += field("Units", "%s: %s" % (a["unit"], a["unit_doc"]))
    lines += pmu_field(a["pmu"])
    lines += field("Native" if native else "Guest",
                   "%s %s (%s), pinning %s, clocksource %s, glibc %s" % (
                       _q(h["guest_cpus"]), "CPUs" if native else "vCPUs",
                       g.get("cpu_model", "?"),
                       h["pin"] or ("by opbench" if native else "none"),
                       g.get("clocksource", "?"),
                       g.get("glibc", "?").split()[-1]))
    lines += field("Mitigation", "spectre_v2: %s" % g.get(
        "vuln_spectre_v2", "?"))
    lines += field("Host", "%s, %s CPUs, Linux %s" % (
        p.get("host_cpu", "?"), p.get("host_cpus", "?"),
        p.get("host_kernel", "?")))
    if native and h["host_state"].get("hypervisor") == "yes":
        lines += field("Hypervisor", "the CPU flags say hypervisor: this "
                       "native run measured a virtual machine's CPU, not a "
                       "bare one; its times include what the hypervisor "
                       "adds (exits, steal time)")
    if h["host_state"]:
        # The keys as host-state.sh names them (kvm_halt_poll_ns: no
        # stray unit word in an instruction run's header).
        lines += field("Host state", ", ".join(
            "%s %s" % (k, v)
            for k, v in h["host_state"].items()
            if k not in ("cpu_model", "cmdline")))
    if not native:
        lines += field("Image", "%s %s, perf %s, bpftrace %s" % (
            p.get("image_suite", "?"), p.get("image_recipe", "?"),
            p.get("image_perf", "?"), p.get("image_bpftrace", "?")))
    lines += field("Commands", "host: %s; guest: %s" % (
        p.get("command", "?"), " ".join(h["guest_command"])))
    lines += field("Project", "commit %s%s; opbench sha256 %s" % (
        p.get("project_commit", "?")[:12],
        " with uncommitted changes (diff %s)" % p["project_dirty"]
        if p.get("project_dirty") else "",
        h["manifest"].get("opbench_sha256", "?")))
    return lines


def pmu_field(p):
    """The header's PMU line: what opbench counted, or why nothing."""
    if not p["recorded"]:
        return []
    if not p["available"] and not p["partly"]:
        return field("PMU", "none: %s; no counter columns" % "; ".join(
            p["why"]))
    text = "%s counters per sample: %s" % (
        "/".join(p["source"]), ", ".join(p["events"]))
    if "software" in p["source"]:
        text += " (software stand-ins, OPBENCH_PMU=software: a test of " \
                "the counting, not hardware figures)"
    if p.get("pass") == "count":
        text += "; counted in a pass of their own, the timed samples " \
                "ran without them"
    else:
        text += "; live during the timed samples (a switch saves and " \
                "restores them; a run made before the counting pass): " \
                "not comparable with times measured without"
    if p["partly"]:
        text += "; some boots had none (%s)" % "; ".join(p["why"])
    return field("PMU", text)


def agreement(s):
    """The PMU's verdict against icount (pmu.ICOUNT_TOLERANCE)."""
    if "agrees" not in s:
        return ""
    if s["agrees"]:
        return ": agrees (within %.0f %% or the interval)" % (
            100 * pmu.ICOUNT_TOLERANCE)
    return (": DISAGREES by %+.1f %% (beyond %.0f %% and the interval; "
            "alternatives, REP strings, interrupts: analysis/pmu.py)" % (
                100 * (s["ratio"] - 1), 100 * pmu.ICOUNT_TOLERANCE))


def pmu_lines(g):
    """A group's counters per loop, and the instructions' slope per walk
    (the PMU's figure beside the icount one)."""
    p = g.get("pmu")
    if not p:
        return []
    ev = p["events"]
    lines = ["", "PMU counters per loop (mean over boots of each boot's "
             "median):"]
    lines.append(("%6s %-9s %2s" % ("N", "flavour", "k") + "".join(
        " %12s" % e[:12] for e in ev)).rstrip())
    for c in p["cells"]:
        lines.append(("%6d %-9s %2d" % (c["nr_ops"], c["flavour"][:9],
                                          c["k"]) + "".join(
            " %12s" % num(c[e]) for e in ev) +
            (" multiplexed" if c["multiplexed"] else "")).rstrip())
    for fl, s in sorted(p["slopes"].items()):
        lines += indented("%s: %s %s instructions per operation per walk "
                          "(PMU)%s" % (fl, num(s["value"]), ci(s["ci"]),
                                       "; icount %s (%s), ratio %.4f%s" % (
                                           num(s["icount"]), s["icount_run"],
                                           s["ratio"], agreement(s))
                                       if "ratio" in s else ""))
    return lines


def floor_text(aa):
    if not aa:
        return "A/A floor unknown (fewer than 3 reference boots)"
    return ("A/A: two single boots of the reference differ by up to %s "
            "(%s; sd between %d boots %s)" % (
                num(aa["floor"]), CONF, aa["boots"], num(aa["sd_between"])))


def verdict_block(c, unit, aa):
    """ministat-style verdict lines for one comparison."""
    lines = ["  " + verdict_word(c)]
    lines.append("    %s %s %s" % (num(c["diff"], True), interval(c), unit))
    if c.get("ratio") is not None and not math.isnan(c["ratio"]):
        lines.append("    %s %s" % (pct(c["ratio"]), "" if c.get("se") == 0
                                    else pct_ci(c["ratio_ci"])))
    lines += textwrap.wrap("%s, p=%s (%s); "
                           "smallest detectable %s; %s" % (
                               c["test"], pval(c["p"]),
                               "%d rounds paired" % c["paired_boots"]
                               if "paired_boots" in c else
                               "boots %d/%d" % tuple(c["k"]),
                               num(c["detectable"]), floor_text(aa)), WIDTH,
                           initial_indent="    ", subsequent_indent="    ")
    for w in c["warnings"]:
        lines += textwrap.wrap("! " + w, WIDTH, initial_indent="    ",
                               subsequent_indent="      ")
    return lines


def cost_lines(m, pw, unit, zero):
    """The cost model a + b x N fitted per boot, its residuals and weights;
    pw: its slope and largest walk per walk (None: no walk per loop)."""
    lines = ["  a = %s %s %s (N=0 measured: %s)" % (
        num(m["a"]), ci(m["a_ci"]), unit, num(zero))]
    lines.append("  b = %s %s %s per operation per loop" % (
        num(m["b"]), ci(m["b_ci"]), unit))
    if pw:
        lines.append("    = %s %s per operation per walk" % (
            num(pw["value"]), ci(pw["ci"])))
        lines.append("  one %d-operation walk: %s %s %s" % (
            pw["n_max"], num(pw["walk_max"]), ci(pw["walk_max_ci"]), unit))
    if m.get("entry") is not None:
        lines += indented("entry (a minus N=0, per loop): %s %s %s" % (
            num(m["entry"], True), ci(m["entry_ci"], True), unit),
            more="    ")
    lines += indented(
        "fitted on each of %d boots, combined across boots; residual "
        "(mean over boots) and the share of the slope's weight at each N:"
        % m["k"])
    ns = m["ns"]
    res = {int(k): v for k, v in m["residuals"].items()}
    wt = {int(k): v for k, v in m["weights"].items()}
    for i in range(0, len(ns), 3):
        lines.append(("  " + "".join(
            "%6d:%9s %4.0f%%  " % (n, num(res[n], True), 100 * wt[n])
            for n in ns[i:i + 3])).rstrip())
    for x in m.get("warnings", []):
        lines += indented("! " + x, more="    ")
    if m.get("excluded_boots"):
        lines.append("  ! boots left out (a cell missing): %s" % ", ".join(
            str(b) for b in m["excluded_boots"]))
    return lines


def cells_table(g, unit, spread_rule):
    lines = []
    preempt = any("gaps" in c for c in g["cells"])
    has_sw = any(c.get("switches_per_loop") is not None for c in g["cells"])
    lines.append(("%6s %-9s %2s %11s  %-22s %7s%s" % (
        "N", "flavour", "k", "median", CI_HEAD, "sd(b)",
        "  sw/loop" if has_sw else "")).rstrip())
    for c in g["cells"]:
        sw = c.get("switches_per_loop")
        lines.append(("%6d %-9s %2d %11s  %-22s %7s%s" % (
            c["nr_ops"], c["flavour"][:9], c["k"], num(c["value"]),
            "[same in all boots]" if c.get("sd_used") == 0 else
            ci(c["ci"]), num(c["sd_between"]),
            "  %.3f" % sw if sw is not None else "")).rstrip())
    lines += indented(
        "median: the mean over boots of each boot's median; k boots; "
        "sd(b): the spread between boots; " + spread_rule + (
            "; sw/loop: context switches per loop" if has_sw else ""))
    if preempt:
        lines += gap_lines(g)
    return lines


def group_lines(g, a):
    unit = a["unit"]
    lines = [RULE]
    walks = g["walks_per_loop"]
    lines.append("%s: %s%s" % (g["bench"], g["loop"],
                               "" if walks is None else
                               ", %d walk%s per loop" % (
                                   walks, "" if walks == 1 else "s")))
    lines += textwrap.wrap("operation type %s, %s rseq area; %s per loop "
                           "(%s), %s is better" % (
                               g["op_type"], g["reg"], unit,
                               METRIC_TEXT[a.get("metric", METRIC)],
                               g["better"]), WIDTH)
    if g.get("headline_excluded"):
        lines += textwrap.wrap("! not in the headline table: %s" %
                               g["headline_excluded"], WIDTH,
                               subsequent_indent="  ")
    lines.append("")
    lines += cells_table(g, unit, a["spread_rule"])
    lines += pmu_lines(g)
    na = {}
    for fl, n in g["unsupported"]:
        na.setdefault(fl, []).append(str(n))
    for fl, ns in na.items():
        lines += textwrap.wrap("n/a: %s at N=%s: unsupported by %s (%s)" % (
            fl, ",".join(ns), a["kernels"].get(fl) or "its kernel",
            g["unsupported_why"].get(fl, "?")), WIDTH,
            initial_indent="  ", subsequent_indent="    ")
    for fl, n in g["dropped"]:
        lines += textwrap.wrap("dropped: %s at N=%d (a gate failed in some "
                               "boot; see the end)" % (fl, n), WIDTH,
                               initial_indent="  ", subsequent_indent="    ")
    for c in g["vs_reference"]:
        lines.append("")
        lines.append("%s at N=%d against %s at N=0" % (
            c["flavour"], c["nr_ops"], a["reference"]))
        lines += verdict_block(c, unit, g["aa"])
    for fl, rows in g["vs_zero"].items():
        lines.append("")
        lines.append("%s: N operations against N=0, paired by boot (%s)"
                     % (fl, unit))
        lines.append("%7s %11s  %-23s %8s %6s %8s" % (
            "N", "diff", CI_HEAD, "ratio", "p", "detect"))
        for c in rows:
            lines.append("%7d %11s  %-23s %8s %6s %8s %s" % (
                c["nr_ops"], num(c["diff"], True), interval(c),
                "%.4f" % c["ratio"] if c.get("ratio") is not None
                and not math.isnan(c["ratio"]) else "-",
                pval(c["p"]), num(c["detectable"]), MARK[c["verdict"]]))
        lines += indented(
            "* difference at %s confidence (paired t over the boots that "
            "measured both); detect: smallest difference found %s of the "
            "time" % (CONF, st.POWER_TEXT))
    for fl, m in g["cost"].items():
        lines.append("")
        lines.append("Cost model on %s, N=%d..%d: a + b x N per boot" % (
            fl, m["ns"][0], m["ns"][-1]))
        zero = next((c["value"] for c in g["cells"] if c["flavour"] == fl
                     and c["nr_ops"] == 0), None)
        lines += cost_lines(m, g["per_walk"].get(fl), unit, zero)
    if g["vs_rfc"]:
        lines.append("")
        lines.append("ops against the RFC as posted (rfc), N by N (%s)" %
                     unit)
        lines.append("%7s %11s  %-23s %8s %s" % ("N", "ops-rfc", CI_HEAD,
                                                  "ratio", ""))
        for c in g["vs_rfc"]:
            lines.append("%7d %11s  %-23s %8s %s" % (
                c["nr_ops"], num(c["diff"], True), interval(c),
                "%.4f" % c["ratio"] if c.get("ratio") is not None else "-",
                MARK[c["verdict"]]))
        s = g.get("slopes_vs_rfc")
        if s:
            lines += indented(
                "slope per operation per walk, ops minus rfc: %s %s "
                "(ratio ops/rfc %s): %s" % (
                    num(s["diff_per_walk"], True),
                    ci(s["diff_per_walk_ci"], True),
                    "%.3f" % s["ratio"] if s.get("ratio") is not None
                    else "undefined, rfc's slope is 0",
                    verdict_word(s)), more="    ")
    return lines


def mission_lines(a):
    """The table the mission asks for: every flavour at N = 0, 1, 2048
    against the unpatched kernel at N = 0."""
    unit = a["unit"]
    lines = [RULE, "Against the unpatched kernel (%s at N=0), %s per loop"
             % (a["reference"], unit), ""]
    lines.append("%-8s %-7s %5s %11s  %-22s %8s %s" % (
        "bench", "flavour", "N", "diff", CI_HEAD, "change", ""))
    for c in a["mission"]:
        lines.append("%-8s %-7s %5d %11s  %-22s %8s %s" % (
            c["bench"][:8], c["flavour"][:7], c["nr_ops"],
            num(c["diff"], True), interval(c),
            pct(c["ratio"]) if c.get("ratio") is not None else "-",
            MARK[c["verdict"]] + ("*" if c.get("holm") else "")))
    if not a["mission"]:
        lines.append("  (no flavour beside %s measured)" % a["reference"])
    tested = [c for c in a["mission"] if c.get("p_holm") is not None]
    marked = sum(1 for c in tested if c["verdict"] == "difference")
    lines += indented(
        "* difference at %s confidence; blank: none proven. Intervals: "
        "%s; \"same in all boots\": every "
        "boot gave this figure exactly. %s" % (
            CONF, a["comparison"],
            "" if a["accel"] != "icount" else "Instructions, not time."))
    # "No difference" is never printed without what it could have found.
    power = ["%s %s N=%d %s" % (c["bench"], c["flavour"], c["nr_ops"],
                                num(c["detectable"]))
             for c in a["mission"] if c["verdict"] != "difference"
             and c.get("detectable") is not None and c.get("se") != 0]
    if power:
        lines += indented(
            "Where none is proven, the smallest difference the row would "
            "have found %s of the time at its own spread and the "
            "unadjusted 5%% level (%s): %s." % (
                st.POWER_TEXT, unit, "; ".join(power)))
    if tested:
        lines += indented(
            "These %d rows are the report's primary comparisons: if "
            "nothing differed, about %.1f of them would be marked by "
            "chance at %s confidence; ** the %d of the %d marked that "
            "stay marked after Holm's adjustment for the %d. Every other "
            "table below is exploratory, its marks not adjusted for "
            "their number." % (
                len(tested), len(tested) * (1 - st.CONFIDENCE), CONF,
                sum(1 for c in tested if c.get("holm")), marked,
                len(tested)))
    excl = [g for g in a["groups"] if g.get("headline_excluded")]
    for g in excl:
        lines += indented("%s is left out: %s" % (
            g["bench"], g["headline_excluded"]), more="    ")
    return lines


def perf_lines(a):
    pb = a.get("perf_bench") or {}
    if not pb:
        return []
    lines = [RULE, "perf bench in the same boots, beside ours at N=0 (%s "
             "per op)" % a["unit"], ""]
    lines.append("%-14s %-9s %2s %10s  %-22s %8s" % (
        "perf bench", "flavour", "k", "per op", CI_HEAD, "ours/perf"))
    for name, row in sorted(pb.items()):
        for fl, e in row.items():
            lines.append("%-14s %-9s %2d %10s  %-22s %8s" % (
                name[:14], fl[:9], e["k"], num(e["value"]), ci(e["ci"]),
                "%.3f" % e["ratio_ours"] if e.get("ratio_ours") else "-"))
    lines += indented(
        "perf times whole runs with the guest's clock, interrupts "
        "included, and its loop differs from ours (syscall basic is "
        "getppid like ours; sched pipe -T is a pipe ping-pong where ours "
        "yields); ours is the %s of single iterations.%s" % (
            "trimmed mean" if a.get("metric") == METRIC_TIME else "median",
            " Converted with each boot's measured nanoseconds per TSC tick."
            if a["accel"] == "icount" else ""))
    return lines


def appendix_lines(a):
    ns = a["mission_ns"]
    lines = [RULE, "Appendix: per-boot medians at N = %s and %d (%s)" % (
        ", ".join(str(n) for n in ns[:-1]), ns[-1], a["unit"])]
    for g in a["groups"]:
        cells = [c for c in g["cells"] if c["nr_ops"] in ns]
        if not cells:
            continue
        lines.append("")
        lines.append("%s (%s)" % (g["bench"], g["op_type"]))
        for c in cells:
            vals = " ".join("%d:%s" % (int(b), num(v))
                            for b, v in sorted(c["per_boot"].items(),
                                               key=lambda kv: int(kv[0])))
            lines += textwrap.wrap(vals, WIDTH, initial_indent="%6d %-8s " % (
                c["nr_ops"], c["flavour"][:8]), subsequent_indent=" " * 16)
    lines.append("")
    lines.append("  boot:median, boots numbered in the order they ran")
    return lines


def clock_lines(a):
    p = a["header"]["provenance"]
    lines = []
    per = ", ".join("%s %d" % kv for kv in
                    sorted(a["boots_per_flavour"].items()))
    if p.get("merged_from"):
        # analysis/merge_runs.py: sessions of a test box, a kernel each.
        lines += field("Boots", "%s per flavour, merged from %d runs (%s) "
                       "in the order they ran, the k-th boot of each "
                       "kernel paired as round k; each run's order and its cells' "
                       "drawn from its seed (%s)" % (
                           per, len(p["merged_from"].split()),
                           p["merged_from"], p.get("seed", "?")))
    else:
        lines += field("Boots", "%s per flavour, order drawn from seed %s; "
                       "cells in each boot in an order drawn from the seed "
                       "and the boot's number" % (per, p.get("seed", "?")))
    tpi = a["clock_values"]["ticks_per_insn"]
    npt = a["clock_values"]["ns_per_tick"]
    cv = a["clock_values"]
    src = cv.get("rate_source") or []
    if a["accel"] == "icount":
        how = None
    elif src == ["kernel"]:
        chk = cv["rate_check"]
        how = ("; ticks converted with the kernel's own TSC rate, %s ns a "
               "tick, from which the measured rate differs by %+.2f%% to "
               "%+.2f%% (checked: within %g%%)" % (
                   "/".join("%.6f" % x for x in cv["ns_per_tick_kernel"]),
                   100 * chk[0], 100 * chk[-1], 100 * TSC_AGREE))
    elif cv.get("rate_check"):
        how = ("; WARNING: the measured rate converts ticks in every boot, "
               "not the kernel's TSC rate: %s" % "; ".join(cv["rate_why"]))
    else:
        how = ("; no TSC rate in the kernel's log: the measured rate "
               "converts ticks")
    lines += field("Clock", "TSC read per iteration; ticks per instruction "
                   "of a known loop %s; the guest's clock %s nanoseconds "
                   "per tick (its own calibration%s" % (
                       "/".join("%.6f" % x for x in tpi) or "-",
                       "/".join("%.4f" % x for x in npt) or "-",
                       ", not used: a tick is an instruction)" if how is None
                       else ")" + how))
    if a["accel"] != "icount" and a.get("tsc_step"):
        lines += field("", "the TSC advances %s ticks at a time; a "
                       "sample's figure: the %s" % (
                           "/".join(str(x) for x in a["tsc_step"]),
                           METRIC_TEXT[a.get("metric", METRIC)]))
    if a["tsc_calibration"]:
        lines += field("", "guest: " + a["tsc_calibration"])
    lines += field("Statistics", a["method"])
    return lines


def invalid_lines(a):
    """The cells a gate failed in, dropped in every boot; or none."""
    if a["usable"]:
        return ["Invalid cells: none (every sample passed its gate)"]
    lines = ["Invalid cells: a gate failed; the cell is dropped in every "
             "boot"]
    for x in a["invalid"]:
        lines += indented("%s %s N=%d boot %d (%d samples): %s" % (
            x["bench"], x["flavour"], x["nr_ops"], x["boot"], x["samples"],
            x["why"]), more="    ")
    for x in (a.get("tcmalloc") or {}).get("invalid", []):
        lines += indented("tcmodel %s %s %s boot %d sample %d: %s" % (
            x["what"], x["mode"], x["flavour"], x["boot"], x["sample"],
            x["why"]), more="    ")
    return lines


def render(a):
    """The report of the analysis a (opbench_data.analyse), as one text."""
    lines = header(a) + clock_lines(a) + [""] + mission_lines(a)
    sections = [group_lines(g, a) for g in a["groups"]]
    sections += [cross_lines(a), walk_count_lines(a), perf_lines(a)]
    if a.get("tcmalloc"):
        sections.append(tcmalloc_lines(a["tcmalloc"], a))
    if a.get("designs"):
        sections.append(designs_lines(a["designs"], a))
    if a.get("bpf"):
        sections.append(bpf_lines(a["bpf"], a))
    sections.append(latency_lines(a.get("latency")))
    sections += [appendix_lines(a), [RULE] + invalid_lines(a)]
    for sec in sections:
        if sec:
            lines += [""] + sec
    lines.append("")
    lines += textwrap.wrap("Raw records: %s-*/opbench.json%s in %s; every "
                           "number above is in analysis/analysis.json." % (
                               "rep" if a["header"]["runner"] == "native"
                               else "boot",
                               " and tcmodel.json" if a.get("tcmalloc")
                               else "", a["run"]), WIDTH)
    out = "\n".join(lines) + "\n"
    too_wide = [ln for ln in out.splitlines() if len(ln) > WIDTH]
    assert not too_wide, "report line over %d columns: %r" % (WIDTH,
                                                            too_wide[0])
    return out
