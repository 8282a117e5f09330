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
    lines += field("Project", "commit %s" % p.get("project_commit", "?")[:12])
    return lines


def verdict_block(c, unit):
    """ministat-style verdict lines for one comparison."""
    lines = []
    if c["verdict"] == "difference":
        lines.append("  Difference at 95% confidence")
    elif c["verdict"] == "noise":
        lines.append("  Difference at 95% confidence, within the A/A "
                     "noise floor")
    else:
        lines.append("  No difference proven at 95% confidence")
    lines.append("    %s %s %s" % (num(c["diff"], True),
                                   ci(c["diff_ci"], True), unit))
    if not math.isnan(c["ratio"]):
        lines.append("    %s [%s, %s]" % (pct(c["ratio"]),
                                          pct(c["ratio_ci"][0]),
                                          pct(c["ratio_ci"][1])))
    floor = ("noise floor %s (A/A, %d boots)" % (num(c["noise_floor"]),
                                                  c.get("aa_boots", 0))
             if c["noise_floor"] is not None else
             "noise floor unknown (one boot)")
    lines += textwrap.wrap("Mann-Whitney p=%s (n=%d/%d); %s; smallest "
                           "detectable %s" % (
                               pval(c["p"]), c["n"][0], c["n"][1], floor,
                               num(c["detectable"])), WIDTH,
                           initial_indent="    ", subsequent_indent="    ")
    for w in c["warnings"]:
        lines.append("    ! " + w)
    return lines


MARK = {"difference": "*", "noise": "~", "none": " "}


def slope_lines(m, walks, unit):
    """b per loop and, when the loop walks, per walk and a 2048-node walk."""
    lines = ["  b = %s %s %s per operation per loop" % (
        num(m["b"]), ci(m["b_ci"]), unit)]
    if walks:
        per = m["b"] / walks
        lines.append("    = %s %s per operation per walk" % (
            num(per), ci((m["b_ci"][0] / walks, m["b_ci"][1] / walks))))
        lines.append("  one 2048-operation walk: %s %s" % (
            num(per * 2048), unit))
    return lines


def group_lines(g, a):
    unit = a["unit"]
    lines = [RULE]
    walks = g["walks_per_loop"]
    lines.append("%s: %s%s" % (g["bench"], g["loop"],
                               "" if walks is None else
                               ", %d walk%s per loop" % (
                                   walks, "" if walks == 1 else "s")))
    lines += textwrap.wrap("operation type %s, %s rseq area; %s per loop, "
                           "%s is better" % (g["op_type"], g["reg"], unit,
                                             g["better"]), WIDTH)
    lines.append("")
    has_sw = any("switches_per_loop" in c for c in g["cells"])
    lines.append(("%7s  %-10s %4s %12s  %-24s%s" % (
        "N", "flavour", "n", "median", "95% CI",
        "sw/loop" if has_sw else "")).rstrip())
    for c in g["cells"]:
        sw = c.get("switches_per_loop")
        lines.append(("%7d  %-10s %4d %12s  %-24s%s" % (
            c["nr_ops"], c["flavour"][:10], c["n"], num(c["median"]),
            ci(c["ci"]), "%.3f" % sw if sw is not None else "")).rstrip())
    if has_sw:
        lines.append("  sw/loop: context switches of the measured thread "
                     "per loop (median)")
    na = {}
    for fl, n in g["unsupported"]:
        na.setdefault(fl, []).append(str(n))
    for fl, ns in na.items():
        lines += textwrap.wrap("n/a: %s at N=%s (no RSEQ operations in that "
                               "kernel)" % (fl, ",".join(ns)), WIDTH,
                               initial_indent="  ", subsequent_indent="    ")
    for c in g["vs_reference"]:
        c = dict(c, aa_boots=g["aa_boots"])
        lines.append("")
        lines.append("%s against %s, N=%d" % (c["flavour"], a["reference"],
                                              c["nr_ops"]))
        lines += verdict_block(c, unit)
    for fl, rows in g["vs_zero"].items():
        lines.append("")
        lines.append("%s: N operations against N=0 (%s)" % (fl, unit))
        lines.append("%7s %11s  %-23s %8s %6s %8s" % (
            "N", "diff", "95% CI", "ratio", "p", "detect"))
        warn = set()
        for c in rows:
            lines.append("%7d %11s  %-23s %8s %6s %8s %s" % (
                c["nr_ops"], num(c["diff"], True), ci(c["diff_ci"], True),
                "%.4f" % c["ratio"] if not math.isnan(c["ratio"]) else "-",
                pval(c["p"]), num(c["detectable"]), MARK[c["verdict"]]))
            warn.update(c["warnings"])
        for verdict, text in (
                ("difference", "Difference at 95% confidence"),
                ("noise", "Within the A/A noise floor"),
                ("none", "No difference proven at 95% confidence")):
            ns = [str(c["nr_ops"]) for c in rows if c["verdict"] == verdict]
            if ns:
                lines += textwrap.wrap("%s: N=%s" % (text, ", ".join(ns)),
                                       WIDTH, initial_indent="  ",
                                       subsequent_indent="    ")
        lines.append("  * difference at 95% confidence; ~ within the A/A "
                     "noise floor;")
        lines.append("  detect: smallest difference this run could detect")
        for w in sorted(warn):
            lines.append("  ! " + w)
    for fl, m in g["cost"].items():
        lines.append("")
        lines.append("Cost model on %s, N=%d..%d: time = a + b x N "
                     "(least squares)" % (fl, m["ns"][0], m["ns"][-1]))
        lines.append("  a = %s %s %s (N=0 measured: %s)" % (
            num(m["a"]), ci(m["a_ci"]), unit, num(m["zero_median"])))
        lines += slope_lines(m, walks, unit)
        lines.append("  R^2 = %.6f over %d samples" % (m["r2"], m["n"]))
        m2 = g.get("cost_per_switch", {}).get(fl)
        if m2:
            lines += textwrap.wrap(
                "! switches per loop vary with N by up to %.1f%% on %s: "
                "some loops walked more than %s times. Counting each "
                "walk once (samples scaled to the N=0 switch rate):" % (
                    100 * g["switch_drift"][fl], fl, walks), WIDTH,
                initial_indent="  ", subsequent_indent="    ")
            lines += slope_lines(m2, walks, unit)
    return lines


def render(run, a):
    lines = header(run, a)
    for g in a["groups"]:
        lines.append("")
        lines += group_lines(g, a)
    lines.append("")
    lines.append(RULE)
    if a["invalid"]:
        lines.append("Invalid cells: the correctness gate failed, samples "
                     "not used")
        for x in a["invalid"]:
            lines += textwrap.wrap("%s %s N=%d boot %d (%d samples): %s" % (
                x["bench"], x["flavour"], x["nr_ops"], x["boot"],
                x["samples"], x["why"]), WIDTH, initial_indent="  ",
                subsequent_indent="    ")
    else:
        lines.append("Invalid cells: none (every cell passed its gate)")
    lines.append("")
    lines += textwrap.wrap("Raw records: boot-*/opbench.json in %s. "
                           "Medians with percentile-bootstrap 95%% CIs; "
                           "difference and ratio CIs resample both sides." %
                           a["run"], WIDTH)
    out = "\n".join(lines) + "\n"
    too_wide = [ln for ln in out.splitlines() if len(ln) > WIDTH]
    assert not too_wide, "report line over %d columns: %r" % (WIDTH,
                                                            too_wide[0])
    return out
