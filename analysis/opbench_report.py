# SPDX-License-Identifier: GPL-2.0
"""opbench_report - render an analysis (opbench_data.analyse) as plain text.

The text is meant to be pasted into an email: at most 72 columns, fixed
width, deterministic (the same records give the same bytes). Verdicts follow
ministat: "Difference at 95% confidence" or "No difference proven at 95%
confidence", with the interval, the A/A noise floor and the smallest effect
the run could detect beside each.
"""
import math
import textwrap

import designs
import opbench_data
import tcmalloc_model as tm

WIDTH = 72
RULE = "-" * WIDTH


def num(x, signed=False):
    """A figure with as many decimals as its size deserves."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    ax = abs(x)
    if ax >= 1e5:
        f = "%.0f"
    elif ax >= 100:
        f = "%.1f"
    else:
        f = "%.2f"
    s = f % x
    if signed and not s.startswith("-"):
        s = "+" + s
    return s


def ci(c, signed=False):
    """An interval, or "[no interval]" when one boot gave none."""
    if c is None or c[0] is None:
        return "[no interval]"
    return "[%s, %s]" % (num(c[0], signed), num(c[1], signed))


def pct(r):
    return "%+.2f%%" % ((r - 1) * 100)


def pval(p):
    if p is None or math.isnan(p):
        return "-"
    return "<1e-4" if p < 1e-4 else "%.2g" % p


def field(name, value):
    """A provenance line: name in 12 columns, value wrapped under itself."""
    return textwrap.wrap(value, WIDTH, initial_indent="%-12s" % name,
                         subsequent_indent=" " * 12,
                         break_on_hyphens=False) or ["%-12s-" % name]


def compiler_line(k):
    """The compiler a kernel was built with, and whether asm goto with
    outputs was on: without it every unsafe_get_user() on the exit path
    carries an error register, a test and a branch."""
    goto = {"y": "on", "n": "OFF"}.get(k.get("cc_has_asm_goto_output"),
                                       "not recorded")
    tc = k.get("toolchain", "").split(" ")
    where = {"trixie": "; build root %s" % tc[1] if len(tc) > 1 else "",
             "host": "; the host's own compiler"}.get(tc[0], "")
    return "%s; asm goto outputs %s (CONFIG_CC_HAS_ASM_GOTO_OUTPUT)%s" % (
        k.get("compiler", "?"), goto, where)


def header(run, a):
    p = run["provenance"]
    boots = run["boots"]
    first = next((b for b in boots if b["kernel"]), boots[0])
    k = first["kernel"]
    g = next((b["guest"] for b in boots if b["guest"]), {})
    vm = next((b["vm"] for b in boots if b["vm"]), {})
    title = "rseq-opbench report: %s" % a["run"]
    lines = [title, "=" * len(title)]
    if run.get("incomplete") is not None:
        lines += field("WARNING", "this run is INCOMPLETE (%s): the figures "
                       "cover only what was measured before it stopped" % (
                           run["incomplete"].get("interrupted") or
                           "it stopped before the benchmarks and tracing "
                           "completed"))
    lines += field("Run", "plan %s; %d boots in order %s; %s" % (
        p.get("plan", p.get("profile", "?")), len(boots),
        " ".join(b["flavour"] for b in boots), p.get("ops", "")))
    lines += field("Kernel", "%s %s; preempt=%s, mitigations=%s, "
                   "config %s (%s)" % (
                       k.get("source_package", "?"),
                       k.get("source_version", "?"),
                       k.get("preempt", "?"), k.get("mitigations", "?"),
                       k.get("config_hash", "?"),
                       k.get("config_fragments", "?")))
    lines += field("Compiler", compiler_line(k))
    seen = set()
    for b in boots:
        fl = b["flavour"]
        if fl in seen:
            continue
        seen.add(fl)
        kk = b["kernel"]
        series = ("series %s (%s patches)" % (kk.get("series_hash"),
                                              kk.get("series_patches"))
                  if kk.get("series_hash") not in (None, "", "none")
                  else "no series")
        lines += field("Flavour" if len(seen) == 1 else "",
                       "%-9s %s, %s" % (fl, kk.get("kernel_release", "?"),
                                        series))
    # The compiler and asm goto, not the build root's key: a re-made root
    # with the same gcc is the same compiler.
    compilers = {(b["kernel"].get("compiler", "?"),
                  b["kernel"].get("cc_has_asm_goto_output", "?"))
                 for b in boots if b["kernel"]}
    if len(compilers) > 1:
        lines += field("WARNING", "the flavours were built with different "
                       "compilers (%s): differences between them are not "
                       "the series' alone" % " / ".join(
                           "%s, asm goto outputs %s" % c
                           for c in sorted(compilers)))
    configs = {b["kernel"].get("config_hash") for b in boots}
    if len(configs) > 1:
        lines += field("WARNING", "the flavours were built with different "
                       "configs (%s): differences between them are not the "
                       "series' alone" % ", ".join(sorted(map(str, configs))))
    qemu = p.get("qemu", vm.get("qemu_version", "?"))
    cmd = vm.get("qemu_command", [])
    accel_args = []
    for i, arg in enumerate(cmd):
        if arg in ("-accel", "-cpu", "-icount", "-smp") and i + 1 < len(cmd):
            accel_args += [arg, cmd[i + 1]]
    lines += field("QEMU", "%s; %s" % (qemu.replace(
        "QEMU emulator version ", ""), " ".join(accel_args)))
    lines += field("Units", "%s: %s" % (a["unit"], a["unit_doc"]))
    lines += field("Guest", "%s vCPUs (%s), pinning %s, clocksource %s, "
                   "glibc %s" % (
                       g.get("cpus", vm.get("smp", "?")),
                       g.get("cpu_model", "?"),
                       vm.get("pin") or "none",
                       g.get("clocksource", "?"),
                       g.get("glibc", "?").split()[-1]))
    lines += field("Mitigation", "spectre_v2: %s" % g.get(
        "vuln_spectre_v2", "?"))
    lines += field("Host", "%s, %s CPUs, Linux %s" % (
        p.get("host_cpu", "?"), p.get("host_cpus", "?"),
        p.get("host_kernel", "?")))
    lines += field("Image", "%s %s, perf %s, bpftrace %s" % (
        p.get("image_suite", "?"), p.get("image_recipe", "?"),
        p.get("image_perf", "?"), p.get("image_bpftrace", "?")))
    guest_cmd = " ".join(vm.get("guest_command", []))
    lines += field("Commands", "host: %s; guest: %s" % (
        p.get("command", "?"), guest_cmd))
    lines += field("Project", "commit %s%s; opbench sha256 %s" % (
        p.get("project_commit", "?")[:12],
        " with uncommitted changes (diff %s)" % p["project_dirty"]
        if p.get("project_dirty") else "",
        run.get("manifest", {}).get("opbench_sha256", "?")))
    return lines


def verdict_word(c):
    return {"difference": "Difference at 95% confidence",
            "noise": "Difference at 95% confidence, within the A/A floor",
            "none": "No difference proven at 95% confidence"}[c["verdict"]]


def floor_text(aa):
    if not aa:
        return "A/A floor unknown (fewer than 3 reference boots)"
    return ("A/A: two single boots of the reference differ by up to %s "
            "(95%%; sd between %d boots %s)" % (
                num(aa["floor"]), aa["boots"], num(aa["sd_between"])))


def interval(c, key="diff_ci", signed=True):
    """An interval, or what a zero-width one really says."""
    v = c.get(key) if key in c else c.get("ci")
    if v is not None and v[0] == v[1] and c.get("se") == 0:
        return "[same in all boots]"
    return ci(v, signed)


def verdict_block(c, unit, aa):
    """ministat-style verdict lines for one comparison."""
    lines = ["  " + verdict_word(c)]
    lines.append("    %s %s %s" % (num(c["diff"], True), interval(c), unit))
    if c.get("ratio") is not None and not math.isnan(c["ratio"]):
        lines.append("    %s %s" % (pct(c["ratio"]), "" if c.get("se") == 0
                                    else pct_ci(c["ratio_ci"])))
    lines += textwrap.wrap("Welch t on per-boot medians, p=%s (boots %d/%d); "
                           "smallest detectable %s; %s" % (
                               pval(c["p"]), c["k"][0], c["k"][1],
                               num(c["detectable"]), floor_text(aa)), WIDTH,
                           initial_indent="    ", subsequent_indent="    ")
    for w in c["warnings"]:
        lines += textwrap.wrap("! " + w, WIDTH, initial_indent="    ",
                               subsequent_indent="      ")
    return lines


def pct_ci(c):
    if c is None or c[0] is None:
        return ""
    return "[%s, %s]" % (pct(c[0]), pct(c[1]))


MARK = {"difference": "*", "noise": "~", "none": " "}


def per_walk(m, key, walks):
    v, c = m[key], m[key + "_ci"]
    if v is None:
        return None, None
    return v / walks, (c[0] / walks, c[1] / walks) if c else None


def cost_lines(m, walks, unit, zero):
    """The cost model a + b x N fitted per boot, its residuals and weights."""
    lines = ["  a = %s %s %s (N=0 measured: %s)" % (
        num(m["a"]), ci(m["a_ci"]), unit, num(zero))]
    lines.append("  b = %s %s %s per operation per loop" % (
        num(m["b"]), ci(m["b_ci"]), unit))
    w = walks or 1
    if walks:
        v, c = per_walk(m, "b", w)
        lines.append("    = %s %s per operation per walk" % (num(v), ci(c)))
        v, c = per_walk(m, "walk_max", w)
        lines.append("  one %d-operation walk: %s %s %s" % (
            m["ns"][-1], num(v), ci(c), unit))
    if m.get("entry") is not None:
        v, c = per_walk(m, "entry", 1)
        lines += textwrap.wrap(
            "entry (a minus N=0, per loop): %s %s %s" % (
                num(v, True), ci(c, True), unit), WIDTH,
            initial_indent="  ", subsequent_indent="    ")
    lines += textwrap.wrap(
        "fitted on each of %d boots, combined across boots; residual "
        "(mean over boots) and the share of the slope's weight at each N:"
        % m["k"], WIDTH, initial_indent="  ", subsequent_indent="  ")
    ns = m["ns"]
    res = {int(k): v for k, v in m["residuals"].items()}
    wt = {int(k): v for k, v in m["weights"].items()}
    for i in range(0, len(ns), 3):
        lines.append(("  " + "".join(
            "%6d:%9s %4.0f%%  " % (n, num(res[n], True), 100 * wt[n])
            for n in ns[i:i + 3])).rstrip())
    for x in m.get("warnings", []):
        lines += textwrap.wrap("! " + x, WIDTH, initial_indent="  ",
                               subsequent_indent="    ")
    if m.get("excluded_boots"):
        lines.append("  ! boots left out (a cell missing): %s" % ", ".join(
            str(b) for b in m["excluded_boots"]))
    return lines


def cells_table(g, unit):
    lines = []
    preempt = any("gaps" in c for c in g["cells"])
    has_sw = any(c.get("switches_per_loop") is not None for c in g["cells"])
    lines.append(("%6s %-9s %2s %11s  %-22s %7s%s" % (
        "N", "flavour", "k", "median", "95% CI", "sd(b)",
        "  sw/loop" if has_sw else "")).rstrip())
    for c in g["cells"]:
        sw = c.get("switches_per_loop")
        lines.append(("%6d %-9s %2d %11s  %-22s %7s%s" % (
            c["nr_ops"], c["flavour"][:9], c["k"], num(c["value"]),
            "[same in all boots]" if c.get("sd_used") == 0 else
            ci(c["ci"]), num(c["sd_between"]),
            "  %.3f" % sw if sw is not None else "")).rstrip())
    lines += textwrap.wrap(
        "median: the mean over boots of each boot's median; k boots; "
        "sd(b): the spread between boots; the interval uses the larger of "
        "it and the spread pooled over the benchmark's cells" + (
            "; sw/loop: context switches per loop" if has_sw else ""),
        WIDTH, initial_indent="  ", subsequent_indent="  ")
    if preempt:
        lines.append("")
        lines.append("%6s %-8s %6s %6s %8s %8s %8s %5s %8s" % (
            "N", "flavour", "P-gaps", "I-gaps", "p10", "p90", "p99",
            "tick%", "I-med"))
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
            lines += textwrap.wrap(
                "%s N=%d: %d of %d samples disturbed, not used (%s)" % (
                    fl, n, d["samples"] - d["samples_used"], d["samples"],
                    d["disturbed"][0].split(": ", 1)[-1]), WIDTH,
                initial_indent="  ", subsequent_indent="    ")
        lines += textwrap.wrap(
            "P-gap: the spinner's time away when the waker preempted it "
            "(one walk); I-gap: an interrupt without a switch; tick%: "
            "P-gaps a tick also fell into (left out of the median); "
            "percentiles pooled over boots", WIDTH, initial_indent="  ",
            subsequent_indent="  ")
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
                           "(median of its iterations), %s is better" % (
                               g["op_type"], g["reg"], unit, g["better"]),
                           WIDTH)
    if g.get("headline_excluded"):
        lines += textwrap.wrap("! not in the headline table: %s" %
                               g["headline_excluded"], WIDTH,
                               subsequent_indent="  ")
    lines.append("")
    lines += cells_table(g, unit)
    na = {}
    for fl, n in g["unsupported"]:
        na.setdefault(fl, []).append(str(n))
    for fl, ns in na.items():
        lines += textwrap.wrap("n/a: %s at N=%s (no RSEQ operations in that "
                               "kernel)" % (fl, ",".join(ns)), WIDTH,
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
            "N", "diff", "95% CI", "ratio", "p", "detect"))
        for c in rows:
            lines.append("%7d %11s  %-23s %8s %6s %8s %s" % (
                c["nr_ops"], num(c["diff"], True), interval(c),
                "%.4f" % c["ratio"] if c.get("ratio") is not None
                and not math.isnan(c["ratio"]) else "-",
                pval(c["p"]), num(c["detectable"]), MARK[c["verdict"]]))
        lines += textwrap.wrap(
            "* difference at 95% confidence (paired t over the boots that "
            "measured both); detect: smallest difference found 80% of the "
            "time", WIDTH, initial_indent="  ", subsequent_indent="  ")
    for fl, m in g["cost"].items():
        lines.append("")
        lines.append("Cost model on %s, N=%d..%d: a + b x N per boot" % (
            fl, m["ns"][0], m["ns"][-1]))
        zero = next((c["value"] for c in g["cells"] if c["flavour"] == fl
                     and c["nr_ops"] == 0), None)
        lines += cost_lines(m, walks, unit, zero)
    if g["vs_rfc"]:
        lines.append("")
        lines.append("ops against the RFC as posted (rfc), N by N (%s)" %
                     unit)
        lines.append("%7s %11s  %-23s %8s %s" % ("N", "ops-rfc", "95% CI",
                                                  "ratio", ""))
        for c in g["vs_rfc"]:
            lines.append("%7d %11s  %-23s %8s %s" % (
                c["nr_ops"], num(c["diff"], True), interval(c),
                "%.4f" % c["ratio"] if c.get("ratio") is not None else "-",
                MARK[c["verdict"]]))
        s = g.get("slopes_vs_rfc")
        if s:
            w = walks or 1
            lines += textwrap.wrap(
                "slope per operation per walk, ops minus rfc: %s %s "
                "(ratio ops/rfc %s): %s" % (
                    num(s["diff"] / w, True),
                    ci((s["diff_ci"][0] / w, s["diff_ci"][1] / w)
                       if s["diff_ci"] else None, True),
                    "%.3f" % s["ratio"] if s.get("ratio") is not None
                    else "undefined, rfc's slope is 0",
                    verdict_word(s)), WIDTH,
                initial_indent="  ", subsequent_indent="    ")
    return lines


def mission_lines(a):
    """The table the mission asks for: every flavour at N = 0, 1, 2048
    against the unpatched kernel at N = 0."""
    unit = a["unit"]
    lines = [RULE, "Against the unpatched kernel (%s at N=0), %s per loop"
             % (a["reference"], unit), ""]
    lines.append("%-8s %-7s %5s %11s  %-22s %8s %s" % (
        "bench", "flavour", "N", "diff", "95% CI", "change", ""))
    for c in a["mission"]:
        lines.append("%-8s %-7s %5d %11s  %-22s %8s %s" % (
            c["bench"][:8], c["flavour"][:7], c["nr_ops"],
            num(c["diff"], True), interval(c),
            pct(c["ratio"]) if c.get("ratio") is not None else "-",
            MARK[c["verdict"]]))
    if not a["mission"]:
        lines.append("  (no flavour beside %s measured)" % a["reference"])
    lines += textwrap.wrap(
        "* difference at 95%% confidence; blank: none proven. Intervals: "
        "Welch t on per-boot medians; \"same in all boots\": every "
        "boot gave this figure exactly. %s" % (
            "" if a["accel"] != "icount" else "Instructions, not time."),
        WIDTH, initial_indent="  ", subsequent_indent="  ")
    excl = [g for g in a["groups"] if g.get("headline_excluded")]
    for g in excl:
        lines += textwrap.wrap("%s is left out: %s" % (
            g["bench"], g["headline_excluded"]), WIDTH,
            initial_indent="  ", subsequent_indent="    ")
    return lines


def perf_lines(a):
    pb = a.get("perf_bench") or {}
    if not pb:
        return []
    lines = [RULE, "perf bench in the same boots, beside ours at N=0 (%s "
             "per op)" % a["unit"], ""]
    lines.append("%-14s %-9s %2s %10s  %-22s %8s" % (
        "perf bench", "flavour", "k", "per op", "95% CI", "ours/perf"))
    for name, row in sorted(pb.items()):
        for fl, e in row.items():
            lines.append("%-14s %-9s %2d %10s  %-22s %8s" % (
                name[:14], fl[:9], e["k"], num(e["value"]), ci(e["ci"]),
                "%.3f" % e["ratio_ours"] if e.get("ratio_ours") else "-"))
    lines += textwrap.wrap(
        "perf times whole runs with the guest's clock, interrupts "
        "included, and its loop differs from ours (syscall basic is "
        "getppid like ours; sched pipe -T is a pipe ping-pong where ours "
        "yields); ours is the median of single iterations.%s" % (
            " Converted with each boot's measured nanoseconds per TSC tick."
            if a["accel"] == "icount" else ""), WIDTH,
        initial_indent="  ", subsequent_indent="  ")
    return lines


def cross_lines(a):
    rows = a.get("cross") or []
    if not rows:
        return []
    lines = [RULE, "Cross-checks of the preemption round trip"]
    for r in rows:
        if r["ok"] is None:
            verdict = ""
        else:
            verdict = "agrees within 5%" if r["ok"] else (
                "DISAGREES by more than 5%: a finding to explain")
        if r["value"] is None:
            val = "-"
        elif r.get("ci") is not None or r["expect"] is None:
            val = "%s %s %s" % (num(r["value"], True), interval(r),
                                a["unit"])
        else:
            val = "%.3f (expected %s)" % (r["value"], num(r["expect"]))
        lines.append("")
        lines += textwrap.wrap(r["check"] + ":", WIDTH, initial_indent="  ",
                               subsequent_indent="    ")
        lines += textwrap.wrap("%s%s; %s" % (val, "; " + verdict if verdict
                                             else "", r["detail"]), WIDTH,
                               initial_indent="    ",
                               subsequent_indent="    ")
    if a["accel"] == "icount" and any("scattered" in r["check"] and
                                      r["value"] is not None for r in rows):
        lines += [""] + textwrap.wrap(
            "Under icount the two layouts execute the same instructions: "
            "cache and TLB misses, the whole point of the scattered layout, "
            "are invisible; only a KVM or bare-metal run shows their time.",
            WIDTH, initial_indent="  ", subsequent_indent="  ")
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
        ok = m is not None and abs(m / r["declared"] - 1) <= 0.01
        lines.append("%-8s %5d %9s %9d %9s %9d  %s" % (
            r["bench"][:8], r["nr_ops"], r["walks"] if r["walks"] is not
            None else "-", r["loops"], "%.4f" % m if m is not None else "-",
            r["declared"], "agrees" if ok else "DIFFERS"))
    lines += textwrap.wrap(
        "tracing/rseq_ops_rate.bt counts the walker's calls in one run per "
        "benchmark (warm-up, gates and the partner's walks included: a "
        "few walks beyond the loops); agrees: within 1%.", WIDTH,
        initial_indent="  ", subsequent_indent="  ")
    return lines


def appendix_lines(a):
    lines = [RULE, "Appendix: per-boot medians at N = 0, 1 and 2048 (%s)"
             % a["unit"]]
    for g in a["groups"]:
        cells = [c for c in g["cells"] if c["nr_ops"] in (0, 1, 2048)]
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


def clock_lines(a, run):
    p = run["provenance"]
    lines = []
    lines += field("Boots", "%s per flavour, order drawn from seed %s; cells "
                   "in each boot in an order drawn from the seed and the "
                   "boot's number" % (
                       ", ".join("%s %d" % kv for kv in
                                 sorted(a["boots_per_flavour"].items())),
                       p.get("seed", "?")))
    tpi = sorted({round(c["ticks_per_insn"], 6)
                  for c in a["clock"].values()})
    npt = sorted({round(c["ns_per_tick"], 4) for c in a["clock"].values()})
    lines += field("Clock", "TSC read per iteration; ticks per instruction "
                   "of a known loop %s; the guest's clock %s nanoseconds "
                   "per tick (its own calibration%s)" % (
                       "/".join("%.6f" % x for x in tpi) or "-",
                       "/".join("%.4f" % x for x in npt) or "-",
                       ", not used: a tick is an instruction"
                       if a["accel"] == "icount" else
                       ", which converts ticks"))
    tl = a.get("tsc_lines", [])
    cal = ([ln for ln in tl if "Refined TSC" in ln] +
           [ln for ln in tl if "Detected" in ln or "calibrat" in ln])
    if cal:
        lines += field("", "guest: " + cal[0].split("] ", 1)[-1])
    lines += field("Statistics", a["method"])
    return lines


def _indented(text, indent="  "):
    return textwrap.wrap(text, WIDTH, initial_indent=indent,
                         subsequent_indent=indent)


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
        "medians, 95%% CI over boots.%s" % (
            unit, " Instructions, not time." if icount else ""), WIDTH)
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
                                                  "95% CI"))
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
                saved = [-g["ci"][1], -g["ci"][0]] if g["ci"] else None
                lines += _indented(
                    "glibc's sched_getcpu(): %s through its rseq area, %s "
                    "with its registration off (the fallback); rseq saves "
                    "%s %s per call." % (num(g["rseq"]), num(g["fallback"]),
                                         num(-g["diff"]), ci(saved, True)))
        na = [u for u in t["unsupported"] if u["flavour"] == fl]
        modes_na = sorted({(u["mode"], u["why"]) for u in na})
        for m, why in modes_na:
            lines += _indented("%s mode n/a here: %s" % (m, why))
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
    lines += _indented(
        "remote is a gate only: a drainer on the other CPU stops the "
        "worker's CPU and fences it, TCMalloc's cross-CPU drain. Only its "
        "stale count proves anything: the slow path uncaches the word "
        "while the CPU is stopped. preempt's events are the preemptions "
        "the worker saw.")
    excl = sorted({e["what"] for e in t["events"] if not e["quoted"]})
    for w in excl:
        lines += _indented("%s is not quoted: %s." % (
            w, tm.ICOUNT_NOT_QUOTED[w]))
    if t["invalid"]:
        lines.append("  Invalid (dropped in every boot):")
        for x in t["invalid"]:
            lines += _indented("%s %s %s boot %d sample %d: %s" % (
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
        lines += _indented("* difference at 95% confidence (paired over "
                           "boots). The intervals are in analysis.json.")
    return lines


def designs_lines(d, a):
    """The section "keep the operations in the kernel?" (designs.analyse)."""
    unit = a["unit"]
    icount = a["accel"] == "icount"
    name = d["names"]
    fls = d["flavours"]
    lines = [RULE, "Keep the operations in the kernel? Three designs of "
             "the walk", ""]
    lines += textwrap.wrap(
        "%s: our series, which walks the list in user memory; %s: the "
        "variant (kernel-patch/resident/) that checks and copies each node "
        "at registration and applies a kernel array; %s: the RFC's patches. "
        "Same source, configuration and compiler, one run. Figures: %s, "
        "mean over boots, 95%% CI.%s" % (
            "ops", "resident", "rfc", unit,
            " Instructions under QEMU icount, not time." if icount else ""),
        WIDTH)
    sl = {(s["bench"], s["flavour"]): s for s in d["slopes"]}
    benches = [b for b in designs.WALK_BENCHES
               if any(k[0] == b for k in sl)]
    if benches:
        lines += ["", "The walk, %s per operation per walk (fit of a + b*N "
                  "per boot):" % unit]
        lines.append("  %-8s %-10s %10s  %s" % ("bench", "design", "slope",
                                                "95% CI"))
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
        lines += [""] + textwrap.wrap("Per operation, RFC and ours against "
                                      "the resident variant (ratio of "
                                      "slopes):", WIDTH)
        for r in d["ratios"]:
            lines.append("  %-8s %-4s / resident  %6s  %s" % (
                r["bench"], r["flavour"],
                "%.2f" % r["ratio"] if r["ratio"] is not None else "n/a",
                "[%.2f, %.2f]" % tuple(r["ratio_ci"]) if r["ratio_ci"]
                else "[no interval]"))
        rfc = [r for r in d["ratios"] if r["flavour"] == "rfc"]
        target = ("Target: the resident walk at least %.0f times cheaper "
                  "per operation than the RFC's. " % d["target"])
        if not rfc:
            verdict = "Not assessed: no RFC slope in this run."
        elif any(r["ratio"] is None or not r["ratio_ci"] for r in rfc):
            verdict = ("Not assessed: a ratio without an interval (%s)."
                       % ", ".join(r["bench"] for r in rfc
                                   if r["ratio"] is None
                                   or not r["ratio_ci"]))
        else:
            low = min(r["ratio_ci"][0] for r in rfc)
            verdict = "%s (lowest bound of the ratio's interval over %s: " \
                      "%.2f)." % ("Met" if low >= d["target"] else "NOT met",
                                  ", ".join(r["bench"] for r in rfc), low)
        lines += [""] + textwrap.wrap(target + verdict, WIDTH)
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
            lines.append("  %-8s %-10s %10s  %s" % (
                z["bench"], z["flavour"], num(z["diff"], True),
                ci(z["diff_ci"], True)))
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
            "  ops and resident walk up to %d operations with interrupts "
            "off and longer lists with them on; rfc walks every list with "
            "them off.%s" % (opbench_data.IRQS_OFF_MAX,
                             " Under icount both layouts execute the same "
                             "instructions." if icount else ""), WIDTH,
            subsequent_indent="  ")
    if d["register"]:
        lines += [""] + textwrap.wrap("Registration: prctl() registering "
                                      "one more node and unregistering it, "
                                      "with N held, %s per round trip:"
                                      % unit, WIDTH)
        ns = sorted({c["nr_ops"] for r in d["register"] for c in r["cells"]})
        show = [n for n in ns if n in (0, 1, 64, 1024) or n == ns[-1]]
        lines.append("  %-10s" % "design" + "".join("%10s" % ("N=%d" % n)
                                                     for n in show)
                     + "  per held op")
        for r in d["register"]:
            by = {c["nr_ops"]: c["value"] for c in r["cells"]}
            lines.append("  %-10s" % r["flavour"] + "".join(
                "%10s" % (num(by[n]) if n in by else "n/a") for n in show)
                + "  %s" % (num(r["slope"], True) if r["slope"] is not None
                            else "n/a"))
        full = sorted({n for r in d["register"] for n in r["full"]})
        if full:
            lines.append("  N=%s: the list is full, no node can be added."
                         % ",".join(str(n) for n in full))
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
            if fl not in d["loops"]:
                lines.append("  %-10s no walker function in its vmlinux (the "
                             "walk is inlined)" % fl)
            elif not d["loops"][fl]:
                lines.append("  %-10s not counted (see walker-loops/%s.txt)"
                             % (fl, fl))
    be = d.get("breakeven") or []
    if be:
        lines += [""] + textwrap.wrap(
            "When each design wins: the resident registration round trip "
            "costs more; each walk saves the difference of the switch "
            "slopes per operation. Walks of one operation to pay back one "
            "register and unregister:", WIDTH)
        for r in be:
            lines.append("  vs %-4s N=%-5d +%s per round trip, %s saved "
                         "a walk: %s walks" % (
                             r["flavour"], r["nr_ops"], num(r["extra"]),
                             num(r["save_per_walk"]),
                             "%.0f" % r["walks"] if r["walks"] is not None
                             else "never"))
        lines += textwrap.wrap(
            "A thread that keeps its operations registered across more "
            "returns after a switch than that is cheaper with the resident "
            "design; one that registers and unregisters around a few "
            "returns, or changes its nodes in place, is not.", WIDTH)
    reg = {r["flavour"]: r for r in d["register"]}
    res = reg.get("resident")
    if res and res["slope"] is not None:
        by = {c["nr_ops"]: c["value"] for c in res["cells"]}
        ops0 = {c["nr_ops"]: c["value"]
                for c in reg.get("ops", {}).get("cells", [])}.get(0)
        measured = ("Measured here: registration grows by %s %s per "
                    "operation held (the lookup of the node among them), "
                    "and at N = 0 each round trip allocates and frees the "
                    "array (%s, against %s for ops); the benchmark "
                    "unregisters the newest node, the best case: an older "
                    "one also costs a search and a move of the entries "
                    "after it. " % (num(res["slope"]), unit,
                                    num(by[0]) if 0 in by else "n/a",
                                    num(ops0) if ops0 is not None
                                    else "n/a"))
    else:
        measured = "Registration was not measured in this run. "
    lines += [""] + textwrap.wrap(
        "What the resident design costs instead. " + measured +
        "Not measured here, from the cover letter: kernel memory of 40 "
        "bytes per entry allocated, the array doubling (1025 operations "
        "take 2048 entries, 80 KiB), charged to the memory cgroup; a copy "
        "at fork(); nodes that user space can no longer change without "
        "registering them again. kernel-patch/resident/"
        "0000-cover-letter.txt lists every semantic difference.", WIDTH)
    return lines


def render(run, a):
    lines = header(run, a)
    lines += clock_lines(a, run)
    lines.append("")
    lines += mission_lines(a)
    for g in a["groups"]:
        lines.append("")
        lines += group_lines(g, a)
    cross = cross_lines(a)
    if cross:
        lines.append("")
        lines += cross
    wc = walk_count_lines(a)
    if wc:
        lines.append("")
        lines += wc
    perf = perf_lines(a)
    if perf:
        lines.append("")
        lines += perf
    if a.get("tcmalloc"):
        lines.append("")
        lines += tcmalloc_lines(a["tcmalloc"], a)
    if a.get("designs"):
        lines.append("")
        lines += designs_lines(a["designs"], a)
    lines.append("")
    lines += appendix_lines(a)
    lines.append("")
    lines.append(RULE)
    if a["invalid"] or (a.get("tcmalloc") or {}).get("invalid"):
        lines.append("Invalid cells: a gate failed; the cell is dropped in "
                     "every boot")
        for x in a["invalid"]:
            lines += textwrap.wrap("%s %s N=%d boot %d (%d samples): %s" % (
                x["bench"], x["flavour"], x["nr_ops"], x["boot"],
                x["samples"], x["why"]), WIDTH, initial_indent="  ",
                subsequent_indent="    ")
        for x in (a.get("tcmalloc") or {}).get("invalid", []):
            lines += textwrap.wrap("tcmodel %s %s %s boot %d sample %d: %s"
                                   % (x["what"], x["mode"], x["flavour"],
                                      x["boot"], x["sample"], x["why"]),
                                   WIDTH, initial_indent="  ",
                                   subsequent_indent="    ")
    else:
        lines.append("Invalid cells: none (every sample passed its gate)")
    lines.append("")
    lines += textwrap.wrap("Raw records: boot-*/opbench.json%s in %s; every "
                           "number above is in analysis/analysis.json." % (
                               " and tcmodel.json" if a.get("tcmalloc")
                               else "", a["run"]), WIDTH)
    out = "\n".join(lines) + "\n"
    too_wide = [ln for ln in out.splitlines() if len(ln) > WIDTH]
    assert not too_wide, "report line over %d columns: %r" % (WIDTH,
                                                            too_wide[0])
    return out
